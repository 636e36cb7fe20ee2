#!/usr/bin/env python3
"""A model directory with EmbeddingGemma's files and shapes but random weights, for timing
benches/embed.rs and benches/pytorch_reference.py on a machine the real weights cannot
reach (a lent machine with no network). Throughput does not depend on the weights' values;
the vectors it makes mean nothing, so never use it for accuracy.

usage:
  random_model.py manifest REAL_MODEL_DIR OUT_DIR   # on a machine with the model: copies its
                                                    # small files and writes shapes.json
  random_model.py build OUT_DIR                     # where it runs: writes the safetensors
Uses numpy when it is there (normal values); without it, random bytes with a fixed exponent.
"""
import json
import os
import shutil
import struct
import sys

WEIGHTS = ["model.safetensors", "2_Dense/model.safetensors", "3_Dense/model.safetensors"]


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    h.pop("__metadata__", None)
    return h


def prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def manifest(real, out):
    shapes = {}
    for name in WEIGHTS:
        h = header(os.path.join(real, name))
        order = sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0])
        shapes[name] = [[k, v["dtype"], v["shape"]] for k, v in order]
    for root, _, files in os.walk(real):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), real)
            if rel in WEIGHTS or f.startswith("."):
                continue
            os.makedirs(os.path.dirname(os.path.join(out, rel)) or out, exist_ok=True)
            shutil.copy(os.path.join(root, f), os.path.join(out, rel))
    with open(os.path.join(out, "shapes.json"), "w") as f:
        json.dump(shapes, f)


def noise(n):
    """n random f32 of magnitude 2^-7..2^-5 and random sign, as bytes (without numpy)."""
    b = bytearray(os.urandom(4 * n))
    b[3::4] = bytes(b[3::4]).translate(bytes((x & 0x80) | 0x3C for x in range(256)))
    return bytes(b)


def build(out):
    try:
        import numpy as np

        rng = np.random.default_rng(0)
    except ImportError:
        np = None
    with open(os.path.join(out, "shapes.json")) as f:
        shapes = json.load(f)
    for name, tensors in shapes.items():
        meta, offset = {}, 0
        for key, dtype, shape in tensors:
            assert dtype == "F32", (key, dtype)
            size = 4 * prod(shape)
            meta[key] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
            offset += size
        head = json.dumps(meta).encode()
        head += b" " * (-len(head) % 8)
        path = os.path.join(out, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(head)))
            f.write(head)
            for key, _, shape in tensors:
                n = prod(shape)
                if np is None:
                    f.write(noise(n))
                    continue
                # Norm weights near 0 (Gemma adds 1), the rest like a trained layer's scale.
                scale = 0.02 if len(shape) > 1 else 0.1
                v = rng.standard_normal(n, dtype=np.float32) * np.float32(scale)
                f.write(v.tobytes())


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "manifest":
        manifest(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "build":
        build(sys.argv[2])
    else:
        sys.exit(__doc__)
