//! A deterministic stand-in embedder for tests and benches (shared with `#[path]`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use memoria::embed::{EmbedError, EmbedKind, Embedder, Embedding};
use memoria::internals::{terms, AnalyzerMode};

/// Feature-hashed bag of words: texts sharing words are close. Counts document texts.
pub struct HashEmbedder {
    pub dims: usize,
    pub documents: AtomicUsize,
    pub fail: bool,
    pub fingerprint: String,
    /// Embeds chunks' passages as the local model does.
    pub passages: bool,
    /// Adds every dimension a small value derived from the text, so that vectors are dense
    /// as a real model's are (a bag of words is mostly zeros, which a store's encodings
    /// compress and a real vector's bytes do not allow).
    pub dense: bool,
}

impl HashEmbedder {
    pub fn new(dims: usize) -> Arc<HashEmbedder> {
        Arc::new(HashEmbedder {
            dims,
            documents: AtomicUsize::new(0),
            fail: false,
            fingerprint: format!("hash-{dims}"),
            passages: false,
            dense: false,
        })
    }
}

/// FNV-1a of `text`'s bytes.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(1469598103934665603u64, |h, b| {
        (h ^ b as u64).wrapping_mul(1099511628211)
    })
}

impl Embedder for HashEmbedder {
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Embedding>, EmbedError> {
        if self.fail {
            return Err(EmbedError::Failed("the test embedder is down".into()));
        }
        if kind == EmbedKind::Document {
            self.documents.fetch_add(texts.len(), Ordering::SeqCst);
        }
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0f32; self.dims];
                for term in terms(text, AnalyzerMode::Query) {
                    v[(fnv(&term) % self.dims as u64) as usize] += 1.0;
                }
                if self.dense {
                    let words = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1.0);
                    let mut h = fnv(text);
                    for x in &mut v {
                        h = h
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        // Uniform within ±1 % of the words' norm: about a sixth of it in all.
                        *x += words * 0.02 * ((h >> 40) as f32 / (1u64 << 24) as f32 - 0.5);
                    }
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if norm > 0.0 {
                    v.iter_mut().for_each(|x| *x /= norm);
                }
                Embedding {
                    vector: v,
                    tokens: 1,
                    truncated: false,
                }
            })
            .collect())
    }
    fn dims(&self) -> usize {
        self.dims
    }
    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
    fn max_tokens(&self) -> usize {
        2048
    }
    fn embeds_passages(&self) -> bool {
        self.passages
    }
}
