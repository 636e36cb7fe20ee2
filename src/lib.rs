//! # memoria
//!
//! An embedded search engine for AI agents' Markdown memory, compatible with OpenClaw's
//! `memory_search` / `memory_get` tools. One agent directory per agent holds a BM25 index
//! (tantivy, with a multilingual analyzer), the chunks' EmbeddingGemma vectors (exact scan,
//! or an HNSW graph past 10k chunks) and an embedding cache; searches are hybrid when an
//! embedder is available and say in every payload what served them and why anything fell
//! back. Chunk line ranges, scores and the tool JSON are OpenClaw's.
//!
//! ```no_run
//! use memoria::config::{self, Env};
//! use memoria::{Memory, SearchOptions};
//!
//! # fn main() -> memoria::Result<()> {
//! // OpenClaw's config file ($OPENCLAW_CONFIG_PATH or ~/.openclaw/openclaw.json), for agent "main".
//! let env = Env::from_process();
//! let settings = config::load_settings(&env, "main")?;
//! // The agent directory; the embedder (the local EmbeddingGemma model, when one is found)
//! // loads on first use. Without one, searches are keyword-only and say so.
//! let memory = Memory::open(settings)?;
//! // Index the workspace: chunk, embed new chunks (cached), commit a generation.
//! let report = memory.sync(false, &|_progress| {})?;
//! println!("{} files, {} chunks", report.files, report.chunks);
//! // The `memory_search` tool: ranked chunks with path, line range, score and snippet,
//! // plus the mode (`hybrid`, `fts-only`, `vector-only`) and any fallback with its reason.
//! let payload = memory.memory_search("what did we decide about the database?", &SearchOptions::default());
//! println!("{}", serde_json::to_string_pretty(&payload).unwrap());
//! // The `memory_get` tool: lines 10..20 of a memory file.
//! let lines = memory.memory_get("MEMORY.md", Some(10), Some(10));
//! println!("{}", lines.text);
//! # Ok(()) }
//! ```
//!
//! `docs/ARCHITECTURE.md` has the module map and the invariants; [`Memory`] is the façade
//! the CLI uses, and the types re-exported here are the whole public API.

#![warn(missing_docs)]

pub mod append;
mod chunk;
mod clock;
mod collection;
pub mod config;
mod digest;
pub mod embed;
mod error;
pub mod eval;
mod fallback;
pub mod flush;
pub mod gemma;
mod index;
mod live;
mod qmd;
mod search;
mod session;
mod simd;
mod status;
mod sync;
mod tools;
mod workspace;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use config::Settings;
use embed::ResolvedEmbedder;
use index::{AgentDir, Manifest, Views};
use search::pipeline::{configured, Searcher};
use sync::EmbedPlan;
use workspace::Discovery;

/// True when `current` is keyword-only (`provider: "none"` configured, or no embedder could
/// be loaded) and `built` differs from it only by its embedder.
fn keyword_only_over(current: &Identity, built: &Identity) -> bool {
    current.provider == "none"
        && built.provider != "none"
        && current.chunk_tokens == built.chunk_tokens
        && current.chunk_overlap == built.chunk_overlap
        && current.sources == built.sources
}

/// How long an append waits for the live sync to index the note.
const APPEND_SYNC_WAIT: Duration = Duration::from_secs(10);

/// What started a sync: it decides whether session transcripts below their deltas wait
/// (not when asked for) and whether a batch embedding job may be waited for (not by a
/// search).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// `Memory::sync` (`memoria index`).
    Requested,
    /// The live sync (`memoria watch`, `memoria mcp`).
    Live,
    /// A search that found the workspace changed (`sync.onSearch`).
    Search,
}

pub use chunk::{chunk_markdown, Chunk, ChunkParams};
pub use digest::sha256_hex;
pub use embed::{EmbedError, EmbedKind, Embedder, EmbedderChoice, Embedding};
pub use error::{Error, Result};
pub use fallback::Fallback;
pub use index::catalog::ChunkRecord;
pub use index::{Identity, FORMAT_VERSION};
pub use live::{LiveEvent, LiveStatus, LiveSync, WatcherState};
pub use qmd::QmdStatus;
pub use search::{Corpus, Hit, Mode, SearchOptions, SearchResponse, Served};
pub use status::{EmbeddingStatus, Status};
pub use sync::{SyncProgress, SyncReport};
pub use tools::{GetPayload, SearchPayload, SearchResult};
pub use workspace::read_text;

/// Internals that the benches and the integration tests' stand-in embedders use directly;
/// not part of the API, and they may change in any release.
#[doc(hidden)]
pub mod internals {
    pub use crate::index::analyzer::{terms, AnalyzerMode};
    pub use crate::index::vector::{VectorIndex, VectorParams};
    pub use crate::session::{redact, transcript, Transcript};
}

/// One agent's memory: configuration, workspace and agent directory.
///
/// **Threading.** `Memory` is `Send + Sync`: share it between threads behind an `Arc`.
/// - Searches, `memory_get` and `status` run concurrently and never wait for a sync.
/// - [`Memory::sync`] takes the agent directory's writer lock, so one sync runs at a time
///   across processes and a second fails at once with [`Error::IndexBusy`].
/// - The first call that needs the embedder loads it (seconds for the local model); calls
///   that need it meanwhile wait for that one load. Every `Memory` of a process that uses
///   the same local model directory shares one loaded copy.
/// - Without a live sync, a search first syncs a changed workspace itself (as the CLI
///   does, `sync.onSearch`). With one ([`Memory::start_live`]), syncs run on the live
///   sync's thread and a search answers at once from the last committed index.
pub struct Memory {
    settings: Settings,
    dir: AgentDir,
    choice: EmbedderChoice,
    embedder: OnceLock<ResolvedEmbedder>,
    views: Views,
    /// Why the last sync this process tried failed, until one succeeds: searches then
    /// answer from the last committed generation and say so.
    sync_error: Mutex<Option<String>>,
    /// The live sync, while one runs ([`Memory::start_live`]).
    live: Mutex<Option<Arc<live::Link>>>,
    /// `memory.qmd.paths`, indexed and readable (empty unless the backend is QMD).
    collections: Vec<collection::Collection>,
    /// The QMD sidecar, when `memory.backend` is `qmd`.
    qmd: Option<Arc<qmd::Sidecar>>,
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
        config::validate_agent_id(&settings.agent_id)?;
        let dir = AgentDir::open(&settings.store.dir)?;
        let collections = qmd::configured_collections(&settings);
        let qmd = (settings.backend == config::Backend::Qmd)
            .then(|| Arc::new(qmd::Sidecar::new(&settings, &collections)));
        Ok(Memory {
            collections,
            qmd,
            settings,
            dir,
            choice,
            embedder: OnceLock::new(),
            views: Views::default(),
            sync_error: Mutex::new(None),
            live: Mutex::new(None),
        })
    }

    /// The resolved settings this memory was opened with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The agent directory.
    pub fn agent_dir(&self) -> &AgentDir {
        &self.dir
    }

    fn resolved(&self) -> &ResolvedEmbedder {
        self.embedder
            .get_or_init(|| ResolvedEmbedder::resolve(&self.choice, &self.settings))
    }

    /// The embedding provider and model serving searches (`"none"` when keyword-only).
    pub fn provider(&self) -> (&str, Option<&str>) {
        let resolved = self.resolved();
        (&resolved.provider, resolved.model.as_deref())
    }

    /// The embedder in use, if any (loads it on first call).
    pub fn embedder(&self) -> Option<&std::sync::Arc<dyn Embedder>> {
        self.resolved().embedder.as_ref()
    }

    /// The index identity under the current settings and embedder.
    pub fn identity(&self) -> Identity {
        let resolved = self.resolved();
        Identity {
            chunk_tokens: self.settings.chunking.tokens,
            chunk_overlap: self.settings.chunking.overlap,
            sources: self
                .settings
                .sources
                .iter()
                .map(|s| s.as_str().to_string())
                .collect(),
            provider: resolved.provider.clone(),
            model: resolved.model.clone(),
            embedder: resolved
                .embedder
                .as_ref()
                .map(|e| e.fingerprint().to_string()),
            dims: resolved.embedder.as_ref().map(|e| e.dims()),
        }
    }

    fn discover(&self) -> Discovery {
        workspace::discover(
            &self.settings.workspace,
            &self.settings.extra_paths,
            &self.collections,
            self.settings.sessions_dir().as_deref(),
        )
    }

    /// Brings the index up to date with the workspace (a full rebuild into a new generation
    /// when `force` or when the identity changed), embedding new chunks when an embedder is
    /// available. Fails with [`Error::IndexBusy`] when another process is writing.
    pub fn sync(&self, force: bool, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        let lock = self.dir.lock_writer()?;
        if let Some(qmd) = &self.qmd {
            // The transcripts QMD searches are indexed here too (the fallback's copy).
            qmd.export_sessions();
        }
        let discovery = self.discover();
        let report = self.sync_locked(&lock, &discovery, force, Trigger::Requested, progress)?;
        drop(lock);
        // QMD's own index too (its failure is kept for `status`, never fails the sync).
        if let Some(qmd) = &self.qmd {
            let _ = qmd.update(true);
        }
        Ok(report)
    }

    /// `background`: an automatic sync (on search, watcher, interval), which defers a
    /// growing session transcript until it reaches `sync.sessions.*`.
    fn sync_locked(
        &self,
        lock: &index::WriterLock,
        discovery: &Discovery,
        force: bool,
        trigger: Trigger,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<SyncReport> {
        // A vanished or mistyped workspace would look like every note deleted: refuse.
        if let Some(err) = self.workspace_missing() {
            *self.sync_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(err.to_string());
            return Err(err);
        }
        let identity = self.sync_identity(self.dir.manifest().ok().flatten().as_ref());
        let plan = self.resolved().embedder.as_ref().map(|embedder| {
            let mut plan = EmbedPlan::new(embedder.as_ref(), &identity, &self.settings);
            // A search never waits for a batch job: its chunks are searchable by keyword
            // until a later sync reads the job.
            plan.batch_may_wait = trigger != Trigger::Search;
            plan
        });
        let background = trigger != Trigger::Requested;
        let request = sync::SyncRequest {
            discovery,
            identity: &identity,
            params: ChunkParams {
                tokens: self.settings.chunking.tokens,
                overlap: self.settings.chunking.overlap,
            },
            force,
            embed: plan.as_ref(),
            session_deltas: background.then_some(self.settings.sync.sessions),
        };
        let result = sync::sync(&self.dir, lock, &request, progress);
        *self.sync_error.lock().unwrap_or_else(|e| e.into_inner()) =
            result.as_ref().err().map(ToString::to_string);
        let report = result?;
        self.views.invalidate();
        Ok(report)
    }

    /// [`Error::WorkspaceMissing`] when the workspace is not a directory.
    fn workspace_missing(&self) -> Option<Error> {
        (!self.settings.workspace.is_dir()).then(|| Error::WorkspaceMissing {
            path: self.settings.workspace.clone(),
            origin: self.settings.workspace_origin.clone(),
        })
    }

    fn sync_error(&self) -> Option<String> {
        self.sync_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The identity a sync keeps: the current one, except that keyword-only search
    /// (`provider: "none"`, or an embedder that cannot be loaded now) over an index built
    /// with an embedder keeps that index's identity: its text side is searched and kept up
    /// to date, its vectors kept for when the embedder is back, instead of a rebuild each
    /// way.
    fn sync_identity(&self, manifest: Option<&Manifest>) -> Identity {
        let identity = self.identity();
        match manifest {
            Some(m) if keyword_only_over(&identity, &m.identity) => m.identity.clone(),
            _ => identity,
        }
    }

    /// True when the index is missing, has another identity, or predates workspace changes.
    fn is_dirty(&self, manifest: Option<&Manifest>, discovery: &Discovery) -> bool {
        manifest.is_none_or(|m| {
            m.identity != self.sync_identity(Some(m))
                || m.format != index::FORMAT_VERSION
                || m.stats.workspace_digest != sync::workspace_digest(discovery)
                // Chunks without a vector need a sync only when something can embed them.
                || (m.stats.embedding.as_ref().is_some_and(|e| e.missing > 0)
                    && self.resolved().embedder.is_some())
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
            Ok(lock) => {
                match self.sync_locked(&lock, &discovery, false, Trigger::Search, &|_| {}) {
                    Ok(_) => Ok(()),
                    Err(err) if manifest.is_some() => {
                        tracing::warn!(
                            "sync before search failed, searching the last index: {err}"
                        );
                        Ok(())
                    }
                    Err(err) => Err(err),
                }
            }
            Err(Error::IndexBusy { .. }) => {
                tracing::warn!("index busy: searching the last committed index");
                Ok(())
            }
            // The agent directory cannot be written (a read-only mount, another owner):
            // search what is there, and say why it is not fresh.
            Err(err) if manifest.is_some() => {
                tracing::warn!("cannot sync before search, searching the last index: {err}");
                *self.sync_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(err.to_string());
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    /// Starts keeping this memory fresh in the background (see [`LiveSync`] and the
    /// `live` module docs): a sync now when `sync.onSessionStart` (or no index exists), on
    /// file-system events debounced by `sync.watchDebounceMs` when `sync.watch`, every
    /// `sync.intervalMinutes`, and when a search finds the workspace changed while not
    /// watching. It also loads the embedder at once, so that the first search finds it
    /// loaded. `on_event` hears every sync, failure and watcher change (on the live sync's
    /// thread). Fails with [`Error::AlreadyLive`] if a live sync already runs.
    pub fn start_live(
        self: &Arc<Self>,
        on_event: impl Fn(&LiveEvent) + Send + 'static,
    ) -> Result<LiveSync> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if live
            .as_ref()
            .is_some_and(|link| Arc::strong_count(link) > 1)
        {
            return Err(Error::AlreadyLive);
        }
        let (link, mut handle) = live::start(self.clone(), Box::new(on_event));
        if let Some(qmd) = &self.qmd {
            handle.attach_qmd(qmd.maintain());
        }
        *live = Some(link);
        Ok(handle)
    }

    fn live_link(&self) -> Option<Arc<live::Link>> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        // The worker holds the other reference while it runs.
        live.as_ref()
            .filter(|link| Arc::strong_count(link) > 1)
            .cloned()
    }

    /// The live sync's check: syncs (in the background sense: transcripts below their
    /// deltas wait) when the workspace changed; `None` when it had not.
    fn sync_if_changed(&self) -> Result<Option<SyncReport>> {
        let manifest = self.dir.manifest().ok().flatten();
        let discovery = self.discover();
        if !self.is_dirty(manifest.as_ref(), &discovery) {
            return Ok(None);
        }
        let lock = self.dir.lock_writer()?;
        self.sync_locked(&lock, &discovery, false, Trigger::Live, &|_| {})
            .map(Some)
    }

    /// The live sync committed changes: QMD's index follows (`update.debounceMs`).
    fn files_changed(&self) {
        if let Some(qmd) = &self.qmd {
            qmd.files_changed();
        }
    }

    /// What one freshness check (listing + stat of the workspace) costs now.
    fn measure_check(&self) -> Duration {
        let started = Instant::now();
        let discovery = self.discover();
        let _ = sync::workspace_digest(&discovery);
        started.elapsed()
    }

    /// Opens the current generation for searching (after a sync committed).
    fn warm_view(&self) {
        if let Err(err) = self.views.current(&self.dir) {
            tracing::warn!("opening the new index generation: {err}");
        }
    }

    /// Before a search: keep the index fresh without making the search wait.
    fn freshen(&self) -> Result<()> {
        let Some(link) = self.live_link() else {
            return self.sync_if_dirty();
        };
        let has_index = || self.dir.manifest().ok().flatten().is_some();
        if !has_index() {
            // Nothing to answer from yet: wait for the live sync's first index.
            link.request_sync();
            link.wait_until(live::first_index_wait(), has_index);
        } else if !link.watching() && self.settings.sync.on_search {
            let manifest = self.dir.manifest().ok().flatten();
            if self.is_dirty(manifest.as_ref(), &self.discover()) {
                link.request_sync();
            }
        }
        Ok(())
    }

    /// Searches memory: the ranked hits and what served them (SPEC §5).
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
        let query = query.trim();
        let empty = |warning: &str| {
            let mut served = configured(self.resolved(), None);
            served.backend = self.qmd.as_ref().map(|_| "builtin".to_string());
            Ok(SearchResponse::new(
                Vec::new(),
                served,
                Some(warning.into()),
            ))
        };
        if query.is_empty() {
            return empty("the query is empty");
        }
        if options.corpus == Corpus::Sessions && self.settings.sessions_dir().is_none() {
            return empty(
                "session transcripts are not indexed: set experimental.sessionMemory = true \
                 and add \"sessions\" to memorySearch.sources",
            );
        }
        let mut qmd_failure = None;
        if let Some(qmd) = &self.qmd {
            if let Err(why) = qmd::scope::check(&self.settings.qmd.scope, &options.chat) {
                return empty(&why);
            }
            // QMD has no corpus filter: a sessions-only search is memoria's own.
            if options.corpus != Corpus::Sessions {
                match qmd.search(query) {
                    Ok(hits) => return Ok(qmd::response(hits, &self.settings.qmd)),
                    Err(why) => qmd_failure = Some(why),
                }
            }
        }
        let mut response = self.search_builtin(query, options)?;
        if self.qmd.is_some() {
            response.served.backend = Some("builtin".into());
        }
        if let Some(why) = qmd_failure {
            let reason = match response.served.fallback.take() {
                Some(inner) => format!(
                    "{why}; memoria's own index answers ({} fell back: {})",
                    inner.from, inner.reason
                ),
                None => format!("{why}; memoria's own index answers"),
            };
            response.served.fallback = Some(Fallback {
                from: "qmd".into(),
                reason,
            });
        }
        Ok(response)
    }

    /// memoria's own search.
    fn search_builtin(&self, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
        self.freshen()?;
        let mut view = self.views.current(&self.dir)?;
        if view.text().is_err() && self.settings.sync.on_search {
            // A damaged keyword index is rebuilt from the catalog by any sync: heal it now
            // (when no other process is writing) rather than serving without it until
            // someone runs `memoria index`.
            if let Ok(lock) = self.dir.lock_writer() {
                let discovery = self.discover();
                if let Err(err) =
                    self.sync_locked(&lock, &discovery, false, Trigger::Search, &|_| {})
                {
                    tracing::warn!("rebuilding the keyword index failed: {err}");
                }
                view = self.views.current(&self.dir)?;
            }
        }
        let searcher = Searcher {
            settings: &self.settings,
            embedder: self.resolved(),
            view: &view,
        };
        let mut response = searcher.search(query, options)?;
        if let Some(error) = self.sync_error() {
            let stale = format!(
                "the index could not be synced ({error}); these results come from the last \
                 committed index"
            );
            match &mut response.served.fallback {
                Some(fallback) => fallback.reason = format!("{}; {stale}", fallback.reason),
                None => {
                    response.served.fallback = Some(Fallback {
                        from: "sync".into(),
                        reason: stale,
                    })
                }
            }
        }
        Ok(response)
    }

    /// Appends `text` to the daily log `memory/<date>.md` (created with its heading), the
    /// one write memoria makes to memory files; see [`append`](crate::append). The index is
    /// synced right after, so the note is searchable at once (unless another sync holds the
    /// index: that one, or the watcher, picks it up).
    pub fn append(&self, text: &str, date: &str) -> Result<append::Appended> {
        if let Some(err) = self.workspace_missing() {
            return Err(err);
        }
        // Complete any append a crash interrupted first (see `append`).
        append::recover(&self.settings.workspace)?;
        let appended = append::append(&self.settings.workspace, text, date)?;
        // Searchable at once: sync now, as a search would (never waiting for a batch job).
        // When this process's live sync holds the index, ask it and wait a little for it;
        // another process's sync, or the watcher, picks the note up otherwise.
        match self.dir.lock_writer() {
            Ok(lock) => {
                let discovery = self.discover();
                if let Err(err) =
                    self.sync_locked(&lock, &discovery, false, Trigger::Search, &|_| {})
                {
                    tracing::warn!("syncing after an append: {err}");
                }
            }
            Err(_) => {
                if let Some(link) = self.live_link() {
                    link.request_sync();
                    link.wait_until(APPEND_SYNC_WAIT, || {
                        let manifest = self.dir.manifest().ok().flatten();
                        !self.is_dirty(manifest.as_ref(), &self.discover())
                    });
                }
            }
        }
        Ok(appended)
    }

    /// What a session reads at start: `MEMORY.md` first when `private` (a private main
    /// session, never a group chat), then the daily logs `memory/<day>.md` of `days`
    /// (`YYYY-MM-DD`, oldest first); only the files that exist.
    pub fn session_context(&self, days: &[String], private: bool) -> Vec<GetPayload> {
        let paths = private
            .then(|| "MEMORY.md".to_string())
            .into_iter()
            .chain(days.iter().map(|day| format!("memory/{day}.md")));
        paths
            .filter(|path| self.settings.workspace.join(path).is_file())
            .map(|path| self.memory_get(&path, None, None))
            .filter(|payload| payload.error.is_none())
            .collect()
    }

    /// The pre-compaction memory flush decision for session `key` (SPEC §9): `session` is
    /// (session tokens, context window, compaction count), `today` the user's date
    /// (`YYYY-MM-DD`). Once per compaction cycle: a flush decided is recorded.
    pub fn flush_plan(
        &self,
        key: &str,
        session: (u64, u64, u64),
        today: &str,
    ) -> Result<flush::FlushPlan> {
        flush::plan_session(&self.settings, &self.dir, key, session, today)
    }

    /// The `memory_search` tool: never fails, errors become the SPEC §6 error payload.
    pub fn memory_search(&self, query: &str, options: &SearchOptions) -> SearchPayload {
        match self.search(query, options) {
            Ok(response) => {
                let group = options.chat.chat_type != config::ChatType::Direct;
                tools::search_payload(&response, self.settings.citations, group)
            }
            Err(err) => SearchPayload::unavailable(err.to_string()),
        }
    }

    /// The `memory_get` tool (SPEC §6): whole file, or `lines` lines from line `from`.
    pub fn memory_get(&self, path: &str, from: Option<i64>, lines: Option<i64>) -> GetPayload {
        let resolved = workspace::resolve_get_path(
            &self.settings.workspace,
            &self.settings.extra_paths,
            &self.collections,
            path,
        );
        match resolved.and_then(|target| workspace::read_allowed(&target, path)) {
            Ok(bytes) => GetPayload {
                path: path.to_string(),
                text: bytes.map_or_else(String::new, |bytes| {
                    tools::slice_lines(&workspace::decode_text(bytes).0, from, lines)
                }),
                disabled: None,
                error: None,
            },
            Err(denied) => GetPayload::denied(path, denied.0),
        }
    }

    /// The embedder's details for `status`, when there is one.
    fn embedding_status(&self, stats: Option<&index::EmbeddingStats>) -> Option<EmbeddingStatus> {
        let resolved = self.resolved();
        let embedder = resolved.embedder.as_ref()?;
        let batch_jobs = self
            .dir
            .batch_jobs()
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<Vec<serde_json::Value>>(&bytes).ok())
            .map_or(0, |jobs| jobs.len());
        Some(EmbeddingStatus {
            dims: embedder.dims(),
            device: resolved.device.clone(),
            key_source: resolved.key_source(),
            batch: resolved.batch_state(),
            batch_jobs,
            awaiting_batch: stats.map_or(0, |s| s.awaiting_batch),
            last_error: stats.and_then(|s| s.error.clone()),
        })
    }

    /// The agent directory's state.
    pub fn status(&self) -> Result<Status> {
        let manifest = self.dir.manifest()?;
        let discovery = self.discover();
        let dirty = self.is_dirty(manifest.as_ref(), &discovery);
        let served = configured(self.resolved(), manifest.as_ref());
        let stats = manifest
            .as_ref()
            .map(|m| m.stats.clone())
            .unwrap_or_default();
        let mut warnings = self.settings.warnings.clone();
        warnings.extend(stats.warnings.iter().cloned());
        if let Some(err) = self.workspace_missing() {
            warnings.push(err.to_string());
        }
        if manifest.is_none() {
            warnings.push("no index yet: run `memoria index`".into());
        }
        for day in append::pending(&self.settings.workspace) {
            warnings.push(format!(
                "{day}: an append was interrupted (a crash?); the next append completes it"
            ));
        }
        if let Some(awaiting) = stats
            .embedding
            .as_ref()
            .map(|e| e.awaiting_batch)
            .filter(|&n| n > 0)
        {
            warnings.push(format!(
                "{awaiting} chunk(s) wait for a batch embedding job (remote.batch.wait: false): \
                 searches are keyword-only until a later sync reads the job"
            ));
        }
        if let Some(error) = self.sync_error() {
            warnings.push(format!("the last sync failed: {error}"));
        } else if dirty && manifest.is_some() {
            // Say now whether the next sync can run at all (a read-only index cannot).
            match self.dir.lock_writer() {
                Ok(_) | Err(Error::IndexBusy { .. }) => {}
                Err(err) => warnings.push(format!(
                    "the index cannot be synced ({err}): searches answer from the last \
                     committed index"
                )),
            }
        }
        let qmd = self.qmd.as_ref().map(|q| q.status());
        if let Some(qmd) = &qmd {
            if qmd.serving != "qmd" {
                warnings.push(format!(
                    "memory.backend is \"qmd\", but memoria's own index answers for now: {}",
                    qmd.last_error.as_deref().unwrap_or("QMD failed")
                ));
            } else if let Some(error) = &qmd.last_error {
                warnings.push(format!("QMD: {error}"));
            }
        }
        // This process's live sync, else another process's (its `live.json`).
        let live = match self.live_link() {
            Some(link) => Some(link.status()),
            None => live::heartbeat_of(self.dir.root()).unwrap_or_else(|warning| {
                warnings.push(warning);
                None
            }),
        };
        Ok(Status {
            agent_id: self.settings.agent_id.clone(),
            agent_dir: self.dir.root().display().to_string(),
            workspace: self.settings.workspace.display().to_string(),
            extra_paths: self.settings.extra_paths.clone(),
            generation: manifest.as_ref().map(|m| m.generation),
            identity: self.identity(),
            files: stats.files,
            chunks: stats.chunks,
            bytes: stats.bytes,
            vectors: stats.embedding.as_ref().map(|e| e.vectors),
            backend: self.settings.backend.as_str().into(),
            qmd,
            mode: served.mode.as_str().to_string(),
            provider: served.provider,
            model: served.model,
            fallback: served.fallback,
            embedding: self.embedding_status(stats.embedding.as_ref()),
            dirty,
            synced_at: manifest.map(|m| m.stats.synced_at),
            live,
            warnings,
        })
    }
}
