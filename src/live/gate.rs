//! How many live syncs of one process run at once.
//!
//! A process serving many agents (`memoria mcp --agent …` repeated, `serve`) starts one live
//! worker per agent, and each syncs at once: its first index, or a check at the session's
//! start. Three hundred syncs at once on two cores thrash, and each holds a keyword-index
//! writer's buffers (a few MB even for two notes), so the process peaked at 2.4 GB and kept
//! most of it. The gate lets [`limit`] syncs run at a time (the machine's cores, or
//! `MEMORIA_LIVE_SYNCS`); the others wait their turn. A sync that a search waits for (an
//! agent with no index yet) passes at once, so a question never queues behind other agents'
//! indexing; so does a worker asked to stop, which then skips its sync.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// The variable that sets how many live syncs run at once.
const LIVE_SYNCS_ENV: &str = "MEMORIA_LIVE_SYNCS";
/// How often a waiting worker looks again whether it became urgent or was stopped.
const RECHECK: Duration = Duration::from_millis(50);

/// The process's gate.
pub(super) struct Gate {
    running: Mutex<usize>,
    freed: Condvar,
    limit: usize,
}

/// A sync's place through the gate, given back when dropped.
pub(super) struct Pass<'g> {
    gate: &'g Gate,
}

/// How many live syncs run at once: `MEMORIA_LIVE_SYNCS` when it is a positive whole
/// number (otherwise named in a warning), else the cores this process may use.
fn limit() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match std::env::var(LIVE_SYNCS_ENV) {
        Err(_) => cores,
        Ok(value) => match value.trim().parse::<usize>() {
            Ok(n) if n > 0 => n,
            _ => {
                tracing::warn!(
                    "{LIVE_SYNCS_ENV}={value:?} is not a positive whole number; {cores} live \
                     syncs run at once"
                );
                cores
            }
        },
    }
}

/// The gate every live worker of this process passes.
pub(super) fn gate() -> &'static Gate {
    static GATE: OnceLock<Gate> = OnceLock::new();
    GATE.get_or_init(|| Gate::new(limit()))
}

impl Gate {
    fn new(limit: usize) -> Gate {
        Gate {
            running: Mutex::new(0),
            freed: Condvar::new(),
            limit: limit.max(1),
        }
    }

    fn running(&self) -> MutexGuard<'_, usize> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for a place; `urgent` passes at once (a search waits on this sync). `None`
    /// when `stopped` holds first (the worker then skips its sync).
    pub(super) fn enter(
        &self,
        urgent: impl Fn() -> bool,
        stopped: impl Fn() -> bool,
    ) -> Option<Pass<'_>> {
        let mut running = self.running();
        while *running >= self.limit && !urgent() {
            if stopped() {
                return None;
            }
            running = self
                .freed
                .wait_timeout(running, RECHECK)
                .map_or_else(|e| e.into_inner().0, |(guard, _)| guard);
        }
        *running += 1;
        Some(Pass { gate: self })
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut running = self.gate.running();
        *running = running.saturating_sub(1);
        self.gate.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn at_most_the_limit_pass_unless_urgent_or_stopped() {
        let gate = Gate::new(2);
        let never = || false;
        let first = gate.enter(never, never).expect("a place");
        let second = gate.enter(never, never).expect("a place");
        // Full: an urgent sync passes all the same, a stopped one gives up.
        let urgent = gate.enter(|| true, never).expect("urgent passes");
        assert!(gate.enter(never, || true).is_none());
        drop((first, urgent));
        let third = gate.enter(never, never).expect("a place freed");
        drop((second, third));
        assert_eq!(*gate.running(), 0);
    }

    #[test]
    fn waiting_syncs_run_in_turns() {
        let gate = Arc::new(Gate::new(2));
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let workers: Vec<_> = (0..8)
            .map(|_| {
                let (gate, now, most) = (gate.clone(), now.clone(), most.clone());
                std::thread::spawn(move || {
                    let stop = AtomicBool::new(false);
                    let _pass = gate.enter(|| false, || stop.load(Ordering::SeqCst));
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    now.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }
}
