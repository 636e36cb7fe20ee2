//! Content digests: lowercase hex, and the sha256 every content hash in memoria uses.

use serde::{Deserialize, Serialize};
use sha2::digest::generic_array::GenericArray;
use sha2::{Digest, Sha256};

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    out
}

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// SHA-256 whose state can be saved and resumed: the model fingerprint hashes 33 MB of
/// `tokenizer.json` and samples of the weights before the options; the packed model stores
/// the state after the files, so a start from the pack continues the same digest without
/// reading them again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ResumableSha256 {
    state: [u32; 8],
    /// Bytes of the unfinished block (fewer than 64).
    pending: Vec<u8>,
    /// Bytes hashed so far.
    len: u64,
}

const SHA256_IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

impl Default for ResumableSha256 {
    fn default() -> Self {
        ResumableSha256 {
            state: SHA256_IV,
            pending: Vec::with_capacity(64),
            len: 0,
        }
    }
}

impl ResumableSha256 {
    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if !self.pending.is_empty() {
            let take = (64 - self.pending.len()).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() < 64 {
                return;
            }
            let block = GenericArray::clone_from_slice(&self.pending);
            sha2::compress256(&mut self.state, &[block]);
            self.pending.clear();
        }
        let whole = bytes.len() / 64 * 64;
        let blocks: Vec<_> = bytes[..whole]
            .chunks_exact(64)
            .map(GenericArray::clone_from_slice)
            .collect();
        sha2::compress256(&mut self.state, &blocks);
        self.pending.extend_from_slice(&bytes[whole..]);
    }

    /// Whether the saved state is well formed (a pack file could hold anything).
    pub(crate) fn is_valid(&self) -> bool {
        self.pending.len() < 64 && self.len % 64 == self.pending.len() as u64
    }

    pub(crate) fn finalize(mut self) -> [u8; 32] {
        let bits = self.len.wrapping_mul(8);
        self.pending.push(0x80);
        while self.pending.len() % 64 != 56 {
            self.pending.push(0);
        }
        self.pending.extend_from_slice(&bits.to_be_bytes());
        let blocks: Vec<_> = self
            .pending
            .chunks_exact(64)
            .map(GenericArray::clone_from_slice)
            .collect();
        sha2::compress256(&mut self.state, &blocks);
        let mut out = [0u8; 32];
        for (o, w) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&w.to_be_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumable_sha256_equals_sha256_across_splits_and_saves() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for len in [0, 1, 55, 56, 63, 64, 65, 127, 128, 129, 1000] {
            let want = Sha256::digest(&data[..len]);
            for split in [0, 1, 31, 64, len / 2, len] {
                let split = split.min(len);
                let mut h = ResumableSha256::default();
                h.update(&data[..split]);
                // Through its saved form, as the pack stores it.
                let saved = serde_json::to_string(&h).unwrap();
                let mut h: ResumableSha256 = serde_json::from_str(&saved).unwrap();
                assert!(h.is_valid());
                h.update(&data[split..len]);
                assert_eq!(
                    h.finalize().as_slice(),
                    want.as_slice(),
                    "len {len} split {split}"
                );
            }
        }
    }

    #[test]
    fn hex_and_sha256_table() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
