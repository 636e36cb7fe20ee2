#!/usr/bin/env python3
"""How close LanceDB's vector indexes come to an exact scan on real EmbeddingGemma vectors
(the choice of fleet mode's index, `src/lance/indexes.rs`).

Splits SciFact abstracts and XQuAD paragraphs into sentences (48,456 of them), embeds them
with `memoria embed` (about 10 minutes on two cores with AMX), and takes every other query
of `benches/real_vectors.py`'s set (DIR/qvec.jsonl, made first). Then builds each index
kind over the sentences with LanceDB's Python package (`pip install lancedb numpy`; the
same Rust core as the crate) and reports recall@10 against an exact scan at 24 candidates
and 32 probes, for several re-ranking factors. Then, for the index memoria builds
(IVF_HNSW_SQ), the reader's own query (`src/lance/reader.rs`): 96 candidates (24 asked,
widened 4x for the passages to rescore) at each re-ranking factor, without any (the
quantised distances as they come), and at wider HNSW searches (`ef`): how many of the
exact ten are among the first ten, and among the 96 (what rescoring the candidates on
their own or passages' vectors can find). A re-ranked row is a read from the store; the
HNSW search runs over the index a node caches.

    python3 benches/real_vectors.py ../shared/eval DIR [MEMORIA_BINARY]
    python3 benches/lance_index_recall.py ../shared/eval DIR [MEMORIA_BINARY]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def sentences(eval_dir):
    out = []
    with open(f"{eval_dir}/scifact/corpus.jsonl") as f:
        for line in f:
            for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]):
                if len(s) > 40:
                    out.append(s[:600])
    for lang in ["en", "es", "zh"]:
        with open(f"{eval_dir}/xquad/xquad-{lang}/corpus.jsonl") as f:
            for line in f:
                for s in re.split(r"(?<=[.!?。])\s*", json.loads(line)["text"]):
                    if len(s) > 20:
                        out.append(s[:600])
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    eval_dir, out = sys.argv[1], sys.argv[2]
    memoria = sys.argv[3] if len(sys.argv) > 3 else "memoria"
    import numpy as np

    svec = f"{out}/svec.jsonl"
    if not os.path.exists(svec):
        texts = "".join(json.dumps({"text": t}) + "\n" for t in sentences(eval_dir))
        with open(svec, "w") as f:
            subprocess.run([memoria, "embed", "--kind", "document"], input=texts.encode(), stdout=f, check=True)

    def load(path):
        with open(path) as f:
            v = np.array([json.loads(line)["embedding"] for line in f], dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    docs, queries = load(svec), load(f"{out}/qvec.jsonl")[::2]
    exact = np.argsort(-(queries @ docs.T), axis=1)[:, :10]
    print(f"{len(docs)} sentences, {len(queries)} queries")
    kinds = [
        ("IVF_HNSW_SQ (memoria's)", {"index_type": "IVF_HNSW_SQ"}),
        ("IVF_PQ (48 sub-vectors, LanceDB's default)", {"index_type": "IVF_PQ"}),
        ("IVF_PQ (96 sub-vectors)", {"index_type": "IVF_PQ", "num_sub_vectors": 96}),
    ]
    for name, options in kinds:
        table, where, built = build(docs, options)
        for refine in [8, 16, 32]:
            first, _, ms = recall(table, queries, exact, 24, refine=refine)
            print(f"{name}, built in {built:.0f} s: re-rank {refine}x recall@10 {first:.4f}, {ms:.1f} ms a query")
        if options["index_type"] == "IVF_HNSW_SQ":
            reader_query(table, queries, exact)
        shutil.rmtree(where)


def reader_query(table, queries, exact):
    """memoria's reader's query: 96 candidates, 32 probes; each re-ranking factor at
    LanceDB's default HNSW width (`ef`), and the reader's: re-ranked once, `ef` 1,056 (11 a candidate)."""
    print("  the reader's query: 96 candidates, 32 probes")
    for refine, ef in [(None, None), (1, None), (2, None), (4, None), (8, None), (None, 1056), (1, 768), (1, 1056)]:
        first, among, ms = recall(table, queries, exact, 96, refine=refine, ef=ef)
        label = "no re-ranking" if refine is None else f"re-rank {refine}x ({96 * refine} rows read)"
        label += ", ef " + ("default" if ef is None else str(ef))
        print(f"  {label}: recall@10 {first:.4f} first ten, {among:.4f} among the 96, {ms:.1f} ms a query")


def recall(table, queries, exact, limit, refine=None, ef=None):
    """Recall@10 against `exact` of the first ten hits and of all `limit`, and the mean
    milliseconds a query, at 32 probes (LanceDB's defaults where `refine` or `ef` is None)."""
    first, among, started = 0, 0, time.time()
    for q, want in zip(queries, exact):
        search = table.search(q).distance_type("cosine").nprobes(32).limit(limit)
        if refine is not None:
            search = search.refine_factor(refine)
        if ef is not None:
            search = search.ef(ef)
        hits = search.select(["id", "_distance"]).to_arrow()["id"].to_pylist()
        want = set(want.tolist())
        first += len(set(hits[:10]) & want)
        among += len(set(hits) & want)
    n = 10 * len(queries)
    return first / n, among / n, 1000 * (time.time() - started) / len(queries)


def build(docs, options):
    import lancedb
    import numpy as np
    import pyarrow as pa

    where = tempfile.mkdtemp()
    table = lancedb.connect(where).create_table(
        "v",
        pa.table({
            "id": pa.array(np.arange(len(docs))),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(docs.ravel()), docs.shape[1]),
        }),
    )
    started = time.time()
    table.create_index(metric="cosine", **options)
    return table, where, time.time() - started


if __name__ == "__main__":
    main()
