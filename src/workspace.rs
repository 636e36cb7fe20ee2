//! Which files are memory (SPEC §1) and which paths `memory_get` may read (SPEC §6).
//!
//! Discovery: `MEMORY.md`, `memory.md`, every `*.md` under `memory/`, and the configured
//! `extraPaths` (files must end in `.md`, directories are walked). Symlinks — files or
//! directories — are never followed, noise directories (`.git`, `node_modules`, …) are
//! skipped, and files reached twice are de-duplicated by real path. Stored paths are
//! workspace-relative with `/`, and may start with `../` for extra paths outside it.

use std::collections::HashSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::collection::{split_cited, Collection};
use crate::Error;

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
pub fn discover(
    workspace: &Path,
    extra_paths: &[String],
    collections: &[Collection],
    sessions: Option<&Path>,
) -> Discovery {
    let mut discovery = discover_memory(workspace, extra_paths, collections);
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

fn discover_memory(
    workspace: &Path,
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
    for name in ["MEMORY.md", "memory.md"] {
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

/// `base/rel`, or `rel` when `base` is empty (the workspace itself).
pub(crate) fn join_cited(base: &str, rel: &str) -> String {
    if base.is_empty() {
        rel.to_string()
    } else {
        format!("{base}/{rel}")
    }
}

/// A relative path with `/` separators.
fn slash_path(path: &Path) -> String {
    if std::path::MAIN_SEPARATOR == '/' {
        return path.to_string_lossy().into_owned();
    }
    let parts: Vec<_> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    parts.join("/")
}

fn real_path(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Reads a memory file as text. Invalid UTF-8 is replaced (U+FFFD) and reported in the
/// returned flag rather than failing: one bad byte must not hide a whole note.
pub fn read_text(path: &Path) -> Result<(String, bool), Error> {
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(decode_text(bytes))
}

/// Decodes file bytes as UTF-8, replacing invalid sequences; the flag says whether any were.
pub fn decode_text(bytes: Vec<u8>) -> (String, bool) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
    }
}

fn is_markdown(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "md")
}

fn is_regular_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

fn is_real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir())
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
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

/// `path` made absolute against the current directory and lexically normalised.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    match std::env::current_dir() {
        Ok(cwd) => absolute_in(&cwd, path),
        Err(_) => path.to_path_buf(),
    }
}

/// `path` made absolute against `base` and lexically normalised (no `.`/`..`).
pub fn absolute_in(base: &Path, path: &Path) -> PathBuf {
    normalize(&base.join(path))
}

/// Removes `.` and resolves `..` lexically (never touching the file system).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// `target` relative to `base` with `/` separators (`../` allowed), both lexically absolute.
pub fn relative_path(base: &Path, target: &Path) -> String {
    let base = normalize(base);
    let target = normalize(target);
    let base_parts: Vec<_> = base.components().collect();
    let target_parts: Vec<_> = target.components().collect();
    let common = base_parts
        .iter()
        .zip(&target_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = vec!["..".to_string(); base_parts.len() - common];
    parts.extend(
        target_parts[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// Why `memory_get` refused a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathDenied(pub String);

/// A file `memory_get` may read: where its root is, and the file below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GetTarget {
    /// The directory below which no component may be a symlink.
    pub(crate) base: PathBuf,
    /// The file (absolute, lexically normalised).
    pub(crate) file: PathBuf,
}

/// The `memory_get` path policy (SPEC §6). Returns the file to read, or why not.
///
/// Allowed: `MEMORY.md`, `memory.md`, `memory/**` inside the workspace and files inside the
/// configured extra paths; the path must end in `.md`, must not escape its root with `..`,
/// and no component below the root may be a symlink. The file itself need not exist
/// (a missing allowed file reads as empty).
///
/// QMD collections add their files (those their glob matches): `qmd/<name>/<path>` for a
/// collection outside the workspace, the workspace-relative path for one inside it.
pub(crate) fn resolve_get_path(
    workspace: &Path,
    extra_paths: &[String],
    collections: &[Collection],
    requested: &str,
) -> Result<GetTarget, PathDenied> {
    let requested_trim = requested.trim();
    if requested_trim.is_empty() {
        return Err(PathDenied("path is required".into()));
    }
    if let Some((collection, rel)) = split_cited(collections, requested_trim) {
        return collection_target(collection, rel, requested);
    }
    let target = absolute_in(workspace, Path::new(requested_trim));
    if let Some(collection) = collections
        .iter()
        .find(|c| c.in_workspace(workspace) && target.starts_with(&c.root))
    {
        let rel = slash_path(target.strip_prefix(&collection.root).unwrap_or(&target));
        if collection.matches(&rel) {
            return collection_target(collection, &rel, requested);
        }
    }
    if !is_markdown(&target) {
        return Err(PathDenied(format!(
            "{requested}: only .md memory files can be read"
        )));
    }
    let workspace = normalize(workspace);
    let roots = allowed_roots(&workspace, extra_paths);
    let Some(root) = roots.iter().find(|root| root.contains(&target)) else {
        return Err(PathDenied(format!(
            "{requested}: not a memory file (allowed: MEMORY.md, memory.md, memory/**/*.md, extraPaths)"
        )));
    };
    check_no_symlinks(&root.base, &target).map_err(|component| {
        PathDenied(format!(
            "{requested}: {} is a symlink; memory files are read only through real paths",
            component.display()
        ))
    })?;
    if let Ok(meta) = fs::metadata(&target) {
        if !meta.is_file() {
            return Err(PathDenied(format!("{requested}: not a regular file")));
        }
    }
    Ok(GetTarget {
        base: root.base.clone(),
        file: target,
    })
}

/// The file `rel` of `collection`, if the collection holds it: inside its root, matched by
/// its glob, no symlink below the root.
fn collection_target(
    collection: &Collection,
    rel: &str,
    requested: &str,
) -> Result<GetTarget, PathDenied> {
    let target = absolute_in(&collection.root, Path::new(rel));
    let inside = target
        .strip_prefix(&collection.root)
        .ok()
        .filter(|below| !below.as_os_str().is_empty());
    let Some(below) = inside else {
        return Err(PathDenied(format!(
            "{requested}: outside the QMD collection {} ({})",
            collection.name,
            collection.root.display()
        )));
    };
    if !collection.matches(&slash_path(below)) {
        return Err(PathDenied(format!(
            "{requested}: not a file of the QMD collection {} (pattern {})",
            collection.name, collection.pattern
        )));
    }
    check_no_symlinks(&collection.root, &target).map_err(|component| {
        PathDenied(format!(
            "{requested}: {} is a symlink; memory files are read only through real paths",
            component.display()
        ))
    })?;
    if fs::metadata(&target).is_ok_and(|meta| !meta.is_file()) {
        return Err(PathDenied(format!("{requested}: not a regular file")));
    }
    Ok(GetTarget {
        base: collection.root.clone(),
        file: target,
    })
}

/// Reads a file [`resolve_get_path`] allowed, `None` when it does not exist.
///
/// The checks above look at the path before it is opened, so on their own a file swapped
/// for a symlink in between would be followed. On Unix the open itself therefore refuses
/// links: the root's directory is opened, then every component below it with `openat` and
/// `O_NOFOLLOW` (directories with `O_DIRECTORY`), and the opened handle must be a regular
/// file. A symlink anywhere below the root, at any instant, makes the read fail with
/// [`PathDenied`]; it never reads what the link points to.
pub(crate) fn read_allowed(
    target: &GetTarget,
    requested: &str,
) -> Result<Option<Vec<u8>>, PathDenied> {
    let denied = |why: String| PathDenied(format!("{requested}: {why}"));
    match open_no_follow(target) {
        Ok(Some(mut file)) => {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| denied(e.to_string()))?;
            Ok(Some(bytes))
        }
        Ok(None) => Ok(None),
        Err(OpenRefused::Symlink) => Err(denied(
            "a path component is a symlink; memory files are read only through real paths".into(),
        )),
        Err(OpenRefused::NotFile) => Err(denied("not a regular file".into())),
        Err(OpenRefused::Io(err)) => Err(denied(err.to_string())),
    }
}

enum OpenRefused {
    Symlink,
    NotFile,
    Io(std::io::Error),
}

#[cfg(unix)]
fn open_no_follow(target: &GetTarget) -> Result<Option<fs::File>, OpenRefused> {
    use rustix::fs::{openat, Mode, OFlags, CWD};
    use rustix::io::Errno;

    let refused = |errno: Errno| match errno {
        Errno::LOOP | Errno::NOTDIR => OpenRefused::Symlink,
        other => OpenRefused::Io(other.into()),
    };
    let Ok(rest) = target.file.strip_prefix(&target.base) else {
        return Err(OpenRefused::NotFile);
    };
    let parts: Vec<&std::ffi::OsStr> = rest.iter().collect();
    let Some((name, dirs)) = parts.split_last() else {
        return Err(OpenRefused::NotFile);
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = match openat(CWD, &target.base, dir_flags, Mode::empty()) {
        Ok(dir) => dir,
        Err(Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(OpenRefused::Io(errno.into())),
    };
    for part in dirs {
        dir = match openat(&dir, *part, dir_flags | OFlags::NOFOLLOW, Mode::empty()) {
            Ok(next) => next,
            Err(Errno::NOENT) => return Ok(None),
            Err(errno) => return Err(refused(errno)),
        };
    }
    let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let file = match openat(&dir, *name, file_flags, Mode::empty()) {
        Ok(fd) => fs::File::from(fd),
        Err(Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(refused(errno)),
    };
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(Some(file)),
        Ok(_) => Err(OpenRefused::NotFile),
        Err(err) => Err(OpenRefused::Io(err)),
    }
}

#[cfg(not(unix))]
fn open_no_follow(target: &GetTarget) -> Result<Option<fs::File>, OpenRefused> {
    check_no_symlinks(&target.base, &target.file).map_err(|_| OpenRefused::Symlink)?;
    match fs::File::open(&target.file) {
        Ok(file) if file.metadata().is_ok_and(|m| m.is_file()) => Ok(Some(file)),
        Ok(_) => Err(OpenRefused::NotFile),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(OpenRefused::Io(err)),
    }
}

/// A place `memory_get` may read from: one exact file, or everything under a directory.
struct AllowedRoot {
    /// Symlink checks cover the components *below* this directory.
    base: PathBuf,
    scope: Scope,
}

enum Scope {
    File(PathBuf),
    Under(PathBuf),
}

impl AllowedRoot {
    fn contains(&self, target: &Path) -> bool {
        match &self.scope {
            Scope::File(file) => file == target,
            Scope::Under(dir) => target.starts_with(dir) && target != dir,
        }
    }
}

fn allowed_roots(workspace: &Path, extra_paths: &[String]) -> Vec<AllowedRoot> {
    let in_workspace = |scope| AllowedRoot {
        base: workspace.to_path_buf(),
        scope,
    };
    let mut roots = vec![
        in_workspace(Scope::File(workspace.join("MEMORY.md"))),
        in_workspace(Scope::File(workspace.join("memory.md"))),
        in_workspace(Scope::Under(workspace.join("memory"))),
    ];
    for extra in extra_paths {
        let path = absolute_in(workspace, Path::new(extra));
        // The extra path itself is checked too (discovery ignores a symlinked one).
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let scope = if is_markdown(&path) && !is_real_dir(&path) {
            Scope::File(path)
        } else {
            Scope::Under(path)
        };
        roots.push(AllowedRoot { base, scope });
    }
    roots
}

/// Fails with the first symlink among the components of `target` below `base`.
fn check_no_symlinks(base: &Path, target: &Path) -> Result<(), PathBuf> {
    let Ok(rest) = target.strip_prefix(base) else {
        return Ok(());
    };
    let mut current = base.to_path_buf();
    for component in rest.components() {
        current.push(component);
        if fs::symlink_metadata(&current).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(current);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn discovers_memory_files_and_skips_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        write(&ws.join("MEMORY.md"), "long term");
        write(&ws.join("NOTES.md"), "not memory");
        write(&ws.join("memory/2026-01-12.md"), "daily");
        write(&ws.join("memory/projects/a.md"), "nested");
        write(&ws.join("memory/projects/a.txt"), "not markdown");
        write(&ws.join("memory/node_modules/x.md"), "ignored dir");
        write(&ws.join("memory/.git/y.md"), "ignored dir");
        write(&tmp.path().join("outside/o.md"), "outside");
        write(&tmp.path().join("outside/deep/p.md"), "outside deep");
        write(&tmp.path().join("single.md"), "single file");
        write(&tmp.path().join("plain.txt"), "plain");
        std::os::unix::fs::symlink(ws.join("MEMORY.md"), ws.join("memory/link.md")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), ws.join("memory/linkdir")).unwrap();
        std::os::unix::fs::symlink(ws.join("memory"), tmp.path().join("alias")).unwrap();
        let extras = vec![
            "../outside".to_string(),
            tmp.path().join("single.md").display().to_string(),
            "../plain.txt".to_string(),
            "missing".to_string(),
            "memory/projects".to_string(), // duplicates memory/** → de-duplicated
            "../alias/projects".to_string(), // the same, through a symlinked ancestor
        ];
        let found = discover(&ws, &extras, &[], None);
        let paths: Vec<_> = found.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "../outside/deep/p.md",
                "../outside/o.md",
                "../single.md",
                "MEMORY.md",
                "memory/2026-01-12.md",
                "memory/projects/a.md",
            ]
        );
        // `missing`, `../plain.txt`, and the skipped symlink memory/link.md.
        assert_eq!(found.warnings.len(), 3, "{:?}", found.warnings);
        assert!(found
            .warnings
            .iter()
            .any(|w| w.contains("link.md: is a symlink")));
    }

    /// File names that are not UTF-8 are skipped with a warning naming each, never merged
    /// into one lossy path.
    #[test]
    fn non_utf8_names_are_skipped_with_a_warning() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let memory = ws.join("memory");
        write(&memory.join("ok.md"), "fine");
        for name in [&b"a\xff.md"[..], b"a\xfe.md", b"dir\xff"] {
            let path = memory.join(OsStr::from_bytes(name));
            if name.ends_with(b".md") {
                write(&path, "x");
            } else {
                write(&path.join("inner.md"), "y");
            }
        }
        let found = discover(&ws, &[], &[], None);
        let paths: Vec<_> = found.files.iter().map(|f| f.rel_path.as_str()).collect();
        assert_eq!(paths, vec!["memory/ok.md"]);
        assert_eq!(found.warnings.len(), 3, "{:?}", found.warnings);
        assert!(found.warnings.iter().all(|w| w.contains("not valid UTF-8")));
    }

    /// Every skip says so: a symlinked `memory/` or `MEMORY.md`, a missing workspace.
    #[test]
    fn skipped_roots_are_warnings() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        write(&tmp.path().join("elsewhere/memory/a.md"), "a");
        write(&tmp.path().join("elsewhere/MEMORY.md"), "m");
        fs::create_dir_all(&ws).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere/memory"), ws.join("memory")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere/MEMORY.md"), ws.join("MEMORY.md"))
            .unwrap();
        let found = discover(&ws, &[], &[], None);
        assert!(found.files.is_empty());
        assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
        assert!(found.warnings[0].starts_with("MEMORY.md: is a symlink"));
        assert!(found.warnings[1].starts_with("memory/: is a symlink"));

        let missing = discover(&tmp.path().join("no-such-ws"), &[], &[], None);
        assert!(missing.files.is_empty());
        assert!(missing.warnings[0].contains("no-such-ws: not a directory"));
    }

    #[test]
    fn invalid_utf8_is_read_lossily() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("bad.md");
        fs::write(&path, b"ok \xff\xfe text").unwrap();
        let (text, lossy) = read_text(&path).unwrap();
        assert!(lossy);
        assert_eq!(text, "ok \u{fffd}\u{fffd} text");
    }

    #[test]
    fn relative_paths() {
        let cases = [
            ("/a/ws", "/a/ws/memory/x.md", "memory/x.md"),
            ("/a/ws", "/a/notes/x.md", "../notes/x.md"),
            ("/a/ws", "/b/x.md", "../../b/x.md"),
            ("/a/ws/", "/a/ws/./MEMORY.md", "MEMORY.md"),
        ];
        for (base, target, want) in cases {
            assert_eq!(relative_path(Path::new(base), Path::new(target)), want);
        }
    }

    #[test]
    fn get_path_policy() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        write(&ws.join("MEMORY.md"), "m");
        write(&ws.join("NOTES.md"), "n");
        write(&ws.join("memory/a.md"), "a");
        write(&ws.join("memory/a.txt"), "t");
        write(&tmp.path().join("outside.md"), "o");
        write(&tmp.path().join("extra/e.md"), "e");
        write(&tmp.path().join("real/r.md"), "r");
        std::os::unix::fs::symlink(ws.join("NOTES.md"), ws.join("memory/link.md")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("real"), ws.join("memory/dirlink")).unwrap();
        let extras = vec!["../extra".to_string()];
        let outside_abs = tmp.path().join("outside.md").display().to_string();
        let inside_abs = ws.join("memory/a.md").display().to_string();
        let cases: Vec<(&str, bool)> = vec![
            ("MEMORY.md", true),
            ("memory.md", true), // allowed even when missing
            ("memory/a.md", true),
            ("memory/new/missing.md", true),
            ("./memory/a.md", true),
            (&inside_abs, true),
            ("../extra/e.md", true),
            ("NOTES.md", false),
            ("../outside.md", false),
            ("memory/../../x.md", false),
            ("memory/../NOTES.md", false),
            (&outside_abs, false),
            ("memory/link.md", false),
            ("memory/dirlink/r.md", false),
            ("memory/a.txt", false),
            ("memory", false),
            ("", false),
        ];
        for (path, allowed) in cases {
            let got = resolve_get_path(&ws, &extras, &[], path);
            assert_eq!(got.is_ok(), allowed, "path {path:?}: {got:?}");
        }
    }

    /// A file flipped between a regular file and a symlink to an outside file while it is
    /// read: no read ever returns the outside file (the open refuses links, it does not
    /// rely on the check before it).
    #[test]
    fn get_never_reads_through_a_symlink_swapped_in_concurrently() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        write(&ws.join("memory/x.md"), "inside");
        write(&tmp.path().join("secret.md"), "SECRET");
        let stop = AtomicBool::new(false);
        let (mut inside, mut outside, mut refused) = (0, 0, 0);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let (file, link, regular) = (
                    ws.join("memory/x.md"),
                    ws.join("memory/x.link"),
                    ws.join("memory/x.file"),
                );
                while !stop.load(Ordering::Relaxed) {
                    let _ = fs::remove_file(&link);
                    std::os::unix::fs::symlink(tmp.path().join("secret.md"), &link).unwrap();
                    fs::rename(&link, &file).unwrap();
                    fs::write(&regular, "inside").unwrap();
                    fs::rename(&regular, &file).unwrap();
                }
            });
            for _ in 0..5_000 {
                let read = resolve_get_path(&ws, &[], &[], "memory/x.md")
                    .and_then(|target| read_allowed(&target, "memory/x.md"));
                match read {
                    Ok(Some(bytes)) if bytes == b"SECRET" => outside += 1,
                    Ok(_) => inside += 1,
                    Err(_) => refused += 1,
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(outside, 0, "{outside} reads returned the outside file");
        assert!(
            inside > 0 && refused > 0,
            "inside {inside}, refused {refused}"
        );
    }
}
