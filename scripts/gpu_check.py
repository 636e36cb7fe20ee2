#!/usr/bin/env python3
"""The steps of scripts/gpu-check (read that first).

  gpu_check.py bundle DIR BINARY MODEL_DIR   # here: DIR gets the binary, the model's small
                                             # files, shapes.json and the texts (xz-packed)
  gpu_check.py unpack BUNDLE WORK            # on the GPU host
  gpu_check.py run WORK OUT                  # on the GPU host: every check, results in OUT
  gpu_check.py torch MODEL DTYPE SPEC OUT    # one sentence-transformers run (a child of run)
"""
import json
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benches"))

# What each throughput run embeds: batch size → documents (the first call, a warm-up, is
# not counted). GPU_CHECK_BATCHES="1:3,8:16" and GPU_CHECK_QUERIES=5 shrink the run for a
# try on a CPU.
BATCHES = {int(b): int(n) for b, n in (x.split(":") for x in os.environ.get(
    "GPU_CHECK_BATCHES", "1:65,32:288,256:2304").split(","))}
QUERIES = int(os.environ.get("GPU_CHECK_QUERIES", "101"))
# The PyTorch dtypes compared against (GPU_CHECK_TORCH="float32" for a shorter run).
TORCH_DTYPES = os.environ.get("GPU_CHECK_TORCH", "float32,bfloat16").split(",")
QUERY = "which machine runs the memory gateway"


def bundle(dest, binary, model):
    from bench_texts import GOLDEN, documents  # noqa: E402 (the golden texts live in ../shared)
    import random_model

    os.makedirs(dest, exist_ok=True)
    with open(binary, "rb") as f, lzma.open(os.path.join(dest, "memoria.xz"), "wb", preset=6) as g:
        shutil.copyfileobj(f, g)
    mdir = os.path.join(dest, "model")
    if os.path.exists(mdir):
        shutil.rmtree(mdir)
    os.makedirs(mdir)
    random_model.manifest(model, mdir)
    for big in ["tokenizer.json", "tokenizer.model"]:
        p = os.path.join(mdir, big)
        if os.path.exists(p):
            with open(p, "rb") as f, lzma.open(p + ".xz", "wb", preset=6) as g:
                shutil.copyfileobj(f, g)
            os.remove(p)
    cases = json.load(open(GOLDEN))["cases"]
    check = [{"kind": c["kind"], "text": c["text"]} for c in cases]
    check += [{"kind": "document", "text": d} for d in documents(24)[8:]]
    docs = documents(max(BATCHES.values()))
    write_jsonl(os.path.join(dest, "check.jsonl"), check)
    write_jsonl(os.path.join(dest, "docs.jsonl"), [{"text": d} for d in docs])
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(dest) for f in fs)
    print(f"bundle {dest}: {total / 2**20:.1f} MiB")


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def unpack(src, work):
    shutil.copytree(src, work, dirs_exist_ok=True)
    for root, _, files in os.walk(work):
        for f in files:
            if f.endswith(".xz"):
                p = os.path.join(root, f)
                with lzma.open(p) as g, open(p[:-3], "wb") as h:
                    shutil.copyfileobj(g, h)
                os.remove(p)
    os.chmod(os.path.join(work, "memoria"), 0o755)


class GpuMemory:
    """Peak GPU memory of each process, sampled from nvidia-smi every 100 ms."""

    def __init__(self):
        self.peak = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while not self.stop.is_set():
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                    capture_output=True, text=True, timeout=5).stdout
                for line in out.splitlines():
                    pid, mib = [x.strip() for x in line.split(",")]
                    self.peak[int(pid)] = max(self.peak.get(int(pid), 0), int(mib))
            except Exception:  # noqa: BLE001 (a failed sample is only a missing figure)
                pass
            time.sleep(0.1)


def run_child(cmd, log, timeout, stdin=None, env=None, memory=None):
    """Runs cmd with a time limit; returns (returncode, stdout, stderr, peak GPU MiB)."""
    t = time.time()
    with open(stdin) if stdin else open(os.devnull) as inp:
        p = subprocess.Popen(cmd, stdin=inp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err += f"\n(killed after {timeout} s)"
            p.returncode = 124
    peak = memory.peak.get(p.pid) if memory else None
    with open(log, "a") as f:
        f.write(f"$ {' '.join(cmd)}  # exit {p.returncode}, {time.time() - t:.1f} s\n{err[-4000:]}\n")
    return p.returncode, out, err, peak


def memoria_embed(work, out, name, texts, kind, batch, precision, device, memory, timeout=240,
                  env=None):
    """memoria embed: (vectors, timings) or raises with the error."""
    path = os.path.join(work, f"in-{name}.jsonl")
    write_jsonl(path, [{"text": t} for t in texts])
    env = dict(os.environ, MEMORIA_DEVICE=device, **(env or {}))
    cmd = [os.path.join(work, "memoria"), "--model", os.path.join(work, "model"),
           "--precision", precision, "embed", "--kind", kind, "--batch", str(batch), "--timings"]
    rc, stdout, stderr, peak = run_child(cmd, os.path.join(out, "memoria.log"), timeout,
                                         stdin=path, env=env, memory=memory)
    if rc != 0:
        raise RuntimeError(f"memoria {name}: exit {rc}: {stderr.strip()[-600:]}")
    timings = json.loads([line for line in stderr.splitlines() if line.startswith("{")][-1])
    timings["gpu_mib"] = peak
    vectors = [json.loads(line)["embedding"] for line in stdout.splitlines() if line.strip()]
    return vectors, timings


def torch_child(model, dtype, spec_path, out_path):
    """One sentence-transformers process: vectors of the check texts, then the timed runs."""
    import torch
    from sentence_transformers import SentenceTransformer

    spec = json.load(open(spec_path))
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    m = SentenceTransformer(model, device=device).to(getattr(torch, dtype)).eval()
    result = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0) if cuda else "none (cpu)"}
    with torch.inference_mode():
        for kind in ["document", "query"]:
            texts = spec["check"][kind]
            result[f"check_{kind}"] = m.encode(texts, prompt_name=kind, batch_size=32).tolist()
        runs = {}
        for batch, docs in spec["batches"].items():
            batch = int(batch)
            calls = []
            for i in range(0, len(docs), batch):
                part = docs[i:i + batch]
                sync()
                t = time.perf_counter()
                m.encode(part, prompt_name="document", batch_size=batch)
                sync()
                calls.append({"texts": len(part), "ms": (time.perf_counter() - t) * 1e3})
            runs[str(batch)] = calls
        result["runs"] = runs
        lat = []
        for _ in range(spec["queries"]):
            t = time.perf_counter()
            m.encode([QUERY], prompt_name="query")
            lat.append((time.perf_counter() - t) * 1e3)
        result["query_ms"] = lat
    if cuda:
        result["max_memory_reserved_mib"] = torch.cuda.max_memory_reserved() / 2**20
    json.dump(result, open(out_path, "w"))


def worst_cosine(a, b):
    worst = 1.0
    for x, y in zip(a, b):
        dot = sum(p * q for p, q in zip(x, y))
        nx = sum(p * p for p in x) ** 0.5
        ny = sum(q * q for q in y) ** 0.5
        worst = min(worst, dot / (nx * ny))
    return worst


def docs_per_s(calls):
    """Documents per second over every call but the first (a warm-up)."""
    timed = calls[1:] or calls
    return sum(c["texts"] for c in timed) / (sum(c["ms"] for c in timed) / 1e3)


def p50(values):
    return statistics.median(values[1:] or values)


def run(work, out):
    memory = GpuMemory()
    results = {"errors": []}
    check = read_jsonl(os.path.join(work, "check.jsonl"))
    docs = [r["text"] for r in read_jsonl(os.path.join(work, "docs.jsonl"))]
    by_kind = {k: [c["text"] for c in check if c["kind"] == k] for k in ["document", "query"]}
    model = os.path.join(work, "model")

    def step(name, fn):
        t = time.time()
        try:
            fn()
            print(f"  {name}: ok ({time.time() - t:.1f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 (every failure is reported, the rest go on)
            results["errors"].append(f"{name}: {e}")
            print(f"  {name}: FAILED: {e}", flush=True)

    # Vectors of the check texts from every engine.
    vectors = {}
    engines = {"memoria-cuda-f32": ("f32", "auto"), "memoria-cuda-bf16": ("bf16", "auto"),
               "memoria-cpu-f32": ("f32", "cpu")}
    for name, (precision, device) in engines.items():
        def embed_check(name=name, precision=precision, device=device):
            vecs, words = [], []
            for kind in ["document", "query"]:
                v, timings = memoria_embed(work, out, f"{name}-{kind}", by_kind[kind], kind, 32,
                                           precision, device, memory)
                vecs += v
                words.append(timings["device"])
            vectors[name] = vecs
            results.setdefault("devices", {})[name] = words[0]
        step(f"vectors {name}", embed_check)
    spec = {"check": by_kind, "batches": {str(b): docs[:n] for b, n in BATCHES.items()},
            "queries": QUERIES}
    spec_path = os.path.join(work, "torch-spec.json")
    json.dump(spec, open(spec_path, "w"))
    torch_results = {}
    for dtype in TORCH_DTYPES:
        def torch_run(dtype=dtype):
            path = os.path.join(work, f"torch-{dtype}.json")
            cmd = [sys.executable, os.path.abspath(__file__), "torch", model, dtype, spec_path, path]
            rc, _, err, peak = run_child(cmd, os.path.join(out, "torch.log"), 300, memory=memory)
            if rc != 0:
                raise RuntimeError(f"exit {rc}: {err.strip()[-600:]}")
            r = json.load(open(path))
            r["gpu_mib"] = peak
            torch_results[dtype] = r
            short = "f32" if dtype == "float32" else "bf16"
            vectors[f"torch-cuda-{short}"] = r["check_document"] + r["check_query"]
            results["gpu"] = r["gpu"]
            results["torch"] = r["torch"]
        step(f"sentence-transformers {dtype}", torch_run)

    names = sorted(vectors)
    results["cosine"] = {f"{a} | {b}": worst_cosine(vectors[a], vectors[b])
                         for i, a in enumerate(names) for b in names[i + 1:]}

    # Throughput and latency, memoria on the GPU.
    speed = {}
    for precision in ["f32", "bf16"]:
        for batch, n in BATCHES.items():
            def timed(precision=precision, batch=batch, n=n):
                _, t = memoria_embed(work, out, f"speed-{precision}-{batch}", docs[:n], "document",
                                     batch, precision, "auto", memory)
                speed[f"memoria-cuda-{precision} batch {batch}"] = {
                    "docs_per_s": docs_per_s(t["calls"]), "gpu_mib": t["gpu_mib"],
                    "tokens_per_doc": sum(c["tokens"] for c in t["calls"]) / n}
            step(f"speed memoria {precision} batch {batch}", timed)

        # The pass width, at the widest batch (the default is 16384).
        wide = max(BATCHES)
        for width in [32768] if precision == "bf16" else []:
            def widths(precision=precision, width=width):
                _, t = memoria_embed(work, out, f"width-{precision}-{width}", docs[:BATCHES[wide]],
                                     "document", wide, precision, "auto", memory,
                                     env={"MEMORIA_GPU_BATCH_TOKENS": str(width)})
                speed[f"memoria-cuda-{precision} batch {wide}, passes of {width} tokens"] = {
                    "docs_per_s": docs_per_s(t["calls"]), "gpu_mib": t["gpu_mib"]}
            step(f"speed memoria {precision} batch {wide} passes of {width}", widths)

        def queries(precision=precision):
            _, t = memoria_embed(work, out, f"query-{precision}", [QUERY] * QUERIES, "query", 1,
                                 precision, "auto", memory)
            speed[f"memoria-cuda-{precision} query"] = {"p50_ms": p50([c["ms"] for c in t["calls"]])}
        step(f"queries memoria {precision}", queries)
    # Where memoria's time goes on the GPU: each step waits for the device.
    def profile():
        _, t = memoria_embed(work, out, "profile", docs[:BATCHES[max(BATCHES)]], "document",
                             max(BATCHES), "bf16", "auto", memory, env={"MEMORIA_PROFILE": "1"})
        results["profile bf16 batch %d" % max(BATCHES)] = {
            "docs_per_s (each step synchronised)": docs_per_s(t["calls"]),
            "steps": t.get("profile", "").splitlines()}
    step("profile memoria bf16", profile)
    for dtype, r in torch_results.items():
        short = "f32" if dtype == "float32" else "bf16"
        for batch, calls in r["runs"].items():
            speed[f"torch-cuda-{short} batch {batch}"] = {"docs_per_s": docs_per_s(calls),
                                                          "gpu_mib": r["gpu_mib"]}
        speed[f"torch-cuda-{short} query"] = {"p50_ms": p50(r["query_ms"])}
    results["speed"] = speed

    # `memoria status` names the device.
    def status():
        ws = os.path.join(work, "workspace")
        os.makedirs(os.path.join(ws, "memory"), exist_ok=True)
        with open(os.path.join(ws, "MEMORY.md"), "w") as f:
            f.write("# Memory\n\nThe gateway runs on the GPU host.\n")
        cmd = [os.path.join(work, "memoria"), "--workspace", ws, "--state-dir",
               os.path.join(work, "state"), "--model", model, "status"]
        rc, stdout, err, _ = run_child(cmd, os.path.join(out, "memoria.log"), 120)
        lines = [line for line in stdout.splitlines() if "cuda" in line or "model" in line]
        results["status"] = {"exit": rc, "lines": lines}
        if rc != 0 or not any("cuda:0" in line for line in lines):
            raise RuntimeError(f"status does not name cuda:0 (exit {rc}): {stdout[-400:]}{err[-400:]}")
    step("status", status)

    memory.stop.set()
    json.dump(results, open(os.path.join(out, "results.json"), "w"), indent=1)
    write_report(results, os.path.join(out, "results.md"))
    print(open(os.path.join(out, "results.md")).read())


def write_report(r, path):
    lines = [f"# gpu-check: {r.get('gpu', '?')}, torch {r.get('torch', '?')}", ""]
    for name, words in r.get("devices", {}).items():
        lines.append(f"- {name}: {words}")
    lines += ["", "| pair | worst cosine |", "|---|---|"]
    lines += [f"| {k} | {v:.6f} |" for k, v in r.get("cosine", {}).items()]
    lines += ["", "| engine | docs/s | query p50 ms | GPU MiB |", "|---|---|---|---|"]
    for k, v in r.get("speed", {}).items():
        d = f"{v['docs_per_s']:.0f}" if "docs_per_s" in v else ""
        q = f"{v['p50_ms']:.2f}" if "p50_ms" in v else ""
        lines.append(f"| {k} | {d} | {q} | {v.get('gpu_mib') or ''} |")
    for k, v in r.items():
        if k.startswith("profile"):
            lines += ["", f"{k}: {v['docs_per_s (each step synchronised)']:.0f} docs/s (steps synchronised)"]
            lines += [f"    {x}" for x in v["steps"]]
    if "status" in r:
        lines += ["", "status:"] + [f"    {x}" for x in r["status"]["lines"]]
    if r["errors"]:
        lines += ["", "errors:"] + [f"- {e}" for e in r["errors"]]
    open(path, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    mode, args = sys.argv[1] if len(sys.argv) > 1 else "", sys.argv[2:]
    if mode == "bundle" and len(args) == 3:
        bundle(*args)
    elif mode == "unpack" and len(args) == 2:
        unpack(*args)
    elif mode == "run" and len(args) == 2:
        run(*args)
    elif mode == "torch" and len(args) == 4:
        torch_child(*args)
    else:
        sys.exit(__doc__)
