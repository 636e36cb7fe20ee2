//! The live sync's shared state: what the façade and the worker exchange ([`Link`]), the
//! state `status` reports ([`LiveStatus`]), and its heartbeat file (`live.json`) for
//! `status` in other processes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;

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
    pub(super) fn starting() -> LiveStatus {
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

/// What the worker is told, by the façade, the watcher or a [`LiveSync`](super::LiveSync).
pub(super) enum Trigger {
    /// Stop the worker.
    Stop,
    /// File-system events (after debouncing): reconcile the roots, then check.
    Changed,
    /// The watcher reported errors: switch to polling.
    WatchFailed(String),
    /// A search found the workspace changed, or something asked for a check.
    Check,
}

/// What an agent shares with its live worker: the trigger channel and the live state,
/// with a condition variable for callers waiting on a sync.
pub(crate) struct Link {
    tx: Mutex<Sender<Trigger>>,
    state: Mutex<LiveStatus>,
    changed: Condvar,
    /// `<agent dir>/live.json`: the state, for `status` in other processes.
    heartbeat: PathBuf,
    /// Searches waiting for this agent's first index: its sync passes the process's gate
    /// at once.
    waiting: AtomicUsize,
    /// The worker was asked to stop: it skips a sync it is still waiting to start.
    stopping: AtomicBool,
}

impl Link {
    /// A link whose worker reads `tx`'s receiver; its state goes to `heartbeat` too.
    pub(super) fn new(tx: Sender<Trigger>, heartbeat: PathBuf) -> Link {
        Link {
            tx: Mutex::new(tx),
            state: Mutex::new(LiveStatus::starting()),
            changed: Condvar::new(),
            heartbeat,
            waiting: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
        }
    }

    /// True while a search waits on this agent's sync.
    pub(super) fn urgent(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) > 0
    }

    /// True once the worker was asked to stop.
    pub(super) fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Asks the worker to stop.
    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.send(Trigger::Stop);
    }

    fn state(&self) -> MutexGuard<'_, LiveStatus> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn send(&self, trigger: Trigger) {
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

    /// Asks for a sync and waits, as a search of an agent with no index does, until `done`
    /// holds or `timeout` passes; meanwhile the agent's sync passes the process's gate
    /// ([`super::gate`]) ahead of other agents'.
    pub(crate) fn wait_for_sync(&self, timeout: Duration, done: impl Fn(&LiveStatus) -> bool) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        self.request_sync();
        self.wait_until(timeout, done);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    /// Waits until `done` holds or `timeout` passes, re-checking after every sync attempt.
    pub(crate) fn wait_until(&self, timeout: Duration, done: impl Fn(&LiveStatus) -> bool) {
        let deadline = Instant::now() + timeout;
        let mut state = self.state();
        while !done(&state) {
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

    pub(super) fn update(&self, change: impl FnOnce(&mut LiveStatus)) -> LiveStatus {
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
    pub(super) fn unpublish(&self) {
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
