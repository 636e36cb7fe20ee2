//! What `status` reports about one agent's memory, and how it is assembled: the manifest's
//! last-sync statistics, the configured mode and fallback (from the same function searches
//! use), the embedder, the QMD sidecar, the live sync (this process's, else another's
//! heartbeat) and every warning that says what is stale or missing.

use serde::Serialize;

use crate::append;
use crate::clock;
use crate::config::{Fusion, Ranking, Settings};
use crate::error::{Error, Result};
use crate::fallback::Fallback;
use crate::freshness::Agent;
use crate::live::{self, LiveStatus};
use crate::qmd::QmdStatus;
use crate::search::hybrid;
use crate::search::pipeline::configured;
use crate::store::{EmbeddingStats, Identity, StoreCache, SyncStats};
use crate::sync;
use crate::workspace::{Discovery, SourceKind};

/// Set by the OpenClaw plugin in the environment of the memoria it runs (its MCP child and
/// `openclaw memoria …`), which already has the plugin's `args` and `env`.
pub(crate) const PLUGIN_CHILD_ENV: &str = "MEMORIA_OPENCLAW_PLUGIN";

/// What `status` reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The agent whose memory this is.
    pub agent_id: String,
    /// The agent directory.
    pub agent_dir: String,
    /// Where the index is kept: `local` (in the agent directory) or, in fleet mode,
    /// `lancedb <uri>/<agentId>`.
    pub store: String,
    /// What this process keeps open or caches of the store for all its agents (the local
    /// store's open generations within `MEMORIA_OPEN_MB`; fleet mode's caches), and whether
    /// the last search opened this agent cold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_cache: Option<StoreCache>,
    /// The workspace indexed.
    pub workspace: String,
    /// `extraPaths`, as configured.
    pub extra_paths: Vec<String>,
    /// The index generation searches read (none before the first sync).
    pub generation: Option<u64>,
    /// The index identity under the current settings and embedder.
    pub identity: Identity,
    /// Memory files indexed.
    pub files: usize,
    /// Chunks indexed.
    pub chunks: u64,
    /// Bytes of memory files indexed.
    pub bytes: u64,
    /// Chunks with a vector (absent for a keyword-only index).
    pub vectors: Option<u64>,
    /// `memory.backend`: `builtin`, or `qmd` (see [`qmd`](Self::qmd) for which engine answers).
    pub backend: String,
    /// Which OpenClaw behaviour serves, by the config's layout:
    /// `documented (memorySearch layout)` or `openclaw-2026.9 (memory.search layout)`.
    pub semantics: String,
    /// The temporal decay searches apply: `off`, or its half-life (`30-day half-life`).
    pub decay: String,
    /// How searches rank: `memoria: …` (the fusion and its weights and what memoria adds:
    /// function words left out of keyword queries, passages, the model's calibration) or `openclaw (…)`, OpenClaw 2026.9's for parity.
    pub ranking: String,
    /// The QMD sidecar, with the QMD backend.
    pub qmd: Option<QmdStatus>,
    /// The mode searches are served in (`hybrid`, `fts-only`).
    pub mode: String,
    /// The embedding provider (`none` when keyword-only).
    pub provider: String,
    /// The embedding model, when there is one.
    pub model: Option<String>,
    /// What was configured but cannot serve, and why.
    pub fallback: Option<Fallback>,
    /// The embedder's details, when there is one.
    pub embedding: Option<EmbeddingStatus>,
    /// Where a remote provider's API key came from (a config key or an environment
    /// variable, never the key), whether or not the provider answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_source: Option<String>,
    /// True when the workspace changed since the last sync.
    pub dirty: bool,
    /// Unix seconds of the last completed sync.
    pub synced_at: Option<u64>,
    /// The live sync of this process (watcher state, last sync, last error); `None` when
    /// none runs here (`memoria watch` and `memoria mcp` run one).
    pub live: Option<LiveStatus>,
    /// What the last sync skipped or could not do, and what is missing.
    pub warnings: Vec<String>,
}

/// The embedder serving an agent, for `status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingStatus {
    /// Length of its vectors.
    pub dims: usize,
    /// Where a local model runs and in what precision (`cpu, f32, AVX-512 kernels`).
    pub device: Option<String>,
    /// Where a remote provider's API key came from: `remote.apiKey`,
    /// `models.providers.<name>.apiKey` or an environment variable. Never the key.
    pub key_source: Option<String>,
    /// The remote provider's batch API (`remote.batch`), when it has one: on (and how), or
    /// off and why.
    pub batch: Option<String>,
    /// Batch jobs submitted and not yet read.
    pub batch_jobs: usize,
    /// Chunks whose vectors those jobs will bring; searches are keyword-only meanwhile.
    pub awaiting_batch: u64,
    /// Why the last sync could not embed everything, if it could not.
    pub last_error: Option<String>,
}

/// The embedder's details for `status`, when there is one.
fn embedding_status(agent: &Agent, stats: Option<&EmbeddingStats>) -> Option<EmbeddingStatus> {
    let resolved = agent.resolved();
    let embedder = resolved.embedder.as_ref()?;
    let batch_jobs = sync::recorded_batch_jobs(agent.dir().batch_jobs().ok().flatten());
    Some(EmbeddingStatus {
        dims: embedder.dims(),
        device: resolved.device.clone(),
        key_source: resolved.key_source(agent.settings()),
        batch: resolved.batch_state(),
        batch_jobs,
        awaiting_batch: stats.map_or(0, |s| s.awaiting_batch),
        last_error: stats.and_then(|s| s.error.clone()),
    })
}

/// How searches rank, in words (see [`Status::ranking`]).
fn ranking(settings: &Settings, model: Option<&str>, passages: bool) -> String {
    let h = &settings.query.hybrid;
    if settings.ranking == Ranking::OpenClaw {
        return "openclaw (OpenClaw 2026.9's, for parity): weighted 0.7 / 0.3 over its keyword \
                score, MMR, × importance × project affinity, a named file first"
            .into();
    }
    let mut out = "memoria: ".to_string();
    out.push_str(&match h.fusion {
        Fusion::Rrf => "rrf fusion".to_string(),
        Fusion::MinMax => format!(
            "minmax fusion, vector {} / text {}, the keyword side weighed by how much of the \
             query its best chunk holds",
            h.vector_weight, h.text_weight
        ),
        Fusion::ZScore => format!(
            "zscore fusion, vector {} / text {}, the keyword side counted above its mean and \
             weighed by how much of the query its best chunk holds",
            h.vector_weight, h.text_weight
        ),
        Fusion::Weighted => format!(
            "weighted fusion, vector {} / text {}",
            h.vector_weight, h.text_weight
        ),
    });
    out.push_str("; keyword queries without function words");
    if settings.semantics.is_openclaw() {
        out.push_str(
            "; × importance × project affinity and a named file first (memory.search layout)",
        );
    }
    if passages {
        out.push_str(&format!(
            "; chunks of {}+ lines found by their {}-line passages",
            crate::passage::MIN_LINES,
            crate::passage::LINES,
        ));
    } else if !settings.local.passages {
        out.push_str("; passages off (plugins.entries.memoria.config.passages)");
    }
    if let Some(c) =
        hybrid::Calibration::for_model(model).filter(|_| !settings.query.min_score_configured)
    {
        let q = &settings.query;
        out.push_str(&format!(
            "; default minScore for EmbeddingGemma {:.3} hybrid, {:.3} vector-only",
            c.default_min_score(q.min_score, h.vector_weight, h.fusion),
            c.default_min_score(q.min_score, 1.0, Fusion::Weighted)
        ));
    }
    out
}

/// Under OpenClaw 2026.9's fixed decay, says when dated notes are effectively out of reach:
/// how many score below 1/16 of an undated note's (four half-lives), and the oldest.
fn buried_by_decay(settings: &Settings, discovery: &Discovery) -> Option<String> {
    let decay = &settings.query.hybrid.temporal_decay;
    if settings.ranking != Ranking::OpenClaw || !decay.enabled {
        return None;
    }
    let now = clock::now().as_secs_f64();
    let dated: Vec<(&str, f64)> = discovery
        .files
        .iter()
        .filter(|f| f.source == SourceKind::Memory)
        .filter(|f| matches!(hybrid::dated_note_day(&f.rel_path), Some(Some(_))))
        .map(|f| {
            let factor =
                hybrid::decay_factor_openclaw(&f.rel_path, true, None, now, decay.half_life_days);
            (f.rel_path.as_str(), factor)
        })
        .collect();
    let buried = dated.iter().filter(|(_, f)| *f < 1.0 / 16.0).count();
    let (oldest, factor) = dated.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    (buried > 0).then(|| {
        format!(
            "temporal decay ({}-day half-life): {buried} of {} dated notes score under 1/16 of \
             an undated note's (the oldest, {oldest}, × {factor:.1e}), so searches rarely \
             return them; plugins.entries.memoria.config.temporalDecay lengthens or turns it \
             off",
            decay.half_life_days,
            dated.len()
        )
    })
}

/// How long a running sync may go without committing vectors before it is called stuck: it
/// commits every few seconds to a few minutes (`sync::embedding`'s checkpoints; the
/// interval grows with the index's commit cost), and an embedder call is at most a
/// fortieth of the work.
const STALLED_AFTER: u64 = 15 * 60;

/// How far the vectors are, when some chunks have none and no failure says why (that is
/// the fallback's to say): a sync embedding them now (`under_way`: the writer is busy) with
/// its rate's estimate of the time left (or, after [`STALLED_AFTER`] without a commit, that
/// it may be stuck), one that stopped part-way, or chunks left for the next sync with the
/// embedder. `now` in Unix seconds. Pure.
pub(crate) fn embedding_note(stats: &SyncStats, now: u64, under_way: bool) -> Option<String> {
    let embedding = stats.embedding.as_ref()?;
    if embedding.missing == 0 || embedding.error.is_some() || embedding.awaiting_batch > 0 {
        return None;
    }
    let chunks = stats.chunks.max(1);
    let share = format!(
        "vectors for {} % of chunks ({} of {})",
        embedding.vectors * 100 / chunks,
        embedding.vectors,
        stats.chunks
    );
    let rest = "the others are found by keyword meanwhile";
    // Seconds since the running sync last committed vectors.
    let quiet = (embedding.progress.as_ref()).map_or(0, |p| now.saturating_sub(p.updated_at));
    Some(match (&embedding.progress, under_way) {
        (Some(_), true) if quiet >= STALLED_AFTER => format!(
            "embedding has committed nothing for {} ({share}): the sync holding the index \
             lock may be stuck; stop it (`memoria index` or the live sync goes on from where \
             it stopped); {rest}",
            duration_words(quiet)
        ),
        (Some(progress), true) => {
            let left = match progress.eta_seconds(now) {
                Some(seconds) => format!(", about {} left", duration_words(seconds)),
                None => String::new(),
            };
            format!("embedding under way: {share}{left}; {rest}")
        }
        (Some(_), false) => format!(
            "{share}: the sync embedding them stopped part-way; `memoria index` (or the live \
             sync) goes on from there; {rest}"
        ),
        (None, _) => format!(
            "{share}: the others wait for the next sync with the embedder (`memoria index`, \
             the live sync or a later search) and are found by keyword meanwhile"
        ),
    })
}

/// [`embedding_note`] for `agent`'s index: a sync is embedding now when the writer is
/// taken (asked only while a commit says embedding was under way).
pub(crate) fn vectors_note(agent: &Agent, stats: &SyncStats) -> Option<String> {
    let under_way = stats
        .embedding
        .as_ref()
        .is_some_and(|e| e.progress.is_some() && e.missing > 0)
        && sync_running(agent);
    embedding_note(stats, clock::unix_now(), under_way)
}

/// Whether a sync (this process's live sync, or another process) holds the writer now.
pub(crate) fn sync_running(agent: &Agent) -> bool {
    matches!(
        agent.store().writer().map(drop),
        Err(Error::IndexBusy { .. })
    )
}

/// `45 s`, `12 min`, `2 h 5 min`.
fn duration_words(seconds: u64) -> String {
    match seconds {
        0..=59 => format!("{seconds} s"),
        60..=3599 => format!("{} min", (seconds + 30) / 60),
        _ => format!("{} h {} min", seconds / 3600, (seconds % 3600) / 60),
    }
}

/// The agent directory's state, as `status` reports it.
pub(crate) fn status(agent: &Agent) -> Result<Status> {
    let manifest = agent.store().manifest()?;
    let discovery = agent.discover();
    let dirty = agent.is_dirty(manifest.as_ref(), &discovery);
    let served = configured(agent.resolved(), manifest.as_ref());
    let stats = manifest
        .as_ref()
        .map(|m| m.stats.clone())
        .unwrap_or_default();
    let mut warnings = agent.settings().warnings.clone();
    warnings.extend(stats.warnings.iter().cloned());
    if let Some(err) = agent.workspace_missing() {
        warnings.push(err.to_string());
    }
    if let Some(adds) = agent.settings().plugin_child.as_ref() {
        if std::env::var_os(PLUGIN_CHILD_ENV).is_none() {
            warnings.push(format!(
                "OpenClaw's memoria plugin runs memoria with {adds} \
                 (plugins.entries.memoria.config); this memoria runs without them, so the \
                 gateway's answers may differ from these: `openclaw memoria status` runs \
                 with them"
            ));
        }
    }
    if manifest.is_none() {
        warnings.push("no index yet: run `memoria index`".into());
    }
    warnings.extend(buried_by_decay(agent.settings(), &discovery));
    for day in append::pending(&agent.settings().workspace) {
        warnings.push(format!(
            "{day}: an append was interrupted (a crash?); the next append completes it"
        ));
    }
    if let Some(awaiting) = stats
        .embedding
        .as_ref()
        .map(|e| e.awaiting_batch)
        .filter(|&n| n > 0)
    {
        warnings.push(format!(
            "{awaiting} chunk(s) wait for a batch embedding job (remote.batch.wait: false): \
             searches are keyword-only until a later sync reads the job"
        ));
    }
    if let Some(note) = vectors_note(agent, &stats) {
        warnings.push(note);
    }
    warnings.extend(agent.store().damage());
    warnings.extend(agent.store().cache_warning());
    warnings.extend(agent.embedder_retry());
    if let Some(error) = agent.sync_error() {
        warnings.push(format!("the last sync failed: {error}"));
    } else if dirty && manifest.is_some() {
        // Say now whether the next sync can run at all (a read-only index cannot).
        match agent.store().writer().map(drop) {
            Ok(_) | Err(Error::IndexBusy { .. }) => {}
            Err(err) => warnings.push(format!(
                "the index cannot be synced ({err}): searches answer from the last \
                 committed index"
            )),
        }
    }
    let qmd = agent.qmd().map(|q| q.status());
    if let Some(qmd) = &qmd {
        if qmd.serving != "qmd" {
            warnings.push(format!(
                "memory.backend is \"qmd\", but memoria's own index answers for now: {}",
                qmd.last_error.as_deref().unwrap_or("QMD failed")
            ));
        } else if let Some(error) = &qmd.last_error {
            warnings.push(format!("QMD: {error}"));
        }
    }
    // This process's live sync, else another process's (its `live.json`).
    let live = match agent.live_link() {
        Some(link) => Some(link.status()),
        None => live::heartbeat_of(agent.dir().root()).unwrap_or_else(|warning| {
            warnings.push(warning);
            None
        }),
    };
    Ok(Status {
        agent_id: agent.settings().agent_id.clone(),
        agent_dir: agent.dir().root().display().to_string(),
        store: match agent
            .settings()
            .store
            .backend
            .agent_uri(&agent.settings().agent_id)
        {
            None => "local".into(),
            Some(uri) => format!("lancedb {uri}"),
        },
        store_cache: agent.store().cache(),
        workspace: agent.settings().workspace.display().to_string(),
        extra_paths: agent.settings().extra_paths.clone(),
        generation: manifest.as_ref().map(|m| m.generation),
        identity: agent.identity(),
        files: stats.files,
        chunks: stats.chunks,
        bytes: stats.bytes,
        vectors: stats.embedding.as_ref().map(|e| e.vectors),
        backend: agent.settings().backend.as_str().into(),
        semantics: agent.settings().semantics.as_str().into(),
        decay: match &agent.settings().query.hybrid {
            h if h.temporal_decay.enabled => {
                format!("{}-day half-life", h.temporal_decay.half_life_days)
            }
            _ => "off".into(),
        },
        ranking: ranking(
            agent.settings(),
            served.model.as_deref(),
            agent.identity().passages,
        ),
        qmd,
        mode: served.mode.as_str().to_string(),
        provider: served.provider,
        model: served.model,
        fallback: served.fallback,
        embedding: embedding_status(agent, stats.embedding.as_ref()),
        key_source: agent.resolved().key_source(agent.settings()),
        dirty,
        synced_at: manifest.map(|m| m.stats.synced_at),
        live,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::EmbeddingProgress;

    fn stats(vectors: u64, progress: Option<EmbeddingProgress>) -> SyncStats {
        SyncStats {
            chunks: 200,
            embedding: Some(EmbeddingStats {
                vectors,
                missing: 200 - vectors,
                progress,
                ..EmbeddingStats::default()
            }),
            ..SyncStats::default()
        }
    }

    #[test]
    fn the_vectors_note_says_how_far_embedding_is_and_who_goes_on() {
        // 82 of 200 in 60 s: 118 left at 82/60 per second is 86 s, 40 s of it gone.
        let progress = EmbeddingProgress {
            total: 200,
            done: 82,
            started_at: 1_000,
            updated_at: 1_060,
        };
        for (stats, now, under_way, said) in [
            (stats(200, None), 0, false, None),
            (
                stats(82, Some(progress)),
                1_100,
                true,
                Some("embedding under way: vectors for 41 % of chunks (82 of 200), about 46 s left; the others are found by keyword meanwhile"),
            ),
            (
                stats(0, Some(EmbeddingProgress { done: 0, ..progress })),
                1_000,
                true,
                Some("embedding under way: vectors for 0 % of chunks (0 of 200); the others are found by keyword meanwhile"),
            ),
            (
                stats(82, Some(progress)),
                1_060 + STALLED_AFTER,
                true,
                Some("embedding has committed nothing for 15 min (vectors for 41 % of chunks (82 of 200)): the sync holding the index lock may be stuck; stop it (`memoria index` or the live sync goes on from where it stopped); the others are found by keyword meanwhile"),
            ),
            (
                stats(82, Some(progress)),
                5_000,
                false,
                Some("vectors for 41 % of chunks (82 of 200): the sync embedding them stopped part-way; `memoria index` (or the live sync) goes on from there; the others are found by keyword meanwhile"),
            ),
            (
                stats(82, None),
                5_000,
                false,
                Some("vectors for 41 % of chunks (82 of 200): the others wait for the next sync with the embedder (`memoria index`, the live sync or a later search) and are found by keyword meanwhile"),
            ),
        ] {
            assert_eq!(embedding_note(&stats, now, under_way).as_deref(), said);
        }
        // A failure or a batch job is the fallback's to say.
        let mut failed = stats(82, None);
        failed.embedding.as_mut().unwrap().error = Some("quota".into());
        assert_eq!(embedding_note(&failed, 0, false), None);
    }

    #[test]
    fn durations_read_in_seconds_minutes_and_hours() {
        for (seconds, said) in [
            (0, "0 s"),
            (59, "59 s"),
            (60, "1 min"),
            (749, "12 min"),
            (3_599, "60 min"),
            (7_500, "2 h 5 min"),
        ] {
            assert_eq!(duration_words(seconds), said);
        }
    }
}
