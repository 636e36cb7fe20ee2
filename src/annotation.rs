//! Curated-memory annotations: the trailing HTML comments OpenClaw 2026.9 reads from memory
//! entries, and what they do to ranking (all pure).
//!
//! ```text
//! - Dentist is Dr. Ortiz, Tuesdays only <!-- importance: 8 --> <!-- trigger: dentist; teeth -->
//! - Deploys go through the staging cluster first <!-- project: github.com/acme/api -->
//! ```
//!
//! * `<!-- importance: N -->`, N a whole number 1–10, multiplies an entry's score by
//!   `0.75 + 0.05·N` (so 5 is neutral, 10 is × 1.25). Read only in the curated root files
//!   (`MEMORY.md`, `USER.md`), only from a line that ends with `-->` (text after the comment
//!   voids it), the highest on an entry winning; any other value is ignored, not clamped.
//! * `<!-- trigger: a, b; c -->` lists phrases (split on `,` or `;`, trimmed, de-duplicated)
//!   reported as `triggers`; it never changes a score. Same files and line rule.
//! * `<!-- project: k1; k2 -->` tags an entry with repositories (project keys): × 1.15 when
//!   every key is active in the session, × 0.90 otherwise, × 1 untagged or with no active
//!   keys. Read in every memory file but the root `USER.md`, anywhere in the entry. A
//!   malformed tag (an empty key, `<`, `>`, a line break, an unclosed comment) drops the
//!   entry from every search, so a typo is visible rather than silently mis-ranked.
//!
//! The keyword is case-insensitive and spaces are optional (`<!--IMPORTANCE:9-->`). The
//! comments are removed from the indexed text of every memory file (when they close on
//! their line), keeping line numbers; see [`strip`].
//!
//! The facts come from OpenClaw 2026.9.6 (`curated-annotations.ts`, `importance.ts`,
//! `project-ranking.ts`), checked against the real OpenClaw by `tests/openclaw_parity.rs`.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// An annotation's opening: `<!--`, its kind, a colon. The value runs to the next `-->`.
static MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)<!--\s*(trigger|importance|project)\s*:").expect("static regex")
});

/// A project annotation's opening, counted to detect unclosed or swallowed tags.
static PROJECT_MARKER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<!--\s*project\s*:").expect("static regex"));

/// What one entry's annotations say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotations {
    /// The highest valid `importance` (1–10), when the file is curated.
    #[serde(default)]
    pub importance: Option<u8>,
    /// The `trigger` phrases, in first-seen order, when the file is curated.
    #[serde(default)]
    pub triggers: Vec<String>,
    /// The `project` tag.
    #[serde(default)]
    pub project: ProjectTag,
    /// Who wrote a transcript chunk's messages, and when (session transcripts only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::transcript::ChunkOrigin>,
}

impl Annotations {
    /// Whether there is nothing to say (no importance, triggers or tag).
    pub fn is_empty(&self) -> bool {
        self == &Annotations::default()
    }
}

/// An entry's `project` annotation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectTag {
    /// No annotation: ranked as is.
    #[default]
    Untagged,
    /// The entry's project keys (normalised, de-duplicated, in order).
    Keys(Vec<String>),
    /// A malformed annotation: the entry is dropped from searches.
    Malformed,
}

/// How an annotation kind reached the scanner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Trigger,
    Importance,
    Project,
}

/// One parsed annotation: its kind, its value (trimmed) and its byte span in the text
/// (`<!--` to the end of `-->`).
struct Found<'a> {
    kind: Kind,
    value: &'a str,
    span: std::ops::Range<usize>,
}

/// Every closed annotation in `text`, in order. A marker with no `-->` after it ends the
/// scan; a marker inside another annotation's value is swallowed by it.
fn scan(text: &str) -> Vec<Found<'_>> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(m) = MARKER.captures_at(text, at) {
        let (Some(whole), Some(kind)) = (m.get(0), m.get(1)) else {
            break;
        };
        let kind = match kind.as_str().to_ascii_lowercase().as_str() {
            "trigger" => Kind::Trigger,
            "importance" => Kind::Importance,
            _ => Kind::Project,
        };
        let Some(close) = text[whole.end()..].find("-->") else {
            break;
        };
        let value_end = whole.end() + close;
        found.push(Found {
            kind,
            value: text[whole.end()..value_end].trim(),
            span: whole.start()..value_end + 3,
        });
        at = value_end + 3;
    }
    found
}

/// Whether a workspace-relative path is a curated root file (importance and triggers).
pub fn is_curated(path: &str) -> bool {
    path == "MEMORY.md" || path == "USER.md"
}

/// Whether project tags are read from this memory file (all but the root `USER.md`).
pub fn reads_project(path: &str) -> bool {
    !path.eq_ignore_ascii_case("USER.md")
}

/// The annotations of one entry of the memory file `path`, from its original (unstripped)
/// lines.
pub fn read(path: &str, entry: &str) -> Annotations {
    let mut out = Annotations::default();
    if is_curated(path) {
        let mut seen = std::collections::HashSet::new();
        for line in entry.split('\n') {
            if !line.trim_end().ends_with("-->") {
                continue;
            }
            for a in scan(line) {
                match a.kind {
                    Kind::Importance => {
                        if let Some(n) = importance_value(a.value) {
                            out.importance = out.importance.max(Some(n));
                        }
                    }
                    Kind::Trigger => {
                        for phrase in a.value.split([',', ';']).map(str::trim) {
                            if !phrase.is_empty() && seen.insert(phrase.to_string()) {
                                out.triggers.push(phrase.to_string());
                            }
                        }
                    }
                    Kind::Project => {}
                }
            }
        }
    }
    if reads_project(path) {
        out.project = project_tag(entry);
    }
    out
}

/// A valid importance: ASCII digits only, 1 to 10 (`010` is 10; `0`, `11`, `7.9`, `+5` are
/// not).
pub fn importance_value(value: &str) -> Option<u8> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = value.trim_start_matches('0');
    match digits.parse::<u8>() {
        Ok(n @ 1..=10) => Some(n),
        _ => None,
    }
}

/// The score multiplier of an importance: `0.75 + 0.05·N`, 1 without one.
pub fn importance_multiplier(importance: Option<u8>) -> f64 {
    importance.map_or(1.0, |n| 0.75 + 0.05 * f64::from(n.clamp(1, 10)))
}

/// The `project` tag of an entry's text: every project annotation, all keys valid.
pub fn project_tag(entry: &str) -> ProjectTag {
    let markers = PROJECT_MARKER.find_iter(entry).count();
    if markers == 0 {
        return ProjectTag::Untagged;
    }
    let parsed: Vec<&str> = scan(entry)
        .into_iter()
        .filter(|a| a.kind == Kind::Project)
        .map(|a| a.value)
        .collect();
    if parsed.len() != markers {
        return ProjectTag::Malformed;
    }
    let mut keys: Vec<String> = Vec::new();
    for value in parsed {
        for raw in value.split(';').map(str::trim) {
            let Some(key) = normalise_key(raw) else {
                return ProjectTag::Malformed;
            };
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    ProjectTag::Keys(keys)
}

/// A project key as an annotation writes it: `path:…` verbatim, else the host (before the
/// first `/`) lower-cased; `None` for an empty key or one with `<`, `>` or a line break.
pub fn normalise_key(raw: &str) -> Option<String> {
    if raw.is_empty() || raw.contains(['\r', '\n', '<', '>']) {
        return None;
    }
    if raw.starts_with("path:") {
        return Some(raw.to_string());
    }
    Some(match raw.split_once('/') {
        Some((host, rest)) => format!("{}/{rest}", host.to_lowercase()),
        None => raw.to_lowercase(),
    })
}

/// The score multiplier of a tag against the session's active keys: `None` drops the entry
/// (malformed tag); 1.15 when all its keys are active, 0.90 when some is not, 1 untagged or
/// with no active keys. Keys compare exactly.
pub fn project_multiplier(tag: &ProjectTag, active: &[String]) -> Option<f64> {
    match tag {
        ProjectTag::Malformed => None,
        ProjectTag::Untagged => Some(1.0),
        ProjectTag::Keys(_) if active.is_empty() => Some(1.0),
        ProjectTag::Keys(keys) => Some(if keys.iter().all(|k| active.contains(k)) {
            1.15
        } else {
            0.90
        }),
    }
}

/// `text` without its annotations, for the index: each one closed on its own line is cut
/// out (`a <!-- importance: 9 --> b` becomes `a  b`); when any was, trailing spaces and tabs
/// go from every line. Line count and order never change, so line ranges hold.
pub fn strip(text: &str) -> Cow<'_, str> {
    if !MARKER.is_match(text) {
        return Cow::Borrowed(text);
    }
    let mut removed = false;
    let mut lines: Vec<Cow<str>> = Vec::new();
    for line in text.split('\n') {
        let found = scan(line);
        if found.is_empty() {
            lines.push(Cow::Borrowed(line));
            continue;
        }
        removed = true;
        let mut kept = String::with_capacity(line.len());
        let mut at = 0;
        for a in found {
            kept.push_str(&line[at..a.span.start]);
            at = a.span.end;
        }
        kept.push_str(&line[at..]);
        lines.push(Cow::Owned(kept));
    }
    if !removed {
        return Cow::Borrowed(text);
    }
    let out: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_end_matches([' ', '\t']))
        .collect();
    Cow::Owned(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn importance(entry: &str) -> Option<u8> {
        read("MEMORY.md", entry).importance
    }

    #[test]
    fn importance_values_at_their_edges() {
        let table: &[(&str, Option<u8>)] = &[
            ("- a <!-- importance: 1 -->", Some(1)),
            ("- a <!-- importance: 10 -->", Some(10)),
            ("- a <!-- importance: 0 -->", None),
            ("- a <!-- importance: 11 -->", None),
            ("- a <!-- importance: 7.9 -->", None),
            ("- a <!-- importance: +5 -->", None),
            ("- a <!-- importance: -3 -->", None),
            ("- a <!-- importance: 5 extra -->", None),
            ("- a <!-- importance: -->", None),
            ("- a <!-- importance: 010 -->", Some(10)),
            ("- a <!-- importance: 99999999999999999999 -->", None),
            // spacing and case
            ("- a <!--importance:9-->", Some(9)),
            ("- a <!--   IMPORTANCE   :   4   -->", Some(4)),
            ("- a <!-- Importance: 6 -->   ", Some(6)),
            // text after the comment voids it
            ("- a <!-- importance: 9 --> and more", None),
            // two annotations: the highest wins, in any order, on one line or two
            ("- a <!-- importance: 3 --> <!-- importance: 7 -->", Some(7)),
            ("- a <!-- importance: 7 --> <!-- importance: 3 -->", Some(7)),
            (
                "- a <!-- importance: 3 -->\n  more <!-- importance: 8 -->",
                Some(8),
            ),
            (
                "- a <!-- importance: 8 -->\n  b <!-- importance: 2 --> tail",
                Some(8),
            ),
            // unclosed
            ("- a <!-- importance: 9", None),
            ("- a", None),
        ];
        for (entry, expected) in table {
            assert_eq!(importance(entry), *expected, "{entry:?}");
        }
    }

    #[test]
    fn importance_is_read_in_curated_root_files_only() {
        let entry = "- a <!-- importance: 9 --> <!-- trigger: x -->";
        for (path, curated) in [
            ("MEMORY.md", true),
            ("USER.md", true),
            ("memory/2026-01-02.md", false),
            ("memory/topics.md", false),
            ("memory.md", false),
            ("users/ana/USER.md", false),
            ("notes/MEMORY.md", false),
        ] {
            let a = read(path, entry);
            assert_eq!(a.importance.is_some(), curated, "{path}");
            assert_eq!(!a.triggers.is_empty(), curated, "{path}");
        }
    }

    #[test]
    fn multipliers() {
        assert_eq!(importance_multiplier(None), 1.0);
        for (n, m) in [(1, 0.80), (5, 1.00), (7, 1.10), (9, 1.20), (10, 1.25)] {
            assert!((importance_multiplier(Some(n)) - m).abs() < 1e-12, "{n}");
        }
    }

    #[test]
    fn triggers_split_trim_and_dedupe() {
        let a = read(
            "USER.md",
            "- x <!-- trigger: a, b; c ,, d -->\n  y <!-- TRIGGER: b; e; A -->",
        );
        assert_eq!(a.triggers, ["a", "b", "c", "d", "e", "A"]);
        assert!(read("MEMORY.md", "- x <!-- trigger: a --> tail")
            .triggers
            .is_empty());
        assert!(read("MEMORY.md", "- x <!-- trigger: ;, -->")
            .triggers
            .is_empty());
    }

    #[test]
    fn project_tags_and_malformed_ones() {
        let keys = |v: &[&str]| ProjectTag::Keys(v.iter().map(|s| s.to_string()).collect());
        let table: &[(&str, ProjectTag)] = &[
            ("- a", ProjectTag::Untagged),
            (
                "- a <!-- project: GitHub.com/Acme/Api -->",
                keys(&["github.com/Acme/Api"]),
            ),
            (
                "- a <!-- project: a/x; b/y --> tail is fine",
                keys(&["a/x", "b/y"]),
            ),
            ("- a <!--project:path:/Repo/X-->", keys(&["path:/Repo/X"])),
            (
                "- a <!-- project: k --> <!-- project: K; j -->",
                keys(&["k", "j"]),
            ),
            ("- a <!-- project: -->", ProjectTag::Malformed),
            ("- a <!-- project: ; -->", ProjectTag::Malformed),
            ("- a <!-- project: a;;b -->", ProjectTag::Malformed),
            ("- a <!-- project: x <y> -->", ProjectTag::Malformed),
            ("- a <!-- project: a", ProjectTag::Malformed),
            (
                "- a <!-- trigger: t <!-- project: a -->",
                ProjectTag::Malformed,
            ),
            ("- a <!-- project: a\n b -->", ProjectTag::Malformed),
        ];
        for (entry, expected) in table {
            assert_eq!(&read("MEMORY.md", entry).project, expected, "{entry:?}");
        }
        // every memory file but the root USER.md
        let tagged = "- a <!-- project: a/b -->";
        assert_eq!(read("memory/2026-01-02.md", tagged).project, keys(&["a/b"]));
        assert_eq!(read("USER.md", tagged).project, ProjectTag::Untagged);
        assert_eq!(read("users/x/USER.md", tagged).project, keys(&["a/b"]));
    }

    #[test]
    fn project_multiplier_table() {
        let active = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let tag = |v: &[&str]| ProjectTag::Keys(active(v));
        assert_eq!(
            project_multiplier(&ProjectTag::Untagged, &active(&["a"])),
            Some(1.0)
        );
        assert_eq!(project_multiplier(&ProjectTag::Malformed, &[]), None);
        assert_eq!(project_multiplier(&tag(&["a"]), &[]), Some(1.0));
        assert_eq!(
            project_multiplier(&tag(&["a"]), &active(&["a"])),
            Some(1.15)
        );
        assert_eq!(
            project_multiplier(&tag(&["a", "b"]), &active(&["a"])),
            Some(0.90)
        );
        assert_eq!(
            project_multiplier(&tag(&["a", "b"]), &active(&["d", "c", "b", "a"])),
            Some(1.15)
        );
        assert_eq!(
            project_multiplier(&tag(&["A"]), &active(&["a"])),
            Some(0.90)
        );
    }

    #[test]
    fn stripping_keeps_lines() {
        let table: &[(&str, &str)] = &[
            ("plain\ntext  ", "plain\ntext  "),
            ("a <!-- importance: 9 --> b", "a  b"),
            ("- x <!-- importance: 9 -->  \ny  \t", "- x\ny"),
            ("- x <!--trigger:a--><!-- project: p -->", "- x"),
            // multi-line comments stay (and so does the trailing space)
            (
                "- x <!-- project: a\n b --> ",
                "- x <!-- project: a\n b --> ",
            ),
            ("- x <!-- note: kept -->", "- x <!-- note: kept -->"),
        ];
        for (text, expected) in table {
            assert_eq!(strip(text), *expected, "{text:?}");
            assert_eq!(strip(text).split('\n').count(), text.split('\n').count());
        }
    }
}
