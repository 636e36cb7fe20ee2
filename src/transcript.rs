//! Session transcripts as searchable text (SPEC §8).
//!
//! OpenClaw appends one JSON record per line to `<stateDir>/agents/<agentId>/sessions/
//! <session>.jsonl`. Only `{"type": "message", "message": {"role": "user" | "assistant",
//! "content": …}}` records are memory: their text (a string, or the `text` parts of an
//! array) becomes one line, `User: …` or `Assistant: …`, with whitespace collapsed and
//! secrets redacted. Every other record (session headers, tool calls and results, model
//! changes) is skipped silently, as expected content; a line that is not JSON is skipped
//! with a warning naming the file and line.
//!
//! The transcript keeps, for each of its lines, the JSONL line it came from, so a chunk of
//! the transcript cites the JSONL file's own line numbers.
//!
//! Everything here is pure: the sync reads the file and hands over its text.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// A transcript's searchable text and where each of its lines came from.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Transcript {
    /// `User: …` / `Assistant: …` lines, each ending in `\n`.
    pub text: String,
    /// For line `i` (0-based) of `text`, the 1-based JSONL line it came from.
    pub source_lines: Vec<usize>,
    /// Lines that could not be read, naming `file` and the line.
    pub warnings: Vec<String>,
}

impl Transcript {
    /// The JSONL line range of transcript lines `start..=end` (1-based, as chunks cite them).
    pub fn source_range(&self, start: usize, end: usize) -> (usize, usize) {
        let line = |n: usize| {
            self.source_lines
                .get(n.saturating_sub(1))
                .or(self.source_lines.last())
                .copied()
                .unwrap_or(1)
        };
        (line(start), line(end))
    }
}

/// Reads a JSONL transcript; `file` names it in warnings.
pub fn transcript(jsonl: &str, file: &str) -> Transcript {
    let mut out = Transcript::default();
    for (index, line) in jsonl.lines().enumerate() {
        let line_no = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let record: Value = match serde_json::from_str(line) {
            Ok(record) => record,
            Err(err) => {
                out.warnings.push(format!(
                    "{file}:{line_no}: not a JSON record ({err}), skipped"
                ));
                continue;
            }
        };
        let Some((role, text)) = message_text(&record) else {
            continue;
        };
        let text = redact(&collapse_whitespace(&text)).into_owned();
        if text.is_empty() {
            continue;
        }
        out.text.push_str(role);
        out.text.push_str(": ");
        out.text.push_str(&text);
        out.text.push('\n');
        out.source_lines.push(line_no);
    }
    out
}

/// The speaker label and the text of a user or assistant message record.
fn message_text(record: &Value) -> Option<(&'static str, String)> {
    if record.get("type")?.as_str()? != "message" {
        return None;
    }
    let message = record.get("message")?;
    let role = match message.get("role")?.as_str()? {
        "user" => "User",
        "assistant" => "Assistant",
        _ => return None,
    };
    let text = match message.get("content")? {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    Some((role, text))
}

/// Runs of whitespace (newlines included) become one space; the ends are trimmed.
fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Secrets as they appear in chat: provider API keys by their documented prefixes, bearer
/// tokens, passwords in URLs, and `key=value` / `"key": "value"` pairs whose key names a
/// secret. Each pattern keeps its first group (the part that says what the secret is) and
/// replaces the rest.
static SECRET_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // OpenAI / Anthropic (`sk-`, `sk-proj-`, `sk-ant-`), Google (`AIza`), GitHub,
        // Slack, AWS access key ids, Hugging Face, Voyage (`pa-`), Groq (`gsk_`).
        r"()\b(?:sk-[A-Za-z0-9_-]{16,}|AIza[0-9A-Za-z_-]{30,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{20,}|pa-[A-Za-z0-9_-]{20,}|gsk_[A-Za-z0-9]{20,})",
        // `Authorization: Bearer <token>`, `bearer <token>`.
        r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}",
        // `scheme://user:password@host`.
        r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)",
        // `api_key=…`, `"password": "…"`, `token: …`.
        r#"(?i)((?:^|[^a-z0-9])(?:api[_-]?key|apikey|secret|password|passwd|pwd|access[_-]?token|auth[_-]?token|token)\b["']?\s*[:=]\s*["']?)[^\s"',;]{4,}"#,
    ]
    .iter()
    .filter_map(|pattern| Regex::new(pattern).ok())
    .collect()
});

/// `text` with secrets replaced by `[REDACTED]`.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    for pattern in SECRET_PATTERNS.iter() {
        if pattern.is_match(&out) {
            let replaced = pattern
                .replace_all(&out, |caps: &regex::Captures| {
                    let keep = caps.get(1).map_or("", |m| m.as_str());
                    let tail = caps.get(2).map_or("", |m| m.as_str());
                    format!("{keep}{REDACTED}{tail}")
                })
                .into_owned();
            out = Cow::Owned(replaced);
        }
    }
    out
}

/// The number of complete lines in `bytes` (new transcript messages, for the delta rule).
pub fn count_lines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_pattern_compiles() {
        assert_eq!(SECRET_PATTERNS.len(), 4);
    }

    #[test]
    fn redaction_table() {
        let cases = [
            (
                "my key is sk-proj-abcdefghijklmnop1234",
                "my key is [REDACTED]",
            ),
            ("sk-ant-api03-AAAAAAAAAAAAAAAAAAAA done", "[REDACTED] done"),
            (
                "google AIzaSyA1234567890abcdefghijklmnopqrstuv",
                "google [REDACTED]",
            ),
            (
                "gh token ghp_abcdefghijklmnopqrstuvwxyz0123",
                "gh token [REDACTED]",
            ),
            ("AWS AKIAIOSFODNN7EXAMPLE here", "AWS [REDACTED] here"),
            ("hf_abcdefghijklmnopqrstuvwxyz", "[REDACTED]"),
            (
                "Authorization: Bearer abc.def-ghi_123",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "db at postgres://admin:hunter22@db.local:5432/x",
                "db at postgres://admin:[REDACTED]@db.local:5432/x",
            ),
            ("set api_key=abcd1234 now", "set api_key=[REDACTED] now"),
            (
                r#"{"password": "s3cr3t!"}"#,
                r#"{"password": "[REDACTED]"}"#,
            ),
            ("OPENAI_API_KEY=xyz12345", "OPENAI_API_KEY=[REDACTED]"),
            // Not secrets: ordinary words and short values stay.
            ("ask-me anything", "ask-me anything"),
            ("the password is short: ab", "the password is short: ab"),
            ("the token budget is large", "the token budget is large"),
            ("https://example.com/path", "https://example.com/path"),
            ("bearer of news", "bearer of news"),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "input {input:?}");
        }
    }

    #[test]
    fn transcript_keeps_user_and_assistant_text_and_maps_lines() {
        let jsonl = [
            r#"{"type":"session","id":"s1","timestamp":"2026-01-01"}"#,
            r#"{"type":"message","message":{"role":"user","content":"Where is   the\nkey?"}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"Under"},{"type":"toolCall","name":"x"},{"type":"text","text":"the mat."}]}}"#,
            r#"{"type":"message","message":{"role":"toolResult","content":"ignored"}}"#,
            "",
            "{not json",
            r#"{"type":"message","message":{"role":"user","content":"token: abcd1234efgh"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"   "}}"#,
            r#"{"type":"message","message":{"role":"user","content":42}}"#,
            r#"["an", "array"]"#,
        ]
        .join("\n");
        let t = transcript(&jsonl, "sessions/s1.jsonl");
        assert_eq!(
            t.text,
            "User: Where is the key?\nAssistant: Under the mat.\nUser: token: [REDACTED]\n"
        );
        assert_eq!(t.source_lines, vec![2, 3, 7]);
        assert_eq!(t.warnings.len(), 1);
        assert!(
            t.warnings[0].starts_with("sessions/s1.jsonl:6: not a JSON record"),
            "{:?}",
            t.warnings
        );
        assert_eq!(t.source_range(1, 2), (2, 3));
        assert_eq!(t.source_range(3, 3), (7, 7));
    }

    #[test]
    fn empty_and_garbage_transcripts() {
        assert_eq!(transcript("", "f"), Transcript::default());
        let t = transcript("\u{0}\u{1}\n{\"type\":\"message\"}\n", "f");
        assert!(t.text.is_empty());
        assert_eq!(t.warnings.len(), 1);
        assert_eq!(t.source_range(1, 1), (1, 1));
    }

    #[test]
    fn line_counts() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"{}\n{}\n"), 2);
        assert_eq!(count_lines(b"{}\n{"), 1);
    }
}
