//! The Dense projections: the two linear layers after pooling that turn the transformer's
//! pooled output into EmbeddingGemma's sentence embedding.
//!
//! sentence-transformers runs EmbeddingGemma as a pipeline (`modules.json`): the Gemma3
//! encoder, mean pooling, then `2_Dense` (768 → 3072) and `3_Dense` (3072 → 768), each a
//! module directory with a `config.json` and a `model.safetensors` holding one
//! `linear.weight` without bias, then L2 normalisation. A GGUF file carries the Dense
//! layers as tensors when its converter kept them; the files llama.cpp publishes do not,
//! and embed into another space without them ([`GGUF_WITHOUT_DENSE`]). Such a file may
//! borrow them from a sentence-transformers copy of the model ([`DenseFrom::Dir`]), which
//! makes it the same model as that copy.

use std::path::{Path, PathBuf};

use crate::gemma::error::{GemmaError, Result};
use crate::gemma::matmul::Projection;
use crate::gemma::model_files::{read_json, DenseConfig};
use crate::gemma::weights::SafeFile;

/// One dense projection (`linear.weight`, `[out, in]`, no bias).
#[derive(Debug)]
pub(crate) struct Dense {
    /// `[out, in]`, in the kernels' format.
    pub(crate) weight: Projection,
}

/// Where one Dense projection comes from.
pub(crate) enum DenseFrom {
    /// A sentence-transformers module directory (`2_Dense`).
    Dir(PathBuf),
    /// A tensor of the GGUF file: `(name, out, in)`.
    Gguf(String, usize, usize),
}

/// What a GGUF file without Dense layers embeds into, in words.
pub(crate) const GGUF_WITHOUT_DENSE: &str = "vectors are the file's pooled transformer output, as \
llama.cpp (and OpenClaw's local provider) embed with it: not comparable with EmbeddingGemma's \
sentence embeddings, so kept apart by their own fingerprint (retrieval measures the same on \
LoCoMo). A sentence-transformers copy of the model (with 2_Dense/ and 3_Dense/) beside the \
file or where memoria looks for models adds the Dense layers";

/// Opens a Dense module directory, checking its config against the input `width`: the
/// weights file, its name relative to the model (`2_Dense/model.safetensors`) and the
/// output size.
pub(crate) fn open_dense(ddir: &Path, width: usize) -> Result<(SafeFile, String, usize)> {
    let dc_path = ddir.join("config.json");
    let dc: DenseConfig = read_json(&dc_path)?;
    let unsupported = |reason: String| GemmaError::Unsupported {
        path: dc_path.clone(),
        reason,
    };
    if dc.bias {
        return Err(unsupported("dense bias".into()));
    }
    if let Some(act) = &dc.activation_function {
        if !act.ends_with("Identity") {
            return Err(unsupported(format!("dense activation `{act}`")));
        }
    }
    if dc.in_features != width {
        return Err(unsupported(format!(
            "in_features {} but the previous layer gives {width}",
            dc.in_features
        )));
    }
    let wpath = ddir.join("model.safetensors");
    let wf = SafeFile::open(&wpath)?;
    let module = ddir.file_name().unwrap_or_default().to_string_lossy();
    Ok((wf, format!("{module}/model.safetensors"), dc.out_features))
}
