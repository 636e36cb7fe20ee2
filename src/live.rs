//! Live memory: an agent's index kept fresh while the agent uses it (SPEC §4's triggers).
//!
//! [`Memory::start_live`](crate::Memory::start_live) starts one background thread per
//! agent that owns every sync of that agent in this process:
//!
//! ```text
//!  file system ─► notify ─► debouncer (sync.watchDebounceMs) ─┐
//!  start (sync.onSessionStart) ───────────────────────────────┤
//!  every sync.intervalMinutes ────────────────────────────────┼─► worker: dirty? ─► sync
//!  a search that found the workspace changed (not watching) ──┤     │ busy: retry in 2 s
//!  polling tick (when watching failed) ───────────────────────┘     │ failed: back off
//!                                                                   ▼
//!                                  status (watcher state, last sync, last error), events
//! ```
//!
//! Triggers that arrive while a sync runs are merged into one more check. A check lists the
//! workspace and compares it with the manifest; only a changed workspace is synced, so a
//! spurious event costs a listing, never a write.
//!
//! **The watcher never dies silently.** Roots are `MEMORY.md` and `memory.md` (through a
//! non-recursive watch of the workspace), `memory/` recursively, every extra path, and the
//! agent's sessions directory when sessions are on. A root that does not exist (yet) is
//! replaced by a watch on its nearest existing ancestor, and the roots are reconciled after
//! every batch of events, so a first `memory/`, a sessions directory created by the first
//! session, or a `memory/` deleted and created again are picked up. An event-queue overflow
//! is a rescan (every check is a full listing). If the watcher cannot start or reports an
//! error (inotify limits, an unsupported file system), the worker polls at an interval set
//! from a measured listing and says so in `status`; it tries to watch again every
//! [`REWATCH_EVERY`].
//!
//! **Searches never wait for a sync**: they answer from the last committed generation. While
//! the watcher is healthy they skip the workspace listing altogether; otherwise a search that
//! finds the workspace changed asks the worker for a sync. Only before the first index
//! exists does a search wait for it (there is nothing to answer from).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};
use serde::{Deserialize, Serialize};

use crate::clock::unix_now;
use crate::config::Settings;
use crate::index::atomic::write_atomic;
use crate::workspace::{absolute, absolute_in};
use crate::{Error, Memory, SyncReport};

/// `MEMORIA_WATCH=poll` makes the live sync poll instead of watching.
pub const FORCE_POLL_ENV: &str = "MEMORIA_WATCH";
/// How often a polling worker tries to watch again.
pub const REWATCH_EVERY: Duration = Duration::from_secs(30);
/// How soon a sync that left chunks to a running batch job looks at it again.
const BATCH_RECHECK: Duration = Duration::from_secs(30);
/// How long a sync waits before retrying when another process holds the writer lock.
const BUSY_RETRY: Duration = Duration::from_secs(2);
/// Backoff after a failed sync: doubles from the first value up to the second.
const FAILURE_BACKOFF: (Duration, Duration) = (Duration::from_secs(5), Duration::from_secs(300));
/// Polling interval bounds; in between, 100 × the measured cost of one check.
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_secs(2), Duration::from_secs(60));
/// The debouncer's tick: events are released at most this long after their debounce
/// delay (its default, a quarter of the delay, would add up to 375 ms to every change).
const DEBOUNCE_TICK: Duration = Duration::from_millis(100);
/// How long a search waits for the first index of a new agent directory.
const FIRST_INDEX_WAIT: Duration = Duration::from_secs(600);

/// What the watcher is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WatcherState {
    /// File-system events trigger syncs; searches skip the workspace listing.
    Watching,
    /// Watching failed: the workspace is listed every `pollIntervalMs`.
    Polling,
    /// No watcher (`sync.watch` is false, or no live sync runs in this process).
    Off,
}

/// The live sync's state, as `status` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveStatus {
    /// The process running the live sync (`status` from another process reads it from
    /// the agent directory's `live.json`).
    pub pid: u32,
    /// `watching`, `polling` or `off`.
    pub watcher: WatcherState,
    /// Why the watcher is polling or off, or the last change of its roots.
    pub reason: Option<String>,
    /// The paths watched (a missing root is replaced by its nearest existing ancestor).
    pub roots: Vec<String>,
    /// The polling interval, when polling.
    pub poll_interval_ms: Option<u64>,
    /// Syncs completed by this process's live sync.
    pub syncs: u64,
    /// Unix seconds of the last completed sync.
    pub last_sync_at: Option<u64>,
    /// Why the last sync failed, until one succeeds.
    pub last_sync_error: Option<String>,
}

impl LiveStatus {
    fn starting() -> LiveStatus {
        LiveStatus {
            pid: std::process::id(),
            watcher: WatcherState::Off,
            reason: Some("starting".into()),
            roots: Vec::new(),
            poll_interval_ms: None,
            syncs: 0,
            last_sync_at: None,
            last_sync_error: None,
        }
    }
}

/// Something the live sync did: `memoria watch` prints one line for each.
#[derive(Debug, Clone)]
pub enum LiveEvent {
    /// A sync committed.
    Synced(SyncReport),
    /// A sync failed; it is retried with backoff and searches say their results are stale.
    Failed(String),
    /// Another process holds the writer lock; the sync is retried shortly.
    Busy,
    /// The watcher changed state or roots (`watching`, `polling` with the reason, …).
    Watcher(LiveStatus),
}

enum Trigger {
    Stop,
    /// File-system events (after debouncing): reconcile the roots, then check.
    Changed,
    /// The watcher reported errors: switch to polling.
    WatchFailed(String),
    /// A search found the workspace changed, or something asked for a check.
    Check,
}

/// What a [`Memory`] shares with its live worker.
pub(crate) struct Link {
    tx: Mutex<Sender<Trigger>>,
    state: Mutex<LiveStatus>,
    changed: Condvar,
    /// `<agent dir>/live.json`: the state, for `status` in other processes.
    heartbeat: PathBuf,
}

impl Link {
    fn state(&self) -> MutexGuard<'_, LiveStatus> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn send(&self, trigger: Trigger) {
        let _ = self
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(trigger);
    }

    /// True while file-system events keep the index fresh.
    pub(crate) fn watching(&self) -> bool {
        self.state().watcher == WatcherState::Watching
    }

    /// Asks the worker to check the workspace (returns at once).
    pub(crate) fn request_sync(&self) {
        self.send(Trigger::Check);
    }

    /// The current state.
    pub(crate) fn status(&self) -> LiveStatus {
        self.state().clone()
    }

    /// Waits until `done` holds or `timeout` passes, re-checking after every sync attempt.
    pub(crate) fn wait_until(&self, timeout: Duration, done: impl Fn() -> bool) {
        let deadline = Instant::now() + timeout;
        let mut state = self.state();
        while !done() {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            state = self
                .changed
                .wait_timeout(state, left.min(Duration::from_millis(500)))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    fn update(&self, change: impl FnOnce(&mut LiveStatus)) -> LiveStatus {
        let mut state = self.state();
        change(&mut state);
        self.changed.notify_all();
        self.publish(&state);
        state.clone()
    }

    /// Writes the state to `live.json` once the agent directory exists (a live sync never
    /// creates it before its first sync; a read-only directory only loses the heartbeat).
    fn publish(&self, state: &LiveStatus) {
        if !self.heartbeat.parent().is_some_and(Path::is_dir) {
            return;
        }
        let Ok(bytes) = serde_json::to_vec_pretty(state) else {
            return;
        };
        if let Err(err) = write_atomic(&self.heartbeat, &bytes) {
            tracing::debug!("{}: {err}", self.heartbeat.display());
        }
    }

    /// Removes `live.json` if this process wrote it.
    fn unpublish(&self) {
        if read_heartbeat(&self.heartbeat).is_some_and(|s| s.pid == std::process::id()) {
            let _ = std::fs::remove_file(&self.heartbeat);
        }
    }
}

/// The file a live sync keeps its state in, in the agent directory.
pub const HEARTBEAT_FILE: &str = "live.json";

fn read_heartbeat(path: &Path) -> Option<LiveStatus> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Another process's live sync of the agent directory at `root`, from its `live.json`:
/// `Ok(None)` when there is none, `Err(warning)` when the process that wrote it is gone.
pub(crate) fn heartbeat_of(root: &Path) -> Result<Option<LiveStatus>, String> {
    let path = root.join(HEARTBEAT_FILE);
    let Some(status) = read_heartbeat(&path) else {
        return Ok(None);
    };
    if process_alive(status.pid) {
        Ok(Some(status))
    } else {
        Err(format!(
            "{}: the live sync of process {} ended without saying so (killed?); nothing \
             keeps this index fresh but searches and `memoria index`",
            path.display(),
            status.pid
        ))
    }
}

#[cfg(target_os = "linux")]
fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Without /proc the heartbeat is trusted.
#[cfg(not(target_os = "linux"))]
fn process_alive(_pid: u32) -> bool {
    true
}

/// How long a search of a memory with no index yet waits for the live sync's first one.
pub(crate) fn first_index_wait() -> Duration {
    FIRST_INDEX_WAIT
}

/// A running live sync. Dropping it (or [`LiveSync::stop`]) stops the worker and the
/// watcher; a sync in progress finishes first (syncs commit atomically, so nothing is left
/// half-written even when the process is killed instead).
pub struct LiveSync {
    link: Arc<Link>,
    thread: Option<JoinHandle<()>>,
    /// The QMD sidecar's maintenance thread, with the QMD backend.
    qmd: Option<crate::qmd::Maintenance>,
}

impl LiveSync {
    /// Stops the live sync and waits for its worker.
    pub fn stop(mut self) {
        self.shutdown();
    }

    /// The live sync's state.
    pub fn status(&self) -> LiveStatus {
        self.link.status()
    }

    /// Keeps the QMD sidecar's maintenance running as long as this live sync.
    pub(crate) fn attach_qmd(&mut self, maintenance: crate::qmd::Maintenance) {
        self.qmd = Some(maintenance);
    }

    fn shutdown(&mut self) {
        self.qmd = None;
        self.link.send(Trigger::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
            self.link.unpublish();
        }
    }
}

impl Drop for LiveSync {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Starts the worker for `memory` (see the module docs).
pub(crate) fn start(
    memory: Arc<Memory>,
    on_event: Box<dyn Fn(&LiveEvent) + Send>,
) -> (Arc<Link>, LiveSync) {
    let (tx, rx) = mpsc::channel();
    let link = Arc::new(Link {
        tx: Mutex::new(tx.clone()),
        state: Mutex::new(LiveStatus::starting()),
        changed: Condvar::new(),
        heartbeat: memory.agent_dir().root().join(HEARTBEAT_FILE),
    });
    let worker_link = link.clone();
    let thread = std::thread::Builder::new()
        .name(format!("memoria-live-{}", memory.settings().agent_id))
        .spawn(move || {
            Worker {
                memory,
                link: worker_link,
                tx,
                on_event,
                watch: None,
                poll: None,
                last_watch_attempt: None,
                backoff: FAILURE_BACKOFF.0,
                synced: false,
            }
            .run(rx)
        });
    let thread = match thread {
        Ok(thread) => Some(thread),
        Err(err) => {
            link.update(|s| {
                s.reason = Some(format!("the live sync thread could not start: {err}"));
            });
            None
        }
    };
    (
        link.clone(),
        LiveSync {
            link,
            thread,
            qmd: None,
        },
    )
}

struct Worker {
    memory: Arc<Memory>,
    link: Arc<Link>,
    /// For the watcher's event handler.
    tx: Sender<Trigger>,
    on_event: Box<dyn Fn(&LiveEvent) + Send>,
    watch: Option<Watch>,
    /// The polling interval while not watching (and `sync.watch` is on).
    poll: Option<Duration>,
    last_watch_attempt: Option<Instant>,
    backoff: Duration,
    /// A sync has committed since the start.
    synced: bool,
}

impl Worker {
    fn run(mut self, rx: Receiver<Trigger>) {
        let sync = self.memory.settings().sync;
        // Load the model now, so the first search finds it warm.
        let _ = self.memory.embedder();
        if sync.watch {
            self.start_watching();
        } else {
            self.set_watcher(
                WatcherState::Off,
                Some("sync.watch is false: no watcher".into()),
            );
        }
        let interval = (sync.interval_minutes > 0)
            .then(|| Duration::from_secs(sync.interval_minutes.saturating_mul(60)));
        let now = Instant::now();
        let mut next_interval = interval.map(|i| now + i);
        let mut next_poll = self.poll.map(|p| now + p);
        let mut retry_at: Option<Instant> = None;
        // A session starts: sync once (`sync.onSessionStart`); with no index yet, always.
        let mut pending =
            sync.on_session_start || self.memory.agent_dir().manifest().ok().flatten().is_none();
        loop {
            let trigger = if pending {
                rx.try_recv().ok()
            } else {
                let deadline = [next_interval, next_poll, retry_at]
                    .into_iter()
                    .flatten()
                    .min();
                match deadline {
                    Some(deadline) => {
                        let wait = deadline.saturating_duration_since(Instant::now());
                        match rx.recv_timeout(wait) {
                            Ok(trigger) => Some(trigger),
                            Err(RecvTimeoutError::Timeout) => None,
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    }
                    None => match rx.recv() {
                        Ok(trigger) => Some(trigger),
                        Err(_) => return,
                    },
                }
            };
            // This trigger and any queued behind it make one check.
            let mut reconcile = false;
            for trigger in trigger
                .into_iter()
                .chain(std::iter::from_fn(|| rx.try_recv().ok()))
            {
                match trigger {
                    Trigger::Stop => return,
                    Trigger::Changed => {
                        reconcile = true;
                        pending = true;
                    }
                    Trigger::WatchFailed(reason) => {
                        self.fall_back_to_polling(format!("the watcher failed: {reason}"));
                        next_poll = self.poll.map(|p| Instant::now() + p);
                        pending = true;
                    }
                    Trigger::Check => pending = true,
                }
            }
            let now = Instant::now();
            if next_interval.is_some_and(|t| t <= now) {
                next_interval = interval.map(|i| now + i);
                pending = true;
            }
            if next_poll.is_some_and(|t| t <= now) {
                next_poll = self.poll.map(|p| now + p);
                if self.watch.is_none()
                    && self
                        .last_watch_attempt
                        .is_none_or(|t| t.elapsed() >= REWATCH_EVERY)
                {
                    self.start_watching();
                    next_poll = self.poll.map(|p| now + p);
                }
                pending = true;
            }
            if retry_at.is_some_and(|t| t <= now) {
                retry_at = None;
                pending = true;
            }
            if reconcile {
                self.reconcile();
            }
            if pending && retry_at.is_none() {
                pending = false;
                retry_at = self.check_and_sync();
            }
        }
    }

    /// Syncs when the workspace changed; returns when to retry, if the sync must be.
    fn check_and_sync(&mut self) -> Option<Instant> {
        match self.memory.sync_if_changed() {
            Ok(None) => {
                self.backoff = FAILURE_BACKOFF.0;
                None
            }
            Ok(Some(report)) => {
                // A sync whose embedding failed committed the text side; the chunks it
                // could not embed stay "missing" (dirty), so it is retried, with backoff.
                let embed_error = report.embed_error.clone();
                let awaiting_batch = report.awaiting_batch > 0;
                self.link.update(|s| {
                    s.syncs += 1;
                    s.last_sync_at = Some(unix_now());
                    s.last_sync_error = embed_error
                        .as_ref()
                        .map(|e| format!("embedding failed: {e}"));
                });
                (self.on_event)(&LiveEvent::Synced(report));
                // QMD's boot update covers what the first sync found.
                if self.synced {
                    self.memory.files_changed();
                }
                self.synced = true;
                // Open the new generation now, so the next search does not pay for it.
                self.memory.warm_view();
                if embed_error.is_some() {
                    let retry = Instant::now() + self.backoff;
                    self.backoff = (self.backoff * 2).min(FAILURE_BACKOFF.1);
                    return Some(retry);
                }
                self.backoff = FAILURE_BACKOFF.0;
                // Vectors a batch job will bring (`remote.batch.wait: false`): look again.
                awaiting_batch.then(|| Instant::now() + BATCH_RECHECK)
            }
            Err(Error::IndexBusy { .. }) => {
                (self.on_event)(&LiveEvent::Busy);
                Some(Instant::now() + BUSY_RETRY)
            }
            Err(err) => {
                let message = err.to_string();
                self.link
                    .update(|s| s.last_sync_error = Some(message.clone()));
                (self.on_event)(&LiveEvent::Failed(message));
                let retry = Instant::now() + self.backoff;
                self.backoff = (self.backoff * 2).min(FAILURE_BACKOFF.1);
                Some(retry)
            }
        }
    }

    fn set_watcher(&mut self, watcher: WatcherState, reason: Option<String>) {
        let roots = self
            .watch
            .as_ref()
            .map(|w| {
                w.roots
                    .iter()
                    .map(|(p, _)| p.display().to_string())
                    .collect()
            })
            .unwrap_or_default();
        let poll = self.poll;
        let status = self.link.update(|s| {
            s.watcher = watcher;
            s.reason = reason;
            s.roots = roots;
            s.poll_interval_ms = poll.map(|p| p.as_millis() as u64);
        });
        (self.on_event)(&LiveEvent::Watcher(status));
    }

    fn start_watching(&mut self) {
        self.last_watch_attempt = Some(Instant::now());
        if std::env::var_os(FORCE_POLL_ENV).is_some_and(|v| v == "poll") {
            // Network and virtual file systems (NFS, SMB, WSL's /mnt/c) can accept a watch
            // and never deliver an event: their users ask for polling.
            self.fall_back_to_polling(format!("{FORCE_POLL_ENV}=poll"));
            return;
        }
        let settings = self.memory.settings();
        let debounce = Duration::from_millis(settings.sync.watch_debounce_ms.max(1));
        match Watch::start(settings, debounce, self.tx.clone()) {
            Ok(watch) => {
                let rewatch = self.poll.is_some();
                self.watch = Some(watch);
                self.poll = None;
                let reason = rewatch.then(|| "watching again after polling".to_string());
                self.set_watcher(WatcherState::Watching, reason);
            }
            Err(reason) => self.fall_back_to_polling(format!("watching failed: {reason}")),
        }
    }

    fn fall_back_to_polling(&mut self, reason: String) {
        self.watch = None;
        let cost = self.memory.measure_check();
        let poll = (cost * 100).clamp(POLL_BOUNDS.0, POLL_BOUNDS.1);
        self.poll = Some(poll);
        let reason = format!(
            "{reason}; polling every {:.1} s (a workspace check takes {:.1} \
             ms) and trying to watch again every {} s",
            poll.as_secs_f64(),
            cost.as_secs_f64() * 1000.0,
            REWATCH_EVERY.as_secs()
        );
        tracing::warn!("{reason}");
        self.set_watcher(WatcherState::Polling, Some(reason));
    }

    fn reconcile(&mut self) {
        let Some(watch) = self.watch.as_mut() else {
            return;
        };
        match watch.reconcile(self.memory.settings()) {
            Ok(None) => {}
            Ok(Some(change)) => self.set_watcher(WatcherState::Watching, Some(change)),
            Err(reason) => self.fall_back_to_polling(format!("watching failed: {reason}")),
        }
    }
}

/// The debounced watcher and the roots it watches.
struct Watch {
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    roots: Vec<(PathBuf, RecursiveMode)>,
}

impl Watch {
    fn start(
        settings: &Settings,
        debounce: Duration,
        tx: Sender<Trigger>,
    ) -> Result<Watch, String> {
        let ignored = absolute(&settings.store.dir);
        let handler = move |result: DebounceEventResult| {
            let trigger = match result {
                Ok(events) => {
                    if !events.iter().any(|e| relevant(e, &ignored)) {
                        return;
                    }
                    Trigger::Changed
                }
                Err(errors) => Trigger::WatchFailed(
                    errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            };
            let _ = tx.send(trigger);
        };
        let debouncer = new_debouncer(debounce, Some(DEBOUNCE_TICK.min(debounce)), handler)
            .map_err(|e| e.to_string())?;
        let mut watch = Watch {
            debouncer,
            roots: Vec::new(),
        };
        watch.reconcile(settings)?;
        Ok(watch)
    }

    /// Watches the roots the settings name as they exist now; returns what changed, if
    /// anything did since the last call.
    fn reconcile(&mut self, settings: &Settings) -> Result<Option<String>, String> {
        let wanted = roots(settings);
        let mut changes = Vec::new();
        for (path, mode) in &self.roots {
            if !wanted.contains(&(path.clone(), *mode)) {
                // The path may be gone already (that is often why it is unwanted).
                let _ = self.debouncer.unwatch(path);
                changes.push(format!("-{}", path.display()));
            }
        }
        for (path, mode) in &wanted {
            if !self.roots.contains(&(path.clone(), *mode)) {
                self.debouncer
                    .watch(path, *mode)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                changes.push(format!("+{}", path.display()));
            }
        }
        let first = self.roots.is_empty();
        self.roots = wanted;
        Ok(
            (!first && !changes.is_empty())
                .then(|| format!("roots changed: {}", changes.join(" "))),
        )
    }
}

/// True for an event that can change what is indexed: not a plain read (inotify reports
/// opens), not under the agent directory, and about Markdown, a transcript, a directory
/// (no extension), or a rescan after an overflow.
fn relevant(event: &notify::Event, ignored: &Path) -> bool {
    if event.need_rescan() {
        return true;
    }
    if let EventKind::Access(kind) = event.kind {
        if kind != AccessKind::Close(AccessMode::Write) {
            return false;
        }
    }
    event.paths.iter().any(|path| {
        !path.starts_with(ignored)
            && path
                .extension()
                .is_none_or(|ext| ext == "md" || ext == "jsonl")
    })
}

/// The directories to watch for `settings`, each an existing directory (a missing root is
/// replaced by its nearest existing ancestor, watched non-recursively), none inside a
/// recursively watched one.
fn roots(settings: &Settings) -> Vec<(PathBuf, RecursiveMode)> {
    let workspace = absolute(&settings.workspace);
    let mut wanted: Vec<(PathBuf, RecursiveMode)> = Vec::new();
    // MEMORY.md and memory.md: the workspace itself, not recursively (their atomic saves
    // are renames in it), which also sees `memory/` appear.
    wanted.push((existing(&workspace), RecursiveMode::NonRecursive));
    let memory = workspace.join("memory");
    if is_dir(&memory) {
        wanted.push((memory, RecursiveMode::Recursive));
    }
    for extra in &settings.extra_paths {
        let path = absolute_in(&workspace, Path::new(extra));
        if is_dir(&path) {
            wanted.push((path, RecursiveMode::Recursive));
        } else {
            // A file (watched through its directory, for atomic saves) or a missing path.
            let parent = path.parent().map_or(path.clone(), Path::to_path_buf);
            wanted.push((existing(&parent), RecursiveMode::NonRecursive));
        }
    }
    if let Some(sessions) = settings.sessions_dir() {
        wanted.push((existing(&absolute(&sessions)), RecursiveMode::NonRecursive));
    }
    for collection in crate::qmd::configured_collections(settings) {
        let root = collection.root;
        if is_dir(&root) {
            wanted.push((root, RecursiveMode::Recursive));
        } else {
            wanted.push((existing(&root), RecursiveMode::NonRecursive));
        }
    }
    // Recursive roots first, so that anything they cover is dropped.
    wanted.sort_by_key(|(path, mode)| (*mode == RecursiveMode::NonRecursive, path.clone()));
    let mut kept: Vec<(PathBuf, RecursiveMode)> = Vec::new();
    for (path, mode) in wanted {
        let covered = kept.iter().any(|(root, root_mode)| {
            *root == path || (*root_mode == RecursiveMode::Recursive && path.starts_with(root))
        });
        if !covered {
            kept.push((path, mode));
        }
    }
    kept
}

fn is_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// `path` if it is a directory, else its nearest ancestor that is.
fn existing(path: &Path) -> PathBuf {
    let mut dir = path;
    loop {
        if is_dir(dir) {
            return dir.to_path_buf();
        }
        match dir.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => dir = parent,
            _ => return PathBuf::from("/"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Env, Source};
    use notify::event::{CreateKind, ModifyKind, RemoveKind};

    fn event(kind: EventKind, path: &str) -> notify::Event {
        notify::Event::new(kind).add_path(PathBuf::from(path))
    }

    #[test]
    fn which_events_count() {
        let ignored = Path::new("/state/memory/main");
        let cases = [
            (
                event(EventKind::Create(CreateKind::File), "/ws/memory/a.md"),
                true,
            ),
            (
                event(EventKind::Modify(ModifyKind::Any), "/ws/MEMORY.md"),
                true,
            ),
            (
                event(EventKind::Remove(RemoveKind::Folder), "/ws/memory/old"),
                true,
            ),
            (
                event(EventKind::Create(CreateKind::File), "/ws/memory/a.md.swp"),
                false,
            ),
            (
                event(
                    EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)),
                    "/ws/MEMORY.md",
                ),
                false,
            ),
            (
                event(
                    EventKind::Access(AccessKind::Close(AccessMode::Write)),
                    "/ws/MEMORY.md",
                ),
                true,
            ),
            (
                event(
                    EventKind::Access(AccessKind::Close(AccessMode::Read)),
                    "/ws/MEMORY.md",
                ),
                false,
            ),
            (
                event(
                    EventKind::Modify(ModifyKind::Any),
                    "/state/memory/main/gen-000001",
                ),
                false,
            ),
            (
                event(
                    EventKind::Modify(ModifyKind::Any),
                    "/state/agents/main/sessions/s.jsonl",
                ),
                true,
            ),
            (
                notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan),
                true,
            ),
        ];
        for (event, want) in cases {
            assert_eq!(relevant(&event, ignored), want, "{event:?}");
        }
    }

    #[test]
    fn roots_follow_what_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("notes/deep")).unwrap();
        std::fs::write(ws.join("extra.md"), "x").unwrap();
        let mut settings = Settings::builtin("main", &Env::default());
        settings.workspace = ws.clone();
        settings.state_dir = tmp.path().join("state");
        settings.extra_paths = vec!["notes".into(), "notes/deep".into(), "extra.md".into()];
        settings.sources = vec![Source::Memory, Source::Sessions];
        let got = roots(&settings);
        // No memory/ yet: the workspace (non-recursive) sees it appear; notes/deep is
        // inside notes; extra.md is watched through the workspace; the sessions directory
        // does not exist, and neither does the state dir: their nearest ancestor.
        assert_eq!(
            got,
            vec![
                (ws.join("notes"), RecursiveMode::Recursive),
                (tmp.path().to_path_buf(), RecursiveMode::NonRecursive),
                (ws.clone(), RecursiveMode::NonRecursive),
            ]
        );
        std::fs::create_dir_all(ws.join("memory")).unwrap();
        std::fs::create_dir_all(settings.sessions_dir().unwrap()).unwrap();
        let got = roots(&settings);
        assert!(got.contains(&(ws.join("memory"), RecursiveMode::Recursive)));
        assert!(got.contains(&(
            settings.sessions_dir().unwrap(),
            RecursiveMode::NonRecursive
        )));
    }
}
