#!/usr/bin/env python3
"""llama.cpp reference for benches/embed.rs (what OpenClaw's local provider runs): same documents,
same prompts, same query, through llama-cpp-python.

usage: python benches/llamacpp_reference.py GGUF_FILE
  GGUF_FILE: e.g. the Q8_0 file of ../shared/tools/make-embeddinggemma-gguf MODEL_DIR OUT_DIR.
  Env: BENCH_DOCS (64), BENCH_ROUNDS (3), BENCH_QUERIES (40), BENCH_THREADS (2), MEMORIA_GOLDEN.
Needs: pip install llama-cpp-python (builds llama.cpp for this CPU).
"""
import os
import resource
import sys
import time

from llama_cpp import Llama

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_texts import QUERY, documents  # noqa: E402  (benches/embed.rs's texts)

DOC_PROMPT = "title: none | text: "
QUERY_PROMPT = "task: search result | query: "


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: llamacpp_reference.py GGUF_FILE")
    threads = int(os.environ.get("BENCH_THREADS", "2"))
    n_docs = int(os.environ.get("BENCH_DOCS", "64"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
    n_queries = int(os.environ.get("BENCH_QUERIES", "40"))
    t = time.perf_counter()
    llm = Llama(model_path=sys.argv[1], embedding=True, n_ctx=2048, n_batch=2048, n_ubatch=2048,
                n_threads=threads, n_threads_batch=threads, verbose=False)
    print(f"load: {time.perf_counter() - t:.2f} s, threads: {threads}")

    docs = [DOC_PROMPT + d for d in documents(n_docs)]
    tokens = sum(len(llm.tokenize(d.encode())) for d in docs)
    for d in docs[:2]:
        llm.embed(d)
    best = float("inf")
    for r in range(rounds):
        t, c = time.perf_counter(), time.process_time()
        for d in docs:
            llm.embed(d)
        dt, cpu = time.perf_counter() - t, time.process_time() - c
        best = min(best, dt)
        print(f"  round {r}: {n_docs} docs, {tokens} tokens in {dt:.2f} s = {tokens / dt:.0f} tokens/s "
              f"(cpu {cpu:.2f} s: {tokens / cpu:.0f} tokens/cpu-s)")
    print(f"documents: {n_docs} docs, mean {tokens / n_docs:.0f} tokens/doc, best {tokens / best:.0f} tokens/s")

    q = QUERY_PROMPT + QUERY
    qtokens = len(llm.tokenize(q.encode()))
    llm.embed(q)
    lat = []
    for _ in range(n_queries):
        t = time.perf_counter()
        llm.embed(q)
        lat.append((time.perf_counter() - t) * 1e3)
    lat.sort()
    p = lambda x: lat[round((len(lat) - 1) * x)]  # noqa: E731
    print(f"query ({qtokens} tokens): p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, min {lat[0]:.1f} ms over {n_queries}")
    print(f"peak RSS (ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
