//! Keyword-side benchmarks: chunking MB/s, keyword indexing MB/s on a generated ~50 MB
//! workspace, and warm keyword search latency (p50/p99) at ~10k and ~100k chunks.
//!
//! `cargo bench --bench keyword` (set MEMORIA_BENCH_MB to change the 50 MB workspace size).

use std::fs;
use std::path::Path;
use std::time::Instant;

use memoria::chunk::{chunk_markdown, ChunkParams};
use memoria::config::{Env, ProviderKind, Settings};
use memoria::{Memory, SearchOptions};

/// Deterministic xorshift generator (no dependency, same data every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Zipf-like index in 0..n: small indexes are much more frequent, as in real text.
    fn zipf(&mut self, n: usize) -> usize {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }
}

fn vocabulary(size: usize) -> Vec<String> {
    let syllables = [
        "ka", "to", "ri", "mem", "or", "ix", "lan", "ter", "qua", "zo", "pel", "dra", "sun", "vi",
        "no", "cha", "bel", "gor", "thi", "us", "en", "al", "mo", "ra",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..size)
        .map(|_| {
            let n = 1 + (rng.next() % 3) as usize;
            (0..n)
                .map(|_| syllables[(rng.next() % syllables.len() as u64) as usize])
                .collect()
        })
        .collect()
}

/// Writes daily-log-like Markdown files totalling about `megabytes` MB.
fn generate_workspace(dir: &Path, megabytes: usize, vocab: &[String]) -> u64 {
    let memory = dir.join("memory");
    fs::create_dir_all(&memory).unwrap();
    let mut rng = Rng(42);
    let target = (megabytes as u64) << 20;
    let mut written = 0u64;
    let mut day = 0usize;
    while written < target {
        let mut text = format!("# Log {day}\n\n");
        while text.len() < 48 * 1024 {
            let words = 6 + (rng.next() % 18) as usize;
            text.push_str("- ");
            for w in 0..words {
                if w > 0 {
                    text.push(' ');
                }
                match rng.next() % 60 {
                    0 => text.push_str(&format!("{:07x}", rng.next() & 0xfff_ffff)),
                    1 => text.push_str("memorySearch.query.hybrid"),
                    2 => text.push_str("记忆搜索"),
                    _ => text.push_str(&vocab[rng.zipf(vocab.len())]),
                }
            }
            text.push('\n');
            if rng.next().is_multiple_of(9) {
                text.push('\n');
            }
        }
        written += text.len() as u64;
        fs::write(memory.join(format!("2026-{:04}.md", day)), text).unwrap();
        day += 1;
    }
    written
}

fn settings(workspace: &Path, store: &Path) -> Settings {
    let env = Env {
        home: Some(store.to_path_buf()),
        state_dir: Some(store.to_path_buf()),
        config_path: None,
    };
    let mut settings = Settings::builtin("bench", &env);
    settings.workspace = workspace.to_path_buf();
    settings.store.dir = store.join("agent");
    settings.provider = ProviderKind::None;
    settings
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let mb: usize = std::env::var("MEMORIA_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let tmp = tempfile::tempdir().unwrap();
    let vocab = vocabulary(20_000);
    println!("threads: {}", rayon::current_num_threads());

    // Chunking and indexing throughput on the ~50 MB workspace.
    let ws = tmp.path().join("ws50");
    let bytes = generate_workspace(&ws, mb, &vocab);
    let files: Vec<String> = fs::read_dir(ws.join("memory"))
        .unwrap()
        .map(|e| fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let started = Instant::now();
    let mut chunks = 0usize;
    for text in &files {
        chunks += chunk_markdown(text, ChunkParams::default()).len();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "chunking: {:.1} MB in {secs:.3}s = {:.0} MB/s ({chunks} chunks, one thread)",
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / secs
    );
    drop(files);
    let memory = Memory::open(settings(&ws, &tmp.path().join("state50"))).unwrap();
    let started = Instant::now();
    let report = memory.sync(true, &|_| {}).unwrap();
    let secs = started.elapsed().as_secs_f64();
    println!(
        "keyword indexing: {:.1} MB, {} files, {} chunks in {secs:.2}s = {:.1} MB/s",
        bytes as f64 / 1e6,
        report.files,
        report.chunks,
        bytes as f64 / 1e6 / secs
    );
    let started = Instant::now();
    let report = memory.sync(false, &|_| {}).unwrap();
    println!(
        "no-op sync (nothing changed, {} files): {:.1} ms",
        report.files,
        started.elapsed().as_secs_f64() * 1e3
    );
    drop(memory);

    // Warm search latency at ~10k and ~100k chunks (1,280 new chars per chunk at defaults).
    let mut rng = Rng(7);
    let queries: Vec<String> = (0..300)
        .map(|_| {
            let n = 1 + (rng.next() % 4) as usize;
            (0..n)
                .map(|_| vocab[rng.zipf(2000)].clone())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    for (label, megabytes) in [("10k", 13usize), ("100k", 128)] {
        let ws = tmp.path().join(format!("ws{label}"));
        generate_workspace(&ws, megabytes, &vocab);
        let mut s = settings(&ws, &tmp.path().join(format!("state{label}")));
        s.sync.on_search = false;
        let memory = Memory::open(s).unwrap();
        let report = memory.sync(true, &|_| {}).unwrap();
        let options = SearchOptions::default();
        for q in &queries {
            memory.search(q, &options).unwrap();
        }
        let mut times: Vec<f64> = queries
            .iter()
            .map(|q| {
                let t = Instant::now();
                memory.search(q, &options).unwrap();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "warm keyword search at {} chunks: p50 {:.2} ms, p99 {:.2} ms ({} queries, maxResults 6, pool 24)",
            report.chunks,
            percentile(&times, 0.5),
            percentile(&times, 0.99),
            times.len()
        );
    }
}
