//! Fleet mode at scale (issue 48): many agents of about a thousand chunks each, and one
//! agent of very many, synced from generated daily logs into LanceDB on an S3 server and,
//! for comparison, into local agent directories: ingest rate, cold and warm hybrid search
//! p50/p99, bytes stored per chunk, and the process's memory.
//!
//! MEMORIA_TEST_MOTO=~/.cache/memoria/fleet-venv/bin/moto_server \
//!     cargo bench --features fleet --bench fleet
//!
//! Options: `MEMORIA_BENCH_AGENTS` (1000) agents of `MEMORIA_BENCH_AGENT_CHUNKS` (1000)
//! chunks; one agent of `MEMORIA_BENCH_BIG_CHUNKS` (1000000; 0 leaves it out);
//! `MEMORIA_BENCH_DIMS` (768, EmbeddingGemma's) for the stand-in embedder (feature-hashed
//! words, passages embedded as EmbeddingGemma's are: real vectors' bytes, not their cost
//! to compute; `MEMORIA_BENCH_DENSE=1` makes them dense, as a real model's are: a bag of
//! words is mostly zeros, which LanceDB's encodings compress, so the bytes stored per
//! chunk are only a real agent's with it); `MEMORIA_BENCH_SEARCHES` (200)
//! searches per measurement; `MEMORIA_BENCH_SEARCH_ONLY=1` syncs nothing and measures the
//! searches of what a store holds from an earlier run; `MEMORIA_BENCH_STORES`
//! (`local,lancedb`; also `lancedb-dir`, LanceDB on a local directory: the store's own
//! pace, without an S3 server's);
//! `MEMORIA_BENCH_DIR` (target/memoria-bench/fleet); `MEMORIA_BENCH_ANSWERS`, a directory
//! where each store's warm answers are written (`<group>-<store>.txt`, a line a search,
//! its hits as `path:startLine`), to compare two builds' answers; `MEMORIA_BENCH_S3FS`,
//! the path of an `s3s-fs` binary, serves S3 from s3s-fs (objects in files under the
//! bench's directory) instead of moto (objects in its memory, too small for the target
//! sizes).
//! Every agent's notes differ (a seed of its own), so the shared embedding cache saves
//! nothing here.
//!
//! s3s-fs as the target sizes need it (see docs/fleet.md): version 0.14.1 with
//! `benches/s3s-fs-prefix.patch`, which makes a listing walk only the directories under
//! its prefix (unpatched, every listing walks the whole bucket, as moto's does), and, as
//! root, delayed acknowledgements off on loopback (otherwise every GET waits ~40 ms for
//! one: s3s-fs answers in two writes without `TCP_NODELAY`):
//!
//! ```sh
//! cargo install s3s-fs@0.14.1 --locked --features binary   # fetches its source
//! cp -r ~/.cargo/registry/src/*/s3s-fs-0.14.1 /tmp/s3s-fs && cd /tmp/s3s-fs
//! patch -p1 < $MEMORIA/benches/s3s-fs-prefix.patch
//! cargo install --path . --locked --features binary --root /tmp/s3s-fs-bin
//! ip route change local 127.0.0.0/8 dev lo proto kernel scope host src 127.0.0.1 \
//!     table local quickack 1
//! ```
//!
//! "Cold" is a search by a new node: the bench runs itself as a new process for each
//! (nothing cached in the process; the operating system's page cache and moto's memory
//! stay warm), timed from opening the agent to its answer; "warm" repeats searches on an
//! open one. moto is a
//! single-threaded Python server holding objects in memory: real object storage has more
//! latency per request and far more throughput.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memoria::config::{Env, ProviderKind, Settings, StoreBackend};
use memoria::{EmbedderChoice, Memory, SearchOptions};

#[path = "../tests/support/hash_embedder.rs"]
mod hash_embedder;
#[path = "support/machine.rs"]
mod machine;
#[path = "../tests/support/moto.rs"]
#[allow(dead_code)]
mod moto;
#[path = "support/rng.rs"]
mod rng;
#[path = "support/workspace.rs"]
#[allow(dead_code)]
mod workspace;

use hash_embedder::HashEmbedder;
use machine::{cpu_model, rss};
use moto::S3;
use rng::Rng;

/// Notes bytes per chunk of `workspace.rs`'s logs under the default chunking (measured by
/// the first agent's sync and printed; only sizes the generated workspaces).
const BYTES_PER_CHUNK: u64 = 1_300;

struct Options {
    agents: usize,
    agent_chunks: u64,
    big_chunks: u64,
    dims: usize,
    searches: usize,
    /// Measure the searches of what the store holds, without syncing.
    search_only: bool,
    stores: Vec<String>,
    root: PathBuf,
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Where a store kind keeps its agents.
enum Backend<'a> {
    Local(PathBuf),
    Lance { s3: &'a S3, prefix: String },
    LanceDir(PathBuf),
}

/// What a cold node is told to search, as JSON in `MEMORIA_BENCH_COLD`: the bench runs
/// itself once per cold search, so that nothing is cached in the process.
#[derive(serde::Serialize, serde::Deserialize)]
struct ColdSearch {
    /// The local store's directory, LanceDB's directory, or the S3 endpoint and prefix.
    local: Option<PathBuf>,
    lance_dir: Option<PathBuf>,
    endpoint: Option<String>,
    prefix: String,
    state: PathBuf,
    agent: String,
    notes: PathBuf,
    query: String,
    dims: usize,
}

/// Runs one cold search (in the child process) and prints its time.
fn cold_child(job: &str) {
    let job: ColdSearch = serde_json::from_str(job).expect("MEMORIA_BENCH_COLD");
    let embedder = stand_in(job.dims);
    let asked = Instant::now();
    let settings = match (&job.local, &job.lance_dir) {
        (Some(dir), _) => settings(Place::Local(dir), &job.state, &job.agent, &job.notes),
        (None, Some(dir)) => settings(Place::LanceDir(dir), &job.state, &job.agent, &job.notes),
        (None, None) => settings(
            Place::Lance {
                endpoint: job.endpoint.as_deref().unwrap_or_default(),
                prefix: &job.prefix,
            },
            &job.state,
            &job.agent,
            &job.notes,
        ),
    };
    let memory = open_settings(settings, &embedder);
    memory
        .search(&job.query, &SearchOptions::default())
        .expect("cold search");
    println!("cold-ms {}", asked.elapsed().as_secs_f64() * 1e3);
}

/// One cold search by a new process; its time in the child, from opening to the answer.
fn cold_search(job: &ColdSearch) -> Duration {
    let out = std::process::Command::new(std::env::current_exe().expect("the bench binary"))
        .env(
            "MEMORIA_BENCH_COLD",
            serde_json::to_string(job).expect("json"),
        )
        .output()
        .expect("a cold node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ms: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("cold-ms "))
        .and_then(|ms| ms.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "the cold node failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    Duration::from_secs_f64(ms / 1e3)
}

/// A store's place, as `settings` takes it.
enum Place<'a> {
    Local(&'a Path),
    Lance { endpoint: &'a str, prefix: &'a str },
    LanceDir(&'a Path),
}

impl Backend<'_> {
    fn name(&self) -> &'static str {
        match self {
            Backend::Local(_) => "local",
            Backend::Lance { .. } => "lancedb on S3",
            Backend::LanceDir(_) => "lancedb on a directory",
        }
    }

    /// Bytes stored for all agents.
    fn bytes(&self) -> u64 {
        match self {
            Backend::Local(dir) | Backend::LanceDir(dir) => dir_bytes(dir),
            Backend::Lance { s3, prefix } => s3
                .objects(&format!("{prefix}/"))
                .iter()
                .map(|(_, size)| size)
                .sum(),
        }
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A node's handle on `agent`, whose notes are `workspace`.
fn open(
    backend: &Backend,
    state: &Path,
    agent: &str,
    workspace: &Path,
    embedder: &Arc<HashEmbedder>,
) -> Memory {
    let store = match backend {
        Backend::Local(dir) => Place::Local(dir),
        Backend::Lance { s3, prefix } => Place::Lance {
            endpoint: &s3.endpoint,
            prefix,
        },
        Backend::LanceDir(dir) => Place::LanceDir(dir),
    };
    open_settings(settings(store, state, agent, workspace), embedder)
}

/// The settings of a node's handle on `agent`.
fn settings(store: Place, state: &Path, agent: &str, workspace: &Path) -> Settings {
    let env = Env {
        home: Some(state.to_path_buf()),
        state_dir: Some(state.to_path_buf()),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin(agent, &env);
    settings.workspace = workspace.to_path_buf();
    settings.provider = ProviderKind::Local;
    settings.sync.on_search = false;
    match store {
        Place::Local(dir) => settings.store.dir = Some(dir.join(agent)),
        Place::Lance { endpoint, prefix } => {
            let options = S3::options_for(endpoint)
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            settings.store.backend = StoreBackend::LanceDb {
                uri: format!("s3://fleet/{prefix}"),
                options,
            };
        }
        Place::LanceDir(dir) => {
            settings.store.backend = StoreBackend::LanceDb {
                uri: dir.display().to_string(),
                options: Vec::new(),
            };
        }
    }
    settings
}

fn open_settings(settings: Settings, embedder: &Arc<HashEmbedder>) -> Memory {
    Memory::open_with(
        settings,
        EmbedderChoice::Given {
            embedder: embedder.clone(),
            provider: "local".into(),
            model: "hash".into(),
        },
    )
    .expect("open memory")
}

/// The stand-in embedder: passages embedded as the local model's are, so a chunk stores
/// its vectors and theirs.
fn stand_in(dims: usize) -> Arc<HashEmbedder> {
    Arc::new(HashEmbedder {
        passages: true,
        dense: std::env::var_os("MEMORIA_BENCH_DENSE").is_some(),
        ..Arc::into_inner(HashEmbedder::new(dims)).expect("a new embedder")
    })
}

/// The notes of agent `i`: about `chunks` chunks of daily logs (generated once, kept).
fn notes(options: &Options, vocab: &[String], i: usize, chunks: u64) -> PathBuf {
    let dir = options.root.join(format!("notes/{chunks}/agent-{i:05}"));
    if !dir.join("memory").is_dir() {
        let partial = dir.with_extension("partial");
        let _ = std::fs::remove_dir_all(&partial);
        workspace::generate_bytes(&partial, chunks * BYTES_PER_CHUNK, vocab, 1_000 + i as u64);
        std::fs::rename(&partial, &dir).expect("notes directory");
    }
    dir
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at].as_secs_f64() * 1e3
}

fn latencies(name: &str, mut times: Vec<Duration>) -> String {
    times.sort();
    format!(
        "{name} p50 {:.1} ms, p99 {:.1} ms ({} searches)",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.len()
    )
}

/// The hits of one warm search, as `path:startLine`.
type Answer = Vec<String>;

/// How alike two stores' answers to the same searches are: the share of searches with the
/// same first hit, and the mean overlap of their hits.
fn agreement(a: &[Answer], b: &[Answer]) -> String {
    let n = a.len().min(b.len()).max(1) as f64;
    let same_first = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.first() == y.first())
        .count() as f64;
    let overlap: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| {
            let shared = x.iter().filter(|h| y.contains(h)).count();
            shared as f64 / x.len().max(y.len()).max(1) as f64
        })
        .sum();
    format!(
        "same first hit {:.1} %, hits shared {:.1} %",
        100.0 * same_first / n,
        100.0 * overlap / n
    )
}

/// Syncs `agents` (name, notes) into `backend`, then measures cold and warm searches;
/// returns the warm searches' answers.
fn measure(
    options: &Options,
    backend: &Backend,
    agents: &[(String, PathBuf)],
    queries: &[String],
    embedder: &Arc<HashEmbedder>,
) -> Vec<Answer> {
    let state = options
        .root
        .join(format!("state/{}", backend.name().replace(' ', "-")));
    let _ = std::fs::remove_dir_all(&state);
    let started = Instant::now();
    let mut chunks = 0;
    // The pace of the syncs as the store fills: ten reports over the run.
    let every = (agents.len() / 10).max(1);
    let mut since = Instant::now();
    let syncing = if options.search_only { &[][..] } else { agents };
    if options.search_only {
        println!("  {}: searching what the store holds", backend.name());
    }
    for (n, (agent, notes)) in syncing.iter().enumerate() {
        let memory = open(backend, &state, agent, notes, embedder);
        let report = memory.sync(false, &|_| {}).expect("sync");
        chunks += report.chunks as u64;
        if agents.len() > 1 && (n + 1) % every == 0 {
            println!(
                "  {}: agents {}-{}: {:.2} s a sync",
                backend.name(),
                n + 2 - every,
                n + 1,
                since.elapsed().as_secs_f64() / every as f64
            );
            since = Instant::now();
        }
    }
    let took = started.elapsed().as_secs_f64();
    let bytes = backend.bytes();
    if !options.search_only {
        println!(
            "  {}: ingested {chunks} chunks of {} agents in {took:.1} s ({:.0} chunks/s); \
         {:.0} bytes stored per chunk ({:.1} MB)",
            backend.name(),
            agents.len(),
            chunks as f64 / took.max(1e-9),
            bytes as f64 / chunks.max(1) as f64,
            bytes as f64 / 1e6
        );
    }

    // Cold: a new process opening an agent, for its first search.
    let mut rng = Rng(99);
    let search = SearchOptions::default();
    let mut cold = Vec::new();
    for n in 0..options.searches.min(agents.len().max(1) * 4) {
        let (agent, notes) = &agents[(rng.next() % agents.len() as u64) as usize];
        let (local, lance_dir, endpoint, prefix) = match backend {
            Backend::Local(dir) => (Some(dir.clone()), None, None, String::new()),
            Backend::LanceDir(dir) => (None, Some(dir.clone()), None, String::new()),
            Backend::Lance { s3, prefix } => {
                (None, None, Some(s3.endpoint.clone()), prefix.clone())
            }
        };
        cold.push(cold_search(&ColdSearch {
            local,
            lance_dir,
            endpoint,
            prefix,
            state: state.join(format!("cold-{n}")),
            agent: agent.clone(),
            notes: notes.clone(),
            query: queries[n % queries.len()].clone(),
            dims: options.dims,
        }));
    }
    // Warm: one node's open handles, searched again and again.
    let open_agents: Vec<Memory> = agents
        .iter()
        .take(16)
        .map(|(agent, notes)| open(backend, &state, agent, notes, embedder))
        .collect();
    for (memory, query) in open_agents.iter().zip(queries) {
        memory.search(query, &search).expect("first search");
    }
    let mut warm = Vec::new();
    let mut answers = Vec::new();
    for n in 0..options.searches {
        let memory = &open_agents[n % open_agents.len()];
        let asked = Instant::now();
        let answer = memory.search(&queries[n % queries.len()], &search);
        warm.push(asked.elapsed());
        let answer = answer.expect("warm search");
        assert!(
            !answer.hits.is_empty() || n > 0,
            "the first warm search found nothing"
        );
        answers.push(
            answer
                .hits
                .iter()
                .map(|h| format!("{}:{}", h.path, h.start_line))
                .collect(),
        );
    }
    let (now, peak, _) = rss();
    println!(
        "  {}: {}; {}; resident {now:.0} MB (peak {peak:.0} MB, the process so far)",
        backend.name(),
        latencies("cold", cold),
        latencies("warm", warm)
    );
    answers
}

fn main() {
    if let Ok(job) = std::env::var("MEMORIA_BENCH_COLD") {
        return cold_child(&job);
    }
    let options = Options {
        agents: env_number("MEMORIA_BENCH_AGENTS", 1000) as usize,
        agent_chunks: env_number("MEMORIA_BENCH_AGENT_CHUNKS", 1000),
        big_chunks: env_number("MEMORIA_BENCH_BIG_CHUNKS", 1_000_000),
        dims: env_number("MEMORIA_BENCH_DIMS", 768) as usize,
        searches: env_number("MEMORIA_BENCH_SEARCHES", 200) as usize,
        search_only: std::env::var_os("MEMORIA_BENCH_SEARCH_ONLY").is_some(),
        stores: std::env::var("MEMORIA_BENCH_STORES")
            .unwrap_or_else(|_| "local,lancedb".into())
            .split(',')
            .map(str::to_string)
            .collect(),
        root: std::env::var_os("MEMORIA_BENCH_DIR").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/memoria-bench/fleet"),
            PathBuf::from,
        ),
    };
    let s3 = if options.stores.iter().any(|s| s == "lancedb") {
        match std::env::var_os("MEMORIA_BENCH_S3FS") {
            Some(binary) => Some(S3::start_s3s_fs(
                Path::new(&binary),
                &options.root.join("s3s-fs"),
            )),
            None => match S3::start() {
                Some(s3) => Some(s3),
                None => return,
            },
        }
    } else {
        None
    };
    let vocab = workspace::vocabulary(20_000);
    let queries = workspace::queries(&vocab, 100);
    let embedder = stand_in(options.dims);
    let mut backends = Vec::new();
    for store in &options.stores {
        match (store.as_str(), &s3) {
            ("local", _) => backends.push(Backend::Local(options.root.join("local"))),
            ("lancedb-dir", _) => backends.push(Backend::LanceDir(options.root.join("lancedb"))),
            ("lancedb", Some(s3)) => backends.push(Backend::Lance {
                s3,
                prefix: String::new(),
            }),
            (other, _) => panic!("MEMORIA_BENCH_STORES: unknown store {other:?}"),
        }
    }
    println!(
        "stand-in embedder: {} dims; {} searches per measurement; cpu: {}",
        options.dims,
        options.searches,
        cpu_model()
    );

    let scenarios = [
        ("many", options.agents, options.agent_chunks),
        (
            "big",
            usize::from(options.big_chunks > 0),
            options.big_chunks,
        ),
    ];
    for (name, count, chunks) in scenarios {
        if count == 0 {
            continue;
        }
        println!("{count} agent(s) of about {chunks} chunks:");
        let agents: Vec<(String, PathBuf)> = (0..count)
            .map(|i| (format!("{name}-{i:05}"), notes(&options, &vocab, i, chunks)))
            .collect();
        let mut answers = Vec::new();
        for backend in &mut backends {
            match backend {
                Backend::Local(dir) => *dir = options.root.join(format!("local-{name}")),
                Backend::LanceDir(dir) => *dir = options.root.join(format!("lancedb-{name}")),
                Backend::Lance { prefix, .. } => *prefix = name.to_string(),
            }
            let answer = measure(&options, backend, &agents, &queries, &embedder);
            if let Some(dir) = std::env::var_os("MEMORIA_BENCH_ANSWERS") {
                let lines: String = answer.iter().map(|a| a.join("\t") + "\n").collect();
                let path = Path::new(&dir).join(format!("{name}-{}.txt", backend.name()));
                std::fs::write(&path, lines).expect("the answers' file");
            }
            answers.push(answer);
        }
        if let [local, lance] = answers.as_slice() {
            println!(
                "  local vs lancedb, warm searches: {}",
                agreement(local, lance)
            );
        }
    }
}
