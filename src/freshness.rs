//! Freshness: one agent's engine and the policy that keeps its index up to date.
//!
//! An [`Agent`] is what every part of the façade shares for one agent: its settings, its
//! agent directory, its embedder (resolved on first use), the open index generation, the
//! QMD sidecar and the live sync's [`Link`] while one runs. This module decides **when a
//! sync runs and what it may wait for**:
//!
//! | trigger | who | transcripts below `sync.sessions` deltas | may wait for a batch job |
//! |---|---|---|---|
//! | [`Trigger::Requested`] | `Memory::sync`, `memoria index` | indexed | yes |
//! | [`Trigger::Live`] | the live worker (`live`) | wait | yes |
//! | [`Trigger::Search`] | a search that found the workspace changed, an append | wait | no |
//!
//! - A search never waits for a sync ([`Agent::freshen`]): without a live sync it syncs a
//!   changed workspace itself unless another process writes (`sync.onSearch`); with one it
//!   asks the worker and answers from the last committed index. Only a memory with no index
//!   at all waits for the live sync's first one.
//! - Keyword-only search over an index built with an embedder keeps that index's identity
//!   (`sync_identity`): its text side is kept fresh and its vectors kept for when the
//!   embedder is back, instead of a rebuild each way.
//! - A sync that fails leaves its reason ([`Agent::sync_error`]) for every later search and
//!   `status`, until one succeeds.
//!
//! The live worker (`live`) sees an agent only through the [`live::Target`] trait
//! implemented here; it never reaches into the façade.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::chunk::ChunkParams;
use crate::config::{self, Ranking, Settings, StoreBackend};
use crate::embed::{EmbedderChoice, ResolvedEmbedder, Serving};
use crate::error::{Error, Result};
use crate::index::{AgentDir, LocalStore, VectorParams};
use crate::live::{self, Link, LiveEvent, LiveSync};
use crate::qmd;
use crate::store::{self, Identity, Manifest, Reader, Store, Writer};
use crate::sync::{self, EmbedPlan, SyncProgress, SyncReport};
use crate::workspace::collection::Collection;
use crate::workspace::{self, Discovery};

/// How long an append waits for the live sync to index the note.
const APPEND_SYNC_WAIT: Duration = Duration::from_secs(10);

/// What started a sync: it decides whether session transcripts below their deltas wait
/// (not when asked for) and whether a batch embedding job may be waited for (not by a
/// search).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// `Memory::sync` (`memoria index`).
    Requested,
    /// The live sync (`memoria watch`, `memoria mcp`).
    Live,
    /// A search that found the workspace changed (`sync.onSearch`), or an append.
    Search,
}

/// How long a sync that a search waits for (`sync.onSearch`, an append) embeds before it
/// answers: a note or two, or the bundled example, embed within it; a large backfill goes
/// on in later syncs while its chunks are found by keyword.
const SEARCH_EMBED_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// True when `current` is keyword-only (`provider: "none"` configured, or no embedder could
/// be loaded) and `built` differs from it only by its embedder.
fn keyword_only_over(current: &Identity, built: &Identity) -> bool {
    current.provider == "none"
        && built.provider != "none"
        && current.chunk_tokens == built.chunk_tokens
        && current.chunk_overlap == built.chunk_overlap
        && current.sources == built.sources
        && current.chunking == built.chunking
}

/// The store the settings' backend names, for the agent directory `dir`: the one place a
/// store is chosen.
pub(crate) fn open_store(dir: &AgentDir, settings: &Settings) -> Result<Box<dyn Store>> {
    match &settings.store.backend {
        StoreBackend::Local => {
            // `store.vector.enabled = false` means an exact in-process scan, never a graph.
            let mut vector_params = VectorParams::default();
            if !settings.store.vector_enabled {
                vector_params.exact_threshold = usize::MAX;
            }
            Ok(Box::new(LocalStore::new(dir.clone(), vector_params)))
        }
        #[cfg(feature = "fleet")]
        StoreBackend::LanceDb { uri, options } => {
            let location = crate::lance::Location {
                uri: uri.clone(),
                options: options.clone(),
            };
            Ok(Box::new(crate::lance::LanceStore::new(
                &location,
                &settings.agent_id,
            )))
        }
        #[cfg(not(feature = "fleet"))]
        StoreBackend::LanceDb { uri, .. } => Err(Error::Store {
            location: uri.clone(),
            message: "fleet mode (store backend \"lancedb\") needs a memoria built with the \
                      `fleet` feature (cargo install memoria-engine --features fleet)"
                .into(),
        }),
    }
}

/// One agent's engine: configuration, workspace, agent directory, embedder and the state
/// that keeps them fresh (see the module docs).
pub(crate) struct Agent {
    settings: Settings,
    dir: AgentDir,
    /// Its embedder, resolved on first use and tried again while it cannot serve.
    embedder: Serving,
    /// Where the index is kept (chosen once, here).
    store: Box<dyn Store>,
    /// Why the last sync this process tried failed, until one succeeds: searches then
    /// answer from the last committed generation and say so.
    sync_error: Mutex<Option<String>>,
    /// The live sync, while one runs ([`Agent::start_live`]).
    live: Mutex<Option<Arc<Link>>>,
    /// `memory.qmd.paths`, indexed and readable (empty unless the backend is QMD).
    collections: Vec<Collection>,
    /// The QMD sidecar, when `memory.backend` is `qmd`.
    qmd: Option<Arc<qmd::Sidecar>>,
}

impl Agent {
    /// Opens the agent directory named by `settings` (nothing is created before the first
    /// write); the embedder is resolved from `choice` when first needed.
    /// Opens for a look (`status`, `doctor`): a remote provider is probed once, briefly.
    pub(crate) fn open_to_look(settings: Settings, choice: EmbedderChoice) -> Result<Agent> {
        let mut agent = Agent::open(settings, choice)?;
        agent.embedder = agent.embedder.into_look();
        Ok(agent)
    }

    pub(crate) fn open(settings: Settings, choice: EmbedderChoice) -> Result<Agent> {
        Agent::open_on(settings, choice, open_store)
    }

    /// [`Agent::open`] over the store `store` makes (the pipeline's tests run both stores).
    pub(crate) fn open_on(
        settings: Settings,
        choice: EmbedderChoice,
        store: impl FnOnce(&AgentDir, &Settings) -> Result<Box<dyn Store>>,
    ) -> Result<Agent> {
        if !settings.enabled {
            return Err(Error::Disabled);
        }
        config::validate_agent_id(&settings.agent_id)?;
        let dir = AgentDir::open(&settings.store_dir())?;
        let store = store(&dir, &settings)?;
        let collections = qmd::configured_collections(&settings);
        let qmd = (settings.backend == config::Backend::Qmd)
            .then(|| Arc::new(qmd::Sidecar::new(&settings, &collections)));
        Ok(Agent {
            embedder: Serving::new(choice, &settings, false),
            collections,
            qmd,
            settings,
            dir,
            store,
            sync_error: Mutex::new(None),
            live: Mutex::new(None),
        })
    }

    /// The resolved settings.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The agent directory.
    pub(crate) fn dir(&self) -> &AgentDir {
        &self.dir
    }

    /// Where the index is kept.
    pub(crate) fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// `memory.qmd.paths`, as indexed.
    pub(crate) fn collections(&self) -> &[Collection] {
        &self.collections
    }

    /// The QMD sidecar, with the QMD backend.
    pub(crate) fn qmd(&self) -> Option<&qmd::Sidecar> {
        self.qmd.as_deref()
    }

    /// The embedder serving this agent, resolved (and loaded) on first call, and tried
    /// again in the background while it cannot serve (`embed::Serving`).
    pub(crate) fn resolved(&self) -> &ResolvedEmbedder {
        self.embedder.get()
    }

    /// For `status`: that the embedder is being tried again, and when next.
    pub(crate) fn embedder_retry(&self) -> Option<String> {
        self.embedder.retry_note()
    }

    /// The index identity under the current settings and embedder.
    pub(crate) fn identity(&self) -> Identity {
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
            chunking: self
                .settings
                .semantics
                .is_openclaw()
                .then(|| "openclaw-2026.9-v5".to_string()),
            passages: resolved.embedder.as_ref().is_some_and(|e| {
                crate::passage::searched(
                    e.embeds_passages(),
                    self.settings.local.passages,
                    self.settings.ranking == Ranking::OpenClaw,
                )
            }),
        }
    }

    /// The memory files as they are now.
    pub(crate) fn discover(&self) -> Discovery {
        let root_files = match self.settings.semantics.is_openclaw() {
            true => workspace::ROOT_FILES_OPENCLAW,
            false => workspace::ROOT_FILES_DOCUMENTED,
        };
        workspace::discover(
            &self.settings.workspace,
            root_files,
            &self.settings.extra_paths,
            &self.collections,
            self.settings.sessions_dir().as_deref(),
        )
    }

    /// The current generation, opened for searching.
    pub(crate) fn reader(&self) -> Result<Arc<dyn Reader>> {
        self.store.reader()
    }

    /// The committed manifest, `None` before the first sync or when it cannot be read.
    pub(crate) fn manifest(&self) -> Option<Manifest> {
        self.store.manifest().ok().flatten()
    }

    /// Brings the index up to date with the workspace (see `Memory::sync`).
    pub(crate) fn sync(&self, force: bool, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        let mut writer = self.store.writer()?;
        if let Some(qmd) = &self.qmd {
            // The transcripts QMD searches are indexed here too (the fallback's copy).
            qmd.export_sessions();
        }
        let discovery = self.discover();
        let report = self.sync_locked(
            &mut *writer,
            &discovery,
            force,
            Trigger::Requested,
            progress,
        )?;
        drop(writer);
        // QMD's own index too (its failure is kept for `status`, never fails the sync).
        if let Some(qmd) = &self.qmd {
            let _ = qmd.update(true);
        }
        Ok(report)
    }

    fn sync_locked(
        &self,
        writer: &mut dyn Writer,
        discovery: &Discovery,
        force: bool,
        trigger: Trigger,
        progress: &dyn Fn(SyncProgress),
    ) -> Result<SyncReport> {
        // A vanished or mistyped workspace would look like every note deleted: refuse.
        if let Some(err) = self.workspace_missing() {
            self.set_sync_error(Some(err.to_string()));
            return Err(err);
        }
        let identity = self.sync_identity(writer.manifest().ok().flatten().as_ref());
        let plan = self.resolved().embedder.as_ref().map(|embedder| {
            let mut plan = EmbedPlan::new(embedder.as_ref(), &identity, &self.settings);
            // A search never waits for a batch job: its chunks are searchable by keyword
            // until a later sync reads the job.
            plan.batch_may_wait = trigger != Trigger::Search;
            // Nor for the whole of a large embedding: what it leaves is found by keyword,
            // and the next sync goes on from there.
            if trigger == Trigger::Search {
                plan.time_limit = Some(SEARCH_EMBED_TIME);
            }
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
            semantics: self.settings.semantics,
            force,
            embed: plan.as_ref(),
            session_deltas: background.then_some(self.settings.sync.sessions),
        };
        let result = sync::sync(writer, &request, progress);
        self.set_sync_error(result.as_ref().err().map(ToString::to_string));
        let report = result?;
        self.store.invalidate();
        Ok(report)
    }

    /// A sync now, as a search would make it (never waiting for a batch job), when the
    /// writer lock is free; a failure is logged and kept for `status`.
    fn sync_as_search(&self, writer: &mut dyn Writer, what: &str) {
        let discovery = self.discover();
        if let Err(err) = self.sync_locked(writer, &discovery, false, Trigger::Search, &|_| {}) {
            tracing::warn!("{what}: {err}");
        }
    }

    /// [`Error::WorkspaceMissing`] when the workspace is not a directory.
    pub(crate) fn workspace_missing(&self) -> Option<Error> {
        (!self.settings.workspace.is_dir()).then(|| Error::WorkspaceMissing {
            path: self.settings.workspace.clone(),
            origin: self.settings.workspace_origin.clone(),
        })
    }

    /// Why the last sync this process tried failed, until one succeeds.
    pub(crate) fn sync_error(&self) -> Option<String> {
        self.sync_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set_sync_error(&self, error: Option<String>) {
        *self.sync_error.lock().unwrap_or_else(|e| e.into_inner()) = error;
    }

    /// The identity a sync keeps (see the module docs).
    fn sync_identity(&self, manifest: Option<&Manifest>) -> Identity {
        let identity = self.identity();
        match manifest {
            Some(m) if keyword_only_over(&identity, &m.identity) => m.identity.clone(),
            _ => identity,
        }
    }

    /// True when the index is missing, has another identity, or predates workspace changes.
    pub(crate) fn is_dirty(&self, manifest: Option<&Manifest>, discovery: &Discovery) -> bool {
        manifest.is_none_or(|m| {
            m.identity != self.sync_identity(Some(m))
                || m.format != store::FORMAT_VERSION
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
        let manifest = self.manifest();
        let discovery = self.discover();
        if !self.is_dirty(manifest.as_ref(), &discovery) {
            // The index matches the workspace: an earlier failure no longer holds.
            self.set_sync_error(None);
            return Ok(());
        }
        match self.store.writer() {
            Ok(mut writer) => {
                match self.sync_locked(&mut *writer, &discovery, false, Trigger::Search, &|_| {}) {
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
            // Another process builds the first index: there is nothing to answer from yet,
            // and "run `memoria index` first" would send the user to what is running.
            Err(err @ Error::IndexBusy { .. }) if manifest.is_none() => Err(err),
            Err(Error::IndexBusy { .. }) => {
                tracing::warn!("index busy: searching the last committed index");
                Ok(())
            }
            // The agent directory cannot be written (a read-only mount, another owner):
            // search what is there, and say why it is not fresh.
            Err(err) if manifest.is_some() => {
                tracing::warn!("cannot sync before search, searching the last index: {err}");
                self.set_sync_error(Some(err.to_string()));
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    /// Before a search: keep the index fresh without making the search wait.
    pub(crate) fn freshen(&self) -> Result<()> {
        let Some(link) = self.live_link() else {
            return self.sync_if_dirty();
        };
        let has_index = || self.manifest().is_some();
        if !has_index() {
            // Nothing to answer from yet: wait for the live sync's first index, unless it
            // cannot be made (no workspace) or the live sync's attempt fails; then the
            // search says why at once instead of waiting out the first-index limit.
            if let Some(err) = self.workspace_missing() {
                return Err(err);
            }
            link.wait_for_sync(live::first_index_wait(), |live| {
                has_index() || live.last_sync_error.is_some()
            });
            if !has_index() {
                if let Some(reason) = link.status().last_sync_error {
                    return Err(Error::FirstSyncFailed {
                        dir: self.dir.root().to_path_buf(),
                        reason,
                    });
                }
            }
        } else if !link.watching() && self.settings.sync.on_search {
            let manifest = self.manifest();
            if self.is_dirty(manifest.as_ref(), &self.discover()) {
                link.request_sync();
            }
        }
        Ok(())
    }

    /// A damaged keyword index is rebuilt from the catalog by any sync: a search that finds
    /// it so heals it now (when no other process is writing) rather than serving without it
    /// until someone runs `memoria index`. Returns the generation to search.
    pub(crate) fn heal_keyword_index(&self, reader: Arc<dyn Reader>) -> Result<Arc<dyn Reader>> {
        if reader.keyword_ready().is_ok() || !self.settings.sync.on_search {
            return Ok(reader);
        }
        let Ok(mut writer) = self.store.writer() else {
            return Ok(reader);
        };
        self.sync_as_search(&mut *writer, "rebuilding the keyword index failed");
        drop(writer);
        self.reader()
    }

    /// After an append: the note searchable at once. Syncs now when the writer lock is
    /// free; when this process's live sync holds it, asks it and waits a little; another
    /// process's sync, or the watcher, picks the note up otherwise.
    pub(crate) fn sync_after_append(&self) {
        match self.store.writer() {
            Ok(mut writer) => self.sync_as_search(&mut *writer, "syncing after an append"),
            Err(_) => {
                if let Some(link) = self.live_link() {
                    link.request_sync();
                    link.wait_until(APPEND_SYNC_WAIT, |_| {
                        let manifest = self.manifest();
                        !self.is_dirty(manifest.as_ref(), &self.discover())
                    });
                }
            }
        }
    }

    /// Starts the live sync (see `Memory::start_live`).
    pub(crate) fn start_live(
        self: &Arc<Self>,
        on_event: Box<dyn Fn(&LiveEvent) + Send>,
    ) -> Result<LiveSync> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if live
            .as_ref()
            .is_some_and(|link| Arc::strong_count(link) > 1)
        {
            return Err(Error::AlreadyLive);
        }
        let (link, mut handle) = live::start(self.clone(), on_event);
        if let Some(qmd) = &self.qmd {
            handle.attach_qmd(qmd.maintain());
        }
        *live = Some(link);
        Ok(handle)
    }

    /// The live sync of this process, while it runs.
    pub(crate) fn live_link(&self) -> Option<Arc<Link>> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        // The worker holds the other reference while it runs.
        live.as_ref()
            .filter(|link| Arc::strong_count(link) > 1)
            .cloned()
    }
}

impl live::Target for Agent {
    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn root(&self) -> &Path {
        self.dir.root()
    }

    fn load_embedder(&self) {
        let _ = self.resolved();
    }

    fn has_index(&self) -> bool {
        self.manifest().is_some()
    }

    /// Syncs (transcripts below their deltas wait) when the workspace changed; `None`
    /// when it had not.
    fn sync_if_changed(&self) -> Result<Option<SyncReport>> {
        let manifest = self.manifest();
        let discovery = self.discover();
        if !self.is_dirty(manifest.as_ref(), &discovery) {
            // The index matches the workspace: an earlier failure no longer holds (a
            // workspace moved away and back unchanged).
            self.set_sync_error(None);
            return Ok(None);
        }
        let mut writer = self.store.writer()?;
        self.sync_locked(&mut *writer, &discovery, false, Trigger::Live, &|_| {})
            .map(Some)
    }

    fn files_changed(&self) {
        if let Some(qmd) = &self.qmd {
            qmd.files_changed();
        }
    }

    fn measure_check(&self) -> Duration {
        let started = Instant::now();
        let discovery = self.discover();
        let _ = sync::workspace_digest(&discovery);
        started.elapsed()
    }

    fn warm_view(&self) {
        if let Err(err) = self.reader() {
            tracing::warn!("opening the new index generation: {err}");
        }
    }
}
