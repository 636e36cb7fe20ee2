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

use std::path::{Path, PathBuf};

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
        let dtype = checked_dtype(device, &options)?;
        let started = std::time::Instant::now();
        let phase = |what: &str| tracing::debug!("model load: {what} at {:?}", started.elapsed());
        let mut config = Config::read(&dir, &options)?;
        // The one choice of kernels: fused CPU kernels for f32 on the CPU (unless asked not
        // to), candle's ops everywhere else.
        let fused = !options.generic_kernels && device.is_cpu() && dtype == DType::F32;
        let kernels = match fused {
            true => Kernels::Fused,
            false => Kernels::Generic,
        };
        let precision = match (fused, dtype) {
            (true, _) => options.precision.resolve(),
            (false, DType::BF16) => Precision::Bf16,
            (false, _) => Precision::F32,
        };
        let plan = match &options.cache_dir {
            Some(cache) if fused => Some(open_pack(
                cache,
                &dir,
                config.borrowed.as_deref(),
                &config.dense_from,
                precision,
            )),
            _ => None,
        };
        let pack = plan.as_ref().and_then(|p| p.pack.as_ref());
        let mut print = Fingerprint::start(pack, config.bytes.as_deref());
        let prompts = Prompts::read(&dir, &options, &config)?;
        phase("configuration read");
        let building = plan.as_ref().is_some_and(PackPlan::writes);
        let (tokenizer, tables) = load_tokenizer(&dir, &config, pack, building, &mut print)?;
        let eos_id = config
            .cfg
            .eos_token_id
            .or_else(|| tokenizer.added_token_id("<eos>"));
        phase("tokenizer loaded");
        let weights = open_weights(&dir, config.gguf.take(), &mut print)?;
        phase("weights hashed");
        let cfg = &config.cfg;
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
        let max_tokens = prompts.max_tokens;
        let encoder = Encoder::load(
            cfg, source, pack, device, dtype, kernels, precision, max_tokens,
        )?;
        phase("encoder loaded");
        let dense = load_dense(&dir, &config, source, pack, &encoder, device, &mut print)?;
        let full_dims = dense.last().map_or(cfg.hidden_size, |d| d.out);
        let dense: Vec<Dense> = dense.into_iter().map(|d| d.dense).collect();
        let gguf_dense = match &weights {
            Weights::Gguf(_) => Some(match (config.dense_from.first(), &config.borrowed) {
                (None, _) => Err(format!("no Dense layers: {GGUF_WITHOUT_DENSE}")),
                (_, Some(st_dir)) => Ok(format!("Dense layers from {}", st_dir.display())),
                (Some(_), None) => Ok("Dense layers from the GGUF file".into()),
            }),
            Weights::Safetensors(_) => None,
        };
        drop(weights);
        let origin = match plan {
            None => "source files".to_string(),
            Some(plan) => plan.finish(print.hasher.clone(), tables.as_ref(), &encoder, &dense),
        };
        phase("packed model ready");
        let dims = match options.dims {
            None => full_dims,
            Some(d) if d == full_dims || (MATRYOSHKA_DIMS.contains(&d) && d < full_dims) => d,
            Some(d) => {
                return Err(GemmaError::InvalidOption(format!(
                    "dims {d}: expected {full_dims} or one of {MATRYOSHKA_DIMS:?} below it"
                )))
            }
        };
        let without_dense = matches!(gguf_dense, Some(Err(_)));
        let bf16_attention = encoder.bf16_attention();
        let fingerprint = print.finish(
            &prompts,
            dims,
            without_dense,
            precision,
            fused,
            bf16_attention,
        );
        Ok(GemmaEmbedder {
            dir,
            tokenizer,
            table,
            device_table,
            embed_scale,
            encoder,
            dense,
            normalize: config.normalize,
            query_prompt: prompts.query,
            document_prompt: prompts.document,
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

/// The working dtype `options` ask for on `device` (f32 everywhere, bf16 on a GPU only),
/// once the options are checked.
fn checked_dtype(device: &Device, options: &GemmaOptions) -> Result<DType> {
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
    Ok(dtype)
}

/// The model's configuration: `config.json` and `modules.json`, or the GGUF file's metadata
/// (and the Dense modules of `options.dense_dir` when the file has none).
struct Config {
    gguf: Option<GgufFile>,
    /// `config.json`'s bytes (hashed into the fingerprint).
    bytes: Option<Vec<u8>>,
    cfg: GemmaConfig,
    dense_from: Vec<DenseFrom>,
    normalize: bool,
    /// The sentence-transformers directory a GGUF file's Dense layers come from.
    borrowed: Option<PathBuf>,
}

impl Config {
    fn read(dir: &Path, options: &GemmaOptions) -> Result<Config> {
        if !gguf::is_gguf(dir) {
            let config_path = dir.join("config.json");
            let bytes = read_file(&config_path)?;
            let cfg = GemmaConfig::from_json(&String::from_utf8_lossy(&bytes), &config_path)?;
            let pipeline = Pipeline::from_dir(dir)?;
            return Ok(Config {
                gguf: None,
                bytes: Some(bytes),
                cfg,
                dense_from: pipeline
                    .dense_dirs
                    .into_iter()
                    .map(DenseFrom::Dir)
                    .collect(),
                normalize: pipeline.normalize,
                borrowed: None,
            });
        }
        let g = GgufFile::open(dir)?;
        let in_file: Vec<DenseFrom> = g
            .dense()
            .into_iter()
            .map(|(name, out, inp)| DenseFrom::Gguf(name, out, inp))
            .collect();
        let borrowed = options.dense_dir.clone().filter(|_| in_file.is_empty());
        let dense_from = match &borrowed {
            Some(st_dir) => Pipeline::from_dir(st_dir)?
                .dense_dirs
                .into_iter()
                .map(DenseFrom::Dir)
                .collect(),
            None => in_file,
        };
        Ok(Config {
            cfg: g.config()?,
            gguf: Some(g),
            bytes: None,
            dense_from,
            normalize: true,
            borrowed,
        })
    }
}

/// The prompts and the token limit: the options', else the model directory's
/// (`config_sentence_transformers.json`, `sentence_bert_config.json`), else
/// EmbeddingGemma's own (a GGUF file names none).
struct Prompts {
    query: String,
    document: String,
    /// Tokens per text, prompt and BOS/EOS included.
    max_tokens: usize,
}

impl Prompts {
    fn read(dir: &Path, options: &GemmaOptions, config: &Config) -> Result<Prompts> {
        let is_gguf = config.gguf.is_some();
        let st_path = dir.join("config_sentence_transformers.json");
        let st: StConfig = if !is_gguf
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
        let query = prompt(
            &options.query_prompt,
            &["query", "Retrieval-query"],
            DEFAULT_QUERY_PROMPT,
        );
        let document = prompt(
            &options.document_prompt,
            &["document", "Retrieval-document"],
            DEFAULT_DOCUMENT_PROMPT,
        );
        let sbert_path = dir.join("sentence_bert_config.json");
        let sbert: SbertConfig = if !is_gguf && sbert_path.exists() {
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
        let max_pos = config.cfg.max_position_embeddings;
        let model_max = sbert.max_seq_length.unwrap_or(max_pos).min(max_pos);
        let max_tokens = match options.max_tokens {
            Some(m) if m < 2 => {
                return Err(GemmaError::InvalidOption(format!("max_tokens {m} < 2")))
            }
            Some(m) => m.min(max_pos),
            None => model_max,
        };
        Ok(Prompts {
            query,
            document,
            max_tokens,
        })
    }
}

/// The fingerprint as the load goes: the source files' part (saved in a pack, or hashed
/// here as they are read), then how the vectors are asked for.
struct Fingerprint {
    hasher: ResumableSha256,
    /// The source files' part came from a pack: nothing more of them to hash.
    from_pack: bool,
}

impl Fingerprint {
    /// From `pack`'s saved state, else from the start and `config.json`'s bytes.
    fn start(pack: Option<&Pack>, config_bytes: Option<&[u8]>) -> Fingerprint {
        if let Some(pack) = pack {
            return Fingerprint {
                hasher: pack.digest(),
                from_pack: true,
            };
        }
        let mut hasher = ResumableSha256::default();
        hasher.update(b"memoria-embeddinggemma-v1\0");
        if let Some(bytes) = config_bytes {
            hash_part(&mut hasher, "config.json", bytes);
        }
        Fingerprint {
            hasher,
            from_pack: false,
        }
    }

    /// Hashes a source file's part, unless the pack already holds them all.
    fn source(&mut self, name: &str, bytes: &[u8]) {
        if !self.from_pack {
            hash_part(&mut self.hasher, name, bytes);
        }
    }

    /// The fingerprint of vectors asked for this way (`embeddinggemma:<dims>:<sha256>`).
    fn finish(
        mut self,
        prompts: &Prompts,
        dims: usize,
        without_dense: bool,
        precision: Precision,
        fused: bool,
        bf16_attention: bool,
    ) -> String {
        let h = &mut self.hasher;
        hash_part(h, "query_prompt", prompts.query.as_bytes());
        hash_part(h, "document_prompt", prompts.document.as_bytes());
        hash_part(h, "dims", dims.to_string().as_bytes());
        hash_part(h, "max_tokens", prompts.max_tokens.to_string().as_bytes());
        // How inputs are formed; changed when memoria stopped stripping them, so vectors
        // cached under the old fingerprint are not reused for texts that now embed
        // differently.
        hash_part(h, "input", b"prompt+text, unstripped");
        // Documents carry their chunk's title (`title: {title} | text: `) since index
        // format 7: vectors cached before were embedded as `title: none`. Then a text came to
        // leave out the headings at its top that its title names (`crate::embed::local`
        // applies `title::body`): vectors cached before read them twice.
        hash_part(
            h,
            "documents",
            b"titled; headings the title names left out of the text",
        );
        // A GGUF file without Dense layers embeds into another space.
        if without_dense {
            hash_part(h, "space", b"pooled transformer output, no Dense layers");
        }
        // f32 vectors agree with PyTorch to f32 noise and keep the fingerprint they always
        // had; q8 and bf16 vectors differ by more, so they never share an index or cache
        // with them (nor with each other).
        match precision {
            Precision::Q8 => {
                hash_part(h, "precision", b"q8: Q8_0 weights, int8 activations");
                // Where bf16 outruns f32 (AMX, AMD's AVX512-BF16), q8's attention runs in
                // bf16 too (`encoder::bf16_attention`); elsewhere in f32, as it always did.
                if bf16_attention {
                    hash_part(h, "attention", b"bf16");
                }
            }
            Precision::Bf16 if fused => hash_part(
                h,
                "precision",
                b"bf16: bf16 weights, activations and attention, f32 sums",
            ),
            // The candle-op path (a GPU's): other arithmetic than the CPU kernels' bf16.
            Precision::Bf16 => hash_part(
                h,
                "precision",
                b"bf16 products (f32 sums); norms, RoPE, softmax and residual in f32",
            ),
            Precision::F32 | Precision::Auto => {}
        }
        format!("embeddinggemma:{dims}:{}", hex(&self.hasher.finalize()))
    }
}

/// The tokenizer: the pack's tables, else `tokenizer.json` (about a second for Gemma's) or a
/// GGUF file's vocabulary; when a pack is being written (`building`), its tables too.
fn load_tokenizer(
    dir: &Path,
    config: &Config,
    pack: Option<&Pack>,
    building: bool,
    print: &mut Fingerprint,
) -> Result<(TextTokenizer, Option<tokenizer::BpeTables>)> {
    if let Some(fast) = pack.and_then(Pack::tokenizer) {
        return Ok((TextTokenizer::Fast(fast), None));
    }
    // A GGUF file's vocabulary (part of its hashed header) becomes the tokenizer.json
    // transformers would derive from it.
    let (tok_path, tok_bytes) = match &config.gguf {
        Some(g) => (dir.to_path_buf(), g.tokenizer_json()?),
        None => {
            let tok_path = dir.join("tokenizer.json");
            let tok_bytes = read_file(&tok_path)?;
            print.source("tokenizer.json", &tok_bytes);
            (tok_path, tok_bytes)
        }
    };
    let hf = tokenizer::parse_hf(&tok_bytes, &tok_path)?;
    // A pack about to be written gets the tables, and this process uses them too, so every
    // start tokenizes alike.
    Ok(
        match building.then(|| tokenizer::build_tables(&tok_bytes, &hf)) {
            Some(Ok(built)) => {
                let fast = built.to_bpe();
                let tokenizer = fast.map_or(TextTokenizer::Hf(Box::new(hf)), TextTokenizer::Fast);
                (tokenizer, Some(built))
            }
            Some(Err(why)) => {
                tracing::debug!(
                    "{}: tokenized by the tokenizers crate: {why}",
                    tok_path.display()
                );
                (TextTokenizer::Hf(Box::new(hf)), None)
            }
            None => (TextTokenizer::Hf(Box::new(hf)), None),
        },
    )
}

/// The encoder's weights: `model.safetensors` or the GGUF file, their part of the
/// fingerprint hashed (the header and samples of every tensor).
fn open_weights(dir: &Path, gguf: Option<GgufFile>, print: &mut Fingerprint) -> Result<Weights> {
    if let Some(g) = gguf {
        if !print.from_pack {
            print.source("gguf header", &g.header()?);
            for name in g.names() {
                print.source(name, &g.sample(name)?);
            }
        }
        return Ok(Weights::Gguf(g));
    }
    let model_path = dir.join("model.safetensors");
    let file = SafeFile::open(&model_path)?;
    if !print.from_pack {
        hash_safetensors(&mut print.hasher, "model.safetensors", &file)?;
    }
    if file.names().any(|n| n.starts_with("model."))
        && !file.names().any(|n| n == "embed_tokens.weight")
    {
        return Err(GemmaError::Unsupported {
            path: model_path,
            reason:
                "tensor names carry a `model.` prefix (expected the sentence-transformers layout)"
                    .into(),
        });
    }
    Ok(Weights::Safetensors(file))
}

/// A Dense projection as loaded, with its output size.
struct LoadedDense {
    dense: Dense,
    out: usize,
}

/// The Dense projections after pooling, in order. They stay f16 in every CPU precision:
/// they run once per text, so quantising them would cost accuracy for no measurable time.
fn load_dense(
    dir: &Path,
    config: &Config,
    source: &dyn TensorSource,
    pack: Option<&Pack>,
    encoder: &Encoder,
    device: &Device,
    print: &mut Fingerprint,
) -> Result<Vec<LoadedDense>> {
    let format = match encoder.kernels() {
        Kernels::Fused => WeightFormat::Half,
        Kernels::Generic => WeightFormat::Tensor,
    };
    let mut dense = Vec::new();
    let mut width = config.cfg.hidden_size;
    for from in &config.dense_from {
        // A Dense module's own file, open while its weight loads.
        let module_file;
        let (file, scope, name, out): (&dyn TensorSource, String, &str, usize) = match from {
            DenseFrom::Dir(ddir) => {
                let (wf, rel, out) = open_dense(ddir, width)?;
                if !print.from_pack {
                    hash_safetensors(&mut print.hasher, &rel, &wf)?;
                }
                module_file = wf;
                (&module_file, format!("{rel}:"), "linear.weight", out)
            }
            DenseFrom::Gguf(name, out, inp) => {
                if *inp != width {
                    return Err(GemmaError::Unsupported {
                        path: dir.to_path_buf(),
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
        dense.push(LoadedDense {
            dense: Dense { weight },
            out,
        });
        width = out;
    }
    Ok(dense)
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
