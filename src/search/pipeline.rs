//! The search pipeline: one query through modes, fallbacks, candidate pools, tiers,
//! temporal decay and MMR (SPEC §5), over one generation of the index.
//!
//! ```text
//! query ─┬─► embed (query prompt) ─► vector index top-pool ─┐
//!        └─► BM25 top-pool (text index) ────────────────────┼─► fuse ─► decay ─► minScore
//!                                                           │     ─► MMR ─► tiers ─► read
//!                                         mode + fallback ◄─┘          the returned chunks
//! ```
//!
//! The two sides run at the same time. Which of them serves decides the [`Mode`]; a side
//! that was configured but could not serve becomes the payload's [`Fallback`]. Ranking
//! works on chunk keys only; the chunks' texts are read for the page returned (and, when
//! MMR is on, for every candidate, since MMR compares texts).

use std::collections::{HashMap, HashSet};

use super::api::{
    cut_utf16, source_of, Candidate, Candidates, Hit, Mode, Provenance, Recall, SearchOptions,
    SearchResponse, Served, SNIPPET_CHARS,
};
use super::hybrid::{self, keyword_hits, FusionParams, KeywordCandidate, VectorCandidate};
use super::lexical::{self, ChunkWords, KeywordQuery};
use super::rank::{
    candidate_pool, filter_keyword_only, filter_ranked, rank_order, select_2026_9, text_score,
    tier_size, tiered_top, Ranked, SelectMode,
};
use crate::annotation;
use crate::clock;
use crate::config::{Fusion, Settings};
use crate::embed::{EmbedKind, Embedder, ResolvedEmbedder};
use crate::error::Result;
use crate::fallback::Fallback;
use crate::index::analyzer::{self, AnalyzerMode};
use crate::index::catalog::{ChunkKey, ChunkRecord};
use crate::index::{GenerationView, Manifest};
use crate::project;

/// How many times the pool the vector side fetches when a search covers one corpus.
const CORPUS_OVERFETCH: usize = 4;

/// Characters of a query the vector side embeds (about 512 tokens of English): a longer
/// "query" is a pasted document, whose embedding would take seconds and hundreds of MB for
/// no better recall. The keyword side reads the whole query; the answer's warning says when
/// it was cut.
pub(crate) const QUERY_EMBED_CHARS: usize = 2048;

/// The part of `query` the vector side embeds, and whether it was cut.
fn embedded_part(query: &str) -> (&str, bool) {
    match query.char_indices().nth(QUERY_EMBED_CHARS) {
        Some((byte, _)) => (&query[..byte], true),
        None => (query, false),
    }
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
/// `<!-- project: … -->` tag, which drops its entry (2026.9's semantics).
fn malformed_tags(candidates: &HashMap<String, ChunkRecord>) -> Option<String> {
    let mut dropped: Vec<(&str, usize)> = candidates
        .values()
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

/// The result for `ranked`, whose chunk is `chunk`; `recall` says what its entry says of
/// itself (2026.9's semantics).
fn hit(ranked: Ranked, chunk: ChunkRecord, recall: Recall) -> Hit {
    Hit {
        id: ranked.key.id,
        path: chunk.path,
        source: chunk.source,
        start_line: chunk.start_line,
        end_line: chunk.end_line,
        text: chunk.text,
        score: ranked.score,
        text_score: ranked.text_score,
        vector_score: ranked.vector_score,
        recall,
        wiki: None,
    }
}

/// OpenClaw 2026.9's origin class of a memory file: dreaming output is `system`, the
/// workspace's memory `agent`, anything else `untrusted`.
fn origin_class(path: &str) -> &'static str {
    if path == "DREAMS.md"
        || path.starts_with("memory/dreaming/")
        || path.starts_with("memory/.dreams/")
    {
        "system"
    } else if path == "MEMORY.md" || path == "USER.md" || path.starts_with("memory/") {
        "agent"
    } else {
        "untrusted"
    }
}

/// Why the index's vectors cannot serve: its last sync failed to embed, or chunks wait for
/// a batch embedding job (`remote.batch.wait: false`). Either way some chunks have no
/// vector, and a hybrid score would bury them (their vector side counts as 0): keyword
/// search serves until a sync completes the vectors.
pub(crate) fn embedding_failure(manifest: &Manifest) -> Option<String> {
    let embedding = manifest.stats.embedding.as_ref()?;
    if let Some(error) = &embedding.error {
        return Some(format!("embedding the memory files failed: {error}"));
    }
    (embedding.awaiting_batch > 0).then(|| {
        format!(
            "{} of {} chunks wait for a batch embedding job (remote.batch.wait: false); \
             keyword search until a later sync reads it",
            embedding.awaiting_batch, manifest.stats.chunks
        )
    })
}

/// What serves searches before any query runs: the embedder's provider and model, hybrid
/// when there is an embedder, and its fallback. With `manifest`, an index whose embedding
/// failed is keyword-only with that failure as the fallback (what `status` reports).
pub(crate) fn configured(embedder: &ResolvedEmbedder, manifest: Option<&Manifest>) -> Served {
    let mut served = Served {
        provider: embedder.provider.clone(),
        model: embedder.model.clone(),
        mode: if embedder.embedder.is_some() {
            Mode::Hybrid
        } else {
            Mode::FtsOnly
        },
        fallback: embedder.fallback.clone(),
        backend: None,
    };
    if let Some(reason) = manifest.and_then(embedding_failure) {
        served.mode = Mode::FtsOnly;
        served.fallback = Some(Fallback {
            from: embedder.provider.clone(),
            reason,
        });
    }
    served
}

/// One search over one generation: the settings, the agent's embedder and the view.
pub(crate) struct Searcher<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) embedder: &'a ResolvedEmbedder,
    pub(crate) view: &'a GenerationView,
}

impl Searcher<'_> {
    /// Searches for `query` (already trimmed, not empty).
    pub(crate) fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
        let state = self.embedder;
        let view = self.view;
        let mut served = configured(state, None);
        let q = &self.settings.query;
        let max_results = options.max_results.unwrap_or(q.max_results).max(1);
        let min_score = options.min_score.unwrap_or(q.min_score).clamp(0.0, 1.0);
        // Candidates for the widest tier the request needs (see `tiered_top`).
        let multiplier = q.hybrid.candidate_multiplier;
        let base = q.max_results.max(1);
        let pool = candidate_pool(tier_size(max_results, base), multiplier);
        let source = options.corpus.source();

        // Vector side: embed the query, nearest chunks (SPEC §5.3); keyword side (§5.2).
        // They are independent, so they run at the same time. With hybrid disabled the
        // keyword side only runs when the vector side cannot serve.
        let hybrid = q.hybrid.enabled;
        let embedder = state.embedder.as_ref().filter(|_| !options.lexical_only);
        let (embedded, query_cut) = embedded_part(query);
        let run_vector = || {
            embedder
                .map(|embedder| self.vector_candidates(embedder.as_ref(), embedded, pool, source))
        };
        // memoria's keyword side leaves out the query's function words; 2026.9's keeps
        // OpenClaw's terms (its parity is tested against the real OpenClaw).
        let content_only = !self.settings.semantics.is_2026_9();
        let run_keyword = || view.text()?.search(query, pool, source, content_only);
        let (vector_outcome, keyword) = if hybrid || embedder.is_none() {
            let (v, k) = rayon::join(run_vector, run_keyword);
            (v, Some(k))
        } else {
            (run_vector(), None)
        };
        let mut vector = None;
        match vector_outcome {
            Some(Ok(found)) => vector = found,
            Some(Err(reason)) => {
                served.fallback = Some(Fallback {
                    from: state.provider.clone(),
                    reason,
                })
            }
            None => {}
        }
        let keyword = match keyword {
            Some(keyword) => keyword,
            None if vector.is_some() => Ok(Vec::new()),
            None => run_keyword(),
        };
        let keyword = keyword.map(|hits| {
            hits.into_iter()
                .map(|h| KeywordCandidate {
                    key: h.key,
                    bm25: f64::from(h.bm25),
                })
                .collect::<Vec<_>>()
        });
        let (mut keyword, vector) = match (keyword, vector) {
            (Ok(keyword), Some(vector)) if hybrid => {
                served.mode = Mode::Hybrid;
                (Some(keyword), Some(vector))
            }
            (Err(err), Some(vector)) => {
                served.mode = Mode::VectorOnly;
                served.fallback = Some(Fallback {
                    from: "fts".into(),
                    reason: format!("keyword index unavailable: {err}"),
                });
                (None, Some(vector))
            }
            (Ok(_), Some(vector)) => {
                served.mode = Mode::VectorOnly;
                (None, Some(vector))
            }
            (keyword, None) => {
                served.mode = Mode::FtsOnly;
                (Some(keyword?), None)
            }
        };
        let current = self.settings.semantics.is_2026_9();
        let mut params = FusionParams {
            vector_weight: q.hybrid.vector_weight,
            text_weight: q.hybrid.text_weight,
            fusion: q.hybrid.fusion,
        };
        // MMR compares candidates' texts and 2026.9's ranking reads their annotations, so
        // both read every candidate's chunk; otherwise only the returned chunks are read.
        let mut chunks: HashMap<String, ChunkRecord> = HashMap::new();
        if q.hybrid.mmr.enabled || current {
            let ids: Vec<String> = keyword
                .iter()
                .flatten()
                .map(|k| k.key.id.clone())
                .chain(vector.iter().flatten().map(|v| v.key.id.clone()))
                .collect();
            chunks.extend(view.chunks_by_ids(&ids)?);
        }
        // 2026.9's keyword side: only chunks holding every query word or a keyword are
        // keyword hits, scored with its bonuses (`lexical`); the raw mapping stays textScore.
        let mut keyword_scores: HashMap<String, f64> = HashMap::new();
        if let (true, Some(candidates)) = (current, keyword.as_mut()) {
            let lexical = KeywordQuery::new(query);
            candidates.retain(|k| {
                let Some(chunk) = chunks.get(&k.key.id) else {
                    return true;
                };
                let words = ChunkWords::new(&chunk.text);
                if !lexical.is_candidate(&words) {
                    return false;
                }
                let score =
                    lexical.score_words(text_score(k.bm25), &words, &chunk.text, &k.key.path);
                keyword_scores.insert(k.key.id.clone(), score);
                true
            });
        }
        let mut keyword_confidence = 1.0;
        // memoria's min-max and z-score fusions: the keyword side counts in proportion to
        // how much of the query its best chunk holds (`hybrid::keyword_confidence`).
        if let (false, Fusion::MinMax | Fusion::ZScore, Some(k), Some(_)) =
            (current, params.fusion, keyword.as_ref(), vector.as_ref())
        {
            if let Some(best) = k.first() {
                if !chunks.contains_key(&best.key.id) {
                    chunks.extend(view.chunks_by_ids(std::slice::from_ref(&best.key.id))?);
                }
                let text = chunks.get(&best.key.id).map_or("", |c| c.text.as_str());
                let share = view.text()?.query_share(query, text)?;
                keyword_confidence = hybrid::keyword_confidence(share);
                params.text_weight *= keyword_confidence;
            }
        }
        let keyword_side = keyword.is_some();
        let active = project::active_set(&options.active_project_keys);
        let decay = self.decay_factors(
            keyword
                .iter()
                .flatten()
                .map(|k| &k.key)
                .chain(vector.iter().flatten().map(|v| &v.key)),
        );
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
            if current {
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
            if current {
                // × importance, × project affinity; a malformed project tag drops the entry.
                hits.retain_mut(|hit| {
                    let Some(a) = chunks.get(&hit.key.id).map(|c| &c.annotations) else {
                        return true;
                    };
                    match annotation::project_multiplier(&a.project, &active) {
                        None => false,
                        Some(affinity) => {
                            hit.score *= annotation::importance_multiplier(a.importance) * affinity;
                            true
                        }
                    }
                });
            }
            hits
        };
        let mode = match (&keyword, &vector) {
            (Some(_), Some(_)) => SelectMode::Hybrid,
            (None, Some(_)) => SelectMode::VectorOnly,
            _ => SelectMode::KeywordOnly,
        };
        // memoria's semantics lower the default threshold for a model whose cosines run low
        // (`hybrid::Calibration`); a minScore the request or the config sets, and 2026.9's
        // semantics, keep it.
        let calibration = hybrid::Calibration::for_model(state.model.as_deref())
            .filter(|_| options.min_score.is_none() && !q.min_score_configured && !current);
        let min_score = match (calibration, mode) {
            (Some(c), SelectMode::Hybrid) => {
                c.default_min_score(min_score, params.vector_weight, params.fusion)
            }
            (Some(c), SelectMode::VectorOnly) => {
                c.default_min_score(min_score, 1.0, Fusion::Weighted)
            }
            _ => min_score,
        };
        let rank = |pool: usize| match current {
            true => self.filter_2026_9(scored(pool), min_score, mode, &chunks),
            false => self.filter(scored(pool), min_score, mode, &chunks),
        };
        let ranked = tiered_top(
            max_results,
            base,
            |size| candidate_pool(size, multiplier),
            rank,
            |hit: &Ranked| hit.key.id.clone(),
        );
        // An empty answer says why when candidates were there but none reached minScore
        // (the ranking and the result set stay OpenClaw's).
        let warning = match ranked.is_empty() {
            true => below_min_score(scored(pool), min_score).or_else(|| malformed_tags(&chunks)),
            false if current => self.buried_by_decay(&ranked, || scored(pool), &decay),
            false => None,
        };
        // 2026.9: a query naming a file puts its first chunk before every content hit.
        let ranked = match current {
            true => {
                self.exact_paths_first(query, ranked, max_results, source, &active, &mut chunks)?
            }
            false => ranked,
        };
        let missing: Vec<String> = ranked
            .iter()
            .filter(|r| !chunks.contains_key(&r.key.id))
            .map(|r| r.key.id.clone())
            .collect();
        // The text index of a view never reloads, so every ranked id is found. Only in the
        // catalog fallback can a sync remove a chunk in between; its file no longer has it,
        // so it is dropped.
        chunks.extend(view.chunks_by_ids(&missing)?);
        let hits = ranked
            .into_iter()
            .filter_map(|r| {
                let chunk = chunks.remove(&r.key.id)?;
                let recall = match current {
                    true => self.recall(&chunk),
                    false => Recall::default(),
                };
                Some(hit(r, chunk, recall))
            })
            .collect();
        let warning = match (query_cut && served.mode != Mode::FtsOnly, warning) {
            (false, warning) => warning,
            (true, warning) => {
                let note = format!(
                    "the query is {} characters: the vector side embedded its first \
                     {QUERY_EMBED_CHARS} (the keyword side read it all)",
                    query.chars().count()
                );
                Some(warning.map_or(note.clone(), |w| format!("{w}; {note}")))
            }
        };
        let mut response = SearchResponse::new(hits, served, warning);
        response.recall_fields = current;
        if options.trace {
            let fusion = match current {
                true => "2026.9",
                false => params.fusion.as_str(),
            };
            let keyword = keyword.iter().flatten().map(|k| (&k.key, k.bm25));
            let vector = vector.iter().flatten().map(|v| (&v.key, v.cosine));
            response.candidates = Some(Candidates {
                fusion: fusion.to_string(),
                vector_weight: params.vector_weight,
                text_weight: q.hybrid.text_weight,
                keyword_confidence,
                decay: decay.into_iter().collect(),
                mmr: q.hybrid.mmr.enabled,
                min_score,
                base_results: base,
                candidate_multiplier: multiplier,
                keyword: self.traced(keyword)?,
                vector: self.traced(vector)?,
            });
        }
        Ok(response)
    }

    /// A side's candidates as [`Candidate`]s (their line ranges read from the catalog).
    fn traced<'k>(
        &self,
        side: impl Iterator<Item = (&'k ChunkKey, f64)> + Clone,
    ) -> Result<Vec<Candidate>> {
        let ids: Vec<String> = side.clone().map(|(key, _)| key.id.clone()).collect();
        let records: HashMap<String, ChunkRecord> =
            self.view.chunks_by_ids(&ids)?.into_iter().collect();
        Ok(side
            .map(|(key, score)| Candidate {
                id: key.id.clone(),
                path: key.path.clone(),
                start_line: key.start_line,
                end_line: records.get(&key.id).map_or(key.start_line, |r| r.end_line),
                score,
            })
            .collect())
    }

    /// Vector candidates, `Ok(None)` when the index has no vectors to search, or the reason
    /// the vector side failed (reported as a fallback).
    fn vector_candidates(
        &self,
        embedder: &dyn Embedder,
        query: &str,
        pool: usize,
        source: Option<&str>,
    ) -> std::result::Result<Option<Vec<VectorCandidate>>, String> {
        if let Some(reason) = embedding_failure(self.view.manifest()) {
            return Err(reason);
        }
        let Some(vectors) = self.view.vectors() else {
            return Err("no vector index yet: run `memoria index`".into());
        };
        let embedded = embedder
            .embed(&[query], EmbedKind::Query)
            .map_err(|e| format!("embedding the query failed: {e}"))?;
        let Some(query_vector) = embedded.into_iter().next().map(|e| e.vector) else {
            return Err("the embedder returned no vector".into());
        };
        if query_vector.iter().all(|v| *v == 0.0) {
            return Ok(None); // a zero query vector skips the vector side (SPEC §5.3)
        }
        // The vector index does not know sources: a search of one corpus fetches a wider
        // pool and keeps that corpus's chunks.
        let fetch = match source {
            Some(_) => pool.saturating_mul(CORPUS_OVERFETCH),
            None => pool,
        };
        // A chunk with passages scores the best of its own vector and theirs (the index
        // rescores them).
        let nearest = vectors.search(&query_vector, fetch);
        let ids: Vec<String> = nearest.iter().map(|(id, _)| id.clone()).collect();
        let keys = self
            .view
            .keys_by_ids(&ids)
            .map_err(|e| format!("reading vector candidates: {e}"))?;
        let mut by_id: HashMap<String, ChunkKey> = keys
            .into_iter()
            .filter(|k| source.is_none_or(|s| source_of(&k.path) == s))
            .map(|k| (k.id.clone(), k))
            .collect();
        let mut candidates: Vec<VectorCandidate> = nearest
            .into_iter()
            .filter_map(|(id, cosine)| {
                by_id.remove(&id).map(|key| VectorCandidate {
                    key,
                    cosine: f64::from(cosine),
                })
            })
            .collect();
        candidates.truncate(pool);
        Ok(Some(candidates))
    }

    /// The temporal decay factor of each candidate's file (SPEC §5.7), computed once per
    /// search (one stat per file, however many chunks and tiers); empty when decay is off.
    fn decay_factors<'k>(&self, keys: impl Iterator<Item = &'k ChunkKey>) -> HashMap<String, f64> {
        let decay = &self.settings.query.hybrid.temporal_decay;
        let mut factors = HashMap::new();
        if !decay.enabled {
            return factors;
        }
        let now = clock::now();
        for key in keys {
            if factors.contains_key(&key.path) {
                continue;
            }
            let factor = match self.settings.semantics.is_2026_9() {
                true => hybrid::decay_factor_2026_9(
                    &key.path,
                    source_of(&key.path) == "memory",
                    self.mtime(&key.path).map(|d| d.as_secs_f64()),
                    now.as_secs_f64(),
                    decay.half_life_days,
                ),
                false => hybrid::decay_factor(
                    &key.path,
                    self.mtime(&key.path).map(|d| d.as_secs() as i64),
                    now.as_secs() as i64,
                    decay.half_life_days,
                ),
            };
            factors.insert(key.path.clone(), factor);
        }
        factors
    }

    /// OpenClaw 2026.9's exact-path tiers: when `query` is a file's path (3), name (2) or
    /// stem (1), that file's first chunk comes first, most specific first, scored by its
    /// project multiplier alone (1, 1.15 or 0.90; a malformed tag still drops it); the
    /// content hits follow, without those chunks, cut to `max_results`.
    fn exact_paths_first(
        &self,
        query: &str,
        ranked: Vec<Ranked>,
        max_results: usize,
        source: Option<&str>,
        active: &[String],
        chunks: &mut HashMap<String, ChunkRecord>,
    ) -> Result<Vec<Ranked>> {
        let Ok(text) = self.view.text() else {
            return Ok(ranked);
        };
        let mut named: Vec<(u8, ChunkKey)> = text
            .first_chunks(|path| lexical::path_specificity(query, path) > 0)?
            .into_iter()
            .filter(|k| source.is_none_or(|s| source_of(&k.path) == s))
            .map(|k| (lexical::path_specificity(query, &k.path), k))
            .collect();
        if named.is_empty() {
            return Ok(ranked);
        }
        named.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
        let unread: Vec<String> = named
            .iter()
            .filter(|(_, k)| !chunks.contains_key(&k.id))
            .map(|(_, k)| k.id.clone())
            .collect();
        chunks.extend(self.view.chunks_by_ids(&unread)?);
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
        Ok(out)
    }

    /// When temporal decay has put every dated note below the undated ones returned, and a
    /// dated note would have come first without it, says so (OpenClaw 2026.9 does this
    /// silently; over years of daily logs it hides all of them).
    fn buried_by_decay(
        &self,
        ranked: &[Ranked],
        candidates: impl FnOnce() -> Vec<Ranked>,
        decay: &HashMap<String, f64>,
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
        let half_life = self.settings.query.hybrid.temporal_decay.half_life_days;
        Some(format!(
            "temporal decay ({half_life}-day half-life) ranked every dated note below undated \
             ones: {} would rank first without it ({before:.3}, × {:.1e} for its age); \
             plugins.entries.memoria.config.temporalDecay lengthens or turns it off",
            buried.key.path,
            factor(&buried.key.path)
        ))
    }

    /// The modification time of a cited file, since the Unix epoch: a workspace path, or a
    /// transcript (`sessions/<file>`) in the agent's sessions directory.
    fn mtime(&self, path: &str) -> Option<std::time::Duration> {
        let file = match (path.strip_prefix("sessions/"), source_of(path)) {
            (Some(name), "sessions") => self.settings.sessions_dir()?.join(name),
            _ => self.settings.workspace.join(path),
        };
        std::fs::metadata(file)
            .and_then(|m| m.modified())
            .ok()
            .and_then(clock::since_epoch)
    }

    /// What a chunk's entry says of itself, and where its text came from (a memory file's
    /// path and time, a transcript chunk's messages).
    fn recall(&self, chunk: &ChunkRecord) -> Recall {
        let a = &chunk.annotations;
        Recall {
            importance: a.importance,
            triggers: a.triggers.clone(),
            project_key: match &a.project {
                annotation::ProjectTag::Keys(keys) => Some(keys.join("; ")),
                _ => None,
            },
            provenance: match (&a.origin, chunk.source.as_str()) {
                (Some(origin), _) => Some(Provenance {
                    origin_class: origin.class.as_str(),
                    session_kind: "unknown",
                    observed_at: origin.observed_at_ms,
                }),
                (None, "memory") => Some(Provenance {
                    origin_class: origin_class(&chunk.path),
                    session_kind: "unknown",
                    observed_at: self.mtime(&chunk.path).map_or(0, |d| d.as_millis() as u64),
                }),
                (None, _) => None,
            },
        }
    }

    /// Temporal decay (`decay`, by path), minScore (with the relaxation of the mode:
    /// hybrid, or keyword-only), MMR (over `chunks`' texts).
    /// `minScore` (with OpenClaw's relaxation), then MMR.
    fn filter(
        &self,
        hits: Vec<Ranked>,
        min_score: f64,
        mode: SelectMode,
        chunks: &HashMap<String, ChunkRecord>,
    ) -> Vec<Ranked> {
        let hybrid = &self.settings.query.hybrid;
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

    /// OpenClaw 2026.9's order and `minScore`: in hybrid mode MMR (relevance normalised,
    /// over the tokens of each candidate's snippet) reorders every candidate, then
    /// [`select_2026_9`] applies `minScore` with its keyword rescue.
    fn filter_2026_9(
        &self,
        mut hits: Vec<Ranked>,
        min_score: f64,
        mode: SelectMode,
        chunks: &HashMap<String, ChunkRecord>,
    ) -> Vec<Ranked> {
        hits.sort_by(rank_order);
        let mmr = &self.settings.query.hybrid.mmr;
        if mode == SelectMode::Hybrid && mmr.enabled {
            let terms = |hit: &Ranked| -> HashSet<String> {
                let text = chunks.get(&hit.key.id).map_or("", |c| c.text.as_str());
                hybrid::mmr_tokens_2026_9(cut_utf16(text, SNIPPET_CHARS))
            };
            hits = hybrid::mmr(hits, mmr.lambda, true, terms);
        }
        select_2026_9(hits, min_score, mode, usize::MAX)
    }
}
