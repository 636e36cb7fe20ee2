//! Project keys: which repository a session works in, as OpenClaw 2026.9 names it, so
//! `<!-- project: … -->` entries can rank up for the projects a session is active in.
//!
//! A repository's key is its `origin` remote without scheme, user, port or `.git`, the host
//! lower-cased and the path kept as written (`git@github.com:Acme/Api.git` →
//! `github.com/Acme/Api`); without a remote that parses, `path:<repository root>`. `;`, `<`,
//! `>`, `%` and line breaks are percent-encoded, since they separate or close annotations.
//! An OpenClaw session keeps its [`MAX_ACTIVE`] most recent keys and hands them to every
//! search; a search uses all it is given.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How many project keys an OpenClaw session keeps active (the most recent first).
pub const MAX_ACTIVE: usize = 4;

/// The key of the repository whose remote URL is `origin` (when it parses) rooted at
/// `root`.
pub(crate) fn key_for(origin: Option<&str>, root: &Path) -> String {
    let key = origin
        .and_then(remote_key)
        .unwrap_or_else(|| format!("path:{}", root.display()));
    escape(&key)
}

/// The repository root at or above `dir` (a directory holding `.git`, a directory or a
/// worktree's file), if any.
pub(crate) fn repository_root(dir: &Path) -> Option<PathBuf> {
    let dir = std::path::absolute(dir).ok()?;
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The key of the repository at or above `dir`: its root found, its `origin` read with
/// `git config` (a missing `git` or remote gives the `path:` key). `None` outside a
/// repository.
pub fn key_of_directory(dir: &Path) -> Option<String> {
    let root = repository_root(dir)?;
    let origin = Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["config", "--get", "remote.origin.url"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    Some(key_for(origin.as_deref(), &root))
}

/// `host/path` of a remote URL, or `None` when it does not parse as a remote: `scheme://`
/// (`https`, `http`, `ssh`, `git`, `git+ssh`; lower-case) with at least two path segments,
/// or scp-like `git@host:path`.
pub(crate) fn remote_key(url: &str) -> Option<String> {
    let url = url.trim();
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if !matches!(scheme, "https" | "http" | "ssh" | "git" | "git+ssh") {
            return None;
        }
        let (authority, path) = rest.split_once('/')?;
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let host = match host.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => host,
        };
        (host, path)
    } else {
        let (user_host, path) = url.split_once(':')?;
        let (user, host) = user_host.split_once('@')?;
        if user != "git" || path.starts_with('/') {
            return None;
        }
        (host, path)
    };
    if host.is_empty() || path.ends_with('/') {
        return None;
    }
    let path = path.strip_suffix(".git").unwrap_or(path);
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() < 2 || segments.iter().any(|s| s.is_empty()) {
        return None;
    }
    Some(format!("{}/{}", host.to_lowercase(), path))
}

/// Percent-encodes what would break an annotation: `%`, `;`, `<`, `>`, CR, LF.
fn escape(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for c in key.chars() {
        match c {
            '%' => out.push_str("%25"),
            ';' => out.push_str("%3b"),
            '<' => out.push_str("%3c"),
            '>' => out.push_str("%3e"),
            '\r' => out.push_str("%0d"),
            '\n' => out.push_str("%0a"),
            c => out.push(c),
        }
    }
    out
}

/// `keys` as a search's active set: trimmed, empty ones dropped, de-duplicated (first
/// wins). Keys compare exactly, as OpenClaw compares them.
pub(crate) fn active_set<S: AsRef<str>>(keys: &[S]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for key in keys.iter().map(|k| k.as_ref().trim()) {
        if !key.is_empty() && !out.iter().any(|k| k == key) {
            out.push(key.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_to_keys() {
        let table: &[(&str, Option<&str>)] = &[
            (
                "git@github.com:Owner/Repo.git",
                Some("github.com/Owner/Repo"),
            ),
            (
                "https://github.com/Owner/Repo",
                Some("github.com/Owner/Repo"),
            ),
            (
                "https://user:pw@GitHub.com/Owner/Repo.git",
                Some("github.com/Owner/Repo"),
            ),
            (
                "ssh://git@gitlab.example.com:2222/G/S/R.git",
                Some("gitlab.example.com/G/S/R"),
            ),
            ("https://Example.COM:8443/a/b.git", Some("example.com/a/b")),
            ("git://host.org/a/b", Some("host.org/a/b")),
            ("https://h.org/a/b?x=1#frag", Some("h.org/a/b")),
            ("https://h.org/a/b.GIT", Some("h.org/a/b.GIT")),
            ("alice@host:a/b.git", None),
            ("https://h.org/single", None),
            ("https://h.org/a/b/", None),
            ("HTTPS://h.org/a/b", None),
            ("file:///srv/repo.git", None),
            ("/srv/repo.git", None),
            ("", None),
        ];
        for (url, expected) in table {
            assert_eq!(remote_key(url).as_deref(), *expected, "{url:?}");
        }
    }

    #[test]
    fn keys_fall_back_to_the_root_and_escape() {
        let root = Path::new("/work/my;repo");
        assert_eq!(key_for(None, root), "path:/work/my%3brepo");
        assert_eq!(
            key_for(Some("alice@host:a/b"), root),
            "path:/work/my%3brepo"
        );
        assert_eq!(key_for(Some("git@h.io:a/b%c.git"), root), "h.io/a/b%25c");
    }

    #[test]
    fn active_sets_are_trimmed_and_deduplicated() {
        assert_eq!(
            active_set(&["a", " a ", "", "b", "c", "d", "e"]),
            ["a", "b", "c", "d", "e"]
        );
        assert!(active_set::<&str>(&[]).is_empty());
    }
}
