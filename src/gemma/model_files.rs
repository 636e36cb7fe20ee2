//! The JSON files of a sentence-transformers EmbeddingGemma directory, read into typed
//! configuration with errors that name the file.
//!
//! A sentence-transformers directory describes the model in several small files beside the
//! weights: `config.json` (the transformer's hyper-parameters: sizes, heads, which layers
//! attend within a sliding window, RoPE bases, special tokens: [`GemmaConfig`]),
//! `modules.json` (the pipeline: transformer, pooling, Dense modules, normalisation:
//! [`Pipeline`]), `config_sentence_transformers.json` (the prompts: [`StConfig`]),
//! `sentence_bert_config.json` (the token limit: [`SbertConfig`]), `1_Pooling/config.json`
//! ([`PoolingConfig`]) and each Dense module's `config.json` ([`DenseConfig`]). memoria runs
//! exactly one pipeline, EmbeddingGemma's, so anything these files describe that it does not
//! run (another architecture, CLS pooling, a Dense bias, lower-casing) is refused by name
//! rather than run wrongly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::gemma::error::{GemmaError, Result};

/// Reads and parses a JSON file, naming the file in every error.
pub fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T> {
    let bytes = read_file(path)?;
    serde_json::from_slice(&bytes).map_err(|e| GemmaError::Json {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Reads a whole file; a missing file is [`GemmaError::MissingFile`].
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io_error(path, e))
}

/// An I/O error on `path`: [`GemmaError::MissingFile`] when it is not there, else
/// [`GemmaError::Io`].
pub(crate) fn io_error(path: &Path, e: std::io::Error) -> GemmaError {
    if e.kind() == std::io::ErrorKind::NotFound {
        GemmaError::MissingFile {
            path: path.to_path_buf(),
        }
    } else {
        GemmaError::Io {
            path: path.to_path_buf(),
            source: e,
        }
    }
}

/// Attention span of one encoder layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerKind {
    /// Sees every token of the sequence; RoPE base `rope_theta`.
    Full,
    /// Sees keys with |i − j| < `window`; RoPE base `rope_local_base_freq`.
    Sliding,
}

/// `config.json` as the file says it (only what the encoder uses).
#[derive(Debug, Clone, Deserialize)]
struct RawConfig {
    #[serde(default)]
    architectures: Vec<String>,
    #[serde(default)]
    model_type: Option<String>,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: usize,
    head_dim: usize,
    vocab_size: usize,
    #[serde(default = "default_eps")]
    rms_norm_eps: f64,
    #[serde(default = "default_theta")]
    rope_theta: f64,
    #[serde(default = "default_local_theta")]
    rope_local_base_freq: f64,
    #[serde(default)]
    query_pre_attn_scalar: Option<f64>,
    #[serde(default)]
    sliding_window: Option<usize>,
    #[serde(default)]
    layer_types: Option<Vec<String>>,
    #[serde(default)]
    sliding_window_pattern: Option<usize>,
    #[serde(default, rename = "_sliding_window_pattern")]
    sliding_window_pattern_private: Option<usize>,
    #[serde(default)]
    use_bidirectional_attention: Option<bool>,
    #[serde(default)]
    hidden_activation: Option<String>,
    #[serde(default)]
    hidden_act: Option<String>,
    #[serde(default)]
    attn_logit_softcapping: Option<f64>,
    #[serde(default)]
    final_logit_softcapping: Option<f64>,
    #[serde(default)]
    rope_scaling: Option<serde_json::Value>,
    #[serde(default)]
    attention_bias: Option<bool>,
    #[serde(default = "default_max_pos")]
    max_position_embeddings: usize,
    #[serde(default)]
    bos_token_id: Option<u32>,
    #[serde(default)]
    eos_token_id: Option<serde_json::Value>,
    #[serde(default)]
    pad_token_id: Option<u32>,
}

fn default_eps() -> f64 {
    1e-6
}
fn default_theta() -> f64 {
    1_000_000.0
}
fn default_local_theta() -> f64 {
    10_000.0
}
fn default_max_pos() -> usize {
    2048
}

/// The validated encoder configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct GemmaConfig {
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub vocab_size: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub rope_local_theta: f64,
    /// Attention logits are multiplied by `query_pre_attn_scalar^-0.5`.
    pub attn_scale: f64,
    /// Bidirectional half-window: sliding layers see keys with |i − j| < `window`
    /// (`sliding_window / 2 + 1`, as transformers does for bidirectional Gemma3).
    pub window: usize,
    pub layer_kinds: Vec<LayerKind>,
    pub max_position_embeddings: usize,
    pub bos_token_id: Option<u32>,
    pub eos_token_id: Option<u32>,
    pub pad_token_id: Option<u32>,
}

impl GemmaConfig {
    /// Parses and validates the text of a `config.json` (`path` names it in errors).
    pub fn from_json(text: &str, path: &Path) -> Result<Self> {
        let raw: RawConfig = serde_json::from_str(text).map_err(|e| GemmaError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::from_raw(raw, path)
    }

    fn from_raw(raw: RawConfig, path: &Path) -> Result<Self> {
        let unsupported = |reason: String| GemmaError::Unsupported {
            path: path.to_path_buf(),
            reason,
        };
        let arch_ok = raw.architectures.is_empty()
            || raw
                .architectures
                .iter()
                .any(|a| matches!(a.as_str(), "Gemma3TextModel" | "Gemma3ForCausalLM"));
        if !arch_ok {
            return Err(unsupported(format!(
                "architecture {:?} (expected Gemma3TextModel)",
                raw.architectures
            )));
        }
        if let Some(mt) = &raw.model_type {
            if mt != "gemma3_text" {
                return Err(unsupported(format!(
                    "model_type `{mt}` (expected gemma3_text)"
                )));
            }
        }
        if raw.use_bidirectional_attention == Some(false) {
            return Err(unsupported(
                "use_bidirectional_attention is false: not an embedding model".into(),
            ));
        }
        let act = raw
            .hidden_activation
            .clone()
            .or(raw.hidden_act.clone())
            .unwrap_or_else(|| "gelu_pytorch_tanh".into());
        if act != "gelu_pytorch_tanh" && act != "gelu_tanh" {
            return Err(unsupported(format!("hidden activation `{act}`")));
        }
        if raw.attn_logit_softcapping.is_some() {
            return Err(unsupported(
                "attn_logit_softcapping is not supported".into(),
            ));
        }
        let _ = raw.final_logit_softcapping;
        if let Some(rs) = &raw.rope_scaling {
            if !rs.is_null() {
                return Err(unsupported("rope_scaling is not supported".into()));
            }
        }
        if raw.attention_bias == Some(true) {
            return Err(unsupported("attention_bias is not supported".into()));
        }
        if raw.hidden_size == 0
            || raw.num_hidden_layers == 0
            || raw.num_attention_heads == 0
            || raw.num_key_value_heads == 0
            || raw.head_dim == 0
            || !raw.head_dim.is_multiple_of(2)
            || raw.intermediate_size == 0
            || raw.vocab_size == 0
        {
            return Err(unsupported("zero or odd dimension in config".into()));
        }
        if !raw
            .num_attention_heads
            .is_multiple_of(raw.num_key_value_heads)
        {
            return Err(unsupported(format!(
                "num_attention_heads {} is not a multiple of num_key_value_heads {}",
                raw.num_attention_heads, raw.num_key_value_heads
            )));
        }
        let layer_kinds = match &raw.layer_types {
            Some(types) => {
                if types.len() != raw.num_hidden_layers {
                    return Err(unsupported(format!(
                        "layer_types has {} entries for {} layers",
                        types.len(),
                        raw.num_hidden_layers
                    )));
                }
                types
                    .iter()
                    .map(|t| match t.as_str() {
                        "sliding_attention" => Ok(LayerKind::Sliding),
                        "full_attention" => Ok(LayerKind::Full),
                        other => Err(unsupported(format!("layer type `{other}`"))),
                    })
                    .collect::<Result<Vec<_>>>()?
            }
            None => {
                let pattern = raw
                    .sliding_window_pattern
                    .or(raw.sliding_window_pattern_private)
                    .unwrap_or(6)
                    .max(1);
                (0..raw.num_hidden_layers)
                    .map(|i| {
                        if (i + 1) % pattern == 0 {
                            LayerKind::Full
                        } else {
                            LayerKind::Sliding
                        }
                    })
                    .collect()
            }
        };
        let has_sliding = layer_kinds.contains(&LayerKind::Sliding);
        let window = match raw.sliding_window {
            Some(w) if w > 0 => w / 2 + 1,
            _ if !has_sliding => usize::MAX,
            _ => return Err(unsupported("sliding layers but no sliding_window".into())),
        };
        let scalar = raw.query_pre_attn_scalar.unwrap_or(raw.head_dim as f64);
        if scalar.is_nan() || scalar <= 0.0 {
            return Err(unsupported("query_pre_attn_scalar must be positive".into()));
        }
        let eos = match &raw.eos_token_id {
            Some(serde_json::Value::Number(n)) => n.as_u64().map(|v| v as u32),
            Some(serde_json::Value::Array(a)) => {
                a.first().and_then(|v| v.as_u64()).map(|v| v as u32)
            }
            _ => None,
        };
        Ok(GemmaConfig {
            hidden_size: raw.hidden_size,
            intermediate_size: raw.intermediate_size,
            num_layers: raw.num_hidden_layers,
            num_heads: raw.num_attention_heads,
            num_kv_heads: raw.num_key_value_heads,
            head_dim: raw.head_dim,
            vocab_size: raw.vocab_size,
            rms_norm_eps: raw.rms_norm_eps,
            rope_theta: raw.rope_theta,
            rope_local_theta: raw.rope_local_base_freq,
            attn_scale: 1.0 / scalar.sqrt(),
            window,
            layer_kinds,
            max_position_embeddings: raw.max_position_embeddings.max(1),
            bos_token_id: raw.bos_token_id,
            eos_token_id: eos,
            pad_token_id: raw.pad_token_id,
        })
    }
}

/// One entry of `modules.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct ModuleEntry {
    #[serde(default)]
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
}

/// `config_sentence_transformers.json` (prompts only).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StConfig {
    #[serde(default)]
    pub prompts: HashMap<String, String>,
}

/// `sentence_bert_config.json`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SbertConfig {
    #[serde(default)]
    pub max_seq_length: Option<usize>,
    #[serde(default)]
    pub do_lower_case: Option<bool>,
}

/// `N_Dense/config.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct DenseConfig {
    pub in_features: usize,
    pub out_features: usize,
    #[serde(default)]
    pub bias: bool,
    #[serde(default)]
    pub activation_function: Option<String>,
}

/// `1_Pooling/config.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct PoolingConfig {
    #[serde(default)]
    pub pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pub pooling_mode_cls_token: bool,
    #[serde(default)]
    pub pooling_mode_max_tokens: bool,
    #[serde(default)]
    pub pooling_mode_lasttoken: bool,
    #[serde(default)]
    pub pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pub pooling_mode_weightedmean_tokens: bool,
    #[serde(default = "yes")]
    pub include_prompt: bool,
}

fn yes() -> bool {
    true
}

/// The pipeline that `modules.json` describes, reduced to what EmbeddingGemma uses.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// Dense layer directories, in order (e.g. `2_Dense`, `3_Dense`).
    pub dense_dirs: Vec<PathBuf>,
    /// Whether a Normalize module ends the pipeline.
    pub normalize: bool,
}

impl Pipeline {
    /// Reads `modules.json` in `dir`, checking every module is one we can run.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let path = dir.join("modules.json");
        let modules: Vec<ModuleEntry> = read_json(&path)?;
        let mut dense_dirs = Vec::new();
        let mut normalize = false;
        let mut saw_transformer = false;
        for m in &modules {
            let short = m.kind.rsplit('.').next().unwrap_or(&m.kind);
            match short {
                "Transformer" => {
                    if !m.path.is_empty() {
                        return Err(GemmaError::Unsupported {
                            path,
                            reason: format!("Transformer module in sub-directory `{}`", m.path),
                        });
                    }
                    saw_transformer = true;
                }
                "Pooling" => {
                    let pc: PoolingConfig = read_json(&dir.join(&m.path).join("config.json"))?;
                    let other = pc.pooling_mode_cls_token
                        || pc.pooling_mode_max_tokens
                        || pc.pooling_mode_lasttoken
                        || pc.pooling_mode_mean_sqrt_len_tokens
                        || pc.pooling_mode_weightedmean_tokens;
                    if !pc.pooling_mode_mean_tokens || other || !pc.include_prompt {
                        return Err(GemmaError::Unsupported {
                            path: dir.join(&m.path).join("config.json"),
                            reason: "only mean pooling with include_prompt is supported".into(),
                        });
                    }
                }
                "Dense" => dense_dirs.push(dir.join(&m.path)),
                "Normalize" => normalize = true,
                other => {
                    return Err(GemmaError::Unsupported {
                        path,
                        reason: format!("module type `{other}`"),
                    })
                }
            }
        }
        if !saw_transformer {
            return Err(GemmaError::Unsupported {
                path,
                reason: "no Transformer module".into(),
            });
        }
        Ok(Pipeline {
            dense_dirs,
            normalize,
        })
    }
}
