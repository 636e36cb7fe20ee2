//! A big workspace's first index with the real model, as a user meets it: how soon it
//! answers (the first keyword-searchable commit), how fast it embeds, and how many tokens
//! it embeds per byte of notes.
//!
//! MEMORIA_TEST_MODEL_DIR=DIR cargo bench --bench big_workspace
//!
//! Optional: `MEMORIA_BENCH_MB` (the generated workspace, 10 MB by default: `support/
//! workspace.rs`'s daily logs, about 48 KB each), `MEMORIA_BENCH_EMBED_SECONDS` (600: the
//! embedder refuses after that long, the sync stops as on any embedding failure, and the
//! time to fully embedded is extrapolated from the rate; 0 runs to the end),
//! `MEMORIA_BENCH_DIR` (target/memoria-bench/big_workspace). Each run indexes from
//! nothing. Before the first commit while embedding (`sync::embedding::Checkpoints`), a
//! first index was searchable only once fully embedded: that is the "before" figure.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memoria::config::{Env, ProviderKind, Settings};
use memoria::embed::Document;
use memoria::gemma::{GemmaEmbedder, GemmaOptions, Prompt};
use memoria::{EmbedError, EmbedKind, Embedder, EmbedderChoice, Embedding, Memory, SearchOptions};

#[path = "support/rng.rs"]
mod rng;
#[path = "support/workspace.rs"]
#[allow(dead_code)]
mod workspace;

/// EmbeddingGemma, counting the documents and tokens it embeds.
struct Counting {
    gemma: GemmaEmbedder,
    texts: AtomicU64,
    tokens: AtomicU64,
}

impl Embedder for Counting {
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Embedding>, EmbedError> {
        self.gemma.embed(texts, kind)
    }
    fn dims(&self) -> usize {
        self.gemma.dims()
    }
    fn fingerprint(&self) -> &str {
        self.gemma.fingerprint()
    }
    fn max_tokens(&self) -> usize {
        self.gemma.max_tokens()
    }
    fn embeds_passages(&self) -> bool {
        self.gemma.embeds_passages()
    }
    fn min_batch(&self) -> usize {
        self.gemma.min_batch()
    }
    fn uses_titles(&self) -> bool {
        self.gemma.uses_titles()
    }
    fn embed_documents(&self, documents: &[Document]) -> Result<Vec<Embedding>, EmbedError> {
        // The document prompt around the text (the title's few tokens are not counted).
        let texts: Vec<&str> = documents.iter().map(|d| d.text).collect();
        let tokens: usize = self
            .gemma
            .tokenize_batch(&texts, Prompt::Document)
            .map_err(EmbedError::from)?
            .iter()
            .map(|(ids, _)| ids.len())
            .sum();
        let embedded = self.gemma.embed_documents(documents)?;
        self.texts
            .fetch_add(documents.len() as u64, Ordering::Relaxed);
        self.tokens.fetch_add(tokens as u64, Ordering::Relaxed);
        Ok(embedded)
    }
}

fn open(root: &Path, workspace: &Path, embedder: Arc<dyn Embedder>) -> Memory {
    let env = Env {
        home: Some(root.to_path_buf()),
        state_dir: Some(root.join("state")),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin("bench", &env);
    settings.workspace = workspace.to_path_buf();
    settings.store.dir = Some(root.join("agent"));
    settings.provider = ProviderKind::Local;
    Memory::open_with(
        settings,
        EmbedderChoice::Given {
            embedder,
            provider: "local".into(),
            model: "embeddinggemma-300m".into(),
        },
    )
    .expect("open memory")
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let Some(model) = std::env::var_os("MEMORIA_TEST_MODEL_DIR") else {
        println!("MEMORIA_TEST_MODEL_DIR not set: the big-workspace bench needs the real model");
        return;
    };
    let mb = env_number("MEMORIA_BENCH_MB", 10) as usize;
    let seconds = env_number("MEMORIA_BENCH_EMBED_SECONDS", 600);
    let root = std::env::var_os("MEMORIA_BENCH_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/memoria-bench/big_workspace"),
        PathBuf::from,
    );
    let ws = root.join(format!("workspace-{mb}mb"));
    let vocab = workspace::vocabulary(20_000);
    if !ws.join("memory").is_dir() {
        workspace::generate_workspace(&ws, mb, &vocab);
    }
    let bytes: u64 = std::fs::read_dir(ws.join("memory"))
        .expect("workspace")
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum();
    let run = root.join("run");
    let _ = std::fs::remove_dir_all(&run);
    std::fs::create_dir_all(&run).expect("run directory");

    let gemma = GemmaEmbedder::load(&model, &candle_core::Device::Cpu, GemmaOptions::default())
        .expect("load EmbeddingGemma");
    let counting = Arc::new(Counting {
        gemma,
        texts: AtomicU64::new(0),
        tokens: AtomicU64::new(0),
    });
    let memory = Arc::new(open(&run, &ws, counting.clone()));
    let manifest = run.join("agent/manifest.json");
    println!(
        "workspace: {:.1} MB in {} files; embedding for {} s at most",
        bytes as f64 / 1e6,
        std::fs::read_dir(ws.join("memory")).map_or(0, |d| d.count()),
        seconds
    );

    let started = Instant::now();
    let syncing = {
        let memory = memory.clone();
        std::thread::spawn(move || memory.sync(false, &|_| {}))
    };
    while !manifest.exists() && !syncing.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let searchable = started.elapsed().as_secs_f64();
    let query = vocab[3].clone();
    let asked = Instant::now();
    let payload = memory.memory_search(&query, &SearchOptions::default());
    println!(
        "first keyword-searchable commit after {searchable:.1} s; a search then answered in \
         {:.0} ms with {} results ({})",
        asked.elapsed().as_secs_f64() * 1e3,
        payload.results.len(),
        payload.warning.as_deref().unwrap_or("no warning")
    );
    let total = std::fs::read(&manifest)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|m| m["stats"]["embedding"]["progress"]["total"].as_u64())
        .unwrap_or(0);

    // The time limit counts from the keyword commit, when embedding starts.
    let embed_started = Instant::now();
    let report = loop {
        if syncing.is_finished() {
            break syncing.join().expect("sync thread").expect("sync");
        }
        if seconds > 0 && embed_started.elapsed() >= Duration::from_secs(seconds) {
            println!("stopping after {seconds} s of embedding (kill, as a user would)");
            let texts = counting.texts.load(Ordering::Relaxed);
            let tokens = counting.tokens.load(Ordering::Relaxed);
            summary(
                bytes,
                total,
                texts,
                tokens,
                embed_started.elapsed(),
                searchable,
            );
            std::process::exit(0);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let texts = counting.texts.load(Ordering::Relaxed);
    let tokens = counting.tokens.load(Ordering::Relaxed);
    println!(
        "fully embedded after {:.1} s ({} chunks, {} vectors computed)",
        started.elapsed().as_secs_f64(),
        report.chunks,
        report.embedded
    );
    summary(
        bytes,
        total.max(texts),
        texts,
        tokens,
        embed_started.elapsed(),
        searchable,
    );
}

/// Rates, tokens per workspace byte and the time to fully embedded (measured or, for a
/// run stopped early, extrapolated from the rate).
fn summary(bytes: u64, total: u64, texts: u64, tokens: u64, took: Duration, searchable: f64) {
    let secs = took.as_secs_f64();
    let per_text = tokens as f64 / texts.max(1) as f64;
    let rate = texts as f64 / secs.max(1e-9);
    let full = searchable + total as f64 / rate.max(1e-9);
    println!(
        "embedded {texts} of {total} texts ({tokens} tokens, {per_text:.0} a text) in {secs:.0} s: \
         {rate:.2} texts/s, {:.0} tokens/s",
        tokens as f64 / secs.max(1e-9)
    );
    println!(
        "tokens embedded per workspace byte: {:.3} (all {total} texts at {per_text:.0} tokens \
         each, over {bytes} bytes)",
        total as f64 * per_text / bytes as f64
    );
    println!(
        "time to fully embedded: {full:.0} s ({:.1} h){}; before the commit while embedding, \
         the first search waited that long too",
        full / 3600.0,
        if texts < total { ", extrapolated" } else { "" }
    );
}
