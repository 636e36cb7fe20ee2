//! The `openai` embedding provider against a loopback HTTP server written here (no
//! network): the wire format (path, headers, key, model, inputs), indexing and hybrid
//! search through it, retries on 429 with `Retry-After`, a provider that stays down
//! (keyword-only with the reason), malformed answers, a wrong dimension, key resolution
//! from the config and from `OPENAI_API_KEY`, and no key written under the state directory.

#![cfg(feature = "remote")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use memoria::config::{Env, ProviderKind, Secret, Settings};
use memoria::{Memory, SearchOptions};
use serde_json::{json, Value};

const KEY: &str = "sk-test-abcdefghijklmnop0123456789";

/// Tests that set or depend on the absence of `OPENAI_API_KEY` take turns.
static ENV: Mutex<()> = Mutex::new(());
const DIMS: usize = 8;

#[derive(Debug, Clone)]
struct Request {
    path: String,
    headers: BTreeMap<String, String>,
    body: Value,
}

/// What the server answers to the n-th request (0-based): status, headers, body.
type Script = dyn Fn(&Request, usize) -> (u16, Vec<(String, String)>, String) + Send + Sync;

struct Server {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

fn serve(script: Box<Script>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut headers = BTreeMap::new();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':') {
                    headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
                }
            }
            let length: usize = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let request = Request {
                path,
                headers,
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            };
            let n = {
                let mut log = log.lock().unwrap();
                log.push(request.clone());
                log.len() - 1
            };
            let (status, extra, body) = script(&request, n);
            let mut response = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in extra {
                response.push_str(&format!("{name}: {value}\r\n"));
            }
            response.push_str("\r\n");
            response.push_str(&body);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    Server { url, requests }
}

/// A deterministic embedding: letter counts folded into `dims` values.
fn vector(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims];
    for b in text.bytes().filter(u8::is_ascii_alphabetic) {
        v[(b.to_ascii_lowercase() - b'a') as usize % dims] += 1.0;
    }
    v[0] += 0.5;
    v
}

/// OpenAI's answer format for a request's inputs.
fn answer(request: &Request, dims: usize) -> String {
    let inputs = request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev() // out of order on purpose: `index` says where each belongs
        .map(|(i, text)| {
            json!({"object": "embedding", "index": i,
                   "embedding": vector(text.as_str().unwrap_or(""), dims)})
        })
        .collect();
    json!({"object": "list", "data": data, "model": request.body["model"],
           "usage": {"prompt_tokens": 1, "total_tokens": 1}})
    .to_string()
}

/// Gemini's answer format for a `batchEmbedContents` request.
fn gemini_answer(request: &Request, dims: usize) -> String {
    let requests = request.body["requests"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let embeddings: Vec<Value> = requests
        .iter()
        .map(|r| {
            let text = r["content"]["parts"][0]["text"].as_str().unwrap_or("");
            json!({ "values": vector(text, dims) })
        })
        .collect();
    json!({ "embeddings": embeddings }).to_string()
}

/// OpenAI's format on `/embeddings`; Gemini's on `gemini-embedding-001`; 403 otherwise.
fn ok(dims: usize) -> Box<Script> {
    Box::new(move |r: &Request, _| {
        if r.path.ends_with("/embeddings") {
            (200, Vec::new(), answer(r, dims))
        } else if r
            .path
            .ends_with("/models/gemini-embedding-001:batchEmbedContents")
        {
            (200, Vec::new(), gemini_answer(r, dims))
        } else {
            (403, Vec::new(), "{\"error\": \"no such model\"}".into())
        }
    })
}

fn settings(root: &Path, url: &str, key: Option<&str>) -> Settings {
    let env = Env {
        home: Some(root.to_path_buf()),
        state_dir: Some(root.join("state")),
        config_path: None,
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
    let auth: Vec<String> = server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.headers["authorization"].clone())
        .collect();
    assert_eq!(
        auth,
        [
            "Bearer sk-from-the-environment-0123456789",
            "Bearer sk-from-a-secret-ref-0123456789",
            "Bearer sk-from-models-providers-0123456789",
        ]
    );
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
    s.store.dir = tmp2.path().join("agent");
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
