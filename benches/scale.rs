//! One agent at scale on this machine (issue 49): a generated workspace of N chunks in one
//! local agent directory, with a stand-in embedder (768 dimensions, passages embedded as
//! EmbeddingGemma's are: real vectors' bytes and search work, not their cost to compute).
//! For each size it prints:
//!
//! - the first index's time and rate (chunks, vectors and the vector index), and its
//!   phases: files and keyword index, embedding, the vector index after the last batch;
//! - an incremental sync of about 1,000 changed chunks;
//! - warm search p50/p99 by keyword, by vector and hybrid, excluding the query embedding
//!   (the stand-in embeds a query in microseconds);
//! - resident memory while serving;
//! - bytes on disk per chunk (allocated blocks), in all and by part: the catalog, the
//!   embedding cache, the keyword index and the vector files (passages apart).
//!
//! ```text
//! cargo bench --bench scale                                  # 10k, 100k and 1M chunks
//! MEMORIA_BENCH_SCALES=100000 cargo bench --bench scale      # one size
//! ```
//!
//! With `MEMORIA_BENCH_KEYWORD_ONLY=1` the agent has no embedder (provider `none`): no
//! vectors, keyword search only, a million chunks indexed in minutes; it keeps its own
//! directories (`agent-keyword`, `state-keyword`) beside the full run's.
//!
//! `cargo test` runs it once at its smallest size (`MEMORIA_BENCH_SCALES` unset and no
//! `--bench` argument: 10,000 chunks), so CI keeps it working. Workspaces are generated
//! under `MEMORIA_BENCH_DIR` (target/memoria-bench/scale) and kept; every run indexes
//! from nothing, unless `MEMORIA_BENCH_KEEP=1` keeps the last run's index (its "first
//! index" is then a sync of the last run's change).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use memoria::config::{Env, ProviderKind, Settings};
use memoria::{EmbedderChoice, Memory, SearchOptions, SyncProgress};

#[path = "../tests/support/hash_embedder.rs"]
mod hash_embedder;
#[path = "support/machine.rs"]
mod machine;
#[path = "support/rng.rs"]
mod rng;
#[path = "support/workspace.rs"]
#[allow(dead_code)]
mod workspace;

use hash_embedder::HashEmbedder;
use machine::{cpu_model, rss};

const DIMS: usize = 768;
/// Notes bytes per chunk of `workspace.rs`'s logs under the default chunking (sizes the
/// generated workspaces; the chunks counted are printed).
const BYTES_PER_CHUNK: u64 = 1_300;
/// Chunks an incremental sync changes.
const CHANGED_CHUNKS: u64 = 1_000;
/// Searches per mode.
const SEARCHES: usize = 200;

/// The directories of a run: the full run's, or the keyword-only run's beside them.
fn dir_names(keyword_only: bool) -> [&'static str; 2] {
    match keyword_only {
        false => ["agent", "state"],
        true => ["agent-keyword", "state-keyword"],
    }
}

/// The agent, with the stand-in embedder, or none (`embedder` `None`: keyword only).
fn open(root: &Path, embedder: Option<&Arc<HashEmbedder>>, hybrid: bool) -> Memory {
    let [agent, state] = dir_names(embedder.is_none());
    let env = Env {
        home: Some(root.to_path_buf()),
        state_dir: Some(root.join(state)),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin("scale", &env);
    settings.workspace = root.join("workspace");
    settings.store.dir = Some(root.join(agent));
    settings.sync.on_search = false;
    settings.query.hybrid.enabled = hybrid;
    let choice = match embedder {
        Some(embedder) => {
            settings.provider = ProviderKind::Local;
            EmbedderChoice::Given {
                embedder: embedder.clone(),
                provider: "bench".into(),
                model: "hash-768".into(),
            }
        }
        None => {
            settings.provider = ProviderKind::None;
            EmbedderChoice::FromSettings {
                model_dir: None,
                precision: None,
            }
        }
    };
    Memory::open_with(settings, choice).expect("open memory")
}

/// The bytes the files under `path` (a file or a directory) take on disk: their allocated
/// blocks where the system says (redb's files are sparse), else their lengths.
fn bytes(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            return meta.blocks() * 512;
        }
        #[cfg(not(unix))]
        return meta.len();
    }
    std::fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| bytes(&e.path()))
        .sum()
}

/// The bytes of the files under `dir` whose name ends with `suffix`.
fn bytes_named(dir: &Path, suffix: &str) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .map(|p| match p.is_dir() {
            true => bytes_named(&p, suffix),
            false if p.to_string_lossy().ends_with(suffix) => bytes(&p),
            false => 0,
        })
        .sum()
}

fn percentiles(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99))
}

/// Rewrites notes (every line's words reversed) until about `chunks` chunks' worth of
/// bytes changed; returns the bytes rewritten.
fn change_notes(workspace: &Path, chunks: u64) -> u64 {
    let mut files: Vec<PathBuf> = std::fs::read_dir(workspace.join("memory"))
        .expect("memory/")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut changed = 0;
    for file in files {
        if changed >= chunks * BYTES_PER_CHUNK {
            break;
        }
        let text = std::fs::read_to_string(&file).expect("a note");
        let reversed: Vec<String> = text
            .lines()
            .map(|line| line.split(' ').rev().collect::<Vec<_>>().join(" "))
            .collect();
        std::fs::write(&file, reversed.join("\n") + "\n").expect("write a note");
        changed += text.len() as u64;
    }
    changed
}

fn measure(root: &Path, chunks: u64, vocab: &[String], queries: &[String], keyword_only: bool) {
    let workspace = root.join("workspace");
    let marker = root.join("workspace.done");
    if !marker.exists() {
        let _ = std::fs::remove_dir_all(root);
        workspace::generate_bytes(&workspace, chunks * BYTES_PER_CHUNK, vocab, 7);
        std::fs::write(&marker, "").expect("write marker");
    }
    // `MEMORIA_BENCH_KEEP=1` keeps the last run's index: its first sync then only catches
    // up with that run's change, for measuring the later steps without a long first index.
    let [agent_dir, _] = dir_names(keyword_only);
    if std::env::var_os("MEMORIA_BENCH_KEEP").is_none() {
        for dir in dir_names(keyword_only) {
            let _ = std::fs::remove_dir_all(root.join(dir));
        }
    }
    let embedder = Arc::new(HashEmbedder {
        passages: true,
        ..Arc::into_inner(HashEmbedder::new(DIMS)).expect("a new embedder")
    });
    let embedder = (!keyword_only).then_some(&embedder);
    let memory = open(root, embedder, true);
    let started = Instant::now();
    // When embedding started and ended: before it, files are read, chunked and
    // keyword-indexed; after it, the vector index is built and saved.
    let embedding = std::sync::Mutex::new(None::<(f64, f64, usize)>);
    let report = memory
        .sync(false, &|progress| {
            if let SyncProgress::Embedding { chunks_total, .. } = progress {
                let at = started.elapsed().as_secs_f64();
                let mut span = embedding.lock().unwrap_or_else(|e| e.into_inner());
                let first = span.map_or(at, |(first, _, _)| first);
                *span = Some((first, at, chunks_total));
            }
        })
        .expect("first index");
    let took = started.elapsed().as_secs_f64();
    let indexed = report.chunks;
    println!(
        "{indexed} chunks: first index {took:.1} s ({:.0} chunks/s)",
        indexed as f64 / took.max(1e-9)
    );
    if let Some((first, last, vectors)) = embedding.into_inner().unwrap_or_else(|e| e.into_inner())
    {
        let index = took - last;
        println!(
            "  of which files and keyword index {first:.1} s, embedding {vectors} texts {:.1} s, \
             vector index {index:.1} s ({:.0} chunks/s)",
            last - first,
            indexed as f64 / index.max(1e-9)
        );
    }

    let mut modes = Vec::new();
    let all = [
        (
            "keyword",
            true,
            SearchOptions {
                lexical_only: true,
                ..SearchOptions::default()
            },
        ),
        ("vector", false, SearchOptions::default()),
        ("hybrid", true, SearchOptions::default()),
    ];
    let run = if keyword_only { &all[..1] } else { &all[..] };
    for (mode, hybrid, options) in run {
        let searcher = match hybrid {
            true => None,
            false => Some(open(root, embedder, false)),
        };
        let memory = searcher.as_ref().unwrap_or(&memory);
        for q in queries.iter().take(10) {
            memory.search(q, options).expect("warm-up search");
        }
        let times: Vec<f64> = queries
            .iter()
            .take(SEARCHES)
            .map(|q| {
                let t = Instant::now();
                memory.search(q, options).expect("search");
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        let (p50, p99) = percentiles(times);
        modes.push(format!("{mode} p50 {p50:.2} ms, p99 {p99:.2} ms"));
    }
    println!(
        "  warm search, excluding the query embedding: {}",
        modes.join("; ")
    );
    let (now, peak, mapped) = rss();
    println!(
        "  resident {now:.0} MB, of which {mapped:.0} MB mapped files (peak {peak:.0} MB, this \
         process so far)"
    );

    let rewritten = change_notes(&workspace, CHANGED_CHUNKS);
    let started = Instant::now();
    let report = memory.sync(false, &|_| {}).expect("incremental sync");
    println!(
        "  incremental sync: {} files changed ({:.1} MB rewritten), {} texts embedded (chunks \
         and their passages), {:.1} s",
        report.indexed,
        rewritten as f64 / 1e6,
        report.embedded,
        started.elapsed().as_secs_f64()
    );
    drop(memory);

    let agent = root.join(agent_dir);
    let notes = bytes(&workspace) as f64;
    let total = bytes(&agent) as f64;
    let per = |b: u64| b as f64 / indexed.max(1) as f64;
    let generation = std::fs::read_dir(&agent)
        .expect("the agent directory")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("gen-"))
        })
        .expect("a generation");
    let vectors = generation.join("vectors");
    let passages = bytes_named(&vectors, ".passages");
    let deltas = bytes_named(&vectors, ".delta");
    println!(
        "  on disk: {:.0} bytes per chunk in all ({:.2}× the notes): catalog {:.0}, \
         embedding cache {:.0}, keyword index {:.0}, vector files {:.0} (passages {:.0}, deltas \
         {:.0} of them)",
        total / indexed.max(1) as f64,
        total / notes.max(1.0),
        per(bytes(&generation.join("catalog.redb"))),
        per(bytes(&agent.join("cache.redb"))),
        per(bytes(&generation.join("text"))),
        per(bytes(&vectors)),
        per(passages),
        per(deltas),
    );
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let scales: Vec<u64> = match std::env::var("MEMORIA_BENCH_SCALES") {
        Ok(list) => list
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect(),
        Err(_) if benching => vec![10_000, 100_000, 1_000_000],
        Err(_) => vec![10_000],
    };
    let root = std::env::var_os("MEMORIA_BENCH_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/memoria-bench/scale"),
        PathBuf::from,
    );
    let cpu = cpu_model();
    let keyword_only = std::env::var_os("MEMORIA_BENCH_KEYWORD_ONLY").is_some();
    let vectors = match keyword_only {
        true => "keyword only, no embedder".to_string(),
        false => format!("stand-in embedder: {DIMS} dims with passages"),
    };
    println!(
        "{vectors}; {SEARCHES} searches per mode; {} threads; cpu: {cpu}",
        rayon::current_num_threads()
    );
    let vocab = workspace::vocabulary(20_000);
    let queries = workspace::queries(&vocab, SEARCHES);
    for chunks in scales {
        measure(
            &root.join(chunks.to_string()),
            chunks,
            &vocab,
            &queries,
            keyword_only,
        );
    }
}
