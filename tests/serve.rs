//! `memoria serve` with real clients: the official OpenAI Python SDK against
//! `/v1/embeddings` (vectors equal to `memoria embed`'s, base64 and float alike, Matryoshka
//! sizes, OpenAI's error shapes, a server that keeps serving) and the official MCP SDK's
//! streamable-HTTP client against `/mcp` (the same answer as the CLI). Needs the real model
//! (`MEMORIA_TEST_MODEL_DIR`) and the Python SDKs (`MEMORIA_TEST_MCP_PYTHON`, whose
//! environment `.ci/run` gives `openai` too); without them those tests print a note.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

fn example_workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace")
}

fn memoria(state: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memoria"));
    cmd.arg("--state-dir")
        .arg(state)
        .arg("--workspace")
        .arg(example_workspace())
        .env_remove("OPENCLAW_CONFIG_PATH")
        .env_remove("OPENCLAW_STATE_DIR")
        .env_remove("MEMORIA_SERVE_TOKEN");
    cmd
}

/// A running server and its address; SIGTERM on drop.
struct Server {
    child: Child,
    addr: String,
    /// The line that said where it listens.
    listening: String,
}

impl Server {
    fn start(state: &Path, args: &[&str], serve_args: &[&str]) -> Server {
        let mut child = memoria(state)
            .args(args)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(serve_args)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let (addr, listening) = loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "serve exited early"
            );
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break (
                    rest.split_whitespace().next().unwrap().to_string(),
                    line.clone(),
                );
            }
        };
        // The rest of its log is read (and dropped), so it never waits on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Server {
            child,
            addr,
            listening,
        }
    }

    /// Waits until `/health` has said whether the model loaded: its status then.
    fn wait_for_model(&self) -> (u16, String) {
        for _ in 0..600 {
            let answer = http(
                &self.addr,
                &format!(
                    "GET /health HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                    self.addr
                ),
            );
            if answer.0 == 200 || !answer.1.contains("\"loading\"") {
                return answer;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the model neither loaded nor failed within 60 s");
    }

    /// SIGTERM, and the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        self.child.wait().unwrap()
    }
}

/// One raw HTTP/1.1 request: (status, body).
fn http(addr: &str, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .unwrap_or("0")
        .parse()
        .unwrap_or(0);
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

#[test]
fn a_non_loopback_address_needs_a_token_and_a_token_is_required() {
    let state = tempfile::tempdir().unwrap();
    let out = memoria(state.path())
        .args(["--provider", "none", "serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not a loopback address: give --token"),
        "{stderr}"
    );
    // Without a model there is nothing to serve: it refuses to start, naming the model.
    let out = memoria(state.path())
        .args([
            "--model",
            "/no/such/model",
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("there is none") && stderr.contains("/no/such/model"),
        "{stderr}"
    );
    // Without a token on loopback: open, and a model that is there but cannot load (a
    // GGUF file that is not one) is said by /health.
    let broken = state.path().join("broken.gguf");
    std::fs::write(&broken, "not a model").unwrap();
    let broken = broken.to_string_lossy().into_owned();
    let no_model = ["--provider", "none", "--model", broken.as_str()];
    let server = Server::start(state.path(), &no_model, &[]);
    let (status, body) = server.wait_for_model();
    assert_eq!(status, 503, "{body}");
    let addr = server.addr.clone();
    let get = |path: &str, headers: &str| {
        http(
            &addr,
            &format!("GET {path} HTTP/1.1\r\n{headers}Connection: close\r\n\r\n"),
        )
    };
    let host = format!("Host: {addr}\r\n");
    let (status, body) = get("/health", &host);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("the model could not load"), "{body}");
    let (status, body) = get("/v1/embeddings", &host);
    assert_eq!(status, 405, "{body}");
    assert!(body.contains("\"method_not_allowed\""), "{body}");
    assert_eq!(get("/v1/models", &host).0, 200);
    // A foreign Host or Origin (DNS rebinding) is refused on a loopback address.
    assert_eq!(get("/v1/models", "Host: attacker.example\r\n").0, 403);
    let origin = format!("{host}Origin: http://attacker.example\r\n");
    assert_eq!(get("/v1/models", &origin).0, 403);
    assert!(server.stop().success(), "a graceful stop on SIGTERM");

    // With a token: every endpoint but /health wants it, refused in OpenAI's shape.
    let server = Server::start(state.path(), &no_model, &["--token", "s3cret"]);
    assert!(
        server.listening.contains("a Bearer token is required"),
        "{}",
        server.listening
    );
    let addr = server.addr.clone();
    let get = |path: &str, headers: &str| {
        http(
            &addr,
            &format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n"),
        )
    };
    let (status, body) = get("/v1/models", "");
    assert_eq!(status, 401, "{body}");
    let error: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(error["error"]["code"], "invalid_api_key");
    assert_eq!(get("/v1/models", "Authorization: Bearer wrong\r\n").0, 401);
    assert_eq!(get("/mcp", "").0, 401);
    assert_eq!(get("/v1/models", "Authorization: Bearer s3cret\r\n").0, 200);
    assert_eq!(get("/health", "").0, 503, "health needs no token");
    assert!(server.stop().success());
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(a) * norm(b))
}

fn vectors(value: &Value) -> Vec<Vec<f64>> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect()
}

#[test]
fn openai_and_mcp_clients_get_what_the_cli_gives() {
    let (Ok(model), Ok(python)) = (
        std::env::var("MEMORIA_TEST_MODEL_DIR"),
        std::env::var("MEMORIA_TEST_MCP_PYTHON"),
    ) else {
        eprintln!("note: MEMORIA_TEST_MODEL_DIR or MEMORIA_TEST_MCP_PYTHON unset; skipping");
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let texts = [
        "The dentist moved to Elm Street.",
        "postgres cutover downtime",
        "京都の紅葉",
    ];
    // What `memoria embed` gives, per kind and size.
    let embed = |args: &[&str]| -> Vec<Vec<f64>> {
        let mut child = memoria(state.path())
            .args(["--model", &model, "embed"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let input: String = texts
            .iter()
            .map(|t| format!("{}\n", json!({"text": t})))
            .collect();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["embedding"].clone())
            .collect();
        vectors(&Value::Array(lines))
    };
    let query = embed(&["--kind", "query"]);
    let document = embed(&["--kind", "document"]);
    let small = embed(&["--kind", "document", "--dim", "256"]);
    assert_eq!((query.len(), document.len()), (3, 3));

    memoria(state.path())
        .args(["--provider", "none", "index"])
        .output()
        .unwrap();
    let server = Server::start(state.path(), &["--model", &model], &[]);
    assert_eq!(server.wait_for_model().0, 200);
    let spec = json!({"token": null, "texts": texts, "search": {"query": "postgres cutover downtime", "lexicalOnly": true}});
    let spec_file = state.path().join("spec.json");
    std::fs::write(&spec_file, spec.to_string()).unwrap();
    let out = Command::new(&python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/serve_client.py"))
        .arg(format!("http://{}", server.addr))
        .arg(&spec_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = &got["embeddings"];
    for (kind, want) in [("query", &query), ("passage", &document)] {
        for encoding in ["base64", "float"] {
            let vectors = vectors(&e[kind][encoding]);
            for (v, w) in vectors.iter().zip(want.iter()) {
                assert!(
                    cosine(v, w) >= 0.99999,
                    "{kind} {encoding}: {}",
                    cosine(v, w)
                );
            }
        }
    }
    assert!(e["query"]["usage"].as_u64().unwrap() > 0);
    // No input_type: the document prompt.
    let default = vectors(&json!([e["default"]]));
    assert!(cosine(&default[0], &document[0]) >= 0.99999);
    let dim256 = vectors(&json!([e["dim256"]]));
    assert_eq!(dim256[0].len(), 256);
    assert!((dim256[0].iter().map(|x| x * x).sum::<f64>().sqrt() - 1.0).abs() < 1e-5);
    assert!(cosine(&dim256[0], &small[0]) >= 0.99999);
    assert_eq!(e["models"][0], "embeddinggemma-300m");
    for bad in e["bad"].as_array().unwrap() {
        let status = bad["status"].as_u64().unwrap();
        assert!((400..500).contains(&status), "{bad}");
        let error = &bad["error"];
        assert!(
            error["message"].is_string() && error["type"].is_string(),
            "{bad}"
        );
        assert!(
            error.get("param").is_some() && error.get("code").is_some(),
            "{bad}"
        );
        assert_eq!(bad["healthAfter"], 200, "the server keeps serving: {bad}");
    }
    // No token configured: any Authorization header, or none, is served.
    assert_eq!(e["unauthorized"], 200);
    // MCP over HTTP: the tools of `memoria mcp`, the answer of the CLI (which reads the
    // last committed index while the server holds the writer lock).
    let m = &got["mcp"];
    assert_eq!(m["tools"].as_array().unwrap().len(), 6);
    assert_eq!(m["isError"], false);
    let cli = memoria(state.path())
        .args([
            "--provider",
            "none",
            "search",
            "postgres cutover downtime",
            "--lexical-only",
            "--json",
        ])
        .output()
        .unwrap();
    let cli: Value = serde_json::from_slice(&cli.stdout).unwrap();
    let mcp: Value = serde_json::from_str(m["text"].as_str().unwrap()).unwrap();
    assert_eq!(mcp["results"], cli["results"]);
    assert!(server.stop().success(), "a graceful stop on SIGTERM");
}

/// The real OpenClaw (`openclaw@2026.9.6`) with `provider: "openai-compatible"` pointed at
/// `memoria serve`: its index embeds through memoria and its search is hybrid.
#[test]
fn openclaw_embeds_through_memoria_serve() {
    let (Ok(model), Ok(node), Ok(entry)) = (
        std::env::var("MEMORIA_TEST_MODEL_DIR"),
        std::env::var("OPENCLAW_NODE"),
        std::env::var("OPENCLAW_ENTRY"),
    ) else {
        eprintln!(
            "note: the model or OpenClaw (OPENCLAW_NODE / OPENCLAW_ENTRY) is missing; skipping"
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(&tmp.path().join("memoria"), &["--model", &model], &[]);
    assert_eq!(server.wait_for_model().0, 200);
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(ws.join("memory")).unwrap();
    for entry in std::fs::read_dir(example_workspace().join("memory")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, ws.join("memory").join(path.file_name().unwrap())).unwrap();
        }
    }
    let config = json!({
        "agents": {"defaults": {"workspace": ws}},
        "memory": {"search": {
            "provider": "openai-compatible", "model": "embeddinggemma-300m",
            "remote": {"baseUrl": format!("http://{}/v1", server.addr)},
            "queryInputType": "query", "documentInputType": "passage",
        }},
        "plugins": {"entries": {"memory-core": {"config": {"dreaming": {"enabled": false}}}}},
    });
    let config_path = tmp.path().join("openclaw.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    std::fs::create_dir_all(tmp.path().join("home")).unwrap();
    let openclaw = |args: &[&str]| {
        Command::new(&node)
            .arg(&entry)
            .args(args)
            .env("OPENCLAW_STATE_DIR", tmp.path().join("openclaw-state"))
            .env("OPENCLAW_CONFIG_PATH", &config_path)
            .env("HOME", tmp.path().join("home"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let index = openclaw(&["memory", "index"]);
    let said = String::from_utf8_lossy(&index.stdout);
    assert!(
        index.status.success() && said.contains("files indexed"),
        "{said}"
    );
    let search = openclaw(&[
        "memory",
        "search",
        "when was the postgres cutover",
        "--json",
    ]);
    let payload: Value = serde_json::from_slice(&search.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&search.stderr)));
    assert!(payload.get("warning").is_none(), "{payload:#}");
    let first = &payload["results"][0];
    assert_eq!(first["path"], "memory/2026-11-20.md", "{payload:#}");
    assert!(
        first["vectorScore"].as_f64().unwrap() > 0.3,
        "hybrid: {first:#}"
    );
    assert!(server.stop().success());
    // Used only for embeddings (no client spoke MCP), the server indexed nothing of its own.
    let out = memoria(&tmp.path().join("memoria"))
        .args(["--provider", "none", "status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["generation"], Value::Null, "{status:#}");
}
