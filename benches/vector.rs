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
//! `MEMORIA_VECTOR_EFC=64`, 41.9 s (2,386 vectors/s, recall@10 0.9990); with 48, 31.0 s
//! (3,223 vectors/s, 0.9937).
//!
//! Graph points became f16 (index format 4). The same machine, `MEMORIA_VECTOR_EFC=64
//! MEMORIA_VECTOR_EXACT_SIZES=10000 MEMORIA_VECTOR_EFS=64,96,128`, f16 and f32 (the version
//! before) interleaved, two runs each:
//!
//! ```text
//! f16  build 2,617 / 2,537 vectors/s; recall@10 at ef_search 96 0.9974 / 0.9972, p50 0.81 / 0.78 ms; 215 MB
//! f32  build 2,091 / 2,041 vectors/s; recall@10 at ef_search 96 0.9992 / 0.9996, p50 0.90 / 1.00 ms; 368 MB
//! ```
//!
//! With `MEMORIA_VECTOR_REAL` (3,729 real EmbeddingGemma vectors of SciFact, XQuAD and LoCoMo
//! text, 2,019 real queries) the narrow build showed what synthetic clusters hid: at
//! ef_construction 64, recall@10 at ef_search 96 was 0.972 (f32 0.972, f16 0.974). The
//! defaults became ef_construction 80 and ef_search 192 (real 0.991; 100k synthetic: 2,086
//! vectors/s, recall 0.9994, p50 1.88 ms); the table is in `VectorParams`'s docs. Int8 points
//! (the passages' codes, 772 bytes) were tried first: 3,317 vectors/s and 138 MB, but recall@10
//! 0.9868 on the synthetic set at any ef_search (rounding swaps near-ties) and 0.966 on the real
//! one, so they were not kept.
//!
//! ef_construction=200 built in 647 s for the same recall; noise 1.2 (looser clusters):
//! recall 0.9830 / 0.9996 / 1.0000 at ef_search 32 / 48 / 64; 128-d vectors: 119 s build,
//! recall 1.0000 at ef_search 64 (p50 0.63 ms).
//!
//! Environment knobs (defaults in brackets):
//! `MEMORIA_VECTOR_N` [100000], `MEMORIA_VECTOR_QUERIES` [500], `MEMORIA_VECTOR_DIMS` [768],
//! `MEMORIA_VECTOR_M` [default M], `MEMORIA_VECTOR_EFC` [default ef_construction],
//! `MEMORIA_VECTOR_EFS` [32,64,96,128,192,256], `MEMORIA_VECTOR_NOISE` [0.8],
//! `MEMORIA_VECTOR_EXACT_SIZES` [10000,20000,50000,100000]; `MEMORIA_VECTOR_REAL=DIR` takes
//! the data and queries from `DIR/dvec.jsonl` and `DIR/qvec.jsonl`, `memoria embed` output
//! (documents and queries), instead of generating them; `benches/real_vectors.py` makes the
//! set measured here from `../shared/eval`.
//!
//! `MEMORIA_VECTOR_PREFIX=256,384` also builds a graph over each Matryoshka prefix of the
//! vectors (the first dimensions, renormalised: EmbeddingGemma is trained so that they
//! stand for the whole) and re-ranks its first `MEMORIA_VECTOR_RESCORE` [10,20,40,80]
//! candidates by the full vectors: its build rate, and the recall@10 and latency of each
//! `ef_search` and candidate count, against the exact scan of the full vectors. A width of
//! 768 (the whole vector) measures the re-ranking alone: more candidates at one width.

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

/// The vectors of a `memoria embed` output (`{"embedding": [...]}` lines).
fn read_vectors(path: &std::path::Path) -> Vec<Vec<f32>> {
    let text = std::fs::read_to_string(path).expect("MEMORIA_VECTOR_REAL: read the vectors");
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let values = value["embedding"].as_array().expect("an embedding array");
            unit(
                values
                    .iter()
                    .map(|x| x.as_f64().unwrap_or(0.0) as f32)
                    .collect(),
            )
        })
        .collect()
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
    timed(queries, |q| {
        index.search(q, k).into_iter().map(|(id, _)| id).collect()
    })
}

/// Runs `search` once per query: its answers (ids, best first) and the p50/p99 latency.
fn timed(
    queries: &[Vec<f32>],
    mut search: impl FnMut(&[f32]) -> Vec<String>,
) -> (Vec<Vec<String>>, Duration, Duration) {
    let mut times = Vec::with_capacity(queries.len());
    let mut results = Vec::with_capacity(queries.len());
    for q in queries {
        let start = Instant::now();
        results.push(search(q));
        times.push(start.elapsed());
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

/// The graphs over Matryoshka prefixes (`MEMORIA_VECTOR_PREFIX`), re-ranked by the full
/// vectors: build rate, recall@`k` against `truth` and latency per `ef_search` and count
/// of candidates re-ranked.
fn prefix_graphs(
    data: &[Vec<f32>],
    queries: &[Vec<f32>],
    truth: &[Vec<String>],
    params: &VectorParams,
    ef_searches: &[usize],
    k: usize,
) {
    let id = |i: usize| format!("{i:032x}");
    let candidates = env_list("MEMORIA_VECTOR_RESCORE", &[10, 20, 40, 80]);
    for width in env_list("MEMORIA_VECTOR_PREFIX", &[]) {
        let width = width.min(data[0].len());
        let prefix = |v: &[f32]| unit(v[..width].to_vec());
        let entries: Vec<(String, Vec<f32>)> = data
            .iter()
            .enumerate()
            .map(|(i, v)| (id(i), prefix(v)))
            .collect();
        let start = Instant::now();
        let mut index = VectorIndex::build(width, entries, params).expect("build");
        let build = start.elapsed();
        println!(
            "prefix {width:>4}: build {:.1} s ({:.0} vectors/s)",
            build.as_secs_f64(),
            data.len() as f64 / build.as_secs_f64()
        );
        for &ef_search in ef_searches {
            index.set_ef_search(ef_search);
            for &c in &candidates {
                let (results, p50, p99) = timed(queries, |q| {
                    let mut hits: Vec<(f32, usize)> = index
                        .search(&prefix(q), c.max(k))
                        .into_iter()
                        .filter_map(|(hit, _)| usize::from_str_radix(&hit, 16).ok())
                        .map(|i| (data[i].iter().zip(q).map(|(a, b)| a * b).sum(), i))
                        .collect();
                    hits.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
                    hits.iter().take(k).map(|&(_, i)| id(i)).collect()
                });
                println!(
                    "prefix {width:>4} ef_search={ef_search:>4} re-ranking {c:>3}: recall@{k} \
                     {:.4}, search p50 {:.2} ms, p99 {:.2} ms",
                    recall(truth, &results),
                    ms(p50),
                    ms(p99)
                );
            }
        }
    }
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
    let (data, queries) = match std::env::var_os("MEMORIA_VECTOR_REAL") {
        Some(dir) => {
            let dir = std::path::PathBuf::from(dir);
            let (data, queries) = (
                read_vectors(&dir.join("dvec.jsonl")),
                read_vectors(&dir.join("qvec.jsonl")),
            );
            println!(
                "data: {} real vectors and {} real queries from {} (memoria embed), k={k}",
                data.len(),
                queries.len(),
                dir.display()
            );
            (data, queries)
        }
        None => {
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
            let centres: Vec<Vec<f32>> = (0..1000)
                .map(|_| unit((0..dims).map(|_| rng.normal()).collect()))
                .collect();
            let data = clustered(&mut rng, &centres, n, noise);
            let queries = clustered(&mut rng, &centres, nq, noise);
            println!(
                "data: {n} x {dims}-d unit vectors, 1000 clusters, noise {noise}, {nq} queries, \
                 k={k} (generated in {:.1}s, {} rayon threads)",
                start.elapsed().as_secs_f64(),
                rayon::current_num_threads()
            );
            (data, queries)
        }
    };
    let (n, dims) = (data.len(), data[0].len());
    let entries: Vec<(String, Vec<f32>)> = data
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("{i:032x}"), v.clone()))
        .collect();

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

    prefix_graphs(&data, &queries, &truth, &params, &ef_searches, k);

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
