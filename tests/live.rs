//! Live memory through the façade: the watcher's convergence (create, edit, delete, rename,
//! a new nested directory, an atomic save, a 1,000-file burst, a root that disappears and
//! comes back), polling, and session transcripts (sync, line mapping, deltas, corpus).
//!
//! Keyword-only (`provider: none`) with a short debounce, so that each case takes well under
//! a second; convergence is "the same hits as a clean index of the same files".

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memoria::config::{Env, ProviderKind, Settings, Source};
use memoria::{Corpus, LiveEvent, Memory, SearchOptions, WatcherState};

const DEBOUNCE_MS: u64 = 150;
const CONVERGE_WITHIN: Duration = Duration::from_secs(30);

fn settings(root: &Path) -> Settings {
    let env = Env {
        home: Some(root.to_path_buf()),
        state_dir: Some(root.join("state")),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin("main", &env);
    settings.workspace = root.join("ws");
    settings.provider = ProviderKind::None;
    settings.sync.watch_debounce_ms = DEBOUNCE_MS;
    fs::create_dir_all(settings.workspace.join("memory")).unwrap();
    settings
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn all_hits() -> SearchOptions {
    SearchOptions {
        max_results: Some(50),
        min_score: Some(0.0),
        ..SearchOptions::default()
    }
}

/// What a query finds: (path, start, end), sorted (scores of an incrementally updated
/// keyword index may differ in the last digits from a fresh one).
fn found(memory: &Memory, query: &str) -> Vec<(String, usize, usize)> {
    let mut hits: Vec<_> = memory
        .search(query, &all_hits())
        .unwrap()
        .hits
        .into_iter()
        .map(|h| (h.path, h.start_line, h.end_line))
        .collect();
    hits.sort();
    hits
}

/// What an index holds: its file and chunk counts, and what each query finds.
type Found = (usize, u64, Vec<Vec<(String, usize, usize)>>);

fn found_all(memory: &Memory, queries: &[&str]) -> Found {
    let status = memory.status().unwrap();
    let hits = queries.iter().map(|q| found(memory, q)).collect();
    (status.files, status.chunks, hits)
}

/// What a clean index of the same workspace holds and finds.
fn found_fresh(settings: &Settings, scratch: &Path, queries: &[&str]) -> Found {
    let mut fresh = settings.clone();
    fresh.store.dir = Some(scratch.join(format!("fresh-{}", rand_suffix())));
    let memory = Memory::open(fresh).unwrap();
    memory.sync(true, &|_| {}).unwrap();
    found_all(&memory, queries)
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Waits until the live memory holds the files and chunks a clean index holds and finds
/// what it finds, for every query (each matching fewer hits than a page: tied scores
/// among more would leave the page to the tie order).
fn converges(memory: &Memory, settings: &Settings, scratch: &Path, queries: &[&str]) -> Duration {
    let started = Instant::now();
    let want = found_fresh(settings, scratch, queries);
    loop {
        let got = found_all(memory, queries);
        if got == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < CONVERGE_WITHIN,
            "did not converge: got {got:?}, want {want:?}; live {:?}",
            memory.status().unwrap().live
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

struct Live {
    memory: Arc<Memory>,
    settings: Settings,
    events: Arc<Mutex<Vec<String>>>,
    _sync: memoria::LiveSync,
}

/// Live syncs read `MEMORIA_WATCH` when they start: tests that start one take turns.
static SERIAL: Mutex<()> = Mutex::new(());

fn start(settings: Settings) -> Live {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    start_unserialized(settings)
}

fn start_unserialized(settings: Settings) -> Live {
    let memory = Arc::new(Memory::open(settings.clone()).unwrap());
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = events.clone();
    let sync = memory
        .start_live(move |event: &LiveEvent| log.lock().unwrap().push(format!("{event:?}")))
        .unwrap();
    // The session-start sync builds the first index; searches wait for it.
    assert!(memory.search("anything", &all_hits()).is_ok());
    Live {
        memory,
        settings,
        events,
        _sync: sync,
    }
}

fn watcher(memory: &Memory) -> WatcherState {
    memory
        .status()
        .unwrap()
        .live
        .expect("a live sync runs")
        .watcher
}

#[test]
fn the_watcher_converges_after_every_kind_of_change() {
    let tmp = tempfile::tempdir().unwrap();
    let s = settings(tmp.path());
    let ws = s.workspace.clone();
    write(&ws.join("MEMORY.md"), "# Long term\nSam likes oat milk.\n");
    write(
        &ws.join("memory/2026-11-01.md"),
        "Miso the cat saw the vet.\n",
    );
    let live = start(s);
    let m = &live.memory;
    assert_eq!(watcher(m), WatcherState::Watching, "{:?}", live.events);
    let scratch = tmp.path().join("scratch");
    let check = |queries: &[&str]| converges(m, &live.settings, &scratch, queries);

    // Create.
    write(
        &ws.join("memory/2026-11-02.md"),
        "Planned the postgres cutover.\n",
    );
    check(&["postgres", "miso"]);
    // Edit.
    write(
        &ws.join("memory/2026-11-02.md"),
        "Planned the mysql cutover.\n",
    );
    check(&["postgres", "mysql"]);
    // Delete.
    fs::remove_file(ws.join("memory/2026-11-01.md")).unwrap();
    check(&["miso", "mysql"]);
    // Rename.
    fs::rename(
        ws.join("memory/2026-11-02.md"),
        ws.join("memory/2026-11-03.md"),
    )
    .unwrap();
    check(&["mysql"]);
    // A new nested directory, created after watching started.
    write(
        &ws.join("memory/projects/alpha/notes.md"),
        "Alpha ships in May.\n",
    );
    check(&["alpha"]);
    write(
        &ws.join("memory/projects/alpha/more.md"),
        "Alpha needs a logo.\n",
    );
    check(&["alpha", "logo"]);
    // An atomic save: write a temporary file, rename it over MEMORY.md.
    write(
        &ws.join(".MEMORY.md.tmp"),
        "# Long term\nSam likes soy milk.\n",
    );
    fs::rename(ws.join(".MEMORY.md.tmp"), ws.join("MEMORY.md")).unwrap();
    check(&["soy", "oat"]);
    // A burst of 1,000 files.
    for i in 0..1000 {
        write(
            &ws.join(format!("memory/burst/{i:04}.md")),
            &format!("burst note {i} word{i}\n"),
        );
    }
    check(&["word0", "word7", "word500", "word999"]);
    // The watched root disappears and comes back.
    fs::remove_dir_all(ws.join("memory")).unwrap();
    check(&["alpha", "burst"]);
    write(&ws.join("memory/2026-11-20.md"), "Back again: kiwi jam.\n");
    check(&["kiwi", "alpha"]);
    let live_status = m.status().unwrap().live.unwrap();
    assert_eq!(live_status.watcher, WatcherState::Watching);
    assert!(
        live_status.roots.iter().any(|r| r.ends_with("memory")),
        "memory/ is watched again: {live_status:?}"
    );
    assert!(live_status.syncs >= 9, "{live_status:?}");
    assert!(live_status.last_sync_error.is_none());
    // A later edit in the re-created root is seen too.
    write(&ws.join("memory/2026-11-20.md"), "Back again: fig jam.\n");
    check(&["kiwi", "fig"]);
}

#[test]
fn roots_that_do_not_exist_yet_are_picked_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = settings(tmp.path());
    fs::remove_dir_all(s.workspace.join("memory")).unwrap();
    s.extra_paths = vec!["../later".into()];
    let ws = s.workspace.clone();
    let live = start(s);
    let scratch = tmp.path().join("scratch");
    write(
        &ws.join("memory/first.md"),
        "The first daily note: quince.\n",
    );
    converges(&live.memory, &live.settings, &scratch, &["quince"]);
    write(
        &tmp.path().join("later/x.md"),
        "An extra path made late: medlar.\n",
    );
    converges(&live.memory, &live.settings, &scratch, &["medlar"]);
}

#[test]
fn a_watcher_that_cannot_watch_polls_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let s = settings(tmp.path());
    let ws = s.workspace.clone();
    let live = {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        std::env::set_var("MEMORIA_WATCH", "poll");
        let live = start_unserialized(s);
        std::env::remove_var("MEMORIA_WATCH");
        live
    };
    let status = live.memory.status().unwrap().live.unwrap();
    assert_eq!(status.watcher, WatcherState::Polling);
    let reason = status.reason.unwrap();
    assert!(reason.contains("MEMORIA_WATCH=poll") && reason.contains("polling every"));
    assert!(status.poll_interval_ms.unwrap() >= 2000);
    // A search that finds the workspace changed asks for a sync without waiting for it.
    write(&ws.join("memory/a.md"), "Polled note: persimmon.\n");
    let scratch = tmp.path().join("scratch");
    converges(&live.memory, &live.settings, &scratch, &["persimmon"]);
}

#[test]
fn a_second_live_sync_is_refused_and_stopping_frees_the_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = Arc::new(Memory::open(settings(tmp.path())).unwrap());
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let first = memory.start_live(|_| {}).unwrap();
    assert!(matches!(
        memory.start_live(|_| {}),
        Err(memoria::Error::AlreadyLive)
    ));
    first.stop();
    assert!(memory.status().unwrap().live.is_none());
    assert_eq!(Arc::strong_count(&memory), 1);
    memory.start_live(|_| {}).unwrap().stop();
}

// ---- sessions ------------------------------------------------------------------------

fn session_settings(root: &Path) -> (Settings, PathBuf) {
    let mut s = settings(root);
    s.sources = vec![Source::Memory, Source::Sessions];
    s.session_memory = true;
    write(&s.workspace.join("MEMORY.md"), "Allergic to penicillin.\n");
    let dir = s.sessions_dir().unwrap();
    fs::create_dir_all(&dir).unwrap();
    (s, dir)
}

fn message(role: &str, text: &str) -> String {
    serde_json::json!({"type": "message", "message": {"role": role, "content": text}}).to_string()
        + "\n"
}

#[test]
fn session_transcripts_are_searchable_with_jsonl_line_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, dir) = session_settings(tmp.path());
    let mut jsonl = String::from("{\"type\":\"session\",\"id\":\"s1\"}\n");
    jsonl += &message("user", "Which   cafe did we pick?");
    jsonl += "{broken\n";
    jsonl += &message(
        "assistant",
        "The one with the kumquat tart. Key sk-abcdefghijklmnop12345",
    );
    write(&dir.join("s1.jsonl"), &jsonl);
    // Another agent's transcripts are not this agent's memory.
    write(
        &dir.parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("other/sessions/o.jsonl"),
        &message("user", "kumquat from another agent"),
    );
    let memory = Memory::open(s).unwrap();
    let report = memory.sync(false, &|_| {}).unwrap();
    assert_eq!(report.files, 2);
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.starts_with("sessions/s1.jsonl:3: not a JSON record")),
        "{:?}",
        report.warnings
    );
    let response = memory.search("kumquat", &all_hits()).unwrap();
    assert_eq!(response.hits.len(), 1);
    let chunk = &response.hits[0];
    assert_eq!(chunk.path, "sessions/s1.jsonl");
    assert_eq!(chunk.source, "sessions");
    assert_eq!((chunk.start_line, chunk.end_line), (2, 4));
    assert_eq!(
        chunk.text,
        "User: Which cafe did we pick?\nAssistant: The one with the kumquat tart. Key [REDACTED]\n"
    );
    assert!(memory
        .search("abcdefghijklmnop12345", &all_hits())
        .unwrap()
        .hits
        .is_empty());
    // The corpus argument.
    let only = |corpus| SearchOptions {
        corpus,
        ..all_hits()
    };
    assert!(memory
        .search("kumquat", &only(Corpus::Memory))
        .unwrap()
        .hits
        .is_empty());
    assert_eq!(
        memory
            .search("kumquat", &only(Corpus::Sessions))
            .unwrap()
            .hits
            .len(),
        1
    );
    assert!(memory
        .search("penicillin", &only(Corpus::Sessions))
        .unwrap()
        .hits
        .is_empty());
    assert_eq!(
        memory
            .search("penicillin", &only(Corpus::Memory))
            .unwrap()
            .hits
            .len(),
        1
    );
    // memory_get stays limited to memory files.
    let got = memory.memory_get("sessions/s1.jsonl", None, None);
    assert_eq!(got.disabled, Some(true), "{got:?}");
}

#[test]
fn transcripts_wait_for_their_delta_thresholds_in_background_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut s, dir) = session_settings(tmp.path());
    s.sync.sessions.delta_bytes = 100_000;
    s.sync.sessions.delta_messages = 3;
    let file = dir.join("s.jsonl");
    write(&file, &message("user", "first words: damson"));
    let memory = Memory::open(s).unwrap();
    let sessions = SearchOptions {
        corpus: Corpus::Sessions,
        ..all_hits()
    };
    // A new transcript is indexed at once (by the sync a search runs).
    assert_eq!(memory.search("damson", &sessions).unwrap().hits.len(), 1);
    let append = |text: &str| {
        use std::io::Write;
        let mut f = fs::OpenOptions::new().append(true).open(&file).unwrap();
        f.write_all(message("assistant", text).as_bytes()).unwrap();
    };
    append("second: elderberry");
    append("third: feijoa");
    // Two new lines < 3: deferred, and the search says nothing is wrong.
    assert!(memory
        .search("elderberry", &sessions)
        .unwrap()
        .hits
        .is_empty());
    append("fourth: guava");
    // Three new lines: indexed.
    for word in ["elderberry", "feijoa", "guava"] {
        assert_eq!(
            memory.search(word, &sessions).unwrap().hits.len(),
            1,
            "{word}"
        );
    }
    // The byte threshold alone also triggers.
    let mut s2 = memory.settings().clone();
    s2.sync.sessions.delta_messages = 1_000;
    s2.sync.sessions.delta_bytes = 10;
    drop(memory);
    let memory = Memory::open(s2).unwrap();
    append("fifth: jabuticaba");
    assert_eq!(
        memory.search("jabuticaba", &sessions).unwrap().hits.len(),
        1
    );
    // An explicit sync indexes every change regardless.
    append("sixth: lychee");
    let mut s3 = memory.settings().clone();
    s3.sync.sessions.delta_bytes = 1 << 40;
    drop(memory);
    let memory = Memory::open(s3).unwrap();
    assert!(memory.search("lychee", &sessions).unwrap().hits.is_empty());
    memory.sync(false, &|_| {}).unwrap();
    assert_eq!(memory.search("lychee", &sessions).unwrap().hits.len(), 1);
}

#[test]
fn sessions_corpus_while_sessions_are_off_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let memory = Memory::open(settings(tmp.path())).unwrap();
    let response = memory
        .search(
            "anything",
            &SearchOptions {
                corpus: Corpus::Sessions,
                ..SearchOptions::default()
            },
        )
        .unwrap();
    assert!(response.hits.is_empty());
    assert!(response
        .warning
        .unwrap()
        .contains("experimental.sessionMemory"));
}

#[test]
fn live_sessions_are_watched_from_before_their_directory_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, dir) = session_settings(tmp.path());
    fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    let live = start(s);
    write(
        &dir.join("new.jsonl"),
        &message("user", "a session begins: tamarind"),
    );
    let scratch = tmp.path().join("scratch");
    converges(&live.memory, &live.settings, &scratch, &["tamarind"]);
}

#[test]
fn other_processes_see_the_live_sync_in_status() {
    let tmp = tempfile::tempdir().unwrap();
    let s = settings(tmp.path());
    let live = start(s.clone());
    // Another `Memory` of the same agent (as `memoria status` in another process).
    let other = Memory::open(s.clone()).unwrap();
    let seen = other.status().unwrap().live.expect("live.json is read");
    assert_eq!(seen.pid, std::process::id());
    assert_eq!(seen.watcher, WatcherState::Watching);
    assert!(seen.syncs >= 1, "{seen:?}");
    let heartbeat = other.agent_root().join("live.json");
    drop(live);
    assert!(!heartbeat.exists(), "stopping removes live.json");
    assert!(other.status().unwrap().live.is_none());
    // A live sync that was killed leaves its file: status says so.
    let dead = serde_json::json!({"pid": u32::MAX, "watcher": "watching", "reason": null,
        "roots": [], "pollIntervalMs": null, "syncs": 3, "lastSyncAt": null,
        "lastSyncError": null});
    fs::write(&heartbeat, dead.to_string()).unwrap();
    let status = other.status().unwrap();
    assert!(status.live.is_none());
    assert!(
        status
            .warnings
            .iter()
            .any(|w| w.contains("ended without saying so")),
        "{:?}",
        status.warnings
    );
}

#[test]
fn a_busy_index_is_retried_while_searches_keep_answering() {
    let tmp = tempfile::tempdir().unwrap();
    let s = settings(tmp.path());
    let ws = s.workspace.clone();
    write(&ws.join("memory/a.md"), "Old note: walnut.\n");
    let live = start(s);
    // Another writer (as `memoria index` in another process) holds the lock.
    let other = Memory::open(live.settings.clone()).unwrap();
    let lock = memoria::internals::hold_writer_lock(&other).unwrap();
    write(&ws.join("memory/b.md"), "New note: hazelnut.\n");
    let started = Instant::now();
    while !live.events.lock().unwrap().iter().any(|e| e == "Busy") {
        assert!(started.elapsed() < CONVERGE_WITHIN, "{:?}", live.events);
        // Searches answer from the last index meanwhile.
        assert_eq!(found(&live.memory, "walnut").len(), 1);
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(found(&live.memory, "hazelnut").is_empty());
    drop(lock);
    let scratch = tmp.path().join("scratch");
    converges(
        &live.memory,
        &live.settings,
        &scratch,
        &["hazelnut", "walnut"],
    );
}

/// A workspace moved away fails the live sync, and searches say their results are stale;
/// moved back unchanged, the failure clears within a watcher cycle (the change retries at
/// once instead of after the backoff, and a check that finds the index matching clears the
/// error), not at the next edit (issue 45).
#[test]
fn a_workspace_moved_away_and_back_clears_its_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let s = settings(tmp.path());
    write(&s.workspace.join("memory/a.md"), "A note on quinces.\n");
    let live = start(s.clone());
    let stale = |memory: &Memory| {
        let payload = memory.memory_search("quinces", &all_hits());
        let payload = serde_json::to_value(&payload).unwrap();
        payload["fallback"]["from"] == "sync"
    };
    let until = |what: &str, done: &dyn Fn() -> bool| {
        let started = Instant::now();
        while !done() {
            assert!(
                started.elapsed() < CONVERGE_WITHIN,
                "{what}: not within {CONVERGE_WITHIN:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let away = tmp.path().join("away");
    fs::rename(&s.workspace, &away).unwrap();
    until("the failure said", &|| stale(&live.memory));
    let error = live.memory.status().unwrap().live.unwrap().last_sync_error;
    assert!(error.is_some_and(|e| e.contains("does not exist")));
    // Long enough for the backoff to have grown past a few seconds.
    std::thread::sleep(Duration::from_secs(6));
    fs::rename(&away, &s.workspace).unwrap();
    let started = Instant::now();
    until("the failure cleared", &|| {
        !stale(&live.memory)
            && live
                .memory
                .status()
                .unwrap()
                .live
                .unwrap()
                .last_sync_error
                .is_none()
    });
    eprintln!("cleared {:?} after the move back", started.elapsed());
}
