//! OpenClaw JSON5 configuration → memoria [`Settings`].
//!
//! memoria reads the memory settings of an OpenClaw config file (SPEC §3):
//!
//! * `agents.defaults.memorySearch` holds the defaults, and `agents.list[i].memorySearch`
//!   (the first entry whose `id` equals the agent id) overrides them. Every leaf resolves as
//!   `agent ?? defaults ?? builtin`. Two keys merge instead: `extraPaths` concatenates (defaults
//!   first, then the agent's, duplicates removed, order kept) and `remote.headers` merges key by
//!   key (the agent wins on a conflict). The other `remote` fields, `remote.batch` included,
//!   resolve leaf by leaf like everything else.
//! * The newer OpenClaw layout is read too: `memory.search` (defaults) and
//!   `agents.entries.<id>.memory.search` (per agent, with `agents.entries.<id>.workspace`),
//!   the same keys. Where both layouts set one level, the newer block wins as a whole and a
//!   warning names the ignored block.
//! * `agents.defaults.workspace` / `agents.list[i].workspace` name the workspace.
//! * `agents.defaults.compaction.{reserveTokensFloor, memoryFlush.*}` tune the memory flush.
//! * `memory.{backend, citations, qmd}` choose the backend and the citation mode; `memory.qmd`
//!   configures the QMD sidecar (see [`qmd`](self::QmdSettings)).
//!
//! # Strictness
//! An OpenClaw config has many other sections (models, channels, gateway, …): they are ignored,
//! and so are the keys of `agents.defaults` / `agents.list[i]` / `compaction` that memoria does not
//! read. Inside `memorySearch` (defaults and every `agents.list` entry, whichever agent is being
//! resolved) and inside `memory`, an unknown key (from a newer OpenClaw release, or a typo)
//! is ignored and listed in [`Settings::warnings`], which `status` shows. Every key memoria
//! reads is type checked, and a wrong type is an error. Errors name the full key path, e.g.
//! `agents.defaults.memorySearch.query.hybrid.vectorWeight: expected a number, got "high"`;
//! [`load_settings`] and [`ConfigError::in_file`] prefix the config file's path.
//!
//! # Values
//! * `null` is the same as an absent key (like JavaScript's `??`). So are JSON5's `NaN` and
//!   `Infinity`, which JSON cannot hold and therefore arrive as `null`.
//! * `remote.apiKey` is a string or OpenClaw's SecretRef object (`{source: "env" | "file" |
//!   "exec" | "store", provider?, id}`, or `${NAME}`), kept as a [`Secret`] and read when the
//!   key is used ([`Secret::read`], with `secrets.providers`), never written anywhere.
//! * An empty or all-blank string is treated as unset for the optional string keys (`model`,
//!   `workspace`, `store.path`, `remote.baseUrl`, `remote.apiKey`, `local.*`, prompts).
//!   `extraPaths` entries are trimmed and empty ones dropped.
//! * Integer keys accept any JSON number: a fraction is floored (`3.9` → 3, as OpenClaw's
//!   `clampInt` does); a string such as `"3"` is a type error. A value below the key's minimum,
//!   negative numbers included, is clamped to that minimum: 1 for `chunking.tokens`,
//!   `query.maxResults`, `query.hybrid.candidateMultiplier`, `query.hybrid.temporalDecay.halfLifeDays`,
//!   `cache.maxEntries`, `remote.batch.concurrency` and `remote.batch.timeoutMinutes`; 0 for every
//!   other integer. Upper bounds: `chunking.overlap` ≤ `tokens − 1`, `candidateMultiplier` ≤ 20.
//! * Fractions (`minScore`, the weights, `mmr.lambda`) are clamped to `0..=1`; `vectorWeight` and
//!   `textWeight` are then divided by their sum (a zero sum gives the builtin 0.7 / 0.3).
//! * `halfLifeDays` is an integer number of days (as in OpenClaw): floored, at least 1.
//! * `sources` is sorted and deduplicated; `"sessions"` only counts when
//!   `experimental.sessionMemory` is true, and an empty result falls back to `["memory"]`.
//!
//! # Paths
//! Path helpers take an [`Env`] so that resolution never reads the process environment;
//! [`Env::from_process`] is the one place that does. A missing home directory is treated as `.`.
//! The store is a directory: `<stateDir>/memory/<agentId>/` unless `store.path` says otherwise
//! (see [`StoreSettings::dir`]). memoria never opens an OpenClaw SQLite file.

mod chat;
mod env;
mod error;
mod node;
mod parse;
mod qmd;
mod resolution;
mod secret;
mod settings;
#[cfg(test)]
mod tests;

use std::path::Path;

use serde_json::{Map, Value};

pub use chat::{Chat, ChatType};
pub use env::{config_file, expand_home, state_dir, Env};
pub use error::ConfigError;
pub use qmd::*;
pub use secret::{Secret, SecretProvider, SecretProviders};
pub use settings::*;

///
/// A missing default file gives an empty object (OpenClaw runs without a config); a missing
/// explicit file is [`ConfigError::NotFound`]. A file that is empty or blank is an empty object.
/// JSON5 syntax errors are [`ConfigError::Syntax`] with the file and, when the parser reports
/// one, the 1-based line and column.
pub fn load_config_file(env: &Env) -> Result<Value, ConfigError> {
    let (file, explicit) = config_file(env);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            return Ok(Value::Object(Map::new()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ConfigError::NotFound { file });
        }
        Err(error) => return Err(ConfigError::Io { file, error }),
    };
    parse_config_text(&text, &file)
}

/// Parses JSON5 text; `file` only names the source in errors.
pub fn parse_config_text(text: &str, file: &Path) -> Result<Value, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    check_nesting(text, file)?;
    json5::from_str::<Value>(text).map_err(|e| {
        let position = e.position();
        let message = match e.code() {
            Some(code) => code.to_string(),
            None => {
                // A custom message; json5 appends " at line L column C" to it.
                let full = e.to_string();
                match position {
                    Some(p) => full
                        .strip_suffix(&format!(" at {p}"))
                        .unwrap_or(&full)
                        .to_string(),
                    None => full,
                }
            }
        };
        ConfigError::Syntax {
            file: file.to_path_buf(),
            line: position.map(|p| p.line + 1),
            column: position.map(|p| p.column + 1),
            message,
        }
    })
}

/// Loads the config file named by `env` and resolves it for `agent_id`. Errors found while
/// resolving are prefixed with the file's path (`<file>: <key path>: <message>`).
pub fn load_settings(env: &Env, agent_id: &str) -> Result<Settings, ConfigError> {
    let config = load_config_file(env)?;
    let file = config_file(env).0;
    let mut settings = resolve(&config, agent_id, env).map_err(|e| e.in_file(file.clone()))?;
    for warning in &mut settings.warnings {
        *warning = format!("{}: {warning}", file.display());
    }
    Ok(settings)
}

/// Resolves the memory settings of `agent_id` from a parsed OpenClaw config.
///
/// Pure: paths come from `env`, nothing is read from disk or the process environment.
/// Errors are [`ConfigError::Invalid`] with the full key path.
pub fn resolve(config: &Value, agent_id: &str, env: &Env) -> Result<Settings, ConfigError> {
    validate_agent_id(agent_id)?;
    let parsed = parse::parse(config, agent_id)?;
    Ok(resolution::finalize(&parsed, agent_id, env))
}

/// Longest agent id accepted.
pub const MAX_AGENT_ID_LEN: usize = 64;

/// Checks that `id` can name the agent's directory (`<stateDir>/memory/<agentId>/`) and
/// nothing else: 1 to [`MAX_AGENT_ID_LEN`] ASCII letters, digits, `-`, `_` or `.`, not
/// starting with `.` (so no `..`, no separators, no hidden or parent directories).
pub fn validate_agent_id(id: &str) -> Result<(), ConfigError> {
    let fail = |reason: &str| {
        Err(ConfigError::AgentId {
            id: id.to_string(),
            reason: format!(
                "{reason}; an agent id is 1 to {MAX_AGENT_ID_LEN} ASCII letters, digits, \
                 '-', '_' or '.', not starting with '.'"
            ),
        })
    };
    if id.is_empty() {
        return fail("it is empty");
    }
    if id.len() > MAX_AGENT_ID_LEN {
        return fail("it is too long");
    }
    if id.starts_with('.') {
        return fail("it starts with '.'");
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return fail(&format!("{c:?} is not allowed"));
    }
    Ok(())
}

/// Deepest nesting of objects and arrays a config may have. OpenClaw's own are under 10
/// levels; the JSON5 parser recurses once per level, so a hostile file 30,000 levels deep
/// would overflow the stack rather than fail.
pub const MAX_CONFIG_DEPTH: usize = 128;

/// Refuses JSON5 text nested deeper than [`MAX_CONFIG_DEPTH`], naming the line and column
/// where the limit is crossed. Brackets inside strings and comments do not count.
fn check_nesting(text: &str, file: &Path) -> Result<(), ConfigError> {
    let (mut depth, mut line, mut column) = (0usize, 1usize, 0usize);
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        column += 1;
        if c == '\n' {
            line += 1;
            column = 0;
        }
        if let Some(q) = quote {
            match c {
                '\\' => {
                    if chars.next() == Some('\n') {
                        line += 1;
                        column = 0;
                    } else {
                        column += 1;
                    }
                }
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        column = 0;
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut star = false;
                for c in chars.by_ref() {
                    column += 1;
                    if c == '\n' {
                        line += 1;
                        column = 0;
                    }
                    if star && c == '/' {
                        break;
                    }
                    star = c == '*';
                }
            }
            '{' | '[' => {
                depth += 1;
                if depth > MAX_CONFIG_DEPTH {
                    return Err(ConfigError::Syntax {
                        file: file.to_path_buf(),
                        line: Some(line),
                        column: Some(column),
                        message: format!(
                            "objects and arrays nested deeper than {MAX_CONFIG_DEPTH} levels"
                        ),
                    });
                }
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}
