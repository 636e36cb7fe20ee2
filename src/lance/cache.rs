//! The embedding cache agents share, `<uri>/.shared/embedding_cache`: a sync looks its
//! texts up by key (the embedder's fingerprint × the text's hash) before embedding them
//! and adds what it embedded, so agents with the same notes embed them once. What a sync
//! adds waits in memory until its commit (or `PENDING_ROWS` entries) and goes in as one
//! append.
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
//! - The keys first: a lookup reads the key column and the found rows' ids, then only
//!   those rows' vectors. One query for both decoded the vector of every row it scanned
//!   (LanceDB reads a list column of any width with the filter's column).

use std::collections::HashMap;

use lancedb::query::{QueryBase, Select};
use lancedb::table::{Duration, OptimizeAction, OptimizeOptions};
use lancedb::{Connection, Table};

use super::indexes::{btree, index_column};
use super::rows::{self, is_in, reader_of};
use super::tables::{block, collect, prune, runtime_error, PENDING_ROWS};
use crate::error::{Error, Result};

/// The shared cache's table.
const CACHE: &str = "embedding_cache";

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
    /// Entries not written yet, by key.
    pending: HashMap<String, Vec<f32>>,
    /// Rows from which the key is indexed, and rows added since the index's last update
    /// that bring it up to date.
    index_rows: u64,
}

impl SharedCache {
    pub(super) fn new(location: &str, db: Connection, index_rows: u64) -> SharedCache {
        SharedCache {
            location: location.to_string(),
            db,
            table: None,
            pending: HashMap::new(),
            index_rows,
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
        if let Some(table) = &self.table {
            return Ok(table.clone());
        }
        let db = self.db.clone();
        let table = block(&self.location, async move {
            match db.open_table(CACHE).execute().await {
                Ok(table) => Ok(Some(table)),
                Err(lancedb::Error::TableNotFound { .. }) => Ok(None),
                Err(err) => Err(err),
            }
        })?;
        self.table = Some(table.clone());
        Ok(table)
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
            .map(|key| self.pending.get(key).cloned().or_else(|| found.remove(key)))
            .collect())
    }

    /// The written entries of `keys` (those the table holds).
    fn written(&mut self, keys: &[&str]) -> Result<HashMap<String, Vec<f32>>> {
        let mut found = HashMap::new();
        if keys.is_empty() {
            return Ok(found);
        }
        let Some(table) = self.table()? else {
            return Ok(found);
        };
        // Other nodes' entries since the table was opened, and a version not pruned.
        let latest = table.clone();
        block(
            &self.location,
            async move { latest.checkout_latest().await },
        )?;
        for group in keys.chunks(KEYS_PER_QUERY) {
            let (table, filter) = (table.clone(), is_in("key", group));
            let batches = block(&self.location, async move {
                // The keys first, then the vectors of the rows found (module docs).
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
                        .select(Select::columns(&["key", "vector"])),
                )
                .await
            })?;
            for batch in &batches {
                let keys = rows::text(batch, "key").map_err(|m| self.fail(m))?;
                let vectors = rows::vectors(batch, "vector").map_err(|m| self.fail(m))?;
                found.extend(keys.into_iter().zip(vectors));
            }
        }
        Ok(found)
    }

    /// Adds `items` (key, text, vector); writes when [`PENDING_ROWS`] wait.
    pub(super) fn put(&mut self, items: &[(String, String, Vec<f32>)]) -> Result<()> {
        for (key, _, vector) in items {
            self.pending
                .entry(key.clone())
                .or_insert_with(|| vector.clone());
        }
        if self.pending.len() >= PENDING_ROWS {
            self.write()?;
        }
        Ok(())
    }

    /// Writes the pending entries in one merge.
    pub(super) fn write(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let mut entries: Vec<(&str, &[f32])> = pending
            .iter()
            .map(|(key, v)| (key.as_str(), v.as_slice()))
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

/// Indexes the cache's key from `index_rows` rows. When as many have come in since, they
/// get an index segment of their own, and every [`SEGMENTS`] segments are merged into one:
/// an update that rewrote the whole index each time wrote its size again per 50,000 rows
/// (1.8 GB of index files after 240 agents). The versions older than [`KEPT`] are pruned
/// then (a lookup reads the latest version).
async fn keep_indexed(table: &Table, index_rows: u64) -> lancedb::Result<()> {
    let indices = table.list_indices().await?;
    let Some(index) = indices.iter().find(|i| i.columns == ["key"]) else {
        index_column(table, "key", index_rows, btree).await?;
        return Ok(());
    };
    let Some(stats) = table.index_stats(&index.name).await? else {
        return Ok(());
    };
    if (stats.num_unindexed_rows as u64) < index_rows {
        return Ok(());
    }
    let segments = stats.num_indices.unwrap_or(1) as usize;
    let options = match segments + 1 >= SEGMENTS {
        true => OptimizeOptions::merge(segments),
        false => OptimizeOptions::append(),
    };
    table.optimize(OptimizeAction::Index(options)).await?;
    prune(table, KEPT).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache's key gets its index once the table holds `index_rows` rows; as many
    /// rows later they get a segment of their own, and the segments are merged into one
    /// when they reach `SEGMENTS`; every lookup finds every key (indexed or not yet),
    /// through the same node's view or a new one's.
    #[test]
    fn the_shared_cache_indexes_its_keys_as_it_grows_and_finds_every_entry() {
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
        // (unindexed rows, index segments) after each write of eight entries.
        let mut seen = Vec::new();
        for write in 0..10 {
            let items: Vec<(String, String, Vec<f32>)> = (write * 8..write * 8 + 8)
                .map(|n| (key(n), String::new(), vector(n)))
                .collect();
            cache.put(&items).unwrap();
            cache.write().unwrap();
            let table = cache.table().unwrap().unwrap();
            seen.push(
                block(&uri.clone(), async move {
                    let mut state = None;
                    for index in table.list_indices().await? {
                        assert_eq!(index.columns, ["key"]);
                        let stats = table.index_stats(&index.name).await?.unwrap();
                        state = Some((stats.num_unindexed_rows, stats.num_indices));
                    }
                    Ok(state)
                })
                .unwrap(),
            );
        }
        let segments = |n: u32| Some((0, Some(n)));
        assert_eq!(
            seen,
            [
                None,
                segments(1),
                segments(2),
                segments(3),
                segments(4),
                segments(5),
                segments(6),
                segments(7),
                segments(1),
                segments(2)
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
}
