//! EmbeddingGemma on candle, from a sentence-transformers directory or a GGUF file.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};

use crate::digest::{hex, ResumableSha256};
use crate::embed::encoder::{Encoder, Kernels};
use crate::embed::gguf::{self, GgufFile};
use crate::embed::kernels::Packing;
use crate::embed::matmul::{Projection, WeightFormat};
use crate::embed::model_files::{
    read_file, read_json, DenseConfig, GemmaConfig, Pipeline, SbertConfig, StConfig,
};
use crate::embed::pack::{self, Pack, PackContents, PackWeight, Panels};
use crate::embed::precision::Precision;
use crate::embed::tokenizer::{self, TextTokenizer};
use crate::embed::weights::{EmbeddingTable, SafeFile, TensorSource};
use crate::embed::{
    truncate_dims, EmbedError, EmbedKind, Embedder, Embedding, Result, MATRYOSHKA_DIMS,
};
use crate::simd::l2_normalize;

/// Prompts EmbeddingGemma was trained with, used when the model directory names none.
pub const DEFAULT_QUERY_PROMPT: &str = "task: search result | query: ";
/// The document prompt EmbeddingGemma was trained with.
pub const DEFAULT_DOCUMENT_PROMPT: &str = "title: none | text: ";

/// How to load and run the model.
#[derive(Debug, Clone)]
pub struct GemmaOptions {
    /// Output size: `None` for the model's full size, or a Matryoshka size (512/256/128):
    /// vectors are truncated and re-normalised.
    pub dims: Option<usize>,
    /// Overrides the query prompt of `config_sentence_transformers.json`.
    pub query_prompt: Option<String>,
    /// Overrides the document prompt of `config_sentence_transformers.json`.
    pub document_prompt: Option<String>,
    /// Token limit (prompt and BOS/EOS included); default `max_seq_length` (2048).
    pub max_tokens: Option<usize>,
    /// Tokens per forward pass: texts are sorted by length and packed until this many.
    pub batch_tokens: usize,
    /// Working dtype: default f32. BF16 is accepted on GPU devices only.
    pub dtype: Option<DType>,
    /// Force the plain-candle implementation even where fused CPU kernels apply.
    pub generic_kernels: bool,
    /// memoria's cache directory: the fused CPU path keeps its packed model (weights in the
    /// kernels' layout, tokenizer tables) in `<cache_dir>/packed/`, written on the first load
    /// and memory-mapped on later ones (see `pack.rs`). `None` loads from the source files.
    pub cache_dir: Option<PathBuf>,
    /// The arithmetic of the fused CPU kernels' linear layers (`precision.rs`); other
    /// devices and the generic kernels run `dtype`.
    pub precision: Precision,
    /// For a GGUF file without the Dense layers (as published): a sentence-transformers
    /// directory whose `2_Dense`/`3_Dense` modules are applied after it. `None` embeds as
    /// llama.cpp does with such a file (the pooled transformer output: another space).
    pub dense_dir: Option<PathBuf>,
}

impl Default for GemmaOptions {
    fn default() -> Self {
        GemmaOptions {
            dims: None,
            query_prompt: None,
            document_prompt: None,
            max_tokens: None,
            batch_tokens: 2048,
            dtype: None,
            generic_kernels: false,
            cache_dir: None,
            precision: Precision::Auto,
            dense_dir: None,
        }
    }
}

/// One dense projection (`linear.weight`, `[out, in]`, no bias).
#[derive(Debug)]
struct Dense {
    weight: Projection,
}

/// Where one Dense projection comes from.
enum DenseFrom {
    /// A sentence-transformers module directory (`2_Dense`).
    Dir(PathBuf),
    /// A tensor of the GGUF file: `(name, out, in)`.
    Gguf(String, usize, usize),
}

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

/// EmbeddingGemma: tokenizer, Gemma3 encoder, mean pooling, dense projections, L2 norm.
pub struct GemmaEmbedder {
    dir: PathBuf,
    tokenizer: TextTokenizer,
    table: EmbeddingTable,
    embed_scale: f32,
    encoder: Encoder,
    dense: Vec<Dense>,
    normalize: bool,
    query_prompt: String,
    document_prompt: String,
    max_tokens: usize,
    eos_id: Option<u32>,
    full_dims: usize,
    dims: usize,
    batch_tokens: usize,
    fingerprint: String,
    /// Where the weights and tokenizer came from, in words.
    origin: String,
    /// The linear layers' precision: `f32` or `q8` (also `f32` for GPU dtypes).
    precision: Precision,
    /// Where the Dense layers came from, or why there are none, for a GGUF file.
    dense_words: Option<String>,
}

impl std::fmt::Debug for GemmaEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GemmaEmbedder")
            .field("dir", &self.dir)
            .field("dims", &self.dims)
            .field("max_tokens", &self.max_tokens)
            .field("fingerprint", &self.fingerprint)
            .finish()
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
                return Err(EmbedError::InvalidOption(format!(
                    "dtype {other:?} on {device:?} (f32 everywhere, bf16 on GPU only)"
                )))
            }
        }
        if options.batch_tokens == 0 {
            return Err(EmbedError::InvalidOption(
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
        let precision = if fused {
            options.precision.resolve()
        } else {
            Precision::F32
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
            return Err(EmbedError::Unsupported {
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
                return Err(EmbedError::InvalidOption(format!("max_tokens {m} < 2")))
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
                    return Err(EmbedError::Unsupported {
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
        let table = match &weights {
            Weights::Safetensors(file) => {
                EmbeddingTable::new(file, "embed_tokens.weight", cfg.vocab_size, cfg.hidden_size)?
            }
            Weights::Gguf(g) => g.table(cfg.vocab_size, cfg.hidden_size)?,
        };
        let q8 = precision == Precision::Q8;
        let source = weights.source();
        let encoder = Encoder::load(&cfg, source, pack, device, dtype, kernels, q8, max_tokens)?;
        phase("encoder loaded");
        let embed_scale = (cfg.hidden_size as f64).sqrt() as f32;

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
                        return Err(EmbedError::Unsupported {
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
                return Err(EmbedError::InvalidOption(format!(
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
        // A GGUF file without Dense layers embeds into another space.
        if let Some(Err(_)) = &gguf_dense {
            hash_part(
                &mut hasher,
                "space",
                b"pooled transformer output, no Dense layers",
            );
        }
        // f32 vectors agree with PyTorch to f32 noise and keep the fingerprint they always
        // had; q8 vectors differ by more, so they never share an index or cache with them.
        if q8 {
            hash_part(
                &mut hasher,
                "precision",
                b"q8: Q8_0 weights, int8 activations",
            );
        }
        let fingerprint = format!("embeddinggemma:{dims}:{}", hex(&hasher.finalize()));

        Ok(GemmaEmbedder {
            dir,
            tokenizer,
            table,
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

    /// For a GGUF file: where its Dense layers came from, or (starting `no Dense layers`)
    /// what its vectors are without them. `None` for a sentence-transformers directory.
    pub fn dense_words(&self) -> Option<&str> {
        self.dense_words.as_deref()
    }

    /// The precision the linear layers run in (`f32` or `q8`; never `auto`).
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Where the weights and tokenizer came from, in words: the packed model's path, or the
    /// source files (and, when a pack could not be used or written, why).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Which tokenizer implementation runs, in words.
    pub fn tokenizer_words(&self) -> &'static str {
        self.tokenizer.words()
    }

    /// The model directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The prompt put before texts of `kind`.
    pub fn prompt(&self, kind: EmbedKind) -> &str {
        match kind {
            EmbedKind::Query => &self.query_prompt,
            EmbedKind::Document => &self.document_prompt,
        }
    }

    /// The device the model runs on.
    pub fn device(&self) -> &Device {
        self.encoder.device()
    }

    /// Token ids the model will see for `text` (prompt, BOS/EOS, truncation applied) and
    /// whether it was truncated.
    pub fn tokenize(&self, text: &str, kind: EmbedKind) -> Result<(Vec<u32>, bool)> {
        let mut v = self.tokenize_batch(&[text], kind)?;
        v.pop()
            .ok_or_else(|| EmbedError::Tokenize("no encoding".into()))
    }

    fn tokenize_batch(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<(Vec<u32>, bool)>> {
        let prompt = self.prompt(kind);
        use rayon::prelude::*;
        // Prompt and text as they are: sentence-transformers strips neither (an empty
        // document is the prompt with its trailing space, 9 tokens).
        let encs = texts
            .par_iter()
            .map(|t| self.tokenizer.encode(&format!("{prompt}{t}")))
            .collect::<Result<Vec<_>>>()?;
        Ok(encs
            .into_iter()
            .map(|mut ids| {
                let truncated = ids.len() > self.max_tokens;
                if truncated {
                    let last = ids[ids.len() - 1];
                    if Some(last) == self.eos_id {
                        ids.truncate(self.max_tokens - 1);
                        ids.push(last);
                    } else {
                        ids.truncate(self.max_tokens);
                    }
                }
                (ids, truncated)
            })
            .collect())
    }

    /// Embeds already-tokenised sequences (each at most `max_tokens` long).
    pub fn embed_ids(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let mut out = vec![Vec::new(); seqs.len()];
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(seqs[i].len()));
        let mut start = 0;
        while start < order.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < order.len()
                && (end == start || tokens + seqs[order[end]].len() <= self.batch_tokens)
            {
                tokens += seqs[order[end]].len();
                end += 1;
            }
            let batch: Vec<&[u32]> = order[start..end].iter().map(|&i| seqs[i]).collect();
            let vecs = self.forward_batch(&batch)?;
            for (k, v) in vecs.into_iter().enumerate() {
                out[order[start + k]] = v;
            }
            start = end;
        }
        Ok(out)
    }

    /// Final hidden states (after the last norm) of each sequence, `len × hidden` values
    /// row-major: what mean pooling averages. For tests and diagnostics.
    pub fn hidden_states(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let (hs, packing) = self.encode_packed(seqs)?;
        let h = self.table.cols();
        let data = hs
            .to_dtype(DType::F32)?
            .to_device(&Device::Cpu)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        Ok(packing
            .seqs
            .iter()
            .map(|&(off, len)| data[off * h..(off + len) * h].to_vec())
            .collect())
    }

    /// Embeds and runs the encoder over `seqs` packed into one `[total, hidden]` tensor.
    fn encode_packed(&self, seqs: &[&[u32]]) -> Result<(Tensor, Packing)> {
        let h = self.table.cols();
        let lengths: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        if let Some(&l) = lengths.iter().max() {
            if l > self.max_tokens {
                return Err(EmbedError::InvalidOption(format!(
                    "sequence of {l} tokens > max {}",
                    self.max_tokens
                )));
            }
        }
        if lengths.contains(&0) {
            return Err(EmbedError::InvalidOption("empty token sequence".into()));
        }
        let packing = Packing::new(&lengths);
        let mut x = Vec::with_capacity(packing.total() * h);
        for s in seqs {
            for &id in s.iter() {
                if !self.table.push_row(id, self.embed_scale, &mut x) {
                    return Err(EmbedError::Tokenize(format!(
                        "token id {id} outside the vocabulary"
                    )));
                }
            }
        }
        let device = self.encoder.device();
        let x = Tensor::from_vec(x, (packing.total(), h), &Device::Cpu)?.to_device(device)?;
        let hs = self.encoder.forward(&x, &packing)?;
        Ok((hs, packing))
    }

    /// One packed forward pass: pooled, projected, normalised vectors (full size).
    fn forward_batch(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let h = self.table.cols();
        let device = self.encoder.device();
        let (hs, packing) = self.encode_packed(seqs)?;
        // Mean pooling over every real token.
        let pooled = if device.is_cpu() && hs.dtype() == DType::F32 {
            let data = hs.flatten_all()?.to_vec1::<f32>()?;
            let mut pooled = Vec::with_capacity(seqs.len() * h);
            for &(off, len) in &packing.seqs {
                let mut acc = vec![0f64; h];
                for row in data[off * h..(off + len) * h].chunks_exact(h) {
                    for (a, &v) in acc.iter_mut().zip(row) {
                        *a += v as f64;
                    }
                }
                pooled.extend(acc.iter().map(|a| (a / len as f64) as f32));
            }
            Tensor::from_vec(pooled, (seqs.len(), h), device)?
        } else {
            let hs = hs.to_dtype(DType::F32)?;
            let rows = packing
                .seqs
                .iter()
                .map(|&(off, len)| hs.narrow(0, off, len)?.mean_keepdim(0))
                .collect::<candle_core::Result<Vec<_>>>()?;
            Tensor::cat(&rows, 0)?
        };
        let mut y = pooled;
        for d in &self.dense {
            y = d.weight.forward(&y)?;
        }
        let y = y.to_device(&Device::Cpu)?.to_vec2::<f32>()?;
        Ok(y.into_iter()
            .map(|mut v| {
                if self.normalize || self.dims < self.full_dims {
                    l2_normalize(&mut v);
                }
                v
            })
            .collect())
    }
}

/// What a GGUF file without Dense layers embeds into, in words.
pub const GGUF_WITHOUT_DENSE: &str = "vectors are the file's pooled transformer output, as \
llama.cpp (and OpenClaw's local provider) embed with it: not comparable with EmbeddingGemma's \
sentence embeddings, so kept apart by their own fingerprint (retrieval measures the same on \
LoCoMo). A sentence-transformers copy of the model (with 2_Dense/ and 3_Dense/) beside the \
file or where memoria looks for models adds the Dense layers";

/// Opens a Dense module directory, checking its config against the input `width`: the
/// weights file, its name relative to the model (`2_Dense/model.safetensors`) and the
/// output size.
fn open_dense(ddir: &Path, width: usize) -> Result<(SafeFile, String, usize)> {
    let dc_path = ddir.join("config.json");
    let dc: DenseConfig = read_json(&dc_path)?;
    let unsupported = |reason: String| EmbedError::Unsupported {
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

/// The packed model of one load: the one opened, or where a new one goes and what it is
/// made from.
struct PackPlan {
    path: PathBuf,
    pack: Option<Pack>,
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
fn open_pack(
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
    fn writes(&self) -> bool {
        self.pack.is_none() && self.sources.is_some() && self.unwritable.is_none()
    }

    /// Writes the pack when none was used (`digest`: the fingerprint state after the source
    /// files), and says where the model came from.
    fn finish(
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

impl Embedder for GemmaEmbedder {
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Embedding>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let toks = self.tokenize_batch(texts, kind)?;
        let seqs: Vec<&[u32]> = toks.iter().map(|(ids, _)| ids.as_slice()).collect();
        let vecs = self.embed_ids(&seqs)?;
        Ok(vecs
            .into_iter()
            .zip(&toks)
            .map(|(mut v, (ids, truncated))| {
                truncate_dims(&mut v, self.dims);
                Embedding {
                    vector: v,
                    tokens: ids.len(),
                    truncated: *truncated,
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
        self.max_tokens
    }
}
