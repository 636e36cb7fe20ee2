//! A fallback: what was asked for, and why something else served.

use serde::Serialize;

/// Why a search (or the index) did not use the configured retrieval: `from` names what was
/// configured (`local`, `openai`, `fts`, …) and `reason` says what went wrong. Every payload
/// served by a fallback carries one (principle 3: never degrade silently).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fallback {
    /// The provider or index side that could not serve.
    pub from: String,
    /// What went wrong, and what served instead.
    pub reason: String,
}
