//! The file-system watcher: which directories to watch for an agent's settings (a missing
//! root is replaced by its nearest existing ancestor), which events count, and the agent's
//! place on the process's shared watcher (`hub`), whose events become
//! [`Trigger::Changed`].

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::Duration;

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::RecursiveMode;

use super::hub::{hub, Hub};
use super::link::Trigger;
use crate::config::Settings;
use crate::workspace::{absolute, absolute_in};

/// One agent's watch: its roots on the process's shared watcher, let go when dropped.
pub(super) struct Watch {
    hub: &'static Hub,
    id: u64,
    roots: Vec<(PathBuf, RecursiveMode)>,
    /// The agent directory, whose own writes are not changes.
    ignored: PathBuf,
    tx: Sender<Trigger>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.hub.unsubscribe(self.id, &self.roots);
    }
}

impl Watch {
    /// The directories watched now.
    pub(super) fn roots(&self) -> impl Iterator<Item = &Path> {
        self.roots.iter().map(|(path, _)| path.as_path())
    }

    /// Watches the roots `settings` names; events go to `tx` after `debounce`.
    pub(super) fn start(
        settings: &Settings,
        debounce: Duration,
        tx: Sender<Trigger>,
    ) -> Result<Watch, String> {
        let hub = hub(debounce, relevant)?;
        let mut watch = Watch {
            hub,
            id: hub.subscribe(),
            roots: Vec::new(),
            ignored: absolute(&settings.store_dir()),
            tx,
        };
        watch.reconcile(settings)?;
        Ok(watch)
    }

    /// Watches the roots the settings name as they exist now; returns what changed, if
    /// anything did since the last call.
    pub(super) fn reconcile(&mut self, settings: &Settings) -> Result<Option<String>, String> {
        let wanted = roots(settings);
        if wanted == self.roots {
            return Ok(None);
        }
        self.hub
            .change(self.id, &self.roots, &wanted, &self.ignored, &self.tx)?;
        let mut changes: Vec<String> = self
            .roots
            .iter()
            .filter(|root| !wanted.contains(root))
            .map(|(path, _)| format!("-{}", path.display()))
            .collect();
        changes.extend(
            wanted
                .iter()
                .filter(|root| !self.roots.contains(root))
                .map(|(path, _)| format!("+{}", path.display())),
        );
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
pub(super) fn relevant(event: &notify::Event, ignored: &Path) -> bool {
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
