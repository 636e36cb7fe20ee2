#!/usr/bin/env python3
"""Real EmbeddingGemma vectors for `benches/vector.rs` (`MEMORIA_VECTOR_REAL=DIR`).

Takes chunk-sized texts and real queries from the shared eval sets and embeds them with
`memoria embed` (the local model): 720 XQuAD en/es/zh paragraphs, LoCoMo's daily logs as
8-line windows every 4 lines, and the first 2,200 SciFact abstracts (title and text, cut at
1,600 characters, about a chunk); as queries, SciFact's 809, LoCoMo's and 150 XQuAD
questions per language. Writes DIR/dvec.jsonl and DIR/qvec.jsonl. About 4 minutes on two
cores with AMX.

    python3 benches/real_vectors.py ../shared/eval DIR [MEMORIA_BINARY]
    MEMORIA_VECTOR_REAL=DIR MEMORIA_VECTOR_EXACT_SIZES=1 cargo bench --bench vector
"""
import glob
import json
import os
import random
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    eval_dir, out = sys.argv[1], sys.argv[2]
    memoria = sys.argv[3] if len(sys.argv) > 3 else "memoria"
    docs = []
    for lang in ["en", "es", "zh"]:
        with open(f"{eval_dir}/xquad/xquad-{lang}/corpus.jsonl") as f:
            docs += [json.loads(line)["text"][:1600] for line in f]
    for conv in sorted(glob.glob(f"{eval_dir}/locomo/*/workspace")):
        for path in sorted(glob.glob(conv + "/**/*.md", recursive=True)):
            with open(path) as f:
                lines = [x for x in f.read().split("\n") if x.strip()]
            for i in range(0, len(lines), 4):
                docs.append("\n".join(lines[i : i + 8])[:1600])
    with open(f"{eval_dir}/scifact/corpus.jsonl") as f:
        for n, line in enumerate(f):
            if n == 2200:
                break
            d = json.loads(line)
            docs.append((d.get("title", "") + "\n" + d["text"])[:1600])
    with open(f"{eval_dir}/scifact/queries.jsonl") as f:
        queries = [json.loads(line)["text"] for line in f]
    for path in sorted(glob.glob(f"{eval_dir}/locomo/*/queries.jsonl")):
        with open(path) as f:
            queries += [json.loads(line)["query"] for line in f]
    for lang in ["en", "es", "zh"]:
        with open(f"{eval_dir}/xquad/xquad-{lang}/queries.jsonl") as f:
            asked = [json.loads(line)["text"] for line in f]
        random.Random(1).shuffle(asked)
        queries += asked[:150]
    os.makedirs(out, exist_ok=True)
    for kind, texts, name in [("query", queries, "qvec"), ("document", docs, "dvec")]:
        lines = "".join(json.dumps({"text": t}) + "\n" for t in texts)
        with open(f"{out}/{name}.jsonl", "w") as f:
            subprocess.run([memoria, "embed", "--kind", kind], input=lines.encode(), stdout=f, check=True)
        print(f"{out}/{name}.jsonl: {len(texts)} {kind} vectors")


if __name__ == "__main__":
    main()
