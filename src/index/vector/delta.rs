//! A delta: the change a sync made to the vectors since the snapshot's last save, as one
//! file beside the snapshot (pure: bytes in, bytes out).
//!
//! A small change to a large index used to cost a load and a save of the whole index
//! (graph, vectors, passages: at 100k chunks, 17–25 s of a 1,000-chunk sync). A delta
//! instead names the chunks whose vectors went away or were replaced, and carries the
//! vectors (own and passages) of the chunks added, so a sync writes what changed and a
//! reader that already holds the snapshot reads only the deltas (`layered`).
//!
//! **File** (`<snapshot>.d<tag>-<nanos>.delta`, listed with its length and CRC-32 in
//! `meta.json`): `MVD1`, dims (u32 LE), the removed chunk ids (count u32 LE, then per id:
//! length u16 LE and UTF-8), the added chunks (count u32 LE, then per chunk: id as above and
//! `dims` f32 LE), then the added passages in the passages file's form (`passages`).

use super::index::Stored;
use super::passages::Passages;
use crate::passage;

const MAGIC: &[u8; 4] = b"MVD1";

/// The change one sync made: chunks removed (or replaced: a replaced chunk is removed and
/// added), then chunks added with their vectors and their passages' vectors.
pub(super) struct Delta {
    /// Chunk ids whose vectors (own and passages) go away.
    pub(super) removed: Vec<String>,
    /// Chunk id and own vector, as embedded.
    pub(super) chunks: Vec<(String, Vec<f32>)>,
    /// The added chunks' passages.
    pub(super) passages: Passages,
}

impl Delta {
    /// The delta that removes `removed` and adds `added`. Every added chunk counts as
    /// removed too, so it replaces an older vector.
    pub(super) fn new(removed: Vec<String>, added: Stored) -> Delta {
        let mut removed = removed;
        removed.extend(added.chunks.iter().map(|(id, _)| id.clone()));
        removed.sort_unstable();
        removed.dedup();
        Delta {
            removed,
            chunks: added.chunks,
            passages: added.passages,
        }
    }

    /// The file's bytes (module docs).
    pub(super) fn encode(&self, dims: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.chunks.len() * (dims * 4 + 40));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(dims as u32).to_le_bytes());
        out.extend_from_slice(&(self.removed.len() as u32).to_le_bytes());
        for id in &self.removed {
            put_id(&mut out, id);
        }
        out.extend_from_slice(&(self.chunks.len() as u32).to_le_bytes());
        for (id, vector) in &self.chunks {
            put_id(&mut out, id);
            out.extend(vector.iter().flat_map(|x| x.to_le_bytes()));
        }
        out.extend(self.passages.encode());
        out
    }

    /// Reads a file written by [`encode`](Self::encode) for an index of `dims` dimensions;
    /// the error says what is wrong with it.
    pub(super) fn decode(bytes: &[u8], dims: usize) -> Result<Delta, String> {
        let mut at = Cursor { bytes, at: 0 };
        if at.take(4)? != MAGIC {
            return Err("not a vector delta file".into());
        }
        let file_dims = at.u32()?;
        if file_dims != dims {
            return Err(format!("{file_dims} dimensions, the index has {dims}"));
        }
        let removed = (0..at.u32()?)
            .map(|_| at.id())
            .collect::<Result<Vec<_>, _>>()?;
        let count = at.u32()?;
        let mut chunks = Vec::with_capacity(count.min(bytes.len() / (dims * 4).max(1)));
        for _ in 0..count {
            let id = at.id()?;
            let vector: Vec<f32> = at
                .take(dims * 4)?
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            if vector.iter().any(|x| !x.is_finite()) {
                return Err(format!("chunk {id}: a non-finite value"));
            }
            chunks.push((id, vector));
        }
        let passages = Passages::decode(&bytes[at.at..], dims)?;
        Ok(Delta {
            removed,
            chunks,
            passages,
        })
    }
}

/// Reads a delta file front to back.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let part = self
            .bytes
            .get(self.at..self.at + n)
            .ok_or_else(|| format!("truncated at byte {}", self.at))?;
        self.at += n;
        Ok(part)
    }

    fn u32(&mut self) -> Result<usize, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }

    /// A chunk id (never a passage's).
    fn id(&mut self) -> Result<String, String> {
        let len = self.take(2)?;
        let len = u16::from_le_bytes([len[0], len[1]]) as usize;
        let id = std::str::from_utf8(self.take(len)?).map_err(|_| "an id is not UTF-8")?;
        match id.is_empty() || passage::is_passage(id) {
            true => Err(format!("{id:?} is not a chunk id")),
            false => Ok(id.to_string()),
        }
    }
}

fn put_id(out: &mut Vec<u8>, id: &str) {
    out.extend_from_slice(&(id.len() as u16).to_le_bytes());
    out.extend_from_slice(id.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_damage() {
        let mut added = Stored::new(2);
        added.insert("bb".into(), vec![0.5, -0.5]).unwrap();
        added.insert("bb#1".into(), vec![1.0, 0.0]).unwrap();
        added.insert("cc".into(), vec![0.0, 1.0]).unwrap();
        let delta = Delta::new(vec!["aa".into(), "cc".into()], added);
        // Added chunks replace what was there.
        assert_eq!(delta.removed, ["aa", "bb", "cc"]);
        let bytes = delta.encode(2);
        let back = Delta::decode(&bytes, 2).unwrap();
        assert_eq!(back.removed, delta.removed);
        assert_eq!(
            back.chunks,
            [
                ("bb".into(), vec![0.5, -0.5]),
                ("cc".into(), vec![0.0, 1.0])
            ]
        );
        assert_eq!(back.passages.len(), 1);
        assert!(back.passages.contains("bb#1"));

        for (bytes, dims, wanted) in [
            (&bytes[..bytes.len() - 1], 2, "truncated"),
            (&bytes[..], 3, "2 dimensions"),
            (&b"MPV1\x02\0\0\0"[..], 2, "not a vector delta"),
        ] {
            let err = Delta::decode(bytes, dims).err().unwrap();
            assert!(err.contains(wanted), "{err}");
        }
    }
}
