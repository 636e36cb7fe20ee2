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
//! * `agents.defaults.workspace` / `agents.list[i].workspace` name the workspace.
//! * `agents.defaults.compaction.{reserveTokensFloor, memoryFlush.*}` tune the memory flush.
//! * `memory.{backend, citations, qmd}` choose the backend and the citation mode; `memory.qmd`
//!   is kept as an opaque JSON object for the QMD sidecar.
//!
//! # Strictness
//! An OpenClaw config has many other sections (models, channels, gateway, …): they are ignored,
//! and so are the keys of `agents.defaults` / `agents.list[i]` / `compaction` that memoria does not
//! read. Inside `memorySearch` (defaults and every `agents.list` entry, whichever agent is being
//! resolved) and inside `memory`, an unknown key is an error. Every key memoria reads is type
//! checked. Errors name the full key path, e.g.
//! `agents.defaults.memorySearch.query.hybrid.vectorWeight: expected a number, got "high"`;
//! [`load_settings`] and [`ConfigError::in_file`] prefix the config file's path.
//!
//! # Values
//! * `null` is the same as an absent key (like JavaScript's `??`). So are JSON5's `NaN` and
//!   `Infinity`, which JSON cannot hold and therefore arrive as `null`.
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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------------
// Environment and paths
// ---------------------------------------------------------------------------------------------

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
        }
    }

    fn home_dir(&self) -> PathBuf {
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

fn expand_path(path: &Path, env: &Env) -> PathBuf {
    match path.to_str() {
        Some(s) => expand_home(s, env),
        None => path.to_path_buf(),
    }
}

/// Reads and parses the config file named by [`config_file`].
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
    resolve(&config, agent_id, env).map_err(|e| e.in_file(config_file(env).0))
}

/// Size of the candidate pool each side of hybrid search fetches (SPEC §5):
/// `min(200, max(1, maxResults × candidateMultiplier))`.
pub fn candidate_pool(max_results: usize, multiplier: usize) -> usize {
    max_results.saturating_mul(multiplier).clamp(1, 200)
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

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

    fn invalid(path: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::Invalid {
            path: path.to_string(),
            message: message.into(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------

/// Embedding provider (`memorySearch.provider`, `memorySearch.fallback`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Pick one (SPEC §7): local model if present, else OpenAI, else Gemini, else none.
    Auto,
    /// No embeddings: keyword-only search (memoria extension, `"none"`).
    None,
    /// EmbeddingGemma on candle.
    Local,
    /// OpenAI or an OpenAI-compatible endpoint.
    OpenAi,
    /// Google Gemini embeddings API.
    Gemini,
    /// Voyage AI (accepted; may be unsupported).
    Voyage,
    /// Mistral (accepted; may be unsupported).
    Mistral,
}

impl ProviderKind {
    /// The config spelling: `auto`, `none`, `local`, `openai`, `gemini`, `voyage`, `mistral`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Auto => "auto",
            ProviderKind::None => "none",
            ProviderKind::Local => "local",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Voyage => "voyage",
            ProviderKind::Mistral => "mistral",
        }
    }
}

/// The model a provider uses when `memorySearch.model` is unset (OpenClaw's defaults);
/// `None` for `auto` and `none`.
pub fn default_model(provider: ProviderKind) -> Option<&'static str> {
    match provider {
        ProviderKind::OpenAi => Some("text-embedding-3-small"),
        ProviderKind::Gemini => Some("gemini-embedding-001"),
        ProviderKind::Local => Some("embeddinggemma-300m"),
        ProviderKind::Voyage => Some("voyage-4-large"),
        ProviderKind::Mistral => Some("mistral-embed"),
        ProviderKind::Auto | ProviderKind::None => None,
    }
}

/// What gets indexed (`memorySearch.sources`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// `MEMORY.md`, `memory/**/*.md` and `extraPaths`.
    Memory,
    /// Session transcripts (experimental).
    Sessions,
}

impl Source {
    /// The config spelling: `memory` or `sessions`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Memory => "memory",
            Source::Sessions => "sessions",
        }
    }
}

/// How keyword and vector scores are combined (`query.hybrid.fusion`, a memoria extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fusion {
    /// `vectorWeight × vectorScore + textWeight × textScore` (the documented formula).
    Weighted,
    /// Reciprocal rank fusion.
    Rrf,
    /// Min/max-normalised scores, then the weighted sum.
    MinMax,
}

/// Which engine serves memory search (`memory.backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// memoria's own index.
    Builtin,
    /// The QMD sidecar, with memoria as the fallback.
    Qmd,
}

/// Whether snippets carry a `Source:` citation footer (`memory.citations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Citations {
    /// On outside group/channel contexts.
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl Citations {
    /// The config spelling: `auto`, `on`, `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            Citations::Auto => "auto",
            Citations::On => "on",
            Citations::Off => "off",
        }
    }

    /// Whether citations are shown: `on`, or `auto` outside group/channel chats.
    pub fn shown(self, group_context: bool) -> bool {
        match self {
            Citations::On => true,
            Citations::Auto => !group_context,
            Citations::Off => false,
        }
    }
}

/// The resolved memory settings of one agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The agent these settings are for.
    pub agent_id: String,
    /// The OpenClaw state directory ([`state_dir`]).
    pub state_dir: PathBuf,
    /// The agent's workspace: its `workspace` ?? `agents.defaults.workspace` ??
    /// `~/.openclaw/workspace`, `~` expanded (a relative path is left relative).
    pub workspace: PathBuf,
    /// `enabled`: false means no memory tools at all.
    pub enabled: bool,
    /// `provider` (unset = [`ProviderKind::Auto`]).
    pub provider: ProviderKind,
    /// `model` as configured; callers fall back to [`default_model`].
    pub model: Option<String>,
    /// `fallback`; `None` for `"none"` (the default).
    pub fallback: Option<ProviderKind>,
    /// Effective sources: sorted, deduplicated, never empty.
    pub sources: Vec<Source>,
    /// `extraPaths` as written (trimmed), defaults first, deduplicated.
    pub extra_paths: Vec<String>,
    /// `local.*`.
    pub local: LocalSettings,
    /// `remote.*`.
    pub remote: RemoteSettings,
    /// `store.*`.
    pub store: StoreSettings,
    /// `chunking.*`.
    pub chunking: ChunkingSettings,
    /// `sync.*`.
    pub sync: SyncSettings,
    /// `query.*`.
    pub query: QuerySettings,
    /// `cache.*`.
    pub cache: CacheSettings,
    /// `experimental.sessionMemory`.
    pub session_memory: bool,
    /// `memory.backend`.
    pub backend: Backend,
    /// `memory.qmd`, untouched.
    pub qmd: Option<Value>,
    /// `memory.citations`.
    pub citations: Citations,
    /// `agents.defaults.compaction.*`.
    pub compaction: CompactionSettings,
}

/// `memorySearch.local`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalSettings {
    /// `local.modelPath`: a model directory or `hf:owner/repo`.
    pub model_path: Option<String>,
    /// `local.modelCacheDir`.
    pub model_cache_dir: Option<String>,
}

/// `memorySearch.remote`. Its `Debug` output hides the API key and header values.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteSettings {
    /// `remote.baseUrl`.
    pub base_url: Option<String>,
    /// `remote.apiKey`.
    pub api_key: Option<String>,
    /// `remote.headers`, defaults merged with the agent's (agent wins).
    pub headers: BTreeMap<String, String>,
    /// `remote.batch`.
    pub batch: BatchSettings,
}

impl std::fmt::Debug for RemoteSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: BTreeMap<&str, &str> = self
            .headers
            .keys()
            .map(|k| (k.as_str(), "<redacted>"))
            .collect();
        f.debug_struct("RemoteSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &headers)
            .field("batch", &self.batch)
            .finish()
    }
}

/// `memorySearch.remote.batch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSettings {
    /// `enabled` (false).
    pub enabled: bool,
    /// `wait` (true).
    pub wait: bool,
    /// `concurrency` (2, at least 1).
    pub concurrency: usize,
    /// `pollIntervalMs` (2000).
    pub poll_interval_ms: u64,
    /// `timeoutMinutes` (60, at least 1).
    pub timeout_minutes: u64,
}

/// `memorySearch.store`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// The agent's index directory. Unset: `<stateDir>/memory/<agentId>/`. Configured:
    /// `{agentId}` and a leading `~` are expanded, a relative path is taken relative to the
    /// state dir, and a final `*.sqlite` / `*.db` file name is replaced by a directory named
    /// after its stem (`~/.openclaw/memory/{agentId}.sqlite` → `~/.openclaw/memory/main/`).
    pub dir: PathBuf,
    /// `store.vector.enabled` (true); false means exact in-process scan.
    pub vector_enabled: bool,
}

/// `memorySearch.chunking`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkingSettings {
    /// `tokens` (400, at least 1).
    pub tokens: usize,
    /// `overlap` (80, at most `tokens - 1`).
    pub overlap: usize,
}

/// `memorySearch.sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncSettings {
    /// `onSessionStart` (true).
    pub on_session_start: bool,
    /// `onSearch` (true).
    pub on_search: bool,
    /// `watch` (true).
    pub watch: bool,
    /// `watchDebounceMs` (1500).
    pub watch_debounce_ms: u64,
    /// `intervalMinutes` (0 = off).
    pub interval_minutes: u64,
    /// `sessions.*`.
    pub sessions: SessionSyncSettings,
}

/// `memorySearch.sync.sessions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSyncSettings {
    /// `deltaBytes` (100000).
    pub delta_bytes: u64,
    /// `deltaMessages` (50).
    pub delta_messages: u64,
}

/// `memorySearch.query`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuerySettings {
    /// `maxResults` (6, at least 1).
    pub max_results: usize,
    /// `minScore` (0.35, clamped to 0..=1).
    pub min_score: f32,
    /// `hybrid.*`.
    pub hybrid: HybridSettings,
}

/// `memorySearch.query.hybrid`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridSettings {
    /// `enabled` (true).
    pub enabled: bool,
    /// `vectorWeight`, normalised so that the two weights sum to 1 (0.7).
    pub vector_weight: f32,
    /// `textWeight`, normalised (0.3).
    pub text_weight: f32,
    /// `candidateMultiplier` (4, clamped to 1..=20).
    pub candidate_multiplier: usize,
    /// `fusion` (weighted).
    pub fusion: Fusion,
    /// `mmr.*`.
    pub mmr: MmrSettings,
    /// `temporalDecay.*`.
    pub temporal_decay: TemporalDecaySettings,
}

/// `memorySearch.query.hybrid.mmr`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MmrSettings {
    /// `enabled` (false).
    pub enabled: bool,
    /// `lambda` (0.7, clamped to 0..=1).
    pub lambda: f32,
}

/// `memorySearch.query.hybrid.temporalDecay`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemporalDecaySettings {
    /// `enabled` (false).
    pub enabled: bool,
    /// `halfLifeDays` (30; whole days, at least 1).
    pub half_life_days: f32,
}

/// `memorySearch.cache`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSettings {
    /// `enabled` (true).
    pub enabled: bool,
    /// `maxEntries` (50000, at least 1).
    pub max_entries: usize,
}

/// `agents.defaults.compaction`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionSettings {
    /// `reserveTokensFloor` (20000).
    pub reserve_tokens_floor: u64,
    /// `memoryFlush.*`.
    pub memory_flush: MemoryFlushSettings,
}

/// `agents.defaults.compaction.memoryFlush`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFlushSettings {
    /// `enabled` (true).
    pub enabled: bool,
    /// `softThresholdTokens` (4000).
    pub soft_threshold_tokens: u64,
    /// `systemPrompt` as configured; see [`DEFAULT_FLUSH_SYSTEM_PROMPT`].
    pub system_prompt: Option<String>,
    /// `prompt` as configured; see [`DEFAULT_FLUSH_PROMPT`].
    pub prompt: Option<String>,
}

/// The flush system prompt shown in OpenClaw's memory docs.
pub const DEFAULT_FLUSH_SYSTEM_PROMPT: &str =
    "Session nearing compaction. Store durable memories now.";
/// The flush user prompt shown in OpenClaw's memory docs (`YYYY-MM-DD` is substituted).
pub const DEFAULT_FLUSH_PROMPT: &str =
    "Write any lasting notes to memory/YYYY-MM-DD.md; reply with NO_REPLY if nothing to store.";

impl MemoryFlushSettings {
    /// The configured system prompt, else [`DEFAULT_FLUSH_SYSTEM_PROMPT`].
    pub fn system_prompt_or_default(&self) -> &str {
        self.system_prompt
            .as_deref()
            .unwrap_or(DEFAULT_FLUSH_SYSTEM_PROMPT)
    }

    /// The configured prompt, else [`DEFAULT_FLUSH_PROMPT`].
    pub fn prompt_or_default(&self) -> &str {
        self.prompt.as_deref().unwrap_or(DEFAULT_FLUSH_PROMPT)
    }
}

impl Settings {
    /// The settings of an empty config: every builtin default.
    pub fn builtin(agent_id: &str, env: &Env) -> Settings {
        finalize(&Parsed::default(), agent_id, env)
    }

    /// The model to embed with: `model`, else the provider's [`default_model`].
    pub fn effective_model(&self) -> Option<&str> {
        self.model
            .as_deref()
            .or_else(|| default_model(self.provider))
    }
}

/// Resolves the memory settings of `agent_id` from a parsed OpenClaw config.
///
/// Pure: paths come from `env`, nothing is read from disk or the process environment.
/// Errors are [`ConfigError::Invalid`] with the full key path.
pub fn resolve(config: &Value, agent_id: &str, env: &Env) -> Result<Settings, ConfigError> {
    let parsed = parse(config, agent_id)?;
    Ok(finalize(&parsed, agent_id, env))
}

// ---------------------------------------------------------------------------------------------
// Parsing: a typed walker over serde_json::Value
// ---------------------------------------------------------------------------------------------

/// A value and its key path, for path-precise errors.
#[derive(Clone)]
struct Node<'a> {
    path: String,
    value: &'a Value,
}

impl<'a> Node<'a> {
    fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn type_error(&self, expected: &str) -> ConfigError {
        ConfigError::invalid(
            &self.path,
            format!("expected {expected}, got {}", describe(self.value)),
        )
    }

    fn as_object(&self) -> Result<&'a Map<String, Value>, ConfigError> {
        self.value
            .as_object()
            .ok_or_else(|| self.type_error("an object"))
    }

    /// The child `key`; `None` when absent or `null`. `self` must be an object.
    fn child(&self, key: &str) -> Result<Option<Node<'a>>, ConfigError> {
        Ok(match self.as_object()?.get(key) {
            None | Some(Value::Null) => None,
            Some(value) => Some(Node {
                path: self.key_path(key),
                value,
            }),
        })
    }

    /// Rejects keys not in `allowed` (the first one, in key order).
    fn check_keys(&self, allowed: &[&str]) -> Result<(), ConfigError> {
        match self
            .as_object()?
            .keys()
            .find(|k| !allowed.contains(&k.as_str()))
        {
            Some(k) => Err(ConfigError::invalid(&self.key_path(k), "unknown key")),
            None => Ok(()),
        }
    }

    /// The object `key`, type checked; no key check.
    fn object(&self, key: &str) -> Result<Option<Node<'a>>, ConfigError> {
        match self.child(key)? {
            Some(node) => {
                node.as_object()?;
                Ok(Some(node))
            }
            None => Ok(None),
        }
    }

    /// The object `key`, type checked, whose keys must all be in `allowed`.
    fn section(&self, key: &str, allowed: &[&str]) -> Result<Option<Node<'a>>, ConfigError> {
        let node = self.object(key)?;
        if let Some(node) = &node {
            node.check_keys(allowed)?;
        }
        Ok(node)
    }

    fn get_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        self.child(key)?
            .map(|n| n.value.as_bool().ok_or_else(|| n.type_error("a boolean")))
            .transpose()
    }

    fn get_f64(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        self.child(key)?
            .map(|n| n.value.as_f64().ok_or_else(|| n.type_error("a number")))
            .transpose()
    }

    /// An integer; fractions are floored, out-of-range values saturate.
    fn get_int(&self, key: &str) -> Result<Option<i64>, ConfigError> {
        self.child(key)?
            .map(|n| match n.value {
                Value::Number(num) => Ok(num
                    .as_i64()
                    .or_else(|| num.as_u64().map(|_| i64::MAX))
                    .unwrap_or_else(|| num.as_f64().unwrap_or(0.0).floor() as i64)),
                _ => Err(n.type_error("an integer")),
            })
            .transpose()
    }

    fn get_string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        self.child(key)?.map(|n| n.string()).transpose()
    }

    /// A string, `None` when it is empty or blank.
    fn get_nonblank(&self, key: &str) -> Result<Option<String>, ConfigError> {
        Ok(self.get_string(key)?.filter(|s| !s.trim().is_empty()))
    }

    fn string(&self) -> Result<String, ConfigError> {
        self.value
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.type_error("a string"))
    }

    fn choice<T: Copy>(&self, choices: &[(&str, T)]) -> Result<T, ConfigError> {
        let expected = || {
            let names: Vec<String> = choices.iter().map(|(n, _)| format!("\"{n}\"")).collect();
            format!("one of {}", names.join(", "))
        };
        let s = self
            .value
            .as_str()
            .ok_or_else(|| self.type_error(&expected()))?;
        choices
            .iter()
            .find(|(name, _)| *name == s)
            .map(|(_, v)| *v)
            .ok_or_else(|| self.type_error(&expected()))
    }

    fn get_choice<T: Copy>(
        &self,
        key: &str,
        choices: &[(&str, T)],
    ) -> Result<Option<T>, ConfigError> {
        self.child(key)?.map(|n| n.choice(choices)).transpose()
    }

    /// The elements of the array `key`, each with its `[i]` path.
    fn get_array(&self, key: &str) -> Result<Option<Vec<Node<'a>>>, ConfigError> {
        let Some(node) = self.child(key)? else {
            return Ok(None);
        };
        let items = node
            .value
            .as_array()
            .ok_or_else(|| node.type_error("an array"))?;
        Ok(Some(
            items
                .iter()
                .enumerate()
                .map(|(i, value)| Node {
                    path: format!("{}[{i}]", node.path),
                    value,
                })
                .collect(),
        ))
    }

    fn get_string_array(&self, key: &str) -> Result<Option<Vec<String>>, ConfigError> {
        self.get_array(key)?
            .map(|items| items.iter().map(Node::string).collect())
            .transpose()
    }

    fn get_string_map(&self, key: &str) -> Result<Option<BTreeMap<String, String>>, ConfigError> {
        let Some(node) = self.object(key)? else {
            return Ok(None);
        };
        let mut map = BTreeMap::new();
        for (k, value) in node.as_object()? {
            let entry = Node {
                path: node.key_path(k),
                value,
            };
            map.insert(k.clone(), entry.string()?);
        }
        Ok(Some(map))
    }
}

/// How a value appears in an error message: scalars as JSON (long strings shortened),
/// containers by kind.
fn describe(value: &Value) -> String {
    const MAX_CHARS: usize = 40;
    match value {
        Value::String(s) if s.chars().count() > MAX_CHARS => {
            let short: String = s.chars().take(MAX_CHARS).collect();
            format!("{}…", Value::String(short))
        }
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
        other => other.to_string(),
    }
}

const PROVIDERS: &[(&str, ProviderKind)] = &[
    ("auto", ProviderKind::Auto),
    ("none", ProviderKind::None),
    ("local", ProviderKind::Local),
    ("openai", ProviderKind::OpenAi),
    ("gemini", ProviderKind::Gemini),
    ("voyage", ProviderKind::Voyage),
    ("mistral", ProviderKind::Mistral),
];

const FALLBACKS: &[(&str, Option<ProviderKind>)] = &[
    ("none", None),
    ("openai", Some(ProviderKind::OpenAi)),
    ("gemini", Some(ProviderKind::Gemini)),
    ("local", Some(ProviderKind::Local)),
    ("voyage", Some(ProviderKind::Voyage)),
    ("mistral", Some(ProviderKind::Mistral)),
];

const SOURCES: &[(&str, Source)] = &[("memory", Source::Memory), ("sessions", Source::Sessions)];

const FUSIONS: &[(&str, Fusion)] = &[
    ("weighted", Fusion::Weighted),
    ("rrf", Fusion::Rrf),
    ("minmax", Fusion::MinMax),
];

const BACKENDS: &[(&str, Backend)] = &[("builtin", Backend::Builtin), ("qmd", Backend::Qmd)];

const CITATIONS: &[(&str, Citations)] = &[
    ("auto", Citations::Auto),
    ("on", Citations::On),
    ("off", Citations::Off),
];

/// One `memorySearch` object as written: `None` / empty = not set at this level.
#[derive(Debug, Default)]
struct Layer {
    enabled: Option<bool>,
    provider: Option<ProviderKind>,
    model: Option<String>,
    fallback: Option<Option<ProviderKind>>,
    sources: Option<Vec<Source>>,
    extra_paths: Vec<String>,
    local_model_path: Option<String>,
    local_model_cache_dir: Option<String>,
    remote_base_url: Option<String>,
    remote_api_key: Option<String>,
    remote_headers: BTreeMap<String, String>,
    batch_enabled: Option<bool>,
    batch_wait: Option<bool>,
    batch_concurrency: Option<i64>,
    batch_poll_interval_ms: Option<i64>,
    batch_timeout_minutes: Option<i64>,
    store_path: Option<String>,
    vector_enabled: Option<bool>,
    chunk_tokens: Option<i64>,
    chunk_overlap: Option<i64>,
    sync_on_session_start: Option<bool>,
    sync_on_search: Option<bool>,
    sync_watch: Option<bool>,
    sync_watch_debounce_ms: Option<i64>,
    sync_interval_minutes: Option<i64>,
    sync_delta_bytes: Option<i64>,
    sync_delta_messages: Option<i64>,
    max_results: Option<i64>,
    min_score: Option<f64>,
    hybrid_enabled: Option<bool>,
    vector_weight: Option<f64>,
    text_weight: Option<f64>,
    candidate_multiplier: Option<i64>,
    fusion: Option<Fusion>,
    mmr_enabled: Option<bool>,
    mmr_lambda: Option<f64>,
    decay_enabled: Option<bool>,
    decay_half_life_days: Option<i64>,
    cache_enabled: Option<bool>,
    cache_max_entries: Option<i64>,
    session_memory: Option<bool>,
}

/// Everything read from the config before defaults and clamps are applied.
#[derive(Debug, Default)]
struct Parsed {
    defaults: Layer,
    agent: Layer,
    workspace: Option<String>,
    backend: Option<Backend>,
    citations: Option<Citations>,
    qmd: Option<Value>,
    reserve_tokens_floor: Option<i64>,
    flush_enabled: Option<bool>,
    flush_soft_threshold_tokens: Option<i64>,
    flush_system_prompt: Option<String>,
    flush_prompt: Option<String>,
}

fn parse(config: &Value, agent_id: &str) -> Result<Parsed, ConfigError> {
    let root = Node {
        path: String::new(),
        value: config,
    };
    if !config.is_object() {
        return Err(ConfigError::invalid(
            "(top level)",
            format!("expected an object, got {}", describe(config)),
        ));
    }
    let mut parsed = Parsed::default();

    if let Some(memory) = root.section("memory", &["backend", "citations", "qmd"])? {
        parsed.backend = memory.get_choice("backend", BACKENDS)?;
        parsed.citations = memory.get_choice("citations", CITATIONS)?;
        parsed.qmd = memory.object("qmd")?.map(|n| n.value.clone());
    }

    let Some(agents) = root.object("agents")? else {
        return Ok(parsed);
    };
    let mut default_workspace = None;
    if let Some(defaults) = agents.object("defaults")? {
        default_workspace = defaults.get_nonblank("workspace")?;
        if let Some(ms) = defaults.child("memorySearch")? {
            parsed.defaults = parse_layer(&ms)?;
        }
        if let Some(compaction) = defaults.object("compaction")? {
            parsed.reserve_tokens_floor = compaction.get_int("reserveTokensFloor")?;
            if let Some(flush) = compaction.object("memoryFlush")? {
                parsed.flush_enabled = flush.get_bool("enabled")?;
                parsed.flush_soft_threshold_tokens = flush.get_int("softThresholdTokens")?;
                parsed.flush_system_prompt = flush.get_nonblank("systemPrompt")?;
                parsed.flush_prompt = flush.get_nonblank("prompt")?;
            }
        }
    }

    // Every entry is validated, so a typo in one agent's block is reported whichever agent runs.
    let mut found = false;
    for entry in agents.get_array("list")?.unwrap_or_default() {
        entry.as_object()?;
        let id = entry.get_string("id")?;
        let workspace = entry.get_nonblank("workspace")?;
        let layer = match entry.child("memorySearch")? {
            Some(ms) => parse_layer(&ms)?,
            None => Layer::default(),
        };
        if !found && id.as_deref() == Some(agent_id) {
            found = true;
            parsed.agent = layer;
            parsed.workspace = workspace;
        }
    }
    parsed.workspace = parsed.workspace.or(default_workspace);
    Ok(parsed)
}

/// Parses one `memorySearch` object (strict: unknown keys are errors).
fn parse_layer(ms: &Node) -> Result<Layer, ConfigError> {
    ms.check_keys(&[
        "enabled",
        "provider",
        "model",
        "fallback",
        "sources",
        "extraPaths",
        "experimental",
        "local",
        "remote",
        "store",
        "chunking",
        "sync",
        "query",
        "cache",
    ])?;
    let mut l = Layer {
        enabled: ms.get_bool("enabled")?,
        provider: ms.get_choice("provider", PROVIDERS)?,
        model: ms.get_nonblank("model")?,
        fallback: ms.get_choice("fallback", FALLBACKS)?,
        ..Layer::default()
    };
    if let Some(items) = ms.get_array("sources")? {
        l.sources = Some(
            items
                .iter()
                .map(|n| n.choice(SOURCES))
                .collect::<Result<_, _>>()?,
        );
    }
    l.extra_paths = ms.get_string_array("extraPaths")?.unwrap_or_default();
    if let Some(exp) = ms.section("experimental", &["sessionMemory"])? {
        l.session_memory = exp.get_bool("sessionMemory")?;
    }
    if let Some(local) = ms.section("local", &["modelPath", "modelCacheDir"])? {
        l.local_model_path = local.get_nonblank("modelPath")?;
        l.local_model_cache_dir = local.get_nonblank("modelCacheDir")?;
    }
    if let Some(remote) = ms.section("remote", &["baseUrl", "apiKey", "headers", "batch"])? {
        l.remote_base_url = remote.get_nonblank("baseUrl")?;
        l.remote_api_key = remote.get_nonblank("apiKey")?;
        l.remote_headers = remote.get_string_map("headers")?.unwrap_or_default();
        let batch_keys = [
            "enabled",
            "wait",
            "concurrency",
            "pollIntervalMs",
            "timeoutMinutes",
        ];
        if let Some(batch) = remote.section("batch", &batch_keys)? {
            l.batch_enabled = batch.get_bool("enabled")?;
            l.batch_wait = batch.get_bool("wait")?;
            l.batch_concurrency = batch.get_int("concurrency")?;
            l.batch_poll_interval_ms = batch.get_int("pollIntervalMs")?;
            l.batch_timeout_minutes = batch.get_int("timeoutMinutes")?;
        }
    }
    if let Some(store) = ms.section("store", &["driver", "path", "vector"])? {
        // `driver` exists in OpenClaw's schema with the single value "sqlite"; ignored.
        store.get_choice("driver", &[("sqlite", ())])?;
        l.store_path = store.get_nonblank("path")?;
        if let Some(vector) = store.section("vector", &["enabled", "extensionPath"])? {
            l.vector_enabled = vector.get_bool("enabled")?;
            vector.get_string("extensionPath")?; // sqlite-vec only; ignored
        }
    }
    if let Some(chunking) = ms.section("chunking", &["tokens", "overlap"])? {
        l.chunk_tokens = chunking.get_int("tokens")?;
        l.chunk_overlap = chunking.get_int("overlap")?;
    }
    let sync_keys = [
        "onSessionStart",
        "onSearch",
        "watch",
        "watchDebounceMs",
        "intervalMinutes",
        "sessions",
    ];
    if let Some(sync) = ms.section("sync", &sync_keys)? {
        l.sync_on_session_start = sync.get_bool("onSessionStart")?;
        l.sync_on_search = sync.get_bool("onSearch")?;
        l.sync_watch = sync.get_bool("watch")?;
        l.sync_watch_debounce_ms = sync.get_int("watchDebounceMs")?;
        l.sync_interval_minutes = sync.get_int("intervalMinutes")?;
        if let Some(sessions) = sync.section("sessions", &["deltaBytes", "deltaMessages"])? {
            l.sync_delta_bytes = sessions.get_int("deltaBytes")?;
            l.sync_delta_messages = sessions.get_int("deltaMessages")?;
        }
    }
    if let Some(query) = ms.section("query", &["maxResults", "minScore", "hybrid"])? {
        l.max_results = query.get_int("maxResults")?;
        l.min_score = query.get_f64("minScore")?;
        let hybrid_keys = [
            "enabled",
            "vectorWeight",
            "textWeight",
            "candidateMultiplier",
            "fusion",
            "mmr",
            "temporalDecay",
        ];
        if let Some(hybrid) = query.section("hybrid", &hybrid_keys)? {
            l.hybrid_enabled = hybrid.get_bool("enabled")?;
            l.vector_weight = hybrid.get_f64("vectorWeight")?;
            l.text_weight = hybrid.get_f64("textWeight")?;
            l.candidate_multiplier = hybrid.get_int("candidateMultiplier")?;
            l.fusion = hybrid.get_choice("fusion", FUSIONS)?;
            if let Some(mmr) = hybrid.section("mmr", &["enabled", "lambda"])? {
                l.mmr_enabled = mmr.get_bool("enabled")?;
                l.mmr_lambda = mmr.get_f64("lambda")?;
            }
            if let Some(decay) = hybrid.section("temporalDecay", &["enabled", "halfLifeDays"])? {
                l.decay_enabled = decay.get_bool("enabled")?;
                l.decay_half_life_days = decay.get_int("halfLifeDays")?;
            }
        }
    }
    if let Some(cache) = ms.section("cache", &["enabled", "maxEntries"])? {
        l.cache_enabled = cache.get_bool("enabled")?;
        l.cache_max_entries = cache.get_int("maxEntries")?;
    }
    Ok(l)
}

// ---------------------------------------------------------------------------------------------
// Resolution: defaults, merge, clamps
// ---------------------------------------------------------------------------------------------

/// `agent ?? defaults` for one leaf.
fn pick<T: Clone>(p: &Parsed, leaf: impl Fn(&Layer) -> &Option<T>) -> Option<T> {
    leaf(&p.agent).clone().or_else(|| leaf(&p.defaults).clone())
}

/// An integer leaf, clamped to at least `min`.
fn int_at_least(v: Option<i64>, builtin: i64, min: i64) -> u64 {
    u64::try_from(v.unwrap_or(builtin).max(min)).unwrap_or(0)
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

fn clamp01(v: f64) -> f64 {
    v.clamp(0.0, 1.0)
}

fn finalize(p: &Parsed, agent_id: &str, env: &Env) -> Settings {
    let state_dir = state_dir(env);

    let session_memory = pick(p, |l| &l.session_memory).unwrap_or(false);
    let mut sources: Vec<Source> = pick(p, |l| &l.sources)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| *s != Source::Sessions || session_memory)
        .collect();
    sources.sort();
    sources.dedup();
    if sources.is_empty() {
        sources.push(Source::Memory);
    }

    let mut extra_paths: Vec<String> = Vec::new();
    for path in p.defaults.extra_paths.iter().chain(&p.agent.extra_paths) {
        let path = path.trim();
        if !path.is_empty() && !extra_paths.iter().any(|seen| seen == path) {
            extra_paths.push(path.to_string());
        }
    }

    let mut headers = p.defaults.remote_headers.clone();
    headers.extend(p.agent.remote_headers.clone());

    let tokens = int_at_least(pick(p, |l| &l.chunk_tokens), 400, 1);
    let overlap = int_at_least(pick(p, |l| &l.chunk_overlap), 80, 0).min(tokens - 1);

    let vector_weight = clamp01(pick(p, |l| &l.vector_weight).unwrap_or(0.7));
    let text_weight = clamp01(pick(p, |l| &l.text_weight).unwrap_or(0.3));
    let sum = vector_weight + text_weight;
    let (vector_weight, text_weight) = if sum > 0.0 {
        (vector_weight / sum, text_weight / sum)
    } else {
        (0.7, 0.3)
    };

    let workspace = match &p.workspace {
        Some(ws) => expand_home(ws, env),
        None => env.home_dir().join(".openclaw").join("workspace"),
    };

    Settings {
        agent_id: agent_id.to_string(),
        workspace,
        enabled: pick(p, |l| &l.enabled).unwrap_or(true),
        provider: pick(p, |l| &l.provider).unwrap_or(ProviderKind::Auto),
        model: pick(p, |l| &l.model),
        fallback: pick(p, |l| &l.fallback).unwrap_or(None),
        sources,
        extra_paths,
        local: LocalSettings {
            model_path: pick(p, |l| &l.local_model_path),
            model_cache_dir: pick(p, |l| &l.local_model_cache_dir),
        },
        remote: RemoteSettings {
            base_url: pick(p, |l| &l.remote_base_url),
            api_key: pick(p, |l| &l.remote_api_key),
            headers,
            batch: BatchSettings {
                enabled: pick(p, |l| &l.batch_enabled).unwrap_or(false),
                wait: pick(p, |l| &l.batch_wait).unwrap_or(true),
                concurrency: to_usize(int_at_least(pick(p, |l| &l.batch_concurrency), 2, 1)),
                poll_interval_ms: int_at_least(pick(p, |l| &l.batch_poll_interval_ms), 2000, 0),
                timeout_minutes: int_at_least(pick(p, |l| &l.batch_timeout_minutes), 60, 1),
            },
        },
        store: StoreSettings {
            dir: store_dir(
                pick(p, |l| &l.store_path).as_deref(),
                agent_id,
                &state_dir,
                env,
            ),
            vector_enabled: pick(p, |l| &l.vector_enabled).unwrap_or(true),
        },
        chunking: ChunkingSettings {
            tokens: to_usize(tokens),
            overlap: to_usize(overlap),
        },
        sync: SyncSettings {
            on_session_start: pick(p, |l| &l.sync_on_session_start).unwrap_or(true),
            on_search: pick(p, |l| &l.sync_on_search).unwrap_or(true),
            watch: pick(p, |l| &l.sync_watch).unwrap_or(true),
            watch_debounce_ms: int_at_least(pick(p, |l| &l.sync_watch_debounce_ms), 1500, 0),
            interval_minutes: int_at_least(pick(p, |l| &l.sync_interval_minutes), 0, 0),
            sessions: SessionSyncSettings {
                delta_bytes: int_at_least(pick(p, |l| &l.sync_delta_bytes), 100_000, 0),
                delta_messages: int_at_least(pick(p, |l| &l.sync_delta_messages), 50, 0),
            },
        },
        query: QuerySettings {
            max_results: to_usize(int_at_least(pick(p, |l| &l.max_results), 6, 1)),
            min_score: clamp01(pick(p, |l| &l.min_score).unwrap_or(0.35)) as f32,
            hybrid: HybridSettings {
                enabled: pick(p, |l| &l.hybrid_enabled).unwrap_or(true),
                vector_weight: vector_weight as f32,
                text_weight: text_weight as f32,
                candidate_multiplier: to_usize(
                    int_at_least(pick(p, |l| &l.candidate_multiplier), 4, 1).min(20),
                ),
                fusion: pick(p, |l| &l.fusion).unwrap_or(Fusion::Weighted),
                mmr: MmrSettings {
                    enabled: pick(p, |l| &l.mmr_enabled).unwrap_or(false),
                    lambda: clamp01(pick(p, |l| &l.mmr_lambda).unwrap_or(0.7)) as f32,
                },
                temporal_decay: TemporalDecaySettings {
                    enabled: pick(p, |l| &l.decay_enabled).unwrap_or(false),
                    half_life_days: int_at_least(pick(p, |l| &l.decay_half_life_days), 30, 1)
                        as f32,
                },
            },
        },
        cache: CacheSettings {
            enabled: pick(p, |l| &l.cache_enabled).unwrap_or(true),
            max_entries: to_usize(int_at_least(pick(p, |l| &l.cache_max_entries), 50_000, 1)),
        },
        session_memory,
        backend: p.backend.unwrap_or(Backend::Builtin),
        qmd: p.qmd.clone(),
        citations: p.citations.unwrap_or(Citations::Auto),
        compaction: CompactionSettings {
            reserve_tokens_floor: int_at_least(p.reserve_tokens_floor, 20_000, 0),
            memory_flush: MemoryFlushSettings {
                enabled: p.flush_enabled.unwrap_or(true),
                soft_threshold_tokens: int_at_least(p.flush_soft_threshold_tokens, 4000, 0),
                system_prompt: p.flush_system_prompt.clone(),
                prompt: p.flush_prompt.clone(),
            },
        },
        state_dir,
    }
}

/// See [`StoreSettings::dir`].
fn store_dir(raw: Option<&str>, agent_id: &str, state_dir: &Path, env: &Env) -> PathBuf {
    let Some(raw) = raw else {
        return state_dir.join("memory").join(agent_id);
    };
    let mut dir = expand_home(&raw.replace("{agentId}", agent_id), env);
    if dir.is_relative() {
        dir = state_dir.join(dir);
    }
    let is_db_file = dir
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("sqlite") || e.eq_ignore_ascii_case("db"));
    if is_db_file {
        if let Some(stem) = dir.file_stem().map(|s| s.to_os_string()) {
            dir.set_file_name(stem);
        }
    }
    dir
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env() -> Env {
        Env {
            home: Some(PathBuf::from("/home/u")),
            state_dir: None,
            config_path: None,
        }
    }

    fn parse5(text: &str) -> Value {
        parse_config_text(text, Path::new("test.json5")).unwrap()
    }

    fn resolve_str(text: &str, agent: &str) -> Result<Settings, ConfigError> {
        resolve(&parse5(text), agent, &env())
    }

    /// Settings for agent `main` with `ms` as `agents.defaults.memorySearch`.
    fn with_ms(ms: &str) -> Settings {
        let text = format!("{{agents: {{defaults: {{memorySearch: {ms}}}}}}}");
        resolve_str(&text, "main").unwrap_or_else(|e| panic!("{ms}: {e}"))
    }

    fn err(text: &str, agent: &str) -> String {
        match resolve_str(text, agent) {
            Ok(_) => panic!("expected an error for {text}"),
            Err(e) => e.to_string(),
        }
    }

    type Getter = fn(&Settings) -> String;

    macro_rules! get {
        ($($field:tt)+) => {{
            let f: Getter = |s| format!("{:?}", s.$($field)+);
            f
        }};
    }

    /// One row per key: the builtin default, then each clamp or normalisation.
    #[test]
    fn keys_defaults_and_clamps() {
        let rows: &[(&str, Getter, &str)] = &[
            ("{}", get!(enabled), "true"),
            ("{enabled: false}", get!(enabled), "false"),
            ("{}", get!(provider), "Auto"),
            ("{provider: 'auto'}", get!(provider), "Auto"),
            ("{provider: 'none'}", get!(provider), "None"),
            ("{provider: 'local'}", get!(provider), "Local"),
            ("{provider: 'openai'}", get!(provider), "OpenAi"),
            ("{provider: 'gemini'}", get!(provider), "Gemini"),
            ("{provider: 'voyage'}", get!(provider), "Voyage"),
            ("{provider: 'mistral'}", get!(provider), "Mistral"),
            ("{}", get!(model), "None"),
            ("{model: 'm1'}", get!(model), "Some(\"m1\")"),
            ("{model: '  '}", get!(model), "None"),
            ("{}", get!(fallback), "None"),
            ("{fallback: 'none'}", get!(fallback), "None"),
            ("{fallback: 'openai'}", get!(fallback), "Some(OpenAi)"),
            ("{fallback: 'gemini'}", get!(fallback), "Some(Gemini)"),
            ("{fallback: 'local'}", get!(fallback), "Some(Local)"),
            ("{fallback: 'voyage'}", get!(fallback), "Some(Voyage)"),
            ("{fallback: 'mistral'}", get!(fallback), "Some(Mistral)"),
            ("{}", get!(sources), "[Memory]"),
            ("{sources: []}", get!(sources), "[Memory]"),
            ("{sources: ['sessions']}", get!(sources), "[Memory]"),
            ("{sources: ['sessions', 'memory']}", get!(sources), "[Memory]"),
            ("{sources: ['sessions', 'memory', 'memory'], experimental: {sessionMemory: true}}", get!(sources), "[Memory, Sessions]"),
            ("{sources: ['sessions'], experimental: {sessionMemory: true}}", get!(sources), "[Sessions]"),
            ("{experimental: {sessionMemory: true}}", get!(sources), "[Memory]"),
            ("{}", get!(session_memory), "false"),
            ("{experimental: {sessionMemory: true}}", get!(session_memory), "true"),
            ("{}", get!(extra_paths), "[]"),
            ("{extraPaths: [' ../a ', '', 'b', '../a']}", get!(extra_paths), "[\"../a\", \"b\"]"),
            ("{}", get!(local), "LocalSettings { model_path: None, model_cache_dir: None }"),
            ("{local: {modelPath: 'hf:o/r', modelCacheDir: '~/c'}}", get!(local), "LocalSettings { model_path: Some(\"hf:o/r\"), model_cache_dir: Some(\"~/c\") }"),
            ("{}", get!(remote.base_url), "None"),
            ("{remote: {baseUrl: 'https://x/v1/'}}", get!(remote.base_url), "Some(\"https://x/v1/\")"),
            ("{}", get!(remote.api_key), "None"),
            ("{remote: {apiKey: 'k'}}", get!(remote.api_key), "Some(\"k\")"),
            ("{}", get!(remote.headers), "{}"),
            ("{remote: {headers: {'X-A': '1'}}}", get!(remote.headers), "{\"X-A\": \"1\"}"),
            ("{}", get!(remote.batch), "BatchSettings { enabled: false, wait: true, concurrency: 2, poll_interval_ms: 2000, timeout_minutes: 60 }"),
            ("{remote: {batch: {enabled: true, wait: false, concurrency: 5, pollIntervalMs: 10, timeoutMinutes: 3}}}", get!(remote.batch), "BatchSettings { enabled: true, wait: false, concurrency: 5, poll_interval_ms: 10, timeout_minutes: 3 }"),
            ("{remote: {batch: {concurrency: 0, pollIntervalMs: -5, timeoutMinutes: -1}}}", get!(remote.batch), "BatchSettings { enabled: false, wait: true, concurrency: 1, poll_interval_ms: 0, timeout_minutes: 1 }"),
            ("{}", get!(store.vector_enabled), "true"),
            ("{store: {vector: {enabled: false, extensionPath: '/x/vec0.so'}}}", get!(store.vector_enabled), "false"),
            ("{store: {driver: 'sqlite'}}", get!(store.vector_enabled), "true"),
            ("{}", get!(chunking), "ChunkingSettings { tokens: 400, overlap: 80 }"),
            ("{chunking: {tokens: 200, overlap: 20}}", get!(chunking), "ChunkingSettings { tokens: 200, overlap: 20 }"),
            ("{chunking: {tokens: 3.0}}", get!(chunking), "ChunkingSettings { tokens: 3, overlap: 2 }"),
            ("{chunking: {tokens: 100.9}}", get!(chunking.tokens), "100"),
            ("{chunking: {tokens: 0}}", get!(chunking), "ChunkingSettings { tokens: 1, overlap: 0 }"),
            ("{chunking: {tokens: -7}}", get!(chunking), "ChunkingSettings { tokens: 1, overlap: 0 }"),
            ("{chunking: {tokens: 50, overlap: 50}}", get!(chunking), "ChunkingSettings { tokens: 50, overlap: 49 }"),
            ("{chunking: {overlap: -3}}", get!(chunking), "ChunkingSettings { tokens: 400, overlap: 0 }"),
            ("{}", get!(sync.on_session_start), "true"),
            ("{sync: {onSessionStart: false}}", get!(sync.on_session_start), "false"),
            ("{}", get!(sync.on_search), "true"),
            ("{sync: {onSearch: false}}", get!(sync.on_search), "false"),
            ("{}", get!(sync.watch), "true"),
            ("{sync: {watch: false}}", get!(sync.watch), "false"),
            ("{}", get!(sync.watch_debounce_ms), "1500"),
            ("{sync: {watchDebounceMs: 250}}", get!(sync.watch_debounce_ms), "250"),
            ("{sync: {watchDebounceMs: -1}}", get!(sync.watch_debounce_ms), "0"),
            ("{}", get!(sync.interval_minutes), "0"),
            ("{sync: {intervalMinutes: 15}}", get!(sync.interval_minutes), "15"),
            ("{}", get!(sync.sessions), "SessionSyncSettings { delta_bytes: 100000, delta_messages: 50 }"),
            ("{sync: {sessions: {deltaBytes: 10, deltaMessages: -2}}}", get!(sync.sessions), "SessionSyncSettings { delta_bytes: 10, delta_messages: 0 }"),
            ("{}", get!(query.max_results), "6"),
            ("{query: {maxResults: 12}}", get!(query.max_results), "12"),
            ("{query: {maxResults: 0}}", get!(query.max_results), "1"),
            ("{query: {maxResults: -4}}", get!(query.max_results), "1"),
            ("{}", get!(query.min_score), "0.35"),
            ("{query: {minScore: 0.5}}", get!(query.min_score), "0.5"),
            ("{query: {minScore: 1.5}}", get!(query.min_score), "1.0"),
            ("{query: {minScore: -0.2}}", get!(query.min_score), "0.0"),
            ("{}", get!(query.hybrid.enabled), "true"),
            ("{query: {hybrid: {enabled: false}}}", get!(query.hybrid.enabled), "false"),
            ("{}", get!(query.hybrid.vector_weight), "0.7"),
            ("{}", get!(query.hybrid.text_weight), "0.3"),
            ("{query: {hybrid: {vectorWeight: 0.5, textWeight: 0.5}}}", get!(query.hybrid.vector_weight), "0.5"),
            ("{query: {hybrid: {vectorWeight: 1, textWeight: 1}}}", get!(query.hybrid.text_weight), "0.5"),
            ("{query: {hybrid: {vectorWeight: 0.3, textWeight: 0.1}}}", get!(query.hybrid.vector_weight), "0.75"),
            ("{query: {hybrid: {vectorWeight: 0.3, textWeight: 0.1}}}", get!(query.hybrid.text_weight), "0.25"),
            ("{query: {hybrid: {vectorWeight: 5, textWeight: -1}}}", get!(query.hybrid.vector_weight), "1.0"),
            ("{query: {hybrid: {vectorWeight: 5, textWeight: -1}}}", get!(query.hybrid.text_weight), "0.0"),
            ("{query: {hybrid: {vectorWeight: 0, textWeight: 0}}}", get!(query.hybrid.vector_weight), "0.7"),
            ("{query: {hybrid: {vectorWeight: 0, textWeight: 0}}}", get!(query.hybrid.text_weight), "0.3"),
            ("{query: {hybrid: {vectorWeight: 0}}}", get!(query.hybrid.text_weight), "1.0"),
            ("{}", get!(query.hybrid.candidate_multiplier), "4"),
            ("{query: {hybrid: {candidateMultiplier: 8}}}", get!(query.hybrid.candidate_multiplier), "8"),
            ("{query: {hybrid: {candidateMultiplier: 2.9}}}", get!(query.hybrid.candidate_multiplier), "2"),
            ("{query: {hybrid: {candidateMultiplier: 0}}}", get!(query.hybrid.candidate_multiplier), "1"),
            ("{query: {hybrid: {candidateMultiplier: 0.5}}}", get!(query.hybrid.candidate_multiplier), "1"),
            ("{query: {hybrid: {candidateMultiplier: 99}}}", get!(query.hybrid.candidate_multiplier), "20"),
            ("{}", get!(query.hybrid.fusion), "Weighted"),
            ("{query: {hybrid: {fusion: 'weighted'}}}", get!(query.hybrid.fusion), "Weighted"),
            ("{query: {hybrid: {fusion: 'rrf'}}}", get!(query.hybrid.fusion), "Rrf"),
            ("{query: {hybrid: {fusion: 'minmax'}}}", get!(query.hybrid.fusion), "MinMax"),
            ("{}", get!(query.hybrid.mmr), "MmrSettings { enabled: false, lambda: 0.7 }"),
            ("{query: {hybrid: {mmr: {enabled: true, lambda: 0.4}}}}", get!(query.hybrid.mmr), "MmrSettings { enabled: true, lambda: 0.4 }"),
            ("{query: {hybrid: {mmr: {lambda: 2}}}}", get!(query.hybrid.mmr.lambda), "1.0"),
            ("{query: {hybrid: {mmr: {lambda: -1}}}}", get!(query.hybrid.mmr.lambda), "0.0"),
            ("{}", get!(query.hybrid.temporal_decay), "TemporalDecaySettings { enabled: false, half_life_days: 30.0 }"),
            ("{query: {hybrid: {temporalDecay: {enabled: true, halfLifeDays: 7}}}}", get!(query.hybrid.temporal_decay), "TemporalDecaySettings { enabled: true, half_life_days: 7.0 }"),
            ("{query: {hybrid: {temporalDecay: {halfLifeDays: 7.5}}}}", get!(query.hybrid.temporal_decay.half_life_days), "7.0"),
            ("{query: {hybrid: {temporalDecay: {halfLifeDays: 0}}}}", get!(query.hybrid.temporal_decay.half_life_days), "1.0"),
            ("{query: {hybrid: {temporalDecay: {halfLifeDays: -3}}}}", get!(query.hybrid.temporal_decay.half_life_days), "1.0"),
            ("{}", get!(cache), "CacheSettings { enabled: true, max_entries: 50000 }"),
            ("{cache: {enabled: false, maxEntries: 10}}", get!(cache), "CacheSettings { enabled: false, max_entries: 10 }"),
            ("{cache: {maxEntries: 0}}", get!(cache.max_entries), "1"),
            ("{enabled: null, query: {maxResults: null}}", get!(query.max_results), "6"),
            ("{chunking: {tokens: 1e30}}", get!(chunking.tokens), "9223372036854775807"),
        ];
        for (ms, getter, want) in rows {
            let got = getter(&with_ms(ms));
            assert_eq!(&got, want, "memorySearch = {ms}");
        }
    }

    /// `memory.*` and `agents.defaults.compaction.*`.
    #[test]
    fn memory_and_compaction_keys() {
        let rows: &[(&str, Getter, &str)] = &[
            ("{}", get!(backend), "Builtin"),
            ("{memory: {backend: 'builtin'}}", get!(backend), "Builtin"),
            ("{memory: {backend: 'qmd'}}", get!(backend), "Qmd"),
            ("{}", get!(citations), "Auto"),
            ("{memory: {citations: 'auto'}}", get!(citations), "Auto"),
            ("{memory: {citations: 'on'}}", get!(citations), "On"),
            ("{memory: {citations: 'off'}}", get!(citations), "Off"),
            ("{}", get!(qmd), "None"),
            ("{memory: {qmd: {command: 'qmd', limits: {timeoutMs: 4000}}}}", get!(qmd), "Some(Object {\"command\": String(\"qmd\"), \"limits\": Object {\"timeoutMs\": Number(4000)}})"),
            ("{}", get!(compaction), "CompactionSettings { reserve_tokens_floor: 20000, memory_flush: MemoryFlushSettings { enabled: true, soft_threshold_tokens: 4000, system_prompt: None, prompt: None } }"),
            ("{agents: {defaults: {compaction: {reserveTokensFloor: 1000, mode: 'safeguard', memoryFlush: {enabled: false, softThresholdTokens: 10, systemPrompt: 'S', prompt: 'P', other: 1}}}}}",
             get!(compaction), "CompactionSettings { reserve_tokens_floor: 1000, memory_flush: MemoryFlushSettings { enabled: false, soft_threshold_tokens: 10, system_prompt: Some(\"S\"), prompt: Some(\"P\") } }"),
            ("{agents: {defaults: {compaction: {reserveTokensFloor: -1}}}}", get!(compaction.reserve_tokens_floor), "0"),
        ];
        for (text, getter, want) in rows {
            let got = getter(&resolve_str(text, "main").unwrap());
            assert_eq!(&got, want, "config = {text}");
        }
        let flush = Settings::builtin("main", &env()).compaction.memory_flush;
        assert_eq!(
            flush.system_prompt_or_default(),
            DEFAULT_FLUSH_SYSTEM_PROMPT
        );
        assert!(flush.prompt_or_default().contains("NO_REPLY"));
    }

    #[test]
    fn builtin_equals_empty_config() {
        let empty = resolve(&json!({}), "main", &env()).unwrap();
        let builtin = Settings::builtin("main", &env());
        assert_eq!(empty, builtin);
        assert_eq!(builtin.agent_id, "main");
        assert_eq!(builtin.state_dir, PathBuf::from("/home/u/.openclaw"));
        assert_eq!(
            builtin.workspace,
            PathBuf::from("/home/u/.openclaw/workspace")
        );
        assert_eq!(
            builtin.store.dir,
            PathBuf::from("/home/u/.openclaw/memory/main")
        );
        assert_eq!(builtin.effective_model(), None);
    }

    const MULTI: &str = r#"{
        agents: {
            defaults: {
                workspace: "~/ws-default",
                memorySearch: {
                    provider: "openai",
                    model: "text-embedding-3-small",
                    extraPaths: ["../team", "/srv/notes.md"],
                    remote: {
                        baseUrl: "https://default/v1",
                        apiKey: "k-default",
                        headers: {"X-A": "a", "X-B": "b"},
                        batch: {enabled: true, concurrency: 3},
                    },
                    query: {maxResults: 10, hybrid: {vectorWeight: 0.6, textWeight: 0.4}},
                },
            },
            list: [
                {id: "main"},
                {
                    id: "work",
                    workspace: "/work/ws",
                    memorySearch: {
                        provider: "gemini",
                        extraPaths: ["/srv/notes.md", "docs"],
                        remote: {apiKey: "k-work", headers: {"X-B": "B2", "X-C": "c"}, batch: {wait: false}},
                        query: {hybrid: {textWeight: 0.6}},
                    },
                },
                {id: "work", memorySearch: {provider: "local"}},
            ],
        },
    }"#;

    #[test]
    fn per_agent_merge() {
        let work = resolve_str(MULTI, "work").unwrap();
        assert_eq!(work.provider, ProviderKind::Gemini, "leaf override");
        assert_eq!(
            work.model.as_deref(),
            Some("text-embedding-3-small"),
            "leaf inherited"
        );
        assert_eq!(
            work.extra_paths,
            ["../team", "/srv/notes.md", "docs"],
            "concat + dedup"
        );
        assert_eq!(work.remote.base_url.as_deref(), Some("https://default/v1"));
        assert_eq!(work.remote.api_key.as_deref(), Some("k-work"));
        let headers: Vec<(&str, &str)> = work
            .remote
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(headers, [("X-A", "a"), ("X-B", "B2"), ("X-C", "c")]);
        assert!(work.remote.batch.enabled);
        assert!(!work.remote.batch.wait);
        assert_eq!(work.remote.batch.concurrency, 3);
        assert_eq!(work.query.max_results, 10);
        // vectorWeight 0.6 from defaults, textWeight 0.6 from the agent → 0.5 / 0.5.
        assert_eq!(work.query.hybrid.vector_weight, 0.5);
        assert_eq!(work.query.hybrid.text_weight, 0.5);
        assert_eq!(work.workspace, PathBuf::from("/work/ws"));
        assert_eq!(
            work.store.dir,
            PathBuf::from("/home/u/.openclaw/memory/work")
        );

        // An entry without memorySearch, and an agent not in the list, get the defaults.
        for agent in ["main", "ghost"] {
            let s = resolve_str(MULTI, agent).unwrap();
            assert_eq!(s.provider, ProviderKind::OpenAi);
            assert_eq!(s.extra_paths, ["../team", "/srv/notes.md"]);
            assert_eq!(s.remote.api_key.as_deref(), Some("k-default"));
            assert_eq!(s.remote.headers.len(), 2);
            assert_eq!(s.workspace, PathBuf::from("/home/u/ws-default"));
            assert_eq!(s.query.hybrid.vector_weight, 0.6);
        }
    }

    #[test]
    fn agent_override_without_defaults() {
        let text =
            "{agents: {list: [{id: 'a', memorySearch: {enabled: false, chunking: {tokens: 10}}}]}}";
        let a = resolve_str(text, "a").unwrap();
        assert!(!a.enabled);
        assert_eq!(a.chunking.tokens, 10);
        assert_eq!(a.chunking.overlap, 9);
        let b = resolve_str(text, "b").unwrap();
        assert_eq!(b, Settings::builtin("b", &env()));
    }

    #[test]
    fn error_messages() {
        let rows: &[(&str, &str)] = &[
            (
                "{agents: {defaults: {memorySearch: {query: {hybrid: {vectorWeight: 'high'}}}}}}",
                "agents.defaults.memorySearch.query.hybrid.vectorWeight: expected a number, got \"high\"",
            ),
            (
                "{agents: {list: [{id: 'a'}, {id: 'b', memorySearch: {chunking: {tokenz: 3}}}]}}",
                "agents.list[1].memorySearch.chunking.tokenz: unknown key",
            ),
            (
                "{agents: {defaults: {memorySearch: {chunking: {tokens: '3'}}}}}",
                "agents.defaults.memorySearch.chunking.tokens: expected an integer, got \"3\"",
            ),
            (
                "{agents: {defaults: {memorySearch: {providr: 'openai'}}}}",
                "agents.defaults.memorySearch.providr: unknown key",
            ),
            (
                "{agents: {defaults: {memorySearch: {provider: 'cohere'}}}}",
                "agents.defaults.memorySearch.provider: expected one of \"auto\", \"none\", \"local\", \"openai\", \"gemini\", \"voyage\", \"mistral\", got \"cohere\"",
            ),
            (
                "{agents: {defaults: {memorySearch: {fallback: 'auto'}}}}",
                "agents.defaults.memorySearch.fallback: expected one of \"none\", \"openai\", \"gemini\", \"local\", \"voyage\", \"mistral\", got \"auto\"",
            ),
            (
                "{agents: {defaults: {memorySearch: {enabled: 'yes'}}}}",
                "agents.defaults.memorySearch.enabled: expected a boolean, got \"yes\"",
            ),
            (
                "{agents: {defaults: {memorySearch: {enabled: 1}}}}",
                "agents.defaults.memorySearch.enabled: expected a boolean, got 1",
            ),
            (
                "{agents: {defaults: {memorySearch: {sources: ['memory', 'chats']}}}}",
                "agents.defaults.memorySearch.sources[1]: expected one of \"memory\", \"sessions\", got \"chats\"",
            ),
            (
                "{agents: {defaults: {memorySearch: {sources: 'memory'}}}}",
                "agents.defaults.memorySearch.sources: expected an array, got \"memory\"",
            ),
            (
                "{agents: {defaults: {memorySearch: {extraPaths: ['a', 5]}}}}",
                "agents.defaults.memorySearch.extraPaths[1]: expected a string, got 5",
            ),
            (
                "{agents: {defaults: {memorySearch: {remote: {headers: {'X-A': 1}}}}}}",
                "agents.defaults.memorySearch.remote.headers.X-A: expected a string, got 1",
            ),
            (
                "{agents: {defaults: {memorySearch: {remote: {batch: {size: 1}}}}}}",
                "agents.defaults.memorySearch.remote.batch.size: unknown key",
            ),
            (
                "{agents: {defaults: {memorySearch: {query: []}}}}",
                "agents.defaults.memorySearch.query: expected an object, got an array",
            ),
            (
                "{agents: {defaults: {memorySearch: 'on'}}}",
                "agents.defaults.memorySearch: expected an object, got \"on\"",
            ),
            (
                "{agents: {defaults: {memorySearch: {store: {driver: 'lance'}}}}}",
                "agents.defaults.memorySearch.store.driver: expected one of \"sqlite\", got \"lance\"",
            ),
            (
                "{agents: {defaults: {memorySearch: {query: {hybrid: {fusion: 'zscore'}}}}}}",
                "agents.defaults.memorySearch.query.hybrid.fusion: expected one of \"weighted\", \"rrf\", \"minmax\", got \"zscore\"",
            ),
            (
                "{agents: {list: [{id: 'a', memorySearch: {query: {hybrid: {mmr: {lambda: true}}}}}]}}",
                "agents.list[0].memorySearch.query.hybrid.mmr.lambda: expected a number, got true",
            ),
            (
                "{agents: {defaults: {memorySearch: {model: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', chunking: {tokens: 'yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy'}}}}}",
                "agents.defaults.memorySearch.chunking.tokens: expected an integer, got \"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\"…",
            ),
            ("{memory: {backend: 'sqlite'}}", "memory.backend: expected one of \"builtin\", \"qmd\", got \"sqlite\""),
            ("{memory: {citations: true}}", "memory.citations: expected one of \"auto\", \"on\", \"off\", got true"),
            ("{memory: {qmd: 'on'}}", "memory.qmd: expected an object, got \"on\""),
            ("{memory: {engine: 'x'}}", "memory.engine: unknown key"),
            ("{agents: {list: {}}}", "agents.list: expected an array, got an object"),
            ("{agents: {list: [{id: 3}]}}", "agents.list[0].id: expected a string, got 3"),
            ("{agents: {list: [{id: 'a', workspace: 3}]}}", "agents.list[0].workspace: expected a string, got 3"),
            ("{agents: {defaults: {workspace: false}}}", "agents.defaults.workspace: expected a string, got false"),
            (
                "{agents: {defaults: {compaction: {reserveTokensFloor: '20k'}}}}",
                "agents.defaults.compaction.reserveTokensFloor: expected an integer, got \"20k\"",
            ),
            (
                "{agents: {defaults: {compaction: {memoryFlush: {prompt: 1}}}}}",
                "agents.defaults.compaction.memoryFlush.prompt: expected a string, got 1",
            ),
            ("[1]", "(top level): expected an object, got an array"),
        ];
        for (text, want) in rows {
            assert_eq!(&err(text, "a"), want, "config = {text}");
        }
    }

    #[test]
    fn every_list_entry_is_validated() {
        // The broken entry belongs to another agent: still an error.
        let text = "{agents: {list: [{id: 'a'}, {id: 'b', memorySearch: {bogus: 1}}]}}";
        assert_eq!(
            err(text, "a"),
            "agents.list[1].memorySearch.bogus: unknown key"
        );
    }

    #[test]
    fn unrelated_sections_are_ignored() {
        let text = r#"{
            models: {providers: {openai: {apiKey: "sk"}}},
            channels: {telegram: {enabled: true}},
            gateway: {port: 18789},
            plugins: {slots: {memory: "memory-core"}},
            agents: {
                defaults: {model: {primary: "x"}, sandbox: {mode: "off"}, memorySearch: {enabled: true}},
                list: [{id: "main", name: "Main", tools: {deny: ["x"]}, default: true}],
            },
        }"#;
        let s = resolve_str(text, "main").unwrap();
        assert_eq!(s, Settings::builtin("main", &env()));
    }

    #[test]
    fn store_dir_rules() {
        let rows: &[(Option<&str>, &str)] = &[
            (None, "/home/u/.openclaw/memory/main"),
            (
                Some("~/.openclaw/memory/{agentId}.sqlite"),
                "/home/u/.openclaw/memory/main",
            ),
            (Some("/data/idx/{agentId}.db"), "/data/idx/main"),
            (Some("/data/idx/{agentId}.SQLITE"), "/data/idx/main"),
            (Some("/data/{agentId}/index"), "/data/main/index"),
            (Some("/data/idx/"), "/data/idx"),
            (Some("idx/{agentId}"), "/home/u/.openclaw/idx/main"),
            (
                Some("memory/{agentId}.sqlite"),
                "/home/u/.openclaw/memory/main",
            ),
            (Some("~"), "/home/u"),
            (Some("  "), "/home/u/.openclaw/memory/main"),
            (Some("/data/a.b/c.json"), "/data/a.b/c.json"),
        ];
        for (path, want) in rows {
            let ms = match path {
                Some(p) => format!("{{store: {{path: {}}}}}", Value::String(p.to_string())),
                None => "{}".to_string(),
            };
            assert_eq!(
                with_ms(&ms).store.dir,
                PathBuf::from(want),
                "store.path = {path:?}"
            );
        }
        // The state dir comes from the environment.
        let custom = Env {
            state_dir: Some(PathBuf::from("/state")),
            ..env()
        };
        let s = resolve(
            &json!({"agents": {"defaults": {"memorySearch": {"store": {"path": "x.db"}}}}}),
            "a",
            &custom,
        )
        .unwrap();
        assert_eq!(s.store.dir, PathBuf::from("/state/x"));
        assert_eq!(
            Settings::builtin("a", &custom).store.dir,
            PathBuf::from("/state/memory/a")
        );
    }

    #[test]
    fn env_paths() {
        let e = env();
        assert_eq!(state_dir(&e), PathBuf::from("/home/u/.openclaw"));
        assert_eq!(
            config_file(&e),
            (PathBuf::from("/home/u/.openclaw/openclaw.json"), false)
        );
        let e2 = Env {
            home: Some(PathBuf::from("/h")),
            state_dir: Some(PathBuf::from("~/st")),
            config_path: Some(PathBuf::from("~/cfg.json5")),
        };
        assert_eq!(state_dir(&e2), PathBuf::from("/h/st"));
        assert_eq!(config_file(&e2), (PathBuf::from("/h/cfg.json5"), true));
        let e3 = Env {
            state_dir: Some(PathBuf::from("/s")),
            ..env()
        };
        assert_eq!(config_file(&e3).0, PathBuf::from("/s/openclaw.json"));

        let rows: &[(&str, &str)] = &[
            ("~", "/home/u"),
            ("~/x/y", "/home/u/x/y"),
            ("~//x", "/home/u/x"),
            (" ~/x ", "/home/u/x"),
            ("~x", "~x"),
            ("/abs", "/abs"),
            ("rel/p", "rel/p"),
        ];
        for (input, want) in rows {
            assert_eq!(expand_home(input, &e), PathBuf::from(want), "{input}");
        }
        let no_home = Env::default();
        assert_eq!(expand_home("~/x", &no_home), PathBuf::from("./x"));
        assert_eq!(state_dir(&no_home), PathBuf::from("./.openclaw"));
    }

    #[test]
    fn workspace_resolution() {
        let rows: &[(&str, &str)] = &[
            ("{}", "/home/u/.openclaw/workspace"),
            ("{agents: {defaults: {workspace: '~/ws'}}}", "/home/u/ws"),
            ("{agents: {defaults: {workspace: '/d'}, list: [{id: 'main', workspace: '~/mine'}]}}", "/home/u/mine"),
            ("{agents: {defaults: {workspace: '/d'}, list: [{id: 'other', workspace: '/o'}]}}", "/d"),
            ("{agents: {list: [{id: 'main', workspace: ''}]}}", "/home/u/.openclaw/workspace"),
        ];
        for (text, want) in rows {
            assert_eq!(
                resolve_str(text, "main").unwrap().workspace,
                PathBuf::from(want),
                "{text}"
            );
        }
        // The workspace does not follow the state dir.
        let custom = Env {
            state_dir: Some(PathBuf::from("/state")),
            ..env()
        };
        assert_eq!(
            Settings::builtin("main", &custom).workspace,
            PathBuf::from("/home/u/.openclaw/workspace")
        );
    }

    #[test]
    fn json5_features() {
        let text = r#"
            // line comment
            {
              /* block
                 comment */
              agents: {
                defaults: {
                  memorySearch: {
                    provider: 'local',        // single quotes
                    chunking: {tokens: 0x100, overlap: +8,},   // hex, plus sign, trailing comma
                    query: {minScore: .5},    // leading decimal point
                  },
                },
              },
            }
        "#;
        let s = resolve_str(text, "main").unwrap();
        assert_eq!(s.provider, ProviderKind::Local);
        assert_eq!(s.chunking.tokens, 256);
        assert_eq!(s.chunking.overlap, 8);
        assert_eq!(s.query.min_score, 0.5);
        // A BOM and a blank file are accepted.
        assert_eq!(parse5("\u{feff}{a: 1}"), json!({"a": 1}));
        assert_eq!(parse5("  \n"), json!({}));
        // NaN / Infinity cannot live in JSON: they arrive as null, i.e. unset.
        assert_eq!(
            with_ms("{query: {minScore: NaN, maxResults: Infinity}}")
                .query
                .max_results,
            6
        );
    }

    #[test]
    fn syntax_errors_name_file_and_position() {
        let e = parse_config_text("{\n  a: 1\n  b: 2\n}", Path::new("/etc/oc.json")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.starts_with("/etc/oc.json: line 3, column 3: invalid JSON5: "),
            "{msg}"
        );
        match e {
            ConfigError::Syntax { line, column, .. } => {
                assert_eq!((line, column), (Some(3), Some(3)));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn load_config_file_cases() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let e = Env {
            home: Some(dir.path().to_path_buf()),
            state_dir: Some(state.clone()),
            config_path: None,
        };
        // Missing default file → empty object.
        assert_eq!(load_config_file(&e).unwrap(), json!({}));
        assert_eq!(
            load_settings(&e, "main").unwrap(),
            Settings::builtin("main", &e)
        );

        // Missing explicit file → error naming it.
        let missing = dir.path().join("nope.json5");
        let explicit = Env {
            config_path: Some(missing.clone()),
            ..e.clone()
        };
        let err = load_config_file(&explicit).unwrap_err();
        assert!(matches!(err, ConfigError::NotFound { .. }));
        assert_eq!(
            err.to_string(),
            format!("{}: config file not found", missing.display())
        );

        // Present default file.
        std::fs::create_dir_all(&state).unwrap();
        let file = state.join("openclaw.json");
        std::fs::write(
            &file,
            "{agents: {defaults: {memorySearch: {provider: 'gemini'}}}}",
        )
        .unwrap();
        assert_eq!(
            load_settings(&e, "main").unwrap().provider,
            ProviderKind::Gemini
        );

        // Resolution errors carry the file path.
        std::fs::write(
            &file,
            "{agents: {defaults: {memorySearch: {chunking: {tokenz: 1}}}}}",
        )
        .unwrap();
        assert_eq!(
            load_settings(&e, "main").unwrap_err().to_string(),
            format!(
                "{}: agents.defaults.memorySearch.chunking.tokenz: unknown key",
                file.display()
            )
        );

        // Syntax errors too, with the position.
        std::fs::write(&file, "{agents: {,}}").unwrap();
        let msg = load_settings(&e, "main").unwrap_err().to_string();
        assert!(
            msg.starts_with(&format!(
                "{}: line 1, column 11: invalid JSON5: ",
                file.display()
            )),
            "{msg}"
        );
    }

    #[test]
    fn in_file_wraps_only_invalid() {
        let e = ConfigError::invalid("a.b", "unknown key").in_file("/c.json");
        assert_eq!(e.to_string(), "/c.json: a.b: unknown key");
        let nf = ConfigError::NotFound {
            file: PathBuf::from("/x"),
        }
        .in_file("/y");
        assert_eq!(nf.to_string(), "/x: config file not found");
    }

    #[test]
    fn candidate_pool_rule() {
        let rows: &[(usize, usize, usize)] = &[
            (6, 4, 24),
            (0, 4, 1),
            (6, 0, 1),
            (100, 20, 200),
            (usize::MAX, 20, 200),
        ];
        for &(max_results, mult, want) in rows {
            assert_eq!(
                candidate_pool(max_results, mult),
                want,
                "{max_results} × {mult}"
            );
        }
    }

    #[test]
    fn default_models() {
        let rows: &[(ProviderKind, Option<&str>)] = &[
            (ProviderKind::OpenAi, Some("text-embedding-3-small")),
            (ProviderKind::Gemini, Some("gemini-embedding-001")),
            (ProviderKind::Local, Some("embeddinggemma-300m")),
            (ProviderKind::Auto, None),
            (ProviderKind::None, None),
        ];
        for &(p, want) in rows {
            assert_eq!(default_model(p), want, "{}", p.as_str());
        }
        assert_eq!(
            with_ms("{provider: 'gemini'}").effective_model(),
            Some("gemini-embedding-001")
        );
        assert_eq!(
            with_ms("{provider: 'gemini', model: 'm'}").effective_model(),
            Some("m")
        );
    }

    #[test]
    fn debug_redacts_secrets() {
        let s = with_ms("{remote: {apiKey: 'sk-secret', headers: {Authorization: 'Bearer tok'}}}");
        let dbg = format!("{s:?}");
        assert!(
            !dbg.contains("sk-secret") && !dbg.contains("Bearer tok"),
            "{dbg}"
        );
        assert!(dbg.contains("Authorization"));
    }
}
