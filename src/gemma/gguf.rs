//! GGUF model files: llama.cpp's format, and what OpenClaw's local provider runs
//! (`local.modelPath`, by default `hf:ggml-org/embeddinggemma-300M-GGUF/…-Q8_0.gguf`).
//!
//! A GGUF file holds the whole model in one file: metadata (the hyper-parameters and the
//! SentencePiece vocabulary) and the tensors, under llama.cpp's names (`blk.0.attn_q.weight`),
//! most of them Q8_0. [`GgufFile`] serves them to the encoder under the sentence-transformers
//! names it loads ([`TensorSource`]), dequantised; the Q8_0 kernels re-quantise them without
//! loss (a dequantised Q8_0 block quantises back to the same scale and integers).
//!
//! What differs from the safetensors model, and how memoria bridges it:
//! - **Norm weights:** llama.cpp's converter stores Gemma's RMSNorm weights as `1 + w`.
//! - **Configuration:** from the `gemma-embedding.*` keys; what llama.cpp hard-codes for the
//!   architecture (every 6th layer global, `query_pre_attn_scalar` = head size) memoria
//!   hard-codes too.
//! - **Tokenizer:** rebuilt from the vocabulary ([`GgufFile::tokenizer_json`]) as the
//!   `tokenizer.json` transformers derives from the same SentencePiece model: merges from the
//!   pieces' scores, user-defined and control pieces first. A real-model test checks it equals
//!   the published `tokenizer.json`, merge for merge.
//! - **Dense layers:** the published file has none (llama.cpp#18677): its pooled output lies
//!   in another space than EmbeddingGemma's. [`GgufFile::dense`] lists the ones a file made
//!   with `--sentence-transformers-dense-modules` has; `load.rs` and `dense.rs` decide what to do without.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::GgmlDType;
use serde::Serialize;
use serde_json::json;

use crate::gemma::error::{GemmaError, Result};
use crate::gemma::model_files::{io_error, GemmaConfig};
use crate::gemma::weights::{
    decode_into, dequantize_q8_0, read_at, sample_at, EmbeddingTable, RowFormat, StoredDtype,
    TensorSource,
};

/// The architecture llama.cpp's converter writes for EmbeddingGemma.
pub const ARCH: &str = "gemma-embedding";

/// Whether `path` names a GGUF file (by its extension, as llama.cpp's tools do).
pub fn is_gguf(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
}

/// llama.cpp's name for a tensor the encoder loads by its sentence-transformers name;
/// `None` for names outside the table (such as `dense_2.weight`, the same in both).
pub fn gguf_name(name: &str) -> Option<String> {
    const LAYER: &[(&str, &str)] = &[
        ("self_attn.q_proj.weight", "attn_q.weight"),
        ("self_attn.k_proj.weight", "attn_k.weight"),
        ("self_attn.v_proj.weight", "attn_v.weight"),
        ("self_attn.o_proj.weight", "attn_output.weight"),
        ("self_attn.q_norm.weight", "attn_q_norm.weight"),
        ("self_attn.k_norm.weight", "attn_k_norm.weight"),
        ("input_layernorm.weight", "attn_norm.weight"),
        (
            "post_attention_layernorm.weight",
            "post_attention_norm.weight",
        ),
        ("pre_feedforward_layernorm.weight", "ffn_norm.weight"),
        ("post_feedforward_layernorm.weight", "post_ffw_norm.weight"),
        ("mlp.gate_proj.weight", "ffn_gate.weight"),
        ("mlp.up_proj.weight", "ffn_up.weight"),
        ("mlp.down_proj.weight", "ffn_down.weight"),
    ];
    match name {
        "embed_tokens.weight" => return Some("token_embd.weight".into()),
        "norm.weight" => return Some("output_norm.weight".into()),
        _ => {}
    }
    let rest = name.strip_prefix("layers.")?;
    let (layer, tensor) = rest.split_once('.')?;
    layer.parse::<usize>().ok()?;
    LAYER
        .iter()
        .find(|(hf, _)| *hf == tensor)
        .map(|(_, gg)| format!("blk.{layer}.{gg}"))
}

/// An open GGUF file: its parsed header, and positioned reads of its tensors.
pub struct GgufFile {
    path: PathBuf,
    file: File,
    len: u64,
    content: Content,
}

impl std::fmt::Debug for GgufFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufFile")
            .field("path", &self.path)
            .field("tensors", &self.content.tensor_infos.len())
            .finish()
    }
}

/// A tensor's place in the file.
struct Located {
    dtype: GgmlDType,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

impl GgufFile {
    /// Opens and parses a GGUF file, refusing any architecture but EmbeddingGemma's.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| io_error(path, e))?;
        let len = file.metadata().map_err(|e| io_error(path, e))?.len();
        // The header is parsed from a map of the file: the reader asks for its position
        // before every string, a system call on a `File`, and the vocabulary is 262,144
        // strings. Only the header's pages are read.
        // SAFETY: a read-only map of the model file, not expected to change while loading
        // (as for every mmap-based loader); the parser checks every length against it.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io_error(path, e))?;
        let content =
            Content::read(&mut std::io::Cursor::new(&map[..])).map_err(|e| GemmaError::Gguf {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        drop(map);
        let gguf = GgufFile {
            path: path.to_path_buf(),
            file,
            len,
            content,
        };
        match gguf.string("general.architecture") {
            Some(ARCH) => Ok(gguf),
            other => Err(gguf.bad(format!(
                "architecture {:?}: memoria runs EmbeddingGemma files (`{ARCH}`)",
                other.unwrap_or("(none)")
            ))),
        }
    }

    fn bad(&self, message: String) -> GemmaError {
        GemmaError::Gguf {
            path: self.path.clone(),
            message,
        }
    }

    fn string(&self, key: &str) -> Option<&str> {
        match self.content.metadata.get(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    fn number(&self, key: &str) -> Option<f64> {
        Some(match self.content.metadata.get(key)? {
            Value::U8(v) => *v as f64,
            Value::I8(v) => *v as f64,
            Value::U16(v) => *v as f64,
            Value::I16(v) => *v as f64,
            Value::U32(v) => *v as f64,
            Value::I32(v) => *v as f64,
            Value::U64(v) => *v as f64,
            Value::I64(v) => *v as f64,
            Value::F32(v) => *v as f64,
            Value::F64(v) => *v,
            _ => return None,
        })
    }

    fn flag(&self, key: &str) -> Option<bool> {
        match self.content.metadata.get(key) {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        }
    }

    /// `gemma-embedding.<key>`, required.
    fn hyper(&self, key: &str) -> Result<f64> {
        let full = format!("{ARCH}.{key}");
        self.number(&full)
            .ok_or_else(|| self.bad(format!("metadata key `{full}` is missing")))
    }

    /// The model's configuration, from the metadata and the token table's shape; validated
    /// as `config.json` is.
    pub fn config(&self) -> Result<GemmaConfig> {
        let hidden = self.hyper("embedding_length")?;
        let heads = self.hyper("attention.head_count")?;
        let head_dim = match self.number(&format!("{ARCH}.attention.key_length")) {
            Some(d) => d,
            None if heads > 0.0 => (hidden / heads).floor(),
            None => 0.0,
        };
        let vocab = self.locate("token_embd.weight")?.shape.first().copied();
        let token = |key: &str| self.number(&format!("tokenizer.ggml.{key}"));
        // What llama.cpp hard-codes for `gemma-embedding`: every 6th layer attends globally,
        // attention logits are scaled by 1/sqrt(head size), GELU (tanh), bidirectional.
        let config = json!({
            "architectures": ["Gemma3TextModel"],
            "model_type": "gemma3_text",
            "hidden_size": hidden,
            "intermediate_size": self.hyper("feed_forward_length")?,
            "num_hidden_layers": self.hyper("block_count")?,
            "num_attention_heads": heads,
            "num_key_value_heads": self.hyper("attention.head_count_kv")?,
            "head_dim": head_dim,
            "vocab_size": vocab.unwrap_or(0),
            "rms_norm_eps": self.hyper("attention.layer_norm_rms_epsilon")?,
            "rope_theta": self.number(&format!("{ARCH}.rope.freq_base")).unwrap_or(1_000_000.0),
            "rope_local_base_freq":
                self.number(&format!("{ARCH}.rope.freq_base_swa")).unwrap_or(10_000.0),
            "query_pre_attn_scalar": head_dim,
            "sliding_window": self.hyper("attention.sliding_window")?,
            "_sliding_window_pattern": 6,
            "use_bidirectional_attention": true,
            "hidden_activation": "gelu_pytorch_tanh",
            "max_position_embeddings": self.hyper("context_length")?,
            "bos_token_id": token("bos_token_id"),
            "eos_token_id": token("eos_token_id"),
            "pad_token_id": token("padding_token_id"),
        });
        // Integers where config.json has integers (serde reads `768.0` as no usize).
        let config = integral(config);
        GemmaConfig::from_json(&config.to_string(), &self.path)
    }

    /// The Dense projections the file carries (`dense_2.weight`, `dense_3.weight`, in
    /// order), as `(name, out, in)`; empty for files converted without them.
    pub fn dense(&self) -> Vec<(String, usize, usize)> {
        ["dense_2.weight", "dense_3.weight"]
            .iter()
            .filter_map(|name| {
                let info = self.content.tensor_infos.get(*name)?;
                match info.shape.dims() {
                    &[out, inp] => Some((name.to_string(), out, inp)),
                    _ => None,
                }
            })
            .collect()
    }

    /// The token embedding table, memory-mapped (`[vocab, hidden]`).
    pub fn table(&self, rows: usize, cols: usize) -> Result<EmbeddingTable> {
        let name = "token_embd.weight";
        let t = self.located(name, &[rows, cols])?;
        let format = match t.dtype {
            GgmlDType::F32 => RowFormat::Plain(StoredDtype::F32),
            GgmlDType::F16 => RowFormat::Plain(StoredDtype::F16),
            GgmlDType::BF16 => RowFormat::Plain(StoredDtype::BF16),
            GgmlDType::Q8_0 => RowFormat::Q8_0,
            other => return Err(self.dtype_error(name, other)),
        };
        EmbeddingTable::map(&self.file, &self.path, t.start, t.end, format, rows, cols)
    }

    /// The header (metadata and tensor table), the bytes before the tensor data.
    pub fn header(&self) -> Result<Vec<u8>> {
        self.read(0, self.content.tensor_data_offset as usize)
    }

    /// Tensor names, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .content
            .tensor_infos
            .keys()
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names
    }

    /// A few KiB of a tensor's data (start, middle, end), for fingerprinting.
    pub fn sample(&self, name: &str) -> Result<Vec<u8>> {
        let t = self.locate(name)?;
        sample_at(&self.file, &self.path, t.start, t.end)
    }

    fn read(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        read_at(&self.file, &self.path, offset, len)
    }

    fn dtype_error(&self, name: &str, dtype: GgmlDType) -> GemmaError {
        GemmaError::TensorDtype {
            path: self.path.clone(),
            name: name.to_string(),
            dtype: format!("{dtype:?} (memoria reads F32, F16, BF16 and Q8_0)"),
        }
    }

    /// Where a tensor lies, by its GGUF name.
    fn locate(&self, name: &str) -> Result<Located> {
        let info =
            self.content
                .tensor_infos
                .get(name)
                .ok_or_else(|| GemmaError::MissingTensor {
                    path: self.path.clone(),
                    name: name.to_string(),
                })?;
        let shape = info.shape.dims().to_vec();
        let elems = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        let (block, size) = (info.ggml_dtype.block_size(), info.ggml_dtype.type_size());
        let bytes = elems
            .filter(|e| e % block == 0)
            .and_then(|e| (e / block).checked_mul(size));
        let start = self.content.tensor_data_offset.checked_add(info.offset);
        match (bytes, start) {
            (Some(bytes), Some(start)) if start + bytes as u64 <= self.len => Ok(Located {
                dtype: info.ggml_dtype,
                shape,
                start: start as usize,
                end: start as usize + bytes,
            }),
            _ => Err(self.bad(format!(
                "tensor `{name}` ({:?}, shape {shape:?}) does not fit in the file",
                info.ggml_dtype
            ))),
        }
    }

    /// [`Self::locate`], checking the shape.
    fn located(&self, name: &str, shape: &[usize]) -> Result<Located> {
        let t = self.locate(name)?;
        if t.shape != shape {
            return Err(GemmaError::TensorShape {
                path: self.path.clone(),
                name: name.to_string(),
                expected: shape.to_vec(),
                actual: t.shape,
            });
        }
        Ok(t)
    }

    /// The `tokenizer.json` transformers derives from the SentencePiece model this file's
    /// vocabulary came from (see the module doc), for the tokenizer loaders.
    pub fn tokenizer_json(&self) -> Result<Vec<u8>> {
        match self.string("tokenizer.ggml.model") {
            Some("llama") => {}
            other => {
                return Err(self.bad(format!(
                    "tokenizer model {:?} (expected `llama`, SentencePiece)",
                    other.unwrap_or("(none)")
                )))
            }
        }
        let array = |key: &str| match self.content.metadata.get(key) {
            Some(Value::Array(v)) => Ok(v),
            _ => Err(self.bad(format!("metadata key `{key}` is missing or not an array"))),
        };
        let tokens = array("tokenizer.ggml.tokens")?;
        let scores = array("tokenizer.ggml.scores")?;
        let types = array("tokenizer.ggml.token_type")?;
        if scores.len() != tokens.len() || types.len() != tokens.len() {
            return Err(self.bad(format!(
                "{} tokens, {} scores and {} token types",
                tokens.len(),
                scores.len(),
                types.len()
            )));
        }
        let mut pieces = Vec::with_capacity(tokens.len());
        for (i, ((t, s), k)) in tokens.iter().zip(scores).zip(types).enumerate() {
            let (Value::String(text), Value::F32(score), Ok(kind)) = (t, s, k.to_i32()) else {
                return Err(self.bad(format!("token {i}: not a (string, f32, type) entry")));
            };
            pieces.push(Piece::new(text, *score, kind));
        }
        let unk = self
            .number("tokenizer.ggml.unknown_token_id")
            .map(|id| id as usize);
        let special = |key: &str, add: bool| -> Result<Option<(String, u32)>> {
            if !add {
                return Ok(None);
            }
            let id = self
                .number(&format!("tokenizer.ggml.{key}_token_id"))
                .ok_or_else(|| self.bad(format!("tokenizer.ggml.{key}_token_id is missing")))?
                as usize;
            let piece = pieces
                .get(id)
                .ok_or_else(|| self.bad(format!("{key} token {id} outside the vocabulary")))?;
            Ok(Some((piece.text.clone(), id as u32)))
        };
        let bos = special(
            "bos",
            self.flag("tokenizer.ggml.add_bos_token").unwrap_or(true),
        )?;
        let eos = special(
            "eos",
            self.flag("tokenizer.ggml.add_eos_token").unwrap_or(false),
        )?;
        let json = spm_tokenizer_json(&pieces, unk, bos, eos);
        serde_json::to_vec(&json).map_err(|e| self.bad(format!("tokenizer: {e}")))
    }
}

/// Rounds every whole-valued float of a JSON tree to an integer.
fn integral(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        J::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && (0.0..9e15).contains(&f) => J::from(f as u64),
            _ => J::Number(n),
        },
        J::Array(a) => J::Array(a.into_iter().map(integral).collect()),
        J::Object(o) => J::Object(o.into_iter().map(|(k, v)| (k, integral(v))).collect()),
        other => other,
    }
}

impl TensorSource for GgufFile {
    fn path(&self) -> &Path {
        &self.path
    }

    fn read_f32(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
        let name = gguf_name(name).unwrap_or_else(|| name.to_string());
        let t = self.located(&name, shape)?;
        let bytes = self.read(t.start, t.end - t.start)?;
        let mut out = Vec::with_capacity(shape.iter().product());
        match t.dtype {
            GgmlDType::F32 => decode_into(&bytes, StoredDtype::F32, &mut out),
            GgmlDType::F16 => decode_into(&bytes, StoredDtype::F16, &mut out),
            GgmlDType::BF16 => decode_into(&bytes, StoredDtype::BF16, &mut out),
            GgmlDType::Q8_0 => dequantize_q8_0(&bytes, &mut out),
            other => return Err(self.dtype_error(&name, other)),
        }
        Ok(out)
    }

    fn norm_weight(&self, name: &str, n: usize) -> Result<Vec<f32>> {
        // Stored as `1 + w` already.
        self.read_f32(name, &[n])
    }
}

/// SentencePiece piece types, as llama.cpp stores them.
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// One vocabulary entry, in `tokenizer.json`'s spelling.
#[derive(Debug, Clone, PartialEq)]
struct Piece {
    text: String,
    score: f32,
    kind: i32,
}

impl Piece {
    fn new(text: &str, score: f32, kind: i32) -> Piece {
        // The converter writes user-defined pieces with spaces where the vocabulary has '▁'.
        let text = if kind == USER_DEFINED {
            text.replace(' ', "\u{2581}")
        } else {
            text.to_string()
        };
        Piece { text, score, kind }
    }

    /// The score merges are ranked by: the converter stores -1000 for control and
    /// user-defined pieces, where the SentencePiece model (and so transformers) has 0.
    fn rank_score(&self) -> f32 {
        match self.kind {
            CONTROL | USER_DEFINED => 0.0,
            _ => self.score,
        }
    }
}

/// Merges as transformers' `SentencePieceExtractor` derives them: for every piece, each split
/// into two pieces of the vocabulary (ordered by the parts' ids), all ranked by the merged
/// piece's score, then the longer left part, then the longer right part (a stable sort).
fn spm_merges(pieces: &[Piece]) -> Vec<(&str, &str)> {
    let ids: HashMap<&str, usize> = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| (p.text.as_str(), i))
        .collect();
    let mut merges: Vec<(&str, &str, f32)> = Vec::new();
    let mut local = Vec::new();
    for piece in pieces {
        let text = piece.text.as_str();
        local.clear();
        for (at, _) in text.char_indices().skip(1) {
            let (l, r) = text.split_at(at);
            if let (Some(&li), Some(&ri)) = (ids.get(l), ids.get(r)) {
                local.push((li, ri, l, r));
            }
        }
        local.sort_by_key(|&(li, ri, _, _)| (li, ri));
        merges.extend(local.iter().map(|&(_, _, l, r)| (l, r, piece.rank_score())));
    }
    let chars = |s: &str| s.chars().count();
    // Scores compare as Python compares them: -0.0 (the piece with score zero, stored
    // negated) ties with 0.0. The scores are finite.
    merges.sort_by(|a, b| {
        b.2.partial_cmp(&a.2)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| chars(b.0).cmp(&chars(a.0)))
            .then_with(|| chars(b.1).cmp(&chars(a.1)))
    });
    merges.into_iter().map(|(l, r, _)| (l, r)).collect()
}

#[derive(Serialize)]
struct AddedToken<'a> {
    id: usize,
    content: &'a str,
    single_word: bool,
    lstrip: bool,
    rstrip: bool,
    normalized: bool,
    special: bool,
}

/// Gemma's `tokenizer.json` for a SentencePiece vocabulary: byte-fallback BPE over text with
/// spaces replaced by '▁', control and user-defined pieces matched first, `bos`/`eos` around.
fn spm_tokenizer_json(
    pieces: &[Piece],
    unk: Option<usize>,
    bos: Option<(String, u32)>,
    eos: Option<(String, u32)>,
) -> serde_json::Value {
    let added: Vec<AddedToken> = pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.kind, UNKNOWN | CONTROL | USER_DEFINED))
        .map(|(id, p)| AddedToken {
            id,
            content: &p.text,
            single_word: false,
            lstrip: false,
            rstrip: false,
            normalized: false,
            special: p.kind != USER_DEFINED,
        })
        .collect();
    let vocab: serde_json::Map<String, serde_json::Value> = pieces
        .iter()
        .enumerate()
        .map(|(id, p)| (p.text.clone(), json!(id)))
        .collect();
    let merges: Vec<[&str; 2]> = spm_merges(pieces)
        .into_iter()
        .map(|(l, r)| [l, r])
        .collect();
    let ends: Vec<&(String, u32)> = bos.iter().chain(eos.iter()).collect();
    let special =
        |t: &(String, u32), type_id: u32| json!({"SpecialToken": {"id": t.0, "type_id": type_id}});
    let sequence = |name: &str, type_id: u32| json!({"Sequence": {"id": name, "type_id": type_id}});
    let single: Vec<_> = bos
        .iter()
        .map(|t| special(t, 0))
        .chain([sequence("A", 0)])
        .chain(eos.iter().map(|t| special(t, 0)))
        .collect();
    let mut pair = single.clone();
    pair.extend(bos.iter().map(|t| special(t, 1)));
    pair.push(sequence("B", 1));
    pair.extend(eos.iter().map(|t| special(t, 1)));
    let special_tokens: serde_json::Map<String, serde_json::Value> = ends
        .iter()
        .map(|(text, id)| {
            (
                text.clone(),
                json!({"id": text, "ids": [id], "tokens": [text]}),
            )
        })
        .collect();
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"},
        "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious", "invert": false},
        "post_processor": {"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": special_tokens},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u{2581}"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"}
        ]},
        "model": {
            "type": "BPE",
            "dropout": null,
            "unk_token": unk.and_then(|i| pieces.get(i)).map(|p| p.text.as_str()),
            "continuing_subword_prefix": null,
            "end_of_word_suffix": null,
            "fuse_unk": true,
            "byte_fallback": true,
            "ignore_merges": false,
            "vocab": vocab,
            "merges": merges,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NORMAL: i32 = 1;

    #[test]
    fn names_map_to_llama_cpp() {
        let table = [
            ("embed_tokens.weight", Some("token_embd.weight")),
            ("norm.weight", Some("output_norm.weight")),
            (
                "layers.0.self_attn.q_proj.weight",
                Some("blk.0.attn_q.weight"),
            ),
            (
                "layers.23.self_attn.o_proj.weight",
                Some("blk.23.attn_output.weight"),
            ),
            (
                "layers.5.self_attn.k_norm.weight",
                Some("blk.5.attn_k_norm.weight"),
            ),
            (
                "layers.1.input_layernorm.weight",
                Some("blk.1.attn_norm.weight"),
            ),
            (
                "layers.1.post_attention_layernorm.weight",
                Some("blk.1.post_attention_norm.weight"),
            ),
            (
                "layers.1.pre_feedforward_layernorm.weight",
                Some("blk.1.ffn_norm.weight"),
            ),
            (
                "layers.1.post_feedforward_layernorm.weight",
                Some("blk.1.post_ffw_norm.weight"),
            ),
            (
                "layers.2.mlp.gate_proj.weight",
                Some("blk.2.ffn_gate.weight"),
            ),
            (
                "layers.2.mlp.down_proj.weight",
                Some("blk.2.ffn_down.weight"),
            ),
            ("layers.x.mlp.up_proj.weight", None),
            ("layers.2.mlp.other.weight", None),
            ("dense_2.weight", None),
        ];
        for (hf, gguf) in table {
            assert_eq!(gguf_name(hf).as_deref(), gguf, "{hf}");
        }
    }

    #[test]
    fn q8_0_blocks_dequantise() {
        // Scale 0.5 (f16 0x3800), then 32 int8s: -128, -1, 0, 1, 127, then zeros.
        let mut block = vec![0x00, 0x38];
        let qs: [i8; 5] = [-128, -1, 0, 1, 127];
        block.extend(qs.iter().map(|&q| q as u8));
        block.resize(34, 0);
        let mut out = Vec::new();
        dequantize_q8_0(&block, &mut out);
        assert_eq!(out.len(), 32);
        assert_eq!(&out[..5], &[-64.0, -0.5, 0.0, 0.5, 63.5]);
        assert!(out[5..].iter().all(|&v| v == 0.0));
    }

    fn piece(text: &str, score: f32, kind: i32) -> Piece {
        Piece::new(text, score, kind)
    }

    #[test]
    fn merges_follow_scores_then_lengths() {
        let pieces = [
            piece("<unk>", -1000.0, CONTROL),
            piece("a", -1.0, NORMAL),
            piece("b", -2.0, NORMAL),
            piece("c", -3.0, NORMAL),
            piece("ab", -5.0, NORMAL),
            piece("bc", -4.0, NORMAL),
            piece("abc", -6.0, NORMAL),
            // Score -0.0 (stored negated) ties with the user-defined pieces' 0, so the id
            // order puts it first.
            piece("\u{2581}a", -0.0, NORMAL),
            // A user-defined run of spaces: '▁' in the vocabulary, ranked first.
            piece("  ", -1000.0, USER_DEFINED),
            piece("\u{2581}", -7.0, NORMAL),
        ];
        assert_eq!(pieces[8].text, "\u{2581}\u{2581}");
        let merges = spm_merges(&pieces);
        assert_eq!(
            merges,
            vec![
                ("\u{2581}", "a"),
                ("\u{2581}", "\u{2581}"),
                ("b", "c"),
                ("a", "b"),
                // "abc" splits two ways; the longer left part first.
                ("ab", "c"),
                ("a", "bc"),
            ]
        );
    }

    /// With the real files (MEMORIA_TEST_MODEL_DIR, MEMORIA_TEST_GGUF_DIR): the tokenizer
    /// rebuilt from the GGUF vocabulary is the published `tokenizer.json`, merge for merge.
    #[test]
    fn published_tokenizer_json_is_rebuilt_from_the_gguf_vocabulary() {
        let (Ok(model), Ok(gguf)) = (
            std::env::var("MEMORIA_TEST_MODEL_DIR"),
            std::env::var("MEMORIA_TEST_GGUF_DIR"),
        ) else {
            eprintln!("note: MEMORIA_TEST_MODEL_DIR or MEMORIA_TEST_GGUF_DIR unset; skipping");
            return;
        };
        let file = GgufFile::open(&Path::new(&gguf).join("embeddinggemma-300m-Q8_0.gguf"))
            .expect("open GGUF");
        let ours: serde_json::Value =
            serde_json::from_slice(&file.tokenizer_json().expect("tokenizer")).unwrap();
        let text = std::fs::read_to_string(Path::new(&model).join("tokenizer.json")).unwrap();
        let published: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in ["normalizer", "pre_tokenizer", "decoder"] {
            assert_eq!(ours[key], published[key], "{key}");
        }
        let (a, b) = (&ours["model"], &published["model"]);
        assert_eq!(a["vocab"], b["vocab"]);
        let merges = a["merges"].as_array().unwrap();
        assert_eq!(merges.len(), b["merges"].as_array().unwrap().len());
        let first = merges
            .iter()
            .zip(b["merges"].as_array().unwrap())
            .position(|(x, y)| x != y);
        assert_eq!(
            first,
            None,
            "merges differ from {:?}",
            first.map(|i| &merges[i])
        );
        // The same added tokens (the published file has one beyond the vocabulary).
        let added = |v: &serde_json::Value| -> Vec<(u64, String)> {
            v["added_tokens"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    (
                        t["id"].as_u64().unwrap(),
                        t["content"].as_str().unwrap().into(),
                    )
                })
                .filter(|(id, _)| *id < 262_144)
                .collect()
        };
        assert_eq!(added(&ours), added(&published));
    }

    #[test]
    fn tokenizer_json_loads_and_encodes() {
        let mut pieces = vec![
            piece("<pad>", -1000.0, CONTROL),
            piece("<eos>", -1000.0, CONTROL),
            piece("<bos>", -1000.0, CONTROL),
            piece("<unk>", -1000.0, CONTROL),
        ];
        for (text, score) in [("\u{2581}", -1.0), ("h", -2.0), ("i", -3.0), ("hi", -4.0)] {
            pieces.push(piece(text, score, NORMAL));
        }
        pieces.extend((0..=255u8).map(|b| piece(&format!("<0x{b:02X}>"), 0.0, 6)));
        let json = spm_tokenizer_json(
            &pieces,
            Some(3),
            Some(("<bos>".into(), 2)),
            Some(("<eos>".into(), 1)),
        );
        let tok =
            tokenizers::Tokenizer::from_bytes(json.to_string().as_bytes()).expect("a tokenizer");
        let enc = tok.encode("hi h!", true).expect("encodes");
        // <bos> hi ▁ h <0x21> <eos>
        assert_eq!(enc.get_ids(), &[2, 7, 4, 5, 8 + 0x21, 1]);
    }
}
