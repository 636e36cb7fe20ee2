//! End-to-end tests of the `memoria` binary: the README's main command, the tool payloads,
//! incremental sync, identity changes and crash safety.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

/// memoria on `state` and `workspace`, keyword-only, with `args`.
fn memoria(state: &Path, workspace: &Path, args: &[&str]) -> Command {
    let mut cmd = memoria_auto(state, workspace);
    cmd.arg("--provider").arg("none").args(args);
    cmd
}

/// memoria on `state` and `workspace` with the default provider, free of the caller's
/// OpenClaw and model environment.
fn memoria_auto(state: &Path, workspace: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memoria"));
    cmd.arg("--state-dir")
        .arg(state)
        .arg("--workspace")
        .arg(workspace)
        .env_remove("OPENCLAW_CONFIG_PATH")
        .env_remove("OPENCLAW_STATE_DIR")
        .env_remove("MEMORIA_MODEL_DIR");
    cmd
}

fn run(state: &Path, workspace: &Path, args: &[&str]) -> Output {
    let out = memoria(state, workspace, args).output().unwrap();
    assert!(
        out.status.success(),
        "memoria {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(state: &Path, workspace: &Path, args: &[&str]) -> Value {
    let out = run(state, workspace, args);
    serde_json::from_slice(&out.stdout).unwrap()
}

fn example_workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace")
}

fn paths(payload: &Value) -> Vec<String> {
    payload["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn readme_search_on_the_example_workspace() {
    let state = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    let payload = json(
        state.path(),
        &ws,
        &["search", "postgres cutover downtime", "--json"],
    );
    assert_eq!(payload["mode"], "fts-only");
    assert_eq!(payload["provider"], "none");
    assert_eq!(payload["citations"], "auto");
    let first = &payload["results"][0];
    assert_eq!(first["path"], "memory/2026-11-20.md");
    assert_eq!(first["startLine"], 1);
    assert!(first["score"].as_f64().unwrap() > 0.35 && first["score"].as_f64().unwrap() < 1.0);
    assert_eq!(first["citation"], "memory/2026-11-20.md#L1-L6");
    assert!(first["snippet"]
        .as_str()
        .unwrap()
        .ends_with("Source: memory/2026-11-20.md#L1-L6"));
    // Identifiers, hex ids, Japanese and accented Spanish are all findable.
    for (query, want) in [
        ("a828e60", "memory/2026-11-16.md"),
        ("hybrid.vectorWeight", "memory/2026-11-17.md"),
        ("vectorWeight", "memory/2026-11-17.md"),
        ("紅葉", "memory/projects/日本旅行.md"),
        ("猫カフェ", "memory/projects/日本旅行.md"),
        ("pasteis nata belem", "memory/projects/viaje-lisboa.md"),
    ] {
        let payload = json(state.path(), &ws, &["search", query, "--json"]);
        assert_eq!(
            paths(&payload).first().map(String::as_str),
            Some(want),
            "query {query}"
        );
    }
    // No agent-directory writes happened to the workspace.
    assert!(!ws.join(".memoria").exists());
}

/// `--provider none` beside a named local model (the plugin README's example used to set
/// both): the model is unused, and the payload and `status` say so instead of answering
/// keyword-only in silence.
#[test]
fn a_named_model_that_provider_none_leaves_unused_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    let state = tmp.path().join("state");
    let search = ["search", "postgres cutover", "--json"];
    let plain = json(&state, &ws, &search);
    assert!(plain.get("fallback").is_none(), "{plain:#}");
    for (how, args, env) in [
        ("--model", vec!["--model", "/models/gemma"], None),
        ("$MEMORIA_MODEL_DIR", vec![], Some("/models/gemma")),
    ] {
        let named = |sub: &[&str]| -> Vec<u8> {
            let mut cmd = memoria(&state, &ws, &args);
            if let Some(dir) = env {
                cmd.env("MEMORIA_MODEL_DIR", dir);
            }
            let out = cmd.args(sub).output().unwrap();
            assert!(out.status.success(), "{how}: {out:?}");
            out.stdout
        };
        let payload: Value = serde_json::from_slice(&named(&search)).unwrap();
        assert_eq!(payload["mode"], "fts-only");
        assert_eq!(payload["fallback"]["from"], "local", "{how}: {payload:#}");
        let reason = payload["fallback"]["reason"].as_str().unwrap();
        assert!(
            reason.contains(how) && reason.contains("/models/gemma") && reason.contains("not used"),
            "{reason}"
        );
        let status = String::from_utf8(named(&["status"])).unwrap();
        assert!(status.contains("not used"), "{how}: {status}");
    }
}

/// A model directory named by `$MEMORIA_MODEL_DIR` that is not there fails `index` the way
/// `--model` does, and `doctor` fails with that variable as the fix, instead of indexing
/// keyword-only behind a generic "pull a model" (issue 45).
#[test]
fn a_wrong_model_dir_variable_fails_like_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    let state = tmp.path().join("state");
    let missing = tmp.path().join("no-such-model");
    for (how, flag, var) in [
        ("--model", Some(&missing), None),
        ("MEMORIA_MODEL_DIR", None, Some(&missing)),
    ] {
        let cmd = |sub: &str| {
            let mut cmd = memoria_auto(&state, &ws);
            if let Some(dir) = flag {
                cmd.arg("--model").arg(dir);
            }
            cmd.arg(sub);
            if let Some(dir) = var {
                cmd.env("MEMORIA_MODEL_DIR", dir);
            }
            cmd.output().unwrap()
        };
        let index = cmd("index");
        let stderr = String::from_utf8_lossy(&index.stderr);
        assert!(!index.status.success(), "{how}: index succeeded: {stderr}");
        assert!(
            stderr.contains(how) && stderr.contains(&*missing.to_string_lossy()),
            "{how}: {stderr}"
        );
        let doctor = cmd("doctor");
        let stdout = String::from_utf8_lossy(&doctor.stdout);
        assert!(!doctor.status.success(), "{how}: doctor passed: {stdout}");
        assert!(
            stdout.contains(&format!("fix: correct {how}")),
            "{how}: {stdout}"
        );
    }
}

/// The plugin's `args` and `env` reach the memoria it runs, not one typed in a shell:
/// `status` there says so, so a shell's answer that differs from the gateway's is explained
/// (issue 45); the plugin marks its own runs with `MEMORIA_OPENCLAW_PLUGIN`.
#[test]
fn status_in_a_shell_names_what_the_plugin_adds() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    let state = tmp.path().join("state");
    let config = tmp.path().join("openclaw.json");
    fs::write(
        &config,
        r#"{"plugins": {"entries": {"memoria": {"config": {"args": ["--ranking", "openclaw"],
            "env": {"MEMORIA_MODEL_DIR": "/models/gemma"}}}}}}"#,
    )
    .unwrap();
    let status = |plugin: bool| {
        let mut cmd = memoria(
            &state,
            &ws,
            &["--config", config.to_str().unwrap(), "status"],
        );
        if plugin {
            cmd.env("MEMORIA_OPENCLAW_PLUGIN", "1");
        } else {
            cmd.env_remove("MEMORIA_OPENCLAW_PLUGIN");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let shell = status(false);
    assert!(
        shell.contains(r#"args ["--ranking", "openclaw"]; env MEMORIA_MODEL_DIR"#)
            && shell.contains("openclaw memoria status"),
        "{shell}"
    );
    assert!(!status(true).contains("runs memoria with"));
}

#[test]
fn search_batch_prints_one_payload_per_query() {
    let state = tempfile::tempdir().unwrap();
    let queries = state.path().join("q.jsonl");
    fs::write(
        &queries,
        "{\"id\": 1, \"query\": \"Miso vaccine\"}\n{\"id\": \"b\", \"query\": \"   \"}\n",
    )
    .unwrap();
    let out = run(
        state.path(),
        &example_workspace(),
        &["search", "--queries", queries.to_str().unwrap()],
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(lines[0]["results"][0]["path"], "memory/2026-11-15.md");
    assert_eq!(lines[1]["id"], "b");
    assert_eq!(lines[1]["results"], serde_json::json!([]));
}

#[test]
fn memory_get_policy_and_slicing() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(ws.join("memory/sub")).unwrap();
    fs::write(ws.join("MEMORY.md"), "one\ntwo\nthree\nfour").unwrap();
    fs::write(ws.join("NOTES.md"), "secret notes").unwrap();
    fs::write(ws.join("memory/a.md"), "alpha").unwrap();
    fs::write(ws.join("memory/a.txt"), "secret text").unwrap();
    fs::write(tmp.path().join("outside.md"), "secret outside").unwrap();
    fs::write(tmp.path().join("x.md"), "secret x").unwrap();
    fs::create_dir_all(tmp.path().join("real")).unwrap();
    fs::write(tmp.path().join("real/r.md"), "secret real").unwrap();
    std::os::unix::fs::symlink(ws.join("NOTES.md"), ws.join("memory/link.md")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("real"), ws.join("memory/dir")).unwrap();
    let state = tmp.path().join("state");
    let get = |args: &[&str]| {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        all.push("--json");
        json(&state, &ws, &all)
    };
    let outside_abs = tmp.path().join("outside.md");
    for rejected in [
        "NOTES.md",
        "../outside.md",
        "memory/../../x.md",
        outside_abs.to_str().unwrap(),
        "memory/link.md",
        "memory/dir/r.md",
        "memory/a.txt",
    ] {
        let payload = get(&[rejected]);
        assert_eq!(payload["disabled"], true, "{rejected}");
        assert_eq!(payload["text"], "", "{rejected}");
        assert_eq!(payload["path"], rejected);
        assert!(!payload["error"].as_str().unwrap().is_empty());
        assert!(
            !payload.to_string().contains("secret"),
            "{rejected} leaked: {payload}"
        );
    }
    assert_eq!(
        get(&["MEMORY.md"]),
        serde_json::json!({"path": "MEMORY.md", "text": "one\ntwo\nthree\nfour"})
    );
    assert_eq!(
        get(&["MEMORY.md", "--from", "2", "--lines", "2"])["text"],
        "two\nthree"
    );
    assert_eq!(get(&["MEMORY.md", "--from", "3"])["text"], "three\nfour");
    assert_eq!(get(&["MEMORY.md", "--lines", "1"])["text"], "one");
    assert_eq!(
        get(&["MEMORY.md", "--from", "9", "--lines", "1"])["text"],
        ""
    );
    assert_eq!(get(&["memory/a.md"])["text"], "alpha");
    let abs = ws.join("memory/a.md");
    assert_eq!(get(&[abs.to_str().unwrap()])["text"], "alpha");
    // A missing file reads empty, as in OpenClaw; the command exits 4 (not found).
    let out = memoria(&state, &ws, &["get", "memory/missing.md", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        serde_json::json!({"path": "memory/missing.md", "text": ""})
    );
    // Human output: denied paths exit non-zero with the reason on stderr.
    let out = memoria(&state, &ws, &["get", "NOTES.md"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
}

#[test]
fn incremental_sync_follows_edits_and_deletions() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(ws.join("memory")).unwrap();
    fs::write(ws.join("memory/a.md"), "the zebra grazes").unwrap();
    fs::write(ws.join("memory/b.md"), "the okapi hides").unwrap();
    let state = tmp.path().join("state");
    run(&state, &ws, &["index"]);
    assert_eq!(
        paths(&json(&state, &ws, &["search", "zebra", "--json"])),
        vec!["memory/a.md"]
    );
    fs::write(ws.join("memory/a.md"), "the giraffe stretches").unwrap();
    fs::remove_file(ws.join("memory/b.md")).unwrap();
    fs::write(ws.join("memory/c.md"), "a zebra appears").unwrap();
    // search syncs first because the workspace changed.
    assert_eq!(
        paths(&json(&state, &ws, &["search", "zebra", "--json"])),
        vec!["memory/c.md"]
    );
    assert!(paths(&json(&state, &ws, &["search", "okapi", "--json"])).is_empty());
    let status = json(&state, &ws, &["status", "--json"]);
    assert_eq!(status["files"], 2);
    assert_eq!(status["dirty"], false);
    assert_eq!(status["generation"], 1);
}

#[test]
fn identity_change_rebuilds_into_a_new_generation() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(ws.join("memory")).unwrap();
    let long: String = (1..=200)
        .map(|i| format!("line {i} about lanterns\n"))
        .collect();
    fs::write(ws.join("memory/a.md"), long).unwrap();
    let state = tmp.path().join("state");
    run(&state, &ws, &["index"]);
    let before = json(&state, &ws, &["status", "--json"]);
    let config = tmp.path().join("openclaw.json");
    fs::write(
        &config,
        "{ agents: { defaults: { memorySearch: { chunking: { tokens: 100, overlap: 10 } } } } }",
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    // One file where every chunk has the word: BM25 idf is tiny, so lift minScore.
    let after = json(
        &state,
        &ws,
        &[
            "--config",
            cfg,
            "search",
            "lanterns",
            "--min-score",
            "0",
            "--json",
        ],
    );
    assert!(!after["results"].as_array().unwrap().is_empty());
    let status = json(&state, &ws, &["--config", cfg, "status", "--json"]);
    assert_eq!(status["generation"], 2);
    assert!(status["chunks"].as_u64() > before["chunks"].as_u64());
    let agent_dir = state.join("memory/main");
    let gens: Vec<_> = fs::read_dir(&agent_dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("gen-"))
        .collect();
    assert_eq!(gens.len(), 1, "old generation removed");
}

#[test]
fn config_errors_name_the_key_path() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("openclaw.json");
    fs::write(&config, r#"{"agents": {"defaults": {"memorySearch": {"query": {"hybrid": {"vectorWeight": "high"}}}}}}"#).unwrap();
    let out = memoria(
        tmp.path(),
        &example_workspace(),
        &["--config", config.to_str().unwrap(), "status"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("agents.defaults.memorySearch.query.hybrid.vectorWeight: expected a number, got \"high\""),
        "{stderr}"
    );
    assert!(stderr.contains("openclaw.json"), "{stderr}");
}

#[test]
fn invalid_utf8_is_indexed_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    fs::create_dir_all(ws.join("memory")).unwrap();
    fs::write(ws.join("memory/bad.md"), b"caf\xe9 latte notes").unwrap();
    let state = tmp.path().join("state");
    run(&state, &ws, &["index"]);
    let found = json(
        &state,
        &ws,
        &["search", "latte", "--min-score", "0", "--json"],
    );
    assert_eq!(paths(&found), vec!["memory/bad.md"]);
    let status = json(&state, &ws, &["status", "--json"]);
    let warnings = status["warnings"].to_string();
    assert!(
        warnings.contains("memory/bad.md") && warnings.contains("UTF-8"),
        "{warnings}"
    );
    assert_eq!(
        fs::read(ws.join("memory/bad.md")).unwrap(),
        b"caf\xe9 latte notes"
    );
}

fn write_large_workspace(ws: &Path, files: usize, salt: &str) {
    let words = [
        "lantern",
        "harbor",
        "quartz",
        "meadow",
        "cipher",
        "falcon",
        "ember",
        "willow",
        "atlas",
        "vault",
        "orders",
        "replica",
        "cutover",
        "migration",
        "ridge",
        "squash",
        "passport",
    ];
    fs::create_dir_all(ws.join("memory")).unwrap();
    for f in 0..files {
        let mut text = format!("# note {f} {salt}\n");
        for line in 0..200 {
            let a = words[(f * 7 + line) % words.len()];
            let b = words[(f + line * 3) % words.len()];
            text.push_str(&format!(
                "- {a} {b} item{} line {line} of file {f}\n",
                (f * 31 + line) % 997
            ));
        }
        fs::write(ws.join(format!("memory/n{f:05}.md")), text).unwrap();
    }
}

/// Starts `memoria index ARGS`, waits until it has visibly started writing (a catalog file
/// newer than the start), then SIGKILLs it.
fn kill_index_part_way(state: &Path, ws: &Path, args: &[&str]) {
    let agent_dir = state.join("memory/main");
    let catalog_mtime = || {
        fs::read_dir(&agent_dir).ok().and_then(|entries| {
            entries
                .flatten()
                .filter_map(|e| fs::metadata(e.path().join("catalog.redb")).ok())
                .filter_map(|m| m.modified().ok())
                .max()
        })
    };
    let before = catalog_mtime();
    let mut all = vec!["index"];
    all.extend_from_slice(args);
    let mut child = memoria(state, ws, &all).spawn().unwrap();
    let started = Instant::now();
    while catalog_mtime() == before && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(400));
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        still_running,
        "index finished before it could be killed; make the workspace larger"
    );
}

#[test]
fn killed_index_leaves_a_usable_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    write_large_workspace(&ws, 3000, "v1");
    let state = tmp.path().join("state");
    let clean = tmp.path().join("clean");
    let queries = ["lantern harbor item42", "quartz cipher line 7", "file 2999"];

    let same_as_clean = || {
        for query in queries {
            let after_kill = json(&state, &ws, &["search", query, "--json"]);
            let reference = json(&clean, &ws, &["search", query, "--json"]);
            assert!(!reference["results"].as_array().unwrap().is_empty());
            assert_eq!(after_kill["results"], reference["results"], "query {query}");
        }
    };
    // Killed while building the first generation.
    kill_index_part_way(&state, &ws, &["--force"]);
    same_as_clean();
    // Killed during an incremental sync of an existing generation (every file changed).
    write_large_workspace(&ws, 3000, "v2");
    kill_index_part_way(&state, &ws, &[]);
    same_as_clean();
    let gens = fs::read_dir(state.join("memory/main"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("gen-"))
        .count();
    assert_eq!(gens, 1, "leftovers of the killed build are removed");
}

/// Exit codes: 1 for an error, 3 when another process holds the index (nothing done);
/// warnings carry no colour codes when stderr is not a terminal.
#[test]
fn a_busy_index_exits_3_and_usage_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    let out = memoria(tmp.path(), &ws, &["index"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lock = fs::File::options()
        .write(true)
        .open(tmp.path().join("memory/main/LOCK"))
        .unwrap();
    lock.lock().unwrap();
    let out = memoria(tmp.path(), &ws, &["index"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("index busy"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    drop(lock);

    // A search while another process builds the first index says so, not "run `memoria
    // index` first" (which is what runs; issue 46).
    let first = tmp.path().join("first");
    fs::create_dir_all(first.join("memory/main")).unwrap();
    // What a first index has written before its first commit: the marker and the lock.
    fs::write(first.join("memory/main/.memoria-agent-dir"), "").unwrap();
    let lock = fs::File::create(first.join("memory/main/LOCK")).unwrap();
    lock.lock().unwrap();
    let out = memoria(&first, &ws, &["search", "postgres"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("index busy") && !stderr.contains("run `memoria index` first"),
        "{stderr}"
    );
    drop(lock);

    // `--agent ../..` would name a directory two levels up: refused before anything runs,
    // as a usage error (2, the code docs/configuration.md gives a bad command line).
    let out = memoria(tmp.path(), &ws, &["--agent", "../..", "index"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("invalid agent id"), "{stderr}");
    // `search` without a query (or --queries) is a usage error too.
    let out = memoria(tmp.path(), &ws, &["search"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("<QUERY>"), "{stderr}");
}

/// Copies a directory tree (files and directories only).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Search and get work from an index this process cannot write (here: run as another
/// user, `nobody`, when the tests run as root; as the owner with write permission removed
/// otherwise), answering from the last committed generation and saying why it is not
/// synced. `get` needs no agent directory at all.
#[cfg(unix)]
#[test]
fn a_read_only_index_is_searched_and_says_why_it_is_stale() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let ws = tmp.path().join("ws");
    copy_tree(&example_workspace(), &ws);
    let state = tmp.path().join("state");
    run(&state, &ws, &["index"]);

    let as_root =
        fs::metadata("/proc/self").is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0);
    // The binary, where another user can run it.
    let bin = tmp.path().join("memoria");
    fs::copy(env!("CARGO_BIN_EXE_memoria"), &bin).unwrap();
    let reader = |args: &[&str], state: &Path| -> Output {
        let mut cmd = if as_root {
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
            cmd.arg(&bin);
            cmd
        } else {
            Command::new(&bin)
        };
        cmd.arg("--state-dir")
            .arg(state)
            .arg("--workspace")
            .arg(&ws)
            .args(["--provider", "none"])
            .args(args)
            .env_remove("OPENCLAW_CONFIG_PATH")
            .env_remove("OPENCLAW_STATE_DIR")
            .env("HOME", tmp.path())
            .output()
            .unwrap()
    };
    // Readable by everyone (tantivy writes some files 0600), writable by the owner only,
    // and not even by the owner when the test cannot switch users.
    let set_writable = |dir: &Path, writable: bool| {
        for entry in walk(dir) {
            let mode = if entry.is_dir() { 0o755 } else { 0o644 };
            let mode = if writable || as_root {
                mode
            } else {
                mode & 0o555
            };
            fs::set_permissions(&entry, fs::Permissions::from_mode(mode)).unwrap();
        }
    };
    set_writable(&state, false);

    let search = |state: &Path| -> Value {
        let out = reader(&["search", "postgres cutover", "--json"], state);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let fresh = search(&state);
    assert!(!paths(&fresh).is_empty(), "{fresh}");
    assert!(fresh.get("unavailable").is_none(), "{fresh}");

    // The workspace changes; the reader cannot sync, searches the last index, and says so.
    fs::write(
        ws.join("memory/2099-01-01.md"),
        "A new note about the postgres cutover.\n",
    )
    .unwrap();
    let stale = search(&state);
    assert!(!paths(&stale).is_empty(), "{stale}");
    assert_eq!(stale["fallback"]["from"], "sync", "{stale}");
    assert!(
        stale["fallback"]["reason"]
            .as_str()
            .unwrap()
            .contains("could not be synced"),
        "{stale}"
    );
    let out = reader(&["status", "--json"], &state);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["dirty"], true);
    let warnings = status["warnings"].to_string();
    assert!(warnings.contains("cannot be synced"), "{status}");

    // `get` with a state directory that does not exist and cannot be created.
    let locked = tmp.path().join("locked");
    fs::create_dir_all(&locked).unwrap();
    set_writable(&locked, false);
    let out = reader(&["get", "MEMORY.md", "--json"], &locked.join("state"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!got["text"].as_str().unwrap().is_empty(), "{got}");
    assert!(!locked.join("state").exists());
    set_writable(&state, true);
    set_writable(&locked, true);
}

/// Every path below `dir`, `dir` included.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    if dir.is_dir() {
        for entry in fs::read_dir(dir).unwrap() {
            out.extend(walk(&entry.unwrap().path()));
        }
    }
    out
}

/// A skipped root is a warning on `index` (with a count in the summary line) and in
/// `status`: a symlinked `memory/` never means zero results without a reason.
#[cfg(unix)]
#[test]
fn skips_are_reported_by_index_and_status() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    copy_tree(
        &example_workspace().join("memory"),
        &tmp.path().join("elsewhere"),
    );
    fs::create_dir_all(&ws).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("elsewhere"), ws.join("memory")).unwrap();
    let state = tmp.path().join("state");
    let out = run(&state, &ws, &["index"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("memory/: is a symlink"), "{stderr}");
    assert!(stdout.contains(", 1 warning"), "{stdout}");
    let status = json(&state, &ws, &["status", "--json"]);
    assert!(
        status["warnings"]
            .to_string()
            .contains("memory/: is a symlink"),
        "{status}"
    );
}

/// An error says its cause once (the library's errors already include it; the chain
/// would repeat it).
#[test]
fn errors_say_their_cause_once() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-dir");
    fs::write(&file, "").unwrap();
    let out = memoria(&file, &example_workspace(), &["index"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("Not a directory").count(), 1, "{stderr}");
}

#[test]
fn cli_ergonomics_citations_stdin_and_short_options() {
    let state = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    // `-n` is --max-results.
    let payload = json(
        state.path(),
        &ws,
        &["search", "postgres", "-n", "1", "--json"],
    );
    assert_eq!(payload["results"].as_array().unwrap().len(), 1);
    // `get` takes the citation `search` prints, in both forms.
    let cited = payload["results"][0]["citation"]
        .as_str()
        .unwrap()
        .to_string();
    let (path, range) = cited.split_once("#L").unwrap();
    let (start, end) = range.split_once("-L").unwrap();
    let want = json(
        state.path(),
        &ws,
        &[
            "get",
            path,
            "--from",
            start,
            "--lines",
            &format!(
                "{}",
                end.parse::<i64>().unwrap() - start.parse::<i64>().unwrap() + 1
            ),
            "--json",
        ],
    );
    let colon = format!("{path}:{start}-{end}");
    for form in [cited.as_str(), colon.as_str()] {
        let got = json(state.path(), &ws, &["get", form, "--json"]);
        assert_eq!(got["text"], want["text"], "{form}");
        assert_eq!(got["path"], path);
    }
    // A range given twice is refused.
    let out = memoria(state.path(), &ws, &["get", &cited, "--from", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("names a line range already"));
    // `--queries -` reads stdin.
    let mut child = memoria(state.path(), &ws, &["search", "--queries", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"{\"id\": 7, \"query\": \"Miso vaccine\"}\n")
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["id"], 7);
    assert_eq!(line["results"][0]["path"], "memory/2026-11-15.md");
    // "1 chunk", not "1 chunks".
    let one = tempfile::tempdir().unwrap();
    fs::write(one.path().join("MEMORY.md"), "One short note.\n").unwrap();
    let out = run(state.path(), one.path(), &["--agent", "one", "index"]);
    let summary = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        summary.contains("indexed 1 file (1 changed, 0 removed), 1 chunk in"),
        "{summary}"
    );
}

#[test]
fn a_missing_workspace_is_an_error_and_a_vanished_root_keeps_its_index() {
    let state = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    let notes = root.path().join("notes");
    fs::create_dir_all(ws.join("memory")).unwrap();
    fs::create_dir_all(&notes).unwrap();
    fs::write(ws.join("MEMORY.md"), "Sam is allergic to penicillin.\n").unwrap();
    fs::write(notes.join("trip.md"), "The ferry to Hydra leaves at 7.\n").unwrap();
    let config = root.path().join("openclaw.json");
    fs::write(
        &config,
        r#"{agents: {defaults: {memorySearch: {extraPaths: ["../notes"], store: {driver: "sqlite"}}}}}"#,
    )
    .unwrap();
    let with_config = |ws: &Path, args: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap()];
        all.extend_from_slice(args);
        memoria(state.path(), ws, &all).output().unwrap()
    };
    assert!(with_config(&ws, &["index"]).status.success());

    // A mistyped workspace: an error naming it and where it came from; nothing synced.
    let typo = root.path().join("wss");
    let out = with_config(&typo, &["index"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "workspace {} does not exist (from --workspace)",
            typo.display()
        )),
        "{stderr}"
    );
    // A search through it answers from the last index and says why.
    let out = with_config(&typo, &["search", "penicillin", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let payload: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(paths(&payload), ["MEMORY.md"]);
    assert_eq!(payload["fallback"]["from"], "sync");
    assert!(payload["fallback"]["reason"]
        .as_str()
        .unwrap()
        .contains("does not exist"));
    // memory_get reads the index's copy of a file whose workspace is not here, and says so.
    let out = with_config(&typo, &["get", "MEMORY.md", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let payload: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        payload["text"], "Sam is allergic to penicillin.\n",
        "{payload}"
    );
    assert_eq!(payload["from"], "index", "{payload}");
    let note = payload["note"].as_str().unwrap_or_default();
    assert!(
        note.contains(&format!("{} is not on this machine", typo.display()))
            && note.contains("the index's copy, as of its generation 1"),
        "{payload}"
    );
    let out = with_config(&typo, &["get", "memory/never.md", "--json"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let payload: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(payload["text"], "", "{payload}");
    assert!(
        payload["note"]
            .as_str()
            .is_some_and(|n| n.ends_with("and the index holds no file memory/never.md")),
        "{payload}"
    );
    // Where the workspace is, a file's own text is read, with no note.
    let payload = json(state.path(), &ws, &["get", "MEMORY.md", "--json"]);
    assert_eq!(
        payload,
        serde_json::json!({"path": "MEMORY.md", "text": "Sam is allergic to penicillin.\n"})
    );
    let out = with_config(&typo, &["status"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("does not exist (from --workspace)"), "{text}");
    // A setting accepted but not acted on is named.
    assert!(
        text.contains("openclaw.json: agents.defaults.memorySearch.store.driver: memoria keeps"),
        "{text}"
    );
    // A fresh agent directory has nothing to answer from: the search fails, naming it.
    let other_state = tempfile::tempdir().unwrap();
    let out = memoria(other_state.path(), &typo, &["search", "penicillin"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));

    // An extra path that vanishes (an unmounted drive) keeps what was indexed from it.
    fs::rename(&notes, root.path().join("elsewhere")).unwrap();
    let out = with_config(&ws, &["index"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("extraPaths: ../notes: not found; what was indexed from it is kept"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = with_config(&ws, &["search", "ferry to Hydra", "--json"]);
    let payload: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(paths(&payload), ["../notes/trip.md"], "{payload}");
    let out = with_config(&ws, &["get", "../notes/trip.md"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "The ferry to Hydra leaves at 7.\n"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("the text is the index's copy"));
    let out = with_config(&ws, &["get", "../notes/trip.md", "--json"]);
    let payload: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        payload["text"], "The ferry to Hydra leaves at 7.\n",
        "{payload}"
    );
    assert_eq!(payload["from"], "index", "{payload}");
    let out = with_config(&ws, &["status", "--json"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["files"], 2);
    assert_eq!(status["extraPaths"], serde_json::json!(["../notes"]));
    let out = with_config(&ws, &["status"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("extra paths  ../notes\n"));
}

#[test]
fn an_empty_answer_with_no_candidate_has_no_warning() {
    let state = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    let payload = json(state.path(), &ws, &["search", "zyxwvutsrq", "--json"]);
    assert!(paths(&payload).is_empty());
    assert_eq!(payload.get("warning"), None, "{payload}");
    let out = run(state.path(), &ws, &["search", "zyxwvutsrq"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "no results\n");
}

#[test]
fn help_on_every_option_completions_man_chunks_and_not_found() {
    let state = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    let subcommands = [
        "index",
        "search",
        "get",
        "status",
        "watch",
        "mcp",
        "chunks",
        "completions",
        "man",
        "model",
        "embed",
        "eval",
        "doctor",
        "flush-plan",
        "append",
        "context",
    ];
    for sub in subcommands {
        let out = run(state.path(), &ws, &[sub, "--help"]);
        let help = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(help.contains("\nGlobal options:\n"), "{sub}: {help}");
        for line in help.lines().filter(|l| l.trim_start().starts_with('-')) {
            // `  -n, --max-results <N>  Results to return …`: a flag, then its help.
            let flag_end = line
                .trim_start()
                .find("  ")
                .map(|i| &line.trim_start()[i..]);
            assert!(
                flag_end.is_some_and(|rest| !rest.trim().is_empty()),
                "{sub}: an option without help: {line:?}"
            );
        }
    }
    let out = run(state.path(), &ws, &["completions", "bash"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("_memoria()"));
    let out = run(state.path(), &ws, &["man"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH memoria 1"));

    // `chunks` resolves a relative path against the workspace, like `get`; `-` is stdin.
    let out = run(state.path(), &ws, &["chunks", "MEMORY.md", "--json"]);
    let chunks: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(chunks[0]["startLine"], 1);
    let out = with_stdin(state.path(), &ws, &["chunks", "-"], "# Title\nA line.\n");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("<stdin>: 1 chunk"));

    // A memory file that is not there: the payload reads empty (as OpenClaw's tool does),
    // the command says so and exits 4.
    for args in [
        &["get", "memory/nope.md"][..],
        &["get", "memory/nope.md", "--json"][..],
    ] {
        let out = memoria(state.path(), &ws, args).output().unwrap();
        assert_eq!(out.status.code(), Some(4), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("memory/nope.md: no such memory file")
        );
    }
    let out = run(state.path(), &ws, &["get", "MEMORY.md", "--lines", "1"]);
    assert!(!out.stdout.is_empty());
}

/// `memoria mcp` stops on SIGTERM although its client keeps standard input open (a
/// supervisor's stop, a client that signals before closing its pipe).
#[cfg(unix)]
#[test]
fn mcp_stops_on_sigterm_with_its_input_still_open() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let state = tempfile::tempdir().unwrap();
    let mut child = memoria(state.path(), &example_workspace(), &["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    let killed = Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("memoria mcp still runs 30 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    drop(stdin);
}

#[test]
fn doctor_says_what_is_wrong_and_what_to_do() {
    let state = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    // Before the first index: a warning with its fix, exit 0.
    let out = run(state.path(), &ws, &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("ok    workspace"), "{text}");
    assert!(
        text.contains("ok    embedder   none: keyword search only"),
        "{text}"
    );
    assert!(text.contains("warn  index      none yet"), "{text}");
    assert!(text.contains("fix: memoria index"), "{text}");
    run(state.path(), &ws, &["index"]);
    let out = run(state.path(), &ws, &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("ok    lock       free"), "{text}");
    assert!(text.ends_with("0 failed, 0 warning(s)\n"), "{text}");
    // A missing workspace and config: failures naming them, exit 1.
    let missing = state.path().join("no-such-workspace");
    let out = memoria(
        state.path(),
        &missing,
        &["--config", "/no/such.json", "doctor"],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("FAIL  config     /no/such.json does not exist"),
        "{text}"
    );
    // One verdict per check, and no advice resting on a config that did not load.
    assert!(!text.contains("ok    config"), "{text}");
    assert!(text.contains("skip  others"), "{text}");
    assert!(!text.contains("FAIL  workspace"), "{text}");
    assert!(text.contains("1 failed"), "{text}");
    // A config that does not load (a wrong type): its error, once.
    let bad = state.path().join("old.json5");
    fs::write(
        &bad,
        format!(
            "{{agents: {{defaults: {{workspace: {:?}, memorySearch: {{query: {{minScore: 'high'}}}}}}}}}}",
            missing.display().to_string()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .arg("--config")
        .arg(&bad)
        .arg("--state-dir")
        .arg(state.path())
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!text.contains("ok    config"), "{text}");
    assert!(text.contains("minScore: expected a number"), "{text}");
    assert!(!text.contains("set agents.defaults.workspace"), "{text}");
    // A workspace the config names but that is missing: the advice names that key.
    let good = state.path().join("ok.json5");
    fs::write(
        &good,
        format!(
            "{{agents: {{defaults: {{workspace: {:?}}}}}}}",
            missing.display().to_string()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .arg("--config")
        .arg(&good)
        .arg("--state-dir")
        .arg(state.path())
        .arg("doctor")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("(from agents.defaults.workspace)"), "{text}");
    assert!(
        text.contains("fix: create it, or correct agents.defaults.workspace in"),
        "{text}"
    );
    // Only the workspace missing: it fails, naming --workspace.
    let out = memoria(state.path(), &missing, &["doctor"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("FAIL  workspace"), "{text}");
    assert!(text.contains("(from --workspace)"), "{text}");
}

#[path = "support/loopback.rs"]
#[allow(dead_code)]
mod loopback;

/// `model pull` against a stand-in for the Hugging Face hub (`HF_ENDPOINT`): the files land
/// in `$HF_HOME/hub`, where `model path` then finds them, and the token is the one
/// `huggingface-cli login` saved (`$HF_HOME/token`).
#[test]
fn model_pull_honours_hf_endpoint_hf_home_and_the_saved_token() {
    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
    let hub = loopback::serve(Box::new(|r: &loopback::Request, _| {
        let Some(file) = r
            .path
            .strip_prefix("/google/embeddinggemma-300m/resolve/main/")
        else {
            return (404, Vec::new(), "{}".into());
        };
        let body = format!("content of {file}");
        let etag = format!("\"etag-{}\"", file.replace('/', "-"));
        let mut headers = vec![
            ("etag".to_string(), etag),
            ("x-repo-commit".to_string(), COMMIT.to_string()),
        ];
        match r.headers.get("range").map(String::as_str) {
            Some("bytes=0-0") => {
                headers.push(("Content-Range".into(), format!("bytes 0-0/{}", body.len())));
                (206, headers, body[..1].to_string())
            }
            _ => (200, headers, body),
        }
    }));
    let tmp = tempfile::tempdir().unwrap();
    let hf_home = tmp.path().join("hf");
    fs::create_dir_all(&hf_home).unwrap();
    fs::write(hf_home.join("token"), "hf_saved_login_token\n").unwrap();
    let memoria_with_hub = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memoria"));
        cmd.args(["--state-dir", tmp.path().to_str().unwrap()])
            .args(args)
            .env("HOME", tmp.path())
            .env("HF_HOME", &hf_home)
            .env("HF_ENDPOINT", &hub.url)
            .env_remove("HF_TOKEN")
            .env_remove("HF_HUB_CACHE")
            .env_remove("HF_TOKEN_PATH")
            .env_remove("MEMORIA_MODEL_DIR")
            .env_remove("OPENCLAW_CONFIG_PATH")
            .env_remove("OPENCLAW_STATE_DIR");
        cmd.output().unwrap()
    };
    let out = memoria_with_hub(&["model", "pull"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let expected = hf_home.join(format!(
        "hub/models--google--embeddinggemma-300m/snapshots/{COMMIT}"
    ));
    assert_eq!(dir, expected);
    assert_eq!(
        fs::read_to_string(dir.join("2_Dense/config.json")).unwrap(),
        "content of 2_Dense/config.json"
    );
    let requests = hub.requests.lock().unwrap().clone();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(
            r.headers["authorization"], "Bearer hf_saved_login_token",
            "{}",
            r.path
        );
    }
    // Lookup finds what pull stored.
    let out = memoria_with_hub(&["model", "path"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(expected.to_str().unwrap()));
}

/// Run `memoria ARGS` with `input` on standard input.
fn with_stdin(state: &Path, ws: &Path, args: &[&str], input: &str) -> Output {
    let mut child = memoria(state, ws, args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn standard_input_feeds_the_config_and_eval_files_one_at_a_time() {
    let state = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    // `--config -`: the config from stdin, named `<stdin>` in its messages.
    let config =
        r#"{agents: {defaults: {memorySearch: {extraPaths: ["notes"], chunking: {tokens: 300}}}}}"#;
    let out = with_stdin(
        state.path(),
        &ws,
        &["--config", "-", "status", "--json"],
        config,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["identity"]["chunkTokens"], 300);
    assert_eq!(status["extraPaths"], serde_json::json!(["notes"]));
    let out = with_stdin(
        state.path(),
        &ws,
        &["--config", "-", "status"],
        "{agents: 3}",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>"));
    // Two inputs from stdin: refused before anything runs.
    let out = with_stdin(
        state.path(),
        &ws,
        &["--config", "-", "search", "--queries", "-"],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("standard input can feed one input only"));

    // An eval file from stdin (here the qrels).
    let data = tempfile::tempdir().unwrap();
    let corpus = data.path().join("corpus.jsonl");
    let queries = data.path().join("queries.jsonl");
    fs::write(
        &corpus,
        "{\"_id\": \"d1\", \"title\": \"\", \"text\": \"The ferry to Hydra leaves at seven.\"}\n\
         {\"_id\": \"d2\", \"title\": \"\", \"text\": \"Penicillin allergy noted for Sam.\"}\n",
    )
    .unwrap();
    fs::write(
        &queries,
        "{\"_id\": \"q1\", \"text\": \"when does the ferry leave\"}\n",
    )
    .unwrap();
    let args = [
        "eval",
        "--corpus",
        corpus.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
        "--qrels",
        "-",
        "--mode",
        "bm25",
        "--json",
    ];
    let out = with_stdin(
        state.path(),
        &ws,
        &args,
        "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ndcg") || text.contains("nDCG"), "{text}");
}

#[test]
fn flush_plan_once_per_cycle_per_session_with_todays_date() {
    let state = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    let plan = |args: &[&str]| -> Value {
        let mut all = vec!["flush-plan", "--context-window", "200000", "--json"];
        all.extend_from_slice(args);
        json(state.path(), &ws, &all)
    };
    let below = plan(&["--session-tokens", "1000"]);
    assert_eq!(below["flush"], false);
    assert!(below["reason"]
        .as_str()
        .unwrap()
        .starts_with("1000 session tokens, below the threshold 176000"));
    let at = plan(&["--session-tokens", "176000"]);
    assert_eq!(at["flush"], true, "{at}");
    assert_eq!(at["threshold"], 176000);
    assert_eq!(
        at["systemPrompt"],
        "Session nearing compaction. Store durable memories now."
    );
    let prompt = at["prompt"].as_str().unwrap();
    let date = prompt
        .split("memory/")
        .nth(1)
        .and_then(|rest| rest.split(".md").next())
        .unwrap();
    assert!(
        date.len() == 10 && date.as_bytes()[4] == b'-' && date.starts_with("20"),
        "{prompt}"
    );
    assert!(prompt.contains("NO_REPLY"));
    // Once per compaction cycle, per session.
    let again = plan(&["--session-tokens", "180000"]);
    assert_eq!(again["flush"], false);
    assert!(again["reason"]
        .as_str()
        .unwrap()
        .starts_with("already flushed in compaction cycle 0"));
    assert_eq!(
        plan(&["--session-tokens", "180000", "--compaction-count", "1"])["flush"],
        true
    );
    assert_eq!(
        plan(&["--session-tokens", "180000", "--session-key", "other"])["flush"],
        true
    );
    // OpenClaw's own record in sessions.json counts too.
    let sessions = state.path().join("agents/main/sessions");
    fs::create_dir_all(&sessions).unwrap();
    fs::write(
        sessions.join("sessions.json"),
        r#"{"s2": {"sessionId": "x", "memoryFlushCompactionCount": 4}}"#,
    )
    .unwrap();
    let s2 = |cycle: &str| {
        plan(&[
            "--session-tokens",
            "180000",
            "--session-key",
            "s2",
            "--compaction-count",
            cycle,
        ])
    };
    assert_eq!(s2("4")["flush"], false);
    assert_eq!(s2("5")["flush"], true);
    // A read-only workspace: no flush (the agent could not write its notes).
    let ro = tempfile::tempdir().unwrap();
    let mut permissions = fs::metadata(ro.path()).unwrap().permissions();
    permissions.set_readonly(true);
    fs::set_permissions(ro.path(), permissions).unwrap();
    let out = run(
        state.path(),
        ro.path(),
        &[
            "flush-plan",
            "--session-tokens",
            "190000",
            "--context-window",
            "200000",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut permissions = fs::metadata(ro.path()).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    fs::set_permissions(ro.path(), permissions).unwrap();
    assert!(
        text.starts_with("flush        no\nreason       the workspace is not writable"),
        "{text}"
    );
}

#[test]
fn append_and_context_through_the_cli() {
    let state = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    fs::create_dir_all(ws.join("memory")).unwrap();
    fs::write(ws.join("MEMORY.md"), "Sam is allergic to penicillin.\n").unwrap();
    let today = jiff::Zoned::now().date();
    let yesterday = today.yesterday().unwrap();
    fs::write(ws.join(format!("memory/{yesterday}.md")), "# yesterday\n").unwrap();
    fs::write(ws.join("memory/2001-01-01.md"), "# long ago\n").unwrap();
    // `append` without --date writes today's log, created with its heading.
    let out = run(state.path(), ws, &["append", "- Booked the ferry."]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("appended to memory/{today}.md#L3-L3\n")
    );
    let out = memoria(state.path(), ws, &["append", "   ", "--date", "2030-01-01"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`text` is empty"));
    // The appended note is found by the next search.
    let payload = json(state.path(), ws, &["search", "ferry", "--json"]);
    assert_eq!(paths(&payload), [format!("memory/{today}.md")]);

    let files = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["context", "--json"];
        all.extend_from_slice(args);
        json(state.path(), ws, &all)["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_string())
            .collect()
    };
    let daily = [
        format!("memory/{yesterday}.md"),
        format!("memory/{today}.md"),
    ];
    assert_eq!(files(&[]), daily);
    let mut private = vec!["MEMORY.md".to_string()];
    private.extend(daily.iter().cloned());
    assert_eq!(files(&["--private"]), private);
}

/// `memoria append` killed (SIGKILL) at points spread over its whole run, many times: after
/// the next append, every block is in the daily log whole or not at all. (Whether a kill
/// lands inside the write itself is chance; `append`'s unit tests build that state
/// deterministically.)
#[cfg(unix)]
#[test]
fn killed_appends_leave_whole_blocks() {
    let state = tempfile::tempdir().unwrap();
    let ws_dir = tempfile::tempdir().unwrap();
    let ws = ws_dir.path();
    fs::create_dir_all(ws.join("memory")).unwrap();
    let block = |i: usize| -> String {
        (0..900)
            .map(|line| {
                format!("- block {i:02} line {line:03} ........................................\n")
            })
            .collect::<String>()
    };
    let started = Instant::now();
    run(
        state.path(),
        ws,
        &["append", &block(0), "--date", "2030-01-01"],
    );
    let full = started.elapsed();
    let tries = 24;
    for i in 1..=tries {
        let mut child = memoria(
            state.path(),
            ws,
            &["append", &block(i), "--date", "2030-01-01"],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
        std::thread::sleep(full * i as u32 / tries as u32);
        let _ = child.kill();
        let _ = child.wait();
    }
    run(
        state.path(),
        ws,
        &["append", "- after the kills", "--date", "2030-01-01"],
    );
    let text = fs::read_to_string(ws.join("memory/2030-01-01.md")).unwrap();
    assert!(text.starts_with("# 2030-01-01\n\n"));
    assert!(text.ends_with("- after the kills\n"));
    let mut whole = 0;
    for i in 0..=tries {
        let body = block(i);
        let lines = text
            .lines()
            .filter(|l| l.starts_with(&format!("- block {i:02} ")))
            .count();
        match lines {
            0 => {}
            900 => {
                assert_eq!(
                    text.matches(body.as_str()).count(),
                    1,
                    "block {i} appears once, whole"
                );
                whole += 1;
            }
            n => panic!("block {i}: {n} of its 900 lines"),
        }
    }
    assert!(whole >= 1);
    let status = json(state.path(), ws, &["status", "--json"]);
    assert!(
        !status["warnings"].to_string().contains("interrupted"),
        "{}",
        status["warnings"]
    );
}

#[test]
fn a_model_named_but_not_there_is_an_error_for_index() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = example_workspace();
    // The provider as configured (auto), the model named on the command line.
    let with_model = |model: &Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_memoria"))
            .arg("--state-dir")
            .arg(tmp.path())
            .arg("--workspace")
            .arg(&ws)
            .arg("--model")
            .arg(model)
            .args(args)
            .env_remove("OPENCLAW_CONFIG_PATH")
            .env_remove("OPENCLAW_STATE_DIR")
            .output()
            .unwrap()
    };
    let missing = tmp.path().join("no/such/dir");
    let out = with_model(&missing, &["index"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nothing was indexed") && stderr.contains("which does not exist"),
        "{stderr}"
    );
    // A directory without the model's files: the file it lacks.
    let empty = tmp.path().join("empty-model");
    fs::create_dir_all(&empty).unwrap();
    let out = with_model(&empty, &["index"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("missing model.safetensors"), "{stderr}");
    // A search still answers, by keyword, and says why with the right cause.
    let out = with_model(&missing, &["search", "postgres", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let payload: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(payload["mode"], "fts-only");
    let reason = payload["fallback"]["reason"].as_str().unwrap();
    assert!(reason.contains("which does not exist"), "{reason}");
    // With provider none, keyword-only is what was asked for: the index is made.
    let out = memoria(
        tmp.path(),
        &ws,
        &["--model", missing.to_str().unwrap(), "index"],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What a newcomer reads first is true: "Try it" warns of the first build's time, and
/// `mcp --help` names every tool the server has.
#[test]
fn the_first_things_a_newcomer_reads() {
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let try_it = readme
        .split("## Try it")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    assert!(
        try_it.contains("15 minutes"),
        "Try it should say the first build's time"
    );
    let state = tempfile::tempdir().unwrap();
    let out = run(state.path(), &example_workspace(), &["mcp", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for tool in [
        "memory_search",
        "memory_get",
        "memory_append",
        "memory_context",
        "sessions_search",
        "memory_status",
    ] {
        assert!(help.contains(tool), "mcp --help should name {tool}: {help}");
    }
}

/// `index` says while the local model loads, and how long it took (it was silent for
/// seconds on a first load). Needs the real model (MEMORIA_TEST_MODEL_DIR).
#[test]
fn index_says_when_the_model_is_ready() {
    let Ok(model) = std::env::var("MEMORIA_TEST_MODEL_DIR") else {
        eprintln!("note: MEMORIA_TEST_MODEL_DIR is not set; skipping");
        return;
    };
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .arg("--state-dir")
        .arg(state.path())
        .arg("--workspace")
        .arg(example_workspace())
        .args(["--model", &model, "index"])
        .env_remove("OPENCLAW_CONFIG_PATH")
        .env_remove("OPENCLAW_STATE_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("embedding model embeddinggemma-300m (local) ready in "),
        "{stderr}"
    );
}
