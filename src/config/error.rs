//! Configuration errors: every one names the file, and the full key path where there is one.

use std::path::PathBuf;

/// Why a configuration could not be loaded or resolved.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// An unknown key or a wrong type at `path` (a dotted key path such as
    /// `agents.list[1].memorySearch.chunking.tokens`).
    #[error("{path}: {message}")]
    Invalid {
        /// Full key path of the offending value.
        path: String,
        /// What is wrong, e.g. `unknown key` or `expected a number, got "high"`.
        message: String,
    },
    /// An agent id that cannot name a directory safely.
    #[error("invalid agent id {id:?}: {reason}")]
    AgentId {
        /// The id as given.
        id: String,
        /// What is wrong, and what is allowed.
        reason: String,
    },
    /// An error found in `file` (displays as `<file>: <inner error>`).
    #[error("{}: {error}", .file.display())]
    InFile {
        /// The config file.
        file: PathBuf,
        /// The error inside it (an [`ConfigError::Invalid`]).
        error: Box<ConfigError>,
    },
    /// The file is not valid JSON5.
    #[error("{}: {}invalid JSON5: {message}", .file.display(), fmt_position(*.line, *.column))]
    Syntax {
        /// The config file.
        file: PathBuf,
        /// 1-based line, when the parser reports it.
        line: Option<usize>,
        /// 1-based column, when the parser reports it.
        column: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// An explicitly named config file does not exist.
    #[error("{}: config file not found", .file.display())]
    NotFound {
        /// The file that was asked for.
        file: PathBuf,
    },
    /// The config file exists but could not be read.
    #[error("{}: {error}", .file.display())]
    Io {
        /// The config file.
        file: PathBuf,
        /// The underlying error.
        #[source]
        error: std::io::Error,
    },
}

fn fmt_position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("line {l}, column {c}: "),
        (Some(l), None) => format!("line {l}: "),
        _ => String::new(),
    }
}

impl ConfigError {
    /// Attaches the config file's path to an [`ConfigError::Invalid`]; other variants already
    /// name their file and are returned unchanged.
    pub fn in_file(self, file: impl Into<PathBuf>) -> ConfigError {
        match self {
            e @ ConfigError::Invalid { .. } => ConfigError::InFile {
                file: file.into(),
                error: Box::new(e),
            },
            other => other,
        }
    }

    pub(super) fn invalid(path: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: path.to_string(),
            message: message.into(),
        }
    }
}
