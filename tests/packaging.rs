//! memoria as a user without Rust installs it: `scripts/dist` packs this build's binary
//! into the npm packages, and `packaging/npm/test/install.mjs` publishes them to a real npm
//! registry on loopback (verdaccio), installs the front package in a clean project
//! (`memoria --version`, an MCP session through `npx`), and installs the OpenClaw plugin from
//! that registry into a clean OpenClaw state, whose gateway then answers `memory_search`
//! through the binary the plugin's dependency brought.
//!
//! The binary packed is the one `cargo test` built (the release artifacts come from
//! `cargo build --release`; the packaging is the same). It needs verdaccio
//! (`MEMORIA_TEST_VERDACCIO`, the directory `.ci/run` installs it in), OpenClaw's Node
//! (`OPENCLAW_NODE`, and `OPENCLAW_ENTRY` for the plugin part), npm and objcopy; without
//! them it prints a note and passes, like the other real-dependency tests.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

#[path = "support/bounded.rs"]
mod bounded;
use bounded::run_bounded;

/// The whole run's limit (about two minutes on two cores).
const LIMIT: Duration = Duration::from_secs(600);

/// What the test needs, or why it cannot run.
fn prerequisites() -> Result<(PathBuf, PathBuf), String> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    let verdaccio = var("MEMORIA_TEST_VERDACCIO")
        .filter(|d| d.join("node_modules/verdaccio/bin/verdaccio").is_file())
        .ok_or("verdaccio not installed (MEMORIA_TEST_VERDACCIO unset)")?;
    let node = var("OPENCLAW_NODE")
        .filter(|n| n.is_file())
        .ok_or("no Node 24 (OPENCLAW_NODE unset)")?;
    for tool in ["npm", "objcopy"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Err(format!("{tool} is not on PATH"));
        }
    }
    Ok((verdaccio, node))
}

#[test]
fn npm_packages_install_from_a_registry_and_run() {
    let (verdaccio, node) = match prerequisites() {
        Ok(found) => found,
        Err(why) => {
            eprintln!("skipped: {why}; .ci/run installs what the npm install test needs");
            return;
        }
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let dist = Command::new(root.join("scripts/dist"))
        .args(["--binary", env!("CARGO_BIN_EXE_memoria"), "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        dist.status.success(),
        "scripts/dist failed: {}",
        String::from_utf8_lossy(&dist.stderr)
    );
    let mut cmd = Command::new(&node);
    cmd.arg(root.join("packaging/npm/test/install.mjs"))
        .arg(&verdaccio)
        .arg(out.path().join("npm"));
    let run = run_bounded(cmd, LIMIT);
    assert!(
        run.ok() && run.fails().is_empty() && run.lines.iter().any(|l| l.starts_with("PASS")),
        "{}",
        run.summary()
    );
}
