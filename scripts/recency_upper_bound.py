#!/usr/bin/env python3
"""How far line-level supersession can go on tests/data/over-time, with PyTorch's model.

    PY=~/.cache/memoria/torch-venv/bin/python   # sentence-transformers, numpy
    $PY scripts/recency_upper_bound.py MODEL_DIR tests/data/over-time

Every bullet line of the workspace is embedded on its own (as a document, and with the
model's "sentence similarity", "clustering" and "fact checking" prompts for line-to-line
comparison); each question with the "search result" and "question answering" prompts.
Lines are ranked by cosine to the question; then, over the top six lines, a newer line
replaces the current first when its cosine to the question is within DELTA of the first's
and its cosine to the first line (under the chosen prompt) is at least TAU. The grid over
prompts, TAU and DELTA is tuned on the set itself, so its best row is an upper bound for
this family of rules, not a result. docs/ranking.md ("Time") has the numbers.
"""
import glob
import json
import os
import sys

import numpy as np
from sentence_transformers import SentenceTransformer

PROMPTS = {
    "doc": "title: none | text: ",
    "sts": "task: sentence similarity | query: ",
    "clustering": "task: clustering | query: ",
    "fact": "task: fact checking | query: ",
    "search": "task: search result | query: ",
    "qa": "task: question answering | query: ",
}


def main():
    model_dir, data = sys.argv[1], sys.argv[2]
    model = SentenceTransformer(model_dir, device="cpu")
    date, lines = {}, []
    for path in sorted(glob.glob(os.path.join(data, "workspace", "memory", "*.md"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line.startswith("- ") and line not in date:
                    date[line] = os.path.basename(path)[:10]
                    lines.append(line)
    with open(os.path.join(data, "queries.jsonl"), encoding="utf-8") as f:
        queries = [json.loads(l) for l in f if l.strip()]

    def evidence(q):
        e = q["evidence"][0]
        with open(os.path.join(data, "workspace", e["path"]), encoding="utf-8") as f:
            return f.read().split("\n")[e["line"] - 1].strip()

    def enc(prompt, texts):
        return np.array(model.encode([PROMPTS[prompt] + t for t in texts], normalize_embeddings=True))

    docs = enc("doc", [l[2:] for l in lines])
    pair = {p: enc(p, [l[2:] for l in lines]) for p in ("sts", "clustering", "fact")}
    pair["doc"] = docs
    asked = {p: enc(p, [q["query"] for q in queries]) for p in ("search", "qa")}
    truth = [evidence(q) for q in queries]

    def run(qp, lp, tau, delta):
        right = {"changed": 0, "once": 0}
        for i, q in enumerate(queries):
            s = docs @ asked[qp][i]
            top = list(np.argsort(-s)[:6])
            first = top[0]
            for j in top[1:]:
                if (date[lines[j]] > date[lines[first]] and s[j] >= s[first] - delta
                        and pair[lp][j] @ pair[lp][first] >= tau):
                    first = j
            right[q["kind"]] += lines[first] == truth[i]
        return right

    for qp in asked:
        r = run(qp, "doc", 2.0, 0.0)
        print(f"no recency, {qp} prompt: changed {r['changed']}/12, once {r['once']}/12")
    rows = []
    for qp in asked:
        for lp in pair:
            for tau in np.arange(0.40, 0.85, 0.05):
                for delta in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4):
                    r = run(qp, lp, tau, delta)
                    rows.append((r["changed"] + r["once"], r["changed"], r["once"], qp, lp, round(tau, 2), delta))
    rows.sort(reverse=True)
    print("best rows (right first: total, changed, once, query prompt, line prompt, tau, delta):")
    for row in rows[:5]:
        print(" ", row)


if __name__ == "__main__":
    main()
