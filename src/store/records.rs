//! The records a store keeps and hands out, whatever it keeps them in: files, chunks, the
//! keys ranking works on, keyword hits, the vectors a sync has yet to compute, and the batch
//! of file changes a sync commits at once.

use serde::{Deserialize, Serialize};

use crate::annotation::Annotations;
use crate::passage;

/// What a store knows about one indexed file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    pub source: String,
    /// sha256 of the file's bytes.
    pub hash: String,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch (the fast "unchanged" check).
    pub mtime_ns: i128,
    pub chunk_ids: Vec<String>,
    /// The file had invalid UTF-8 (indexed with U+FFFD replacements; shown in `status`).
    #[serde(default)]
    pub lossy: bool,
}

/// One chunk, with everything needed to rebuild derived indexes and to answer a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    /// Workspace-relative path of the file.
    pub path: String,
    /// `memory` (or `sessions`).
    pub source: String,
    /// First line (1-based).
    pub start_line: usize,
    /// Last line (1-based, inclusive).
    pub end_line: usize,
    /// sha256 of `text`, lowercase hex.
    pub hash: String,
    /// The chunk's text.
    pub text: String,
    /// What the embedder is told the chunk is from (`title`): empty for none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// Its entry's annotations (2026.9 semantics; default otherwise).
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
}

impl ChunkRecord {
    /// This chunk's ranking key, given its id.
    pub fn key(&self, id: String) -> ChunkKey {
        ChunkKey {
            id,
            path: self.path.clone(),
            start_line: self.start_line,
        }
    }
}

/// What ranking needs to know of a chunk: its id and the SPEC §5.4 tie-break keys (path,
/// start line). Searches rank keys and read the full record only for the chunks they
/// return: reading every candidate's stored chunk was a third of a search at 100k chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkKey {
    pub id: String,
    pub path: String,
    pub start_line: usize,
}

/// A vector not computed yet, a chunk's own or one of its passages': what embedding it
/// needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Unembedded {
    /// The chunk's id, or its passage's ([`passage::id`]).
    pub id: String,
    /// sha256 of `text`.
    pub hash: String,
    /// Its title (empty for none).
    pub title: String,
    pub text: String,
    /// For a chunk with passages, how many it has: its vector is then their
    /// [`passage::centroid`], never an embedding of `text`. 0 for other chunks and for
    /// passages.
    pub passages: usize,
}

impl Unembedded {
    /// What identifies its vector for one embedder: the text's hash, and the title when
    /// there is one (a chunk under a renamed heading embeds anew).
    pub fn input_hash(&self) -> String {
        match self.title.is_empty() {
            true => self.hash.clone(),
            false => crate::digest::sha256_hex(format!("{}\n{}", self.title, self.hash).as_bytes()),
        }
    }
}

/// A file (re)indexed, with its new chunks as `(id, record)`.
#[derive(Debug)]
pub struct Upsert {
    pub path: String,
    pub record: FileRecord,
    pub chunks: Vec<(String, ChunkRecord)>,
}

/// A batch of changes committed atomically.
#[derive(Debug, Default)]
pub struct Batch {
    pub upserts: Vec<Upsert>,
    /// Files whose content is unchanged but whose size/mtime record is refreshed.
    pub touches: Vec<(String, FileRecord)>,
    /// Files that vanished.
    pub removals: Vec<String>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.upserts.is_empty() && self.touches.is_empty() && self.removals.is_empty()
    }
}

/// A keyword hit: the chunk's ranking key and its raw BM25 score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordHit {
    pub key: ChunkKey,
    pub bm25: f32,
}

impl KeywordHit {
    /// The order every store gives its keyword hits in: best first, equal scores by path,
    /// then line, then id, whatever the store's layout or history.
    pub fn order(a: &KeywordHit, b: &KeywordHit) -> std::cmp::Ordering {
        b.bm25
            .total_cmp(&a.bm25)
            .then_with(|| a.key.path.cmp(&b.key.path))
            .then(a.key.start_line.cmp(&b.key.start_line))
            .then_with(|| a.key.id.cmp(&b.key.id))
    }
}

/// The vectors chunk `id` still needs, given which ids already have one (`has`): with
/// `passages`, its passages' ([`passage::numbered`]) before its own, which is then their
/// centroid ([`Unembedded::passages`])
/// ([`Unembedded`]'s order is the order they must be stored in: a chunk with its own vector
/// counts as complete). What every store's `Writer::unembedded` lists.
pub fn unembedded(
    id: &str,
    chunk: ChunkRecord,
    passages: bool,
    has: &mut dyn FnMut(&str) -> crate::error::Result<bool>,
) -> crate::error::Result<Vec<Unembedded>> {
    let mut out = Vec::new();
    let mut count = 0;
    if passages {
        for (n, text) in passage::numbered(&chunk.text) {
            count = n;
            let passage_id = passage::id(id, n);
            if !has(&passage_id)? {
                out.push(Unembedded {
                    id: passage_id,
                    hash: crate::digest::sha256_hex(text.as_bytes()),
                    title: chunk.title.clone(),
                    text,
                    passages: 0,
                });
            }
        }
    }
    out.push(Unembedded {
        id: id.to_string(),
        hash: chunk.hash,
        title: chunk.title,
        text: chunk.text,
        passages: count,
    });
    Ok(out)
}

/// The embedding cache's key of a text for one embedder (`embedder_key` covers provider,
/// model, provider key and prompt; `input_hash` is [`Unembedded::input_hash`]): the same in
/// every store, so a vector is reused wherever the same embedder would compute it again.
pub fn cache_key(embedder_key: &str, input_hash: &str) -> String {
    crate::digest::sha256_hex(format!("{embedder_key}\n{input_hash}").as_bytes())
}

/// BM25's IDF of a term that `frequency` of `documents` chunks hold, as tantivy and
/// LanceDB compute it.
pub fn idf(documents: usize, frequency: usize) -> f64 {
    let (n, f) = (documents as f64, frequency as f64);
    (1.0 + (n - f + 0.5) / (f + 0.5)).ln()
}

/// The share of `wanted` (with their `frequencies` among `documents` chunks), each term
/// weighed by its IDF, that `held` holds; 1 when `wanted` is empty.
pub(crate) fn query_share(
    wanted: &[String],
    documents: usize,
    frequencies: &[usize],
    held: &[String],
) -> f64 {
    let (mut total, mut found) = (0.0, 0.0);
    for (term, &frequency) in wanted.iter().zip(frequencies) {
        let idf = idf(documents, frequency);
        total += idf;
        if held.contains(term) {
            found += idf;
        }
    }
    if total > 0.0 {
        found / total
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(terms: &[&str]) -> Vec<String> {
        terms.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn query_share_weighs_terms_by_idf() {
        // (wanted, frequencies among 10 chunks, held, share)
        let rare = idf(10, 1);
        let common = idf(10, 9);
        type Row<'a> = (&'a [&'a str], &'a [usize], &'a [&'a str], f64);
        let table: &[Row] = &[
            (&[], &[], &["gym"], 1.0),
            (&["gym"], &[1], &["gym"], 1.0),
            (&["gym"], &[1], &["pool"], 0.0),
            (&["gym", "the"], &[1, 9], &["gym"], rare / (rare + common)),
            (&["gym", "the"], &[1, 9], &["the"], common / (rare + common)),
        ];
        for &(wanted, frequencies, held, share) in table {
            let got = query_share(&strings(wanted), 10, frequencies, &strings(held));
            assert!((got - share).abs() < 1e-12, "{wanted:?} in {held:?}: {got}");
        }
        assert!(rare > common && common > 0.0);
    }
}
