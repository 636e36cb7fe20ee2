"""The texts benches/embed.rs embeds, for the Python references (PyTorch, llama.cpp)."""
import json
import os

GOLDEN = os.environ.get("MEMORIA_GOLDEN", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "golden", "embeddinggemma-300m.json"))
WORDS_PER_DOC = 195
QUERY = "which machine runs the memory gateway"


def documents(n):
    """Same recipe as benches/embed.rs: doc i = WORDS_PER_DOC words from word i*131, cyclic."""
    cases = json.load(open(GOLDEN))["cases"]
    words = [w for c in cases for w in c["text"].split()]
    return [" ".join(words[(i * 131 + k) % len(words)] for k in range(WORDS_PER_DOC)) for i in range(n)]
