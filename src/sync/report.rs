//! What a sync tells its caller: progress after each committed batch, and the report at
//! the end (files and chunks seen, what changed, what was embedded, what went wrong).

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
    /// Embedding the chunks (and their passages) that have no vector yet.
    Embedding {
        /// Chunks and passages embedded so far.
        chunks_done: usize,
        /// Chunks and passages to embed.
        chunks_total: usize,
    },
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
    /// Vectors of chunks and their passages embedded by the model in this sync (cache hits
    /// excluded).
    pub embedded: usize,
    /// Vectors (of chunks and passages) not computed: they came from the embedding cache or, in a
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
