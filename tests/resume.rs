//! A large first index, as a user meets it: searches answer while it embeds (by keyword at
//! once, hybrid once vectors are committed, with how far it is), and an index killed
//! half-way goes on where it stopped, embedding nothing twice but the call it was killed
//! in. The embedder is OpenAI's wire format on a loopback server (`support/loopback.rs`)
//! that counts every text it embeds and answers slowly enough to search meanwhile.

#![cfg(all(feature = "cli", feature = "remote"))]

#[path = "support/loopback.rs"]
#[allow(dead_code)]
mod loopback;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loopback::{answer, serve, Request};
use memoria::config::{Env, ProviderKind, Secret, Settings};
use memoria::{Memory, SearchOptions};
use serde_json::{json, Value};

const DIMS: usize = 16;
/// Enough that a call of 64 texts (a remote provider's) is a fortieth of the whole.
const NOTES: usize = 2_600;
/// Each embedder call's answer waits this long: the index takes several seconds.
const CALL: Duration = Duration::from_millis(150);

/// Every note is one chunk whose text starts with `Day`; the probe and the queries do not.
fn workspace(root: &Path) -> PathBuf {
    let ws = root.join("ws");
    std::fs::create_dir_all(ws.join("memory")).unwrap();
    let topics = [
        "harbour", "violin", "glacier", "orchard", "lantern", "compass",
    ];
    for i in 0..NOTES {
        let topic = topics[i % topics.len()];
        std::fs::write(
            ws.join(format!("memory/note-{i:04}.md")),
            format!("Day {i}: talked about the {topic} with Sam, entry {i}.\n"),
        )
        .unwrap();
    }
    ws
}

struct Setup {
    _tmp: tempfile::TempDir,
    config: PathBuf,
    /// Document texts embedded so far, in order.
    embedded: Arc<Mutex<Vec<String>>>,
    _server: loopback::Server,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let ws = workspace(tmp.path());
    let embedded = Arc::new(Mutex::new(Vec::new()));
    let log = embedded.clone();
    let server = serve(Box::new(move |r: &Request, _| {
        let inputs: Vec<String> = r.body["input"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let documents: Vec<String> = inputs
            .into_iter()
            .filter(|t| t.starts_with("Day "))
            .collect();
        if !documents.is_empty() {
            std::thread::sleep(CALL);
            log.lock().unwrap().extend(documents);
        }
        (200, Vec::new(), answer(r, DIMS))
    }));
    let config = tmp.path().join("openclaw.json");
    let settings = json!({"agents": {"defaults": {"workspace": ws, "memorySearch": {
        "provider": "openai", "model": "text-embedding-3-small",
        "remote": {"baseUrl": format!("{}/v1/", server.url),
                   "apiKey": "sk-test-abcdefghijklmnop0123456789"},
    }}}});
    std::fs::write(&config, settings.to_string()).unwrap();
    Setup {
        _tmp: tmp,
        config,
        embedded,
        _server: server,
    }
}

impl Setup {
    fn memoria(&self, state: &Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memoria"));
        cmd.arg("--state-dir")
            .arg(state)
            .arg("--config")
            .arg(&self.config)
            .env_remove("OPENCLAW_CONFIG_PATH")
            .env_remove("OPENCLAW_STATE_DIR")
            .env_remove("MEMORIA_MODEL_DIR")
            .env_remove("OPENAI_API_KEY");
        cmd
    }

    fn index(&self, state: &Path) -> Child {
        self.memoria(state)
            .arg("index")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn search(&self, state: &Path, query: &str) -> Value {
        let out = self
            .memoria(state)
            .args(["search", "--json", query])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn texts(&self) -> Vec<String> {
        self.embedded.lock().unwrap().clone()
    }
}

fn manifest(state: &Path) -> Option<Value> {
    let path = state.join("memory/main/manifest.json");
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Polls until `ready` holds (or fails the test after a minute).
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "waited a minute for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn progress(manifest: &Value) -> Option<&Value> {
    manifest["stats"]["embedding"]["progress"].as_object()?;
    Some(&manifest["stats"]["embedding"]["progress"])
}

#[test]
fn a_first_index_answers_while_it_embeds_and_resumes_after_a_kill() {
    let s = setup();

    // A clean run: what the whole embedding costs.
    let clean_state = s._tmp.path().join("clean");
    assert!(s.index(&clean_state).wait().unwrap().success());
    let clean = s.texts().len();
    assert_eq!(clean, NOTES, "one text per note");
    s.embedded.lock().unwrap().clear();

    let state = s._tmp.path().join("state");
    let mut child = s.index(&state);

    // Keyword-searchable before any vector: the first commit comes before embedding.
    wait_for("the keyword commit", || manifest(&state).is_some());
    let first = manifest(&state).unwrap();
    let early = progress(&first).expect("a commit made while embedding says how far it is");
    assert_eq!(early["total"], json!(NOTES), "{first:#}");
    let payload = s.search(&state, "harbour Sam entry 12");
    assert_eq!(
        payload["results"][0]["path"], "memory/note-0012.md",
        "{payload:#}"
    );
    let warning = payload["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("embedding under way: vectors for"),
        "{payload:#}"
    );
    // Nothing sends the user to the command that is already running.
    assert!(
        !payload.to_string().contains("memoria index`"),
        "{payload:#}"
    );

    // Then hybrid over the vectors committed so far, saying how far embedding is.
    wait_for("a commit with vectors", || {
        manifest(&state)
            .as_ref()
            .and_then(progress)
            .is_some_and(|p| p["done"].as_u64().unwrap_or(0) > 0)
    });
    let payload = s.search(&state, "harbour Sam entry 12");
    assert_eq!(payload["mode"], "hybrid", "{payload:#}");
    assert!(
        !payload["results"].as_array().unwrap().is_empty(),
        "{payload:#}"
    );
    let warning = payload["warning"].as_str().unwrap_or_default();
    assert!(
        warning.contains("embedding under way: vectors for") && warning.contains("% of chunks"),
        "{payload:#}"
    );

    // Killed half-way (SIGKILL: nothing is flushed, no handler runs)...
    wait_for("half of the notes embedded", || {
        s.texts().len() >= NOTES / 2
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let before_kill = s.texts().len();
    assert!(before_kill < NOTES, "the kill came before the end");
    // `status` (which, unlike a search, never syncs) says so.
    let out = s
        .memoria(&state)
        .args(["status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        status["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap_or_default().contains("stopped part-way")),
        "{status:#}"
    );

    // ... and restarted: it goes on from where it stopped.
    assert!(s.index(&state).wait().unwrap().success());
    let texts = s.texts();
    let mut counts = std::collections::HashMap::new();
    for text in &texts {
        *counts.entry(text.as_str()).or_insert(0) += 1;
    }
    let twice = counts.values().filter(|&&n| n > 1).count();
    eprintln!(
        "clean run: {clean} texts; killed after {before_kill}; in all {} ({twice} twice)",
        texts.len()
    );
    assert_eq!(counts.len(), NOTES, "every note embedded");
    // Embedded twice: at most the call the kill interrupted (64 texts here).
    assert!(
        twice <= NOTES / 40,
        "{twice} texts embedded twice (killed after {before_kill})"
    );
    assert!(
        texts.len() as f64 <= 1.05 * clean as f64,
        "{} texts embedded in all, {clean} in a clean run",
        texts.len()
    );
    let done = manifest(&state).unwrap();
    assert!(progress(&done).is_none(), "{done:#}");
    assert_eq!(done["stats"]["embedding"]["missing"], json!(0), "{done:#}");
    let payload = s.search(&state, "harbour Sam entry 12");
    assert_eq!(payload["mode"], "hybrid", "{payload:#}");
    assert!(
        payload.get("warning").is_none_or(Value::is_null),
        "{payload:#}"
    );
}

#[test]
fn a_live_sync_answers_the_first_search_once_the_keyword_side_is_committed() {
    let s = setup();
    let root = s._tmp.path();
    let env = Env {
        home: Some(root.to_path_buf()),
        state_dir: Some(root.join("live-state")),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin("main", &env);
    settings.workspace = root.join("ws");
    settings.provider = ProviderKind::OpenAi;
    settings.model = Some("text-embedding-3-small".into());
    settings.remote.base_url = Some(format!("{}/v1/", s._server.url));
    settings.remote.api_key = Some(Secret::Literal("sk-test-abcdefghijklmnop0123456789".into()));
    let memory = Memory::open(settings).unwrap();
    let _live = memory.start_live(|_| {}).unwrap();
    // The live sync's first index: a search waits for its keyword side, not its vectors
    // (embedding the 2,600 notes takes 41 calls of at least 150 ms).
    let payload = memory.memory_search("harbour Sam entry 12", &SearchOptions::default());
    assert_eq!(
        payload.results[0].path, "memory/note-0012.md",
        "{payload:?}"
    );
    assert!(
        payload
            .fallback
            .as_ref()
            .is_none_or(|f| !f.reason.contains("memoria index`")),
        "{payload:?}"
    );
    let warning = payload.warning.unwrap_or_default();
    assert!(
        warning.contains("embedding under way: vectors for"),
        "answered before the embedding ended: {warning}"
    );
    assert!(
        s.texts().len() < NOTES,
        "{} texts embedded",
        s.texts().len()
    );
}

/// Whether a process holds `state`'s writer lock (a sync runs).
fn sync_running(state: &Path) -> bool {
    let Ok(file) = std::fs::File::open(state.join("memory/main/LOCK")) else {
        return false;
    };
    file.try_lock().is_err()
}

#[test]
fn a_keyword_index_rebuilt_with_the_embedder_does_not_send_the_user_to_memoria_index() {
    let s = setup();
    let state = s._tmp.path().join("state");
    let keyword_only = s
        .memoria(&state)
        .args(["--provider", "none", "index"])
        .output()
        .unwrap();
    assert!(keyword_only.status.success());
    // The embedder's index replaces it: its keyword side first, then its vectors. Searches
    // answer from the keyword-only index, then from the new one, and none says "run
    // `memoria index`", which is what runs.
    let mut child = s.index(&state);
    wait_for("the sync to take the index", || sync_running(&state));
    let mut answers = 0;
    while sync_running(&state) && s.texts().len() < NOTES / 2 {
        let payload = s.search(&state, "harbour Sam entry 12");
        assert!(
            !payload["results"].as_array().unwrap().is_empty(),
            "{payload:#}"
        );
        assert!(
            !payload.to_string().contains("memoria index`"),
            "{payload:#}"
        );
        answers += 1;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(answers > 0, "searched while the index was rebuilt");
}
