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
pub mod error;
pub mod eval;
pub mod index;
pub mod search;
pub mod sync;
pub mod tools;
pub mod workspace;

use std::sync::Mutex;

use serde::Serialize;

use config::{ProviderKind, Settings};
use index::text::TextIndex;
use index::{AgentDir, Identity, Manifest};
use search::Mode;
use sync::{SyncProgress, SyncReport};
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
    pub mode: String,
    pub provider: String,
    pub model: Option<String>,
    pub fallback: Option<Fallback>,
    /// True when the workspace changed since the last sync.
    pub dirty: bool,
    pub synced_at: Option<u64>,
    pub warnings: Vec<String>,
}

/// One agent's memory: configuration, workspace and agent directory.
pub struct Memory {
    settings: Settings,
    dir: AgentDir,
    /// The open text index and the generation it belongs to.
    text: Mutex<Option<(u64, TextIndex)>>,
}

impl Memory {
    /// Opens the agent directory named by `settings` (creating it if needed).
    pub fn open(settings: Settings) -> Result<Memory> {
        if !settings.enabled {
            return Err(Error::Disabled);
        }
        let dir = AgentDir::open(&settings.store.dir)?;
        Ok(Memory {
            settings,
            dir,
            text: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn agent_dir(&self) -> &AgentDir {
        &self.dir
    }

    /// The index identity under the current settings.
    pub fn identity(&self) -> Identity {
        let served = self.served();
        Identity {
            chunk_tokens: self.settings.chunking.tokens,
            chunk_overlap: self.settings.chunking.overlap,
            sources: self
                .settings
                .sources
                .iter()
                .map(|s| s.as_str().to_string())
                .collect(),
            provider: served.provider,
            model: served.model,
        }
    }

    /// Which retrieval searches use. Embedding providers arrive with the embedder; until a
    /// provider is available every search is keyword-only and says why.
    fn served(&self) -> Served {
        let fallback = match self.settings.provider {
            ProviderKind::None => None,
            ProviderKind::Auto => Some(Fallback {
                from: "auto".into(),
                reason: "no embedding provider available (no local EmbeddingGemma model, no remote provider configured); keyword search only".into(),
            }),
            other => Some(Fallback {
                from: other.as_str().into(),
                reason: format!(
                    "the {} embedding provider is not available in this build; keyword search only",
                    other.as_str()
                ),
            }),
        };
        Served {
            provider: "none".into(),
            model: None,
            mode: Mode::FtsOnly,
            fallback,
        }
    }

    fn discover(&self) -> Discovery {
        workspace::discover(&self.settings.workspace, &self.settings.extra_paths)
    }

    /// Brings the index up to date with the workspace (a full rebuild into a new generation
    /// when `force` or when the identity changed). Fails with [`Error::IndexBusy`] when
    /// another process is writing.
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
        let report = sync::sync(
            &self.dir,
            lock,
            discovery,
            &self.identity(),
            params,
            force,
            progress,
        )?;
        // Drop the cached reader: the generation may have changed.
        *self.text.lock().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(report)
    }

    /// True when the index is missing, has another identity, or predates workspace changes.
    fn is_dirty(&self, manifest: Option<&Manifest>, discovery: &Discovery) -> bool {
        manifest.is_none_or(|m| {
            m.identity != self.identity()
                || m.format != index::FORMAT_VERSION
                || m.stats.workspace_digest != sync::workspace_digest(discovery)
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

    /// Runs `f` with the text index of the current generation, opening it if needed.
    fn with_text<T>(&self, f: impl FnOnce(&TextIndex) -> Result<T>) -> Result<T> {
        let mut cached = self.text.lock().unwrap_or_else(|e| e.into_inner());
        // A writer may swap generations between reading the manifest and opening the
        // index; the old generation is then gone, so read the manifest again.
        let mut attempts = 0;
        loop {
            let manifest = self.dir.manifest()?.ok_or_else(|| Error::NoIndex {
                dir: self.dir.root().to_path_buf(),
            })?;
            if let Some((generation, text)) = cached.as_ref() {
                if *generation == manifest.generation {
                    text.reload()?;
                    return f(text);
                }
            }
            let text_dir = self.dir.generation_dir(manifest.generation).join("text");
            match TextIndex::open(&text_dir) {
                Ok(text) => {
                    let result = f(&text);
                    *cached = Some((manifest.generation, text));
                    return result;
                }
                Err(err) if attempts >= 3 => return Err(err),
                Err(_) => attempts += 1,
            }
        }
    }

    /// Searches memory: the ranked hits and what served them (SPEC §5).
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
        let served = self.served();
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
        let pool = config::candidate_pool(max_results, q.hybrid.candidate_multiplier);
        let text_hits = self.with_text(|text| text.search(query, pool))?;
        let hits = search::filter_ranked(
            search::keyword_hits(text_hits),
            min_score,
            f64::from(q.hybrid.text_weight),
            max_results,
        );
        Ok(SearchResponse { hits, served })
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
        let served = self.served();
        let stats = manifest
            .as_ref()
            .map(|m| m.stats.clone())
            .unwrap_or_default();
        let mut warnings = stats.warnings.clone();
        if manifest.is_none() {
            warnings.push("no index yet: run `memoria index`".into());
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
            mode: served.mode.as_str().to_string(),
            provider: served.provider,
            model: served.model,
            fallback: served.fallback,
            dirty,
            synced_at: manifest.map(|m| m.stats.synced_at),
            warnings,
        })
    }
}
