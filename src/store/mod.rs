//! The storage seam: what the engine needs from the place an agent's index is kept, and
//! nothing of how it is kept there.
//!
//! An agent's index is a sequence of committed **generations**. A generation holds the
//! workspace's files and their chunks (text, lines, title, annotations), a keyword index
//! over the chunks' text (BM25), the chunks' vectors (and their passages') with a
//! nearest-neighbour index over them, and a [`Manifest`] that names it: identity, format
//! and what the last sync found. Replacing the manifest is what commits a generation.
//!
//! The engine sees a store through three traits, read and write apart (as qdrant's segments
//! are, and tantivy's `Directory` is the one seam of its storage):
//!
//! - [`Reader`]: one committed generation, for searches: keyword candidates with their BM25
//!   scores, nearest vectors, chunk keys and records by id, the manifest. A reader never
//!   blocks a writer and sees the same generation for as long as it is held.
//! - [`Writer`]: one sync, holding the store's single-writer lock: it opens the generation
//!   to write (the committed one to update, or a new one for a rebuild), commits batches
//!   of file changes (each atomically, so a killed sync keeps the batches before it), stores
//!   vectors and the embedding cache's entries, brings the vector index up to date, and
//!   commits the generation by replacing the manifest. What it has not committed is never
//!   seen by a reader.
//! - [`Store`]: the handle a process keeps per agent, which hands out readers (the current
//!   generation, reopened when a writer commits) and the writer.
//!
//! `sync/` and `search/` know only these traits and the records of `records.rs`
//! (`tests/architecture.rs` keeps them from importing the index's crates). Two stores
//! implement them, chosen once per agent in `freshness` from the settings' store backend:
//! the local store (`crate::index`: redb + tantivy + hnsw_rs, one directory per agent) and
//! fleet mode's (`crate::lance`, feature `fleet`: LanceDB tables on object storage);
//! `memory.rs` keeps everything in maps, for the pipeline's unit tests.

mod manifest;
#[cfg(test)]
pub(crate) mod memory;
mod records;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Result;

pub use manifest::{
    EmbeddingProgress, EmbeddingStats, Identity, Manifest, SyncStats, FORMAT_VERSION,
};
pub(crate) use records::idf;
pub use records::{
    cache_key, unembedded, Batch, ChunkKey, ChunkRecord, FileRecord, KeywordHit, Unembedded, Upsert,
};

/// What a process holds in memory for the agents it serves (the local store's open
/// generations, fleet mode's caches), as `status` reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreCache {
    /// The cache's budget, shared by every agent the process opens
    /// (`MEMORIA_FLEET_CACHE_MB` in fleet mode; `MEMORIA_OPEN_MB`, the vector bytes of the
    /// generations kept open, for the local store).
    pub limit_bytes: u64,
    /// What the cache holds now, all agents together.
    pub used_bytes: u64,
    /// How many times this process opened the agent's committed tables from the store.
    pub cold_opens: u64,
    /// How the last search met the agent's tables: `cold` (opened from the store for it)
    /// or `warm` (already open); absent before the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_search: Option<&'static str>,
    /// How long the last cold open took, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_open_ms: Option<u64>,
    /// The bytes of the agent's indexes in the store (the generation this process opened
    /// last): what its warm searches want held in the cache. Fleet mode only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_bytes: Option<u64>,
}

/// The handle a process keeps per agent.
pub(crate) trait Store: Send + Sync {
    /// The committed manifest; `None` before the first sync.
    fn manifest(&self) -> Result<Option<Manifest>>;
    /// The current generation, opened for reading (kept between calls while the manifest
    /// names it).
    fn reader(&self) -> Result<Arc<dyn Reader>>;
    /// Forgets the kept reader (after this process committed).
    fn invalidate(&self);
    /// The store's one writer; [`Error::IndexBusy`](crate::Error::IndexBusy) while another
    /// holds it (in this process or another). Dropping it releases the lock.
    fn writer(&self) -> Result<Box<dyn Writer + '_>>;
    /// What the process keeps open or caches of the store, all agents together, and
    /// whether the last search opened the agent cold.
    fn cache(&self) -> Option<StoreCache> {
        None
    }
    /// What a search found wrong with the committed index that the next sync repairs, in
    /// words; `None` when nothing is known.
    fn damage(&self) -> Option<String> {
        None
    }
    /// Why the process's cache cannot keep the agent's searches warm, in words; `None`
    /// when it can or nothing is known yet.
    fn cache_warning(&self) -> Option<String> {
        None
    }
}

/// One committed generation, for searches.
pub(crate) trait Reader: Send + Sync {
    /// The manifest this generation was opened from.
    fn manifest(&self) -> &Manifest;
    /// Whether the keyword side can serve, or why not (a damaged keyword index: searches
    /// fall back to vectors and chunks come from elsewhere until a sync rebuilds it).
    fn keyword_ready(&self) -> Result<()>;
    /// The `limit` best chunks for `query` by BM25 (of one `source` when given), best
    /// first; equal scores in path order. `content_only` leaves the query's function words
    /// out.
    fn keyword(
        &self,
        query: &str,
        limit: usize,
        source: Option<&str>,
        content_only: bool,
    ) -> Result<Vec<KeywordHit>>;
    /// How many chunks the generation holds, and how many of them hold each of `terms`
    /// (analyzed terms, as [`crate::analyzer`] makes them).
    fn frequencies(&self, terms: &[String]) -> Result<(usize, Vec<usize>)>;
    /// How much of `query` the text `text` holds: the share of the query's content terms,
    /// each weighed by its IDF in this generation, that are among the text's terms; 1 for
    /// a query without content terms.
    fn query_share(&self, query: &str, text: &str) -> Result<f64> {
        let wanted = crate::analyzer::query_terms(query, true);
        let (documents, frequencies) = self.frequencies(&wanted)?;
        Ok(records::query_share(
            &wanted,
            documents,
            &frequencies,
            &crate::analyzer::terms(text, crate::analyzer::AnalyzerMode::Index),
        ))
    }
    /// Whether the generation has vectors to search.
    fn has_vectors(&self) -> bool;
    /// The `k` chunks nearest to `query` by cosine (a chunk with passages scoring the best
    /// of theirs), best first; `None` when the generation has no vectors.
    fn nearest(&self, query: &[f32], k: usize) -> Option<Vec<(String, f32)>>;
    /// Ranking keys of these chunks (unknown ids are skipped); by default from their
    /// records (a store with a cheaper way to them overrides it).
    fn keys(&self, ids: &[String]) -> Result<Vec<ChunkKey>> {
        Ok(self
            .chunks(ids)?
            .into_iter()
            .map(|(id, c)| c.key(id))
            .collect())
    }
    /// Records of these chunks, in order (unknown ids are skipped).
    fn chunks(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>>;
    /// The first chunk (lowest start line) of every file whose path `named` accepts, by
    /// path.
    fn first_chunks(&self, named: &dyn Fn(&str) -> bool) -> Result<Vec<ChunkKey>>;
    /// Every file of the generation, by path (what a copy to another store reads).
    fn files(&self) -> Result<Vec<(String, FileRecord)>>;
    /// The vectors the generation holds for `ids`, chunks' own and passages' (`None`
    /// where it has none).
    fn vectors(&self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>>;
}

/// The generation a sync writes, as [`Writer::begin`] opened it.
#[derive(Debug)]
pub(crate) struct Begun {
    /// Its number.
    pub generation: u64,
    /// A new generation (a rebuild), rather than the committed one updated.
    pub rebuilt: bool,
    /// The files it holds, by path (none when new).
    pub files: HashMap<String, FileRecord>,
    /// Why the store rebuilt a generation the sync asked it to update (a layout it no
    /// longer writes), for the sync's warnings.
    pub note: Option<String>,
}

/// One sync's access to a store, holding its writer lock.
pub(crate) trait Writer: Send {
    /// Where the store keeps this agent, for messages (a directory, a URI).
    fn location(&self) -> String;
    /// The committed manifest; an error when it cannot be read.
    fn manifest(&self) -> Result<Option<Manifest>>;
    /// Opens the generation this sync writes, after removing what interrupted syncs left:
    /// generation `current` (the one the manifest names) to update it, or with `rebuild` a
    /// new, empty one. Updating fails when `current` is damaged (the caller then rebuilds).
    fn begin(&mut self, current: Option<u64>, rebuild: bool) -> Result<Begun>;
    /// Commits one batch of file changes atomically: removals and re-indexed files lose
    /// their old chunks (and vectors), upserts bring their chunks, touches refresh records.
    fn apply(&mut self, batch: &Batch) -> Result<()>;
    /// Completes the keyword side after the last batch.
    fn finish_keyword(&mut self) -> Result<()>;
    /// The vectors not stored yet ([`unembedded`]) of the first `limit` chunks without
    /// their own vector whose ids come after `after` (from the first without it), in id
    /// order: each chunk's own and, with `passages`, its passages' before it. A sync lists
    /// them a page at a time, so a large backfill holds one page's texts, not all.
    fn unembedded(
        &self,
        passages: bool,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Unembedded>>;
    /// How many chunks have no vector of their own yet.
    fn unembedded_count(&self) -> Result<u64>;
    /// Stores vectors by chunk (or passage) id; ids of chunks no longer held are skipped.
    fn put_vectors(&mut self, vectors: &[(String, Vec<f32>)]) -> Result<()>;
    /// The vectors this generation holds for `ids` as written so far (`None` where it has
    /// none): a chunk's passages, read back for their centroid.
    fn stored_vectors(&mut self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>>;
    /// The vectors the committed generation holds for `ids`, for a rebuild with the same
    /// embedder; all `None` when it cannot be read.
    fn replaced_vectors(&mut self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>>;
    /// The embedding cache's vectors for these keys.
    fn cached(&mut self, keys: &[String]) -> Result<Vec<Option<Vec<f32>>>>;
    /// Puts `(key, chunk or passage id, vector)` into the embedding cache, keeping at most
    /// `max_entries`.
    fn cache(&mut self, items: &[(String, String, Vec<f32>)], max_entries: usize) -> Result<()>;
    /// The batch embedding jobs recorded and not yet read (`embed::backfill`'s JSON).
    fn batch_jobs(&self) -> Result<Option<Vec<u8>>>;
    /// Replaces the batch job record (`None` removes it).
    fn write_batch_jobs(&mut self, jobs: Option<&[u8]>) -> Result<()>;
    /// Brings the nearest-neighbour index in line with the stored vectors of `dims` values
    /// (never re-embedding); the number of chunks with a vector.
    fn index_vectors(&mut self, dims: usize) -> Result<u64>;
    /// The files of the generation as written.
    fn files(&self) -> Result<Vec<(String, FileRecord)>>;
    /// The number of chunks of the generation as written.
    fn chunk_count(&self) -> Result<u64>;
    /// Commits the generation as written so far: `manifest` names it, atomically; a
    /// rebuild's replaced generation goes. A sync may commit more than once (while it
    /// embeds: the keyword side first, then vectors as they come) and writes on after each.
    fn commit(&mut self, manifest: &Manifest) -> Result<()>;
}
