//! Backfills through batch jobs (`remote.batch`, SPEC §7): the policy of when a large
//! backfill goes through the provider's asynchronous batch API ([`BatchApi`]: OpenAI's
//! Batch API, Gemini's `asyncBatchEmbedContent`), which costs less than direct requests but
//! answers in minutes to hours. The HTTP side of those APIs is `remote/batch_api.rs`; this
//! file is pure over the [`BatchApi`] trait (tests run it against a stand-in).
//!
//! [`run`] takes the texts a sync still needs vectors for and the jobs recorded by earlier
//! syncs (`<agent dir>/batches.json`, see [`PendingJob`]), and:
//! - polls the recorded jobs of this embedder (jobs of another one are dropped: their
//!   vectors would be another model's) and reads the finished ones;
//! - splits the texts no job covers into jobs of at most [`Limits::max_requests`] texts,
//!   but only when there are at least [`Limits::min_texts`] of them: a few edited notes are
//!   faster through direct requests and cost next to nothing;
//! - with `wait: true` runs the jobs `concurrency` at a time and waits for each, polling
//!   every `pollIntervalMs`, at most `timeoutMinutes`; with `wait: false` submits up to
//!   `concurrency` jobs and returns at once: their texts stay without a vector (keyword
//!   search finds them) until a later sync reads the finished job.
//!
//! Every job is recorded (through `save`) as soon as it is submitted and forgotten once
//! read, so a process that stops while waiting leaves it to the next one. A failed,
//! expired or timed-out job, an unreadable output and a refused submission are reported in
//! [`Outcome::problems`]; the texts they leave without a vector go through direct requests
//! (the caller's job). A refusal retrying cannot fix (an endpoint without a Batch API)
//! turns the batch API off for the process ([`BatchApi::disable`]).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::embed::embedder::{BatchApi, EmbedError, JobState};

/// A submitted job, recorded in the agent directory until its vectors are read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingJob {
    /// The provider's id for the job.
    pub id: String,
    /// The fingerprint of the embedder whose vectors it makes.
    pub fingerprint: String,
    /// The custom ids (chunk text hashes) it embeds.
    pub ids: Vec<String>,
    /// Unix seconds.
    pub submitted_at: u64,
}

/// When texts go into jobs, and how many per job.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Fewer uncovered texts than this go through direct requests.
    pub(crate) min_texts: usize,
    /// Texts per job.
    pub(crate) max_requests: usize,
    /// Bytes of text per job.
    pub(crate) max_bytes: usize,
}

impl Limits {
    /// 100 texts at least (below that direct requests answer in seconds); 10,000 per job
    /// (OpenAI and Gemini accept 50,000, but an output of 10,000 vectors of 3,072 floats is
    /// already ~600 MB of JSON, and smaller jobs spread over `concurrency`).
    pub(crate) const DEFAULT: Limits = Limits {
        min_texts: 100,
        max_requests: 10_000,
        max_bytes: 64 << 20,
    };
}

/// What [`run`] got.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Vectors by custom id.
    pub(crate) vectors: HashMap<String, Vec<f32>>,
    /// Ids whose job is still running (`wait: false`): they stay without a vector for now.
    pub(crate) waiting: HashSet<String>,
    /// The jobs still recorded.
    pub(crate) jobs: Vec<PendingJob>,
    /// Jobs submitted by this call.
    pub(crate) submitted: usize,
    /// What went wrong; the texts concerned need direct requests.
    pub(crate) problems: Vec<String>,
}

/// Work for one worker.
enum Task<'a> {
    Submit(Vec<(&'a str, &'a str)>),
    Await(PendingJob),
}

/// Shared between workers.
struct Shared<'s> {
    jobs: Vec<PendingJob>,
    vectors: HashMap<String, Vec<f32>>,
    problems: Vec<String>,
    submitted: usize,
    /// A submission was refused for good: submit no more.
    refused: bool,
    save: &'s (dyn Fn(&[PendingJob]) -> Result<(), String> + Sync),
}

impl Shared<'_> {
    fn record(&mut self, job: PendingJob) {
        self.jobs.push(job);
        self.submitted += 1;
        self.persist();
    }

    fn forget(&mut self, id: &str) {
        self.jobs.retain(|job| job.id != id);
        self.persist();
    }

    fn persist(&mut self) {
        if let Err(err) = (self.save)(&self.jobs) {
            self.problems
                .push(format!("cannot record batch jobs: {err}"));
        }
    }
}

/// Embeds `items` (`(custom id, text)`) through `api` as far as jobs allow (see the module
/// documentation). `jobs` are those recorded by earlier syncs; `save` records the current
/// list whenever it changes. `may_wait: false` never waits, whatever `remote.batch.wait`
/// says (a sync a search is waiting for).
pub(crate) fn run(
    api: &dyn BatchApi,
    fingerprint: &str,
    items: &[(&str, &str)],
    mut jobs: Vec<PendingJob>,
    limits: Limits,
    may_wait: bool,
    save: &(dyn Fn(&[PendingJob]) -> Result<(), String> + Sync),
) -> Outcome {
    let mut options = api.options();
    options.wait &= may_wait;
    let wanted: HashSet<&str> = items.iter().map(|(id, _)| *id).collect();
    let recorded = jobs.len();
    // Another embedder's jobs, and jobs none of whose texts are still wanted, are dropped.
    jobs.retain(|job| {
        job.fingerprint == fingerprint && job.ids.iter().any(|id| wanted.contains(id.as_str()))
    });
    let covered: HashSet<&str> = jobs
        .iter()
        .flat_map(|job| job.ids.iter().map(String::as_str))
        .collect();
    let mut seen = HashSet::new();
    let fresh: Vec<(&str, &str)> = items
        .iter()
        .filter(|(id, _)| !covered.contains(id) && seen.insert(*id))
        .copied()
        .collect();
    let groups = if fresh.len() >= limits.min_texts {
        split(fresh, limits)
    } else {
        Vec::new()
    };
    let mut shared = Shared {
        jobs: Vec::new(),
        vectors: HashMap::new(),
        problems: Vec::new(),
        submitted: 0,
        refused: false,
        save,
    };
    shared.jobs.clone_from(&jobs);
    if jobs.len() != recorded {
        shared.persist();
    }
    let shared = Mutex::new(shared);
    if options.wait {
        let deadline = Instant::now() + options.timeout;
        let tasks: VecDeque<Task> = jobs
            .into_iter()
            .map(Task::Await)
            .chain(groups.into_iter().map(Task::Submit))
            .collect();
        let workers = options.concurrency.clamp(1, tasks.len().max(1));
        let tasks = Mutex::new(tasks);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let task = lock(&tasks).pop_front();
                    let Some(task) = task else { break };
                    let job = match task {
                        Task::Await(job) => job,
                        Task::Submit(group) => match submit(api, fingerprint, &group, &shared) {
                            Some(job) => job,
                            None => continue,
                        },
                    };
                    wait_for(api, &job, deadline, options.poll_interval, &shared);
                });
            }
        });
    } else {
        for job in &jobs {
            poll_once(api, job, &shared);
        }
        let mut running = lock(&shared).jobs.len();
        for group in groups {
            if running >= options.concurrency.max(1) {
                break;
            }
            if submit(api, fingerprint, &group, &shared).is_some() {
                running += 1;
            }
        }
    }
    let shared = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    let waiting = shared
        .jobs
        .iter()
        .flat_map(|job| job.ids.iter())
        .filter(|id| wanted.contains(id.as_str()) && !shared.vectors.contains_key(*id))
        .cloned()
        .collect();
    Outcome {
        vectors: shared.vectors,
        waiting,
        jobs: shared.jobs,
        submitted: shared.submitted,
        problems: shared.problems,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Splits texts into jobs of at most `limits.max_requests` texts and `limits.max_bytes`
/// bytes (a text larger than that alone is a job of its own).
fn split<'a>(items: Vec<(&'a str, &'a str)>, limits: Limits) -> Vec<Vec<(&'a str, &'a str)>> {
    let mut groups = Vec::new();
    let mut group: Vec<(&str, &str)> = Vec::new();
    let mut bytes = 0;
    for item in items {
        if !group.is_empty()
            && (group.len() >= limits.max_requests || bytes + item.1.len() > limits.max_bytes)
        {
            groups.push(std::mem::take(&mut group));
            bytes = 0;
        }
        bytes += item.1.len();
        group.push(item);
    }
    if !group.is_empty() {
        groups.push(group);
    }
    groups
}

/// Submits one job and records it; `None` when it was refused (a problem is noted).
fn submit(
    api: &dyn BatchApi,
    fingerprint: &str,
    group: &[(&str, &str)],
    shared: &Mutex<Shared>,
) -> Option<PendingJob> {
    if lock(shared).refused {
        return None;
    }
    match api.submit(group) {
        Ok(id) => {
            let job = PendingJob {
                id,
                fingerprint: fingerprint.to_string(),
                ids: group.iter().map(|(id, _)| id.to_string()).collect(),
                submitted_at: crate::clock::unix_now(),
            };
            lock(shared).record(job.clone());
            Some(job)
        }
        Err(err) => {
            let mut shared = lock(shared);
            if let EmbedError::Remote {
                status: Some(status),
                ..
            } = &err
            {
                shared.refused = true;
                api.disable(format!(
                    "the batch API refused a job (HTTP {status}): {err}; direct requests only \
                     until memoria restarts"
                ));
            }
            shared.problems.push(format!(
                "submitting a batch job of {} texts failed: {err}",
                group.len()
            ));
            None
        }
    }
}

/// Polls `job` until it ends or `deadline`, then reads or drops it.
fn wait_for(
    api: &dyn BatchApi,
    job: &PendingJob,
    deadline: Instant,
    interval: std::time::Duration,
    shared: &Mutex<Shared>,
) {
    loop {
        match poll_once(api, job, shared) {
            Some(JobState::Running(state)) => {
                let now = Instant::now();
                if now >= deadline {
                    let mut shared = lock(shared);
                    shared.problems.push(format!(
                        "batch job {} still {state} at remote.batch.timeoutMinutes",
                        job.id
                    ));
                    shared.forget(&job.id);
                    return;
                }
                std::thread::sleep(
                    interval
                        .max(std::time::Duration::from_millis(10))
                        .min(deadline - now),
                );
            }
            _ => return,
        }
    }
}

/// Polls `job` once: reads it when done, drops it when failed; returns its state (`None`
/// when polling failed, which drops it too).
fn poll_once(api: &dyn BatchApi, job: &PendingJob, shared: &Mutex<Shared>) -> Option<JobState> {
    let state = match api.poll(&job.id) {
        Ok(state) => state,
        Err(err) => {
            let mut shared = lock(shared);
            shared
                .problems
                .push(format!("polling batch job {}: {err}", job.id));
            shared.forget(&job.id);
            return None;
        }
    };
    match &state {
        JobState::Running(_) => {}
        JobState::Done(output) => {
            let results = api.results(output);
            let mut shared = lock(shared);
            match results {
                Ok(vectors) => {
                    let missing = job
                        .ids
                        .iter()
                        .filter(|id| !vectors.contains_key(*id))
                        .count();
                    if missing > 0 {
                        shared.problems.push(format!(
                            "batch job {}: {missing} of {} texts have no vector",
                            job.id,
                            job.ids.len()
                        ));
                    }
                    shared.vectors.extend(vectors);
                }
                Err(err) => shared
                    .problems
                    .push(format!("reading batch job {}: {err}", job.id)),
            }
            shared.forget(&job.id);
        }
        JobState::Failed(why) => {
            let mut shared = lock(shared);
            shared
                .problems
                .push(format!("batch job {} failed: {why}", job.id));
            shared.forget(&job.id);
        }
    }
    Some(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::embedder::BatchOptions;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A batch API in memory: a job is done after `polls` polls; `fail` makes every job
    /// fail; `refuse` refuses every submission with HTTP 404.
    #[derive(Default)]
    struct Fake {
        polls: usize,
        fail: bool,
        refuse: bool,
        wait: bool,
        concurrency: usize,
        timeout: Duration,
        /// Job id → (texts, polls so far).
        jobs: Mutex<HashMap<String, (Vec<String>, usize)>>,
        submitted: AtomicUsize,
        in_flight: AtomicUsize,
        most_in_flight: AtomicUsize,
        disabled: Mutex<Option<String>>,
    }

    impl Fake {
        fn new(wait: bool, concurrency: usize, polls: usize) -> Fake {
            Fake {
                polls,
                wait,
                concurrency,
                timeout: Duration::from_secs(10),
                ..Fake::default()
            }
        }
    }

    fn vector_of(id: &str) -> Vec<f32> {
        vec![id.len() as f32, 1.0]
    }

    impl BatchApi for Fake {
        fn submit(&self, items: &[(&str, &str)]) -> Result<String, EmbedError> {
            if self.refuse {
                return Err(EmbedError::Remote {
                    provider: "fake".into(),
                    message: "no batch API here".into(),
                    status: Some(404),
                });
            }
            let n = self.submitted.fetch_add(1, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            let id = format!("job-{n}");
            let texts = items.iter().map(|(id, _)| id.to_string()).collect();
            lock(&self.jobs).insert(id.clone(), (texts, 0));
            Ok(id)
        }

        fn poll(&self, job: &str) -> Result<JobState, EmbedError> {
            let mut jobs = lock(&self.jobs);
            let Some((_, polls)) = jobs.get_mut(job) else {
                return Err(EmbedError::Failed(format!("no job {job}")));
            };
            *polls += 1;
            if *polls <= self.polls {
                return Ok(JobState::Running("in_progress".into()));
            }
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(if self.fail {
                JobState::Failed("expired".into())
            } else {
                JobState::Done(job.to_string())
            })
        }

        fn results(&self, output: &str) -> Result<HashMap<String, Vec<f32>>, EmbedError> {
            let jobs = lock(&self.jobs);
            Ok(jobs[output]
                .0
                .iter()
                .map(|id| (id.clone(), vector_of(id)))
                .collect())
        }

        fn options(&self) -> BatchOptions {
            BatchOptions {
                wait: self.wait,
                concurrency: self.concurrency,
                poll_interval: Duration::from_millis(1),
                timeout: self.timeout,
            }
        }

        fn disable(&self, reason: String) {
            *lock(&self.disabled) = Some(reason);
        }
    }

    const SMALL: Limits = Limits {
        min_texts: 3,
        max_requests: 4,
        max_bytes: 1 << 20,
    };

    fn items(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("h{i}"), format!("text {i}")))
            .collect()
    }

    fn refs(items: &[(String, String)]) -> Vec<(&str, &str)> {
        items
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect()
    }

    /// Runs with a `save` that keeps the last list recorded.
    fn run_saving(
        api: &Fake,
        items: &[(&str, &str)],
        jobs: Vec<PendingJob>,
    ) -> (Outcome, Vec<Vec<PendingJob>>) {
        let saved = Mutex::new(Vec::new());
        let save = |jobs: &[PendingJob]| {
            lock(&saved).push(jobs.to_vec());
            Ok(())
        };
        let outcome = run(api, "fp", items, jobs, SMALL, true, &save);
        (outcome, saved.into_inner().unwrap())
    }

    #[test]
    fn waiting_runs_every_job_at_most_concurrency_at_once() {
        let api = Fake::new(true, 2, 3);
        let all = items(10);
        let (outcome, saved) = run_saving(&api, &refs(&all), Vec::new());
        assert_eq!(api.submitted.load(Ordering::SeqCst), 3); // 4 + 4 + 2
        assert_eq!(api.most_in_flight.load(Ordering::SeqCst), 2);
        assert_eq!(outcome.vectors.len(), 10);
        assert_eq!(outcome.vectors["h7"], vector_of("h7"));
        assert!(outcome.waiting.is_empty() && outcome.jobs.is_empty());
        assert!(outcome.problems.is_empty(), "{:?}", outcome.problems);
        assert_eq!(outcome.submitted, 3);
        // Each job recorded on submission and forgotten once read.
        assert_eq!(saved.len(), 6);
        assert!(saved.last().unwrap().is_empty());
        assert!(saved.iter().any(|jobs| jobs.len() == 2));
    }

    #[test]
    fn few_texts_and_duplicates() {
        let api = Fake::new(true, 2, 0);
        let all = items(2);
        let outcome = run_saving(&api, &refs(&all), Vec::new()).0;
        assert_eq!(api.submitted.load(Ordering::SeqCst), 0, "below min_texts");
        assert!(outcome.vectors.is_empty() && outcome.problems.is_empty());
        // Three items, two of them the same text: two texts, below min_texts too.
        let dup = [("a", "x"), ("a", "x"), ("b", "y")];
        run_saving(&api, &dup, Vec::new());
        assert_eq!(api.submitted.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn not_waiting_leaves_texts_for_a_later_run() {
        let api = Fake::new(false, 2, 0);
        let all = items(10);
        let (first, _) = run_saving(&api, &refs(&all), Vec::new());
        // Two jobs (concurrency), the third group left for later; nothing read yet.
        assert_eq!(first.submitted, 2);
        assert_eq!(first.jobs.len(), 2);
        assert_eq!(first.waiting.len(), 8);
        assert!(first.vectors.is_empty());
        // The next sync: the two jobs are done (first poll), the last two texts are below
        // min_texts so the caller embeds them directly.
        let (second, saved) = run_saving(&api, &refs(&all), first.jobs);
        assert_eq!(second.vectors.len(), 8);
        assert_eq!(second.submitted, 0);
        assert!(second.jobs.is_empty() && second.waiting.is_empty());
        assert!(saved.last().unwrap().is_empty());
    }

    #[test]
    fn a_sync_that_may_not_wait_does_not_even_with_wait_true() {
        let api = Fake::new(true, 1, 0);
        let all = items(6);
        let save = |_: &[PendingJob]| Ok(());
        let outcome = run(&api, "fp", &refs(&all), Vec::new(), SMALL, false, &save);
        assert_eq!(outcome.submitted, 1);
        assert_eq!(outcome.waiting.len(), 4);
        assert!(outcome.vectors.is_empty());
    }

    #[test]
    fn failures_are_problems_and_leave_texts_to_direct_requests() {
        let mut api = Fake::new(true, 2, 0);
        api.fail = true;
        let all = items(5);
        let outcome = run_saving(&api, &refs(&all), Vec::new()).0;
        assert!(outcome.vectors.is_empty() && outcome.waiting.is_empty());
        assert_eq!(outcome.problems.len(), 2);
        assert!(outcome.problems[0].contains("failed: expired"));

        let mut api = Fake::new(true, 2, 1_000_000);
        api.timeout = Duration::from_millis(30);
        let outcome = run_saving(&api, &refs(&all), Vec::new()).0;
        assert!(outcome.vectors.is_empty() && outcome.jobs.is_empty());
        assert!(
            outcome.problems[0].contains("timeoutMinutes"),
            "{:?}",
            outcome.problems
        );

        let mut api = Fake::new(true, 1, 0);
        api.refuse = true;
        let outcome = run_saving(&api, &refs(&all), Vec::new()).0;
        assert_eq!(outcome.problems.len(), 1, "no second try after a refusal");
        assert!(lock(&api.disabled).as_deref().unwrap().contains("HTTP 404"));
    }

    #[test]
    fn recorded_jobs_of_another_embedder_or_no_longer_wanted_are_dropped() {
        let api = Fake::new(true, 2, 0);
        let job = |id: &str, fp: &str, ids: &[&str]| PendingJob {
            id: id.into(),
            fingerprint: fp.into(),
            ids: ids.iter().map(|s| s.to_string()).collect(),
            submitted_at: 0,
        };
        let recorded = vec![
            job("old-model", "other", &["h0"]),
            job("gone", "fp", &["zz"]),
        ];
        let all = items(1);
        let (outcome, saved) = run_saving(&api, &refs(&all), recorded);
        assert_eq!(saved, vec![Vec::<PendingJob>::new()]);
        assert!(outcome.problems.is_empty() && outcome.vectors.is_empty());
    }

    #[test]
    fn split_respects_count_and_bytes() {
        let texts = ["aaaa", "bb", "cccccc", "d"];
        let items: Vec<(&str, &str)> = texts.iter().map(|t| (*t, *t)).collect();
        let sizes = |limits| {
            split(items.clone(), limits)
                .iter()
                .map(Vec::len)
                .collect::<Vec<_>>()
        };
        let limits = |max_requests, max_bytes| Limits {
            min_texts: 0,
            max_requests,
            max_bytes,
        };
        assert_eq!(sizes(limits(10, 100)), [4]);
        assert_eq!(sizes(limits(3, 100)), [3, 1]);
        assert_eq!(sizes(limits(10, 6)), [2, 1, 1]);
        assert_eq!(sizes(limits(10, 1)), [1, 1, 1, 1]);
    }
}
