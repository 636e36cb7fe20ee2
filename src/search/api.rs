//! The public search vocabulary: what a caller asks ([`SearchOptions`], [`Corpus`]) and
//! what it gets back ([`SearchResponse`]: [`Hit`]s and what [`Served`] them, in which
//! [`Mode`]). These types know nothing of the index: a hit carries its own path, line range
//! and text, so a caller (the payload module, QMD's answers, the CLI) never builds or reads
//! catalog records.

use crate::config::{Chat, Ranking};
use crate::fallback::Fallback;

/// UTF-16 units of a chunk's text shown as its snippet (SPEC §6).
pub const SNIPPET_CHARS: usize = 700;

/// What served a search: reported in every payload's header.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    /// The embedding provider (`none` when keyword-only).
    pub provider: String,
    /// The embedding model, when there is one.
    pub model: Option<String>,
    /// Which retrieval served.
    pub mode: Mode,
    /// What was configured but could not serve, and why.
    pub fallback: Option<Fallback>,
    /// With `memory.backend = "qmd"`: the engine that answered (`qmd`, or `builtin` when
    /// memoria's own index did); `None` with the built-in backend.
    pub backend: Option<String>,
}

/// Which retrieval served a search (reported in every payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Keyword and vector candidates, fused.
    Hybrid,
    /// Keyword (BM25) candidates only.
    FtsOnly,
    /// Vector candidates only.
    VectorOnly,
}

impl Mode {
    /// The payload's name for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Hybrid => "hybrid",
            Mode::FtsOnly => "fts-only",
            Mode::VectorOnly => "vector-only",
        }
    }
}

/// The source of a chunk from its path: transcripts are the only `.jsonl` paths
/// (`sessions/<file>.jsonl`); every memory file is Markdown.
pub(crate) fn source_of(path: &str) -> &'static str {
    if path.ends_with(".jsonl") {
        "sessions"
    } else {
        "memory"
    }
}

/// One search result: a ranked chunk with its place in the workspace and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The chunk's id.
    pub id: String,
    /// Workspace-relative path of the file (`memory/2026-01-02.md`, `sessions/<id>.jsonl`).
    pub path: String,
    /// `memory` or `sessions`.
    pub source: String,
    /// First line (1-based).
    pub start_line: usize,
    /// Last line (1-based, inclusive).
    pub end_line: usize,
    /// The chunk's text.
    pub text: String,
    /// Final score in 0..1.
    pub score: f64,
    /// `s / (1 + s)` of the BM25 score, 0 when keyword search did not return the chunk.
    pub text_score: f64,
    /// Cosine similarity, when the vector side returned the chunk.
    pub vector_score: Option<f64>,
    /// What its entry's annotations say (OpenClaw 2026.9's semantics; empty otherwise).
    pub recall: Recall,
    /// The memory-wiki page of a `wiki` hit (whose `source` is `wiki`, `path` is
    /// vault-relative, lines are the snippet's line of the page's body, and `score` is
    /// memory-wiki's whole-number score).
    pub wiki: Option<WikiPage>,
    /// The older hit whose fact this newer note replaces, when memoria's ranking moved it
    /// first for that (see docs/ranking.md, "Time").
    pub supersedes: Option<Superseded>,
}

#[cfg(test)]
impl Hit {
    /// A memory hit of `text` (its lines from 1) at `path`, scored `score`: the steps after
    /// the page read nothing else.
    pub(crate) fn of_text(path: &str, score: f64, text: &str) -> Hit {
        Hit {
            id: path.into(),
            path: path.into(),
            source: "memory".into(),
            start_line: 1,
            end_line: text.lines().count().max(1),
            text: text.into(),
            score,
            text_score: 0.0,
            vector_score: None,
            recall: Default::default(),
            wiki: None,
            supersedes: None,
        }
    }
}

/// The older hit a newer note supersedes: its place in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseded {
    /// Workspace-relative path of the older note.
    pub path: String,
    /// First line of its chunk (1-based).
    pub start_line: usize,
    /// Last line of its chunk (1-based, inclusive).
    pub end_line: usize,
}

/// What a `wiki` hit says of its page, as memory-wiki reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct WikiPage {
    /// The page's title.
    pub title: String,
    /// `entity`, `concept`, `source`, `synthesis` or `report`.
    pub kind: &'static str,
    /// The front matter's `id`.
    pub id: Option<String>,
    /// The front matter's `aliases`.
    pub aliases: Vec<String>,
    /// The front matter's `sourceType`, `provenanceMode`, `sourcePath`, `updatedAt`,
    /// `entityType`, `canonicalId` and `privacyTier`, those it has.
    pub fields: Vec<(&'static str, String)>,
}

/// What a hit's memory entry says of itself under OpenClaw 2026.9's semantics: its
/// annotations, and where the text came from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recall {
    /// `<!-- importance: N -->` (1–10) of a `MEMORY.md` / `USER.md` entry.
    pub importance: Option<u8>,
    /// `<!-- trigger: … -->` phrases.
    pub triggers: Vec<String>,
    /// `<!-- project: … -->` keys, joined by `; `.
    pub project_key: Option<String>,
    /// Where the text came from (memory files and session transcripts).
    pub provenance: Option<Provenance>,
}

/// Where a hit's text came from (OpenClaw 2026.9's `provenance`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// A memory file: `agent` (workspace memory), `system` (dreaming output), `untrusted`
    /// (files outside the workspace). A transcript chunk: the least trusted of its
    /// messages' `owner`, `agent`, `system`, `untrusted`.
    pub origin_class: &'static str,
    /// `unknown`: memoria reads transcripts from their JSONL files, which do not say
    /// (OpenClaw knows it from its session store).
    pub session_kind: &'static str,
    /// Milliseconds since the Unix epoch: a memory file's modification time; the latest
    /// message time of a transcript chunk (the file's modification time for a message
    /// without one).
    pub observed_at: u64,
}

/// Per-call search options; unset fields come from the configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchOptions {
    /// Results to return (`query.maxResults` when unset).
    pub max_results: Option<usize>,
    /// Lowest score returned (`query.minScore` when unset), clamped to 0..1.
    pub min_score: Option<f64>,
    /// The chat the search serves (citations `auto` are hidden in group and channel chats;
    /// with the QMD backend, `memory.qmd.scope` decides on it). Default: a direct chat.
    pub chat: Chat,
    /// Which sources to search (`corpus`): every enabled one by default.
    pub corpus: Corpus,
    /// Keyword (BM25) scoring only: the query is not embedded (OpenClaw's `lexicalOnly`,
    /// which its fast recall paths ask for). The answer's mode is `fts-only`, with no
    /// fallback, since it was asked for. With the QMD backend, QMD answers in its
    /// configured `searchMode`.
    pub lexical_only: bool,
    /// The session's active project keys, most recent first (OpenClaw's
    /// `activeProjectKeys`; see [`crate::project`]). Under 2026.9's semantics an entry tagged
    /// `<!-- project: … -->` ranks × 1.15 when all its keys are here, × 0.90 otherwise.
    /// OpenClaw's sessions pass their [`crate::project::MAX_ACTIVE`] most recent.
    pub active_project_keys: Vec<String>,
    /// Also return the fusion's inputs ([`SearchResponse::candidates`]), to study ranking
    /// rules offline (`memoria eval --candidates`). memoria's own index only.
    pub trace: bool,
}

/// The `corpus` argument of `memory_search`: which sources a search covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Corpus {
    /// Every enabled source (`all`, the default): memory files, session transcripts when
    /// indexed, and the memory-wiki vault when there is one (up to half the results each
    /// while both have hits, as OpenClaw 2026.9 balances them).
    #[default]
    All,
    /// Memory files only.
    Memory,
    /// Session transcripts only.
    Sessions,
    /// The memory-wiki plugin's vault only (read-only; see `Settings::wiki_vault`).
    Wiki,
}

impl Corpus {
    /// Parses `memory`, `sessions`, `wiki` or `all`.
    pub fn parse(name: &str) -> Option<Corpus> {
        match name {
            "all" => Some(Corpus::All),
            "memory" => Some(Corpus::Memory),
            "sessions" => Some(Corpus::Sessions),
            "wiki" => Some(Corpus::Wiki),
            _ => None,
        }
    }

    /// The one source searched, or `None` for all of them.
    pub(crate) fn source(self) -> Option<&'static str> {
        match self {
            Corpus::All => None,
            Corpus::Memory => Some("memory"),
            Corpus::Sessions => Some("sessions"),
            Corpus::Wiki => Some("wiki"),
        }
    }
}

/// Ranked hits and what served them.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResponse {
    /// Best first.
    pub hits: Vec<Hit>,
    /// The mode, provider, model and fallback behind the hits.
    pub served: Served,
    /// Why the answer is empty or partial when the hits alone cannot say (a corpus that is
    /// not indexed); the payload's `warning`.
    pub warning: Option<String>,
    /// UTF-16 units of each hit's text shown as its snippet (700; QMD's
    /// `limits.maxSnippetChars`).
    pub snippet_chars: usize,
    /// UTF-16 units of all snippets together, when bounded (QMD's `limits.maxInjectedChars`).
    pub injected_chars: Option<usize>,
    /// The results carry OpenClaw 2026.9's fields (`textScore`, `vectorScore`,
    /// `importance`, `triggers`, `projectKey`, `provenance`).
    pub recall_fields: bool,
    /// The ranking that ordered the hits; `None` when memoria's index did not answer (QMD
    /// ranks its own).
    pub ranking: Option<Ranking>,
    /// What the fusion ranked, when [`SearchOptions::trace`] asked for it and memoria's own
    /// index answered.
    pub candidates: Option<Candidates>,
}

/// The inputs of one search's fusion: each side's candidates for the widest pool the
/// request needed, best first, with their raw scores, and the rule that ranked them.
/// `scripts/fusion_replay.py` re-ranks them under other rules (docs/ranking.md, "How memoria
/// ranks").
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidates {
    /// `zscore`, `minmax`, `weighted` or `rrf`; `2026.9` for OpenClaw 2026.9's ranking.
    pub fusion: String,
    /// The vector side's weight.
    pub vector_weight: f64,
    /// The keyword side's weight as configured (the floor of `minScore`'s relaxation).
    pub text_weight: f64,
    /// What the fusion multiplied `text_weight` by: in memoria's z-score and min-max
    /// fusions, the share of the query the keyword side's best chunk holds (up to 1).
    pub keyword_confidence: f64,
    /// Each candidate file's temporal-decay factor, when decay is on (every score of the
    /// file is multiplied by it).
    pub decay: std::collections::BTreeMap<String, f64>,
    /// MMR reordered the hits (`query.hybrid.mmr.enabled`).
    pub mmr: bool,
    /// The lowest score returned, as the search applied it (after the model's calibration).
    pub min_score: f64,
    /// `query.maxResults`: the first tier's size (`tiered_top`).
    pub base_results: usize,
    /// `candidateMultiplier`: each tier's pool is this many times its size.
    pub candidate_multiplier: usize,
    /// Keyword candidates; `score` is raw BM25. Empty when the keyword side did not run.
    pub keyword: Vec<Candidate>,
    /// Vector candidates; `score` is the cosine (with passages, the best of the chunk's
    /// passages'). Empty when the vector side did not serve.
    pub vector: Vec<Candidate>,
}

/// One chunk a side proposed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The chunk's id.
    pub id: String,
    /// Workspace-relative path.
    pub path: String,
    /// 1-based first line.
    pub start_line: usize,
    /// 1-based last line.
    pub end_line: usize,
    /// The side's raw score.
    pub score: f64,
}

impl SearchResponse {
    /// A response with the usual snippet length and no total bound.
    pub fn new(hits: Vec<Hit>, served: Served, warning: Option<String>) -> SearchResponse {
        SearchResponse {
            hits,
            served,
            warning,
            snippet_chars: SNIPPET_CHARS,
            injected_chars: None,
            recall_fields: false,
            ranking: None,
            candidates: None,
        }
    }
}

/// The first `max` UTF-16 units of `text` (OpenClaw counts JavaScript string length), never
/// splitting a character.
pub(crate) fn cut_utf16(text: &str, max: usize) -> &str {
    let mut units = 0;
    for (byte, ch) in text.char_indices() {
        units += ch.len_utf16();
        if units > max {
            return &text[..byte];
        }
    }
    text
}
