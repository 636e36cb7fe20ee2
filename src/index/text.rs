//! The tantivy BM25 index of one generation (`text/`), derived from the catalog.
//!
//! Each chunk is one document with its id, path, source, line range and text stored, so a
//! search is answered from this index alone, without opening the catalog (which only the
//! writer opens). Every commit carries the catalog `seq` it reflects as its payload.

use std::path::{Path, PathBuf};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING,
};
use tantivy::{doc, Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use super::analyzer::{analyzer, terms, AnalyzerMode, ANALYZER_NAME};
use super::catalog::ChunkRecord;
use crate::{Error, Result};

/// Writer heap: large enough that a 50 MB workspace indexes in a few segments.
const WRITER_HEAP_BYTES: usize = 256 << 20;

#[derive(Clone, Copy)]
struct Fields {
    id: Field,
    path: Field,
    source: Field,
    start_line: Field,
    end_line: Field,
    hash: Field,
    text: Field,
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
        path: builder.add_text_field("path", STRING | STORED),
        source: builder.add_text_field("source", STRING | STORED),
        start_line: builder.add_u64_field("start_line", STORED),
        end_line: builder.add_u64_field("end_line", STORED),
        hash: builder.add_text_field("hash", STORED),
        text: builder.add_text_field("text", text_options),
    };
    (builder.build(), fields)
}

/// A keyword hit: the chunk and its raw BM25 score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct TextHit {
    pub id: String,
    pub chunk: ChunkRecord,
    pub bm25: f32,
}

/// An open text index.
pub struct TextIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    dir: PathBuf,
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
        let index = Index::open_in_dir(dir).map_err(|e| Error::text(dir, e))?;
        Self::wrap(index, dir)
    }

    fn wrap(index: Index, dir: &Path) -> Result<TextIndex> {
        index
            .tokenizers()
            .register(ANALYZER_NAME, analyzer(AnalyzerMode::Index));
        let (_, fields) = schema();
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
    pub fn reload(&self) -> Result<()> {
        self.reader.reload().map_err(|e| Error::text(&self.dir, e))
    }

    /// Number of chunks in the index.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Top `limit` chunks by BM25 over the query's terms, OR semantics: a chunk matching any
    /// term is a candidate, and more matching terms score higher.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<TextHit>> {
        let mut query_terms = terms(query, AnalyzerMode::Query);
        query_terms.sort();
        query_terms.dedup();
        if query_terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = query_terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.fields.text, t);
                let query: Box<dyn Query> =
                    Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                (Occur::Should, query)
            })
            .collect();
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(|e| Error::text(&self.dir, e))?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let (id, chunk) = self.stored_chunk(&searcher, address)?;
            hits.push(TextHit {
                id,
                chunk,
                bm25: score,
            });
        }
        Ok(hits)
    }

    /// The stored chunks with these ids (unknown ids are skipped: a vector index may
    /// briefly know a chunk this commit no longer has).
    pub fn chunks_by_ids(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        let searcher = self.reader.searcher();
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
                    .map_err(|e| Error::text(&self.dir, e))?;
                let Some(mut postings) = postings else {
                    continue;
                };
                let mut doc = tantivy::DocSet::doc(&postings);
                while doc != tantivy::TERMINATED && reader.is_deleted(doc) {
                    doc = tantivy::DocSet::advance(&mut postings);
                }
                if doc != tantivy::TERMINATED {
                    found = Some(tantivy::DocAddress::new(ord as u32, doc));
                    break;
                }
            }
            if let Some(address) = found {
                out.push(self.stored_chunk(&searcher, address)?);
            }
        }
        Ok(out)
    }

    fn stored_chunk(
        &self,
        searcher: &tantivy::Searcher,
        address: tantivy::DocAddress,
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
        self.writer
            .add_document(doc!(
                f.id => id,
                f.path => chunk.path.as_str(),
                f.source => chunk.source.as_str(),
                f.start_line => chunk.start_line as u64,
                f.end_line => chunk.end_line as u64,
                f.hash => chunk.hash.as_str(),
                f.text => chunk.text.as_str(),
            ))
            .map_err(|e| Error::text(&self.dir, e))?;
        Ok(())
    }

    /// Deletes every chunk of `path`.
    pub fn delete_path(&self, path: &str) {
        self.writer
            .delete_term(Term::from_field_text(self.fields.path, path));
    }

    pub fn delete_all(&self) -> Result<()> {
        self.writer
            .delete_all_documents()
            .map_err(|e| Error::text(&self.dir, e))?;
        Ok(())
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

    /// Waits for background merges so no thread outlives the writer lock.
    pub fn finish(self) -> Result<()> {
        self.writer
            .wait_merging_threads()
            .map_err(|e| Error::text(&self.dir, e))
    }
}
