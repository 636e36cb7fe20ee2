//! The local store: the [`Store`] traits over one agent directory (see the module docs of
//! `index` for the layout and its invariants).
//!
//! A sync's [`Writer`] holds the directory's writer lock. It writes a generation catalog
//! first: each batch commits to `catalog.redb`, then to the text index tagged with the
//! catalog's `seq` (per batch when it updates the committed generation, so a killed sync
//! keeps its work; once at the end for a new generation, which no reader sees until the
//! manifest names it); then vectors, then `vectors/`, then the manifest. A text index that
//! lags its catalog, or cannot be opened, is rebuilt from the catalog when a writer opens
//! the generation, never re-embedded. A vector stays in the catalog until `vectors/` has
//! saved it, which is then its one copy (`update_vector_index`).

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::agent_dir::{AgentDir, WriterLock};
use super::cache::EmbeddingCache;
use super::catalog::Catalog;
use super::text::{TextIndex, TextWriter};
use super::vector::{Gathering, Layered, Stored, VectorIndex, VectorParams};
use super::view::{self, Views};
use crate::codec;
use crate::error::{Error, Result};
use crate::store::{
    Batch, Begun, FileRecord, Manifest, Reader, Store, StoreCache, Unembedded, Writer,
};

/// Share of deleted chunks the text index may keep before a sync merges them away (they
/// skew BM25 statistics until merged; `tests/hybrid.rs` measures the drift this allows).
const MAX_DELETED_SHARE: f64 = 0.05;

/// One agent directory as a [`Store`].
pub(crate) struct LocalStore {
    dir: AgentDir,
    views: Views,
    /// How `vectors/` is built (`store.vector.enabled = false`: always an exact scan).
    vector_params: VectorParams,
}

impl LocalStore {
    /// The store of `dir`, building vector indexes with `vector_params`.
    pub(crate) fn new(dir: AgentDir, vector_params: VectorParams) -> LocalStore {
        LocalStore {
            dir,
            views: Views::default(),
            vector_params,
        }
    }
}

impl Store for LocalStore {
    fn manifest(&self) -> Result<Option<Manifest>> {
        self.dir.manifest()
    }

    fn reader(&self) -> Result<Arc<dyn Reader>> {
        Ok(self.views.current(&self.dir)?)
    }

    fn invalidate(&self) {
        self.views.invalidate();
    }

    fn cache(&self) -> Option<StoreCache> {
        Some(self.views.cache())
    }

    fn damage(&self) -> Option<String> {
        let manifest = self.dir.manifest().ok()??;
        let vectors = self.dir.generation_dir(manifest.generation).join("vectors");
        VectorIndex::damage_reported(&vectors).then(|| {
            format!(
                "a search found the vector index damaged ({}): searches are keyword-only \
                 until the next sync rebuilds it and embeds the chunks it lost again (from \
                 the embedding cache where it has them)",
                vectors.display()
            )
        })
    }

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        Ok(Box::new(LocalWriter {
            lock: self.dir.lock_writer()?,
            dir: &self.dir,
            vector_params: &self.vector_params,
            open: None,
            committed: None,
            replaced: None,
            cache: None,
        }))
    }
}

/// The generation a [`LocalWriter`] writes.
struct Open {
    generation: u64,
    rebuilt: bool,
    gen_dir: PathBuf,
    catalog: Catalog,
    text: TextIndex,
    /// Opened by the first batch that changes chunks.
    writer: Option<TextWriter>,
    /// The files as the sync found them: a re-indexed or removed file's old chunks.
    known: HashMap<String, FileRecord>,
    /// The catalog seq of the last batch.
    last_seq: u64,
}

/// A sync's writer over one agent directory.
struct LocalWriter<'a> {
    dir: &'a AgentDir,
    lock: WriterLock,
    vector_params: &'a VectorParams,
    open: Option<Open>,
    /// The generation the manifest named when the sync began.
    committed: Option<u64>,
    /// Its catalog, opened read-only on first use (`None` inside: it could not be).
    /// The replaced generation's vector index and catalog path, once asked for.
    replaced: Option<Option<(Option<Layered>, PathBuf)>>,
    cache: Option<EmbeddingCache>,
}

impl LocalWriter<'_> {
    fn open(&self) -> Result<&Open> {
        self.open.as_ref().ok_or_else(not_begun)
    }

    fn open_mut(&mut self) -> Result<&mut Open> {
        self.open.as_mut().ok_or_else(not_begun)
    }

    /// The embedding cache, opened on first use.
    fn cache_mut(&mut self) -> Result<&EmbeddingCache> {
        let cache = match self.cache.take() {
            Some(cache) => cache,
            None => EmbeddingCache::open(&self.dir.root().join("cache.redb"))?,
        };
        Ok(self.cache.insert(cache))
    }
}

/// A writer used before [`Writer::begin`]: a bug of the caller's, said as such.
fn not_begun() -> Error {
    Error::Corrupt {
        path: PathBuf::new(),
        message: "a sync wrote to the store before opening a generation".into(),
    }
}

impl Writer for LocalWriter<'_> {
    fn location(&self) -> String {
        self.dir.root().display().to_string()
    }

    fn manifest(&self) -> Result<Option<Manifest>> {
        self.dir.manifest()
    }

    fn begin(&mut self, current: Option<u64>, rebuild: bool) -> Result<Begun> {
        self.dir.remove_leftovers(&self.lock, current)?;
        self.committed = current;
        if let (false, Some(n)) = (rebuild, current) {
            let gen_dir = self.dir.generation_dir(n);
            let (catalog, text, known) = open_generation(&gen_dir)?;
            let files = known.clone();
            self.open = Some(Open {
                generation: n,
                rebuilt: false,
                gen_dir,
                catalog,
                text,
                writer: None,
                known,
                last_seq: 0,
            });
            return Ok(Begun {
                generation: n,
                rebuilt: false,
                files,
                note: None,
            });
        }
        let generation = self.dir.next_generation(current);
        let gen_dir = self.dir.generation_dir(generation);
        fs::create_dir_all(&gen_dir).map_err(|e| Error::io(&gen_dir, e))?;
        let catalog = Catalog::open(&gen_dir.join("catalog.redb"))?;
        let text = TextIndex::create(&gen_dir.join("text"))?;
        self.open = Some(Open {
            generation,
            rebuilt: true,
            gen_dir,
            catalog,
            text,
            writer: None,
            known: HashMap::new(),
            last_seq: 0,
        });
        Ok(Begun {
            generation,
            rebuilt: true,
            files: HashMap::new(),
            note: None,
        })
    }

    fn apply(&mut self, batch: &Batch) -> Result<()> {
        let Open {
            rebuilt,
            catalog,
            text,
            writer,
            known,
            last_seq,
            ..
        } = self.open_mut()?;
        if batch.is_empty() {
            return Ok(());
        }
        let touches_text = !batch.upserts.is_empty() || !batch.removals.is_empty();
        if touches_text && writer.is_none() {
            *writer = Some(text.writer()?);
        }
        let old_chunks = |path: &str| known.get(path).map(|r| r.chunk_ids.clone());
        // The catalog commit (one thread, mostly I/O) overlaps with feeding the text index;
        // the text commit still follows it, so its payload never runs ahead.
        let seq = std::thread::scope(|scope| -> Result<u64> {
            let catalog_commit = scope.spawn(|| catalog.commit(batch, &old_chunks));
            if let Some(writer) = writer.as_ref().filter(|_| touches_text) {
                let stale = batch
                    .removals
                    .iter()
                    .chain(batch.upserts.iter().map(|u| &u.path));
                for path in stale {
                    writer.delete_path(path);
                }
                for upsert in &batch.upserts {
                    for (id, chunk) in &upsert.chunks {
                        writer.add(id, chunk)?;
                    }
                }
            }
            catalog_commit
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })?;
        *last_seq = seq;
        // A new generation is invisible until the manifest names it, so intermediate text
        // commits would buy nothing: it commits once, at the end. An existing one commits
        // per batch so a crash keeps the work done.
        if let Some(writer) = writer.as_mut().filter(|_| touches_text && !*rebuilt) {
            writer.commit(seq)?;
        }
        Ok(())
    }

    fn finish_keyword(&mut self) -> Result<()> {
        let open = self.open_mut()?;
        if let Some(mut writer) = open.writer.take() {
            if open.rebuilt {
                writer.commit(open.last_seq)?;
            }
            writer.purge_deletes(MAX_DELETED_SHARE)?;
            writer.finish()?;
        }
        Ok(())
    }

    fn unembedded(
        &self,
        passages: bool,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Unembedded>> {
        let catalog = &self.open()?.catalog;
        catalog.chunks_without_vectors(passages, after, limit)
    }

    fn unembedded_count(&self) -> Result<u64> {
        self.open()?.catalog.unembedded_count()
    }

    fn put_vectors(&mut self, vectors: &[(String, Vec<f32>)]) -> Result<()> {
        self.open()?.catalog.put_vectors(vectors).map(drop)
    }

    fn stored_vectors(&mut self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        self.open()?.catalog.vectors_by_ids(ids)
    }

    fn replaced_vectors(&mut self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        if self.replaced.is_none() {
            // Its vector index (and its catalog, for vectors the index did not have yet).
            let replaced = self.committed.and_then(|n| {
                let dir = self.dir.generation_dir(n);
                match Layered::load(&dir.join("vectors"), None) {
                    Ok(index) => Some((index.map(|(index, _)| index), dir.join("catalog.redb"))),
                    Err(err) => {
                        tracing::warn!("{err}; not reusing its vectors");
                        None
                    }
                }
            });
            self.replaced = Some(replaced);
        }
        match self.replaced.as_ref().and_then(Option::as_ref) {
            Some((index, catalog)) => {
                view::vectors_of(index.as_ref(), catalog, ids).or_else(|err| {
                    tracing::warn!("{err}; not reusing the replaced generation's vectors");
                    Ok(vec![None; ids.len()])
                })
            }
            None => Ok(vec![None; ids.len()]),
        }
    }

    fn cached(&mut self, keys: &[String]) -> Result<Vec<Option<Vec<f32>>>> {
        self.cache_mut()?.get_many(keys)
    }

    fn cache(&mut self, items: &[(String, String, Vec<f32>)], max_entries: usize) -> Result<()> {
        // Passages are cached in the int8 form the catalog and the index keep them in.
        let encoded: Vec<(String, Vec<u8>)> = items
            .iter()
            .map(|(key, id, vector)| (key.clone(), codec::encode_for(id, vector)))
            .collect();
        self.cache_mut()?.put_many(&encoded, max_entries)
    }

    fn batch_jobs(&self) -> Result<Option<Vec<u8>>> {
        self.dir.batch_jobs()
    }

    fn write_batch_jobs(&mut self, jobs: Option<&[u8]>) -> Result<()> {
        self.dir.write_batch_jobs(&self.lock, jobs)
    }

    fn index_vectors(&mut self, dims: usize) -> Result<u64> {
        let params = self.vector_params;
        let open = self.open_mut()?;
        update_vector_index(
            &mut open.catalog,
            &open.gen_dir.join("vectors"),
            dims,
            params,
        )
    }

    fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        self.open()?.catalog.files()
    }

    fn chunk_count(&self) -> Result<u64> {
        self.open()?.catalog.chunk_count()
    }

    fn commit(&mut self, manifest: &Manifest) -> Result<()> {
        let (generation, rebuilt) = {
            let open = self.open()?;
            (open.generation, open.rebuilt)
        };
        self.dir.write_manifest(&self.lock, manifest)?;
        if rebuilt {
            self.dir.remove_leftovers(&self.lock, Some(generation))?;
        }
        Ok(())
    }
}

/// Opens an existing generation for writing: its catalog (every file record read, so
/// damage shows now rather than halfway through the sync) and its text index, caught up.
fn open_generation(gen_dir: &Path) -> Result<(Catalog, TextIndex, HashMap<String, FileRecord>)> {
    if !gen_dir.is_dir() {
        return Err(Error::corrupt(gen_dir, "the directory is missing"));
    }
    let catalog = Catalog::open_existing(&gen_dir.join("catalog.redb"))?;
    let known = catalog.files()?.into_iter().collect();
    let text = open_text_caught_up(&catalog, &gen_dir.join("text"))?;
    Ok((catalog, text, known))
}

/// Opens a generation's text index, rebuilding it from the catalog if it is missing,
/// unreadable, or lags the catalog (a crash between the two commits).
fn open_text_caught_up(catalog: &Catalog, text_dir: &Path) -> Result<TextIndex> {
    let seq = catalog.seq()?;
    if let Ok(text) = TextIndex::open(text_dir) {
        if text.committed_seq()? == Some(seq) || (seq == 0 && text.num_docs() == 0) {
            return Ok(text);
        }
        tracing::warn!(dir = %text_dir.display(), "text index lags the catalog; rebuilding it");
    }
    if text_dir.exists() {
        fs::remove_dir_all(text_dir).map_err(|e| Error::io(text_dir, e))?;
    }
    let text = TextIndex::create(text_dir)?;
    let mut writer = text.writer()?;
    catalog.for_each_chunk(|id, chunk| writer.add(id, &chunk))?;
    writer.commit(seq)?;
    writer.finish()?;
    Ok(text)
}

/// The vectors (own and passages) the catalog holds for these chunks, for the vector index
/// in `dir` (its passages gathered in a file there, not in memory).
fn catalog_vectors(
    catalog: &Catalog,
    chunks: &[String],
    dims: usize,
    dir: &Path,
) -> Result<Stored> {
    let mut gathering = Gathering::new(dir, dims)?;
    catalog.visit_chunk_vectors(chunks, |id, bytes| gathering.push(id, bytes))?;
    gathering.finish()
}

/// Brings the vector index in `dir` up to the catalog's vector seq and returns the chunks
/// with a vector.
///
/// A vector lives in the catalog only until the vector index has it: the catalog keeps
/// what changed since the index caught up (`pending_vectors`, and the new chunks' vectors),
/// and the index, once it holds them, is the one copy (`Catalog::vectors_caught_up`).
///
/// When the index caught up last time (its tag is the catalog's `vectors_saved`), the
/// pending changes are the whole difference: they go into one delta, whose cost is the
/// change's, not the index's. Deltas are folded into a new snapshot once they add more
/// chunks than an exact scan serves well (`exact_threshold`) or than a quarter of the
/// snapshot, hide more of the snapshot than its tombstone share allows, or grow a matrix
/// to the size of a graph. That path, and any index that did not catch up (a crash
/// between its save and the catalog's record, damage, an older version), reconciles the
/// index with the catalog: chunks the catalog no longer counts as embedded leave it, and
/// chunks counted as embedded that are in neither (damaged files) are marked unembedded
/// for the next sync to embed again, through the embedding cache where it still has them.
fn update_vector_index(
    catalog: &mut Catalog,
    dir: &Path,
    dims: usize,
    params: &VectorParams,
) -> Result<u64> {
    let seq = catalog.vector_seq()?;
    let saved = VectorIndex::saved(dir).unwrap_or_else(|err| {
        tracing::warn!("{err}; rebuilding the vector index");
        None
    });
    // A graph of f32 points (before index format 4) takes the rebuild below once.
    if let Some(saved) = saved.filter(|s| s.dims == dims && !s.f32_graph) {
        if saved.tag == seq {
            return catalog.vectored();
        }
        if saved.tag == catalog.vectors_saved()? {
            let (removed, added) = catalog.pending_vectors()?;
            let chunks = saved.delta_chunks + added.len();
            let hidden = saved.delta_removed + removed.len();
            let max_hidden = params.max_tombstone_fraction as f64 * saved.slots as f64;
            // A matrix that would now be a graph is rebuilt as one.
            let outgrown = !saved.graph && saved.slots + chunks >= params.exact_threshold;
            // Deltas stay small beside their snapshot (a quarter of it at most), so folding
            // them costs a constant share of the work that came in.
            let max_chunks = params.exact_threshold.min(saved.slots / 4);
            if chunks <= max_chunks && hidden as f64 <= max_hidden && !outgrown {
                let vectors = catalog_vectors(catalog, &added, dims, dir)?;
                VectorIndex::append(dir, saved.tag, seq, removed, vectors)?;
                catalog.vectors_caught_up(seq, &added)?;
                return catalog.vectored();
            }
        }
    }
    // Damage (or no index) starts from nothing; any other failure (a file that cannot be
    // read just now) fails the sync, which the next one retries, rather than count every
    // vector lost and embed it again.
    let layered = match Layered::load(dir, None) {
        Ok(Some((layered, _))) if layered.dims() == dims => Some(layered),
        Ok(_) => None,
        Err(err @ Error::Corrupt { .. }) => {
            tracing::warn!("{err}; rebuilding the vector index");
            None
        }
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!("a vector index file is missing; rebuilding the vector index");
            None
        }
        Err(err) => return Err(err),
    };
    let (removed, _) = catalog.pending_vectors()?;
    let complete = catalog.complete_chunks()?;
    let index = match layered {
        Some(mut layered) => {
            layered.apply_change(removed, catalog_vectors(catalog, &complete, dims, dir)?)?;
            let (_, stray) = catalog.split_embedded(layered.chunk_ids())?;
            layered.apply_change(stray, Stored::new(dims))?;
            layered.fold(params)?
        }
        // Nothing to start from (a first index): built straight from the catalog's vectors,
        // without passing through a change held beside an empty index.
        None => {
            let (live, _) = catalog.split_embedded(complete.clone())?;
            VectorIndex::build_stored(dims, catalog_vectors(catalog, &live, dims, dir)?, params)?
        }
    };
    if index.len() as u64 != catalog.vectored()? {
        let lost = catalog.mark_lost(|id| index.contains(id))?;
        if lost > 0 {
            tracing::warn!(
                "the vector index had lost the vectors of {lost} chunks; the next sync embeds \
                 them again"
            );
        }
    }
    index.save(dir, seq)?;
    catalog.vectors_caught_up(seq, &complete)?;
    // The vectors that just left the catalog were most of it after a first index or a
    // large change; a fold is rare and costs the index's size, so this is where the
    // catalog gives that space back.
    if let Err(err) = catalog.compact_if_sparse() {
        tracing::warn!("{err}; the catalog keeps its free pages until the next fold");
    }
    // Chunks with a vector (their passages' vectors are searched, not counted).
    Ok(index.len() as u64)
}
