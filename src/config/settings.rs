//! The resolved memory settings of one agent, and the enums their keys take.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::qmd::QmdSettings;
use super::secret::{Secret, SecretProviders};

/// Embedding provider (`memorySearch.provider`, `memorySearch.fallback`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ProviderKind {
    /// Pick one (SPEC §7): local model if present, else OpenAI, else Gemini, else none.
    Auto,
    /// No embeddings: keyword-only search (memoria extension, `"none"`).
    None,
    /// EmbeddingGemma on candle.
    Local,
    /// OpenAI or an OpenAI-compatible endpoint.
    #[cfg_attr(feature = "cli", value(name = "openai"))]
    OpenAi,
    /// Google Gemini embeddings API.
    Gemini,
    /// Voyage AI embeddings API.
    Voyage,
    /// Mistral embeddings API (OpenAI's wire format).
    Mistral,
    /// A local Ollama server's OpenAI-compatible API (`http://127.0.0.1:11434/v1`).
    Ollama,
    /// Any endpoint speaking OpenAI's `/embeddings` (OpenClaw 2026.9's core adapter):
    /// `model` and `remote.baseUrl` are required.
    #[cfg_attr(feature = "cli", value(name = "openai-compatible"))]
    OpenAiCompatible,
    /// LM Studio's local server (`http://localhost:1234/v1`, OpenAI's wire format).
    #[cfg_attr(feature = "cli", value(name = "lmstudio"))]
    LmStudio,
    /// DeepInfra's OpenAI-compatible API.
    #[cfg_attr(feature = "cli", value(name = "deepinfra"))]
    DeepInfra,
    /// Amazon Bedrock: accepted in the config, not served (`status` says why).
    #[cfg_attr(feature = "cli", value(skip))]
    Bedrock,
    /// GitHub Copilot's embeddings: accepted in the config, not served (`status` says why).
    #[cfg_attr(feature = "cli", value(skip))]
    GithubCopilot,
}

impl ProviderKind {
    /// The config spelling: `auto`, `none`, `local`, `openai`, `gemini`, `voyage`, `mistral`,
    /// `ollama`, `openai-compatible`, `lmstudio`, `deepinfra`, `bedrock`, `github-copilot`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Auto => "auto",
            ProviderKind::None => "none",
            ProviderKind::Local => "local",
            ProviderKind::OpenAi => "openai",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Voyage => "voyage",
            ProviderKind::Mistral => "mistral",
            ProviderKind::Ollama => "ollama",
            ProviderKind::OpenAiCompatible => "openai-compatible",
            ProviderKind::LmStudio => "lmstudio",
            ProviderKind::DeepInfra => "deepinfra",
            ProviderKind::Bedrock => "bedrock",
            ProviderKind::GithubCopilot => "github-copilot",
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
        ProviderKind::Ollama => Some("nomic-embed-text"),
        ProviderKind::LmStudio => Some("text-embedding-nomic-embed-text-v1.5"),
        ProviderKind::DeepInfra => Some("BAAI/bge-m3"),
        ProviderKind::Bedrock => Some("amazon.titan-embed-text-v2:0"),
        ProviderKind::Auto
        | ProviderKind::None
        | ProviderKind::OpenAiCompatible
        | ProviderKind::GithubCopilot => None,
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
    /// Each side's scores as z-scores over its candidates, the keyword side's counted only
    /// above its mean, then the weighted sum mapped onto 0..1 by a logistic curve: memoria's
    /// default for a config that names no weights.
    ZScore,
}

impl Fusion {
    /// How `status` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Fusion::Weighted => "weighted",
            Fusion::Rrf => "rrf",
            Fusion::MinMax => "minmax",
            Fusion::ZScore => "zscore",
        }
    }
}

/// Which OpenClaw's memory behaviour an agent gets, chosen by the config's layout.
///
/// The older layout (`agents.defaults.memorySearch`, `agents.list[].memorySearch`, or no
/// config) keeps the documented behaviour, every knob configurable. The newer layout
/// (`memory.search`, `agents.entries.<id>.memory.search`), which OpenClaw 2026.8+ reads,
/// gets 2026.9's: fixed hybrid weights, MMR and temporal decay, `USER.md`, entries of
/// `MEMORY.md` / `USER.md` as chunks, importance and project annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Semantics {
    /// The documented behaviour of the older `memorySearch` layout.
    Documented,
    /// OpenClaw 2026.9's behaviour, for the newer `memory.search` layout.
    OpenClaw,
}

impl Semantics {
    /// How `status` names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Semantics::Documented => "documented (memorySearch layout)",
            Semantics::OpenClaw => "openclaw-2026.9 (memory.search layout)",
        }
    }

    /// Whether this is 2026.9's behaviour.
    pub fn is_openclaw(self) -> bool {
        self == Semantics::OpenClaw
    }
}

/// Which ranking a search applies: memoria's (the default, whatever the layout) or
/// OpenClaw 2026.9's, exactly, for parity (`plugins.entries.memoria.config.ranking`,
/// `--ranking`, [`crate::MemoryBuilder::ranking`]).
///
/// The ranking decides how candidates are scored and ordered: fusion, the keyword side's
/// terms, `minScore`'s calibration, MMR and what time does. The layout ([`Semantics`])
/// decides what is indexed and what a payload carries; OpenClaw's ranking brings 2026.9's
/// semantics with it, whatever the layout, since parity means all of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Ranking {
    /// memoria's: z-score fusion, content words, the calibrated `minScore`, passages, no
    /// temporal decay unless the config turns it on (docs/ranking.md).
    #[default]
    Memoria,
    /// OpenClaw 2026.9's, exactly (what `tests/openclaw_parity.rs` checks).
    #[cfg_attr(feature = "cli", value(name = "openclaw"))]
    OpenClaw,
}

impl Ranking {
    /// The config spelling, also what `status` and the payload name: `memoria`, `openclaw`.
    pub fn as_str(self) -> &'static str {
        match self {
            Ranking::Memoria => "memoria",
            Ranking::OpenClaw => "openclaw",
        }
    }
}

/// Which engine serves memory search (`memory.backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// memoria's own index.
    Builtin,
    /// The QMD sidecar, with memoria as the fallback.
    Qmd,
}

impl Backend {
    /// The config spelling: `builtin`, `qmd`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Builtin => "builtin",
            Backend::Qmd => "qmd",
        }
    }
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
    /// Which OpenClaw behaviour applies (by the config's layout, or the OpenClaw ranking).
    pub semantics: Semantics,
    /// Which ranking a search applies (memoria's unless the config or `--ranking` asks
    /// for OpenClaw's).
    pub ranking: Ranking,
    /// What the config holds that memoria ignores (unknown keys), shown by `status`.
    pub warnings: Vec<String>,
    /// What the OpenClaw plugin adds when it runs memoria (`plugins.entries.memoria.config`'s
    /// `args`, and the names of its `env`), as `args […]; env NAME, …`; `None` when it adds
    /// nothing. A memoria started elsewhere (a shell) runs without them: `status` says so.
    pub plugin_child: Option<String>,
    /// The OpenClaw state directory ([`state_dir`](super::state_dir)).
    pub state_dir: PathBuf,
    /// The agent's workspace: its `workspace` ?? `agents.defaults.workspace` ??
    /// `~/.openclaw/workspace`, `~` expanded (a relative path is left relative).
    pub workspace: PathBuf,
    /// Where [`workspace`](Self::workspace) came from, for errors: the config key
    /// (`agents.list[0].workspace`, …), `--workspace`, or the default.
    pub workspace_origin: String,
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
    /// `memory.qmd` (its defaults when unset); acted on only when `backend` is QMD.
    pub qmd: QmdSettings,
    /// `secrets`: the providers the API keys' SecretRefs name (see [`Secret::read`]).
    pub secrets: SecretProviders,
    /// `models.providers.<name>.apiKey` (`openai`, `google`, `voyage`, `mistral`, `ollama`):
    /// the keys OpenClaw keeps with its chat models, read after `remote.apiKey`.
    pub provider_keys: BTreeMap<String, Secret>,
    /// `memory.citations`.
    pub citations: Citations,
    /// `agents.defaults.compaction.*`.
    pub compaction: CompactionSettings,
    /// The memory-wiki plugin's vault (`plugins.entries.memory-wiki`), read for
    /// `corpus: "wiki"`; see [`Settings::wiki_vault`].
    pub wiki: WikiSettings,
}

/// Where the memory-wiki plugin keeps its vault (`plugins.entries.memory-wiki`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WikiSettings {
    /// `enabled` (`false` turns the `wiki` corpus off).
    pub enabled: bool,
    /// `config.vault.path` (`~` expanded; a relative path is taken relative to the state
    /// directory by [`Settings::wiki_vault`]).
    pub vault_path: Option<PathBuf>,
    /// `config.vault.scope` is `agent`: one vault per agent under the path.
    pub agent_scope: bool,
}

impl Default for WikiSettings {
    fn default() -> WikiSettings {
        WikiSettings {
            enabled: true,
            vault_path: None,
            agent_scope: false,
        }
    }
}

/// `memorySearch.local`, and memoria's own setting for the local model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSettings {
    /// `local.modelPath`: a model directory (`~` expanded) or `hf:owner/repo`.
    pub model_path: Option<String>,
    /// `local.modelCacheDir` (`~` expanded): a Hugging Face cache searched first, where
    /// `memoria model pull` stores.
    pub model_cache_dir: Option<String>,
    /// memoria's `plugins.entries.memoria.config.passages` (default true): the local model
    /// embeds the passages of long chunks instead of the chunks (`crate::passage`); false
    /// embeds those chunks whole, about as much text, for less recall.
    pub passages: bool,
}

/// `memorySearch.remote`. Its `Debug` output hides the API key and header values.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteSettings {
    /// `remote.baseUrl`.
    pub base_url: Option<String>,
    /// `remote.apiKey`: the key, or a SecretRef naming where it is.
    pub api_key: Option<Secret>,
    /// `remote.headers`, defaults merged with the agent's (agent wins).
    pub headers: BTreeMap<String, String>,
    /// `inputType`: the `input_type` sent with every request, when set (OpenAI's wire
    /// format; OpenClaw's `openai-compatible` keys, read for every such provider).
    pub input_type: Option<String>,
    /// `queryInputType`: the `input_type` of queries (else `inputType`).
    pub query_input_type: Option<String>,
    /// `documentInputType`: the `input_type` of documents (else `inputType`).
    pub document_input_type: Option<String>,
    /// `outputDimensionality`: sent as `dimensions`.
    pub output_dimensionality: Option<u32>,
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
            .field("api_key", &self.api_key)
            .field("headers", &headers)
            .field("batch", &self.batch)
            .finish()
    }
}

/// `memorySearch.remote.batch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSettings {
    /// `enabled` (true; batch indexing applies to the `openai` and `gemini` providers).
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
    /// `store.path`: the agent's index directory when configured (`{agentId}` and a leading
    /// `~` expanded, a final `*.sqlite` / `*.db` file name replaced by a directory named
    /// after its stem: `~/.openclaw/memory/{agentId}.sqlite` → `~/.openclaw/memory/main/`);
    /// a relative path is taken relative to the state dir. `None`: the default. Read it
    /// through [`Settings::store_dir`], which follows a changed `state_dir`.
    pub dir: Option<PathBuf>,
    /// `store.vector.enabled` (true); false means exact in-process scan.
    pub vector_enabled: bool,
    /// Where the index is kept: this directory (the default) or fleet mode's LanceDB
    /// (`plugins.entries.memoria.config.store`, `--store-uri`).
    pub backend: StoreBackend,
}

/// Where an agent's index is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StoreBackend {
    /// One directory per agent on this machine ([`StoreSettings::dir`]).
    #[default]
    Local,
    /// Fleet mode: LanceDB tables under a URI, each agent at `<uri>/<agentId>` (needs a
    /// memoria built with the `fleet` feature).
    LanceDb {
        /// `store.uri`: `s3://bucket/prefix`, or a directory.
        uri: String,
        /// `store.storageOptions`: LanceDB's object-store options (`aws_endpoint`,
        /// `aws_region`, `allow_http`, …), by name.
        options: Vec<(String, String)>,
    },
}

impl StoreBackend {
    /// Where agent `agent` lives in fleet mode, `<uri>/<agent>`; `None` for the local store.
    pub fn agent_uri(&self, agent: &str) -> Option<String> {
        match self {
            StoreBackend::Local => None,
            StoreBackend::LanceDb { uri, .. } => {
                Some(format!("{}/{agent}", uri.trim_end_matches('/')))
            }
        }
    }
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
    pub min_score: f64,
    /// Whether the config sets `minScore`: then it applies as it is; otherwise memoria's
    /// semantics may lower it for a calibrated model (`search::hybrid::Calibration`).
    pub min_score_configured: bool,
    /// `hybrid.*`.
    pub hybrid: HybridSettings,
}

/// `memorySearch.query.hybrid`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridSettings {
    /// `enabled` (true).
    pub enabled: bool,
    /// `vectorWeight`, normalised so that the two weights sum to 1 (0.7 for the weighted
    /// formula, 0.55 for min-max fusion, 0.5 for z-score fusion).
    pub vector_weight: f64,
    /// `textWeight`, normalised (0.3 weighted, 0.45 min-max, 0.5 z-score).
    pub text_weight: f64,
    /// `candidateMultiplier` (4, clamped to 1..=20).
    pub candidate_multiplier: usize,
    /// `fusion`: weighted when the config names a weight, else min-max.
    pub fusion: Fusion,
    /// `mmr.*`.
    pub mmr: MmrSettings,
    /// `temporalDecay.*`.
    pub temporal_decay: TemporalDecaySettings,
}

/// `memorySearch.query.hybrid.mmr`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MmrSettings {
    /// `enabled` (true; batch indexing applies to the `openai` and `gemini` providers).
    pub enabled: bool,
    /// `lambda` (0.7, clamped to 0..=1).
    pub lambda: f64,
}

/// `memorySearch.query.hybrid.temporalDecay`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TemporalDecaySettings {
    /// `enabled` (true; batch indexing applies to the `openai` and `gemini` providers).
    pub enabled: bool,
    /// `halfLifeDays` (30; whole days, at least 1).
    pub half_life_days: f64,
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
    /// The model to embed with: `model`, else the provider's [`default_model`].
    pub fn effective_model(&self) -> Option<&str> {
        self.model
            .as_deref()
            .or_else(|| default_model(self.provider))
    }

    /// This agent's session transcripts, `<stateDir>/agents/<agentId>/sessions` (SPEC §8),
    /// when `sources` has `"sessions"` and `experimental.sessionMemory` is on.
    pub fn sessions_dir(&self) -> Option<std::path::PathBuf> {
        self.sources
            .contains(&Source::Sessions)
            .then(|| self.transcripts_dir())
    }

    /// The agent's index directory: `store.dir` (relative to the state dir), else
    /// `<stateDir>/memory/<agentId>/`.
    pub fn store_dir(&self) -> PathBuf {
        match &self.store.dir {
            Some(dir) => self.state_dir.join(dir),
            None => self.state_dir.join("memory").join(&self.agent_id),
        }
    }

    /// This agent's memory-wiki vault, where the plugin keeps it: `vault.path` (default
    /// `<stateDir>/wiki/main`), or with `vault.scope: "agent"` the agent's folder under it
    /// (default `<stateDir>/wiki/<agentId>`); `None` when the plugin is disabled.
    pub fn wiki_vault(&self) -> Option<PathBuf> {
        let wiki = &self.wiki;
        wiki.enabled
            .then(|| match (&wiki.vault_path, wiki.agent_scope) {
                (Some(path), false) => self.state_dir.join(path),
                (None, false) => self.state_dir.join("wiki").join("main"),
                (Some(parent), true) => self.state_dir.join(parent).join(&self.agent_id),
                (None, true) => self.state_dir.join("wiki").join(&self.agent_id),
            })
    }

    /// Where OpenClaw writes this agent's session transcripts,
    /// `<stateDir>/agents/<agentId>/sessions`, whether memoria indexes them or not.
    pub fn transcripts_dir(&self) -> std::path::PathBuf {
        self.state_dir
            .join("agents")
            .join(&self.agent_id)
            .join("sessions")
    }
}
