//! Vector-side benchmarks on clustered 768-d unit vectors (1,000 cluster centres plus
//! noise; queries drawn the same way, independently of the data):
//!
//! - exact-scan latency (p50/p99, k = 10) at 10k, 20k, 50k and 100k vectors, which is what
//!   `VectorParams::exact_threshold` is chosen from;
//! - HNSW at 100k: parallel build time, recall@10 against the exact scan, search latency
//!   (p50/p99) for several `ef_search`, save and load time, size on disk.
//!
//! Measured on the 2-core development VM while other builds ran (load average 5-6, so
//! absolute times are pessimistic), `cargo bench --bench vector`:
//!
//! ```text
//! exact  n= 10000: search p50  1.64 ms, p99  1.87 ms
//! exact  n= 20000: search p50  3.73 ms, p99  4.43 ms
//! exact  n= 50000: search p50 21.41 ms, p99 59.48 ms
//! exact  n=100000: search p50 33.96 ms, p99 52.15 ms
//! hnsw   n=100000: M=16 ef_construction=100: build 286.9 s (349 vectors/s)
//! hnsw   ef_search=  32: recall@10 0.9938, search p50 0.69 ms, p99 5.17 ms
//! hnsw   ef_search=  64: recall@10 1.0000, search p50 1.05 ms, p99 5.73 ms
//! hnsw   ef_search=  96: recall@10 1.0000, search p50 1.33 ms, p99 5.93 ms
//! hnsw   ef_search= 128: recall@10 1.0000, search p50 2.04 ms, p99 6.80 ms
//! hnsw   save 1.88 s, load 2.81 s (379 MB on disk); after load: recall@10 1.0000
//! ```
//!
//! On a quiet machine (Intel Xeon with AMX, 2 cores, 2026-11-29; one run each) the same
//! 100k build took 82.1 s (1,218 vectors/s, recall@10 1.0000 at ef_search 96); with
//! `MEMORIA_VECTOR_EFC=64`, the default since, 41.9 s (2,386 vectors/s, recall@10 0.9990);
//! with 48, 31.0 s (3,223 vectors/s, 0.9937).
//!
//! ef_construction=200 built in 647 s for the same recall; noise 1.2 (looser clusters):
//! recall 0.9830 / 0.9996 / 1.0000 at ef_search 32 / 48 / 64; 128-d vectors: 119 s build,
//! recall 1.0000 at ef_search 64 (p50 0.63 ms).
//!
//! Environment knobs (defaults in brackets):
//! `MEMORIA_VECTOR_N` [100000], `MEMORIA_VECTOR_QUERIES` [500], `MEMORIA_VECTOR_DIMS` [768],
//! `MEMORIA_VECTOR_M` [default M], `MEMORIA_VECTOR_EFC` [default ef_construction],
//! `MEMORIA_VECTOR_EFS` [32,64,96,128,192,256], `MEMORIA_VECTOR_NOISE` [0.8],
//! `MEMORIA_VECTOR_EXACT_SIZES` [10000,20000,50000,100000].

use std::time::{Duration, Instant};

use memoria::internals::{VectorIndex, VectorParams};

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// `n` unit vectors: a random centre plus isotropic noise of relative size `noise`
/// (so `cos(v, centre) ≈ 1/sqrt(1 + noise²)`; two vectors of one cluster ≈ `1/(1 + noise²)`).
fn clustered(rng: &mut Rng, centres: &[Vec<f32>], n: usize, noise: f32) -> Vec<Vec<f32>> {
    let dims = centres[0].len();
    let scale = noise / (dims as f32).sqrt();
    (0..n)
        .map(|_| {
            let c = &centres[(rng.next() % centres.len() as u64) as usize];
            unit(c.iter().map(|x| x + scale * rng.normal()).collect())
        })
        .collect()
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs every query once (after a warm-up pass over the first few), returns the results
/// and the p50/p99 latency.
fn timed_searches(
    index: &VectorIndex,
    queries: &[Vec<f32>],
    k: usize,
) -> (Vec<Vec<String>>, Duration, Duration) {
    for q in queries.iter().take(10) {
        std::hint::black_box(index.search(q, k));
    }
    let mut times = Vec::with_capacity(queries.len());
    let mut results = Vec::with_capacity(queries.len());
    for q in queries {
        let start = Instant::now();
        let hits = index.search(q, k);
        times.push(start.elapsed());
        results.push(hits.into_iter().map(|(id, _)| id).collect());
    }
    times.sort();
    (results, percentile(&times, 0.5), percentile(&times, 0.99))
}

fn recall(truth: &[Vec<String>], got: &[Vec<String>]) -> f64 {
    let mut found = 0;
    let mut total = 0;
    for (t, g) in truth.iter().zip(got) {
        total += t.len();
        found += g.iter().filter(|id| t.contains(id)).count();
    }
    found as f64 / total as f64
}

fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

fn main() {
    let n = env_usize("MEMORIA_VECTOR_N", 100_000);
    let nq = env_usize("MEMORIA_VECTOR_QUERIES", 500);
    let dims = env_usize("MEMORIA_VECTOR_DIMS", 768);
    let noise = std::env::var("MEMORIA_VECTOR_NOISE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.8f32);
    let defaults = VectorParams::default();
    let m = env_usize("MEMORIA_VECTOR_M", defaults.m);
    let ef_construction = env_usize("MEMORIA_VECTOR_EFC", defaults.ef_construction);
    let ef_searches = env_list("MEMORIA_VECTOR_EFS", &[32, 64, 96, 128, 192, 256]);
    let exact_sizes = env_list(
        "MEMORIA_VECTOR_EXACT_SIZES",
        &[10_000, 20_000, 50_000, 100_000],
    );
    let k = 10;

    let start = Instant::now();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let centres: Vec<Vec<f32>> = (0..1000)
        .map(|_| unit((0..dims).map(|_| rng.normal()).collect()))
        .collect();
    let data = clustered(&mut rng, &centres, n, noise);
    let queries = clustered(&mut rng, &centres, nq, noise);
    let entries: Vec<(String, Vec<f32>)> = data
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("{i:032x}"), v.clone()))
        .collect();
    println!(
        "data: {n} x {dims}-d unit vectors, 1000 clusters, noise {noise}, {nq} queries, k={k} \
         (generated in {:.1}s, {} rayon threads)",
        start.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );

    // Exact scan at several sizes; the largest also gives the ground truth.
    let exact_params = VectorParams {
        exact_threshold: usize::MAX,
        ..VectorParams::default()
    };
    let mut truth = Vec::new();
    for &size in exact_sizes.iter().filter(|&&s| s <= n) {
        let index =
            VectorIndex::build(dims, entries[..size].to_vec(), &exact_params).expect("build");
        let (results, p50, p99) = timed_searches(&index, &queries, k);
        println!(
            "exact  n={size:>6}: search p50 {:.2} ms, p99 {:.2} ms",
            ms(p50),
            ms(p99)
        );
        if size == n {
            truth = results;
        }
    }
    if truth.is_empty() {
        let index = VectorIndex::build(dims, entries.clone(), &exact_params).expect("build");
        truth = timed_searches(&index, &queries, k).0;
    }

    // HNSW.
    let params = VectorParams {
        exact_threshold: 1,
        m,
        ef_construction,
        ..VectorParams::default()
    };
    let start = Instant::now();
    let mut index = VectorIndex::build(dims, entries, &params).expect("build");
    let build = start.elapsed();
    assert!(index.is_hnsw());
    println!(
        "hnsw   n={n:>6}: M={m} ef_construction={ef_construction}: build {:.1} s ({:.0} vectors/s)",
        build.as_secs_f64(),
        n as f64 / build.as_secs_f64()
    );
    for &ef_search in &ef_searches {
        index.set_ef_search(ef_search);
        let (results, p50, p99) = timed_searches(&index, &queries, k);
        println!(
            "hnsw   ef_search={ef_search:>4}: recall@{k} {:.4}, search p50 {:.2} ms, p99 {:.2} ms",
            recall(&truth, &results),
            ms(p50),
            ms(p99)
        );
    }

    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("vectors");
    let start = Instant::now();
    index.save(&dir, 1).expect("save");
    let save = start.elapsed();
    let size = dir_size(&dir);
    let before = timed_searches(&index, &queries, k).0;
    drop(index);
    let start = Instant::now();
    let (loaded, _) = VectorIndex::load(&dir).expect("load").expect("saved");
    let load = start.elapsed();
    let (after, p50, p99) = timed_searches(&loaded, &queries, k);
    println!(
        "hnsw   save {:.2} s, load {:.2} s ({:.0} MB on disk); after load: recall@{k} {:.4} \
         (same results as before: {:.4}), p50 {:.2} ms, p99 {:.2} ms",
        save.as_secs_f64(),
        load.as_secs_f64(),
        size as f64 / 1e6,
        recall(&truth, &after),
        recall(&before, &after),
        ms(p50),
        ms(p99)
    );
}
