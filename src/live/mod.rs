//! Live memory: an agent's index kept fresh while the agent uses it (SPEC §4's triggers).
//!
//! [`Memory::start_live`](crate::Memory::start_live) starts one background thread per
//! agent that owns every sync of that agent in this process. The worker sees its agent
//! only through [`Target`] (implemented by `freshness`): this module is the mechanism
//! (thread, triggers, watcher, backoff), `freshness` the policy.
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
//!
//! **Many agents take turns.** The workers of one process sync a few at a time (`gate`: the
//! cores, or `MEMORIA_LIVE_SYNCS`), the one a search waits on first.
//!
//! Files: `link` (the state shared with the façade, and the heartbeat file), `watch` (the
//! watcher and its roots), `hub` (the process's one watcher, shared by its agents), `gate`
//! (how many syncs run at once); the worker is here.

mod gate;
mod hub;
mod link;
mod watch;

use std::path::Path;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock::unix_now;
use crate::config::Settings;
use crate::error::{Error, Result};
use crate::qmd::Maintenance;
use crate::sync::SyncReport;
pub(crate) use link::{first_index_wait, heartbeat_of, Link};
pub use link::{LiveStatus, WatcherState};
use link::{Trigger, HEARTBEAT_FILE};
use watch::Watch;

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

/// What the live worker needs from the agent it keeps fresh.
pub(crate) trait Target: Send + Sync + 'static {
    /// The agent's settings (`sync.*`, the roots to watch).
    fn settings(&self) -> &Settings;
    /// The agent directory (where the heartbeat goes).
    fn root(&self) -> &Path;
    /// Loads the embedder now, so that the first search finds it warm.
    fn load_embedder(&self);
    /// True once a first index exists.
    fn has_index(&self) -> bool;
    /// Syncs when the workspace changed; `None` when it had not.
    fn sync_if_changed(&self) -> Result<Option<SyncReport>>;
    /// A sync committed changes (after the first): the QMD sidecar follows.
    fn files_changed(&self);
    /// What one freshness check (listing + stat of the workspace) costs now.
    fn measure_check(&self) -> Duration;
    /// Opens the current generation for searching (after a sync committed).
    fn warm_view(&self);
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

/// A running live sync. Dropping it (or [`LiveSync::stop`]) stops the worker and the
/// watcher; a sync in progress finishes first (syncs commit atomically, so nothing is left
/// half-written even when the process is killed instead).
pub struct LiveSync {
    link: Arc<Link>,
    thread: Option<JoinHandle<()>>,
    /// The QMD sidecar's maintenance thread, with the QMD backend.
    qmd: Option<Maintenance>,
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
    pub(crate) fn attach_qmd(&mut self, maintenance: Maintenance) {
        self.qmd = Some(maintenance);
    }

    fn shutdown(&mut self) {
        self.qmd = None;
        self.link.stop();
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

/// Starts the worker for `target` (see the module docs).
pub(crate) fn start(
    target: Arc<dyn Target>,
    on_event: Box<dyn Fn(&LiveEvent) + Send>,
) -> (Arc<Link>, LiveSync) {
    let (tx, rx) = mpsc::channel();
    let link = Arc::new(Link::new(tx.clone(), target.root().join(HEARTBEAT_FILE)));
    let worker_link = link.clone();
    let thread = std::thread::Builder::new()
        .name(format!("memoria-live-{}", target.settings().agent_id))
        .spawn(move || {
            Worker {
                target,
                link: worker_link,
                tx,
                on_event,
                watch: None,
                poll: None,
                last_watch_attempt: None,
                backoff: FAILURE_BACKOFF.0,
                synced: false,
                failed: false,
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
    target: Arc<dyn Target>,
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
    /// The last check failed (not an embedding error, not a busy lock): a change of the
    /// workspace retries it at once instead of after the backoff, since the change may be
    /// the fix (a workspace moved away and back).
    failed: bool,
}

impl Worker {
    fn run(mut self, rx: Receiver<Trigger>) {
        let sync = self.target.settings().sync;
        // Load the model now, so the first search finds it warm.
        self.target.load_embedder();
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
        let mut pending = sync.on_session_start || !self.target.has_index();
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
                        if self.failed {
                            retry_at = None;
                        }
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
        let link = &self.link;
        // A worker stopped while waiting for its turn skips the sync.
        let pass = gate::gate().enter(|| link.urgent(), || link.stopping())?;
        let checked = self.target.sync_if_changed();
        drop(pass);
        self.failed = matches!(&checked, Err(err) if !matches!(err, Error::IndexBusy { .. }));
        match checked {
            Ok(None) => {
                self.backoff = FAILURE_BACKOFF.0;
                // The index matches the workspace: an earlier failure no longer holds
                // (the workspace moved away and came back unchanged).
                if self.link.status().last_sync_error.is_some() {
                    let status = self.link.update(|s| s.last_sync_error = None);
                    (self.on_event)(&LiveEvent::Watcher(status));
                }
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
                    self.target.files_changed();
                }
                self.synced = true;
                // Open the new generation now, so the next search does not pay for it.
                self.target.warm_view();
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
            .map(|w| w.roots().map(|p| p.display().to_string()).collect())
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
        let settings = self.target.settings();
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
        let cost = self.target.measure_check();
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
        match watch.reconcile(self.target.settings()) {
            Ok(None) => {}
            Ok(Some(change)) => self.set_watcher(WatcherState::Watching, Some(change)),
            Err(reason) => self.fall_back_to_polling(format!("watching failed: {reason}")),
        }
    }
}
