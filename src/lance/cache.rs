//! The embedding cache agents share, `<uri>/.shared/embedding_cache`: a sync looks its
//! texts up by key (the embedder's fingerprint × the text's hash) before embedding them
//! and adds what it embedded, so agents with the same notes embed them once. What a sync
//! adds waits in memory until its commit (or `PENDING_ROWS` entries) and goes in as one
//! merge, in which an entry another node wrote meanwhile stays theirs.

use std::collections::HashMap;

use lancedb::query::QueryBase;
use lancedb::{Connection, Table};

use super::reader::IDS_PER_QUERY;
use super::rows::{self, is_in, reader_of};
use super::tables::{block, collect, PENDING_ROWS};
use crate::error::{Error, Result};

/// The shared cache's table.
const CACHE: &str = "embedding_cache";

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
}

impl SharedCache {
    pub(super) fn new(location: &str, db: Connection) -> SharedCache {
        SharedCache {
            location: location.to_string(),
            db,
            table: None,
            pending: HashMap::new(),
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
        for group in keys.chunks(IDS_PER_QUERY) {
            let (table, filter) = (table.clone(), is_in("key", group));
            let batches = block(&self.location, async move {
                collect(table.query().only_if(filter)).await
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
        let table = block(&self.location, async move {
            let table = match table {
                Some(table) => table,
                None => match db.create_table(CACHE, batch.clone()).execute().await {
                    Ok(table) => return Ok(table),
                    // Another node created it first: merge into theirs.
                    Err(_) => db.open_table(CACHE).execute().await?,
                },
            };
            let mut merge = table.merge_insert(&["key"]);
            merge.when_not_matched_insert_all();
            merge.execute(reader_of(batch)).await?;
            Ok(table)
        })?;
        self.table = Some(Some(table));
        Ok(())
    }
}
