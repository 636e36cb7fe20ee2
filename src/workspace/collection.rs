//! A QMD collection (`memory.qmd.paths[]`) as memoria indexes and reads it.
//!
//! A collection is a named directory and a glob: the files below the directory whose path
//! (relative to it, with `/`) matches the glob. memoria indexes the same files QMD does, so
//! that its own engine can answer when QMD cannot, and cites them the way OpenClaw does:
//! workspace-relative when the directory lies inside the workspace, `qmd/<name>/<path>`
//! otherwise. `memory_get` reads both forms back, under the same rules as extra paths (no
//! `..` escapes, no symlinks), and only files the glob matches.
//!
//! Globs follow QMD's: `*` and `?` stay within one path component, `**/` spans any number
//! of directories, `{a,b}` alternates.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use super::paths::{join_cited, normalize, relative_path};

/// The prefix of citations of files outside the workspace.
pub const CITE_PREFIX: &str = "qmd/";

/// One collection: `name`, its directory and the glob its files match.
#[derive(Debug, Clone)]
pub struct Collection {
    /// The collection's name (`[A-Za-z0-9_-]+`).
    pub name: String,
    /// The directory, absolute and lexically normalised.
    pub root: PathBuf,
    /// The glob, as configured.
    pub pattern: String,
    matcher: GlobMatcher,
}

impl Collection {
    /// A collection of the files below `root` (absolute) matching `pattern`.
    pub fn new(name: &str, root: &Path, pattern: &str) -> Result<Collection, String> {
        let matcher = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|err| format!("collection {name}: pattern {pattern:?}: {err}"))?
            .compile_matcher();
        Ok(Collection {
            name: name.to_string(),
            root: normalize(root),
            pattern: pattern.to_string(),
            matcher,
        })
    }

    /// True when `rel` (relative to the root, `/`-separated) is one of the collection's files.
    pub fn matches(&self, rel: &str) -> bool {
        self.matcher.is_match(rel)
    }

    /// True when the directory lies inside `workspace` (its files are cited
    /// workspace-relative).
    pub fn in_workspace(&self, workspace: &Path) -> bool {
        self.root.starts_with(normalize(workspace))
    }

    /// How memoria cites the collection's file `rel`.
    pub fn cite(&self, workspace: &Path, rel: &str) -> String {
        join_cited(&self.cited_root(workspace), rel)
    }

    /// How memoria cites the collection's directory itself (its files are below it).
    pub fn cited_root(&self, workspace: &Path) -> String {
        if self.in_workspace(workspace) {
            relative_path(workspace, &self.root)
        } else {
            format!("{CITE_PREFIX}{}", self.name)
        }
    }
}

/// Splits a `qmd/<name>/<path>` citation into the collection and the path below it.
pub fn split_cited<'a>(
    collections: &'a [Collection],
    cited: &'a str,
) -> Option<(&'a Collection, &'a str)> {
    let rest = cited.strip_prefix(CITE_PREFIX)?;
    let (name, path) = rest.split_once('/')?;
    let collection = collections.iter().find(|c| c.name == name)?;
    Some((collection, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_qmd_does() {
        let table: &[(&str, &str, bool)] = &[
            ("**/*.md", "a.md", true),
            ("**/*.md", "deep/er/a.md", true),
            ("**/*.md", "a.txt", false),
            ("*.md", "a.md", true),
            ("*.md", "sub/a.md", false),
            ("MEMORY.md", "MEMORY.md", true),
            ("MEMORY.md", "x/MEMORY.md", false),
            ("**/*.{md,txt}", "n/a.txt", true),
            ("notes/?.md", "notes/a.md", true),
            ("notes/?.md", "notes/ab.md", false),
        ];
        for &(pattern, path, want) in table {
            let c = Collection::new("c", Path::new("/r"), pattern).unwrap();
            assert_eq!(c.matches(path), want, "{pattern} ~ {path}");
        }
        assert!(Collection::new("c", Path::new("/r"), "a[").is_err());
    }

    #[test]
    fn cites_inside_the_workspace_relatively_and_outside_by_name() {
        let ws = Path::new("/home/u/ws");
        let table: &[(&str, &str, &str)] = &[
            ("/home/u/ws", "MEMORY.md", "MEMORY.md"),
            ("/home/u/ws/memory", "2026-01-02.md", "memory/2026-01-02.md"),
            ("/home/u/ws/notes/../docs", "a/b.md", "docs/a/b.md"),
            ("/home/u/notes", "a/b.md", "qmd/docs/a/b.md"),
            ("/home/u/ws2", "x.md", "qmd/docs/x.md"),
        ];
        for &(root, rel, want) in table {
            let c = Collection::new("docs", Path::new(root), "**/*.md").unwrap();
            assert_eq!(c.cite(ws, rel), want, "{root} + {rel}");
        }
        let cols = [Collection::new("docs", Path::new("/n"), "**/*.md").unwrap()];
        assert_eq!(
            split_cited(&cols, "qmd/docs/a/b.md").map(|(c, p)| (c.name.as_str(), p)),
            Some(("docs", "a/b.md"))
        );
        assert!(split_cited(&cols, "qmd/other/a.md").is_none());
        assert!(split_cited(&cols, "memory/a.md").is_none());
    }
}
