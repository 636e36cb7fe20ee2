//! An MCP session with the official Python SDK: `tests/mcp_client.py` (run by the
//! interpreter `MEMORIA_TEST_MCP_PYTHON` names) against a `memoria … mcp` command.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

/// Runs `command args…` as an MCP server for the client, which makes `calls` in order; the
/// client's JSON report (server info, tools, each call's result or error). The spec file is
/// written in `dir`.
pub fn mcp_session(
    python: &str,
    dir: &Path,
    command: &Path,
    args: &[String],
    calls: Value,
) -> Value {
    let spec = json!({
        "command": command,
        "args": args,
        "env": {"MEMORIA_LOG": "warn"},
        "calls": calls,
    });
    let spec_file = dir.join(format!(
        "spec-{}.json",
        calls.as_array().map_or(0, Vec::len)
    ));
    std::fs::write(&spec_file, spec.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(&spec_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|err| {
        panic!(
            "client output is not JSON ({err}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}
