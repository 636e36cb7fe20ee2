#!/usr/bin/env python3
"""Replays a recency rule at line level over a `memoria eval --candidates` log (a prototype).

    memoria --model DIR --state-dir S eval --locomo tests/data/over-time --mode hybrid \\
        --candidates /tmp/c.jsonl
    python3 scripts/recency_lines.py --memoria target/release/memoria --model DIR \\
        tests/data/over-time /tmp/c.jsonl [--tau 0.6 --delta 0.2]

For each question, each of the top six hits is represented by its bullet line closest to
the query (the model's cosine; every line embedded with `memoria embed`). A newer hit (by
its dated path) moves above an older one when their two lines' cosine is at least TAU
(they state the same thing) and its line's cosine to the query is within DELTA of the
older one's. Prints right note first per kind ("changed", "once"); without --tau it sweeps
a grid. docs/ranking.md ("Time") has the results.
"""
import argparse
import itertools
import json
import math
import os
import subprocess


def embed(memoria, model, texts, kind):
    lines = "\n".join(json.dumps({"text": t}) for t in texts)
    out = subprocess.run(
        [memoria, "--model", model, "embed", "--kind", kind],
        input=lines, capture_output=True, text=True, check=True,
    ).stdout
    return [json.loads(l)["embedding"] for l in out.splitlines()]


def cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memoria", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("set", help="the eval set: workspace/ and queries.jsonl")
    ap.add_argument("log", help="memoria eval --candidates output (hybrid)")
    ap.add_argument("--tau", type=float)
    ap.add_argument("--delta", type=float, default=0.2)
    args = ap.parse_args()
    queries = {}
    with open(os.path.join(args.set, "queries.jsonl"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                queries[q["query"]] = q
    with open(args.log, encoding="utf-8") as f:
        logs = [r for r in map(json.loads, f) if r["mode"] == "hybrid" and r["query"] in queries]
    files = {}

    def lines_of(hit):
        path = hit["path"]
        if path not in files:
            with open(os.path.join(args.set, "workspace", path), encoding="utf-8") as f:
                files[path] = f.read().split("\n")
        chunk = files[path][hit["startLine"] - 1 : hit["endLine"]]
        return [l.strip() for l in chunk if l.strip().startswith("- ")]

    texts = sorted({l for r in logs for h in r["hits"][:6] for l in lines_of(h)})
    line_vec = dict(zip(texts, embed(args.memoria, args.model, texts, "document")))
    query_vec = dict(zip([r["query"] for r in logs], embed(args.memoria, args.model, [r["query"] for r in logs], "query")))

    def best(hit, query):
        return max(((cos(query_vec[query], line_vec[l]), l) for l in lines_of(hit)), default=(0.0, ""))

    def run(tau, delta):
        first = {}
        for r in logs:
            q = queries[r["query"]]
            hits = list(r["hits"][:6])
            lines = {id(h): best(h, r["query"]) for h in hits}
            for _ in range(10):
                moved = False
                for i, j in itertools.combinations(range(len(hits)), 2):
                    a, b = hits[i], hits[j]
                    (qa, la), (qb, lb) = lines[id(a)], lines[id(b)]
                    if b["path"] > a["path"] and la and lb and cos(line_vec[la], line_vec[lb]) >= tau and qb >= qa - delta:
                        hits.insert(i, hits.pop(j))
                        moved = True
                        break
                if not moved:
                    break
            ev = q["evidence"][0]
            right = bool(hits) and hits[0]["path"] == ev["path"] and hits[0]["startLine"] <= ev["line"] <= hits[0]["endLine"]
            kind = q.get("kind", "all")
            n, k = first.get(kind, (0, 0))
            first[kind] = (n + 1, k + right)
        return ", ".join(f"{kind} {k}/{n}" for kind, (n, k) in sorted(first.items()))

    grid = [(args.tau, args.delta)] if args.tau is not None else itertools.product([0.5, 0.6, 0.65, 0.7], [0.1, 0.2, 1.0])
    for tau, delta in grid:
        print(f"tau {tau} delta {delta}: right note first {run(tau, delta)}")


if __name__ == "__main__":
    main()
