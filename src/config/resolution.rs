//! Resolution: `agent ?? defaults ?? builtin` for every leaf, then clamps, weight
//! normalisation and path expansion.

use std::path::PathBuf;

use super::env::{expand_home, state_dir, Env};
use super::parse::{Layer, Parsed};
use super::secret::{SecretProvider, SecretProviders};
use super::settings::*;

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

impl Settings {
    /// The settings of an empty config: every builtin default.
    pub fn builtin(agent_id: &str, env: &Env) -> Settings {
        finalize(&Parsed::default(), agent_id, env)
    }
}

pub(super) fn finalize(p: &Parsed, agent_id: &str, env: &Env) -> Settings {
    let state_dir = state_dir(env);

    let session_memory = pick(p, |l| &l.session_memory).unwrap_or(false);
    let configured_sources = pick(p, |l| &l.sources).unwrap_or_default();
    let mut warnings = p.warnings.clone();
    if !session_memory && configured_sources.contains(&Source::Sessions) {
        warnings.push(
            "sources: \"sessions\" is ignored while experimental.sessionMemory is false: \
             session transcripts are not indexed"
                .into(),
        );
    }
    // The QMD settings act only with the QMD backend; what they hold that memoria does
    // not act on is named.
    let mut qmd = p.qmd.clone().unwrap_or_default();
    qmd.expand_home(env);
    if p.backend == Some(Backend::Qmd) {
        warnings.extend(qmd.unused.iter().cloned());
    } else if p.qmd.is_some() {
        warnings.push(
            "memory.qmd is set, but memory.backend is not \"qmd\": the QMD sidecar does not \
             run and memory.qmd.paths are not indexed"
                .into(),
        );
    }
    let provider = pick(p, |l| &l.provider).unwrap_or(ProviderKind::Auto);
    if pick(p, |l| &l.batch_enabled) == Some(true)
        && !matches!(
            provider,
            ProviderKind::OpenAi | ProviderKind::Gemini | ProviderKind::Auto
        )
    {
        warnings.push(format!(
            "remote.batch.enabled is true, but batch indexing applies to the openai and gemini \
             providers only (provider: {}): it is ignored",
            provider.as_str()
        ));
    }
    let mut sources: Vec<Source> = configured_sources
        .into_iter()
        .filter(|s| *s != Source::Sessions || session_memory)
        .collect();
    sources.sort();
    sources.dedup();
    if sources.is_empty() {
        sources.push(Source::Memory);
    }

    let extra_paths = extra_paths(p, env);

    let tokens = int_at_least(pick(p, |l| &l.chunk_tokens), 400, 1);
    let overlap = int_at_least(pick(p, |l| &l.chunk_overlap), 80, 0).min(tokens - 1);
    let ranking = env.ranking.or(p.memoria_ranking).unwrap_or_default();
    // OpenClaw's ranking is parity with 2026.9, which reads only the newer layout: it
    // brings 2026.9's semantics with it.
    let semantics = match p.newer_layout || ranking == Ranking::OpenClaw {
        true => Semantics::OpenClaw,
        false => Semantics::Documented,
    };
    let query = query_settings(p, semantics, ranking, &mut warnings);
    if ranking == Ranking::OpenClaw && p.memoria_passages == Some(true) {
        warnings.push(
            "plugins.entries.memoria.config.passages: OpenClaw's ranking embeds no passages \
             (its vector side scores chunks alone, as OpenClaw 2026.9's does): ignored"
                .into(),
        );
    }

    let backend = match &env.store_uri {
        Some(uri) => StoreBackend::LanceDb {
            uri: uri.clone(),
            options: match &p.memoria_store {
                Some(StoreBackend::LanceDb { options, .. }) => options.clone(),
                _ => Vec::new(),
            },
        },
        None => p.memoria_store.clone().unwrap_or_default(),
    };
    if matches!(backend, StoreBackend::LanceDb { .. }) {
        if pick(p, |l| &l.cache_max_entries).is_some() {
            warnings.push(
                "cache.maxEntries: fleet mode's embedding cache is one table shared by all \
                 agents, kept whole: no per-agent cap applies"
                    .into(),
            );
        }
        if pick(p, |l| &l.store_path).is_some() {
            warnings.push(
                "store.path: fleet mode keeps the index under plugins.entries.memoria.config.\
                 store.uri (or --store-uri); store.path holds only this node's live-sync state"
                    .into(),
            );
        }
    }

    let (workspace, workspace_origin) = match &p.workspace {
        Some((ws, origin)) => (expand_home(ws, env), origin.clone()),
        None => (
            env.home_dir().join(".openclaw").join("workspace"),
            "the default, ~/.openclaw/workspace".to_string(),
        ),
    };

    Settings {
        semantics,
        ranking,
        agent_id: agent_id.to_string(),
        warnings,
        plugin_child: plugin_child(p),
        workspace,
        workspace_origin,
        enabled: pick(p, |l| &l.enabled).unwrap_or(true),
        provider,
        model: pick(p, |l| &l.model),
        fallback: pick(p, |l| &l.fallback).unwrap_or(None),
        sources,
        extra_paths,
        local: local_settings(p, env),
        remote: remote_settings(p),
        store: StoreSettings {
            dir: pick(p, |l| &l.store_path)
                .as_deref()
                .map(|raw| store_dir(raw, agent_id, env)),
            vector_enabled: pick(p, |l| &l.vector_enabled).unwrap_or(true),
            backend,
        },
        chunking: ChunkingSettings {
            tokens: to_usize(tokens),
            overlap: to_usize(overlap),
        },
        sync: sync_settings(p),
        query,
        cache: CacheSettings {
            enabled: pick(p, |l| &l.cache_enabled).unwrap_or(true),
            max_entries: to_usize(int_at_least(pick(p, |l| &l.cache_max_entries), 50_000, 1)),
        },
        session_memory,
        backend: p.backend.unwrap_or(Backend::Builtin),
        qmd,
        secrets: secret_paths(p.secrets.clone(), env),
        provider_keys: p.provider_keys.clone(),
        citations: p.citations.unwrap_or(Citations::Auto),
        compaction: compaction_settings(p),
        wiki: wiki_settings(p, env),
        state_dir,
    }
}

/// `local.*`; `~` is expanded in every path read from the config.
/// What the OpenClaw plugin adds to memoria's command line and environment (see
/// [`Settings::plugin_child`]).
fn plugin_child(p: &Parsed) -> Option<String> {
    let mut parts = Vec::new();
    if !p.memoria_child_args.is_empty() {
        parts.push(format!("args {:?}", p.memoria_child_args));
    }
    if !p.memoria_child_env.is_empty() {
        parts.push(format!("env {}", p.memoria_child_env.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn local_settings(p: &Parsed, env: &Env) -> LocalSettings {
    LocalSettings {
        // `~` is expanded in every path read from the config.
        model_path: pick(p, |l| &l.local_model_path).map(|path| match path.starts_with("hf:") {
            true => path,
            false => expand_home(&path, env).display().to_string(),
        }),
        model_cache_dir: pick(p, |l| &l.local_model_cache_dir)
            .map(|dir| expand_home(&dir, env).display().to_string()),
        passages: p.memoria_passages.unwrap_or(true),
    }
}

/// `remote.*`: the agent's headers over the defaults'.
fn remote_settings(p: &Parsed) -> RemoteSettings {
    let mut headers = p.defaults.remote_headers.clone();
    headers.extend(p.agent.remote_headers.clone());
    RemoteSettings {
        base_url: pick(p, |l| &l.remote_base_url),
        api_key: pick(p, |l| &l.remote_api_key),
        headers,
        input_type: pick(p, |l| &l.input_type),
        query_input_type: pick(p, |l| &l.query_input_type),
        document_input_type: pick(p, |l| &l.document_input_type),
        output_dimensionality: pick(p, |l| &l.output_dimensionality)
            .map(|d| u32::try_from(d.max(1)).unwrap_or(u32::MAX)),
        batch: BatchSettings {
            enabled: pick(p, |l| &l.batch_enabled).unwrap_or(true),
            wait: pick(p, |l| &l.batch_wait).unwrap_or(true),
            concurrency: to_usize(int_at_least(pick(p, |l| &l.batch_concurrency), 2, 1)),
            poll_interval_ms: int_at_least(pick(p, |l| &l.batch_poll_interval_ms), 2000, 0),
            timeout_minutes: int_at_least(pick(p, |l| &l.batch_timeout_minutes), 60, 1),
        },
    }
}

/// `sync.*`.
fn sync_settings(p: &Parsed) -> SyncSettings {
    SyncSettings {
        on_session_start: pick(p, |l| &l.sync_on_session_start).unwrap_or(true),
        on_search: pick(p, |l| &l.sync_on_search).unwrap_or(true),
        watch: pick(p, |l| &l.sync_watch).unwrap_or(true),
        watch_debounce_ms: int_at_least(pick(p, |l| &l.sync_watch_debounce_ms), 1500, 0),
        interval_minutes: int_at_least(pick(p, |l| &l.sync_interval_minutes), 0, 0),
        sessions: SessionSyncSettings {
            delta_bytes: int_at_least(pick(p, |l| &l.sync_delta_bytes), 100_000, 0),
            delta_messages: int_at_least(pick(p, |l| &l.sync_delta_messages), 50, 0),
        },
    }
}

/// `agents.defaults.compaction`.
fn compaction_settings(p: &Parsed) -> CompactionSettings {
    CompactionSettings {
        reserve_tokens_floor: int_at_least(p.reserve_tokens_floor, 20_000, 0),
        memory_flush: MemoryFlushSettings {
            enabled: p.flush_enabled.unwrap_or(true),
            soft_threshold_tokens: int_at_least(p.flush_soft_threshold_tokens, 4000, 0),
            system_prompt: p.flush_system_prompt.clone(),
            prompt: p.flush_prompt.clone(),
        },
    }
}

/// The memory-wiki plugin's vault.
fn wiki_settings(p: &Parsed, env: &Env) -> WikiSettings {
    WikiSettings {
        enabled: p.wiki_enabled.unwrap_or(true),
        vault_path: p
            .wiki_vault_path
            .as_deref()
            .map(|path| expand_home(path, env)),
        agent_scope: p.wiki_agent_scope.unwrap_or(false),
    }
}

/// `extraPaths` of the defaults and the agent, `~` expanded, blank and repeated ones left out.
fn extra_paths(p: &Parsed, env: &Env) -> Vec<String> {
    let mut extra_paths: Vec<String> = Vec::new();
    for path in p.defaults.extra_paths.iter().chain(&p.agent.extra_paths) {
        let path = match path.trim() {
            home if home.starts_with('~') => expand_home(home, env).display().to_string(),
            path => path.to_string(),
        };
        if !path.is_empty() && !extra_paths.contains(&path) {
            extra_paths.push(path);
        }
    }
    extra_paths
}

/// `query.*`: under OpenClaw's ranking, 2026.9's fixed hybrid behaviour (weights 0.7 / 0.3,
/// MMR at λ 0.7, a 30-day temporal decay), whose decay memoria's
/// `plugins.entries.memoria.config.temporalDecay` may change; under memoria's, as
/// configured, in either layout (the plugin's `temporalDecay` is the newer layout's decay
/// key).
fn query_settings(
    p: &Parsed,
    semantics: Semantics,
    ranking: Ranking,
    warnings: &mut Vec<String>,
) -> QuerySettings {
    let max_results = to_usize(int_at_least(pick(p, |l| &l.max_results), 6, 1));
    let configured_min_score = pick(p, |l| &l.min_score);
    let min_score_configured = configured_min_score.is_some();
    let min_score = clamp01(configured_min_score.unwrap_or(0.35));
    if ranking == Ranking::OpenClaw {
        if [&p.defaults, &p.agent].iter().any(|l| l.sets_hybrid()) {
            warnings.push(
                "query.hybrid is retired in OpenClaw 2026.9 (its weights, MMR and temporal \
                 decay are fixed there): ignored under the openclaw ranking; its decay is set \
                 by plugins.entries.memoria.config.temporalDecay"
                    .into(),
            );
        }
        return QuerySettings {
            max_results,
            min_score,
            min_score_configured,
            hybrid: HybridSettings {
                enabled: true,
                vector_weight: 0.7,
                text_weight: 0.3,
                candidate_multiplier: 4,
                fusion: Fusion::Weighted,
                mmr: MmrSettings {
                    enabled: true,
                    lambda: 0.7,
                },
                temporal_decay: TemporalDecaySettings {
                    enabled: p.memoria_decay_enabled.unwrap_or(true),
                    half_life_days: int_at_least(p.memoria_decay_half_life_days, 30, 1) as f64,
                },
            },
        };
    }
    // The plugin's temporalDecay is the memory.search layout's decay key. The older layout
    // has its own, which wins field by field where it is set; the plugin's key fills the
    // rest, so it acts in every layout (a key that did nothing without a memory.search
    // block confused the plugin's users).
    let (decay_enabled, decay_half_life) = match semantics {
        Semantics::OpenClaw => (p.memoria_decay_enabled, p.memoria_decay_half_life_days),
        Semantics::Documented => {
            let enabled = pick(p, |l| &l.decay_enabled);
            let half_life = pick(p, |l| &l.decay_half_life_days);
            for (field, older, plugin) in [
                (
                    "enabled",
                    enabled.is_some(),
                    p.memoria_decay_enabled.is_some(),
                ),
                (
                    "halfLifeDays",
                    half_life.is_some(),
                    p.memoria_decay_half_life_days.is_some(),
                ),
            ] {
                if older && plugin {
                    warnings.push(format!(
                        "plugins.entries.memoria.config.temporalDecay.{field} is not used: \
                         query.hybrid.temporalDecay.{field} sets it in this layout"
                    ));
                }
            }
            (
                enabled.or(p.memoria_decay_enabled),
                half_life.or(p.memoria_decay_half_life_days),
            )
        }
    };
    // A config that names weights gets the documented formula with them; one that names
    // neither weights nor a fusion gets memoria's: z-score fusion at 0.5 / 0.5, which
    // `memoria eval` measured best (docs/ranking.md, "How memoria ranks").
    let (vector_weight, text_weight) = (pick(p, |l| &l.vector_weight), pick(p, |l| &l.text_weight));
    let names_weights = vector_weight.is_some() || text_weight.is_some();
    let fusion = pick(p, |l| &l.fusion).unwrap_or(match names_weights {
        true => Fusion::Weighted,
        false => Fusion::ZScore,
    });
    let (default_vector, default_text) = match fusion {
        Fusion::ZScore => (0.5, 0.5),
        Fusion::MinMax => (0.55, 0.45),
        Fusion::Weighted | Fusion::Rrf => (0.7, 0.3),
    };
    let vector_weight = clamp01(vector_weight.unwrap_or(default_vector));
    let text_weight = clamp01(text_weight.unwrap_or(default_text));
    let sum = vector_weight + text_weight;
    let (vector_weight, text_weight) = if sum > 0.0 {
        (vector_weight / sum, text_weight / sum)
    } else {
        (default_vector, default_text)
    };
    QuerySettings {
        max_results,
        min_score,
        min_score_configured,
        hybrid: HybridSettings {
            enabled: pick(p, |l| &l.hybrid_enabled).unwrap_or(true),
            vector_weight,
            text_weight,
            candidate_multiplier: to_usize(
                int_at_least(pick(p, |l| &l.candidate_multiplier), 4, 1).min(20),
            ),
            fusion,
            mmr: MmrSettings {
                enabled: pick(p, |l| &l.mmr_enabled).unwrap_or(false),
                lambda: clamp01(pick(p, |l| &l.mmr_lambda).unwrap_or(0.7)),
            },
            temporal_decay: TemporalDecaySettings {
                enabled: decay_enabled.unwrap_or(false),
                half_life_days: int_at_least(decay_half_life, 30, 1) as f64,
            },
        },
    }
}

/// See [`StoreSettings::dir`]: a configured `store.path` as a directory (relative paths
/// stay relative: [`Settings::store_dir`] joins them to the state dir).
fn store_dir(raw: &str, agent_id: &str, env: &Env) -> PathBuf {
    let mut dir = expand_home(&raw.replace("{agentId}", agent_id), env);
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

/// `secrets` with `~` expanded in the file providers' paths and the exec commands.
fn secret_paths(mut secrets: SecretProviders, env: &Env) -> SecretProviders {
    for provider in secrets.providers.values_mut() {
        match provider {
            SecretProvider::File { path, .. } | SecretProvider::Exec { command: path, .. } => {
                if let Some(text) = path.to_str() {
                    *path = expand_home(text, env);
                }
            }
            _ => {}
        }
    }
    secrets
}
