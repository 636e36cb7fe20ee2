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
//! the transcript cites the JSONL file's own line numbers, and where the message came from
//! ([`Origin`], OpenClaw 2026.9's `provenance`): who wrote it and when.
//!
//! Everything here is pure: the sync reads the file and hands over its text.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A transcript's searchable text and where each of its lines came from.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Transcript {
    /// `User: …` / `Assistant: …` lines, each ending in `\n`.
    pub text: String,
    /// For line `i` (0-based) of `text`, the 1-based JSONL line it came from.
    pub source_lines: Vec<usize>,
    /// For line `i` (0-based) of `text`, who wrote its message and when.
    pub origins: Vec<LineOrigin>,
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

    /// Where transcript lines `start..=end` (1-based) came from, as OpenClaw 2026.9 rates a
    /// chunk of them: the least trusted of their origins and the latest of their times
    /// (`mtime_ms`, the file's modification time, for a message without a timestamp).
    pub fn chunk_origin(&self, start: usize, end: usize, mtime_ms: u64) -> Option<ChunkOrigin> {
        let lines = self
            .origins
            .get(start.saturating_sub(1)..end.min(self.origins.len()))?;
        let class = lines.iter().map(|l| l.class).max()?;
        let observed_at_ms = lines
            .iter()
            .map(|l| l.observed_at_ms.unwrap_or(mtime_ms))
            .max()
            .unwrap_or(mtime_ms);
        Some(ChunkOrigin {
            class,
            observed_at_ms,
        })
    }
}

/// Who wrote a message, most trusted first (OpenClaw's `originClass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OriginClass {
    /// The owner of the agent (a user message OpenClaw marked `senderIsOwner`).
    Owner,
    /// The agent, answering its owner.
    Agent,
    /// OpenClaw itself (`provenance.kind: "internal_system"`).
    System,
    /// Anyone else, or an answer to them.
    Untrusted,
}

impl OriginClass {
    /// The payload's name.
    pub fn as_str(self) -> &'static str {
        match self {
            OriginClass::Owner => "owner",
            OriginClass::Agent => "agent",
            OriginClass::System => "system",
            OriginClass::Untrusted => "untrusted",
        }
    }
}

/// Where one transcript line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineOrigin {
    /// Who wrote the message.
    pub class: OriginClass,
    /// The message's timestamp (`message.timestamp`, else the record's), ms since the Unix
    /// epoch; `None` when it has none.
    pub observed_at_ms: Option<u64>,
}

/// Where a chunk of a transcript came from (stored with the chunk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkOrigin {
    /// The least trusted origin of its lines.
    pub class: OriginClass,
    /// The latest time of its lines, ms since the Unix epoch.
    pub observed_at_ms: u64,
}

/// Reads a JSONL transcript; `file` names it in warnings.
pub fn transcript(jsonl: &str, file: &str) -> Transcript {
    let mut out = Transcript::default();
    // Who the current turn answers: an assistant message inherits its user message's class.
    let mut turn = OriginClass::Untrusted;
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
        let class = origin_class(&record["message"], &mut turn);
        let text = redact(&collapse_whitespace(&text)).into_owned();
        if text.is_empty() {
            continue;
        }
        out.text.push_str(role);
        out.text.push_str(": ");
        out.text.push_str(&text);
        out.text.push('\n');
        out.source_lines.push(line_no);
        out.origins.push(LineOrigin {
            class,
            observed_at_ms: timestamp_ms(&record),
        });
    }
    out
}

/// OpenClaw's class of a message: a user message is `system` when OpenClaw wrote it,
/// `owner` when it marked the sender as the owner, `untrusted` otherwise, and sets the
/// turn's class; an assistant message is `untrusted` when its turn was tainted, else `agent`
/// answering the owner, else the turn's class.
fn origin_class(message: &Value, turn: &mut OriginClass) -> OriginClass {
    let marked = |key: &str| message["__openclaw"][key].as_bool() == Some(true);
    if message["role"].as_str() == Some("assistant") {
        return match *turn {
            _ if marked("turnTainted") => OriginClass::Untrusted,
            OriginClass::Owner => OriginClass::Agent,
            other => other,
        };
    }
    *turn = if message["provenance"]["kind"].as_str() == Some("internal_system") {
        OriginClass::System
    } else if marked("senderIsOwner") {
        OriginClass::Owner
    } else {
        OriginClass::Untrusted
    };
    *turn
}

/// A message's time, ms since the Unix epoch: `message.timestamp`, else the record's; a
/// number (seconds when below 10^11, else milliseconds) or an RFC 3339 text.
fn timestamp_ms(record: &Value) -> Option<u64> {
    [&record["message"]["timestamp"], &record["timestamp"]]
        .into_iter()
        .find_map(|value| match value {
            Value::Number(n) => n.as_f64().filter(|v| v.is_finite() && *v > 0.0).map(|v| {
                let ms = if v < 1e11 { v * 1e3 } else { v };
                ms as u64
            }),
            Value::String(text) => rfc3339_ms(text),
            _ => None,
        })
}

/// `YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|±HH:MM]` as ms since the Unix epoch (UTC when no zone
/// is given, as `Date.parse` reads a bare date); `None` for anything else or a time before
/// 1970.
fn rfc3339_ms(text: &str) -> Option<u64> {
    let text = text.trim();
    let day = crate::clock::calendar_day(text.get(..10)?)??;
    let rest = &text[10..];
    let (clock, offset_min) = match rest.strip_suffix(['Z', 'z']) {
        Some(clock) => (clock, 0),
        None => match rest
            .len()
            .checked_sub(6)
            .filter(|&i| i > 0 && rest.is_char_boundary(i))
            .map(|i| rest.split_at(i))
        {
            Some((clock, zone))
                if zone.is_ascii() && zone.starts_with(['+', '-']) && &zone[3..4] == ":" =>
            {
                let hours: i64 = zone[1..3].parse().ok()?;
                let minutes: i64 = zone[4..6].parse().ok()?;
                let sign = if zone.starts_with('-') { -1 } else { 1 };
                (clock, sign * (hours * 60 + minutes))
            }
            _ => (rest, 0),
        },
    };
    let mut ms = 0i64;
    if !clock.is_empty() {
        let clock = clock.strip_prefix(['T', 't', ' '])?;
        let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
        let mut parts = hms.split(':');
        let mut field = |max: i64| -> Option<i64> {
            let v: i64 = parts.next().map_or(Some(0), |p| {
                (p.len() == 2).then(|| p.parse().ok()).flatten()
            })?;
            (v <= max).then_some(v)
        };
        let (h, m, s) = (field(23)?, field(59)?, field(60)?);
        if parts.next().is_some() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let millis: i64 = format!("{fraction:0<3}")[..3].parse().ok()?;
        ms = ((h * 60 + m) * 60 + s) * 1000 + millis;
    }
    let total = day * 86_400_000 + ms - offset_min * 60_000;
    u64::try_from(total).ok().filter(|&t| t > 0)
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
    fn origins_follow_openclaw_2026_9() {
        let jsonl = [
            r#"{"type":"message","timestamp":"2026-03-01T10:00:00Z","message":{"role":"user","content":"hi","__openclaw":{"senderIsOwner":true}}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":"hello","timestamp":1772359260}}"#,
            r#"{"type":"message","message":{"role":"user","content":"from a stranger","timestamp":1772359320000}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":"answer to them"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"heartbeat","provenance":{"kind":"internal_system"}}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":"ok"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"me again","__openclaw":{"senderIsOwner":true}}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":"tainted","__openclaw":{"turnTainted":true}}}"#,
        ]
        .join("\n");
        let t = transcript(&jsonl, "s.jsonl");
        let classes: Vec<&str> = t.origins.iter().map(|o| o.class.as_str()).collect();
        assert_eq!(
            classes,
            [
                "owner",
                "agent",
                "untrusted",
                "untrusted",
                "system",
                "system",
                "owner",
                "untrusted"
            ]
        );
        let times: Vec<Option<u64>> = t.origins.iter().map(|o| o.observed_at_ms).collect();
        assert_eq!(
            &times[..4],
            [
                Some(1_772_359_200_000),
                Some(1_772_359_260_000),
                Some(1_772_359_320_000),
                None
            ]
        );
        // A chunk: the least trusted class, the latest time (the file's for a line without).
        let origin = |s, e, mtime| {
            t.chunk_origin(s, e, mtime)
                .map(|o| (o.class.as_str(), o.observed_at_ms))
        };
        assert_eq!(origin(1, 2, 5), Some(("agent", 1_772_359_260_000)));
        assert_eq!(
            origin(1, 4, 9_000_000_000_000),
            Some(("untrusted", 9_000_000_000_000))
        );
        assert_eq!(origin(5, 7, 7), Some(("system", 7)));
        assert_eq!(origin(9, 9, 7), None);
    }

    #[test]
    fn timestamps_as_javascript_reads_them() {
        let cases = [
            ("2026-03-01", Some(1_772_323_200_000)),
            ("2026-03-01T10:00:00Z", Some(1_772_359_200_000)),
            ("2026-03-01T10:00:00.5Z", Some(1_772_359_200_500)),
            ("2026-03-01T12:00:00+02:00", Some(1_772_359_200_000)),
            ("2026-03-01T05:30:00-04:30", Some(1_772_359_200_000)),
            ("2026-03-01 10:00", Some(1_772_359_200_000)),
            ("2026-02-30T10:00:00Z", None),
            ("2026-03-01T25:00:00Z", None),
            ("yesterday", None),
            ("2026-03-01T10:00:00Zé", None),
            ("2026-03-01Té", None),
        ];
        for (text, want) in cases {
            assert_eq!(rfc3339_ms(text), want, "{text}");
        }
        let record = |ts: &str| -> Value { serde_json::from_str(ts).unwrap() };
        assert_eq!(timestamp_ms(&record(r#"{"timestamp":1.5}"#)), Some(1500));
        assert_eq!(timestamp_ms(&record(r#"{"timestamp":-4}"#)), None);
        assert_eq!(timestamp_ms(&record(r#"{"timestamp":true}"#)), None);
        assert_eq!(
            timestamp_ms(&record(r#"{"timestamp":1,"message":{"timestamp":2}}"#)),
            Some(2000)
        );
    }

    #[test]
    fn line_counts() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"{}\n{}\n"), 2);
        assert_eq!(count_lines(b"{}\n{"), 1);
    }
}
