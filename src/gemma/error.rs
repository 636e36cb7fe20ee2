//! Why the local model cannot load or run.
//!
//! Loading EmbeddingGemma reads a dozen files (JSON configuration, safetensors or GGUF
//! weights, a tokenizer), and most of what goes wrong is one of them: missing, unreadable,
//! malformed, or holding a tensor of the wrong shape. Every [`GemmaError`] about a file
//! names it, and tensor errors also name the tensor, so the message alone says what to fix.
//! The rest are options out of range, a text the tokenizer refuses, and candle failing
//! while running the model.
//!
//! This is the engine's own error: it knows nothing of embedding providers, which carry it
//! whole in their own error when the local model serves them.

use std::path::PathBuf;

/// Errors from loading or running the local EmbeddingGemma model.
///
/// Every variant about a file names it (`path`); tensor errors also name the tensor.
#[derive(Debug, thiserror::Error)]
#[allow(missing_docs)] // the fields are the same few nouns throughout: path, name, message
pub enum GemmaError {
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
    /// An option of [`GemmaOptions`](crate::gemma::GemmaOptions) (or `MEMORIA_PRECISION`)
    /// is out of range.
    #[error("invalid embedder option: {0}")]
    InvalidOption(String),
    /// candle failed while running the model.
    #[error("inference failed: {0}")]
    Candle(#[from] candle_core::Error),
}

/// Shorthand for results of the local model.
pub type Result<T, E = GemmaError> = std::result::Result<T, E>;
