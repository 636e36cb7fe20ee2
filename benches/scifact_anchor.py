#!/usr/bin/env python3
"""Whole-document dense retrieval on SciFact with PyTorch sentence-transformers: the anchor
that memoria's chunked vector search is compared with (issue 30).

Each document is embedded whole, as the model card asks: `title: {title} | text: {text}`
(the document prompt with the document's title), each query with the query prompt; the
corpus is ranked by cosine and scored with nDCG@10 against the qrels, as `memoria eval`
scores BEIR sets.

  python benches/scifact_anchor.py MODEL_DIR [SCIFACT_DIR] [QRELS]

MODEL_DIR defaults to $MEMORIA_TEST_MODEL_DIR, SCIFACT_DIR to ../shared/eval/scifact, QRELS
to its qrels/train.tsv. Env: BENCH_THREADS (2), BENCH_BATCH (16), BENCH_MAX_TOKENS (2048),
BENCH_CACHE (a .npy file that keeps the document vectors embedded so far, to resume a run).
"""

import json
import math
import os
import sys
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    model_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ["MEMORIA_TEST_MODEL_DIR"]
    data = sys.argv[2] if len(sys.argv) > 2 else "../shared/eval/scifact"
    qrels_path = sys.argv[3] if len(sys.argv) > 3 else os.path.join(data, "qrels", "train.tsv")
    torch.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    batch = int(os.environ.get("BENCH_BATCH", "16"))

    corpus = read_jsonl(os.path.join(data, "corpus.jsonl"))
    queries = {q["_id"]: q["text"] for q in read_jsonl(os.path.join(data, "queries.jsonl"))}
    qrels = {}
    with open(qrels_path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 3 or (i == 0 and not fields[2].strip().isdigit()):
                continue
            if float(fields[2]) > 0:
                qrels.setdefault(fields[0], {})[fields[1]] = float(fields[2])

    model = SentenceTransformer(model_dir, device="cpu")
    model.max_seq_length = int(os.environ.get("BENCH_MAX_TOKENS", "2048"))
    start = time.time()
    # One prompt per title: group documents by title is pointless (titles differ), so
    # the prompt is written into the text and no prompt is added.
    texts = [f"title: {d.get('title') or 'none'} | text: {d['text']}" for d in corpus]
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    # Embedded in slices so a long run shows its progress and, with BENCH_CACHE=FILE.npy,
    # resumes where a stopped run left off.
    cache = os.environ.get("BENCH_CACHE")
    done = list(np.load(cache)) if cache and os.path.exists(cache) else []
    step = 128
    for at in range(len(done), len(order), step):
        part = model.encode(
            [texts[i] for i in order[at : at + step]],
            batch_size=batch,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        done.extend(part)
        if cache:
            np.save(cache, np.stack(done))
        print(
            f"{len(done)}/{len(order)} documents, {time.time() - start:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    embedded = np.stack(done)
    docs = np.zeros_like(embedded)
    docs[order] = embedded
    doc_seconds = time.time() - start
    ids = [q for q in queries if q in qrels]
    qvecs = model.encode(
        [queries[q] for q in ids],
        prompt_name="query",
        batch_size=batch,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    doc_ids = [d["_id"] for d in corpus]
    ndcg = 0.0
    for q, v in zip(ids, qvecs):
        top = np.argsort(-(docs @ v))[:10]
        rel = qrels[q]
        dcg = sum(rel.get(doc_ids[j], 0.0) / math.log2(r + 2) for r, j in enumerate(top))
        ideal = sorted(rel.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
        ndcg += dcg / idcg if idcg else 0.0
    print(
        f"pytorch whole-document: {len(ids)} queries, {len(corpus)} documents, "
        f"nDCG@10 {ndcg / len(ids):.4f} (documents embedded in {doc_seconds:.0f} s, "
        f"torch {torch.__version__})"
    )


if __name__ == "__main__":
    main()
