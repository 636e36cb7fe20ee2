//! The remote embedding providers (OpenAI and OpenAI-compatible, Mistral, Voyage, Ollama,
//! Gemini) against a loopback HTTP server written in `support/loopback.rs` (no network):
//! each wire format (path, headers, key, model, inputs, task and input types), indexing and
//! hybrid search through it, OpenAI's and Gemini's batch flows (upload, create, poll,
//! output; a failed job, `wait: false`, an endpoint without a batch API), retries on 429
//! with `Retry-After`, a provider that stays down (keyword-only with the reason) or gives
//! way to the fallback, a timeout, malformed answers, a wrong dimension, oversized inputs,
//! key resolution from each of its three places, and no key written under the state
//! directory.

#![cfg(feature = "remote")]

use std::net::TcpListener;
use std::path::Path;
use std::sync::Mutex;

use memoria::config::{Env, ProviderKind, Secret, Settings};
use memoria::{Memory, SearchOptions};
use serde_json::{json, Value};

#[path = "support/loopback.rs"]
mod loopback;
use loopback::{answer, batches, ok, serve, BatchMode, Request};

const KEY: &str = "sk-test-abcdefghijklmnop0123456789";

/// Tests that set or depend on the absence of `OPENAI_API_KEY` take turns.
static ENV: Mutex<()> = Mutex::new(());
const DIMS: usize = 8;

fn settings(root: &Path, url: &str, key: Option<&str>) -> Settings {
    let env = Env {
        home: Some(root.to_path_buf()),
        state_dir: Some(root.join("state")),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut s = Settings::builtin("main", &env);
    s.workspace = root.join("ws");
    s.provider = ProviderKind::OpenAi;
    s.model = Some("text-embedding-3-small".into());
    s.remote.base_url = Some(format!("{url}/v1/"));
    s.remote.api_key = key.map(|k| Secret::Literal(k.to_string()));
    s.remote.headers.insert("X-Team".into(), "memory".into());
    std::fs::create_dir_all(s.workspace.join("memory")).unwrap();
    std::fs::write(
        s.workspace.join("MEMORY.md"),
        "# Long term\nSam is allergic to penicillin.\n",
    )
    .unwrap();
    std::fs::write(
        s.workspace.join("memory/2026-11-20.md"),
        "Cutover of orders to Postgres 16 done; downtime 4 minutes.\n",
    )
    .unwrap();
    s
}

/// The `Authorization` header of every request the server received, in order.
fn authorizations(server: &loopback::Server) -> Vec<String> {
    let requests = server.requests.lock().unwrap();
    requests
        .iter()
        .map(|r| r.headers["authorization"].clone())
        .collect()
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn openai_indexes_and_searches_through_its_wire_format() {
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(settings(tmp.path(), &server.url, Some(KEY))).unwrap();
    let report = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(report.embed_error, None);
    assert_eq!(report.embedded, report.chunks as usize);
    let payload = memory.memory_search("penicillin allergy", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"), "{payload:?}");
    assert_eq!(payload.provider.as_deref(), Some("openai"));
    assert_eq!(payload.fallback, None);
    assert_eq!(payload.results[0].path, "MEMORY.md");

    let requests = server.requests.lock().unwrap().clone();
    // The probe, the documents (one batch), the query.
    assert_eq!(requests.len(), 3, "{requests:?}");
    for r in &requests {
        assert_eq!(r.path, "/v1/embeddings");
        assert_eq!(r.headers["authorization"], format!("Bearer {KEY}"));
        assert_eq!(r.headers["x-team"], "memory");
        assert_eq!(r.headers["content-type"], "application/json");
        assert_eq!(r.body["model"], "text-embedding-3-small");
    }
    assert_eq!(requests[1].body["input"].as_array().unwrap().len(), 2);
    assert_eq!(requests[2].body["input"], json!(["penicillin allergy"]));

    // The key is never written under the state directory.
    drop(memory);
    let files = files_under(&tmp.path().join("state"));
    assert!(!files.is_empty());
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "{} holds the key",
            file.display()
        );
    }
}

#[test]
fn a_rate_limit_is_retried_honouring_retry_after() {
    let server = serve(Box::new(|r: &Request, n| {
        if n == 0 {
            (
                429,
                vec![("Retry-After".into(), "1".into())],
                "{\"error\":\"slow down\"}".into(),
            )
        } else {
            (200, Vec::new(), answer(r, DIMS))
        }
    }));
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(settings(tmp.path(), &server.url, Some(KEY))).unwrap();
    let started = std::time::Instant::now();
    let (provider, _) = memory.provider();
    assert_eq!(provider, "openai");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "Retry-After waited"
    );
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}

#[test]
fn a_provider_that_stays_down_means_keyword_only_with_the_reason() {
    let server = serve(Box::new(|_: &Request, _| {
        (
            500,
            Vec::new(),
            format!("{{\"error\": \"boom, your key {KEY}\"}}"),
        )
    }));
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(settings(tmp.path(), &server.url, Some(KEY))).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("fts-only"), "{payload:?}");
    let fallback = payload.fallback.unwrap();
    assert_eq!(fallback.from, "openai");
    assert!(fallback.reason.contains("HTTP 500"), "{}", fallback.reason);
    assert!(
        !fallback.reason.contains(KEY),
        "the key is redacted: {}",
        fallback.reason
    );
    assert!(
        server.requests.lock().unwrap().len() >= 3,
        "retried before giving up"
    );
    assert_eq!(payload.results[0].path, "MEMORY.md");
}

#[test]
fn a_provider_that_comes_back_serves_without_a_restart() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var("MEMORIA_EMBEDDER_RETRY_SECONDS", "1");
    let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answering = up.clone();
    let server = serve(Box::new(move |r: &Request, _| {
        match answering.load(std::sync::atomic::Ordering::SeqCst) {
            true => (200, Vec::new(), answer(r, DIMS)),
            false => (503, Vec::new(), "down".to_string()),
        }
    }));
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(settings(tmp.path(), &server.url, Some(KEY))).unwrap();
    std::env::remove_var("MEMORIA_EMBEDDER_RETRY_SECONDS");
    memory.sync(false, &|_| {}).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("fts-only"), "{payload:?}");
    let status = memory.status().unwrap();
    assert!(
        status.warnings.iter().any(|w| w.contains("failed tries")),
        "status says the provider is tried again: {:?}",
        status.warnings
    );

    // The provider is back: a later call finds it (tried in the background), and the
    // next sync embeds the notes.
    up.store(true, std::sync::atomic::Ordering::SeqCst);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while memory.provider().0 != "openai" {
        assert!(
            std::time::Instant::now() < deadline,
            "the provider was not tried again"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let report = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(report.embed_error, None);
    let payload = memory.memory_search("penicillin allergy", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"), "{payload:?}");
    assert_eq!(payload.fallback, None);
    let status = memory.status().unwrap();
    assert!(
        !status.warnings.iter().any(|w| w.contains("failed tries")),
        "{:?}",
        status.warnings
    );
}

#[test]
fn a_look_at_a_provider_that_is_down_asks_once_and_names_the_key() {
    let server = serve(Box::new(|_: &Request, _| {
        (503, Vec::new(), "down".to_string())
    }));
    let tmp = tempfile::tempdir().unwrap();
    let choice = memoria::EmbedderChoice::FromSettings {
        model_dir: None,
        precision: None,
    };
    let memory =
        Memory::open_to_look(settings(tmp.path(), &server.url, Some(KEY)), choice).unwrap();
    let status = memory.status().unwrap();
    let fallback = status.fallback.unwrap();
    assert!(
        fallback.reason.contains("after 1 attempt(s)"),
        "{}",
        fallback.reason
    );
    assert_eq!(
        server.requests.lock().unwrap().len(),
        1,
        "one probe, no retries"
    );
    // Which key the provider was given, although it did not serve.
    assert!(status.embedding.is_none());
    assert_eq!(status.key_source.as_deref(), Some("remote.apiKey"));
}

#[test]
fn malformed_answers_and_wrong_dimensions_are_errors_naming_the_provider() {
    // Not JSON: the provider cannot be used, and the payload says why.
    let server = serve(Box::new(|_: &Request, _| {
        (200, Vec::new(), "<html>".into())
    }));
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(settings(tmp.path(), &server.url, Some(KEY))).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    let reason = payload.fallback.unwrap().reason;
    assert!(
        reason.contains("openai embeddings") && reason.contains("invalid answer"),
        "{reason}"
    );

    // The probe says 8 values, documents come back with 4.
    let server = serve(Box::new(|r: &Request, n| {
        (200, Vec::new(), answer(r, if n == 0 { DIMS } else { 4 }))
    }));
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(settings(tmp.path(), &server.url, Some(KEY))).unwrap();
    let report = memory.sync(false, &|_| {}).unwrap();
    let error = report.embed_error.expect("embedding failed");
    assert!(
        error.contains("openai embeddings") && error.contains("expected 8"),
        "{error}"
    );
}

#[test]
fn the_key_comes_from_the_config_else_the_environment() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    // No key in the config: OPENAI_API_KEY (only this test sets it).
    std::env::set_var("OPENAI_API_KEY", "sk-from-the-environment-0123456789");
    let memory = Memory::open(settings(tmp.path(), &server.url, None)).unwrap();
    assert_eq!(memory.provider().0, "openai");
    // A SecretRef in the config wins over the variable.
    let tmp2 = tempfile::tempdir().unwrap();
    let mut s = settings(tmp2.path(), &server.url, None);
    std::env::set_var("MEMORIA_TEST_OPENAI_KEY", "sk-from-a-secret-ref-0123456789");
    s.remote.api_key = Some(Secret::Ref {
        source: "env".into(),
        provider: None,
        id: "MEMORIA_TEST_OPENAI_KEY".into(),
    });
    let memory2 = Memory::open(s).unwrap();
    assert_eq!(memory2.provider().0, "openai");
    // `models.providers.openai.apiKey` comes after remote.apiKey, before the variable.
    let tmp3 = tempfile::tempdir().unwrap();
    let mut s = settings(tmp3.path(), &server.url, None);
    s.provider_keys.insert(
        "openai".into(),
        Secret::Literal("sk-from-models-providers-0123456789".into()),
    );
    let memory3 = Memory::open(s).unwrap();
    assert_eq!(memory3.provider().0, "openai");
    std::env::remove_var("OPENAI_API_KEY");
    let auth = authorizations(&server);
    assert_eq!(
        auth,
        [
            "Bearer sk-from-the-environment-0123456789",
            "Bearer sk-from-a-secret-ref-0123456789",
            "Bearer sk-from-models-providers-0123456789",
        ]
    );
}

/// SecretRefs of every source OpenClaw documents: a private JSON file read at a pointer,
/// a resolver command speaking OpenClaw's exec protocol, an unset variable named.
#[cfg(unix)]
#[test]
fn secret_refs_read_files_and_commands_and_name_what_is_missing() {
    use memoria::config::SecretProvider;
    use std::os::unix::fs::PermissionsExt;
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    let secrets = tmp.path().join("secrets.json");
    std::fs::write(
        &secrets,
        r#"{"providers": {"openai": {"apiKey": "sk-from-a-file-0123456789"}}}"#,
    )
    .unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let resolver = tmp.path().join("resolver");
    std::fs::write(
        &resolver,
        "#!/bin/sh\nread request\nprintf '{\"protocolVersion\": 1, \"values\": {\"openai/key\": \"sk-from-a-command-0123456789\"}}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&resolver, std::fs::Permissions::from_mode(0o700)).unwrap();
    let with = |id: &str, source: &str, provider: &str| {
        let mut s = settings(&tmp.path().join(provider), &server.url, None);
        s.remote.api_key = Some(Secret::Ref {
            source: source.into(),
            provider: Some(provider.into()),
            id: id.into(),
        });
        s.secrets.providers.insert(
            "filemain".into(),
            SecretProvider::File {
                path: secrets.clone(),
                single_value: false,
                max_bytes: 1 << 20,
            },
        );
        s.secrets.providers.insert(
            "vault".into(),
            SecretProvider::Exec {
                command: resolver.clone(),
                args: Vec::new(),
                pass_env: vec!["PATH".into()],
                env: Default::default(),
                timeout_ms: 5000,
                max_output_bytes: 1 << 20,
                json_only: true,
            },
        );
        s
    };
    let memory = Memory::open(with("/providers/openai/apiKey", "file", "filemain")).unwrap();
    assert_eq!(memory.provider().0, "openai");
    let memory = Memory::open(with("openai/key", "exec", "vault")).unwrap();
    assert_eq!(memory.provider().0, "openai");
    let auth = authorizations(&server);
    assert_eq!(
        auth,
        [
            "Bearer sk-from-a-file-0123456789",
            "Bearer sk-from-a-command-0123456789"
        ]
    );
    // What cannot be read says what and why, never falling back to another key.
    for (id, source, provider, why) in [
        (
            "MEMORIA_TEST_UNSET_KEY",
            "env",
            "default",
            "the environment variable MEMORIA_TEST_UNSET_KEY is unset or empty",
        ),
        (
            "/providers/none",
            "file",
            "filemain",
            "nothing at the JSON pointer /providers/none",
        ),
        (
            "other/key",
            "exec",
            "vault",
            "gave no value for \"other/key\"",
        ),
        (
            "K",
            "file",
            "nosuch",
            "no secrets.providers.nosuch with source \"file\" is configured",
        ),
    ] {
        let memory = Memory::open(with(id, source, provider)).unwrap();
        let payload = memory.memory_search("penicillin", &SearchOptions::default());
        let reason = payload.fallback.unwrap().reason;
        assert!(
            reason.contains("the API key cannot be read: remote.apiKey: SecretRef")
                && reason.contains(why),
            "{source}: {reason}"
        );
    }
}

#[test]
fn mistral_and_the_fallback_provider_speak_the_same_wire_format() {
    let server = serve(ok(DIMS));
    // Mistral: its default model, its own provider name in the payload.
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, Some(KEY));
    s.provider = ProviderKind::Mistral;
    s.model = None;
    let memory = Memory::open(s).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.provider.as_deref(), Some("mistral"));
    assert_eq!(payload.model, Some(Some("mistral-embed".to_string())));
    assert_eq!(payload.mode.as_deref(), Some("hybrid"));
    // A provider that refuses (Gemini answering 403 for this model), with
    // `fallback: "openai"`: OpenAI serves (with its own default model) and every payload
    // says why.
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, Some(KEY));
    s.provider = ProviderKind::Gemini;
    s.model = Some("gemini-does-not-exist".into());
    s.fallback = Some(ProviderKind::OpenAi);
    let memory = Memory::open(s).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.provider.as_deref(), Some("openai"));
    assert_eq!(
        payload.model,
        Some(Some("text-embedding-3-small".to_string()))
    );
    let fallback = payload.fallback.unwrap();
    assert_eq!(fallback.from, "gemini");
    assert!(fallback.reason.contains("HTTP 403"), "{}", fallback.reason);
    let models: Vec<Value> = server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert!(models.contains(&json!("mistral-embed")));
    assert!(models.contains(&json!("text-embedding-3-small")));
}

#[test]
fn voyage_says_document_or_query_and_ollama_needs_no_key() {
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, Some(KEY));
    s.provider = ProviderKind::Voyage;
    s.model = None;
    let memory = Memory::open(s).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.provider.as_deref(), Some("voyage"));
    assert_eq!(payload.mode.as_deref(), Some("hybrid"));
    let requests = server.requests.lock().unwrap().clone();
    let types: Vec<&Value> = requests.iter().map(|r| &r.body["input_type"]).collect();
    // The probe and the query are queries; the chunks are documents.
    assert_eq!(
        types,
        [&json!("query"), &json!("document"), &json!("query")]
    );
    assert_eq!(requests[0].body["model"], "voyage-4-large");

    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, None);
    s.provider = ProviderKind::Ollama;
    s.model = None;
    let memory = Memory::open(s).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.provider.as_deref(), Some("ollama"));
    assert_eq!(payload.mode.as_deref(), Some("hybrid"), "{payload:?}");
    let requests = server.requests.lock().unwrap().clone();
    assert!(requests
        .iter()
        .all(|r| !r.headers.contains_key("authorization")));
    assert_eq!(requests[0].body["model"], "nomic-embed-text");
    assert!(requests[0].body.get("input_type").is_none());
}

#[test]
fn gemini_speaks_batch_embed_contents_with_task_types() {
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, None);
    s.provider = ProviderKind::Gemini;
    s.model = None;
    s.remote.base_url = Some(format!("{}/v1beta", server.url));
    s.provider_keys.insert(
        "google".into(),
        Secret::Literal("AIza-test-key-0123456789".into()),
    );
    let memory = Memory::open(s).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    let payload = memory.memory_search("penicillin allergy", &SearchOptions::default());
    assert_eq!(payload.provider.as_deref(), Some("gemini"));
    assert_eq!(
        payload.model,
        Some(Some("gemini-embedding-001".to_string()))
    );
    assert_eq!(payload.mode.as_deref(), Some("hybrid"), "{payload:?}");
    assert_eq!(payload.results[0].path, "MEMORY.md");
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    let tasks: Vec<Value> = requests
        .iter()
        .map(|r| r.body["requests"][0]["taskType"].clone())
        .collect();
    assert_eq!(
        tasks,
        [
            json!("RETRIEVAL_QUERY"),
            json!("RETRIEVAL_DOCUMENT"),
            json!("RETRIEVAL_QUERY")
        ]
    );
    for r in &requests {
        assert_eq!(
            r.path,
            "/v1beta/models/gemini-embedding-001:batchEmbedContents"
        );
        assert_eq!(r.headers["x-goog-api-key"], "AIza-test-key-0123456789");
        assert!(!r.headers.contains_key("authorization"));
        assert_eq!(
            r.body["requests"][0]["model"],
            "models/gemini-embedding-001"
        );
    }
    assert_eq!(requests[1].body["requests"].as_array().unwrap().len(), 2);
}

#[test]
fn auto_uses_a_remote_provider_only_without_a_local_model_and_with_a_key() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    if std::env::var_os("OPENAI_API_KEY").is_some() || std::env::var_os("GEMINI_API_KEY").is_some()
    {
        eprintln!("note: an OpenAI or Gemini key is in the environment; skipping the auto test");
        return;
    }
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, None);
    s.provider = ProviderKind::Auto;
    s.model = None;
    // No local model: the configured path does not exist.
    s.local.model_path = Some(tmp.path().join("no-model").display().to_string());
    // No key: keyword-only, saying why.
    let memory = Memory::open(s.clone()).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("fts-only"), "{payload:?}");
    assert_eq!(payload.fallback.unwrap().from, "auto");
    assert!(
        server.requests.lock().unwrap().is_empty(),
        "nothing was sent"
    );
    // A Gemini key (in models.providers.google): Gemini serves.
    s.provider_keys.insert(
        "google".into(),
        Secret::Literal("AIza-auto-0123456789".into()),
    );
    s.remote.base_url = Some(format!("{}/v1beta", server.url));
    let tmp2 = tempfile::tempdir().unwrap();
    s.store.dir = Some(tmp2.path().join("agent"));
    let memory = Memory::open(s).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.provider.as_deref(), Some("gemini"), "{payload:?}");
    assert_eq!(payload.mode.as_deref(), Some("hybrid"));
}

#[test]
fn a_server_that_never_answers_times_out_within_the_query_budget() {
    // Accepts connections and reads, never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream); // keep it open
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(settings(tmp.path(), &url, Some(KEY))).unwrap();
    let started = std::time::Instant::now();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    let took = started.elapsed();
    assert_eq!(payload.mode.as_deref(), Some("fts-only"));
    let reason = payload.fallback.unwrap().reason;
    assert!(reason.contains("openai embeddings"), "{reason}");
    assert!(
        took < std::time::Duration::from_secs(20),
        "gave up after {took:?}"
    );
}

/// `settings` with `n` more daily notes (one chunk each), enough for a batch job, and
/// polls every 5 ms.
fn backfill(root: &Path, url: &str, n: usize) -> Settings {
    let mut s = settings(root, url, Some(KEY));
    for i in 0..n {
        std::fs::write(
            s.workspace.join(format!("memory/2026-01-{i:03}.md")),
            format!("Note {i}: the build of service {i} was green.\n"),
        )
        .unwrap();
    }
    s.remote.batch.poll_interval_ms = 5;
    s
}

/// The loopback server with the batch APIs: jobs answer `polls` times "in progress",
/// then finish (or fail, with `fail`).
fn batch_server(polls: usize, fail: bool) -> loopback::Server {
    serve(batches(DIMS, BatchMode { polls, fail }))
}

/// `METHOD path` of each request.
fn calls(requests: &[Request]) -> Vec<String> {
    requests
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

fn chunk_count(memory: &Memory) -> u64 {
    memory.status().unwrap().chunks
}

#[test]
fn openai_batch_flow_uploads_creates_polls_and_reads_the_output_file() {
    let server = batch_server(2, false);
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(backfill(tmp.path(), &server.url, 120)).unwrap();
    let report = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(report.embed_error, None);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.chunks, 122);
    assert_eq!(report.embedded, 122);
    let payload = memory.memory_search("penicillin allergy", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"), "{payload:?}");
    assert_eq!(payload.results[0].path, "MEMORY.md");

    let requests = server.requests.lock().unwrap().clone();
    let calls = calls(&requests);
    assert_eq!(
        calls,
        [
            "POST /v1/embeddings", // the probe
            "POST /v1/files",
            "POST /v1/batches",
            "GET /v1/batches/batch_0",
            "GET /v1/batches/batch_0",
            "GET /v1/batches/batch_0",
            "GET /v1/files/file-out-0/content",
            "POST /v1/embeddings", // the query
        ]
    );
    for r in &requests {
        assert_eq!(
            r.headers["authorization"],
            format!("Bearer {KEY}"),
            "{}",
            r.path
        );
        assert_eq!(r.headers["x-team"], "memory");
    }
    // The upload: a multipart form with purpose=batch and one request per chunk.
    let upload = &requests[1];
    let content_type = &upload.headers["content-type"];
    assert!(
        content_type.starts_with("multipart/form-data; boundary="),
        "{content_type}"
    );
    let raw = String::from_utf8_lossy(&upload.raw);
    assert!(
        raw.contains("name=\"purpose\"\r\n\r\nbatch\r\n"),
        "{raw:.300}"
    );
    assert!(raw.contains("filename=\"memoria-embeddings.jsonl\""));
    let lines: Vec<Value> = raw
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 122);
    assert_eq!(lines[0]["method"], "POST");
    assert_eq!(lines[0]["url"], "/v1/embeddings");
    assert_eq!(lines[0]["body"]["model"], "text-embedding-3-small");
    assert_eq!(lines[0]["custom_id"].as_str().unwrap().len(), 64);
    let inputs: Vec<&str> = lines
        .iter()
        .map(|l| l["body"]["input"].as_str().unwrap())
        .collect();
    assert!(inputs.contains(&"Note 7: the build of service 7 was green.\n"));
    let create = &requests[2].body;
    assert_eq!(create["input_file_id"], "file-in-0");
    assert_eq!(create["endpoint"], "/v1/embeddings");
    assert_eq!(create["completion_window"], "24h");

    // Nothing left recorded; status says how batching runs.
    let status = memory.status().unwrap();
    let embedding = status.embedding.unwrap();
    assert_eq!(embedding.batch_jobs, 0);
    assert_eq!(embedding.awaiting_batch, 0);
    assert_eq!(embedding.key_source.as_deref(), Some("remote.apiKey"));
    assert_eq!(embedding.dims, DIMS);
    assert!(embedding.batch.unwrap().starts_with("on (waits"));
    assert!(!Path::new(&status.agent_dir).join("batches.json").exists());
}

#[test]
fn gemini_batch_flow_uploads_creates_polls_and_downloads() {
    let server = batch_server(1, false);
    let tmp = tempfile::tempdir().unwrap();
    let mut s = backfill(tmp.path(), &server.url, 110);
    s.provider = ProviderKind::Gemini;
    s.model = None;
    s.remote.api_key = None;
    s.remote.base_url = Some(format!("{}/v1beta", server.url));
    s.provider_keys.insert(
        "google".into(),
        Secret::Literal("AIza-test-key-0123456789".into()),
    );
    let memory = Memory::open(s).unwrap();
    let report = memory.sync(false, &|_| {}).unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.embedded, 112);
    let payload = memory.memory_search("penicillin allergy", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"), "{payload:?}");
    assert_eq!(payload.results[0].path, "MEMORY.md");

    let requests = server.requests.lock().unwrap().clone();
    let calls = calls(&requests);
    assert_eq!(
        calls,
        [
            "POST /v1beta/models/gemini-embedding-001:batchEmbedContents",
            "POST /upload/v1beta/files?uploadType=multipart",
            "POST /v1beta/models/gemini-embedding-001:asyncBatchEmbedContent",
            "GET /v1beta/batches/0",
            "GET /v1beta/batches/0",
            "GET /download/v1beta/files/out-0:download?alt=media",
            "POST /v1beta/models/gemini-embedding-001:batchEmbedContents",
        ]
    );
    for r in &requests {
        assert_eq!(r.headers["x-goog-api-key"], "AIza-test-key-0123456789");
        assert!(!r.headers.contains_key("authorization"));
    }
    let upload = &requests[1];
    assert!(upload.headers["content-type"].starts_with("multipart/related; boundary="));
    let raw = String::from_utf8_lossy(&upload.raw);
    let lines: Vec<Value> = raw
        .lines()
        .filter(|l| l.starts_with("{\"key\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 112);
    assert_eq!(lines[0]["request"]["taskType"], "RETRIEVAL_DOCUMENT");
    assert_eq!(lines[0]["request"]["model"], "models/gemini-embedding-001");
    assert!(raw.contains("\"mimeType\":\"application/jsonl\""));
    assert_eq!(
        requests[2].body["batch"]["inputConfig"]["fileName"],
        "files/in-0"
    );
    let status = memory.status().unwrap();
    assert_eq!(
        status.embedding.unwrap().key_source.as_deref(),
        Some("models.providers.google.apiKey")
    );
}

#[test]
fn a_failed_batch_job_falls_back_to_direct_requests() {
    let server = batch_server(0, true);
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(backfill(tmp.path(), &server.url, 100)).unwrap();
    let report = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(report.embed_error, None);
    assert_eq!(report.embedded, 102);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(
        report.warnings[0].contains(
            "batch job batch_0 failed: expired; those chunks were embedded through direct requests"
        ),
        "{:?}",
        report.warnings
    );
    let requests = server.requests.lock().unwrap().clone();
    let direct = requests
        .iter()
        .filter(|r| r.path == "/v1/embeddings")
        .map(|r| r.body["input"].as_array().unwrap().len())
        .collect::<Vec<_>>();
    assert_eq!(direct, [1, 64, 38]); // the probe, then the chunks 64 at a time
                                     // The next sync has nothing to embed and submits nothing.
    let before = requests.len();
    let again = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(again.embedded, 0);
    assert_eq!(server.requests.lock().unwrap().len(), before);
}

#[test]
fn without_waiting_a_later_sync_reads_the_job() {
    let server = batch_server(0, false);
    let tmp = tempfile::tempdir().unwrap();
    let mut s = backfill(tmp.path(), &server.url, 100);
    s.remote.batch.wait = false;
    s.sync.on_search = false; // only the explicit syncs below look at the job
    let memory = Memory::open(s).unwrap();
    let first = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(first.embedded, 0);
    assert_eq!(first.awaiting_batch, 102);
    assert!(first.warnings.is_empty(), "{:?}", first.warnings);
    let status = memory.status().unwrap();
    let embedding = status.embedding.clone().unwrap();
    assert_eq!((embedding.batch_jobs, embedding.awaiting_batch), (1, 102));
    assert_eq!(status.vectors, Some(0));
    assert!(
        status
            .warnings
            .iter()
            .any(|w| w.starts_with("102 chunk(s) wait for a batch")),
        "{:?}",
        status.warnings
    );
    let record = Path::new(&status.agent_dir).join("batches.json");
    let recorded: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert_eq!(recorded[0]["id"], "batch_0");
    assert_eq!(recorded[0]["ids"].as_array().unwrap().len(), 102);
    // Keyword search answers meanwhile, and says why.
    let payload = memory.memory_search("service 42", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("fts-only"));
    let fallback = payload.fallback.clone().unwrap();
    assert_eq!(fallback.from, "openai");
    assert!(
        fallback
            .reason
            .starts_with("102 of 102 chunks wait for a batch embedding job"),
        "{fallback:?}"
    );
    assert_eq!(
        payload.results[0].path, "memory/2026-01-042.md",
        "{payload:?}"
    );
    // The key is in no file under the state directory, the job record included.
    for file in files_under(&tmp.path().join("state")) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "{}",
            file.display()
        );
    }

    // The next sync finds the job done and reads it.
    let second = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(second.embedded, 102, "{:?}", second.warnings);
    assert_eq!(second.awaiting_batch, 0);
    assert!(!record.exists());
    assert_eq!(memory.status().unwrap().vectors, Some(chunk_count(&memory)));
    let payload = memory.memory_search("penicillin allergy", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"));
    assert_eq!(payload.results[0].path, "MEMORY.md");
}

#[test]
fn an_endpoint_without_a_batch_api_is_used_directly_from_then_on() {
    // `ok` answers 403 to everything but /embeddings: an OpenAI-compatible server without
    // a Batch API.
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(backfill(tmp.path(), &server.url, 100)).unwrap();
    let report = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(report.embedded, 102);
    assert!(
        report.warnings[0].contains("submitting a batch job of 102 texts failed"),
        "{:?}",
        report.warnings
    );
    let batch = memory.status().unwrap().embedding.unwrap().batch.unwrap();
    assert!(
        batch.starts_with("off: the batch API refused a job (HTTP 403)"),
        "{batch}"
    );
    // More notes: embedded directly, without trying the batch API again.
    let workspace = Path::new(&memory.status().unwrap().workspace).to_path_buf();
    for i in 0..100 {
        let note = workspace.join(format!("memory/2026-02-{i:03}.md"));
        std::fs::write(note, format!("Second note {i}.\n")).unwrap();
    }
    assert_eq!(memory.sync(false, &|_| {}).unwrap().embedded, 100);
    let requests = server.requests.lock().unwrap();
    assert_eq!(requests.iter().filter(|r| r.path == "/v1/files").count(), 1);
}

#[test]
fn an_input_over_the_provider_limit_is_cut_not_sent_to_fail() {
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    // One chunk of 57,000 characters (chunks this large are configured, not the default):
    // over text-embedding-3-small's 8,191 tokens. (A query is cut earlier, at 2,048
    // characters, by the search itself.)
    let mut s = settings(tmp.path(), &server.url, Some(KEY));
    s.chunking.tokens = 20_000;
    std::fs::write(
        s.workspace.join("memory/long.md"),
        "penicillin allergy ".repeat(3_000),
    )
    .unwrap();
    let memory = Memory::open(s).unwrap();
    let report = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(report.embed_error, None);
    let requests = server.requests.lock().unwrap();
    let longest = requests
        .iter()
        .flat_map(|r| r.body["input"].as_array().cloned().unwrap_or_default())
        .filter_map(|input| input.as_str().map(str::len))
        .max()
        .unwrap();
    assert!(
        longest <= 8_191 * 4 && longest > 30_000,
        "{longest} characters sent"
    );
}

#[test]
fn a_provider_answering_500_gives_way_to_the_fallback() {
    // Gemini's endpoint answers 500 every time; OpenAI's works.
    let direct = ok(DIMS);
    let server = serve(Box::new(move |r: &Request, n| {
        if r.path.contains("gemini") {
            (500, Vec::new(), "{\"error\": \"internal\"}".into())
        } else {
            direct(r, n)
        }
    }));
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, Some(KEY));
    s.provider = ProviderKind::Gemini;
    s.model = None;
    s.fallback = Some(ProviderKind::OpenAi);
    let memory = Memory::open(s).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    let payload = memory.memory_search("penicillin allergy", &SearchOptions::default());
    assert_eq!(payload.mode.as_deref(), Some("hybrid"), "{payload:?}");
    assert_eq!(payload.provider.as_deref(), Some("openai"));
    let fallback = payload.fallback.clone().unwrap();
    assert_eq!(fallback.from, "gemini");
    assert!(fallback.reason.contains("HTTP 500"), "{}", fallback.reason);
    assert_eq!(payload.results[0].path, "MEMORY.md");
    let status = memory.status().unwrap();
    assert_eq!(status.provider, "openai");
    assert_eq!(status.fallback.unwrap().from, "gemini");
    let requests = server.requests.lock().unwrap();
    let gemini = requests
        .iter()
        .filter(|r| r.path.contains("gemini"))
        .count();
    assert!(gemini >= 3, "retried before giving way: {gemini} requests");
}

#[test]
fn openai_compatible_sends_the_configured_input_types_and_dimensions() {
    let server = serve(ok(DIMS));
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, Some(KEY));
    s.provider = ProviderKind::OpenAiCompatible;
    s.model = Some("embeddinggemma-300m".into());
    s.remote.query_input_type = Some("query".into());
    s.remote.document_input_type = Some("passage".into());
    s.remote.output_dimensionality = Some(DIMS as u32);
    let memory = Memory::open(s).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.provider.as_deref(), Some("openai-compatible"));
    assert_eq!(payload.mode.as_deref(), Some("hybrid"), "{payload:?}");
    let requests = server.requests.lock().unwrap().clone();
    let types: Vec<&Value> = requests.iter().map(|r| &r.body["input_type"]).collect();
    assert_eq!(types, [&json!("query"), &json!("passage"), &json!("query")]);
    assert!(requests.iter().all(|r| r.body["dimensions"] == json!(DIMS)));
    assert!(requests.iter().all(|r| r.path == "/v1/embeddings"));
    assert_eq!(requests[0].body["model"], "embeddinggemma-300m");

    // Neither a default endpoint nor a default model: each missing key is named.
    for (base, model, missing) in [
        (None, Some("m"), "remote.baseUrl"),
        (Some(format!("{}/v1", server.url)), None, "model"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = settings(tmp.path(), &server.url, Some(KEY));
        s.provider = ProviderKind::OpenAiCompatible;
        s.remote.base_url = base;
        s.model = model.map(str::to_string);
        let memory = Memory::open(s).unwrap();
        let payload = memory.memory_search("penicillin", &SearchOptions::default());
        let reason = payload.fallback.map(|f| f.reason).unwrap_or_default();
        assert!(
            reason.contains(&format!("{missing} is required")),
            "{missing}: {reason}"
        );
    }
}

#[test]
fn lmstudio_and_deepinfra_speak_openais_format_with_their_defaults() {
    let server = serve(ok(DIMS));
    for (kind, model, auth) in [
        (
            ProviderKind::LmStudio,
            "text-embedding-nomic-embed-text-v1.5",
            false,
        ),
        (ProviderKind::DeepInfra, "BAAI/bge-m3", true),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = settings(tmp.path(), &server.url, auth.then_some(KEY));
        s.provider = kind;
        s.model = None;
        let memory = Memory::open(s).unwrap();
        let payload = memory.memory_search("penicillin", &SearchOptions::default());
        assert_eq!(
            payload.mode.as_deref(),
            Some("hybrid"),
            "{kind:?}: {payload:?}"
        );
        let last = server.requests.lock().unwrap().last().cloned().unwrap();
        assert_eq!(last.body["model"], model);
        assert_eq!(last.headers.contains_key("authorization"), auth, "{kind:?}");
    }
}

#[test]
fn bedrock_and_github_copilot_are_named_as_unsupported() {
    for kind in [ProviderKind::Bedrock, ProviderKind::GithubCopilot] {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = settings(tmp.path(), "http://127.0.0.1:9", None);
        s.provider = kind;
        let memory = Memory::open(s).unwrap();
        let payload = memory.memory_search("penicillin", &SearchOptions::default());
        let reason = payload.fallback.map(|f| f.reason).unwrap_or_default();
        assert!(
            reason.contains("not supported by memoria"),
            "{kind:?}: {reason}"
        );
        assert_eq!(payload.mode.as_deref(), Some("fts-only"));
    }
}

#[test]
fn an_explicit_provider_fails_closed_under_the_newer_layout() {
    let server = serve(Box::new(|_: &Request, _| {
        (500, Vec::new(), "{}".to_string())
    }));
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path(), &server.url, Some(KEY));
    s.semantics = memoria::config::Semantics::OpenClaw;
    let memory = Memory::open(s).unwrap();
    let payload = memory.memory_search("penicillin", &SearchOptions::default());
    assert_eq!(payload.unavailable, Some(true), "{payload:?}");
    assert!(payload.results.is_empty());
    let error = payload.error.unwrap();
    assert!(
        error.starts_with("the openai embedding provider cannot serve"),
        "{error}"
    );
    assert!(payload.warning.unwrap().contains("does not fall back"));
    // The older layout keeps keyword-only search with the reason (the test above).
}
