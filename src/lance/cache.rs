//! The embedding cache agents share, `<uri>/.shared/embedding_codes`: a sync looks its
//! texts up by key (the embedder's fingerprint × the text's hash) before embedding them
//! and adds what it embedded, so agents with the same notes embed them once. What a sync
//! adds waits in memory until its commit (or `PENDING_ROWS` entries) and goes in as one
//! append.
//!
//! **Its forms.** An entry holds its vector in `crate::codec`'s bytes, as the local store's
//! cache does: a passage's in int8, a quarter of f32 (a chunk's passages are most of its
//! entries), a chunk's own in f32. A passage's vector found here is the one the agent's
//! tables keep anyway (`passages_<g>` hold int8 codes). memoria before this layout wrote
//! `embedding_cache`, every vector in f32: its entries are still found (the keys the
//! current table lacks are looked up there, while it exists), and it is no longer written.
//!
//! **At scale.** The table grows with every agent's notes (a thousand agents of a thousand
//! chunks: about seven million rows, passages included), so no sync may read all of it:
//!
//! - An append, not a merge on the key, which joins the new rows with every stored key.
//!   The sync looked its keys up before embedding, so it appends only keys it did not
//!   find; two nodes embedding one text at once both append it, and a lookup takes either
//!   copy (the same embedder's vector of the same text).
//! - A B-tree index on `key` from `INDEX_ROWS` rows (see `indexes`); each time as many
//!   rows have come in since, they get an index segment of their own, and `SEGMENTS`
//!   segments are merged into one ([`keep_indexed`]). A lookup reads the index and the
//!   rows it names, and scans only the rows no segment holds yet.
//! - Few fragments: each write adds a fragment, and every commit reads and rewrites the
//!   manifest that lists them (1,775 fragments after 600 agents, a 150 KB manifest, a sync
//!   3.6 times slower than the first). Before the rows that came in since the last index
//!   update get their segment, they are compacted into fragments of `index_rows` rows
//!   ([`compact`]): written twice, then never again, for they are not compacted with
//!   indexed fragments after (so the key index is never remapped).
//! - A writer that found no table at its first lookup (the fleet's first sync) does not
//!   look in the one it creates: it holds nothing but the writer's own entries, which it
//!   did not find before embedding them, and a lookup costs more as the table grows (a
//!   sync of a hundred thousand chunks lists its texts a page at a time and spent 42 s of
//!   335 looking its later pages up in what its earlier ones wrote). Other nodes' entries
//!   made meanwhile are missed, as they are by a lookup made before they were written.
//! - The keys first: a lookup reads the key column and the found rows' ids, then only
//!   those rows' vectors. One query for both decoded the vector of every row it scanned
//!   (LanceDB reads a binary or list column with the filter's column).

use std::collections::HashMap;

use arrow_array::RecordBatch;
use lancedb::query::{QueryBase, Select};
use lancedb::table::{CompactionOptions, Duration, OptimizeAction, OptimizeOptions};
use lancedb::{Connection, Table};

use super::indexes::{btree, index_column};
use super::rows::{self, is_in, reader_of};
use super::tables::{block, collect, prune, runtime_error, PENDING_ROWS};
use crate::codec;
use crate::error::{Error, Result};

/// The shared cache's table.
const CACHE: &str = "embedding_codes";

/// The shared cache as memoria wrote it before [`CACHE`] (module docs): read, not written.
const EARLIER: &str = "embedding_cache";

/// Segments of the key index past which they are merged into one.
const SEGMENTS: usize = 8;

/// How long the cache's old versions are kept: a lookup reads the latest version, so only
/// a lookup under way when a version is replaced still reads it.
const KEPT: Duration = Duration::minutes(10);

/// Keys looked up in one query: each scans the rows the key index does not hold yet, so
/// a sync's lookups (4,096 at a time) are one query each.
const KEYS_PER_QUERY: usize = 4096;

/// One writer's view of the shared cache.
pub(super) struct SharedCache {
    /// The agent's location (errors name it).
    location: String,
    /// The database agents share.
    db: Connection,
    /// The cache's table; `Some(None)` when it does not exist yet; `None` before a look.
    table: Option<Option<Table>>,
    /// [`EARLIER`]'s table, as `table`.
    earlier: Option<Option<Table>>,
    /// Entries not written yet, by key, in `crate::codec`'s bytes.
    pending: HashMap<String, Vec<u8>>,
    /// Rows from which the key is indexed, and rows added since the index's last update
    /// that bring it up to date.
    index_rows: u64,
    /// Whether the table existed when this writer first looked keys up; `None` before.
    existed: Option<bool>,
}

impl SharedCache {
    pub(super) fn new(location: &str, db: Connection, index_rows: u64) -> SharedCache {
        SharedCache {
            location: location.to_string(),
            db,
            table: None,
            earlier: None,
            pending: HashMap::new(),
            index_rows,
            existed: None,
        }
    }

    fn fail(&self, message: String) -> Error {
        Error::Store {
            location: self.location.clone(),
            message,
        }
    }

    /// The cache's table; `None` before its first entry.
    fn table(&mut self) -> Result<Option<Table>> {
        let (location, db) = (&self.location, &self.db);
        opened(&mut self.table, || open(location, db, CACHE))
    }

    /// [`EARLIER`]'s table, when an earlier memoria left one.
    fn earlier(&mut self) -> Result<Option<Table>> {
        let (location, db) = (&self.location, &self.db);
        opened(&mut self.earlier, || open(location, db, EARLIER))
    }

    /// The vectors cached for `keys`, in order (pending or written).
    pub(super) fn get(&mut self, keys: &[String]) -> Result<Vec<Option<Vec<f32>>>> {
        let unwritten: Vec<&str> = keys
            .iter()
            .map(String::as_str)
            .filter(|key| !self.pending.contains_key(*key))
            .collect();
        let mut found = self.written(&unwritten)?;
        Ok(keys
            .iter()
            .map(|key| match self.pending.get(key) {
                Some(bytes) => codec::decode(bytes),
                None => found.remove(key),
            })
            .collect())
    }

    /// The written entries of `keys`: those the table holds, then those only [`EARLIER`]'s
    /// does.
    fn written(&mut self, keys: &[&str]) -> Result<HashMap<String, Vec<f32>>> {
        let mut found = HashMap::new();
        if keys.is_empty() {
            return Ok(found);
        }
        let table = self.table()?;
        let existed = *self.existed.get_or_insert(table.is_some());
        if let Some(table) = table.filter(|_| existed) {
            for batch in self.lookup(table, keys, "codes")? {
                let keys = rows::text(&batch, "key").map_err(|m| self.fail(m))?;
                let codes = rows::binary(&batch, "codes").map_err(|m| self.fail(m))?;
                for (key, bytes) in keys.into_iter().zip(codes) {
                    let vector = codec::decode(&bytes)
                        .ok_or_else(|| self.fail(format!("cache entry {key}: not a vector")))?;
                    found.insert(key, vector);
                }
            }
        }
        let missing: Vec<&str> = keys
            .iter()
            .copied()
            .filter(|key| !found.contains_key(*key))
            .collect();
        if missing.is_empty() {
            return Ok(found);
        }
        if let Some(table) = self.earlier()? {
            for batch in self.lookup(table, &missing, "vector")? {
                let keys = rows::text(&batch, "key").map_err(|m| self.fail(m))?;
                let vectors = rows::vectors(&batch, "vector").map_err(|m| self.fail(m))?;
                found.extend(keys.into_iter().zip(vectors));
            }
        }
        Ok(found)
    }

    /// The rows of `table` that hold `keys`, with their `column` (module docs: the keys
    /// first, then the found rows' values).
    fn lookup(
        &self,
        table: Table,
        keys: &[&str],
        column: &'static str,
    ) -> Result<Vec<RecordBatch>> {
        // Other nodes' entries since the table was opened, and a version not pruned.
        let latest = table.clone();
        block(
            &self.location,
            async move { latest.checkout_latest().await },
        )?;
        let mut out = Vec::new();
        for group in keys.chunks(KEYS_PER_QUERY) {
            let (table, filter) = (table.clone(), is_in("key", group));
            out.extend(block(&self.location, async move {
                let query = table
                    .query()
                    .only_if(filter)
                    .select(Select::columns(&["key"]))
                    .with_row_id();
                let mut ids = Vec::new();
                for batch in collect(query).await? {
                    ids.extend(rows::unsigned(&batch, "_rowid").map_err(runtime_error)?);
                }
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                collect(
                    table
                        .take_row_ids(ids)
                        .select(Select::columns(&["key", column])),
                )
                .await
            })?);
        }
        Ok(out)
    }

    /// Adds `items` (key, chunk or passage id, vector) in their forms (module docs);
    /// writes when [`PENDING_ROWS`] wait.
    pub(super) fn put(&mut self, items: &[(String, String, Vec<f32>)]) -> Result<()> {
        for (key, id, vector) in items {
            self.pending
                .entry(key.clone())
                .or_insert_with(|| codec::encode_for(id, vector));
        }
        if self.pending.len() >= PENDING_ROWS {
            self.write()?;
        }
        Ok(())
    }

    /// Writes the pending entries in one append.
    pub(super) fn write(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let mut entries: Vec<(&str, &[u8])> = pending
            .iter()
            .map(|(key, bytes)| (key.as_str(), bytes.as_slice()))
            .collect();
        entries.sort_unstable_by_key(|(key, _)| *key);
        let batch = rows::cache_batch(&entries);
        let table = self.table()?;
        let db = self.db.clone();
        let index_rows = self.index_rows;
        let table = block(&self.location, async move {
            let table = match table {
                Some(table) => table,
                None => match db.create_table(CACHE, batch.clone()).execute().await {
                    Ok(table) => return Ok(table),
                    // Another node created it first: add to theirs.
                    Err(_) => db.open_table(CACHE).execute().await?,
                },
            };
            table.add(reader_of(batch)).execute().await?;
            // Upkeep, not the sync's work: another node's update at the same moment may
            // win the commit, and this one's waits for the next write.
            if let Err(err) = keep_indexed(&table, index_rows).await {
                tracing::warn!("the shared embedding cache's key index: {err}");
            }
            Ok(table)
        })?;
        self.table = Some(Some(table));
        Ok(())
    }
}

/// The table `slot` holds, looked up by `open` the first time.
fn opened(
    slot: &mut Option<Option<Table>>,
    open: impl FnOnce() -> Result<Option<Table>>,
) -> Result<Option<Table>> {
    if let Some(table) = slot {
        return Ok(table.clone());
    }
    let table = open()?;
    *slot = Some(table.clone());
    Ok(table)
}

/// Table `name` of the shared database `db`; `None` when it does not exist.
fn open(location: &str, db: &Connection, name: &'static str) -> Result<Option<Table>> {
    let db = db.clone();
    block(location, async move {
        match db.open_table(name).execute().await {
            Ok(table) => Ok(Some(table)),
            Err(lancedb::Error::TableNotFound { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    })
}

/// Indexes the cache's key from `index_rows` rows. When as many have come in since, they
/// are compacted ([`compact`]) and get an index segment of their own, and every
/// [`SEGMENTS`] segments are merged into one: an update that rewrote the whole index each
/// time wrote its size again per 50,000 rows (1.8 GB of index files after 240 agents). The
/// versions older than [`KEPT`] are pruned then (a lookup reads the latest version).
async fn keep_indexed(table: &Table, index_rows: u64) -> lancedb::Result<()> {
    let indices = table.list_indices().await?;
    let Some(index) = indices.iter().find(|i| i.columns == ["key"]) else {
        if table.count_rows(None).await? as u64 >= index_rows {
            compact(table, index_rows).await?;
            index_column(table, "key", index_rows, btree).await?;
        }
        return Ok(());
    };
    let Some(stats) = table.index_stats(&index.name).await? else {
        return Ok(());
    };
    if (stats.num_unindexed_rows as u64) < index_rows {
        return Ok(());
    }
    compact(table, index_rows).await?;
    let segments = stats.num_indices.unwrap_or(1) as usize;
    let options = match segments + 1 >= SEGMENTS {
        true => OptimizeOptions::merge(segments),
        false => OptimizeOptions::append(),
    };
    table.optimize(OptimizeAction::Index(options)).await?;
    prune(table, KEPT).await
}

/// Rewrites the small fragments the writes left into fragments of `index_rows` rows. Called
/// before the rows are indexed, it rewrites only those: a fragment of `index_rows` rows is
/// no candidate, and LanceDB never compacts indexed fragments with unindexed ones or with
/// another index segment's (the one small fragment a compaction leaves behind stays as it
/// is).
async fn compact(table: &Table, index_rows: u64) -> lancedb::Result<()> {
    let options = CompactionOptions {
        target_rows_per_fragment: index_rows as usize,
        ..CompactionOptions::default()
    };
    table
        .optimize(OptimizeAction::Compact {
            options,
            remap_options: None,
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache's key gets its index once the table holds `index_rows` rows; as many
    /// rows later they get a segment of their own, and the segments are merged into one
    /// when they reach `SEGMENTS`; the small fragments of the writes are compacted into
    /// one of `index_rows` rows before they are indexed; every lookup finds every key
    /// (indexed or not yet), through the same node's view or a new one's.
    #[test]
    fn the_shared_cache_indexes_and_compacts_as_it_grows_and_finds_every_entry() {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().display().to_string();
        let connect = |uri: String| {
            block(&uri.clone(), async move {
                lancedb::connect(&uri).execute().await
            })
            .unwrap()
        };
        let vector = |n: usize| vec![n as f32, 1.0, -(n as f32)];
        let key = |n: usize| format!("key-{n:03}");
        let mut cache = SharedCache::new(&uri, connect(uri.clone()), 8);
        // (unindexed rows, index segments, fragments) after each step: eight entries, in
        // two writes (two fragments) of five and three.
        let mut seen = Vec::new();
        for step in 0..10 {
            for range in [step * 8..step * 8 + 5, step * 8 + 5..step * 8 + 8] {
                let items: Vec<(String, String, Vec<f32>)> =
                    range.map(|n| (key(n), String::new(), vector(n))).collect();
                cache.put(&items).unwrap();
                cache.write().unwrap();
            }
            let table = cache.table().unwrap().unwrap();
            seen.push(
                block(&uri.clone(), async move {
                    let fragments = table.stats().await?.fragment_stats.num_fragments;
                    let mut state = None;
                    for index in table.list_indices().await? {
                        assert_eq!(index.columns, ["key"]);
                        let stats = table.index_stats(&index.name).await?.unwrap();
                        state = Some((stats.num_unindexed_rows, stats.num_indices));
                    }
                    Ok((state, fragments))
                })
                .unwrap(),
            );
        }
        let step = |segments: u32, fragments: usize| (Some((0, Some(segments))), fragments);
        assert_eq!(
            seen,
            [
                step(1, 1),
                step(2, 2),
                step(3, 3),
                step(4, 4),
                step(5, 5),
                step(6, 6),
                step(7, 7),
                step(1, 8),
                step(2, 9),
                step(3, 10)
            ]
        );
        let keys: Vec<String> = (0..81).map(key).collect();
        let mut fresh = SharedCache::new(&uri, connect(uri.clone()), 8);
        for cache in [&mut cache, &mut fresh] {
            let found = cache.get(&keys).unwrap();
            let want: Vec<Option<Vec<f32>>> =
                (0..81).map(|n| (n < 80).then(|| vector(n))).collect();
            assert_eq!(found, want);
        }
    }

    /// A passage's vector is cached in int8 and a chunk's own in f32 (`crate::codec`), and
    /// an entry only the cache of an earlier memoria (`embedding_cache`, f32) holds is
    /// still found.
    #[test]
    fn entries_keep_their_forms_and_the_earlier_cache_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let uri = dir.path().display().to_string();
        let db = block(&uri.clone(), {
            let uri = uri.clone();
            async move { lancedb::connect(&uri).execute().await }
        })
        .unwrap();
        let old = [0.5f32, -1.0, 2.0];
        let earlier = rows::earlier_cache_batch(&[("old", &old)]);
        block(&uri.clone(), {
            let db = db.clone();
            async move { db.create_table(EARLIER, earlier).execute().await }
        })
        .unwrap();
        let vector = [0.25f32, -0.5, 1.0];
        let passage = crate::passage::id("chunk", 1);
        let mut cache = SharedCache::new(&uri, db, 1_000);
        let items = [
            ("own".to_string(), "chunk".to_string(), vector.to_vec()),
            ("passage".to_string(), passage, vector.to_vec()),
        ];
        cache.put(&items).unwrap();
        let int8 = codec::decode(&codec::encode_int8(&vector));
        let want = [Some(old.to_vec()), Some(vector.to_vec()), int8, None];
        let keys = ["old", "own", "passage", "none"].map(String::from);
        // Pending, then written: through a new view; the writer that looked before the
        // table existed does not look in the one it made (module docs).
        assert_eq!(cache.get(&keys).unwrap(), want);
        cache.write().unwrap();
        let db = cache.db.clone();
        assert_eq!(SharedCache::new(&uri, db, 1_000).get(&keys).unwrap(), want);
        let unseen = [Some(old.to_vec()), None, None, None];
        assert_eq!(cache.get(&keys).unwrap(), unseen);
        let table = cache.table().unwrap().unwrap();
        let stored = block(&uri, async move {
            collect(table.query().select(Select::columns(&["key", "codes"]))).await
        })
        .unwrap();
        let mut lengths: Vec<(String, usize)> = stored
            .iter()
            .flat_map(|b| {
                rows::text(b, "key")
                    .unwrap()
                    .into_iter()
                    .zip(rows::binary(b, "codes").unwrap())
            })
            .map(|(key, bytes)| (key, bytes.len()))
            .collect();
        lengths.sort();
        assert_eq!(
            lengths,
            [("own".to_string(), 12), ("passage".to_string(), 9)]
        );
    }
}
