//! The OpenClaw memory plugin (`integrations/openclaw`) against a real OpenClaw gateway:
//! runs `integrations/openclaw/test/e2e.mjs` with this build's `memoria`, on the Node and
//! the `openclaw@2026.9.6` that `scripts/install-openclaw` installs (`.ci/run` does, and
//! exports `OPENCLAW_NODE` / `OPENCLAW_ENTRY`). The script checks the install and memory
//! slot, `memory_search` / `memory_get` through `POST /tools/invoke`, parity with
//! `memoria search --json` over 27 queries, session transcripts, restarts, the CLI, status
//! and shutdown; with `MEMORIA_TEST_MODEL_DIR` set it repeats the parity checks with the
//! real model (hybrid). Its `PASS`/`FAIL` lines are printed as they come (shown with
//! `--nocapture`, or on failure).
//!
//! Without OpenClaw installed the test prints a note and passes, like the other
//! real-dependency tests. The plugin's unit tests (`node --test`, no OpenClaw needed) run
//! as a second test, on `OPENCLAW_NODE` or else a `node` on `PATH`.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// The end-to-end run's limit in seconds (it takes 1 to 3 minutes on 2 cores, depending on
/// their load); `MEMORIA_OPENCLAW_TEST_TIMEOUT_S` overrides it.
const E2E_LIMIT_S: u64 = 600;
/// The unit tests' limit (they take a few seconds).
const UNIT_LIMIT: Duration = Duration::from_secs(120);
/// After SIGTERM, how long the script gets to take its gateway down before SIGKILL.
const GRACE: Duration = Duration::from_secs(20);

fn plugin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("integrations/openclaw")
}

/// `OPENCLAW_NODE` and `OPENCLAW_ENTRY`, when both are set and name files; else why not.
fn openclaw() -> Result<(PathBuf, PathBuf), String> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    match (var("OPENCLAW_NODE"), var("OPENCLAW_ENTRY")) {
        (Some(node), Some(entry)) if node.is_file() && entry.is_file() => Ok((node, entry)),
        (node, entry) => Err(format!(
            "OpenClaw not installed (OPENCLAW_NODE={node:?}, OPENCLAW_ENTRY={entry:?})"
        )),
    }
}

/// What a bounded run printed (stdout and stderr, line by line) and how it ended.
struct Run {
    lines: Vec<String>,
    status: Option<ExitStatus>,
    timed_out: bool,
    elapsed: Duration,
}

impl Run {
    fn fails(&self) -> Vec<&str> {
        self.lines
            .iter()
            .map(String::as_str)
            .filter(|l| l.starts_with("FAIL") || l.starts_with("not ok"))
            .collect()
    }

    fn summary(&self) -> String {
        let ending = match (self.timed_out, self.status) {
            (true, _) => format!("killed after the {} s limit", self.elapsed.as_secs()),
            (false, Some(s)) => format!("{s} after {:.1} s", self.elapsed.as_secs_f64()),
            (false, None) => "no exit status".to_string(),
        };
        let tail: Vec<&str> = self
            .lines
            .iter()
            .rev()
            .take(3)
            .rev()
            .map(String::as_str)
            .collect();
        format!(
            "{ending}\n{}\n--- last lines ---\n{}",
            self.fails().join("\n"),
            tail.join("\n")
        )
    }

    fn ok(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }
}

/// Forwards each line of `from` to `tx`.
fn pump(from: impl Read + Send + 'static, tx: mpsc::Sender<String>) {
    thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
}

/// Runs `cmd`, printing its output line by line as it comes, for at most `limit`: then
/// SIGTERM (the e2e script then kills its gateway's process group), and SIGKILL after
/// [`GRACE`].
fn run_bounded(mut cmd: Command, limit: Duration) -> Run {
    let started = Instant::now();
    let mut child: Child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let (tx, rx) = mpsc::channel();
    pump(child.stdout.take().unwrap(), tx.clone());
    pump(child.stderr.take().unwrap(), tx);
    let mut lines = Vec::new();
    let mut timed_out = false;
    let mut termed_at: Option<Instant> = None;
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                println!("{line}");
                lines.push(line);
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // Both pipes closed: the process is exiting (or closed them); poll gently.
            Err(mpsc::RecvTimeoutError::Disconnected) => thread::sleep(Duration::from_millis(100)),
        }
        if let Some(status) = child.try_wait().unwrap() {
            // Whatever is still in the pipes.
            while let Ok(line) = rx.recv_timeout(Duration::from_millis(500)) {
                println!("{line}");
                lines.push(line);
            }
            break Some(status);
        }
        match termed_at {
            None if started.elapsed() > limit => {
                timed_out = true;
                termed_at = Some(Instant::now());
                let line = format!(
                    "FAIL time limit: still running after {} s; sent SIGTERM to pid {}",
                    limit.as_secs(),
                    child.id()
                );
                println!("{line}");
                lines.push(line);
                // SAFETY: kill(2) on the pid of our own child, which has not been reaped.
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            }
            Some(at) if at.elapsed() > GRACE => {
                let _ = child.kill();
                break child.wait().ok();
            }
            _ => {}
        }
    };
    Run {
        lines,
        status,
        timed_out,
        elapsed: started.elapsed(),
    }
}

#[test]
fn openclaw_gateway_end_to_end() {
    let (node, entry) = match openclaw() {
        Ok(paths) => paths,
        Err(why) => {
            eprintln!(
                "skipped: {why}; run scripts/install-openclaw and \
                 `eval \"$(scripts/install-openclaw --env)\"` (.ci/run does) to run the \
                 OpenClaw end-to-end test"
            );
            return;
        }
    };
    let mut cmd = Command::new(&node);
    cmd.arg(plugin_dir().join("test/e2e.mjs"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("MEMORIA_BIN", env!("CARGO_BIN_EXE_memoria"))
        .env("OPENCLAW_NODE", &node)
        .env("OPENCLAW_ENTRY", &entry);
    if std::env::var_os("MEMORIA_TEST_MODEL_DIR").is_none() {
        eprintln!(
            "note: MEMORIA_TEST_MODEL_DIR is not set; the OpenClaw test skips its hybrid parity run"
        );
    }
    let limit = std::env::var("MEMORIA_OPENCLAW_TEST_TIMEOUT_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(E2E_LIMIT_S);
    let run = run_bounded(cmd, Duration::from_secs(limit));
    let summary_line = run
        .lines
        .iter()
        .rev()
        .find(|l| l.ends_with(" failed") && l.contains(" passed, "));
    assert!(
        run.ok() && summary_line.is_some_and(|l| l.ends_with(" 0 failed")),
        "OpenClaw end-to-end test failed: {}",
        run.summary()
    );
}

#[test]
fn openclaw_plugin_unit_tests() {
    // OpenClaw's Node when installed, else any `node` on PATH (the unit tests need >= 18).
    let node = match openclaw() {
        Ok((node, _)) => node.into_os_string(),
        Err(_) => "node".into(),
    };
    let version = Command::new(&node).arg("--version").output();
    let major = version
        .as_ref()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            let v = String::from_utf8_lossy(&o.stdout);
            v.trim()
                .trim_start_matches('v')
                .split('.')
                .next()?
                .parse::<u32>()
                .ok()
        });
    match major {
        Some(m) if m >= 18 => {}
        _ => {
            eprintln!("skipped: no Node >= 18 for the OpenClaw plugin's unit tests ({node:?}: {version:?})");
            return;
        }
    }
    let mut cmd = Command::new(&node);
    cmd.arg("--test")
        .arg(plugin_dir().join("test/unit.test.mjs"))
        .current_dir(plugin_dir());
    let run = run_bounded(cmd, UNIT_LIMIT);
    assert!(
        run.ok(),
        "OpenClaw plugin unit tests failed: {}",
        run.summary()
    );
}
