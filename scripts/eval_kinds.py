#!/usr/bin/env python3
"""Right note first, per kind of question, from a `memoria eval --candidates` log.

    memoria eval --locomo tests/data/over-time --mode all --candidates /tmp/c.jsonl
    python3 scripts/eval_kinds.py tests/data/over-time/queries.jsonl /tmp/c.jsonl

A question is answered first when the first hit covers one of its evidence lines (as
`memoria eval` counts recall@1); questions are grouped by their `kind` field ("changed",
"once" in tests/data/over-time) and by the mode the search was served in.
"""
import collections
import json
import sys


def main(queries_path, log_path):
    queries = {}
    with open(queries_path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                queries[q["query"]] = q
    firsts = collections.defaultdict(lambda: [0, 0, 0.0])
    with open(log_path, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            q = queries.get(record["query"])
            if q is None:
                continue
            rank = next(
                (
                    i + 1
                    for i, hit in enumerate(record["hits"])
                    if any(
                        e["path"] == hit["path"] and hit["startLine"] <= e["line"] <= hit["endLine"]
                        for e in q["evidence"]
                    )
                ),
                None,
            )
            cell = firsts[(record["mode"], q.get("kind", "all"))]
            cell[0] += 1
            cell[1] += rank == 1
            cell[2] += 1 / rank if rank else 0.0
    for (mode, kind), (n, first, rr) in sorted(firsts.items()):
        print(f"{mode:12} {kind:8} right note first {first}/{n}  MRR {rr / n:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
