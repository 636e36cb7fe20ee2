//! Text embeddings as a service to the index: the [`Embedder`] trait, which embedder serves
//! an agent, the HTTP providers, and when a backfill goes through batch jobs.
//!
//! # Embedders
//!
//! Hybrid search needs every chunk, and every query, as a vector. Whatever computes them
//! is an [`Embedder`]: texts in, unit-length vectors of a fixed length out, and a
//! fingerprint naming the space they lie in (the index and the embedding cache key vectors
//! by it, so a change of model or settings re-embeds instead of mixing spaces). Queries
//! and documents are embedded differently ([`EmbedKind`]).
//!
//! # Which embedder serves
//!
//! The configuration names a provider (SPEC §7): `local` (EmbeddingGemma on this machine,
//! the engine in `crate::gemma`), a remote one (`openai`, `gemini`, `mistral`, `voyage`,
//! `ollama`, any OpenAI-compatible endpoint), `auto` (OpenClaw's order: a local model, then
//! OpenAI, then Gemini, each when it can serve), or `none`. [`EmbedderChoice`] resolves it
//! to a loaded embedder, or to the reason there is none; a configured `fallback` provider
//! serves when the first cannot, and every search payload says so. No embedder means
//! keyword-only search, never an error.
//!
//! # Files
//!
//! - `embedder.rs`: the trait and its vocabulary ([`EmbedKind`], [`Embedding`],
//!   [`EmbedError`], [`BatchApi`]), and [`cosine`].
//! - `local.rs`: the local model as an [`Embedder`], loaded once per directory and process
//!   ([`load_local_on`]).
//! - `provider.rs`: the configured provider resolved to an embedder, or why there is none.
//! - `serving.rs`: one agent's embedder for the life of a process: resolved on first use,
//!   and tried again with back-off in the background while it left the agent keyword-only.
//! - `remote.rs` and `remote/batch_api.rs` (feature `remote`): the HTTP providers with
//!   retries, and the HTTP side of OpenAI's and Gemini's batch APIs.
//! - `backfill.rs`: when a sync's backfill goes through batch jobs, how many run at once,
//!   waiting or not, and what falls back to direct requests (pure over [`BatchApi`]).
//!
//! # Layering
//!
//! This module is built on `crate::gemma` and never the other way round: `gemma/` knows
//! nothing of providers or of this trait, and `local.rs` is the one bridge. Where the local
//! model's files are found ([`resolve_model`](crate::gemma::resolve_model)) is the engine's
//! knowledge; whether to look at all, and with which configured paths, is `provider.rs`'s.

pub(crate) mod backfill;
mod embedder;
mod local;
mod provider;
#[cfg(feature = "remote")]
mod remote;
mod serving;

pub use embedder::{
    cosine, BatchApi, BatchOptions, Document, EmbedError, EmbedKind, Embedder, Embedding, JobState,
    Result,
};
pub use local::{load_local, load_local_on};
pub use provider::EmbedderChoice;
pub(crate) use provider::ResolvedEmbedder;
pub(crate) use serving::Serving;
