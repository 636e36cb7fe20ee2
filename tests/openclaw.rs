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

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[path = "support/bounded.rs"]
mod bounded;
use bounded::run_bounded;

/// The end-to-end run's limit in seconds (it takes 1 to 3 minutes on 2 cores, depending on
/// their load); `MEMORIA_OPENCLAW_TEST_TIMEOUT_S` overrides it.
const E2E_LIMIT_S: u64 = 600;
/// The unit tests' limit (they take a few seconds).
const UNIT_LIMIT: Duration = Duration::from_secs(120);

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
