//! EmbeddingGemma CPU benchmark: document throughput (~400-token docs), query latency,
//! threads and peak RSS. `benches/pytorch_reference.py` measures PyTorch on the same docs.
//!
//! MEMORIA_TEST_MODEL_DIR=/path/to/embeddinggemma-300m cargo bench --bench embed
//! Optional: BENCH_DOCS (default 64), BENCH_ROUNDS (3), BENCH_QUERIES (40), BENCH_DIMS,
//! BENCH_PRECISION (default `f32,q8`: each is loaded and their rounds alternate; any of
//! f32, q8, bf16, auto). With MEMORIA_PROFILE=1 it prints the encoder's time per step.

use std::time::Instant;

use candle_core::Device;
use memoria::embed::{EmbedKind, Embedder};
use memoria::gemma::{GemmaEmbedder, GemmaOptions, Precision};

const GOLDEN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/golden/embeddinggemma-300m.json"
);
const WORDS_PER_DOC: usize = 195;
const QUERY: &str = "which machine runs the memory gateway";

/// Deterministic ~400-token documents cut from the golden texts (same recipe as the
/// Python script): doc i = WORDS_PER_DOC words starting at word (i * 131) of the
/// concatenated corpus, wrapping around.
fn documents(n: usize) -> Vec<String> {
    let golden = std::env::var("MEMORIA_GOLDEN").unwrap_or_else(|_| GOLDEN.to_string());
    let text = std::fs::read_to_string(&golden).expect("golden file");
    let v: serde_json::Value = serde_json::from_str(&text).expect("golden json");
    let mut words: Vec<String> = Vec::new();
    for c in v["cases"].as_array().expect("cases") {
        words.extend(
            c["text"]
                .as_str()
                .unwrap_or("")
                .split_whitespace()
                .map(str::to_string),
        );
    }
    (0..n)
        .map(|i| {
            (0..WORDS_PER_DOC)
                .map(|k| words[(i * 131 + k) % words.len()].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn vm_hwm_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// CPU time (user + system) this process has used, in seconds: with the machine shared,
/// tokens per CPU-second is a steadier figure than wall time.
fn cpu_seconds() -> f64 {
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(after) = s.rfind(')').map(|i| &s[i + 2..]) else {
        return 0.0;
    };
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let Ok(dir) = std::env::var("MEMORIA_TEST_MODEL_DIR") else {
        println!("MEMORIA_TEST_MODEL_DIR not set: skipping the embedding benchmark");
        return;
    };
    let n_docs = env_usize("BENCH_DOCS", 64);
    let rounds = env_usize("BENCH_ROUNDS", 3);
    let n_queries = env_usize("BENCH_QUERIES", 40);
    // Each precision is loaded once; rounds alternate between them, so a burst of machine
    // noise hits every precision alike.
    let precisions: Vec<Precision> = std::env::var("BENCH_PRECISION")
        .unwrap_or_else(|_| "f32,q8".into())
        .split(',')
        .map(|p| p.parse().expect("BENCH_PRECISION: f32, q8, bf16 or auto"))
        .collect();
    println!("threads: {}", rayon::current_num_threads());
    let models: Vec<(String, GemmaEmbedder)> = precisions
        .iter()
        .map(|&precision| {
            let opts = GemmaOptions {
                dims: std::env::var("BENCH_DIMS")
                    .ok()
                    .and_then(|v| v.parse().ok()),
                batch_tokens: env_usize("BENCH_BATCH_TOKENS", GemmaOptions::default().batch_tokens),
                precision,
                ..Default::default()
            };
            let t = Instant::now();
            let model = GemmaEmbedder::load(&dir, &Device::Cpu, opts).expect("load model");
            let name = format!("{precision}→{}", model.precision());
            print!("{name}: load {:.2} s", t.elapsed().as_secs_f64());
            if let Some(kib) = vm_hwm_kib() {
                print!(", peak RSS so far {:.0} MiB", kib as f64 / 1024.0);
            }
            println!();
            (name, model)
        })
        .collect();

    let docs = documents(n_docs);
    let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
    // Warm-up (page in weights, grow allocator arenas).
    for (_, model) in &models {
        model
            .embed(&refs[..4.min(refs.len())], EmbedKind::Document)
            .expect("embed");
    }
    let mut best = vec![f64::MAX; models.len()];
    let mut tokens = 0usize;
    for r in 0..rounds {
        for ((name, model), best) in models.iter().zip(&mut best) {
            let t = Instant::now();
            let c = cpu_seconds();
            let out = model.embed(&refs, EmbedKind::Document).expect("embed");
            let dt = t.elapsed().as_secs_f64();
            let cpu = cpu_seconds() - c;
            tokens = out.iter().map(|e| e.tokens).sum();
            println!(
                "  round {r} {name}: {} docs, {tokens} tokens in {dt:.2} s = {:.0} tokens/s (cpu {cpu:.2} s: {:.0} tokens/cpu-s)",
                out.len(),
                tokens as f64 / dt,
                tokens as f64 / cpu
            );
            *best = best.min(dt);
        }
    }
    for ((name, _), best) in models.iter().zip(&best) {
        println!(
            "documents {name}: {n_docs} docs, mean {:.0} tokens/doc, best {:.0} tokens/s ({:.1} docs/s)",
            tokens as f64 / n_docs as f64,
            tokens as f64 / best,
            n_docs as f64 / best
        );
    }

    print_profile("documents, warm-up included");

    let mut lat = vec![Vec::with_capacity(n_queries); models.len()];
    let mut cpu = vec![0f64; models.len()];
    let qtokens = models[0]
        .1
        .embed(&[QUERY], EmbedKind::Query)
        .expect("embed")[0]
        .tokens;
    for _ in 0..n_queries {
        for (i, (_, model)) in models.iter().enumerate() {
            let c = cpu_seconds();
            let t = Instant::now();
            let _ = model.embed(&[QUERY], EmbedKind::Query).expect("embed");
            lat[i].push(t.elapsed().as_secs_f64() * 1e3);
            cpu[i] += cpu_seconds() - c;
        }
    }
    for (i, (name, _)) in models.iter().enumerate() {
        let lat = &mut lat[i];
        lat.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| lat[((lat.len() as f64 - 1.0) * p).round() as usize];
        println!(
            "query {name} ({qtokens} tokens): p50 {:.1} ms, p99 {:.1} ms, min {:.1} ms over {n_queries} (cpu {:.1} ms/query)",
            pct(0.5),
            pct(0.99),
            lat[0],
            cpu[i] / n_queries as f64 * 1e3
        );
    }
    if let Some(kib) = vm_hwm_kib() {
        println!("peak RSS (VmHWM): {:.0} MiB", kib as f64 / 1024.0);
    }
    print_profile("queries");
}

/// The encoder's time per step since the last report, with `MEMORIA_PROFILE` set (every
/// precision of the run together: profile one precision per run).
fn print_profile(what: &str) {
    if let Some(report) = memoria::gemma::profile_report() {
        println!("encoder steps for the {what} (MEMORIA_PROFILE):\n{report}");
    }
}
