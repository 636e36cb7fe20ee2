//! Human output shared by several commands: `status`, the live sync's log lines (`watch`,
//! `mcp`), the watcher's state (`status`, `doctor`, the log lines) and counts.

use std::fmt::Write;

use memoria::{LiveEvent, LiveStatus, Status, StoreCache, WatcherState};

/// `n noun` or `n nouns`.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// What the watcher is doing, in a word: `watching`, `polling` or `off`.
pub fn watcher(state: WatcherState) -> &'static str {
    match state {
        WatcherState::Watching => "watching",
        WatcherState::Polling => "polling",
        WatcherState::Off => "off",
    }
}

/// `memoria status`, one `name  value` line per fact.
pub fn status(status: &Status) -> String {
    let mut out = String::new();
    let mut line = |name: &str, value: &dyn std::fmt::Display| {
        let _ = writeln!(out, "{name:<12} {value}");
    };
    line("agent", &status.agent_id);
    line("agent dir", &status.agent_dir);
    line("store", &status.store);
    if let Some(cache) = &status.store_cache {
        line("store cache", &store_cache(cache));
    }
    line("workspace", &status.workspace);
    if !status.extra_paths.is_empty() {
        line("extra paths", &status.extra_paths.join(", "));
    }
    match status.generation {
        Some(generation) => line("generation", &generation),
        None => line("generation", &"(none yet)"),
    }
    line("files", &status.files);
    line("chunks", &status.chunks);
    line("bytes", &status.bytes);
    line(
        "chunking",
        &format!(
            "{} tokens, {} overlap; sources {}",
            status.identity.chunk_tokens,
            status.identity.chunk_overlap,
            status.identity.sources.join(",")
        ),
    );
    line(
        "semantics",
        &format!("{}; temporal decay {}", status.semantics, status.decay),
    );
    line("ranking", &status.ranking);
    if let Some(qmd) = &status.qmd {
        line(
            "backend",
            &format!(
                "qmd ({}; now answering: {}); collections {}",
                qmd.command,
                qmd.serving,
                qmd.collections.join(",")
            ),
        );
    }
    line(
        "mode",
        &format!("{} (provider {})", status.mode, status.provider),
    );
    if let Some(fallback) = &status.fallback {
        line(
            "fallback",
            &format!("from {}: {}", fallback.from, fallback.reason),
        );
    }
    for (name, value) in embedding(status) {
        line(name, &value);
    }
    line(
        "fresh",
        &if status.dirty {
            "no: the workspace changed since the last sync"
        } else {
            "yes"
        },
    );
    for (name, value) in live(status.live.as_ref()) {
        line(name, &value);
    }
    for warning in &status.warnings {
        line("warning", warning);
    }
    out
}

/// `status`'s `store cache` line: what the process caches and how it met the agent.
fn store_cache(cache: &StoreCache) -> String {
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    let last = match (cache.last_search, cache.last_open_ms) {
        (Some("cold"), Some(ms)) => format!("; the last search opened the agent cold ({ms} ms)"),
        (Some(how), _) => format!("; the last search found the agent {how}"),
        (None, _) => String::new(),
    };
    let indexes = match cache.index_bytes {
        Some(bytes) => format!("; its indexes {:.1} MiB", mib(bytes)),
        None => String::new(),
    };
    format!(
        "{:.1} of {:.0} MiB; {} cold open(s) of this agent{last}{indexes}",
        mib(cache.used_bytes),
        mib(cache.limit_bytes),
        cache.cold_opens
    )
}

/// `status`'s lines about the embedder: its model, key, batch API and last error.
fn embedding(status: &Status) -> Vec<(&'static str, String)> {
    let mut lines = Vec::new();
    let Some(embedding) = &status.embedding else {
        if let Some(source) = &status.key_source {
            lines.push((
                "api key",
                format!("from {source} (the provider did not serve)"),
            ));
        }
        return lines;
    };
    let model = status.model.as_deref().unwrap_or("?");
    let vectors = status.vectors.unwrap_or(0);
    let device = embedding
        .device
        .as_deref()
        .map_or(String::new(), |d| format!(" on {d}"));
    lines.push((
        "model",
        format!(
            "{model} ({} dims){device}; {vectors} vectors",
            embedding.dims
        ),
    ));
    if let Some(source) = &embedding.key_source {
        lines.push(("api key", format!("from {source}")));
    }
    if let Some(batch) = &embedding.batch {
        lines.push((
            "batch API",
            format!(
                "{batch}; {} job(s) pending, {} chunk(s) waiting",
                embedding.batch_jobs, embedding.awaiting_batch
            ),
        ));
    }
    if let Some(error) = &embedding.last_error {
        lines.push(("embed error", error.clone()));
    }
    lines
}

/// `status`'s lines about the live sync: this process's or another's, and its last error.
fn live(live: Option<&LiveStatus>) -> Vec<(&'static str, String)> {
    let Some(live) = live else {
        let none = "no live sync (`memoria mcp` or `memoria watch` keep the index fresh)";
        return vec![("live", none.to_string())];
    };
    let state = match live.watcher {
        WatcherState::Off => "watcher off",
        state => watcher(state),
    };
    let mut text = format!("{state} (process {}, {} syncs", live.pid, live.syncs);
    if let Some(at) = live.last_sync_at {
        let _ = write!(
            text,
            ", last {}",
            moment(at, jiff::Timestamp::now().as_second())
        );
    }
    text.push(')');
    if let Some(reason) = &live.reason {
        let _ = write!(text, ": {reason}");
    }
    let mut lines = vec![("live", text)];
    if let Some(error) = &live.last_sync_error {
        lines.push(("live error", error.clone()));
    }
    lines
}

/// One log line for a live-sync event (`watch` and `mcp` print them on stderr).
pub fn live_line(event: &LiveEvent) -> String {
    let now = clock();
    match event {
        LiveEvent::Synced(report) => {
            let mut line = format!(
                "{now} synced: {} ({} changed, {} removed), {}",
                count(report.files as u64, "file"),
                report.indexed,
                report.removed,
                count(report.chunks, "chunk")
            );
            if report.embedded + report.cached > 0 {
                let _ = write!(
                    line,
                    ", {} embedded, {} reused",
                    report.embedded, report.cached
                );
            }
            let _ = write!(line, " in {:.2}s", report.seconds);
            if report.deferred > 0 {
                let _ = write!(
                    line,
                    "; {} transcript(s) below sync.sessions thresholds wait",
                    report.deferred
                );
            }
            if let Some(error) = &report.embed_error {
                let _ = write!(line, "; embedding failed: {error}");
            }
            for warning in &report.warnings {
                let _ = write!(line, "\n{now} warning: {warning}");
            }
            line
        }
        LiveEvent::Failed(error) => format!("{now} sync failed (retrying with backoff): {error}"),
        LiveEvent::Busy => {
            format!("{now} index busy: another process is writing; retrying in 2 s")
        }
        LiveEvent::Watcher(status) => {
            let mut line = format!("{now} watcher {}", watcher(status.watcher));
            if !status.roots.is_empty() {
                let _ = write!(line, ": {}", status.roots.join(", "));
            }
            if let Some(reason) = &status.reason {
                let _ = write!(line, " ({reason})");
            }
            line
        }
    }
}

/// A past moment (seconds since the Unix epoch) as a reader takes it in: the local date
/// and time, and how long ago (`2026-11-25 23:14:05 CET, 3 min ago`).
fn moment(at: u64, now: i64) -> String {
    let local = i64::try_from(at)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map(|t| {
            t.to_zoned(jiff::tz::TimeZone::system())
                .strftime("%Y-%m-%d %H:%M:%S %Z")
                .to_string()
        })
        .unwrap_or_else(|| format!("unix {at}"));
    format!("{local}, {}", ago(now.saturating_sub(at as i64)))
}

/// `seconds` as an age: `just now`, `42 s ago`, `3 min ago`, `5 h ago`, `2 days ago`.
fn ago(seconds: i64) -> String {
    match seconds {
        s if s < 0 => "in the future (is the clock right?)".to_string(),
        0..=1 => "just now".to_string(),
        s @ 2..=119 => format!("{s} s ago"),
        s @ 120..=7199 => format!("{} min ago", s / 60),
        s @ 7200..=172_799 => format!("{} h ago", s / 3600),
        s => format!("{} days ago", s / 86_400),
    }
}

/// The time of day in UTC, `HH:MM:SSZ` (no time-zone database is read).
fn clock() -> String {
    jiff::Timestamp::now().strftime("%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages() {
        let cases = [
            (-5, "in the future (is the clock right?)"),
            (0, "just now"),
            (42, "42 s ago"),
            (180, "3 min ago"),
            (7200, "2 h ago"),
            (3 * 86_400, "3 days ago"),
        ];
        for (seconds, want) in cases {
            assert_eq!(super::ago(seconds), want, "{seconds}");
        }
        let text = super::moment(1_700_000_000, 1_700_000_180);
        assert!(
            text.starts_with("2023-11-1") && text.ends_with(", 3 min ago"),
            "{text}"
        );
    }

    #[test]
    fn counts() {
        assert_eq!(super::count(0, "chunk"), "0 chunks");
        assert_eq!(super::count(1, "chunk"), "1 chunk");
        assert_eq!(super::count(2, "file"), "2 files");
    }
}
