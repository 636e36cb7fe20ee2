//! QMD's JSON answer → memoria's hits (pure).
//!
//! `qmd query --json` prints an array of `{docid, score, file, line, title, snippet}`. `file`
//! is `qmd://<collection>/<path>` (QMD 2.x) or `<collection>/<path>` (1.x); the snippet may
//! start with a `@@ -<start>,<count> @@` line that gives its line range. Anything else
//! (a progress line or an escape sequence before the array, a missing field of the wrong
//! type) is either skipped over or an error that names what was wrong: unparsable output is
//! one of the failures that make memoria serve from its own index.

use std::path::Path;

use serde_json::Value;

use crate::workspace::collection::Collection;

/// One QMD result, cited as memoria cites files.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QmdHit {
    /// `MEMORY.md`, `memory/…` or `qmd/<collection>/<path>`.
    pub path: String,
    /// First line (1-based).
    pub start_line: usize,
    /// Last line (1-based, inclusive).
    pub end_line: usize,
    /// QMD's score, clamped to 0..1.
    pub score: f64,
    /// The snippet, without QMD's `@@` header.
    pub snippet: String,
}

/// Parses QMD's stdout into at most `max_results` hits, best first as QMD ordered them.
pub(crate) fn parse_hits(
    stdout: &[u8],
    collections: &[Collection],
    workspace: &Path,
    max_results: usize,
) -> Result<Vec<QmdHit>, String> {
    let text = String::from_utf8_lossy(stdout);
    let value = json_in(&text).ok_or_else(|| {
        let start: String = text.trim().chars().take(80).collect();
        format!("QMD printed no JSON result list (output starts {start:?})")
    })?;
    let items = match &value {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("results") {
            Some(Value::Array(items)) => items,
            _ => return Err("QMD's JSON has no result list".into()),
        },
        _ => return Err("QMD's JSON is not a result list".into()),
    };
    let mut hits = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let file = item
            .get("file")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("QMD result {i} has no \"file\""))?;
        let cited = file.strip_prefix("qmd://").unwrap_or(file);
        let Some((name, rel)) = cited.split_once('/') else {
            return Err(format!("QMD result {i}: {file:?} names no collection"));
        };
        let Some(collection) = collections.iter().find(|c| c.name == name) else {
            // A collection memoria did not configure (added by hand in QMD's home): its
            // files cannot be read back through memory_get, so they are not shown.
            continue;
        };
        let score = match item.get("score") {
            None | Some(Value::Null) => 0.0,
            Some(score) => score
                .as_f64()
                .ok_or_else(|| format!("QMD result {i}: \"score\" is not a number"))?,
        };
        let line = item
            .get("line")
            .and_then(Value::as_u64)
            .map_or(1, |l| l.max(1) as usize);
        let raw = item.get("snippet").and_then(Value::as_str).unwrap_or("");
        let (range, snippet) = split_header(raw);
        let (start_line, end_line) = range.unwrap_or((line, line));
        hits.push(QmdHit {
            path: collection.cite(workspace, rel),
            start_line,
            end_line,
            score: if score.is_finite() {
                score.clamp(0.0, 1.0)
            } else {
                0.0
            },
            snippet: snippet.trim().to_string(),
        });
        if hits.len() == max_results {
            break;
        }
    }
    Ok(hits)
}

/// The JSON value in `text`: all of it, or from the first `[` or `{` that starts a list or
/// an object (a progress line or a terminal escape may come first).
fn json_in(text: &str) -> Option<Value> {
    let trimmed = text.trim();
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    trimmed
        .char_indices()
        .filter(|&(i, c)| {
            let next = trimmed[i + 1..].trim_start().chars().next();
            (c == '[' && matches!(next, Some('{') | Some(']'))) || (c == '{' && next == Some('"'))
        })
        .find_map(|(i, _)| serde_json::from_str(&trimmed[i..]).ok())
}

/// Splits `@@ -<start>,<count> @@ …` off a snippet: the line range and the rest.
fn split_header(snippet: &str) -> (Option<(usize, usize)>, &str) {
    let Some(rest) = snippet.strip_prefix("@@ -") else {
        return (None, snippet);
    };
    let (header, body) = rest.split_once('\n').unwrap_or((rest, ""));
    let numbers = header.split_once(" @@").map_or(header, |(n, _)| n);
    let (start, count) = numbers.split_once(',').unwrap_or((numbers, "1"));
    match (start.trim().parse::<usize>(), count.trim().parse::<usize>()) {
        (Ok(start), Ok(count)) => {
            let start = start.max(1);
            (Some((start, start + count.max(1) - 1)), body)
        }
        _ => (None, snippet),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collections() -> Vec<Collection> {
        vec![
            Collection::new("memory-dir", Path::new("/ws/memory"), "**/*.md").unwrap(),
            Collection::new("docs", Path::new("/notes"), "**/*.md").unwrap(),
        ]
    }

    /// Recorded from `qmd search --json` / `qmd query --json` (QMD 2.8.3).
    const RECORDED: &str = r##"[
  {
    "docid": "#5cbc4c",
    "score": 0.34,
    "file": "qmd://docs/sub/b.md",
    "line": 3,
    "title": "Sub",
    "snippet": "@@ -2,3 @@ (1 before, 0 after)\n\nPostgres runs on port 5433 here.\n"
  },
  {
    "docid": "#cef686",
    "score": 1.7,
    "file": "memory-dir/2026-01-02.md",
    "line": 7,
    "title": "Notes",
    "snippet": "The deploy key lives in vault."
  },
  {"docid": "#x", "score": 0.2, "file": "qmd://hand-added/x.md", "line": 1, "snippet": "x"}
]"##;

    #[test]
    fn maps_files_lines_and_scores() {
        let hits = parse_hits(RECORDED.as_bytes(), &collections(), Path::new("/ws"), 10).unwrap();
        assert_eq!(
            hits,
            vec![
                QmdHit {
                    path: "qmd/docs/sub/b.md".into(),
                    start_line: 2,
                    end_line: 4,
                    score: 0.34,
                    snippet: "Postgres runs on port 5433 here.".into(),
                },
                QmdHit {
                    path: "memory/2026-01-02.md".into(),
                    start_line: 7,
                    end_line: 7,
                    score: 1.0,
                    snippet: "The deploy key lives in vault.".into(),
                },
            ]
        );
        let one = parse_hits(RECORDED.as_bytes(), &collections(), Path::new("/ws"), 1).unwrap();
        assert_eq!(one.len(), 1);
    }

    #[test]
    fn finds_the_json_after_noise_and_refuses_garbage() {
        let noisy = format!("Expanding query...\u{1b}[?25h{RECORDED}");
        assert_eq!(
            parse_hits(noisy.as_bytes(), &collections(), Path::new("/ws"), 10)
                .unwrap()
                .len(),
            2
        );
        let table: &[(&str, &str)] = &[
            ("", "no JSON result list"),
            ("Error: no such collection", "no JSON result list"),
            ("{\"a\": 1}", "no result list"),
            ("[{\"score\": 1}]", "has no \"file\""),
            ("[{\"file\": \"nocollection\"}]", "names no collection"),
            (
                "[{\"file\": \"docs/a.md\", \"score\": \"high\"}]",
                "not a number",
            ),
        ];
        for (out, want) in table {
            let err = parse_hits(out.as_bytes(), &collections(), Path::new("/ws"), 10).unwrap_err();
            assert!(err.contains(want), "{out:?}: {err}");
        }
        assert_eq!(
            parse_hits(b"[]", &collections(), Path::new("/ws"), 10).unwrap(),
            vec![]
        );
    }

    #[test]
    fn headers_give_line_ranges() {
        type Row<'a> = (&'a str, Option<(usize, usize)>, &'a str);
        let table: &[Row] = &[
            ("@@ -2,3 @@ (1 before, 0 after)\nx", Some((2, 4)), "x"),
            ("@@ -10,1 @@\ny", Some((10, 10)), "y"),
            ("@@ -0,0 @@\nz", Some((1, 1)), "z"),
            ("@@ -a,b @@\nw", None, "@@ -a,b @@\nw"),
            ("plain", None, "plain"),
        ];
        for &(snippet, range, body) in table {
            assert_eq!(split_header(snippet), (range, body), "{snippet:?}");
        }
    }
}
