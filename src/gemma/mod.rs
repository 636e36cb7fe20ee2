//! The local inference engine: EmbeddingGemma-300m run natively on candle, from the model's
//! files to unit-length vectors, with no Python and no network.
//!
//! # The model
//!
//! EmbeddingGemma is a Gemma3 transformer (24 layers, hidden size 768) used as an encoder:
//! attention is bidirectional, and a text's vector is the mean of its tokens' final hidden
//! states, passed through two Dense projections and L2-normalised. Before embedding, a text
//! gets the prompt for what it is for ([`Prompt`]): queries and documents are embedded
//! under different prompts, which is what makes a query land near the documents that answer
//! it. [`GemmaEmbedder`] matches PyTorch sentence-transformers to f32 noise (checked against
//! golden vectors in `tests/gemma_real_model.rs`).
//!
//! # The pieces, bottom up
//!
//! - **Files.** A sentence-transformers directory (`model_files.rs` for its JSON,
//!   `weights.rs` for safetensors and the `TensorSource` the
//!   encoder loads from) or a llama.cpp GGUF file (`gguf.rs`), both read with errors that
//!   name the file and the tensor ([`GemmaError`]).
//! - **Tokens.** `tokenizer.rs`: Gemma's BPE in tables that load in place, checked against
//!   the `tokenizers` crate, which runs any other tokenizer.
//! - **Arithmetic.** `kernels.rs` (fused RMSNorm, RoPE, GELU, packed attention),
//!   `matmul.rs` (f16 weights, f32 products) and `q8.rs` (Q8_0 weights, int8 activations),
//!   all dispatched on `crate::simd`'s CPU level; `precision.rs` chooses between the last
//!   two ([`Precision`]).
//! - **The network.** `encoder.rs` (the transformer over packed sequences; on a GPU its
//!   attention runs over the sequences padded into one batch, `padded.rs`), `dense.rs` (the
//!   projections after pooling), `embedder.rs` ([`GemmaEmbedder`]: prompts, batching,
//!   pooling, normalisation) and `options.rs` ([`GemmaOptions`], Matryoshka sizes).
//! - **Loading.** `load.rs` (configuration, tokenizer, weights, the fingerprint), the packed
//!   model that makes a second start cheap (`slab.rs`, `pack.rs`: the file format,
//!   `pack_plan.rs`: which pack a load uses or writes) and `device.rs` (GPU or CPU).
//! - **Finding the model.** `locate.rs`: where the model directory is
//!   ([`resolve_model`]), and [`pull`] to download it.
//!
//! # Why finding the model lives here
//!
//! Which files make a complete model, which GGUF file OpenClaw downloaded under which name,
//! and where a GGUF file's missing Dense layers can be borrowed from are facts about this
//! model's files, and the load needs them itself (a GGUF file's Dense layers are looked for
//! with the same search). The caller only says where to look ([`ModelSearch`]: the CLI's
//! `--model`, the configuration's `local.modelPath`): choosing the local model over another
//! provider is `crate::embed`'s business, not this module's.
//!
//! # What this module does not know
//!
//! Nothing here knows of embedding providers, the `Embedder`
//! trait, configuration files or indexes: `crate::embed` is built on top of this module
//! (it implements its trait for [`GemmaEmbedder`] and chooses when the local model serves),
//! and nothing in `gemma/` imports from it.

#[cfg(target_arch = "x86_64")]
mod amx;
mod attention_bf16;
mod bf16;
mod cpu;
mod dense;
mod device;
mod embedder;
mod encoder;
mod error;
mod gguf;
mod kernels;
mod load;
mod locate;
mod matmul;
mod model_files;
mod options;
mod pack;
mod pack_plan;
mod padded;
mod precision;
mod profile;
mod q8;
mod slab;
mod tokenizer;
mod vnni;
mod weights;

pub(crate) use device::load_on_best_device;

pub use embedder::GemmaEmbedder;
pub use error::{GemmaError, Result};
#[cfg(feature = "download")]
pub use locate::pull;
pub use locate::{
    resolve_model, ModelLocation, ModelNotFound, ModelSearch, PullError, DEFAULT_REPO,
};
pub use options::{
    truncate_dims, GemmaOptions, Prompt, DEFAULT_DOCUMENT_PROMPT, DEFAULT_QUERY_PROMPT,
    GPU_BATCH_TOKENS, MATRYOSHKA_DIMS,
};
pub use precision::Precision;
pub use profile::profile_report;
