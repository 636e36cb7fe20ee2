//! Text embeddings.
//!
//! The local provider is EmbeddingGemma-300m ([`gemma::GemmaEmbedder`]): a Gemma3 encoder
//! with bidirectional attention run natively on candle, followed by mean pooling, two dense
//! projections and L2 normalisation, numerically matching PyTorch sentence-transformers.

pub mod config;
pub mod encoder;
pub mod gemma;
pub mod kernels;
pub mod matmul;
pub mod model;
pub mod weights;

use std::path::PathBuf;

pub use gemma::{GemmaEmbedder, GemmaOptions};

/// Whether a text is a search query or a document to be indexed; selects the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbedKind {
    Query,
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
}

/// Errors from loading or running an embedding model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("model file missing: {}", path.display())]
    MissingFile { path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: invalid JSON: {message}", path.display())]
    Json { path: PathBuf, message: String },
    #[error("{}: invalid safetensors file: {message}", path.display())]
    Safetensors { path: PathBuf, message: String },
    #[error("{}: tensor `{name}` is missing", path.display())]
    MissingTensor { path: PathBuf, name: String },
    #[error("{}: tensor `{name}` has shape {actual:?}, expected {expected:?}", path.display())]
    TensorShape {
        path: PathBuf,
        name: String,
        expected: Vec<usize>,
        actual: Vec<usize>,
    },
    #[error("{}: tensor `{name}` has unsupported dtype {dtype}", path.display())]
    TensorDtype {
        path: PathBuf,
        name: String,
        dtype: String,
    },
    #[error("{}: unsupported model: {reason}", path.display())]
    Unsupported { path: PathBuf, reason: String },
    #[error("{}: cannot load tokenizer: {message}", path.display())]
    Tokenizer { path: PathBuf, message: String },
    #[error("tokenisation failed: {0}")]
    Tokenize(String),
    #[error("invalid embedder option: {0}")]
    InvalidOption(String),
    #[error("embedding failed: {0}")]
    Failed(String),
    #[error("inference failed: {0}")]
    Candle(#[from] candle_core::Error),
}

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
        l2_normalize(vector);
    }
}

/// Scales `v` to unit length (accumulating in f64; an all-zero vector stays zero).
pub(crate) fn l2_normalize(v: &mut [f32]) {
    let n = v
        .iter()
        .map(|x| (*x as f64) * (*x as f64))
        .sum::<f64>()
        .sqrt();
    let n = n.max(1e-12) as f32;
    for x in v.iter_mut() {
        *x /= n;
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

/// Loads the local EmbeddingGemma model from `dir` on [`default_device`].
pub fn load_local(dir: &std::path::Path) -> Result<std::sync::Arc<dyn Embedder>> {
    let device = default_device()?;
    let embedder = GemmaEmbedder::load(dir, &device, GemmaOptions::default())?;
    Ok(std::sync::Arc::new(embedder))
}
