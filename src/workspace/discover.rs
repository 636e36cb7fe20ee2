//! Which files are memory (SPEC §1).
//!
//! Discovery: `MEMORY.md`, `memory.md`, every `*.md` under `memory/`, and the configured
//! `extraPaths` (files must end in `.md`, directories are walked). Symlinks — files or
//! directories — are never followed, noise directories (`.git`, `node_modules`, …) are
//! skipped, and files reached twice are de-duplicated by real path. Stored paths are
//! workspace-relative with `/`, and may start with `../` for extra paths outside it.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use super::collection::Collection;
use super::paths::{
    absolute_in, is_markdown, is_real_dir, is_regular_file, is_symlink, join_cited, real_path,
    relative_path, slash_path,
};

/// Directories never walked into.
pub const IGNORED_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    ".pnpm-store",
    ".venv",
    "venv",
    ".tox",
    "__pycache__",
];

/// Where a file comes from (SPEC §1, §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SourceKind {
    Memory,
    /// Session transcripts (`sessions/<file>.jsonl`).
    Sessions,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Memory => "memory",
            SourceKind::Sessions => "sessions",
        }
    }
}

/// A memory file found in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    /// Absolute path on disk.
    pub abs_path: PathBuf,
    /// Workspace-relative path with `/` separators (the path users and citations see).
    pub rel_path: String,
    pub source: SourceKind,
}

/// What discovery found, plus the problems worth telling the user about.
#[derive(Debug, Default)]
pub struct Discovery {
    pub files: Vec<MemoryFile>,
    pub warnings: Vec<String>,
    /// Extra paths (and the sessions directory) that are configured but not there now (an
    /// unmounted drive, a moved folder), as workspace-relative paths (`sessions`): what was
    /// indexed from them is kept, not removed, until they come back.
    pub vanished: Vec<String>,
}

impl Discovery {
    /// True when `rel_path` lies under a vanished extra path.
    pub fn under_vanished(&self, rel_path: &str) -> bool {
        self.vanished.iter().any(|root| {
            rel_path == root
                || rel_path
                    .strip_prefix(root.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }
}

/// Lists the memory files of `workspace` and the files of the QMD `collections`, plus the
/// transcripts in `sessions` when session memory is on (sorted by `rel_path`).
///
/// `root_files` are the memory files at the workspace's root: [`ROOT_FILES_DOCUMENTED`] or
/// [`ROOT_FILES_OPENCLAW`].
pub fn discover(
    workspace: &Path,
    root_files: &[&str],
    extra_paths: &[String],
    collections: &[Collection],
    sessions: Option<&Path>,
) -> Discovery {
    let mut discovery = discover_memory(workspace, root_files, extra_paths, collections);
    if let Some(dir) = sessions {
        discover_sessions(dir, &mut discovery);
        discovery.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    }
    discovery
}

/// The agent's transcripts, `<dir>/*.jsonl` (not recursive: OpenClaw writes them flat),
/// cited as `sessions/<file>.jsonl`. A missing directory is normal (no session yet).
fn discover_sessions(dir: &Path, discovery: &mut Discovery) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        // Normal before the first session; a directory that vanished later (a moved state
        // directory) must not empty the index of its transcripts either.
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            discovery.vanished.push("sessions".into());
            return;
        }
        Err(err) => {
            discovery.warnings.push(format!(
                "sessions {}: cannot list directory: {err}",
                dir.display()
            ));
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "jsonl") {
            continue;
        }
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            discovery.warnings.push(format!(
                "{}: the name is not valid UTF-8, skipped",
                path.display()
            ));
            continue;
        };
        match entry.file_type() {
            Ok(t) if t.is_file() => discovery.files.push(MemoryFile {
                abs_path: path,
                rel_path: format!("sessions/{name}"),
                source: SourceKind::Sessions,
            }),
            Ok(t) if t.is_symlink() => discovery.warnings.push(format!(
                "{}: is a symlink; memoria does not follow symlinks, skipped",
                path.display()
            )),
            _ => {}
        }
    }
}

/// The root memory files of the documented behaviour (SPEC §1).
pub const ROOT_FILES_DOCUMENTED: &[&str] = &["MEMORY.md", "memory.md"];

/// The root memory files of OpenClaw 2026.9: `USER.md` joins, the lower-case `memory.md`
/// leaves (its `doctor --fix` merges it into `MEMORY.md`).
pub const ROOT_FILES_OPENCLAW: &[&str] = &["MEMORY.md", "USER.md"];

fn discover_memory(
    workspace: &Path,
    root_files: &[&str],
    extra_paths: &[String],
    collections: &[Collection],
) -> Discovery {
    let mut found = Found {
        workspace,
        discovery: Discovery::default(),
        seen: HashSet::new(),
    };
    if !workspace.is_dir() {
        found.discovery.warnings.push(format!(
            "workspace {}: not a directory (missing or mistyped?): nothing to index",
            workspace.display()
        ));
        return found.discovery;
    }
    let symlink_skipped = |found: &mut Found, name: &str| {
        found.discovery.warnings.push(format!(
            "{name}: is a symlink; memoria does not follow symlinks in the workspace, skipped"
        ))
    };
    if !root_files.contains(&"memory.md") && is_regular_file(&workspace.join("memory.md")) {
        found.discovery.warnings.push(
            "memory.md: not indexed: OpenClaw 2026.9 reads MEMORY.md and USER.md only \
             (`openclaw doctor --fix` merges memory.md into MEMORY.md)"
                .into(),
        );
    }
    for &name in root_files {
        let path = workspace.join(name);
        if is_regular_file(&path) {
            found.add_file(path);
        } else if is_symlink(&path) {
            symlink_skipped(&mut found, name);
        }
    }
    let memory_dir = workspace.join("memory");
    if is_real_dir(&memory_dir) {
        found.add_walked(&memory_dir);
    } else if is_symlink(&memory_dir) {
        symlink_skipped(&mut found, "memory/");
    }
    for extra in extra_paths {
        let path = absolute_in(workspace, Path::new(extra));
        let warn = |found: &mut Found, why: &str| {
            found
                .discovery
                .warnings
                .push(format!("extraPaths: {extra}: {why}, skipped"))
        };
        match fs::symlink_metadata(&path) {
            Err(_) => {
                found
                    .discovery
                    .vanished
                    .push(relative_path(workspace, &path));
                found.discovery.warnings.push(format!(
                    "extraPaths: {extra}: not found; what was indexed from it is kept until \
                     it comes back"
                ));
            }
            Ok(meta) if meta.file_type().is_symlink() => {
                warn(&mut found, "symlinks are not followed")
            }
            Ok(meta) if meta.is_dir() => found.add_walked(&path),
            Ok(_) if is_markdown(&path) => found.add_file(path),
            Ok(_) => warn(&mut found, "not a .md file"),
        }
    }
    for collection in collections {
        let root = &collection.root;
        match fs::symlink_metadata(root) {
            Ok(meta) if meta.is_dir() => found.add_collection(collection),
            Ok(meta) if meta.file_type().is_symlink() => found.discovery.warnings.push(format!(
                "memory.qmd.paths ({}): {}: symlinks are not followed, skipped",
                collection.name,
                root.display()
            )),
            Ok(_) => found.discovery.warnings.push(format!(
                "memory.qmd.paths ({}): {}: not a directory, skipped",
                collection.name,
                root.display()
            )),
            Err(_) => {
                found
                    .discovery
                    .vanished
                    .push(collection.cited_root(workspace));
                found.discovery.warnings.push(format!(
                    "memory.qmd.paths ({}): {}: not found; what was indexed from it is kept \
                     until it comes back",
                    collection.name,
                    root.display()
                ));
            }
        }
    }
    let mut discovery = found.discovery;
    discovery.files.sort_by(|a, b| a.rel_path.cmp(&b.rel_path));
    discovery
}

/// Discovery in progress: files reached twice are kept once, by real path.
struct Found<'a> {
    workspace: &'a Path,
    discovery: Discovery,
    seen: HashSet<std::ffi::OsString>,
}

impl Found<'_> {
    fn add(&mut self, abs: PathBuf, real: PathBuf, rel_path: String) {
        if self.seen.insert(real.into_os_string()) {
            self.discovery.files.push(MemoryFile {
                abs_path: abs,
                rel_path,
                source: SourceKind::Memory,
            });
        }
    }

    fn add_file(&mut self, path: PathBuf) {
        let real = real_path(&path);
        let rel_path = relative_path(self.workspace, &path);
        self.add(path, real, rel_path);
    }

    /// Walks never follow symlinks, so a walked file's real path is its root's real path
    /// plus the walked part, and its workspace-relative path is the root's plus the same
    /// part: per-root work, not per-file (resolving every file was most of the freshness
    /// check a search runs: 33 ms at 2,700 files).
    fn add_walked(&mut self, root: &Path) {
        let cited_root = relative_path(self.workspace, root);
        self.add_tree(root, &cited_root, &is_markdown);
    }

    /// The collection's files (those its glob matches), cited as [`Collection::cite`] says.
    fn add_collection(&mut self, collection: &Collection) {
        let root = &collection.root;
        let matches = |path: &Path| {
            path.strip_prefix(root)
                .is_ok_and(|rel| collection.matches(&slash_path(rel)))
        };
        self.add_tree(root, &collection.cited_root(self.workspace), &matches);
    }

    /// The files under `root` that `wanted` accepts, cited as `cited_root/<walked path>`.
    fn add_tree(&mut self, root: &Path, cited_root: &str, wanted: &dyn Fn(&Path) -> bool) {
        let real_root = real_path(root);
        for path in walk_files(root, &mut self.discovery.warnings, wanted) {
            let Ok(walked) = path.strip_prefix(root) else {
                self.add_file(path); // not reached: walks list paths under their root
                continue;
            };
            let real = real_root.join(walked);
            let rel_path = join_cited(cited_root, &slash_path(walked));
            self.add(path, real, rel_path);
        }
    }
}

/// Recursively lists the regular files under `dir` that `wanted` accepts, never following
/// symlinks.
fn walk_files(
    dir: &Path,
    warnings: &mut Vec<String>,
    wanted: &dyn Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(err) => {
                warnings.push(format!("{}: cannot list directory: {err}", dir.display()));
                continue;
            }
        };
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let name = entry.file_name();
            if name.to_str().is_none() {
                // Two such names that differ only in their invalid bytes would share one
                // lossy path: one would never be indexed, and a citation could not be read
                // back. Skipped, and said.
                if file_type.is_dir() || wanted(&path) {
                    warnings.push(format!(
                        "{}: the name is not valid UTF-8, so it cannot be cited exactly; \
                         skipped (rename it to index it)",
                        path.display()
                    ));
                }
                continue;
            }
            if file_type.is_dir() {
                if !IGNORED_DIRS.iter().any(|ignored| name == *ignored) {
                    stack.push(path);
                }
            } else if file_type.is_file() && wanted(&path) {
                out.push(path);
            } else if file_type.is_symlink() && wanted(&path) {
                warnings.push(format!(
                    "{}: is a symlink; memoria does not follow symlinks in the workspace, skipped",
                    path.display()
                ));
            }
        }
    }
    out
}
