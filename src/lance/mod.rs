//! Fleet mode's store: an agent's index in LanceDB tables, on a local directory or on
//! object storage (S3 and compatible servers), so that any memoria node with the URI can
//! search or sync any agent (feature `fleet`).
//!
//! # Layout
//!
//! Under the store's URI, each agent is a LanceDB database of its own, `<uri>/<agentId>`
//! (an agent id never starts with `.`), and `<uri>/.shared` holds what agents share:
//!
//! ```text
//! <uri>/<agentId>/manifest     one row: the manifest (JSON) and the versions of the
//!                              generation's four tables it names (0: absent)
//!                 lease        one row: the writer's lease (holder, expiry)
//!                 jobs         one row: the batch embedding jobs' record
//!                 files_<g>    path, record (JSON)               generation g
//!                 chunks_<g>   id, path, source, lines, hash, title, annotations, text,
//!                              terms (full-text index over memoria's analyzed terms)
//!                 vectors_<g>  id, vector (a chunk's own)
//!                 passages_<g> chunk, ids, codes (a long chunk's passages, one row per
//!                              chunk and write: their vectors in the int8 form of
//!                              `crate::codec`, end to end)
//! <uri>/.shared/embedding_codes  key (embedder × text), codes (the vector in the form of
//!                                `crate::codec`: int8 for a passage's, f32 for a chunk's)
//!               embedding_cache  key, vector (f32): an earlier memoria's, read only
//! ```
//!
//! # Commits
//!
//! Every LanceDB write is a new version of one table; what readers see is what the
//! manifest row names: a generation and one version of each of its tables. A reader opens
//! the tables at those versions, so it sees one committed generation however many writes
//! follow. A sync writes its batches into the current generation's tables (a rebuild into
//! new tables, `<g+1>`) and commits by writing the manifest row; the next writer's `begin`
//! restores each table to the version the manifest names, which rolls back what a killed
//! sync wrote after its last commit, and drops the tables of other generations. One
//! writer at a time, across nodes: [`lease`]'s lease, taken through LanceDB's commit
//! protocol; a second node finds the agent busy, as a second process finds a local agent
//! directory (its searches answer from the last commit, its live sync retries).
//!
//! # The two sides of a search
//!
//! Keyword: LanceDB's BM25 (k1 1.2, b 0.75, tantivy's IDF) over the `terms` column, which
//! holds each chunk's text as memoria's analyzer reads it, split on whitespace by the
//! index: the terms are memoria's, the scoring LanceDB's. Vectors: the chunks' own vectors
//! by cosine, the nearest widened and rescored by their best passage, as the local store
//! does. A generation under 50,000 chunks is scanned whole (exact), in memory once read
//! ([`held`]); from there its vectors get an IVF-HNSW-SQ index (candidates re-ranked on their
//! full vectors) and the columns searches look rows up by (`chunks.id`, `passages.chunk`)
//! B-tree indexes, so a search of a large agent reads a small part of it
//! (`MEMORIA_FLEET_INDEX_ROWS` moves the threshold).
//!
//! # Writes
//!
//! Every write is a table version and several object-store requests, so a sync writes in
//! few large pieces: its file batches as they come, its vectors and cache entries held in
//! memory until a commit (or 4,096 of them), indexes brought up to date once per commit.

mod cache;
mod held;
mod indexes;
mod lease;
mod reader;
mod rows;
mod runtime;
mod store;
mod tables;
mod writer;

pub(crate) use store::{LanceStore, Location};

/// The positive whole number the environment variable `name` sets, else `default`; a value
/// that is not one is named in a warning, not ignored in silence.
fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Err(_) => default,
        Ok(value) => match value.trim().parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => {
                tracing::warn!("{name}={value:?} is not a positive whole number; using {default}");
                default
            }
        },
    }
}
