//! Fleet mode against a real S3 server: moto's (`moto[server]` from PyPI), started on
//! loopback from `MEMORIA_TEST_MOTO` (its `moto_server` launcher; `.ci/run` installs it).
//! Each node is a `memoria` process with a state directory of its own and one config
//! naming the bucket: nodes share nothing but the object store. Skips with a note when the
//! server is absent, and when memoria is built without the `fleet` feature.

#![cfg_attr(not(feature = "fleet"), allow(dead_code, unused_imports))]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "support/moto.rs"]
mod moto;
use moto::S3;

/// A node: its own state directory, and a config naming the store under `prefix`.
struct Node {
    state: PathBuf,
    config: PathBuf,
}

fn node(root: &Path, name: &str, s3: &S3, prefix: &str) -> Node {
    let state = root.join(name);
    fs::create_dir_all(&state).unwrap();
    let config = state.join("openclaw.json");
    let store = serde_json::json!({
        "backend": "lancedb",
        "uri": format!("s3://fleet/{prefix}"),
        "storageOptions": s3.storage_options(),
    });
    // Searches answer from what is committed: a node syncs only when told to (`index`).
    let text = serde_json::json!({
        "agents": { "defaults": { "memorySearch": { "sync": { "onSearch": false } } } },
        "plugins": { "entries": { "memoria": { "config": { "store": store } } } }
    });
    fs::write(&config, text.to_string()).unwrap();
    Node { state, config }
}

/// memoria as `node` (or, with `None`, on a local agent directory under `local`),
/// keyword-only, on `workspace`.
fn memoria(node: Option<&Node>, local: &Path, workspace: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memoria"));
    match node {
        Some(node) => cmd
            .arg("--state-dir")
            .arg(&node.state)
            .arg("--config")
            .arg(&node.config),
        None => cmd.arg("--state-dir").arg(local),
    };
    cmd.arg("--workspace")
        .arg(workspace)
        .args(["--provider", "none"])
        .args(args)
        .env_remove("OPENCLAW_CONFIG_PATH")
        .env_remove("OPENCLAW_STATE_DIR")
        .env_remove("MEMORIA_MODEL_DIR")
        .env("MEMORIA_FLEET_LEASE_SECONDS", "5");
    cmd
}

fn ok(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(out: Output, what: &str) -> Value {
    serde_json::from_slice(&ok(out, what).stdout).unwrap()
}

/// `(path, startLine)` of each result.
fn hits(payload: &Value) -> Vec<(String, u64)> {
    payload["results"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap_or_default().to_string(),
                r["startLine"].as_u64().unwrap_or_default(),
            )
        })
        .collect()
}

/// The payload of up to 50 hits for `word` on `node`, none left out by a minimum score.
fn fifty(node: &Node, local: &Path, workspace: &Path, word: &str) -> Value {
    let args = [
        "search",
        word,
        "--json",
        "--max-results",
        "50",
        "--min-score",
        "0",
    ];
    json(
        memoria(Some(node), local, workspace, &args)
            .output()
            .unwrap(),
        word,
    )
}

/// A workspace of `files` daily logs, each naming its own token `note<i>` and `word`.
fn notes(dir: &Path, files: usize, word: &str) {
    fs::create_dir_all(dir.join("memory")).unwrap();
    for i in 0..files {
        let text = format!(
            "# Day {i}\n\n- Talked about {word} and the token note{i} today.\n- The meeting \
             with team {i} moved to room {}.\n",
            i % 7
        );
        fs::write(dir.join(format!("memory/2026-01-{:04}.md", i)), text).unwrap();
    }
}

#[cfg(not(feature = "fleet"))]
#[test]
fn fleet_mode_needs_the_fleet_feature() {
    eprintln!(
        "skipped: memoria is built without the `fleet` feature (cargo test --features fleet)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .arg("--state-dir")
        .arg(tmp.path())
        .args([
            "--store-uri",
            "s3://fleet/x",
            "--provider",
            "none",
            "status",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("`fleet` feature"), "{stderr}");
}

/// A node that never saw the agent answers from the store, as the node that indexed it
/// does, and as the local store does.
#[cfg(feature = "fleet")]
#[test]
fn a_cold_node_answers_for_an_agent_it_never_saw() {
    let Some(s3) = S3::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace");
    let (a, b) = (
        node(tmp.path(), "a", &s3, "cold"),
        node(tmp.path(), "b", &s3, "cold"),
    );
    let local = tmp.path().join("local");
    ok(
        memoria(Some(&a), &local, &workspace, &["index"])
            .output()
            .unwrap(),
        "index on a",
    );
    ok(
        memoria(None, &local, &workspace, &["index"])
            .output()
            .unwrap(),
        "local index",
    );
    let status = json(
        memoria(Some(&b), &local, &workspace, &["status", "--json"])
            .output()
            .unwrap(),
        "status on b",
    );
    assert_eq!(status["dirty"], false, "{status}");
    assert!(status["chunks"].as_u64().unwrap_or(0) > 0, "{status}");
    for query in [
        "postgres cutover downtime",
        "who reviews the migration",
        "dentist appointment",
        "Lisbon",
    ] {
        let args = ["search", query, "--json"];
        let from_b = json(
            memoria(Some(&b), &local, &workspace, &args)
                .output()
                .unwrap(),
            query,
        );
        let from_a = json(
            memoria(Some(&a), &local, &workspace, &args)
                .output()
                .unwrap(),
            query,
        );
        let from_local = json(
            memoria(None, &local, &workspace, &args).output().unwrap(),
            query,
        );
        assert!(!hits(&from_b).is_empty(), "{query}: {from_b}");
        assert_eq!(hits(&from_b), hits(&from_a), "{query}");
        assert_eq!(
            hits(&from_b).first(),
            hits(&from_local).first(),
            "{query}: lancedb {from_b}\nlocal {from_local}"
        );
    }
    // A node without the workspace reads a note's lines from the store, and says so.
    let elsewhere = tmp.path().join("not-here");
    let args = ["get", "memory/2026-11-14.md", "--json"];
    let read = json(
        memoria(Some(&b), &local, &elsewhere, &args)
            .output()
            .unwrap(),
        "get on b without the workspace",
    );
    let file = fs::read_to_string(workspace.join("memory/2026-11-14.md")).unwrap();
    assert_eq!(read["from"], "index", "{read}");
    assert_eq!(
        read["text"].as_str().map(str::trim_end),
        Some(file.trim_end()),
        "{read}"
    );
    // No local index was written by the fleet nodes.
    assert!(!b.state.join("memory/main/manifest.json").exists());
}

/// Two nodes syncing one agent at once: one writes, the other finds it busy (exit 3) or
/// syncs after it; nothing is lost or doubled.
#[cfg(feature = "fleet")]
#[test]
fn concurrent_syncs_lose_nothing() {
    let Some(s3) = S3::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("workspace");
    let files = 120;
    notes(&workspace, files, "kayak");
    let local = tmp.path().join("local");
    let nodes: Vec<Node> = ["a", "b", "c"]
        .iter()
        .map(|n| node(tmp.path(), n, &s3, "concurrent"))
        .collect();
    let children: Vec<Child> = nodes[..2]
        .iter()
        .map(|n| {
            memoria(Some(n), &local, &workspace, &["index"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut codes = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(3)),
            "a concurrent index ended {code:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        codes.push(code);
    }
    assert!(
        codes.contains(&Some(0)),
        "neither sync went through: {codes:?}"
    );

    let reference = json(
        {
            ok(
                memoria(None, &local, &workspace, &["index"])
                    .output()
                    .unwrap(),
                "local index",
            );
            memoria(None, &local, &workspace, &["status", "--json"])
                .output()
                .unwrap()
        },
        "local status",
    );
    let status = json(
        memoria(Some(&nodes[2]), &local, &workspace, &["status", "--json"])
            .output()
            .unwrap(),
        "status on c",
    );
    assert_eq!(status["files"], files, "{status}");
    assert_eq!(status["chunks"], reference["chunks"], "{status}");
    // Every note is found once by its own token, and the shared word finds no chunk twice.
    for i in [0, files / 2, files - 1] {
        let query = format!("note{i}");
        let payload = json(
            memoria(
                Some(&nodes[2]),
                &local,
                &workspace,
                &["search", &query, "--json"],
            )
            .output()
            .unwrap(),
            &query,
        );
        let found = hits(&payload);
        assert_eq!(
            found.first().map(|h| h.0.as_str()),
            Some(format!("memory/2026-01-{i:04}.md").as_str()),
            "{payload}"
        );
    }
    let payload = fifty(&nodes[2], &local, &workspace, "kayak");
    let mut found = hits(&payload);
    let all = found.len();
    found.sort();
    found.dedup();
    assert_eq!((found.len(), all), (all, 50.min(files)), "{payload}");
}

/// A node killed mid-sync leaves the last commit searchable; the next sync, once the dead
/// node's lease has expired, completes the change.
#[cfg(feature = "fleet")]
#[test]
fn a_node_killed_mid_sync_leaves_the_last_commit_searchable() {
    let Some(s3) = S3::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("workspace");
    let files = 1500;
    notes(&workspace, files, "heron");
    let local = tmp.path().join("local");
    let (a, b) = (
        node(tmp.path(), "a", &s3, "killed"),
        node(tmp.path(), "b", &s3, "killed"),
    );
    ok(
        memoria(Some(&a), &local, &workspace, &["index"])
            .output()
            .unwrap(),
        "first index",
    );

    // Every note changes its word; a's sync of that is killed as soon as it has written a
    // version of the chunks table, before its commit.
    notes(&workspace, files, "osprey");
    let versions = "killed/main/chunks_1.lance/_versions/";
    let before = s3.objects(versions);
    let mut child = memoria(Some(&a), &local, &workspace, &["index"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while s3.objects(versions) == before {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the sync ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    // b answers from the last commit: the old word only, and no error.
    let old = hits(&fifty(&b, &local, &workspace, "heron"));
    let new = hits(&fifty(&b, &local, &workspace, "osprey"));
    assert_eq!((old.len(), new.len()), (50, 0), "heron hits, osprey hits");

    // Once the lease has expired (5 s here), b's sync completes the change.
    let started = Instant::now();
    loop {
        let out = memoria(Some(&b), &local, &workspace, &["index"])
            .output()
            .unwrap();
        match out.status.code() {
            Some(0) => break,
            Some(3) if started.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_secs(1))
            }
            _ => panic!("index on b: {}", String::from_utf8_lossy(&out.stderr)),
        }
    }
    let new = hits(&fifty(&b, &local, &workspace, "osprey"));
    assert_eq!(new.len(), 50);
    let status = json(
        memoria(Some(&b), &local, &workspace, &["status", "--json"])
            .output()
            .unwrap(),
        "status",
    );
    assert_eq!(status["files"], files, "{status}");
}
