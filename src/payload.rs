//! The agent-facing JSON of `memory_search` and `memory_get` (SPEC §6).

use serde::Serialize;

use crate::config::{Citations, Settings};
use crate::fallback::Fallback;
use crate::search::api::cut_utf16;
use crate::search::{Corpus, SearchResponse};
use crate::store::ChunkRecord;
use crate::wiki;
use crate::workspace::{self, collection::Collection};

/// One result of `memory_search`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    /// Workspace-relative path of the memory file.
    pub path: String,
    /// First line of the chunk (1-based).
    pub start_line: usize,
    /// Last line of the chunk (1-based, inclusive).
    pub end_line: usize,
    /// Final score in 0..1.
    pub score: f64,
    /// The chunk text, cut to 700 UTF-16 units, with the citation when shown.
    pub snippet: String,
    /// `memory` (or `sessions`).
    pub source: String,
    /// `path#Ls-Le`, when citations are shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citation: Option<String>,
    /// Cosine similarity (hybrid answers under 2026.9's semantics; 0 for a keyword-only
    /// hit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_score: Option<f64>,
    /// The keyword score `s/(1+s)` (2026.9's semantics; 0 for a vector-only hit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_score: Option<f64>,
    /// The entry's `importance` annotation (1–10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub importance: Option<u8>,
    /// The entry's `trigger` phrases, joined by `; `.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triggers: Option<String>,
    /// The entry's `project` keys, joined by `; `.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_key: Option<String>,
    /// Where the text came from (a memory file, a transcript chunk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<ProvenancePayload>,
    /// A memory-wiki page's fields (`corpus: "wiki"`, `title`, `kind`, …).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub wiki: Option<WikiFields>,
    /// `path#Ls-Le` of the older result whose fact this newer note replaces, when
    /// memoria's ranking moved it first for that (docs/ranking.md, "Time").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
}

/// What a `wiki` result says of its page, as memory-wiki's corpus supplement writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WikiFields {
    /// `wiki`.
    pub corpus: &'static str,
    /// The page's title.
    pub title: String,
    /// `entity`, `concept`, `source`, `synthesis` or `report`.
    pub kind: &'static str,
    /// `auto` (memory-wiki's balanced mode, the one `memory_search` uses).
    pub search_mode: &'static str,
    /// The page's `id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The page's `aliases`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// `sourceType`, `provenanceMode`, `sourcePath`, `updatedAt`, `entityType`,
    /// `canonicalId`, `privacyTier`: those the page has.
    #[serde(flatten)]
    pub fields: std::collections::BTreeMap<&'static str, String>,
}

/// `provenance` as OpenClaw 2026.9 writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProvenancePayload {
    /// `owner`, `agent`, `system` or `untrusted`.
    pub origin_class: String,
    /// `unknown` (see [`crate::Provenance::session_kind`]).
    pub session_kind: String,
    /// ms since the Unix epoch (see [`crate::Provenance::observed_at`]).
    pub observed_at: u64,
}

/// The `memory_search` payload: results with the mode that served them, or an error payload
/// (`results: []`, `disabled`, `unavailable`, `error`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchPayload {
    /// The hits, best first (empty in an error payload).
    pub results: Vec<SearchResult>,
    /// The embedding provider that served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `null` when no embedding model serves the search.
    #[serde(skip_serializing_if = "is_error_payload_model")]
    pub model: Option<Option<String>>,
    /// `hybrid`, `fts-only` or `vector-only`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The citation mode in effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citations: Option<String>,
    /// What was configured but could not serve, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    /// With `memory.backend = "qmd"`: `qmd`, or `builtin` when memoria's index answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    /// The ranking that ordered the results, when memoria's index answered: `memoria`, or
    /// `openclaw` (OpenClaw 2026.9's, for parity).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranking: Option<String>,
    /// True in an error payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// True when memory search failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<bool>,
    /// What failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the results are empty or partial when they cannot say it themselves (for
    /// example `corpus: "sessions"` while session memory is off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

fn is_error_payload_model(model: &Option<Option<String>>) -> bool {
    model.is_none()
}

impl SearchPayload {
    /// The failure payload: the agent is told memory search is unavailable and why.
    pub fn unavailable(error: impl Into<String>) -> SearchPayload {
        SearchPayload {
            results: Vec::new(),
            provider: None,
            model: None,
            mode: None,
            citations: None,
            fallback: None,
            backend: None,
            ranking: None,
            disabled: Some(true),
            unavailable: Some(true),
            error: Some(error.into()),
            warning: None,
        }
    }
}

/// Builds the `memory_search` payload from ranked hits: each snippet is the first
/// `snippet_chars` of its chunk, and while `injected_chars` bounds them all, the snippets
/// are cut (and the hits after the budget dropped) to fit it.
pub fn search_payload(
    response: &SearchResponse,
    citations: Citations,
    group_context: bool,
) -> SearchPayload {
    let SearchResponse {
        hits,
        served,
        warning,
        snippet_chars,
        injected_chars,
        recall_fields,
        ranking,
        candidates: _,
    } = response;
    let hybrid = served.mode == crate::search::Mode::Hybrid;
    let cite = citations.shown(group_context);
    let mut budget = injected_chars.unwrap_or(usize::MAX);
    let results = hits
        .iter()
        .map_while(|hit| {
            let citation = citation(&hit.path, hit.start_line, hit.end_line);
            if budget == 0 {
                return None;
            }
            let mut snippet = cut_utf16(&hit.text, (*snippet_chars).min(budget)).to_string();
            budget -= snippet.encode_utf16().count();
            // memory-wiki's results carry no citation.
            let cite = cite && hit.wiki.is_none();
            if cite {
                snippet.push_str("\n\nSource: ");
                snippet.push_str(&citation);
            }
            Some(SearchResult {
                path: hit.path.clone(),
                start_line: hit.start_line,
                end_line: hit.end_line,
                score: hit.score,
                snippet,
                source: hit.source.clone(),
                citation: cite.then_some(citation),
                vector_score: (*recall_fields && hybrid && hit.wiki.is_none())
                    .then(|| hit.vector_score.unwrap_or(0.0)),
                text_score: (*recall_fields && hit.wiki.is_none()).then_some(hit.text_score),
                importance: hit.recall.importance,
                triggers: (!hit.recall.triggers.is_empty()).then(|| hit.recall.triggers.join("; ")),
                project_key: hit.recall.project_key.clone(),
                provenance: hit.recall.provenance.as_ref().map(|p| ProvenancePayload {
                    origin_class: p.origin_class.to_string(),
                    session_kind: p.session_kind.to_string(),
                    observed_at: p.observed_at,
                }),
                wiki: hit.wiki.as_ref().map(|page| WikiFields {
                    corpus: "wiki",
                    title: page.title.clone(),
                    kind: page.kind,
                    search_mode: "auto",
                    id: page.id.clone(),
                    aliases: page.aliases.clone(),
                    fields: page.fields.iter().cloned().collect(),
                }),
                supersedes: hit
                    .supersedes
                    .as_ref()
                    .map(|s| self::citation(&s.path, s.start_line, s.end_line)),
            })
        })
        .collect();
    SearchPayload {
        results,
        provider: Some(served.provider.clone()),
        model: Some(served.model.clone()),
        mode: Some(served.mode.as_str().to_string()),
        citations: Some(citations.as_str().to_string()),
        fallback: served.fallback.clone(),
        backend: served.backend.clone(),
        ranking: ranking.map(|r| r.as_str().to_string()),
        disabled: None,
        unavailable: None,
        error: None,
        warning: warning.clone(),
    }
}

/// `path#Ls-Le`, or `path#Ln` when the range is one line.
pub fn citation(path: &str, start: usize, end: usize) -> String {
    if start == end {
        format!("{path}#L{start}")
    } else {
        format!("{path}#L{start}-L{end}")
    }
}

/// The `memory_get` payload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GetPayload {
    /// The path asked for.
    pub path: String,
    /// The lines read (empty for a missing file).
    pub text: String,
    /// True when the path is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Why the path is refused or could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A memory-wiki page's read (`corpus: "wiki"` or `"all"`): `ok` or `not_found`, and
    /// the page's fields.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub wiki: Option<WikiRead>,
    /// `index` when the text is the index's copy of the file rather than the file (its
    /// workspace is not on this machine: a fleet node); absent when read from the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<&'static str>,
    /// What a reader of the index's copy should know: which workspace is absent, the
    /// generation read, lines the index does not hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What `memory_get` says of a memory-wiki page, as memory-wiki's supplement does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WikiRead {
    /// `ok`, or `not_found` when no page answers the lookup.
    pub status: &'static str,
    /// `wiki` when a page was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corpus: Option<&'static str>,
    /// The page's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The page's kind (`entity`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// The first body line read (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_line: Option<usize>,
    /// Lines asked for (200 by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_count: Option<usize>,
    /// Lines in the page's body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<usize>,
    /// More lines follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// The page's `id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The page's `aliases`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// The page's reported front-matter fields (as in a search hit).
    #[serde(flatten)]
    pub fields: std::collections::BTreeMap<&'static str, String>,
}

impl GetPayload {
    /// The refusal payload for `path`.
    pub fn denied(path: &str, error: impl Into<String>) -> GetPayload {
        GetPayload {
            path: path.to_string(),
            disabled: Some(true),
            error: Some(error.into()),
            ..GetPayload::default()
        }
    }
}

/// Lines `from ..= from + lines - 1` (1-based) of `text`; the whole text when both are
/// unset. `from` below 1 reads from line 1, `lines` below 1 reads one line, and a range past
/// the end reads what exists (possibly nothing).
pub fn slice_lines(text: &str, from: Option<i64>, lines: Option<i64>) -> String {
    if from.is_none() && lines.is_none() {
        return text.to_string();
    }
    let start = from.unwrap_or(1).max(1) as usize - 1;
    let count = lines.map_or(usize::MAX, |n| n.max(1) as usize);
    text.split('\n')
        .skip(start)
        .take(count)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The index's copy of one file, for `memory_get` where its workspace is absent: the
/// generation read, and the chunks of the file (any order).
pub(crate) struct StoredFile {
    /// The committed generation the chunks come from.
    pub generation: u64,
    /// The file's chunks.
    pub chunks: Vec<ChunkRecord>,
}

/// Looks up the index's copy of a file by its indexed path (`None`: not indexed).
pub(crate) type StoredLookup<'a> = &'a dyn Fn(&str) -> Result<Option<StoredFile>, String>;

/// The `memory_get` tool (SPEC §6): whole file, or `lines` lines from line `from`, of a
/// path the `memory_get` policy allows (the workspace's memory files, `extra_paths`, QMD
/// `collections`); a refused path is the SPEC's error payload with the reason.
///
/// Where the file's directory is not on this machine (a fleet node that serves an agent
/// from the store alone, a workspace or extra path moved away) and the index holds the
/// file, the text is the index's copy ([`lines_from_chunks`]), found by `stored` and
/// marked `from: "index"`.
fn memory_get(
    settings: &Settings,
    collections: &[Collection],
    path: &str,
    from: Option<i64>,
    lines: Option<i64>,
    stored: StoredLookup,
) -> GetPayload {
    let resolved = workspace::resolve_get_path(
        &settings.workspace,
        &settings.extra_paths,
        collections,
        path,
    );
    let target = match resolved {
        Ok(target) => target,
        Err(denied) => return GetPayload::denied(path, denied.0),
    };
    if let Some(absent) = target.file.parent().filter(|dir| !dir.is_dir()) {
        let indexed = workspace::relative_path(&settings.workspace, &target.file);
        let absent = format!("{} is not on this machine", absent.display());
        match stored(&indexed) {
            Ok(Some(file)) => return index_copy(file, path, &absent, from, lines),
            Ok(None) if !settings.workspace.is_dir() => {
                return GetPayload {
                    path: path.to_string(),
                    note: Some(format!("{absent}, and the index holds no file {indexed}")),
                    ..GetPayload::default()
                }
            }
            // A missing file of a present workspace reads as empty, as in OpenClaw.
            Ok(None) => {}
            Err(why) => {
                return GetPayload {
                    path: path.to_string(),
                    error: Some(format!("{absent}, and the index could not be read: {why}")),
                    ..GetPayload::default()
                }
            }
        }
    }
    match workspace::read_allowed(&target, path) {
        Ok(bytes) => GetPayload {
            path: path.to_string(),
            text: bytes.map_or_else(String::new, |bytes| {
                slice_lines(&workspace::decode_text(bytes).0, from, lines)
            }),
            ..GetPayload::default()
        },
        Err(denied) => GetPayload::denied(path, denied.0),
    }
}

/// `memory_get` of `path` from the index's copy of it, `absent` saying what is missing.
fn index_copy(
    file: StoredFile,
    path: &str,
    absent: &str,
    from: Option<i64>,
    lines: Option<i64>,
) -> GetPayload {
    let held = lines_from_chunks(&file.chunks);
    let whole: Vec<&str> = held.iter().map(|l| l.unwrap_or_default()).collect();
    let text = slice_lines(&whole.join("\n"), from, lines);
    let start = from.unwrap_or(1).max(1) as usize;
    let end = match lines {
        Some(n) => (start + n.max(1) as usize - 1).min(held.len()),
        None => held.len(),
    };
    let missing =
        line_ranges((start..=end).filter(|&line| held.get(line - 1).is_some_and(Option::is_none)));
    let mut note = format!(
        "{absent}: the text is the index's copy, as of its generation {}",
        file.generation
    );
    if !missing.is_empty() {
        note.push_str(&format!(
            "; lines {missing} are not held whole by the index (blank here)"
        ));
    }
    GetPayload {
        path: path.to_string(),
        text,
        from: Some("index"),
        note: Some(note),
        ..GetPayload::default()
    }
}

/// A file's lines as its chunks hold them, by line number (index 0 is line 1), up to its
/// last chunk's last line. A chunk gives its lines when its text has one line per line of
/// its range. A line longer than a chunk is cut into segments, and the chunks holding them
/// each claim the line with a different text: such a line stays `None`, as do lines no
/// chunk covers.
pub(crate) fn lines_from_chunks(chunks: &[ChunkRecord]) -> Vec<Option<&str>> {
    let last = chunks.iter().map(|c| c.end_line).max().unwrap_or(0);
    let mut held: Vec<Option<&str>> = vec![None; last];
    let mut cut = vec![false; last];
    for chunk in chunks {
        let parts: Vec<&str> = chunk.text.split('\n').collect();
        let span = chunk.end_line.checked_sub(chunk.start_line).map(|d| d + 1);
        if chunk.start_line == 0 || span != Some(parts.len()) {
            continue;
        }
        for (offset, line) in parts.into_iter().enumerate() {
            let at = chunk.start_line - 1 + offset;
            match held[at] {
                Some(known) if known != line => cut[at] = true,
                _ => held[at] = Some(line),
            }
        }
    }
    held.into_iter()
        .zip(cut)
        .map(|(line, cut)| line.filter(|_| !cut))
        .collect()
}

/// `3-5, 9` for lines 3, 4, 5 and 9 (ascending).
fn line_ranges(lines: impl Iterator<Item = usize>) -> String {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for line in lines {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == line => *end = line,
            _ => ranges.push((line, line)),
        }
    }
    ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `memory_get` with its `corpus` (see `Memory::memory_get_in`).
pub(crate) fn memory_get_in(
    settings: &Settings,
    collections: &[Collection],
    corpus: Corpus,
    path: &str,
    from: Option<i64>,
    lines: Option<i64>,
    stored: StoredLookup,
) -> GetPayload {
    let memory = || memory_get(settings, collections, path, from, lines, stored);
    match corpus {
        Corpus::Wiki => wiki_get(settings, path, from, lines),
        Corpus::Memory | Corpus::Sessions => memory(),
        Corpus::All => {
            let memory = memory();
            if memory.error.is_none() && !memory.text.is_empty() {
                return memory;
            }
            match wiki_get(settings, path, from, lines) {
                page if page.error.is_none() => page,
                _ => memory,
            }
        }
    }
}

/// `memory_get` of the memory-wiki vault (`corpus: "wiki"`): `lines` (200 by default) body
/// lines from line `from` (1 by default) of the page `lookup` names (its vault path, with
/// or without `.md`, its file stem or its `id`); `status: "not_found"` with the reason
/// when none does.
pub(crate) fn wiki_get(
    settings: &Settings,
    lookup: &str,
    from: Option<i64>,
    lines: Option<i64>,
) -> GetPayload {
    let not_found = |why: String| GetPayload {
        path: lookup.to_string(),
        text: String::new(),
        disabled: None,
        error: Some(why),
        from: None,
        note: None,
        wiki: Some(WikiRead {
            status: "not_found",
            corpus: None,
            title: None,
            kind: None,
            from_line: None,
            line_count: None,
            total_lines: None,
            truncated: None,
            id: None,
            aliases: Vec::new(),
            fields: Default::default(),
        }),
    };
    let vault = settings.wiki_vault();
    let pages = match wiki::vault_pages(vault.as_deref()) {
        Ok(pages) => pages,
        Err(why) => return not_found(why),
    };
    let Some(page) = wiki::lookup(&pages, lookup).and_then(|i| pages.into_iter().nth(i)) else {
        return not_found(format!(
            "no page of the memory-wiki vault is named {lookup:?} (by path, file name or id)"
        ));
    };
    let from = from.unwrap_or(1).max(1) as usize;
    let count = lines.unwrap_or(200).max(1) as usize;
    let body: Vec<&str> = page
        .body
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .collect();
    GetPayload {
        path: page.path,
        text: body
            .iter()
            .skip(from - 1)
            .take(count)
            .copied()
            .collect::<Vec<_>>()
            .join("\n"),
        disabled: None,
        error: None,
        from: None,
        note: None,
        wiki: Some(WikiRead {
            status: "ok",
            corpus: Some("wiki"),
            title: Some(page.title),
            kind: Some(page.kind),
            from_line: Some(from),
            line_count: Some(count),
            total_lines: Some(body.len()),
            truncated: Some(from - 1 + count < body.len()),
            id: page.id,
            aliases: page.aliases,
            fields: page.fields.into_iter().collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::api::SNIPPET_CHARS;
    use crate::search::{Hit, Mode, Served};

    #[test]
    fn slice_table() {
        let text = "l1\nl2\nl3\nl4";
        let cases = [
            (None, None, "l1\nl2\nl3\nl4"),
            (Some(2), None, "l2\nl3\nl4"),
            (Some(2), Some(2), "l2\nl3"),
            (None, Some(1), "l1"),
            (Some(0), Some(1), "l1"),
            (Some(-5), Some(2), "l1\nl2"),
            (Some(3), Some(0), "l3"),
            (Some(4), Some(10), "l4"),
            (Some(9), Some(1), ""),
        ];
        for (from, lines, want) in cases {
            assert_eq!(
                slice_lines(text, from, lines),
                want,
                "from {from:?} lines {lines:?}"
            );
        }
    }

    fn chunk(start_line: usize, end_line: usize, text: &str) -> ChunkRecord {
        ChunkRecord {
            path: "memory/a.md".into(),
            source: "memory".into(),
            start_line,
            end_line,
            hash: String::new(),
            text: text.into(),
            title: String::new(),
            annotations: Default::default(),
        }
    }

    #[test]
    fn a_files_lines_from_its_chunks() {
        // (chunks as (start, end, text), lines held: `_` for none)
        type Case<'a> = (&'a [(usize, usize, &'a str)], &'a [&'a str]);
        let cases: &[Case] = &[
            (&[], &[]),
            (&[(1, 3, "a\nb\nc")], &["a", "b", "c"]),
            // Overlapping chunks agree; order does not matter.
            (&[(3, 4, "c\nd"), (1, 3, "a\nb\nc")], &["a", "b", "c", "d"]),
            // Entry chunks leave a gap (line 3); a line cut into segments is held by none.
            (&[(1, 2, "a\nb"), (4, 4, "d")], &["a", "b", "_", "d"]),
            (&[(1, 1, "a"), (2, 2, "lo\nng")], &["a", "_"]),
            // Segments of a long line in chunks of their own claim it with different texts.
            (
                &[(1, 1, "a"), (2, 2, "lo"), (2, 3, "ng\nc")],
                &["a", "_", "c"],
            ),
            // A range that is not one (end before start) gives nothing.
            (&[(3, 2, "x")], &["_", "_"]),
        ];
        for (chunks, want) in cases {
            let chunks: Vec<ChunkRecord> = chunks.iter().map(|&(s, e, t)| chunk(s, e, t)).collect();
            let held: Vec<&str> = lines_from_chunks(&chunks)
                .into_iter()
                .map(|l| l.unwrap_or("_"))
                .collect();
            assert_eq!(&held, want);
        }
        assert_eq!(line_ranges([1, 2, 3, 5, 7, 8].into_iter()), "1-3, 5, 7-8");
        assert_eq!(line_ranges(std::iter::empty()), "");
    }

    #[test]
    fn citations_and_snippets() {
        assert_eq!(citation("memory/a.md", 3, 3), "memory/a.md#L3");
        assert_eq!(citation("memory/a.md", 1, 14), "memory/a.md#L1-L14");
        assert_eq!(cut_utf16(&"x".repeat(800), SNIPPET_CHARS).len(), 700);
        let astral = "😀".repeat(400); // 800 units: 350 characters fit
        assert_eq!(cut_utf16(&astral, SNIPPET_CHARS).chars().count(), 350);
        assert!(Citations::Auto.shown(false));
        assert!(!Citations::Auto.shown(true));
        assert!(!Citations::Off.shown(false));
    }

    #[test]
    fn payload_json_shapes() {
        let hit = Hit {
            id: "x".into(),
            path: "memory/2026-01-12.md".into(),
            source: "memory".into(),
            start_line: 1,
            end_line: 14,
            text: "hello".into(),
            score: 0.71,
            text_score: 0.71,
            vector_score: None,
            recall: Default::default(),
            wiki: None,
            supersedes: Some(crate::search::Superseded {
                path: "memory/2026-01-02.md".into(),
                start_line: 1,
                end_line: 7,
            }),
        };
        let served = Served {
            provider: "none".into(),
            model: None,
            mode: Mode::FtsOnly,
            fallback: None,
            backend: None,
        };
        let response = SearchResponse::new(vec![hit], served, None);
        let json = serde_json::to_value(search_payload(&response, Citations::On, false)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "results": [{"path": "memory/2026-01-12.md", "startLine": 1, "endLine": 14,
                    "score": 0.71, "snippet": "hello\n\nSource: memory/2026-01-12.md#L1-L14",
                    "source": "memory", "citation": "memory/2026-01-12.md#L1-L14",
                    "supersedes": "memory/2026-01-02.md#L1-L7"}],
                "provider": "none", "model": null, "mode": "fts-only", "citations": "on"
            })
        );
        // QMD's limits: 3 units per snippet, 5 in all: the second is cut, the third dropped.
        let mut qmd = response.clone();
        qmd.hits = vec![qmd.hits[0].clone(); 3];
        qmd.hits.iter_mut().for_each(|h| h.text = "abcdef".into());
        qmd.snippet_chars = 3;
        qmd.injected_chars = Some(5);
        qmd.served.backend = Some("qmd".into());
        let payload = search_payload(&qmd, Citations::Off, false);
        let snippets: Vec<_> = payload.results.iter().map(|r| r.snippet.as_str()).collect();
        assert_eq!(snippets, ["abc", "ab"]);
        assert_eq!(payload.backend.as_deref(), Some("qmd"));
        let json = serde_json::to_value(SearchPayload::unavailable("boom")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"results": [], "disabled": true, "unavailable": true, "error": "boom"})
        );
        let json = serde_json::to_value(GetPayload::denied("NOTES.md", "no")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"path": "NOTES.md", "text": "", "disabled": true, "error": "no"})
        );
    }
}
