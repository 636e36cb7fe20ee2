//! Bringing an agent directory up to date with the workspace (SPEC §4).
//!
//! A file whose size and mtime match the catalog is skipped without being read; otherwise
//! it is read and hashed, and only a changed hash re-chunks it. Changes are committed in
//! batches (catalog first, then the text index tagged with the catalog `seq`), so a
//! process killed at any instant leaves a directory that opens and answers, and the next
//! sync continues from the last committed batch.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;
use std::time::{Instant, UNIX_EPOCH};

use rayon::prelude::*;

use crate::chunk::{chunk_markdown, Chunk, ChunkParams};
use crate::config::{SessionSyncSettings, Settings};
use crate::digest::sha256_hex;
use crate::embed::backfill::{self, PendingJob};
use crate::embed::{BatchApi, EmbedKind, Embedder};
use crate::index::cache::{cache_key, EmbeddingCache};
use crate::index::catalog::{Batch, Catalog, ChunkRecord, FileRecord, Upsert};
use crate::index::text::TextIndex;
use crate::index::vector::{VectorIndex, VectorParams};
use crate::index::{
    AgentDir, EmbeddingStats, Identity, Manifest, SyncStats, WriterLock, FORMAT_VERSION,
};
use crate::session;
use crate::workspace::{decode_text, Discovery, MemoryFile, SourceKind};
use crate::{Error, Result};

/// Bytes of file content read per committed batch: bounds memory and sets how much work a
/// crash can lose.
const BATCH_BYTES: u64 = 32 << 20;
const BATCH_FILES: usize = 4096;

/// Share of deleted chunks the text index may keep before a sync merges them away (they
/// skew BM25 statistics until merged; `tests/hybrid.rs` measures the drift this allows).
const MAX_DELETED_SHARE: f64 = 0.05;

/// Chunks embedded per embedder call (the embedder groups them by length internally).
const EMBED_BATCH: usize = 64;

/// Progress of a running sync, reported after each committed batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncProgress {
    /// Reading, chunking and keyword-indexing changed files.
    Files {
        /// Files done so far.
        files_done: usize,
        /// Files to do.
        files_total: usize,
        /// Bytes done so far.
        bytes_done: u64,
        /// Bytes to do.
        bytes_total: u64,
    },
    /// Embedding chunks that have no vector yet.
    Embedding {
        /// Chunks embedded so far.
        chunks_done: usize,
        /// Chunks to embed.
        chunks_total: usize,
    },
}

/// How a sync embeds chunks (absent: keyword-only index).
pub(crate) struct EmbedPlan<'a> {
    pub(crate) embedder: &'a dyn Embedder,
    /// Identifies the embedder's vectors in the cache (provider, model, key, prompt).
    pub(crate) cache_key: String,
    /// `cache.enabled` / `cache.maxEntries`.
    pub(crate) cache_enabled: bool,
    pub(crate) cache_max_entries: usize,
    pub(crate) vector_params: VectorParams,
    /// `remote.batch.wait` may be honoured (not in a sync a search waits for).
    pub(crate) batch_may_wait: bool,
}

impl<'a> EmbedPlan<'a> {
    /// The plan for `embedder` under `identity` and the settings' cache and vector options.
    pub(crate) fn new(
        embedder: &'a dyn Embedder,
        identity: &Identity,
        settings: &Settings,
    ) -> EmbedPlan<'a> {
        let cache_key = sha256_hex(
            format!(
                "{}\n{}\n{}",
                identity.provider,
                identity.model.as_deref().unwrap_or(""),
                embedder.fingerprint()
            )
            .as_bytes(),
        );
        // `store.vector.enabled = false` means an exact in-process scan, never a graph.
        let mut vector_params = VectorParams::default();
        if !settings.store.vector_enabled {
            vector_params.exact_threshold = usize::MAX;
        }
        EmbedPlan {
            embedder,
            cache_key,
            cache_enabled: settings.cache.enabled,
            cache_max_entries: settings.cache.max_entries,
            vector_params,
            batch_may_wait: true,
        }
    }
}

/// What a sync did.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncReport {
    /// The generation now current.
    pub generation: u64,
    /// True when a new generation was built (first run, `--force`, identity change).
    pub rebuilt: bool,
    /// Memory files in the workspace.
    pub files: usize,
    /// Files (re)chunked.
    pub indexed: usize,
    /// Files removed from the index.
    pub removed: usize,
    /// Chunks in the index.
    pub chunks: u64,
    /// Bytes of memory files indexed.
    pub bytes: u64,
    /// Wall-clock seconds the sync took.
    pub seconds: f64,
    /// Chunks embedded by the model in this sync (cache hits excluded).
    pub embedded: usize,
    /// Chunks whose vectors were not computed: they came from the embedding cache or, in a
    /// rebuild with the same embedder, from the generation it replaced.
    pub cached: usize,
    /// Why embedding stopped, if it failed (the keyword index is up to date regardless).
    pub embed_error: Option<String>,
    /// Chunks whose vectors a running batch job will bring (`remote.batch.wait: false`):
    /// a later sync reads them.
    pub awaiting_batch: usize,
    /// Session transcripts whose new messages are still below `sync.sessions.deltaBytes`
    /// and `deltaMessages`: left for a later sync (SPEC §8).
    pub deferred: usize,
    /// Files skipped or decoded lossily, and why.
    pub warnings: Vec<String>,
}

/// Size and modification time of a discovered file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    pub mtime_ns: i128,
}

/// Stats `file` (following nothing: discovery already rejected symlinks).
pub fn stat(file: &MemoryFile) -> Result<FileStat> {
    let meta = fs::metadata(&file.abs_path).map_err(|e| Error::io(&file.abs_path, e))?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128);
    Ok(FileStat {
        size: meta.len(),
        mtime_ns,
    })
}

/// Digest of the discovered files' paths, sizes and mtimes (see [`SyncStats`]).
pub fn workspace_digest(discovery: &Discovery) -> String {
    let stats: Vec<Option<FileStat>> = discovery.files.iter().map(|f| stat(f).ok()).collect();
    digest_of(discovery, &stats)
}

/// The digest of the discovered files given their stats (`None`: could not be read).
fn digest_of(discovery: &Discovery, stats: &[Option<FileStat>]) -> String {
    let mut listing = String::new();
    for (file, stat) in discovery.files.iter().zip(stats) {
        let (size, mtime) = stat.as_ref().map_or((0, 0), |s| (s.size, s.mtime_ns));
        listing.push_str(&format!("{}\0{size}\0{mtime}\n", file.rel_path));
    }
    sha256_hex(listing.as_bytes())
}

/// Stable id of the `ordinal`-th chunk of a file.
pub fn chunk_id(
    source: &str,
    path: &str,
    ordinal: usize,
    start: usize,
    end: usize,
    hash: &str,
) -> String {
    let mut id = sha256_hex(format!("{source}:{path}:{ordinal}:{start}:{end}:{hash}").as_bytes());
    id.truncate(32);
    id
}

/// What to sync and how.
pub struct SyncRequest<'a> {
    pub discovery: &'a Discovery,
    pub identity: &'a Identity,
    pub params: ChunkParams,
    /// Rebuild into a new generation even if the identity is unchanged.
    pub force: bool,
    /// How to embed chunks; `None` for a keyword-only index.
    pub embed: Option<&'a EmbedPlan<'a>>,
    /// Background syncs re-index a growing transcript only once its new bytes or lines
    /// reach these thresholds; `None` (an explicit sync) indexes every change.
    pub session_deltas: Option<SessionSyncSettings>,
}

/// Opens an existing generation for writing: its catalog (every file record read, so damage
/// shows now rather than halfway through the sync) and its text index, caught up.
fn open_generation(gen_dir: &Path) -> Result<(Catalog, TextIndex, HashMap<String, FileRecord>)> {
    if !gen_dir.is_dir() {
        return Err(Error::corrupt(gen_dir, "the directory is missing"));
    }
    let catalog = Catalog::open_existing(&gen_dir.join("catalog.redb"))?;
    let known = catalog.files()?.into_iter().collect();
    let text = open_text_caught_up(&catalog, &gen_dir.join("text"))?;
    Ok((catalog, text, known))
}

/// Syncs `dir` with the request's discovery. The caller holds the writer lock.
pub fn sync(
    dir: &AgentDir,
    lock: &WriterLock,
    request: &SyncRequest,
    progress: &dyn Fn(SyncProgress),
) -> Result<SyncReport> {
    let SyncRequest {
        discovery,
        identity,
        params,
        force,
        embed,
        session_deltas,
    } = *request;
    let started = Instant::now();
    let mut warnings = discovery.warnings.clone();
    let manifest = match dir.manifest() {
        Ok(manifest) => manifest,
        Err(err) => {
            warnings.push(format!("{err}; rebuilding"));
            None
        }
    };
    let current = manifest.as_ref().map(|m| m.generation);
    dir.remove_leftovers(lock, current)?;
    let mut rebuilt = force
        || manifest
            .as_ref()
            .is_none_or(|m| m.format != FORMAT_VERSION || &m.identity != identity);
    // The current generation, unless it must be rebuilt. Damage (a missing generation, an
    // unreadable catalog) is healed, not repeated: the sync rebuilds into a new generation
    // while searches keep answering from what is left of the old one until the swap.
    let mut opened = None;
    if let (false, Some(n)) = (rebuilt, current) {
        match open_generation(&dir.generation_dir(n)) {
            Ok(found) => opened = Some(found),
            Err(err) => {
                warnings.push(format!(
                    "generation {n} is damaged ({err}); rebuilt it from the workspace"
                ));
                rebuilt = true;
            }
        }
    }
    let generation = if rebuilt {
        dir.next_generation(current)
    } else {
        current.unwrap_or(1)
    };
    let gen_dir = dir.generation_dir(generation);
    let (catalog, text, known) = match opened {
        Some(found) => found,
        None => {
            fs::create_dir_all(&gen_dir).map_err(|e| Error::io(&gen_dir, e))?;
            let catalog = Catalog::open(&gen_dir.join("catalog.redb"))?;
            let text = TextIndex::create(&gen_dir.join("text"))?;
            (catalog, text, HashMap::new())
        }
    };

    let discovered: HashSet<&str> = discovery
        .files
        .iter()
        .map(|f| f.rel_path.as_str())
        .collect();
    // Files under an extra path that is not there now stay indexed until it comes back.
    let removals: Vec<String> = known
        .keys()
        .filter(|path| !discovered.contains(path.as_str()) && !discovery.under_vanished(path))
        .cloned()
        .collect();

    // Files whose size or mtime differ from the catalog must be read.
    // The same stats make the workspace digest recorded in the manifest.
    let mut to_read = Vec::new();
    let mut stats = Vec::with_capacity(discovery.files.len());
    let mut deferred = 0;
    for file in &discovery.files {
        match stat(file) {
            Ok(stat) => {
                let record = known.get(&file.rel_path);
                let unchanged =
                    record.is_some_and(|r| r.size == stat.size && r.mtime_ns == stat.mtime_ns);
                let below_delta = match (session_deltas, record) {
                    (Some(deltas), Some(record)) if file.source == SourceKind::Sessions => {
                        below_session_delta(file, record.size, &stat, deltas)
                    }
                    _ => false,
                };
                if below_delta && !unchanged {
                    deferred += 1;
                } else if !unchanged {
                    to_read.push((file, stat.clone()));
                }
                stats.push(Some(stat));
            }
            Err(err) => {
                warnings.push(err.to_string());
                stats.push(None);
            }
        }
    }
    let bytes_total: u64 = to_read.iter().map(|(_, s)| s.size).sum();
    let files_total = to_read.len();

    let mut report = SyncReport {
        generation,
        rebuilt,
        files: discovery.files.len(),
        indexed: 0,
        removed: removals.len(),
        chunks: 0,
        bytes: 0,
        seconds: 0.0,
        embedded: 0,
        cached: 0,
        embed_error: None,
        awaiting_batch: 0,
        deferred,
        warnings: Vec::new(),
    };
    let old_chunks = |path: &str| known.get(path).map(|r| r.chunk_ids.clone());
    let mut writer = None;
    let mut pending_removals = removals;
    let mut done = 0usize;
    let mut start = 0usize;
    let mut last_seq = 0u64;
    while start < to_read.len() || !pending_removals.is_empty() {
        let mut end = start;
        let mut batch_bytes = 0u64;
        while end < to_read.len()
            && end - start < BATCH_FILES
            && (batch_bytes < BATCH_BYTES || end == start)
        {
            batch_bytes += to_read[end].1.size;
            end += 1;
        }
        let outcomes: Vec<Result<Outcome>> = to_read[start..end]
            .par_iter()
            .map(|(file, stat)| process_file(file, stat, known.get(&file.rel_path), params))
            .collect();
        let mut batch = Batch {
            removals: std::mem::take(&mut pending_removals),
            ..Batch::default()
        };
        for outcome in outcomes {
            match outcome {
                Ok(Outcome::Changed(upsert, file_warnings)) => {
                    warnings.extend(file_warnings);
                    batch.upserts.push(upsert);
                }
                Ok(Outcome::Touched { path, record }) => batch.touches.push((path, record)),
                Err(err) => warnings.push(err.to_string()),
            }
        }
        if !batch.is_empty() {
            let touches_text = !batch.upserts.is_empty() || !batch.removals.is_empty();
            if touches_text && writer.is_none() {
                writer = Some(text.writer()?);
            }
            // The catalog commit (one thread, mostly I/O) overlaps with feeding the text
            // index; the text commit still follows it, so its payload never runs ahead.
            let seq = std::thread::scope(|scope| -> Result<u64> {
                let catalog_commit = scope.spawn(|| catalog.commit(&batch, &old_chunks));
                if let Some(writer) = writer.as_ref().filter(|_| touches_text) {
                    let stale = batch
                        .removals
                        .iter()
                        .chain(batch.upserts.iter().map(|u| &u.path));
                    for path in stale {
                        writer.delete_path(path);
                    }
                    for upsert in &batch.upserts {
                        for (id, chunk) in &upsert.chunks {
                            writer.add(id, chunk)?;
                        }
                    }
                }
                catalog_commit
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })?;
            last_seq = seq;
            // A new generation is invisible until the manifest names it, so intermediate
            // text commits would buy nothing: commit once at the end. An existing one
            // commits per batch so a crash keeps the work done.
            if let Some(writer) = writer.as_mut().filter(|_| touches_text && !rebuilt) {
                writer.commit(seq)?;
            }
        }
        report.indexed += batch.upserts.len();
        report.bytes += batch_bytes;
        done = end;
        progress(SyncProgress::Files {
            files_done: done,
            files_total,
            bytes_done: report.bytes,
            bytes_total,
        });
        start = end;
    }
    debug_assert_eq!(done, files_total);
    if let Some(mut writer) = writer {
        if rebuilt {
            writer.commit(last_seq)?;
        }
        writer.purge_deletes(MAX_DELETED_SHARE)?;
        writer.finish()?;
    }

    let mut embedding = None;
    if let Some(plan) = embed {
        // A rebuild with the same embedder (a forced reindex, a new index format, a
        // chunking change) takes unchanged chunks' vectors from the generation it replaces:
        // the embedding cache alone would miss every chunk pruned past `cache.maxEntries`.
        let previous = manifest
            .as_ref()
            .filter(|m| rebuilt && same_embedder(&m.identity, identity))
            .and_then(|m| {
                let path = dir.generation_dir(m.generation).join("catalog.redb");
                Catalog::open_read_only(&path)
                    .inspect_err(|err| tracing::warn!("{err}; not reusing its vectors"))
                    .ok()
            });
        let awaiting_batch = embed_missing(
            dir,
            lock,
            &catalog,
            previous.as_ref(),
            plan,
            &mut report,
            progress,
        )?;
        let vectors = update_vector_index(&catalog, &gen_dir.join("vectors"), plan)?;
        embedding = Some(EmbeddingStats {
            vectors,
            missing: catalog.chunks_without_vectors()?.len() as u64,
            error: report.embed_error.clone(),
            awaiting_batch,
        });
        report.awaiting_batch = awaiting_batch as usize;
        // Batch jobs' problems, noted by `embed_missing`, are the sync's warnings too.
        warnings.append(&mut report.warnings);
    } else if identity.provider != "none" {
        // A keyword-only sync of an index built with an embedder (`--provider none` for
        // once): its new chunks have no vector yet, which the next sync with the embedder
        // sees as missing and embeds.
        let missing = catalog.chunks_without_vectors()?.len() as u64;
        embedding = Some(EmbeddingStats {
            vectors: (catalog.chunk_count()?).saturating_sub(missing),
            missing,
            ..EmbeddingStats::default()
        });
    }
    report.chunks = catalog.chunk_count()?;
    report.seconds = started.elapsed().as_secs_f64();
    let files = catalog.files()?;
    for (path, record) in &files {
        if record.lossy {
            warnings.push(format!(
                "{path}: invalid UTF-8 (replaced with U+FFFD when indexing)"
            ));
        }
    }
    let stats = SyncStats {
        files: files.len(),
        chunks: report.chunks,
        bytes: files.iter().map(|(_, r)| r.size).sum(),
        warnings: warnings.clone(),
        synced_at: crate::clock::unix_now(),
        workspace_digest: digest_of(discovery, &stats),
        embedding,
    };
    let new_manifest = Manifest {
        format: FORMAT_VERSION,
        generation,
        identity: identity.clone(),
        stats,
    };
    dir.write_manifest(lock, &new_manifest)?;
    if rebuilt {
        dir.remove_leftovers(lock, Some(generation))?;
    }
    report.warnings = warnings;
    Ok(report)
}

/// True when two identities' vectors are interchangeable.
fn same_embedder(a: &Identity, b: &Identity) -> bool {
    a.provider == b.provider && a.model == b.model && a.embedder == b.embedder && a.dims == b.dims
}

/// Embeds every chunk without a vector: from the cache, then `previous` (the generation
/// being replaced, by chunk id), then through the provider's batch API when it has one and
/// the backfill is large ([`backfill`]), then through direct requests. An embedder failure
/// stops embedding and is reported (the keyword index is already committed); I/O errors
/// fail.
fn embed_missing(
    dir: &AgentDir,
    lock: &WriterLock,
    catalog: &Catalog,
    previous: Option<&Catalog>,
    plan: &EmbedPlan,
    report: &mut SyncReport,
    progress: &dyn Fn(SyncProgress),
) -> Result<u64> {
    let missing = catalog.chunks_without_vectors()?;
    let cache = if plan.cache_enabled && !missing.is_empty() {
        Some(EmbeddingCache::open(&dir.root().join("cache.redb"))?)
    } else {
        None
    };
    let dims = plan.embedder.dims();
    let keys: Vec<String> = missing
        .iter()
        .map(|(_, hash, _)| cache_key(&plan.cache_key, hash))
        .collect();

    let store = Store {
        catalog,
        cache: cache.as_ref(),
        plan,
    };

    // Vectors at hand: the cache, then the generation being replaced.
    let mut todo: Vec<usize> = Vec::new();
    for (n, batch) in missing.chunks(EMBED_BATCH).enumerate() {
        let offset = n * EMBED_BATCH;
        let batch_keys = &keys[offset..offset + batch.len()];
        let mut vectors: Vec<Option<Vec<f32>>> = match &cache {
            Some(cache) => cache.get_many(batch_keys)?,
            None => vec![None; batch.len()],
        };
        if let Some(previous) = previous {
            let misses: Vec<usize> = (0..batch.len()).filter(|&i| vectors[i].is_none()).collect();
            let ids: Vec<&str> = misses.iter().map(|&i| batch[i].0.as_str()).collect();
            for (&i, vector) in misses.iter().zip(previous.vectors_by_ids(&ids)?) {
                vectors[i] = vector;
            }
        }
        let mut found = Vec::new();
        for (i, vector) in vectors.into_iter().enumerate() {
            match vector.filter(|v| v.len() == dims) {
                Some(vector) => found.push((batch[i].0.clone(), vector)),
                None => todo.push(offset + i), // a stored vector of another size is not ours
            }
        }
        report.cached += found.len();
        if !found.is_empty() {
            catalog.put_vectors(&found)?;
        }
    }

    // A large backfill through the batch API; texts it leaves go through direct requests,
    // except those a running job will bring later.
    let mut awaiting = 0u64;
    if let Some(api) = plan.embedder.batch_api() {
        let outcome = run_batches(dir, lock, api, plan, &missing, &todo, report)?;
        let mut embedded = Vec::new();
        todo.retain(|&i| {
            let hash = &missing[i].1;
            if let Some(vector) = outcome.vectors.get(hash) {
                embedded.push((i, vector.clone()));
                false
            } else if outcome.waiting.contains(hash) {
                awaiting += 1;
                false
            } else {
                true
            }
        });
        store.put(&missing, &keys, embedded, report)?;
    } else if dir.batch_jobs()?.is_some() {
        // Jobs of a provider no longer in use (or with batching turned off) are forgotten.
        dir.write_batch_jobs(lock, None)?;
    }

    // Direct requests.
    let total = todo.len();
    for (n, batch) in todo.chunks(EMBED_BATCH).enumerate() {
        let texts: Vec<&str> = batch.iter().map(|&i| missing[i].2.as_str()).collect();
        let embedded = match plan.embedder.embed(&texts, EmbedKind::Document) {
            Ok(embedded)
                if embedded.len() == texts.len()
                    && embedded.iter().all(|e| e.vector.len() == dims) =>
            {
                embedded
            }
            Ok(_) => {
                report.embed_error =
                    Some("the embedder returned vectors of the wrong count or size".into());
                break;
            }
            Err(err) => {
                report.embed_error = Some(err.to_string());
                break;
            }
        };
        let embedded = batch
            .iter()
            .copied()
            .zip(embedded.into_iter().map(|e| e.vector));
        store.put(&missing, &keys, embedded.collect(), report)?;
        progress(SyncProgress::Embedding {
            chunks_done: ((n + 1) * EMBED_BATCH).min(total),
            chunks_total: total,
        });
    }
    Ok(awaiting)
}

/// Where freshly embedded vectors go: the catalog (by chunk id) and the embedding cache
/// (by cache key).
struct Store<'a> {
    catalog: &'a Catalog,
    cache: Option<&'a EmbeddingCache>,
    plan: &'a EmbedPlan<'a>,
}

impl Store<'_> {
    /// Stores the vectors of `missing[i]` for each `(i, vector)`, counted as embedded.
    fn put(
        &self,
        missing: &[(String, String, String)],
        keys: &[String],
        embedded: Vec<(usize, Vec<f32>)>,
        report: &mut SyncReport,
    ) -> Result<()> {
        if embedded.is_empty() {
            return Ok(());
        }
        let fresh: Vec<(String, Vec<f32>)> = embedded
            .iter()
            .map(|(i, vector)| (keys[*i].clone(), vector.clone()))
            .collect();
        let found: Vec<(String, Vec<f32>)> = embedded
            .into_iter()
            .map(|(i, vector)| (missing[i].0.clone(), vector))
            .collect();
        report.embedded += found.len();
        self.catalog.put_vectors(&found)?;
        if let Some(cache) = self.cache {
            cache.put_many(&fresh, self.plan.cache_max_entries)?;
        }
        Ok(())
    }
}

/// Runs [`backfill::run`] over the texts of `missing[todo]`, with the jobs recorded in the
/// agent directory; its problems become the report's warnings.
fn run_batches(
    dir: &AgentDir,
    lock: &WriterLock,
    api: &dyn BatchApi,
    plan: &EmbedPlan,
    missing: &[(String, String, String)],
    todo: &[usize],
    report: &mut SyncReport,
) -> Result<backfill::Outcome> {
    let recorded = match dir.batch_jobs()? {
        Some(bytes) => serde_json::from_slice::<Vec<PendingJob>>(&bytes).unwrap_or_else(|err| {
            report.warnings.push(format!(
                "{}: unreadable batch job record ({err}); its jobs are forgotten",
                dir.root().join("batches.json").display()
            ));
            Vec::new()
        }),
        None => Vec::new(),
    };
    if todo.is_empty() && recorded.is_empty() {
        return Ok(backfill::Outcome::default());
    }
    let items: Vec<(&str, &str)> = todo
        .iter()
        .map(|&i| (missing[i].1.as_str(), missing[i].2.as_str()))
        .collect();
    let save = |jobs: &[PendingJob]| -> std::result::Result<(), String> {
        let bytes = match jobs.is_empty() {
            true => None,
            false => Some(serde_json::to_vec_pretty(jobs).map_err(|e| e.to_string())?),
        };
        dir.write_batch_jobs(lock, bytes.as_deref())
            .map_err(|e| e.to_string())
    };
    let outcome = backfill::run(
        api,
        &plan.cache_key,
        &items,
        recorded,
        backfill::Limits::DEFAULT,
        plan.batch_may_wait,
        &save,
    );
    if outcome.submitted > 0 || !outcome.jobs.is_empty() {
        tracing::info!(
            "batch embedding: {} job(s) submitted, {} still running, {} vector(s) read",
            outcome.submitted,
            outcome.jobs.len(),
            outcome.vectors.len()
        );
    }
    report.warnings.extend(
        outcome.problems.iter().map(|problem| {
            format!("{problem}; those chunks were embedded through direct requests")
        }),
    );
    Ok(outcome)
}

/// Brings `vectors/` in line with the catalog's vectors: tombstones for vanished chunks,
/// inserts for new ones, a rebuild when too many tombstones piled up or the saved index is
/// missing, stale beyond repair, or unreadable. Never re-embeds. Returns the vector count.
fn update_vector_index(catalog: &Catalog, dir: &Path, plan: &EmbedPlan) -> Result<u64> {
    let seq = catalog.vector_seq()?;
    let loaded = match VectorIndex::load(dir) {
        Ok(loaded) => loaded,
        Err(err) => {
            tracing::warn!("{err}; rebuilding the vector index from the catalog");
            None
        }
    };
    if let Some((index, tag)) = &loaded {
        if *tag == seq {
            return Ok(index.len() as u64);
        }
    }
    let vectors = catalog.vectors()?;
    let count = vectors.len() as u64;
    let dims = plan.embedder.dims();
    let index = match loaded {
        Some((mut index, _)) if index.dims() == dims => {
            let wanted: HashSet<&str> = vectors.iter().map(|(id, _)| id.as_str()).collect();
            let stale: Vec<String> = index
                .ids()
                .filter(|id| !wanted.contains(id))
                .map(str::to_string)
                .collect();
            for id in &stale {
                index.remove(id);
            }
            let fresh: Vec<(String, Vec<f32>)> = vectors
                .iter()
                .filter(|(id, _)| !index.contains(id))
                .cloned()
                .collect();
            index.extend(fresh)?;
            if index.needs_rebuild() {
                VectorIndex::build(dims, vectors, &plan.vector_params)?
            } else {
                index
            }
        }
        _ => VectorIndex::build(dims, vectors, &plan.vector_params)?,
    };
    index.save(dir, seq)?;
    Ok(count)
}

/// Opens a generation's text index, rebuilding it from the catalog if it is missing,
/// unreadable, or lags the catalog (a crash between the two commits).
fn open_text_caught_up(catalog: &Catalog, text_dir: &Path) -> Result<TextIndex> {
    let seq = catalog.seq()?;
    if let Ok(text) = TextIndex::open(text_dir) {
        if text.committed_seq()? == Some(seq) || (seq == 0 && text.num_docs() == 0) {
            return Ok(text);
        }
        tracing::warn!(dir = %text_dir.display(), "text index lags the catalog; rebuilding it");
    }
    if text_dir.exists() {
        fs::remove_dir_all(text_dir).map_err(|e| Error::io(text_dir, e))?;
    }
    let text = TextIndex::create(text_dir)?;
    let mut writer = text.writer()?;
    catalog.for_each_chunk(|id, chunk| writer.add(id, &chunk))?;
    writer.commit(seq)?;
    writer.finish()?;
    Ok(text)
}

/// True when a transcript that only grew since it was indexed has fewer new bytes than
/// `deltaBytes` and fewer new lines than `deltaMessages`. A transcript that shrank (was
/// rewritten) or cannot be read is never deferred.
fn below_session_delta(
    file: &MemoryFile,
    indexed_size: u64,
    stat: &FileStat,
    deltas: SessionSyncSettings,
) -> bool {
    if stat.size < indexed_size {
        return false;
    }
    let new_bytes = stat.size - indexed_size;
    if new_bytes >= deltas.delta_bytes {
        return false;
    }
    let new_lines = (|| -> std::io::Result<u64> {
        use std::io::{Read, Seek, SeekFrom};
        let mut f = fs::File::open(&file.abs_path)?;
        f.seek(SeekFrom::Start(indexed_size))?;
        let mut tail = Vec::with_capacity(new_bytes as usize);
        f.take(new_bytes).read_to_end(&mut tail)?;
        Ok(session::count_lines(&tail))
    })();
    new_lines.is_ok_and(|lines| lines < deltas.delta_messages)
}

enum Outcome {
    /// A changed file's new chunks, and what was wrong in it (malformed transcript lines).
    Changed(Upsert, Vec<String>),
    Touched {
        path: String,
        record: FileRecord,
    },
}

/// A file's text as chunks with the file's own line ranges: Markdown as it is, and a
/// transcript as its `User:` / `Assistant:` lines, cited by JSONL line.
fn chunk_file(file: &MemoryFile, text: &str, params: ChunkParams) -> (Vec<Chunk>, Vec<String>) {
    match file.source {
        SourceKind::Memory => (chunk_markdown(text, params), Vec::new()),
        SourceKind::Sessions => {
            let transcript = session::transcript(text, &file.rel_path);
            let mut chunks = chunk_markdown(&transcript.text, params);
            for chunk in &mut chunks {
                (chunk.start_line, chunk.end_line) =
                    transcript.source_range(chunk.start_line, chunk.end_line);
            }
            (chunks, transcript.warnings)
        }
    }
}

fn process_file(
    file: &MemoryFile,
    stat: &FileStat,
    known: Option<&FileRecord>,
    params: ChunkParams,
) -> Result<Outcome> {
    let bytes = fs::read(&file.abs_path).map_err(|e| Error::io(&file.abs_path, e))?;
    let hash = sha256_hex(&bytes);
    let source = file.source.as_str();
    if let Some(known) = known.filter(|k| k.hash == hash) {
        let record = FileRecord {
            size: stat.size,
            mtime_ns: stat.mtime_ns,
            ..known.clone()
        };
        return Ok(Outcome::Touched {
            path: file.rel_path.clone(),
            record,
        });
    }
    let (text, lossy) = decode_text(bytes);
    let (chunks, warnings) = chunk_file(file, &text, params);
    let chunks: Vec<(String, ChunkRecord)> = chunks
        .into_iter()
        .enumerate()
        .map(|(ordinal, chunk)| {
            let id = chunk_id(
                source,
                &file.rel_path,
                ordinal,
                chunk.start_line,
                chunk.end_line,
                &chunk.hash,
            );
            let record = ChunkRecord {
                path: file.rel_path.clone(),
                source: source.to_string(),
                start_line: chunk.start_line,
                end_line: chunk.end_line,
                hash: chunk.hash,
                text: chunk.text,
            };
            (id, record)
        })
        .collect();
    let record = FileRecord {
        source: source.to_string(),
        hash,
        size: stat.size,
        mtime_ns: stat.mtime_ns,
        chunk_ids: chunks.iter().map(|(id, _)| id.clone()).collect(),
        lossy,
    };
    let upsert = Upsert {
        path: file.rel_path.clone(),
        record,
        chunks,
    };
    Ok(Outcome::Changed(upsert, warnings))
}
