//! `memoria mcp` driven by a real MCP client: the official Python SDK (`mcp` on PyPI), run
//! by `tests/mcp_client.py` with the interpreter named by `MEMORIA_TEST_MCP_PYTHON`
//! (`.ci/run` installs it into a virtual environment and sets it).
//!
//! It lists the tools, checks that `memory_search` and `memory_get` results carry byte for
//! byte the payloads `memoria search --json` / `get --json` print, that bad requests are
//! errors naming their key while the server keeps serving, and that one server serves two
//! agents. With `MEMORIA_TEST_MODEL_DIR` set it also compares a hybrid search with the real
//! model.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

#[path = "support/mcp_session.rs"]
mod mcp_session;
use mcp_session::mcp_session;

fn python() -> Option<String> {
    match std::env::var("MEMORIA_TEST_MCP_PYTHON") {
        Ok(python) => Some(python),
        Err(_) => {
            eprintln!(
                "note: MEMORIA_TEST_MCP_PYTHON is not set; skipping the MCP client tests \
                 (.ci/run sets it)"
            );
            None
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The bundled example workspace, copied (the server watches it).
fn workspace(root: &Path) -> PathBuf {
    let ws = root.join("ws");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace"),
        &ws,
    );
    ws
}

/// The global options both the CLI and the server get.
fn globals(root: &Path, ws: &Path, provider: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--state-dir".to_string(),
        root.join("state").display().to_string(),
        "--workspace".into(),
        ws.display().to_string(),
    ];
    args.extend(provider.iter().map(|s| s.to_string()));
    args
}

/// `memoria ARGS --json`'s stdout, without its final newline.
fn cli(globals: &[String], args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .args(globals)
        .args(args)
        .env_remove("OPENCLAW_CONFIG_PATH")
        .env_remove("OPENCLAW_STATE_DIR")
        .output()
        .unwrap();
    // `get` of a missing file prints its (empty) payload and exits 4 (not found).
    let not_found = args.first() == Some(&"get") && out.status.code() == Some(4);
    assert!(
        out.status.success() || not_found,
        "memoria {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.strip_suffix('\n').unwrap().to_string()
}

/// Runs the Python client against `memoria GLOBALS mcp` with `calls`.
fn client(python: &str, root: &Path, globals: &[String], calls: Value) -> Value {
    let mut args = globals.to_vec();
    args.push("mcp".into());
    mcp_session(
        python,
        root,
        Path::new(env!("CARGO_BIN_EXE_memoria")),
        &args,
        calls,
    )
}

/// A successful call's text, checked against its structured content.
fn ok_text(call: &Value, is_error: bool) -> String {
    let result = &call["result"];
    assert!(result.is_object(), "expected a result, got {call}");
    assert_eq!(result["isError"], is_error, "{call}");
    assert_eq!(result["contentCount"], 1, "one text item: {call}");
    let text = result["text"].as_str().unwrap().to_string();
    let parsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        parsed, result["structured"],
        "text and structuredContent agree"
    );
    text
}

fn error_message(call: &Value) -> String {
    let error = &call["error"];
    assert_eq!(error["code"], -32602, "invalid_params: {call}");
    error["message"].as_str().unwrap().to_string()
}

#[test]
fn mcp_tools_match_the_cli_byte_for_byte_and_refuse_bad_requests() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let ws = workspace(tmp.path());
    let g = globals(tmp.path(), &ws, &["--provider", "none"]);
    cli(&g, &["index"]);

    let searches: &[(&[&str], Value)] = &[
        (
            &["postgres cutover downtime"],
            json!({"query": "postgres cutover downtime"}),
        ),
        (
            &["lisboa", "--max-results", "2", "--min-score", "0.1"],
            json!({"query": "lisboa", "maxResults": 2, "minScore": 0.1}),
        ),
        (
            &["日本 旅行"],
            json!({"query": "日本 旅行", "corpus": "memory"}),
        ),
        (
            &["zzzz-nothing-matches"],
            json!({"query": "zzzz-nothing-matches"}),
        ),
        // The chat: no citations in a group (citations: auto).
        (
            &[
                "postgres",
                "--chat-type",
                "group",
                "--channel",
                "discord",
                "--session-key",
                "agent:main:1",
            ],
            json!({"query": "postgres", "chatType": "group", "channel": "discord", "sessionKey": "agent:main:1"}),
        ),
        // OpenClaw's lexicalOnly: keyword scoring without embedding the query.
        (
            &["postgres cutover", "--lexical-only"],
            json!({"query": "postgres cutover", "lexicalOnly": true}),
        ),
    ];
    let gets: &[(&[&str], Value)] = &[
        (&["MEMORY.md"], json!({"path": "MEMORY.md"})),
        (
            &["memory/2026-11-14.md", "--from", "2", "--lines", "3"],
            json!({"path": "memory/2026-11-14.md", "from": 2, "lines": 3}),
        ),
        (
            &["memory/none-such.md"],
            json!({"path": "memory/none-such.md"}),
        ),
        // The citation memory_search returns reads as its range (both forms).
        (
            &["memory/2026-11-14.md#L2-L3"],
            json!({"path": "memory/2026-11-14.md#L2-L3"}),
        ),
        (
            &["memory/2026-11-14.md:2-3"],
            json!({"path": "memory/2026-11-14.md:2-3"}),
        ),
    ];
    let mut calls: Vec<Value> = Vec::new();
    for (_, arguments) in searches {
        calls.push(json!({"name": "memory_search", "arguments": arguments}));
    }
    for (_, arguments) in gets {
        calls.push(json!({"name": "memory_get", "arguments": arguments}));
    }
    let bad = [
        (
            json!({"name": "memory_search", "arguments": {"query": "x", "maxResults": 0}}),
            "`maxResults`",
        ),
        (
            json!({"name": "memory_search", "arguments": {"query": 7}}),
            "`query`: expected a string",
        ),
        (
            json!({"name": "memory_search", "arguments": {}}),
            "`query` is required",
        ),
        (
            json!({"name": "memory_search", "arguments": {"query": "x", "corpus": "mail"}}),
            "`corpus`",
        ),
        (
            json!({"name": "memory_search", "arguments": {"query": "x", "chatType": "dm"}}),
            "`chatType`: expected direct, group or channel",
        ),
        (
            json!({"name": "memory_search", "arguments": {"query": "x", "limit": 3}}),
            "unknown argument `limit`",
        ),
        (
            json!({"name": "memory_get", "arguments": {"path": "MEMORY.md", "from": "2"}}),
            "`from`",
        ),
        (
            json!({"name": "memory_search", "arguments": {"query": "x", "lexicalOnly": "yes"}}),
            "`lexicalOnly`: expected true or false",
        ),
        (
            json!({"name": "memory_status", "arguments": {"verbose": true}}),
            "unknown argument `verbose`",
        ),
        (
            json!({"name": "memory_forget", "arguments": {}}),
            "unknown tool \"memory_forget\"",
        ),
    ];
    for (call, _) in &bad {
        calls.push(call.clone());
    }
    // A refused path is a tool result with isError and the SPEC payload; the server keeps
    // serving after every error.
    calls.push(json!({"name": "memory_get", "arguments": {"path": "../outside.md"}}));
    calls.push(json!({"name": "memory_search", "arguments": searches[0].1}));
    calls.push(json!({"name": "memory_status", "arguments": {}}));

    let out = client(&python, tmp.path(), &g, Value::Array(calls));
    assert_eq!(out["serverName"], "memoria");
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "memory_search",
            "memory_get",
            "memory_append",
            "memory_context",
            "sessions_search",
            "memory_status"
        ]
    );
    assert_eq!(
        out["tools"][0]["inputSchema"]["properties"]["lexicalOnly"]["type"],
        "boolean"
    );
    assert_eq!(out["tools"][2]["inputSchema"]["required"], json!(["text"]));
    assert_eq!(out["tools"][0]["inputSchema"]["required"], json!(["query"]));
    assert_eq!(out["tools"][1]["inputSchema"]["required"], json!(["path"]));
    assert!(
        out["tools"][0]["inputSchema"]["properties"]
            .get("agent")
            .is_none(),
        "one agent: no agent argument offered"
    );

    let results = out["calls"].as_array().unwrap();
    let mut i = 0;
    for (args, _) in searches {
        let mut cli_args = vec!["search"];
        cli_args.extend_from_slice(args);
        cli_args.push("--json");
        assert_eq!(ok_text(&results[i], false), cli(&g, &cli_args), "{args:?}");
        i += 1;
    }
    for (args, _) in gets {
        let mut cli_args = vec!["get"];
        cli_args.extend_from_slice(args);
        cli_args.push("--json");
        assert_eq!(ok_text(&results[i], false), cli(&g, &cli_args), "{args:?}");
        i += 1;
    }
    for (_, names) in &bad {
        let message = error_message(&results[i]);
        assert!(message.contains(names), "{message:?} should name {names}");
        i += 1;
    }
    let refused: Value = serde_json::from_str(&ok_text(&results[i], true)).unwrap();
    assert_eq!(refused["disabled"], true);
    assert!(refused["error"].as_str().unwrap().contains("../outside.md"));
    assert_eq!(
        ok_text(&results[i + 1], false),
        cli(&g, &["search", "postgres cutover downtime", "--json"])
    );
    // memory_status: the report `memoria status --json` prints, from the serving process
    // (with its own live sync, which the CLI run after the server is gone cannot see).
    let status: Value = serde_json::from_str(&ok_text(&results[i + 2], false)).unwrap();
    let from_cli: Value = serde_json::from_str(&cli(&g, &["status", "--json"])).unwrap();
    for key in [
        "agentId",
        "workspace",
        "files",
        "chunks",
        "mode",
        "provider",
        "identity",
    ] {
        assert_eq!(status[key], from_cli[key], "{key}");
    }
    assert!(status["files"].as_u64().unwrap() > 0, "{status}");
    assert!(
        status["live"]["pid"].is_u64(),
        "the server's own live sync: {status}"
    );
}

#[test]
fn a_search_of_a_missing_workspace_answers_at_once_with_the_reason() {
    // The README's MCP config passes no --workspace; without one the live sync's first
    // index cannot be made. The search must say so (as the CLI does), not wait for it.
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-workspace");
    let g = vec![
        "--state-dir".to_string(),
        tmp.path().join("state").display().to_string(),
        "--workspace".into(),
        missing.display().to_string(),
        "--provider".into(),
        "none".into(),
    ];
    let calls = json!([
        {"name": "memory_search", "arguments": {"query": "dentist"}},
        {"name": "memory_get", "arguments": {"path": "MEMORY.md"}},
    ]);
    let out = client(&python, tmp.path(), &g, calls);
    let search: Value = serde_json::from_str(&ok_text(&out["calls"][0], true)).unwrap();
    let error = search["error"].as_str().unwrap();
    assert!(
        error.contains("no-such-workspace") && error.contains("does not exist"),
        "{error}"
    );
    // The server keeps serving.
    assert!(out["calls"][1]["result"].is_object(), "{}", out["calls"][1]);
}

#[test]
fn one_server_serves_two_agents() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let ws_a = workspace(tmp.path());
    let ws_b = tmp.path().join("ws-b");
    fs::create_dir_all(ws_b.join("memory")).unwrap();
    fs::write(ws_b.join("MEMORY.md"), "Agent b keeps bees: three hives.\n").unwrap();
    let config = tmp.path().join("openclaw.json");
    fs::write(
        &config,
        json!({"agents": {"list": [
            {"id": "a", "workspace": ws_a},
            {"id": "b", "workspace": ws_b},
        ]}})
        .to_string(),
    )
    .unwrap();
    let g = vec![
        "--state-dir".to_string(),
        tmp.path().join("state").display().to_string(),
        "--config".into(),
        config.display().to_string(),
        "--provider".into(),
        "none".into(),
        "--agent".into(),
        "a".into(),
        "--agent".into(),
        "b".into(),
    ];
    let calls = json!([
        {"name": "memory_search", "arguments": {"query": "hives"}},
        {"name": "memory_search", "arguments": {"query": "hives", "agent": "b"}},
        {"name": "memory_search", "arguments": {"query": "postgres", "agent": "a"}},
        {"name": "memory_search", "arguments": {"query": "x", "agent": "c"}},
    ]);
    let out = client(&python, tmp.path(), &g, calls);
    let schema = &out["tools"][0]["inputSchema"]["properties"]["agent"];
    assert_eq!(schema["enum"], json!(["a", "b"]));
    let hits = |i: usize| -> Vec<String> {
        let payload: Value = serde_json::from_str(&ok_text(&out["calls"][i], false)).unwrap();
        payload["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        hits(0).is_empty(),
        "the first agent is the default: a has no bees"
    );
    assert_eq!(hits(1), ["MEMORY.md"]);
    assert!(!hits(2).is_empty());
    assert!(error_message(&out["calls"][3]).contains("does not serve \"c\""));
}

#[test]
fn hybrid_search_with_the_real_model_matches_the_cli() {
    let Some(python) = python() else { return };
    let Some(model) = std::env::var_os("MEMORIA_TEST_MODEL_DIR") else {
        eprintln!("note: MEMORIA_TEST_MODEL_DIR is not set; skipping the hybrid MCP test");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let ws = workspace(tmp.path());
    let model = PathBuf::from(model).display().to_string();
    let g = globals(tmp.path(), &ws, &["--provider", "local", "--model", &model]);
    cli(&g, &["index"]);
    let query = "when did the database move finish?";
    let out = client(
        &python,
        tmp.path(),
        &g,
        json!([{"name": "memory_search", "arguments": {"query": query}}]),
    );
    let text = ok_text(&out["calls"][0], false);
    let payload: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(payload["mode"], "hybrid", "{payload}");
    assert_eq!(text, cli(&g, &["search", query, "--json"]));
    // status names the device and precision the local model runs with.
    let status: Value = serde_json::from_str(&cli(&g, &["status", "--json"])).unwrap();
    let embedding = &status["embedding"];
    assert_eq!(embedding["dims"], 768);
    // The precision `auto` chose, and why: q8, bf16 or f32 by the CPU's instructions.
    let device = embedding["device"].as_str().unwrap();
    assert!(
        [
            "cpu, q8 (auto: ",
            "cpu, f32 (auto: ",
            "cpu, bf16 (auto: AMX), "
        ]
        .iter()
        .any(|p| device.starts_with(p)),
        "{status}"
    );
    // …and where the model was loaded from (the packed model, after the first start).
    assert!(
        embedding["device"]
            .as_str()
            .unwrap()
            .contains("; loaded from "),
        "{status}"
    );
    assert_eq!(embedding["keySource"], Value::Null);
    let human = cli(&g, &["status"]);
    assert!(
        human.contains("model        embeddinggemma-300m (768 dims) on cpu, "),
        "{human}"
    );
    assert_eq!(
        status["identity"]["chunkTokens"], 400,
        "camelCase throughout"
    );
    // An answer filtered to nothing says why, in the human output too.
    let human = cli(
        &g,
        &["search", "quantum entanglement", "--min-score", "0.99"],
    );
    assert!(
        human.starts_with("no results: no result reached minScore 0.99: ")
            && human.contains("; a lower --min-score shows them"),
        "{human}"
    );
    // Keyword-only for once over this hybrid index: served by keyword, no rebuild.
    let g_none = globals(tmp.path(), &ws, &["--provider", "none"]);
    let keyword: Value = serde_json::from_str(&cli(&g_none, &["search", query, "--json"])).unwrap();
    assert_eq!(keyword["mode"], "fts-only");
    let after: Value = serde_json::from_str(&cli(&g, &["status", "--json"])).unwrap();
    assert_eq!(after["generation"], status["generation"]);
    assert_eq!(after["vectors"], status["vectors"]);
}

#[test]
fn memory_append_adds_to_the_daily_log_and_refuses_bad_input() {
    let Some(python) = python() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let ws = workspace(tmp.path());
    let g = globals(tmp.path(), &ws, &["--provider", "none"]);
    cli(&g, &["index"]);
    let calls = json!([
        {"name": "memory_append", "arguments": {"text": "- The ferry to Hydra leaves at 7.", "date": "2030-01-02"}},
        {"name": "memory_append", "arguments": {"text": "- Bring the passports.", "date": "2030-01-02"}},
        {"name": "memory_get", "arguments": {"path": "memory/2030-01-02.md"}},
        {"name": "memory_append", "arguments": {"text": "x", "date": "2030-02-30"}},
        {"name": "memory_append", "arguments": {"date": "2030-01-02"}},
        {"name": "memory_search", "arguments": {"query": "ferry to Hydra"}},
        {"name": "memory_context", "arguments": {"private": true}},
        {"name": "memory_context", "arguments": {"private": "yes"}},
    ]);
    let out = client(&python, tmp.path(), &g, calls);
    let first: Value = serde_json::from_str(&ok_text(&out["calls"][0], false)).unwrap();
    assert_eq!(
        first,
        json!({"path": "memory/2030-01-02.md", "startLine": 3, "endLine": 3})
    );
    let second: Value = serde_json::from_str(&ok_text(&out["calls"][1], false)).unwrap();
    assert_eq!(second["startLine"], 4);
    let got: Value = serde_json::from_str(&ok_text(&out["calls"][2], false)).unwrap();
    assert_eq!(
        got["text"],
        "# 2030-01-02\n\n- The ferry to Hydra leaves at 7.\n- Bring the passports.\n"
    );
    assert!(error_message(&out["calls"][3]).contains("`date`"));
    assert!(error_message(&out["calls"][4]).contains("`text`"));
    // Searchable through the normal sync.
    let found: Value = serde_json::from_str(&ok_text(&out["calls"][5], false)).unwrap();
    assert_eq!(
        found["results"][0]["path"], "memory/2030-01-02.md",
        "{found}"
    );
    // The session context: MEMORY.md only when private.
    let context: Value = serde_json::from_str(&ok_text(&out["calls"][6], false)).unwrap();
    assert_eq!(context["files"][0]["path"], "MEMORY.md", "{context}");
    assert!(error_message(&out["calls"][7]).contains("`private`"));
    // The CLI appends the same way.
    let text = cli(
        &g,
        &[
            "append",
            "- Hotel booked.",
            "--date",
            "2030-01-02",
            "--json",
        ],
    );
    let appended: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (appended["startLine"].clone(), appended["endLine"].clone()),
        (json!(5), json!(5))
    );
}
