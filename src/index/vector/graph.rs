//! The HNSW side of the vector index: the hnsw_rs graph (built here, or reloaded from a
//! snapshot and kept with its loader), and top-k search over it with tombstones skipped.
//!
//! The graph walks with [`UnitCosine`]. Why not one of hnsw_rs's distances: `DistDot` asserts `dot <= 1` and panics on vectors
//! whose norm is a hair above 1; `DistCosine` is safe but computes three scalar `f64` sums
//! per call (~10x a vectorised dot product): a 20k-vector graph took 284 s to build (M 16,
//! ef_construction 200; 83 s with this distance) and searched at the exact scan's speed
//! (p50 3.7 ms at ef_search 64 against 0.95 ms with this distance; exact: 4.9 ms). Every
//! vector the graph sees is normalised here, so [`UnitCosine`] is `1 - dot`, clamped to `[0, 2]`:
//! the same ordering and scores as `DistCosine`, no assertion, no panic.

use hnsw_rs::hnsw::Hnsw;
use hnsw_rs::hnswio::HnswIo;

use super::exact::{Hit, TopK};
use super::UnitCosine;
use crate::simd::dot;

/// `hnsw_rs` layers; its maximum (`NB_LAYER_MAX`). A graph reloaded from disk always has
/// this many, so inserting after a reload never meets a missing layer.
pub(super) const MAX_LAYERS: usize = 16;
/// Vectors handed to one `parallel_insert` call while building (hnsw_rs advises ~1000 per
/// thread or more); the batch's copies are freed once the graph holds them.
pub(super) const BUILD_BATCH: usize = 16_384;

/// What a slot of the index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// In the graph and live.
    Live,
    /// Live all-zero vector, not in the graph.
    Zero,
    /// Removed (its point, if any, stays in the graph as a tombstone).
    Dead,
}

pub(super) struct GraphStore {
    pub(super) graph: GraphHolder,
    /// Per slot.
    pub(super) state: Vec<Slot>,
    /// Points in the graph, tombstoned ones included.
    pub(super) points: usize,
    /// Tombstoned points in the graph.
    pub(super) dead: usize,
}

pub(super) type Graph<'a> = Hnsw<'a, f32, UnitCosine>;

// Why a self-referential cell: `HnswIo::load_hnsw*` returns `Hnsw<'b, ..>` with `'b` tied
// to a borrow of the `HnswIo` (hnsw_rs issue #19), because a graph reloaded with mmap
// points into the loader's map. We never ask for mmap (`load_hnsw_with_dist` cannot use
// it), so nothing really points into the loader, but the type still borrows it. Rather
// than transmute that lifetime away (unsafe, and wrong the day hnsw_rs changes) or leak
// the loader (`Box::leak`, one leak per reload), `self_cell` keeps the loader and the
// graph in one heap cell: the graph is dropped before the loader, and both are freed
// when the index is. `Hnsw` is invariant in its lifetime (its points sit behind
// `RwLock`s), hence `not_covariant` and access through `with_dependent`.
self_cell::self_cell!(
    pub(super) struct LoadedGraph {
        owner: HnswIo,
        #[not_covariant]
        dependent: Graph,
    }
);

pub(super) enum GraphHolder {
    /// Built in this process: owns everything.
    Built(Box<Graph<'static>>),
    /// Reloaded from a dump, see [`LoadedGraph`].
    Loaded(LoadedGraph),
}

impl GraphHolder {
    pub(super) fn with<R>(&self, f: impl FnOnce(&Graph<'_>) -> R) -> R {
        match self {
            GraphHolder::Built(graph) => f(graph),
            GraphHolder::Loaded(cell) => cell.with_dependent(|_, graph| f(graph)),
        }
    }
}

impl GraphStore {
    /// The `k` best live slots for the unit query `q` (`ef_search` as configured, `zeros`
    /// the index's live all-zero vectors, which fill the tail with score 0), leaving out
    /// the slots `skip` names (`hidden` of them at most: the search over-fetches for them).
    pub(super) fn top_k(
        &self,
        q: &[f32],
        k: usize,
        ef_search: usize,
        zeros: usize,
        hidden: usize,
        skip: &dyn Fn(usize) -> bool,
    ) -> Vec<Hit> {
        let g = self;
        let live = |slot: usize| g.state.get(slot) == Some(&Slot::Live) && !skip(slot);
        let live_points = (g.points - g.dead).saturating_sub(hidden);
        let want = k.min(live_points);
        let mut hits = Vec::new();
        if want > 0 {
            hits = g.graph.with(|graph| {
                // Over-fetch by the tombstoned share, then retry wider; a graph search can
                // come back short (unreachable points), so the last resort is a full scan.
                let live_share = (live_points as f64 / g.points as f64).max(0.01);
                let mut fetch = ((want as f64 / live_share).ceil() as usize + 2).min(g.points);
                for _ in 0..3 {
                    let ef = ef_search.max(fetch);
                    let hits: Vec<Hit> = graph
                        .search(q, fetch, ef)
                        .into_iter()
                        .filter(|n| live(n.d_id))
                        .map(|n| Hit {
                            score: 1.0 - n.distance,
                            slot: n.d_id,
                        })
                        .take(want)
                        .collect();
                    if hits.len() == want || fetch == g.points {
                        if hits.len() == want {
                            return hits;
                        }
                        break;
                    }
                    fetch = (fetch * 4).min(g.points);
                }
                let mut top = TopK::new(want);
                for point in graph.get_point_indexation() {
                    let slot = point.get_origin_id();
                    if live(slot) {
                        top.push(Hit {
                            score: dot(q, point.get_v()).clamp(-1.0, 1.0),
                            slot,
                        });
                    }
                }
                top.into_sorted()
            });
        }
        if hits.len() < k && zeros > 0 {
            // Zero vectors score 0: they rank above negative matches and fill the tail.
            let zero_hits = g
                .state
                .iter()
                .enumerate()
                .filter(|(slot, s)| **s == Slot::Zero && !skip(*slot))
                .map(|(slot, _)| Hit { score: 0.0, slot })
                .take(k);
            hits.extend(zero_hits);
            hits.sort_unstable_by(|a, b| b.cmp(a));
            hits.truncate(k);
        }
        hits
    }
}
