//! `sessions_search`: exact full-text search over the agent's session transcripts, message
//! by message (OpenClaw 2026.9's tool of that name, which `memory_search`'s ranked chunks do
//! not replace: it finds the message that said it).
//!
//! The transcripts are read as they are, from `<stateDir>/agents/<agentId>/sessions/*.jsonl`
//! (whether or not session memory indexes them; nothing is written). Each user or
//! assistant message (`transcript::transcript`, secrets redacted) is one candidate. A query
//! is split on white space; a message matches when it holds every part:
//! - case and accents do not matter (`Cafe` finds `café`);
//! - a part matches whole words (`cat` does not find `category`); a part with punctuation
//!   (`node-22`) matches its words in a row;
//! - a part with CJK characters matches anywhere in the text (`京都` finds `京都の紅葉`),
//!   which OpenClaw's whole-token matching cannot do.
//!
//! Hits are ranked by how often the parts occur, per the message's length, newest session
//! first on ties; at most [`MAX_LIMIT`] are returned and the answer stays under
//! [`MAX_BYTES`] (`truncated` says when it was cut).

use std::path::Path;

use serde::Serialize;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use crate::analyzer::is_cjk;
use crate::transcript;

/// Hits returned when the caller names no limit.
pub const DEFAULT_LIMIT: usize = 10;
/// The most hits one call returns.
pub const MAX_LIMIT: usize = 25;
/// The longest snippet, in characters (then `…`).
pub const SNIPPET_CHARS: usize = 300;
/// The answer's size bound in bytes (its JSON).
pub const MAX_BYTES: usize = 32 * 1024;

/// One message that matched.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHit {
    /// The transcript's file stem (OpenClaw's session id).
    pub session_id: String,
    /// `sessions/<file>.jsonl`, as `memory_search` cites transcripts.
    pub path: String,
    /// The message's line in the JSONL file (1-based).
    pub line: usize,
    /// `user` or `assistant`.
    pub role: String,
    /// The message, around its first match, at most 300 characters.
    pub snippet: String,
    /// How well it matched (higher is better; comparable within one answer).
    pub score: f64,
}

/// The `sessions_search` payload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionsSearchPayload {
    /// Best first.
    pub results: Vec<SessionHit>,
    /// Why the answer is empty or partial (no transcripts, unreadable files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Hits were left out to keep the answer under 32 KB.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// A refused call (an empty query).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Lower case, accents removed (NFKD without combining marks).
fn fold(text: &str) -> String {
    text.nfkd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

fn words(folded: &str) -> Vec<&str> {
    folded
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// One part of a query, folded.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    /// Whole words in a row.
    Words(Vec<String>),
    /// A substring (CJK).
    Text(String),
}

fn parts(query: &str) -> Vec<Part> {
    query
        .split_whitespace()
        .map(fold)
        .filter_map(|p| match p.chars().any(is_cjk) {
            true => Some(Part::Text(p)),
            false => {
                let w: Vec<String> = words(&p).into_iter().map(str::to_string).collect();
                (!w.is_empty()).then_some(Part::Words(w))
            }
        })
        .collect()
}

/// How many times `part` occurs in a message (its folded text and words).
fn occurrences(part: &Part, text: &str, message_words: &[&str]) -> usize {
    match part {
        Part::Text(t) => text.matches(t.as_str()).count(),
        Part::Words(w) => message_words
            .windows(w.len())
            .filter(|window| window.iter().zip(w).all(|(a, b)| *a == b.as_str()))
            .count(),
    }
}

/// The matches of `query` in one transcript (`jsonl`, cited as `path`), unranked.
pub fn search_transcript(query: &str, jsonl: &str, path: &str) -> Vec<SessionHit> {
    let parts = parts(query);
    if parts.is_empty() {
        return Vec::new();
    }
    let t = transcript::transcript(jsonl, path);
    let session_id = Path::new(path)
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let mut hits = Vec::new();
    for (i, line) in t.text.lines().enumerate() {
        let (role, message) = match line.split_once(": ") {
            Some(("User", m)) => ("user", m),
            Some(("Assistant", m)) => ("assistant", m),
            _ => continue,
        };
        let folded = fold(message);
        let message_words = words(&folded);
        let counts: Vec<usize> = parts
            .iter()
            .map(|p| occurrences(p, &folded, &message_words))
            .collect();
        if counts.contains(&0) {
            continue;
        }
        let total: usize = counts.iter().sum();
        let score = total as f64 / (1.0 + (message_words.len().max(1) as f64).ln());
        hits.push(SessionHit {
            session_id: session_id.clone(),
            path: path.to_string(),
            line: t.source_lines.get(i).copied().unwrap_or(0),
            role: role.to_string(),
            snippet: snippet(message, &parts),
            score,
        });
    }
    hits
}

/// At most [`SNIPPET_CHARS`] characters of `message`, starting a little before the first
/// part found, with `…` where it was cut.
fn snippet(message: &str, parts: &[Part]) -> String {
    let chars: Vec<char> = message.chars().collect();
    if chars.len() <= SNIPPET_CHARS {
        return message.to_string();
    }
    let folded: Vec<char> = chars
        .iter()
        .map(|c| fold(&c.to_string()))
        .map(|f| f.chars().next().unwrap_or(' '))
        .collect();
    let lowered: String = folded.iter().collect();
    let first = parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => lowered.find(t.as_str()),
            Part::Words(w) => lowered.find(w[0].as_str()),
        })
        .min()
        .map_or(0, |byte| lowered[..byte].chars().count());
    let start = first.saturating_sub(60).min(chars.len() - SNIPPET_CHARS);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..start + SNIPPET_CHARS]);
    if start + SNIPPET_CHARS < chars.len() {
        out.push('…');
    }
    out
}

/// Searches every transcript in `dir`: the best `limit` hits (at most [`MAX_LIMIT`]),
/// newest session first on equal scores.
pub fn search_dir(dir: &Path, query: &str, limit: Option<usize>) -> SessionsSearchPayload {
    let mut payload = SessionsSearchPayload {
        results: Vec::new(),
        warning: None,
        truncated: false,
        error: None,
    };
    if query.trim().is_empty() {
        payload.error = Some("query: expected words to search for, got an empty query".into());
        return payload;
    }
    let limit = limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(_) => {
            payload.warning = Some(format!(
                "no session transcripts: {} does not exist yet",
                dir.display()
            ));
            return payload;
        }
    };
    let mut files: Vec<(std::time::SystemTime, std::path::PathBuf)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| {
            let mtime = std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (mtime, p)
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut unreadable = Vec::new();
    let mut hits: Vec<(usize, SessionHit)> = Vec::new();
    for (rank, (_, file)) in files.iter().enumerate() {
        let name = file
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        match std::fs::read(file) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let path = format!("sessions/{name}");
                hits.extend(
                    search_transcript(query, &text, &path)
                        .into_iter()
                        .map(|h| (rank, h)),
                );
            }
            Err(err) => unreadable.push(format!("{name}: {err}")),
        }
    }
    hits.sort_by(|(ra, a), (rb, b)| {
        b.score
            .total_cmp(&a.score)
            .then(ra.cmp(rb))
            .then(a.line.cmp(&b.line))
    });
    let mut bytes = 64;
    for (_, hit) in hits.into_iter().take(limit) {
        let size = serde_json::to_string(&hit).map_or(0, |s| s.len() + 1);
        if bytes + size > MAX_BYTES {
            payload.truncated = true;
            break;
        }
        bytes += size;
        payload.results.push(hit);
    }
    if !unreadable.is_empty() {
        payload.warning = Some(format!(
            "unreadable transcripts skipped: {}",
            unreadable.join("; ")
        ));
    } else if files.is_empty() {
        payload.warning = Some(format!("no session transcripts in {}", dir.display()));
    } else if payload.results.is_empty() {
        payload.warning = Some(format!(
            "no message in {} transcript(s) holds every word of the query",
            files.len()
        ));
    }
    payload
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(role: &str, text: &str) -> String {
        serde_json::json!({"type": "message", "message": {"role": role, "content": text}})
            .to_string()
    }

    fn found(query: &str, text: &str) -> bool {
        let jsonl = [
            r#"{"type":"session","id":"s1"}"#.to_string(),
            line("user", text),
        ]
        .join("\n");
        !search_transcript(query, &jsonl, "sessions/s1.jsonl").is_empty()
    }

    #[test]
    fn matching_rules() {
        let table: &[(&str, &str, bool)] = &[
            ("cat vaccine", "Miso the cat needs her vaccine", true),
            ("CAT", "the cat", true),
            ("cafe", "a café in Porto", true),
            ("café", "a CAFE in Porto", true),
            ("cat", "category theory", false),
            ("cat dog", "the cat sat", false),
            ("node-22", "upgrade to node 22 today", true),
            ("node-22", "node 21 and 22", false),
            ("京都", "京都の紅葉と猫カフェ", true),
            ("猫カフェ 紅葉", "京都の紅葉と猫カフェ", true),
            ("大阪", "京都の紅葉", false),
            ("   ", "anything", false),
        ];
        for (query, text, expected) in table {
            assert_eq!(found(query, text), *expected, "{query:?} in {text:?}");
        }
    }

    #[test]
    fn hits_cite_jsonl_lines_roles_and_redact() {
        let jsonl = [
            r#"{"type":"session","id":"s1"}"#.to_string(),
            line(
                "user",
                "my key is sk-abcdefghijklmnopqrstuvwxyz012345, remember the tart",
            ),
            r#"{"type":"tool","x":1}"#.to_string(),
            line("assistant", "Noted: kumquat tart on Sunday."),
        ]
        .join("\n");
        let hits = search_transcript("tart", &jsonl, "sessions/s1.jsonl");
        let lines: Vec<(usize, &str)> = hits.iter().map(|h| (h.line, h.role.as_str())).collect();
        assert_eq!(lines, [(2, "user"), (4, "assistant")]);
        assert!(!hits[0].snippet.contains("sk-abc"), "{}", hits[0].snippet);
        assert_eq!(hits[0].session_id, "s1");
    }

    #[test]
    fn long_messages_are_cut_around_the_match() {
        let text = format!("{} needle {}", "a ".repeat(400), "b ".repeat(400));
        let s = snippet(&text, &parts("needle"));
        assert!(
            s.contains("needle") && s.starts_with('…') && s.ends_with('…'),
            "{s}"
        );
        assert!(s.chars().count() <= SNIPPET_CHARS + 2);
    }

    #[test]
    fn a_directory_answers_with_limits_and_reasons() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = search_dir(&tmp.path().join("none"), "x", None);
        assert!(missing.warning.unwrap().contains("does not exist"));
        assert!(search_dir(tmp.path(), " ", None).error.is_some());
        let many: Vec<String> = (0..40)
            .map(|i| line("user", &format!("tart number {i}")))
            .collect();
        std::fs::write(tmp.path().join("a.jsonl"), many.join("\n")).unwrap();
        let all = search_dir(tmp.path(), "tart", Some(100));
        assert_eq!(all.results.len(), MAX_LIMIT);
        assert_eq!(
            search_dir(tmp.path(), "tart", None).results.len(),
            DEFAULT_LIMIT
        );
        let none = search_dir(tmp.path(), "pie", None);
        assert!(none.warning.unwrap().contains("holds every word"));
    }
}
