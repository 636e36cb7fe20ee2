//! memoria as users install it, from the packages the release makes:
//!
//! - **npm**: `scripts/dist` packs this build's binary into the npm packages, and
//!   `packaging/npm/test/install.mjs` publishes them to a real npm registry on loopback
//!   (verdaccio), installs the front package in a clean project (`memoria --version`, an MCP
//!   session through `npx`), and installs the OpenClaw plugin from that registry into a clean
//!   OpenClaw state, whose gateway then answers `memory_search` through the binary the
//!   plugin's dependency brought.
//! - **PyPI**: the wheel `scripts/dist` makes with maturin installs offline into a fresh
//!   virtual environment, whose `memoria` answers `--version` and serves an MCP session to
//!   the official Python SDK; `uvx` runs it too.
//! - **crates.io**: `cargo package` (which builds the packaged crate, as crates.io's upload
//!   does), then `cargo install --offline --locked` from that package (when
//!   `MEMORIA_TEST_PACKAGE_CRATE` is set: it builds memoria itself once more).
//!
//! The build packed is the one `cargo test` made (the release artifacts come from
//! `cargo build --release`; the packaging is the same). The tools come from `.ci/run`:
//! verdaccio (`MEMORIA_TEST_VERDACCIO`), OpenClaw's Node (`OPENCLAW_NODE`, `OPENCLAW_ENTRY`),
//! maturin and uv (`MEMORIA_TEST_MATURIN`, `MEMORIA_TEST_UV`), the MCP SDK
//! (`MEMORIA_TEST_MCP_PYTHON`), and npm, objcopy and python3 on `PATH`; a test without what
//! it needs prints a note and passes, like the other real-dependency tests. The three run one
//! at a time (each is heavy: a registry and a gateway, a build).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use serde_json::json;

#[path = "support/bounded.rs"]
mod bounded;
use bounded::run_bounded;
#[path = "support/mcp_session.rs"]
mod mcp_session;
use mcp_session::mcp_session;

/// What `memoria --version` prints.
const VERSION: &str = concat!("memoria ", env!("CARGO_PKG_VERSION"));

/// The npm run's limit (about two minutes on two cores).
const NPM_LIMIT: Duration = Duration::from_secs(600);

/// The crate's limit: `cargo package` builds memoria itself once more (about 5 minutes on
/// two cores; the dependencies are already built). That build is the one `scripts/dist`'s
/// maturin finds fresh: built otherwise (unoptimised, say), maturin builds it instead.
const CRATE_LIMIT: Duration = Duration::from_secs(1500);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One test at a time.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn var_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).map(PathBuf::from)
}

fn on_path(tool: &str) -> Result<(), String> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    found.then_some(()).ok_or(format!("{tool} is not on PATH"))
}

/// `scripts/dist`'s output for this build, made once for the tests that need it (with the
/// wheel when maturin is at hand).
fn dist() -> Result<&'static Path, String> {
    static DIST: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIST.get_or_init(|| {
        on_path("objcopy")?;
        // The profile whose binary this is: target/debug (dev) when `cargo test`, else
        // target/release.
        let binary = Path::new(env!("CARGO_BIN_EXE_memoria"));
        let profile = match binary.parent().and_then(|p| p.file_name()) {
            Some(dir) if dir == "debug" => "dev".to_string(),
            Some(dir) => dir.to_string_lossy().into_owned(),
            None => return Err(format!("no profile directory for {}", binary.display())),
        };
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("packaging-dist");
        let mut cmd = Command::new(root().join("scripts/dist"));
        cmd.args(["--profile", &profile, "--out"]).arg(&out);
        match var_path("MEMORIA_TEST_MATURIN") {
            Some(maturin) => cmd.env("MATURIN", maturin),
            // No maturin from .ci/run: no wheel, not one from another maturin on PATH.
            None => cmd.env("MATURIN", "no-maturin-for-this-test"),
        };
        let run = cmd.output().map_err(|e| format!("scripts/dist: {e}"))?;
        assert!(
            run.status.success(),
            "scripts/dist failed: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        Ok(out)
    })
    .as_deref()
    .map_err(Clone::clone)
}

fn skip(what: &str, why: &str) {
    eprintln!("skipped: {why}; .ci/run installs what the {what} test needs");
}

#[test]
fn npm_packages_install_from_a_registry_and_run() {
    let _one = one_at_a_time();
    let prerequisites = || -> Result<_, String> {
        let verdaccio = var_path("MEMORIA_TEST_VERDACCIO")
            .filter(|d| d.join("node_modules/verdaccio/bin/verdaccio").is_file())
            .ok_or("verdaccio not installed (MEMORIA_TEST_VERDACCIO unset)")?;
        let node = var_path("OPENCLAW_NODE")
            .filter(|n| n.is_file())
            .ok_or("no Node 24 (OPENCLAW_NODE unset)")?;
        on_path("npm")?;
        Ok((verdaccio, node, dist()?))
    };
    let (verdaccio, node, dist) = match prerequisites() {
        Ok(found) => found,
        Err(why) => return skip("npm install", &why),
    };
    let mut cmd = Command::new(&node);
    cmd.arg(root().join("packaging/npm/test/install.mjs"))
        .arg(&verdaccio)
        .arg(dist.join("npm"));
    let run = run_bounded(cmd, NPM_LIMIT);
    assert!(
        run.ok() && run.fails().is_empty() && run.lines.iter().any(|l| l.starts_with("PASS")),
        "{}",
        run.summary()
    );
}

/// `program args…`'s stdout, the command required to succeed.
fn stdout_of(program: &Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}",
        program.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_wheel_installs_offline_and_serves_mcp() {
    let _one = one_at_a_time();
    let prerequisites = || -> Result<_, String> {
        var_path("MEMORIA_TEST_MATURIN")
            .ok_or("maturin not installed (MEMORIA_TEST_MATURIN unset)")?;
        let sdk = var_path("MEMORIA_TEST_MCP_PYTHON")
            .ok_or("no MCP SDK (MEMORIA_TEST_MCP_PYTHON unset)")?;
        on_path("python3")?;
        Ok((sdk, dist()?))
    };
    let (sdk, dist) = match prerequisites() {
        Ok(found) => found,
        Err(why) => return skip("wheel", &why),
    };
    let wheels: Vec<PathBuf> = std::fs::read_dir(dist.join("pypi"))
        .map(|dir| dir.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let [wheel] = wheels.as_slice() else {
        panic!("scripts/dist made no single wheel with maturin: {wheels:?}");
    };

    // A fresh virtual environment, the wheel installed from its file alone.
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv");
    stdout_of(
        Path::new("python3"),
        &["-m", "venv", &venv.to_string_lossy()],
    );
    let pip = venv.join("bin/pip");
    stdout_of(
        &pip,
        &[
            "install",
            "--no-index",
            "--no-deps",
            "--quiet",
            &wheel.to_string_lossy(),
        ],
    );
    let memoria = venv.join("bin/memoria");
    assert_eq!(stdout_of(&memoria, &["--version"]).trim(), VERSION);
    // The same binary as the tarball's and the npm package's.
    let packed = dist.join("npm/linux-x64-gnu/bin/memoria");
    if packed.is_file() {
        assert!(
            std::fs::read(&memoria).unwrap() == std::fs::read(&packed).unwrap(),
            "the wheel's binary differs from the npm package's"
        );
    }

    // An MCP session with the official SDK, on a copy of the bundled example workspace.
    let ws = tmp.path().join("ws");
    let example = root().join("examples/workspace");
    stdout_of(
        Path::new("cp"),
        &["-R", &example.to_string_lossy(), &ws.to_string_lossy()],
    );
    let args = vec![
        "--state-dir".to_string(),
        tmp.path().join("state").display().to_string(),
        "--workspace".into(),
        ws.display().to_string(),
        "--provider".into(),
        "none".into(),
        "mcp".into(),
    ];
    let calls =
        json!([{"name": "memory_search", "arguments": {"query": "postgres cutover downtime"}}]);
    let session = mcp_session(&sdk.to_string_lossy(), tmp.path(), &memoria, &args, calls);
    assert_eq!(session["serverName"], "memoria", "{session}");
    let call = &session["calls"][0]["result"];
    assert_eq!(call["isError"], false, "{session}");
    let results = call["structured"]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        results
            .iter()
            .any(|r| r["path"].as_str().is_some_and(|p| p.ends_with(".md"))),
        "no result from the wheel's memoria: {session}"
    );

    // `uvx --from WHEEL memoria`, offline, as the README's uvx line runs it from PyPI.
    match var_path("MEMORIA_TEST_UV") {
        Some(uv) => {
            let uvx = stdout_of(
                &uv,
                &[
                    "tool",
                    "run",
                    "--offline",
                    "--cache-dir",
                    &tmp.path().join("uv").to_string_lossy(),
                    "--from",
                    &wheel.to_string_lossy(),
                    "memoria",
                    "--version",
                ],
            );
            assert_eq!(uvx.trim(), VERSION);
        }
        None => eprintln!("uvx not tried: uv not installed (MEMORIA_TEST_UV unset)"),
    }
}

#[test]
fn the_packaged_crate_installs_offline() {
    // `cargo package` builds memoria itself again each time: CI asks for it.
    if std::env::var_os("MEMORIA_TEST_PACKAGE_CRATE").is_none() {
        return skip("packaged crate", "MEMORIA_TEST_PACKAGE_CRATE unset");
    }
    let _one = one_at_a_time();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // The target directory of this build, so the dependencies are not built again.
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap();
    // Both builds below write the packaged crate's binary where cargo keeps this build's
    // (`target/debug/memoria`, which the test binaries after this one run): a second name
    // for this build's file keeps it, and it is put back whatever happens.
    let ours = Path::new(env!("CARGO_BIN_EXE_memoria"));
    let inode =
        |path: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap());
    let before = inode(ours);
    let kept = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("memoria-of-this-build");
    let _ = std::fs::remove_file(&kept);
    std::fs::hard_link(ours, &kept).unwrap();
    let restore = PutBack {
        kept: &kept,
        to: ours,
    };

    let mut package = Command::new(&cargo);
    package
        .current_dir(root())
        .args([
            "package",
            "--offline",
            "--locked",
            "--allow-dirty",
            "--target-dir",
        ])
        .arg(&target);
    let run = run_bounded(package, CRATE_LIMIT);
    assert!(run.ok(), "cargo package: {}", run.summary());

    let unpacked = target.join(format!(
        "package/{}-{}",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_PKG_VERSION")
    ));
    let tmp = tempfile::tempdir().unwrap();
    let mut install = Command::new(&cargo);
    install
        .args(["install", "--offline", "--locked", "--debug", "--path"])
        .arg(&unpacked)
        .arg("--root")
        .arg(tmp.path())
        .arg("--target-dir")
        .arg(&target);
    let run = run_bounded(install, CRATE_LIMIT);
    assert!(run.ok(), "cargo install: {}", run.summary());
    let version = stdout_of(&tmp.path().join("bin/memoria"), &["--version"]);
    assert_eq!(version.trim(), VERSION);
    drop(restore);
    assert_eq!(inode(ours), before, "this build's binary was not put back");
}

/// Puts `kept` back at `to` when dropped (a rename: the file cargo linked there is left
/// to cargo).
struct PutBack<'a> {
    kept: &'a Path,
    to: &'a Path,
}

impl Drop for PutBack<'_> {
    fn drop(&mut self) {
        if let Err(e) = std::fs::rename(self.kept, self.to) {
            eprintln!(
                "could not put {} back from {}: {e}",
                self.to.display(),
                self.kept.display()
            );
        }
    }
}
