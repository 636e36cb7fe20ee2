//! The generations one process keeps open, every agent together, within a budget.
//!
//! A search opens its agent's current generation once and keeps it for the next searches:
//! the keyword index (mapped files) and the vectors, which are read into memory whole
//! (the graph or the rows, and the passages). A process serving hundreds of agents would
//! so end up holding every agent's vectors. The budget (`MEMORIA_OPEN_MB`, 1024 MB by
//! default) bounds the bytes of vector files held open by all agents together: when an
//! agent's generation opens past it, the least recently searched other agents' are let
//! go (a search still running keeps its own until it ends), and their next search opens
//! them again, cold. `status` reports the budget, what is held, how many times this
//! process opened the agent cold and how long the last cold open took (`storeCache`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// The variable that sets the budget, in MB.
const BUDGET_ENV: &str = "MEMORIA_OPEN_MB";
/// The budget without the variable.
const DEFAULT_BUDGET_MB: u64 = 1024;

/// Where an agent keeps what it holds open: the budget empties it to let it go.
pub(super) type Cell<T> = Mutex<Option<Arc<T>>>;

/// A cell the budget can empty, whatever it holds.
trait Empty: Send + Sync {
    fn empty(&self);
}

impl<T: Send + Sync> Empty for Cell<T> {
    fn empty(&self) {
        *self.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The open generations and when each was last used.
#[derive(Default)]
struct Held {
    tick: u64,
    entries: HashMap<u64, Entry>,
    /// The entries' bytes, all together.
    total: u64,
}

impl Held {
    fn put(&mut self, id: u64, entry: Entry) {
        self.total += entry.bytes;
        if let Some(old) = self.entries.insert(id, entry) {
            self.total -= old.bytes;
        }
    }

    fn take(&mut self, id: u64) -> Option<Entry> {
        let entry = self.entries.remove(&id)?;
        self.total -= entry.bytes;
        Some(entry)
    }
}

struct Entry {
    cell: Weak<dyn Empty>,
    bytes: u64,
    used: u64,
}

/// The process's budget of open generations.
pub(super) struct Budget {
    limit: u64,
    held: Mutex<Held>,
}

/// The budget every agent of this process shares.
pub(super) fn budget() -> &'static Budget {
    static BUDGET: OnceLock<Budget> = OnceLock::new();
    BUDGET.get_or_init(|| Budget::new(limit_bytes()))
}

/// `MEMORIA_OPEN_MB` in bytes when it is a positive whole number (otherwise named in a
/// warning), else [`DEFAULT_BUDGET_MB`].
fn limit_bytes() -> u64 {
    let mb = match std::env::var(BUDGET_ENV) {
        Err(_) => DEFAULT_BUDGET_MB,
        Ok(value) => match value.trim().parse::<u64>() {
            Ok(mb) if mb > 0 => mb,
            _ => {
                tracing::warn!(
                    "{BUDGET_ENV}={value:?} is not a positive whole number of MB; using \
                     {DEFAULT_BUDGET_MB}"
                );
                DEFAULT_BUDGET_MB
            }
        },
    };
    mb.saturating_mul(1 << 20)
}

impl Budget {
    fn new(limit: u64) -> Budget {
        Budget {
            limit,
            held: Mutex::new(Held::default()),
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The budget, in bytes.
    pub(super) fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes held open now, every agent together.
    pub(super) fn used(&self) -> u64 {
        self.held().total
    }

    /// Agent `id` holds a generation of `bytes` in `cell`, used now: the least recently
    /// used others are let go while the total is over the budget (the one just used
    /// stays, even alone over it).
    pub(super) fn used_now<T: Send + Sync + 'static>(
        &self,
        id: u64,
        cell: &Arc<Cell<T>>,
        bytes: u64,
    ) {
        let cell: Arc<dyn Empty> = cell.clone();
        let mut evicted = Vec::new();
        {
            let mut held = self.held();
            held.tick += 1;
            let used = held.tick;
            held.put(
                id,
                Entry {
                    cell: Arc::downgrade(&cell),
                    bytes,
                    used,
                },
            );
            while held.total > self.limit {
                let oldest = held
                    .entries
                    .iter()
                    .filter(|(other, _)| **other != id)
                    .min_by_key(|(_, e)| e.used)
                    .map(|(other, _)| *other);
                let Some(oldest) = oldest else { break };
                evicted.extend(held.take(oldest).map(|entry| entry.cell));
            }
        }
        // Emptied outside the budget's lock: a cell's lock is never taken under it.
        for cell in evicted.iter().filter_map(Weak::upgrade) {
            cell.empty();
        }
    }

    /// Agent `id` no longer holds anything (its generation was let go or replaced).
    pub(super) fn forget(&self, id: u64) {
        self.held().take(id);
    }
}

/// A new agent's id on the budget.
pub(super) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_are_let_go_past_the_budget() {
        let budget = Budget::new(100);
        let cells: Vec<Arc<Cell<usize>>> = (0..4).map(|_| Arc::new(Mutex::new(None))).collect();
        let held = |i: usize| {
            let open = cells[i].lock().unwrap().is_some();
            assert_eq!(open, budget.held().entries.contains_key(&(i as u64)));
            open
        };
        // (agent used, its bytes, agents held afterwards)
        let steps: [(usize, u64, [bool; 4]); 5] = [
            (0, 40, [true, false, false, false]),
            (1, 40, [true, true, false, false]),
            (0, 40, [true, true, false, false]),
            // Over 100: agent 1 is the least recently used.
            (2, 40, [true, false, true, false]),
            // Alone over the budget, the agent just used stays.
            (3, 150, [false, false, false, true]),
        ];
        for (i, bytes, want) in steps {
            // A search reopens what was let go.
            *cells[i].lock().unwrap() = Some(Arc::new(i));
            budget.used_now(i as u64, &cells[i], bytes);
            assert_eq!([held(0), held(1), held(2), held(3)], want, "after {i}");
        }
        assert_eq!(budget.used(), 150);
        budget.forget(3);
        assert_eq!(budget.used(), 0);
    }
}
