//! The HNSW side of the vector index: the hnsw_rs graph (built here, or reloaded from a
//! snapshot and kept with its loader), and top-k search over it with tombstones skipped.
//!
//! **Points are f16** (index format 4): a point is the unit vector in IEEE half precision,
//! 1,536 bytes at 768 dimensions where f32 took 3,072, on disk and in memory. The graph is
//! built and walked with [`HalfCosine`]. Half precision keeps 11 significant bits: a
//! cosine moves by ~1e-5, where int8 codes (the passages' form) moved it by up to 0.002
//! and cost recall@10 against an exact f32 scan (real EmbeddingGemma vectors: 0.9958 for
//! the codes alone, 0.966 against f32's 0.972 through the graph at ef_search 96; f16: 1.0
//! alone). `benches/vector.rs` measures it.
//!
//! Why not one of hnsw_rs's distances (format 3 walked f32 points with
//! [`super::UnitCosine`], `1 - dot`, for this reason): `DistDot` asserts `dot <= 1` and
//! panics on vectors whose norm is a hair above 1; `DistCosine` is safe but computes three
//! scalar `f64` sums per call (~10x a vectorised dot product): a 20k-vector graph took 284 s
//! to build (M 16, ef_construction 200; 83 s with `UnitCosine`).

use hnsw_rs::hnsw::Hnsw;
use hnsw_rs::hnswio::HnswIo;

use super::exact::{Hit, TopK};
use super::HalfCosine;
use crate::simd::dot_f16_f32;

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

pub(super) type Graph<'a> = Hnsw<'a, u16, HalfCosine>;

/// The graph point of the unit vector `unit`: its values as f16 bits.
pub(super) fn to_point(unit: &[f32]) -> Vec<u16> {
    unit.iter()
        .map(|&x| half::f16::from_f32(x).to_bits())
        .collect()
}

/// The unit vector a point stands for.
pub(super) fn point_vector(point: &[u16]) -> Vec<f32> {
    point
        .iter()
        .map(|&bits| half::f16::from_bits(bits).to_f32())
        .collect()
}

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
            let point = to_point(q);
            hits = g.graph.with(|graph| {
                // Over-fetch by the tombstoned share, then retry wider; a graph search can
                // come back short (unreachable points), so the last resort is a full scan.
                let live_share = (live_points as f64 / g.points as f64).max(0.01);
                let mut fetch = ((want as f64 / live_share).ceil() as usize + 2).min(g.points);
                for _ in 0..3 {
                    let ef = ef_search.max(fetch);
                    let hits: Vec<Hit> = graph
                        .search(&point, fetch, ef)
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
                for p in graph.get_point_indexation() {
                    let slot = p.get_origin_id();
                    if live(slot) {
                        top.push(Hit {
                            score: dot_f16_f32(p.get_v(), q).clamp(-1.0, 1.0),
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
