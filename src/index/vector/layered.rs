//! [`Layered`]: the vector index as a reader searches it, a saved snapshot and the deltas
//! written since (`delta`).
//!
//! The snapshot (graph or matrix, and passages) is shared behind an [`Arc`]: a reader that
//! already holds it and sees new deltas reads only those, so a sync of 1,000 chunks costs a
//! reader the delta, not the whole index. The deltas' chunks form a small exact index of
//! their own (`recent`; the writer folds deltas into a new snapshot before they outgrow an
//! exact scan), and the chunks they removed or replaced are hidden in the snapshot. A search
//! asks both for the best `k`, the snapshot skipping hidden chunks, and keeps the best `k`
//! of the two.

use std::collections::HashSet;
use std::sync::Arc;

use super::delta::Delta;
use super::index::{VectorIndex, VectorParams};
use crate::error::Result;

/// A snapshot and the deltas after it.
pub struct Layered {
    /// The saved snapshot's name (`meta.json`), to tell whether a reload can keep it.
    pub(super) snapshot: String,
    pub(super) base: Arc<VectorIndex>,
    /// Chunk ids the deltas removed or replaced: never answered from `base`.
    hidden: HashSet<String>,
    /// The deltas' chunks and passages, an exact index.
    recent: VectorIndex,
}

impl Layered {
    /// The snapshot `base` (named `snapshot`) with nothing after it.
    pub(super) fn new(snapshot: String, base: Arc<VectorIndex>) -> Result<Layered> {
        let params = VectorParams {
            exact_threshold: usize::MAX,
            ..base.params().clone()
        };
        Ok(Layered {
            recent: VectorIndex::build(base.dims(), Vec::new(), &params)?,
            snapshot,
            base,
            hidden: HashSet::new(),
        })
    }

    /// Applies the next delta: its removals first, then its chunks.
    pub(super) fn apply(&mut self, delta: Delta) -> Result<()> {
        for id in delta.removed {
            self.recent.remove_chunk(&id);
            self.hidden.insert(id);
        }
        self.recent.extend(delta.chunks)?;
        self.recent.absorb_passages(delta.passages);
        Ok(())
    }

    /// The `k` chunks most similar to `query`, as [`VectorIndex::search`] gives them.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(String, f32)> {
        if self.hidden.is_empty() && self.recent.is_empty() {
            return self.base.search(query, k);
        }
        let mut hits = self.base.search_hiding(query, k, &self.hidden);
        hits.extend(self.recent.search(query, k));
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        hits.truncate(k);
        hits
    }
}
