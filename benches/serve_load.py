"""A bounded load test of an OpenAI-compatible embedding server (`memoria serve`, or a peer
such as llama-cpp-python's server): CLIENTS threads each send REQUESTS requests of 1 to 32
texts (drawn, seeded, from the bundled example workspace's lines) and the script prints
errors, p50/p99 latency, texts/s and tokens/s, and the server's peak RSS when given its pid.

  python benches/serve_load.py BASE_URL MODEL [--clients 16] [--requests 50] [--pid PID]

Run it with the Python that has `openai` (`.ci/run`'s client environment). Numbers are for
closing notes, compared in one window on one machine, never asserted by tests.
"""

import argparse
import glob
import json
import os
import random
import statistics
import threading
import time

import openai


def corpus():
    here = os.path.dirname(os.path.abspath(__file__))
    lines = []
    for path in sorted(glob.glob(os.path.join(here, "..", "examples", "workspace", "**", "*.md"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            lines += [l.strip() for l in f if len(l.strip()) > 20]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("model")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--pid", type=int)
    args = ap.parse_args()
    lines = corpus()
    rng = random.Random(7)
    plans = [[rng.sample(lines, rng.randint(1, min(32, len(lines)))) for _ in range(args.requests)] for _ in range(args.clients)]
    latencies, errors, texts, tokens = [], [], [0], [0]
    lock = threading.Lock()

    def client(plan):
        c = openai.OpenAI(base_url=args.base + "/v1", api_key="unused", max_retries=0, timeout=600)
        for batch in plan:
            started = time.perf_counter()
            try:
                r = c.embeddings.create(model=args.model, input=batch, encoding_format="float")
                took = time.perf_counter() - started
                with lock:
                    latencies.append(took)
                    texts[0] += len(batch)
                    tokens[0] += r.usage.prompt_tokens if r.usage else 0
            except Exception as e:  # counted, not raised: the load goes on
                with lock:
                    errors.append(repr(e)[:200])

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(p,)) for p in plans]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    latencies.sort()
    q = lambda p: latencies[min(len(latencies) - 1, int(p * len(latencies)))] if latencies else None
    rss = None
    if args.pid:
        with open(f"/proc/{args.pid}/status") as f:
            rss = next((l.split()[1] + " kB" for l in f if l.startswith("VmHWM")), None)
    print(json.dumps({
        "clients": args.clients, "requests": args.clients * args.requests, "errors": len(errors),
        "firstError": errors[0] if errors else None, "wallSeconds": round(wall, 2),
        "p50Ms": round(q(0.5) * 1000, 1) if latencies else None,
        "p99Ms": round(q(0.99) * 1000, 1) if latencies else None,
        "texts": texts[0], "textsPerSecond": round(texts[0] / wall, 1),
        "tokensPerSecond": round(tokens[0] / wall, 1) if tokens[0] else None,
        "peakRss": rss,
    }))


main()
