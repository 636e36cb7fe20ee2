#!/usr/bin/env python3
"""Late chunking against separate passes, on the vector side, with PyTorch's model (issue 46).

    PY=~/.cache/memoria/torch-venv/bin/python   # sentence-transformers, numpy, torch
    $PY scripts/late_chunking.py --memoria target/release/memoria MODEL_DIR \\
        ../shared/eval/locomo/conv-26 [more sets…]

Each set is `workspace/` and `queries.jsonl` (`memoria eval --locomo`'s format). Chunks are
memoria's own (`memoria chunks --json`); a chunk's passages and a short file's whole text
follow `src/passage.rs` (windows of 4 content lines every 2 from 8 content lines; the whole
text on the first chunk of a file of 2 to 4 chunks); titles are the file's first heading.
Two ways to get the same vectors:

- separate: every chunk, passage and whole text is its own forward pass
  (`title: T | text: …`, mean over all its tokens, as sentence-transformers pools), what
  memoria does today;
- late: one forward pass per file (`title: T | text: ` and the file's content lines; a
  file over 2,048 tokens in windows of whole chunks), each chunk, passage and whole text
  the mean of its lines' token states, then the same Dense layers and normalisation;
- late-passages: each chunk's own pass (its vector as separate's), its passages pooled
  from that pass, a short file's whole text its own pass.

Prints per set and in all: texts embedded, tokens through the encoder, seconds, and the
vector side's evidence recall@6 and MRR (a chunk scores the best of its vectors, as
memoria's vector side does). Hybrid is not measured here: the keyword side is memoria's.
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

QUERY = "task: search result | query: "
MAX_TOKENS = 2048
LINES, STRIDE, MIN_LINES = 4, 2, 8


def content(line):
    t = line.strip()
    return bool(t) and not t.startswith("#")


class Note:
    """One file: its content lines, its chunks (line ranges) and what each chunk embeds."""

    def __init__(self, path, rel, memoria, workspace):
        with open(path, encoding="utf-8") as f:
            self.lines = f.read().split("\n")
        heading = next((l.lstrip("#").strip() for l in self.lines if l.startswith("#")), None)
        self.title = heading or os.path.splitext(os.path.basename(rel))[0]
        out = subprocess.run(
            [memoria, "--provider", "none", "--workspace", workspace, "chunks", "--json", rel],
            capture_output=True, text=True, check=True,
        ).stdout
        self.rel = rel
        self.chunks = [(c["startLine"], c["endLine"]) for c in json.loads(out)]
        # What each chunk embeds, as lists of 0-based line numbers: itself, then passages.
        self.units = []
        whole = [i for i, l in enumerate(self.lines) if content(l)]
        for n, (start, end) in enumerate(self.chunks):
            own = [i for i in range(start - 1, end) if i < len(self.lines) and content(self.lines[i])]
            units = [own]
            if n == 0 and 2 <= len(self.chunks) <= 4:
                units.append(whole)
            if len(own) >= MIN_LINES:
                units += [own[s:s + LINES] for s in range(0, len(own) - LINES + STRIDE, STRIDE)]
            self.units.append(units)


class Model:
    def __init__(self, model_dir):
        self.st = SentenceTransformer(model_dir, device="cpu")
        self.tok = self.st.tokenizer
        self.tokens = 0

    def states(self, text):
        """Token states of one text and its tokens' character offsets."""
        enc = self.tok(text, return_offsets_mapping=True, return_tensors="pt", truncation=True,
                       max_length=MAX_TOKENS)
        offsets = enc.pop("offset_mapping")[0].tolist()
        self.tokens += enc["input_ids"].shape[1]
        with torch.no_grad():
            out = self.st[0]({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]})
        return out["token_embeddings"][0], offsets

    def head(self, pooled):
        """The Dense layers and normalisation after pooling, for [n, hidden] means."""
        features = {"sentence_embedding": pooled}
        for module in list(self.st)[2:]:
            features = module(features)
        v = features["sentence_embedding"].detach().numpy()
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def separate(self, texts):
        vectors = []
        for text in texts:
            h, _ = self.states(text)
            vectors.append(h.mean(0))
        return self.head(torch.stack(vectors))

    def late(self, title, lines, spans, whole_first=False):
        """One pass over `lines` (content lines with their 0-based numbers); each span (a list
        of line numbers) is the mean of its lines' tokens. With `whole_first`, the first
        span is the mean over every token instead (the pass's own vector, as `separate`)."""
        prefix = f"title: {title} | text: "
        text, where = prefix, {}
        for i, line in lines:
            where[i] = (len(text), len(text) + len(line))
            text += line + ("\n" if i != lines[-1][0] else "")
        h, offsets = self.states(text)
        pooled = []
        for n, span in enumerate(spans):
            if whole_first and n == 0:
                pooled.append(h.mean(0))
                continue
            rows = [k for k, (a, b) in enumerate(offsets)
                    if b > a and any(where[i][0] <= a < where[i][1] for i in span if i in where)]
            pooled.append(h[rows].mean(0) if rows else h.mean(0))
        return self.head(torch.stack(pooled))


def window_files(model, note):
    """The files's chunks grouped into passes of at most MAX_TOKENS tokens (whole chunks)."""
    groups, current, size = [], [], 0
    for n, units in enumerate(note.units):
        t = len(model.tok("\n".join(note.lines[i] for i in units[0]))["input_ids"]) + 8
        if current and size + t > MAX_TOKENS - 32:
            groups.append(current)
            current, size = [], 0
        current.append(n)
        size += t
    if current:
        groups.append(current)
    return groups


def embed_set(model, notes, mode):
    """Per note, per chunk: its vectors (chunk first)."""
    out = {}
    for note in notes:
        per_chunk = []
        if mode == "late-passages":
            # Each chunk's own pass (its vector as `separate`'s); its windows pooled from
            # that pass; a short file's whole text its own pass.
            for n, units in enumerate(note.units):
                own = units[0]
                windows = [u for u in units[1:] if not (n == 0 and u is units[1] and len(note.chunks) in (2, 3, 4))]
                whole = [u for u in units[1:] if u not in windows]
                lines = [(i, note.lines[i].strip()) for i in own]
                vectors = model.late(note.title, lines, [own] + windows, whole_first=True) if lines \
                    else model.separate([f"title: {note.title} | text: "])
                parts = [vectors[:1]]
                if whole:
                    parts.append(model.separate([f"title: {note.title} | text: " + "\n".join(
                        note.lines[i].strip() for i in whole[0])]))
                parts.append(vectors[1:])
                per_chunk.append(np.concatenate(parts))
        elif mode == "separate":
            for units in note.units:
                texts = [f"title: {note.title} | text: " + "\n".join(note.lines[i].strip() for i in u)
                         for u in units]
                per_chunk.append(model.separate(texts))
        else:
            for group in window_files(model, note):
                lines = sorted({i for n in group for u in note.units[n] for i in u})
                lines = [(i, note.lines[i].strip()) for i in lines]
                spans = [u for n in group for u in note.units[n]]
                vectors = model.late(note.title, lines, spans)
                k = 0
                for n in group:
                    per_chunk.append(vectors[k:k + len(note.units[n])])
                    k += len(note.units[n])
        out[note.rel] = per_chunk
    return out


def evaluate(notes, vectors, queries, qvecs):
    flat = []  # (path, start, end, vectors)
    for note in notes:
        for (start, end), v in zip(note.chunks, vectors[note.rel]):
            flat.append((note.rel, start, end, v))
    recall, rr = [], []
    for q, qv in zip(queries, qvecs):
        scores = np.array([float((v @ qv).max()) for (_, _, _, v) in flat])
        order = np.argsort(-scores)
        ev = q["evidence"]
        hit = lambda c, e: c[0] == e["path"] and c[1] <= e["line"] <= c[2]
        top = [flat[i] for i in order[:6]]
        recall.append(sum(any(hit(c, e) for c in top) for e in ev) / len(ev))
        first = next((r for r, i in enumerate(order) if any(hit(flat[i], e) for e in ev)), None)
        rr.append(0.0 if first is None else 1.0 / (first + 1))
    return recall, rr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memoria", required=True)
    ap.add_argument("model")
    ap.add_argument("sets", nargs="+")
    ap.add_argument("--modes", nargs="+", default=["separate", "late", "late-passages"],
                    choices=["separate", "late", "late-passages"])
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    model = Model(args.model)
    totals = {m: {"recall": [], "rr": [], "texts": 0, "tokens": 0, "seconds": 0.0}
              for m in args.modes}
    for data in args.sets:
        ws = os.path.join(data, "workspace")
        rels = sorted(os.path.relpath(os.path.join(d, f), ws)
                      for d, _, fs in os.walk(ws) for f in fs if f.endswith(".md"))
        notes = [Note(os.path.join(ws, r), r, args.memoria, ws) for r in rels]
        with open(os.path.join(data, "queries.jsonl"), encoding="utf-8") as f:
            queries = [json.loads(l) for l in f if l.strip()]
        qvecs = model.separate([QUERY + q["query"] for q in queries])
        for mode in args.modes:
            model.tokens = 0
            t = time.time()
            vectors = embed_set(model, notes, mode)
            seconds = time.time() - t
            texts = {
                "separate": lambda: sum(len(u) for n in notes for u in n.units),
                "late": lambda: sum(len(window_files(model, n)) for n in notes),
                "late-passages": lambda: sum(len(n.chunks) + (2 <= len(n.chunks) <= 4) for n in notes),
            }[mode]()
            recall, rr = evaluate(notes, vectors, queries, qvecs)
            tot = totals[mode]
            tot["recall"] += recall
            tot["rr"] += rr
            tot["texts"] += texts
            tot["tokens"] += model.tokens
            tot["seconds"] += seconds
            print(f"{os.path.basename(data.rstrip('/'))} {mode:8} passes {texts:5} tokens "
                  f"{model.tokens:7} {seconds:7.1f} s  vector recall@6 {np.mean(recall):.3f} "
                  f"MRR {np.mean(rr):.3f}", flush=True)
    for mode, tot in totals.items():
        print(f"all      {mode:8} passes {tot['texts']:5} tokens {tot['tokens']:7} "
              f"{tot['seconds']:7.1f} s  vector recall@6 {np.mean(tot['recall']):.3f} "
              f"MRR {np.mean(tot['rr']):.3f}")


if __name__ == "__main__":
    main()
