//! The ranking stage: candidates in, ranked chunk keys out, with no I/O.
//!
//! The pipeline (`pipeline.rs`) retrieves both sides' candidates and hydrates the chunk
//! records and facts the ranking needs (texts for MMR and OpenClaw's keyword score, the
//! keyword side's query share, each file's decay factor); everything here works on those
//! values alone, so it is table-testable and the same over every store.
//!
//! Which rule applies is a [`Ranking`], chosen once in the settings (the config's
//! `ranking` key, `--ranking`):
//!
//! - [`Ranking::Memoria`]: the configured fusion (z-score by default) with the keyword side
//!   weighed by how much of the query its best chunk holds, temporal decay when on, the
//!   calibrated `minScore` for a model whose cosines run low, MMR over the analyzer's terms.
//! - [`Ranking::OpenClaw`]: OpenClaw 2026.9's, for parity: 0.7 · cosine + 0.3 · its keyword
//!   score (bonuses over BM25, only chunks holding every query word or a keyword), its
//!   decay, MMR over snippets and `minScore` with its keyword rescue.
//!
//! Under 2026.9's semantics (the `memory.search` layout, [`Input::annotated`]), either
//! ranking multiplies a hit by its entry's importance and project affinity (a malformed
//! project tag drops the entry) and puts a file the query names first.

use std::collections::{HashMap, HashSet};

use super::api::{cut_utf16, SNIPPET_CHARS};
use super::hybrid::{self, keyword_hits, FusionParams, KeywordCandidate, VectorCandidate};
use super::lexical::{ChunkWords, KeywordQuery};
use super::rank::{
    candidate_pool, filter_keyword_only, filter_ranked, rank_order, select_with_keyword_rescue,
    text_score, tiered_top, Ranked, SelectMode,
};
use crate::analyzer::{self, AnalyzerMode};
use crate::annotation;
use crate::config::{Fusion, QuerySettings, Ranking};
use crate::store::{ChunkKey, ChunkRecord};

/// What the ranking stage reads: the candidates, what was hydrated for them, and the
/// search's parameters.
pub(crate) struct Input<'a> {
    pub query: &'a str,
    pub ranking: Ranking,
    /// OpenClaw 2026.9's semantics (the `memory.search` layout): entries' importance and
    /// project tags multiply their scores and a file the query names comes first, under
    /// either ranking.
    pub annotated: bool,
    pub settings: &'a QuerySettings,
    /// The model serving the vector side (`minScore`'s calibration).
    pub model: Option<&'a str>,
    /// `maxResults` of the request, else of the config (at least 1).
    pub max_results: usize,
    /// `minScore` of the request, else of the config.
    pub min_score: f64,
    /// Whether the request set `minScore` (then it is never calibrated).
    pub min_score_asked: bool,
    /// The two sides' candidates (`None`: the side did not serve).
    pub keyword: Option<Vec<KeywordCandidate>>,
    pub vector: Option<Vec<VectorCandidate>>,
    /// OpenClaw's exact-path tier: the first chunks of the files the query names, most
    /// specific first.
    pub named: Vec<(u8, ChunkKey)>,
    /// The records hydrated for ranking (every candidate's under MMR or OpenClaw's ranking).
    pub chunks: &'a HashMap<String, ChunkRecord>,
    /// Each candidate file's temporal decay factor (empty when decay is off).
    pub decay: &'a HashMap<String, f64>,
    /// How much the keyword side counts in memoria's min-max and z-score fusions.
    pub keyword_confidence: f64,
    /// The session's active project keys.
    pub active: &'a [String],
}

/// What the ranking stage gives: the page of ranked keys and what to tell about it.
pub(crate) struct Outcome {
    pub ranked: Vec<Ranked>,
    /// Why the page is empty or missing something expected, when it is.
    pub warning: Option<String>,
    /// The `minScore` applied (after calibration).
    pub min_score: f64,
    /// The fusion's weights (the text weight times the keyword confidence).
    pub params: FusionParams,
    /// The keyword candidates that took part (OpenClaw's ranking keeps its keyword hits
    /// only).
    pub keyword: Option<Vec<KeywordCandidate>>,
    pub vector: Option<Vec<VectorCandidate>>,
}

/// Ranks `input` (see the module docs).
pub(crate) fn rank(input: Input) -> Outcome {
    let Input {
        query,
        ranking,
        annotated,
        settings,
        model,
        max_results,
        min_score,
        min_score_asked,
        mut keyword,
        vector,
        named,
        chunks,
        decay,
        keyword_confidence,
        active,
    } = input;
    let openclaw = ranking == Ranking::OpenClaw;
    let hybrid = &settings.hybrid;
    let mut params = FusionParams {
        vector_weight: hybrid.vector_weight,
        text_weight: hybrid.text_weight,
        fusion: hybrid.fusion,
    };
    // Every candidate, before OpenClaw's keyword side drops some (an empty answer's warning
    // looks at all of them).
    let candidates: HashSet<String> = keyword
        .iter()
        .flatten()
        .map(|k| k.key.id.clone())
        .chain(vector.iter().flatten().map(|v| v.key.id.clone()))
        .collect();
    // OpenClaw's keyword side: only chunks holding every query word or a keyword are
    // keyword hits, scored with its bonuses (`lexical`); the raw mapping stays textScore.
    let mut keyword_scores: HashMap<String, f64> = HashMap::new();
    if let (true, Some(candidates)) = (openclaw, keyword.as_mut()) {
        keyword_scores = openclaw_keyword_hits(query, candidates, chunks);
    }
    if let (false, Fusion::MinMax | Fusion::ZScore, Some(_), Some(_)) =
        (openclaw, params.fusion, keyword.as_ref(), vector.as_ref())
    {
        params.text_weight *= keyword_confidence;
    }
    let keyword_side = keyword.is_some();
    // Every candidate of a pool, fused and decayed, before minScore.
    let scored = |pool: usize| -> Vec<Ranked> {
        let head = |len: usize| len.min(pool);
        let mut hits = match (&keyword, &vector) {
            (Some(k), Some(v)) => hybrid::fuse(
                k[..head(k.len())].to_vec(),
                v[..head(v.len())].to_vec(),
                &params,
            ),
            (None, Some(v)) => hybrid::vector_hits(v[..head(v.len())].to_vec()),
            (Some(k), None) => keyword_hits(k[..head(k.len())].to_vec()),
            (None, None) => Vec::new(),
        };
        if openclaw {
            // The keyword side's part is its boosted score (0.7 · cosine + 0.3 · it).
            for hit in &mut hits {
                let keyword = keyword_scores.get(&hit.key.id).copied();
                hit.score = match (keyword, hit.vector_score) {
                    (Some(k), None) if vector.is_none() => k,
                    (k, Some(cosine)) if keyword_side => {
                        params.vector_weight * cosine + params.text_weight * k.unwrap_or(0.0)
                    }
                    (Some(k), None) => params.text_weight * k,
                    _ => hit.score,
                };
            }
        }
        for hit in &mut hits {
            if let Some(factor) = decay.get(&hit.key.path) {
                hit.score *= factor;
            }
        }
        if annotated {
            multiply_annotations(&mut hits, chunks, active);
        }
        hits
    };
    let mode = match (&keyword, &vector) {
        (Some(_), Some(_)) => SelectMode::Hybrid,
        (None, Some(_)) => SelectMode::VectorOnly,
        _ => SelectMode::KeywordOnly,
    };
    // memoria's ranking lowers the default minScore for a model whose cosines run low
    // (`hybrid::Calibration`); a minScore the request or the config sets, and OpenClaw's
    // ranking, keep it.
    let calibration = hybrid::Calibration::for_model(model)
        .filter(|_| !min_score_asked && !settings.min_score_configured && !openclaw);
    let min_score = match (calibration, mode) {
        (Some(c), SelectMode::Hybrid) => {
            c.default_min_score(min_score, params.vector_weight, params.fusion)
        }
        (Some(c), SelectMode::VectorOnly) => c.default_min_score(min_score, 1.0, Fusion::Weighted),
        _ => min_score,
    };
    let multiplier = hybrid.candidate_multiplier;
    let base = settings.max_results.max(1);
    let pool = candidate_pool(super::rank::tier_size(max_results, base), multiplier);
    let order = |pool: usize| match openclaw {
        true => order_openclaw(scored(pool), min_score, mode, settings, chunks),
        false => order_memoria(scored(pool), min_score, mode, settings, chunks),
    };
    let ranked = tiered_top(
        max_results,
        base,
        |size| candidate_pool(size, multiplier),
        order,
        |hit: &Ranked| hit.key.id.clone(),
    );
    // An empty answer says why when candidates were there but none reached minScore (the
    // ranking and the result set stay OpenClaw's).
    let warning = match ranked.is_empty() {
        true => {
            below_min_score(scored(pool), min_score).or_else(|| malformed_tags(&candidates, chunks))
        }
        false if openclaw => buried_by_decay(
            &ranked,
            || scored(pool),
            decay,
            hybrid.temporal_decay.half_life_days,
        ),
        false => None,
    };
    let ranked = match annotated {
        true => exact_paths_first(named, ranked, max_results, active, chunks),
        false => ranked,
    };
    Outcome {
        ranked,
        warning,
        min_score,
        params,
        keyword,
        vector,
    }
}

/// OpenClaw's keyword hits among `candidates` (the others are dropped), and each one's
/// boosted score, by chunk id. A candidate whose record was not hydrated stays.
fn openclaw_keyword_hits(
    query: &str,
    candidates: &mut Vec<KeywordCandidate>,
    chunks: &HashMap<String, ChunkRecord>,
) -> HashMap<String, f64> {
    let mut scores = HashMap::new();
    let lexical = KeywordQuery::new(query);
    candidates.retain(|k| {
        let Some(chunk) = chunks.get(&k.key.id) else {
            return true;
        };
        let words = ChunkWords::new(&chunk.text);
        if !lexical.is_candidate(&words) {
            return false;
        }
        let score = lexical.score_words(text_score(k.bm25), &words, &chunk.text, &k.key.path);
        scores.insert(k.key.id.clone(), score);
        true
    });
    scores
}

/// × importance, × project affinity; a malformed project tag drops the entry.
fn multiply_annotations(
    hits: &mut Vec<Ranked>,
    chunks: &HashMap<String, ChunkRecord>,
    active: &[String],
) {
    hits.retain_mut(|hit| {
        let Some(a) = chunks.get(&hit.key.id).map(|c| &c.annotations) else {
            return true;
        };
        match annotation::project_multiplier(&a.project, active) {
            None => false,
            Some(affinity) => {
                hit.score *= annotation::importance_multiplier(a.importance) * affinity;
                true
            }
        }
    });
}

/// memoria's order: `minScore` (with the relaxation of the mode: hybrid, or keyword-only),
/// then MMR over the candidates' analyzed terms.
fn order_memoria(
    hits: Vec<Ranked>,
    min_score: f64,
    mode: SelectMode,
    settings: &QuerySettings,
    chunks: &HashMap<String, ChunkRecord>,
) -> Vec<Ranked> {
    let hybrid = &settings.hybrid;
    let mut hits = if mode == SelectMode::KeywordOnly {
        filter_keyword_only(hits, min_score, usize::MAX)
    } else {
        filter_ranked(hits, min_score, hybrid.text_weight, usize::MAX)
    };
    if hybrid.mmr.enabled {
        let terms = |hit: &Ranked| -> HashSet<String> {
            let text = chunks.get(&hit.key.id).map_or("", |c| c.text.as_str());
            analyzer::terms(text, AnalyzerMode::Query)
                .into_iter()
                .collect()
        };
        hits = hybrid::mmr(hits, hybrid.mmr.lambda, false, terms);
    }
    hits
}

/// OpenClaw 2026.9's order and `minScore`: in hybrid mode MMR (relevance normalised, over
/// the tokens of each candidate's snippet) reorders every candidate, then
/// [`select_with_keyword_rescue`] applies `minScore`.
fn order_openclaw(
    mut hits: Vec<Ranked>,
    min_score: f64,
    mode: SelectMode,
    settings: &QuerySettings,
    chunks: &HashMap<String, ChunkRecord>,
) -> Vec<Ranked> {
    hits.sort_by(rank_order);
    let mmr = &settings.hybrid.mmr;
    if mode == SelectMode::Hybrid && mmr.enabled {
        let terms = |hit: &Ranked| -> HashSet<String> {
            let text = chunks.get(&hit.key.id).map_or("", |c| c.text.as_str());
            hybrid::snippet_tokens(cut_utf16(text, SNIPPET_CHARS))
        };
        hits = hybrid::mmr(hits, mmr.lambda, true, terms);
    }
    select_with_keyword_rescue(hits, min_score, mode, usize::MAX)
}

/// OpenClaw 2026.9's exact-path tiers: when the query is a file's path (3), name (2) or
/// stem (1), that file's first chunk comes first, most specific first, scored by its
/// project multiplier alone (1, 1.15 or 0.90; a malformed tag still drops it); the content
/// hits follow, without those chunks, cut to `max_results`.
fn exact_paths_first(
    named: Vec<(u8, ChunkKey)>,
    ranked: Vec<Ranked>,
    max_results: usize,
    active: &[String],
    chunks: &HashMap<String, ChunkRecord>,
) -> Vec<Ranked> {
    if named.is_empty() {
        return ranked;
    }
    let mut out: Vec<Ranked> = Vec::new();
    for (_, key) in named {
        let Some(chunk) = chunks.get(&key.id) else {
            continue;
        };
        let Some(affinity) = annotation::project_multiplier(&chunk.annotations.project, active)
        else {
            continue;
        };
        let text_score = ranked
            .iter()
            .find(|r| r.key.id == key.id)
            .map_or(0.0, |r| r.text_score);
        out.push(Ranked {
            key,
            score: affinity,
            text_score,
            vector_score: None,
        });
    }
    let exact: HashSet<String> = out.iter().map(|r| r.key.id.clone()).collect();
    out.extend(ranked.into_iter().filter(|r| !exact.contains(&r.key.id)));
    out.truncate(max_results);
    out
}

/// Why an answer is empty although candidates were found: none reached `min_score`.
fn below_min_score(candidates: Vec<Ranked>, min_score: f64) -> Option<String> {
    let best = candidates
        .iter()
        .max_by(|a, b| a.score.total_cmp(&b.score))?;
    Some(format!(
        "no result reached minScore {min_score}: {} candidate(s) scored lower, the best \
         {:.3} ({} line {}); a lower minScore shows them",
        candidates.len(),
        best.score,
        best.key.path,
        best.key.start_line
    ))
}

/// Why an answer is empty although candidates were found: each had a malformed
/// `<!-- project: … -->` tag, which drops its entry (OpenClaw's semantics).
fn malformed_tags(
    candidates: &HashSet<String>,
    chunks: &HashMap<String, ChunkRecord>,
) -> Option<String> {
    let mut dropped: Vec<(&str, usize)> = chunks
        .iter()
        .filter(|(id, _)| candidates.contains(*id))
        .map(|(_, c)| c)
        .filter(|c| c.annotations.project == annotation::ProjectTag::Malformed)
        .map(|c| (c.path.as_str(), c.start_line))
        .collect();
    dropped.sort();
    let (path, line) = dropped.first()?;
    Some(format!(
        "{} matching entr{} dropped for a malformed <!-- project: … --> tag (an empty key, \
         `<`, `>` or an unclosed comment), first at {path} line {line}; fix or remove the tag",
        dropped.len(),
        if dropped.len() == 1 {
            "y was"
        } else {
            "ies were"
        }
    ))
}

/// When temporal decay has put every dated note below the undated ones returned, and a
/// dated note would have come first without it, says so (OpenClaw 2026.9 does this
/// silently; over years of daily logs it hides all of them).
fn buried_by_decay(
    ranked: &[Ranked],
    candidates: impl FnOnce() -> Vec<Ranked>,
    decay: &HashMap<String, f64>,
    half_life: f64,
) -> Option<String> {
    let factor = |path: &str| decay.get(path).copied().unwrap_or(1.0);
    let top = ranked.first()?;
    if ranked.iter().any(|r| factor(&r.key.path) < 1.0) {
        return None;
    }
    // Only now, when every hit returned is undecayed, is the pool scored again.
    let candidates = candidates();
    let (buried, before) = candidates
        .iter()
        .filter(|c| factor(&c.key.path) < 1.0)
        .map(|c| (c, c.score / factor(&c.key.path)))
        .filter(|(_, before)| *before > top.score)
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "temporal decay ({half_life}-day half-life) ranked every dated note below undated \
         ones: {} would rank first without it ({before:.3}, × {:.1e} for its age); \
         plugins.entries.memoria.config.temporalDecay lengthens or turns it off",
        buried.key.path,
        factor(&buried.key.path)
    ))
}
