#!/usr/bin/env python3
"""One `memoria mcp` serving many agents: start-up, first answers and memory (issue 49).

    python3 benches/many_agents.py [MEMORIA_BINARY] [AGENTS] [DIR]

Generates AGENTS workspaces of two notes each under DIR (default /tmp/memoria-many; kept,
so later runs reuse them) and a config listing them, starts `memoria mcp` keyword-only on
a new state directory with one `--agent` per workspace, and reports: how long
`initialize` took, when the first search (of the last agent) was answered, the first
search of another agent, and the resident memory after five idle seconds (now and peak).
Then how the last agent's notes are watched (`memory_status`), how soon a note written to
them is found, the CPU the process uses over ten idle seconds (20 s after it started, when
the first indexes are done), and its threads.
"""
import json
import os
import shutil
import subprocess
import sys
import time


def workspaces(root, agents):
    config = os.path.join(root, "config.json")
    if os.path.exists(config):
        return config
    for agent in agents:
        ws = os.path.join(root, "ws", agent)
        os.makedirs(os.path.join(ws, "memory"))
        with open(os.path.join(ws, "MEMORY.md"), "w") as f:
            f.write(f"# Memory\n\n- Agent {agent} prefers tea over coffee.\n")
        with open(os.path.join(ws, "memory", "2026-11-20.md"), "w") as f:
            f.write(f"# 2026-11-20\n\n- Deployed the {agent} billing service to staging.\n")
    listed = [{"id": a, "workspace": os.path.join(root, "ws", a)} for a in agents]
    with open(config, "w") as f:
        json.dump({"agents": {"list": listed}}, f)
    return config


def main(binary, n, root):
    root = os.path.join(root, str(n))
    agents = [f"a{i:04d}" for i in range(n)]
    config = workspaces(root, agents)
    state = os.path.join(root, "state")
    shutil.rmtree(state, ignore_errors=True)
    args = [binary, "--config", config, "--state-dir", state, "--provider", "none", "mcp"]
    for agent in agents:
        args += ["--agent", agent]
    started = time.time()
    server = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)

    def call(i, method, params):
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                       "params": params}) + "\n")
        server.stdin.flush()
        while True:
            line = server.stdout.readline()
            if not line:
                sys.exit("memoria mcp exited")
            message = json.loads(line)
            if message.get("id") == i:
                return message

    def search(i, query, agent):
        return call(i, "tools/call", {"name": "memory_search",
                                      "arguments": {"query": query, "agent": agent}})

    call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}})
    initialized = time.time() - started
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    answer = search(2, "billing service staging", agents[-1])
    first = time.time() - started
    if "billing" not in json.dumps(answer):
        sys.exit(f"the first search did not find the note: {answer}")
    asked = time.time()
    search(3, "tea or coffee", agents[n // 2])
    another = time.time() - asked
    time.sleep(5)
    with open(f"/proc/{server.pid}/status") as f:
        status = dict(line.split(":", 1) for line in f if ":" in line)
    megabytes = lambda key: int(status[key].split()[0]) // 1024
    print(f"{n} agents: initialize {initialized:.2f} s; first search answered {first:.2f} s "
          f"after start; another agent's first search {another * 1000:.0f} ms; resident "
          f"after 5 s idle {megabytes('VmRSS')} MB (peak {megabytes('VmHWM')} MB)")

    live = call(4, "tools/call", {"name": "memory_status", "arguments": {"agent": agents[-1]}})
    live = live["result"]["structuredContent"].get("live") or {}
    word = f"zebra{int(time.time())}"
    note = os.path.join(root, "ws", agents[-1], "memory", "2026-11-29.md")
    with open(note, "w") as f:
        f.write(f"# 2026-11-29\n\n- Saw a {word} at the zoo.\n")
    written, i = time.time(), 5
    try:
        while word not in json.dumps(search(i, word, agents[-1])):
            if time.time() - written > 60:
                sys.exit("the new note was not found within 60 s")
            i += 1
            time.sleep(0.1)
        found = time.time() - written
    finally:
        os.remove(note)
    time.sleep(max(0.0, 20 - (time.time() - started)))
    ticks = lambda: sum(int(x) for x in open(f"/proc/{server.pid}/stat").read().split()[13:15])
    before = ticks()
    time.sleep(10)
    idle_cpu = (ticks() - before) / os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{server.pid}/status") as f:
        threads = [line.split()[1] for line in f if line.startswith("Threads:")][0]
    print(f"  the last agent's watcher: {live.get('watcher')} ({live.get('reason') or 'no reason'}); "
          f"a note written to it found after {found:.2f} s; CPU over 10 idle s "
          f"{idle_cpu:.2f} s; threads {threads}")
    server.stdin.close()
    server.terminate()
    server.wait()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "target/release/memoria",
         int(sys.argv[2]) if len(sys.argv) > 2 else 300,
         sys.argv[3] if len(sys.argv) > 3 else "/tmp/memoria-many")
