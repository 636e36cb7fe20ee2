//! Retrieval quality measured through the real `memory_search` path (`memoria eval`).
//!
//! Two kinds of data (see `../shared/eval/README.md`):
//! - **memory workspaces** (LoCoMo): questions with evidence lines; a question is answered
//!   when a returned chunk of the evidence file covers an evidence line. Reported: evidence
//!   recall@1 (the answer came first) and @k (k = maxResults), and MRR.
//! - **BEIR** corpora: each document is written as one Markdown file under `memory/` of a
//!   scratch workspace; results are mapped back to documents. Reported: nDCG@10,
//!   recall@10, recall@6 and MRR@10.
//!
//! With a [`CandidateLog`], every question's fusion inputs are written down too, so a
//! ranking rule can be tried offline in seconds (`scripts/fusion_replay.py`) instead of
//! re-running the searches.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Settings;
use crate::error::{Error, Result};
use crate::search::{Hit, SearchOptions, SearchResponse};
use crate::Memory;

/// A LoCoMo-style question.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EvidenceQuery {
    /// The question.
    pub query: String,
    /// The lines that answer it.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
}

/// One line that answers a question.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub(crate) struct Evidence {
    /// Workspace-relative path.
    pub path: String,
    /// 1-based line.
    pub line: usize,
}

/// Scores of one evaluated set.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// The set's name (a workspace or a corpus).
    pub name: String,
    /// `bm25`, `vector` or `hybrid`.
    pub mode: String,
    /// Questions evaluated.
    pub queries: usize,
    /// `recall@k` → value.
    pub recall: Vec<(usize, f64)>,
    /// Mean reciprocal rank of the first relevant result.
    pub mrr: f64,
    /// nDCG@10, for graded qrels (BEIR sets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ndcg10: Option<f64>,
    /// Queries that got no result at all.
    pub empty: usize,
}

/// `memoria eval --candidates FILE`: one JSON line per question with what its search
/// fused ([`crate::Candidates`]), what it returned and what answers it:
///
/// ```json
/// {"set": "conv-26", "query": "…", "mode": "hybrid", "maxResults": 6,
///  "evidence": [{"path": "memory/2023-05-08.md", "line": 4}],
///  "candidates": {"fusion": "zscore", "vectorWeight": 0.5, "textWeight": 0.5, …,
///                 "keyword": [{"id": "…", "path": "…", "startLine": 1, "endLine": 9,
///                              "score": 7.3}, …], "vector": […]},
///  "hits": [{"path": "…", "startLine": 1, "endLine": 9, "score": 0.97}, …]}
/// ```
///
/// A BEIR question has `relevant` (a document's file path → its grade) instead of
/// `evidence`.
pub struct CandidateLog {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

/// A returned hit, as the log writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LoggedHit<'a> {
    path: &'a str,
    start_line: usize,
    end_line: usize,
    score: f64,
    /// The older hit this one superseded (memoria's ranking, docs/ranking.md "Time").
    #[serde(skip_serializing_if = "Option::is_none")]
    supersedes: Option<&'a str>,
}

/// What answers a logged question.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Answers<'a> {
    Evidence(&'a [Evidence]),
    Relevant(HashMap<&'a str, f64>),
}

/// One line of the log.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Logged<'a> {
    set: &'a str,
    query: &'a str,
    mode: &'static str,
    max_results: usize,
    #[serde(flatten)]
    answers: Answers<'a>,
    candidates: Option<&'a crate::Candidates>,
    hits: Vec<LoggedHit<'a>>,
}

impl CandidateLog {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> Result<CandidateLog> {
        let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        Ok(CandidateLog {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
        })
    }

    fn record(
        &mut self,
        set: &str,
        query: &str,
        max_results: usize,
        answers: Answers,
        response: &SearchResponse,
    ) -> Result<()> {
        let line = Logged {
            set,
            query,
            mode: response.served.mode.as_str(),
            max_results,
            answers,
            candidates: response.candidates.as_ref(),
            hits: response
                .hits
                .iter()
                .map(|h| LoggedHit {
                    path: &h.path,
                    start_line: h.start_line,
                    end_line: h.end_line,
                    score: h.score,
                    supersedes: h.supersedes.as_ref().map(|s| s.path.as_str()),
                })
                .collect(),
        };
        serde_json::to_writer(&mut self.out, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(self.out))
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Writes out what is buffered.
    pub fn finish(mut self) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }
}

/// Keyword-only and embedding runs keep separate agent directories under the scratch dir,
/// so switching modes does not rebuild either one.
fn index_dir_name(settings: &Settings) -> &'static str {
    if settings.provider == crate::config::ProviderKind::None {
        "index-keyword"
    } else {
        "index"
    }
}

/// Points the settings' store at `scratch`: its agent directory there and, in fleet mode,
/// a prefix of the store's URI named after it, so each evaluated workspace has an index
/// of its own.
fn scratch_store(settings: &mut Settings, scratch: &Path) {
    let name = index_dir_name(settings);
    settings.store.dir = Some(scratch.join(name));
    if let crate::config::StoreBackend::LanceDb { uri, .. } = &mut settings.store.backend {
        let workspace = scratch
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        *uri = format!("{}/{workspace}-{name}", uri.trim_end_matches('/'));
    }
}

/// Rank (1-based) of the first hit covering an evidence line.
pub(crate) fn evidence_rank(hits: &[Hit], evidence: &[Evidence]) -> Option<usize> {
    hits.iter()
        .position(|h| {
            evidence
                .iter()
                .any(|e| e.path == h.path && h.start_line <= e.line && e.line <= h.end_line)
        })
        .map(|i| i + 1)
}

/// Reads a JSONL file into `T`s, naming the file and line of a bad record.
pub(crate) fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(line).map_err(|e| Error::Corrupt {
            path: path.to_path_buf(),
            message: format!("line {}: {e}", i + 1),
        })?;
        out.push(record);
    }
    Ok(out)
}

/// Evaluates one memory workspace (`dir/workspace` + `dir/queries.jsonl`) with `settings`
/// (whose workspace and store directory are replaced).
/// Opens a [`Memory`] for the given settings (lets one loaded embedder serve every run).
pub type Opener<'a> = dyn Fn(Settings) -> Result<Memory> + 'a;

/// Retrieval modes compared by `memoria eval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum EvalMode {
    /// Keyword only (no embedder).
    Bm25,
    /// Vector only (`query.hybrid.enabled = false`).
    Vector,
    /// The configured hybrid search.
    Hybrid,
}

impl EvalMode {
    /// The mode's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            EvalMode::Bm25 => "bm25",
            EvalMode::Vector => "vector",
            EvalMode::Hybrid => "hybrid",
        }
    }

    /// `settings` adjusted for this mode.
    pub fn apply(self, mut settings: Settings) -> Settings {
        match self {
            EvalMode::Bm25 => settings.provider = crate::config::ProviderKind::None,
            EvalMode::Vector => settings.query.hybrid.enabled = false,
            EvalMode::Hybrid => {}
        }
        settings
    }
}

/// Evaluates one memory workspace (`dir/workspace` + `dir/queries.jsonl`) with `settings`
/// (whose workspace and store directory are replaced by `dir/workspace` and `scratch`).
pub fn eval_memory_workspace(
    dir: &Path,
    settings: &Settings,
    open: &Opener,
    scratch: &Path,
    mut log: Option<&mut CandidateLog>,
) -> Result<Metrics> {
    let queries: Vec<EvidenceQuery> = read_jsonl(&dir.join("queries.jsonl"))?;
    let mut settings = settings.clone();
    settings.workspace = dir.join("workspace");
    scratch_store(&mut settings, scratch);
    let memory = open(settings)?;
    memory.sync(false, &|_| {})?;
    let k = memory.settings().query.max_results;
    let name = dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let options = SearchOptions {
        trace: log.is_some(),
        ..SearchOptions::default()
    };
    let mut answered = 0usize;
    let mut first = 0usize;
    let mut reciprocal = 0.0;
    let mut empty = 0usize;
    let mut counted = 0usize;
    for query in queries.iter().filter(|q| !q.evidence.is_empty()) {
        counted += 1;
        let response = memory.search(&query.query, &options)?;
        if let Some(log) = log.as_deref_mut() {
            let answers = Answers::Evidence(&query.evidence);
            log.record(&name, &query.query, k, answers, &response)?;
        }
        let hits = response.hits;
        if hits.is_empty() {
            empty += 1;
        }
        if let Some(rank) = evidence_rank(&hits, &query.evidence) {
            answered += 1;
            first += usize::from(rank == 1);
            reciprocal += 1.0 / rank as f64;
        }
    }
    let n = counted.max(1) as f64;
    Ok(Metrics {
        mode: String::new(),
        name,
        queries: counted,
        recall: vec![(1, first as f64 / n), (k, answered as f64 / n)],
        mrr: reciprocal / n,
        ndcg10: None,
        empty,
    })
}

/// The memory workspaces under `dir`: `dir` itself if it has `queries.jsonl`, else its
/// subdirectories that do (sorted).
pub fn memory_workspaces(dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.join("queries.jsonl").is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("queries.jsonl").is_file())
        .collect();
    out.sort();
    Ok(out)
}

#[derive(Deserialize)]
struct BeirDoc {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Deserialize)]
struct BeirQuery {
    #[serde(rename = "_id")]
    id: String,
    text: String,
}

/// Reads BEIR qrels (`query-id<TAB>corpus-id<TAB>score`, header line) into relevant sets.
pub(crate) fn read_qrels(path: &Path) -> Result<HashMap<String, HashMap<String, f64>>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut out: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() < 3 || (i == 0 && fields[2].parse::<f64>().is_err()) {
            continue;
        }
        let score: f64 = fields[2].trim().parse().map_err(|_| Error::Corrupt {
            path: path.to_path_buf(),
            message: format!("line {}: score {:?} is not a number", i + 1, fields[2]),
        })?;
        if score > 0.0 {
            out.entry(fields[0].to_string())
                .or_default()
                .insert(fields[1].to_string(), score);
        }
    }
    Ok(out)
}

/// nDCG@10, recall@{6,10}, MRR@10 of a ranked document list against graded relevance.
pub(crate) fn rank_metrics(
    ranked: &[String],
    relevant: &HashMap<String, f64>,
) -> (f64, f64, f64, f64) {
    let gain = |doc: &String| relevant.get(doc).copied().unwrap_or(0.0);
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, d)| gain(d) / ((i + 2) as f64).log2())
        .sum();
    let mut ideal: Vec<f64> = relevant.values().copied().collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, g)| g / ((i + 2) as f64).log2())
        .sum();
    let recall_at = |k: usize| {
        let found = ranked
            .iter()
            .take(k)
            .filter(|d| relevant.contains_key(*d))
            .count();
        found as f64 / relevant.len().max(1) as f64
    };
    let mrr = ranked
        .iter()
        .take(10)
        .position(|d| relevant.contains_key(d))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64);
    let ndcg = if idcg > 0.0 { dcg / idcg } else { 0.0 };
    (ndcg, recall_at(10), recall_at(6), mrr)
}

/// Evaluates a BEIR corpus laid out as a workspace of one file per document under
/// `scratch/workspace/memory/`, indexed into `scratch/index`.
pub fn eval_beir(
    corpus: &Path,
    queries: &Path,
    qrels: &Path,
    settings: &Settings,
    open: &Opener,
    scratch: &Path,
    mut log: Option<&mut CandidateLog>,
) -> Result<Metrics> {
    let docs: Vec<BeirDoc> = read_jsonl(corpus)?;
    let queries: Vec<BeirQuery> = read_jsonl(queries)?;
    let qrels = read_qrels(qrels)?;
    let memory_dir = scratch.join("workspace").join("memory");
    std::fs::create_dir_all(&memory_dir).map_err(|e| Error::io(&memory_dir, e))?;
    let mut doc_of_path = HashMap::new();
    let mut used = HashSet::new();
    for (n, doc) in docs.iter().enumerate() {
        let mut name: String = doc
            .id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if !used.insert(name.clone()) {
            name = format!("{name}-{n}");
            used.insert(name.clone());
        }
        let rel = format!("memory/{name}.md");
        let body = if doc.title.is_empty() {
            doc.text.clone()
        } else {
            format!("# {}\n\n{}", doc.title, doc.text)
        };
        let path = memory_dir.join(format!("{name}.md"));
        // Rewrite only what changed, so a re-run finds the workspace (and its index) fresh.
        if std::fs::read_to_string(&path).ok().as_deref() != Some(body.as_str()) {
            std::fs::write(&path, body).map_err(|e| Error::io(&path, e))?;
        }
        doc_of_path.insert(rel, doc.id.clone());
    }
    let mut settings = settings.clone();
    settings.workspace = scratch.join("workspace");
    scratch_store(&mut settings, scratch);
    settings.extra_paths.clear();
    let memory = open(settings)?;
    memory.sync(false, &|_| {})?;
    let max_results = 30;
    let options = SearchOptions {
        max_results: Some(max_results),
        min_score: Some(0.0),
        trace: log.is_some(),
        ..SearchOptions::default()
    };
    let name = corpus
        .parent()
        .and_then(|p| p.file_name())
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let path_of: HashMap<&str, &str> = doc_of_path
        .iter()
        .map(|(path, doc)| (doc.as_str(), path.as_str()))
        .collect();
    let (mut ndcg, mut r10, mut r6, mut mrr) = (0.0, 0.0, 0.0, 0.0);
    let mut counted = 0usize;
    let mut empty = 0usize;
    for query in &queries {
        let Some(relevant) = qrels.get(&query.id) else {
            continue;
        };
        counted += 1;
        let response = memory.search(&query.text, &options)?;
        if let Some(log) = log.as_deref_mut() {
            let relevant = relevant
                .iter()
                .map(|(doc, grade)| (path_of.get(doc.as_str()).copied().unwrap_or(doc), *grade))
                .collect();
            let answers = Answers::Relevant(relevant);
            log.record(&name, &query.text, max_results, answers, &response)?;
        }
        let hits = response.hits;
        if hits.is_empty() {
            empty += 1;
        }
        let mut ranked: Vec<String> = Vec::new();
        for hit in hits {
            if let Some(doc) = doc_of_path.get(&hit.path) {
                if !ranked.contains(doc) {
                    ranked.push(doc.clone());
                }
            }
        }
        let (n, a, b, m) = rank_metrics(&ranked, relevant);
        ndcg += n;
        r10 += a;
        r6 += b;
        mrr += m;
    }
    let n = counted.max(1) as f64;
    Ok(Metrics {
        name,
        mode: String::new(),
        queries: counted,
        recall: vec![(6, r6 / n), (10, r10 / n)],
        mrr: mrr / n,
        ndcg10: Some(ndcg / n),
        empty,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_metrics_table() {
        let rel: HashMap<String, f64> = [("a".to_string(), 1.0)].into_iter().collect();
        let ranked = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (ndcg, r10, r6, mrr) = rank_metrics(&ranked(&["a", "b"]), &rel);
        assert_eq!((ndcg, r10, r6, mrr), (1.0, 1.0, 1.0, 1.0));
        let (ndcg, r10, r6, mrr) = rank_metrics(&ranked(&["x", "y", "a"]), &rel);
        assert!((ndcg - 0.5).abs() < 1e-12);
        assert_eq!((r10, r6, mrr), (1.0, 1.0, 1.0 / 3.0));
        let (_, r10, r6, _) = rank_metrics(&ranked(&["1", "2", "3", "4", "5", "6", "a"]), &rel);
        assert_eq!((r10, r6), (1.0, 0.0));
    }
}
