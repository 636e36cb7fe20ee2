"""Writes st-whitespace.json: sentence-transformers' embeddings of texts that are empty or
have surrounding whitespace. sentence-transformers does not strip them, so memoria must not.

    python st-whitespace.py MODEL_DIR tests/data/st-whitespace.json
"""
import json
import sys

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

model = SentenceTransformer(sys.argv[1], device="cpu")
cases = []
for kind in ["document", "query"]:
    for text in ["", " ", "  padded  ", "hello"]:
        tokens = model.tokenize([model.prompts[kind] + text])["input_ids"].shape[1]
        vector = model.encode([text], prompt_name=kind, normalize_embeddings=True)[0]
        cases.append({"kind": kind, "text": text, "tokens": int(tokens),
                      "embedding": [round(float(x), 7) for x in vector]})
source = (f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__} "
          "(CPU, float32), google/embeddinggemma-300m as assembled by "
          "shared/tools/fetch-embeddinggemma; model.encode([text], prompt_name=kind, "
          "normalize_embeddings=True)")
json.dump({"source": source, "cases": cases}, open(sys.argv[2], "w"))
