//! Parsing: the config's `memorySearch` layers, `memory` and `compaction` sections, read
//! with their types checked and unknown keys refused, before any default is applied.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::Value;

use super::error::ConfigError;
use super::node::{describe, Node};
use super::secret::{Secret, SecretProvider, SecretProviders, ONE_MIB, SECRET_SOURCES};
use super::settings::*;

const PROVIDERS: &[(&str, ProviderKind)] = &[
    ("auto", ProviderKind::Auto),
    ("none", ProviderKind::None),
    ("local", ProviderKind::Local),
    ("openai", ProviderKind::OpenAi),
    ("gemini", ProviderKind::Gemini),
    ("voyage", ProviderKind::Voyage),
    ("mistral", ProviderKind::Mistral),
    ("ollama", ProviderKind::Ollama),
    ("openai-compatible", ProviderKind::OpenAiCompatible),
    ("lmstudio", ProviderKind::LmStudio),
    ("deepinfra", ProviderKind::DeepInfra),
    ("bedrock", ProviderKind::Bedrock),
    ("github-copilot", ProviderKind::GithubCopilot),
];

const FALLBACKS: &[(&str, Option<ProviderKind>)] = &[
    ("none", None),
    ("openai", Some(ProviderKind::OpenAi)),
    ("gemini", Some(ProviderKind::Gemini)),
    ("local", Some(ProviderKind::Local)),
    ("voyage", Some(ProviderKind::Voyage)),
    ("mistral", Some(ProviderKind::Mistral)),
    ("ollama", Some(ProviderKind::Ollama)),
    ("openai-compatible", Some(ProviderKind::OpenAiCompatible)),
    ("lmstudio", Some(ProviderKind::LmStudio)),
    ("deepinfra", Some(ProviderKind::DeepInfra)),
];

const SOURCES: &[(&str, Source)] = &[("memory", Source::Memory), ("sessions", Source::Sessions)];

const FUSIONS: &[(&str, Fusion)] = &[
    ("weighted", Fusion::Weighted),
    ("rrf", Fusion::Rrf),
    ("minmax", Fusion::MinMax),
    ("zscore", Fusion::ZScore),
];

const BACKENDS: &[(&str, Backend)] = &[("builtin", Backend::Builtin), ("qmd", Backend::Qmd)];

const CITATIONS: &[(&str, Citations)] = &[
    ("auto", Citations::Auto),
    ("on", Citations::On),
    ("off", Citations::Off),
];

/// One `memorySearch` object as written: `None` / empty = not set at this level.
#[derive(Debug, Default)]
pub(super) struct Layer {
    pub(super) enabled: Option<bool>,
    pub(super) provider: Option<ProviderKind>,
    pub(super) model: Option<String>,
    pub(super) fallback: Option<Option<ProviderKind>>,
    pub(super) sources: Option<Vec<Source>>,
    pub(super) extra_paths: Vec<String>,
    pub(super) local_model_path: Option<String>,
    pub(super) local_model_cache_dir: Option<String>,
    pub(super) remote_base_url: Option<String>,
    pub(super) remote_api_key: Option<Secret>,
    pub(super) remote_headers: BTreeMap<String, String>,
    pub(super) input_type: Option<String>,
    pub(super) query_input_type: Option<String>,
    pub(super) document_input_type: Option<String>,
    pub(super) output_dimensionality: Option<i64>,
    pub(super) batch_enabled: Option<bool>,
    pub(super) batch_wait: Option<bool>,
    pub(super) batch_concurrency: Option<i64>,
    pub(super) batch_poll_interval_ms: Option<i64>,
    pub(super) batch_timeout_minutes: Option<i64>,
    pub(super) store_path: Option<String>,
    pub(super) vector_enabled: Option<bool>,
    pub(super) chunk_tokens: Option<i64>,
    pub(super) chunk_overlap: Option<i64>,
    pub(super) sync_on_session_start: Option<bool>,
    pub(super) sync_on_search: Option<bool>,
    pub(super) sync_watch: Option<bool>,
    pub(super) sync_watch_debounce_ms: Option<i64>,
    pub(super) sync_interval_minutes: Option<i64>,
    pub(super) sync_delta_bytes: Option<i64>,
    pub(super) sync_delta_messages: Option<i64>,
    pub(super) max_results: Option<i64>,
    pub(super) min_score: Option<f64>,
    pub(super) hybrid_enabled: Option<bool>,
    pub(super) vector_weight: Option<f64>,
    pub(super) text_weight: Option<f64>,
    pub(super) candidate_multiplier: Option<i64>,
    pub(super) fusion: Option<Fusion>,
    pub(super) mmr_enabled: Option<bool>,
    pub(super) mmr_lambda: Option<f64>,
    pub(super) decay_enabled: Option<bool>,
    pub(super) decay_half_life_days: Option<i64>,
    pub(super) cache_enabled: Option<bool>,
    pub(super) cache_max_entries: Option<i64>,
    pub(super) session_memory: Option<bool>,
}

impl Layer {
    /// Whether any `query.hybrid.*` key is set at this level.
    pub(super) fn sets_hybrid(&self) -> bool {
        self.hybrid_enabled.is_some()
            || self.vector_weight.is_some()
            || self.text_weight.is_some()
            || self.candidate_multiplier.is_some()
            || self.fusion.is_some()
            || self.mmr_enabled.is_some()
            || self.mmr_lambda.is_some()
            || self.decay_enabled.is_some()
            || self.decay_half_life_days.is_some()
    }
}

/// Everything read from the config before defaults and clamps are applied.
#[derive(Debug, Default)]
pub(super) struct Parsed {
    pub(super) defaults: Layer,
    pub(super) agent: Layer,
    /// The workspace and the key that set it.
    pub(super) workspace: Option<(String, String)>,
    pub(super) backend: Option<Backend>,
    pub(super) citations: Option<Citations>,
    pub(super) qmd: Option<super::qmd::QmdSettings>,
    /// `models.providers.<name>.apiKey`.
    pub(super) provider_keys: std::collections::BTreeMap<String, Secret>,
    pub(super) reserve_tokens_floor: Option<i64>,
    pub(super) flush_enabled: Option<bool>,
    pub(super) flush_soft_threshold_tokens: Option<i64>,
    pub(super) flush_system_prompt: Option<String>,
    pub(super) flush_prompt: Option<String>,
    /// The config uses the newer layout for this agent (`memory.search` or
    /// `agents.entries.<id>.memory.search`): OpenClaw 2026.9's behaviour applies.
    pub(super) newer_layout: bool,
    /// memoria's own temporal decay under the newer layout, where OpenClaw fixes it:
    /// `plugins.entries.memoria.config.temporalDecay` (`enabled`, `halfLifeDays`).
    pub(super) memoria_decay_enabled: Option<bool>,
    pub(super) memoria_decay_half_life_days: Option<i64>,
    /// `plugins.entries.memoria.config.store`: where the index is kept.
    pub(super) memoria_store: Option<StoreBackend>,
    /// `plugins.entries.memoria.config.passages`: the local model embeds long chunks'
    /// passages (memoria's own; default true).
    pub(super) memoria_passages: Option<bool>,
    /// `plugins.entries.memoria.config.ranking`: `memoria` or `openclaw`.
    pub(super) memoria_ranking: Option<Ranking>,
    /// `plugins.entries.memoria.config.args` and `.env`: what the plugin runs memoria with.
    pub(super) memoria_child_args: Vec<String>,
    pub(super) memoria_child_env: Vec<String>,
    /// `secrets.providers` and `secrets.defaults`.
    pub(super) secrets: SecretProviders,
    /// `plugins.entries.memory-wiki.enabled`.
    pub(super) wiki_enabled: Option<bool>,
    /// `plugins.entries.memory-wiki.config.vault.path`.
    pub(super) wiki_vault_path: Option<String>,
    /// `plugins.entries.memory-wiki.config.vault.scope` is `agent`.
    pub(super) wiki_agent_scope: Option<bool>,
    /// Unknown keys, ignored.
    pub(super) warnings: Vec<String>,
}

pub(super) fn parse(config: &Value, agent_id: &str) -> Result<Parsed, ConfigError> {
    let warnings = RefCell::new(Vec::new());
    let mut parsed = parse_with(config, agent_id, &warnings)?;
    parsed.warnings = warnings.into_inner();
    Ok(parsed)
}

fn parse_with(
    config: &Value,
    agent_id: &str,
    warnings: &RefCell<Vec<String>>,
) -> Result<Parsed, ConfigError> {
    let root = Node {
        path: String::new(),
        value: config,
        warnings,
    };
    if !config.is_object() {
        return Err(ConfigError::invalid(
            "(top level)",
            format!("expected an object, got {}", describe(config)),
        ));
    }
    let mut parsed = Parsed::default();

    // OpenClaw 2026.8+ layout: `memory.search.*` (defaults) and
    // `agents.entries.<id>.memory.search.*` (per agent), the same keys as `memorySearch`.
    let mut newer_defaults = None;
    if let Some(memory) = root.section("memory", &["backend", "citations", "qmd", "search"])? {
        parsed.backend = memory.get_choice("backend", BACKENDS)?;
        parsed.citations = memory.get_choice("citations", CITATIONS)?;
        parsed.qmd = match memory.object("qmd")? {
            Some(node) => Some(super::qmd::parse(&node)?),
            None => None,
        };
        if let Some(search) = memory.object("search")? {
            newer_defaults = Some((parse_layer(&search)?, search.path.clone()));
        }
    }
    parse_provider_keys(&root, &mut parsed)?;
    // OpenClaw's secret providers, for the SecretRefs of API keys.
    if let Some(secrets) = root.object("secrets")? {
        parsed.secrets = parse_secrets(&secrets)?;
    }
    parse_plugins(&root, &mut parsed)?;
    match root.object("agents")? {
        Some(agents) => parse_agents(&agents, agent_id, newer_defaults, &mut parsed, warnings)?,
        None => {
            if let Some((layer, _)) = newer_defaults {
                parsed.defaults = layer;
                parsed.newer_layout = true;
            }
        }
    }
    Ok(parsed)
}

/// API keys OpenClaw keeps with its chat models: `models.providers.<name>.apiKey`. The rest
/// of `models` configures chat models, which memoria does not use (no warnings).
fn parse_provider_keys(root: &Node, parsed: &mut Parsed) -> Result<(), ConfigError> {
    let providers = match root.object("models")? {
        Some(models) => models.object("providers")?,
        None => None,
    };
    if let Some(providers) = providers {
        for name in ["openai", "google", "voyage", "mistral", "ollama"] {
            if let Some(provider) = providers.object(name)? {
                if let Some(key) = provider.get_secret("apiKey")? {
                    parsed.provider_keys.insert(name.to_string(), key);
                }
            }
        }
    }

    Ok(())
}

/// Plugins' config that memoria reads: its own keys (`plugins.entries.memoria.config`, the
/// one place OpenClaw's strict schema leaves to a plugin: `memory.search` refuses unknown
/// keys) and the memory-wiki plugin's vault (read for `corpus: "wiki"`; the rest of its
/// config is its own).
fn parse_plugins(root: &Node, parsed: &mut Parsed) -> Result<(), ConfigError> {
    let entries = match root.object("plugins")? {
        Some(plugins) => plugins.object("entries")?,
        None => None,
    };
    let entry_config = |name: &str| -> Result<Option<Node<'_>>, ConfigError> {
        match &entries {
            Some(entries) => match entries.object(name)? {
                Some(entry) => entry.object("config"),
                None => Ok(None),
            },
            None => Ok(None),
        }
    };
    if let Some(entry) = match &entries {
        Some(entries) => entries.object("memory-wiki")?,
        None => None,
    } {
        parsed.wiki_enabled = entry.get_bool("enabled")?;
    }
    if let Some(vault) = match entry_config("memory-wiki")? {
        Some(config) => config.object("vault")?,
        None => None,
    } {
        parsed.wiki_vault_path = vault.get_nonblank("path")?;
        parsed.wiki_agent_scope =
            vault.get_choice("scope", &[("global", false), ("agent", true)])?;
    }
    if let Some(config) = entry_config("memoria")? {
        parsed.memoria_child_args = config.get_string_array("args")?.unwrap_or_default();
        parsed.memoria_child_env = config
            .get_string_map("env")?
            .unwrap_or_default()
            .into_keys()
            .collect();
        parsed.memoria_passages = config.get_bool("passages")?;
        parsed.memoria_ranking = config.get_choice(
            "ranking",
            &[
                ("memoria", Ranking::Memoria),
                ("openclaw", Ranking::OpenClaw),
            ],
        )?;
        if let Some(store) = config.section("store", &["backend", "uri", "storageOptions"])? {
            parsed.memoria_store = Some(parse_store(&store)?);
        }
        if let Some(decay) = config.section("temporalDecay", &["enabled", "halfLifeDays"])? {
            parsed.memoria_decay_enabled = decay.get_bool("enabled")?;
            parsed.memoria_decay_half_life_days = decay.get_int("halfLifeDays")?;
        }
    }

    Ok(())
}

/// `plugins.entries.memoria.config.store`: `backend` (`local` or `lancedb`; `lancedb` when
/// `uri` is given, `local` when nothing is), `uri` (required with `lancedb`),
/// `storageOptions` (strings).
fn parse_store(store: &Node) -> Result<StoreBackend, ConfigError> {
    let lancedb = store.get_choice("backend", &[("local", false), ("lancedb", true)])?;
    let uri = store.get_nonblank("uri")?;
    let options: Vec<(String, String)> = store
        .get_string_map("storageOptions")?
        .unwrap_or_default()
        .into_iter()
        .collect();
    if lancedb == Some(false) {
        let stray = match (&uri, options.is_empty()) {
            (Some(_), _) => Some("uri"),
            (None, false) => Some("storageOptions"),
            (None, true) => None,
        };
        return match stray {
            Some(key) => Err(ConfigError::Invalid {
                path: store.key_path(key),
                message: "applies to the lancedb backend only (backend is \"local\")".into(),
            }),
            None => Ok(StoreBackend::Local),
        };
    }
    match uri {
        Some(uri) => Ok(StoreBackend::LanceDb { uri, options }),
        None if lancedb.is_none() && options.is_empty() => Ok(StoreBackend::Local),
        None => Err(ConfigError::Invalid {
            path: store.key_path("uri"),
            message: "the lancedb backend needs a URI (s3://bucket/prefix or a directory)".into(),
        }),
    }
}

/// `agents.*`: the default workspace and `memorySearch`, compaction, and this agent's entry
/// in `agents.list` (older layout) or `agents.entries` (newer), each layer from the layout
/// that wins. Every entry is validated, so a typo in one agent's block is reported whichever
/// agent runs.
fn parse_agents(
    agents: &Node,
    agent_id: &str,
    newer_defaults: Option<(Layer, String)>,
    parsed: &mut Parsed,
    warnings: &RefCell<Vec<String>>,
) -> Result<(), ConfigError> {
    let mut default_workspace = None;
    let mut older_defaults = None;
    if let Some(defaults) = agents.object("defaults")? {
        default_workspace = defaults
            .get_nonblank("workspace")?
            .map(|ws| (ws, "agents.defaults.workspace".to_string()));
        if let Some(ms) = defaults.child("memorySearch")? {
            older_defaults = Some((parse_layer(&ms)?, ms.path.clone()));
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

    let mut found = false;
    let mut listed_block = false;
    for entry in agents.get_array("list")?.unwrap_or_default() {
        entry.as_object()?;
        let id = entry.get_string("id")?;
        let workspace = entry
            .get_nonblank("workspace")?
            .map(|ws| (ws, entry.key_path("workspace")));
        let block = entry.child("memorySearch")?;
        let layer = match &block {
            Some(ms) => parse_layer(ms)?,
            None => Layer::default(),
        };
        if !found && id.as_deref() == Some(agent_id) {
            found = true;
            listed_block = block.is_some();
            parsed.agent = layer;
            parsed.workspace = workspace;
        }
    }
    // The newer layout's per-agent block; every entry is validated, as for `list`.
    let mut newer_agent = None;
    if let Some(entries) = agents.object("entries")? {
        for id in entries.as_object()?.keys() {
            let Some(entry) = entries.object(id)? else {
                continue;
            };
            let workspace = entry
                .get_nonblank("workspace")?
                .map(|ws| (ws, entry.key_path("workspace")));
            let search = match entry.object("memory")? {
                Some(memory) => memory.object("search")?,
                None => None,
            };
            let layer = match &search {
                Some(search) => Some((parse_layer(search)?, search.path.clone())),
                None => None,
            };
            if id == agent_id {
                newer_agent = layer;
                if workspace.is_some() {
                    parsed.workspace = workspace;
                }
            }
        }
    }
    parsed.newer_layout = newer_defaults.is_some() || newer_agent.is_some();
    // Where both layouts set a level, the newer one wins as a whole (it is what current
    // OpenClaw releases read) and `status` names the block that is ignored.
    parsed.defaults = pick_layout(newer_defaults, older_defaults, warnings);
    if let Some((layer, path)) = newer_agent {
        if listed_block {
            warnings.borrow_mut().push(format!(
                "{path} and agents.list[].memorySearch both configure agent {agent_id}: \
                 {path} wins, the agents.list block is ignored"
            ));
        }
        parsed.agent = layer;
    }
    parsed.workspace = parsed.workspace.take().or(default_workspace);
    Ok(())
}

/// The defaults layer from the newer layout, else the older one; a warning when both exist.
fn pick_layout(
    newer: Option<(Layer, String)>,
    older: Option<(Layer, String)>,
    warnings: &RefCell<Vec<String>>,
) -> Layer {
    match (newer, older) {
        (Some((layer, new_path)), Some((_, old_path))) => {
            warnings.borrow_mut().push(format!(
                "{new_path} and {old_path} are both set: {new_path} (the newer layout) wins, \
                 {old_path} is ignored"
            ));
            layer
        }
        (Some((layer, _)), None) | (None, Some((layer, _))) => layer,
        (None, None) => Layer::default(),
    }
}

/// Parses one `memorySearch` object (types strict; unknown keys are warnings).
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
        "inputType",
        "queryInputType",
        "documentInputType",
        "outputDimensionality",
    ])?;
    let mut l = Layer {
        enabled: ms.get_bool("enabled")?,
        provider: ms.get_choice("provider", PROVIDERS)?,
        model: ms.get_nonblank("model")?,
        input_type: ms.get_nonblank("inputType")?,
        query_input_type: ms.get_nonblank("queryInputType")?,
        document_input_type: ms.get_nonblank("documentInputType")?,
        output_dimensionality: ms.get_int("outputDimensionality")?,
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
        l.remote_api_key = remote.get_secret("apiKey")?;
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
        // `driver` exists in OpenClaw's schema with the single value "sqlite", and
        // `vector.extensionPath` locates sqlite-vec: memoria has neither, and says so.
        if store.get_choice("driver", &[("sqlite", ())])?.is_some() {
            store.warnings.borrow_mut().push(format!(
                "{}: memoria keeps its index in its own directory format, not SQLite: ignored",
                store.key_path("driver")
            ));
        }
        l.store_path = store.get_nonblank("path")?;
        if let Some(vector) = store.section("vector", &["enabled", "extensionPath"])? {
            l.vector_enabled = vector.get_bool("enabled")?;
            if vector.get_string("extensionPath")?.is_some() {
                vector.warnings.borrow_mut().push(format!(
                    "{}: sqlite-vec is not used (memoria has its own vector index): ignored",
                    vector.key_path("extensionPath")
                ));
            }
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

/// `secrets`: the providers SecretRefs name (`~` in paths is expanded at resolution).
fn parse_secrets(secrets: &Node) -> Result<SecretProviders, ConfigError> {
    let mut out = SecretProviders::default();
    if let Some(defaults) = secrets.object("defaults")? {
        for source in ["env", "file", "exec", "store"] {
            if let Some(name) = defaults.get_nonblank(source)? {
                out.defaults.insert(source.to_string(), name);
            }
        }
    }
    let Some(providers) = secrets.object("providers")? else {
        return Ok(out);
    };
    for name in providers.as_object()?.keys() {
        let Some(p) = providers.object(name)? else {
            continue;
        };
        let source = p
            .get_choice("source", SECRET_SOURCES)?
            .ok_or_else(|| ConfigError::invalid(&p.key_path("source"), "missing"))?;
        let bytes = |key: &str| -> Result<u64, ConfigError> {
            Ok(p.get_int(key)?.map_or(ONE_MIB, |n| n.max(1) as u64))
        };
        let provider = match source {
            "env" => SecretProvider::Env {
                allowlist: p.get_string_array("allowlist")?,
            },
            "file" => SecretProvider::File {
                path: std::path::PathBuf::from(
                    p.get_nonblank("path")?
                        .ok_or_else(|| ConfigError::invalid(&p.key_path("path"), "missing"))?,
                ),
                single_value: p.get_choice("mode", &[("json", false), ("singleValue", true)])?
                    == Some(true),
                max_bytes: bytes("maxBytes")?,
            },
            "exec" if p.child("pluginIntegration")?.is_some() => SecretProvider::Unsupported {
                source: "exec".into(),
                why: format!(
                    "{} is managed by a plugin (pluginIntegration), whose command only OpenClaw \
                     resolves: give the provider a command, or use an env or file SecretRef",
                    p.path
                ),
            },
            "exec" => SecretProvider::Exec {
                command: std::path::PathBuf::from(
                    p.get_nonblank("command")?
                        .ok_or_else(|| ConfigError::invalid(&p.key_path("command"), "missing"))?,
                ),
                args: p.get_string_array("args")?.unwrap_or_default(),
                pass_env: p.get_string_array("passEnv")?.unwrap_or_default(),
                env: p.get_string_map("env")?.unwrap_or_default(),
                timeout_ms: p.get_int("timeoutMs")?.map_or(5000, |n| n.max(1) as u64),
                max_output_bytes: bytes("maxOutputBytes")?,
                json_only: p.get_bool("jsonOnly")?.unwrap_or(true),
            },
            _ => SecretProvider::Unsupported {
                source: "store".into(),
                why: "the store source (OpenClaw's SQLite secret store) is not readable by \
                      memoria: use an env, file or exec SecretRef"
                    .into(),
            },
        };
        out.providers.insert(name.clone(), provider);
    }
    Ok(out)
}
