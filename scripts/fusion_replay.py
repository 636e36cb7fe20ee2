#!/usr/bin/env python3
"""Re-rank `memoria eval --candidates FILE` offline, to try a fusion rule in seconds.

`memoria eval` runs every question through the real search; with `--candidates FILE` it also
writes each question's fusion inputs (both sides' candidates with raw scores, the weights,
minScore, the tiers), the hits it returned and what answers it. This script ranks those
candidates again the way memoria's pipeline does (`src/search/hybrid.rs`, `rank.rs`) and
prints the same metrics as `memoria eval`:

    python3 scripts/fusion_replay.py FILE                    # replay: must match eval
    python3 scripts/fusion_replay.py FILE --text-scale 0.5   # the keyword side at half weight
    python3 scripts/fusion_replay.py FILE --fusion minmax    # another fusion, same candidates
    python3 scripts/fusion_replay.py FILE --fusion weighted --min-score 0.175

A plain replay first checks itself: every question's hits must come out exactly as the
search returned them (paths, lines, order, scores to 1e-9); it says how many did and exits 1
when one did not. MMR (it reads chunk texts) and OpenClaw 2026.9's ranking are not
replayed: their lines are counted and skipped. Python 3.8+, standard library only.
"""

import argparse
import collections
import json
import math
import sys

RRF_K = 60.0
KEYWORD_ONLY_RELAXATION = 0.5


def spread(values):
    if not values:
        return 0.0, 0.0
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) * (v - mean) for v in values) / len(values))


def standardise(v, mean_sd):
    mean, sd = mean_sd
    return (v - mean) / sd if sd > 1e-12 else 1.0


def normalise(v, lo_hi):
    lo, hi = lo_hi
    return (v - lo) / (hi - lo) if hi > lo else 1.0


def text_score(bm25):
    s = max(bm25, 0.0)
    return s / (1.0 + s)


def fuse(keyword, vector, vw, tw, fusion):
    """Both sides' candidates (best first) as hits {key: [score, textScore, path, start]}."""
    log_bm25 = [math.log1p(max(k["score"], 0.0)) for k in keyword]
    cosines = [v["score"] for v in vector]
    bm25_range = (min(log_bm25, default=math.inf), max(log_bm25, default=-math.inf))
    cos_range = (min(cosines, default=math.inf), max(cosines, default=-math.inf))
    bm25_spread, cos_spread = spread(log_bm25), spread(cosines)
    hits, t_part, v_part = {}, {}, {}
    for rank, (k, lb) in enumerate(zip(keyword, log_bm25)):
        t_part[k["id"]] = {
            "weighted": text_score(k["score"]),
            "minmax": normalise(lb, bm25_range),
            "zscore": max(standardise(lb, bm25_spread), 0.0),
            "rrf": 1.0 / (RRF_K + rank + 1.0),
        }[fusion]
        hits[k["id"]] = [0.0, text_score(k["score"]), k]
    for rank, v in enumerate(vector):
        v_part[v["id"]] = {
            "weighted": v["score"],
            "minmax": normalise(v["score"], cos_range),
            "zscore": standardise(v["score"], cos_spread),
            "rrf": 1.0 / (RRF_K + rank + 1.0),
        }[fusion]
        hits.setdefault(v["id"], [0.0, 0.0, v])
    for key, hit in hits.items():
        t, v = t_part.get(key, 0.0), v_part.get(key, 0.0)
        if fusion == "rrf":
            hit[0] = (t + v) * (RRF_K + 1.0) / 2.0
        else:
            hit[0] = vw * v + tw * t
        if fusion == "zscore":
            hit[0] = 1.0 / (1.0 + math.exp(-1.702 * hit[0]))
    return hits


def order(hit):
    score, ts, c = hit
    return (-score, -ts, c["path"].encode(), c["startLine"])


def rank(line, pool, args):
    """The hits of one tier's pool, ranked and cut by minScore (`filter_ranked`)."""
    c = line["candidates"]
    keyword, vector = c["keyword"][:pool], c["vector"][:pool]
    mode = line["mode"]
    tw = c["textWeight"] * c["keywordConfidence"] * args.text_scale
    fusion = args.fusion or c["fusion"]
    if mode == "hybrid":
        hits = fuse(keyword, vector, c["vectorWeight"], tw, fusion)
    elif mode == "vector-only":
        hits = {v["id"]: [v["score"], 0.0, v] for v in vector}
    else:
        hits = {k["id"]: [text_score(k["score"]), text_score(k["score"]), k] for k in keyword}
    hits = list(hits.values())
    for hit in hits:
        hit[0] *= c["decay"].get(hit[2]["path"], 1.0)
    hits.sort(key=order)
    min_score = c["minScore"] if args.min_score is None else args.min_score
    kept = [h for h in hits if h[0] >= min_score]
    if not kept:
        if mode == "fts-only":
            floor = hits[0][0] * KEYWORD_ONLY_RELAXATION if hits else 0.0
        else:
            floor = min(min_score, c["textWeight"])
        kept = [h for h in hits if h[1] > 0.0 and h[0] >= floor]
    return kept


def replay(line, args):
    """`tiered_top`: the first maxResults from the smallest pool, the next from twice it…"""
    c = line["candidates"]
    n, base, mult = line["maxResults"], max(c["baseResults"], 1), c["candidateMultiplier"]
    pool_for = lambda size: min(max(size * mult, 1), 200)
    out, seen, size = [], set(), base
    while True:
        pool = pool_for(size)
        last = size >= n or pool >= pool_for(size * 2)
        limit = n if last else size
        for hit in rank(line, pool, args):
            if len(out) >= limit:
                break
            if hit[2]["id"] not in seen:
                seen.add(hit[2]["id"])
                out.append(hit)
        if last:
            return out
        size *= 2


def same(replayed, logged):
    return len(replayed) == len(logged) and all(
        (c["path"], c["startLine"], c["endLine"]) == (h["path"], h["startLine"], h["endLine"])
        and abs(score - h["score"]) <= 1e-9
        for (score, _, c), h in zip(replayed, logged)
    )


def metrics(line, hits):
    """(recall@1, recall@k, MRR) for evidence; (nDCG@10, recall@10, MRR@10) for BEIR."""
    if "evidence" in line:
        rank = next(
            (i + 1 for i, h in enumerate(hits)
             if any(e["path"] == h["path"] and h["startLine"] <= e["line"] <= h["endLine"]
                    for e in line["evidence"])),
            None,
        )
        return (float(rank == 1), float(rank is not None), 1.0 / rank if rank else 0.0)
    relevant, ranked = line["relevant"], []
    for h in hits:
        if h["path"] not in ranked:
            ranked.append(h["path"])
    dcg = sum(relevant.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    found = sum(1 for d in ranked[:10] if d in relevant)
    first = next((i for i, d in enumerate(ranked[:10]) if d in relevant), None)
    return (dcg / idcg if idcg > 0 else 0.0, found / max(len(relevant), 1),
            1.0 / (first + 1) if first is not None else 0.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", help="the JSON lines of `memoria eval --candidates FILE`")
    parser.add_argument("--fusion", choices=["zscore", "minmax", "weighted", "rrf"],
                        help="rank with this fusion instead of the logged one (minScore "
                        "stays as logged: the search's default differs per fusion, so "
                        "give --min-score with it)")
    parser.add_argument("--min-score", type=float,
                        help="cut at this score instead of the logged minScore")
    parser.add_argument("--text-scale", type=float, default=1.0,
                        help="multiply the keyword side's weight (default 1)")
    args = parser.parse_args()
    varied = args.fusion is not None or args.text_scale != 1.0 or args.min_score is not None
    totals = collections.OrderedDict()
    checked = matched = skipped = 0
    with open(args.file, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            line = json.loads(text)
            c = line.get("candidates")
            if c is None or c["mmr"] or c["fusion"] == "2026.9":
                skipped += 1
                continue
            replayed = replay(line, args)
            hits = [{"path": c["path"], "startLine": c["startLine"], "endLine": c["endLine"]}
                    for _, _, c in replayed]
            if not varied:
                checked += 1
                if same(replayed, line["hits"]):
                    matched += 1
                elif checked - matched <= 3:
                    print(f"{args.file}:{number}: the replay differs from the search: "
                          f"{line['query']!r}", file=sys.stderr)
            key = (line["set"], line["mode"], "evidence" in line, line["maxResults"])
            sums = totals.setdefault(key, [0, 0.0, 0.0, 0.0, 0])
            sums[0] += 1
            sums[4] += not hits
            for i, m in enumerate(metrics(line, hits)):
                sums[i + 1] += m
    if skipped:
        print(f"skipped {skipped} questions ranked with MMR or OpenClaw 2026.9's ranking")
    for (name, mode, evidence, k), (n, a, b, m, empty) in totals.items():
        what = (f"recall@1 {a / n:.3f}  recall@{k} {b / n:.3f}" if evidence
                else f"nDCG@10 {a / n:.4f}  recall@10 {b / n:.3f}")
        print(f"{mode:<12} {name:<12} {n:>5} queries  {what}  MRR {m / n:.3f}  no result {empty}")
    pooled = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for (name, mode, evidence, k), (n, a, b, m, _) in totals.items():
        if evidence:
            p = pooled[(mode, k)]
            for i, v in enumerate((n, a, b, m)):
                p[i] += v
    for (mode, k), (n, a, b, m) in pooled.items():
        if sum(1 for key in totals if key[1] == mode and key[2]) > 1:
            print(f"{mode:<12} {'all':<12} {n:>5} queries  recall@1 {a / n:.3f}  "
                  f"recall@{k} {b / n:.3f}  MRR {m / n:.3f}")
    if not varied:
        print(f"replay matches the search for {matched} of {checked} questions")
        if matched != checked:
            sys.exit(1)


if __name__ == "__main__":
    main()
