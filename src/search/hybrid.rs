//! Hybrid fusion of keyword and vector candidates (SPEC §5.3–5.7).
//!
//! A config that names weights gets OpenClaw's documented weighted sum; one that names none
//! gets memoria's z-score fusion; `rrf` and `minmax` are the other choices
//! (`query.hybrid.fusion`), all measured in `memoria eval` (docs/ranking.md, "How memoria ranks").
//! Temporal decay and MMR are optional post-steps. All functions are pure.

use std::collections::{HashMap, HashSet};

use super::rank::{text_score, Ranked};
use crate::analyzer::is_cjk;
use crate::clock;
use crate::config::Fusion;
use crate::store::ChunkKey;

/// The RRF constant (Cormack et al.); 60 is the customary value.
pub const RRF_K: f64 = 60.0;

/// A keyword candidate: chunk and raw BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordCandidate {
    pub key: ChunkKey,
    pub bm25: f64,
}

/// A vector candidate: chunk and cosine similarity to the query.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorCandidate {
    pub key: ChunkKey,
    pub cosine: f64,
}

/// Normalised weights (they sum to 1) and the fusion rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusionParams {
    pub vector_weight: f64,
    pub text_weight: f64,
    pub fusion: Fusion,
}

/// The share of a query (its terms weighed by IDF) that the keyword side's best chunk must
/// hold for the keyword side to count fully in min-max and z-score fusion; below it, the keyword
/// weight shrinks in proportion ([`keyword_confidence`]).
pub const FULL_KEYWORD_SHARE: f64 = 0.5;

/// How much the keyword side counts in min-max and z-score fusion, from the share of the query its
/// best chunk holds: min-max scales the best keyword chunk to 1 however weak its match, so
/// in a small workspace one common word (`cat` of "cat-cow", the `day` of a book title)
/// would weigh as much as a chunk holding the whole question. 1 at [`FULL_KEYWORD_SHARE`]
/// and above, in proportion below.
pub fn keyword_confidence(share: f64) -> f64 {
    (share / FULL_KEYWORD_SHARE).clamp(0.0, 1.0)
}

/// How far a model's cosines sit below the scale `minScore`'s default was set for, so the
/// default threshold can mean the same for every model: a match found by meaning alone
/// passes it when its cosine is at the level of the model's true matches.
///
/// EmbeddingGemma's cosines are low. In a newcomer's notes (`tests/data/personal`) the
/// planted answers scored 0.26–0.41 (one, at 0.13, is a miss) and unrelated notes mostly
/// below 0.25; on LoCoMo (titled chunks) evidence chunks score 0.36 (5th percentile) / 0.48
/// (median). Under the
/// documented formula a match found by meaning alone scores `0.7 × cosine` ≈ 0.18–0.29,
/// under the 0.35 default, so such answers came back empty. Its offset is 0.25: the
/// default threshold is lowered by `offset` for vector-only scores and by
/// `vectorWeight × offset` for the weighted formula, so a cosine of 0.25 passes where 0.5
/// would have. Scores and their order are untouched (a calibration that changed the
/// vector side's scale changed the order too, and cost XQuAD 0.013–0.021 nDCG@10 when
/// replayed);
/// min-max and RRF scores are relative to the query's candidates and keep the threshold.
/// A `minScore` the config sets applies as it is, and a model without a measured offset
/// keeps the default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// How much lower than the default's intended scale the model's cosines run.
    pub offset: f64,
}

impl Calibration {
    /// EmbeddingGemma-300m with its task prompts (measured with `memoria eval`).
    pub const EMBEDDINGGEMMA: Calibration = Calibration { offset: 0.25 };

    /// The calibration of a model, when one was measured: EmbeddingGemma, by its name
    /// (the local model's directory or GGUF file, or what an OpenAI-compatible server
    /// calls it).
    pub fn for_model(model: Option<&str>) -> Option<Calibration> {
        model
            .is_some_and(|m| m.to_ascii_lowercase().contains("embeddinggemma"))
            .then_some(Calibration::EMBEDDINGGEMMA)
    }

    /// The default threshold `min_score` for this model: lowered for vector-only scores
    /// (`vector_weight` 1) and the weighted formula, unchanged for relative scores.
    pub fn default_min_score(self, min_score: f64, vector_weight: f64, fusion: Fusion) -> f64 {
        match fusion {
            Fusion::Weighted => (min_score - vector_weight * self.offset).max(0.0),
            Fusion::MinMax | Fusion::ZScore | Fusion::Rrf => min_score,
        }
    }
}

/// Merges both candidate lists by chunk id. A chunk missing on one side scores 0 there.
/// - `Weighted`: `vectorWeight * cosine + textWeight * s/(1+s)` (the documented formula);
/// - `MinMax`: each side min-max normalised over its candidates (the keyword side's BM25
///   through `ln(1 + s)` first: BM25's long tail would otherwise press every hit but the
///   best toward 0), then weighted;
/// - `ZScore`: each side standardised over its candidates (`(x - mean) / sd`, BM25 through
///   `ln(1 + s)` first: [`standardise`]), the keyword side counted only above its mean, a
///   chunk missing from a side scored at that side's mean (0), then weighted and mapped
///   onto 0..1 ([`squash`]);
/// - `Rrf`: `Σ 1/(60 + rank)` over the sides, scaled so rank 1 on both sides is 1.0
///   (keeps scores in 0..1 so `minScore` stays meaningful).
///
/// `text_score` of every hit stays `s/(1+s)` (used for ties and the minScore relaxation).
pub fn fuse(
    keyword: Vec<KeywordCandidate>,
    vector: Vec<VectorCandidate>,
    params: &FusionParams,
) -> Vec<Ranked> {
    // BM25 through `ln(1 + s)` before min-max or z-scores.
    let log_bm25 = |k: &KeywordCandidate| k.bm25.max(0.0).ln_1p();
    let bm25_range = range(keyword.iter().map(log_bm25));
    let cosine_range = range(vector.iter().map(|v| v.cosine));
    let bm25_spread = Spread::of(keyword.iter().map(log_bm25));
    let cosine_spread = Spread::of(vector.iter().map(|v| v.cosine));
    let mut merged: HashMap<String, Ranked> = HashMap::new();
    let mut text_component: HashMap<String, f64> = HashMap::new();
    let mut vector_component: HashMap<String, f64> = HashMap::new();
    for (rank, candidate) in keyword.into_iter().enumerate() {
        let ts = text_score(candidate.bm25);
        let component = match params.fusion {
            Fusion::Weighted => ts,
            Fusion::MinMax => normalise(log_bm25(&candidate), bm25_range),
            Fusion::ZScore => standardise(log_bm25(&candidate), bm25_spread).max(0.0),
            Fusion::Rrf => 1.0 / (RRF_K + rank as f64 + 1.0),
        };
        text_component.insert(candidate.key.id.clone(), component);
        merged.insert(
            candidate.key.id.clone(),
            Ranked {
                key: candidate.key,
                score: 0.0,
                text_score: ts,
                vector_score: None,
            },
        );
    }
    for (rank, candidate) in vector.into_iter().enumerate() {
        let component = match params.fusion {
            Fusion::Weighted => candidate.cosine,
            Fusion::MinMax => normalise(candidate.cosine, cosine_range),
            Fusion::ZScore => standardise(candidate.cosine, cosine_spread),
            Fusion::Rrf => 1.0 / (RRF_K + rank as f64 + 1.0),
        };
        vector_component.insert(candidate.key.id.clone(), component);
        merged
            .entry(candidate.key.id.clone())
            .or_insert_with(|| Ranked {
                key: candidate.key,
                score: 0.0,
                text_score: 0.0,
                vector_score: None,
            })
            .vector_score = Some(candidate.cosine);
    }
    let mut hits: Vec<Ranked> = merged
        .into_values()
        .map(|mut hit| {
            let t = text_component.get(&hit.key.id).copied().unwrap_or(0.0);
            let v = vector_component.get(&hit.key.id).copied().unwrap_or(0.0);
            hit.score = match params.fusion {
                Fusion::Weighted | Fusion::MinMax | Fusion::ZScore => {
                    params.vector_weight * v + params.text_weight * t
                }
                Fusion::Rrf => (t + v) * (RRF_K + 1.0) / 2.0,
            };
            hit
        })
        .collect();
    if params.fusion == Fusion::ZScore {
        for hit in &mut hits {
            hit.score = squash(hit.score);
        }
    }
    hits
}

/// Maps a fused z-score onto 0..1 with the logistic curve that follows the normal CDF
/// within 0.01 (`1 / (1 + e^(-1.702 z))`): 0.5 at the candidates' mean, 0.85 one deviation
/// above, 0.97 two. Scaling by the candidates' own range instead gave the best candidate
/// 1.0 whatever it was, so no `minScore` could ever say "nothing stands out".
pub fn squash(z: f64) -> f64 {
    1.0 / (1.0 + (-1.702 * z).exp())
}

/// Mean and standard deviation of one side's candidate scores.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    mean: f64,
    sd: f64,
}

impl Spread {
    /// The population mean and standard deviation of `values` (0 and 0 when empty).
    pub fn of(values: impl Iterator<Item = f64> + Clone) -> Spread {
        let (n, sum) = values
            .clone()
            .fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
        if n == 0 {
            return Spread { mean: 0.0, sd: 0.0 };
        }
        let mean = sum / n as f64;
        let var = values.map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        Spread {
            mean,
            sd: var.sqrt(),
        }
    }
}

/// `(v - mean) / sd`; 1 when every candidate scored the same (one hit alone counts as one
/// deviation above the mean: a word found in a single chunk still lifts it).
pub fn standardise(v: f64, spread: Spread) -> f64 {
    if spread.sd > 1e-12 {
        (v - spread.mean) / spread.sd
    } else {
        1.0
    }
}

fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// `(v - min) / (max - min)`, or 1 when every candidate scored the same.
fn normalise(v: f64, (lo, hi): (f64, f64)) -> f64 {
    if hi > lo {
        (v - lo) / (hi - lo)
    } else {
        1.0
    }
}

/// Vector-only ranking (hybrid disabled, or the keyword index unavailable): score = cosine.
pub fn vector_hits(vector: Vec<VectorCandidate>) -> Vec<Ranked> {
    vector
        .into_iter()
        .map(|c| Ranked {
            key: c.key,
            score: c.cosine,
            text_score: 0.0,
            vector_score: Some(c.cosine),
        })
        .collect()
}

/// The date of a daily log path `memory/YYYY-MM-DD.md` (or `memory/YYYY-MM-DD-topic.md`),
/// as days since the Unix epoch.
pub fn daily_log_day(path: &str) -> Option<i64> {
    let name = path.strip_prefix("memory/")?;
    let name = name.rsplit('/').next()?;
    let date = name.get(..10)?;
    let rest = &name[10..];
    if !(rest == ".md" || rest.starts_with('-') || rest.starts_with('_')) {
        return None;
    }
    let mut parts = date.split('-');
    let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some(clock::days_from_civil(y, m, d))
}

/// Temporal decay factor `0.5^(ageDays / halfLife)` (SPEC §5.7). Daily logs age from the date
/// in their name; `MEMORY.md`, `memory.md` and undated files under `memory/` are evergreen
/// (factor 1); anything else (extra paths, sessions) ages from its mtime.
pub fn decay_factor(
    path: &str,
    mtime_secs: Option<i64>,
    now_secs: i64,
    half_life_days: f64,
) -> f64 {
    let now_days = now_secs as f64 / 86_400.0;
    let age_days = if let Some(day) = daily_log_day(path) {
        now_days - day as f64
    } else if path == "MEMORY.md" || path == "memory.md" || path.starts_with("memory/") {
        return 1.0;
    } else if let Some(mtime) = mtime_secs {
        (now_secs - mtime) as f64 / 86_400.0
    } else {
        return 1.0;
    };
    0.5f64.powf(age_days.max(0.0) / half_life_days.max(f64::MIN_POSITIVE))
}

/// The date of a dated memory note as OpenClaw 2026.9 reads it, as days since the Unix
/// epoch: a file under a `memory/` directory at any depth whose name starts with
/// `YYYY-MM-DD` (then `.md` or `-anything.md`), e.g. `memory/archive/2026-01-02-trip.md`.
/// `Some(None)` when the name has that shape but the date does not exist (`2026-02-30`).
pub fn dated_note_day(path: &str) -> Option<Option<i64>> {
    let path = path.replace('\\', "/");
    let path = path.strip_prefix("./").unwrap_or(&path);
    let (dir, name) = path.rsplit_once('/')?;
    if !(dir == "memory"
        || dir.starts_with("memory/")
        || dir.ends_with("/memory")
        || dir.contains("/memory/"))
    {
        return None;
    }
    let stem = name.strip_suffix(".md")?;
    let date = stem.get(..10)?;
    let rest = &stem[10..];
    if !(rest.is_empty() || (rest.len() > 1 && rest.starts_with('-'))) {
        return None;
    }
    clock::calendar_day(date)
}

/// Whether OpenClaw 2026.9 never decays this memory file: `MEMORY.md`, `USER.md`, or an
/// undated file under the workspace's `memory/`.
fn evergreen(path: &str) -> bool {
    path == "MEMORY.md" || path == "USER.md" || path.starts_with("memory/")
}

/// Temporal decay as OpenClaw 2026.9 applies it, `0.5^(ageDays / halfLife)` with the age in
/// fractional days (a future date counts as now): a dated note ages from UTC midnight of
/// its date; an evergreen memory file never ages; anything else (an impossible date, an
/// extra path, a session transcript) ages from its modification time (`mtime_secs`; none
/// known: no decay).
pub fn decay_factor_openclaw(
    path: &str,
    memory: bool,
    mtime_secs: Option<f64>,
    now_secs: f64,
    half_life_days: f64,
) -> f64 {
    let since = match (memory, memory.then(|| dated_note_day(path)).flatten()) {
        (true, Some(Some(day))) => Some(day as f64 * 86_400.0),
        (true, None) if evergreen(path) => return 1.0,
        _ => mtime_secs,
    };
    let Some(since) = since else {
        return 1.0;
    };
    if !(half_life_days.is_finite() && half_life_days > 0.0) {
        return 1.0;
    }
    let age_days = ((now_secs - since) / 86_400.0).max(0.0);
    (-(std::f64::consts::LN_2 / half_life_days) * age_days).exp()
}

/// The tokens OpenClaw 2026.9's MMR compares: lower-cased ASCII `[a-z0-9_]` runs, and in
/// text with CJK characters, each of them and each pair of adjacent ones.
pub fn snippet_tokens(text: &str) -> HashSet<String> {
    let lower = text.to_lowercase();
    let mut out: HashSet<String> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    let chars: Vec<char> = lower.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if is_cjk(c) {
            out.insert(c.to_string());
            if let Some(&next) = chars.get(i + 1).filter(|n| is_cjk(**n)) {
                out.insert(format!("{c}{next}"));
            }
        }
    }
    out
}

/// Maximal Marginal Relevance re-ordering: repeatedly picks the hit maximising
/// `λ·score − (1−λ)·max similarity to the already picked`, similarity being the Jaccard
/// overlap of the chunks' term sets (`terms_of`). `hits` must be sorted best first.
///
/// With `normalise` (OpenClaw 2026.9), relevance is the score min-max normalised over the
/// hits (1 for all when they are equal).
pub fn mmr(
    hits: Vec<Ranked>,
    lambda: f64,
    normalise: bool,
    terms_of: impl Fn(&Ranked) -> HashSet<String>,
) -> Vec<Ranked> {
    let sets: Vec<HashSet<String>> = hits.iter().map(terms_of).collect();
    let (lo, hi) = range(hits.iter().map(|h| h.score));
    let relevance = |h: &Ranked| match normalise {
        false => h.score,
        true if hi > lo => (h.score - lo) / (hi - lo),
        true => 1.0,
    };
    let mut remaining: Vec<usize> = (0..hits.len()).collect();
    let mut order = Vec::with_capacity(hits.len());
    while !remaining.is_empty() {
        let mut best = (0usize, f64::NEG_INFINITY);
        for (slot, &i) in remaining.iter().enumerate() {
            let redundancy = order
                .iter()
                .map(|&j: &usize| jaccard(&sets[i], &sets[j]))
                .fold(0.0, f64::max);
            let value = lambda * relevance(&hits[i]) - (1.0 - lambda) * redundancy;
            if value > best.1 {
                best = (slot, value);
            }
        }
        order.push(remaining.remove(best.0));
    }
    let mut hits: Vec<Option<Ranked>> = hits.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| hits[i].take()).collect()
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let inter = a.intersection(b).count() as f64;
    inter / (a.len() as f64 + b.len() as f64 - inter)
}

/// Keyword-only ranking: score = textScore.
pub fn keyword_hits(hits: Vec<KeywordCandidate>) -> Vec<Ranked> {
    hits.into_iter()
        .map(|hit| {
            let text_score = text_score(hit.bm25);
            Ranked {
                key: hit.key,
                score: text_score,
                text_score,
                vector_score: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str) -> ChunkKey {
        ChunkKey {
            id: id.into(),
            path: id.into(),
            start_line: 1,
        }
    }
    fn kw(id: &str, bm25: f64) -> KeywordCandidate {
        KeywordCandidate { key: key(id), bm25 }
    }
    fn vec_(id: &str, cosine: f64) -> VectorCandidate {
        VectorCandidate {
            key: key(id),
            cosine,
        }
    }
    fn scores(hits: &[Ranked]) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f64)> = hits
            .iter()
            .map(|h| (h.key.id.clone(), (h.score * 1e6).round() / 1e6))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
    const WEIGHTED: FusionParams = FusionParams {
        vector_weight: 0.7,
        text_weight: 0.3,
        fusion: Fusion::Weighted,
    };

    #[test]
    fn keyword_confidence_table() {
        for (share, want) in [(0.0, 0.0), (0.25, 0.5), (0.5, 1.0), (0.9, 1.0), (-1.0, 0.0)] {
            assert_eq!(keyword_confidence(share), want, "{share}");
        }
    }

    #[test]
    fn calibration_table() {
        let c = Calibration::EMBEDDINGGEMMA;
        // (min_score, vector_weight, fusion) → the default threshold.
        let rows = [
            (0.35, 0.7, Fusion::Weighted, 0.175),
            (0.35, 1.0, Fusion::Weighted, 0.10),
            (0.1, 0.7, Fusion::Weighted, 0.0),
            (0.35, 0.5, Fusion::MinMax, 0.35),
            (0.35, 0.5, Fusion::Rrf, 0.35),
        ];
        for (min_score, weight, fusion, want) in rows {
            let got = c.default_min_score(min_score, weight, fusion);
            assert!(
                (got - want).abs() < 1e-12,
                "{min_score} {weight} {fusion:?}: {got}"
            );
        }
        for model in [
            "embeddinggemma-300m",
            "hf:ggml-org/embeddinggemma-300M-GGUF",
        ] {
            assert_eq!(Calibration::for_model(Some(model)), Some(c), "{model}");
        }
        assert_eq!(Calibration::for_model(Some("text-embedding-3-small")), None);
        assert_eq!(Calibration::for_model(None), None);
    }

    #[test]
    fn weighted_merge_table() {
        // both sides: 0.7*0.8 + 0.3*(3/4); keyword-only: 0.3*(1/2); vector-only: 0.7*0.5
        let hits = fuse(
            vec![kw("both", 3.0), kw("kw", 1.0)],
            vec![vec_("both", 0.8), vec_("vec", 0.5)],
            &WEIGHTED,
        );
        assert_eq!(
            scores(&hits),
            vec![
                ("both".into(), 0.785),
                ("kw".into(), 0.15),
                ("vec".into(), 0.35)
            ]
        );
        let both = hits.iter().find(|h| h.key.id == "both").unwrap();
        assert_eq!((both.text_score, both.vector_score), (0.75, Some(0.8)));
        let vec_only = hits.iter().find(|h| h.key.id == "vec").unwrap();
        assert_eq!(vec_only.text_score, 0.0);
    }

    #[test]
    fn minmax_and_rrf() {
        let minmax = FusionParams {
            vector_weight: 0.5,
            text_weight: 0.5,
            fusion: Fusion::MinMax,
        };
        let hits = fuse(
            vec![kw("a", 10.0), kw("b", 2.0)],
            vec![vec_("a", 0.4), vec_("c", 0.6)],
            &minmax,
        );
        assert_eq!(
            scores(&hits),
            vec![("a".into(), 0.5), ("b".into(), 0.0), ("c".into(), 0.5)]
        );
        let rrf = FusionParams {
            fusion: Fusion::Rrf,
            ..minmax
        };
        let hits = fuse(
            vec![kw("a", 10.0), kw("b", 2.0)],
            vec![vec_("a", 0.9)],
            &rrf,
        );
        let a = hits.iter().find(|h| h.key.id == "a").unwrap();
        assert!((a.score - 1.0).abs() < 1e-12, "rank 1 on both sides is 1.0");
        let b = hits.iter().find(|h| h.key.id == "b").unwrap();
        assert!((b.score - 61.0 / 62.0 / 2.0).abs() < 1e-12);
    }

    #[test]
    fn zscore_fusion_table() {
        let e = std::f64::consts::E;
        let params = FusionParams {
            vector_weight: 0.5,
            text_weight: 0.5,
            fusion: Fusion::ZScore,
        };
        // ln(1 + bm25) of 1 and 3: z -1 and +1, the keyword side counted above its mean only;
        // cosines 0.2 and 0.6: z -1 and +1; a side's missing chunk scores its mean (0).
        // Fused: a -0.5, b 0.5, c 0.5, then squashed.
        let hits = fuse(
            vec![kw("a", e - 1.0), kw("b", e.powi(3) - 1.0)],
            vec![vec_("a", 0.2), vec_("c", 0.6)],
            &params,
        );
        let s = |z: f64| (squash(z) * 1e6).round() / 1e6;
        assert_eq!(
            scores(&hits),
            vec![
                ("a".into(), s(-0.5)),
                ("b".into(), s(0.5)),
                ("c".into(), s(0.5))
            ]
        );
        // A lone keyword hit counts as one deviation above the mean; an empty side adds 0.
        let hits = fuse(
            vec![kw("x", 0.5)],
            vec![vec_("a", 0.2), vec_("c", 0.4), vec_("d", 0.6)],
            &params,
        );
        // Cosines 0.2, 0.4, 0.6: z ±√1.5, weighed ±z with z = 0.5·√1.5; x weighs 0.5.
        let z = 0.5 * 1.5f64.sqrt();
        assert_eq!(
            scores(&hits),
            vec![
                ("a".into(), s(-z)),
                ("c".into(), 0.5),
                ("d".into(), s(z)),
                ("x".into(), s(0.5))
            ]
        );
        let hits = fuse(Vec::new(), vec![vec_("a", 0.3)], &params);
        assert_eq!(scores(&hits), vec![("a".into(), s(0.5))]);
        // The curve: the normal CDF within 0.01.
        for (z, cdf) in [(0.0, 0.5), (1.0, 0.8413), (2.0, 0.9772), (-1.0, 0.1587)] {
            assert!((squash(z) - cdf).abs() < 0.01, "{z}");
        }
    }

    #[test]
    fn daily_log_dates_and_decay() {
        assert_eq!(daily_log_day("memory/1970-01-02.md"), Some(1));
        assert_eq!(daily_log_day("memory/2026-01-12.md"), Some(20_465));
        assert_eq!(daily_log_day("memory/2026-01-12-standup.md"), Some(20_465));
        assert_eq!(daily_log_day("memory/notes.md"), None);
        assert_eq!(daily_log_day("memory/2026-13-01.md"), None);
        assert_eq!(daily_log_day("notes/2026-01-12.md"), None);
        let day = 86_400;
        let now = 20_495 * day; // 30 days after 2026-01-12
        let cases = [
            ("memory/2026-01-12.md", None, 0.5),
            ("MEMORY.md", Some(0), 1.0),
            ("memory/projects/x.md", Some(0), 1.0),
            ("../notes/x.md", Some(now - 60 * day), 0.25),
            ("../notes/y.md", None, 1.0),
        ];
        for (path, mtime, want) in cases {
            let got = decay_factor(path, mtime, now, 30.0);
            assert!((got - want).abs() < 1e-9, "{path}: {got}");
        }
    }

    #[test]
    fn dated_notes_and_decay_as_openclaw_2026_9() {
        let days = |p: &str| dated_note_day(p);
        assert_eq!(days("memory/2026-01-12.md"), Some(Some(20_465)));
        assert_eq!(
            days("memory/archive/2026-01-12-trip.md"),
            Some(Some(20_465))
        );
        assert_eq!(days("notes/memory/2026-01-12.md"), Some(Some(20_465)));
        assert_eq!(days("./memory/2026-01-12.md"), Some(Some(20_465)));
        assert_eq!(days("memory/2024-02-29.md"), Some(Some(19_782)));
        // impossible dates have the shape but no day
        assert_eq!(days("memory/2026-02-30.md"), Some(None));
        assert_eq!(days("memory/2025-02-29.md"), Some(None));
        assert_eq!(days("memory/2026-13-01.md"), Some(None));
        assert_eq!(days("memory/2026-04-31.md"), Some(None));
        // not dated: the date must start the name and be followed by .md or -slug.md
        for p in [
            "memory/notes.md",
            "memory/notes-2026-01-12.md",
            "memory/2026-1-2.md",
            "memory/2026-01-12.MD",
            "memory/2026-01-12_x.md",
            "memory/2026-01-12-.md",
            "notes/2026-01-12.md",
            "MEMORY.md",
        ] {
            assert_eq!(days(p), None, "{p}");
        }
        let day = 86_400.0;
        let now = 20_495.0 * day; // 30 days after 2026-01-12
        let cases: &[(&str, bool, Option<f64>, f64)] = &[
            ("memory/2026-01-12.md", true, None, 0.5),
            ("memory/archive/2026-01-12-trip.md", true, None, 0.5),
            // fractional days: 12 hours more than a half-life
            ("memory/2025-12-13.md", true, None, 0.5f64.powf(60.0 / 30.0)),
            ("memory/2099-01-01.md", true, None, 1.0), // the future counts as now
            ("MEMORY.md", true, Some(0.0), 1.0),
            ("USER.md", true, Some(0.0), 1.0),
            ("memory/projects/x.md", true, Some(0.0), 1.0),
            // an impossible date and files outside memory/ age from their mtime
            ("memory/2026-02-30.md", true, Some(now - 30.0 * day), 0.5),
            ("notes/x.md", true, Some(now - 60.0 * day), 0.25),
            ("notes/y.md", true, None, 1.0),
            // a transcript ages from its mtime, never from a date in its name
            (
                "sessions/2026-01-12.jsonl",
                false,
                Some(now - 30.0 * day),
                0.5,
            ),
            ("sessions/x.jsonl", false, Some(now + day), 1.0),
        ];
        for (path, memory, mtime, want) in cases {
            let got = decay_factor_openclaw(path, *memory, *mtime, now, 30.0);
            assert!((got - want).abs() < 1e-9, "{path}: {got} (want {want})");
        }
        assert_eq!(
            decay_factor_openclaw("memory/2020-01-01.md", true, None, now, 0.0),
            1.0
        );
    }

    #[test]
    fn snippet_tokens_and_normalised_relevance() {
        let t = snippet_tokens("Café_1 node-22 猫カフェ");
        for w in [
            "caf", "_1", "node", "22", "猫", "カ", "猫カ", "カフ", "フェ",
        ] {
            assert!(t.contains(w), "{w} in {t:?}");
        }
        assert!(!t.contains("café_1"));
        // λ = 1 with normalised relevance: a plain sort by score
        let hits = vec![
            Ranked {
                key: key("a"),
                score: 0.9,
                text_score: 0.0,
                vector_score: None,
            },
            Ranked {
                key: key("b"),
                score: 0.5,
                text_score: 0.0,
                vector_score: None,
            },
        ];
        let order: Vec<String> = mmr(hits, 1.0, true, |_| HashSet::new())
            .into_iter()
            .map(|h| h.key.id)
            .collect();
        assert_eq!(order, ["a", "b"]);
    }

    #[test]
    fn mmr_demotes_near_duplicates() {
        let hit = |id: &str, score: f64| Ranked {
            key: key(id),
            score,
            text_score: score,
            vector_score: None,
        };
        let hits = vec![hit("a", 0.9), hit("b", 0.89), hit("c", 0.8)];
        let text: HashMap<&str, &str> = HashMap::from([
            ("a", "postgres cutover plan steps"),
            ("b", "postgres cutover plan steps again"),
            ("c", "miso vaccine appointment"),
        ]);
        let terms = |h: &Ranked| {
            text[h.key.id.as_str()]
                .split(' ')
                .map(String::from)
                .collect::<HashSet<_>>()
        };
        let order: Vec<String> = mmr(hits.clone(), 0.5, false, terms)
            .into_iter()
            .map(|h| h.key.id)
            .collect();
        assert_eq!(order, vec!["a", "c", "b"]);
        let order: Vec<String> = mmr(hits, 1.0, false, terms)
            .into_iter()
            .map(|h| h.key.id)
            .collect();
        assert_eq!(order, vec!["a", "b", "c"]);
    }
}
