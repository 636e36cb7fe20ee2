//! OpenClaw 2026.9's semantics, chosen by the config's layout, through the `memoria`
//! binary: entries of `MEMORY.md` / `USER.md` as chunks, importance and project
//! annotations in the score under either ranking (memoria's, the default, and OpenClaw's),
//! malformed tags dropping their entry, the payload's fields, and the older layout left as
//! documented.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `memoria --config <config> --state-dir <state> --provider none <args> --json`: its JSON
/// answer, the command having succeeded.
fn memoria_json(config: &Path, state: &Path, args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .arg("--config")
        .arg(config)
        .arg("--state-dir")
        .arg(state)
        .args(["--provider", "none"])
        .args(args)
        .arg("--json")
        .env_remove("OPENCLAW_CONFIG_PATH")
        .env_remove("OPENCLAW_STATE_DIR")
        .env_remove("MEMORIA_MODEL_DIR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "memoria {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `memoria … search <args> --json`, keyword-only.
fn search(config: &Path, state: &Path, args: &[&str]) -> Value {
    let mut all = vec!["search"];
    all.extend_from_slice(args);
    memoria_json(config, state, &all)
}

/// A workspace and a config naming it, in the newer (`memory.search`) or older layout.
fn setup(files: &[(&str, &str)], newer: bool) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    for (path, text) in files {
        let file = ws.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    }
    let search = r#"{"query": {"maxResults": 6}}"#;
    let config = match newer {
        true => format!(
            r#"{{"agents": {{"defaults": {{"workspace": {ws:?}}}}}, "memory": {{"search": {search}}}}}"#
        ),
        false => format!(
            r#"{{"agents": {{"defaults": {{"workspace": {ws:?}, "memorySearch": {search}}}}}}}"#
        ),
    };
    let path = tmp.path().join("openclaw.json");
    fs::write(&path, config).unwrap();
    (tmp, path)
}

fn results(payload: &Value) -> &Vec<Value> {
    payload["results"].as_array().unwrap()
}

fn lines(hit: &Value) -> (u64, u64) {
    (
        hit["startLine"].as_u64().unwrap(),
        hit["endLine"].as_u64().unwrap(),
    )
}

const CURATED: &str = "# Long-term\n\
    - zephyr deploy checklist lives in the wiki <!-- importance: 10 --> <!-- trigger: deploy; release -->\n\
    - zephyr deploy checklist lives in the wiki <!-- importance: 1 -->\n\
    - zephyr deploy checklist lives in the wiki\n";

#[test]
fn importance_ranks_entries_of_memory_md_each_its_own_chunk() {
    let (tmp, config) = setup(&[("MEMORY.md", CURATED)], true);
    let state = tmp.path().join("state");
    for ranking in ["memoria", "openclaw"] {
        importance_ranks(&config, &state, ranking);
    }
}

fn importance_ranks(config: &Path, state: &Path, ranking: &str) {
    // minScore 0: keyword-only selection keeps only hits reaching minScore when some do,
    // and importance 1 pulls its entry under the default 0.35 here.
    let args = ["zephyr checklist", "--min-score", "0", "--ranking", ranking];
    let payload = search(config, state, &args);
    assert_eq!(payload["ranking"], ranking, "{payload:#}");
    let hits = results(&payload);
    assert_eq!(hits.len(), 3, "{payload:#}");
    let ranges: Vec<(u64, u64)> = hits.iter().map(lines).collect();
    // the last entry runs to the end of the file, its trailing empty line included
    assert_eq!(
        ranges,
        [(2, 2), (4, 5), (3, 3)],
        "importance 10, none (5), 1"
    );
    assert_eq!(hits[0]["importance"], 10);
    assert_eq!(hits[0]["triggers"], "deploy; release");
    assert!(hits[1].get("importance").is_none());
    assert_eq!(hits[2]["importance"], 1);
    // identical texts: the scores stand as the multipliers 1.25 : 1 : 0.80
    let score = |i: usize| hits[i]["score"].as_f64().unwrap();
    assert!((score(0) / score(1) - 1.25).abs() < 1e-9, "{payload:#}");
    assert!((score(2) / score(1) - 0.80).abs() < 1e-9, "{payload:#}");
    // annotations are not indexed text, and the payload has 2026.9's fields
    let snippet = hits[0]["snippet"].as_str().unwrap();
    assert!(!snippet.contains("<!--"), "{snippet}");
    assert!(hits[0]["textScore"].as_f64().unwrap() > 0.0);
    assert_eq!(hits[0]["provenance"]["originClass"], "agent");
    assert_eq!(hits[0]["provenance"]["sessionKind"], "unknown");
    assert!(hits[0]["provenance"]["observedAt"].as_u64().unwrap() > 0);
}

#[test]
fn project_affinity_and_malformed_tags() {
    let text = "- quasar rollout plan uses blue green <!-- project: github.com/acme/api -->\n\
        - quasar rollout plan uses blue green <!-- project: github.com/acme/web -->\n\
        - quasar rollout plan uses blue green\n\
        - quasar rollout plan uses blue green <!-- project: ; -->\n";
    let (tmp, config) = setup(&[("memory/topics.md", text)], true);
    let state = tmp.path().join("state");
    // Outside the curated files a chunk is the unit: one malformed tag in it drops it, and
    // the empty answer says so.
    let payload = search(&config, &state, &["quasar rollout"]);
    assert!(results(&payload).is_empty(), "{payload:#}");
    let warning = payload["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("malformed") && warning.contains("memory/topics.md line 1"),
        "{payload:#}"
    );
    // In MEMORY.md each entry is its own chunk: only the malformed one goes.
    let (tmp2, config2) = setup(&[("MEMORY.md", &text.replace("quasar", "pulsar"))], true);
    let state2 = tmp2.path().join("state");
    for ranking in ["memoria", "openclaw"] {
        let plain = search(&config2, &state2, &["pulsar rollout", "--ranking", ranking]);
        let ranges: Vec<(u64, u64)> = results(&plain).iter().map(lines).collect();
        assert_eq!(ranges.len(), 3, "the malformed entry is dropped: {plain:#}");
        assert!(!ranges.contains(&(4, 4)));
        let active = search(
            &config2,
            &state2,
            &[
                "pulsar rollout",
                "--project",
                "github.com/acme/api",
                "--ranking",
                ranking,
            ],
        );
        let hits = results(&active);
        let ranges: Vec<(u64, u64)> = hits.iter().map(lines).collect();
        assert_eq!(ranges, [(1, 1), (3, 3), (2, 2)], "{ranking}: {active:#}");
        assert_eq!(hits[0]["projectKey"], "github.com/acme/api");
        let score = |i: usize| hits[i]["score"].as_f64().unwrap();
        assert!((score(0) / score(1) - 1.15).abs() < 1e-9, "{active:#}");
        assert!((score(2) / score(1) - 0.90).abs() < 1e-9, "{active:#}");
    }
}

#[test]
fn user_md_is_memory_and_memory_md_is_not_under_the_newer_layout() {
    let files = [
        ("USER.md", "- prefers oolong tea in the afternoon\n"),
        ("memory.md", "- oolong stock is in the pantry\n"),
    ];
    let (tmp, config) = setup(&files, true);
    let payload = search(&config, &tmp.path().join("state"), &["oolong"]);
    let paths: Vec<&str> = results(&payload)
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["USER.md"], "{payload:#}");

    // The older layout: as documented (memory.md indexed, USER.md not, no 2026.9 fields).
    let (tmp, config) = setup(&files, false);
    let payload = search(&config, &tmp.path().join("state"), &["oolong"]);
    let hits = results(&payload);
    let paths: Vec<&str> = hits.iter().map(|h| h["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["memory.md"], "{payload:#}");
    assert!(hits[0].get("textScore").is_none());
    assert!(hits[0].get("provenance").is_none());
}

#[test]
fn the_older_layout_keeps_annotations_as_text() {
    let (tmp, config) = setup(&[("MEMORY.md", CURATED)], false);
    let payload = search(&config, &tmp.path().join("state"), &["zephyr checklist"]);
    let hits = results(&payload);
    assert_eq!(hits.len(), 1, "one chunk for the file: {payload:#}");
    assert!(hits[0]["snippet"]
        .as_str()
        .unwrap()
        .contains("<!-- importance: 10 -->"));
    assert!(hits[0].get("importance").is_none());
}

#[test]
fn project_key_of_a_repository() {
    let has_git = Command::new("git").arg("--version").output().is_ok();
    if !has_git {
        eprintln!("note: git is not installed; project-key's remote lookup is not exercised");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    fs::create_dir_all(repo.join("sub")).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(args)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    let key = |dir: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
            .arg("project-key")
            .arg(dir)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        )
    };
    let root = std::path::absolute(&repo).unwrap();
    assert_eq!(
        key(&repo.join("sub")),
        (true, format!("path:{}", root.display()))
    );
    git(&["remote", "add", "origin", "git@GitHub.com:Acme/Api.git"]);
    assert_eq!(key(&repo.join("sub")), (true, "github.com/Acme/Api".into()));
    let (ok, _) = key(tmp.path());
    assert!(!ok, "outside a repository is an error");
}

#[test]
fn sessions_search_finds_the_message_in_the_transcripts() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let sessions = state.join("agents/main/sessions");
    fs::create_dir_all(&sessions).unwrap();
    let message = |role: &str, text: &str| {
        serde_json::json!({"type": "message", "message": {"role": role, "content": text}})
            .to_string()
    };
    let jsonl = [
        r#"{"type":"session","id":"e2e"}"#.to_string(),
        message("user", "Book the Café Kyō for Friday, 京都の紅葉を見に行く"),
        message("assistant", "Booked: Cafe Kyo, Friday 19:00."),
    ]
    .join("\n");
    fs::write(sessions.join("e2e.jsonl"), jsonl).unwrap();
    fs::create_dir_all(tmp.path().join("ws")).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
            .arg("--state-dir")
            .arg(&state)
            .arg("--workspace")
            .arg(tmp.path().join("ws"))
            .args(["--provider", "none", "sessions-search"])
            .args(args)
            .env_remove("OPENCLAW_CONFIG_PATH")
            .env_remove("OPENCLAW_STATE_DIR")
            .output()
            .unwrap();
        let payload: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code(), payload)
    };
    let (code, payload) = run(&["cafe kyo", "--json"]);
    assert_eq!(code, Some(0));
    let hits: Vec<(u64, &str)> = results(&payload)
        .iter()
        .map(|h| (h["line"].as_u64().unwrap(), h["role"].as_str().unwrap()))
        .collect();
    assert_eq!(hits.len(), 2, "{payload:#}");
    assert!(hits.contains(&(2, "user")) && hits.contains(&(3, "assistant")));
    let (_, payload) = run(&["紅葉", "--json"]);
    assert_eq!(results(&payload)[0]["path"], "sessions/e2e.jsonl");
    let (_, payload) = run(&["kyoto", "--json"]);
    assert!(results(&payload).is_empty());
    assert!(payload["warning"].as_str().unwrap().contains("every word"));
    let (code, _) = run(&[" ", "--json"]);
    assert_eq!(code, Some(1), "an empty query is refused");
}

#[test]
fn status_says_when_decay_buries_the_dated_notes() {
    let files = [
        (
            "memory/2023-05-08.md",
            "- met Caroline at the support group\n",
        ),
        ("MEMORY.md", "- Caroline likes pottery\n"),
    ];
    let warnings = |config: &Path, state: &Path| -> Vec<String> {
        let out = Command::new(env!("CARGO_BIN_EXE_memoria"))
            .arg("--config")
            .arg(config)
            .arg("--state-dir")
            .arg(state)
            .args(["--provider", "none", "status", "--json"])
            .env_remove("OPENCLAW_CONFIG_PATH")
            .env_remove("OPENCLAW_STATE_DIR")
            .output()
            .unwrap();
        let status: Value = serde_json::from_slice(&out.stdout).unwrap();
        status["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect()
    };
    let (tmp, config) = setup(&files, true);
    let plugin = |memoria: &str| {
        let text = fs::read_to_string(&config).unwrap().replacen(
            "\"memory\":",
            &format!("\"plugins\": {{\"entries\": {{\"memoria\": {{\"config\": {memoria}}}}}}}, \"memory\":"),
            1,
        );
        let path = tmp.path().join("with-plugin.json");
        fs::write(&path, text).unwrap();
        path
    };
    // memoria's ranking applies no decay: nothing to warn about.
    let w = warnings(&config, &tmp.path().join("state"));
    assert!(!w.iter().any(|w| w.contains("temporal decay")), "{w:?}");
    // OpenClaw's applies 2026.9's.
    let parity = plugin(r#"{"ranking": "openclaw"}"#);
    let w = warnings(&parity, &tmp.path().join("state"));
    assert!(
        w.iter()
            .any(|w| w.contains("1 of 1 dated notes") && w.contains("2023-05-08")),
        "{w:?}"
    );
    // memoria's key turns the decay off, and the warning with it
    let off = plugin(r#"{"ranking": "openclaw", "temporalDecay": {"enabled": false}}"#);
    let w = warnings(&off, &tmp.path().join("state"));
    assert!(!w.iter().any(|w| w.contains("temporal decay")), "{w:?}");
}

#[test]
fn a_transcript_hit_says_who_wrote_it_and_when() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let state = tmp.path().join("state");
    let sessions = state.join("agents/main/sessions");
    fs::create_dir_all(&sessions).unwrap();
    fs::create_dir_all(&ws).unwrap();
    let jsonl = [
        r#"{"type":"message","timestamp":"2026-03-01T10:00:00Z","message":{"role":"user","content":"Remind me: the quokka vet is on Tuesday","__openclaw":{"senderIsOwner":true}}}"#,
        r#"{"type":"message","timestamp":"2026-03-01T10:01:00Z","message":{"role":"assistant","content":"Noted, quokka vet Tuesday."}}"#,
    ]
    .join("\n");
    fs::write(sessions.join("s1.jsonl"), jsonl).unwrap();
    let config = tmp.path().join("openclaw.json");
    let layer = r#"{"sources": ["memory", "sessions"], "experimental": {"sessionMemory": true}}"#;
    fs::write(
        &config,
        format!(r#"{{"agents": {{"defaults": {{"workspace": {ws:?}}}}}, "memory": {{"search": {layer}}}}}"#),
    )
    .unwrap();
    let payload = search(&config, &state, &["quokka vet", "--corpus", "sessions"]);
    let hit = &results(&payload)[0];
    assert_eq!(hit["path"], "sessions/s1.jsonl", "{payload:#}");
    // The owner's message and the agent's answer: the chunk is as trusted as its least
    // trusted line (`agent`), observed at its latest message.
    assert_eq!(
        hit["provenance"],
        serde_json::json!({"originClass": "agent", "sessionKind": "unknown", "observedAt": 1_772_359_260_000u64}),
        "{payload:#}"
    );
}

#[test]
fn the_wiki_corpus_reads_the_memory_wiki_vault() {
    let (tmp, config) = setup(
        &[(
            "memory/2026-03-01.md",
            "# Notes\nThe quokka vet moved to Elm Street.\n",
        )],
        true,
    );
    let state = tmp.path().join("state");
    let vault = state.join("wiki/main");
    // Nothing there yet: an empty answer that says why.
    let payload = search(&config, &state, &["quokka", "--corpus", "wiki"]);
    assert!(results(&payload).is_empty());
    let warning = payload["warning"].as_str().unwrap();
    assert!(
        warning.contains("no memory-wiki vault at") && warning.contains("wiki/main"),
        "{warning}"
    );
    // Under `all`, a missing vault is no news: memory answers alone.
    let payload = search(&config, &state, &["quokka"]);
    assert_eq!(results(&payload).len(), 1);
    assert!(payload.get("warning").is_none(), "{payload:#}");

    for (path, text) in [
        (
            "entities/quokka-vet.md",
            "---\ntitle: Quokka Vet\nid: entity.quokka-vet\nentityType: business\n---\n# Quokka Vet\n\nOpen Tuesdays.\nThe quokka vet is on Elm Street.\n",
        ),
        ("concepts/pets.md", "# Pets\nWe keep a quokka.\n"),
        ("entities/index.md", "quokka listing, not a page\n"),
    ] {
        let file = vault.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, text).unwrap();
    }
    let payload = search(&config, &state, &["quokka vet", "--corpus", "wiki"]);
    let hits = results(&payload);
    assert_eq!(hits.len(), 1, "{payload:#}");
    let hit = &hits[0];
    // memory-wiki's score: 1 + title (+20) + path (+10) + id (+20) + two body hits (the
    // heading is body), and per word title +8, path/id +6, meta +4, body +1.
    assert_eq!(
        hit["score"],
        1.0 + 20.0 + 10.0 + 20.0 + 2.0 + 2.0 * 19.0,
        "{hit:#}"
    );
    for (key, want) in [
        ("path", "entities/quokka-vet.md"),
        ("corpus", "wiki"),
        ("title", "Quokka Vet"),
        ("kind", "entity"),
        ("searchMode", "auto"),
        ("id", "entity.quokka-vet"),
        ("entityType", "business"),
        ("snippet", "# Quokka Vet"),
    ] {
        assert_eq!(hit[key], want, "{key}: {hit:#}");
    }
    assert_eq!(lines(hit), (1, 1), "the snippet's line in the page's body");
    let payload = search(&config, &state, &["elm street", "--corpus", "wiki"]);
    assert_eq!(
        results(&payload)[0]["snippet"],
        "The quokka vet is on Elm Street."
    );
    assert_eq!(lines(&results(&payload)[0]), (4, 4));
    assert!(hit.get("citation").is_none() && hit.get("textScore").is_none());

    // `all`: memory and wiki, half each while both have hits; wiki's whole-number scores
    // come first.
    let payload = search(&config, &state, &["quokka", "-n", "2"]);
    let paths: Vec<&str> = results(&payload)
        .iter()
        .map(|h| h["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["entities/quokka-vet.md", "memory/2026-03-01.md"],
        "{payload:#}"
    );

    // memory_get reads a page's body by path, name or id.
    let get = |args: &[&str]| -> Value {
        let mut all = vec!["get"];
        all.extend_from_slice(args);
        memoria_json(&config, &state, &all)
    };
    for lookup in [
        "entities/quokka-vet.md",
        "entities/quokka-vet",
        "quokka-vet",
        "entity.quokka-vet",
    ] {
        let page = get(&["--corpus", "wiki", lookup, "--from", "3", "--lines", "1"]);
        assert_eq!(page["text"], "Open Tuesdays.", "{lookup}: {page:#}");
        assert_eq!(page["status"], "ok");
        assert_eq!(page["totalLines"], 5);
        assert_eq!(page["truncated"], true);
    }
    let page = get(&["--corpus", "all", "concepts/pets.md"]);
    assert_eq!(page["text"], "# Pets\nWe keep a quokka.\n");
    let page = get(&["--corpus", "all", "memory/2026-03-01.md#L2"]);
    assert_eq!(page["text"], "The quokka vet moved to Elm Street.");
    let page = get(&["--corpus", "wiki", "nobody"]);
    assert_eq!(page["status"], "not_found");
    assert!(
        page["error"].as_str().unwrap().contains("\"nobody\""),
        "{page:#}"
    );
}
