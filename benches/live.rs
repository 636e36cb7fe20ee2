//! Live memory: how soon a change on disk is searchable, and what a resting `memoria mcp`
//! costs.
//!
//! 1. **Change → searchable.** A live sync (watcher on, the default `sync.watchDebounceMs`
//!    of 1,500 ms) over a copy of the bundled example workspace; each round writes a new
//!    daily note with a unique word, then searches for it every 20 ms until it is found.
//!    The time is from the write returning to the first search that finds it.
//! 2. **A resting server.** `memoria mcp` (the release binary) serving one agent, then
//!    two: after `initialize` and one search per agent (the model is loaded and warm), its
//!    CPU time over 60 s of idling with the watcher on, and its resident memory.
//!
//! With `MEMORIA_TEST_MODEL_DIR` set both use EmbeddingGemma on the CPU (the change must
//! also be embedded; searches are hybrid); without it, keyword-only.
//! `MEMORIA_BENCH_IDLE_SECONDS` shortens the idle window.
//!
//! `cargo bench --bench live` on the 2-core development VM (2026-11-22), with the model:
//! see the numbers in the closing note of issue 11 and `docs/ARCHITECTURE.md`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memoria::config::{Env, ProviderKind, Settings};
use memoria::{EmbedderChoice, Memory, SearchOptions};
use serde_json::{json, Value};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn example_copy(to: &Path) {
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workspace"),
        to,
    );
}

fn model_dir() -> Option<PathBuf> {
    std::env::var_os("MEMORIA_TEST_MODEL_DIR").map(PathBuf::from)
}

fn percentiles(mut ms: Vec<f64>) -> (f64, f64, f64) {
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.9), at(1.0))
}

fn change_to_searchable(root: &Path) {
    let env = Env {
        home: Some(root.to_path_buf()),
        state_dir: Some(root.join("state")),
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    let mut settings = Settings::builtin("live", &env);
    settings.workspace = root.join("ws");
    example_copy(&settings.workspace);
    let choice = match model_dir() {
        Some(dir) => {
            settings.provider = ProviderKind::Local;
            EmbedderChoice::FromSettings {
                model_dir: Some(dir),
                precision: None,
            }
        }
        None => {
            settings.provider = ProviderKind::None;
            EmbedderChoice::FromSettings {
                model_dir: None,
                precision: None,
            }
        }
    };
    let debounce = settings.sync.watch_debounce_ms;
    let memory = Arc::new(Memory::open_with(settings.clone(), choice).expect("open"));
    let live = memory.start_live(|_| {}).expect("start_live");
    let options = SearchOptions {
        min_score: Some(0.0),
        ..SearchOptions::default()
    };
    // The first search waits for the first index.
    let mode = memory.memory_search("postgres", &options).mode;
    let mut times = Vec::new();
    for round in 0..15 {
        let word = format!("quokka{round}zebra");
        let path = settings
            .workspace
            .join(format!("memory/2026-12-{:02}.md", round + 1));
        std::fs::write(
            &path,
            format!("# Day {round}\n\nSaw a {word} at the zoo.\n"),
        )
        .expect("write");
        let written = Instant::now();
        loop {
            let hits = memory.search(&word, &options).expect("search").hits;
            if hits.iter().any(|h| h.text.contains(&word)) {
                break;
            }
            assert!(
                written.elapsed() < Duration::from_secs(60),
                "never found {word}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        times.push(written.elapsed().as_secs_f64() * 1e3);
        // Let the watcher settle between rounds, as between an agent's writes.
        std::thread::sleep(Duration::from_millis(300));
    }
    live.stop();
    let (p50, p90, max) = percentiles(times);
    println!(
        "change on disk -> searchable (mode {}, debounce {debounce} ms, 15 changes): p50 {p50:.0} \
         ms, p90 {p90:.0} ms, max {max:.0} ms; target p50 <= {} ms",
        mode.as_deref().unwrap_or("?"),
        debounce + 500
    );
}

/// A `memoria mcp` child and its pipes.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(args: &[String]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_memoria"))
            .args(args)
            .arg("mcp")
            .env_remove("OPENCLAW_CONFIG_PATH")
            .env_remove("OPENCLAW_STATE_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn memoria mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Server {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        );
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write to the server");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("read");
            assert!(n > 0, "the server closed stdout");
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// (user + system CPU seconds, resident set in MiB) from /proc.
    fn usage(&self) -> (f64, f64) {
        let pid = self.child.id();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
        let cpu = ticks(11).unwrap_or(0.0) + ticks(12).unwrap_or(0.0);
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let rss_kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(0.0);
        (cpu / 100.0, rss_kb / 1024.0)
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn resting_server(root: &Path, agents: &[&str]) {
    let mut config_agents = Vec::new();
    for id in agents {
        let ws = root.join(format!("ws-{id}"));
        example_copy(&ws);
        config_agents.push(json!({"id": id, "workspace": ws}));
    }
    let config = root.join("openclaw.json");
    std::fs::write(
        &config,
        json!({"agents": {"list": config_agents}}).to_string(),
    )
    .expect("config");
    let mut args = vec![
        "--state-dir".to_string(),
        root.join("state").display().to_string(),
        "--config".into(),
        config.display().to_string(),
    ];
    match model_dir() {
        Some(dir) => args.extend([
            "--provider".into(),
            "local".into(),
            "--model".into(),
            dir.display().to_string(),
        ]),
        None => args.extend(["--provider".into(), "none".into()]),
    }
    for id in agents {
        args.extend(["--agent".into(), id.to_string()]);
    }
    let mut server = Server::start(&args);
    let started = Instant::now();
    for id in agents {
        let response = server.request(
            "tools/call",
            json!({"name": "memory_search", "arguments": {"query": "postgres cutover", "agent": id}}),
        );
        assert_eq!(response["result"]["isError"], false, "{response}");
    }
    let warm = started.elapsed().as_secs_f64();
    let idle: u64 = std::env::var("MEMORIA_BENCH_IDLE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let (cpu0, _) = server.usage();
    std::thread::sleep(Duration::from_secs(idle));
    let (cpu1, rss) = server.usage();
    println!(
        "memoria mcp serving {} agent(s): first searches answered after {warm:.1} s; idle CPU \
         over {idle} s with the watcher on: {:.2}% of a core ({:.2} CPU s); RSS {rss:.0} MiB",
        agents.len(),
        (cpu1 - cpu0) / idle as f64 * 100.0,
        cpu1 - cpu0
    );
    server.stop();
}

fn main() {
    let tmp = std::env::temp_dir().join(format!("memoria-bench-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    match model_dir() {
        Some(dir) => println!("EmbeddingGemma from {}", dir.display()),
        None => println!("MEMORIA_TEST_MODEL_DIR not set: keyword-only"),
    }
    change_to_searchable(&tmp.join("change"));
    resting_server(&tmp.join("one"), &["a"]);
    resting_server(&tmp.join("two"), &["a", "b"]);
    let _ = std::fs::remove_dir_all(&tmp);
}
