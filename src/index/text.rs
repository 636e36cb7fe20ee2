//! The tantivy BM25 index of one generation (`text/`), derived from the catalog.
//!
//! Each chunk is one document with its id, path, source, line range and text stored, so a
//! search is answered from this index alone, without opening the catalog (which only the
//! writer opens). Every commit carries the catalog `seq` it reflects as its payload.
//!
//! The ranking key (id, path, start line) is also kept in fast fields, so ranking reads it
//! from columns and only the returned chunks come from the compressed doc store. An index
//! with another schema (written by another memoria version) does not open; the next sync
//! rebuilds it (the agent directory's format version changes with the schema).

use std::collections::{BinaryHeap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::query::{BooleanQuery, ConstScoreQuery, EnableScoring, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, STORED, STRING,
};
use tantivy::{
    doc, DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher, SegmentReader,
    TantivyDocument, Term,
};

use super::tolerant_dir::TolerantDirectory;
use crate::analyzer::{analyzer, query_terms, AnalyzerMode, ANALYZER_NAME};
use crate::error::{Error, Result};
use crate::store::{ChunkKey, ChunkRecord, KeywordHit};

/// Writer heap: large enough that a 50 MB workspace indexes in a few segments.
const WRITER_HEAP_BYTES: usize = 256 << 20;

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    id_hi: Field,
    id_lo: Field,
    path: Field,
    source: Field,
    start_line: Field,
    end_line: Field,
    hash: Field,
    text: Field,
    /// The entry's annotations as JSON (empty when none).
    annotations: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text_options = TextOptions::default().set_stored().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER_NAME)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        id: builder.add_text_field("id", STRING | STORED),
        id_hi: builder.add_u64_field("id_hi", FAST),
        id_lo: builder.add_u64_field("id_lo", FAST),
        path: builder.add_text_field("path", STRING | STORED | FAST),
        source: builder.add_text_field("source", STRING | STORED),
        start_line: builder.add_u64_field("start_line", STORED | FAST),
        end_line: builder.add_u64_field("end_line", STORED),
        hash: builder.add_text_field("hash", STORED),
        text: builder.add_text_field("text", text_options),
        annotations: builder.add_text_field("annotations", STORED),
    };
    (builder.build(), fields)
}

/// One segment's ranking keys, from its fast fields. The id is 32 hex digits, kept as two
/// u64 columns: a string column would decode a zstd dictionary block per lookup, which
/// cost more than reading the stored chunk. Paths are few per segment, so their
/// dictionary is decoded once, when the segment is first searched.
struct SegmentKeys {
    id_hi: Column<u64>,
    id_lo: Column<u64>,
    path_ords: Column<u64>,
    /// The path column's dictionary, by ordinal.
    paths: Vec<String>,
    start_line: Column<u64>,
}

impl SegmentKeys {
    fn load(reader: &SegmentReader) -> tantivy::Result<SegmentKeys> {
        let fast = reader.fast_fields();
        let path = fast
            .str("path")?
            .ok_or_else(|| tantivy::TantivyError::SchemaError("path is not a fast field".into()))?;
        let mut paths = Vec::with_capacity(path.dictionary().num_terms());
        let mut terms = path.dictionary().stream()?;
        while terms.advance() {
            paths.push(String::from_utf8_lossy(terms.key()).into_owned());
        }
        Ok(SegmentKeys {
            id_hi: fast.u64("id_hi")?,
            id_lo: fast.u64("id_lo")?,
            path_ords: path.ords().clone(),
            paths,
            start_line: fast.u64("start_line")?,
        })
    }

    fn key(&self, doc: tantivy::DocId) -> Option<ChunkKey> {
        let (hi, lo) = (self.id_hi.first(doc)?, self.id_lo.first(doc)?);
        let path = self.paths.get(self.path_ords.first(doc)? as usize)?;
        Some(ChunkKey {
            id: format!("{hi:016x}{lo:016x}"),
            path: path.clone(),
            start_line: self.start_line.first(doc)? as usize,
        })
    }
}

/// A chunk id's two halves for the `id_hi`/`id_lo` columns, if it is 32 lowercase hex
/// digits (as every chunk id is; see `sync::chunk_id`).
fn id_halves(id: &str) -> Option<(u64, u64)> {
    let valid = id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !valid {
        return None;
    }
    Some((
        u64::from_str_radix(&id[..16], 16).ok()?,
        u64::from_str_radix(&id[16..], 16).ok()?,
    ))
}

/// An open text index.
pub struct TextIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    dir: PathBuf,
    /// Ranking keys of the segments searched so far.
    keys: Mutex<HashMap<SegmentId, Arc<SegmentKeys>>>,
}

impl TextIndex {
    /// Creates an empty index in `dir` (which must not hold one).
    pub fn create(dir: &Path) -> Result<TextIndex> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let (schema, _) = schema();
        let index = Index::create_in_dir(dir, schema).map_err(|e| Error::text(dir, e))?;
        Self::wrap(index, dir)
    }

    /// Opens the index in `dir`.
    pub fn open(dir: &Path) -> Result<TextIndex> {
        let directory = TolerantDirectory::open(dir).map_err(|e| Error::text(dir, e))?;
        let index = Index::open(directory).map_err(|e| Error::text(dir, e))?;
        Self::wrap(index, dir)
    }

    fn wrap(index: Index, dir: &Path) -> Result<TextIndex> {
        let (expected, fields) = schema();
        if index.schema() != expected {
            return Err(Error::corrupt(
                dir,
                "the index was written by another memoria version (its schema differs); \
                 `memoria index` rebuilds it",
            ));
        }
        index
            .tokenizers()
            .register(ANALYZER_NAME, analyzer(AnalyzerMode::Index));
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| Error::text(dir, e))?;
        Ok(TextIndex {
            index,
            reader,
            fields,
            dir: dir.to_path_buf(),
            keys: Mutex::default(),
        })
    }

    /// The catalog `seq` of the last commit (`None` before the first).
    pub fn committed_seq(&self) -> Result<Option<u64>> {
        let metas = self
            .index
            .load_metas()
            .map_err(|e| Error::text(&self.dir, e))?;
        Ok(metas.payload.and_then(|p| p.parse().ok()))
    }

    /// Opens a writer (the caller holds the agent directory's writer lock).
    pub fn writer(&self) -> Result<TextWriter> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let writer = self
            .index
            .writer_with_num_threads(threads, WRITER_HEAP_BYTES)
            .map_err(|e| Error::text(&self.dir, e))?;
        Ok(TextWriter {
            writer,
            fields: self.fields,
            dir: self.dir.clone(),
        })
    }

    /// Sees the latest commit.
    #[cfg(test)]
    pub fn reload(&self) -> Result<()> {
        self.reader.reload().map_err(|e| Error::text(&self.dir, e))
    }

    /// Number of chunks in the index.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Top `limit` chunks by BM25 over the query's terms, OR semantics: a chunk matching any
    /// term is a candidate, and more matching terms score higher. With `content_only`, the
    /// query's function words are left out ([`query_terms`]). With `source`, only that
    /// source's chunks (scores unchanged).
    ///
    /// Equal scores come in path order, then by line, whatever the index's history: chunks
    /// tied at the edge of `limit` (a weak one-word match often ties with many) are all
    /// fetched and the tie broken by path, not by tantivy's document address, which
    /// depends on how the index's segments were written and merged.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        source: Option<&str>,
        content_only: bool,
    ) -> Result<Vec<KeywordHit>> {
        let query_terms = query_terms(query, content_only);
        if query_terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut query: Box<dyn Query> = Box::new(self.any_term(&query_terms));
        if let Some(source) = source {
            // A filter that adds nothing to the score.
            let term = Term::from_field_text(self.fields.source, source);
            let filter = ConstScoreQuery::new(
                Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
                0.0,
            );
            query = Box::new(BooleanQuery::new(vec![
                (Occur::Must, query),
                (Occur::Must, Box::new(filter)),
            ]));
        }
        let searcher = self.reader.searcher();
        let docs = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
        // One past the edge; while the last fetched still ties with the edge, twice as many.
        let mut fetch = limit.saturating_add(1);
        let top = loop {
            let top = top_scored(&searcher, query.as_ref(), fetch)
                .map_err(|e| Error::text(&self.dir, e))?;
            let edge = top.get(limit - 1).map(|(score, _)| *score);
            let tied_on = top.len() == fetch && top.last().map(|(score, _)| *score) == edge;
            if !tied_on || fetch >= docs {
                break top;
            }
            fetch = fetch.saturating_mul(2);
        };
        let keys = self.segment_keys(&searcher)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            hits.push(KeywordHit {
                key: self.key_at(&keys, address)?,
                bm25: score,
            });
        }
        hits.sort_by(KeywordHit::order);
        hits.truncate(limit);
        Ok(hits)
    }

    /// BM25 over `terms` in the chunk text, OR semantics.
    fn any_term(&self, terms: &[String]) -> BooleanQuery {
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.fields.text, t);
                let query: Box<dyn Query> =
                    Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                (Occur::Should, query)
            })
            .collect();
        BooleanQuery::new(clauses)
    }

    /// How many chunks the index holds, and how many of them hold each of `terms`.
    pub fn frequencies(&self, terms: &[String]) -> Result<(usize, Vec<usize>)> {
        let searcher = self.reader.searcher();
        let counts = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.fields.text, t);
                let n = searcher
                    .doc_freq(&term)
                    .map_err(|e| Error::text(&self.dir, e))?;
                Ok(n as usize)
            })
            .collect::<Result<_>>()?;
        Ok((searcher.num_docs() as usize, counts))
    }

    /// The first chunk (lowest start line) of every indexed file whose path `named`
    /// accepts, by path.
    pub fn first_chunks(&self, named: &dyn Fn(&str) -> bool) -> Result<Vec<ChunkKey>> {
        let searcher = self.reader.searcher();
        let keys = self.segment_keys(&searcher)?;
        let mut first: std::collections::BTreeMap<String, ChunkKey> = Default::default();
        for (reader, keys) in searcher.segment_readers().iter().zip(&keys) {
            let wanted: Vec<u64> = (0..keys.paths.len() as u64)
                .filter(|&ord| named(&keys.paths[ord as usize]))
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let alive = reader.alive_bitset();
            for doc in 0..reader.max_doc() {
                if alive.is_some_and(|a| !a.is_alive(doc)) {
                    continue;
                }
                if !keys
                    .path_ords
                    .first(doc)
                    .is_some_and(|o| wanted.contains(&o))
                {
                    continue;
                }
                let Some(key) = keys.key(doc) else { continue };
                match first.get(&key.path) {
                    Some(kept) if kept.start_line <= key.start_line => {}
                    _ => {
                        first.insert(key.path.clone(), key);
                    }
                }
            }
        }
        Ok(first.into_values().collect())
    }

    /// The ranking keys of the chunks with these ids, in order (unknown ids are skipped: a
    /// vector index may briefly know a chunk this commit no longer has).
    pub fn keys_by_ids(&self, ids: &[String]) -> Result<Vec<ChunkKey>> {
        let searcher = self.reader.searcher();
        let keys = self.segment_keys(&searcher)?;
        let mut out = Vec::with_capacity(ids.len());
        for address in self.addresses(&searcher, ids)?.into_iter().flatten() {
            out.push(self.key_at(&keys, address)?);
        }
        Ok(out)
    }

    /// The stored chunks with these ids, in order (unknown ids are skipped). Until
    /// [`TextIndex::reload`] (which searches never call), ids returned by
    /// [`TextIndex::search`] or [`TextIndex::keys_by_ids`] are found here.
    pub fn chunks_by_ids(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        let searcher = self.reader.searcher();
        let mut out = Vec::with_capacity(ids.len());
        for address in self.addresses(&searcher, ids)?.into_iter().flatten() {
            out.push(self.stored_chunk(&searcher, address)?);
        }
        Ok(out)
    }

    /// Where each id's live document is, if anywhere.
    fn addresses(&self, searcher: &Searcher, ids: &[String]) -> Result<Vec<Option<DocAddress>>> {
        let err = |e: tantivy::TantivyError| Error::text(&self.dir, e);
        // Straight to each segment's postings for the id term: a full query per id (weight,
        // scorer, collector) cost more than the rest of a vector search.
        let mut id_indexes = Vec::with_capacity(searcher.segment_readers().len());
        for reader in searcher.segment_readers() {
            id_indexes.push(reader.inverted_index(self.fields.id).map_err(err)?);
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let term = Term::from_field_text(self.fields.id, id);
            let mut found = None;
            for (ord, (reader, index)) in searcher
                .segment_readers()
                .iter()
                .zip(&id_indexes)
                .enumerate()
            {
                let postings = index
                    .read_postings(&term, IndexRecordOption::Basic)
                    .map_err(|e| Error::io(&self.dir, e))?;
                let Some(mut postings) = postings else {
                    continue;
                };
                let mut doc = tantivy::DocSet::doc(&postings);
                while doc != tantivy::TERMINATED && reader.is_deleted(doc) {
                    doc = tantivy::DocSet::advance(&mut postings);
                }
                if doc != tantivy::TERMINATED {
                    found = Some(DocAddress::new(ord as u32, doc));
                    break;
                }
            }
            out.push(found);
        }
        Ok(out)
    }

    /// Each segment's ranking keys, loaded on first use.
    fn segment_keys(&self, searcher: &Searcher) -> Result<Vec<Arc<SegmentKeys>>> {
        let mut cache = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let readers = searcher.segment_readers();
        // Segments merged away since (after a reload) are dropped from the cache.
        cache.retain(|id, _| readers.iter().any(|r| r.segment_id() == *id));
        let mut out = Vec::with_capacity(readers.len());
        for reader in readers {
            let keys = match cache.get(&reader.segment_id()) {
                Some(keys) => keys.clone(),
                None => {
                    let keys =
                        Arc::new(SegmentKeys::load(reader).map_err(|e| Error::text(&self.dir, e))?);
                    cache.insert(reader.segment_id(), keys.clone());
                    keys
                }
            };
            out.push(keys);
        }
        Ok(out)
    }

    /// The ranking key at `address`.
    fn key_at(&self, keys: &[Arc<SegmentKeys>], address: DocAddress) -> Result<ChunkKey> {
        keys.get(address.segment_ord as usize)
            .and_then(|keys| keys.key(address.doc_id))
            .ok_or_else(|| {
                Error::corrupt(
                    &self.dir,
                    format!("document {address:?} lacks its id, path or start_line column value"),
                )
            })
    }

    fn stored_chunk(
        &self,
        searcher: &Searcher,
        address: DocAddress,
    ) -> Result<(String, ChunkRecord)> {
        let doc: TantivyDocument = searcher
            .doc(address)
            .map_err(|e| Error::text(&self.dir, e))?;
        let text_of = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let number_of = |field| doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0) as usize;
        let chunk = ChunkRecord {
            path: text_of(self.fields.path),
            source: text_of(self.fields.source),
            start_line: number_of(self.fields.start_line),
            end_line: number_of(self.fields.end_line),
            hash: text_of(self.fields.hash),
            text: text_of(self.fields.text),
            // Titles feed the embedder only; the text index keeps none.
            title: String::new(),
            annotations: match text_of(self.fields.annotations) {
                json if json.is_empty() => Default::default(),
                json => serde_json::from_str(&json).map_err(|e| {
                    Error::corrupt(&self.dir, format!("a chunk's stored annotations: {e}"))
                })?,
            },
        };
        Ok((text_of(self.fields.id), chunk))
    }
}

/// Adds and deletes chunks; nothing is visible until [`TextWriter::commit`].
pub struct TextWriter {
    writer: IndexWriter,
    fields: Fields,
    dir: PathBuf,
}

impl TextWriter {
    pub fn add(&self, id: &str, chunk: &ChunkRecord) -> Result<()> {
        let f = self.fields;
        let (hi, lo) = id_halves(id).ok_or_else(|| {
            Error::corrupt(
                &self.dir,
                format!(
                    "chunk id {id:?} of {} is not 32 lowercase hex digits",
                    chunk.path
                ),
            )
        })?;
        let annotations = match chunk.annotations.is_empty() {
            true => String::new(),
            false => serde_json::to_string(&chunk.annotations)
                .map_err(|e| Error::corrupt(&self.dir, e))?,
        };
        self.writer
            .add_document(doc!(
                f.id => id,
                f.id_hi => hi,
                f.id_lo => lo,
                f.path => chunk.path.as_str(),
                f.source => chunk.source.as_str(),
                f.start_line => chunk.start_line as u64,
                f.end_line => chunk.end_line as u64,
                f.hash => chunk.hash.as_str(),
                f.text => chunk.text.as_str(),
                f.annotations => annotations,
            ))
            .map_err(|e| Error::text(&self.dir, e))?;
        Ok(())
    }

    /// Deletes every chunk of `path`.
    pub fn delete_path(&self, path: &str) {
        self.writer
            .delete_term(Term::from_field_text(self.fields.path, path));
    }

    /// Commits, recording the catalog `seq` this state reflects.
    pub fn commit(&mut self, seq: u64) -> Result<()> {
        let mut prepared = self
            .writer
            .prepare_commit()
            .map_err(|e| Error::text(&self.dir, e))?;
        prepared.set_payload(&seq.to_string());
        prepared.commit().map_err(|e| Error::text(&self.dir, e))?;
        Ok(())
    }

    /// Merges every segment into one when deleted chunks make up more than
    /// `max_deleted_share` of the committed index. tantivy keeps a deleted chunk in its
    /// segment's statistics (document frequencies, average length) until the segment is
    /// merged, so edits would otherwise skew BM25 a little more with every sync; the merge
    /// drops them and keeps the commit payload (the catalog seq). Returns whether it merged.
    pub fn purge_deletes(&mut self, max_deleted_share: f64) -> Result<bool> {
        let err = |e: tantivy::TantivyError| Error::text(&self.dir, e);
        let reader = self.writer.index().reader().map_err(err)?;
        let searcher = reader.searcher();
        let (mut deleted, mut total) = (0u64, 0u64);
        for segment in searcher.segment_readers() {
            deleted += u64::from(segment.num_deleted_docs());
            total += u64::from(segment.max_doc());
        }
        if deleted == 0 || (deleted as f64) <= max_deleted_share * total as f64 {
            return Ok(false);
        }
        // A background merge may replace segments between listing and merging them: list
        // again and retry. The merge only tidies statistics, so failing it fails nothing.
        for _ in 0..3 {
            let ids: Vec<SegmentId> = self.writer.index().searchable_segment_ids().map_err(err)?;
            match self.writer.merge(&ids).wait() {
                Ok(_) => return Ok(true),
                Err(tantivy::TantivyError::InvalidArgument(_)) => continue,
                Err(e) => return Err(err(e)),
            }
        }
        tracing::warn!(
            "{}: deleted chunks not merged away (segments kept changing)",
            self.dir.display()
        );
        Ok(false)
    }

    /// Waits for background merges so no thread outlives the writer lock.
    pub fn finish(self) -> Result<()> {
        self.writer
            .wait_merging_threads()
            .map_err(|e| Error::text(&self.dir, e))
    }
}

/// The `k` best-scored live chunks of all segments, best first: what tantivy's `TopDocs`
/// collects, with the pruning threshold carried from segment to segment. `TopDocs` starts
/// every segment from no threshold, so block-max WAND scores each segment's common-term
/// postings until that segment alone has `k` good hits; carried over, the threshold the
/// largest segments leave skips most blocks of the rest (issue 49: a million chunks are
/// eight to ten segments). Equal scores may come in any order; [`TextIndex::search`]
/// breaks them.
fn top_scored(
    searcher: &Searcher,
    query: &dyn Query,
    k: usize,
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    /// A hit, ordered by score (the worst on top of the min-heap below).
    struct Hit(Score, DocAddress);
    impl PartialEq for Hit {
        fn eq(&self, other: &Self) -> bool {
            self.cmp(other).is_eq()
        }
    }
    impl Eq for Hit {}
    impl PartialOrd for Hit {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Hit {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            // Reversed: the heap's top is the lowest score (the later address among equals).
            other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
        }
    }
    if k == 0 {
        return Ok(Vec::new());
    }
    let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
    let readers = searcher.segment_readers();
    // The largest segments first: their threshold prunes the smaller ones most.
    let mut order: Vec<usize> = (0..readers.len()).collect();
    order.sort_by_key(|&ord| std::cmp::Reverse(readers[ord].num_docs()));
    let mut heap: BinaryHeap<Hit> = BinaryHeap::with_capacity(k.saturating_add(1).min(1 << 16));
    let floor = |heap: &BinaryHeap<Hit>| match heap.peek() {
        Some(worst) if heap.len() >= k => worst.0,
        _ => Score::MIN,
    };
    for ord in order {
        let reader = &readers[ord];
        let alive = reader.alive_bitset();
        let segment = ord as u32;
        let mut threshold = floor(&heap);
        weight.for_each_pruning(threshold, reader, &mut |doc, score| {
            if alive.is_some_and(|alive| alive.is_deleted(doc)) {
                return threshold;
            }
            heap.push(Hit(score, DocAddress::new(segment, doc)));
            if heap.len() > k {
                heap.pop();
            }
            threshold = floor(&heap);
            threshold
        })?;
    }
    Ok(heap
        .into_sorted_vec()
        .into_iter()
        .map(|Hit(score, address)| (score, address))
        .collect())
}

#[cfg(test)]
mod tests;
