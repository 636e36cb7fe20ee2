//! Bringing an agent directory up to date with the workspace (SPEC §4).
//!
//! A file whose size and mtime match the catalog is skipped without being read; otherwise
//! it is read and hashed, and only a changed hash re-chunks it. Changes are committed in
//! batches (catalog first, then the text index tagged with the catalog `seq`), so a
//! process killed at any instant leaves a directory that opens and answers, and the next
//! sync continues from the last committed batch.

use super::embedding::{embed_missing, same_embedder, update_vector_index, EmbedPlan};
use super::files::{below_session_delta, digest_of, process_file, stat, Outcome};
use super::report::{SyncProgress, SyncReport};
use crate::chunk::ChunkParams;
use crate::config::{Semantics, SessionSyncSettings};
use crate::error::{Error, Result};
use crate::index::catalog::{Batch, Catalog, FileRecord};
use crate::index::text::TextIndex;
use crate::index::{
    AgentDir, EmbeddingStats, Identity, Manifest, SyncStats, WriterLock, FORMAT_VERSION,
};
use crate::workspace::{Discovery, SourceKind};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;
use std::time::Instant;

/// Bytes of file content read per committed batch: bounds memory and sets how much work a
/// crash can lose.
const BATCH_BYTES: u64 = 32 << 20;

const BATCH_FILES: usize = 4096;

/// Share of deleted chunks the text index may keep before a sync merges them away (they
/// skew BM25 statistics until merged; `tests/hybrid.rs` measures the drift this allows).
const MAX_DELETED_SHARE: f64 = 0.05;

/// What to sync and how.
pub struct SyncRequest<'a> {
    pub discovery: &'a Discovery,
    pub identity: &'a Identity,
    pub params: ChunkParams,
    /// Which OpenClaw behaviour shapes the chunks (2026.9: entries and annotations).
    pub semantics: Semantics,
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
        semantics,
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
            .map(|(file, stat)| {
                process_file(file, stat, known.get(&file.rel_path), params, semantics)
            })
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
            missing: catalog.chunks_without_vectors(false)?.len() as u64,
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
        let missing = catalog.chunks_without_vectors(false)?.len() as u64;
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
