//! The local store: one agent's index in one directory on this machine (redb + tantivy +
//! hnsw_rs), the product's implementation of the storage seam (`crate::store`, `local.rs`).
//!
//! ```text
//! <stateDir>/memory/<agentId>/
//!   manifest.json        format, identity, current generation, last-sync stats (atomic rename)
//!   LOCK                 held (flock) by the one process that writes
//!   cache.redb           embedding cache, shared by every generation
//!   batches.json         batch embedding jobs submitted and not yet read (atomic rename)
//!   flush.json           the compaction cycle of each session's last memory flush
//!   gen-000001/          one index generation
//!     catalog.redb       source of truth: files, chunks (text, lines, hash), vectors
//!                        (a chunk's under its id, its passages' under `<id>#<n>`)
//!     text/              tantivy BM25 index, derived; commit payload = catalog seq
//!     vectors/           exact or HNSW vector index of the chunks (passages beside it,
//!                        int8), derived; tagged with the catalog seq
//! ```
//!
//! Invariants:
//! - Readers never take the lock and never hold the catalog open: they read `manifest.json`,
//!   then open that generation's `text/` and `vectors/`, whose last commits are always
//!   complete states (`view.rs`). Only when `text/` cannot be opened does a search read
//!   chunks from the catalog, opened read-only per call, so the writer is never kept out.
//! - A process keeps the generations it searched open, all agents together within one
//!   budget of vector bytes (`open.rs`, `MEMORIA_OPEN_MB`): past it, the least recently
//!   searched are let go and reopened by their next search.
//! - Writers hold `LOCK`. A second writer gets [`Error::IndexBusy`] instead of waiting.
//! - An identity change (chunking, sources, embedder) builds a *new* generation; the manifest
//!   switches to it by atomic rename once it is complete, then the old one is deleted.
//!   Generations the manifest does not name are leftovers of an interrupted build and are
//!   removed the next time a writer opens the directory.
//! - The text index is derived: when its commit payload lags the catalog `seq` (a crash
//!   between the two commits), the writer rebuilds it from the catalog.
pub(crate) mod agent_dir;
pub(crate) mod cache;
pub(crate) mod catalog;
mod local;
mod open;
pub(crate) mod text;
mod tolerant_dir;
pub(crate) mod vector;
mod view;

pub use agent_dir::{AgentDir, WriterLock};
pub(crate) use local::LocalStore;
pub(crate) use vector::VectorParams;
