//! How the model is asked to embed: its prompts, its output sizes and the load options.
//!
//! EmbeddingGemma was trained with a prompt before every text, and which prompt says what
//! the text is for: a search query (`task: search result | query: `) or a document to be
//! found (`title: none | text: `). The same words embed to different vectors under the two
//! prompts, and retrieval works because queries and documents are each embedded under
//! their own ([`Prompt`]). A model directory may name other prompts in
//! `config_sentence_transformers.json`; a GGUF file names none, so the defaults apply.
//!
//! It was also trained with Matryoshka representation learning: the first 512, 256 or 128
//! of its 768 values are themselves a usable embedding once re-normalised
//! ([`MATRYOSHKA_DIMS`], [`truncate_dims`]), trading a little accuracy for a smaller
//! index.
//!
//! [`GemmaOptions`] gathers everything a load can be told: output size, prompts, token
//! limits, dtype, kernels, the packed-model cache, the precision of the linear layers and,
//! for a GGUF file without them, where the Dense layers come from.

use std::path::PathBuf;

use candle_core::DType;

use crate::gemma::precision::Precision;

/// The query prompt EmbeddingGemma was trained with, used when the model directory names
/// none.
pub const DEFAULT_QUERY_PROMPT: &str = "task: search result | query: ";
/// The document prompt EmbeddingGemma was trained with. A document with a title (see
/// `crate::title`) is embedded with the title in place of `none`, as the model card asks.
pub const DEFAULT_DOCUMENT_PROMPT: &str = "title: none | text: ";
/// The part of a document prompt a title replaces.
pub(crate) const NO_TITLE: &str = "title: none";

/// Which of the model's two prompts goes before a text: what the text is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Prompt {
    /// A search query ([`DEFAULT_QUERY_PROMPT`] unless the model names another).
    Query,
    /// A document to be found ([`DEFAULT_DOCUMENT_PROMPT`] unless the model names another).
    Document,
}

/// How to load and run the model.
#[derive(Debug, Clone)]
pub struct GemmaOptions {
    /// Output size: `None` for the model's full size, or a Matryoshka size (512/256/128):
    /// vectors are truncated and re-normalised.
    pub dims: Option<usize>,
    /// Overrides the query prompt of `config_sentence_transformers.json`.
    pub query_prompt: Option<String>,
    /// Overrides the document prompt of `config_sentence_transformers.json`.
    pub document_prompt: Option<String>,
    /// Token limit (prompt and BOS/EOS included); default `max_seq_length` (2048).
    pub max_tokens: Option<usize>,
    /// Tokens per forward pass: texts are sorted by length and packed until this many. On a
    /// GPU (the candle-op path, which pads), what is counted is sequences × the longest.
    /// The default, 2048, suits a CPU; a GPU needs far wider passes to be busy
    /// ([`GPU_BATCH_TOKENS`], which the automatic device choice uses there).
    pub batch_tokens: usize,
    /// Working dtype: default f32. BF16 is accepted on GPU devices only: weights and the
    /// products' inputs in bf16 (tensor cores, f32 sums), norms and the residual stream in f32.
    pub dtype: Option<DType>,
    /// Force the plain-candle implementation even where fused CPU kernels apply.
    pub generic_kernels: bool,
    /// memoria's cache directory: the fused CPU path keeps its packed model (weights in the
    /// kernels' layout, tokenizer tables) in `<cache_dir>/packed/`, written on the first load
    /// and memory-mapped on later ones (see `pack.rs`). `None` loads from the source files.
    pub cache_dir: Option<PathBuf>,
    /// The arithmetic of the fused CPU kernels' linear layers (`precision.rs`); other
    /// devices and the generic kernels run `dtype`.
    pub precision: Precision,
    /// For a GGUF file without the Dense layers (as published): a sentence-transformers
    /// directory whose `2_Dense`/`3_Dense` modules are applied after it. `None` embeds as
    /// llama.cpp does with such a file (the pooled transformer output: another space).
    pub dense_dir: Option<PathBuf>,
}

impl Default for GemmaOptions {
    fn default() -> Self {
        GemmaOptions {
            dims: None,
            query_prompt: None,
            document_prompt: None,
            max_tokens: None,
            batch_tokens: 2048,
            dtype: None,
            generic_kernels: false,
            cache_dir: None,
            precision: Precision::Auto,
            dense_dir: None,
        }
    }
}

/// Tokens per forward pass on a GPU (padded: sequences × the longest): 40 documents of 400
/// tokens. Measured on an H100 (`scripts/gpu-check`), documents/s at batch 256 were the same
/// within 1 % for passes of 16384 and 32768 tokens and 5 % lower at 65536, while the GPU
/// memory grew from 2.5 to 3.2 and 4.8 GB: the narrowest of the three that keeps the GPU busy.
pub const GPU_BATCH_TOKENS: usize = 16384;

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
