//! Which paths `memory_get` may read (SPEC §6): memory files of the workspace, extra paths
//! and QMD collections, `.md` only, never through a symlink (each component opened with
//! `O_NOFOLLOW` on Unix, so a link swapped in concurrently is refused too), never a
//! session transcript.

use std::fs;
use std::path::{Path, PathBuf};

use super::collection::{split_cited, Collection};
use super::paths::{absolute_in, is_markdown, is_real_dir, normalize, slash_path};

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
/// Allowed: `MEMORY.md`, `memory.md`, `USER.md`, `memory/**` inside the workspace and files inside the
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
            "{requested}: not a memory file (allowed: MEMORY.md, memory.md, USER.md, memory/**/*.md, extraPaths)"
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
        in_workspace(Scope::File(workspace.join("USER.md"))),
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
