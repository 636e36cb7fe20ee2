//! The MCP tools' arguments: one type per tool, from which both its JSON input schema
//! ([`schema`], schemars) and its parsing ([`parse`], serde) come, so each argument is
//! written once: its name, type, description and bounds.
//!
//! Every refusal names its key: `` `maxResults`: expected a whole number of at least 1, got
//! 0 ``, `` `query` is required ``, `` unknown argument `limit` (expected query, …) ``. A
//! null value reads as an absent key, and an absent key as null: an optional argument is an
//! `Option`. `memoria search` checks its options with the same
//! types ([`Count`], [`Fraction`]) and builds them with the same [`search_options`].
//!
//! - this module: the six tools' argument types, the search options, the schema;
//! - `kinds`: the kinds of argument, each with its check and its schema ([`Count`],
//!   [`Fraction`], [`Choice`], [`Flag`]);
//! - `read`: serde reading a JSON object with errors that name their key.

mod kinds;
mod read;
#[cfg(test)]
mod tests;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use memoria::config::{Chat, ChatType};
use memoria::{Corpus, SearchOptions};

pub use kinds::{Choice, Count, Flag, Fraction};

/// `memory_search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchArgs {
    /// What to recall, in natural language or keywords.
    pub query: String,
    /// Results to return (default: query.maxResults, 6).
    pub max_results: Option<Count>,
    /// Lowest score returned (default: query.minScore, 0.35).
    pub min_score: Option<Fraction>,
    /// Which sources to search (default: every enabled source: memory files, transcripts
    /// when indexed, the memory-wiki vault when there is one).
    pub corpus: Option<Choice<Corpus>>,
    #[schemars(
        description = "The chat this search serves (default: direct). Citations are hidden in \
            group and channel chats; with the QMD backend, memory.qmd.scope decides whether \
            results are shown."
    )]
    pub chat_type: Option<Choice<ChatType>>,
    /// The chat's channel (telegram, discord, …), for memory.qmd.scope.
    pub channel: Option<String>,
    /// The session key, for memory.qmd.scope's keyPrefix rules.
    pub session_key: Option<String>,
    /// Keyword (BM25) scoring only, without embedding the query (default: false).
    pub lexical_only: Option<Flag>,
    /// The session's active project keys, most recent first (OpenClaw keeps 4): under
    /// OpenClaw 2026.9's semantics, entries tagged <!-- project: … --> with all their keys
    /// here rank x1.15, other tagged entries x0.90.
    pub active_project_keys: Option<Vec<String>>,
    /// Which agent's memory: offered by the server only when it serves several.
    #[schemars(skip)]
    pub agent: Option<String>,
}

impl SearchArgs {
    /// The query and the search's options.
    pub fn into_search(self) -> (String, SearchOptions) {
        let mut options = search_options(
            self.max_results,
            self.min_score,
            self.corpus.map(|c| c.0),
            self.chat_type.map(|c| c.0),
            self.channel,
            self.session_key,
            self.lexical_only.is_some_and(|f| f.0),
        );
        options.active_project_keys = self.active_project_keys.unwrap_or_default();
        (self.query, options)
    }
}

/// A search's options, from `memory_search`'s arguments or `memoria search`'s flags (both
/// checked by their types); what is not given takes the configured default.
pub fn search_options(
    max_results: Option<Count>,
    min_score: Option<Fraction>,
    corpus: Option<Corpus>,
    chat_type: Option<ChatType>,
    channel: Option<String>,
    session_key: Option<String>,
    lexical_only: bool,
) -> SearchOptions {
    SearchOptions {
        max_results: max_results.map(|n| n.0),
        min_score: min_score.map(|x| x.0),
        corpus: corpus.unwrap_or_default(),
        chat: Chat {
            chat_type: chat_type.unwrap_or_default(),
            channel,
            session_key,
        },
        lexical_only,
        active_project_keys: Vec::new(),
        trace: false,
    }
}

/// `memory_get`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// A memory file, relative to the workspace (MEMORY.md, memory/…), or a citation as
    /// memory_search returns it (memory/x.md#L3-L8).
    pub path: String,
    /// First line, 1-based (default: the whole file).
    pub from: Option<Count>,
    /// Number of lines from `from`.
    pub lines: Option<Count>,
    /// Which corpus to read: memory (default), wiki (a memory-wiki page by vault path,
    /// file name or id), or all (a memory file, else the wiki page).
    pub corpus: Option<Choice<Corpus>>,
    /// Which agent's memory: offered by the server only when it serves several.
    #[schemars(skip)]
    pub agent: Option<String>,
}

/// What `memory_get` reads: a path, its line range, its corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetRequest {
    /// The file (a citation's range taken off).
    pub path: String,
    /// First line (1-based).
    pub from: Option<i64>,
    /// Number of lines.
    pub lines: Option<i64>,
    /// The corpus (`memory` by default).
    pub corpus: Corpus,
}

/// What to read for `path` (a plain path or a citation as `memory_search` returns it,
/// `memory/x.md#L3-L8` or `memory/x.md:3-8`) with `from` / `lines`; a citation with a
/// range given as well is refused, naming both.
pub fn get_request(
    path: &str,
    from: Option<i64>,
    lines: Option<i64>,
    corpus: Option<Corpus>,
) -> Result<GetRequest, String> {
    let corpus = corpus.unwrap_or(Corpus::Memory);
    let (path, from, lines) = match citation(path) {
        Some(_) if from.is_some() || lines.is_some() => {
            return Err(format!(
                "{path} names a line range already: drop from/lines, or the range"
            ))
        }
        Some((file, start, count)) => (file, Some(start), Some(count)),
        None => (path, from, lines),
    };
    Ok(GetRequest {
        path: path.to_string(),
        from,
        lines,
        corpus,
    })
}

impl GetArgs {
    /// What to read (see [`get_request`]).
    pub fn into_get(self) -> Result<GetRequest, String> {
        get_request(
            &self.path,
            self.from.map(|n| n.0 as i64),
            self.lines.map(|n| n.0 as i64),
            self.corpus.map(|c| c.0),
        )
    }
}

/// A citation as `search` prints it, `path#L3-L8` / `path#L3` / `path:3-8` / `path:3`, as
/// (path, first line, number of lines); `None` for a plain path.
pub fn citation(text: &str) -> Option<(&str, i64, i64)> {
    let (path, range) = match text.rsplit_once("#L") {
        Some((path, range)) => (path, range.replacen("-L", "-", 1)),
        None => {
            let (path, range) = text.rsplit_once(':')?;
            (path, range.to_string())
        }
    };
    if !path.ends_with(".md") {
        return None;
    }
    let (start, end) = match range.split_once('-') {
        Some((start, end)) => (start.parse::<i64>().ok()?, end.parse::<i64>().ok()?),
        None => {
            let line = range.parse::<i64>().ok()?;
            (line, line)
        }
    };
    (start >= 1 && end >= start).then_some((path, start, end - start + 1))
}

/// `memory_append`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendArgs {
    /// The note to keep: a line or a few (Markdown).
    pub text: String,
    /// The daily log to append to, YYYY-MM-DD (default: today, local time).
    #[schemars(regex(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"))]
    pub date: Option<String>,
    /// Which agent's memory: offered by the server only when it serves several.
    #[schemars(skip)]
    pub agent: Option<String>,
}

/// `memory_context`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// A private main session: MEMORY.md too (never in group or channel chats; default false).
    pub private: Option<Flag>,
    /// Which agent's memory: offered by the server only when it serves several.
    #[schemars(skip)]
    pub agent: Option<String>,
}

impl ContextArgs {
    /// Whether the session is a private main session (absent: not).
    pub fn private(&self) -> bool {
        self.private.is_some_and(|flag| flag.0)
    }
}

/// `sessions_search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionsSearchArgs {
    /// Words to find in past session messages (every word must occur; case and accents do
    /// not matter).
    pub query: String,
    /// Messages to return (default 10, at most 25).
    pub limit: Option<Count>,
    /// Which agent's memory: offered by the server only when it serves several.
    #[schemars(skip)]
    pub agent: Option<String>,
}

/// `memory_status`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    /// Which agent's memory: offered by the server only when it serves several.
    #[schemars(skip)]
    pub agent: Option<String>,
}

/// `T`'s JSON schema as a tool's input schema: an object of the arguments, with their
/// descriptions, bounds and choices, `required` and `additionalProperties: false`. Optional
/// arguments keep their plain type (a null is read as absent, and not every client reads
/// type lists).
pub fn schema<T: JsonSchema>() -> Map<String, Value> {
    let schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let Value::Object(mut object) = schema.to_value() else {
        return Map::new();
    };
    for key in ["$schema", "title", "description"] {
        object.remove(key);
    }
    // A tool without arguments still lists its (empty) properties: clients expect the key,
    // and the server adds `agent` there when it serves several agents.
    object
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for property in properties.values_mut() {
            let Value::Object(property) = property else {
                continue;
            };
            if let Some(Value::Array(types)) = property.get_mut("type") {
                types.retain(|t| t != "null");
                if let [one] = types.as_slice() {
                    let one = one.clone();
                    property.insert("type".into(), one);
                }
            }
            if let Some(Value::Array(names)) = property.get_mut("enum") {
                names.retain(|name| !name.is_null());
            }
        }
    }
    object
}

/// Reads a tool call's arguments as `T`; the error names the key (see the module docs).
pub fn parse<T: DeserializeOwned>(arguments: &Map<String, Value>) -> Result<T, String> {
    read::read(arguments)
}
