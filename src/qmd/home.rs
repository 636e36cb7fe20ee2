//! QMD's home for one agent: `<stateDir>/agents/<agentId>/qmd/`, as OpenClaw lays it out.
//!
//! QMD reads its collections from `$XDG_CONFIG_HOME/qmd/index.yml` and keeps its SQLite
//! index and models under `$XDG_CACHE_HOME/qmd/`. memoria runs it with `xdg-config/` and
//! `xdg-cache/` of this directory, the same ones OpenClaw's gateway uses, so an OpenClaw
//! user's QMD index and downloaded models are used as they are. memoria writes two things
//! here: the `collections:` block of `index.yml`, rewritten from the config (the file's
//! other sections, such as QMD's `models:`, are kept as they are), and `memoria-qmd.json`,
//! when it last ran `qmd update` and `qmd embed`.

use std::path::{Path, PathBuf};

use crate::atomic::write_atomic;
use crate::workspace::collection::Collection;

/// The agent's QMD home.
#[derive(Debug, Clone)]
pub(crate) struct Home {
    root: PathBuf,
}

impl Home {
    pub(crate) fn new(state_dir: &Path, agent_id: &str) -> Home {
        Home {
            root: state_dir.join("agents").join(agent_id).join("qmd"),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The environment QMD runs with.
    pub(crate) fn envs(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("XDG_CONFIG_HOME", self.root.join("xdg-config")),
            ("XDG_CACHE_HOME", self.root.join("xdg-cache")),
        ]
    }

    fn index_file(&self) -> PathBuf {
        self.root.join("xdg-config").join("qmd").join("index.yml")
    }

    /// Brings `index.yml`'s collections in step with `collections` (written only when they
    /// differ).
    pub(crate) fn write_collections(&self, collections: &[Collection]) -> Result<(), String> {
        let file = self.index_file();
        let existing = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => return Err(format!("{}: {err}", file.display())),
        };
        let wanted = render(&existing, collections);
        if wanted == existing {
            return Ok(());
        }
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
        }
        std::fs::create_dir_all(self.root.join("xdg-cache"))
            .map_err(|err| format!("{}: {err}", self.root.display()))?;
        write_atomic(&file, wanted.as_bytes()).map_err(|err| err.to_string())
    }
}

/// `existing` with its top-level `collections:` block replaced by `collections` (first).
pub(crate) fn render(existing: &str, collections: &[Collection]) -> String {
    let mut out = String::from("collections:\n");
    for c in collections {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
        out.push_str(&format!(
            "  {}:\n    path: {}\n    pattern: {}\n",
            c.name,
            quote(&c.root.to_string_lossy()),
            quote(&c.pattern)
        ));
    }
    let mut in_block = false;
    for line in existing.lines() {
        let top_level = !line.is_empty() && !line.starts_with([' ', '\t', '#']);
        if top_level {
            in_block = line.trim_end() == "collections:" || line.starts_with("collections:");
        }
        if !in_block {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_the_collections_block() {
        let cols = [
            Collection::new("memory-dir", Path::new("/ws/memory"), "**/*.md").unwrap(),
            Collection::new("docs", Path::new("/home/u/my \"notes\""), "**/*.{md,txt}").unwrap(),
        ];
        let fresh = render("", &cols);
        assert_eq!(
            fresh,
            "collections:\n  memory-dir:\n    path: \"/ws/memory\"\n    pattern: \"**/*.md\"\n  \
             docs:\n    path: \"/home/u/my \\\"notes\\\"\"\n    pattern: \"**/*.{md,txt}\"\n"
        );
        // What QMD wrote itself (models) is kept; old collections are replaced.
        let existing = "collections:\n  old:\n    path: /x\n    pattern: \"**/*.md\"\n\nmodels:\n  embed: hf:a/b\n";
        let rendered = render(existing, &cols[..1]);
        assert_eq!(
            rendered,
            "collections:\n  memory-dir:\n    path: \"/ws/memory\"\n    pattern: \"**/*.md\"\nmodels:\n  embed: hf:a/b\n"
        );
        // Rendering is stable: a second pass changes nothing (so nothing is rewritten).
        assert_eq!(render(&rendered, &cols[..1]), rendered);
    }
}
