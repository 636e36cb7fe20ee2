//! Loading EmbeddingGemma: from a sentence-transformers directory or a GGUF file to a
//! ready [`GemmaEmbedder`], with its fingerprint.
//!
//! A load reads, in order: the configuration (`config.json` and `modules.json`, or the GGUF
//! file's metadata), the prompts and the token limit
//! (`config_sentence_transformers.json`, `sentence_bert_config.json`), the tokenizer
//! (`tokenizer.json`, the GGUF vocabulary, or the packed model's tables), the encoder's
//! weights and the Dense layers (`dense.rs`). On the CPU with the fused kernels it first
//! looks for a packed model of these files (`pack_plan.rs`) and takes the weights, the
//! tokenizer and the fingerprint state from it, writing one when there was none.
//!
//! **The fingerprint** identifies the vectors the model will give, so that an index or a
//! cache never mixes two models' vectors: a SHA-256 over the configuration, the tokenizer,
//! the weights file's header and a few KiB of every tensor (a re-export or a fine-tune
//! changes it without reading 1.2 GB), the Dense layers, then the prompts, the output size,
//! the token limit, how inputs are formed and, when they change the vectors, the space (a
//! GGUF file without Dense layers) and the precision (q8, bf16). A model loaded from its pack
//! gets the same fingerprint as from its files: the pack holds the hash state after the
//! source files. Every string hashed here is part of every index's identity: changing one
//! re-embeds every user's memory.

use std::path::Path;

use candle_core::{DType, Device};

use crate::digest::{hex, ResumableSha256};
use crate::gemma::dense::{open_dense, Dense, DenseFrom, GGUF_WITHOUT_DENSE};
use crate::gemma::embedder::GemmaEmbedder;
use crate::gemma::encoder::{Encoder, Kernels};
use crate::gemma::error::{GemmaError, Result};
use crate::gemma::gguf::{self, GgufFile};
use crate::gemma::matmul::{Projection, WeightFormat};
use crate::gemma::model_files::{
    read_file, read_json, GemmaConfig, Pipeline, SbertConfig, StConfig,
};
use crate::gemma::options::{
    GemmaOptions, DEFAULT_DOCUMENT_PROMPT, DEFAULT_QUERY_PROMPT, MATRYOSHKA_DIMS,
};
use crate::gemma::pack::Pack;
use crate::gemma::pack_plan::{open_pack, PackPlan};
use crate::gemma::precision::Precision;
use crate::gemma::tokenizer::{self, TextTokenizer};
use crate::gemma::weights::{EmbeddingTable, SafeFile, TensorSource};

/// The open weights file.
enum Weights {
    Safetensors(SafeFile),
    Gguf(GgufFile),
}

impl Weights {
    fn source(&self) -> &dyn TensorSource {
        match self {
            Weights::Safetensors(f) => f,
            Weights::Gguf(g) => g,
        }
    }
}

impl GemmaEmbedder {
    /// Loads EmbeddingGemma onto `device` from a sentence-transformers directory, or from a
    /// GGUF file (a path ending `.gguf`, see `gguf.rs`).
    pub fn load(dir: impl AsRef<Path>, device: &Device, options: GemmaOptions) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        let dtype = options.dtype.unwrap_or(DType::F32);
        match dtype {
            DType::F32 => {}
            DType::BF16 if !device.is_cpu() => {}
            other => {
                return Err(GemmaError::InvalidOption(format!(
                    "dtype {other:?} on {device:?} (f32 everywhere, bf16 on GPU only)"
                )))
            }
        }
        if options.batch_tokens == 0 {
            return Err(GemmaError::InvalidOption(
                "batch_tokens must be positive".into(),
            ));
        }
        let mut hasher = ResumableSha256::default();
        hasher.update(b"memoria-embeddinggemma-v1\0");
        let started = std::time::Instant::now();
        let phase = |what: &str| tracing::debug!("model load: {what} at {:?}", started.elapsed());

        // Configuration: config.json and modules.json, or the GGUF file's metadata (and the
        // Dense modules of `options.dense_dir` when the file has none).
        let gguf_file = if gguf::is_gguf(&dir) {
            Some(GgufFile::open(&dir)?)
        } else {
            None
        };
        let mut config_bytes = None;
        // `borrowed`: the sentence-transformers directory a GGUF file's Dense layers come from.
        let (cfg, dense_from, normalize, borrowed) = match &gguf_file {
            Some(g) => {
                let in_file: Vec<DenseFrom> = g
                    .dense()
                    .into_iter()
                    .map(|(name, out, inp)| DenseFrom::Gguf(name, out, inp))
                    .collect();
                let borrowed = options.dense_dir.as_deref().filter(|_| in_file.is_empty());
                let dense_from = match borrowed {
                    Some(st_dir) => Pipeline::from_dir(st_dir)?
                        .dense_dirs
                        .into_iter()
                        .map(DenseFrom::Dir)
                        .collect(),
                    None => in_file,
                };
                (g.config()?, dense_from, true, borrowed)
            }
            None => {
                let config_path = dir.join("config.json");
                let bytes = read_file(&config_path)?;
                let cfg = GemmaConfig::from_json(&String::from_utf8_lossy(&bytes), &config_path)?;
                config_bytes = Some(bytes);
                let pipeline = Pipeline::from_dir(&dir)?;
                let dense = pipeline.dense_dirs.into_iter().map(DenseFrom::Dir);
                (cfg, dense.collect(), pipeline.normalize, None)
            }
        };
        let fused = !options.generic_kernels && device.is_cpu() && dtype == DType::F32;
        let precision = match (fused, dtype) {
            (true, _) => options.precision.resolve(),
            (false, DType::BF16) => Precision::Bf16,
            (false, _) => Precision::F32,
        };
        let plan = match &options.cache_dir {
            Some(cache) if fused => Some(open_pack(cache, &dir, borrowed, &dense_from, precision)),
            _ => None,
        };
        let pack = plan.as_ref().and_then(|p| p.pack.as_ref());
        // The fingerprint of the source files: saved in the pack, or computed here.
        let from_pack = pack.is_some();
        if let Some(pack) = pack {
            hasher = pack.digest();
        } else if let Some(bytes) = &config_bytes {
            hash_part(&mut hasher, "config.json", bytes);
        }
        // A GGUF file names no prompts: EmbeddingGemma's own are used (the defaults).
        let st_path = dir.join("config_sentence_transformers.json");
        let st: StConfig = if gguf_file.is_none()
            && (st_path.exists()
                || options.query_prompt.is_none()
                || options.document_prompt.is_none())
        {
            read_json(&st_path)?
        } else {
            StConfig::default()
        };
        let prompt = |explicit: &Option<String>, keys: &[&str], default: &str| -> String {
            explicit
                .clone()
                .or_else(|| keys.iter().find_map(|k| st.prompts.get(*k).cloned()))
                .unwrap_or_else(|| default.to_string())
        };
        let query_prompt = prompt(
            &options.query_prompt,
            &["query", "Retrieval-query"],
            DEFAULT_QUERY_PROMPT,
        );
        let document_prompt = prompt(
            &options.document_prompt,
            &["document", "Retrieval-document"],
            DEFAULT_DOCUMENT_PROMPT,
        );
        let sbert_path = dir.join("sentence_bert_config.json");
        let sbert: SbertConfig = if gguf_file.is_none() && sbert_path.exists() {
            read_json(&sbert_path)?
        } else {
            SbertConfig::default()
        };
        if sbert.do_lower_case == Some(true) {
            return Err(GemmaError::Unsupported {
                path: sbert_path,
                reason: "do_lower_case is not supported".into(),
            });
        }
        let model_max = sbert
            .max_seq_length
            .unwrap_or(cfg.max_position_embeddings)
            .min(cfg.max_position_embeddings);
        let max_tokens = match options.max_tokens {
            Some(m) if m < 2 => {
                return Err(GemmaError::InvalidOption(format!("max_tokens {m} < 2")))
            }
            Some(m) => m.min(cfg.max_position_embeddings),
            None => model_max,
        };

        phase("configuration read");
        // Tokenizer: the pack's tables, else `tokenizer.json` (about a second for Gemma's).
        let mut tables = None;
        let tokenizer = match pack.and_then(Pack::tokenizer) {
            Some(fast) => TextTokenizer::Fast(fast),
            None => {
                // A GGUF file's vocabulary (part of its hashed header) becomes the
                // tokenizer.json transformers would derive from it.
                let (tok_path, tok_bytes) = match &gguf_file {
                    Some(g) => (dir.clone(), g.tokenizer_json()?),
                    None => {
                        let tok_path = dir.join("tokenizer.json");
                        let tok_bytes = read_file(&tok_path)?;
                        if !from_pack {
                            hash_part(&mut hasher, "tokenizer.json", &tok_bytes);
                        }
                        (tok_path, tok_bytes)
                    }
                };
                let hf = tokenizer::parse_hf(&tok_bytes, &tok_path)?;
                // A pack about to be written gets the tables, and this process uses them
                // too, so every start tokenizes alike.
                let building = plan.as_ref().is_some_and(PackPlan::writes);
                match building.then(|| tokenizer::build_tables(&tok_bytes, &hf)) {
                    Some(Ok(built)) => {
                        let fast = built.to_bpe();
                        tables = Some(built);
                        fast.map_or(TextTokenizer::Hf(Box::new(hf)), TextTokenizer::Fast)
                    }
                    Some(Err(why)) => {
                        tracing::debug!(
                            "{}: tokenized by the tokenizers crate: {why}",
                            tok_path.display()
                        );
                        TextTokenizer::Hf(Box::new(hf))
                    }
                    None => TextTokenizer::Hf(Box::new(hf)),
                }
            }
        };
        let eos_id = cfg
            .eos_token_id
            .or_else(|| tokenizer.added_token_id("<eos>"));
        phase("tokenizer loaded");

        // Encoder weights.
        let weights = match gguf_file {
            Some(g) => {
                if !from_pack {
                    hash_part(&mut hasher, "gguf header", &g.header()?);
                    for name in g.names() {
                        hash_part(&mut hasher, name, &g.sample(name)?);
                    }
                }
                Weights::Gguf(g)
            }
            None => {
                let model_path = dir.join("model.safetensors");
                let file = SafeFile::open(&model_path)?;
                if !from_pack {
                    hash_safetensors(&mut hasher, "model.safetensors", &file)?;
                }
                if file.names().any(|n| n.starts_with("model."))
                    && !file.names().any(|n| n == "embed_tokens.weight")
                {
                    return Err(GemmaError::Unsupported {
                        path: model_path,
                        reason: "tensor names carry a `model.` prefix (expected the sentence-transformers layout)".into(),
                    });
                }
                Weights::Safetensors(file)
            }
        };
        phase("weights hashed");
        let kernels = if options.generic_kernels {
            Kernels::Generic
        } else {
            Kernels::Fused
        };
        let embed_scale = (cfg.hidden_size as f64).sqrt() as f32;
        let table = match &weights {
            Weights::Safetensors(file) => {
                EmbeddingTable::new(file, "embed_tokens.weight", cfg.vocab_size, cfg.hidden_size)?
            }
            Weights::Gguf(g) => g.table(cfg.vocab_size, cfg.hidden_size)?,
        };
        // A GPU gathers token rows from its own copy of the table.
        let device_table = match device.is_cpu() {
            true => None,
            false => Some(table.to_device(embed_scale, device)?),
        };
        let source = weights.source();
        let encoder = Encoder::load(
            &cfg, source, pack, device, dtype, kernels, precision, max_tokens,
        )?;
        phase("encoder loaded");

        // Dense projections. They stay f16 in every CPU precision: they run once per text, so
        // quantising them would cost accuracy for no measurable time.
        let format = match encoder.kernels() {
            Kernels::Fused => WeightFormat::Half,
            Kernels::Generic => WeightFormat::Tensor,
        };
        let mut dense = Vec::new();
        let mut width = cfg.hidden_size;
        for from in &dense_from {
            // A Dense module's own file, open while its weight loads.
            let module_file;
            let (file, scope, name, out): (&dyn TensorSource, String, &str, usize) = match from {
                DenseFrom::Dir(ddir) => {
                    let (wf, rel, out) = open_dense(ddir, width)?;
                    if !from_pack {
                        hash_safetensors(&mut hasher, &rel, &wf)?;
                    }
                    module_file = wf;
                    (&module_file, format!("{rel}:"), "linear.weight", out)
                }
                DenseFrom::Gguf(name, out, inp) => {
                    if *inp != width {
                        return Err(GemmaError::Unsupported {
                            path: dir.clone(),
                            reason: format!(
                                "tensor `{name}` takes {inp} values but the previous layer gives {width}"
                            ),
                        });
                    }
                    (source, String::new(), name.as_str(), *out)
                }
            };
            let parts = [(name, out)];
            let weight = Projection::load(
                file,
                pack,
                &scope,
                "",
                &parts,
                width,
                format,
                device,
                DType::F32,
            )?;
            dense.push(Dense { weight });
            width = out;
        }
        let gguf_dense = match &weights {
            Weights::Gguf(_) => Some(match (dense_from.first(), borrowed) {
                (None, _) => Err(format!("no Dense layers: {GGUF_WITHOUT_DENSE}")),
                (_, Some(st_dir)) => Ok(format!("Dense layers from {}", st_dir.display())),
                (Some(_), None) => Ok("Dense layers from the GGUF file".into()),
            }),
            Weights::Safetensors(_) => None,
        };
        drop(weights);
        let origin = match plan {
            None => "source files".to_string(),
            Some(plan) => plan.finish(hasher.clone(), tables.as_ref(), &encoder, &dense),
        };
        phase("packed model ready");
        let full_dims = width;
        let dims = match options.dims {
            None => full_dims,
            Some(d) if d == full_dims || (MATRYOSHKA_DIMS.contains(&d) && d < full_dims) => d,
            Some(d) => {
                return Err(GemmaError::InvalidOption(format!(
                    "dims {d}: expected {full_dims} or one of {MATRYOSHKA_DIMS:?} below it"
                )))
            }
        };
        hash_part(&mut hasher, "query_prompt", query_prompt.as_bytes());
        hash_part(&mut hasher, "document_prompt", document_prompt.as_bytes());
        hash_part(&mut hasher, "dims", dims.to_string().as_bytes());
        hash_part(&mut hasher, "max_tokens", max_tokens.to_string().as_bytes());
        // How inputs are formed; changed when memoria stopped stripping them, so vectors
        // cached under the old fingerprint are not reused for texts that now embed
        // differently.
        hash_part(&mut hasher, "input", b"prompt+text, unstripped");
        // Documents carry their chunk's title (`title: {title} | text: `) since index
        // format 7: vectors cached before were embedded as `title: none`. Then a text came to
        // leave out the headings at its top that its title names (`crate::embed::local`
        // applies `title::body`): vectors cached before read them twice.
        hash_part(
            &mut hasher,
            "documents",
            b"titled; headings the title names left out of the text",
        );
        // A GGUF file without Dense layers embeds into another space.
        if let Some(Err(_)) = &gguf_dense {
            hash_part(
                &mut hasher,
                "space",
                b"pooled transformer output, no Dense layers",
            );
        }
        // f32 vectors agree with PyTorch to f32 noise and keep the fingerprint they always
        // had; q8 and bf16 vectors differ by more, so they never share an index or cache
        // with them (nor with each other).
        match precision {
            Precision::Q8 => {
                hash_part(
                    &mut hasher,
                    "precision",
                    b"q8: Q8_0 weights, int8 activations",
                );
                // Where bf16 outruns f32 (AMX, AMD's AVX512-BF16), q8's attention runs in
                // bf16 too (`encoder::bf16_attention`); elsewhere in f32, as it always did.
                if encoder.bf16_attention() {
                    hash_part(&mut hasher, "attention", b"bf16");
                }
            }
            Precision::Bf16 if fused => hash_part(
                &mut hasher,
                "precision",
                b"bf16: bf16 weights, activations and attention, f32 sums",
            ),
            // The candle-op path (a GPU's): other arithmetic than the CPU kernels' bf16.
            Precision::Bf16 => hash_part(
                &mut hasher,
                "precision",
                b"bf16 products (f32 sums); norms, RoPE, softmax and residual in f32",
            ),
            Precision::F32 | Precision::Auto => {}
        }
        let fingerprint = format!("embeddinggemma:{dims}:{}", hex(&hasher.finalize()));

        Ok(GemmaEmbedder {
            dir,
            tokenizer,
            table,
            device_table,
            embed_scale,
            encoder,
            dense,
            normalize,
            query_prompt,
            document_prompt,
            max_tokens,
            eos_id,
            full_dims,
            dims,
            batch_tokens: options.batch_tokens,
            fingerprint,
            origin,
            precision,
            dense_words: gguf_dense.map(|r| r.unwrap_or_else(|e| e)),
        })
    }
}

fn hash_part(h: &mut ResumableSha256, name: &str, bytes: &[u8]) {
    h.update(&(name.len() as u64).to_le_bytes());
    h.update(name.as_bytes());
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// Header plus a few KiB of every tensor: catches any re-export or fine-tune without
/// reading the whole 1.2 GB.
fn hash_safetensors(h: &mut ResumableSha256, name: &str, f: &SafeFile) -> Result<()> {
    hash_part(h, name, f.header());
    let mut names: Vec<&String> = f.names().collect();
    names.sort();
    for n in names {
        if let Some(info) = f.tensor_info(n) {
            hash_part(h, n, &f.sample(info)?);
        }
    }
    Ok(())
}
