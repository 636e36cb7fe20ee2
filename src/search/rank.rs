//! Ranking, pure: the score mapping, the documented order, `minScore` with its relaxations,
//! the candidate pool and the tiers that keep a longer page a prefix of a shorter one
//! (SPEC §5). Everything here works on chunk keys and scores; fusion, decay and MMR are in
//! `hybrid`, the orchestration in `pipeline`.

use std::cmp::Ordering;

use crate::store::ChunkKey;

/// Size of the candidate pool each side of hybrid search fetches (SPEC §5):
/// `min(200, max(1, maxResults × candidateMultiplier))`.
pub(crate) fn candidate_pool(max_results: usize, multiplier: usize) -> usize {
    max_results.saturating_mul(multiplier).clamp(1, 200)
}

/// One ranked candidate, before its chunk is read.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// The chunk: id, path and first line.
    pub key: ChunkKey,
    /// Final score in 0..1.
    pub score: f64,
    /// `s / (1 + s)` of the BM25 score, 0 when keyword search did not return the chunk.
    pub text_score: f64,
    /// Cosine similarity, when the vector side returned the chunk.
    pub vector_score: Option<f64>,
}

/// Maps a BM25 score (higher is better) into 0..1: `s / (1 + s)` (SPEC §5.2). Unlike FTS5's
/// rank mapping it never collapses to 1 for good matches.
pub fn text_score(bm25: f64) -> f64 {
    let s = bm25.max(0.0);
    s / (1.0 + s)
}

/// The documented order: score descending, then textScore descending, then path, then
/// startLine (so equal scores always come back in the same order).
pub fn rank_order(a: &Ranked, b: &Ranked) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then(b.text_score.total_cmp(&a.text_score))
        .then_with(|| a.key.path.cmp(&b.key.path))
        .then(a.key.start_line.cmp(&b.key.start_line))
}

/// Sorts, applies `minScore` with OpenClaw's relaxation, and keeps `max_results` (SPEC §5.5).
///
/// If no hit reaches `min_score` but keyword hits exist, keyword hits scoring at least
/// `min(min_score, text_weight)` are kept: a query whose words match notes exactly should
/// not come back empty just because no embedding was close.
pub fn filter_ranked(
    mut hits: Vec<Ranked>,
    min_score: f64,
    text_weight: f64,
    max_results: usize,
) -> Vec<Ranked> {
    hits.sort_by(rank_order);
    let mut kept: Vec<Ranked> = hits
        .iter()
        .filter(|h| h.score >= min_score)
        .cloned()
        .collect();
    if kept.is_empty() {
        let floor = min_score.min(text_weight);
        kept = hits
            .into_iter()
            .filter(|h| h.text_score > 0.0 && h.score >= floor)
            .collect();
    }
    kept.truncate(max_results);
    kept
}

/// Share of the best keyword-only score a hit needs to survive when none reaches minScore.
pub(crate) const KEYWORD_ONLY_RELAXATION: f64 = 0.5;

/// Sorts, applies `minScore` and keeps `max_results`, for keyword-only (`fts-only`) search.
///
/// Keyword-only scores are BM25 mapped to `s / (1 + s)`, and on a small workspace a query
/// word that occurs in one note scores about 0.2: below the default minScore (0.35), and
/// below the hybrid relaxation floor (`min(minScore, textWeight)`, 0.3), which compares a
/// weighted hybrid score. So here, when no hit reaches `min_score`, the hits scoring at
/// least [`KEYWORD_ONLY_RELAXATION`] of the best one are kept instead: a word that is in
/// memory always finds its chunk, the weak tail of a strong match is still cut, scores stay
/// in 0..1 unchanged, and a hit at or above minScore is returned exactly as before.
pub(crate) fn filter_keyword_only(
    mut hits: Vec<Ranked>,
    min_score: f64,
    max_results: usize,
) -> Vec<Ranked> {
    hits.sort_by(rank_order);
    let mut kept: Vec<Ranked> = hits
        .iter()
        .filter(|h| h.score >= min_score)
        .cloned()
        .collect();
    if kept.is_empty() {
        let floor = hits
            .first()
            .map_or(0.0, |best| best.score * KEYWORD_ONLY_RELAXATION);
        kept = hits
            .into_iter()
            .filter(|h| h.text_score > 0.0 && h.score >= floor)
            .collect();
    }
    kept.truncate(max_results);
    kept
}

/// `minScore` as OpenClaw 2026.9 applies it to `hits` (already in their final order; MMR
/// has run in hybrid mode), keeping at most `max_results`:
/// - keyword-only: the hits reaching `min_score`, or, when none does, all of them;
/// - vector-only: the hits reaching `min_score`;
/// - hybrid: the hits reaching `min_score`; when none does, every hit the keyword side
///   found; when some do but fewer than `max_results`, the rest filled (in order) with
///   keyword-only hits below it. So a word found only in one note is never lost to the
///   weights (0.3 × a keyword score stays under the default 0.35).
pub fn select_with_keyword_rescue(
    hits: Vec<Ranked>,
    min_score: f64,
    mode: SelectMode,
    max_results: usize,
) -> Vec<Ranked> {
    let keyword_found = |h: &Ranked| h.text_score > 0.0;
    let (strict, below): (Vec<Ranked>, Vec<Ranked>) =
        hits.into_iter().partition(|h| h.score >= min_score);
    let mut out = match mode {
        SelectMode::KeywordOnly if strict.is_empty() => below,
        SelectMode::KeywordOnly | SelectMode::VectorOnly => strict,
        SelectMode::Hybrid if strict.is_empty() => {
            below.into_iter().filter(|h| keyword_found(h)).collect()
        }
        SelectMode::Hybrid => {
            let room = max_results.saturating_sub(strict.len());
            let rescued = below
                .into_iter()
                .filter(|h| keyword_found(h) && h.vector_score.is_none_or(|v| v == 0.0))
                .take(room);
            strict.into_iter().chain(rescued).collect()
        }
    };
    out.truncate(max_results);
    out
}

/// Which sides served a search, for [`select_with_keyword_rescue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectMode {
    /// BM25 alone.
    KeywordOnly,
    /// Vectors alone.
    VectorOnly,
    /// Both, fused.
    Hybrid,
}

/// The page size whose candidate pool serves a request for `n` results: the configured
/// `maxResults` (`base`) doubled until it covers `n`.
pub fn tier_size(n: usize, base: usize) -> usize {
    let mut size = base.max(1);
    while size < n {
        size = size.saturating_mul(2);
    }
    size
}

/// Top-`n` results that are always a prefix of the top results for any larger `n`.
///
/// SPEC §5's candidate pool grows with `maxResults`, and a larger pool can lift a chunk
/// that both sides ranked just outside the smaller pool above earlier results. So results
/// are dealt in tiers: the first `base` (the configured `maxResults`) come from the pool
/// for `base`, the next `base` from the pool for `2·base`, then `4·base`, … each tier
/// skipping what earlier tiers returned. `rank(pool)` ranks the candidates truncated to
/// `pool` per side; `pool_for(size)` is SPEC's pool rule. A request for the configured
/// `maxResults` is exactly SPEC's single ranking (example: the test
/// `tiered_top_keeps_earlier_results`).
pub fn tiered_top<T, K: Eq + std::hash::Hash + Clone>(
    n: usize,
    base: usize,
    pool_for: impl Fn(usize) -> usize,
    mut rank: impl FnMut(usize) -> Vec<T>,
    key: impl Fn(&T) -> K,
) -> Vec<T> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut size = base.max(1);
    loop {
        let pool = pool_for(size);
        // Past the pool cap every larger tier sees the same candidates: fill from this one.
        let last = size >= n || pool >= pool_for(size.saturating_mul(2));
        let limit = if last { n } else { size };
        for item in rank(pool) {
            if out.len() >= limit {
                break;
            }
            if seen.insert(key(&item)) {
                out.push(item);
            }
        }
        if last {
            return out;
        }
        size = size.saturating_mul(2);
    }
}

/// Memory hits and wiki hits as one list of `max`, each list best first, as OpenClaw
/// 2026.9's `memory_search` merges its corpora: by score (memory first on a tie). With
/// `balance` (`corpus: "all"`) and hits on both sides, each side keeps up to half
/// (`ceil(max / 2)`) and the places left go to the better next hit of either.
pub fn merge_corpora<T>(
    memory: Vec<T>,
    wiki: Vec<T>,
    max: usize,
    balance: bool,
    score: impl Fn(&T) -> f64,
) -> Vec<T> {
    let (mut take_memory, mut take_wiki) = (memory.len(), wiki.len());
    if balance && !memory.is_empty() && !wiki.is_empty() {
        let cap = max.div_ceil(2);
        take_memory = cap.min(memory.len());
        take_wiki = cap.min(wiki.len());
        while take_memory + take_wiki < max {
            match (memory.get(take_memory), wiki.get(take_wiki)) {
                (None, None) => break,
                (Some(m), Some(w)) if score(m) >= score(w) => take_memory += 1,
                (Some(_), None) => take_memory += 1,
                _ => take_wiki += 1,
            }
        }
    }
    let mut memory = memory.into_iter().take(take_memory).peekable();
    let mut wiki = wiki.into_iter().take(take_wiki).peekable();
    let mut out = Vec::new();
    while out.len() < max {
        let next = match (memory.peek(), wiki.peek()) {
            (Some(m), Some(w)) if score(m) >= score(w) => memory.next(),
            (Some(_), Some(_)) => wiki.next(),
            (Some(_), None) => memory.next(),
            (None, _) => wiki.next(),
        };
        match next {
            Some(hit) => out.push(hit),
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiered_top_keeps_earlier_results() {
        // A toy ranking where a bigger pool surfaces a better candidate ("z").
        let rank = |pool: usize| -> Vec<&'static str> {
            if pool > 4 {
                vec!["z", "a", "b", "c", "d"]
            } else {
                vec!["a", "b", "c", "d"]
            }
        };
        let pool_for = |size: usize| size * 2;
        assert_eq!(tiered_top(2, 2, pool_for, rank, |s| *s), vec!["a", "b"]);
        assert_eq!(
            tiered_top(4, 2, pool_for, rank, |s| *s),
            vec!["a", "b", "z", "c"]
        );
    }

    #[test]
    fn candidate_pool_rule() {
        let rows: &[(usize, usize, usize)] = &[
            (6, 4, 24),
            (0, 4, 1),
            (6, 0, 1),
            (100, 20, 200),
            (usize::MAX, 20, 200),
        ];
        for &(max_results, mult, want) in rows {
            assert_eq!(
                candidate_pool(max_results, mult),
                want,
                "{max_results} × {mult}"
            );
        }
    }

    fn hit(path: &str, line: usize, score: f64, text_score: f64) -> Ranked {
        Ranked {
            key: ChunkKey {
                id: format!("{path}:{line}"),
                path: path.into(),
                start_line: line,
            },
            score,
            text_score,
            vector_score: None,
        }
    }

    #[test]
    fn text_score_table() {
        let cases = [(0.0, 0.0), (-3.0, 0.0), (1.0, 0.5), (3.0, 0.75), (9.0, 0.9)];
        for (bm25, want) in cases {
            assert!((text_score(bm25) - want).abs() < 1e-12, "bm25 {bm25}");
        }
        assert!(text_score(1e6) < 1.0);
    }

    #[test]
    fn keyword_only_filter_table() {
        let ids = |hits: Vec<Ranked>| hits.into_iter().map(|h| h.key.id).collect::<Vec<_>>();
        // (name, hits (score = textScore), min_score, expected ids)
        let cases = vec![
            (
                "one weak hit survives",
                vec![hit("a.md", 1, 0.22, 0.22)],
                0.35,
                vec!["a.md:1"],
            ),
            (
                "the weak tail of the relaxed page is cut at half the best",
                vec![
                    hit("a.md", 1, 0.30, 0.30),
                    hit("b.md", 1, 0.16, 0.16),
                    hit("c.md", 1, 0.14, 0.14),
                ],
                0.35,
                vec!["a.md:1", "b.md:1"],
            ),
            (
                "hits at or above minScore are returned as before",
                vec![hit("a.md", 1, 0.6, 0.6), hit("b.md", 1, 0.2, 0.2)],
                0.35,
                vec!["a.md:1"],
            ),
            ("nothing in, nothing out", vec![], 0.35, vec![]),
        ];
        for (name, hits, min, want) in cases {
            assert_eq!(ids(filter_keyword_only(hits, min, 10)), want, "{name}");
        }
    }

    #[test]
    fn filter_table() {
        let ids = |hits: Vec<Ranked>| hits.into_iter().map(|h| h.key.id).collect::<Vec<_>>();
        // (name, hits, min_score, text_weight, max_results, expected ids)
        let cases = vec![
            (
                "sorted by score, ties by textScore, path, line",
                vec![
                    hit("b.md", 1, 0.5, 0.1),
                    hit("a.md", 9, 0.5, 0.1),
                    hit("a.md", 2, 0.5, 0.1),
                    hit("c.md", 1, 0.5, 0.4),
                    hit("d.md", 1, 0.9, 0.0),
                ],
                0.0,
                0.3,
                10,
                vec!["d.md:1", "c.md:1", "a.md:2", "a.md:9", "b.md:1"],
            ),
            (
                "minScore filters",
                vec![hit("a.md", 1, 0.6, 0.6), hit("b.md", 1, 0.2, 0.2)],
                0.35,
                0.3,
                10,
                vec!["a.md:1"],
            ),
            (
                "relaxation keeps keyword hits ≥ min(minScore, textWeight)",
                vec![
                    hit("a.md", 1, 0.32, 0.32),
                    hit("b.md", 1, 0.25, 0.25),
                    hit("v.md", 1, 0.33, 0.0),
                ],
                0.35,
                0.3,
                10,
                vec!["a.md:1"],
            ),
            (
                "nothing at all",
                vec![hit("v.md", 1, 0.1, 0.0)],
                0.35,
                0.3,
                10,
                vec![],
            ),
            (
                "maxResults truncates after filtering",
                vec![
                    hit("a.md", 1, 0.9, 0.9),
                    hit("b.md", 1, 0.8, 0.8),
                    hit("c.md", 1, 0.7, 0.7),
                ],
                0.35,
                0.3,
                2,
                vec!["a.md:1", "b.md:1"],
            ),
        ];
        for (name, hits, min, weight, max, want) in cases {
            assert_eq!(
                ids(filter_ranked(hits, min, weight, max)),
                want,
                "case {name}"
            );
        }
    }
    #[test]
    fn selection_2026_9_keeps_keyword_hits_below_min_score() {
        let h = |id: &str, score: f64, text: f64, vector: Option<f64>| Ranked {
            vector_score: vector,
            ..hit(id, 1, score, text)
        };
        let ids = |v: Vec<Ranked>| v.into_iter().map(|r| r.key.path).collect::<Vec<_>>();
        // none reaches 0.35: every keyword hit comes back (a one-word match scores ≤ 0.3)
        let only_keyword = vec![h("a", 0.27, 0.9, Some(0.0)), h("v", 0.2, 0.0, Some(0.3))];
        assert_eq!(
            ids(select_with_keyword_rescue(
                only_keyword,
                0.35,
                SelectMode::Hybrid,
                6
            )),
            ["a"]
        );
        // some pass: the rest is filled with keyword-only hits, never with semantic ones
        let mixed = vec![
            h("p", 0.6, 0.5, Some(0.7)),
            h("v", 0.3, 0.0, Some(0.43)),
            h("k", 0.2, 0.6, Some(0.0)),
            h("kv", 0.25, 0.2, Some(0.3)),
        ];
        assert_eq!(
            ids(select_with_keyword_rescue(
                mixed.clone(),
                0.35,
                SelectMode::Hybrid,
                6
            )),
            ["p", "k"]
        );
        assert_eq!(
            ids(select_with_keyword_rescue(
                mixed,
                0.35,
                SelectMode::Hybrid,
                1
            )),
            ["p"]
        );
        // keyword-only: all when none passes, else those that pass
        let kw = vec![h("a", 0.3, 0.3, None), h("b", 0.1, 0.1, None)];
        assert_eq!(
            ids(select_with_keyword_rescue(
                kw.clone(),
                0.35,
                SelectMode::KeywordOnly,
                6
            )),
            ["a", "b"]
        );
        assert_eq!(
            ids(select_with_keyword_rescue(
                kw,
                0.2,
                SelectMode::KeywordOnly,
                6
            )),
            ["a"]
        );
        // vector-only: strict
        let v = vec![h("a", 0.3, 0.0, Some(0.3))];
        assert!(select_with_keyword_rescue(v, 0.35, SelectMode::VectorOnly, 6).is_empty());
    }

    #[test]
    fn tier_sizes_double_from_the_configured_page() {
        for &(n, base, want) in &[
            (1, 6, 6),
            (6, 6, 6),
            (7, 6, 12),
            (12, 6, 12),
            (13, 6, 24),
            (5, 0, 8),
        ] {
            assert_eq!(tier_size(n, base), want, "n {n} base {base}");
        }
    }

    #[test]
    fn tiered_results_are_prefixes_of_larger_requests() {
        // Pools grow with the page; a bigger pool ranks hidden candidates first.
        let rank = |pool: usize| -> Vec<usize> {
            let mut v: Vec<usize> = (0..pool.min(40)).collect();
            v.sort_by_key(|&i| std::cmp::Reverse((i * 7919) % 41 + pool.min(40) - i));
            v
        };
        let pool_for = |size: usize| (size * 4).min(30);
        // Ranking each request from its own pool alone breaks prefixes here …
        let naive = |n: usize| rank(pool_for(n))[..n].to_vec();
        assert!((1..25).any(|n| naive(n) != naive(25)[..n]));
        // … tiers keep them.
        let all = tiered_top(25, 3, pool_for, rank, |i| *i);
        assert_eq!(all.len(), 25);
        let unique: std::collections::HashSet<_> = all.iter().collect();
        assert_eq!(unique.len(), 25, "no duplicates across tiers");
        for n in 1..25 {
            assert_eq!(
                tiered_top(n, 3, pool_for, rank, |i| *i),
                all[..n].to_vec(),
                "n = {n}"
            );
        }
        // The configured page is exactly the single ranking of its pool.
        assert_eq!(
            tiered_top(3, 3, pool_for, rank, |i| *i),
            rank(12)[..3].to_vec()
        );
    }

    #[test]
    fn corpora_merge_by_score_and_balance_under_all() {
        let merge = |memory: &[f64], wiki: &[f64], max, balance| {
            let tag = |side: char, xs: &[f64]| xs.iter().map(|&x| (side, x)).collect::<Vec<_>>();
            merge_corpora(tag('m', memory), tag('w', wiki), max, balance, |h| h.1)
                .into_iter()
                .map(|(side, x)| format!("{side}{x}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let cases = [
            // wiki alone, or memory alone: the first `max`.
            (vec![], vec![30.0, 12.0, 3.0], 2, false, "w30 w12"),
            (vec![0.9, 0.5], vec![], 10, true, "m0.9 m0.5"),
            // By score, memory first on a tie; wiki's whole numbers outrank memory's 0–1.
            (vec![0.9, 0.5], vec![3.0, 1.0], 10, false, "w3 w1 m0.9 m0.5"),
            (vec![2.0], vec![2.0], 10, false, "m2 w2"),
            // Balanced: half each (rounded up), the rest to the better next hit.
            (
                vec![0.9, 0.8, 0.7, 0.6],
                vec![9.0, 8.0, 7.0, 6.0],
                4,
                true,
                "w9 w8 m0.9 m0.8",
            ),
            (
                vec![0.9, 0.8, 0.7, 0.6],
                vec![9.0, 8.0, 7.0, 6.0],
                5,
                true,
                "w9 w8 w7 m0.9 m0.8",
            ),
            (
                vec![0.9],
                vec![9.0, 8.0, 7.0, 6.0],
                4,
                true,
                "w9 w8 w7 m0.9",
            ),
            (vec![0.9, 0.8, 0.7], vec![9.0], 4, true, "w9 m0.9 m0.8 m0.7"),
            // Unbalanced, the better side takes every place.
            (
                vec![0.9, 0.8, 0.7, 0.6],
                vec![9.0, 8.0, 7.0, 6.0],
                4,
                false,
                "w9 w8 w7 w6",
            ),
        ];
        for (memory, wiki, max, balance, want) in cases {
            assert_eq!(
                merge(&memory, &wiki, max, balance),
                want,
                "{memory:?} {wiki:?} {max} {balance}"
            );
        }
    }
}
