//! Which packed model one load uses, or writes.
//!
//! `pack.rs` is the file format: its layout, its invariants, how one is written and how one
//! is opened and verified. This file is the decision around it for one load of the model:
//! where the pack of this model and precision lives in the cache (its path comes from the
//! model's canonical paths, plus the directory a GGUF file borrows its Dense layers from),
//! which source files it must have been made from (their sizes and modification times),
//! whether an existing pack can be used, and, when none could, writing one from the
//! weights the load just converted (the encoder's and the Dense layers' panels, the
//! tokenizer's tables) and the fingerprint state after the source files. It also says
//! where the model came from, in words, for `status`.

use std::path::{Path, PathBuf};

use crate::digest::ResumableSha256;
use crate::gemma::dense::{Dense, DenseFrom};
use crate::gemma::encoder::Encoder;
use crate::gemma::gguf;
use crate::gemma::matmul::Projection;
use crate::gemma::pack::{self, Pack, PackContents, PackWeight, Panels};
use crate::gemma::precision::Precision;
use crate::gemma::tokenizer;

/// The packed model of one load: the one opened, or where a new one goes and what it is
/// made from.
pub(crate) struct PackPlan {
    /// Where the pack is, or goes.
    path: PathBuf,
    /// The pack opened, when one matched the model files.
    pub(crate) pack: Option<Pack>,
    /// The source files' sizes and times; `None` when they could not be read (the load
    /// then fails on them with a better error, or runs without a pack).
    sources: Option<Vec<pack::SourceFile>>,
    /// Why an existing pack was not used.
    stale: Option<String>,
    /// Why no pack can be written (the cache directory cannot be created).
    unwritable: Option<String>,
}

/// Opens the pack of the model at `path` (a directory or a GGUF file) under `cache`, if one
/// matches the model files. `dense_dir`: where a GGUF file's Dense layers come from, part of
/// the pack's identity (the same file with and without them are two models).
pub(crate) fn open_pack(
    cache: &Path,
    path: &Path,
    dense_dir: Option<&Path>,
    dense: &[DenseFrom],
    precision: Precision,
) -> PackPlan {
    let key: Vec<&Path> = std::iter::once(path).chain(dense_dir).collect();
    let pack_path = pack::path_for(cache, &key, precision.as_str());
    // Source files relative to the model directory (or the GGUF file's directory); Dense
    // modules from elsewhere by their full path.
    let (base, mut files) = if gguf::is_gguf(path) {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let base = path.parent().unwrap_or(Path::new("")).to_path_buf();
        (base, vec![name.into_owned()])
    } else {
        let files = [
            "config.json",
            "modules.json",
            "tokenizer.json",
            "model.safetensors",
        ];
        (path.to_path_buf(), files.map(String::from).to_vec())
    };
    for d in dense {
        if let DenseFrom::Dir(d) = d {
            let rel = d
                .strip_prefix(&base)
                .unwrap_or(d)
                .to_string_lossy()
                .into_owned();
            files.push(format!("{rel}/config.json"));
            files.push(format!("{rel}/model.safetensors"));
        }
    }
    let sources = pack::source_files(&base, &files).ok();
    let path = pack_path;
    let (pack, stale) = match sources.as_deref().map(|s| Pack::open(&path, s)) {
        Some(Ok(pack)) => (pack, None),
        Some(Err(why)) => (None, Some(why)),
        None => (None, None),
    };
    let unwritable = match (&pack, path.parent()) {
        (None, Some(parent)) => std::fs::create_dir_all(parent)
            .err()
            .map(|e| format!("cannot create {}: {e}", parent.display())),
        _ => None,
    };
    PackPlan {
        path,
        pack,
        sources,
        stale,
        unwritable,
    }
}

impl PackPlan {
    /// Whether this load writes a new pack (so it builds the tokenizer tables too).
    pub(crate) fn writes(&self) -> bool {
        self.pack.is_none() && self.sources.is_some() && self.unwritable.is_none()
    }

    /// Writes the pack when none was used (`digest`: the fingerprint state after the source
    /// files), and says where the model came from.
    pub(crate) fn finish(
        self,
        digest: ResumableSha256,
        tables: Option<&tokenizer::BpeTables>,
        encoder: &Encoder,
        dense: &[Dense],
    ) -> String {
        let shown = self.path.display();
        if self.pack.is_some() {
            return format!("packed model {shown}");
        }
        if let Some(why) = &self.unwritable {
            tracing::warn!("no packed model ({why}): every start loads the source files");
            return format!("source files (no packed model: {why})");
        }
        let Some(sources) = self.sources else {
            return "source files".into();
        };
        let weights = encoder
            .projections()
            .chain(dense.iter().map(|d| &d.weight))
            .filter_map(|p| match p {
                Projection::Half { name, weight } => Some(PackWeight {
                    name: name.clone(),
                    rows: weight.rows(),
                    cols: weight.cols(),
                    data: Panels::F16(weight.panels()),
                }),
                Projection::Q8 { name, weight } => Some(PackWeight {
                    name: name.clone(),
                    rows: weight.rows(),
                    cols: weight.cols(),
                    data: Panels::Q8(weight.bytes()),
                }),
                Projection::Bf16 { name, weight } => Some(PackWeight {
                    name: name.clone(),
                    rows: weight.rows(),
                    cols: weight.cols(),
                    data: Panels::Bf16(weight.panels()),
                }),
                Projection::Tensor(_) => None,
            })
            .collect();
        let contents = PackContents {
            sources,
            digest,
            tokenizer: tables,
            weights,
        };
        let redo = self
            .stale
            .map(|why| format!(" (the previous one was not used: {why})"))
            .unwrap_or_default();
        match pack::write(&self.path, &contents) {
            Ok(()) => {
                tracing::info!("packed model written to {shown}{redo}");
                format!("source files; packed model written to {shown}{redo}")
            }
            Err(e) => {
                tracing::warn!("cannot write the packed model {shown}: {e}; every start loads the source files");
                format!("source files (cannot write the packed model {shown}: {e})")
            }
        }
    }
}
