//! One sync's writes into LanceDB, under the agent's lease: the generation's tables
//! brought back to what the manifest names, batches of file changes, vectors, the shared
//! embedding cache, the full-text index, and the manifest row that commits.

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow_array::RecordBatch;
use lancedb::index::scalar::FtsIndexBuilder;
use lancedb::index::Index;
use lancedb::query::{QueryBase, Select};
use lancedb::table::{AddDataMode, CompactionOptions, Duration, OptimizeAction};
use lancedb::{Connection, Table};

use super::cache::SharedCache;
use super::indexes::{
    btree, drop_other_kind, index_column, update_indexes, vector_index, VECTOR_INDEX,
};
use super::lease::Lease;
use super::reader::{vectors_by_ids, IDS_PER_QUERY};
use super::rows::{self, is_in};
use super::tables::{
    block, collect, open_at, prune, read_committed, table_name, Committed, PENDING_ROWS, TABLES,
};
use crate::error::{Error, Result};
use crate::passage;
use crate::store::{
    unembedded, Batch, Begun, ChunkRecord, FileRecord, Manifest, Unembedded, Writer,
};

/// The generation a writer has open.
struct Open {
    generation: u64,
    rebuilt: bool,
    files_table: Table,
    chunks_table: Table,
    vectors: Option<Table>,
    passages: Option<Table>,
    files: BTreeMap<String, FileRecord>,
    /// Ids of the chunks held.
    chunks: HashSet<String>,
    /// Ids of the vectors held: chunks' own and passages', written or pending.
    embedded: HashSet<String>,
    /// Vectors not written yet, by id ([`PENDING_ROWS`]).
    pending: HashMap<String, Vec<f32>>,
    /// Passages written by this sync whose chunk has no vector yet, by chunk, as a read
    /// gives them back: the sync reads them for the chunk's centroid, and the table has
    /// no index on `chunk` before the sync's end, so each read was a scan of every row
    /// written so far (a million-chunk sync slowed threefold within its first 100,000).
    awaiting: HashMap<String, Vec<(String, Vec<f32>)>>,
}

/// A sync's writer (see the module docs).
pub(super) struct LanceWriter {
    db: Connection,
    /// The embedding cache agents share.
    cache: SharedCache,
    lease: Lease,
    location: String,
    /// The manifest row when the generation was opened.
    committed: Option<Committed>,
    open: Option<Open>,
    /// The committed generation's vector tables, for a rebuild's reuse (opened once).
    replaced: Option<[Option<Table>; 2]>,
    /// Rows from which a table is indexed (`indexes::INDEX_ROWS`).
    index_rows: u64,
}

impl LanceWriter {
    pub(super) fn new(
        location: &str,
        db: Connection,
        shared: Connection,
        lease: Lease,
        index_rows: u64,
    ) -> Self {
        LanceWriter {
            index_rows,
            location: location.to_string(),
            cache: SharedCache::new(location, shared, index_rows),
            db,
            lease,
            committed: None,
            open: None,
            replaced: None,
        }
    }

    fn open(&self) -> Result<&Open> {
        self.open.as_ref().ok_or_else(|| self.not_begun())
    }

    fn open_mut(&mut self) -> Result<&mut Open> {
        let error = self.not_begun();
        self.open.as_mut().ok_or(error)
    }

    fn not_begun(&self) -> Error {
        Error::Store {
            location: self.location.clone(),
            message: "a sync wrote to the store before opening a generation".into(),
        }
    }

    fn fail(&self, message: String) -> Error {
        Error::Store {
            location: self.location.clone(),
            message,
        }
    }

    /// Writes the pending vectors: chunks' own to the generation's vectors table, passages'
    /// to its passages table (each created by its first rows).
    fn write_vectors(&mut self) -> Result<()> {
        let (db, location) = (self.db.clone(), self.location.clone());
        let open = self.open_mut()?;
        if open.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut open.pending);
        let mut held: Vec<(&String, &Vec<f32>)> = pending.iter().collect();
        held.sort_unstable_by_key(|(id, _)| *id);
        let dims = held.first().map_or(0, |(_, v)| v.len());
        let own: Vec<(&str, &[f32])> = held
            .iter()
            .filter(|(id, _)| !passage::is_passage(id))
            .map(|(id, v)| (id.as_str(), v.as_slice()))
            .collect();
        let parts: Vec<(&str, &[f32])> = held
            .iter()
            .filter(|(id, _)| passage::is_passage(id))
            .map(|(id, v)| (id.as_str(), v.as_slice()))
            .collect();
        let own_batch = (!own.is_empty()).then(|| rows::vectors_batch(&own, dims));
        let parts_batch = (!parts.is_empty()).then(|| rows::passages_batch(&parts));
        // What a read of these passages would give back, for the chunks still without
        // their own vector (`Open::awaiting`).
        let mut awaiting = Vec::new();
        if let Some(batch) = &parts_batch {
            let read = rows::passages(batch).map_err(|message| Error::Store {
                location: location.clone(),
                message,
            })?;
            for (id, chunk, vector) in read {
                if !open.embedded.contains(&chunk) {
                    awaiting.push((chunk, (id, vector)));
                }
            }
        }
        let generation = open.generation;
        let (vectors, passages) = (open.vectors.clone(), open.passages.clone());
        let (vectors, passages) = block(&location, async move {
            let passages = match parts_batch {
                Some(batch) => {
                    Some(append(&db, passages, table_name("passages", generation), batch).await?)
                }
                None => passages,
            };
            let vectors = match own_batch {
                Some(batch) => {
                    Some(append(&db, vectors, table_name("vectors", generation), batch).await?)
                }
                None => vectors,
            };
            Ok((vectors, passages))
        })?;
        let open = self.open_mut()?;
        open.vectors = vectors;
        open.passages = passages;
        for (chunk, passage) in awaiting {
            open.awaiting.entry(chunk).or_default().push(passage);
        }
        Ok(())
    }
}

/// Drops every generation table but generation `keep`'s (and `keep`'s own when
/// `fresh`, for a rebuild starting over).
async fn drop_other_generations(
    db: &Connection,
    keep: Option<u64>,
    fresh: Option<u64>,
) -> lancedb::Result<()> {
    for name in db.table_names().execute().await? {
        let Some((kind, generation)) = name.rsplit_once('_') else {
            continue;
        };
        let Ok(generation) = generation.parse::<u64>() else {
            continue;
        };
        if TABLES.contains(&kind) && (Some(generation) != keep || Some(generation) == fresh) {
            db.drop_table(&name, &[]).await?;
        }
    }
    Ok(())
}

/// Opens generation `generation`'s tables at `versions`, restoring a table a killed sync
/// wrote past them and dropping one it created.
async fn restore(
    db: &Connection,
    generation: u64,
    versions: [u64; 4],
) -> lancedb::Result<Vec<Option<Table>>> {
    let names = db.table_names().execute().await?;
    let mut tables = Vec::new();
    for (kind, version) in TABLES.iter().zip(versions) {
        let name = table_name(kind, generation);
        if version == 0 {
            if names.contains(&name) {
                db.drop_table(&name, &[]).await?;
            }
            tables.push(None);
            continue;
        }
        let table = db.open_table(&name).execute().await?;
        if table.version().await? != version {
            table.checkout(version).await?;
            table.restore().await?;
        }
        // Versions an hour old are read by no search (each reads the manifest row first)
        // and named by no manifest: their files go.
        prune(&table, Duration::hours(1)).await?;
        tables.push(Some(table));
    }
    Ok(tables)
}

/// Every value of column `column` of `table` (none without the table).
async fn column(table: Option<Table>, column: &'static str) -> lancedb::Result<Vec<RecordBatch>> {
    match table {
        Some(table) => collect(table.query().select(Select::columns(&[column]))).await,
        None => Ok(Vec::new()),
    }
}

/// Appends `batch` to `table`, creating it as `name` when absent.
async fn append(
    db: &Connection,
    table: Option<Table>,
    name: String,
    batch: RecordBatch,
) -> lancedb::Result<Table> {
    match table {
        Some(table) => {
            table.add(batch).execute().await?;
            Ok(table)
        }
        None => db.create_table(name, batch).execute().await,
    }
}

impl Writer for LanceWriter {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn manifest(&self) -> Result<Option<Manifest>> {
        let db = self.db.clone();
        Ok(block(&self.location, async move { read_committed(&db).await })?.map(|c| c.manifest))
    }

    fn begin(&mut self, current: Option<u64>, rebuild: bool) -> Result<Begun> {
        let db = self.db.clone();
        let committed = block(&self.location, async move { read_committed(&db).await })?;
        let named = committed.as_ref().map(|c| c.manifest.generation);
        // Passages one row each (an earlier memoria's layout) are rewritten one row per chunk
        // by a rebuild, which takes every vector from the generation it replaces.
        let relayout = match (&committed, rebuild || current.is_none()) {
            (Some(c), false) if c.versions[3] != 0 => {
                let (db, name, version) = (
                    self.db.clone(),
                    table_name("passages", c.manifest.generation),
                    c.versions[3],
                );
                block(&self.location, async move {
                    Ok(match open_at(&db, &name, version).await? {
                        Some(table) => rows::one_row_per_passage(&*table.schema().await?),
                        None => false,
                    })
                })?
            }
            _ => false,
        };
        let fresh = rebuild || current.is_none() || relayout;
        // A new generation follows every one named, so it never replaces the committed one.
        let generation = match fresh {
            true => current.max(named).map_or(1, |n| n + 1),
            false => current.unwrap_or(1),
        };
        if !fresh && named != current {
            return Err(self.fail(format!(
                "generation {generation} is not the committed one ({named:?})"
            )));
        }
        let versions = committed.as_ref().map(|c| c.versions).unwrap_or_default();
        let db = self.db.clone();
        let tables = block(&self.location, async move {
            drop_other_generations(&db, named, fresh.then_some(generation)).await?;
            if !fresh {
                return restore(&db, generation, versions).await;
            }
            let mut tables = Vec::new();
            for (kind, schema) in [
                ("files", rows::files_schema()),
                ("chunks", rows::chunks_schema()),
            ] {
                let name = table_name(kind, generation);
                tables.push(Some(db.create_empty_table(name, schema).execute().await?));
            }
            tables.extend([None, None]);
            Ok(tables)
        })?;
        let [files_table, chunks_table, vectors, passages]: [Option<Table>; 4] = tables
            .try_into()
            .map_err(|_| self.fail("four tables".into()))?;
        let (Some(files_table), Some(chunks_table)) = (files_table, chunks_table) else {
            return Err(self.fail(format!(
                "the manifest names no files_{generation} or chunks_{generation} table"
            )));
        };

        let (f, v, p) = (files_table.clone(), vectors.clone(), passages.clone());
        let (file_batches, own_ids, passage_ids) = block(&self.location, async move {
            Ok((
                collect(f.query()).await?,
                column(v, "id").await?,
                column(p, "ids").await?,
            ))
        })?;
        let mut files = BTreeMap::new();
        for batch in &file_batches {
            let paths = rows::text(batch, "path").map_err(|m| self.fail(m))?;
            let records = rows::text(batch, "record").map_err(|m| self.fail(m))?;
            for (path, record) in paths.into_iter().zip(records) {
                let record: FileRecord = serde_json::from_str(&record)
                    .map_err(|err| self.fail(format!("files_{generation}: {path}: {err}")))?;
                files.insert(path, record);
            }
        }
        let mut embedded = HashSet::new();
        for batch in &own_ids {
            embedded.extend(rows::text(batch, "id").map_err(|m| self.fail(m))?);
        }
        for batch in &passage_ids {
            embedded.extend(rows::passage_ids(batch).map_err(|m| self.fail(m))?);
        }
        let chunks = files
            .values()
            .flat_map(|f| f.chunk_ids.iter().cloned())
            .collect();
        let begun = Begun {
            generation,
            rebuilt: fresh,
            note: relayout.then(|| {
                format!(
                    "passages_{} kept one row per passage (an earlier memoria's layout); \
                     rebuilt as generation {generation}, one row per chunk, from its vectors",
                    named.unwrap_or_default()
                )
            }),
            files: files.clone().into_iter().collect(),
        };
        self.committed = committed;
        self.open = Some(Open {
            generation,
            rebuilt: fresh,
            files_table,
            chunks_table,
            vectors,
            passages,
            files,
            chunks,
            embedded,
            pending: HashMap::new(),
            awaiting: HashMap::new(),
        });
        Ok(begun)
    }

    fn apply(&mut self, batch: &Batch) -> Result<()> {
        let open = self.open_mut()?;
        let stale: Vec<&str> = batch
            .removals
            .iter()
            .chain(batch.upserts.iter().map(|u| &u.path))
            .map(String::as_str)
            .filter(|p| open.files.contains_key(*p))
            .collect();
        let rewritten: Vec<&str> = stale
            .iter()
            .copied()
            .chain(batch.touches.iter().map(|(p, _)| p.as_str()))
            .collect();
        let old_chunks: Vec<String> = stale
            .iter()
            .filter_map(|p| open.files.get(*p))
            .flat_map(|f| f.chunk_ids.iter().cloned())
            .collect();
        let file_rows: Vec<(&str, &FileRecord)> = batch
            .upserts
            .iter()
            .map(|u| (u.path.as_str(), &u.record))
            .chain(batch.touches.iter().map(|(p, r)| (p.as_str(), r)))
            .collect();
        let chunk_rows: Vec<(&str, &ChunkRecord)> = batch
            .upserts
            .iter()
            .flat_map(|u| u.chunks.iter().map(|(id, c)| (id.as_str(), c)))
            .collect();

        let deletions: Vec<String> = rewritten
            .chunks(IDS_PER_QUERY)
            .map(|g| is_in("path", g))
            .collect();
        let chunk_deletions: Vec<String> = stale
            .chunks(IDS_PER_QUERY)
            .map(|g| is_in("path", g))
            .collect();
        let old: Vec<&str> = old_chunks.iter().map(String::as_str).collect();
        let vector_deletions: Vec<String> =
            old.chunks(IDS_PER_QUERY).map(|g| is_in("id", g)).collect();
        let passage_deletions: Vec<String> = old
            .chunks(IDS_PER_QUERY)
            .map(|g| is_in("chunk", g))
            .collect();
        let files_batch = (!file_rows.is_empty()).then(|| rows::files_batch(&file_rows));
        let chunks_batch = (!chunk_rows.is_empty()).then(|| rows::chunks_batch(&chunk_rows));
        let (files_table, chunks_table) = (open.files_table.clone(), open.chunks_table.clone());
        let (vectors, passages) = (open.vectors.clone(), open.passages.clone());
        block(&self.location, async move {
            for filter in &deletions {
                files_table.delete(filter.as_str()).await?;
            }
            for filter in &chunk_deletions {
                chunks_table.delete(filter.as_str()).await?;
            }
            if let Some(vectors) = &vectors {
                for filter in &vector_deletions {
                    vectors.delete(filter.as_str()).await?;
                }
            }
            if let Some(passages) = &passages {
                for filter in &passage_deletions {
                    passages.delete(filter.as_str()).await?;
                }
            }
            if let Some(batch) = files_batch {
                files_table.add(batch).execute().await?;
            }
            if let Some(batch) = chunks_batch {
                chunks_table.add(batch).execute().await?;
            }
            Ok(())
        })?;

        let open = self.open_mut()?;
        for path in &stale {
            open.files.remove(*path);
        }
        let old: HashSet<&str> = old_chunks.iter().map(String::as_str).collect();
        for id in &old_chunks {
            open.chunks.remove(id);
        }
        open.embedded
            .retain(|v| !old.contains(passage::chunk_of(v)));
        open.pending
            .retain(|v, _| !old.contains(passage::chunk_of(v)));
        open.awaiting
            .retain(|chunk, _| !old.contains(chunk.as_str()));
        for upsert in &batch.upserts {
            open.files
                .insert(upsert.path.clone(), upsert.record.clone());
            open.chunks
                .extend(upsert.chunks.iter().map(|(id, _)| id.clone()));
        }
        for (path, record) in &batch.touches {
            open.files.insert(path.clone(), record.clone());
        }
        Ok(())
    }

    fn finish_keyword(&mut self) -> Result<()> {
        let open = self.open()?;
        let chunks = open.chunks_table.clone();
        let files = open.files_table.clone();
        let any = !open.chunks.is_empty();
        let min_rows = self.index_rows;
        block(&self.location, async move {
            for table in [&files, &chunks] {
                table
                    .optimize(OptimizeAction::Compact {
                        options: CompactionOptions::default(),
                        remap_options: None,
                    })
                    .await?;
            }
            if !any {
                return Ok(());
            }
            let params = FtsIndexBuilder::default()
                .base_tokenizer("whitespace".into())
                .lower_case(false)
                .stem(false)
                .remove_stop_words(false)
                .ascii_folding(false)
                .max_token_length(None)
                .with_position(false);
            index_column(&chunks, "terms", 1, || Index::FTS(params)).await?;
            index_column(&chunks, "id", min_rows, btree).await?;
            update_indexes(&chunks).await
        })
    }

    fn unembedded(
        &self,
        passages: bool,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Unembedded>> {
        let open = self.open()?;
        let mut missing: Vec<&str> = open
            .chunks
            .iter()
            .map(String::as_str)
            .filter(|id| !open.embedded.contains(*id) && after.is_none_or(|a| *id > a))
            .collect();
        if missing.len() > limit {
            // The page's ids without sorting the rest.
            missing.select_nth_unstable(limit);
            missing.truncate(limit);
        }
        missing.sort_unstable();
        let mut out = Vec::new();
        for group in missing.chunks(IDS_PER_QUERY) {
            let (table, filter) = (open.chunks_table.clone(), is_in("id", group));
            let batches = block(&self.location, async move {
                collect(
                    table
                        .query()
                        .only_if(filter)
                        .select(Select::columns(&rows::CHUNK_COLUMNS)),
                )
                .await
            })?;
            let mut records = BTreeMap::new();
            for batch in &batches {
                records.extend(rows::chunk_records(batch).map_err(|m| self.fail(m))?);
            }
            for (id, chunk) in records {
                let mut has = |id: &str| Ok(open.embedded.contains(id));
                out.extend(unembedded(&id, chunk, passages, &mut has)?);
            }
        }
        Ok(out)
    }

    fn unembedded_count(&self) -> Result<u64> {
        let open = self.open()?;
        let missing = open.chunks.iter().filter(|id| !open.embedded.contains(*id));
        Ok(missing.count() as u64)
    }

    fn put_vectors(&mut self, vectors: &[(String, Vec<f32>)]) -> Result<()> {
        let location = self.location.clone();
        let open = self.open_mut()?;
        let mut dims = open.pending.values().next().map(Vec::len);
        for (id, vector) in vectors {
            if !open.chunks.contains(passage::chunk_of(id)) {
                continue;
            }
            let want = *dims.get_or_insert(vector.len());
            if vector.len() != want {
                return Err(Error::Store {
                    location,
                    message: format!(
                        "vector {id} has {} values where the others have {want}",
                        vector.len()
                    ),
                });
            }
            open.embedded.insert(id.clone());
            open.pending.insert(id.clone(), vector.clone());
            open.awaiting.remove(id);
        }
        if open.pending.len() >= PENDING_ROWS {
            self.write_vectors()?;
        }
        Ok(())
    }

    fn stored_vectors(&mut self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        let open = self.open()?;
        let in_memory = |id: &str| {
            open.pending.get(id).cloned().or_else(|| {
                let passages = open.awaiting.get(passage::chunk_of(id))?;
                passages
                    .iter()
                    .find(|(p, _)| p == id)
                    .map(|(_, v)| v.clone())
            })
        };
        let mut held: Vec<Option<Vec<f32>>> = ids.iter().map(|id| in_memory(id)).collect();
        let unwritten: Vec<&str> = ids
            .iter()
            .zip(&held)
            .filter(|(_, v)| v.is_none())
            .map(|(id, _)| *id)
            .collect();
        if unwritten.is_empty() {
            return Ok(held);
        }
        let tables = [open.vectors.clone(), open.passages.clone()];
        let mut written = vectors_by_ids(&self.location, tables, &unwritten)?.into_iter();
        for vector in held.iter_mut().filter(|v| v.is_none()) {
            *vector = written.next().flatten();
        }
        Ok(held)
    }

    fn replaced_vectors(&mut self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        let open = self.open()?;
        let committed = self
            .committed
            .clone()
            .filter(|c| open.rebuilt && c.manifest.generation != open.generation);
        let Some(committed) = committed else {
            return Ok(vec![None; ids.len()]);
        };
        if self.replaced.is_none() {
            let (db, generation, versions) = (
                self.db.clone(),
                committed.manifest.generation,
                committed.versions,
            );
            let opened = block(&self.location, async move {
                let vectors = open_at(&db, &table_name("vectors", generation), versions[2]).await?;
                let passages =
                    open_at(&db, &table_name("passages", generation), versions[3]).await?;
                Ok([vectors, passages])
            });
            self.replaced = Some(opened.unwrap_or_else(|err| {
                tracing::warn!("{err}; not reusing its vectors");
                [None, None]
            }));
        }
        let tables = self.replaced.clone().unwrap_or([None, None]);
        vectors_by_ids(&self.location, tables, ids)
    }

    fn cached(&mut self, keys: &[String]) -> Result<Vec<Option<Vec<f32>>>> {
        self.cache.get(keys)
    }

    fn cache(&mut self, items: &[(String, String, Vec<f32>)], _max_entries: usize) -> Result<()> {
        self.cache.put(items)
    }

    fn batch_jobs(&self) -> Result<Option<Vec<u8>>> {
        let db = self.db.clone();
        let batches = block(&self.location, async move {
            match db.open_table("jobs").execute().await {
                Ok(table) => collect(table.query()).await,
                Err(lancedb::Error::TableNotFound { .. }) => Ok(Vec::new()),
                Err(err) => Err(err),
            }
        })?;
        for batch in &batches {
            if let Some(jobs) = rows::binary(batch, "jobs").map_err(|m| self.fail(m))?.pop() {
                return Ok(Some(jobs));
            }
        }
        Ok(None)
    }

    fn write_batch_jobs(&mut self, jobs: Option<&[u8]>) -> Result<()> {
        let db = self.db.clone();
        let batch = jobs.map(rows::jobs_batch);
        block(&self.location, async move {
            let table = match db.open_table("jobs").execute().await {
                Ok(table) => Some(table),
                Err(lancedb::Error::TableNotFound { .. }) => None,
                Err(err) => return Err(err),
            };
            match (table, batch) {
                (Some(table), Some(batch)) => {
                    table
                        .add(batch)
                        .mode(AddDataMode::Overwrite)
                        .execute()
                        .await?;
                }
                (Some(table), None) => {
                    table.delete("true").await?;
                }
                (None, Some(batch)) => {
                    db.create_table("jobs", batch).execute().await?;
                }
                (None, None) => {}
            }
            Ok(())
        })
    }

    fn index_vectors(&mut self, dims: usize) -> Result<u64> {
        self.write_vectors()?;
        let open = self.open()?;
        let min_rows = self.index_rows;
        let (vectors, passages) = (open.vectors.clone(), open.passages.clone());
        block(&self.location, async move {
            if let Some(vectors) = &vectors {
                drop_other_kind(vectors, "vector", VECTOR_INDEX).await?;
                if index_column(vectors, "vector", min_rows, vector_index).await? {
                    update_indexes(vectors).await?;
                }
            }
            if let Some(passages) = &passages {
                if index_column(passages, "chunk", min_rows, btree).await? {
                    update_indexes(passages).await?;
                }
            }
            Ok(())
        })?;
        let open = self.open()?;
        if let Some(table) = open.vectors.clone() {
            let schema = block(&self.location, async move { table.schema().await })?;
            let width = schema
                .field_with_name("vector")
                .ok()
                .and_then(|f| match f.data_type() {
                    arrow_schema::DataType::FixedSizeList(_, n) => Some(*n as usize),
                    _ => None,
                });
            if width != Some(dims) {
                return Ok(0);
            }
        }
        Ok(open
            .chunks
            .iter()
            .filter(|id| open.embedded.contains(*id))
            .count() as u64)
    }

    fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        Ok(self.open()?.files.clone().into_iter().collect())
    }

    fn chunk_count(&self) -> Result<u64> {
        Ok(self.open()?.chunks.len() as u64)
    }

    fn commit(&mut self, manifest: &Manifest) -> Result<()> {
        self.lease.check()?;
        self.write_vectors()?;
        self.cache.write()?;
        let open = self.open()?;
        let json = serde_json::to_string(manifest)
            .map_err(|err| self.fail(format!("the manifest: {err}")))?;
        let tables = [
            Some(open.files_table.clone()),
            Some(open.chunks_table.clone()),
            open.vectors.clone(),
            open.passages.clone(),
        ];
        let db = self.db.clone();
        block(&self.location, async move {
            let mut versions = [0u64; 4];
            for (slot, table) in versions.iter_mut().zip(tables) {
                if let Some(table) = table {
                    *slot = table.version().await?;
                }
            }
            let row = rows::manifest_batch(&json, versions);
            match db.open_table("manifest").execute().await {
                Ok(table) => {
                    table
                        .add(row)
                        .mode(AddDataMode::Overwrite)
                        .execute()
                        .await?;
                }
                Err(lancedb::Error::TableNotFound { .. }) => {
                    db.create_table("manifest", row).execute().await?;
                }
                Err(err) => return Err(err),
            }
            Ok(())
        })
    }
}
