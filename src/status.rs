//! What `status` reports about one agent's memory.

use serde::Serialize;

use crate::fallback::Fallback;
use crate::index::Identity;
use crate::live::LiveStatus;

/// What `status` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The agent whose memory this is.
    pub agent_id: String,
    /// The agent directory.
    pub agent_dir: String,
    /// The workspace indexed.
    pub workspace: String,
    /// `extraPaths`, as configured.
    pub extra_paths: Vec<String>,
    /// The index generation searches read (none before the first sync).
    pub generation: Option<u64>,
    /// The index identity under the current settings and embedder.
    pub identity: Identity,
    /// Memory files indexed.
    pub files: usize,
    /// Chunks indexed.
    pub chunks: u64,
    /// Bytes of memory files indexed.
    pub bytes: u64,
    /// Chunks with a vector (absent for a keyword-only index).
    pub vectors: Option<u64>,
    /// `memory.backend`: `builtin`, or `qmd` (see [`qmd`](Self::qmd) for which engine answers).
    pub backend: String,
    /// The QMD sidecar, with the QMD backend.
    pub qmd: Option<crate::QmdStatus>,
    /// The mode searches are served in (`hybrid`, `fts-only`).
    pub mode: String,
    /// The embedding provider (`none` when keyword-only).
    pub provider: String,
    /// The embedding model, when there is one.
    pub model: Option<String>,
    /// What was configured but cannot serve, and why.
    pub fallback: Option<Fallback>,
    /// The embedder's details, when there is one.
    pub embedding: Option<EmbeddingStatus>,
    /// True when the workspace changed since the last sync.
    pub dirty: bool,
    /// Unix seconds of the last completed sync.
    pub synced_at: Option<u64>,
    /// The live sync of this process (watcher state, last sync, last error); `None` when
    /// none runs here (`memoria watch` and `memoria mcp` run one).
    pub live: Option<LiveStatus>,
    /// What the last sync skipped or could not do, and what is missing.
    pub warnings: Vec<String>,
}

/// The embedder serving an agent, for `status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingStatus {
    /// Length of its vectors.
    pub dims: usize,
    /// Where a local model runs and in what precision (`cpu, f32, AVX-512 kernels`).
    pub device: Option<String>,
    /// Where a remote provider's API key came from: `remote.apiKey`,
    /// `models.providers.<name>.apiKey` or an environment variable. Never the key.
    pub key_source: Option<String>,
    /// The remote provider's batch API (`remote.batch`), when it has one: on (and how), or
    /// off and why.
    pub batch: Option<String>,
    /// Batch jobs submitted and not yet read.
    pub batch_jobs: usize,
    /// Chunks whose vectors those jobs will bring; searches are keyword-only meanwhile.
    pub awaiting_batch: u64,
    /// Why the last sync could not embed everything, if it could not.
    pub last_error: Option<String>,
}
