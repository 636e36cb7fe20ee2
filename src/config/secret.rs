//! API keys as the config gives them, never shown by `Debug`.

/// An API key as the config gives it: the key itself, or OpenClaw's SecretRef object
/// (`{source: "env", provider: "default", id: "OPENAI_API_KEY"}`) naming where to find it.
/// `Debug` never shows a literal key.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// The key, written in the config.
    Literal(String),
    /// A SecretRef.
    Ref {
        /// `env`, `file` or `exec`.
        source: String,
        /// The secret provider's name, when given.
        provider: Option<String>,
        /// What to look up: for `env`, the environment variable.
        id: String,
    },
}

impl Secret {
    /// The key: a literal one, or an `env` SecretRef looked up with `var`. `None` when the
    /// variable is unset or empty, or for the `file` and `exec` sources (not supported).
    pub fn resolve(&self, var: impl Fn(&str) -> Option<String>) -> Option<String> {
        match self {
            Secret::Literal(key) => Some(key.clone()),
            Secret::Ref { source, id, .. } if source == "env" => var(id).filter(|v| !v.is_empty()),
            Secret::Ref { .. } => None,
        }
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Literal(_) => f.write_str("Literal(<redacted>)"),
            Secret::Ref {
                source,
                provider,
                id,
            } => f
                .debug_struct("Ref")
                .field("source", source)
                .field("provider", provider)
                .field("id", id)
                .finish(),
        }
    }
}
