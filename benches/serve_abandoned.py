#!/usr/bin/env python3
"""How long abandoned requests hold `memoria serve`'s next one (docs/commands.md).

    python3 benches/serve_abandoned.py [MEMORIA_BINARY] [MODEL_DIR]

Starts `memoria serve` on the bundled example workspace (defaults: target/release/memoria
and $MEMORIA_TEST_MODEL_DIR), times one 32-text request, then sends five more whose clients
give up after 0.3 s, and times the one-word request that follows them.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def main(binary, model):
    state = tempfile.mkdtemp(prefix="memoria-serve-")
    server = subprocess.Popen(
        [binary, "--model", model, "--state-dir", state, "--workspace", "examples/workspace",
         "serve", "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True)
    addr = None
    while addr is None:
        line = server.stderr.readline()
        if not line:
            sys.exit("serve exited before listening")
        found = re.search(r"listening on http://(\S+)", line)
        addr = found and found.group(1)
    try:
        while not healthy(addr):
            time.sleep(0.5)
        text = " ".join(["memory search over notes and daily logs"] * 60)
        timed("warm-up", lambda: post(addr, ["warm up"], 60))
        timed("one 32-text request", lambda: post(addr, [text] * 32, 600))
        clients = [threading.Thread(target=give_up, args=(addr, [text] * 32)) for _ in range(5)]
        for client in clients:
            client.start()
        for client in clients:
            client.join()
        timed("the next one-word request, after five abandoned",
              lambda: post(addr, ["hello"], 600))
    finally:
        server.terminate()
        server.wait()


def healthy(addr):
    try:
        return urllib.request.urlopen(f"http://{addr}/health", timeout=2).status == 200
    except OSError:
        return False


def post(addr, texts, timeout):
    body = json.dumps({"model": "embeddinggemma", "input": texts}).encode()
    request = urllib.request.Request(f"http://{addr}/v1/embeddings", data=body,
                                     headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=timeout).read()


def give_up(addr, texts):
    try:
        post(addr, texts, 0.3)
    except OSError:
        pass


def timed(what, call):
    started = time.time()
    call()
    print(f"{what}: {time.time() - started:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "target/release/memoria",
         sys.argv[2] if len(sys.argv) > 2 else os.environ.get("MEMORIA_TEST_MODEL_DIR", ""))
