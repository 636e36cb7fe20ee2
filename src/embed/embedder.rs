//! The [`Embedder`] trait and the words every embedder speaks: what a text is for
//! ([`EmbedKind`]), what comes back ([`Embedding`]), what goes wrong ([`EmbedError`]), and
//! the asynchronous [`BatchApi`] a provider may offer for documents.
//!
//! An embedder turns texts into vectors of a fixed length ([`Embedder::dims`]) that are
//! compared by cosine: a query's vector lies near the vectors of the documents that answer
//! it. Because vectors of two models (or of one model under other settings) are not
//! comparable, every embedder names what it computes in a fingerprint
//! ([`Embedder::fingerprint`]): the index and the embedding cache key vectors by it, so a
//! model change re-embeds rather than mixing spaces.
//!
//! memoria's embedders are the local EmbeddingGemma model (`crate::gemma`, made an
//! [`Embedder`] in `local.rs`), the HTTP providers (`remote.rs`), and any a library user
//! or a test gives (`EmbedderChoice::Given`).

use std::collections::HashMap;
use std::time::Duration;

use crate::gemma::GemmaError;

/// Whether a text is a search query or a document to be indexed. Retrieval models embed
/// the two differently: EmbeddingGemma with its query or document prompt, Gemini with its
/// `RETRIEVAL_QUERY` or `RETRIEVAL_DOCUMENT` task type, Voyage with its `input_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum EmbedKind {
    /// A search query (EmbeddingGemma's query prompt).
    Query,
    /// A chunk to index (the document prompt).
    Document,
}

/// One embedding produced by an [`Embedder`].
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// L2-normalised vector of [`Embedder::dims`] values.
    pub vector: Vec<f32>,
    /// Tokens the model saw for this text: prompt, BOS and EOS included, after truncation.
    pub tokens: usize,
    /// True when the text was longer than the model's maximum and was cut.
    pub truncated: bool,
}

/// A document to embed with its title (see `crate::title`): what the chunk is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Document<'a> {
    /// The title; empty for none.
    pub title: &'a str,
    /// The text.
    pub text: &'a str,
}

/// A text embedding model.
pub trait Embedder: Send + Sync {
    /// Embeds `texts` (the prompt for `kind` is added by the embedder). One result per text,
    /// in order.
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Embedding>, EmbedError>;
    /// Length of every vector returned.
    fn dims(&self) -> usize;
    /// Identity of the model and its output settings; changes whenever vectors would change.
    fn fingerprint(&self) -> &str;
    /// Largest token count (prompt and special tokens included) before truncation.
    fn max_tokens(&self) -> usize;
    /// The provider's asynchronous batch API for documents, when it has one and it is on
    /// (`remote.batch.enabled`). Queries never go through it.
    fn batch_api(&self) -> Option<&dyn BatchApi> {
        None
    }
    /// Whether each long chunk's passages (windows of a few lines) get vectors of their own
    /// besides the chunk's, searched with them: the local model only (measured with it; a
    /// remote provider would bill every passage). docs/ranking.md, "How memoria ranks".
    fn embeds_passages(&self) -> bool {
        false
    }
    /// The fewest documents worth one call when a sync has many to embed. A sync embeds
    /// in calls of a fortieth of its work (so that a kill loses little), never fewer than
    /// this: a model computed here pays per text (8), a remote provider per request.
    fn min_batch(&self) -> usize {
        8
    }
    /// Whether [`embed_documents`](Self::embed_documents) reads titles. Only then do titles
    /// key the cached vectors.
    fn uses_titles(&self) -> bool {
        false
    }
    /// Embeds documents with their titles; an embedder whose prompts have no title embeds
    /// their texts alone ([`embed`](Self::embed) with [`EmbedKind::Document`]).
    fn embed_documents(&self, documents: &[Document]) -> Result<Vec<Embedding>, EmbedError> {
        let texts: Vec<&str> = documents.iter().map(|d| d.text).collect();
        self.embed(&texts, EmbedKind::Document)
    }
}

/// A provider's asynchronous batch API for documents: OpenAI's Batch API, Gemini's
/// `asyncBatchEmbedContent`. A job embeds many texts for less money but answers in minutes
/// to hours; the backfill policy (`embed/backfill.rs`) decides when to use one and waits for
/// it (or not).
pub trait BatchApi: Send + Sync {
    /// Submits one job embedding `items` (`(custom id, text)`) and returns its id.
    fn submit(&self, items: &[(&str, &str)]) -> Result<String>;
    /// The job's state now.
    fn poll(&self, job: &str) -> Result<JobState>;
    /// A finished job's vectors by custom id, normalised and checked; ids the provider
    /// failed are absent.
    fn results(&self, output: &str) -> Result<HashMap<String, Vec<f32>>>;
    /// How jobs are run (`remote.batch`).
    fn options(&self) -> BatchOptions;
    /// Turns the batch API off for this process after a refusal a retry cannot fix (an
    /// endpoint without a Batch API); `reason` is shown in `status`.
    fn disable(&self, reason: String);
}

/// A batch job's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobState {
    /// Queued or in progress: the provider's name for its state.
    Running(String),
    /// Finished: the output to read with [`BatchApi::results`].
    Done(String),
    /// Failed, expired or cancelled, and why.
    Failed(String),
}

/// `remote.batch`: how batch jobs are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOptions {
    /// Wait for jobs to finish (`wait`); otherwise the sync finishes keyword-only for their
    /// chunks and a later sync picks the vectors up.
    pub wait: bool,
    /// Jobs in flight at once (`concurrency`).
    pub concurrency: usize,
    /// Between two polls of a job (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// Longest wait for a job before its texts go through direct requests
    /// (`timeoutMinutes`).
    pub timeout: Duration,
}

/// Errors from an [`Embedder`]: the local model's, a remote provider's, or any other's.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The local model could not be loaded or run (its error names the file, tensor or
    /// option at fault).
    #[error(transparent)]
    Local(#[from] GemmaError),
    /// An embedder (a library user's, or a remote one) failed.
    #[error("embedding failed: {0}")]
    Failed(String),
    /// A remote provider failed (the message never contains the API key). `status` is the
    /// HTTP status of a refusal that retrying cannot fix (a 4xx other than 408 and 429).
    #[error("{provider} embeddings: {message}")]
    Remote {
        /// The provider (`openai`, `gemini`, …).
        provider: String,
        /// What failed, with the provider's answer when there was one.
        message: String,
        /// The refusal's HTTP status, when retrying cannot fix it.
        status: Option<u16>,
    },
}

/// Shorthand for results of the embedding module.
pub type Result<T, E = EmbedError> = std::result::Result<T, E>;

/// Cosine similarity of two vectors (0 when either is all zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let mut dot = 0f64;
    let mut na = 0f64;
    let mut nb = 0f64;
    for (x, y) in a.iter().zip(b) {
        dot += (*x as f64) * (*y as f64);
        na += (*x as f64) * (*x as f64);
        nb += (*y as f64) * (*y as f64);
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot / (na.sqrt() * nb.sqrt())) as f32
}
