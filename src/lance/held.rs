//! The vectors a node holds in memory: a small generation's chunk and passage vectors,
//! read whole from the store by its first vector search and searched in the process after
//! that, within one budget per process that every agent shares (the least recently
//! searched generation goes first).
//!
//! Without them every search read the vectors and passages it scored from the object
//! store again (LanceDB caches indexes and metadata, not data): about a hundred requests
//! per search for an agent of a thousand chunks. A generation large enough for a vector
//! index (module `indexes`) is searched through the index instead, and one that
//! would take more than half the budget is not held.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::codec;
use crate::simd;

/// One generation's vectors, as a search scores them.
#[derive(Default)]
pub(super) struct Held {
    /// Chunks' own vectors.
    own: Vec<(String, Vec<f32>)>,
    /// Passages' vectors, by their chunk.
    passages: HashMap<String, Vec<Codes>>,
}

/// A passage's vector as the store keeps it: the inverse of its codes' norm and its int8
/// codes (`crate::codec`), a quarter of f32's memory.
type Codes = (f32, Box<[i8]>);

impl Held {
    pub(super) fn new(
        own: Vec<(String, Vec<f32>)>,
        passages: impl IntoIterator<Item = (String, Vec<f32>)>,
    ) -> Held {
        let mut by_chunk: HashMap<String, Vec<Codes>> = HashMap::new();
        for (chunk, vector) in passages {
            by_chunk
                .entry(chunk)
                .or_default()
                .push(codec::quantize(&vector));
        }
        Held {
            own,
            passages: by_chunk,
        }
    }

    /// Bytes held, about.
    pub(super) fn bytes(&self) -> u64 {
        let vectors: usize = self
            .own
            .iter()
            .map(|(id, v)| id.len() + v.len() * 4)
            .chain(
                self.passages
                    .iter()
                    .map(|(id, vs)| id.len() + vs.iter().map(|(_, q)| q.len() + 4).sum::<usize>()),
            )
            .sum();
        vectors as u64
    }

    /// The `k` chunks nearest to `query` (unit length): the `fetch` nearest by their own
    /// vectors, each scored by its best passage where it has passages, as the store's
    /// query does.
    pub(super) fn nearest(&self, query: &[f32], k: usize, fetch: usize) -> Vec<(String, f32)> {
        let mut hits: Vec<(&str, f32)> = self
            .own
            .iter()
            .map(|(id, v)| (id.as_str(), unit_cosine(query, v)))
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        hits.truncate(fetch);
        let mut out: Vec<(String, f32)> = hits
            .into_iter()
            .map(|(id, own)| {
                let best = self.passages.get(id).and_then(|vs| {
                    vs.iter()
                        .filter(|(_, codes)| codes.len() == query.len())
                        .map(|(inv_norm, codes)| simd::dot_i8_f32(codes, query) * inv_norm)
                        .max_by(f32::total_cmp)
                });
                (id.to_string(), best.unwrap_or(own))
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.truncate(k);
        out
    }
}

/// The cosine of a unit-length `query` and `vector`.
pub(super) fn unit_cosine(query: &[f32], vector: &[f32]) -> f32 {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    match norm > 0.0 && vector.len() == query.len() {
        true => simd::dot(query, vector) / norm,
        false => 0.0,
    }
}

/// The generations held, least recently searched first out.
#[derive(Default)]
struct Holding {
    entries: HashMap<String, (Arc<Held>, u64)>,
    bytes: u64,
    clock: u64,
}

impl Holding {
    fn get(&mut self, key: &str) -> Option<Arc<Held>> {
        self.clock += 1;
        let now = self.clock;
        let (held, used) = self.entries.get_mut(key)?;
        *used = now;
        Some(held.clone())
    }

    fn keep(&mut self, key: &str, held: Arc<Held>, budget: u64) {
        let size = held.bytes();
        if size > budget / 2 {
            return;
        }
        self.clock += 1;
        if let Some((old, _)) = self.entries.insert(key.to_string(), (held, self.clock)) {
            self.bytes -= old.bytes();
        }
        self.bytes += size;
        while self.bytes > budget {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((gone, _)) = self.entries.remove(&oldest) {
                self.bytes -= gone.bytes();
            }
        }
    }
}

fn holding() -> std::sync::MutexGuard<'static, Holding> {
    static HOLDING: OnceLock<Mutex<Holding>> = OnceLock::new();
    HOLDING
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The generation `key` holds, when held (it becomes the most recently searched).
pub(super) fn get(key: &str) -> Option<Arc<Held>> {
    holding().get(key)
}

/// Holds `held` as generation `key` within `budget` bytes, letting the least recently
/// searched go; one that would take more than half the budget is not held.
pub(super) fn keep(key: &str, held: Arc<Held>, budget: u64) {
    holding().keep(key, held, budget)
}

/// Bytes held now, every agent together.
pub(super) fn bytes() -> u64 {
    holding().bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn nearest_scores_a_chunk_by_its_best_passage() {
        let held = Held::new(
            vec![
                ("a".into(), vec![1.0, 0.0]),
                ("b".into(), vec![0.8, 0.6]),
                ("c".into(), vec![0.0, 1.0]),
            ],
            [
                ("b".to_string(), vec![1.0, 0.0]),
                ("b".into(), vec![0.0, 1.0]),
            ],
        );
        let q = unit(&[1.0, 0.1]);
        // Fetching two: a and b by their own vectors; b's first passage equals a.
        let hits = held.nearest(&q, 2, 2);
        assert_eq!(hits[0].0, "a");
        assert_eq!(hits[1].0, "b");
        assert!((hits[0].1 - hits[1].1).abs() < 1e-6);
        // Fetching one leaves b out, however good its passage.
        assert_eq!(held.nearest(&q, 2, 1).len(), 1);
    }

    #[test]
    fn the_least_recently_searched_generation_goes_first() {
        let vector = |id: &str| Arc::new(Held::new(vec![(id.into(), vec![0.0; 100])], []));
        let budget = vector("x").bytes() * 5 / 2;
        let mut holding = Holding::default();
        holding.keep("1", vector("x"), budget);
        holding.keep("2", vector("y"), budget);
        assert!(holding.get("1").is_some());
        holding.keep("3", vector("z"), budget);
        assert!(
            holding.get("2").is_none(),
            "2 was the least recently searched"
        );
        assert!(holding.get("1").is_some() && holding.get("3").is_some());
        assert_eq!(holding.bytes, vector("x").bytes() * 2);
        // More than half the budget is never held.
        let big = Arc::new(Held::new(vec![("big".into(), vec![0.0; 400])], []));
        holding.keep("big", big, budget);
        assert!(holding.get("big").is_none());
    }
}
