//! Bringing an agent's store up to date with the workspace (SPEC §4).
//!
//! A file whose size and mtime match the store's record is skipped without being read;
//! otherwise it is read and hashed, and only a changed hash re-chunks it. Changes are
//! committed in batches (`store::Writer::apply`, each atomic), so a process killed at any
//! instant leaves a store that opens and answers, and the next sync continues from the last
//! committed batch. Then the chunks without a vector are embedded (`embedding.rs`), the
//! vector index brought up to date and the generation committed with its manifest. A long
//! embedding commits along the way (`embedding::Checkpoints`): the keyword side before it
//! starts, then the vectors so far, each manifest saying how far it is.

use super::embedding::{embed_missing, same_embedder, Checkpoints, EmbedPlan};
use super::files::{below_session_delta, digest_of, process_file, stat, FileStat, Outcome};
use super::report::{SyncProgress, SyncReport};
use crate::chunk::ChunkParams;
use crate::config::{Semantics, SessionSyncSettings};
use crate::error::Result;
use crate::store::{
    Batch, Begun, EmbeddingProgress, EmbeddingStats, FileRecord, Identity, Manifest, SyncStats,
    Writer, FORMAT_VERSION,
};
use crate::workspace::{Discovery, MemoryFile, SourceKind};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// Bytes of file content read per committed batch: bounds memory and sets how much work a
/// crash can lose.
const BATCH_BYTES: u64 = 32 << 20;

const BATCH_FILES: usize = 4096;

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

/// Syncs the store `writer` writes with the request's discovery: the generation to write,
/// the files to read, their changes committed in batches, the vectors, the manifest.
pub fn sync(
    writer: &mut dyn Writer,
    request: &SyncRequest,
    progress: &dyn Fn(SyncProgress),
) -> Result<SyncReport> {
    let started = Instant::now();
    let mut warnings = request.discovery.warnings.clone();
    let (manifest, begun) = begin(writer, request, &mut warnings)?;
    let reads = plan_reads(request, &begun.files, &mut warnings);
    let mut report = SyncReport {
        generation: begun.generation,
        rebuilt: begun.rebuilt,
        files: request.discovery.files.len(),
        indexed: 0,
        removed: reads.removals.len(),
        chunks: 0,
        bytes: 0,
        seconds: 0.0,
        embedded: 0,
        cached: 0,
        embed_error: None,
        awaiting_batch: 0,
        deferred: reads.deferred,
        warnings: Vec::new(),
    };
    commit_files(
        writer,
        request,
        &begun,
        &reads,
        &mut report,
        &mut warnings,
        progress,
    )?;
    let commits = Commits {
        request,
        generation: begun.generation,
        workspace_digest: digest_of(request.discovery, &reads.stats),
    };
    // A rebuild with the same embedder (a forced reindex, a new index format, a chunking
    // change) takes unchanged chunks' vectors from the generation it replaces: the embedding
    // cache alone would miss every chunk pruned past `cache.maxEntries`.
    let reuse = manifest
        .as_ref()
        .is_some_and(|m| begun.rebuilt && same_embedder(&m.identity, request.identity));
    let embedding = {
        // While it embeds, the sync commits what it has: the keyword side first (a new
        // generation is invisible until then), then the vectors as they come.
        let snapshot = warnings.clone();
        let mut checkpoint = |writer: &mut dyn Writer, progress: EmbeddingProgress| {
            commits.checkpoint(writer, &snapshot, progress)
        };
        let mut checkpoints = Checkpoints::new(begun.rebuilt, &mut checkpoint);
        embed_vectors(
            writer,
            request,
            reuse,
            &mut report,
            &mut warnings,
            progress,
            &mut checkpoints,
        )?
    };
    report.chunks = writer.chunk_count()?;
    report.seconds = started.elapsed().as_secs_f64();
    let files = writer.files()?;
    for (path, record) in &files {
        if record.lossy {
            warnings.push(format!(
                "{path}: invalid UTF-8 (replaced with U+FFFD when indexing)"
            ));
        }
    }
    commits.commit(writer, &files, report.chunks, warnings.clone(), embedding)?;
    report.warnings = warnings;
    Ok(report)
}

/// The manifests one sync commits: while it embeds (with its progress) and at the end.
struct Commits<'a> {
    request: &'a SyncRequest<'a>,
    generation: u64,
    workspace_digest: String,
}

impl Commits<'_> {
    fn commit(
        &self,
        writer: &mut dyn Writer,
        files: &[(String, FileRecord)],
        chunks: u64,
        warnings: Vec<String>,
        embedding: Option<EmbeddingStats>,
    ) -> Result<()> {
        let stats = SyncStats {
            files: files.len(),
            chunks,
            bytes: files.iter().map(|(_, r)| r.size).sum(),
            warnings,
            synced_at: crate::clock::unix_now(),
            workspace_digest: self.workspace_digest.clone(),
            embedding,
        };
        writer.commit(&Manifest {
            format: FORMAT_VERSION,
            generation: self.generation,
            identity: self.request.identity.clone(),
            stats,
        })
    }

    /// A commit part-way through embedding: every chunk keyword-searchable, the vectors so
    /// far in the vector index.
    fn checkpoint(
        &self,
        writer: &mut dyn Writer,
        warnings: &[String],
        progress: EmbeddingProgress,
    ) -> Result<()> {
        let dims = self.request.embed.map_or(0, |plan| plan.embedder.dims());
        let vectors = writer.index_vectors(dims)?;
        let chunks = writer.chunk_count()?;
        let files = writer.files()?;
        let embedding = EmbeddingStats {
            vectors,
            missing: chunks.saturating_sub(vectors),
            progress: Some(progress),
            ..EmbeddingStats::default()
        };
        self.commit(writer, &files, chunks, warnings.to_vec(), Some(embedding))
    }
}

/// The committed manifest (an unreadable one is a warning and a rebuild) and the generation
/// this sync writes: the committed one, unless the request or its identity asks for a
/// rebuild. Damage (a missing generation, an unreadable catalog) is healed, not repeated:
/// the sync rebuilds into a new generation while searches keep answering from what is left
/// of the old one until the swap.
fn begin(
    writer: &mut dyn Writer,
    request: &SyncRequest,
    warnings: &mut Vec<String>,
) -> Result<(Option<Manifest>, Begun)> {
    let manifest = match writer.manifest() {
        Ok(manifest) => manifest,
        Err(err) => {
            warnings.push(format!("{err}; rebuilding"));
            None
        }
    };
    let current = manifest.as_ref().map(|m| m.generation);
    let rebuild = request.force
        || manifest
            .as_ref()
            .is_none_or(|m| m.format != FORMAT_VERSION || &m.identity != request.identity);
    let begun = match (writer.begin(current, rebuild), current) {
        (Ok(begun), _) => begun,
        (Err(err), Some(n)) if !rebuild => {
            warnings.push(format!(
                "generation {n} is damaged ({err}); rebuilt it from the workspace"
            ));
            writer.begin(current, true)?
        }
        (Err(err), _) => return Err(err),
    };
    warnings.extend(begun.note.clone());
    Ok((manifest, begun))
}

/// What a sync reads and removes: the files whose (size, mtime) differ from the store's
/// records, the ones that are gone, and every discovered file's stat (the workspace digest
/// recorded in the manifest).
struct Reads<'a> {
    to_read: Vec<(&'a MemoryFile, FileStat)>,
    removals: Vec<String>,
    stats: Vec<Option<FileStat>>,
    /// Transcripts that grew less than `sync.sessions`' deltas, left for later.
    deferred: usize,
}

fn plan_reads<'a>(
    request: &SyncRequest<'a>,
    known: &HashMap<String, FileRecord>,
    warnings: &mut Vec<String>,
) -> Reads<'a> {
    let discovery = request.discovery;
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
    let mut to_read = Vec::new();
    let mut stats = Vec::with_capacity(discovery.files.len());
    let mut deferred = 0;
    for file in &discovery.files {
        match stat(file) {
            Ok(stat) => {
                let record = known.get(&file.rel_path);
                let unchanged =
                    record.is_some_and(|r| r.size == stat.size && r.mtime_ns == stat.mtime_ns);
                let below_delta = match (request.session_deltas, record) {
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
    Reads {
        to_read,
        removals,
        stats,
        deferred,
    }
}

/// Reads, chunks and commits the changed files (and the removals) in batches of at most
/// [`BATCH_FILES`] files and [`BATCH_BYTES`], then completes the keyword side.
fn commit_files(
    writer: &mut dyn Writer,
    request: &SyncRequest,
    begun: &Begun,
    reads: &Reads,
    report: &mut SyncReport,
    warnings: &mut Vec<String>,
    progress: &dyn Fn(SyncProgress),
) -> Result<()> {
    let to_read = &reads.to_read;
    let bytes_total: u64 = to_read.iter().map(|(_, s)| s.size).sum();
    let files_total = to_read.len();
    let mut pending_removals = reads.removals.clone();
    let mut start = 0usize;
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
                let known = begun.files.get(&file.rel_path);
                process_file(file, stat, known, request.params, request.semantics)
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
        writer.apply(&batch)?;
        report.indexed += batch.upserts.len();
        report.bytes += batch_bytes;
        progress(SyncProgress::Files {
            files_done: end,
            files_total,
            bytes_done: report.bytes,
            bytes_total,
        });
        start = end;
    }
    writer.finish_keyword()
}

/// The vector side: the chunks without a vector embedded (`reuse`: the replaced
/// generation's vectors first) and the vector index brought up to date; `None` for an index
/// that never had an embedder.
fn embed_vectors(
    writer: &mut dyn Writer,
    request: &SyncRequest,
    reuse: bool,
    report: &mut SyncReport,
    warnings: &mut Vec<String>,
    progress: &dyn Fn(SyncProgress),
    checkpoints: &mut Checkpoints,
) -> Result<Option<EmbeddingStats>> {
    if let Some(plan) = request.embed {
        let awaiting_batch = embed_missing(writer, reuse, plan, report, progress, checkpoints)?;
        let vectors = writer.index_vectors(plan.embedder.dims())?;
        report.awaiting_batch = awaiting_batch as usize;
        // Batch jobs' problems, noted by `embed_missing`, are the sync's warnings too.
        warnings.append(&mut report.warnings);
        return Ok(Some(EmbeddingStats {
            vectors,
            missing: writer.unembedded_count()?,
            error: report.embed_error.clone(),
            awaiting_batch,
            progress: None,
        }));
    }
    if request.identity.provider == "none" {
        return Ok(None);
    }
    // A keyword-only sync of an index built with an embedder (`--provider none` for once):
    // its new chunks have no vector yet, which the next sync with the embedder sees as
    // missing and embeds.
    let missing = writer.unembedded_count()?;
    Ok(Some(EmbeddingStats {
        vectors: (writer.chunk_count()?).saturating_sub(missing),
        missing,
        ..EmbeddingStats::default()
    }))
}
