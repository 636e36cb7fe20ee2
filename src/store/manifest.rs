//! The manifest: what an agent's current index is (its format, identity and generation) and
//! what its last sync found. A store replaces it atomically to commit a generation (the
//! local store: `manifest.json`, through an atomic rename); every search reads it first.

use serde::{Deserialize, Serialize};

/// Bumped when the on-disk layout changes incompatibly (forces a rebuild).
/// 3: the text index keeps each chunk's ranking key (id, path, start line) in fast fields.
/// 4: the analyzer brings text to Unicode NFC before tokenizing.
/// 5: the text index stores each chunk's annotations (importance, triggers, project).
/// 6: a transcript chunk's annotations say who wrote its messages and when.
/// 7: a Markdown chunk has a title (its heading trail, `crate::title`), part of its id and
///    of what the local model embeds.
/// 8: with the local model, a chunk of eight content lines or more also has its passages'
///    vectors (`crate::passage`).
/// 9: a chunk's own vector is stored only after all its passages' (a sync trusts a chunk
///    with its own vector to be complete): an index written by format 8, whose sync may
///    have been cut short between the two, is rebuilt once from its own vectors.
/// 10: the first chunk of a Markdown file of two to four chunks carries the file's text,
///    embedded as its passage 0; its id changes with it.
/// 11: passages are two-line windows that do not overlap (four lines every two before),
///    and no file is embedded whole (`crate::passage`): the same passage ids name other
///    texts, so an index of format 10 is rebuilt (its chunks' vectors come from the cache).
/// 12: a chunk with passages is not embedded: its own vector is their centroid
///    (`crate::passage::centroid`), and a search scores it by its best passage alone; an
///    index of format 11 is rebuilt (its passages' vectors come from the cache).
pub const FORMAT_VERSION: u32 = 12;

/// Everything that, when changed, invalidates the index (SPEC §4). Written camelCase (as
/// `status --json` shows it); manifests written before that (snake_case) still read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// `chunking.tokens`.
    #[serde(alias = "chunk_tokens")]
    pub chunk_tokens: usize,
    /// `chunking.overlap`.
    #[serde(alias = "chunk_overlap")]
    pub chunk_overlap: usize,
    /// The sources indexed (`memory`, `sessions`).
    pub sources: Vec<String>,
    /// Embedding provider (`none` when keyword-only).
    pub provider: String,
    /// Embedding model, when there is one.
    pub model: Option<String>,
    /// The embedder's fingerprint (model weights, prompts, output dims), if any.
    #[serde(default)]
    pub embedder: Option<String>,
    /// Vector dimensions, when there is an embedder.
    #[serde(default)]
    pub dims: Option<usize>,
    /// How files become chunks, when not as documented: `openclaw-2026.9-v5` (OpenClaw's
    /// chunking version 5: curated files per entry, annotations read and cut from the text,
    /// CJK-weighted budgets and bounded overlap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunking: Option<String>,
    /// Long chunks' passages are embedded and searched (`crate::passage::searched`).
    #[serde(default)]
    pub passages: bool,
}

/// Facts about the last completed sync, shown by `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SyncStats {
    pub files: usize,
    pub chunks: u64,
    pub bytes: u64,
    pub warnings: Vec<String>,
    /// Unix seconds.
    pub synced_at: u64,
    /// Digest of the discovered files' paths, sizes and mtimes: a search whose discovery
    /// gives another digest knows the workspace changed without opening the catalog.
    pub workspace_digest: String,
    /// Vector side, when an embedder was in use.
    #[serde(default)]
    pub embedding: Option<EmbeddingStats>,
}

/// The vector side of the last sync.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingStats {
    pub vectors: u64,
    /// Chunks still without a vector (non-zero after an embedding failure).
    pub missing: u64,
    /// Why embedding failed, if it did.
    pub error: Option<String>,
    /// Chunks whose vectors a running batch job will bring (`remote.batch.wait: false`).
    #[serde(default)]
    pub awaiting_batch: u64,
    /// Set in the commits a sync makes while it embeds (the keyword side first, then the
    /// vectors as they come): how far it is. Absent once the sync ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<EmbeddingProgress>,
}

/// How far a sync that is still embedding has got, as of its last commit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingProgress {
    /// Vectors (chunks' and passages') the sync set out to compute.
    pub total: u64,
    /// Of those, computed and committed.
    pub done: u64,
    /// Unix seconds: when it started embedding, and when it committed this.
    pub started_at: u64,
    pub updated_at: u64,
}

impl EmbeddingProgress {
    /// Seconds left at the rate so far, counted from `now` (Unix seconds); `None` before
    /// the first vector.
    pub fn eta_seconds(&self, now: u64) -> Option<u64> {
        if self.done == 0 || self.updated_at <= self.started_at {
            return None;
        }
        let rate = self.done as f64 / (self.updated_at - self.started_at) as f64;
        let left = self.total.saturating_sub(self.done) as f64 / rate;
        Some(
            (left - now.saturating_sub(self.updated_at) as f64)
                .max(0.0)
                .round() as u64,
        )
    }
}

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub generation: u64,
    pub identity: Identity,
    pub stats: SyncStats,
}
