//! The parts of the process environment configuration depends on, and path expansion.

use std::path::{Path, PathBuf};

use super::settings::Ranking;

/// The parts of the process environment that configuration depends on.
///
/// Tests build one by hand; the CLI uses [`Env::from_process`] and then applies its own
/// `--state-dir` / `--config` flags on top.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// The user's home directory (`$HOME`), used for `~` and the default state dir.
    pub home: Option<PathBuf>,
    /// `--state-dir` or `$OPENCLAW_STATE_DIR`.
    pub state_dir: Option<PathBuf>,
    /// `--config` or `$OPENCLAW_CONFIG_PATH`.
    pub config_path: Option<PathBuf>,
    /// `--ranking`: wins over `plugins.entries.memoria.config.ranking`.
    pub ranking: Option<Ranking>,
    /// `--store-uri`: fleet mode's LanceDB URI; wins over
    /// `plugins.entries.memoria.config.store.uri` (its storage options still apply).
    pub store_uri: Option<String>,
}

impl Env {
    /// Reads `HOME` (`USERPROFILE` when `HOME` is unset), `OPENCLAW_STATE_DIR` and
    /// `OPENCLAW_CONFIG_PATH`. Empty variables count as unset.
    pub fn from_process() -> Env {
        fn var(name: &str) -> Option<PathBuf> {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        }
        Env {
            home: var("HOME").or_else(|| var("USERPROFILE")),
            state_dir: var("OPENCLAW_STATE_DIR"),
            config_path: var("OPENCLAW_CONFIG_PATH"),
            ranking: None,
            store_uri: None,
        }
    }

    pub(super) fn home_dir(&self) -> PathBuf {
        self.home.clone().unwrap_or_else(|| PathBuf::from("."))
    }
}

/// The OpenClaw state directory: `env.state_dir` (with `~` expanded), else `~/.openclaw`.
pub fn state_dir(env: &Env) -> PathBuf {
    match &env.state_dir {
        Some(dir) => expand_path(dir, env),
        None => env.home_dir().join(".openclaw"),
    }
}

/// The config file to read and whether it was given explicitly (`--config` /
/// `$OPENCLAW_CONFIG_PATH`) rather than being the default `<stateDir>/openclaw.json`.
pub fn config_file(env: &Env) -> (PathBuf, bool) {
    match &env.config_path {
        Some(path) => (expand_path(path, env), true),
        None => (state_dir(env).join("openclaw.json"), false),
    }
}

/// Expands a leading `~` (alone, or followed by `/` or `\`) to the home directory.
/// Surrounding whitespace is trimmed; any other string becomes a path unchanged.
pub fn expand_home(s: &str, env: &Env) -> PathBuf {
    let s = s.trim();
    if s == "~" {
        return env.home_dir();
    }
    match s.strip_prefix("~/").or_else(|| s.strip_prefix("~\\")) {
        Some(rest) => env.home_dir().join(rest.trim_start_matches(['/', '\\'])),
        None => PathBuf::from(s),
    }
}

pub(super) fn expand_path(path: &Path, env: &Env) -> PathBuf {
    match path.to_str() {
        Some(s) => expand_home(s, env),
        None => path.to_path_buf(),
    }
}
