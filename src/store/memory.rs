//! A store that keeps everything in maps, for the pipeline's unit tests: the second
//! implementation of the seam, which proves that `sync/` and `search/` need nothing but the
//! traits. Its keyword side is BM25 over the analyzer's terms (k1 1.2, b 0.75, as tantivy
//! scores), its vector side an exact scan where a chunk scores its own cosine or, with
//! passages, the best of theirs. A writer works on a copy of the committed generation and
//! publishes it whole on commit, so readers never see a sync half done.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::analyzer::{query_terms, terms, AnalyzerMode};
use crate::error::{Error, Result};
use crate::passage;
use crate::store::records::idf;
use crate::store::{
    unembedded, Batch, Begun, ChunkKey, ChunkRecord, FileRecord, KeywordHit, Manifest, Reader,
    Store, Unembedded, Writer,
};

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// One generation: files, chunks, vectors (a chunk's under its id, its passages' under
/// `<id>#<n>`) and the manifest that committed it.
#[derive(Debug, Clone, Default)]
struct Generation {
    number: u64,
    manifest: Option<Manifest>,
    files: BTreeMap<String, FileRecord>,
    chunks: BTreeMap<String, ChunkRecord>,
    vectors: BTreeMap<String, Vec<f32>>,
}

/// The in-memory store.
#[derive(Debug, Default)]
pub(crate) struct MemoryStore {
    committed: Mutex<Arc<Generation>>,
    cache: Mutex<HashMap<String, Vec<f32>>>,
    jobs: Mutex<Option<Vec<u8>>>,
    writing: Mutex<bool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Store for MemoryStore {
    fn manifest(&self) -> Result<Option<Manifest>> {
        Ok(lock(&self.committed).manifest.clone())
    }

    fn reader(&self) -> Result<Arc<dyn Reader>> {
        let generation = lock(&self.committed).clone();
        let Some(manifest) = generation.manifest.clone() else {
            return Err(Error::NoIndex {
                dir: PathBuf::from("memory:"),
            });
        };
        Ok(Arc::new(MemoryReader::new(generation, manifest)))
    }

    fn invalidate(&self) {}

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        let mut writing = lock(&self.writing);
        if *writing {
            return Err(Error::IndexBusy {
                dir: PathBuf::from("memory:"),
            });
        }
        *writing = true;
        Ok(Box::new(MemoryWriter {
            store: self,
            draft: None,
        }))
    }
}

/// A committed generation, for searches.
struct MemoryReader {
    generation: Arc<Generation>,
    manifest: Manifest,
    /// Each chunk's analyzed terms, and the average length.
    terms: HashMap<String, Vec<String>>,
    average: f64,
}

impl MemoryReader {
    fn new(generation: Arc<Generation>, manifest: Manifest) -> MemoryReader {
        let terms: HashMap<String, Vec<String>> = generation
            .chunks
            .iter()
            .map(|(id, c)| (id.clone(), terms(&c.text, AnalyzerMode::Index)))
            .collect();
        let total: usize = terms.values().map(Vec::len).sum();
        let average = total as f64 / terms.len().max(1) as f64;
        MemoryReader {
            generation,
            manifest,
            terms,
            average,
        }
    }

    /// How many chunks hold `term`.
    fn frequency(&self, term: &str) -> usize {
        self.terms
            .values()
            .filter(|t| t.iter().any(|x| x == term))
            .count()
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

impl Reader for MemoryReader {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    fn keyword_ready(&self) -> Result<()> {
        Ok(())
    }

    fn keyword(
        &self,
        query: &str,
        limit: usize,
        source: Option<&str>,
        content_only: bool,
    ) -> Result<Vec<KeywordHit>> {
        let wanted = query_terms(query, content_only);
        let idf: Vec<f64> = wanted
            .iter()
            .map(|t| idf(self.terms.len(), self.frequency(t)))
            .collect();
        let mut hits: Vec<KeywordHit> = Vec::new();
        for (id, chunk) in &self.generation.chunks {
            if source.is_some_and(|s| s != chunk.source) {
                continue;
            }
            let terms = &self.terms[id];
            let norm = K1 * (1.0 - B + B * terms.len() as f64 / self.average.max(1.0));
            let score: f64 = wanted
                .iter()
                .zip(&idf)
                .map(|(t, idf)| {
                    let tf = terms.iter().filter(|x| *x == t).count() as f64;
                    idf * tf * (K1 + 1.0) / (tf + norm)
                })
                .sum();
            if score > 0.0 {
                hits.push(KeywordHit {
                    key: chunk.key(id.clone()),
                    bm25: score as f32,
                });
            }
        }
        hits.sort_by(KeywordHit::order);
        hits.truncate(limit);
        Ok(hits)
    }

    fn frequencies(&self, terms: &[String]) -> Result<(usize, Vec<usize>)> {
        let counts = terms.iter().map(|t| self.frequency(t)).collect();
        Ok((self.terms.len(), counts))
    }

    fn has_vectors(&self) -> bool {
        !self.generation.vectors.is_empty()
    }

    fn nearest(&self, query: &[f32], k: usize) -> Option<Vec<(String, f32)>> {
        if !self.has_vectors() {
            return None;
        }
        // A chunk with passages scores the best of theirs (its own vector is their centroid).
        let mut best: BTreeMap<&str, f32> = BTreeMap::new();
        for (id, vector) in &self.generation.vectors {
            if passage::is_passage(id) {
                let entry = best.entry(passage::chunk_of(id)).or_insert(f32::MIN);
                *entry = entry.max(cosine(query, vector));
            }
        }
        for (id, vector) in &self.generation.vectors {
            if !passage::is_passage(id) {
                best.entry(id).or_insert_with(|| cosine(query, vector));
            }
        }
        let mut out: Vec<(String, f32)> = best
            .into_iter()
            .filter(|(id, _)| self.generation.vectors.contains_key(*id))
            .map(|(id, score)| (id.to_string(), score))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.truncate(k);
        Some(out)
    }

    fn chunks(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        Ok(ids
            .iter()
            .filter_map(|id| Some((id.clone(), self.generation.chunks.get(id)?.clone())))
            .collect())
    }

    fn first_chunks(&self, named: &dyn Fn(&str) -> bool) -> Result<Vec<ChunkKey>> {
        let mut first: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
        for (id, c) in &self.generation.chunks {
            if !named(&c.path) {
                continue;
            }
            let entry = first.entry(&c.path).or_insert((c.start_line, id));
            if (c.start_line, id.as_str()) < *entry {
                *entry = (c.start_line, id);
            }
        }
        Ok(first
            .into_iter()
            .map(|(path, (start_line, id))| ChunkKey {
                id: id.to_string(),
                path: path.to_string(),
                start_line,
            })
            .collect())
    }

    fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        Ok(self.generation.files.clone().into_iter().collect())
    }

    fn vectors(&self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        Ok(ids
            .iter()
            .map(|id| self.generation.vectors.get(*id).cloned())
            .collect())
    }
}

/// A sync's writer: a draft of the generation, published by `commit`.
struct MemoryWriter<'a> {
    store: &'a MemoryStore,
    draft: Option<Generation>,
}

impl Drop for MemoryWriter<'_> {
    fn drop(&mut self) {
        *lock(&self.store.writing) = false;
    }
}

impl MemoryWriter<'_> {
    fn draft(&self) -> Result<&Generation> {
        self.draft.as_ref().ok_or_else(not_begun)
    }

    fn draft_mut(&mut self) -> Result<&mut Generation> {
        self.draft.as_mut().ok_or_else(not_begun)
    }
}

fn not_begun() -> Error {
    Error::Corrupt {
        path: PathBuf::from("memory:"),
        message: "a sync wrote to the store before opening a generation".into(),
    }
}

impl Writer for MemoryWriter<'_> {
    fn location(&self) -> String {
        "memory:".into()
    }

    fn manifest(&self) -> Result<Option<Manifest>> {
        self.store.manifest()
    }

    fn begin(&mut self, current: Option<u64>, rebuild: bool) -> Result<Begun> {
        let committed = lock(&self.store.committed).clone();
        let draft = match rebuild || current.is_none() {
            true => Generation {
                number: current.map_or(1, |n| n + 1),
                ..Generation::default()
            },
            false => (*committed).clone(),
        };
        let begun = Begun {
            generation: draft.number,
            rebuilt: rebuild || current.is_none(),
            files: draft.files.clone().into_iter().collect(),
            note: None,
        };
        self.draft = Some(draft);
        Ok(begun)
    }

    fn apply(&mut self, batch: &Batch) -> Result<()> {
        let draft = self.draft_mut()?;
        let stale = batch
            .removals
            .iter()
            .chain(batch.upserts.iter().map(|u| &u.path));
        for path in stale {
            if let Some(old) = draft.files.remove(path) {
                for id in &old.chunk_ids {
                    draft.chunks.remove(id);
                    draft
                        .vectors
                        .retain(|v, _| passage::chunk_of(v) != id.as_str());
                }
            }
        }
        for upsert in &batch.upserts {
            draft
                .files
                .insert(upsert.path.clone(), upsert.record.clone());
            for (id, chunk) in &upsert.chunks {
                draft.chunks.insert(id.clone(), chunk.clone());
            }
        }
        for (path, record) in &batch.touches {
            draft.files.insert(path.clone(), record.clone());
        }
        Ok(())
    }

    fn finish_keyword(&mut self) -> Result<()> {
        self.draft().map(drop)
    }

    fn unembedded(
        &self,
        passages: bool,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Unembedded>> {
        let draft = self.draft()?;
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        let mut out = Vec::new();
        let missing = draft
            .chunks
            .range::<str, _>((from, Bound::Unbounded))
            .filter(|(id, _)| !draft.vectors.contains_key(*id));
        for (id, chunk) in missing.take(limit) {
            let mut has = |id: &str| Ok(draft.vectors.contains_key(id));
            out.extend(unembedded(id, chunk.clone(), passages, &mut has)?);
        }
        Ok(out)
    }

    fn unembedded_count(&self) -> Result<u64> {
        let draft = self.draft()?;
        let missing = draft
            .chunks
            .keys()
            .filter(|id| !draft.vectors.contains_key(*id));
        Ok(missing.count() as u64)
    }

    fn put_vectors(&mut self, vectors: &[(String, Vec<f32>)]) -> Result<()> {
        let draft = self.draft_mut()?;
        for (id, vector) in vectors {
            if draft.chunks.contains_key(passage::chunk_of(id)) {
                draft.vectors.insert(id.clone(), vector.clone());
            }
        }
        Ok(())
    }

    fn stored_vectors(&mut self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        let draft = self.draft()?;
        Ok(ids
            .iter()
            .map(|id| draft.vectors.get(*id).cloned())
            .collect())
    }

    fn replaced_vectors(&mut self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        let committed = lock(&self.store.committed).clone();
        Ok(ids
            .iter()
            .map(|id| committed.vectors.get(*id).cloned())
            .collect())
    }

    fn cached(&mut self, keys: &[String]) -> Result<Vec<Option<Vec<f32>>>> {
        let cache = lock(&self.store.cache);
        Ok(keys.iter().map(|k| cache.get(k).cloned()).collect())
    }

    fn cache(&mut self, items: &[(String, String, Vec<f32>)], _max_entries: usize) -> Result<()> {
        let mut cache = lock(&self.store.cache);
        for (key, _, vector) in items {
            cache.insert(key.clone(), vector.clone());
        }
        Ok(())
    }

    fn batch_jobs(&self) -> Result<Option<Vec<u8>>> {
        Ok(lock(&self.store.jobs).clone())
    }

    fn write_batch_jobs(&mut self, jobs: Option<&[u8]>) -> Result<()> {
        *lock(&self.store.jobs) = jobs.map(<[u8]>::to_vec);
        Ok(())
    }

    fn index_vectors(&mut self, dims: usize) -> Result<u64> {
        let draft = self.draft()?;
        Ok(draft
            .chunks
            .keys()
            .filter(|id| draft.vectors.get(*id).is_some_and(|v| v.len() == dims))
            .count() as u64)
    }

    fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        Ok(self.draft()?.files.clone().into_iter().collect())
    }

    fn chunk_count(&self) -> Result<u64> {
        Ok(self.draft()?.chunks.len() as u64)
    }

    fn commit(&mut self, manifest: &Manifest) -> Result<()> {
        let mut draft = self.draft()?.clone();
        draft.manifest = Some(manifest.clone());
        *lock(&self.store.committed) = Arc::new(draft);
        Ok(())
    }
}
