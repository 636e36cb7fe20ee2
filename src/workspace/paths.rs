//! Path arithmetic shared by discovery, the `memory_get` policy and the watcher: absolute
//! and normalised paths without touching the file system, workspace-relative citations
//! with `/`, and what kind of file a path is (never following a symlink).

use std::fs;
use std::path::{Component, Path, PathBuf};

/// `base/rel`, or `rel` when `base` is empty (the workspace itself).
pub(crate) fn join_cited(base: &str, rel: &str) -> String {
    if base.is_empty() {
        rel.to_string()
    } else {
        format!("{base}/{rel}")
    }
}

/// A relative path with `/` separators.
pub(super) fn slash_path(path: &Path) -> String {
    if std::path::MAIN_SEPARATOR == '/' {
        return path.to_string_lossy().into_owned();
    }
    let parts: Vec<_> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    parts.join("/")
}

pub(super) fn real_path(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

pub(super) fn is_markdown(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "md")
}

pub(super) fn is_regular_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

pub(super) fn is_real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir())
}

pub(super) fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
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
