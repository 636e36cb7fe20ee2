//! The local calendar the daily logs follow: today, and the files a session reads at start.
//! `append`, `context` and `flush-plan` use it, and the MCP tools behind them.

use serde::Serialize;

use memoria::Memory;

/// Today in the user's time zone, `YYYY-MM-DD`: the daily log of the moment.
pub fn today() -> String {
    jiff::Zoned::now().date().to_string()
}

/// A file a session reads at start.
#[derive(Debug, Serialize)]
pub struct ContextFile {
    /// Relative to the workspace: `MEMORY.md`, `memory/YYYY-MM-DD.md`.
    pub path: String,
    /// The whole file.
    pub text: String,
}

/// What a session reads at start (the memory docs' routine): yesterday's and today's daily
/// logs (local dates), and `MEMORY.md` first in a private main session only; the files that
/// exist.
pub fn session_context(memory: &Memory, private: bool) -> Vec<ContextFile> {
    let today = jiff::Zoned::now().date();
    let mut days: Vec<String> = today
        .yesterday()
        .map(|d| d.to_string())
        .into_iter()
        .collect();
    days.push(today.to_string());
    memory
        .context(&days, private)
        .into_iter()
        .map(|file| ContextFile {
            path: file.path,
            text: file.text,
        })
        .collect()
}
