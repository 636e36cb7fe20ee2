//! Table-driven tests of parsing and resolution, through the public entry points.

use super::*;
use serde_json::json;
use std::path::{Path, PathBuf};

fn env() -> Env {
    Env {
        home: Some(PathBuf::from("/home/u")),
        state_dir: None,
        config_path: None,
        ranking: None,
        store_uri: None,
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
        ("{extraPaths: ['~/notes', '~/notes']}", get!(extra_paths), "[\"/home/u/notes\"]"),
        ("{}", get!(local), "LocalSettings { model_path: None, model_cache_dir: None, passages: true }"),
        ("{local: {modelPath: 'hf:o/r', modelCacheDir: '~/c'}}", get!(local), "LocalSettings { model_path: Some(\"hf:o/r\"), model_cache_dir: Some(\"/home/u/c\"), passages: true }"),
        ("{local: {modelPath: '~/models/gemma'}}", get!(local), "LocalSettings { model_path: Some(\"/home/u/models/gemma\"), model_cache_dir: None, passages: true }"),
        ("{}", get!(remote.base_url), "None"),
        ("{remote: {baseUrl: 'https://x/v1/'}}", get!(remote.base_url), "Some(\"https://x/v1/\")"),
        ("{}", get!(remote.api_key), "None"),
        ("{remote: {apiKey: 'k'}}", get!(remote.api_key), "Some(Literal(<redacted>))"),
        ("{}", get!(remote.headers), "{}"),
        ("{remote: {headers: {'X-A': '1'}}}", get!(remote.headers), "{\"X-A\": \"1\"}"),
        ("{}", get!(remote.batch), "BatchSettings { enabled: true, wait: true, concurrency: 2, poll_interval_ms: 2000, timeout_minutes: 60 }"),
        ("{remote: {batch: {enabled: true, wait: false, concurrency: 5, pollIntervalMs: 10, timeoutMinutes: 3}}}", get!(remote.batch), "BatchSettings { enabled: true, wait: false, concurrency: 5, poll_interval_ms: 10, timeout_minutes: 3 }"),
        ("{remote: {batch: {concurrency: 0, pollIntervalMs: -5, timeoutMinutes: -1}}}", get!(remote.batch), "BatchSettings { enabled: true, wait: true, concurrency: 1, poll_interval_ms: 0, timeout_minutes: 1 }"),
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
        // No weights named: memoria's z-score fusion at 0.5 / 0.5; a weight named, or the
        // weighted formula asked for: the documented 0.7 / 0.3 defaults; min-max asked for:
        // 0.55 / 0.45.
        ("{}", get!(query.hybrid.vector_weight), "0.5"),
        ("{}", get!(query.hybrid.text_weight), "0.5"),
        ("{query: {hybrid: {fusion: 'weighted'}}}", get!(query.hybrid.vector_weight), "0.7"),
        ("{query: {hybrid: {textWeight: 0.3}}}", get!(query.hybrid.vector_weight), "0.7"),
        ("{query: {hybrid: {textWeight: 0.3}}}", get!(query.hybrid.fusion), "Weighted"),
        ("{query: {hybrid: {vectorWeight: 0.7, textWeight: 0.3}}}", get!(query.hybrid.fusion), "Weighted"),
        ("{query: {hybrid: {fusion: 'minmax'}}}", get!(query.hybrid.text_weight), "0.45"),
        ("{query: {hybrid: {vectorWeight: 0.5, textWeight: 0.5}}}", get!(query.hybrid.vector_weight), "0.5"),
        ("{query: {hybrid: {vectorWeight: 1, textWeight: 1}}}", get!(query.hybrid.text_weight), "0.5"),
        // f64 end to end, as JavaScript computes it: 0.3 / 0.4 is 0.7499999999999999 there too.
        ("{query: {hybrid: {vectorWeight: 0.3, textWeight: 0.1}}}", get!(query.hybrid.vector_weight), "0.7499999999999999"),
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
        ("{}", get!(query.hybrid.fusion), "ZScore"),
        ("{query: {hybrid: {fusion: 'zscore'}}}", get!(query.hybrid.fusion), "ZScore"),
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
        builtin.store_dir(),
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
    assert_eq!(work.remote.api_key, Some(Secret::Literal("k-work".into())));
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
        work.store_dir(),
        PathBuf::from("/home/u/.openclaw/memory/work")
    );

    // An entry without memorySearch, and an agent not in the list, get the defaults.
    for agent in ["main", "ghost"] {
        let s = resolve_str(MULTI, agent).unwrap();
        assert_eq!(s.provider, ProviderKind::OpenAi);
        assert_eq!(s.extra_paths, ["../team", "/srv/notes.md"]);
        assert_eq!(s.remote.api_key, Some(Secret::Literal("k-default".into())));
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
            "{agents: {defaults: {memorySearch: {chunking: {tokens: '3'}}}}}",
            "agents.defaults.memorySearch.chunking.tokens: expected an integer, got \"3\"",
        ),
        (
            "{agents: {defaults: {memorySearch: {provider: 'cohere'}}}}",
            "agents.defaults.memorySearch.provider: expected one of \"auto\", \"none\", \"local\", \"openai\", \"gemini\", \"voyage\", \"mistral\", \"ollama\", \"openai-compatible\", \"lmstudio\", \"deepinfra\", \"bedrock\", \"github-copilot\", got \"cohere\"",
        ),
        (
            "{agents: {defaults: {memorySearch: {fallback: 'auto'}}}}",
            "agents.defaults.memorySearch.fallback: expected one of \"none\", \"openai\", \"gemini\", \"local\", \"voyage\", \"mistral\", \"ollama\", \"openai-compatible\", \"lmstudio\", \"deepinfra\", got \"auto\"",
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
            "{agents: {defaults: {memorySearch: {query: {hybrid: {fusion: 'borda'}}}}}}",
            "agents.defaults.memorySearch.query.hybrid.fusion: expected one of \"weighted\", \"rrf\", \"minmax\", \"zscore\", got \"borda\"",
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
    let text = "{agents: {list: [{id: 'a'}, {id: 'b', memorySearch: {chunking: {tokens: 'x'}}}]}}";
    assert_eq!(
        err(text, "a"),
        "agents.list[1].memorySearch.chunking.tokens: expected an integer, got \"x\""
    );
}

/// Keys memoria does not know (a newer OpenClaw release, or a typo) are ignored and named
/// in the settings' warnings (shown by `status`), never a reason to refuse the config.
#[test]
fn unknown_keys_are_warnings() {
    let rows: &[(&str, &str)] = &[
        (
            "{agents: {list: [{id: 'a'}, {id: 'b', memorySearch: {chunking: {tokenz: 3}}}]}}",
            "agents.list[1].memorySearch.chunking.tokenz: unknown key, ignored (did you mean `tokens`?)",
        ),
        (
            "{agents: {defaults: {memorySearch: {providr: 'openai'}}}}",
            "agents.defaults.memorySearch.providr: unknown key, ignored (did you mean `provider`?)",
        ),
        (
            "{agents: {defaults: {memorySearch: {query: {maxresult: 3}}}}}",
            "agents.defaults.memorySearch.query.maxresult: unknown key, ignored (did you mean `maxResults`?)",
        ),
        (
            "{agents: {defaults: {memorySearch: {remote: {batch: {size: 1}}}}}}",
            "agents.defaults.memorySearch.remote.batch.size",
        ),
        ("{memory: {engine: 'x'}}", "memory.engine"),
        (
            "{agents: {defaults: {memorySearch: {remote: {apiKey: {source: 'env', id: 'K', scope: 1}}}}}}",
            "agents.defaults.memorySearch.remote.apiKey.scope",
        ),
    ];
    for (text, key) in rows {
        let settings = resolve_str(text, "a").unwrap_or_else(|e| panic!("{text}: {e}"));
        let want = match key.contains(": unknown key") {
            true => key.to_string(),
            false => format!("{key}: unknown key, ignored (a newer OpenClaw setting, or a typo?)"),
        };
        assert_eq!(settings.warnings, vec![want], "config = {text}");
    }
    assert!(with_ms("{provider: 'none'}").warnings.is_empty());
}

/// Accepted settings memoria does not act on yet are named in the warnings.
#[test]
fn settings_not_acted_on_are_warnings() {
    let warnings = with_ms("{provider: 'voyage', remote: {batch: {enabled: true}}}").warnings;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("remote.batch.enabled is true, but batch indexing applies"));
    let not_yet = [
        (
            json!({"memory": {"backend": "qmd", "qmd": {"update": {"commandTimeoutMs": 5}}}}),
            "memory.qmd.update.commandTimeoutMs: memoria writes",
        ),
        (
            json!({"memory": {"qmd": {"command": "qmd"}}}),
            "memory.qmd is set",
        ),
    ];
    let not_yet = not_yet.into_iter().chain([
        (
            json!({"agents": {"defaults": {"memorySearch": {"store": {"driver": "sqlite"}}}}}),
            "agents.defaults.memorySearch.store.driver: memoria keeps its index",
        ),
        (
            json!({"agents": {"defaults": {"memorySearch": {"store": {"vector": {"extensionPath": "/x/vec0.so"}}}}}}),
            "agents.defaults.memorySearch.store.vector.extensionPath: sqlite-vec is not used",
        ),
    ]);
    for (config, start) in not_yet {
        let warnings = resolve(&config, "main", &env()).unwrap().warnings;
        assert_eq!(warnings.len(), 1, "{config}: {warnings:?}");
        assert!(warnings[0].starts_with(start), "{warnings:?}");
    }
    for acted_on in [
        "{provider: 'openai', remote: {batch: {enabled: true}}}",
        "{provider: 'gemini', remote: {batch: {enabled: true}}}",
        "{remote: {batch: {enabled: false}}}",
    ] {
        assert!(with_ms(acted_on).warnings.is_empty(), "{acted_on}");
    }
}

/// `remote.apiKey` is a string or OpenClaw's SecretRef object, resolved from the environment.
#[test]
fn api_keys_accept_secret_refs() {
    let s = with_ms("{remote: {apiKey: {source: 'env', provider: 'default', id: 'MY_KEY'}}}");
    let key = s.remote.api_key.clone().unwrap();
    assert_eq!(
        key,
        Secret::Ref {
            source: "env".into(),
            provider: Some("default".into()),
            id: "MY_KEY".into()
        }
    );
    let var = |name: &str| (name == "MY_KEY").then(|| "sk-from-env".to_string());
    assert_eq!(key.resolve(var).as_deref(), Some("sk-from-env"));
    assert_eq!(key.resolve(|_| None), None);
    let file = with_ms("{remote: {apiKey: {source: 'file', id: '/run/key'}}}");
    assert_eq!(file.remote.api_key.unwrap().resolve(var), None);
    assert_eq!(
        with_ms("{remote: {apiKey: 'sk'}}")
            .remote
            .api_key
            .unwrap()
            .resolve(var)
            .as_deref(),
        Some("sk")
    );
    let errors = [
        (
            "{remote: {apiKey: {id: 'K'}}}",
            "remote.apiKey.source: missing",
        ),
        (
            "{remote: {apiKey: {source: 'vault', id: 'K'}}}",
            "remote.apiKey.source: expected one of",
        ),
        (
            "{remote: {apiKey: {source: 'env'}}}",
            "remote.apiKey.id: missing",
        ),
        (
            "{remote: {apiKey: 42}}",
            "remote.apiKey: expected a string or a SecretRef object, got 42",
        ),
    ];
    for (ms, want) in errors {
        let text = format!("{{agents: {{defaults: {{memorySearch: {ms}}}}}}}");
        let got = err(&text, "main");
        assert!(got.contains(want), "{ms}: {got}");
    }
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
    // `models.providers.*.apiKey` is read (remote providers' keys); the rest is not.
    let mut want = Settings::builtin("main", &env());
    want.provider_keys
        .insert("openai".into(), Secret::Literal("sk".into()));
    assert_eq!(s, want);
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
            with_ms(&ms).store_dir(),
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
    assert_eq!(s.store_dir(), PathBuf::from("/state/x"));
    assert_eq!(
        Settings::builtin("a", &custom).store_dir(),
        PathBuf::from("/state/memory/a")
    );
    // Derived paths follow a state dir changed after resolution: nothing is left stale.
    let mut moved = Settings::builtin("a", &custom);
    moved.state_dir = PathBuf::from("/elsewhere");
    assert_eq!(moved.store_dir(), PathBuf::from("/elsewhere/memory/a"));
    assert_eq!(
        moved.wiki_vault(),
        Some(PathBuf::from("/elsewhere/wiki/main"))
    );
    assert_eq!(
        moved.transcripts_dir(),
        PathBuf::from("/elsewhere/agents/a/sessions")
    );
    let mut relative = s.clone();
    relative.state_dir = PathBuf::from("/elsewhere");
    assert_eq!(relative.store_dir(), PathBuf::from("/elsewhere/x"));
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
        ranking: None,
        store_uri: None,
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
        (
            "{agents: {defaults: {workspace: '/d'}, list: [{id: 'main', workspace: '~/mine'}]}}",
            "/home/u/mine",
        ),
        (
            "{agents: {defaults: {workspace: '/d'}, list: [{id: 'other', workspace: '/o'}]}}",
            "/d",
        ),
        (
            "{agents: {list: [{id: 'main', workspace: ''}]}}",
            "/home/u/.openclaw/workspace",
        ),
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
        ranking: None,
        store_uri: None,
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
        ranking: None,
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

    // Resolution errors and warnings carry the file path.
    std::fs::write(
        &file,
        "{agents: {defaults: {memorySearch: {chunking: {tokenz: 1}}}}}",
    )
    .unwrap();
    assert_eq!(
        load_settings(&e, "main").unwrap().warnings,
        vec![format!(
            "{}: agents.defaults.memorySearch.chunking.tokenz: unknown key, ignored (did you \
             mean `tokens`?)",
            file.display()
        )]
    );
    std::fs::write(
        &file,
        "{agents: {defaults: {memorySearch: {chunking: {tokens: 'x'}}}}}",
    )
    .unwrap();
    assert_eq!(
        load_settings(&e, "main").unwrap_err().to_string(),
        format!(
            "{}: agents.defaults.memorySearch.chunking.tokens: expected an integer, got \"x\"",
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

#[test]
fn agent_ids_that_could_escape_are_refused() {
    for good in [
        "main",
        "work-2",
        "a_b.c",
        "A",
        &"x".repeat(MAX_AGENT_ID_LEN),
    ] {
        assert!(validate_agent_id(good).is_ok(), "{good}");
        assert!(resolve(&json!({}), good, &env()).is_ok(), "{good}");
    }
    let bad = [
        ("", "empty"),
        ("..", "starts with '.'"),
        ("../..", "starts with '.'"),
        (".hidden", "starts with '.'"),
        ("a/b", "'/' is not allowed"),
        ("a\\b", "'\\\\' is not allowed"),
        ("a b", "' ' is not allowed"),
        ("agent\u{e9}", "'\u{e9}' is not allowed"),
        (&"x".repeat(MAX_AGENT_ID_LEN + 1), "too long"),
    ];
    for (id, why) in bad {
        let err = resolve(&json!({}), id, &env()).unwrap_err().to_string();
        assert!(
            err.contains("invalid agent id") && err.contains(why),
            "{id}: {err}"
        );
    }
}

#[test]
fn deep_nesting_is_an_error_naming_file_line_and_column() {
    let deep = format!(
        "{{agents: {}1{}}}",
        "{a:".repeat(30_000),
        "}".repeat(30_000)
    );
    let err = parse_config_text(&deep, Path::new("deep.json5"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("deep.json5") && err.contains("line 1, column"),
        "{err}"
    );
    assert!(err.contains("nested deeper than 128"), "{err}");
    let on_line_3 = format!("// {{{{{{\n'[[[': \"{{\\\"\",\n{}", "[".repeat(200));
    let err = parse_config_text(&on_line_3, Path::new("c.json5"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 3, column 129"), "{err}");
    // Brackets in strings and comments do not count; a config at the limit parses.
    let at_limit = format!(
        "/* {{{{ */ {}{{'{{[': 1}}{}",
        "{a:".repeat(MAX_CONFIG_DEPTH - 1),
        "}".repeat(MAX_CONFIG_DEPTH - 1)
    );
    assert!(parse_config_text(&at_limit, Path::new("ok.json5")).is_ok());
}

/// `models.providers.<name>.apiKey`: a string or a SecretRef; wrong types name the key.
#[test]
fn provider_keys_from_models_providers() {
    let settings = resolve_str(
        "{models: {providers: {openai: {apiKey: 'sk-a', baseUrl: 'x', models: []}, \
         voyage: {apiKey: {source: 'env', id: 'VOYAGE_KEY'}}, anthropic: {apiKey: 'k'}}}}",
        "main",
    )
    .unwrap();
    assert_eq!(
        settings.provider_keys.keys().collect::<Vec<_>>(),
        ["openai", "voyage"]
    );
    assert_eq!(
        settings.provider_keys["voyage"].resolve(|v| (v == "VOYAGE_KEY").then(|| "vk".into())),
        Some("vk".into())
    );
    assert!(settings.warnings.is_empty(), "{:?}", settings.warnings);
    let err = resolve_str("{models: {providers: {openai: {apiKey: 3}}}}", "main")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("models.providers.openai.apiKey"), "{err}");
}

/// OpenClaw 2026.8+ layout: `memory.search.*` for defaults and
/// `agents.entries.<id>.memory.search.*` per agent; where both layouts set a level, the
/// newer wins as a whole and a warning names the ignored block.
#[test]
fn the_newer_config_layout() {
    let s = resolve_str(
        "{memory: {search: {provider: 'openai', query: {maxResults: 9}}}}",
        "main",
    )
    .unwrap();
    assert_eq!((s.provider, s.query.max_results), (ProviderKind::OpenAi, 9));
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);

    let text = "{memory: {search: {provider: 'openai', query: {maxResults: 9}}},
                 agents: {entries: {main: {workspace: '/w/main', memory: {search: {query: {maxResults: 3}}}},
                                    other: {memory: {search: {provider: 'gemini'}}}}}}";
    let s = resolve_str(text, "main").unwrap();
    assert_eq!((s.provider, s.query.max_results), (ProviderKind::OpenAi, 3));
    assert_eq!(s.workspace, std::path::PathBuf::from("/w/main"));
    let other = resolve_str(text, "other").unwrap();
    assert_eq!(
        (other.provider, other.query.max_results),
        (ProviderKind::Gemini, 9)
    );

    let both = resolve_str(
        "{memory: {search: {provider: 'openai'}},
          agents: {defaults: {memorySearch: {provider: 'local', chunking: {tokens: 200}}}}}",
        "main",
    )
    .unwrap();
    assert_eq!(both.provider, ProviderKind::OpenAi);
    assert_eq!(
        both.chunking.tokens, 400,
        "the older block is ignored as a whole"
    );
    assert_eq!(both.warnings.len(), 1, "{:?}", both.warnings);
    assert!(both.warnings[0].contains("memory.search (the newer layout) wins"));
    assert!(both.warnings[0].contains("agents.defaults.memorySearch is ignored"));

    let per_agent = resolve_str(
        "{agents: {list: [{id: 'main', memorySearch: {provider: 'local'}}],
                   entries: {main: {memory: {search: {provider: 'voyage'}}}}}}",
        "main",
    )
    .unwrap();
    assert_eq!(per_agent.provider, ProviderKind::Voyage);
    assert_eq!(per_agent.warnings.len(), 1, "{:?}", per_agent.warnings);

    // Every entry is validated, and unknown keys are named with their path.
    let e = err(
        "{agents: {entries: {x: {memory: {search: {chunking: {tokens: 'a'}}}}}}}",
        "main",
    );
    assert!(
        e.contains("agents.entries.x.memory.search.chunking.tokens"),
        "{e}"
    );
    let s = resolve_str("{memory: {search: {providr: 'x'}}}", "main").unwrap();
    assert_eq!(
        s.warnings,
        ["memory.search.providr: unknown key, ignored (did you mean `provider`?)"]
    );
}

/// `memory.qmd`: every documented key, defaults, names, durations and errors.
#[test]
fn qmd_settings() {
    let text = r#"{memory: {backend: 'qmd', qmd: {
        command: '/opt/qmd/bin/qmd', includeDefaultMemory: false, searchMode: 'search',
        paths: [{name: 'docs', path: '~/notes', pattern: '**/*.{md,txt}'},
                {path: '../Team Notes/'}, {path: '/srv/team notes'}],
        sessions: {enabled: false, retentionDays: 30, exportDir: '/tmp/x'},
        update: {interval: '10m', debounceMs: 500, onBoot: false, waitForBootSync: true,
                 embedInterval: 0, updateTimeoutMs: 9000, embedTimeoutMs: 8000},
        limits: {maxResults: 3, maxSnippetChars: 200, maxInjectedChars: 500, timeoutMs: 1500},
        scope: {default: 'allow', rules: [{action: 'deny', match: {chatType: 'group', channel: 'discord', keyPrefix: 'agent:'}}]},
    }}}"#;
    let s = resolve_str(text, "main").unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let q = &s.qmd;
    assert_eq!(q.command, "/opt/qmd/bin/qmd");
    assert!(!q.include_default_memory);
    assert_eq!(q.search_mode, SearchMode::Search);
    let paths: Vec<_> = q
        .paths
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.path.display().to_string(),
                p.pattern.as_str(),
            )
        })
        .collect();
    assert_eq!(
        paths,
        [
            ("docs", "/home/u/notes".to_string(), "**/*.{md,txt}"),
            ("team-notes", "../Team Notes/".to_string(), "**/*.md"),
            ("team-notes-2", "/srv/team notes".to_string(), "**/*.md"),
        ]
    );
    assert_eq!(
        q.sessions,
        QmdSessions {
            enabled: false,
            retention_days: Some(30),
            export_dir: Some("/tmp/x".into())
        }
    );
    let ms = std::time::Duration::from_millis;
    assert_eq!(
        q.update,
        QmdUpdate {
            interval: Some(ms(600_000)),
            debounce: ms(500),
            on_boot: false,
            wait_for_boot_sync: true,
            embed_interval: None,
            command_timeout: ms(30_000),
            update_timeout: ms(9000),
            embed_timeout: ms(8000),
        }
    );
    assert_eq!(
        q.limits,
        QmdLimits {
            max_results: 3,
            max_snippet_chars: 200,
            max_injected_chars: 500,
            timeout: ms(1500)
        }
    );
    assert_eq!(
        q.scope,
        SendPolicy {
            default: PolicyAction::Allow,
            rules: vec![PolicyRule {
                action: PolicyAction::Deny,
                chat_type: Some(ChatType::Group),
                channel: Some("discord".into()),
                key_prefix: Some("agent:".into()),
            }],
        }
    );
    // Defaults: the seeds' (interval 5 m, 6 results, 4 s, direct chats only).
    let d = resolve_str("{memory: {backend: 'qmd'}}", "main")
        .unwrap()
        .qmd;
    assert_eq!(d, QmdSettings::default());
    assert_eq!(d.update.interval, Some(ms(300_000)));
    assert_eq!(d.scope, SendPolicy::direct_only());

    let durations: &[(&str, Option<u64>)] = &[
        ("'5m'", Some(300_000)),
        ("'30s'", Some(30_000)),
        ("'500ms'", Some(500)),
        ("'1h'", Some(3_600_000)),
        ("'1d'", Some(86_400_000)),
        ("'2'", Some(120_000)),
        ("2", Some(120_000)),
        ("0", None),
        ("'0m'", None),
    ];
    for (raw, want) in durations {
        let text = format!("{{memory: {{qmd: {{update: {{interval: {raw}}}}}}}}}");
        let got = resolve_str(&text, "main").unwrap().qmd.update.interval;
        assert_eq!(got, want.map(ms), "{raw}");
    }

    let errors: &[(&str, &str)] = &[
        (
            "{paths: [{name: 'x'}]}",
            "memory.qmd.paths[0].path: missing",
        ),
        (
            "{paths: [{path: '/a', name: 'a b'}]}",
            "memory.qmd.paths[0].name: \"a b\": a collection name",
        ),
        (
            "{paths: [{path: '/a', name: 'd'}, {path: '/b', name: 'd'}]}",
            "memory.qmd.paths[1].name: \"d\" names another",
        ),
        (
            "{paths: [{path: '/a', name: 'memory-dir'}]}",
            "memory.qmd.paths[0].name: \"memory-dir\" names another",
        ),
        (
            "{paths: [{path: '/a', name: 'sessions'}]}",
            "memory.qmd.paths[0].name: \"sessions\" names another",
        ),
        (
            "{paths: [{path: '/a', pattern: 'a['}]}",
            "memory.qmd.paths[0].pattern: not a glob pattern",
        ),
        (
            "{update: {interval: '5 parsecs'}}",
            "memory.qmd.update.interval: expected a duration",
        ),
        (
            "{update: {interval: true}}",
            "memory.qmd.update.interval: expected a duration",
        ),
        (
            "{scope: {default: 'maybe'}}",
            "memory.qmd.scope.default: expected one of \"allow\", \"deny\"",
        ),
        (
            "{scope: {rules: [{match: {chatType: 'dm'}}]}}",
            "memory.qmd.scope.rules[0].action: missing",
        ),
        (
            "{scope: {rules: [{action: 'allow', match: {chatType: 'dm'}}]}}",
            "memory.qmd.scope.rules[0].match.chatType: expected one of",
        ),
        (
            "{searchMode: 'fast'}",
            "memory.qmd.searchMode: expected one of",
        ),
        (
            "{limits: {timeoutMs: 'soon'}}",
            "memory.qmd.limits.timeoutMs: expected an integer",
        ),
    ];
    for (qmd, want) in errors {
        let text = format!("{{memory: {{backend: 'qmd', qmd: {qmd}}}}}");
        let err = resolve_str(&text, "main").unwrap_err().to_string();
        assert!(err.contains(want), "{qmd}: {err}");
    }
    let unknown = resolve_str(
        "{memory: {backend: 'qmd', qmd: {limits: {maxTokens: 1}}}}",
        "main",
    )
    .unwrap()
    .warnings;
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert!(unknown[0].starts_with("memory.qmd.limits.maxTokens: unknown key"));
}

/// The layout picks the semantics (`memory.search`, at either level, gets 2026.9's index
/// and payload) and the ranking key picks the query behaviour: memoria's by default in
/// every layout, OpenClaw 2026.9's fixed hybrid settings with `ranking: "openclaw"` (or
/// `Env::ranking`, the CLI's `--ranking`), which brings 2026.9's semantics with it. The
/// retired `query.hybrid` and memoria's own decay key are read where they belong.
#[test]
fn semantics_follow_the_layout_and_the_ranking_key() {
    let newer = resolve_str("{memory: {search: {query: {minScore: 0.4}}}}", "main").unwrap();
    assert_eq!(newer.semantics, Semantics::OpenClaw);
    assert_eq!(newer.ranking, Ranking::Memoria);
    let h = &newer.query.hybrid;
    assert_eq!(
        (h.vector_weight, h.text_weight, h.fusion),
        (0.5, 0.5, Fusion::ZScore)
    );
    assert!(!h.mmr.enabled && !h.temporal_decay.enabled);
    assert_eq!(newer.query.min_score, 0.4);

    let parity = "{memory: {search: {query: {minScore: 0.4}}},
                   plugins: {entries: {memoria: {config: {ranking: 'openclaw'}}}}}";
    let parity = resolve_str(parity, "main").unwrap();
    assert_eq!(
        (parity.semantics, parity.ranking),
        (Semantics::OpenClaw, Ranking::OpenClaw)
    );
    let h = &parity.query.hybrid;
    assert_eq!(
        (h.vector_weight, h.text_weight, h.fusion),
        (0.7, 0.3, Fusion::Weighted)
    );
    assert!(h.mmr.enabled && h.temporal_decay.enabled);
    assert_eq!((h.mmr.lambda, h.temporal_decay.half_life_days), (0.7, 30.0));
    assert_eq!(parity.query.min_score, 0.4);
    // The CLI's --ranking wins over the config; OpenClaw's ranking brings 2026.9's
    // semantics to any layout.
    let cli = Env {
        ranking: Some(Ranking::Memoria),
        ..env()
    };
    let text = "{plugins: {entries: {memoria: {config: {ranking: 'openclaw'}}}}}";
    assert_eq!(
        resolve(&parse5(text), "main", &cli).unwrap().ranking,
        Ranking::Memoria
    );
    let builtin = Settings::builtin(
        "main",
        &Env {
            ranking: Some(Ranking::OpenClaw),
            ..env()
        },
    );
    assert_eq!(builtin.semantics, Semantics::OpenClaw);
    let err = resolve_str(
        "{plugins: {entries: {memoria: {config: {ranking: 'bm25'}}}}}",
        "main",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("plugins.entries.memoria.config.ranking"),
        "{err}"
    );

    let per_agent = resolve_str(
        "{agents: {entries: {main: {memory: {search: {}}}}}}",
        "main",
    )
    .unwrap();
    assert_eq!(per_agent.semantics, Semantics::OpenClaw);
    let other = resolve_str("{agents: {entries: {x: {memory: {search: {}}}}}}", "main").unwrap();
    assert_eq!(other.semantics, Semantics::Documented);

    let older = resolve_str(
        "{agents: {defaults: {memorySearch: {query: {hybrid: {mmr: {enabled: true}}}}}}}",
        "main",
    )
    .unwrap();
    assert_eq!(older.semantics, Semantics::Documented);
    assert!(older.query.hybrid.mmr.enabled && !older.query.hybrid.temporal_decay.enabled);
    assert_eq!(
        resolve_str("{}", "main").unwrap().semantics,
        Semantics::Documented
    );

    // query.hybrid is retired under OpenClaw's ranking: ignored, and said so.
    let retired = resolve_str(
        "{memory: {search: {query: {hybrid: {temporalDecay: {enabled: false}}}}},
          plugins: {entries: {memoria: {config: {ranking: 'openclaw'}}}}}",
        "main",
    )
    .unwrap();
    assert!(retired.query.hybrid.temporal_decay.enabled);
    assert!(
        retired.warnings.iter().any(|w| w.contains("retired")),
        "{:?}",
        retired.warnings
    );

    // memoria's decay key, in its plugin's config.
    let knob = "{memory: {search: {}}, plugins: {entries: {memoria: {config:
                {temporalDecay: {enabled: true, halfLifeDays: 365}}}}}}";
    let s = resolve_str(knob, "main").unwrap();
    assert_eq!(s.query.hybrid.temporal_decay.half_life_days, 365.0);
    let off = "{memory: {search: {}}, plugins: {entries: {memoria: {config:
               {temporalDecay: {enabled: false}}}}}}";
    assert!(
        !resolve_str(off, "main")
            .unwrap()
            .query
            .hybrid
            .temporal_decay
            .enabled
    );
    // Without a memory.search block (the older layout, or no block) the plugin's key acts
    // too, and the older layout's own key wins where it sets a field, said so.
    let older = "{plugins: {entries: {memoria: {config:
                 {temporalDecay: {enabled: true, halfLifeDays: 90}}}}}}";
    let s = resolve_str(older, "main").unwrap();
    assert_eq!(s.semantics, Semantics::Documented);
    let decay = s.query.hybrid.temporal_decay;
    assert!(decay.enabled && decay.half_life_days == 90.0, "{decay:?}");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let both = "{agents: {defaults: {memorySearch: {query: {hybrid: {temporalDecay:
                {halfLifeDays: 10}}}}}},
                plugins: {entries: {memoria: {config: {temporalDecay: {enabled: true,
                halfLifeDays: 90}}}}}}";
    let s = resolve_str(both, "main").unwrap();
    let decay = s.query.hybrid.temporal_decay;
    assert!(decay.enabled && decay.half_life_days == 10.0, "{decay:?}");
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("temporalDecay.halfLifeDays is not used")),
        "{:?}",
        s.warnings
    );
    let bad = "{plugins: {entries: {memoria: {config: {temporalDecay: {enabled: 'no'}}}}}}";
    let err = resolve_str(bad, "main").unwrap_err().to_string();
    assert!(
        err.contains("plugins.entries.memoria.config.temporalDecay.enabled"),
        "{err}"
    );

    // memoria's passages switch: on unless turned off; OpenClaw's ranking has none, and
    // says so when asked for them.
    let passages = |config: &str| -> (bool, Vec<String>) {
        let s = resolve_str(config, "main").unwrap();
        (s.local.passages, s.warnings)
    };
    let off = "{plugins: {entries: {memoria: {config: {passages: false}}}}}";
    assert_eq!(passages(off), (false, vec![]));
    assert_eq!(passages("{}"), (true, vec![]));
    assert_eq!(passages("{memory: {search: {}}}"), (true, vec![]));
    let (_, warnings) = passages(
        "{memory: {search: {}}, plugins: {entries: {memoria: {config:
         {passages: true, ranking: 'openclaw'}}}}}",
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("config.passages") && w.contains("ignored")),
        "{warnings:?}"
    );
    let bad = "{plugins: {entries: {memoria: {config: {passages: 'no'}}}}}";
    let err = resolve_str(bad, "main").unwrap_err().to_string();
    assert!(
        err.contains("plugins.entries.memoria.config.passages"),
        "{err}"
    );
}

/// OpenClaw 2026.9's providers and their keys.
#[test]
fn newer_providers_and_their_keys() {
    let text = "{memory: {search: {provider: 'openai-compatible', model: 'gemma',
                 remote: {baseUrl: 'http://127.0.0.1:8080/v1'}, inputType: 'x',
                 queryInputType: 'query', documentInputType: 'passage',
                 outputDimensionality: 256}}}";
    let s = resolve_str(text, "main").unwrap();
    assert_eq!(s.provider, ProviderKind::OpenAiCompatible);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let r = &s.remote;
    assert_eq!(r.input_type.as_deref(), Some("x"));
    assert_eq!(r.query_input_type.as_deref(), Some("query"));
    assert_eq!(r.document_input_type.as_deref(), Some("passage"));
    assert_eq!(r.output_dimensionality, Some(256));
    for (name, kind) in [
        ("lmstudio", ProviderKind::LmStudio),
        ("deepinfra", ProviderKind::DeepInfra),
        ("bedrock", ProviderKind::Bedrock),
        ("github-copilot", ProviderKind::GithubCopilot),
    ] {
        let s = resolve_str(
            &format!("{{memory: {{search: {{provider: '{name}'}}}}}}"),
            "main",
        );
        assert_eq!(s.unwrap().provider, kind);
        assert_eq!(kind.as_str(), name);
    }
}

/// The memory-wiki plugin's vault, where it puts it.
#[test]
fn the_wiki_vault_is_where_memory_wiki_keeps_it() {
    let vault = |text: &str, agent: &str| {
        let s = resolve_str(text, agent).unwrap();
        let state = s.state_dir.clone();
        (s.wiki_vault(), state, s.warnings)
    };
    let (v, state, warnings) = vault("{}", "ops");
    assert_eq!(v, Some(state.join("wiki/main")));
    assert!(warnings.is_empty());
    let cases = [
        ("{vault: {scope: 'agent'}}", "wiki/ops"),
        ("{vault: {path: 'vaults/shared'}}", "vaults/shared"),
        ("{vault: {path: '/abs/v', scope: 'agent'}}", "/abs/v/ops"),
        (
            "{vault: {path: '/abs/v', scope: 'global'}, search: {corpus: 'all'}}",
            "/abs/v",
        ),
    ];
    for (config, want) in cases {
        let text = format!("{{plugins: {{entries: {{'memory-wiki': {{config: {config}}}}}}}}}");
        let (v, state, warnings) = vault(&text, "ops");
        assert_eq!(v, Some(state.join(want)), "{config}");
        assert!(warnings.is_empty(), "{config}: {warnings:?}");
    }
    let off = "{plugins: {entries: {'memory-wiki': {enabled: false}}}}";
    assert_eq!(vault(off, "ops").0, None);
    let bad = "{plugins: {entries: {'memory-wiki': {config: {vault: {scope: 'team'}}}}}}";
    let err = resolve_str(bad, "ops").unwrap_err().to_string();
    assert!(
        err.contains("plugins.entries.memory-wiki.config.vault.scope"),
        "{err}"
    );
}

/// A typo'd key gets the one known key it is close to.
#[test]
fn suggestions_for_typos() {
    let known = [
        "maxResults",
        "minScore",
        "hybrid",
        "provider",
        "model",
        "fallback",
    ];
    let cases = [
        ("maxResult", Some("maxResults")),
        ("maxresults", Some("maxResults")),
        ("maxRseults", Some("maxResults")),
        ("minscroe", Some("minScore")),
        ("providr", Some("provider")),
        ("modle", Some("model")),
        ("engine", None),
        ("x", None),
        ("mode", Some("model")),
    ];
    for (key, want) in cases {
        assert_eq!(super::node::suggest(key, &known), want, "{key}");
    }
    // Two keys equally near: no guess.
    assert_eq!(super::node::suggest("cat", &["bat", "hat"]), None);
}

/// `secrets.providers` and the SecretRefs that name them, as OpenClaw documents them.
#[test]
fn secret_providers_parse_and_refs_read_where_they_point() {
    use super::secret::{SecretProvider, SecretProviders};
    let text = "{secrets: {defaults: {file: 'filemain'}, providers: {
        filemain: {source: 'file', path: '~/s.json', mode: 'singleValue', maxBytes: 64},
        vault: {source: 'exec', command: '/usr/bin/resolver', args: ['-p'], passEnv: ['PATH'],
                timeoutMs: 100, jsonOnly: false},
        plug: {source: 'exec', pluginIntegration: {pluginId: 'x', integrationId: 'y'}},
        team: {source: 'store'},
        envs: {source: 'env', allowlist: ['ONLY_THIS']}}},
      agents: {defaults: {memorySearch: {remote: {apiKey: '${OPENAI_API_KEY}'}}}}}";
    let s = resolve_str(text, "main").unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        s.secrets.providers["filemain"],
        SecretProvider::File {
            path: PathBuf::from("/home/u/s.json"),
            single_value: true,
            max_bytes: 64
        }
    );
    assert!(matches!(
        &s.secrets.providers["vault"],
        SecretProvider::Exec { timeout_ms: 100, json_only: false, args, .. } if args == &["-p"]
    ));
    assert!(matches!(
        s.secrets.providers["plug"],
        SecretProvider::Unsupported { .. }
    ));
    assert_eq!(s.secrets.defaults["file"], "filemain");
    // `${NAME}` is an env ref.
    assert_eq!(
        s.remote.api_key,
        Some(Secret::Ref {
            source: "env".into(),
            provider: None,
            id: "OPENAI_API_KEY".into()
        })
    );
    let err = resolve_str("{secrets: {providers: {x: {source: 'file'}}}}", "main")
        .unwrap_err()
        .to_string();
    assert!(err.contains("secrets.providers.x.path: missing"), "{err}");

    // Reading: each source's rules, each failure named.
    let tmp = tempfile::tempdir().unwrap();
    let var = |name: &str| (name == "ONLY_THIS").then(|| "sk-env".to_string());
    let reference = |source: &str, provider: &str, id: &str| Secret::Ref {
        source: source.into(),
        provider: Some(provider.into()),
        id: id.into(),
    };
    let mut providers = SecretProviders::default();
    providers.providers = s.secrets.providers.clone();
    let single = tmp.path().join("single");
    std::fs::write(&single, "sk-single\n").unwrap();
    providers.providers.insert(
        "filemain".into(),
        SecretProvider::File {
            path: single.clone(),
            single_value: true,
            max_bytes: 64,
        },
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let private = |p: &std::path::Path| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap()
        };
        private(&single);
        assert_eq!(
            reference("file", "filemain", "value")
                .read(&providers, &var)
                .unwrap(),
            "sk-single"
        );
        let err = reference("file", "filemain", "/x")
            .read(&providers, &var)
            .unwrap_err();
        assert!(
            err.contains("a singleValue file is read with id \"value\""),
            "{err}"
        );
        std::fs::set_permissions(&single, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = reference("file", "filemain", "value")
            .read(&providers, &var)
            .unwrap_err();
        assert!(
            err.contains("readable or writable by others (mode 644)"),
            "{err}"
        );
        private(&single);
        std::fs::hard_link(&single, tmp.path().join("second")).unwrap();
        let err = reference("file", "filemain", "value")
            .read(&providers, &var)
            .unwrap_err();
        assert!(err.contains("must not be hardlinked"), "{err}");
        // A resolver that does not answer in time is killed and named.
        let slow = tmp.path().join("slow");
        std::fs::write(&slow, "#!/bin/sh\nsleep 5\n").unwrap();
        std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o700)).unwrap();
        providers.providers.insert(
            "slow".into(),
            SecretProvider::Exec {
                command: slow,
                args: Vec::new(),
                pass_env: Vec::new(),
                env: Default::default(),
                timeout_ms: 100,
                max_output_bytes: 64,
                json_only: true,
            },
        );
        let err = reference("exec", "slow", "k")
            .read(&providers, &var)
            .unwrap_err();
        assert!(err.contains("did not answer within 100 ms"), "{err}");
    }
    // env: the allowlist, an unset variable named.
    assert_eq!(
        reference("env", "envs", "ONLY_THIS")
            .read(&providers, &var)
            .unwrap(),
        "sk-env"
    );
    let err = reference("env", "envs", "OTHER")
        .read(&providers, &var)
        .unwrap_err();
    assert!(
        err.contains("OTHER is not in secrets.providers.envs.allowlist"),
        "{err}"
    );
    let err = reference("env", "default", "UNSET_HERE")
        .read(&providers, &var)
        .unwrap_err();
    assert!(
        err.contains("the environment variable UNSET_HERE is unset or empty"),
        "{err}"
    );
    // Sources memoria cannot read say so.
    let err = reference("store", "team", "K")
        .read(&providers, &var)
        .unwrap_err();
    assert!(err.contains("not readable by memoria"), "{err}");
    let err = reference("exec", "plug", "K")
        .read(&providers, &var)
        .unwrap_err();
    assert!(err.contains("pluginIntegration"), "{err}");
    let err = reference("exec", "vault2", "K")
        .read(&providers, &var)
        .unwrap_err();
    assert!(
        err.contains("no secrets.providers.vault2 with source \"exec\""),
        "{err}"
    );
    // A relative command is refused before anything runs.
    providers.providers.insert(
        "rel".into(),
        SecretProvider::Exec {
            command: PathBuf::from("resolver"),
            args: Vec::new(),
            pass_env: Vec::new(),
            env: Default::default(),
            timeout_ms: 100,
            max_output_bytes: 64,
            json_only: true,
        },
    );
    let err = reference("exec", "rel", "K")
        .read(&providers, &var)
        .unwrap_err();
    assert!(err.contains("is not an absolute path"), "{err}");
}

/// `plugins.entries.memoria.config.store`: the local directory by default, LanceDB under a
/// URI (fleet mode), `--store-uri` over the config's URI (its options kept); every
/// inconsistent combination named by its key; the keys fleet mode does not act on named in
/// the warnings.
#[test]
fn the_store_key_and_the_store_uri_option() {
    let store = |inner: &str| {
        format!("{{plugins: {{entries: {{memoria: {{config: {{store: {inner}}}}}}}}}}}")
    };
    let lance = |uri: &str, options: &[(&str, &str)]| StoreBackend::LanceDb {
        uri: uri.into(),
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let cases: [(&str, StoreBackend); 4] = [
        ("{}", StoreBackend::Local),
        ("{backend: 'local'}", StoreBackend::Local),
        ("{uri: 's3://b/p'}", lance("s3://b/p", &[])),
        (
            "{backend: 'lancedb', uri: '/srv/m', storageOptions: {aws_region: 'eu-west-1'}}",
            lance("/srv/m", &[("aws_region", "eu-west-1")]),
        ),
    ];
    for (inner, want) in cases {
        let settings = resolve_str(&store(inner), "main").unwrap();
        assert_eq!(settings.store.backend, want, "{inner}");
    }
    assert_eq!(
        resolve_str("{}", "main").unwrap().store.backend,
        StoreBackend::Local
    );
    for (inner, key) in [
        ("{backend: 'lancedb'}", "store.uri"),
        ("{backend: 'local', uri: 's3://b'}", "store.uri"),
        (
            "{backend: 'local', storageOptions: {a: 'b'}}",
            "store.storageOptions",
        ),
        ("{backend: 'sqlite', uri: 's3://b'}", "store.backend"),
        (
            "{uri: 's3://b', storageOptions: {allow_http: true}}",
            "store.storageOptions.allow_http",
        ),
    ] {
        let message = err(&store(inner), "main");
        assert!(
            message.contains(&format!("plugins.entries.memoria.config.{key}")),
            "{inner}: {message}"
        );
    }
    // --store-uri wins over the config's URI; the config's options stay.
    let text = store("{uri: 's3://b/p', storageOptions: {aws_region: 'x'}}");
    let cli = Env {
        store_uri: Some("s3://other".into()),
        ..env()
    };
    assert_eq!(
        resolve(&parse5(&text), "main", &cli).unwrap().store.backend,
        lance("s3://other", &[("aws_region", "x")])
    );
    // An unknown key is named, as everywhere in the config.
    let warnings = resolve_str(&store("{url: 's3://b'}"), "main")
        .unwrap()
        .warnings
        .join("\n");
    assert!(
        warnings.contains("plugins.entries.memoria.config.store.url"),
        "{warnings}"
    );
    // What fleet mode does not act on is named.
    let text =
        "{agents: {defaults: {memorySearch: {cache: {maxEntries: 10}, store: {path: '/x'}}}},
                 plugins: {entries: {memoria: {config: {store: {uri: 's3://b'}}}}}}";
    let warnings = resolve_str(text, "main").unwrap().warnings.join("\n");
    assert!(warnings.contains("cache.maxEntries"), "{warnings}");
    assert!(warnings.contains("store.path"), "{warnings}");
}
