//! The exact scan: every row's dot product with the query, the best `k` kept in a bounded
//! heap; on both cores once the matrix is large.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use rayon::prelude::*;

use crate::simd::dot;

/// Rows scored per rayon task in the exact scan.
const EXACT_BLOCK_ROWS: usize = 1024;
/// Below this many matrix elements the exact scan stays on the calling thread.
const EXACT_PARALLEL_MIN: usize = 1 << 21;

/// A search hit before ids are attached: ordered by score, then lower slot first.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hit {
    pub(super) score: f32,
    pub(super) slot: usize,
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
pub(super) struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Hit>>,
}

impl TopK {
    pub(super) fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    #[inline]
    pub(super) fn push(&mut self, hit: Hit) {
        if self.heap.len() < self.k {
            self.heap.push(Reverse(hit));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if hit > worst.0 {
                *worst = Reverse(hit);
            }
        }
    }

    pub(super) fn merge(mut self, other: TopK) -> TopK {
        for Reverse(hit) in other.heap {
            self.push(hit);
        }
        self
    }

    /// Best first.
    pub(super) fn into_sorted(self) -> Vec<Hit> {
        let mut hits: Vec<Hit> = self.heap.into_iter().map(|Reverse(h)| h).collect();
        hits.sort_unstable_by(|a, b| b.cmp(a));
        hits
    }
}

/// The best `k` rows of `rows` for the unit query `q`, leaving out the rows `skip` names.
pub(super) fn exact_top_k(
    rows: &[f32],
    dims: usize,
    q: &[f32],
    k: usize,
    skip: &(dyn Fn(usize) -> bool + Sync),
) -> Vec<Hit> {
    let scan = |first_row: usize, block: &[f32]| {
        let mut top = TopK::new(k);
        for (i, row) in block.chunks_exact(dims).enumerate() {
            if skip(first_row + i) {
                continue;
            }
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
