//! # memoria
//!
//! An embedded search engine for AI agents' Markdown memory, compatible with OpenClaw's
//! `memory_search` / `memory_get` tools: one agent directory per agent, BM25 keyword search
//! with a multilingual analyzer, OpenClaw-identical chunk line ranges and tool JSON.
//!
//! ```no_run
//! use memoria::config::{self, Env};
//! use memoria::{Memory, SearchOptions};
//!
//! # fn main() -> memoria::Result<()> {
//! let env = Env::from_process();
//! let settings = config::resolve(&config::load_config_file(&env)?, "main", &env)?;
//! let memory = Memory::open(settings)?;
//! memory.sync(false, &|_| {})?;
//! let payload = memory.memory_search("what did we decide about the database?", &SearchOptions::default());
//! println!("{}", serde_json::to_string_pretty(&payload).unwrap());
//! # Ok(()) }
//! ```
//!
//! Module map (see `docs/ARCHITECTURE.md`): [`config`] → [`workspace`] → [`chunk`] →
//! [`index`] → [`sync`] → [`search`] → [`tools`], with [`Memory`] as the façade the CLI uses.

pub mod chunk;
pub mod config;
pub mod embed;
pub mod error;
pub mod eval;
pub mod index;
pub mod search;
pub mod sync;
pub mod tools;
pub mod workspace;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;

use chunk::sha256_hex;
use config::{ProviderKind, Settings};
use embed::model::{resolve_model, ModelSearch};
use embed::{EmbedKind, Embedder};
use index::catalog::{ChunkKey, ChunkRecord};
use index::text::TextIndex;
use index::vector::{VectorIndex, VectorParams};
use index::{AgentDir, Identity, Manifest};
use search::hybrid::{FusionParams, KeywordCandidate, VectorCandidate};
use search::{Hit, Mode, Ranked};
use sync::{EmbedPlan, SyncProgress, SyncReport};
use tools::{Fallback, GetPayload, SearchPayload, Served};
use workspace::Discovery;

pub use error::{Error, Result};

/// Per-call search options; unset fields come from the configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchOptions {
    pub max_results: Option<usize>,
    pub min_score: Option<f64>,
    /// The caller is a group or channel chat (citations `auto` are then hidden).
    pub group_context: bool,
}

/// Ranked hits and what served them.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResponse {
    pub hits: Vec<search::Hit>,
    pub served: Served,
}

/// What `status` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub agent_id: String,
    pub agent_dir: String,
    pub workspace: String,
    pub generation: Option<u64>,
    pub identity: Identity,
    pub files: usize,
    pub chunks: u64,
    pub bytes: u64,
    /// Chunks with a vector (absent for a keyword-only index).
    pub vectors: Option<u64>,
    pub mode: String,
    pub provider: String,
    pub model: Option<String>,
    pub fallback: Option<Fallback>,
    /// True when the workspace changed since the last sync.
    pub dirty: bool,
    pub synced_at: Option<u64>,
    pub warnings: Vec<String>,
}

/// Where a [`Memory`]'s embedder comes from.
pub enum EmbedderChoice {
    /// Resolve from the settings (`provider`, `local.modelPath`, …); `model_dir` is an
    /// explicit model directory (`--model DIR`) that wins over everything else.
    FromSettings { model_dir: Option<PathBuf> },
    /// Use this embedder (library users with their own model, tests).
    Given {
        embedder: Arc<dyn Embedder>,
        provider: String,
        model: String,
    },
}

/// The embedder actually available, or why there is none.
struct EmbedderState {
    embedder: Option<Arc<dyn Embedder>>,
    provider: String,
    model: Option<String>,
    /// Set when the configured provider could not be used.
    fallback: Option<Fallback>,
}

/// What a search reads: one generation's text index and vector index.
struct GenerationView {
    manifest: Manifest,
    /// The text index, or why it cannot be opened (searches then fall back to vectors,
    /// whose chunks come from the catalog; the next sync rebuilds the text index).
    text: std::result::Result<TextIndex, (PathBuf, String)>,
    vectors: Option<VectorIndex>,
    catalog_path: PathBuf,
}

impl GenerationView {
    fn text(&self) -> Result<&TextIndex> {
        self.text
            .as_ref()
            .map_err(|(path, message)| Error::TextIndex {
                path: path.clone(),
                message: message.clone(),
            })
    }

    /// Ranking keys of vector hits: from the text index, else from the catalog.
    fn keys_by_ids(&self, ids: &[String]) -> Result<Vec<ChunkKey>> {
        match &self.text {
            Ok(text) => text.keys_by_ids(ids),
            Err(_) => Ok(self
                .catalog_chunks_by_ids(ids)?
                .into_iter()
                .map(|(id, chunk)| chunk.key(id))
                .collect()),
        }
    }

    /// Chunk records of the hits a search returns: from the text index, else from the
    /// catalog.
    fn chunks_by_ids(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        match &self.text {
            Ok(text) => text.chunks_by_ids(ids),
            Err(_) => self.catalog_chunks_by_ids(ids),
        }
    }

    /// The catalog is opened per call on purpose: a reader holding it open would keep the
    /// writer (the sync that rebuilds the text index) out.
    fn catalog_chunks_by_ids(&self, ids: &[String]) -> Result<Vec<(String, ChunkRecord)>> {
        index::catalog::Catalog::open_read_only(&self.catalog_path)?.chunks_by_ids(ids)
    }
}

/// One agent's memory: configuration, workspace and agent directory.
pub struct Memory {
    settings: Settings,
    dir: AgentDir,
    choice: EmbedderChoice,
    embedder: OnceLock<EmbedderState>,
    view: Mutex<Option<Arc<GenerationView>>>,
}

impl Memory {
    /// Opens the agent directory named by `settings` (creating it if needed); the embedder
    /// is resolved from the settings when first needed.
    pub fn open(settings: Settings) -> Result<Memory> {
        Self::open_with(settings, EmbedderChoice::FromSettings { model_dir: None })
    }

    /// Like [`Memory::open`] with an explicit embedder choice.
    pub fn open_with(settings: Settings, choice: EmbedderChoice) -> Result<Memory> {
        if !settings.enabled {
            return Err(Error::Disabled);
        }
        let dir = AgentDir::open(&settings.store.dir)?;
        Ok(Memory {
            settings,
            dir,
            choice,
            embedder: OnceLock::new(),
            view: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn agent_dir(&self) -> &AgentDir {
        &self.dir
    }

    fn embedder_state(&self) -> &EmbedderState {
        self.embedder.get_or_init(|| match &self.choice {
            EmbedderChoice::Given {
                embedder,
                provider,
                model,
            } => EmbedderState {
                embedder: Some(embedder.clone()),
                provider: provider.clone(),
                model: Some(model.clone()),
                fallback: None,
            },
            EmbedderChoice::FromSettings { model_dir } => {
                resolve_embedder(&self.settings, model_dir.clone())
            }
        })
    }

    /// The embedding provider and model serving searches (`"none"` when keyword-only).
    pub fn provider(&self) -> (&str, Option<&str>) {
        let state = self.embedder_state();
        (&state.provider, state.model.as_deref())
    }

    /// The embedder in use, if any (loads it on first call).
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder_state().embedder.as_ref()
    }

    /// The index identity under the current settings and embedder.
    pub fn identity(&self) -> Identity {
        let state = self.embedder_state();
        Identity {
            chunk_tokens: self.settings.chunking.tokens,
            chunk_overlap: self.settings.chunking.overlap,
            sources: self
                .settings
                .sources
                .iter()
                .map(|s| s.as_str().to_string())
                .collect(),
            provider: state.provider.clone(),
            model: state.model.clone(),
            embedder: state.embedder.as_ref().map(|e| e.fingerprint().to_string()),
            dims: state.embedder.as_ref().map(|e| e.dims()),
        }
    }

    fn discover(&self) -> Discovery {
        workspace::discover(&self.settings.workspace, &self.settings.extra_paths)
    }

    /// Brings the index up to date with the workspace (a full rebuild into a new generation
    /// when `force` or when the identity changed), embedding new chunks when an embedder is
    /// available. Fails with [`Error::IndexBusy`] when another process is writing.
    pub fn sync(&self, force: bool, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        let lock = self.dir.lock_writer()?;
        let discovery = self.discover();
        self.sync_locked(&lock, &discovery, force, progress)
    }

    fn sync_locked(
        &self,
        lock: &index::WriterLock,
        discovery: &Discovery,
        force: bool,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<SyncReport> {
        let params = chunk::ChunkParams {
            tokens: self.settings.chunking.tokens,
            overlap: self.settings.chunking.overlap,
        };
        let state = self.embedder_state();
        let identity = self.identity();
        let plan = state.embedder.as_ref().map(|embedder| EmbedPlan {
            embedder: embedder.as_ref(),
            cache_key: sha256_hex(
                format!(
                    "{}\n{}\n{}",
                    identity.provider,
                    identity.model.as_deref().unwrap_or(""),
                    embedder.fingerprint()
                )
                .as_bytes(),
            ),
            cache_enabled: self.settings.cache.enabled,
            cache_max_entries: self.settings.cache.max_entries,
            vector_params: self.vector_params(),
        });
        let request = sync::SyncRequest {
            discovery,
            identity: &identity,
            params,
            force,
            embed: plan.as_ref(),
        };
        let report = sync::sync(&self.dir, lock, &request, progress)?;
        *self.view.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(report)
    }

    /// `store.vector.enabled = false` means an exact in-process scan, never a graph.
    fn vector_params(&self) -> VectorParams {
        let mut params = VectorParams::default();
        if !self.settings.store.vector_enabled {
            params.exact_threshold = usize::MAX;
        }
        params
    }

    /// True when the index is missing, has another identity, or predates workspace changes.
    fn is_dirty(&self, manifest: Option<&Manifest>, discovery: &Discovery) -> bool {
        manifest.is_none_or(|m| {
            m.identity != self.identity()
                || m.format != index::FORMAT_VERSION
                || m.stats.workspace_digest != sync::workspace_digest(discovery)
                || m.stats.embedding.as_ref().is_some_and(|e| e.missing > 0)
        })
    }

    /// Syncs before searching when the workspace changed (`sync.onSearch`), unless another
    /// process is writing: a search never waits for a sync.
    fn sync_if_dirty(&self) -> Result<()> {
        if !self.settings.sync.on_search {
            return Ok(());
        }
        let manifest = self.dir.manifest().ok().flatten();
        let discovery = self.discover();
        if !self.is_dirty(manifest.as_ref(), &discovery) {
            return Ok(());
        }
        match self.dir.lock_writer() {
            Ok(lock) => match self.sync_locked(&lock, &discovery, false, &|_| {}) {
                Ok(_) => Ok(()),
                Err(err) if manifest.is_some() => {
                    tracing::warn!("sync before search failed, searching the last index: {err}");
                    Ok(())
                }
                Err(err) => Err(err),
            },
            Err(Error::IndexBusy { .. }) => {
                tracing::warn!("index busy: searching the last committed index");
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    /// The current generation's indexes, reopened when the manifest changed.
    fn view(&self) -> Result<Arc<GenerationView>> {
        let mut cached = self.view.lock().unwrap_or_else(|e| e.into_inner());
        // A writer may swap generations between reading the manifest and opening the
        // index; the old generation is then gone, so read the manifest again.
        let mut attempts = 0;
        loop {
            let manifest = self.dir.manifest()?.ok_or_else(|| Error::NoIndex {
                dir: self.dir.root().to_path_buf(),
            })?;
            if let Some(view) = cached.as_ref().filter(|v| v.manifest == manifest) {
                return Ok(view.clone());
            }
            let gen_dir = self.dir.generation_dir(manifest.generation);
            let text_dir = gen_dir.join("text");
            let text = match TextIndex::open(&text_dir) {
                Ok(text) => Ok(text),
                // The generation may have been swapped under us: read the manifest again.
                Err(_) if attempts < 3 => {
                    attempts += 1;
                    continue;
                }
                Err(err) => {
                    tracing::warn!("{err}; searching without the keyword index");
                    Err((text_dir, err.to_string()))
                }
            };
            let vectors = match VectorIndex::load(&gen_dir.join("vectors")) {
                Ok(loaded) => loaded.map(|(index, _)| index),
                Err(err) => {
                    tracing::warn!("{err}; searching without vectors");
                    None
                }
            };
            let view = Arc::new(GenerationView {
                manifest,
                text,
                vectors,
                catalog_path: gen_dir.join("catalog.redb"),
            });
            *cached = Some(view.clone());
            return Ok(view);
        }
    }

    /// Searches memory: the ranked hits and what served them (SPEC §5).
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
        let state = self.embedder_state();
        let mut served = Served {
            provider: state.provider.clone(),
            model: state.model.clone(),
            mode: if state.embedder.is_some() {
                Mode::Hybrid
            } else {
                Mode::FtsOnly
            },
            fallback: state.fallback.clone(),
        };
        let query = query.trim();
        if query.is_empty() {
            return Ok(SearchResponse {
                hits: Vec::new(),
                served,
            });
        }
        self.sync_if_dirty()?;
        let q = &self.settings.query;
        let max_results = options.max_results.unwrap_or(q.max_results).max(1);
        let min_score = options
            .min_score
            .unwrap_or(f64::from(q.min_score))
            .clamp(0.0, 1.0);
        // Candidates for the widest tier the request needs (see `search::tiered_top`).
        let multiplier = q.hybrid.candidate_multiplier;
        let base = q.max_results.max(1);
        let pool = config::candidate_pool(search::tier_size(max_results, base), multiplier);
        let view = self.view()?;

        // Vector side: embed the query, nearest chunks (SPEC §5.3); keyword side (§5.2).
        // They are independent, so they run at the same time. With hybrid disabled the
        // keyword side only runs when the vector side cannot serve.
        let hybrid = q.hybrid.enabled;
        let run_vector = || {
            state
                .embedder
                .as_ref()
                .map(|embedder| self.vector_candidates(embedder.as_ref(), &view, query, pool))
        };
        let run_keyword = || view.text()?.search(query, pool);
        let (vector_outcome, keyword) = if hybrid || state.embedder.is_none() {
            let (v, k) = rayon::join(run_vector, run_keyword);
            (v, Some(k))
        } else {
            (run_vector(), None)
        };
        let mut vector = None;
        match vector_outcome {
            Some(Ok(found)) => vector = found,
            Some(Err(reason)) => {
                served.fallback = Some(Fallback {
                    from: state.provider.clone(),
                    reason,
                })
            }
            None => {}
        }
        let keyword = match keyword {
            Some(keyword) => keyword,
            None if vector.is_some() => Ok(Vec::new()),
            None => run_keyword(),
        };
        let keyword = keyword.map(|hits| {
            hits.into_iter()
                .map(|h| KeywordCandidate {
                    key: h.key,
                    bm25: f64::from(h.bm25),
                })
                .collect::<Vec<_>>()
        });
        let (keyword, vector) = match (keyword, vector) {
            (Ok(keyword), Some(vector)) if hybrid => {
                served.mode = Mode::Hybrid;
                (Some(keyword), Some(vector))
            }
            (Err(err), Some(vector)) => {
                served.mode = Mode::VectorOnly;
                served.fallback = Some(Fallback {
                    from: "fts".into(),
                    reason: format!("keyword index unavailable: {err}"),
                });
                (None, Some(vector))
            }
            (Ok(_), Some(vector)) => {
                served.mode = Mode::VectorOnly;
                (None, Some(vector))
            }
            (keyword, None) => {
                served.mode = Mode::FtsOnly;
                (Some(keyword?), None)
            }
        };
        let params = FusionParams {
            vector_weight: f64::from(q.hybrid.vector_weight),
            text_weight: f64::from(q.hybrid.text_weight),
            fusion: q.hybrid.fusion,
        };
        // MMR compares candidates' texts, so it reads every candidate's chunk; otherwise only
        // the returned chunks are read.
        let mut chunks: HashMap<String, ChunkRecord> = HashMap::new();
        if q.hybrid.mmr.enabled {
            let ids: Vec<String> = keyword
                .iter()
                .flatten()
                .map(|k| k.key.id.clone())
                .chain(vector.iter().flatten().map(|v| v.key.id.clone()))
                .collect();
            chunks.extend(view.chunks_by_ids(&ids)?);
        }
        let decay = self.decay_factors(
            keyword
                .iter()
                .flatten()
                .map(|k| &k.key)
                .chain(vector.iter().flatten().map(|v| &v.key)),
        );
        let rank = |pool: usize| -> Vec<Ranked> {
            let head = |len: usize| len.min(pool);
            let hits = match (&keyword, &vector) {
                (Some(k), Some(v)) => search::hybrid::fuse(
                    k[..head(k.len())].to_vec(),
                    v[..head(v.len())].to_vec(),
                    &params,
                ),
                (None, Some(v)) => search::hybrid::vector_hits(v[..head(v.len())].to_vec()),
                (Some(k), None) => search::keyword_hits(k[..head(k.len())].to_vec()),
                (None, None) => Vec::new(),
            };
            self.post_process(hits, min_score, &decay, &chunks)
        };
        let ranked = search::tiered_top(
            max_results,
            base,
            |size| config::candidate_pool(size, multiplier),
            rank,
            |hit: &Ranked| hit.key.id.clone(),
        );
        let missing: Vec<String> = ranked
            .iter()
            .filter(|r| !chunks.contains_key(&r.key.id))
            .map(|r| r.key.id.clone())
            .collect();
        chunks.extend(view.chunks_by_ids(&missing)?);
        // The text index of a view never reloads, so every ranked id is found. Only in the
        // catalog fallback can a sync remove a chunk in between; its file no longer has it,
        // so it is dropped.
        let hits = ranked
            .into_iter()
            .filter_map(|r| {
                let chunk = chunks.remove(&r.key.id)?;
                Some(Hit::new(r, chunk))
            })
            .collect();
        Ok(SearchResponse { hits, served })
    }

    /// Vector candidates, `Ok(None)` when the index has no vectors to search, or the reason
    /// the vector side failed (reported as a fallback).
    fn vector_candidates(
        &self,
        embedder: &dyn Embedder,
        view: &GenerationView,
        query: &str,
        pool: usize,
    ) -> std::result::Result<Option<Vec<VectorCandidate>>, String> {
        if let Some(error) = view
            .manifest
            .stats
            .embedding
            .as_ref()
            .and_then(|e| e.error.clone())
        {
            return Err(format!("embedding the memory files failed: {error}"));
        }
        let Some(vectors) = view.vectors.as_ref() else {
            return Err("no vector index yet: run `memoria index`".into());
        };
        let embedded = embedder
            .embed(&[query], EmbedKind::Query)
            .map_err(|e| format!("embedding the query failed: {e}"))?;
        let Some(query_vector) = embedded.into_iter().next().map(|e| e.vector) else {
            return Err("the embedder returned no vector".into());
        };
        if query_vector.iter().all(|v| *v == 0.0) {
            return Ok(None); // a zero query vector skips the vector side (SPEC §5.3)
        }
        let nearest = vectors.search(&query_vector, pool);
        let ids: Vec<String> = nearest.iter().map(|(id, _)| id.clone()).collect();
        let keys = view
            .keys_by_ids(&ids)
            .map_err(|e| format!("reading vector candidates: {e}"))?;
        let mut by_id: HashMap<String, ChunkKey> =
            keys.into_iter().map(|k| (k.id.clone(), k)).collect();
        Ok(Some(
            nearest
                .into_iter()
                .filter_map(|(id, cosine)| {
                    by_id.remove(&id).map(|key| VectorCandidate {
                        key,
                        cosine: f64::from(cosine),
                    })
                })
                .collect(),
        ))
    }

    /// The temporal decay factor of each candidate's file (SPEC §5.7), computed once per
    /// search (one stat per file, however many chunks and tiers); empty when decay is off.
    fn decay_factors<'a>(&self, keys: impl Iterator<Item = &'a ChunkKey>) -> HashMap<String, f64> {
        let decay = &self.settings.query.hybrid.temporal_decay;
        let mut factors = HashMap::new();
        if !decay.enabled {
            return factors;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        for key in keys {
            if factors.contains_key(&key.path) {
                continue;
            }
            let mtime = std::fs::metadata(self.settings.workspace.join(&key.path))
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs() as i64);
            let factor = search::hybrid::decay_factor(
                &key.path,
                mtime,
                now,
                f64::from(decay.half_life_days),
            );
            factors.insert(key.path.clone(), factor);
        }
        factors
    }

    /// Temporal decay (`decay`, by path), minScore (with the keyword relaxation), MMR (over
    /// `chunks`' texts).
    fn post_process(
        &self,
        mut hits: Vec<Ranked>,
        min_score: f64,
        decay: &HashMap<String, f64>,
        chunks: &HashMap<String, ChunkRecord>,
    ) -> Vec<Ranked> {
        let hybrid = &self.settings.query.hybrid;
        for hit in &mut hits {
            if let Some(factor) = decay.get(&hit.key.path) {
                hit.score *= factor;
            }
        }
        let mut hits =
            search::filter_ranked(hits, min_score, f64::from(hybrid.text_weight), usize::MAX);
        if hybrid.mmr.enabled {
            let terms = |hit: &Ranked| -> HashSet<String> {
                let text = chunks.get(&hit.key.id).map_or("", |c| c.text.as_str());
                index::analyzer::terms(text, index::analyzer::AnalyzerMode::Query)
                    .into_iter()
                    .collect()
            };
            hits = search::hybrid::mmr(hits, f64::from(hybrid.mmr.lambda), terms);
        }
        hits
    }

    /// The `memory_search` tool: never fails, errors become the SPEC §6 error payload.
    pub fn memory_search(&self, query: &str, options: &SearchOptions) -> SearchPayload {
        match self.search(query, options) {
            Ok(response) => tools::search_payload(
                &response.hits,
                &response.served,
                self.settings.citations,
                options.group_context,
            ),
            Err(err) => SearchPayload::unavailable(err.to_string()),
        }
    }

    /// The `memory_get` tool (SPEC §6): whole file, or `lines` lines from line `from`.
    pub fn memory_get(&self, path: &str, from: Option<i64>, lines: Option<i64>) -> GetPayload {
        let resolved =
            workspace::resolve_get_path(&self.settings.workspace, &self.settings.extra_paths, path);
        let file = match resolved {
            Ok(file) => file,
            Err(denied) => return GetPayload::denied(path, denied.0),
        };
        match std::fs::read(&file) {
            Ok(bytes) => GetPayload {
                path: path.to_string(),
                text: tools::slice_lines(&workspace::decode_text(bytes).0, from, lines),
                disabled: None,
                error: None,
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => GetPayload {
                path: path.to_string(),
                text: String::new(),
                disabled: None,
                error: None,
            },
            Err(err) => GetPayload::denied(path, format!("{path}: {err}")),
        }
    }

    /// The agent directory's state.
    pub fn status(&self) -> Result<Status> {
        let manifest = self.dir.manifest()?;
        let discovery = self.discover();
        let dirty = self.is_dirty(manifest.as_ref(), &discovery);
        let state = self.embedder_state();
        let stats = manifest
            .as_ref()
            .map(|m| m.stats.clone())
            .unwrap_or_default();
        let mut warnings = stats.warnings.clone();
        if manifest.is_none() {
            warnings.push("no index yet: run `memoria index`".into());
        }
        let mut fallback = state.fallback.clone();
        let mut mode = if state.embedder.is_some() {
            Mode::Hybrid
        } else {
            Mode::FtsOnly
        };
        if let Some(error) = stats.embedding.as_ref().and_then(|e| e.error.clone()) {
            mode = Mode::FtsOnly;
            fallback = Some(Fallback {
                from: state.provider.clone(),
                reason: format!("embedding the memory files failed: {error}"),
            });
        }
        Ok(Status {
            agent_id: self.settings.agent_id.clone(),
            agent_dir: self.dir.root().display().to_string(),
            workspace: self.settings.workspace.display().to_string(),
            generation: manifest.as_ref().map(|m| m.generation),
            identity: self.identity(),
            files: stats.files,
            chunks: stats.chunks,
            bytes: stats.bytes,
            vectors: stats.embedding.as_ref().map(|e| e.vectors),
            mode: mode.as_str().to_string(),
            provider: state.provider.clone(),
            model: state.model.clone(),
            fallback,
            dirty,
            synced_at: manifest.map(|m| m.stats.synced_at),
            warnings,
        })
    }
}

/// Resolves the configured provider to an embedder (SPEC §7), or says why there is none.
fn resolve_embedder(settings: &Settings, model_dir: Option<PathBuf>) -> EmbedderState {
    let none = |fallback: Option<Fallback>| EmbedderState {
        embedder: None,
        provider: "none".into(),
        model: None,
        fallback,
    };
    let local = |from: &str| -> EmbedderState {
        let search = ModelSearch::from_process(
            model_dir.clone(),
            settings.local.model_path.clone(),
            settings.local.model_cache_dir.as_ref().map(PathBuf::from),
        );
        let failed = |reason: String| {
            none(Some(Fallback {
                from: from.to_string(),
                reason: format!("{reason}; keyword search only"),
            }))
        };
        match resolve_model(&search) {
            Ok(location) => match embed::load_local(&location.dir) {
                Ok(embedder) => EmbedderState {
                    embedder: Some(embedder),
                    provider: "local".into(),
                    model: Some(
                        settings
                            .model
                            .clone()
                            .unwrap_or_else(|| "embeddinggemma-300m".into()),
                    ),
                    fallback: None,
                },
                Err(err) => failed(format!("{}: {err}", location.dir.display())),
            },
            Err(err) => failed(err.to_string()),
        }
    };
    match settings.provider {
        ProviderKind::None => none(None),
        ProviderKind::Auto => local("auto"),
        ProviderKind::Local => local("local"),
        remote => {
            let reason = format!(
                "the {} embedding provider is not implemented in this build",
                remote.as_str()
            );
            if settings.fallback == Some(ProviderKind::Local) {
                let mut state = local(remote.as_str());
                if state.embedder.is_some() {
                    state.fallback = Some(Fallback {
                        from: remote.as_str().into(),
                        reason,
                    });
                }
                state
            } else {
                none(Some(Fallback {
                    from: remote.as_str().into(),
                    reason: format!("{reason}; keyword search only"),
                }))
            }
        }
    }
}
