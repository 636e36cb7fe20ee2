//! One file-system watcher per process, shared by every agent's live worker.
//!
//! A watcher per agent meant an inotify instance per agent, and Linux gives a user 128 of
//! them (`fs.inotify.max_user_instances`): from the 129th agent of one `memoria mcp` on,
//! every agent polled, and each watcher brought two threads of its own. The hub keeps one
//! debounced watcher per debounce delay for the whole process (one instance, one event
//! thread, one debouncing thread) and hands each batch of events to the agents whose
//! roots they fall under. A directory two agents watch is watched once, and unwatched when
//! the last of them lets it go (by count, recursive and not apart). What limits the
//! process now is `fs.inotify.max_user_watches` (one watch per watched directory): a
//! watch refused there is the agent's error, and that agent polls and says why.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};

use super::link::Trigger;

/// The debouncer's tick: events are released at most this long after their debounce
/// delay (its default, a quarter of the delay, would add up to 375 ms to every change).
const DEBOUNCE_TICK: Duration = Duration::from_millis(100);

/// What one agent's worker is told about: events under its roots, outside `ignored`, that
/// `relevant` counts.
pub(super) struct Subscriber {
    pub(super) roots: Vec<(PathBuf, RecursiveMode)>,
    pub(super) ignored: PathBuf,
    pub(super) tx: Sender<Trigger>,
}

/// Decides whether an event can change what an agent indexes (`watch::relevant`).
pub(super) type Relevant = fn(&notify::Event, &Path) -> bool;

/// The subscribers, by id; the handler reads a snapshot, never waiting on a watch call.
type Subscribers = Arc<RwLock<HashMap<u64, Arc<Subscriber>>>>;

/// One debounced watcher and who listens to it.
pub(super) struct Hub {
    debouncer: Mutex<Debouncer<RecommendedWatcher, RecommendedCache>>,
    subscribers: Subscribers,
    /// How many subscribers watch each directory, recursively and not.
    watched: Mutex<HashMap<PathBuf, [usize; 2]>>,
    next: AtomicU64,
}

/// The hub for `debounce` (created on first use), or why there is none.
pub(super) fn hub(debounce: Duration, relevant: Relevant) -> Result<&'static Hub, String> {
    static HUBS: OnceLock<Mutex<HashMap<Duration, &'static Hub>>> = OnceLock::new();
    let mut hubs = HUBS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(hub) = hubs.get(&debounce) {
        return Ok(hub);
    }
    let hub: &'static Hub = Box::leak(Box::new(Hub::new(debounce, relevant)?));
    hubs.insert(debounce, hub);
    Ok(hub)
}

/// `path` is under `root` as `mode` watches it: anywhere below for a recursive root, the
/// root itself or its direct children otherwise.
fn under(path: &Path, root: &Path, mode: RecursiveMode) -> bool {
    match mode {
        RecursiveMode::Recursive => path.starts_with(root),
        RecursiveMode::NonRecursive => path == root || path.parent() == Some(root),
    }
}

fn slot(mode: RecursiveMode) -> usize {
    match mode {
        RecursiveMode::Recursive => 0,
        RecursiveMode::NonRecursive => 1,
    }
}

impl Hub {
    fn new(debounce: Duration, relevant: Relevant) -> Result<Hub, String> {
        let subscribers: Subscribers = Arc::default();
        let listeners = subscribers.clone();
        let handler = move |result: DebounceEventResult| {
            let listeners = listeners.read().unwrap_or_else(|e| e.into_inner());
            match result {
                Ok(events) => {
                    for listener in listeners.values() {
                        let hit = events.iter().any(|e| {
                            (e.need_rescan()
                                || e.paths
                                    .iter()
                                    .any(|p| listener.roots.iter().any(|(r, m)| under(p, r, *m))))
                                && relevant(e, &listener.ignored)
                        });
                        if hit {
                            let _ = listener.tx.send(Trigger::Changed);
                        }
                    }
                }
                Err(errors) => {
                    for listener in listeners.values() {
                        // An error about some paths goes to their agents; one about none
                        // (the watcher itself) to every agent.
                        let theirs: Vec<String> = errors
                            .iter()
                            .filter(|e| {
                                e.paths.is_empty()
                                    || e.paths.iter().any(|p| {
                                        listener
                                            .roots
                                            .iter()
                                            .any(|(r, m)| under(p, r, *m) || r.starts_with(p))
                                    })
                            })
                            .map(ToString::to_string)
                            .collect();
                        if !theirs.is_empty() {
                            let _ = listener.tx.send(Trigger::WatchFailed(theirs.join("; ")));
                        }
                    }
                }
            }
        };
        let debouncer = new_debouncer(debounce, Some(DEBOUNCE_TICK.min(debounce)), handler)
            .map_err(|e| e.to_string())?;
        Ok(Hub {
            debouncer: Mutex::new(debouncer),
            subscribers,
            watched: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        })
    }

    fn watched(&self) -> MutexGuard<'_, HashMap<PathBuf, [usize; 2]>> {
        self.watched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An id for a new subscriber (it hears nothing before its first [`Hub::change`]).
    pub(super) fn subscribe(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Sets subscriber `id`'s entry (`None`: removes it).
    fn publish(&self, id: u64, subscriber: Option<Subscriber>) {
        let mut all = self.subscribers.write().unwrap_or_else(|e| e.into_inner());
        match subscriber {
            Some(s) => all.insert(id, Arc::new(s)),
            None => all.remove(&id),
        };
    }

    /// Moves subscriber `id` from roots `old` to roots `new`: watches what nobody watched
    /// yet, lets go of what nobody watches any more. On an error the subscriber keeps `old`.
    pub(super) fn change(
        &self,
        id: u64,
        old: &[(PathBuf, RecursiveMode)],
        new: &[(PathBuf, RecursiveMode)],
        ignored: &Path,
        tx: &Sender<Trigger>,
    ) -> Result<(), String> {
        let mut watched = self.watched();
        let mut debouncer = self.debouncer.lock().unwrap_or_else(|e| e.into_inner());
        let added: Vec<&(PathBuf, RecursiveMode)> =
            new.iter().filter(|root| !old.contains(root)).collect();
        for (i, (path, mode)) in added.iter().enumerate() {
            let before = effective(watched.get(path));
            let counts = watched.entry(path.clone()).or_default();
            counts[slot(*mode)] += 1;
            let after = effective(Some(counts));
            if before != after {
                if let Err(err) = rewatch(&mut debouncer, path, before, after) {
                    // Undo this call's additions, so the counts stay true.
                    for (path, mode) in &added[..=i] {
                        release(&mut watched, &mut debouncer, path, *mode);
                    }
                    return Err(format!("{}: {err}", path.display()));
                }
            }
        }
        for (path, mode) in old.iter().filter(|root| !new.contains(root)) {
            release(&mut watched, &mut debouncer, path, *mode);
        }
        drop(debouncer);
        self.publish(
            id,
            Some(Subscriber {
                roots: new.to_vec(),
                ignored: ignored.to_path_buf(),
                tx: tx.clone(),
            }),
        );
        Ok(())
    }

    /// Removes subscriber `id`, letting go of its roots.
    pub(super) fn unsubscribe(&self, id: u64, roots: &[(PathBuf, RecursiveMode)]) {
        self.publish(id, None);
        let mut watched = self.watched();
        let mut debouncer = self.debouncer.lock().unwrap_or_else(|e| e.into_inner());
        for (path, mode) in roots {
            release(&mut watched, &mut debouncer, path, *mode);
        }
    }
}

/// How a directory is watched for its counts: recursively when any subscriber wants it
/// so, else not, or not at all.
fn effective(counts: Option<&[usize; 2]>) -> Option<RecursiveMode> {
    match counts {
        Some([r, _]) if *r > 0 => Some(RecursiveMode::Recursive),
        Some([_, n]) if *n > 0 => Some(RecursiveMode::NonRecursive),
        _ => None,
    }
}

/// Watches `path` as `after` where it was watched as `before`.
fn rewatch(
    debouncer: &mut Debouncer<RecommendedWatcher, RecommendedCache>,
    path: &Path,
    before: Option<RecursiveMode>,
    after: Option<RecursiveMode>,
) -> notify::Result<()> {
    if before.is_some() {
        // The path may be gone already (that is often why it is let go).
        let _ = debouncer.unwatch(path);
    }
    match after {
        Some(mode) => debouncer.watch(path, mode),
        None => Ok(()),
    }
}

/// One subscriber lets go of `path` as `mode`.
fn release(
    watched: &mut HashMap<PathBuf, [usize; 2]>,
    debouncer: &mut Debouncer<RecommendedWatcher, RecommendedCache>,
    path: &Path,
    mode: RecursiveMode,
) {
    let Some(counts) = watched.get_mut(path) else {
        return;
    };
    let before = effective(Some(counts));
    counts[slot(mode)] = counts[slot(mode)].saturating_sub(1);
    let after = effective(Some(counts));
    if after.is_none() {
        watched.remove(path);
    }
    if before != after {
        if let Err(err) = rewatch(debouncer, path, before, after) {
            tracing::warn!("{}: {err}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::{channel, Receiver};

    fn any(_: &notify::Event, _: &Path) -> bool {
        true
    }

    fn changed(rx: &Receiver<Trigger>) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(Trigger::Changed) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }

    fn quiet(rx: &Receiver<Trigger>) -> bool {
        std::thread::sleep(Duration::from_millis(400));
        !rx.try_iter().any(|t| matches!(t, Trigger::Changed))
    }

    #[test]
    fn each_agent_hears_its_own_roots_and_a_shared_root_outlives_one_agent() {
        let tmp = tempfile::tempdir().unwrap();
        let (a_dir, b_dir, shared) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("s"),
        );
        for dir in [&a_dir, &b_dir, &shared] {
            std::fs::create_dir_all(dir).unwrap();
        }
        // A debounce of its own, so no other test's agents share this hub.
        let hub = hub(Duration::from_millis(37), any).unwrap();
        let ignored = tmp.path().join("state");
        let agent = |root: &Path| {
            let (tx, rx) = channel();
            let id = hub.subscribe();
            let roots = vec![
                (root.to_path_buf(), RecursiveMode::Recursive),
                (shared.clone(), RecursiveMode::NonRecursive),
            ];
            hub.change(id, &[], &roots, &ignored, &tx).unwrap();
            (id, roots, rx)
        };
        let (a, a_roots, a_rx) = agent(&a_dir);
        let (_b, _, b_rx) = agent(&b_dir);
        std::fs::write(a_dir.join("note.md"), "x").unwrap();
        assert!(changed(&a_rx));
        assert!(quiet(&b_rx), "b does not hear a's root");
        std::fs::write(shared.join("s.md"), "x").unwrap();
        assert!(
            changed(&a_rx) && changed(&b_rx),
            "both hear the shared root"
        );
        // a leaves: b still hears the shared root, and a's own root is let go.
        hub.unsubscribe(a, &a_roots);
        assert_eq!(hub.watched().get(&a_dir), None);
        std::fs::write(shared.join("t.md"), "x").unwrap();
        assert!(changed(&b_rx));
        assert!(quiet(&a_rx));
    }

    #[test]
    fn which_paths_are_under_a_root() {
        let (root, r, n) = (
            Path::new("/w"),
            RecursiveMode::Recursive,
            RecursiveMode::NonRecursive,
        );
        // (path, mode, under)
        for (path, mode, want) in [
            ("/w/memory/a.md", r, true),
            ("/w/memory/a.md", n, false),
            ("/w/MEMORY.md", n, true),
            ("/w", n, true),
            ("/wx/a.md", r, false),
        ] {
            assert_eq!(under(Path::new(path), root, mode), want, "{path} {mode:?}");
        }
    }
}
