//! The local provider: the EmbeddingGemma engine of `crate::gemma` as an [`Embedder`],
//! loaded once per model directory and process.
//!
//! `crate::gemma` knows nothing of embedding providers; this file is the whole bridge. It
//! maps what a text is for ([`EmbedKind`]) to the model's prompt ([`Prompt`]), assembles
//! [`Embedding`]s from the model's tokens and vectors (cut to the model's Matryoshka size),
//! and carries the model's errors whole ([`EmbedError::Local`]).
//!
//! A process may serve several agents, each with its own [`Memory`](crate::Memory) and the
//! same model: [`load_local_on`] keeps one loaded model per directory, shared while anyone
//! holds it, so a second agent costs no second load and no second gigabyte.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use crate::embed::embedder::{Document, EmbedKind, Embedder, Embedding, Result};
use crate::gemma::{
    load_on_best_device, truncate_dims, GemmaEmbedder, GemmaError, Precision, Prompt,
};
use crate::title;

impl From<EmbedKind> for Prompt {
    fn from(kind: EmbedKind) -> Prompt {
        match kind {
            EmbedKind::Query => Prompt::Query,
            EmbedKind::Document => Prompt::Document,
        }
    }
}

/// Embeddings of tokenised texts, cut to the model's Matryoshka size.
fn embed_tokens(model: &GemmaEmbedder, toks: Vec<(Vec<u32>, bool)>) -> Result<Vec<Embedding>> {
    if toks.is_empty() {
        return Ok(Vec::new());
    }
    let seqs: Vec<&[u32]> = toks.iter().map(|(ids, _)| ids.as_slice()).collect();
    let vecs = model.embed_ids(&seqs)?;
    let dims = GemmaEmbedder::dims(model);
    Ok(vecs
        .into_iter()
        .zip(&toks)
        .map(|(mut v, (ids, truncated))| {
            truncate_dims(&mut v, dims);
            Embedding {
                vector: v,
                tokens: ids.len(),
                truncated: *truncated,
            }
        })
        .collect())
}

impl Embedder for GemmaEmbedder {
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Embedding>> {
        embed_tokens(self, self.tokenize_batch(texts, kind.into())?)
    }

    fn uses_titles(&self) -> bool {
        self.takes_titles()
    }

    fn embeds_passages(&self) -> bool {
        true
    }

    fn embed_documents(&self, documents: &[Document]) -> Result<Vec<Embedding>> {
        // The title names the note: its heading is not read twice (the fingerprint says so).
        let pairs: Vec<(&str, &str)> = documents
            .iter()
            .map(|d| (d.title, title::body(d.title, d.text)))
            .collect();
        embed_tokens(self, self.tokenize_documents(&pairs)?)
    }

    fn dims(&self) -> usize {
        GemmaEmbedder::dims(self)
    }

    fn fingerprint(&self) -> &str {
        GemmaEmbedder::fingerprint(self)
    }

    fn max_tokens(&self) -> usize {
        GemmaEmbedder::max_tokens(self)
    }
}

/// Loads the local EmbeddingGemma model from `dir`: on the GPU when the build has a usable
/// one, else on the CPU (see [`load_local_on`]).
pub fn load_local(dir: &Path) -> Result<Arc<dyn Embedder>> {
    load_local_on(dir, None).map(|(embedder, _)| embedder)
}

/// Loads the local EmbeddingGemma model from `dir` in `precision` (`None`:
/// `MEMORIA_PRECISION`, else `auto`), and says where it runs, in words (`cuda:0 (…), bf16`,
/// `cpu, f32, AVX-512 kernels`).
///
/// A build with a GPU backend (`cuda`, `metal`) loads on the GPU and checks it with one
/// short embedding. When there is no usable GPU (no device, no driver, a failing kernel),
/// the model runs on the CPU instead, and the words say why.
///
/// A model already loaded in this process from the same directory (by another
/// [`Memory`](crate::Memory): one per agent) in the same precision is shared rather than
/// loaded again; it is freed when the last user drops it. Concurrent first loads of one
/// directory load once.
pub fn load_local_on(
    dir: &Path,
    precision: Option<Precision>,
) -> Result<(Arc<dyn Embedder>, String)> {
    type Loaded = ((PathBuf, Precision), Weak<dyn Embedder>, String);
    static LOADED: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());
    let precision = match precision {
        Some(precision) => precision,
        None => Precision::from_env().map_err(GemmaError::InvalidOption)?,
    };
    let key = (
        std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
        precision,
    );
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    loaded.retain(|(_, weak, _)| weak.strong_count() > 0);
    if let Some(shared) = loaded
        .iter()
        .find(|(path, _, _)| *path == key)
        .and_then(|(_, weak, device)| Some((weak.upgrade()?, device.clone())))
    {
        return Ok(shared);
    }
    let (embedder, device) = load_on_best_device(dir, precision)?;
    let embedder: Arc<dyn Embedder> = Arc::new(embedder);
    loaded.push((key, Arc::downgrade(&embedder), device.clone()));
    Ok((embedder, device))
}
