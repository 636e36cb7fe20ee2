//! Passage vectors beside the graph: int8 rows grouped by chunk, read only to rescore the
//! chunks a search already found.
//!
//! A long chunk also has one vector per few-line window (`crate::passage`). Short bullet
//! notes give eight or more passages per chunk, so keeping them as graph points made the
//! index (on disk and in memory) ~9× its chunks' size and its first load seconds long. They
//! are kept here instead, each as 768 signed bytes and one `f32`, a quarter of a float row:
//! the search walks the graph by chunk vectors, then scores each chunk it found by the
//! best of its passages' cosines ([`super::VectorIndex::search`]).
//!
//! **Quantisation** (`crate::codec`, the catalog's form for passages too): a vector `v` is
//! kept as `q = round(127 · v / max|v|)` and `1 / ‖q‖`, so `q · u / ‖q‖` is the cosine of
//! the stored direction with a unit query `u` (rounding moves a cosine by ~0.001 at 768
//! dimensions; the table test bounds it). An all-zero vector keeps zeros and scores 0.
//!
//! **File** (`<snapshot>.passages`, checksummed with the snapshot's other files):
//! `MPV1`, dims (u32 LE), count (u32 LE), then per passage: id length (u16 LE), id (UTF-8),
//! `1/‖q‖` (f32 LE), `dims` bytes of `q`.

use std::collections::HashMap;

use crate::codec::quantize;
use crate::passage;
use crate::simd::dot_i8_f32;

const MAGIC: &[u8; 4] = b"MPV1";

/// One stored passage vector.
struct Packed {
    /// The passage's full id (`<chunk>#<n>`).
    id: String,
    inv_norm: f32,
    codes: Box<[i8]>,
}

/// The passage vectors of an index, by chunk.
pub(super) struct Passages {
    dims: usize,
    by_chunk: HashMap<String, Vec<Packed>>,
    count: usize,
}

impl Passages {
    pub(super) fn new(dims: usize) -> Passages {
        Passages {
            dims,
            by_chunk: HashMap::new(),
            count: 0,
        }
    }

    /// Stores (or replaces) passage `id`'s vector, which must have `dims` finite values.
    pub(super) fn insert(&mut self, id: String, vector: &[f32]) {
        let (inv_norm, codes) = quantize(vector);
        self.replace(Packed {
            id,
            inv_norm,
            codes,
        });
    }

    /// Stores (or replaces) passage `id` from its int8 form (`crate::codec`) as it is; the
    /// error says what is wrong with it.
    pub(super) fn insert_int8(
        &mut self,
        id: String,
        inv_norm: f32,
        codes: &[u8],
    ) -> Result<(), String> {
        if codes.len() != self.dims {
            return Err(format!(
                "passage {id} has {} dimensions, the index has {}",
                codes.len(),
                self.dims
            ));
        }
        self.replace(Packed {
            id,
            inv_norm,
            codes: codes.iter().map(|&b| b as i8).collect(),
        });
        Ok(())
    }

    /// Moves `other`'s passages in, replacing those with the same ids.
    pub(super) fn absorb(&mut self, other: Passages) {
        for packed in other.by_chunk.into_values().flatten() {
            self.replace(packed);
        }
    }

    fn replace(&mut self, packed: Packed) {
        self.remove(&packed.id);
        self.push(packed);
    }

    /// Adds a passage known not to be stored yet.
    fn push(&mut self, packed: Packed) {
        self.count += 1;
        self.by_chunk
            .entry(passage::chunk_of(&packed.id).to_string())
            .or_default()
            .push(packed);
    }

    /// Removes passage `id`; false if it was not there.
    pub(super) fn remove(&mut self, id: &str) -> bool {
        let chunk = passage::chunk_of(id);
        let Some(list) = self.by_chunk.get_mut(chunk) else {
            return false;
        };
        let Some(at) = list.iter().position(|p| p.id == id) else {
            return false;
        };
        list.swap_remove(at);
        if list.is_empty() {
            self.by_chunk.remove(chunk);
        }
        self.count -= 1;
        true
    }

    /// Passage `id`'s vector as its int8 form reads back (`crate::codec`).
    pub(super) fn get(&self, id: &str) -> Option<Vec<f32>> {
        let list = self.by_chunk.get(passage::chunk_of(id))?;
        let p = list.iter().find(|p| p.id == id)?;
        Some(p.codes.iter().map(|&c| f32::from(c) * p.inv_norm).collect())
    }

    /// Removes every passage of chunk `chunk`.
    pub(super) fn remove_chunk(&mut self, chunk: &str) {
        if let Some(list) = self.by_chunk.remove(chunk) {
            self.count -= list.len();
        }
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.by_chunk
            .get(passage::chunk_of(id))
            .is_some_and(|list| list.iter().any(|p| p.id == id))
    }

    /// Every stored passage id, in no particular order.
    pub(super) fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.by_chunk
            .values()
            .flat_map(|list| list.iter().map(|p| p.id.as_str()))
    }

    pub(super) fn len(&self) -> usize {
        self.count
    }

    pub(super) fn dims(&self) -> usize {
        self.dims
    }

    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The best cosine of chunk `chunk`'s passages with the unit vector `query`; `None`
    /// when it has none.
    pub(super) fn best(&self, chunk: &str, query: &[f32]) -> Option<f32> {
        self.by_chunk.get(chunk).and_then(|list| {
            list.iter()
                .map(|p| dot_i8_f32(&p.codes, query) * p.inv_norm)
                .reduce(f32::max)
        })
    }

    /// The file's bytes (see the module docs).
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + self.count * (self.dims + 48));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.dims as u32).to_le_bytes());
        out.extend_from_slice(&(self.count as u32).to_le_bytes());
        for p in self.by_chunk.values().flatten() {
            out.extend_from_slice(&(p.id.len() as u16).to_le_bytes());
            out.extend_from_slice(p.id.as_bytes());
            out.extend_from_slice(&p.inv_norm.to_le_bytes());
            out.extend(p.codes.iter().map(|&c| c as u8));
        }
        out
    }

    /// Reads a file written by [`encode`](Self::encode) for an index of `dims` dimensions;
    /// the error says what is wrong with it.
    pub(super) fn decode(bytes: &[u8], dims: usize) -> Result<Passages, String> {
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8], String> {
            let part = bytes
                .get(at..at + n)
                .ok_or_else(|| format!("truncated at byte {at}"))?;
            at += n;
            Ok(part)
        };
        if take(4)? != MAGIC {
            return Err("not a passage vector file".into());
        }
        let u32_at = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let file_dims = u32_at(take(4)?);
        if file_dims != dims {
            return Err(format!("{file_dims} dimensions, the index has {dims}"));
        }
        let count = u32_at(take(4)?);
        let mut passages = Passages::new(dims);
        for _ in 0..count {
            let len = take(2)?;
            let len = u16::from_le_bytes([len[0], len[1]]) as usize;
            let id = std::str::from_utf8(take(len)?)
                .map_err(|_| "a passage id is not UTF-8".to_string())?
                .to_string();
            if !passage::is_passage(&id) {
                return Err(format!("{id:?} is not a passage id"));
            }
            let inv_norm = f32::from_le_bytes(take(4)?.try_into().map_err(|_| "short read")?);
            if !inv_norm.is_finite() || inv_norm < 0.0 {
                return Err(format!("passage {id}: bad norm {inv_norm}"));
            }
            let codes = take(dims)?.iter().map(|&b| b as i8).collect();
            if passages.contains(&id) {
                return Err(format!("passage {id} is stored twice"));
            }
            passages.push(Packed {
                id,
                inv_norm,
                codes,
            });
        }
        if at != bytes.len() {
            return Err(format!("{} bytes after the last passage", bytes.len() - at));
        }
        Ok(passages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::l2_normalize;

    fn unit(seed: u64, dims: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut v: Vec<f32> = (0..dims)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        l2_normalize(&mut v);
        v
    }

    #[test]
    fn quantised_cosines_stay_within_rounding_of_f32() {
        // (dims, seeds): odd sizes exercise the dot's tail.
        for (dims, seeds) in [(768usize, 0..40u64), (13, 40..60), (1, 60..62), (8, 62..70)] {
            for seed in seeds {
                let (v, q) = (unit(seed, dims), unit(seed + 1000, dims));
                let exact: f32 = v.iter().zip(&q).map(|(a, b)| a * b).sum();
                let (inv_norm, codes) = quantize(&v);
                let got = dot_i8_f32(&codes, &q) * inv_norm;
                // Rounding error shrinks with the dimensions (it averages out).
                let bound = if dims >= 768 { 0.004 } else { 0.02 };
                assert!((got - exact).abs() < bound, "dims {dims}: {got} vs {exact}");
                let own = dot_i8_f32(&codes, &v) * inv_norm;
                assert!(own > 1.0 - bound / 4.0, "dims {dims}: {own} against itself");
            }
        }
        let (inv_norm, codes) = quantize(&[0.0; 5]);
        assert_eq!((inv_norm, dot_i8_f32(&codes, &[1.0; 5])), (0.0, 0.0));
    }

    #[test]
    fn stores_scores_and_round_trips_by_chunk() {
        let dims = 16;
        let mut p = Passages::new(dims);
        p.insert("a#1".into(), &unit(1, dims));
        p.insert("a#2".into(), &unit(2, dims));
        p.insert("b#1".into(), &unit(3, dims));
        p.insert("a#2".into(), &unit(4, dims)); // replaced, not added
        assert_eq!(p.len(), 3);
        assert!(p.contains("a#2") && !p.contains("a#3") && !p.contains("c#1"));
        // The best of a's passages is the one nearest the query.
        let best = p.best("a", &unit(4, dims)).unwrap();
        assert!(best > 0.99, "{best}");
        assert_eq!(p.best("c", &unit(4, dims)), None);

        let back = Passages::decode(&p.encode(), dims).unwrap();
        assert_eq!(back.len(), 3);
        let mut ids: Vec<&str> = back.ids().collect();
        ids.sort();
        assert_eq!(ids, ["a#1", "a#2", "b#1"]);
        assert_eq!(back.best("a", &unit(4, dims)), Some(best));

        assert!(p.remove("a#1") && !p.remove("a#1"));
        assert!(p.remove("a#2") && p.best("a", &unit(4, dims)).is_none());
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn damaged_files_are_errors() {
        let dims = 4;
        let mut p = Passages::new(dims);
        p.insert("a#1".into(), &[0.5, -0.5, 0.5, -0.5]);
        let good = p.encode();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..good.len() - 1].to_vec(), "truncated"),
            ([good.clone(), vec![0]].concat(), "after the last"),
            ([b"XXXX".as_slice(), &good[4..]].concat(), "not a passage"),
            (Passages::new(8).encode(), "8 dimensions"),
            (
                {
                    let mut b = good.clone();
                    b[8] = 2; // two passages announced, one written
                    b
                },
                "truncated",
            ),
            (
                {
                    let mut b = good.clone();
                    b[15] = b'x'; // "a#1" → "ax1": not a passage id
                    b
                },
                "not a passage id",
            ),
        ];
        for (bytes, want) in cases {
            let err = Passages::decode(&bytes, dims).err().unwrap();
            assert!(err.contains(want), "{err:?} should say {want:?}");
        }
    }
}
