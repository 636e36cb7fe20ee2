//! Keyword-side benchmarks: chunking MB/s, keyword indexing MB/s on a generated ~50 MB
//! workspace, and warm keyword search latency (p50/p99) at ~10k and ~100k chunks.
//!
//! `cargo bench --bench keyword` (set MEMORIA_BENCH_MB to change the 50 MB workspace size).

use std::fs;
use std::path::Path;
use std::time::Instant;

use memoria::config::{Env, ProviderKind, Settings};
use memoria::internals::chunk_markdown;
use memoria::ChunkParams;
use memoria::{Memory, SearchOptions};

#[path = "support/rng.rs"]
mod rng;
#[path = "support/workspace.rs"]
mod workspace;
use workspace::{generate_workspace, queries, vocabulary};

fn settings(workspace: &Path, store: &Path) -> Settings {
    let env = Env {
        home: Some(store.to_path_buf()),
        state_dir: Some(store.to_path_buf()),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin("bench", &env);
    settings.workspace = workspace.to_path_buf();
    settings.store.dir = Some(store.join("agent"));
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
    let queries = queries(&vocab, 300);
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
