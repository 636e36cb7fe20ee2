//! The library's error type: every variant names the file, key or directory involved.

use std::path::{Path, PathBuf};

/// Errors returned by memoria's library API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("index busy: another memoria process is writing {dir} (try again when it finishes)")]
    IndexBusy { dir: PathBuf },
    #[error("{path}: catalog error: {message}")]
    Catalog { path: PathBuf, message: String },
    #[error("{path}: text index error: {message}")]
    TextIndex { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Corrupt { path: PathBuf, message: String },
    #[error("memory search is disabled (agents.defaults.memorySearch.enabled = false)")]
    Disabled,
    #[error("no index yet in {dir}: run `memoria index` first")]
    NoIndex { dir: PathBuf },
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn catalog(path: &Path, err: impl std::fmt::Display) -> Error {
        Error::Catalog {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }

    pub(crate) fn text(path: &Path, err: impl std::fmt::Display) -> Error {
        Error::TextIndex {
            path: path.to_path_buf(),
            message: err.to_string(),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
