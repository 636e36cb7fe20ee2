//! The [`VectorIndex`] type: its two representations, building, updates and searches (see
//! the module docs of `index::vector`).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use hnsw_rs::hnsw::Hnsw;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::exact::exact_top_k;
use super::graph::{
    point_vector, to_point, Graph, GraphHolder, GraphStore, Slot, BUILD_BATCH, MAX_LAYERS,
};
use super::passages::{as_codes, Passages, Spill};
use super::HalfCosine;
use crate::codec::{self, quantize};
use crate::error::{Error, Result};
use crate::passage;
use crate::simd::l2_normalize as normalize;

/// How many times `k` chunks a search takes from the graph (or scan) by their own vectors
/// when the index holds passages, before their passages rescore them, so a chunk whose
/// best passage matches while its own vector ranks lower is still met. On LoCoMo (with
/// chunks' own embeddings as graph points, index format 10), 1 / 2 / 4 / 8 gave
/// vector-only recall@6 0.892 / 0.899 / 0.900 / 0.900 (hybrid 0.942 / 0.936 / 0.937 /
/// 0.937); 4 equals what the passages gave as graph points.
const PASSAGE_WIDEN: usize = 4;

/// Tuning of the vector index, from `benches/vector.rs` (2 shared cores). The exact scan's
/// p50 is 1.6 ms at 10k vectors but 3.7 ms at 20k and 21 ms at 50k, so graphs start at 10k.
/// M = 16. ef_construction and ef_search are chosen on real EmbeddingGemma vectors (3,729
/// chunks of SciFact, XQuAD en/es/zh and LoCoMo, 2,019 of their queries, made by
/// `benches/real_vectors.py`; recall@10 against an exact scan), where synthetic clusters
/// flattered a narrow build (2026-11-29):
///
/// | ef_construction | ef_search 96 | 128 | 192 | 256 | build, 100k synthetic |
/// |---|---|---|---|---|---|
/// | 64 | 0.972 | 0.976 | 0.984 | 0.987–0.991 | 2,537–2,617 vectors/s |
/// | 80 | 0.983 | 0.989 | **0.991** | 0.995 | **2,086/s** |
/// | 100 | 0.988 | 0.991 | 0.994 | 0.996 | ~1,600/s |
///
/// ef_search 192 costs ~1 ms more than 96 at 100k (p50 1.9 against 0.8 ms, synthetic).
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
            ef_construction: 80,
            ef_search: 192,
            max_tombstone_fraction: 0.2,
        }
    }
}

impl VectorParams {
    /// The same parameters with every field in a range hnsw_rs accepts (it exits the
    /// process for more than 256 links).
    pub(super) fn sanitized(&self) -> VectorParams {
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

/// An approximate (or, when small, exact) nearest-neighbour index over chunk embeddings,
/// with the passage vectors of long chunks beside it (`passages`).
pub struct VectorIndex {
    pub(super) dims: usize,
    pub(super) params: VectorParams,
    /// Slot → chunk id. Exact: slot = matrix row. HNSW: slot = the graph's data id; a
    /// tombstoned slot keeps an empty string.
    pub(super) ids: Vec<String>,
    /// Live chunk id → slot.
    pub(super) slot_of: HashMap<String, usize>,
    /// Live all-zero vectors (never returned before a real match; score 0).
    pub(super) zeros: usize,
    pub(super) store: Store,
    /// Passage vectors (ids `<chunk>#<n>`), never graph points.
    pub(super) passages: Passages,
}
pub(super) enum Store {
    /// Normalised rows, `ids.len() * dims` floats. Removal moves the last row into the hole.
    Exact {
        rows: Vec<f32>,
    },
    Graph(GraphStore),
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("kind", &self.kind())
            .field("dims", &self.dims)
            .field("len", &self.len())
            .field("passages", &self.passages.len())
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Kind {
    Exact,
    Hnsw,
}

impl VectorIndex {
    /// Builds an index over `entries` (chunk or passage id, embedding of `dims` floats). A
    /// repeated id keeps its last vector. Exact below `params.exact_threshold` searchable
    /// chunk vectors, HNSW (built on all cores) at or above it; passages are kept beside it.
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
        let (entries, nonzero, passages) = prepare(dims, entries)?;
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
                passages,
            });
        }

        let graph: Graph<'static> = Hnsw::new(
            params.m,
            searchable,
            MAX_LAYERS,
            params.ef_construction,
            HalfCosine,
        );
        let mut ids = Vec::with_capacity(entries.len());
        let mut state = Vec::with_capacity(entries.len());
        // Each vector becomes its f16 point as it is taken, so the floats are freed early.
        let mut data: Vec<(Vec<u16>, usize)> = Vec::with_capacity(searchable);
        for ((id, vector), nonzero) in entries.into_iter().zip(nonzero) {
            if nonzero {
                data.push((to_point(&vector), ids.len()));
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
            let refs: Vec<(&Vec<u16>, usize)> = batch.iter().map(|(v, s)| (v, *s)).collect();
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
            passages,
        })
    }

    /// [`build`](Self::build) from vectors gathered in their stored forms.
    pub(crate) fn build_stored(
        dims: usize,
        stored: Stored,
        params: &VectorParams,
    ) -> Result<VectorIndex> {
        let mut index = VectorIndex::build(dims, stored.chunks, params)?;
        index.passages.absorb(stored.passages);
        Ok(index)
    }

    /// [`extend`](Self::extend) with vectors gathered in their stored forms.
    pub(crate) fn extend_stored(&mut self, stored: Stored) -> Result<()> {
        self.extend(stored.chunks)?;
        self.passages.absorb(stored.passages);
        Ok(())
    }

    /// Adds (or replaces) the vector of chunk (or passage) `id`.
    pub fn insert(&mut self, id: String, mut vector: Vec<f32>) -> Result<()> {
        check_vector(&id, &vector, self.dims)?;
        if passage::is_passage(&id) {
            self.passages.insert(id, &vector);
            return Ok(());
        }
        let nonzero = normalize(&mut vector);
        if let Some((vector, slot)) = self.place(id, vector, nonzero) {
            if let Store::Graph(g) = &self.store {
                g.graph
                    .with(|graph| graph.insert_slice((&to_point(&vector), slot)));
            }
        }
        Ok(())
    }

    /// [`insert`](Self::insert) for many vectors at once (a repeated id keeps its last
    /// vector); new graph points are inserted on all cores. On error nothing is changed.
    pub fn extend(&mut self, entries: Vec<(String, Vec<f32>)>) -> Result<()> {
        let (entries, nonzero, passages) = prepare(self.dims, entries)?;
        self.passages.absorb(passages);
        let pending: Vec<(Vec<u16>, usize)> = entries
            .into_iter()
            .zip(nonzero)
            .filter_map(|((id, vector), nonzero)| self.place(id, vector, nonzero))
            .map(|(vector, slot)| (to_point(&vector), slot))
            .collect();
        if let Store::Graph(g) = &self.store {
            let refs: Vec<(&Vec<u16>, usize)> = pending.iter().map(|(v, s)| (v, *s)).collect();
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

    /// Removes chunk (or passage) `id`; false if it was not there. In an HNSW index the
    /// point stays in the graph as a tombstone that searches skip. A chunk's passages are
    /// removed by their own ids.
    pub fn remove(&mut self, id: &str) -> bool {
        if passage::is_passage(id) {
            return self.passages.remove(id);
        }
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

    /// The `k` live chunks most similar to `query`, as (chunk id, cosine similarity), best
    /// first (ties: smaller id first). Exactly `min(k, len())` results, except that a zero,
    /// non-finite or wrongly sized query returns nothing. HNSW results are approximate.
    ///
    /// A chunk with passages scores the best of its passages' cosines (its own vector, their
    /// centroid, only places it): the [`PASSAGE_WIDEN`]` × k` chunks nearest by their own
    /// vectors are rescored, then cut to `k`.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(String, f32)> {
        self.search_hiding(query, k, &HashSet::new())
    }

    /// [`search`](Self::search) as if the chunks in `hidden` were not there (the chunks a
    /// later delta removed or replaced, `layered`).
    pub(super) fn search_hiding(
        &self,
        query: &[f32],
        k: usize,
        hidden: &HashSet<String>,
    ) -> Vec<(String, f32)> {
        if k == 0 || self.slot_of.is_empty() || query.len() != self.dims {
            return Vec::new();
        }
        let mut q = query.to_vec();
        if q.iter().any(|x| !x.is_finite()) || !normalize(&mut q) {
            return Vec::new();
        }
        let fetch = match self.passages.is_empty() {
            true => k,
            false => k.saturating_mul(PASSAGE_WIDEN),
        };
        let skip = |slot: usize| !hidden.is_empty() && hidden.contains(&self.ids[slot]);
        let hits = match &self.store {
            Store::Exact { rows } => exact_top_k(rows, self.dims, &q, fetch, &skip),
            Store::Graph(g) => {
                let hidden = hidden.len().min(self.len());
                g.top_k(&q, fetch, self.params.ef_search, self.zeros, hidden, &skip)
            }
        };
        let mut out: Vec<(String, f32)> = hits
            .into_iter()
            .map(|hit| {
                let id = &self.ids[hit.slot];
                let best = self.passages.best(id, &q);
                (id.clone(), best.unwrap_or(hit.score))
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.truncate(k);
        out
    }

    /// Removes chunk `id`'s own vector and all its passages.
    pub(super) fn remove_chunk(&mut self, id: &str) {
        self.remove(id);
        self.passages.remove_chunk(id);
    }

    /// Moves `passages` in, replacing those with the same ids.
    pub(super) fn absorb_passages(&mut self, passages: Passages) {
        self.passages.absorb(passages);
    }

    /// The vectors of these chunks or passages, in order, `None` where there is none:
    /// chunks' normalised, passages' as their int8 form reads back. A graph's vectors are
    /// found in one pass over its points.
    pub fn vectors_of(&self, ids: &[&str]) -> Vec<Option<Vec<f32>>> {
        let mut out = vec![None; ids.len()];
        let mut wanted: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, id) in ids.iter().enumerate() {
            if passage::is_passage(id) {
                out[i] = self.passages.get(id);
            } else if let Some(&slot) = self.slot_of.get(*id) {
                wanted.entry(slot).or_default().push(i);
            }
        }
        self.for_each_live(|slot, vector| {
            for &i in wanted.get(&slot).into_iter().flatten() {
                out[i] = Some(vector.to_vec());
            }
        });
        out
    }

    /// Calls `f` with every live chunk slot and its normalised vector (all zeros for a
    /// zero vector; a graph point's as its f16 form reads back).
    fn for_each_live(&self, mut f: impl FnMut(usize, &[f32])) {
        match &self.store {
            Store::Exact { rows } => {
                for (slot, row) in rows.chunks_exact(self.dims).enumerate() {
                    f(slot, row);
                }
            }
            Store::Graph(g) => {
                g.graph.with(|graph| {
                    for point in graph.get_point_indexation() {
                        let slot = point.get_origin_id();
                        if g.state.get(slot) == Some(&Slot::Live) {
                            f(slot, &point_vector(point.get_v()));
                        }
                    }
                });
                let zero = vec![0.0; self.dims];
                for slot in slots_in(&g.state, Slot::Zero) {
                    f(slot, &zero);
                }
            }
        }
    }

    /// Every live vector, chunks' and passages', to build another index from.
    pub(super) fn into_stored(self) -> Stored {
        let mut chunks = Vec::with_capacity(self.len());
        self.for_each_live(|slot, vector| chunks.push((self.ids[slot].clone(), vector.to_vec())));
        Stored {
            chunks,
            passages: self.passages,
        }
    }

    /// Live chunk vectors (passages not counted).
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }

    /// Passage vectors kept beside the chunks'.
    pub fn passage_count(&self) -> usize {
        self.passages.len()
    }

    /// True when no chunk vector is live.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }

    /// Whether chunk (or passage) `id` has a live vector here.
    pub fn contains(&self, id: &str) -> bool {
        match passage::is_passage(id) {
            true => self.passages.contains(id),
            false => self.slot_of.contains_key(id),
        }
    }

    /// The live chunk ids (passages' not included), in no particular order.
    pub(super) fn chunk_ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.slot_of.keys().map(String::as_str)
    }

    /// The live chunk and passage ids, in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.slot_of
            .keys()
            .map(String::as_str)
            .chain(self.passages.ids())
    }

    /// Dimensions of every vector.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// True when searches walk an HNSW graph (false: exact scan).
    pub fn is_hnsw(&self) -> bool {
        matches!(self.store, Store::Graph(_))
    }

    /// The tuning in effect.
    pub fn params(&self) -> &VectorParams {
        &self.params
    }

    /// Changes the HNSW search width (no rebuild needed; saved with the index).
    pub fn set_ef_search(&mut self, ef_search: usize) {
        self.params.ef_search = ef_search.max(1);
    }

    pub(super) fn kind(&self) -> Kind {
        match self.store {
            Store::Exact { .. } => Kind::Exact,
            Store::Graph(_) => Kind::Hnsw,
        }
    }
}

/// A chunk id and its embedding.
type Entry = (String, Vec<f32>);

/// Vectors gathered from their stored bytes (`crate::codec`) for
/// [`VectorIndex::build_stored`] or [`VectorIndex::extend_stored`]: chunks' own as floats,
/// passages kept in their int8 form (widened to f32 first, a rebuild of 100k chunks held
/// 2.7 GB of passages it then quantised back).
pub(crate) struct Stored {
    pub(super) chunks: Vec<Entry>,
    pub(super) passages: Passages,
}

impl Stored {
    pub(crate) fn new(dims: usize) -> Stored {
        Stored {
            chunks: Vec::new(),
            passages: Passages::new(dims),
        }
    }

    /// Adds vector `id`, which must have the index's dimensions and finite values.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, id: String, vector: Vec<f32>) -> Result<()> {
        check_vector(&id, &vector, self.passages.dims())?;
        match passage::is_passage(&id) {
            true => self.passages.insert(id, &vector),
            false => self.chunks.push((id, vector)),
        }
        Ok(())
    }
}

/// [`Stored`] gathered one vector at a time from their stored bytes (`crate::codec`), the
/// passages into a [`Spill`] in the index's directory instead of memory: a rebuild takes a
/// whole index's vectors from the catalog this way.
pub(crate) struct Gathering {
    dir: PathBuf,
    chunks: Vec<Entry>,
    spill: Spill,
}

impl Gathering {
    /// Starts gathering vectors of `dims` dimensions for the index in `dir` (created if
    /// missing).
    pub(crate) fn new(dir: &Path, dims: usize) -> Result<Gathering> {
        fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let spill = Spill::create(dir, dims).map_err(|e| spill_error(dir, e))?;
        Ok(Gathering {
            dir: dir.to_path_buf(),
            chunks: Vec::new(),
            spill,
        })
    }

    /// Adds vector `id` from its stored bytes; the error names it. A chunk's passages come
    /// one after another.
    pub(crate) fn push(&mut self, id: &str, bytes: &[u8]) -> Result<()> {
        let is_passage = passage::is_passage(id);
        let pushed = match codec::int8_parts(bytes) {
            Some((inv_norm, codes)) if is_passage => self.spill.push(id, inv_norm, as_codes(codes)),
            _ => {
                let vector = codec::decode(bytes).ok_or_else(|| {
                    invalid(&format!("vector {id}"), "neither f32 nor int8 bytes".into())
                })?;
                check_vector(id, &vector, self.spill.dims())?;
                if !is_passage {
                    self.chunks.push((id.to_string(), vector));
                    return Ok(());
                }
                let (inv_norm, codes) = quantize(&vector);
                self.spill.push(id, inv_norm, &codes)
            }
        };
        pushed.map_err(|e| spill_error(&self.dir, e))
    }

    /// The vectors gathered.
    pub(crate) fn finish(self) -> Result<Stored> {
        let passages = self.spill.finish().map_err(|e| spill_error(&self.dir, e))?;
        Ok(Stored {
            chunks: self.chunks,
            passages,
        })
    }
}

/// A spill's error: what is wrong with a vector, or the directory's I/O failing.
fn spill_error(dir: &Path, err: std::io::Error) -> Error {
    match err.kind() {
        std::io::ErrorKind::InvalidData => invalid_path(dir, err),
        _ => Error::io(dir, err),
    }
}

/// Drops all but the last entry of each id, checks every vector and normalises it; the
/// flags say which chunk vectors are non-zero. Passages come back apart, quantised.
pub(super) fn prepare(
    dims: usize,
    entries: Vec<(String, Vec<f32>)>,
) -> Result<(Vec<Entry>, Vec<bool>, Passages)> {
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
    let entries: Vec<(String, Vec<f32>)> = entries
        .into_iter()
        .zip(keep)
        .filter_map(|(entry, keep)| keep.then_some(entry))
        .collect();
    // Passages are quantised as they are (their scale does not matter), never normalised.
    let (passage_entries, mut entries): (Vec<Entry>, Vec<Entry>) = entries
        .into_iter()
        .partition(|(id, _)| passage::is_passage(id));
    let nonzero = entries
        .par_iter_mut()
        .map(|(id, vector)| {
            check_vector(id, vector, dims)?;
            Ok(normalize(vector))
        })
        .collect::<Result<_>>()?;
    let mut passages = Passages::new(dims);
    for (id, vector) in passage_entries {
        check_vector(&id, &vector, dims)?;
        passages.insert(id, &vector);
    }
    Ok((entries, nonzero, passages))
}

/// Whether `searchable` non-zero vectors call for a graph.
pub(super) fn wants_graph(searchable: usize, params: &VectorParams) -> bool {
    searchable > 0 && searchable >= params.exact_threshold
}

pub(super) fn slots_in(state: &[Slot], wanted: Slot) -> Vec<usize> {
    state
        .iter()
        .enumerate()
        .filter(|(_, s)| **s == wanted)
        .map(|(slot, _)| slot)
        .collect()
}

/// Rejects vectors the index cannot hold (they would mean a catalog/embedder mismatch).
pub(super) fn check_vector(id: &str, vector: &[f32], dims: usize) -> Result<()> {
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

pub(super) fn invalid(what: &str, message: String) -> Error {
    Error::Corrupt {
        path: PathBuf::from(what),
        message,
    }
}

pub(super) fn invalid_path(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Corrupt {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}
