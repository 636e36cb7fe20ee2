//! Text embeddings: the [`Embedder`] trait, the local EmbeddingGemma model, where its files
//! come from, and which embedder serves an agent.
//!
//! The local provider is EmbeddingGemma-300m ([`GemmaEmbedder`]): a Gemma3 encoder with
//! bidirectional attention run natively on candle, followed by mean pooling, two dense
//! projections and L2 normalisation, numerically matching PyTorch sentence-transformers.
//!
//! Files: `gemma.rs` (the embedder: tokenizer, prompts, pooling, fingerprint), `encoder.rs`
//! (the transformer over packed sequences), `kernels.rs`, `matmul.rs` and `q8.rs` (fused CPU
//! kernels, f16-weight and Q8_0 linear layers, dispatched on `crate::simd`'s level),
//! `precision.rs` (which of those the linear layers run in: f32, q8 or auto),
//! `weights.rs` and `model_files.rs` (safetensors and the sentence-transformers JSON
//! files, with errors naming file and tensor), `gguf.rs` (llama.cpp's GGUF files: tensors,
//! configuration and tokenizer), `locate.rs` (where the model directory is,
//! and `pull`), `provider.rs` (the configured provider resolved to an embedder, or the
//! reason there is none), `remote.rs` and `remote/batch.rs` (HTTP providers and their batch
//! APIs, feature `remote`), `batch.rs` (when and how batch jobs run, for any [`BatchApi`]).

pub(crate) mod batch;
mod encoder;
mod gemma;
mod gguf;
mod kernels;
mod locate;
mod matmul;
mod model_files;
mod pack;
mod precision;
mod provider;
mod q8;
#[cfg(feature = "remote")]
mod remote;
mod tokenizer;
mod weights;

use std::path::PathBuf;

pub use gemma::{GemmaEmbedder, GemmaOptions, DEFAULT_DOCUMENT_PROMPT, DEFAULT_QUERY_PROMPT};
#[cfg(feature = "download")]
pub use locate::pull;
pub use locate::{
    resolve_model, ModelLocation, ModelNotFound, ModelSearch, PullError, DEFAULT_REPO,
    REQUIRED_FILES,
};
pub use precision::{Precision, PRECISION_VAR};
pub use provider::EmbedderChoice;
pub(crate) use provider::ResolvedEmbedder;

/// Whether a text is a search query or a document to be indexed; selects the prompt.
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
}

/// A provider's asynchronous batch API for documents: OpenAI's Batch API, Gemini's
/// `asyncBatchEmbedContent`. A job embeds many texts for less money but answers in minutes
/// to hours; [`batch`] decides when to use one and waits for it (or not).
pub trait BatchApi: Send + Sync {
    /// Submits one job embedding `items` (`(custom id, text)`) and returns its id.
    fn submit(&self, items: &[(&str, &str)]) -> Result<String>;
    /// The job's state now.
    fn poll(&self, job: &str) -> Result<JobState>;
    /// A finished job's vectors by custom id, normalised and checked; ids the provider
    /// failed are absent.
    fn results(&self, output: &str) -> Result<std::collections::HashMap<String, Vec<f32>>>;
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
    pub poll_interval: std::time::Duration,
    /// Longest wait for a job before its texts go through direct requests
    /// (`timeoutMinutes`).
    pub timeout: std::time::Duration,
}

/// Errors from loading or running an embedding model.
#[derive(Debug, thiserror::Error)]
///
/// Every variant about a file names it (`path`); tensor errors also name the tensor.
#[allow(missing_docs)] // the fields are the same few nouns throughout: path, name, message
pub enum EmbedError {
    /// A file the model directory must have is missing.
    #[error("model file missing: {}", path.display())]
    MissingFile { path: PathBuf },
    /// A model file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A JSON file of the model directory does not parse or lacks a key.
    #[error("{}: invalid JSON: {message}", path.display())]
    Json { path: PathBuf, message: String },
    /// A safetensors file is malformed.
    #[error("{}: invalid safetensors file: {message}", path.display())]
    Safetensors { path: PathBuf, message: String },
    /// A GGUF file is malformed or not an EmbeddingGemma GGUF.
    #[error("{}: invalid GGUF file: {message}", path.display())]
    Gguf { path: PathBuf, message: String },
    /// A tensor the model needs is not in the file.
    #[error("{}: tensor `{name}` is missing", path.display())]
    MissingTensor { path: PathBuf, name: String },
    /// A tensor has another shape than the config implies.
    #[error("{}: tensor `{name}` has shape {actual:?}, expected {expected:?}", path.display())]
    TensorShape {
        path: PathBuf,
        name: String,
        expected: Vec<usize>,
        actual: Vec<usize>,
    },
    /// A tensor is stored in a dtype memoria does not read.
    #[error("{}: tensor `{name}` has unsupported dtype {dtype}", path.display())]
    TensorDtype {
        path: PathBuf,
        name: String,
        dtype: String,
    },
    /// The directory holds another kind of model.
    #[error("{}: unsupported model: {reason}", path.display())]
    Unsupported { path: PathBuf, reason: String },
    /// `tokenizer.json` could not be loaded.
    #[error("{}: cannot load tokenizer: {message}", path.display())]
    Tokenizer { path: PathBuf, message: String },
    /// A text could not be tokenised.
    #[error("tokenisation failed: {0}")]
    Tokenize(String),
    /// An option of [`GemmaOptions`] is out of range.
    #[error("invalid embedder option: {0}")]
    InvalidOption(String),
    /// An embedder (a library user's, or a remote one) failed.
    #[error("embedding failed: {0}")]
    Failed(String),
    /// A remote provider failed (the message never contains the API key). `status` is the
    /// HTTP status of a refusal that retrying cannot fix (a 4xx other than 408 and 429).
    #[error("{provider} embeddings: {message}")]
    Remote {
        provider: String,
        message: String,
        status: Option<u16>,
    },
    /// candle failed while running the model.
    #[error("inference failed: {0}")]
    Candle(#[from] candle_core::Error),
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

/// Output sizes EmbeddingGemma was trained for (Matryoshka representation learning).
pub const MATRYOSHKA_DIMS: &[usize] = &[768, 512, 256, 128];

/// Keeps the first `dims` values of `vector` and re-normalises them to unit length
/// (Matryoshka); a vector already no longer than `dims` is left as it is.
pub fn truncate_dims(vector: &mut Vec<f32>, dims: usize) {
    if dims < vector.len() {
        vector.truncate(dims);
        crate::simd::l2_normalize(vector);
    }
}

/// The device models run on: the first CUDA or Metal device when built with that feature,
/// else the CPU.
pub fn default_device() -> Result<candle_core::Device> {
    #[cfg(feature = "cuda")]
    return Ok(candle_core::Device::new_cuda(0)?);
    #[cfg(all(feature = "metal", not(feature = "cuda")))]
    return Ok(candle_core::Device::new_metal(0)?);
    #[cfg(not(any(feature = "cuda", feature = "metal")))]
    Ok(candle_core::Device::Cpu)
}

/// Loads the local EmbeddingGemma model from `dir`: on the GPU when the build has a usable
/// one, else on the CPU (see [`load_local_on`]).
pub fn load_local(dir: &std::path::Path) -> Result<std::sync::Arc<dyn Embedder>> {
    load_local_on(dir).map(|(embedder, _)| embedder)
}

/// Loads the local EmbeddingGemma model from `dir`, and says where it runs, in words
/// (`cuda:0, f32`, `cpu, f32, AVX-512 kernels`).
///
/// A build with a GPU backend (`cuda`, `metal`) loads on the GPU and checks it with one
/// short embedding. When there is no usable GPU (no device, no driver, a failing kernel),
/// the model runs on the CPU instead, and the words say why.
///
/// A model already loaded in this process from the same directory (by another
/// [`Memory`](crate::Memory): one per agent) is shared rather than loaded again; it is
/// freed when the last user drops it. Concurrent first loads of one directory load once.
pub fn load_local_on(dir: &std::path::Path) -> Result<(std::sync::Arc<dyn Embedder>, String)> {
    use std::sync::{Arc, Mutex, Weak};
    type Loaded = (std::path::PathBuf, Weak<dyn Embedder>, String);
    static LOADED: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());
    let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    loaded.retain(|(_, weak, _)| weak.strong_count() > 0);
    if let Some(shared) = loaded
        .iter()
        .find(|(path, _, _)| *path == key)
        .and_then(|(_, weak, device)| Some((weak.upgrade()?, device.clone())))
    {
        return Ok(shared);
    }
    let (embedder, device) = load_on_best_device(dir)?;
    let embedder: Arc<dyn Embedder> = Arc::new(embedder);
    loaded.push((key, Arc::downgrade(&embedder), device.clone()));
    Ok((embedder, device))
}

/// The GPU when the build has one and it works, else the CPU (with the reason).
fn load_on_best_device(dir: &std::path::Path) -> Result<(GemmaEmbedder, String)> {
    // A GGUF file without Dense layers borrows them from a sentence-transformers copy.
    let dense_dir = gguf::is_gguf(dir)
        .then(|| locate::dense_source(dir))
        .flatten();
    let with_dense = |words: &mut String, embedder: &GemmaEmbedder| {
        if let Some(dense) = embedder.dense_words() {
            words.push_str(&format!("; {dense}"));
        }
    };
    #[cfg(any(feature = "cuda", feature = "metal"))]
    let gpu_failed = {
        let on_gpu = default_device().and_then(|device| {
            let options = GemmaOptions {
                dense_dir: dense_dir.clone(),
                ..GemmaOptions::default()
            };
            let embedder = GemmaEmbedder::load(dir, &device, options)?;
            embedder.embed(&["memoria device check"], EmbedKind::Query)?;
            Ok(embedder)
        });
        match on_gpu {
            Ok(embedder) => {
                let mut words = gpu_words().to_string();
                if matches!(Precision::from_env(), Ok(Precision::Q8)) {
                    words.push_str(" (precision q8 applies to the CPU kernels only)");
                }
                with_dense(&mut words, &embedder);
                return Ok((embedder, words));
            }
            // A model that cannot be read fails the same way on the CPU.
            Err(err @ (EmbedError::MissingFile { .. } | EmbedError::Io { .. })) => return Err(err),
            Err(err) => {
                tracing::warn!(
                    "{}: the GPU cannot run the model ({err}); using the CPU",
                    gpu_words()
                );
                Some(format!("{} failed: {err}", gpu_words()))
            }
        }
    };
    #[cfg(not(any(feature = "cuda", feature = "metal")))]
    let gpu_failed: Option<String> = None;
    let options = GemmaOptions {
        cache_dir: locate::cache_dir(),
        precision: Precision::from_env().map_err(EmbedError::InvalidOption)?,
        dense_dir,
        ..GemmaOptions::default()
    };
    let asked = options.precision;
    let embedder = GemmaEmbedder::load(dir, &candle_core::Device::Cpu, options)?;
    // The int8 kernel is AVX2 on both SIMD levels.
    let kernels = match (crate::simd::level(), embedder.precision()) {
        (crate::simd::Level::Scalar, Precision::Q8) => "scalar int8",
        (_, Precision::Q8) => "AVX2 int8",
        (crate::simd::Level::Avx512, _) => "AVX-512",
        (crate::simd::Level::Avx2, _) => "AVX2",
        (crate::simd::Level::Scalar, _) => "scalar",
    };
    let chosen = match asked {
        Precision::Auto => " (auto)",
        _ => "",
    };
    let mut words = format!("cpu, {}{chosen}, {kernels} kernels", embedder.precision());
    if let Some(why) = gpu_failed {
        words.push_str(&format!(" ({why})"));
    }
    words.push_str(&format!(
        "; loaded from {}; tokenizer: {}",
        embedder.origin(),
        embedder.tokenizer_words()
    ));
    with_dense(&mut words, &embedder);
    Ok((embedder, words))
}

/// The GPU of this build, in words.
#[cfg(any(feature = "cuda", feature = "metal"))]
fn gpu_words() -> &'static str {
    if cfg!(feature = "cuda") {
        "cuda:0, f32"
    } else {
        "metal, f32"
    }
}
