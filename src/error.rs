//! The library's error type: every variant names the file, key or directory involved.

use std::path::{Path, PathBuf};

/// Errors returned by memoria's library API.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration could not be loaded or resolved.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The agent directory is an existing folder memoria did not create.
    #[error(
        "{dir} is not empty and is not a memoria agent directory (it has {found:?} but no \
         manifest.json): memoria will not index into it or delete anything in it; choose \
         another store.path or agent id, or an empty directory"
    )]
    NotAgentDir {
        /// The directory.
        dir: PathBuf,
        /// One of the entries found in it.
        found: String,
    },
    /// The workspace is not a directory. Nothing is synced: the index keeps what it had.
    #[error(
        "workspace {} does not exist (from {origin}): check the path; the index keeps its \
         last contents",
        path.display()
    )]
    WorkspaceMissing {
        /// The workspace.
        path: PathBuf,
        /// Where it came from: a config key, `--workspace`, or the default.
        origin: String,
    },
    /// A request memoria refuses (bad input to `append`), and why.
    #[error("{message}")]
    Rejected {
        /// What was wrong, naming the argument.
        message: String,
    },
    /// Another process holds the agent directory's writer lock.
    #[error("index busy: another memoria process is writing {dir} (try again when it finishes)")]
    IndexBusy {
        /// The agent directory.
        dir: PathBuf,
    },
    /// The catalog (or the embedding cache) failed.
    #[error("{path}: catalog error: {source}")]
    Catalog {
        /// The `catalog.redb` or `cache.redb` file.
        path: PathBuf,
        /// redb's error.
        #[source]
        source: redb::Error,
    },
    /// The tantivy text index failed.
    #[error("{path}: text index error: {source}")]
    TextIndex {
        /// The text index directory.
        path: PathBuf,
        /// tantivy's error.
        #[source]
        source: tantivy::TantivyError,
    },
    /// A file or index holds what memoria did not write (damage, or another version).
    #[error("{path}: {message}")]
    Corrupt {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A store opened read-only was asked to write.
    #[error("{path}: opened read-only, cannot write")]
    ReadOnly {
        /// The store.
        path: PathBuf,
    },
    /// An error kept from an earlier attempt (a generation's text index that did not open
    /// is reported by every search of that generation).
    #[error(transparent)]
    Shared(std::sync::Arc<Error>),
    /// [`Memory::start_live`](crate::Memory::start_live) while a live sync runs.
    #[error("a live sync already runs for this memory")]
    AlreadyLive,
    /// `memorySearch.enabled` is false.
    #[error("memory search is disabled (agents.defaults.memorySearch.enabled = false)")]
    Disabled,
    /// No sync has completed in the agent directory yet.
    #[error("no index yet in {dir}: run `memoria index` first")]
    NoIndex {
        /// The agent directory.
        dir: PathBuf,
    },
    /// A local model named explicitly ([`MemoryBuilder::model`](crate::MemoryBuilder::model))
    /// cannot serve.
    #[error("the local embedding model cannot serve: {reason}")]
    ModelUnavailable {
        /// Why: the directory, and what is missing or failed.
        reason: String,
    },
    /// No index exists yet and the live sync's attempt to make the first one failed.
    #[error("no index yet in {dir}: the first sync failed: {reason} (it is retried with backoff)")]
    FirstSyncFailed {
        /// The agent directory.
        dir: PathBuf,
        /// Why the sync failed.
        reason: String,
    },
    /// A store other than the local directory (fleet mode's LanceDB) failed.
    #[error("{location}: {message}")]
    Store {
        /// Where the store keeps the agent (a URI).
        location: String,
        /// What failed.
        message: String,
    },
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn catalog(path: &Path, err: impl Into<redb::Error>) -> Error {
        Error::Catalog {
            path: path.to_path_buf(),
            source: err.into(),
        }
    }

    pub(crate) fn text(path: &Path, err: tantivy::TantivyError) -> Error {
        Error::TextIndex {
            path: path.to_path_buf(),
            source: err,
        }
    }

    pub(crate) fn corrupt(path: &Path, message: impl std::fmt::Display) -> Error {
        Error::Corrupt {
            path: path.to_path_buf(),
            message: message.to_string(),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
