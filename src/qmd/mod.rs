//! The QMD backend (SPEC §10): `memory.backend = "qmd"` answers searches with the QMD
//! sidecar, and memoria's own engine when QMD cannot.
//!
//! ```text
//!  memory.qmd.paths ─► collections ─┬─► index.yml in QMD's home (home.rs) ─► qmd update / embed
//!                                   └─► memoria's own index (cited qmd/<name>/…)
//!  search ─► scope (scope.rs) ─► qmd <query|search|vsearch> --json ─► output.rs ─► hits
//!                                     │ missing, failed, timed out, unparsable
//!                                     └─► memoria's engine, fallback {from: "qmd", reason}
//! ```
//!
//! **Collections.** The configured `paths` become named collections, plus OpenClaw's
//! `memory-root` (`MEMORY.md`), `memory-alt` (`memory.md`) and `memory-dir` (`memory/**/*.md`)
//! when `includeDefaultMemory`, plus `sessions` (the agent's transcripts exported as
//! Markdown, `sessions.rs`) when `sessions.enabled`. memoria indexes the configured ones
//! and the exports itself too, so the fallback serves the same documents.
//!
//! **Maintenance.** `qmd update` (and `qmd embed`) keep QMD's index fresh. A live memory
//! (`memoria mcp`, `memoria watch`) runs them on a thread of their own: at start when
//! `update.onBoot` (searches wait for it when `update.waitForBootSync`), every
//! `update.interval` (`embed`: every `update.embedInterval`), and `update.debounceMs` after
//! the live sync saw files change. Without one (a CLI search), a search runs `qmd update`
//! first when the last one (recorded in QMD's home, `memoria-qmd.json`) is older than
//! `update.interval`; `memoria index` runs both. Each run is bounded by its
//! `update.*TimeoutMs`; its failure is kept for `status`, and never fails a sync.
//!
//! **Failures.** A search that QMD cannot answer within `limits.timeoutMs` (missing binary,
//! non-zero exit, timeout, unparsable output) is answered by memoria's engine with the
//! reason; QMD is tried again [`RETRY_AFTER`] later (until then searches go straight to the
//! fallback, saying so), so a QMD that hangs costs one timeout per period, not one per
//! search.

mod home;
mod output;
mod process;
pub(crate) mod scope;
mod transcripts;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::clock::{self, unix_now};
use crate::config::{QmdSettings, SearchMode, Settings, DEFAULT_COLLECTIONS};
use crate::search::api::source_of;
use crate::search::{Hit, Mode, SearchResponse, Served};
use crate::workspace::collection::Collection;
use crate::workspace::{absolute, absolute_in};
pub(crate) use output::QmdHit;

/// A QMD answer as a search response: QMD's order and scores (its own scale: `minScore` is
/// not applied), its snippets within `limits`.
pub(crate) fn response(hits: Vec<QmdHit>, settings: &QmdSettings) -> SearchResponse {
    let mode = match settings.search_mode {
        SearchMode::Query => Mode::Hybrid,
        SearchMode::Search => Mode::FtsOnly,
        SearchMode::Vsearch => Mode::VectorOnly,
    };
    let warning = hits
        .is_empty()
        .then(|| "QMD found nothing for this query".to_string());
    let hits = hits
        .into_iter()
        .map(|hit| Hit {
            id: format!("qmd:{}#L{}", hit.path, hit.start_line),
            source: source_of(&hit.path).into(),
            path: hit.path,
            start_line: hit.start_line,
            end_line: hit.end_line,
            text: hit.snippet,
            score: hit.score,
            text_score: 0.0,
            vector_score: None,
            recall: Default::default(),
            wiki: None,
            supersedes: None,
        })
        .collect();
    SearchResponse {
        hits,
        served: Served {
            provider: "qmd".into(),
            model: None,
            mode,
            fallback: None,
            backend: Some("qmd".into()),
        },
        warning,
        snippet_chars: settings.limits.max_snippet_chars,
        injected_chars: Some(settings.limits.max_injected_chars),
        recall_fields: false,
        ranking: None,
        candidates: None,
    }
}

/// After a failed search, how long searches go straight to memoria's engine.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// memoria's record of the last `qmd update` / `qmd embed`, in QMD's home.
const STATE_FILE: &str = "memoria-qmd.json";

/// The collections memoria indexes itself for the QMD backend (empty otherwise): the
/// configured ones (`memory.qmd.paths`), with their paths resolved against the workspace,
/// and the exported transcripts (`memory.qmd.sessions`) unless memoria indexes the
/// transcripts themselves (`experimental.sessionMemory`).
pub(crate) fn configured_collections(settings: &Settings) -> Vec<Collection> {
    if settings.backend != crate::config::Backend::Qmd {
        return Vec::new();
    }
    let workspace = absolute(&settings.workspace);
    let mut collections: Vec<Collection> = settings
        .qmd
        .paths
        .iter()
        .filter_map(|p| {
            // The pattern was checked when the config was read.
            Collection::new(&p.name, &absolute_in(&workspace, &p.path), &p.pattern)
                .map_err(|err| tracing::warn!("{err}"))
                .ok()
        })
        .collect();
    if settings.sessions_dir().is_none() {
        collections.extend(sessions_collection(settings));
    }
    collections
}

/// The exported transcripts' collection, when `memory.qmd.sessions.enabled`.
fn sessions_collection(settings: &Settings) -> Option<Collection> {
    let export = settings
        .qmd
        .sessions
        .enabled
        .then(|| export_dir(settings))?;
    Collection::new(transcripts::COLLECTION, &export, "*.md").ok()
}

fn export_dir(settings: &Settings) -> PathBuf {
    let home = home::Home::new(&settings.state_dir, &settings.agent_id);
    transcripts::export_dir(
        settings.qmd.sessions.export_dir.as_deref().map(Path::new),
        &absolute(&settings.workspace),
        home.root(),
    )
}

/// OpenClaw's collections of the workspace's memory files (`includeDefaultMemory`).
fn default_collections(workspace: &Path) -> Vec<Collection> {
    let patterns = [
        (workspace.to_path_buf(), "MEMORY.md"),
        (workspace.to_path_buf(), "memory.md"),
        (workspace.join("memory"), "**/*.md"),
    ];
    DEFAULT_COLLECTIONS
        .iter()
        .zip(patterns)
        .filter_map(|(name, (root, pattern))| Collection::new(name, &root, pattern).ok())
        .collect()
}

/// When QMD's index was last refreshed (unix seconds), kept in QMD's home.
#[derive(Debug, Default, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Record {
    last_update: Option<u64>,
    last_embed: Option<u64>,
}

/// What `status` says about QMD.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QmdStatus {
    /// `memory.qmd.command`.
    pub command: String,
    /// QMD's home (`<stateDir>/agents/<agentId>/qmd`).
    pub home: String,
    /// The collections QMD is given.
    pub collections: Vec<String>,
    /// Which engine answers searches now: `qmd`, or `builtin` while QMD is being retried.
    pub serving: String,
    /// Unix seconds of the last successful `qmd update`.
    pub last_update: Option<u64>,
    /// Unix seconds of the last successful `qmd embed`.
    pub last_embed: Option<u64>,
    /// The last failure (search, update or embed), until QMD succeeds again.
    pub last_error: Option<String>,
}

/// Where transcripts are exported from and to (`memory.qmd.sessions`).
struct SessionExport {
    source: PathBuf,
    dir: PathBuf,
    retention: Option<Duration>,
}

#[derive(Default)]
struct State {
    /// The last search failure and when: searches skip QMD for [`RETRY_AFTER`].
    failed: Option<(Instant, String)>,
    last_error: Option<String>,
    collections_written: bool,
}

/// The QMD sidecar of one agent.
pub(crate) struct Sidecar {
    settings: QmdSettings,
    workspace: PathBuf,
    home: home::Home,
    record_file: PathBuf,
    collections: Vec<Collection>,
    sessions: Option<SessionExport>,
    state: Mutex<State>,
    /// Set while a maintenance thread runs; `true` once its boot run is done.
    boot: (Mutex<Option<bool>>, Condvar),
    changed: Mutex<Option<Sender<()>>>,
    stop: AtomicBool,
}

impl Sidecar {
    /// The sidecar for `settings` (whose backend is QMD); `configured` are its
    /// [`configured_collections`].
    pub(crate) fn new(settings: &Settings, configured: &[Collection]) -> Sidecar {
        let workspace = absolute(&settings.workspace);
        let mut collections = Vec::new();
        if settings.qmd.include_default_memory {
            collections.extend(default_collections(&workspace));
        }
        collections.extend(configured.iter().cloned());
        let sessions = settings.qmd.sessions.enabled.then(|| SessionExport {
            source: settings.transcripts_dir(),
            dir: export_dir(settings),
            retention: settings
                .qmd
                .sessions
                .retention_days
                .map(|days| Duration::from_secs(days.saturating_mul(86_400))),
        });
        // QMD searches the exports even when memoria indexes the transcripts themselves.
        if let Some(export) = &sessions {
            if !collections
                .iter()
                .any(|c| c.name == transcripts::COLLECTION)
            {
                collections
                    .extend(Collection::new(transcripts::COLLECTION, &export.dir, "*.md").ok());
            }
        }
        let home = home::Home::new(&settings.state_dir, &settings.agent_id);
        Sidecar {
            settings: settings.qmd.clone(),
            workspace,
            record_file: home.root().join(STATE_FILE),
            home,
            collections,
            sessions,
            state: Mutex::new(State::default()),
            boot: (Mutex::new(None), Condvar::new()),
            changed: Mutex::new(None),
            stop: AtomicBool::new(false),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self) -> Record {
        std::fs::read(&self.record_file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save_record(&self, change: impl FnOnce(&mut Record)) {
        let mut record = self.record();
        change(&mut record);
        let bytes = serde_json::to_vec_pretty(&record).unwrap_or_default();
        if let Err(err) = crate::atomic::write_atomic(&self.record_file, &bytes) {
            tracing::warn!("recording QMD's last update: {err}");
        }
    }

    /// Runs `qmd <args>` in QMD's home.
    fn run(&self, args: &[&str], timeout: Duration) -> Result<Vec<u8>, String> {
        {
            let mut state = self.state();
            if !state.collections_written {
                self.home.write_collections(&self.collections)?;
                state.collections_written = true;
            }
        }
        process::run(
            &self.settings.command,
            args,
            &self.home.envs(),
            timeout,
            &self.stop,
        )
        .map_err(|err| err.to_string())
    }

    /// Searches with QMD: its hits, or why it could not answer.
    pub(crate) fn search(&self, query: &str) -> Result<Vec<QmdHit>, String> {
        if let Some((at, why)) = &self.state().failed {
            if at.elapsed() < RETRY_AFTER {
                let wait = RETRY_AFTER.saturating_sub(at.elapsed()).as_secs().max(1);
                return Err(format!("{why} (QMD is tried again in {wait} s)"));
            }
        }
        self.wait_for_boot();
        if !self.maintained() && self.update_due() {
            // A one-shot search (no maintenance thread): refresh QMD's index first.
            let _ = self.update(false);
        }
        let limits = &self.settings.limits;
        let max = limits.max_results.to_string();
        let args = [
            self.settings.search_mode.command(),
            "--json",
            "-n",
            max.as_str(),
            query,
        ];
        let answer = self
            .run(&args, limits.timeout)
            .and_then(|stdout| {
                output::parse_hits(
                    &stdout,
                    &self.collections,
                    &self.workspace,
                    limits.max_results,
                )
            })
            .map_err(|why| format!("QMD could not answer: {why}"));
        let mut state = self.state();
        match &answer {
            Ok(_) => {
                state.failed = None;
                state.last_error = None;
            }
            Err(why) => {
                tracing::warn!("{why}; memoria's own index answers");
                state.failed = Some((Instant::now(), why.clone()));
                state.last_error = Some(why.clone());
            }
        }
        answer
    }

    fn maintained(&self) -> bool {
        self.boot
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// With `update.waitForBootSync`, waits for the maintenance thread's boot run.
    fn wait_for_boot(&self) {
        if !self.settings.update.wait_for_boot_sync {
            return;
        }
        let bound = self.settings.update.update_timeout + self.settings.update.embed_timeout;
        let (lock, changed) = &self.boot;
        let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = changed.wait_timeout_while(guard, bound, |done| *done == Some(false));
    }

    fn update_due(&self) -> bool {
        let Some(interval) = self.settings.update.interval else {
            return self.record().last_update.is_none();
        };
        self.record()
            .last_update
            .is_none_or(|at| unix_now().saturating_sub(at) >= interval.as_secs())
    }

    /// Exports the transcripts for the `sessions` collection (`memory.qmd.sessions`).
    pub(crate) fn export_sessions(&self) {
        let Some(export) = &self.sessions else {
            return;
        };
        match transcripts::export(
            &export.source,
            &export.dir,
            export.retention,
            clock::system_now(),
        ) {
            Ok(done) if done.written + done.removed > 0 => tracing::info!(
                "exported transcripts for QMD: {} written, {} removed",
                done.written,
                done.removed
            ),
            Ok(_) => {}
            Err(why) => {
                let why = format!("exporting transcripts for QMD: {why}");
                tracing::warn!("{why}");
                self.state().last_error = Some(why);
            }
        }
    }

    /// `qmd update`, then `qmd embed` when `embed`; failures are kept for `status`. The
    /// transcripts are exported first.
    pub(crate) fn update(&self, embed: bool) -> Result<(), String> {
        self.export_sessions();
        let update = &self.settings.update;
        let mut result = self
            .run(&["update"], update.update_timeout)
            .map(|_| self.save_record(|r| r.last_update = Some(unix_now())))
            .map_err(|why| format!("qmd update: {why}"));
        if embed && result.is_ok() {
            result = self
                .run(&["embed"], update.embed_timeout)
                .map(|_| self.save_record(|r| r.last_embed = Some(unix_now())))
                .map_err(|why| format!("qmd embed: {why}"));
        }
        if let Err(why) = &result {
            tracing::warn!("{why}");
            self.state().last_error = Some(why.clone());
        }
        result
    }

    /// Tells the maintenance thread that memory files changed (`update.debounceMs`).
    pub(crate) fn files_changed(&self) {
        if let Some(tx) = self
            .changed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let _ = tx.send(());
        }
    }

    /// What `status` shows.
    pub(crate) fn status(&self) -> QmdStatus {
        let record = self.record();
        let state = self.state();
        let retrying = state
            .failed
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < RETRY_AFTER);
        QmdStatus {
            command: self.settings.command.clone(),
            home: self.home.root().display().to_string(),
            collections: self.collections.iter().map(|c| c.name.clone()).collect(),
            serving: if retrying { "builtin" } else { "qmd" }.into(),
            last_update: record.last_update,
            last_embed: record.last_embed,
            last_error: state.last_error.clone(),
        }
    }

    /// Starts the maintenance thread (see the module docs); it runs until the handle drops.
    pub(crate) fn maintain(self: &Arc<Self>) -> Maintenance {
        let (tx, rx) = mpsc::channel();
        *self.changed.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        *self.boot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(false);
        self.stop.store(false, Ordering::Relaxed);
        let sidecar = self.clone();
        let thread = std::thread::Builder::new()
            .name("memoria-qmd".into())
            .spawn(move || {
                let update = sidecar.settings.update.clone();
                if update.on_boot {
                    let _ = sidecar.update(true);
                }
                sidecar.boot_done();
                let now = Instant::now();
                let mut next_update = update.interval.map(|i| now + i);
                let mut next_embed = update.embed_interval.map(|i| now + i);
                let mut changed_at: Option<Instant> = None;
                loop {
                    let debounced = changed_at.map(|at| at + update.debounce);
                    let deadline = [next_update, next_embed, debounced]
                        .into_iter()
                        .flatten()
                        .min();
                    let wait = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                    let message = match wait {
                        Some(wait) => rx.recv_timeout(wait),
                        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    };
                    match message {
                        Ok(()) if sidecar.stop.load(Ordering::Relaxed) => return,
                        Ok(()) => {
                            changed_at.get_or_insert_with(Instant::now);
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                        Err(RecvTimeoutError::Timeout) => {}
                    }
                    let now = Instant::now();
                    let embed_due = next_embed.is_some_and(|t| t <= now);
                    if embed_due || next_update.is_some_and(|t| t <= now) || changed_at.is_some() {
                        changed_at = None;
                        let _ = sidecar.update(embed_due);
                        let now = Instant::now();
                        next_update = update.interval.map(|i| now + i);
                        if embed_due {
                            next_embed = update.embed_interval.map(|i| now + i);
                        }
                    }
                }
            });
        let thread = match thread {
            Ok(thread) => Some(thread),
            Err(err) => {
                tracing::warn!("the QMD maintenance thread could not start: {err}");
                self.boot_done();
                None
            }
        };
        Maintenance {
            sidecar: self.clone(),
            thread,
        }
    }

    fn boot_done(&self) {
        *self.boot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(true);
        self.boot.1.notify_all();
    }
}

/// The running maintenance thread; dropping it stops the thread (a QMD command in progress
/// is ended).
pub(crate) struct Maintenance {
    sidecar: Arc<Sidecar>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Maintenance {
    fn drop(&mut self) {
        self.sidecar.stop.store(true, Ordering::Relaxed);
        // Wakes the thread (it sees `stop`); the channel closes with the sender.
        let sender = self
            .sidecar
            .changed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(sender) = sender {
            let _ = sender.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        *self
            .sidecar
            .boot
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        self.sidecar.boot.1.notify_all();
        self.sidecar.stop.store(false, Ordering::Relaxed);
    }
}
