//! The QMD backend through the façade, with a stand-in `qmd`: a shell script that answers in
//! the format recorded from QMD 2.8.3 (`qmd search --json`), or fails in one of the ways a
//! real one does (missing, non-zero exit, hanging, printing something else). It logs every
//! call with the XDG homes it was given, and copies QMD's collection file, so the tests see
//! what memoria asked of it.
//!
//! The real QMD (`@tobilu/qmd` from npm, run with Bun) is exercised when
//! `MEMORIA_TEST_QMD` names its launcher; see `real_qmd_indexes_the_collections`.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memoria::config::{
    Backend, Chat, ChatType, Citations, Env, ProviderKind, QmdPath, SearchMode, Settings,
};
use memoria::{Memory, SearchOptions};

/// The bound the failure cases configure, and what a fallback may take beyond it.
const TIMEOUT: Duration = Duration::from_millis(800);
const MARGIN: Duration = Duration::from_millis(1500);

/// One QMD answer in the recorded format, for the collection `docs`.
const ANSWER: &str = r##"[
  {"docid": "#5cbc4c", "score": 0.91, "file": "qmd://docs/sub/b.md", "line": 3, "title": "Sub",
   "snippet": "@@ -2,2 @@ (1 before, 0 after)\n\nPostgres runs on port 5433 here."},
  {"docid": "#cef686", "score": 0.42, "file": "qmd://memory-dir/2026-01-02.md", "line": 1,
   "title": "Day", "snippet": "@@ -1,1 @@\nThe deploy key lives in vault."}
]"##;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    settings: Settings,
}

impl Fixture {
    /// A workspace, a `docs` collection outside it, and a stand-in `qmd` whose query
    /// command runs `query_body` (shell).
    fn new(query_body: &str) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let env = Env {
            home: Some(root.clone()),
            state_dir: Some(root.join("state")),
            config_path: None,
            ranking: None,
            store_uri: None,
        };
        let mut settings = Settings::builtin("main", &env);
        settings.workspace = root.join("ws");
        settings.provider = ProviderKind::None;
        settings.backend = Backend::Qmd;
        write(
            &settings.workspace.join("memory/2026-01-02.md"),
            "The deploy key lives in vault.\n",
        );
        write(
            &root.join("notes/sub/b.md"),
            "# Sub\n\nPostgres runs on port 5433 here.\n",
        );
        write(
            &root.join("notes/skip.txt"),
            "Postgres text file, not matched\n",
        );
        settings.qmd.paths = vec![QmdPath {
            name: "docs".into(),
            path: root.join("notes"),
            pattern: "**/*.md".into(),
        }];
        settings.qmd.limits.timeout = TIMEOUT;
        settings.qmd.command = stand_in(&root, query_body).display().to_string();
        Fixture {
            _tmp: tmp,
            root,
            settings,
        }
    }

    fn memory(&self) -> Memory {
        Memory::open(self.settings.clone()).unwrap()
    }

    fn log(&self) -> String {
        fs::read_to_string(self.root.join("qmd.log")).unwrap_or_default()
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Writes the stand-in `qmd` script.
fn stand_in(root: &Path, query_body: &str) -> PathBuf {
    let script = root.join("bin/qmd");
    let log = root.join("qmd.log");
    let answer = root.join("answer.json");
    write(&answer, ANSWER);
    write(
        &script,
        &format!(
            "#!/bin/sh\n\
             echo \"$1 XDG_CONFIG_HOME=$XDG_CONFIG_HOME XDG_CACHE_HOME=$XDG_CACHE_HOME ARGS=$*\" >> '{log}'\n\
             cp \"$XDG_CONFIG_HOME/qmd/index.yml\" '{root}/index.yml.seen' 2>/dev/null\n\
             case \"$1\" in\n\
               update|embed) exit 0 ;;\n\
               query|search|vsearch) ANSWER='{answer}'; {query_body} ;;\n\
               *) echo \"unknown command $1\" >&2; exit 2 ;;\n\
             esac\n",
            log = log.display(),
            root = root.display(),
            answer = answer.display(),
        ),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

fn search(memory: &Memory, query: &str) -> serde_json::Value {
    serde_json::to_value(memory.memory_search(query, &SearchOptions::default())).unwrap()
}

fn in_chat(chat_type: ChatType, channel: Option<&str>) -> SearchOptions {
    SearchOptions {
        chat: Chat {
            chat_type,
            channel: channel.map(str::to_string),
            session_key: None,
        },
        ..SearchOptions::default()
    }
}

#[test]
fn qmd_answers_with_its_collections_and_homes() {
    let fx = Fixture::new("cat \"$ANSWER\"");
    let memory = fx.memory();
    let payload = search(&memory, "postgres port");
    assert_eq!(payload["backend"], "qmd", "{payload}");
    assert_eq!(payload["provider"], "qmd");
    assert_eq!(payload["mode"], "hybrid");
    assert!(payload.get("fallback").is_none(), "{payload}");
    let results = payload["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["path"], "qmd/docs/sub/b.md");
    assert_eq!(
        (
            results[0]["startLine"].as_u64(),
            results[0]["endLine"].as_u64()
        ),
        (Some(2), Some(3))
    );
    assert_eq!(results[0]["score"], 0.91);
    assert!(results[0]["snippet"]
        .as_str()
        .unwrap()
        .starts_with("Postgres runs on port 5433 here.\n\nSource: qmd/docs/sub/b.md#L2-L3"));
    // A workspace collection is cited workspace-relative.
    assert_eq!(results[1]["path"], "memory/2026-01-02.md");

    // QMD ran in the agent's XDG homes under <stateDir>/agents/main/qmd/, with the
    // collections of the config and of the workspace (includeDefaultMemory).
    let home = fx.root.join("state/agents/main/qmd");
    let log = fx.log();
    assert!(
        log.contains(&format!(
            "XDG_CONFIG_HOME={} XDG_CACHE_HOME={}",
            home.join("xdg-config").display(),
            home.join("xdg-cache").display()
        )),
        "{log}"
    );
    assert!(
        log.contains("ARGS=query --json -n 6 postgres port"),
        "{log}"
    );
    // A one-shot search refreshes QMD's index first when it never was (then not again
    // within update.interval).
    assert!(log.starts_with("update "), "{log}");
    search(&memory, "again");
    assert_eq!(fx.log().matches("update ").count(), 1, "{}", fx.log());
    let yml = fs::read_to_string(fx.root.join("index.yml.seen")).unwrap();
    for name in ["memory-root", "memory-alt", "memory-dir", "docs"] {
        assert!(yml.contains(&format!("  {name}:\n")), "{yml}");
    }
    assert!(yml.contains(&format!("path: \"{}\"", fx.root.join("notes").display())));

    // The limits: 1 result of at most 10 characters.
    let mut fx2 = Fixture::new("cat \"$ANSWER\"");
    fx2.settings.qmd.limits.max_results = 1;
    fx2.settings.qmd.limits.max_snippet_chars = 10;
    fx2.settings.citations = Citations::Off;
    let payload = search(&fx2.memory(), "postgres");
    let results = payload["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{payload}");
    assert_eq!(results[0]["snippet"], "Postgres r");
    assert!(fx2.log().contains("-n 1 postgres"));

    // searchMode picks the command.
    let mut fx3 = Fixture::new("cat \"$ANSWER\"");
    fx3.settings.qmd.search_mode = SearchMode::Search;
    let payload = search(&fx3.memory(), "postgres");
    assert_eq!(payload["mode"], "fts-only");
    assert!(fx3.log().contains("ARGS=search --json"), "{}", fx3.log());
}

#[test]
fn every_failure_falls_back_within_the_timeout() {
    let cases: &[(&str, &str, &str)] = &[
        ("missing", "", "was not found"),
        (
            "exit",
            "echo 'sqlite: extension loading disabled' >&2; exit 1",
            "extension loading disabled",
        ),
        ("hang", "sleep 30", "no answer within 800 ms"),
        (
            "garbage",
            "echo 'Downloading model...'",
            "no JSON result list",
        ),
        ("wrong json", "echo '{\"error\": 1}'", "no result list"),
    ];
    for (name, body, reason) in cases {
        let mut fx = Fixture::new(body);
        if *name == "missing" {
            fx.settings.qmd.command = fx.root.join("no/such/qmd").display().to_string();
        }
        let memory = fx.memory();
        memory.sync(false, &|_| {}).unwrap();
        let started = Instant::now();
        let payload = search(&memory, "postgres");
        let took = started.elapsed();
        eprintln!("fallback after QMD failure {name:?}: {took:?}");
        assert!(took < TIMEOUT + MARGIN, "{name}: took {took:?}");
        assert_eq!(payload["backend"], "builtin", "{name}: {payload}");
        assert_eq!(payload["fallback"]["from"], "qmd", "{name}: {payload}");
        let why = payload["fallback"]["reason"].as_str().unwrap();
        assert!(why.contains(reason), "{name}: {why}");
        // memoria's own index serves the same documents, cited the same way.
        let paths: Vec<_> = payload["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["path"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(paths, ["qmd/docs/sub/b.md"], "{name}: {payload}");
        // QMD is not asked again at once: the next search goes straight to the fallback.
        let calls = fx.log().matches("query ").count();
        let started = Instant::now();
        let again = search(&memory, "postgres");
        assert!(started.elapsed() < MARGIN, "{name}");
        assert!(again["fallback"]["reason"]
            .as_str()
            .unwrap()
            .contains("QMD is tried again in"));
        assert_eq!(fx.log().matches("query ").count(), calls, "{name}");
        let status = memory.status().unwrap();
        assert_eq!(status.backend, "qmd");
        assert_eq!(status.qmd.as_ref().unwrap().serving, "builtin", "{name}");
        assert!(status
            .warnings
            .iter()
            .any(|w| w.contains("memoria's own index answers for now")));
    }
}

#[test]
fn scope_allows_direct_chats_only_by_default() {
    let fx = Fixture::new("cat \"$ANSWER\"");
    let memory = fx.memory();
    let direct = memory.memory_search("postgres", &in_chat(ChatType::Direct, Some("telegram")));
    assert_eq!(direct.results.len(), 2);
    for chat in [ChatType::Group, ChatType::Channel] {
        let denied = memory.memory_search("postgres", &in_chat(chat, Some("discord")));
        assert!(denied.results.is_empty());
        let why = denied.warning.unwrap();
        assert!(why.contains("memory.qmd.scope denies"), "{why}");
    }
    // Relaxed for groups, but not Discord's.
    let mut fx = Fixture::new("cat \"$ANSWER\"");
    fx.settings.qmd.scope = serde_json_scope(
        "{default: 'allow', rules: [{action: 'deny', match: {chatType: 'group', channel: 'discord'}}]}",
    );
    let memory = fx.memory();
    let telegram = memory.memory_search("postgres", &in_chat(ChatType::Group, Some("telegram")));
    assert_eq!(telegram.results.len(), 2);
    // No citations in groups (citations: auto).
    assert!(!telegram.results[0].snippet.contains("Source:"));
    let discord = memory.memory_search("postgres", &in_chat(ChatType::Group, Some("discord")));
    assert!(discord.warning.unwrap().contains("rules[0] denies"));
}

/// A scope from the config syntax.
fn serde_json_scope(scope: &str) -> memoria::config::SendPolicy {
    let text = format!("{{memory: {{backend: 'qmd', qmd: {{scope: {scope}}}}}}}");
    let value = memoria::config::parse_config_text(&text, Path::new("t.json5")).unwrap();
    memoria::config::resolve(&value, "main", &Env::default())
        .unwrap()
        .qmd
        .scope
}

#[test]
fn memory_get_reads_collections_and_nothing_else() {
    let fx = Fixture::new("cat \"$ANSWER\"");
    write(&fx.root.join("secret.md"), "not memory");
    write(&fx.root.join("notes/real.md"), "real");
    #[cfg(unix)]
    std::os::unix::fs::symlink(fx.root.join("secret.md"), fx.root.join("notes/link.md")).unwrap();
    let memory = fx.memory();
    let get = |path: &str| memory.memory_get(path, None, None);
    assert_eq!(
        get("qmd/docs/sub/b.md").text,
        "# Sub\n\nPostgres runs on port 5433 here.\n"
    );
    assert_eq!(get("qmd/docs/sub/b.md").error, None);
    assert_eq!(
        memory
            .memory_get("qmd/docs/sub/b.md", Some(3), Some(1))
            .text,
        "Postgres runs on port 5433 here."
    );
    let refused: &[(&str, &str)] = &[
        ("qmd/docs/../secret.md", "outside the QMD collection docs"),
        (
            "qmd/docs/../../etc/passwd.md",
            "outside the QMD collection docs",
        ),
        ("qmd/docs/skip.txt", "not a file of the QMD collection docs"),
        ("qmd/docs/link.md", "is a symlink"),
        ("qmd/nosuch/a.md", "not a memory file"),
        ("../secret.md", "not a memory file"),
    ];
    for (path, why) in refused {
        let payload = get(path);
        let error = payload.error.unwrap_or_default();
        assert!(error.contains(why), "{path}: {error}");
        assert!(payload.text.is_empty());
    }
}

#[test]
fn collections_are_indexed_and_the_builtin_backend_ignores_them() {
    let fx = Fixture::new("exit 1");
    let memory = fx.memory();
    let report = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(
        report.files, 2,
        "memory/2026-01-02.md and qmd/docs/sub/b.md"
    );
    // memoria index ran QMD's update and embed too.
    assert!(
        fx.log().contains("update ") && fx.log().contains("embed "),
        "{}",
        fx.log()
    );

    let mut builtin = fx.settings.clone();
    builtin.backend = Backend::Builtin;
    let memory = Memory::open(builtin).unwrap();
    let payload = search(&memory, "postgres");
    assert!(payload.get("backend").is_none(), "{payload}");
    assert_eq!(payload["results"].as_array().unwrap().len(), 0, "{payload}");
    assert!(memory
        .memory_get("qmd/docs/sub/b.md", None, None)
        .error
        .is_some());
}

/// The real QMD, when `MEMORIA_TEST_QMD` names its launcher (`.ci/run` installs
/// `@tobilu/qmd` and Bun from npm). `qmd query` needs models from Hugging Face, which this
/// machine cannot reach: it times out, and memoria falls back. `qmd search` (BM25) runs.
#[test]
fn real_qmd_indexes_the_collections() {
    let Ok(qmd) = std::env::var("MEMORIA_TEST_QMD") else {
        eprintln!("skipped: MEMORIA_TEST_QMD is not set");
        return;
    };
    let mut fx = Fixture::new("");
    fx.settings.qmd.command = qmd;
    fx.settings.qmd.search_mode = SearchMode::Search;
    fx.settings.qmd.limits.timeout = Duration::from_secs(20);
    let memory = fx.memory();
    let payload = search(&memory, "postgres");
    assert_eq!(payload["backend"], "qmd", "{payload}");
    let results = payload["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{payload}");
    assert_eq!(results[0]["path"], "qmd/docs/sub/b.md");
    let from = results[0]["startLine"].as_u64().unwrap() as i64;
    let lines = memory
        .memory_get("qmd/docs/sub/b.md", Some(from), Some(3))
        .text;
    assert!(lines.contains("Postgres runs on port 5433"), "{lines}");
    let payload = search(&memory, "deploy vault");
    assert_eq!(
        payload["results"][0]["path"], "memory/2026-01-02.md",
        "{payload}"
    );
}

#[test]
fn transcripts_are_exported_for_the_sessions_collection() {
    let mut fx = Fixture::new("exit 1");
    fx.settings.qmd.sessions.enabled = true;
    let sessions = fx.root.join("state/agents/main/sessions");
    write(
        &sessions.join("s1.jsonl"),
        "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"remind me about the Lisbon ferry\"}}\n",
    );
    let memory = fx.memory();
    memory.sync(false, &|_| {}).unwrap();
    let export = fx.root.join("state/agents/main/qmd/sessions/s1.md");
    assert_eq!(
        fs::read_to_string(&export).unwrap(),
        "# Session s1\n\nUser: remind me about the Lisbon ferry\n"
    );
    let yml = fs::read_to_string(fx.root.join("index.yml.seen")).unwrap();
    assert!(yml.contains("  sessions:\n"), "{yml}");
    // QMD fails here: memoria's own index has the export, cited as QMD would cite it.
    let payload = search(&memory, "Lisbon ferry");
    assert_eq!(
        payload["results"][0]["path"], "qmd/sessions/s1.md",
        "{payload}"
    );
    assert!(memory
        .memory_get("qmd/sessions/s1.md", None, None)
        .text
        .contains("Lisbon ferry"));
    // The transcript gone: so is its export (the next update or index).
    fs::remove_file(sessions.join("s1.jsonl")).unwrap();
    memory.sync(false, &|_| {}).unwrap();
    assert!(!export.exists());
}

#[test]
fn a_live_memory_keeps_qmd_updated() {
    // `update` takes 300 ms: a search that waits for the boot run comes after it.
    let mut fx = Fixture::new("cat \"$ANSWER\"");
    let slow_update = fs::read_to_string(&fx.settings.qmd.command)
        .unwrap()
        .replace(
            "update|embed) exit 0",
            "update) sleep 0.3; exit 0 ;;\n  embed) exit 0",
        );
    fs::write(&fx.settings.qmd.command, slow_update).unwrap();
    fx.settings.qmd.update.wait_for_boot_sync = true;
    fx.settings.qmd.update.interval = Some(Duration::from_millis(400));
    fx.settings.qmd.update.debounce = Duration::from_millis(50);
    fx.settings.sync.watch_debounce_ms = 50;
    let memory = std::sync::Arc::new(fx.memory());
    let live = memory.start_live(|_| {}).unwrap();
    let payload = search(&memory, "postgres");
    assert_eq!(payload["backend"], "qmd", "{payload}");
    let log = fx.log();
    let first: Vec<&str> = log.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(&first[..3], ["update", "embed", "query"], "{log}");
    // Every update.interval, another update (no embed: embedInterval is an hour). Polled,
    // not slept for: on a loaded machine the second run can start late.
    let deadline = Instant::now() + Duration::from_secs(10);
    while fx.log().matches("update ").count() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(fx.log().matches("update ").count() >= 2, "{}", fx.log());
    assert_eq!(fx.log().matches("embed ").count(), 1);
    live.stop();
    let after = fx.log().matches("update ").count();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        fx.log().matches("update ").count(),
        after,
        "stopped with the live sync"
    );
    let status = memory.status().unwrap();
    let qmd = status.qmd.unwrap();
    assert!(
        qmd.last_update.is_some() && qmd.last_embed.is_some(),
        "{qmd:?}"
    );
}

#[test]
fn a_change_to_memory_files_updates_qmd_after_the_debounce() {
    let mut fx = Fixture::new("cat \"$ANSWER\"");
    fx.settings.qmd.update.interval = None;
    fx.settings.qmd.update.debounce = Duration::from_millis(100);
    fx.settings.sync.watch_debounce_ms = 50;
    let memory = std::sync::Arc::new(fx.memory());
    let live = memory.start_live(|_| {}).unwrap();
    let settled = |want: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while fx.log().matches("update ").count() < want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        fx.log().matches("update ").count()
    };
    assert_eq!(settled(1), 1, "the boot update");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        fx.log().matches("update ").count(),
        1,
        "no interval: no more"
    );
    write(
        &fx.root.join("notes/new.md"),
        "A new note about Postgres.\n",
    );
    assert_eq!(settled(2), 2, "{}", fx.log());
    live.stop();
}
