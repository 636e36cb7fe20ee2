//! `catalog.redb`: the source of truth of one index generation.
//!
//! Tables: `files` (path → [`FileRecord`]), `chunks` (chunk id → [`ChunkRecord`]),
//! `vectors` (below), `pending_vectors` (the chunks whose vectors changed since the vector
//! index caught up) and `meta` (`seq`: a counter bumped by every commit; the text index
//! stores the `seq` it reflects, so a lagging text index is detected and rebuilt from here;
//! `vector_seq` and `vectors_saved`, the same for the vector index; `vectored`, the chunks
//! with their own vector), and `unembedded` (the chunks without it). Values are JSON:
//! simple and debuggable; the cost that mattered was B-tree order (see `commit`).
//!
//! Only the holder of the agent directory's writer lock opens the catalog.

use std::ops::Bound;
use std::path::{Path, PathBuf};

use redb::{
    Database, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, ReadableTable,
    ReadableTableMetadata, TableDefinition, TableHandle, WriteTransaction,
};
use serde::Deserialize;

use crate::passage;
use crate::store::{unembedded, Batch, ChunkRecord, FileRecord, Unembedded, Upsert};

use crate::codec;
use crate::error::{Error, Result};

const FILES: TableDefinition<&str, &[u8]> = TableDefinition::new("files");
const CHUNKS: TableDefinition<&str, &[u8]> = TableDefinition::new("chunks");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// chunk id → embedding (`codec`'s f32 form); a chunk's passages under `<chunk id>#<n>`
/// ([`passage::id`]), in its int8 form (a quarter of the bytes).
const VECTORS: TableDefinition<&str, &[u8]> = TableDefinition::new("vectors");
/// The chunks whose vectors changed since the vector index last caught up (`meta`'s
/// `vectors_saved`, the vector seq it caught up with): chunk id → [`ADDED`] (its own vector,
/// so all of it, was stored) or [`REMOVED`]. What lets a sync append a delta to the vector
/// index instead of comparing every id (`index::vector`).
const PENDING: TableDefinition<&str, u8> = TableDefinition::new("pending_vectors");
const ADDED: u8 = 1;
const REMOVED: u8 = 0;
/// The chunks without their own vector yet, kept with every commit, so a sync finds what
/// it has to embed without reading every chunk (at 100k chunks that read was 0.7 s, twice
/// a sync).
const UNEMBEDDED: TableDefinition<&str, ()> = TableDefinition::new("unembedded");

/// Free bytes below which a catalog is never compacted ([`Catalog::compact_if_sparse`]).
const SPARSE_BYTES: u64 = 16 << 20;

/// The pages a catalog or an embedding cache keeps in this process's memory (redb's cache:
/// read pages, and up to half of it the dirty pages of a write transaction before they are
/// written out). redb's default is 1 GiB for each open file; a first index of 20,000
/// chunks held 403 MB there at its peak (heaptrack), most of a writer's memory, while the
/// kernel's page cache serves the same pages again.
const REDB_CACHE_BYTES: usize = 64 << 20;

/// How memoria's redb files are opened: with [`REDB_CACHE_BYTES`] of cache.
pub(super) fn redb_builder() -> redb::Builder {
    let mut builder = redb::Builder::new();
    builder.set_cache_size(REDB_CACHE_BYTES);
    builder
}

/// An open catalog.
pub struct Catalog {
    db: Db,
    path: PathBuf,
}

enum Db {
    /// The writer's handle (exclusive).
    ReadWrite(Database),
    /// A reader's handle, used only when a search must fall back to the catalog.
    ReadOnly(ReadOnlyDatabase),
}

impl Catalog {
    /// Opens (or creates) the catalog file.
    pub fn open(path: &Path) -> Result<Catalog> {
        let db = redb_builder()
            .create(path)
            .map_err(|e| Error::catalog(path, e))?;
        let catalog = Catalog {
            db: Db::ReadWrite(db),
            path: path.to_path_buf(),
        };
        // Create the tables so read transactions never see them missing.
        let txn = catalog.begin_write()?;
        {
            txn.open_table(FILES).map_err(|e| catalog.err(e))?;
            txn.open_table(CHUNKS).map_err(|e| catalog.err(e))?;
            txn.open_table(PENDING).map_err(|e| catalog.err(e))?;
            let vectors = txn.open_table(VECTORS).map_err(|e| catalog.err(e))?;
            let mut meta = txn.open_table(META).map_err(|e| catalog.err(e))?;
            // Catalogs from before the count or the `unembedded` table: both made once.
            let tracked = txn
                .list_tables()
                .map_err(|e| catalog.err(e))?
                .any(|table| table.name() == UNEMBEDDED.name());
            let mut unembedded = txn.open_table(UNEMBEDDED).map_err(|e| catalog.err(e))?;
            if !tracked || meta.get("vectored").map_err(|e| catalog.err(e))?.is_none() {
                let chunks = txn.open_table(CHUNKS).map_err(|e| catalog.err(e))?;
                unembedded
                    .retain(|_, _| false)
                    .map_err(|e| catalog.err(e))?;
                let mut vectored = 0;
                for row in chunks.iter().map_err(|e| catalog.err(e))? {
                    let (key, _) = row.map_err(|e| catalog.err(e))?;
                    match vectors.get(key.value()).map_err(|e| catalog.err(e))? {
                        Some(_) => vectored += 1,
                        None => {
                            unembedded
                                .insert(key.value(), ())
                                .map_err(|e| catalog.err(e))?;
                        }
                    }
                }
                meta.insert("vectored", vectored)
                    .map_err(|e| catalog.err(e))?;
            }
        }
        txn.commit().map_err(|e| catalog.err(e))?;
        Ok(catalog)
    }

    /// Opens the catalog of an existing generation for writing; a missing file is an error
    /// (an empty catalog would make the sync think every file is new, and a text index
    /// that still has them would disagree with it).
    pub fn open_existing(path: &Path) -> Result<Catalog> {
        if !path.is_file() {
            return Err(Error::corrupt(path, "the catalog is missing"));
        }
        Catalog::open(path)
    }

    /// Opens an existing catalog for reading only. Readers normally never open the catalog
    /// (the text index serves them); this is the fallback when the text index is unusable.
    /// It fails while a writer has the catalog open.
    pub fn open_read_only(path: &Path) -> Result<Catalog> {
        let db = redb_builder()
            .open_read_only(path)
            .map_err(|e| Error::catalog(path, e))?;
        Ok(Catalog {
            db: Db::ReadOnly(db),
            path: path.to_path_buf(),
        })
    }

    fn begin_read(&self) -> Result<ReadTransaction> {
        match &self.db {
            Db::ReadWrite(db) => db.begin_read(),
            Db::ReadOnly(db) => db.begin_read(),
        }
        .map_err(|e| self.err(e))
    }

    fn begin_write(&self) -> Result<WriteTransaction> {
        match &self.db {
            Db::ReadWrite(db) => db.begin_write().map_err(|e| self.err(e)),
            Db::ReadOnly(_) => Err(Error::ReadOnly {
                path: self.path.clone(),
            }),
        }
    }

    fn err(&self, e: impl Into<redb::Error>) -> Error {
        Error::catalog(&self.path, e)
    }

    fn decode<T: for<'de> Deserialize<'de>>(&self, key: &str, bytes: &[u8]) -> Result<T> {
        serde_json::from_slice(bytes).map_err(|e| Error::Corrupt {
            path: self.path.clone(),
            message: format!("record {key:?}: {e}"),
        })
    }

    /// The commit counter (0 for a new catalog).
    pub fn seq(&self) -> Result<u64> {
        let txn = self.begin_read()?;
        let table = txn.open_table(META).map_err(|e| self.err(e))?;
        let seq = table.get("seq").map_err(|e| self.err(e))?;
        Ok(seq.map_or(0, |v| v.value()))
    }

    /// All file records, by path.
    pub fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        let txn = self.begin_read()?;
        let table = txn.open_table(FILES).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (key, value) = row.map_err(|e| self.err(e))?;
            let record = self.decode(key.value(), value.value())?;
            out.push((key.value().to_string(), record));
        }
        Ok(out)
    }

    /// Calls `f` for every chunk (used to rebuild derived indexes).
    pub fn for_each_chunk(&self, mut f: impl FnMut(&str, ChunkRecord) -> Result<()>) -> Result<()> {
        let txn = self.begin_read()?;
        let table = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
        for row in table.iter().map_err(|e| self.err(e))? {
            let (key, value) = row.map_err(|e| self.err(e))?;
            let record = self.decode(key.value(), value.value())?;
            f(key.value(), record)?;
        }
        Ok(())
    }

    /// The chunks with these ids, in order (unknown ids are skipped).
    pub fn chunks_by_ids(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        let txn = self.begin_read()?;
        let table = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(value) = table.get(id.as_str()).map_err(|e| self.err(e))? {
                out.push((id.clone(), self.decode(id, value.value())?));
            }
        }
        Ok(out)
    }

    /// Number of chunks.
    pub fn chunk_count(&self) -> Result<u64> {
        let txn = self.begin_read()?;
        let table = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
        table.len().map_err(|e| self.err(e))
    }

    /// Applies `batch` atomically and returns the new `seq`. `old` maps each upserted or
    /// removed path to its previous record, whose chunks are deleted.
    pub fn commit(&self, batch: &Batch, old: &dyn Fn(&str) -> Option<Vec<String>>) -> Result<u64> {
        let txn = self.begin_write()?;
        let seq;
        {
            let mut files = txn.open_table(FILES).map_err(|e| self.err(e))?;
            let mut chunks = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let mut vectors = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
            let mut pending = txn.open_table(PENDING).map_err(|e| self.err(e))?;
            let mut unembedded = txn.open_table(UNEMBEDDED).map_err(|e| self.err(e))?;
            let mut gone = 0;
            // Keys are random hex: inserting and removing them in sorted order visits each
            // B-tree page once per commit instead of once per key (≈2× faster commits).
            let mut stale: Vec<String> = batch
                .upserts
                .iter()
                .map(|u| u.path.as_str())
                .chain(batch.removals.iter().map(String::as_str))
                .flat_map(|path| old(path).unwrap_or_default())
                .collect();
            stale.sort_unstable();
            for id in &stale {
                let existed = chunks
                    .remove(id.as_str())
                    .map_err(|e| self.err(e))?
                    .is_some();
                vectors.remove(id.as_str()).map_err(|e| self.err(e))?;
                let missing = unembedded
                    .remove(id.as_str())
                    .map_err(|e| self.err(e))?
                    .is_some();
                // A chunk with its own vector has it here or in the vector index.
                if existed && !missing {
                    gone += 1;
                    pending
                        .insert(id.as_str(), REMOVED)
                        .map_err(|e| self.err(e))?;
                }
                let (lo, hi) = passage::id_range(id);
                let passages: Vec<String> = vectors
                    .range(lo.as_str()..hi.as_str())
                    .map_err(|e| self.err(e))?
                    .map(|row| row.map(|(key, _)| key.value().to_string()))
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|e| self.err(e))?;
                for id in &passages {
                    vectors.remove(id.as_str()).map_err(|e| self.err(e))?;
                }
            }
            for path in &batch.removals {
                files.remove(path.as_str()).map_err(|e| self.err(e))?;
            }
            let mut new_chunks: Vec<&(String, ChunkRecord)> =
                batch.upserts.iter().flat_map(|u| &u.chunks).collect();
            new_chunks.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            let mut bytes = Vec::new();
            for (id, chunk) in new_chunks {
                bytes.clear();
                serde_json::to_writer(&mut bytes, chunk)
                    .map_err(|e| Error::corrupt(&self.path, e))?;
                chunks
                    .insert(id.as_str(), bytes.as_slice())
                    .map_err(|e| self.err(e))?;
                if vectors.get(id.as_str()).map_err(|e| self.err(e))?.is_none() {
                    unembedded
                        .insert(id.as_str(), ())
                        .map_err(|e| self.err(e))?;
                }
            }
            for Upsert { path, record, .. } in &batch.upserts {
                let bytes =
                    serde_json::to_vec(record).map_err(|e| Error::corrupt(&self.path, e))?;
                files
                    .insert(path.as_str(), bytes.as_slice())
                    .map_err(|e| self.err(e))?;
            }
            for (path, record) in &batch.touches {
                let bytes =
                    serde_json::to_vec(record).map_err(|e| Error::corrupt(&self.path, e))?;
                files
                    .insert(path.as_str(), bytes.as_slice())
                    .map_err(|e| self.err(e))?;
            }
            seq = bump(&mut meta, "seq").map_err(|e| self.err(e))?;
            // Removed chunks took their vectors with them.
            bump(&mut meta, "vector_seq").map_err(|e| self.err(e))?;
            add(&mut meta, "vectored", -gone).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))?;
        Ok(seq)
    }

    /// The vector commit counter: bumped whenever the set of stored vectors may change (the
    /// vector index is tagged with it, as the text index is with [`Catalog::seq`]).
    pub fn vector_seq(&self) -> Result<u64> {
        let txn = self.begin_read()?;
        let table = txn.open_table(META).map_err(|e| self.err(e))?;
        let seq = table.get("vector_seq").map_err(|e| self.err(e))?;
        Ok(seq.map_or(0, |v| v.value()))
    }

    /// The chunks with their own vector stored.
    pub fn vectored(&self) -> Result<u64> {
        self.meta_value("vectored")
    }

    /// The vector seq the vector index last caught up with ([`Catalog::vectors_caught_up`]).
    pub fn vectors_saved(&self) -> Result<u64> {
        self.meta_value("vectors_saved")
    }

    fn meta_value(&self, key: &str) -> Result<u64> {
        let txn = self.begin_read()?;
        let table = txn.open_table(META).map_err(|e| self.err(e))?;
        let value = table.get(key).map_err(|e| self.err(e))?;
        Ok(value.map_or(0, |v| v.value()))
    }

    /// The chunks whose vectors changed since the vector index last caught up: those
    /// removed (or replaced), and those added (whose vectors are all stored now).
    pub fn pending_vectors(&self) -> Result<(Vec<String>, Vec<String>)> {
        let txn = self.begin_read()?;
        let table = txn.open_table(PENDING).map_err(|e| self.err(e))?;
        let (mut removed, mut added) = (Vec::new(), Vec::new());
        for row in table.iter().map_err(|e| self.err(e))? {
            let (key, value) = row.map_err(|e| self.err(e))?;
            match value.value() {
                ADDED => added.push(key.value().to_string()),
                _ => removed.push(key.value().to_string()),
            }
        }
        Ok((removed, added))
    }

    /// Records that the vector index caught up with vector seq `seq`, holding the
    /// `absorbed` chunks' vectors now: the pending changes are done and those vectors leave
    /// the catalog, which keeps a vector only until the vector index has it (the vector
    /// seq is not bumped).
    pub fn vectors_caught_up(&self, seq: u64, absorbed: &[String]) -> Result<()> {
        let txn = self.begin_write()?;
        {
            let mut pending = txn.open_table(PENDING).map_err(|e| self.err(e))?;
            pending.retain(|_, _| false).map_err(|e| self.err(e))?;
            let mut vectors = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
            let mut absorbed: Vec<&String> = absorbed.iter().collect();
            absorbed.sort_unstable();
            for id in absorbed {
                vectors.remove(id.as_str()).map_err(|e| self.err(e))?;
                let (lo, hi) = passage::id_range(id);
                vectors
                    .retain_in(lo.as_str()..hi.as_str(), |_, _| false)
                    .map_err(|e| self.err(e))?;
            }
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            meta.insert("vectors_saved", seq).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))
    }

    /// Gives the file's free pages back when they are most of it (more than the live pages
    /// and more than [`SPARSE_BYTES`]); true if it compacted.
    ///
    /// Why: a vector passes through the catalog once, from its embedding to the vector
    /// index's save, so a first index or a large change leaves the file about 3× its live
    /// pages (redb reuses free pages but never shrinks the file). Compacting copies only
    /// the live pages (10k chunks: 85 → 27 MB in 0.08 s), under redb's two-phase commit, so
    /// a crash during it loses nothing.
    pub fn compact_if_sparse(&mut self) -> Result<bool> {
        if matches!(self.db, Db::ReadOnly(_)) {
            return Ok(false);
        }
        let txn = self.begin_write()?;
        let stats = txn.stats().map_err(|e| self.err(e))?;
        txn.abort().map_err(|e| self.err(e))?;
        let live = stats.allocated_pages() * stats.page_size() as u64;
        let len = std::fs::metadata(&self.path)
            .map_err(|e| Error::io(&self.path, e))?
            .len();
        let free = len.saturating_sub(live);
        if free <= live || free <= SPARSE_BYTES {
            return Ok(false);
        }
        let Db::ReadWrite(db) = &mut self.db else {
            return Ok(false);
        };
        db.compact().map_err(|e| Error::catalog(&self.path, e))
    }

    /// Calls `f` with the stored vectors of these chunks, own and passages, as id and bytes
    /// (`codec`'s forms); chunks without any are skipped.
    pub fn visit_chunk_vectors(
        &self,
        chunks: &[String],
        mut f: impl FnMut(&str, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let txn = self.begin_read()?;
        let table = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
        for id in chunks {
            if let Some(value) = table.get(id.as_str()).map_err(|e| self.err(e))? {
                f(id, value.value())?;
            }
            let (lo, hi) = passage::id_range(id);
            for row in table
                .range(lo.as_str()..hi.as_str())
                .map_err(|e| self.err(e))?
            {
                let (key, value) = row.map_err(|e| self.err(e))?;
                f(key.value(), value.value())?;
            }
        }
        Ok(())
    }

    /// The chunks whose own vector is stored here (not yet in the vector index).
    pub fn complete_chunks(&self) -> Result<Vec<String>> {
        let txn = self.begin_read()?;
        let table = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in table.iter().map_err(|e| self.err(e))? {
            let (key, _) = row.map_err(|e| self.err(e))?;
            if !passage::is_passage(key.value()) {
                out.push(key.value().to_string());
            }
        }
        Ok(out)
    }

    /// `ids` split, in order: chunks with their own vector, and the rest (gone, or unembedded).
    pub fn split_embedded(&self, ids: Vec<String>) -> Result<(Vec<String>, Vec<String>)> {
        let txn = self.begin_read()?;
        let chunks = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
        let unembedded = txn.open_table(UNEMBEDDED).map_err(|e| self.err(e))?;
        let (mut embedded, mut not) = (Vec::new(), Vec::new());
        for id in ids {
            let known = chunks.get(id.as_str()).map_err(|e| self.err(e))?.is_some();
            let missing = unembedded
                .get(id.as_str())
                .map_err(|e| self.err(e))?
                .is_some();
            match known && !missing {
                true => embedded.push(id),
                false => not.push(id),
            }
        }
        Ok((embedded, not))
    }

    /// Marks unembedded every chunk counted as embedded whose own vector is neither here
    /// nor `indexed` (its vector index was lost), so the next sync embeds it again; returns
    /// how many.
    pub fn mark_lost(&self, indexed: impl Fn(&str) -> bool) -> Result<u64> {
        let txn = self.begin_write()?;
        let mut lost = 0;
        {
            let chunks = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
            let vectors = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
            let mut unembedded = txn.open_table(UNEMBEDDED).map_err(|e| self.err(e))?;
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            for row in chunks.iter().map_err(|e| self.err(e))? {
                let (key, _) = row.map_err(|e| self.err(e))?;
                let id = key.value();
                if indexed(id)
                    || unembedded.get(id).map_err(|e| self.err(e))?.is_some()
                    || vectors.get(id).map_err(|e| self.err(e))?.is_some()
                {
                    continue;
                }
                unembedded.insert(id, ()).map_err(|e| self.err(e))?;
                lost += 1;
            }
            add(&mut meta, "vectored", -lost).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))?;
        Ok(lost as u64)
    }

    /// The vectors not stored yet: each chunk's own, and with `passages` its passages'
    /// ([`passage::numbered`]), a chunk's passages before its own vector (then their
    /// centroid).
    ///
    /// A chunk whose own vector is stored is complete: the sync stores a chunk's own
    /// vector only after all its passages (`sync::embedding`), so only the chunks of the
    /// `unembedded` table are read. Whether a catalog has passages
    /// never changes: the index identity holds that choice (`Identity::passages`).
    ///
    /// A page of them: the first `limit` chunks, in id order, whose ids come after `after`.
    pub fn chunks_without_vectors(
        &self,
        passages: bool,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Unembedded>> {
        let txn = self.begin_read()?;
        let chunks = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
        let vectors = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
        let unembedded_ids = txn.open_table(UNEMBEDDED).map_err(|e| self.err(e))?;
        let has =
            |id: &str| -> Result<bool> { Ok(vectors.get(id).map_err(|e| self.err(e))?.is_some()) };
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let page = unembedded_ids
            .range::<&str>((from, Bound::Unbounded))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in page.take(limit) {
            let (key, _) = row.map_err(|e| self.err(e))?;
            let id = key.value();
            let Some(value) = chunks.get(id).map_err(|e| self.err(e))? else {
                return Err(Error::corrupt(
                    &self.path,
                    format!("unembedded chunk {id:?} is not in the catalog"),
                ));
            };
            let chunk: ChunkRecord = self.decode(id, value.value())?;
            out.extend(unembedded(id, chunk, passages, &mut |id| has(id))?);
        }
        Ok(out)
    }

    /// How many chunks have no vector of their own yet.
    pub fn unembedded_count(&self) -> Result<u64> {
        let txn = self.begin_read()?;
        let unembedded = txn.open_table(UNEMBEDDED).map_err(|e| self.err(e))?;
        unembedded.len().map_err(|e| self.err(e))
    }

    /// Stores vectors of existing chunks and their passages (ids whose chunk is no longer in
    /// the catalog are skipped) and
    /// returns the new vector seq (the text-facing `seq` is unchanged: no chunk changed).
    pub fn put_vectors(&self, items: &[(String, Vec<f32>)]) -> Result<u64> {
        let txn = self.begin_write()?;
        let seq;
        {
            let chunks = txn.open_table(CHUNKS).map_err(|e| self.err(e))?;
            let mut vectors = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            let mut pending = txn.open_table(PENDING).map_err(|e| self.err(e))?;
            let mut unembedded = txn.open_table(UNEMBEDDED).map_err(|e| self.err(e))?;
            let mut added = 0;
            for (id, vector) in items {
                let chunk = passage::chunk_of(id);
                if chunks.get(chunk).map_err(|e| self.err(e))?.is_none() {
                    continue;
                }
                let bytes = codec::encode_for(id, vector);
                let old = vectors
                    .insert(id.as_str(), bytes.as_slice())
                    .map_err(|e| self.err(e))?;
                // A chunk's own vector is stored after its passages: it completes the chunk.
                if chunk == id {
                    added += i64::from(old.is_none());
                    pending.insert(chunk, ADDED).map_err(|e| self.err(e))?;
                    unembedded.remove(chunk).map_err(|e| self.err(e))?;
                }
            }
            seq = bump(&mut meta, "vector_seq").map_err(|e| self.err(e))?;
            add(&mut meta, "vectored", added).map_err(|e| self.err(e))?;
        }
        txn.commit().map_err(|e| self.err(e))?;
        Ok(seq)
    }

    /// The stored vectors of these chunks, in order (`None` where a chunk has none).
    pub fn vectors_by_ids(&self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        let txn = self.begin_read()?;
        let table = txn.open_table(VECTORS).map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let value = table.get(*id).map_err(|e| self.err(e))?;
            out.push(value.and_then(|v| codec::decode(v.value())));
        }
        Ok(out)
    }
}

/// Adds `delta` to counter `key` (never below 0).
fn add(
    meta: &mut redb::Table<&str, u64>,
    key: &str,
    delta: i64,
) -> std::result::Result<(), redb::StorageError> {
    let current = meta.get(key)?.map_or(0, |v| v.value());
    meta.insert(key, current.saturating_add_signed(delta))?;
    Ok(())
}

fn bump(
    meta: &mut redb::Table<&str, u64>,
    key: &str,
) -> std::result::Result<u64, redb::StorageError> {
    let current = meta.get(key)?.map_or(0, |v| v.value());
    meta.insert(key, current + 1)?;
    Ok(current + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotation::Annotations;

    fn chunk(text: &str) -> ChunkRecord {
        ChunkRecord {
            path: "memory/a.md".into(),
            source: "memory".into(),
            start_line: 1,
            end_line: text.lines().count(),
            hash: crate::digest::sha256_hex(text.as_bytes()),
            text: text.into(),
            title: "a".into(),
            annotations: Annotations::default(),
        }
    }

    #[test]
    fn passages_are_embedded_with_their_chunk_and_removed_with_it() {
        let tmp = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&tmp.path().join("catalog.redb")).unwrap();
        let long = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight";
        let chunks = vec![
            ("aa".to_string(), chunk(long)),
            ("bb".to_string(), chunk("short")),
        ];
        let record = FileRecord {
            source: "memory".into(),
            hash: String::new(),
            size: 0,
            mtime_ns: 0,
            chunk_ids: vec!["aa".into(), "bb".into()],
            lossy: false,
        };
        let upsert = Upsert {
            path: "memory/a.md".into(),
            record,
            chunks,
        };
        let batch = Batch {
            upserts: vec![upsert],
            ..Batch::default()
        };
        catalog.commit(&batch, &|_| None).unwrap();
        let page = |passages, after, limit| -> Vec<String> {
            let missing = catalog
                .chunks_without_vectors(passages, after, limit)
                .unwrap();
            missing.into_iter().map(|m| m.id).collect()
        };
        let ids = |passages| page(passages, None, usize::MAX);
        assert_eq!(ids(false), ["aa", "bb"]);
        assert_eq!(catalog.unembedded_count().unwrap(), 2);
        // A chunk's passages come before its own vector: a sync cut short never leaves a
        // chunk that looks embedded without them.
        assert_eq!(ids(true), ["aa#1", "aa#2", "aa#3", "aa#4", "aa", "bb"]);
        // Page by page, a chunk at a time: each chunk with its passages.
        assert_eq!(page(true, None, 1), ["aa#1", "aa#2", "aa#3", "aa#4", "aa"]);
        assert_eq!(page(true, Some("aa"), 1), ["bb"]);
        assert!(page(true, Some("bb"), 1).is_empty());
        let missing = catalog
            .chunks_without_vectors(true, None, usize::MAX)
            .unwrap();
        assert_eq!(missing[1].text, "three\nfour");
        assert_eq!(missing[1].title, "a");
        // The chunk with passages is their centroid (it knows how many), the other embedded.
        let counts: Vec<usize> = missing.iter().map(|m| m.passages).collect();
        assert_eq!(counts, [0, 0, 0, 0, 4, 0]);
        let vectors: Vec<(String, Vec<f32>)> = ids(true)
            .into_iter()
            .chain(["cc#1".to_string()]) // no such chunk: skipped
            .map(|id| (id, vec![1.0, 0.0]))
            .collect();
        // A chunk with its own vector is complete, whatever its passages (the sync stores
        // its own vector last).
        catalog.put_vectors(&vectors[4..]).unwrap();
        assert!(ids(true).is_empty());
        // Both chunks are counted and pending for the vector index, once each.
        catalog.put_vectors(&vectors).unwrap();
        assert_eq!(catalog.vectored().unwrap(), 2);
        let pending = (vec![], vec!["aa".to_string(), "bb".to_string()]);
        assert_eq!(catalog.pending_vectors().unwrap(), pending);
        let mut with_passages = Vec::new();
        catalog
            .visit_chunk_vectors(&["aa".to_string()], |id, _| {
                with_passages.push(id.to_string());
                Ok(())
            })
            .unwrap();
        assert_eq!(with_passages, ["aa", "aa#1", "aa#2", "aa#3", "aa#4"]);
        let stored = || {
            let ids = ["aa", "aa#1", "aa#2", "aa#3", "aa#4", "bb"];
            let found = catalog.vectors_by_ids(&ids).unwrap();
            ids.iter()
                .zip(found)
                .filter_map(|(id, v)| v.map(|_| id.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(stored(), ["aa", "aa#1", "aa#2", "aa#3", "aa#4", "bb"]);
        assert_eq!(catalog.complete_chunks().unwrap(), ["aa", "bb"]);
        // Once the vector index has them, the catalog keeps them no more.
        let seq = catalog.vector_seq().unwrap();
        catalog.vectors_caught_up(seq, &["aa".to_string()]).unwrap();
        assert_eq!(stored(), ["bb"]);
        assert_eq!(catalog.vectors_saved().unwrap(), seq);
        assert_eq!(catalog.pending_vectors().unwrap(), (vec![], vec![]));
        assert_eq!(catalog.vectored().unwrap(), 2);
        let (_, not_embedded) = catalog
            .split_embedded(vec!["aa".into(), "zz".into()])
            .unwrap();
        assert_eq!(not_embedded, ["zz"]);
        // A vector index that lost "aa": it is embedded again by the next sync.
        assert_eq!(catalog.mark_lost(|_| false).unwrap(), 1);
        assert_eq!(ids(false), ["aa"]);
        assert_eq!(catalog.vectored().unwrap(), 1);
        let removal = Batch {
            removals: vec!["memory/a.md".into()],
            ..Batch::default()
        };
        let old = |_: &str| Some(vec!["aa".to_string(), "bb".to_string()]);
        catalog.commit(&removal, &old).unwrap();
        assert!(stored().is_empty());
        assert_eq!(catalog.vectored().unwrap(), 0);
        // Only a chunk the vector index may hold is removed from it.
        let pending = (vec!["bb".to_string()], vec![]);
        assert_eq!(catalog.pending_vectors().unwrap(), pending);
        let missing = catalog.chunks_without_vectors(true, None, usize::MAX);
        assert!(missing.unwrap().is_empty());
        assert_eq!(catalog.unembedded_count().unwrap(), 0);
    }

    #[test]
    fn the_vectors_passing_through_leave_no_free_pages_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("catalog.redb");
        let mut catalog = Catalog::open(&path).unwrap();
        // 8,000 f32 vectors of 768 dimensions: 24 MB, more than `SPARSE_BYTES`.
        let ids: Vec<String> = (0..8_000).map(|n| format!("c{n:05}")).collect();
        let upsert = Upsert {
            path: "memory/a.md".into(),
            record: FileRecord {
                source: "memory".into(),
                hash: String::new(),
                size: 0,
                mtime_ns: 0,
                chunk_ids: ids.clone(),
                lossy: false,
            },
            chunks: ids.iter().map(|id| (id.clone(), chunk("short"))).collect(),
        };
        let batch = Batch {
            upserts: vec![upsert],
            ..Batch::default()
        };
        catalog.commit(&batch, &|_| None).unwrap();
        let vectors: Vec<(String, Vec<f32>)> =
            ids.iter().map(|id| (id.clone(), vec![0.5; 768])).collect();
        catalog.put_vectors(&vectors).unwrap();
        let len = || std::fs::metadata(&path).unwrap().len();
        // Live pages are not free pages.
        assert!(!catalog.compact_if_sparse().unwrap());
        let full = len();
        catalog
            .vectors_caught_up(catalog.vector_seq().unwrap(), &ids)
            .unwrap();
        assert_eq!(len(), full, "redb keeps the freed pages in the file");
        assert!(catalog.compact_if_sparse().unwrap());
        assert!(len() < full / 4, "{} of {full} bytes", len());
        assert!(!catalog.compact_if_sparse().unwrap());
        assert_eq!(catalog.chunk_count().unwrap(), 8_000);
        assert_eq!(catalog.vectored().unwrap(), 8_000);
    }
}
