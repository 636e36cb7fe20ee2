//! The local store's [`Reader`]: one generation's text and vector indexes, opened from the
//! manifest and reopened when a writer swaps generations.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::agent_dir::AgentDir;
use super::catalog::Catalog;
use super::open::{self, Cell};
use super::text::TextIndex;
use super::vector::{Layered, VectorIndex};
use crate::error::{Error, Result};
use crate::store::{ChunkKey, ChunkRecord, FileRecord, KeywordHit, Manifest, Reader, StoreCache};

/// What a search reads: one generation's text index and vector index.
pub(super) struct GenerationView {
    manifest: Manifest,
    /// The text index, or why it cannot be opened (searches then fall back to vectors,
    /// whose chunks come from the catalog; the next sync rebuilds the text index).
    text: std::result::Result<TextIndex, Arc<Error>>,
    vectors: Option<Layered>,
    /// The bytes of the vector files it read into memory (what the budget counts).
    vector_bytes: u64,
    catalog_path: PathBuf,
}

/// The bytes of the files in `dir` (0 when it cannot be listed).
fn files_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

impl GenerationView {
    /// Opens the generation the manifest names; `cached` is returned when it is still that
    /// view (and not `stale`), and otherwise lends its vector snapshot when the new view's
    /// is the same (only the deltas after it are read). A writer may swap generations
    /// between reading the manifest and opening the index (the old generation is then
    /// gone), so a text index that fails to open makes it read the manifest again, up to
    /// three times.
    fn open(
        dir: &AgentDir,
        cached: Option<&Arc<GenerationView>>,
        stale: bool,
    ) -> Result<Arc<GenerationView>> {
        let mut attempts = 0;
        loop {
            let manifest = dir.manifest()?.ok_or_else(|| Error::NoIndex {
                dir: dir.root().to_path_buf(),
            })?;
            if let Some(view) = cached.filter(|v| !stale && v.manifest == manifest) {
                return Ok(view.clone());
            }
            let gen_dir = dir.generation_dir(manifest.generation);
            let text_dir = gen_dir.join("text");
            let text = match TextIndex::open(&text_dir) {
                Ok(text) => Ok(text),
                Err(_) if attempts < 3 => {
                    attempts += 1;
                    continue;
                }
                Err(err) => {
                    tracing::warn!("{err}; searching without the keyword index");
                    Err(Arc::new(err))
                }
            };
            let previous = cached
                .filter(|v| v.manifest.generation == manifest.generation)
                .and_then(|v| v.vectors.as_ref());
            let vectors = match Layered::load(&gen_dir.join("vectors"), previous) {
                Ok(loaded) => loaded.map(|(index, _)| index),
                Err(err) => {
                    tracing::warn!("{err}; searching without vectors");
                    if matches!(err, Error::Corrupt { .. }) {
                        VectorIndex::report_damage(&gen_dir.join("vectors"));
                    }
                    None
                }
            };
            return Ok(Arc::new(GenerationView {
                manifest,
                text,
                vectors,
                vector_bytes: files_bytes(&gen_dir.join("vectors")),
                catalog_path: gen_dir.join("catalog.redb"),
            }));
        }
    }

    /// The text index, or the error that kept it from opening.
    fn text(&self) -> Result<&TextIndex> {
        self.text.as_ref().map_err(|err| Error::Shared(err.clone()))
    }

    /// The one place a reader opens the catalog: only when the text index cannot be opened.
    /// It is opened read-only per call on purpose: a reader holding it open would keep the
    /// writer (the sync that rebuilds the text index) out.
    fn catalog_chunks_by_ids(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        Catalog::open_read_only(&self.catalog_path)?.chunks_by_ids(ids)
    }
}

impl Reader for GenerationView {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    fn keyword_ready(&self) -> Result<()> {
        self.text().map(drop)
    }

    fn keyword(
        &self,
        query: &str,
        limit: usize,
        source: Option<&str>,
        content_only: bool,
    ) -> Result<Vec<KeywordHit>> {
        self.text()?.search(query, limit, source, content_only)
    }

    fn frequencies(&self, terms: &[String]) -> Result<(usize, Vec<usize>)> {
        self.text()?.frequencies(terms)
    }

    fn has_vectors(&self) -> bool {
        self.vectors.is_some()
    }

    fn nearest(&self, query: &[f32], k: usize) -> Option<Vec<(String, f32)>> {
        self.vectors.as_ref().map(|v| v.search(query, k))
    }

    /// From the text index, else from the catalog.
    fn keys(&self, ids: &[String]) -> Result<Vec<ChunkKey>> {
        match &self.text {
            Ok(text) => text.keys_by_ids(ids),
            Err(_) => Ok(self
                .catalog_chunks_by_ids(ids)?
                .into_iter()
                .map(|(id, chunk)| chunk.key(id))
                .collect()),
        }
    }

    /// From the text index, else from the catalog.
    fn chunks(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        match &self.text {
            Ok(text) => text.chunks_by_ids(ids),
            Err(_) => self.catalog_chunks_by_ids(ids),
        }
    }

    fn first_chunks(&self, named: &dyn Fn(&str) -> bool) -> Result<Vec<ChunkKey>> {
        self.text()?.first_chunks(named)
    }

    fn files(&self) -> Result<Vec<(String, FileRecord)>> {
        Catalog::open_read_only(&self.catalog_path)?.files()
    }

    /// From the vector index, else from the catalog (which keeps a vector until the vector
    /// index has it).
    fn vectors(&self, ids: &[&str]) -> Result<Vec<Option<Vec<f32>>>> {
        vectors_of(self.vectors.as_ref(), &self.catalog_path, ids)
    }
}

/// The vectors of these chunks or passages: from the generation's vector index `index`,
/// else from its catalog at `catalog_path`, opened read-only only when some are left.
pub(super) fn vectors_of(
    index: Option<&Layered>,
    catalog_path: &Path,
    ids: &[&str],
) -> Result<Vec<Option<Vec<f32>>>> {
    let mut out = match index {
        Some(index) => index.vectors_of(ids),
        None => vec![None; ids.len()],
    };
    let left: Vec<usize> = (0..ids.len()).filter(|&i| out[i].is_none()).collect();
    if !left.is_empty() {
        let wanted: Vec<&str> = left.iter().map(|&i| ids[i]).collect();
        let found = Catalog::open_read_only(catalog_path)?.vectors_by_ids(&wanted)?;
        for (i, vector) in left.into_iter().zip(found) {
            out[i] = vector;
        }
    }
    Ok(out)
}

/// The current generation's view, kept between searches and reopened when the manifest
/// changes (another process, or this one, committed a sync), within the process's budget
/// of open generations (`open`).
pub(super) struct Views {
    id: u64,
    cached: Arc<Cell<GenerationView>>,
    /// Set when this process committed: the cached view is kept only to lend its vector
    /// snapshot to the next one.
    stale: AtomicBool,
    opens: Mutex<Opens>,
}

/// How this process has opened the agent's generations.
#[derive(Default)]
struct Opens {
    cold: u64,
    last_cold: Option<bool>,
    last_open_ms: Option<u64>,
}

impl Default for Views {
    fn default() -> Views {
        Views {
            id: open::next_id(),
            cached: Arc::default(),
            stale: AtomicBool::new(false),
            opens: Mutex::default(),
        }
    }
}

impl Drop for Views {
    fn drop(&mut self) {
        open::budget().forget(self.id);
    }
}

impl Views {
    /// The view of the generation the manifest names now.
    pub(super) fn current(&self, dir: &AgentDir) -> Result<Arc<GenerationView>> {
        let started = Instant::now();
        let (view, cold) = {
            let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
            let stale = self.stale.swap(false, Ordering::AcqRel);
            let view = GenerationView::open(dir, cached.as_ref(), stale).inspect_err(|_| {
                self.stale.fetch_or(stale, Ordering::AcqRel);
            })?;
            let cold = !cached.as_ref().is_some_and(|c| Arc::ptr_eq(c, &view));
            *cached = Some(view.clone());
            (view, cold)
        };
        {
            let mut opens = self.opens.lock().unwrap_or_else(|e| e.into_inner());
            opens.last_cold = Some(cold);
            if cold {
                opens.cold += 1;
                opens.last_open_ms = Some(started.elapsed().as_millis() as u64);
            }
        }
        open::budget().used_now(self.id, &self.cached, view.vector_bytes);
        Ok(view)
    }

    /// Marks the cached view stale (after this process committed a sync): the next search
    /// opens the generation again, reading only what changed of its vectors.
    pub(super) fn invalidate(&self) {
        self.stale.store(true, Ordering::Release);
    }

    /// What the process holds open, for `status`.
    pub(super) fn cache(&self) -> StoreCache {
        let opens = self.opens.lock().unwrap_or_else(|e| e.into_inner());
        let budget = open::budget();
        StoreCache {
            limit_bytes: budget.limit(),
            used_bytes: budget.used(),
            cold_opens: opens.cold,
            last_search: opens
                .last_cold
                .map(|cold| if cold { "cold" } else { "warm" }),
            last_open_ms: opens.last_open_ms,
            index_bytes: None,
        }
    }
}
