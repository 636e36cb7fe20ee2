//! The embedder serving one agent for the life of a process, and its second chance.
//!
//! An agent's embedder is resolved once, on first use (loading a local model takes
//! seconds; a remote provider is probed). A remote provider that does not answer then, or
//! a local model not yet downloaded, leaves the agent keyword-only with the reason. For a
//! command that is right; for `memoria mcp` or `serve`, which run for days, "keyword-only
//! until restarted" would turn a provider's five-minute outage into a week without
//! vectors. So a resolution that left the agent **keyword-only although a provider is
//! configured** is tried again, in the background, after [`FIRST_RETRY`] (or
//! `MEMORIA_EMBEDDER_RETRY_SECONDS`), then after twice as long each time, up to
//! [`LONGEST_RETRY`]; nothing waits for a try. Once one succeeds the new embedder serves
//! from then on (the index identity names it, so the next sync embeds the chunks). A
//! provider that gave way to the configured `fallback` is *not* retried: the fallback
//! serves, and switching back would re-embed everything. A look (`status`, `doctor`)
//! resolves once and never retries.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::provider::{EmbedderChoice, ResolvedEmbedder};
use crate::config::{ProviderKind, Settings};

/// How long after a failed resolution the embedder is tried again first.
const FIRST_RETRY: Duration = Duration::from_secs(30);
/// The longest wait between two tries.
const LONGEST_RETRY: Duration = Duration::from_secs(600);
/// The variable that sets the first wait, in whole seconds.
const RETRY_VARIABLE: &str = "MEMORIA_EMBEDDER_RETRY_SECONDS";

/// When the next try is due and how many have failed.
#[derive(Debug)]
struct Retry {
    /// When the next try may start.
    at: Instant,
    /// Failed resolutions so far (the first included).
    failures: u32,
    /// A try is running in the background.
    running: bool,
}

/// The wait after `failures` failed resolutions: `first`, doubled per failure after the
/// first, at most [`LONGEST_RETRY`] (pure).
fn wait_after(first: Duration, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    first
        .saturating_mul(1 << doublings)
        .min(LONGEST_RETRY.max(first))
}

/// The first wait: `MEMORIA_EMBEDDER_RETRY_SECONDS` when it is a positive whole number
/// (otherwise named in a warning), else [`FIRST_RETRY`].
fn first_wait() -> Duration {
    match std::env::var(RETRY_VARIABLE) {
        Err(_) => FIRST_RETRY,
        Ok(value) => match value.trim().parse::<u64>() {
            Ok(seconds) if seconds > 0 => Duration::from_secs(seconds),
            _ => {
                tracing::warn!(
                    "{RETRY_VARIABLE}={value:?} is not a positive whole number of seconds; \
                     using {} s",
                    FIRST_RETRY.as_secs()
                );
                FIRST_RETRY
            }
        },
    }
}

/// One agent's embedder: resolved on first use, tried again with back-off while it left
/// the agent keyword-only (see the module docs).
pub(crate) struct Serving {
    choice: EmbedderChoice,
    settings: Settings,
    /// A look: one short probe, never retried.
    look_only: bool,
    first: OnceLock<ResolvedEmbedder>,
    /// The embedder a later try found; it serves from then on.
    recovered: Arc<OnceLock<ResolvedEmbedder>>,
    /// Set while the first resolution left the agent keyword-only and none recovered.
    retry: Arc<Mutex<Option<Retry>>>,
    first_wait: Duration,
}

impl Serving {
    /// Nothing resolved yet: the first call to [`Serving::get`] resolves `choice`.
    pub(crate) fn new(choice: EmbedderChoice, settings: &Settings, look_only: bool) -> Serving {
        Serving {
            choice,
            settings: settings.clone(),
            look_only,
            first: OnceLock::new(),
            recovered: Arc::new(OnceLock::new()),
            retry: Arc::new(Mutex::new(None)),
            first_wait: first_wait(),
        }
    }

    /// The same choice, for a look: one short probe, never retried.
    pub(crate) fn into_look(self) -> Serving {
        Serving::new(self.choice, &self.settings, true)
    }

    /// The embedder serving now (resolving it on the first call); starts a background try
    /// when one is due.
    pub(crate) fn get(&self) -> &ResolvedEmbedder {
        if let Some(recovered) = self.recovered.get() {
            return recovered;
        }
        let first = self.first.get_or_init(|| {
            let resolved = ResolvedEmbedder::resolve(&self.choice, &self.settings, self.look_only);
            if self.retried(&resolved) {
                *self.lock() = Some(Retry {
                    at: Instant::now() + self.first_wait,
                    failures: 1,
                    running: false,
                });
            }
            resolved
        });
        self.try_again_when_due();
        // A try that finished while this call ran serves from the next call on.
        first
    }

    /// Whether a resolution is tried again: it left the agent keyword-only although a
    /// provider is configured, and this is not a look.
    fn retried(&self, resolved: &ResolvedEmbedder) -> bool {
        !self.look_only
            && resolved.embedder.is_none()
            && self.settings.provider != ProviderKind::None
            && matches!(self.choice, EmbedderChoice::FromSettings { .. })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Retry>> {
        self.retry.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a background resolution when one is due and none runs.
    fn try_again_when_due(&self) {
        {
            let mut retry = self.lock();
            match retry.as_mut() {
                Some(r) if !r.running && Instant::now() >= r.at => r.running = true,
                _ => return,
            }
        }
        let (choice, settings) = (self.choice.clone(), self.settings.clone());
        let (recovered, retry, first_wait) =
            (self.recovered.clone(), self.retry.clone(), self.first_wait);
        let started = std::thread::Builder::new()
            .name("memoria-embedder-retry".into())
            .spawn(move || {
                let resolved = ResolvedEmbedder::resolve(&choice, &settings, false);
                let mut retry = retry.lock().unwrap_or_else(|e| e.into_inner());
                let Some(r) = retry.as_mut() else { return };
                if resolved.embedder.is_some() {
                    tracing::info!(
                        "the embedder is back after {} failed tries: {} serves from now on",
                        r.failures,
                        resolved.provider
                    );
                    let _ = recovered.set(resolved);
                    *retry = None;
                } else {
                    r.failures = r.failures.saturating_add(1);
                    r.at = Instant::now() + wait_after(first_wait, r.failures);
                    r.running = false;
                }
            });
        if let Err(err) = started {
            tracing::warn!("cannot start the embedder's retry: {err}");
            if let Some(r) = self.lock().as_mut() {
                r.running = false;
                r.at = Instant::now() + wait_after(self.first_wait, r.failures);
            }
        }
    }

    /// For `status`: that the embedder is being tried again, how often it failed and when
    /// the next try is; `None` when it serves or is not retried.
    pub(crate) fn retry_note(&self) -> Option<String> {
        if self.recovered.get().is_some() {
            return None;
        }
        let retry = self.lock();
        let r = retry.as_ref()?;
        let when = match r.running {
            true => "a try is running now".to_string(),
            false => format!(
                "the next try in {} s",
                r.at.saturating_duration_since(Instant::now()).as_secs()
            ),
        };
        Some(format!(
            "the embedding provider could not serve ({} failed tries); searches are \
             keyword-only until it does: {when} (waits double from {} s up to {} s, set by \
             {RETRY_VARIABLE})",
            r.failures,
            self.first_wait.as_secs(),
            LONGEST_RETRY.max(self.first_wait).as_secs()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_the_first_up_to_the_longest() {
        let first = Duration::from_secs(30);
        // (failures so far, wait before the next try)
        for (failures, seconds) in [(1, 30), (2, 60), (3, 120), (5, 480), (6, 600), (40, 600)] {
            assert_eq!(
                wait_after(first, failures),
                Duration::from_secs(seconds),
                "{failures}"
            );
        }
        // A first wait longer than the cap is kept.
        assert_eq!(
            wait_after(Duration::from_secs(900), 3),
            Duration::from_secs(900)
        );
    }
}
