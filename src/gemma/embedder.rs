//! The model, loaded: [`GemmaEmbedder`], and how it turns texts into vectors.
//!
//! EmbeddingGemma-300m is a Gemma3 transformer run as an encoder (bidirectional
//! attention), followed by mean pooling, two Dense projections and L2 normalisation; run
//! natively on candle here, it matches PyTorch sentence-transformers to f32 noise. A text
//! goes through it in four steps:
//!
//! 1. **Prompt and tokens.** The prompt for what the text is for ([`Prompt`]) is put before
//!    it, unstripped, and the whole is tokenised (BOS and EOS included). Past the token
//!    limit the sequence is cut, keeping its EOS ([`GemmaEmbedder::tokenize`]).
//! 2. **Packing.** Sequences are sorted by length and packed into forward passes of at
//!    most `batch_tokens` tokens (a longer sequence goes alone), one `[total, hidden]`
//!    tensor each, with no padding: attention keeps each sequence to itself
//!    (`kernels.rs`' `Packing`).
//! 3. **Encoder.** Token embeddings (scaled by √hidden) through the layers (`encoder.rs`).
//! 4. **Sentence vector.** The mean of every token's final hidden state, the Dense
//!    projections (`dense.rs`), L2 normalisation; for a Matryoshka size, truncation and
//!    normalisation again ([`truncate_dims`](crate::gemma::truncate_dims)).
//!
//! How the model is loaded (configuration, tokenizer, weights, the fingerprint) is
//! `load.rs`; this file is the loaded model and its use.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};

use crate::gemma::dense::Dense;
use crate::gemma::encoder::Encoder;
use crate::gemma::error::{GemmaError, Result};
use crate::gemma::kernels::Packing;
use crate::gemma::options::{Prompt, NO_TITLE};
use crate::gemma::padded::Padded;
use crate::gemma::precision::Precision;
use crate::gemma::profile::{time_synced, Step};
use crate::gemma::tokenizer::TextTokenizer;
use crate::gemma::weights::EmbeddingTable;
use crate::simd::l2_normalize;

/// EmbeddingGemma: tokenizer, Gemma3 encoder, mean pooling, dense projections, L2 norm.
///
/// Made by [`GemmaEmbedder::load`] (`load.rs`, which fills these fields).
pub struct GemmaEmbedder {
    /// The model directory, or the GGUF file.
    pub(super) dir: PathBuf,
    pub(super) tokenizer: TextTokenizer,
    /// The token embedding table (`vocab × hidden`).
    pub(super) table: EmbeddingTable,
    /// On a GPU, the same table scaled by √hidden, in f32 on the device: a pass uploads
    /// token ids instead of gathering and uploading their rows.
    pub(super) device_table: Option<Tensor>,
    /// Gemma scales token embeddings by √hidden before the first layer.
    pub(super) embed_scale: f32,
    pub(super) encoder: Encoder,
    /// The projections after pooling, in order (`2_Dense`, `3_Dense`).
    pub(super) dense: Vec<Dense>,
    /// Whether the pipeline ends with L2 normalisation (`modules.json`'s `Normalize`).
    pub(super) normalize: bool,
    pub(super) query_prompt: String,
    pub(super) document_prompt: String,
    /// Token limit, prompt and BOS/EOS included.
    pub(super) max_tokens: usize,
    /// Kept as the last token when a sequence is cut.
    pub(super) eos_id: Option<u32>,
    /// The last projection's output size.
    pub(super) full_dims: usize,
    /// The output size asked for (`full_dims` or a Matryoshka size below it).
    pub(super) dims: usize,
    /// Tokens per forward pass.
    pub(super) batch_tokens: usize,
    pub(super) fingerprint: String,
    /// Where the weights and tokenizer came from, in words.
    pub(super) origin: String,
    /// The linear layers' precision: `f32`, `q8` or `bf16` (a GPU's: its working dtype).
    pub(super) precision: Precision,
    /// Where the Dense layers came from, or why there are none, for a GGUF file.
    pub(super) dense_words: Option<String>,
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
    /// For a GGUF file: where its Dense layers came from, or (starting `no Dense layers`)
    /// what its vectors are without them. `None` for a sentence-transformers directory.
    pub fn dense_words(&self) -> Option<&str> {
        self.dense_words.as_deref()
    }

    /// Whether attention runs in bf16 arithmetic: in `bf16`, and in `q8` where bf16
    /// outruns f32 (AMX, AMD's AVX512-BF16: `encoder::bf16_attention`).
    pub fn bf16_attention(&self) -> bool {
        self.encoder.bf16_attention()
    }

    /// The precision the linear layers run in (`f32`, `q8` or `bf16`; never `auto`).
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

    /// The model directory (or GGUF file).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Length of the vectors the model gives: its full size, or the Matryoshka size the
    /// options asked for.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Identity of the model and its output settings: `embeddinggemma:<dims>:<sha256>` over
    /// the configuration, tokenizer, weights (sampled), prompts, size, token limit and
    /// precision. It changes whenever vectors would.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Largest token count (prompt, BOS and EOS included) before truncation.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The prompt put before texts of `kind`.
    pub fn prompt(&self, prompt: Prompt) -> &str {
        match prompt {
            Prompt::Query => &self.query_prompt,
            Prompt::Document => &self.document_prompt,
        }
    }

    /// The device the model runs on.
    pub fn device(&self) -> &Device {
        self.encoder.device()
    }

    /// Token ids the model will see for `text` behind `prompt` (prompt, BOS/EOS, truncation
    /// applied) and whether it was truncated.
    pub fn tokenize(&self, text: &str, prompt: Prompt) -> Result<(Vec<u32>, bool)> {
        let mut v = self.tokenize_batch(&[text], prompt)?;
        v.pop()
            .ok_or_else(|| GemmaError::Tokenize("no encoding".into()))
    }

    /// [`tokenize`](Self::tokenize) for many texts (in parallel), in order.
    pub fn tokenize_batch(&self, texts: &[&str], prompt: Prompt) -> Result<Vec<(Vec<u32>, bool)>> {
        let prompt = self.prompt(prompt);
        let inputs: Vec<(&str, &str)> = texts.iter().map(|t| (prompt, *t)).collect();
        self.tokenize_prompted(&inputs)
    }

    /// Whether the document prompt has a title to fill: `title: none` as EmbeddingGemma
    /// was trained with (a model directory's own prompt may not).
    pub fn takes_titles(&self) -> bool {
        self.document_prompt.contains(NO_TITLE)
    }

    /// Token ids of documents `(title, text)` behind the document prompt with each title in
    /// place of its `none` ([`takes_titles`](Self::takes_titles)); an empty title keeps
    /// `none`.
    pub fn tokenize_documents(&self, documents: &[(&str, &str)]) -> Result<Vec<(Vec<u32>, bool)>> {
        let prompts: Vec<String> = documents
            .iter()
            .map(
                |(title, _)| match title.is_empty() || !self.takes_titles() {
                    true => self.document_prompt.clone(),
                    false => self
                        .document_prompt
                        .replacen(NO_TITLE, &format!("title: {title}"), 1),
                },
            )
            .collect();
        let inputs: Vec<(&str, &str)> = prompts
            .iter()
            .zip(documents)
            .map(|(prompt, (_, text))| (prompt.as_str(), *text))
            .collect();
        self.tokenize_prompted(&inputs)
    }

    /// Token ids of `(prompt, text)` pairs, truncated to the token limit.
    fn tokenize_prompted(&self, inputs: &[(&str, &str)]) -> Result<Vec<(Vec<u32>, bool)>> {
        use rayon::prelude::*;
        // Prompt and text as they are: sentence-transformers strips neither (an empty
        // document is the prompt with its trailing space, 9 tokens).
        let encs = inputs
            .par_iter()
            .map(|(prompt, t)| self.tokenizer.encode(&format!("{prompt}{t}")))
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

    /// Embeds already-tokenised sequences (each at most `max_tokens` long): the model's
    /// full-size vectors, before any Matryoshka truncation to [`dims`](Self::dims).
    pub fn embed_ids(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let mut out = vec![Vec::new(); seqs.len()];
        let mut order: Vec<usize> = (0..seqs.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(seqs[i].len()));
        let mut start = 0;
        while start < order.len() {
            // Longest first: a padding encoder's batch costs its sequences × the first one.
            let longest = seqs[order[start]].len();
            let mut end = start;
            let mut tokens = 0;
            while end < order.len() {
                tokens += match self.encoder.pads() {
                    true => longest,
                    false => seqs[order[end]].len(),
                };
                if end > start && tokens > self.batch_tokens {
                    break;
                }
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
        let (hs, packing, _) = self.encode_packed(seqs)?;
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

    /// Embeds and runs the encoder over `seqs` packed into one `[total, hidden]` tensor;
    /// also gives the packing and, for an encoder that pads, the padded layout.
    fn encode_packed(&self, seqs: &[&[u32]]) -> Result<(Tensor, Packing, Option<Padded>)> {
        let h = self.table.cols();
        let lengths: Vec<usize> = seqs.iter().map(|s| s.len()).collect();
        if let Some(&l) = lengths.iter().max() {
            if l > self.max_tokens {
                return Err(GemmaError::InvalidOption(format!(
                    "sequence of {l} tokens > max {}",
                    self.max_tokens
                )));
            }
        }
        if lengths.contains(&0) {
            return Err(GemmaError::InvalidOption("empty token sequence".into()));
        }
        let packing = Packing::new(&lengths);
        let device = self.encoder.device();
        let padded = self.encoder.pad(&packing)?;
        let outside =
            |id: u32| GemmaError::Tokenize(format!("token id {id} outside the vocabulary"));
        let x = match &self.device_table {
            Some(table) => {
                let ids: Vec<u32> = seqs.iter().flat_map(|s| s.iter().copied()).collect();
                if let Some(&id) = ids.iter().find(|&&id| id as usize >= self.table.rows()) {
                    return Err(outside(id));
                }
                let ids = Tensor::from_vec(ids, packing.total(), device)?;
                time_synced(device, Step::Lookup, || Ok(table.index_select(&ids, 0)?))?
            }
            None => {
                let mut x = Vec::with_capacity(packing.total() * h);
                for s in seqs {
                    for &id in s.iter() {
                        if !self.table.push_row(id, self.embed_scale, &mut x) {
                            return Err(outside(id));
                        }
                    }
                }
                Tensor::from_vec(x, (packing.total(), h), &Device::Cpu)?.to_device(device)?
            }
        };
        // The pass runs on a rayon worker, so each of its parallel steps starts inside the
        // pool (the worker takes the first task itself while the other steals) instead of
        // waking the pool from outside and sleeping until the step is done: a query has
        // ~200 such steps (`rayon::scope` runs its closure on a worker).
        let forward = || self.encoder.forward(&x, &packing, padded.as_ref());
        let hs = match rayon::current_thread_index() {
            Some(_) => forward(),
            None => rayon::scope(|_| forward()),
        }?;
        Ok((hs, packing, padded))
    }

    /// One packed forward pass: pooled, projected, normalised vectors (full size).
    fn forward_batch(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let h = self.table.cols();
        let device = self.encoder.device();
        let (hs, packing, padded) = self.encode_packed(seqs)?;
        let pool = || -> Result<Tensor> {
            // Mean pooling over every real token: on the padded layout for an encoder that
            // pads, else on the host (the fused CPU kernels' f32 rows, summed in f64).
            let mut y = match &padded {
                Some(padded) => padded.mean(&hs.to_dtype(DType::F32)?)?,
                None => {
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
                }
            };
            for d in &self.dense {
                y = d.weight.forward(&y)?;
            }
            Ok(y)
        };
        let y = time_synced(device, Step::Pooling, pool)?;
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
