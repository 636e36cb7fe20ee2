//! The vector side of hybrid search: top-k chunks by cosine similarity to a query embedding.
//!
//! Two representations behind one type, chosen by size:
//!
//! - **exact** (fewer than [`VectorParams::exact_threshold`] searchable vectors): one
//!   contiguous row-major `f32` matrix of L2-normalised rows; a search is a dot product per
//!   row (both cores via rayon once the matrix is large) and a bounded heap. Always correct,
//!   and below the threshold it is as fast as a graph walk.
//! - **HNSW** (at or above the threshold): an `hnsw_rs` graph of f16 points with the
//!   [`HalfCosine`] distance, built in parallel (`graph`). Removals are tombstones (the
//!   graph cannot delete); searches over-fetch and drop them.
//!   [`VectorIndex::needs_rebuild`] says when tombstones pile up or the size no longer
//!   suits the representation; the caller then rebuilds from the catalog.
//!
//! Vectors are keyed by chunk id and normalised on the way in, so scores are cosines even
//! when the embedder's norm is off by a rounding error. An all-zero vector has no
//! direction: a zero query returns nothing, and a zero stored vector scores 0 against
//! every query (it is kept out of the graph, where any cosine distance is undefined).
//!
//! Passage vectors (`crate::passage`) are not points: they sit beside the chunks as int8
//! rows and rescore the chunks a search found (`passages`).
//!
//! A sync that changes a few chunks does not rewrite the index: it appends a delta (the
//! chunks removed, the vectors added), and searches read the saved index and its deltas as
//! one ([`Layered`]) until the writer folds them into a new snapshot.
//!
//! The pieces: `index` (the [`VectorIndex`] type: building, updating, searching), `exact`
//! (the matrix scan and its top-k heap), `graph` (the hnsw_rs graph), `passages` (the int8
//! passage rows), `snapshot` (the checksummed files on disk; `checked`, each file written
//! and read against its checksum), `delta` (one sync's change
//! as a file), `layered` (a snapshot and its deltas, as searches read them);
//! [`HalfCosine`], the distance the graph walks with, is here.
mod checked;
mod delta;
mod exact;
mod graph;
mod index;
mod layered;
mod passages;
mod snapshot;
#[cfg(test)]
mod tests;

use hnsw_rs::anndists::dist::distances::Distance;

use crate::simd::{dot, dot_f16};
pub(crate) use index::{Gathering, Stored};
pub use index::{VectorIndex, VectorParams};
pub use layered::Layered;

/// Cosine distance between two unit vectors kept as f16 bits (`graph`'s points):
/// `1 - a·b`, accumulated in f32 and clamped to `[0, 2]` so rounding can never produce
/// the negative distance hnsw_rs asserts against.
///
/// Its path, `memoria::index::vector::HalfCosine`, is part of the on-disk format: hnsw_rs
/// records the distance's type name in every graph dump and refuses to load a dump whose
/// name differs, so moving this type would make every saved graph rebuild once.
#[derive(Debug, Default, Clone, Copy)]
pub struct HalfCosine;

impl Distance<u16> for HalfCosine {
    #[inline]
    fn eval(&self, a: &[u16], b: &[u16]) -> f32 {
        (1.0 - dot_f16(a, b)).clamp(0.0, 2.0)
    }
}

/// Cosine distance between unit f32 vectors, `1 - a·b` clamped to `[0, 2]`: the distance of
/// format 3's f32 graphs, kept to read them (`snapshot`). Its path,
/// `memoria::index::vector::UnitCosine`, is recorded in those dumps.
#[derive(Debug, Default, Clone, Copy)]
pub struct UnitCosine;

impl Distance<f32> for UnitCosine {
    #[inline]
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).clamp(0.0, 2.0)
    }
}
