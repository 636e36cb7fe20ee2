#!/usr/bin/env python3
"""PyTorch sentence-transformers reference for benches/embed.rs: same documents, same query.

usage: HF_HUB_OFFLINE=1 python benches/pytorch_reference.py [MODEL_DIR]
  MODEL_DIR defaults to $MEMORIA_TEST_MODEL_DIR. Env: BENCH_DOCS (64), BENCH_ROUNDS (3),
  BENCH_QUERIES (40), BENCH_BATCH (16), BENCH_THREADS (2), BENCH_DTYPE (float32 | bfloat16),
  MEMORIA_GOLDEN.
Needs: pip install torch sentence-transformers (CPU is fine).
"""
import os
import resource
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_texts import QUERY, documents  # noqa: E402  (benches/embed.rs's texts)
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402



def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MEMORIA_TEST_MODEL_DIR")
    if not model_dir:
        sys.exit("usage: pytorch_reference.py MODEL_DIR (or set MEMORIA_TEST_MODEL_DIR)")
    threads = int(os.environ.get("BENCH_THREADS", "2"))
    n_docs = int(os.environ.get("BENCH_DOCS", "64"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
    n_queries = int(os.environ.get("BENCH_QUERIES", "40"))
    batch = int(os.environ.get("BENCH_BATCH", "16"))
    torch.set_num_threads(threads)
    t = time.perf_counter()
    dtype = os.environ.get("BENCH_DTYPE", "float32")
    model = SentenceTransformer(model_dir, device="cpu")
    model = model.to(getattr(torch, dtype))
    model.eval()
    print(f"load: {time.perf_counter() - t:.2f} s")
    print(f"torch {torch.__version__}, {dtype}, threads: {torch.get_num_threads()}")

    docs = documents(n_docs)
    prompt = model.prompts["document"]
    tokens = sum(len(model.tokenizer(prompt + d)["input_ids"]) for d in docs)
    with torch.inference_mode():
        model.encode(docs[:4], prompt_name="document", batch_size=batch)
        best = float("inf")
        for r in range(rounds):
            t, c = time.perf_counter(), time.process_time()
            model.encode(docs, prompt_name="document", batch_size=batch)
            dt, cpu = time.perf_counter() - t, time.process_time() - c
            best = min(best, dt)
            print(f"  round {r}: {n_docs} docs, {tokens} tokens in {dt:.2f} s = {tokens / dt:.0f} tokens/s "
                  f"(cpu {cpu:.2f} s: {tokens / cpu:.0f} tokens/cpu-s)")
        print(f"documents: {n_docs} docs, mean {tokens / n_docs:.0f} tokens/doc, best {tokens / best:.0f} tokens/s "
              f"({n_docs / best:.1f} docs/s), batch {batch}")

        qtokens = len(model.tokenizer(model.prompts["query"] + QUERY)["input_ids"])
        model.encode([QUERY], prompt_name="query")
        lat = []
        c = time.process_time()
        for _ in range(n_queries):
            t = time.perf_counter()
            model.encode([QUERY], prompt_name="query")
            lat.append((time.perf_counter() - t) * 1e3)
        qcpu = (time.process_time() - c) / n_queries * 1e3
    lat.sort()
    p = lambda q: lat[round((len(lat) - 1) * q)]  # noqa: E731
    print(f"query ({qtokens} tokens): p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms, min {lat[0]:.1f} ms "
          f"over {n_queries} (cpu {qcpu:.1f} ms/query), mean {statistics.mean(lat):.1f} ms")
    print(f"peak RSS (ru_maxrss): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
