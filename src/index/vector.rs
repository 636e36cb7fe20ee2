//! The vector side of hybrid search: top-k chunks by cosine similarity to a query embedding.
//!
//! Two representations behind one type, chosen by size:
//!
//! - **exact** (fewer than [`VectorParams::exact_threshold`] searchable vectors): one
//!   contiguous row-major `f32` matrix of L2-normalised rows; a search is a dot product per
//!   row (both cores via rayon once the matrix is large) and a bounded heap. Always correct,
//!   and below the threshold it is as fast as a graph walk.
//! - **HNSW** (at or above the threshold): an `hnsw_rs` graph with the [`UnitCosine`]
//!   distance, built in parallel. Removals are tombstones (the graph cannot delete); searches over-fetch and
//!   drop them. [`VectorIndex::needs_rebuild`] says when tombstones pile up or the size no
//!   longer suits the representation; the caller then rebuilds from the catalog.
//!
//! Vectors are keyed by chunk id and normalised on the way in, so scores are cosines even
//! when the embedder's norm is off by a rounding error. An all-zero vector has no
//! direction: a zero query returns nothing, and a zero stored vector scores 0 against
//! every query (it is kept out of the graph, where any cosine distance is undefined).
//!
//! Why not one of hnsw_rs's distances: `DistDot` asserts `dot <= 1` and panics on vectors
//! whose norm is a hair above 1; `DistCosine` is safe but computes three scalar `f64` sums
//! per call (~10x a vectorised dot product): a 20k-vector graph took 284 s to build (M 16,
//! ef_construction 200; 83 s with this distance) and searched at the exact scan's speed
//! (p50 3.7 ms at ef_search 64 against 0.95 ms with this distance; exact: 4.9 ms). Every
//! vector the graph sees is normalised here, so [`UnitCosine`] is `1 - dot`, clamped to `[0, 2]`:
//! the same ordering and scores as `DistCosine`, no assertion, no panic.
//!
//! # On disk (`<gen>/vectors/`)
//!
//! ```text
//! meta.json                 format, tag (catalog seq), kind, dims, params, snapshot name,
//!                           and the length + sha256 of every file of that snapshot
//! <snap>.ids.json           slot → chunk id, tombstoned slots, zero-vector slots
//! <snap>.f32                exact: the matrix, little-endian rows in slot order
//! <snap>.hnsw.graph/.data   HNSW: hnsw_rs `file_dump` (graph topology, vectors)
//! ```
//!
//! [`VectorIndex::save`] writes a new snapshot's files under a fresh name, fsyncs them, then
//! replaces `meta.json` by an atomic rename (fsyncing the directory), and only then deletes
//! the files of older snapshots. A crash at any instant leaves either the old or the new
//! `meta.json`, each naming complete files; a reader that loses a race with the cleanup
//! re-reads `meta.json` and retries. (A directory cannot be renamed over a non-empty one
//! on POSIX, so `meta.json` is the one file whose rename switches snapshots.)
//!
//! [`VectorIndex::load`] checks every file against its recorded length and sha256 before
//! parsing. This matters for the graph: hnsw_rs's loader asserts, indexes without bounds
//! checks and even calls `process::exit` on malformed input, so corrupt or partial files
//! must be caught before they reach it; they become [`Error::Corrupt`] naming the file,
//! and the caller rebuilds from the catalog.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use hnsw_rs::anndists::dist::distances::Distance;
use hnsw_rs::api::AnnT;
use hnsw_rs::hnsw::Hnsw;
use hnsw_rs::hnswio::HnswIo;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// Bumped when the files' layout or meaning changes; an old index then fails to load and
/// is rebuilt from the catalog.
const FORMAT_VERSION: u32 = 1;
const META: &str = "meta.json";
/// `hnsw_rs` layers; its maximum (`NB_LAYER_MAX`). A graph reloaded from disk always has
/// this many, so inserting after a reload never meets a missing layer.
const MAX_LAYERS: usize = 16;
/// Vectors handed to one `parallel_insert` call while building (hnsw_rs advises ~1000 per
/// thread or more); the batch's copies are freed once the graph holds them.
const BUILD_BATCH: usize = 16_384;
/// Rows scored per rayon task in the exact scan.
const EXACT_BLOCK_ROWS: usize = 1024;
/// Below this many matrix elements the exact scan stays on the calling thread.
const EXACT_PARALLEL_MIN: usize = 1 << 21;

/// Tuning of the vector index. The defaults come from `benches/vector.rs` (100k clustered
/// 768-d vectors, 2 shared cores): the exact scan's p50 is 1.6 ms at 10k vectors but 3.7 ms
/// at 20k and 21 ms at 50k, so graphs start at 10k; M = 16 with ef_construction = 100
/// builds 100k vectors in 210-290 s (ef_construction = 200: ~650 s, no recall gained) and
/// reaches recall@10 1.000 against the exact scan from ef_search = 64 (p50 ~1.1-1.3 ms);
/// 96 is the default for margin on data less tidy than synthetic clusters (a dense 3k-point
/// 64-d test set gets 0.95 at 64), at p50 ~1.3-1.9 ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorParams {
    /// Below this many searchable (non-zero) vectors the index is an exact scan.
    pub exact_threshold: usize,
    /// HNSW links per node and layer (layer 0 keeps twice as many). 4..=128.
    pub m: usize,
    /// HNSW candidate list while inserting.
    pub ef_construction: usize,
    /// HNSW candidate list while searching (raised to `k` when `k` is larger).
    pub ef_search: usize,
    /// Tombstoned share of the graph beyond which [`VectorIndex::needs_rebuild`] is true.
    pub max_tombstone_fraction: f32,
}

impl Default for VectorParams {
    fn default() -> Self {
        VectorParams {
            exact_threshold: 10_000,
            m: 16,
            ef_construction: 100,
            ef_search: 96,
            max_tombstone_fraction: 0.2,
        }
    }
}

impl VectorParams {
    /// The same parameters with every field in a range hnsw_rs accepts (it exits the
    /// process for more than 256 links).
    fn sanitized(&self) -> VectorParams {
        let m = self.m.clamp(4, 128);
        VectorParams {
            exact_threshold: self.exact_threshold,
            m,
            ef_construction: self.ef_construction.max(m),
            ef_search: self.ef_search.max(1),
            max_tombstone_fraction: if self.max_tombstone_fraction.is_finite() {
                self.max_tombstone_fraction.clamp(0.0, 0.9)
            } else {
                VectorParams::default().max_tombstone_fraction
            },
        }
    }
}

/// An approximate (or, when small, exact) nearest-neighbour index over chunk embeddings.
pub struct VectorIndex {
    dims: usize,
    params: VectorParams,
    /// Slot → chunk id. Exact: slot = matrix row. HNSW: slot = the graph's data id; a
    /// tombstoned slot keeps an empty string.
    ids: Vec<String>,
    /// Live chunk id → slot.
    slot_of: HashMap<String, usize>,
    /// Live all-zero vectors (never returned before a real match; score 0).
    zeros: usize,
    store: Store,
}

enum Store {
    /// Normalised rows, `ids.len() * dims` floats. Removal moves the last row into the hole.
    Exact {
        rows: Vec<f32>,
    },
    Graph(GraphStore),
}

struct GraphStore {
    graph: GraphHolder,
    /// Per slot.
    state: Vec<Slot>,
    /// Points in the graph, tombstoned ones included.
    points: usize,
    /// Tombstoned points in the graph.
    dead: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// In the graph and live.
    Live,
    /// Live all-zero vector, not in the graph.
    Zero,
    /// Removed (its point, if any, stays in the graph as a tombstone).
    Dead,
}

type Graph<'a> = Hnsw<'a, f32, UnitCosine>;

/// Cosine distance between unit vectors: `1 - a·b`, clamped to `[0, 2]` so rounding can
/// never produce the negative distance hnsw_rs asserts against. Only ever given vectors
/// normalised by `normalize` (non-zero, finite).
#[derive(Debug, Default, Clone, Copy)]
pub struct UnitCosine;

impl Distance<f32> for UnitCosine {
    #[inline]
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).clamp(0.0, 2.0)
    }
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
    struct LoadedGraph {
        owner: HnswIo,
        #[not_covariant]
        dependent: Graph,
    }
);

enum GraphHolder {
    /// Built in this process: owns everything.
    Built(Box<Graph<'static>>),
    /// Reloaded from a dump, see [`LoadedGraph`].
    Loaded(LoadedGraph),
}

impl GraphHolder {
    fn with<R>(&self, f: impl FnOnce(&Graph<'_>) -> R) -> R {
        match self {
            GraphHolder::Built(graph) => f(graph),
            GraphHolder::Loaded(cell) => cell.with_dependent(|_, graph| f(graph)),
        }
    }
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("kind", &self.kind())
            .field("dims", &self.dims)
            .field("len", &self.len())
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Exact,
    Hnsw,
}

/// A search hit before ids are attached: ordered by score, then lower slot first.
#[derive(Debug, Clone, Copy)]
struct Hit {
    score: f32,
    slot: usize,
}

impl PartialEq for Hit {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Hit {}
impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Hit {
    /// Greater = better.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.slot.cmp(&self.slot))
    }
}

/// The best `k` hits seen so far (a min-heap of the current top).
struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Hit>>,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    #[inline]
    fn push(&mut self, hit: Hit) {
        if self.heap.len() < self.k {
            self.heap.push(Reverse(hit));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if hit > worst.0 {
                *worst = Reverse(hit);
            }
        }
    }

    fn merge(mut self, other: TopK) -> TopK {
        for Reverse(hit) in other.heap {
            self.push(hit);
        }
        self
    }

    /// Best first.
    fn into_sorted(self) -> Vec<Hit> {
        let mut hits: Vec<Hit> = self.heap.into_iter().map(|Reverse(h)| h).collect();
        hits.sort_unstable_by(|a, b| b.cmp(a));
        hits
    }
}

impl VectorIndex {
    /// Builds an index over `entries` (chunk id, embedding of `dims` floats). A repeated id
    /// keeps its last vector. Exact below `params.exact_threshold` searchable vectors, HNSW
    /// (built on all cores) at or above it.
    pub fn build(
        dims: usize,
        entries: Vec<(String, Vec<f32>)>,
        params: &VectorParams,
    ) -> Result<VectorIndex> {
        let params = params.sanitized();
        if dims == 0 {
            return Err(invalid(
                "vector index",
                "dimension must be at least 1".into(),
            ));
        }
        let (entries, nonzero) = prepare(dims, entries)?;
        let searchable = nonzero.iter().filter(|&&nz| nz).count();
        let zeros = entries.len() - searchable;

        if !wants_graph(searchable, &params) {
            let mut rows = Vec::with_capacity(entries.len() * dims);
            let mut ids = Vec::with_capacity(entries.len());
            for (id, vector) in entries {
                rows.extend_from_slice(&vector);
                ids.push(id);
            }
            let slot_of = ids.iter().cloned().zip(0..).collect();
            return Ok(VectorIndex {
                dims,
                params,
                ids,
                slot_of,
                zeros,
                store: Store::Exact { rows },
            });
        }

        let graph: Graph<'static> = Hnsw::new(
            params.m,
            searchable,
            MAX_LAYERS,
            params.ef_construction,
            UnitCosine,
        );
        let mut ids = Vec::with_capacity(entries.len());
        let mut state = Vec::with_capacity(entries.len());
        let mut data: Vec<(Vec<f32>, usize)> = Vec::with_capacity(searchable);
        for ((id, vector), nonzero) in entries.into_iter().zip(nonzero) {
            if nonzero {
                data.push((vector, ids.len()));
                state.push(Slot::Live);
            } else {
                state.push(Slot::Zero);
            }
            ids.push(id);
        }
        // Insert from the back in batches so each batch's vectors are freed as soon as the
        // graph has its own copy (peak memory ≈ graph + one batch, not graph + all input).
        while !data.is_empty() {
            let batch = data.split_off(data.len().saturating_sub(BUILD_BATCH));
            let refs: Vec<(&Vec<f32>, usize)> = batch.iter().map(|(v, s)| (v, *s)).collect();
            graph.parallel_insert(&refs);
        }
        let slot_of = ids
            .iter()
            .cloned()
            .zip(0..)
            .filter(|(_, slot)| state[*slot] != Slot::Dead)
            .collect();
        Ok(VectorIndex {
            dims,
            params,
            ids,
            slot_of,
            zeros,
            store: Store::Graph(GraphStore {
                graph: GraphHolder::Built(Box::new(graph)),
                state,
                points: searchable,
                dead: 0,
            }),
        })
    }

    /// Adds (or replaces) the vector of chunk `id`.
    pub fn insert(&mut self, id: String, mut vector: Vec<f32>) -> Result<()> {
        check_vector(&id, &vector, self.dims)?;
        let nonzero = normalize(&mut vector);
        if let Some((vector, slot)) = self.place(id, vector, nonzero) {
            if let Store::Graph(g) = &self.store {
                g.graph.with(|graph| graph.insert_slice((&vector, slot)));
            }
        }
        Ok(())
    }

    /// [`insert`](Self::insert) for many vectors at once (a repeated id keeps its last
    /// vector); new graph points are inserted on all cores. On error nothing is changed.
    pub fn extend(&mut self, entries: Vec<(String, Vec<f32>)>) -> Result<()> {
        let (entries, nonzero) = prepare(self.dims, entries)?;
        let pending: Vec<(Vec<f32>, usize)> = entries
            .into_iter()
            .zip(nonzero)
            .filter_map(|((id, vector), nonzero)| self.place(id, vector, nonzero))
            .collect();
        if let Store::Graph(g) = &self.store {
            let refs: Vec<(&Vec<f32>, usize)> = pending.iter().map(|(v, s)| (v, *s)).collect();
            g.graph.with(|graph| graph.parallel_insert(&refs));
        }
        Ok(())
    }

    /// Records a checked, normalised vector under a new slot (replacing `id`'s old one) and
    /// returns it when it still has to be inserted into the graph.
    fn place(&mut self, id: String, vector: Vec<f32>, nonzero: bool) -> Option<(Vec<f32>, usize)> {
        self.remove(&id);
        let slot = self.ids.len();
        self.ids.push(id.clone());
        self.slot_of.insert(id, slot);
        if !nonzero {
            self.zeros += 1;
        }
        match &mut self.store {
            Store::Exact { rows } => {
                rows.extend_from_slice(&vector);
                None
            }
            Store::Graph(g) if nonzero => {
                g.points += 1;
                g.state.push(Slot::Live);
                Some((vector, slot))
            }
            Store::Graph(g) => {
                g.state.push(Slot::Zero);
                None
            }
        }
    }

    /// Removes chunk `id`; false if it was not there. In an HNSW index the point stays in
    /// the graph as a tombstone that searches skip.
    pub fn remove(&mut self, id: &str) -> bool {
        let Some(slot) = self.slot_of.remove(id) else {
            return false;
        };
        match &mut self.store {
            Store::Exact { rows } => {
                let dims = self.dims;
                if rows[slot * dims..(slot + 1) * dims]
                    .iter()
                    .all(|&x| x == 0.0)
                {
                    self.zeros -= 1;
                }
                let last = self.ids.len() - 1;
                if slot != last {
                    rows.copy_within(last * dims..(last + 1) * dims, slot * dims);
                    *self.slot_of.get_mut(&self.ids[last]).expect("live id") = slot;
                }
                rows.truncate(last * dims);
                self.ids.swap_remove(slot);
            }
            Store::Graph(g) => {
                match g.state[slot] {
                    Slot::Live => g.dead += 1,
                    Slot::Zero => self.zeros -= 1,
                    Slot::Dead => unreachable!("a live id maps to a dead slot"),
                }
                g.state[slot] = Slot::Dead;
                self.ids[slot] = String::new();
            }
        }
        true
    }

    /// True when the caller should rebuild this index from the catalog: too many
    /// tombstones, or a size that now calls for the other representation. (The graph is
    /// kept until the size falls below half the threshold, so a collection hovering at
    /// the threshold does not rebuild back and forth.)
    pub fn needs_rebuild(&self) -> bool {
        let searchable = self.len() - self.zeros;
        match &self.store {
            Store::Exact { .. } => wants_graph(searchable, &self.params),
            Store::Graph(g) => {
                g.dead as f64 > self.params.max_tombstone_fraction as f64 * g.points as f64
                    || searchable < self.params.exact_threshold / 2
            }
        }
    }

    /// The `k` live vectors most similar to `query`, as (chunk id, cosine similarity), best
    /// first (ties: smaller id first). Exactly `min(k, len())` results, except that a zero,
    /// non-finite or wrongly sized query returns nothing. HNSW results are approximate.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(String, f32)> {
        if k == 0 || self.slot_of.is_empty() || query.len() != self.dims {
            return Vec::new();
        }
        let mut q = query.to_vec();
        if q.iter().any(|x| !x.is_finite()) || !normalize(&mut q) {
            return Vec::new();
        }
        let hits = match &self.store {
            Store::Exact { rows } => exact_top_k(rows, self.dims, &q, k),
            Store::Graph(g) => self.graph_top_k(g, &q, k),
        };
        let mut out: Vec<(String, f32)> = hits
            .into_iter()
            .map(|hit| (self.ids[hit.slot].clone(), hit.score))
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }

    fn graph_top_k(&self, g: &GraphStore, q: &[f32], k: usize) -> Vec<Hit> {
        let live_points = g.points - g.dead;
        let want = k.min(live_points);
        let mut hits = Vec::new();
        if want > 0 {
            hits = g.graph.with(|graph| {
                // Over-fetch by the tombstoned share, then retry wider; a graph search can
                // come back short (unreachable points), so the last resort is a full scan.
                let live_share = (live_points as f64 / g.points as f64).max(0.01);
                let mut fetch = ((want as f64 / live_share).ceil() as usize + 2).min(g.points);
                for _ in 0..3 {
                    let ef = self.params.ef_search.max(fetch);
                    let hits: Vec<Hit> = graph
                        .search(q, fetch, ef)
                        .into_iter()
                        .filter(|n| g.state.get(n.d_id) == Some(&Slot::Live))
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
                    if g.state.get(slot) == Some(&Slot::Live) {
                        top.push(Hit {
                            score: dot(q, point.get_v()).clamp(-1.0, 1.0),
                            slot,
                        });
                    }
                }
                top.into_sorted()
            });
        }
        if hits.len() < k && self.zeros > 0 {
            // Zero vectors score 0: they rank above negative matches and fill the tail.
            let zero_hits = g
                .state
                .iter()
                .enumerate()
                .filter(|(_, s)| **s == Slot::Zero)
                .map(|(slot, _)| Hit { score: 0.0, slot })
                .take(k);
            hits.extend(zero_hits);
            hits.sort_unstable_by(|a, b| b.cmp(a));
            hits.truncate(k);
        }
        hits
    }

    /// Live vectors.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Whether chunk `id` has a live vector here.
    pub fn contains(&self, id: &str) -> bool {
        self.slot_of.contains_key(id)
    }

    /// The live chunk ids, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.slot_of.keys().map(String::as_str)
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// True when searches walk an HNSW graph (false: exact scan).
    pub fn is_hnsw(&self) -> bool {
        matches!(self.store, Store::Graph(_))
    }

    pub fn params(&self) -> &VectorParams {
        &self.params
    }

    /// Changes the HNSW search width (no rebuild needed; saved with the index).
    pub fn set_ef_search(&mut self, ef_search: usize) {
        self.params.ef_search = ef_search.max(1);
    }

    fn kind(&self) -> Kind {
        match self.store {
            Store::Exact { .. } => Kind::Exact,
            Store::Graph(_) => Kind::Hnsw,
        }
    }

    /// Writes the index into `dir` (created if needed) as the state of catalog seq `tag`.
    /// Atomic: a reader or a crash sees the previous complete save or this one.
    pub fn save(&self, dir: &Path, tag: u64) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let snapshot = format!("s{tag:06}-{nanos:x}");
        let mut files = Vec::new();

        let (dead, zero, graph_points) = match &self.store {
            Store::Exact { .. } => (Vec::new(), Vec::new(), 0),
            Store::Graph(g) => (
                slots_in(&g.state, Slot::Dead),
                slots_in(&g.state, Slot::Zero),
                g.points,
            ),
        };
        let ids = IdsFile {
            ids: &self.ids,
            dead,
            zero,
        };
        let name = format!("{snapshot}.ids.json");
        let bytes = serde_json::to_vec(&ids).map_err(|e| invalid_path(&dir.join(&name), e))?;
        files.push(write_file(dir, &name, &bytes)?);

        match &self.store {
            Store::Exact { rows } => {
                let name = format!("{snapshot}.f32");
                let path = dir.join(&name);
                let file = File::create(&path).map_err(|e| Error::io(&path, e))?;
                let mut out = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
                for chunk in rows.chunks(1 << 16) {
                    let bytes: Vec<u8> = chunk.iter().flat_map(|x| x.to_le_bytes()).collect();
                    out.write_all(&bytes).map_err(|e| Error::io(&path, e))?;
                }
                let (writer, sum) = out.finish();
                let file = writer
                    .into_inner()
                    .map_err(|e| Error::io(&path, e.into_error()))?;
                file.sync_all().map_err(|e| Error::io(&path, e))?;
                files.push(FileSum {
                    name,
                    len: sum.0,
                    sha256: sum.1,
                });
            }
            Store::Graph(g) => {
                // hnsw_rs panics (rather than erring) when it cannot create its files.
                let dumped = panic::catch_unwind(AssertUnwindSafe(|| {
                    g.graph.with(|graph| graph.file_dump(dir, &snapshot))
                }));
                let graph_path = dir.join(format!("{snapshot}.hnsw.graph"));
                match dumped {
                    Ok(Ok(basename)) if basename == snapshot => {}
                    Ok(Ok(other)) => {
                        return Err(invalid_path(
                            &graph_path,
                            format!("hnsw_rs wrote the graph as {other:?}"),
                        ))
                    }
                    Ok(Err(e)) => return Err(invalid_path(&graph_path, e)),
                    Err(_) => {
                        return Err(invalid_path(&graph_path, "hnsw_rs panicked while saving"))
                    }
                }
                for suffix in ["hnsw.graph", "hnsw.data"] {
                    let name = format!("{snapshot}.{suffix}");
                    let path = dir.join(&name);
                    File::options()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.sync_all())
                        .map_err(|e| Error::io(&path, e))?;
                    let (len, sha256) = hash_file(&path)?;
                    files.push(FileSum { name, len, sha256 });
                }
            }
        }

        let meta = Meta {
            format: FORMAT_VERSION,
            tag,
            kind: self.kind(),
            dims: self.dims,
            params: self.params.clone(),
            snapshot: snapshot.clone(),
            slots: self.ids.len(),
            graph_points,
            files,
        };
        let tmp = format!("{META}.tmp");
        let bytes = serde_json::to_vec_pretty(&meta).map_err(|e| invalid_path(dir, e))?;
        write_file(dir, &tmp, &bytes)?;
        let meta_path = dir.join(META);
        fs::rename(dir.join(&tmp), &meta_path).map_err(|e| Error::io(&meta_path, e))?;
        sync_dir(dir)?;

        // Older snapshots and debris of interrupted saves. Best effort: whatever stays is
        // removed by the next save, and nothing reads files meta.json does not name.
        if let Ok(entries) = fs::read_dir(dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name != META && !name.starts_with(&format!("{snapshot}.")) {
                    let path = entry.path();
                    let _ = if path.is_dir() {
                        fs::remove_dir_all(&path)
                    } else {
                        fs::remove_file(&path)
                    };
                }
            }
        }
        Ok(())
    }

    /// Loads the index saved in `dir` and the tag it was saved with; `None` if nothing was
    /// ever saved there. Damaged or partial files are an error naming the file.
    pub fn load(dir: &Path) -> Result<Option<(VectorIndex, u64)>> {
        let meta_path = dir.join(META);
        let mut attempt = 0;
        loop {
            let Some(meta) = read_meta(&meta_path)? else {
                return Ok(None);
            };
            match load_snapshot(dir, &meta) {
                Ok(index) => return Ok(Some((index, meta.tag))),
                // A concurrent save switched snapshots and deleted this one's files.
                Err(Error::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound
                        && attempt < 3
                        && read_meta(&meta_path)?.map(|m| m.snapshot) != Some(meta.snapshot) =>
                {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A chunk id and its embedding.
type Entry = (String, Vec<f32>);

/// Drops all but the last entry of each id, checks every vector and normalises it; the
/// flags say which vectors are non-zero.
fn prepare(dims: usize, entries: Vec<(String, Vec<f32>)>) -> Result<(Vec<Entry>, Vec<bool>)> {
    let mut last: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    for (i, (id, _)) in entries.iter().enumerate() {
        last.insert(id.as_str(), i);
    }
    let keep: Vec<bool> = entries
        .iter()
        .enumerate()
        .map(|(i, (id, _))| last[id.as_str()] == i)
        .collect();
    drop(last);
    let mut entries: Vec<(String, Vec<f32>)> = entries
        .into_iter()
        .zip(keep)
        .filter_map(|(entry, keep)| keep.then_some(entry))
        .collect();
    let nonzero = entries
        .par_iter_mut()
        .map(|(id, vector)| {
            check_vector(id, vector, dims)?;
            Ok(normalize(vector))
        })
        .collect::<Result<_>>()?;
    Ok((entries, nonzero))
}

/// Whether `searchable` non-zero vectors call for a graph.
fn wants_graph(searchable: usize, params: &VectorParams) -> bool {
    searchable > 0 && searchable >= params.exact_threshold
}

fn slots_in(state: &[Slot], wanted: Slot) -> Vec<usize> {
    state
        .iter()
        .enumerate()
        .filter(|(_, s)| **s == wanted)
        .map(|(slot, _)| slot)
        .collect()
}

/// Rejects vectors the index cannot hold (they would mean a catalog/embedder mismatch).
fn check_vector(id: &str, vector: &[f32], dims: usize) -> Result<()> {
    if id.is_empty() {
        return Err(invalid("vector index", "empty chunk id".into()));
    }
    if vector.len() != dims {
        return Err(invalid(
            &format!("chunk {id}"),
            format!(
                "vector has {} dimensions, the index has {dims}",
                vector.len()
            ),
        ));
    }
    if vector.iter().any(|x| !x.is_finite()) {
        return Err(invalid(
            &format!("chunk {id}"),
            "vector has a non-finite value".into(),
        ));
    }
    Ok(())
}

fn invalid(what: &str, message: String) -> Error {
    Error::Corrupt {
        path: PathBuf::from(what),
        message,
    }
}

fn invalid_path(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// Scales `v` to unit length; false (leaving it zero) for a zero vector.
fn normalize(v: &mut [f32]) -> bool {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        let inv = 1.0 / norm;
        v.iter_mut().for_each(|x| *x *= inv);
        true
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
        false
    }
}

/// Dot product, compiled for AVX-512 and AVX2 with FMA when the CPU has them (runtime
/// check): it is most of an HNSW search's arithmetic, and the baseline x86-64 build only
/// has 4-wide SSE without FMA.
#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the features were just checked.
            return unsafe { dot_avx512(a, b) };
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: as above.
            return unsafe { dot_avx2(a, b) };
        }
    }
    dot_lanes::<false>(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes::<true>(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes::<true>(a, b)
}

/// 64 independent lanes (four AVX-512 registers) so the adds do not wait on each other.
/// `FMA` only where the target has it: elsewhere `mul_add` is a slow library call.
#[inline(always)]
fn dot_lanes<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 64;
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] = if FMA {
                x[i].mul_add(y[i], acc[i])
            } else {
                acc[i] + x[i] * y[i]
            };
        }
    }
    acc.iter().sum::<f32>() + tail
}

fn exact_top_k(rows: &[f32], dims: usize, q: &[f32], k: usize) -> Vec<Hit> {
    let scan = |first_row: usize, block: &[f32]| {
        let mut top = TopK::new(k);
        for (i, row) in block.chunks_exact(dims).enumerate() {
            top.push(Hit {
                score: dot(q, row).clamp(-1.0, 1.0),
                slot: first_row + i,
            });
        }
        top
    };
    if rows.len() < EXACT_PARALLEL_MIN {
        scan(0, rows).into_sorted()
    } else {
        rows.par_chunks(EXACT_BLOCK_ROWS * dims)
            .enumerate()
            .map(|(b, block)| scan(b * EXACT_BLOCK_ROWS, block))
            .reduce(|| TopK::new(k), TopK::merge)
            .into_sorted()
    }
}

// ---------------------------------------------------------------------------------------
// Files

#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    format: u32,
    tag: u64,
    kind: Kind,
    dims: usize,
    params: VectorParams,
    snapshot: String,
    /// Length of the slot table.
    slots: usize,
    /// Points in the HNSW graph, tombstones included (0 for exact).
    graph_points: usize,
    files: Vec<FileSum>,
}

#[derive(Debug, Serialize, Deserialize)]
struct FileSum {
    name: String,
    len: u64,
    sha256: String,
}

#[derive(Serialize)]
struct IdsFile<'a> {
    ids: &'a [String],
    dead: Vec<usize>,
    zero: Vec<usize>,
}

#[derive(Deserialize)]
struct IdsFileOwned {
    ids: Vec<String>,
    dead: Vec<usize>,
    zero: Vec<usize>,
}

fn read_meta(path: &Path) -> Result<Option<Meta>> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta: Meta = serde_json::from_slice(&bytes).map_err(|e| invalid_path(path, e))?;
    if meta.format != FORMAT_VERSION {
        return Err(invalid_path(
            path,
            format!(
                "vector index format {} (this version reads {FORMAT_VERSION})",
                meta.format
            ),
        ));
    }
    Ok(Some(meta))
}

fn load_snapshot(dir: &Path, meta: &Meta) -> Result<VectorIndex> {
    let meta_path = dir.join(META);
    let corrupt = |message: String| invalid_path(&meta_path, message);
    if meta.dims == 0 {
        return Err(corrupt("dims is 0".into()));
    }
    let expected: Vec<String> = match meta.kind {
        Kind::Exact => vec!["ids.json", "f32"],
        Kind::Hnsw => vec!["ids.json", "hnsw.graph", "hnsw.data"],
    }
    .into_iter()
    .map(|suffix| format!("{}.{suffix}", meta.snapshot))
    .collect();
    let listed: Vec<&str> = meta.files.iter().map(|f| f.name.as_str()).collect();
    if listed != expected.iter().map(String::as_str).collect::<Vec<_>>()
        || meta.snapshot.contains(['/', '\\'])
        || meta.snapshot.starts_with('.')
    {
        return Err(corrupt(format!("unexpected file list {listed:?}")));
    }

    let ids_path = dir.join(&meta.files[0].name);
    let ids_bytes = read_checked(&ids_path, &meta.files[0])?;
    let ids: IdsFileOwned =
        serde_json::from_slice(&ids_bytes).map_err(|e| invalid_path(&ids_path, e))?;
    drop(ids_bytes);
    let bad_ids = |message: String| invalid_path(&ids_path, message);
    if ids.ids.len() != meta.slots {
        return Err(bad_ids(format!(
            "{} slots, meta.json says {}",
            ids.ids.len(),
            meta.slots
        )));
    }
    let params = meta.params.sanitized();

    match meta.kind {
        Kind::Exact => {
            if !ids.dead.is_empty() || !ids.zero.is_empty() {
                return Err(bad_ids("tombstones in an exact index".into()));
            }
            let rows_path = dir.join(&meta.files[1].name);
            let bytes = read_checked(&rows_path, &meta.files[1])?;
            if bytes.len() != meta.slots * meta.dims * 4 {
                return Err(invalid_path(
                    &rows_path,
                    format!(
                        "{} bytes, expected {} rows of {} floats",
                        bytes.len(),
                        meta.slots,
                        meta.dims
                    ),
                ));
            }
            let rows: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            let zeros = rows
                .chunks_exact(meta.dims)
                .filter(|row| row.iter().all(|&x| x == 0.0))
                .count();
            let slot_of = slot_map(&ids.ids, |_| true).map_err(bad_ids)?;
            Ok(VectorIndex {
                dims: meta.dims,
                params,
                ids: ids.ids,
                slot_of,
                zeros,
                store: Store::Exact { rows },
            })
        }
        Kind::Hnsw => {
            let mut state = vec![Slot::Live; meta.slots];
            for (list, mark) in [(&ids.dead, Slot::Dead), (&ids.zero, Slot::Zero)] {
                for &slot in list {
                    match state.get_mut(slot) {
                        Some(s) if *s == Slot::Live => *s = mark,
                        _ => return Err(bad_ids(format!("bad tombstone/zero slot {slot}"))),
                    }
                }
            }
            let slot_of = slot_map(&ids.ids, |slot| state[slot] != Slot::Dead).map_err(bad_ids)?;
            let graph_path = dir.join(&meta.files[1].name);
            for sum in &meta.files[1..] {
                verify_file(&dir.join(&sum.name), sum)?;
            }
            let loader = HnswIo::new(dir, &meta.snapshot);
            // The files are exactly what hnsw_rs wrote (checked above), so this should not
            // fail; catch_unwind turns its asserts into an error in case it still does.
            let loaded = panic::catch_unwind(AssertUnwindSafe(|| {
                LoadedGraph::try_new(loader, |loader| {
                    loader.load_hnsw_with_dist::<f32, UnitCosine>(UnitCosine)
                })
            }));
            let cell = match loaded {
                Ok(Ok(cell)) => cell,
                Ok(Err(e)) => return Err(invalid_path(&graph_path, format!("{e:#}"))),
                Err(_) => return Err(invalid_path(&graph_path, "hnsw_rs could not read it")),
            };
            let graph = GraphHolder::Loaded(cell);
            // Cross-check graph and slot table: every point is a live or dead slot of its
            // own, every live non-zero slot is a point.
            let points = graph.with(|g| -> std::result::Result<usize, String> {
                let points = g.get_nb_point();
                if points == 0 {
                    return Err("empty graph".into());
                }
                let dims = g.get_point_indexation().get_data_dimension();
                if dims != meta.dims {
                    return Err(format!("{dims} dimensions, meta.json says {}", meta.dims));
                }
                let mut seen = vec![false; meta.slots];
                for point in g.get_point_indexation() {
                    let slot = point.get_origin_id();
                    match (seen.get(slot), state.get(slot)) {
                        (Some(false), Some(Slot::Live | Slot::Dead)) => seen[slot] = true,
                        _ => return Err(format!("point with unexpected data id {slot}")),
                    }
                }
                let live_points = state.iter().filter(|s| **s == Slot::Live).count();
                let live_seen = (0..meta.slots)
                    .filter(|&s| seen[s] && state[s] == Slot::Live)
                    .count();
                if live_seen != live_points {
                    return Err(format!(
                        "{live_seen} live points, the slot table has {live_points}"
                    ));
                }
                Ok(points)
            });
            let points = points.map_err(|m| invalid_path(&graph_path, m))?;
            if points != meta.graph_points {
                return Err(invalid_path(
                    &graph_path,
                    format!("{points} points, meta.json says {}", meta.graph_points),
                ));
            }
            let live_points = state.iter().filter(|s| **s == Slot::Live).count();
            Ok(VectorIndex {
                dims: meta.dims,
                params,
                ids: ids.ids,
                slot_of,
                zeros: ids.zero.len(),
                store: Store::Graph(GraphStore {
                    graph,
                    state,
                    points,
                    dead: points - live_points,
                }),
            })
        }
    }
}

/// Live id → slot, rejecting empty or repeated live ids.
fn slot_map(
    ids: &[String],
    live: impl Fn(usize) -> bool,
) -> std::result::Result<HashMap<String, usize>, String> {
    let mut map = HashMap::with_capacity(ids.len());
    for (slot, id) in ids.iter().enumerate() {
        if !live(slot) {
            continue;
        }
        if id.is_empty() || map.insert(id.clone(), slot).is_some() {
            return Err(format!("bad or repeated chunk id {id:?} at slot {slot}"));
        }
    }
    Ok(map)
}

/// Writes `bytes` to `dir/name` and fsyncs it.
fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<FileSum> {
    let path = dir.join(name);
    let mut file = File::create(&path).map_err(|e| Error::io(&path, e))?;
    file.write_all(bytes).map_err(|e| Error::io(&path, e))?;
    file.sync_all().map_err(|e| Error::io(&path, e))?;
    Ok(FileSum {
        name: name.to_string(),
        len: bytes.len() as u64,
        sha256: hex(&Sha256::digest(bytes)),
    })
}

fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Length and sha256 of a file.
fn hash_file(path: &Path) -> Result<(u64, String)> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((len, hex(&hasher.finalize())))
}

/// Checks a file's length and checksum against `meta.json` without keeping its bytes.
fn verify_file(path: &Path, sum: &FileSum) -> Result<()> {
    check_len(path, sum)?;
    let (len, sha256) = hash_file(path)?;
    if len != sum.len || sha256 != sum.sha256 {
        return Err(invalid_path(path, "checksum mismatch (damaged file)"));
    }
    Ok(())
}

/// Reads a whole file, checked against `meta.json`.
fn read_checked(path: &Path, sum: &FileSum) -> Result<Vec<u8>> {
    check_len(path, sum)?;
    let bytes = fs::read(path).map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 != sum.len || hex(&Sha256::digest(&bytes)) != sum.sha256 {
        return Err(invalid_path(path, "checksum mismatch (damaged file)"));
    }
    Ok(bytes)
}

fn check_len(path: &Path, sum: &FileSum) -> Result<()> {
    let len = fs::metadata(path).map_err(|e| Error::io(path, e))?.len();
    if len != sum.len {
        return Err(invalid_path(
            path,
            format!(
                "{len} bytes, expected {} (partial or damaged file)",
                sum.len
            ),
        ));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A writer that hashes and counts what passes through it.
struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    len: u64,
}

impl<W: Write> HashingWriter<W> {
    fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
            len: 0,
        }
    }

    fn finish(self) -> (W, (u64, String)) {
        (self.inner, (self.len, hex(&self.hasher.finalize())))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic xorshift with a rough normal sampler.
    struct Rng(u64);

    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn uniform(&mut self) -> f32 {
            (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
        }
        fn normal(&mut self) -> f32 {
            (0..4).map(|_| self.uniform()).sum::<f32>() - 2.0
        }
    }

    /// `n` vectors around `clusters` random centres.
    fn clustered(n: usize, dims: usize, clusters: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut rng = Rng(seed);
        let centres: Vec<Vec<f32>> = (0..clusters)
            .map(|_| (0..dims).map(|_| rng.normal()).collect())
            .collect();
        (0..n)
            .map(|_| {
                let c = &centres[(rng.next_u64() % clusters as u64) as usize];
                let mut v: Vec<f32> = c.iter().map(|x| x + 0.6 * rng.normal()).collect();
                normalize(&mut v);
                v
            })
            .collect()
    }

    fn id(i: usize) -> String {
        format!("{i:032x}")
    }

    fn entries(vectors: &[Vec<f32>]) -> Vec<(String, Vec<f32>)> {
        vectors
            .iter()
            .enumerate()
            .map(|(i, v)| (id(i), v.clone()))
            .collect()
    }

    fn exact_params() -> VectorParams {
        VectorParams {
            exact_threshold: usize::MAX,
            ..VectorParams::default()
        }
    }

    fn hnsw_params() -> VectorParams {
        VectorParams {
            exact_threshold: 1,
            ..VectorParams::default()
        }
    }

    fn ids_of(hits: &[(String, f32)]) -> Vec<String> {
        hits.iter().map(|(id, _)| id.clone()).collect()
    }

    #[test]
    fn index_is_send_and_sync() {
        fn assert<T: Send + Sync>() {}
        assert::<VectorIndex>();
    }

    #[test]
    fn exact_and_hnsw_agree_on_small_data() {
        let data = clustered(3000, 64, 30, 7);
        let exact = VectorIndex::build(64, entries(&data), &exact_params()).unwrap();
        let hnsw = VectorIndex::build(64, entries(&data), &hnsw_params()).unwrap();
        assert!(!exact.is_hnsw() && hnsw.is_hnsw());
        assert_eq!((exact.len(), hnsw.len()), (3000, 3000));
        let queries = clustered(100, 64, 30, 99);
        let recall = |hnsw: &VectorIndex| {
            let mut found = 0;
            for q in &queries {
                let e = exact.search(q, 10);
                let h = hnsw.search(q, 10);
                assert_eq!((e.len(), h.len()), (10, 10));
                assert!(e.windows(2).all(|w| w[0].1 >= w[1].1), "sorted");
                assert!(h.windows(2).all(|w| w[0].1 >= w[1].1), "sorted");
                let e_ids = ids_of(&e);
                found += h.iter().filter(|(id, _)| e_ids.contains(id)).count();
                // Scores are the same cosine on both sides.
                for (id, score) in &h {
                    if let Some((_, s)) = e.iter().find(|(i, _)| i == id) {
                        assert!((s - score).abs() < 1e-4, "{s} vs {score}");
                    }
                }
            }
            found as f64 / 1000.0
        };
        // Dense, equidistant blobs: the hard case for a graph (the 768-d bench gets 1.000).
        let at_default = recall(&hnsw);
        assert!(at_default >= 0.94, "recall {at_default}");
        let mut hnsw = hnsw;
        hnsw.set_ef_search(400);
        let wide = recall(&hnsw);
        assert!(wide >= 0.99 && wide >= at_default, "recall {wide}");
        // A stored vector finds itself first in both.
        for i in [0, 1234, 2999] {
            assert_eq!(exact.search(&data[i], 1)[0].0, id(i));
            let (top, score) = &hnsw.search(&data[i], 1)[0];
            assert_eq!(top, &id(i));
            assert!((score - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn tombstones_are_never_returned() {
        let data = clustered(2000, 32, 20, 3);
        for params in [exact_params(), hnsw_params()] {
            let mut index = VectorIndex::build(32, entries(&data), &params).unwrap();
            for i in (0..2000).step_by(3) {
                assert!(index.remove(&id(i)));
            }
            assert!(!index.remove(&id(0)), "already removed");
            assert!(!index.remove("missing"));
            assert_eq!(index.len(), 2000 - 667);
            assert!(!index.contains(&id(3)) && index.contains(&id(4)));
            let mut live: Vec<&str> = index.ids().collect();
            live.sort_unstable();
            let expected: Vec<String> = (0..2000).filter(|i| i % 3 != 0).map(id).collect();
            assert_eq!(live, expected);
            for q in clustered(50, 32, 20, 11).iter().chain(&data[..30]) {
                let hits = index.search(q, 25);
                assert_eq!(hits.len(), 25);
                for (hit, _) in &hits {
                    let i = usize::from_str_radix(hit, 16).unwrap();
                    assert_ne!(i % 3, 0, "tombstone {hit} returned");
                }
            }
            // A third of the graph is tombstoned: past the 20% default.
            assert_eq!(index.needs_rebuild(), index.is_hnsw());
        }
    }

    #[test]
    fn removing_and_re_adding_an_id_works() {
        let data = clustered(500, 16, 5, 5);
        for params in [exact_params(), hnsw_params()] {
            let mut index = VectorIndex::build(16, entries(&data), &params).unwrap();
            let target = data[42].clone();
            assert_eq!(index.search(&target, 1)[0].0, id(42));
            assert!(index.remove(&id(42)));
            assert!(index.search(&target, 500).iter().all(|(i, _)| i != &id(42)));
            index.insert(id(42), target.clone()).unwrap();
            assert_eq!(index.len(), 500);
            assert_eq!(index.search(&target, 1)[0].0, id(42));
            // Insert of an existing id replaces its vector.
            let other = data[7].clone();
            index.insert(id(42), other.clone()).unwrap();
            assert_eq!(index.len(), 500);
            let hits = index.search(&other, 2);
            assert_eq!(
                hits.iter().filter(|(i, _)| i == &id(42)).count(),
                1,
                "{hits:?}"
            );
            assert!(index.search(&target, 1)[0].0 != id(42) || target == other);
        }
    }

    #[test]
    fn save_load_round_trip_keeps_results_and_tag() {
        let data = clustered(1500, 24, 15, 9);
        let queries = clustered(20, 24, 15, 10);
        for params in [exact_params(), hnsw_params()] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("vectors");
            assert!(VectorIndex::load(&dir).unwrap().is_none(), "absent");
            let mut index = VectorIndex::build(24, entries(&data), &params).unwrap();
            index.remove(&id(3));
            index.insert(id(5000), vec![0.0; 24]).unwrap();
            index.save(&dir, 41).unwrap();
            index.insert(id(6000), data[0].clone()).unwrap();
            index.save(&dir, 42).unwrap();
            // Only the newest snapshot survives.
            let names: Vec<String> = fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            assert!(names.iter().all(|n| n == META || n.starts_with("s000042-")));
            assert_eq!(
                names.len(),
                if index.is_hnsw() { 4 } else { 3 },
                "{names:?}"
            );

            let (loaded, tag) = VectorIndex::load(&dir).unwrap().unwrap();
            assert_eq!(tag, 42);
            assert_eq!(loaded.len(), index.len());
            assert_eq!(loaded.dims(), 24);
            assert_eq!(loaded.is_hnsw(), index.is_hnsw());
            assert_eq!(loaded.params(), index.params());
            assert_eq!(loaded.needs_rebuild(), index.needs_rebuild());
            for q in &queries {
                let (a, b) = (index.search(q, 10), loaded.search(q, 10));
                assert_eq!(ids_of(&a), ids_of(&b));
            }
            assert!(loaded
                .search(&data[3], 1500)
                .iter()
                .all(|(i, _)| i != &id(3)));
            assert_eq!(loaded.search(&data[0], 2).len(), 2);
        }
    }

    #[test]
    fn insert_and_remove_after_load() {
        let data = clustered(1200, 32, 12, 21);
        let tmp = tempfile::tempdir().unwrap();
        let index = VectorIndex::build(32, entries(&data[..1000]), &hnsw_params()).unwrap();
        index.save(tmp.path(), 1).unwrap();
        drop(index);
        let (mut index, _) = VectorIndex::load(tmp.path()).unwrap().unwrap();
        // Half through the parallel batch path (with a repeated id), half one by one.
        let mut batch: Vec<(String, Vec<f32>)> =
            (1000..1100).map(|i| (id(i), data[i].clone())).collect();
        batch.insert(0, (id(1050), data[0].clone()));
        let mut bad = batch.clone();
        bad.push((id(5), vec![1.0; 3]));
        assert!(index.extend(bad).is_err());
        assert_eq!(index.len(), 1000, "a failed extend changes nothing");
        index.extend(batch).unwrap();
        for (i, v) in data.iter().enumerate().skip(1100) {
            index.insert(id(i), v.clone()).unwrap();
        }
        assert!(index.remove(&id(10)));
        assert_eq!(index.len(), 1199);
        let mut top1 = 0;
        for i in (1000..1200).step_by(5) {
            top1 += usize::from(index.search(&data[i], 1)[0].0 == id(i));
        }
        assert!(top1 >= 38, "{top1}/40 new vectors find themselves");
        assert!(index
            .search(&data[10], 1200)
            .iter()
            .all(|(i, _)| i != &id(10)));
        // And the grown index saves and loads again.
        index.save(tmp.path(), 2).unwrap();
        let (again, tag) = VectorIndex::load(tmp.path()).unwrap().unwrap();
        assert_eq!((again.len(), tag), (1199, 2));
        assert_eq!(again.search(&data[1100], 1)[0].0, id(1100));
    }

    #[test]
    fn damaged_files_are_errors_naming_the_file() {
        let data = clustered(800, 16, 8, 4);
        for params in [exact_params(), hnsw_params()] {
            let tmp = tempfile::tempdir().unwrap();
            let index = VectorIndex::build(16, entries(&data), &params).unwrap();
            index.save(tmp.path(), 7).unwrap();
            let meta = read_meta(&tmp.path().join(META)).unwrap().unwrap();
            for sum in &meta.files {
                let path = tmp.path().join(&sum.name);
                let original = fs::read(&path).unwrap();
                // A flipped byte, then a truncation.
                let mut flipped = original.clone();
                let mid = flipped.len() / 2;
                flipped[mid] ^= 0x55;
                fs::write(&path, &flipped).unwrap();
                let err = VectorIndex::load(tmp.path()).unwrap_err();
                assert!(err.to_string().contains(&sum.name), "{err}");
                fs::write(&path, &original[..original.len() - 3]).unwrap();
                let err = VectorIndex::load(tmp.path()).unwrap_err();
                assert!(err.to_string().contains(&sum.name), "{err}");
                fs::write(&path, &original).unwrap();
                assert!(VectorIndex::load(tmp.path()).unwrap().is_some());
            }
            fs::remove_file(tmp.path().join(&meta.files[1].name)).unwrap();
            let err = VectorIndex::load(tmp.path()).unwrap_err();
            assert!(err.to_string().contains(&meta.files[1].name), "{err}");
            fs::write(tmp.path().join(META), "{\"format\": 1, \"tag\"").unwrap();
            let err = VectorIndex::load(tmp.path()).unwrap_err();
            assert!(err.to_string().contains(META), "{err}");
        }
    }

    #[test]
    fn zero_vectors_never_panic() {
        let mut data = clustered(300, 8, 3, 8);
        data[5] = vec![0.0; 8];
        data[6] = vec![0.0; 8];
        let zero = vec![0.0f32; 8];
        for params in [exact_params(), hnsw_params()] {
            let mut index = VectorIndex::build(8, entries(&data), &params).unwrap();
            assert!(index.search(&zero, 10).is_empty(), "zero query");
            assert!(index.search(&[f32::NAN; 8], 10).is_empty());
            assert!(index.search(&[1.0; 7], 10).is_empty(), "wrong length");
            let hits = index.search(&data[0], 300);
            assert_eq!(hits.len(), 300);
            for z in [id(5), id(6)] {
                let (_, score) = hits.iter().find(|(i, _)| i == &z).unwrap();
                assert_eq!(*score, 0.0);
            }
            // Zero vectors rank below positive matches and above negative ones.
            let first_zero = hits.iter().position(|(_, s)| *s == 0.0).unwrap();
            assert!(hits[..first_zero].iter().all(|(_, s)| *s > 0.0));
            assert!(hits[first_zero + 2..].iter().all(|(_, s)| *s <= 0.0));
            assert!(index.search(&data[0], 10).iter().all(|(_, s)| *s > 0.0));
            index.insert(id(999), zero.clone()).unwrap();
            assert!(index.remove(&id(5)));
            assert_eq!(index.search(&data[0], 1000).len(), 300);
            let tmp = tempfile::tempdir().unwrap();
            index.save(tmp.path(), 3).unwrap();
            let (loaded, _) = VectorIndex::load(tmp.path()).unwrap().unwrap();
            assert_eq!(loaded.search(&data[0], 1000).len(), 300);
        }
        // All-zero input never makes an empty graph.
        let all_zero = vec![(id(1), zero.clone()), (id(2), zero.clone())];
        let index = VectorIndex::build(8, all_zero, &hnsw_params()).unwrap();
        assert!(!index.is_hnsw());
        assert_eq!(index.search(&data[0], 5).len(), 2);
    }

    #[test]
    fn k_larger_than_len_returns_every_live_vector() {
        let data = clustered(120, 16, 4, 12);
        for params in [exact_params(), hnsw_params()] {
            let mut index = VectorIndex::build(16, entries(&data), &params).unwrap();
            assert_eq!(index.search(&data[1], 1000).len(), 120);
            assert_eq!(index.search(&data[1], 0).len(), 0);
            for i in 0..100 {
                index.remove(&id(i));
            }
            let hits = index.search(&data[1], 1000);
            assert_eq!(hits.len(), 20);
            assert!(hits
                .iter()
                .all(|(i, _)| usize::from_str_radix(i, 16).unwrap() >= 100));
        }
        let empty = VectorIndex::build(16, Vec::new(), &VectorParams::default()).unwrap();
        assert!(empty.is_empty() && empty.search(&data[0], 5).is_empty());
    }

    #[test]
    fn bad_vectors_are_rejected_and_leave_the_index_unchanged() {
        let data = clustered(50, 8, 2, 1);
        let mut index = VectorIndex::build(8, entries(&data), &exact_params()).unwrap();
        let err = index.insert(id(3), vec![1.0; 7]).unwrap_err();
        assert!(err.to_string().contains(&id(3)), "{err}");
        assert!(index.insert(id(3), vec![f32::INFINITY; 8]).is_err());
        assert_eq!(index.search(&data[3], 1)[0].0, id(3), "old vector kept");
        let bad = vec![(id(1), vec![0.5; 9])];
        assert!(VectorIndex::build(8, bad, &exact_params()).is_err());
        assert!(VectorIndex::build(0, Vec::new(), &exact_params()).is_err());
    }

    #[test]
    fn representation_follows_size() {
        let data = clustered(400, 8, 4, 2);
        let params = VectorParams {
            exact_threshold: 300,
            ..VectorParams::default()
        };
        let mut index = VectorIndex::build(8, entries(&data[..299]), &params).unwrap();
        assert!(!index.is_hnsw() && !index.needs_rebuild());
        index.insert(id(299), data[299].clone()).unwrap();
        assert!(index.needs_rebuild(), "exact at the threshold");
        let mut index = VectorIndex::build(8, entries(&data), &params).unwrap();
        assert!(index.is_hnsw() && !index.needs_rebuild());
        // Replacing 150 vectors tombstones 150 of 550 points (27% > 20%).
        for (i, v) in data.iter().enumerate().take(150) {
            index.insert(id(i), v.clone()).unwrap();
        }
        assert!(index.needs_rebuild(), "tombstones");
        let params = VectorParams {
            max_tombstone_fraction: 0.9,
            ..params
        };
        let mut index = VectorIndex::build(8, entries(&data), &params).unwrap();
        index.insert(id(1), vec![0.0; 8]).unwrap();
        assert!(!index.needs_rebuild());
        for i in 0..260 {
            index.remove(&id(i));
        }
        assert!(index.needs_rebuild(), "below half the threshold");
    }
}
