#!/usr/bin/env python3
"""Replays recency gated by the question's tense over `memoria eval --candidates` logs.

    memoria --model DIR --state-dir S eval --locomo tests/data/over-time --mode hybrid \\
        --candidates /tmp/ot.jsonl
    memoria --model DIR --state-dir S2 eval --locomo ../shared/eval/locomo --mode hybrid \\
        --candidates /tmp/lc.jsonl
    python3 scripts/recency_tense.py tests/data/over-time/queries.jsonl /tmp/ot.jsonl \\
        '../shared/eval/locomo/*/queries.jsonl' /tmp/lc.jsonl

The rule: a question that asks about the past (a past-tense marker: did/was/were/had,
fue/era/-aba/-ó, war/hatte/hieß...) keeps its order; any other question has its returned
hits (never more, never fewer: recall@6 cannot change) reordered by
score * 2^(-age/H), the age of a dated note counted from the newest returned note.
Prints, for each H, with and without the tense gate, right note first per kind on the
over-time set and recall@1 / MRR on LoCoMo. docs/ranking.md ("Time") has the results.
"""
import collections
import datetime
import glob
import json
import math
import re
import sys

PAST = [
    r"\b(did|was|were|had|used to)\b",
    r"\b(fue|fuimos|era|eran|estuve|estuvo|estuvimos|\w+aba|\w+abamos|\w+aron|\w{3,}ó)\b",
    r"\b(war|waren|hatte|hatten|hieß|hießen|gewohnt|gewesen)\b",
]
NOT_PAST = {"cómo", "dónde", "adónde"}


def past(query):
    q = query.lower()
    return any(m.group(0) not in NOT_PAST for p in PAST for m in re.finditer(p, q))


def day(path):
    m = re.search(r"(\d{4}-\d{2}-\d{2})", path)
    return datetime.date.fromisoformat(m.group(1)) if m else None


def rank_of(q, hits):
    return next(
        (
            i + 1
            for i, h in enumerate(hits)
            if any(
                e["path"] == h["path"] and h["startLine"] <= e["line"] <= h["endLine"]
                for e in q["evidence"]
            )
        ),
        None,
    )


def reorder(hits, half):
    hits = [dict(h) for h in hits]
    days = [day(h["path"]) for h in hits]
    known = [d for d in days if d]
    if not known:
        return hits
    newest = max(known)
    for h, d in zip(hits, days):
        if d:
            h["score"] *= 2 ** (-(newest - d).days / half)
    return sorted(hits, key=lambda h: -h["score"])


def replay(queries_glob, log, half, gated):
    queries = {}
    for path in glob.glob(queries_glob):
        for line in open(path, encoding="utf-8"):
            if line.strip():
                q = json.loads(line)
                queries[q["query"]] = q
    cells = collections.defaultdict(lambda: [0, 0, 0.0])
    for line in open(log, encoding="utf-8"):
        record = json.loads(line)
        q = queries.get(record["query"])
        if q is None or record["mode"] != "hybrid":
            continue
        hits = record["hits"]
        if half and not (gated and past(q["query"])):
            hits = reorder(hits, half)
        rank = rank_of(q, hits)
        cell = cells[q.get("kind", "all")]
        cell[0] += 1
        cell[1] += rank == 1
        cell[2] += 1 / rank if rank else 0.0
    return cells


def main(over_time, over_time_log, locomo, locomo_log):
    for half in [0, 90, 180, 240, 365, 730]:
        for gated in [False, True] if half else [False]:
            ot = replay(over_time, over_time_log, half, gated)
            (n, first, rr) = replay(locomo, locomo_log, half, gated)["all"]
            print(
                f"H {half or '-':>4} {'tense-gated' if gated else 'every query':12}"
                f" changed {ot['changed'][1]}/{ot['changed'][0]}"
                f" once {ot['once'][1]}/{ot['once'][0]}"
                f" | LoCoMo recall@1 {first / n:.3f} MRR {rr / n:.3f}"
            )


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
