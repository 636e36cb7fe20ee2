//! The search pipeline: one query over one generation (SPEC §5), in stages.
//!
//! ```text
//!          ┌─► embed (query prompt) ─► nearest chunks ─┐
//! query ───┼─► BM25 candidates ────────────────────────┼─► hydrate ─► rank ─► page
//!          └─► files the query names (OpenClaw's) ─────┘   (one read)  (pure)  (read the
//!              retrieve: mode + fallback                                      rest, hits)
//! ```
//!
//! 1. **Retrieve** (`retrieve`): both sides' candidates through the store's
//!    [`Reader`](crate::store::Reader), at the same time. Which of them serves decides the
//!    [`Mode`]; a side that was configured but could not serve becomes the payload's
//!    [`Fallback`].
//! 2. **Hydrate** (`hydrate`): one read of the chunk records the ranking needs (every
//!    candidate's when MMR compares texts or OpenClaw's ranking reads annotations; else
//!    only the best keyword chunk's, for memoria's keyword confidence), and each candidate
//!    file's temporal decay factor.
//! 3. **Rank** (`ranking.rs`): pure, with the [`Ranking`] chosen once from the settings.
//! 4. **Page**: the records of the returned chunks not hydrated yet, read in one call, as
//!    [`Hit`]s.
//! 5. **Answer, then supersede** (`answer.rs`, `supersede.rs`, memoria's ranking): a
//!    question that asks for a name gets first a hit that names one; a newer dated note
//!    that replaces the fact the first hit states moves first. The only stages that read
//!    the hits' text.

use std::collections::{HashMap, HashSet};

use super::api::{
    source_of, Candidate, Candidates, Hit, Mode, Provenance, Recall, SearchOptions, SearchResponse,
    Served,
};
use super::hybrid::{self, KeywordCandidate, VectorCandidate};
use super::lexical;
use super::lines::Asked;
use super::rank::{candidate_pool, tier_size, Ranked};
use super::ranking::{self, Input, Outcome};
use super::{answer, supersede};
use crate::annotation;
use crate::clock;
use crate::config::{Fusion, Ranking, Settings};
use crate::embed::{EmbedKind, Embedder, ResolvedEmbedder};
use crate::error::Result;
use crate::fallback::Fallback;
use crate::project;
use crate::store::{ChunkKey, ChunkRecord, Manifest, Reader};

/// How many chunks naming an answer line's values supersession reads beyond the page.
const NAMING_CHUNKS: usize = 10;

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
        supersedes: None,
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

/// The vector side's fallback over an index without vectors (built keyword-only), unless a
/// sync is building one now (`recall` then says so instead).
pub(crate) const NO_VECTOR_INDEX: &str = "no vector index yet: run `memoria index`";

/// One search over one generation: the settings (with the ranking they choose), the
/// agent's embedder and the generation's reader.
pub(crate) struct Searcher<'a> {
    pub(crate) settings: &'a Settings,
    pub(crate) embedder: &'a ResolvedEmbedder,
    pub(crate) reader: &'a dyn Reader,
}

/// What retrieval found: both sides' candidates (`None`: the side did not serve), what
/// served, and the files the query names (OpenClaw's ranking).
struct Retrieved {
    served: Served,
    keyword: Option<Vec<KeywordCandidate>>,
    vector: Option<Vec<VectorCandidate>>,
    named: Vec<(u8, ChunkKey)>,
    /// The vector side embedded only the query's first [`QUERY_EMBED_CHARS`].
    query_cut: bool,
}

/// What hydration read for the ranking.
struct Hydrated {
    chunks: HashMap<String, ChunkRecord>,
    keyword_confidence: f64,
    decay: HashMap<String, f64>,
}

impl Searcher<'_> {
    /// Searches for `query` (already trimmed, not empty).
    pub(crate) fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
        let q = &self.settings.query;
        let max_results = options.max_results.unwrap_or(q.max_results).max(1);
        let min_score = options.min_score.unwrap_or(q.min_score).clamp(0.0, 1.0);
        // Candidates for the widest tier the request needs (see `rank::tiered_top`).
        let tier = tier_size(max_results, q.max_results.max(1));
        let pool = candidate_pool(tier, q.hybrid.candidate_multiplier);
        let source = options.corpus.source();
        let retrieved = self.retrieve(query, options, pool, source)?;
        let hydrated = self.hydrate(query, &retrieved)?;
        let active = project::active_set(&options.active_project_keys);
        let outcome = ranking::rank(Input {
            query,
            ranking: self.settings.ranking,
            annotated: self.settings.semantics.is_openclaw(),
            settings: q,
            model: self.embedder.model.as_deref(),
            max_results,
            min_score,
            min_score_asked: options.min_score.is_some(),
            keyword: retrieved.keyword,
            vector: retrieved.vector,
            named: retrieved.named,
            chunks: &hydrated.chunks,
            decay: &hydrated.decay,
            keyword_confidence: hydrated.keyword_confidence,
            active: &active,
        });
        let trace = match options.trace {
            true => Some(self.trace(&outcome, &hydrated)?),
            false => None,
        };
        let served = retrieved.served;
        let warning = match (
            retrieved.query_cut && served.mode != Mode::FtsOnly,
            outcome.warning,
        ) {
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
        let mut hits = self.page(outcome.ranked, hydrated.chunks)?;
        if self.settings.ranking == Ranking::Memoria && self.reader.keyword_ready().is_ok() {
            let terms = crate::analyzer::query_terms(query, true);
            let frequencies = |terms: &[String]| self.reader.frequencies(terms);
            let beyond = |values: &[String]| self.naming(values, source);
            let asked = Asked::new(&terms);
            answer::name_first(query, &asked, &mut hits, &frequencies)?;
            supersede::supersede(&asked, &mut hits, &frequencies, &beyond)?;
        }
        let mut response = SearchResponse::new(hits, served, warning);
        response.recall_fields = self.settings.semantics.is_openclaw();
        response.ranking = Some(self.settings.ranking);
        response.candidates = trace;
        Ok(response)
    }

    /// Both sides' candidates, the mode and the fallback (stage 1).
    fn retrieve(
        &self,
        query: &str,
        options: &SearchOptions,
        pool: usize,
        source: Option<&str>,
    ) -> Result<Retrieved> {
        let state = self.embedder;
        let mut served = configured(state, None);
        // Vector side: embed the query, nearest chunks (SPEC §5.3); keyword side (§5.2).
        // They are independent, so they run at the same time. With hybrid disabled the
        // keyword side only runs when the vector side cannot serve.
        let hybrid = self.settings.query.hybrid.enabled;
        let embedder = state.embedder.as_ref().filter(|_| !options.lexical_only);
        let (embedded, query_cut) = embedded_part(query);
        let run_vector = || {
            embedder
                .map(|embedder| self.vector_candidates(embedder.as_ref(), embedded, pool, source))
        };
        // memoria's keyword side leaves out the query's function words; OpenClaw's keeps its
        // terms (its parity is tested against the real OpenClaw).
        let content_only = self.settings.ranking == Ranking::Memoria;
        let run_keyword = || self.reader.keyword(query, pool, source, content_only);
        let (vector_outcome, keyword) = if hybrid || embedder.is_none() {
            // The keyword side on a thread of its own, not on rayon's pool: a side may wait
            // for a store's I/O runtime (LanceDB's), whose vector index builds run on that
            // pool, and a pool thread that took this side while in such a build waited for
            // itself (a search during a sync's index build hung so).
            std::thread::scope(|scope| {
                let keyword = std::thread::Builder::new()
                    .name("memoria-keyword".into())
                    .spawn_scoped(scope, run_keyword);
                let vector = run_vector();
                let keyword = match keyword {
                    Ok(side) => side
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    // No thread to be had: one side after the other.
                    Err(_) => run_keyword(),
                };
                (vector, Some(keyword))
            })
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
        let (keyword, vector) = match (keyword, vector) {
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
        let named = match self.settings.semantics.is_openclaw() {
            true => self.named_files(query, source)?,
            false => Vec::new(),
        };
        Ok(Retrieved {
            served,
            keyword,
            vector,
            named,
            query_cut,
        })
    }

    /// The chunk records and facts the ranking needs, in one read (stage 2).
    fn hydrate(&self, query: &str, retrieved: &Retrieved) -> Result<Hydrated> {
        let hybrid = &self.settings.query.hybrid;
        let openclaw = self.settings.ranking == Ranking::OpenClaw;
        let annotated = self.settings.semantics.is_openclaw();
        let keyword = retrieved.keyword.iter().flatten().map(|k| &k.key);
        let vector = retrieved.vector.iter().flatten().map(|v| &v.key);
        let mut ids: Vec<&str> = Vec::new();
        // MMR compares candidates' texts, OpenClaw's keyword score reads them and 2026.9's
        // semantics multiply by their annotations, so these read every candidate's chunk;
        // otherwise only the returned chunks are read.
        if hybrid.mmr.enabled || openclaw || annotated {
            ids.extend(keyword.clone().chain(vector.clone()).map(|k| k.id.as_str()));
        }
        // memoria's min-max and z-score fusions: the keyword side counts in proportion to
        // how much of the query its best chunk holds (`hybrid::keyword_confidence`).
        let best = match (
            openclaw,
            hybrid.fusion,
            &retrieved.keyword,
            &retrieved.vector,
        ) {
            (false, Fusion::MinMax | Fusion::ZScore, Some(k), Some(_)) => k.first(),
            _ => None,
        };
        ids.extend(best.map(|b| b.key.id.as_str()));
        ids.extend(retrieved.named.iter().map(|(_, k)| k.id.as_str()));
        let mut seen = HashSet::new();
        let ids: Vec<String> = ids
            .into_iter()
            .filter(|id| seen.insert(*id))
            .map(str::to_string)
            .collect();
        let chunks: HashMap<String, ChunkRecord> = self.reader.chunks(&ids)?.into_iter().collect();
        let keyword_confidence = match best {
            Some(best) => {
                let text = chunks.get(&best.key.id).map_or("", |c| c.text.as_str());
                hybrid::keyword_confidence(self.reader.query_share(query, text)?)
            }
            None => 1.0,
        };
        let decay = self.decay_factors(keyword.chain(vector));
        Ok(Hydrated {
            chunks,
            keyword_confidence,
            decay,
        })
    }

    /// The hits of `ranked`: their records, the ones not hydrated read in one call (stage
    /// 4). The reader's generation never changes, so every ranked id is found; were a
    /// record gone (a store read through its fallback while a sync removed the chunk), the
    /// hit is dropped, as its file no longer has it.
    fn page(
        &self,
        ranked: Vec<Ranked>,
        mut chunks: HashMap<String, ChunkRecord>,
    ) -> Result<Vec<Hit>> {
        let missing: Vec<String> = ranked
            .iter()
            .filter(|r| !chunks.contains_key(&r.key.id))
            .map(|r| r.key.id.clone())
            .collect();
        chunks.extend(self.reader.chunks(&missing)?);
        Ok(ranked
            .into_iter()
            .filter_map(|r| {
                let chunk = chunks.remove(&r.key.id)?;
                Some(self.hit(r, chunk))
            })
            .collect())
    }

    /// The hit of `ranked`, whose chunk is `chunk`, with what its entry says of itself
    /// under 2026.9's semantics.
    fn hit(&self, ranked: Ranked, chunk: ChunkRecord) -> Hit {
        let recall = match self.settings.semantics.is_openclaw() {
            true => self.recall(&chunk),
            false => Recall::default(),
        };
        hit(ranked, chunk, recall)
    }

    /// The chunks that hold any of `values` (terms of an answer line), best first, as hits
    /// (supersession's look beyond the page): [`NAMING_CHUNKS`] of them at most.
    fn naming(&self, values: &[String], source: Option<&str>) -> Result<Vec<Hit>> {
        let found = self
            .reader
            .keyword(&values.join(" "), NAMING_CHUNKS, source, true)?;
        let ids: Vec<String> = found.iter().map(|k| k.key.id.clone()).collect();
        let mut chunks: HashMap<String, ChunkRecord> =
            self.reader.chunks(&ids)?.into_iter().collect();
        Ok(found
            .into_iter()
            .filter_map(|k| {
                let chunk = chunks.remove(&k.key.id)?;
                // Not a match for the query: no score of its own (supersession gives it the
                // first hit's).
                let ranked = Ranked {
                    key: k.key,
                    score: 0.0,
                    text_score: 0.0,
                    vector_score: None,
                };
                Some(self.hit(ranked, chunk))
            })
            .collect())
    }

    /// Both sides' candidates and the fusion's inputs, for `memoria eval --candidates`.
    fn trace(&self, outcome: &Outcome, hydrated: &Hydrated) -> Result<Candidates> {
        let hybrid = &self.settings.query.hybrid;
        let fusion = match self.settings.ranking {
            Ranking::OpenClaw => "2026.9",
            Ranking::Memoria => outcome.params.fusion.as_str(),
        };
        let keyword = outcome.keyword.iter().flatten().map(|k| (&k.key, k.bm25));
        let vector = outcome.vector.iter().flatten().map(|v| (&v.key, v.cosine));
        // The decay factors of the candidates that took part.
        let paths: HashSet<&str> = keyword
            .clone()
            .chain(vector.clone())
            .map(|(k, _)| k.path.as_str())
            .collect();
        Ok(Candidates {
            fusion: fusion.to_string(),
            vector_weight: outcome.params.vector_weight,
            text_weight: hybrid.text_weight,
            keyword_confidence: hydrated.keyword_confidence,
            decay: hydrated
                .decay
                .iter()
                .filter(|(path, _)| paths.contains(path.as_str()))
                .map(|(path, f)| (path.clone(), *f))
                .collect(),
            mmr: hybrid.mmr.enabled,
            min_score: outcome.min_score,
            base_results: self.settings.query.max_results.max(1),
            candidate_multiplier: hybrid.candidate_multiplier,
            keyword: self.traced(keyword)?,
            vector: self.traced(vector)?,
        })
    }

    /// A side's candidates as [`Candidate`]s (their line ranges read from the catalog).
    fn traced<'k>(
        &self,
        side: impl Iterator<Item = (&'k ChunkKey, f64)> + Clone,
    ) -> Result<Vec<Candidate>> {
        let ids: Vec<String> = side.clone().map(|(key, _)| key.id.clone()).collect();
        let records: HashMap<String, ChunkRecord> = self.reader.chunks(&ids)?.into_iter().collect();
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
        if let Some(reason) = embedding_failure(self.reader.manifest()) {
            return Err(reason);
        }
        if !self.reader.has_vectors() {
            let embedding = self.reader.manifest().stats.embedding.as_ref();
            return Err(match embedding.and_then(|e| e.progress) {
                // A sync committed the keyword side and embeds (or was stopped): the
                // payload's warning says how far it is.
                Some(_) => "no chunk has its vectors yet (see the warning)".into(),
                None => NO_VECTOR_INDEX.into(),
            });
        }
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
        // A chunk with passages scores the best of theirs (the index rescores them).
        let nearest = self
            .reader
            .nearest(&query_vector, fetch)
            .unwrap_or_default();
        let ids: Vec<String> = nearest.iter().map(|(id, _)| id.clone()).collect();
        let keys = self
            .reader
            .keys(&ids)
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
            let factor = match self.settings.ranking {
                Ranking::OpenClaw => hybrid::decay_factor_openclaw(
                    &key.path,
                    source_of(&key.path) == "memory",
                    self.mtime(&key.path).map(|d| d.as_secs_f64()),
                    now.as_secs_f64(),
                    decay.half_life_days,
                ),
                Ranking::Memoria => hybrid::decay_factor(
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

    /// OpenClaw 2026.9's exact-path tier: the first chunk of each file whose path (3),
    /// name (2) or stem (1) the query is, most specific first, then by path; none when the
    /// keyword index cannot serve.
    fn named_files(&self, query: &str, source: Option<&str>) -> Result<Vec<(u8, ChunkKey)>> {
        if self.reader.keyword_ready().is_err() {
            return Ok(Vec::new());
        }
        let mut named: Vec<(u8, ChunkKey)> = self
            .reader
            .first_chunks(&|path| lexical::path_specificity(query, path) > 0)?
            .into_iter()
            .filter(|k| source.is_none_or(|s| source_of(&k.path) == s))
            .map(|k| (lexical::path_specificity(query, &k.path), k))
            .collect();
        named.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
        Ok(named)
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
}
