//! Embedding the chunks a sync left without a vector: from the embedding cache first, then
//! the provider's batch jobs for a large backfill (recorded by the store), then direct
//! requests.

use super::report::{SyncProgress, SyncReport};
use crate::config::Settings;
use crate::digest::sha256_hex;
use crate::embed::backfill::{self, PendingJob};
use crate::embed::{BatchApi, Document, Embedder};
use crate::error::Result;
use crate::passage;
use crate::store::{cache_key, EmbeddingProgress, Identity, Unembedded, Writer};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Chunks embedded per embedder call at most (the embedder groups them by length
/// internally).
pub(super) const EMBED_BATCH: usize = 64;
/// Vectors looked up at once in the embedding cache and the replaced generation: few calls,
/// since a lookup in fleet mode's shared cache scans the rows its key index does not hold
/// yet once per call (a thousand agents of a thousand chunks: 110 scans a sync at 64 keys
/// a call, 2 at this), and a bounded batch (12 MB of vectors at 768 dimensions).
const LOOKUP_BATCH: usize = 4096;

/// A sync embeds in at least this many calls when it can (batches of 8 to
/// [`EMBED_BATCH`] texts): a sync killed mid-call loses that call's work alone, at most a
/// fortieth of the whole (2.5 %), since every call's vectors are stored as they come.
const MIN_CALLS: usize = 40;

/// Texts per embedder call for a sync that embeds `total` of them, with an embedder for
/// which calls of fewer than `min` texts are not worth it ([`Embedder::min_batch`]).
fn batch_size(total: usize, min: usize) -> usize {
    (total / MIN_CALLS).clamp(min.clamp(1, EMBED_BATCH), EMBED_BATCH)
}

/// The shortest time between two commits made while embedding.
const MIN_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(2);

/// Commits made while embedding cost at most about 1/this of the time between them.
const CHECKPOINT_OVERHEAD: u32 = 20;

/// Whether a commit is due while embedding: the last one is at least
/// [`MIN_CHECKPOINT_INTERVAL`] and [`CHECKPOINT_OVERHEAD`] times its own cost ago (pure).
fn checkpoint_due(since_last: Duration, last_cost: Duration) -> bool {
    since_last >= MIN_CHECKPOINT_INTERVAL.max(last_cost * CHECKPOINT_OVERHEAD)
}

/// The commits a sync makes while it embeds, so that searches need not wait for the
/// vectors: the keyword side before the first text is embedded (for a new generation, or
/// when more than one embedder call is to come), then the vectors so far whenever
/// [`checkpoint_due`]. What a commit writes is the caller's (`run.rs`).
pub(super) struct Checkpoints<'c> {
    commit: &'c mut dyn FnMut(&mut dyn Writer, EmbeddingProgress) -> Result<()>,
    /// A new generation, which nothing can search before its first commit.
    rebuilt: bool,
    /// When the last commit ended and what it cost; `None` before the first.
    last: Option<(Instant, Duration)>,
    started_at: u64,
}

impl<'c> Checkpoints<'c> {
    pub(super) fn new(
        rebuilt: bool,
        commit: &'c mut dyn FnMut(&mut dyn Writer, EmbeddingProgress) -> Result<()>,
    ) -> Checkpoints<'c> {
        Checkpoints {
            commit,
            rebuilt,
            last: None,
            started_at: crate::clock::unix_now(),
        }
    }

    /// Before embedding `total` texts in calls of `batch` (before each page: it commits
    /// once).
    fn before(&mut self, writer: &mut dyn Writer, total: usize, batch: usize) -> Result<()> {
        if self.last.is_some() {
            return Ok(());
        }
        self.started_at = crate::clock::unix_now();
        if total == 0 || (!self.rebuilt && total <= batch) {
            return Ok(());
        }
        self.commit_now(writer, total, 0)
    }

    /// After an embedder call, `done` of `total` texts embedded; the last call's vectors
    /// are left to the sync's own final commit.
    fn after_call(&mut self, writer: &mut dyn Writer, total: usize, done: usize) -> Result<()> {
        match self.last {
            Some((at, cost)) if done < total && checkpoint_due(at.elapsed(), cost) => {
                self.commit_now(writer, total, done)
            }
            _ => Ok(()),
        }
    }

    fn commit_now(&mut self, writer: &mut dyn Writer, total: usize, done: usize) -> Result<()> {
        let started = Instant::now();
        (self.commit)(
            writer,
            EmbeddingProgress {
                total: total as u64,
                done: done as u64,
                started_at: self.started_at,
                updated_at: crate::clock::unix_now(),
            },
        )?;
        self.last = Some((Instant::now(), started.elapsed()));
        Ok(())
    }
}

/// How a sync embeds chunks (absent: keyword-only index).
pub(crate) struct EmbedPlan<'a> {
    pub(crate) embedder: &'a dyn Embedder,
    /// Identifies the embedder's vectors in the cache (provider, model, key, prompt).
    pub(crate) cache_key: String,
    /// `cache.enabled` / `cache.maxEntries`.
    pub(crate) cache_enabled: bool,
    pub(crate) cache_max_entries: usize,
    /// `remote.batch.wait` may be honoured (not in a sync a search waits for).
    pub(crate) batch_may_wait: bool,
    /// Long chunks' passages get vectors too (the identity's, [`passage::searched`]).
    pub(crate) passages: bool,
    /// Direct requests stop after this long (a sync a search waits for), leaving the rest
    /// keyword-searchable for a later sync; `None`: embed everything.
    pub(crate) time_limit: Option<Duration>,
}

impl<'a> EmbedPlan<'a> {
    /// The plan for `embedder` under `identity` and the settings' cache and vector options.
    pub(crate) fn new(
        embedder: &'a dyn Embedder,
        identity: &Identity,
        settings: &Settings,
    ) -> EmbedPlan<'a> {
        let cache_key = sha256_hex(
            format!(
                "{}\n{}\n{}",
                identity.provider,
                identity.model.as_deref().unwrap_or(""),
                embedder.fingerprint()
            )
            .as_bytes(),
        );
        EmbedPlan {
            embedder,
            cache_key,
            cache_enabled: settings.cache.enabled,
            cache_max_entries: settings.cache.max_entries,
            batch_may_wait: true,
            passages: identity.passages,
            time_limit: None,
        }
    }
}

/// True when two identities' vectors are interchangeable.
pub(super) fn same_embedder(a: &Identity, b: &Identity) -> bool {
    a.provider == b.provider && a.model == b.model && a.embedder == b.embedder && a.dims == b.dims
}

/// Chunks whose texts a sync lists at once ([`Writer::unembedded`]): a backfill of a
/// million chunks holds a page's texts to embed, not all of them (several GB at that
/// size). An embedder with a batch API lists the whole backfill in one page, since its jobs
/// are matched with texts across all of it.
const PAGE_CHUNKS: usize = if cfg!(test) { 3 } else { 20_000 };

/// Embeds every chunk without a vector, a page of them at a time ([`PAGE_CHUNKS`]): from
/// the cache, then (with `reuse`) the generation being replaced, by chunk id, then through
/// the provider's batch API when it has one and the backfill is large ([`backfill`]), then
/// through direct requests. A chunk with passages is not embedded: its vector is their
/// centroid, stored as soon as they are ([`Centroids`]). An embedder failure stops
/// embedding and is reported (the keyword index is already committed); I/O errors fail.
/// Every call's vectors are stored (and cached) as they come, and `checkpoints` commits
/// them along the way. Returns how many vectors a running batch job will bring.
pub(super) fn embed_missing(
    writer: &mut dyn Writer,
    reuse: bool,
    plan: &EmbedPlan,
    report: &mut SyncReport,
    progress: &dyn Fn(SyncProgress),
    checkpoints: &mut Checkpoints,
) -> Result<u64> {
    let page_chunks = match plan.embedder.batch_api() {
        Some(_) => usize::MAX,
        None => {
            // Jobs of a provider no longer in use (or with batching turned off) are
            // forgotten.
            if writer.batch_jobs()?.is_some() {
                writer.write_batch_jobs(None)?;
            }
            PAGE_CHUNKS
        }
    };
    let mut pages = Pages {
        unlisted_chunks: writer.unembedded_count()?,
        deadline: plan.time_limit.map(|limit| Instant::now() + limit),
        ..Pages::default()
    };
    let mut awaiting = 0;
    let mut after: Option<String> = None;
    loop {
        // (A page's last entry is a chunk's own vector, after its passages'.)
        let page = writer.unembedded(plan.passages, after.as_deref(), page_chunks)?;
        let last = page.last().map(|m| m.id.clone());
        let listed_before = pages.listed_chunks;
        let (waiting, finished) = embed_page(
            writer,
            reuse,
            plan,
            page,
            report,
            progress,
            checkpoints,
            &mut pages,
        )?;
        awaiting += waiting;
        // A page short of the limit was the last (a first one, even empty, looks at the
        // batch jobs recorded).
        let full = pages.listed_chunks - listed_before == page_chunks as u64;
        match last {
            Some(id) if finished && full => after = Some(id),
            _ => return Ok(awaiting),
        }
    }
}

/// How far a sync's embedding has come over its pages, and when it must stop.
#[derive(Default)]
struct Pages {
    /// Texts embedded through direct requests so far.
    done: usize,
    /// Texts to embed through direct requests in the pages listed so far.
    listed: usize,
    /// Chunks without their own vector in the pages listed so far, and not listed yet.
    listed_chunks: u64,
    unlisted_chunks: u64,
    /// The plan's time limit.
    deadline: Option<Instant>,
}

impl Pages {
    /// Notes a page of `chunks` chunks with `texts` texts to embed.
    fn listed(&mut self, chunks: u64, texts: usize) {
        self.listed += texts;
        self.listed_chunks += chunks;
        self.unlisted_chunks = self.unlisted_chunks.saturating_sub(chunks);
    }

    /// The texts to embed in the whole sync: exact once the last page is listed, until then
    /// estimated from the pages listed.
    fn total(&self) -> usize {
        let per_chunk = self.listed as f64 / self.listed_chunks.max(1) as f64;
        self.listed + (self.unlisted_chunks as f64 * per_chunk).round() as usize
    }

    fn out_of_time(&self) -> bool {
        self.deadline
            .is_some_and(|deadline| Instant::now() >= deadline)
    }
}

/// [`embed_missing`]'s work on one page, `missing`. Returns how many vectors a running
/// batch job will bring, and whether it went through the page (not stopped by an embedder
/// failure or the time limit).
#[allow(clippy::too_many_arguments)]
fn embed_page(
    writer: &mut dyn Writer,
    reuse: bool,
    plan: &EmbedPlan,
    mut missing: Vec<Unembedded>,
    report: &mut SyncReport,
    progress: &dyn Fn(SyncProgress),
    checkpoints: &mut Checkpoints,
    pages: &mut Pages,
) -> Result<(u64, bool)> {
    if !plan.embedder.uses_titles() {
        // Its vectors do not depend on titles: neither do their cache keys.
        missing.iter_mut().for_each(|m| m.title.clear());
    }
    let cache = plan.cache_enabled && !missing.is_empty();
    let dims = plan.embedder.dims();
    let keys: Vec<String> = missing
        .iter()
        .map(|m| cache_key(&plan.cache_key, &m.input_hash()))
        .collect();

    let mut centroids = Centroids::new(&missing);
    centroids.complete(writer)?;
    let mut todo = vectors_at_hand(
        writer,
        reuse,
        &missing,
        &keys,
        cache,
        dims,
        report,
        &mut centroids,
    )?;
    let fresh = Fresh {
        missing: &missing,
        keys: &keys,
        cache,
        plan,
    };
    let chunks = missing.iter().filter(|m| !passage::is_passage(&m.id));
    pages.listed(chunks.count() as u64, todo.len());

    // The keyword side (and the vectors at hand) become searchable before the long part.
    let per_call = batch_size(pages.total(), plan.embedder.min_batch());
    checkpoints.before(writer, pages.total(), per_call)?;

    // A large backfill through the batch API; texts it leaves go through direct requests,
    // except those a running job will bring later.
    let mut awaiting = 0u64;
    if let Some(api) = plan.embedder.batch_api() {
        let outcome = run_batches(writer, api, plan, &missing, &todo, report)?;
        let mut embedded = Vec::new();
        let listed = todo.len();
        todo.retain(|&i| {
            let hash = &missing[i].hash;
            if let Some(vector) = outcome.vectors.get(hash) {
                embedded.push((i, vector.clone()));
                false
            } else if outcome.waiting.contains(hash) {
                awaiting += 1;
                false
            } else {
                true
            }
        });
        pages.listed -= listed - todo.len();
        fresh.put(writer, embedded, report, &mut centroids)?;
    }

    let finished = embed_directly(
        writer,
        &fresh,
        &todo,
        per_call,
        pages,
        report,
        progress,
        checkpoints,
        &mut centroids,
    )?;
    Ok((awaiting, finished))
}

/// Stores the vectors at hand: the cache's, then (with `reuse`) the replaced generation's;
/// returns the indexes into `missing` still to embed. Chunks with passages are not looked
/// up: their vectors are their passages' centroids.
#[allow(clippy::too_many_arguments)]
fn vectors_at_hand(
    writer: &mut dyn Writer,
    reuse: bool,
    missing: &[Unembedded],
    keys: &[String],
    cache: bool,
    dims: usize,
    report: &mut SyncReport,
    centroids: &mut Centroids,
) -> Result<Vec<usize>> {
    let wanted: Vec<usize> = (0..missing.len())
        .filter(|&i| missing[i].passages == 0)
        .collect();
    let mut todo: Vec<usize> = Vec::new();
    for batch in wanted.chunks(LOOKUP_BATCH) {
        let mut vectors: Vec<Option<Vec<f32>>> = match cache {
            true => {
                let batch_keys: Vec<String> = batch.iter().map(|&i| keys[i].clone()).collect();
                writer.cached(&batch_keys)?
            }
            false => vec![None; batch.len()],
        };
        if reuse {
            let misses: Vec<usize> = (0..batch.len()).filter(|&j| vectors[j].is_none()).collect();
            let ids: Vec<&str> = misses
                .iter()
                .map(|&j| missing[batch[j]].id.as_str())
                .collect();
            for (&j, vector) in misses.iter().zip(writer.replaced_vectors(&ids)?) {
                vectors[j] = vector;
            }
        }
        let mut found = Vec::new();
        for (&i, vector) in batch.iter().zip(vectors) {
            // (A stored vector of another size is not ours.)
            match vector.filter(|v| v.len() == dims) {
                Some(vector) => found.push((missing[i].id.clone(), vector)),
                None => todo.push(i),
            }
        }
        report.cached += found.len();
        if !found.is_empty() {
            writer.put_vectors(&found)?;
            centroids.stored(writer, found.iter().map(|(id, _)| id.as_str()))?;
        }
    }
    Ok(todo)
}

/// The chunks of a sync whose vector is the centroid of their passages'
/// ([`Unembedded::passages`]): each is stored as soon as the last of its passages is, from
/// the passages' vectors as stored, so `Writer::unembedded` can keep trusting a chunk with
/// its own vector to be complete.
struct Centroids {
    /// By chunk id: its number of passages, and how many of them have no vector yet.
    waiting: HashMap<String, (usize, usize)>,
}

impl Centroids {
    fn new(missing: &[Unembedded]) -> Centroids {
        let mut waiting: HashMap<String, (usize, usize)> = missing
            .iter()
            .filter(|m| m.passages > 0)
            .map(|m| (m.id.clone(), (m.passages, 0)))
            .collect();
        for m in missing.iter().filter(|m| passage::is_passage(&m.id)) {
            if let Some((_, left)) = waiting.get_mut(passage::chunk_of(&m.id)) {
                *left += 1;
            }
        }
        Centroids { waiting }
    }

    /// Stores the centroids of the chunks whose passages were all stored before this sync
    /// (one stopped between a chunk's passages and its own vector).
    fn complete(&mut self, writer: &mut dyn Writer) -> Result<()> {
        let ready: Vec<String> = self
            .waiting
            .iter()
            .filter(|(_, (_, left))| *left == 0)
            .map(|(id, _)| id.clone())
            .collect();
        self.store(writer, ready)
    }

    /// Notes that vectors `ids` were just stored, and stores the centroid of every chunk
    /// whose passages they completed.
    fn stored<'i>(
        &mut self,
        writer: &mut dyn Writer,
        ids: impl Iterator<Item = &'i str>,
    ) -> Result<()> {
        let mut ready = Vec::new();
        for chunk in ids
            .filter(|id| passage::is_passage(id))
            .map(passage::chunk_of)
        {
            if let Some((_, left)) = self.waiting.get_mut(chunk) {
                *left = left.saturating_sub(1);
                if *left == 0 {
                    ready.push(chunk.to_string());
                }
            }
        }
        self.store(writer, ready)
    }

    fn store(&mut self, writer: &mut dyn Writer, chunks: Vec<String>) -> Result<()> {
        let mut vectors = Vec::new();
        for chunk in chunks {
            let Some((count, _)) = self.waiting.remove(&chunk) else {
                continue;
            };
            let ids: Vec<String> = (1..=count).map(|n| passage::id(&chunk, n)).collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            // A passage without a vector (its file changed meanwhile): the next sync lists
            // the chunk again.
            let passages: Option<Vec<Vec<f32>>> =
                writer.stored_vectors(&ids)?.into_iter().collect();
            if let Some(passages) = passages {
                vectors.push((chunk, passage::centroid(&passages)));
            }
        }
        if !vectors.is_empty() {
            writer.put_vectors(&vectors)?;
        }
        Ok(())
    }
}

/// Embeds `fresh.missing[todo]` through direct requests, `per_call` texts a call, storing
/// each call's vectors (and the centroids they complete) as it returns. Stops early on an
/// embedder failure (in `report`) or at the plan's time limit; returns whether it did not.
#[allow(clippy::too_many_arguments)]
fn embed_directly(
    writer: &mut dyn Writer,
    fresh: &Fresh,
    todo: &[usize],
    per_call: usize,
    pages: &mut Pages,
    report: &mut SyncReport,
    progress: &dyn Fn(SyncProgress),
    checkpoints: &mut Checkpoints,
    centroids: &mut Centroids,
) -> Result<bool> {
    let (missing, plan) = (fresh.missing, fresh.plan);
    let dims = plan.embedder.dims();
    // A text the page holds more than once (the same cache key: the same input to the
    // same embedder) is embedded once, its vector stored under each of its ids.
    let mut by_key: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut unique = Vec::with_capacity(todo.len());
    for &i in todo {
        let holders = by_key.entry(fresh.keys[i].as_str()).or_default();
        if holders.is_empty() {
            unique.push(i);
        }
        holders.push(i);
    }
    for batch in unique.chunks(per_call) {
        if pages.out_of_time() {
            return Ok(false);
        }
        let documents: Vec<Document> = batch
            .iter()
            .map(|&i| Document {
                title: &missing[i].title,
                text: &missing[i].text,
            })
            .collect();
        let embedded = match plan.embedder.embed_documents(&documents) {
            Ok(embedded)
                if embedded.len() == documents.len()
                    && embedded.iter().all(|e| e.vector.len() == dims) =>
            {
                embedded
            }
            Ok(_) => {
                report.embed_error =
                    Some("the embedder returned vectors of the wrong count or size".into());
                return Ok(false);
            }
            Err(err) => {
                report.embed_error = Some(err.to_string());
                return Ok(false);
            }
        };
        let mut embedded: Vec<(usize, Vec<f32>)> = batch
            .iter()
            .copied()
            .zip(embedded.into_iter().map(|e| e.vector))
            .collect();
        let copies: Vec<(usize, Vec<f32>)> = embedded
            .iter()
            .flat_map(|(i, vector)| {
                let holders = &by_key[fresh.keys[*i].as_str()];
                holders[1..].iter().map(move |&j| (j, vector.clone()))
            })
            .collect();
        embedded.extend(copies);
        pages.done += embedded.len();
        fresh.put(writer, embedded, report, centroids)?;
        let (done, total) = (pages.done, pages.total());
        progress(SyncProgress::Embedding {
            chunks_done: done,
            chunks_total: total,
        });
        checkpoints.after_call(writer, total, done)?;
    }
    Ok(true)
}

/// Where freshly embedded vectors go: the store (by chunk id) and its embedding cache (by
/// cache key).
struct Fresh<'a> {
    missing: &'a [Unembedded],
    keys: &'a [String],
    cache: bool,
    plan: &'a EmbedPlan<'a>,
}

impl Fresh<'_> {
    /// Stores the vectors of `missing[i]` for each `(i, vector)`, counted as embedded, and
    /// the centroids they complete.
    fn put(
        &self,
        writer: &mut dyn Writer,
        embedded: Vec<(usize, Vec<f32>)>,
        report: &mut SyncReport,
        centroids: &mut Centroids,
    ) -> Result<()> {
        if embedded.is_empty() {
            return Ok(());
        }
        let cached: Vec<(String, String, Vec<f32>)> = match self.cache {
            true => embedded
                .iter()
                .map(|(i, v)| {
                    (
                        self.keys[*i].clone(),
                        self.missing[*i].id.clone(),
                        v.clone(),
                    )
                })
                .collect(),
            false => Vec::new(),
        };
        let found: Vec<(String, Vec<f32>)> = embedded
            .into_iter()
            .map(|(i, vector)| (self.missing[i].id.clone(), vector))
            .collect();
        report.embedded += found.len();
        writer.put_vectors(&found)?;
        centroids.stored(writer, found.iter().map(|(id, _)| id.as_str()))?;
        if self.cache {
            writer.cache(&cached, self.plan.cache_max_entries)?;
        }
        Ok(())
    }
}

/// How many batch embedding jobs a store's record (`batches.json` in an agent directory)
/// holds, for `status`; 0 when none or unreadable.
pub(crate) fn recorded_batch_jobs(record: Option<Vec<u8>>) -> usize {
    record
        .and_then(|bytes| serde_json::from_slice::<Vec<serde_json::Value>>(&bytes).ok())
        .map_or(0, |jobs| jobs.len())
}

/// Runs [`backfill::run`] over the texts of `missing[todo]`, with the jobs recorded in the
/// agent directory; its problems become the report's warnings.
pub(super) fn run_batches(
    writer: &mut dyn Writer,
    api: &dyn BatchApi,
    plan: &EmbedPlan,
    missing: &[Unembedded],
    todo: &[usize],
    report: &mut SyncReport,
) -> Result<backfill::Outcome> {
    let recorded = match writer.batch_jobs()? {
        Some(bytes) => serde_json::from_slice::<Vec<PendingJob>>(&bytes).unwrap_or_else(|err| {
            report.warnings.push(format!(
                "{}/batches.json: unreadable batch job record ({err}); its jobs are forgotten",
                writer.location()
            ));
            Vec::new()
        }),
        None => Vec::new(),
    };
    if todo.is_empty() && recorded.is_empty() {
        return Ok(backfill::Outcome::default());
    }
    let items: Vec<(&str, &str)> = todo
        .iter()
        .map(|&i| (missing[i].hash.as_str(), missing[i].text.as_str()))
        .collect();
    let writer = std::sync::Mutex::new(writer);
    let save = |jobs: &[PendingJob]| -> std::result::Result<(), String> {
        let bytes = match jobs.is_empty() {
            true => None,
            false => Some(serde_json::to_vec_pretty(jobs).map_err(|e| e.to_string())?),
        };
        writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write_batch_jobs(bytes.as_deref())
            .map_err(|e| e.to_string())
    };
    let outcome = backfill::run(
        api,
        &plan.cache_key,
        &items,
        recorded,
        backfill::Limits::DEFAULT,
        plan.batch_may_wait,
        &save,
    );
    if outcome.submitted > 0 || !outcome.jobs.is_empty() {
        tracing::info!(
            "batch embedding: {} job(s) submitted, {} still running, {} vector(s) read",
            outcome.submitted,
            outcome.jobs.len(),
            outcome.vectors.len()
        );
    }
    report.warnings.extend(
        outcome.problems.iter().map(|problem| {
            format!("{problem}; those chunks were embedded through direct requests")
        }),
    );
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_small_enough_that_a_kill_loses_a_fortieth_at_most() {
        for (total, min, per_call) in [
            (0, 8, 8),
            (5, 8, 8),
            (320, 8, 8),
            (400, 8, 10),
            (2_560, 8, 64),
            (1_000_000, 8, 64),
            // A remote provider: 64 texts a request whatever the total.
            (102, 64, 64),
            (1_000_000, 64, 64),
            (400, 0, 10),
            (400, 1_000, 64),
        ] {
            assert_eq!(
                batch_size(total, min),
                per_call,
                "{total} texts, {min} at least"
            );
            if total >= min * MIN_CALLS {
                assert!(per_call * MIN_CALLS <= total, "{total} texts");
            }
        }
    }

    #[test]
    fn a_syncs_total_is_estimated_from_the_pages_listed_until_the_last() {
        let mut pages = Pages {
            unlisted_chunks: 10,
            ..Pages::default()
        };
        // Nothing listed yet: no estimate.
        assert_eq!(pages.total(), 0);
        // Two chunks, five texts (passages): the eight chunks left are thought alike.
        pages.listed(2, 5);
        assert_eq!(pages.total(), 5 + 20);
        // Four more chunks, all found in the cache.
        pages.listed(4, 0);
        assert_eq!(pages.total(), 5 + 3);
        // The last page: the total is exact.
        pages.listed(4, 4);
        assert_eq!((pages.total(), pages.unlisted_chunks), (9, 0));
        // Chunks added since the count are listed too.
        pages.listed(1, 1);
        assert_eq!(pages.total(), 10);
    }

    #[test]
    fn commits_while_embedding_wait_for_the_interval_and_twenty_times_their_cost() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        for (since_last, cost, due) in [
            (ms(1_999), ms(1), false),
            (s(2), ms(1), true),
            (s(2), ms(200), false),
            (s(4), ms(200), true),
            (s(30), s(2), false),
            (s(40), s(2), true),
        ] {
            assert_eq!(
                checkpoint_due(since_last, cost),
                due,
                "{since_last:?} after {cost:?}"
            );
        }
    }
}
