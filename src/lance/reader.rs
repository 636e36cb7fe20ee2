//! A committed generation in LanceDB, for searches: its tables opened at the versions the
//! manifest names.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use lance_index::scalar::FullTextSearchQuery;
use lancedb::query::{QueryBase, Select};
use lancedb::{Connection, DistanceType, Table};

use super::held::{self, unit_cosine, Held};
use super::indexes::VECTOR_INDEX;
use super::rows::{self, is_in, quoted, CHUNK_COLUMNS};
use super::runtime;
use super::tables::{block, collect, open_at, runtime_error, table_name, Committed, TABLES};
use crate::analyzer::query_terms;
use crate::error::{Error, Result};
use crate::passage;
use crate::store::{ChunkKey, ChunkRecord, FileRecord, KeywordHit, Manifest, Reader};

/// How many ids one `IN (…)` filter names.
pub(super) const IDS_PER_QUERY: usize = 512;

/// How many more chunks than asked the vector side takes by their own vectors, to rescore
/// by their passages (the local store widens as much).
const PASSAGE_WIDEN: usize = 4;

/// The vector index's partitions a search reads at least (a large generation's chunk
/// vectors are indexed, see the writer), and how many entries its HNSW search keeps per
/// candidate asked (`ef`). The candidates are re-ranked on their full vectors once
/// (refine factor 1): every row re-ranked is a read from the store, and a wider search
/// over the index, which a node caches, finds what a wider re-ranking did. On 48,456 real
/// EmbeddingGemma vectors (`benches/lance_index_recall.py`, 96 candidates), recall@10
/// against an exact scan: 0.9999 at `ef` 1,056 with 96 rows read, 0.9999 re-ranking 8x at
/// LanceDB's default `ef` (768 rows read, memoria before), 0.9741 re-ranking 1x at it. A
/// table without the index ignores all three; an index of the kind memoria built before
/// (IVF-PQ, replaced by the next sync) has no graph to widen and still re-ranks
/// `PQ_REFINE_FACTOR` times the candidates.
const NPROBES: usize = 32;
const EF_PER_CANDIDATE: usize = 11;
const REFINE_FACTOR: u32 = 1;
const PQ_REFINE_FACTOR: u32 = 8;

/// One committed generation.
pub(super) struct LanceReader {
    location: String,
    manifest: Manifest,
    files: Table,
    chunks: Table,
    vectors: Option<Table>,
    passages: Option<Table>,
    /// Chunks in the generation (BM25's document count).
    documents: usize,
    /// Whether `chunks` has its full-text index.
    indexed: bool,
    /// Whether the chunks' vector index is of memoria's kind (`indexes::VECTOR_INDEX`).
    graph: bool,
    /// Document frequencies looked up so far, by term.
    counted: Mutex<HashMap<String, usize>>,
    /// When its vectors are few enough to hold in memory (module `held`): under which key,
    /// within what budget.
    hold: Option<(String, u64)>,
    /// The tables' indexes: the table, the index's name and its bytes in the store.
    indexes: Vec<(Table, String, u64)>,
}

impl LanceReader {
    /// Opens `committed`; its vectors are held in memory (within `hold_budget` bytes for
    /// every agent together) when it has fewer than `index_rows` chunks (larger ones have
    /// a vector index).
    pub(super) fn open(
        location: &str,
        db: Connection,
        committed: Committed,
        index_rows: u64,
        hold_budget: u64,
    ) -> Result<Self> {
        let generation = committed.manifest.generation;
        let versions = committed.versions;
        let (files, chunks, vectors, passages, documents, indexes) = block(location, async move {
            let mut tables = Vec::new();
            for (kind, version) in TABLES.iter().zip(versions) {
                tables.push(open_at(&db, &table_name(kind, generation), version).await?);
            }
            let [files, chunks, vectors, passages]: [Option<Table>; 4] = tables
                .try_into()
                .map_err(|_| runtime_error("four tables".into()))?;
            let (Some(files), Some(chunks)) = (files, chunks) else {
                return Err(runtime_error(format!(
                    "the manifest names no files_{generation} or chunks_{generation} table"
                )));
            };
            let documents = chunks.count_rows(None).await?;
            let mut indexes = Vec::new();
            for table in [Some(&chunks), vectors.as_ref(), passages.as_ref()]
                .into_iter()
                .flatten()
            {
                for index in table.list_indices().await? {
                    indexes.push((table.clone(), index));
                }
            }
            Ok((files, chunks, vectors, passages, documents, indexes))
        })?;
        let indexed = indexes
            .iter()
            .any(|(table, i)| table.name() == chunks.name() && i.columns == ["terms"]);
        let graph = indexes.iter().any(|(table, i)| {
            vectors.as_ref().is_some_and(|v| v.name() == table.name())
                && i.index_type == VECTOR_INDEX
        });
        Ok(LanceReader {
            location: location.to_string(),
            manifest: committed.manifest,
            files,
            chunks,
            vectors,
            passages,
            documents,
            indexed,
            graph,
            counted: Mutex::new(HashMap::new()),
            indexes: indexes
                .into_iter()
                .map(|(table, index)| (table, index.name, index.size_bytes.unwrap_or(0)))
                .collect(),
            hold: ((documents as u64) < index_rows).then(|| {
                let key = format!("{location}#{generation}:{}:{}", versions[2], versions[3]);
                (key, hold_budget)
            }),
        })
    }

    /// Whether the generation is large enough to have its vectors indexed rather than
    /// held in memory (module `held`).
    pub(super) fn large(&self) -> bool {
        self.hold.is_none()
    }

    /// The bytes of the generation's indexes in the store: what its warm searches want in
    /// LanceDB's index cache.
    pub(super) fn index_bytes(&self) -> u64 {
        self.indexes.iter().map(|(_, _, bytes)| bytes).sum()
    }

    /// Starts loading every index into LanceDB's index cache in the background, so that
    /// the searches after the first need not read them from the object store piece by
    /// piece.
    pub(super) fn prewarm(&self) {
        for (table, name, _) in &self.indexes {
            let (table, name) = (table.clone(), name.clone());
            runtime::spawn(&self.location, async move {
                (table.prewarm_index(&name).await)
                    .map_err(|err| format!("prewarming index {name}: LanceDB: {err}"))
            });
        }
    }

    /// The generation's vectors in memory, read whole on first use, when it is small
    /// enough to hold (module `held`).
    fn held(&self) -> Result<Option<Arc<Held>>> {
        let Some((key, budget)) = &self.hold else {
            return Ok(None);
        };
        if let Some(held) = held::get(key) {
            return Ok(Some(held));
        }
        let (own, passages) = (self.vectors.clone(), self.passages.clone());
        let (own, passages) = block(&self.location, async move {
            let mut read = Vec::new();
            for table in [own, passages] {
                read.push(match table {
                    Some(table) => collect(table.query()).await?,
                    None => Vec::new(),
                });
            }
            Ok((read.remove(0), read.remove(0)))
        })?;
        let mut chunks = Vec::new();
        for batch in &own {
            let ids = rows::text(batch, "id").map_err(|m| self.column_error(m))?;
            let vectors = rows::vectors(batch, "vector").map_err(|m| self.column_error(m))?;
            chunks.extend(ids.into_iter().zip(vectors));
        }
        let mut parts = Vec::new();
        for batch in &passages {
            let read = rows::passages(batch).map_err(|m| self.column_error(m))?;
            parts.extend(read.into_iter().map(|(_, chunk, vector)| (chunk, vector)));
        }
        let held = Arc::new(Held::new(chunks, parts));
        held::keep(key, held.clone(), *budget);
        Ok(Some(held))
    }

    fn column_error(&self, message: String) -> Error {
        Error::Store {
            location: self.location.clone(),
            message,
        }
    }

    /// The chunks whose `terms` hold each of `terms`, counted.
    fn term_counts(&self, wanted: &[String]) -> Result<Vec<usize>> {
        let mut known = self.counted.lock().unwrap_or_else(|e| e.into_inner());
        let mut new: Vec<String> = wanted
            .iter()
            .filter(|t| self.indexed && !known.contains_key(*t))
            .cloned()
            .collect();
        new.sort();
        new.dedup();
        if !new.is_empty() {
            // One full-text query per term (its matches counted), all at once: each waits
            // on the store, not on the others.
            let (chunks, documents) = (self.chunks.clone(), self.documents);
            let counted = block(&self.location, async move {
                let counts = new.into_iter().map(|term| {
                    let chunks = chunks.clone();
                    async move {
                        let search = FullTextSearchQuery::new(term.clone())
                            .with_column("terms".into())
                            .map_err(lancedb::Error::from)?;
                        let batches = collect(
                            chunks
                                .query()
                                .full_text_search(search)
                                .select(Select::columns(&["id", "_score"]))
                                .limit(documents.max(1)),
                        )
                        .await?;
                        let count = batches.iter().map(|b| b.num_rows()).sum::<usize>();
                        Ok::<_, lancedb::Error>((term, count))
                    }
                });
                futures::future::try_join_all(counts).await
            })?;
            known.extend(counted);
        }
        Ok(wanted
            .iter()
            .map(|t| known.get(t).copied().unwrap_or(0))
            .collect())
    }

    /// Rows of `chunks` whose id is among `ids`, by id.
    fn chunk_rows(&self, ids: &[String]) -> Result<HashMap<String, ChunkRecord>> {
        let mut found = HashMap::new();
        for group in ids.chunks(IDS_PER_QUERY) {
            let filter = is_in("id", &group.iter().map(String::as_str).collect::<Vec<_>>());
            let chunks = self.chunks.clone();
            let batches = block(&self.location, async move {
                collect(
                    chunks
                        .query()
                        .only_if(filter)
                        .select(Select::columns(&CHUNK_COLUMNS)),
                )
                .await
            })?;
            for batch in &batches {
                found.extend(rows::chunk_records(batch).map_err(|m| self.column_error(m))?);
            }
        }
        Ok(found)
    }

    /// The passages of `chunks`, best cosine to `query` (unit length) per chunk.
    fn best_passages(&self, chunks: &[&str], query: &[f32]) -> Result<HashMap<String, f32>> {
        let mut best: HashMap<String, f32> = HashMap::new();
        let Some(passages) = &self.passages else {
            return Ok(best);
        };
        for (_, owner, vector) in passages_of(&self.location, passages, chunks)? {
            let score = unit_cosine(query, &vector);
            let entry = best.entry(owner).or_insert(f32::MIN);
            *entry = entry.max(score);
        }
        Ok(best)
    }

    fn try_nearest(&self, query: &[f32], k: usize) -> Result<Vec<(String, f32)>> {
        let Some(vectors) = self.vectors.clone() else {
            return Ok(Vec::new());
        };
        let mut q = query.to_vec();
        if k == 0 || q.iter().any(|x| !x.is_finite()) || !crate::simd::l2_normalize(&mut q) {
            return Ok(Vec::new());
        }
        let fetch = match self.passages.is_some() {
            true => k.saturating_mul(PASSAGE_WIDEN),
            false => k,
        };
        if let Some(held) = self.held()? {
            return Ok(held.nearest(&q, k, fetch));
        }
        let probe = q.clone();
        let refine = match self.graph {
            true => REFINE_FACTOR,
            false => PQ_REFINE_FACTOR,
        };
        let batches = block(&self.location, async move {
            collect(
                vectors
                    .query()
                    .nearest_to(probe.as_slice())?
                    .distance_type(DistanceType::Cosine)
                    .minimum_nprobes(NPROBES)?
                    .ef(fetch.saturating_mul(EF_PER_CANDIDATE))
                    .refine_factor(refine)
                    .select(Select::columns(&["id", "_distance"]))
                    .limit(fetch),
            )
            .await
        })?;
        let mut hits = Vec::new();
        for batch in &batches {
            let ids = rows::text(batch, "id").map_err(|m| self.column_error(m))?;
            let distances = rows::floats(batch, "_distance").map_err(|m| self.column_error(m))?;
            hits.extend(ids.into_iter().zip(distances.into_iter().map(|d| 1.0 - d)));
        }
        let ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
        let best = self.best_passages(&ids, &q)?;
        let mut out: Vec<(String, f32)> = hits
            .into_iter()
            .map(|(id, own)| {
                let score = best.get(&id).copied().unwrap_or(own);
                (id, score)
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.truncate(k);
        Ok(out)
    }
}

/// The vectors `own` (chunks') and `passages` hold for `ids`, in order.
pub(super) fn vectors_by_ids(
    location: &str,
    [own, passages]: [Option<Table>; 2],
    ids: &[&str],
) -> Result<Vec<Option<Vec<f32>>>> {
    let fail = |message: String| Error::Store {
        location: location.to_string(),
        message,
    };
    let mut found: HashMap<String, Vec<f32>> = HashMap::new();
    let (passage_ids, own_ids): (Vec<&str>, Vec<&str>) =
        ids.iter().partition(|id| passage::is_passage(id));
    if let Some(table) = own {
        for group in own_ids.chunks(IDS_PER_QUERY) {
            let (table, filter) = (table.clone(), is_in("id", group));
            let batches = block(location, async move {
                collect(
                    table
                        .query()
                        .only_if(filter)
                        .select(Select::columns(&["id", "vector"])),
                )
                .await
            })?;
            for batch in &batches {
                let ids = rows::text(batch, "id").map_err(fail)?;
                let vectors = rows::vectors(batch, "vector").map_err(fail)?;
                found.extend(ids.into_iter().zip(vectors));
            }
        }
    }
    // Passages are read by their chunks' rows, then picked out by id.
    let mut chunks: Vec<&str> = passage_ids.iter().map(|id| passage::chunk_of(id)).collect();
    chunks.sort_unstable();
    chunks.dedup();
    if let Some(table) = &passages {
        let read = passages_of(location, table, &chunks)?;
        found.extend(read.into_iter().map(|(id, _, vector)| (id, vector)));
    }
    Ok(ids.iter().map(|id| found.remove(*id)).collect())
}

/// The passages of `chunks` in `table`, as `(id, chunk, vector)`: their chunks' rows (one per
/// chunk, or one per passage in the layout before), [`IDS_PER_QUERY`] chunks a query.
fn passages_of(
    location: &str,
    table: &Table,
    chunks: &[&str],
) -> Result<Vec<(String, String, Vec<f32>)>> {
    let mut out = Vec::new();
    for group in chunks.chunks(IDS_PER_QUERY) {
        let (table, filter) = (table.clone(), is_in("chunk", group));
        let batches = block(location, async move {
            collect(table.query().only_if(filter)).await
        })?;
        for batch in &batches {
            out.extend(rows::passages(batch).map_err(|message| Error::Store {
                location: location.to_string(),
                message,
            })?);
        }
    }
    Ok(out)
}

impl Reader for LanceReader {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    fn keyword_ready(&self) -> Result<()> {
        match self.indexed || self.documents == 0 {
            true => Ok(()),
            false => Err(self.column_error(format!(
                "chunks_{} has no full-text index (a sync builds it)",
                self.manifest.generation
            ))),
        }
    }

    fn keyword(
        &self,
        query: &str,
        limit: usize,
        source: Option<&str>,
        content_only: bool,
    ) -> Result<Vec<KeywordHit>> {
        let wanted = query_terms(query, content_only);
        if wanted.is_empty() || limit == 0 || self.documents == 0 {
            return Ok(Vec::new());
        }
        self.keyword_ready()?;
        let (chunks, filter) = (
            self.chunks.clone(),
            source.map(|s| format!("source = {}", quoted(s))),
        );
        let text = wanted.join(" ");
        let batches = block(&self.location, async move {
            let search = FullTextSearchQuery::new(text)
                .with_column("terms".into())
                .map_err(lancedb::Error::from)?;
            let mut query = chunks
                .query()
                .full_text_search(search)
                .select(Select::columns(&["id", "path", "start_line", "_score"]))
                .limit(limit);
            if let Some(filter) = filter {
                query = query.only_if(filter);
            }
            collect(query).await
        })?;
        let mut hits = Vec::new();
        for batch in &batches {
            let ids = rows::text(batch, "id").map_err(|m| self.column_error(m))?;
            let paths = rows::text(batch, "path").map_err(|m| self.column_error(m))?;
            let lines = rows::unsigned(batch, "start_line").map_err(|m| self.column_error(m))?;
            let scores = rows::floats(batch, "_score").map_err(|m| self.column_error(m))?;
            for (((id, path), line), bm25) in ids.into_iter().zip(paths).zip(lines).zip(scores) {
                hits.push(KeywordHit {
                    key: ChunkKey {
                        id,
                        path,
                        start_line: line as usize,
                    },
                    bm25,
                });
            }
        }
        hits.sort_by(KeywordHit::order);
        hits.truncate(limit);
        Ok(hits)
    }

    fn frequencies(&self, terms: &[String]) -> Result<(usize, Vec<usize>)> {
        Ok((self.documents, self.term_counts(terms)?))
    }

    fn has_vectors(&self) -> bool {
        self.vectors.is_some()
    }

    fn nearest(&self, query: &[f32], k: usize) -> Option<Vec<(String, f32)>> {
        self.vectors.as_ref()?;
        match self.try_nearest(query, k) {
            Ok(hits) => Some(hits),
            Err(err) => {
                tracing::warn!("{err}; the vector side is left out of this search");
                None
            }
        }
    }

    fn chunks(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        let mut found = self.chunk_rows(ids)?;
        Ok(ids
            .iter()
            .filter_map(|id| Some((id.clone(), found.remove(id)?)))
            .collect())
    }

    fn first_chunks(&self, named: &dyn Fn(&str) -> bool) -> Result<Vec<ChunkKey>> {
        let chunks = self.chunks.clone();
        let batches = block(&self.location, async move {
            collect(
                chunks
                    .query()
                    .select(Select::columns(&["id", "path", "start_line"])),
            )
            .await
        })?;
        let mut first: BTreeMap<String, (usize, String)> = BTreeMap::new();
        for batch in &batches {
            let ids = rows::text(batch, "id").map_err(|m| self.column_error(m))?;
            let paths = rows::text(batch, "path").map_err(|m| self.column_error(m))?;
            let lines = rows::unsigned(batch, "start_line").map_err(|m| self.column_error(m))?;
            for ((id, path), line) in ids.into_iter().zip(paths).zip(lines) {
                if !named(&path) {
                    continue;
                }
                let candidate = (line as usize, id);
                match first.get(&path) {
                    Some(kept) if *kept <= candidate => {}
                    _ => {
                        first.insert(path, candidate);
                    }
                }
            }
        }
        Ok(first
            .into_iter()
            .map(|(path, (start_line, id))| ChunkKey {
                id,
                path,
                start_line,
            })
            .collect())
    }

    fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        let files = self.files.clone();
        let batches = block(&self.location, async move { collect(files.query()).await })?;
        let mut out = Vec::new();
        for batch in &batches {
            let paths = rows::text(batch, "path").map_err(|m| self.column_error(m))?;
            let records = rows::text(batch, "record").map_err(|m| self.column_error(m))?;
            for (path, record) in paths.into_iter().zip(records) {
                let record: FileRecord = serde_json::from_str(&record)
                    .map_err(|err| self.column_error(format!("{path}: {err}")))?;
                out.push((path, record));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn vectors(&self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        vectors_by_ids(
            &self.location,
            [self.vectors.clone(), self.passages.clone()],
            ids,
        )
    }
}
