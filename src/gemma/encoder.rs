//! The Gemma3 encoder with bidirectional attention, over packed variable-length sequences.
//!
//! Sequences are concatenated into one `[total_tokens, hidden]` tensor (no padding): the
//! linear layers run as single large matmuls. Two implementations of the rest exist: fused
//! CPU kernels (`kernels.rs`, used on the CPU), which attend sequence by sequence, and plain
//! candle ops (any device and dtype: the GPU's path, and a cross-check in tests), which
//! attend over the sequences padded into one batch (`padded.rs`).

use candle_core::{DType, Device, Tensor};

use crate::gemma::attention_bf16;
use crate::gemma::bf16;
use crate::gemma::error::Result;
use crate::gemma::kernels::{self, AttnDims, Packing};
use crate::gemma::matmul::{Projection, WeightFormat};
use crate::gemma::model_files::{GemmaConfig, LayerKind};
use crate::gemma::pack::Pack;
use crate::gemma::padded::Padded;
use crate::gemma::precision::Precision;
use crate::gemma::profile::{time, time_synced, Step};
use crate::gemma::weights::TensorSource;
use crate::simd::extensions;

/// Which implementation runs the non-matmul work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// Fused CPU kernels (f32 on CPU only).
    Fused,
    /// Plain candle ops (any device and dtype).
    Generic,
}

/// A `(1 + weight)` RMSNorm weight, kept both as host values and as a device tensor.
#[derive(Debug)]
struct Norm {
    host: Vec<f32>,
    tensor: Tensor,
}

impl Norm {
    fn load(
        f: &dyn TensorSource,
        name: &str,
        n: usize,
        scale: f32,
        device: &Device,
    ) -> Result<Self> {
        let mut host = f.norm_weight(name, n)?;
        for w in &mut host {
            *w *= scale;
        }
        // Norm weights stay f32 on every device: the norm itself is computed in f32.
        let tensor = Tensor::from_slice(&host, n, device)?;
        Ok(Norm { host, tensor })
    }
}

#[derive(Debug)]
struct Layer {
    kind: LayerKind,
    input_norm: Norm,
    q_norm: Norm,
    k_norm: Norm,
    post_attn_norm: Norm,
    pre_ff_norm: Norm,
    post_ff_norm: Norm,
    // Projections in PyTorch's `[out, in]` layout.
    /// `[q | k | v]` projection, `[(H + 2 KV) D, hidden]`.
    wqkv: Projection,
    /// `[hidden, H D]`.
    wo: Projection,
    /// `[gate | up]`, `[2 I, hidden]`.
    wgu: Projection,
    /// `[hidden, I]`.
    wd: Projection,
}

/// cos/sin tables `[max_pos, head_dim / 2]` for one RoPE base.
#[derive(Debug)]
struct Rope {
    cos: Vec<f32>,
    sin: Vec<f32>,
    cos_t: Tensor,
    sin_t: Tensor,
}

impl Rope {
    fn new(base: f64, head_dim: usize, max_pos: usize, device: &Device) -> Result<Self> {
        let half = head_dim / 2;
        // As transformers computes it: inv_freq = 1 / base^(2j / D) in f32; angle = pos *
        // inv_freq in f32.
        let inv: Vec<f32> = (0..half)
            .map(|j| 1.0f32 / (base as f32).powf((2 * j) as f32 / head_dim as f32))
            .collect();
        let mut cos = Vec::with_capacity(max_pos * half);
        let mut sin = Vec::with_capacity(max_pos * half);
        for p in 0..max_pos {
            for &f in &inv {
                let a = (p as f32) * f;
                cos.push((a as f64).cos() as f32);
                sin.push((a as f64).sin() as f32);
            }
        }
        let cos_t = Tensor::from_slice(&cos, (max_pos, half), device)?;
        let sin_t = Tensor::from_slice(&sin, (max_pos, half), device)?;
        Ok(Rope {
            cos,
            sin,
            cos_t,
            sin_t,
        })
    }
}

/// The encoder weights and tables.
#[derive(Debug)]
pub struct Encoder {
    cfg: GemmaConfig,
    layers: Vec<Layer>,
    final_norm: Norm,
    rope_local: Rope,
    rope_global: Rope,
    device: Device,
    dtype: DType,
    kernels: Kernels,
    /// Attention in bf16 arithmetic (`attention_bf16.rs`): see [`bf16_attention`].
    bf16: bool,
}

/// Whether attention runs in bf16 arithmetic (`attention_bf16.rs`) for `precision` on this
/// CPU, with the fused kernels: always in `bf16`; in `q8` where bf16 products outrun f32's,
/// on AMX tiles or AMD's AVX512-BF16 (Zen 4: attention was a quarter of q8's document time
/// in f32 and a sixth in bf16, 1679 → 1939 tokens/s; the golden worst cosine moved from
/// 0.99969 to 0.99968). The fingerprint says which.
pub(crate) fn bf16_attention(precision: Precision, head_dim: usize) -> bool {
    match (precision, attention_bf16::packed_kernel(head_dim)) {
        (Precision::Bf16, _) => true,
        (Precision::Q8, Some(bf16::Kernel::Amx)) => true,
        (Precision::Q8, Some(bf16::Kernel::Avx512Bf16)) => extensions().bf16_fast,
        _ => false,
    }
}

impl Encoder {
    /// Loads every tensor but the embedding table from `file` (names without `model.`), the
    /// fused kernels' projections from `pack` when it holds them, in the format of
    /// `precision` (f16 panels for `f32`, Q8_0 for `q8`, bf16 for `bf16`). `kernels` is the
    /// load's choice (`Fused` only for f32 on the CPU).
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        cfg: &GemmaConfig,
        file: &dyn TensorSource,
        pack: Option<&Pack>,
        device: &Device,
        dtype: DType,
        kernels: Kernels,
        precision: Precision,
        max_pos: usize,
    ) -> Result<Self> {
        let h = cfg.hidden_size;
        let hd = cfg.head_dim;
        let (qw, kw) = (cfg.num_heads * hd, cfg.num_kv_heads * hd);
        let i = cfg.intermediate_size;
        debug_assert!(kernels == Kernels::Generic || (device.is_cpu() && dtype == DType::F32));
        let format = match kernels {
            Kernels::Fused => match precision {
                Precision::Q8 => WeightFormat::Q8,
                Precision::Bf16 => WeightFormat::Bf16,
                Precision::F32 | Precision::Auto => WeightFormat::Half,
            },
            Kernels::Generic => WeightFormat::Tensor,
        };
        let mut layers = Vec::with_capacity(cfg.num_layers);
        for (l, &kind) in cfg.layer_kinds.iter().enumerate() {
            let p = format!("layers.{l}");
            let prefix = format!("{p}.");
            let proj = |parts: &[(&str, usize)], cols: usize| -> Result<Projection> {
                Projection::load(file, pack, "", &prefix, parts, cols, format, device, dtype)
            };
            let norm = |name: &str, n: usize, scale: f32| -> Result<Norm> {
                Norm::load(file, &format!("{p}.{name}"), n, scale, device)
            };
            let wqkv = proj(
                &[
                    ("self_attn.q_proj.weight", qw),
                    ("self_attn.k_proj.weight", kw),
                    ("self_attn.v_proj.weight", kw),
                ],
                h,
            )?;
            let wo = proj(&[("self_attn.o_proj.weight", h)], qw)?;
            let wgu = proj(&[("mlp.gate_proj.weight", i), ("mlp.up_proj.weight", i)], h)?;
            let wd = proj(&[("mlp.down_proj.weight", h)], i)?;
            layers.push(Layer {
                kind,
                input_norm: norm("input_layernorm.weight", h, 1.0)?,
                // The attention scale is folded into the q norm (exact for powers of two).
                q_norm: norm("self_attn.q_norm.weight", hd, cfg.attn_scale as f32)?,
                k_norm: norm("self_attn.k_norm.weight", hd, 1.0)?,
                post_attn_norm: norm("post_attention_layernorm.weight", h, 1.0)?,
                pre_ff_norm: norm("pre_feedforward_layernorm.weight", h, 1.0)?,
                post_ff_norm: norm("post_feedforward_layernorm.weight", h, 1.0)?,
                wqkv,
                wo,
                wgu,
                wd,
            });
        }
        let final_norm = Norm::load(file, "norm.weight", h, 1.0, device)?;
        let rope_local = Rope::new(cfg.rope_local_theta, hd, max_pos, device)?;
        let rope_global = Rope::new(cfg.rope_theta, hd, max_pos, device)?;
        Ok(Encoder {
            cfg: cfg.clone(),
            layers,
            final_norm,
            rope_local,
            rope_global,
            device: device.clone(),
            dtype,
            kernels,
            bf16: kernels == Kernels::Fused && bf16_attention(precision, hd),
        })
    }

    /// Whether attention runs in bf16 arithmetic ([`bf16_attention`]).
    pub fn bf16_attention(&self) -> bool {
        self.bf16
    }

    /// The device the encoder's weights are on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Which implementation runs the non-matmul work.
    pub fn kernels(&self) -> Kernels {
        self.kernels
    }

    /// Every projection, in load order.
    pub fn projections(&self) -> impl Iterator<Item = &Projection> {
        self.layers
            .iter()
            .flat_map(|l| [&l.wqkv, &l.wo, &l.wgu, &l.wd])
    }

    fn dims(&self) -> AttnDims {
        AttnDims {
            heads: self.cfg.num_heads,
            kv_heads: self.cfg.num_kv_heads,
            head_dim: self.cfg.head_dim,
        }
    }

    fn rope(&self, kind: LayerKind) -> &Rope {
        match kind {
            LayerKind::Full => &self.rope_global,
            LayerKind::Sliding => &self.rope_local,
        }
    }

    fn window(&self, kind: LayerKind) -> Option<usize> {
        match kind {
            LayerKind::Full => None,
            LayerKind::Sliding => Some(self.cfg.window),
        }
    }

    /// Runs the encoder on scaled embeddings `x` (`[total_tokens, hidden]`, packed as
    /// `packing` says) and returns the final-normed hidden states, same shape. The
    /// candle-op path attends over `padded` ([`pad`](Self::pad) of the same packing),
    /// made here when `None`.
    pub fn forward(
        &self,
        x: &Tensor,
        packing: &Packing,
        padded: Option<&Padded>,
    ) -> Result<Tensor> {
        match (self.kernels, padded) {
            (Kernels::Fused, _) => self.forward_fused(x, packing),
            (Kernels::Generic, Some(padded)) => self.forward_generic(x, packing, padded),
            (Kernels::Generic, None) => {
                let padded = Padded::new(packing, self.cfg.window, &self.device)?;
                self.forward_generic(x, packing, &padded)
            }
        }
    }

    /// The padded layout of `packing` on this encoder's device, for an encoder that pads
    /// ([`pads`](Self::pads)); `None` for the fused kernels.
    pub(crate) fn pad(&self, packing: &Packing) -> Result<Option<Padded>> {
        match self.pads() {
            true => Ok(Some(Padded::new(packing, self.cfg.window, &self.device)?)),
            false => Ok(None),
        }
    }

    fn forward_fused(&self, x: &Tensor, packing: &Packing) -> Result<Tensor> {
        let eps = self.cfg.rms_norm_eps as f32;
        let dims = self.dims();
        let norm = |x: &Tensor, w: &Norm| -> Result<Tensor> {
            let op = kernels::RmsNorm { w1: &w.host, eps };
            time(Step::Norms, || Ok(x.apply_op1_no_bwd(&op)?))
        };
        let add_norm = |x: &Tensor, o: &Tensor, w: &Norm| -> Result<Tensor> {
            let op = kernels::AddRmsNorm { w1: &w.host, eps };
            time(Step::Norms, || Ok(x.apply_op2_no_bwd(o, &op)?))
        };
        let mut x = x.clone();
        for layer in &self.layers {
            let rope = self.rope(layer.kind);
            let h = norm(&x, &layer.input_norm)?;
            let qkv = time(Step::LinearQkv, || layer.wqkv.forward(&h))?;
            let qk = kernels::QkNormRope {
                dims,
                q_w1: &layer.q_norm.host,
                k_w1: &layer.k_norm.host,
                eps,
                cos: &rope.cos,
                sin: &rope.sin,
                positions: &packing.positions,
            };
            let planar = time(Step::QkNormRope, || qkv.apply_op1_no_bwd(&qk))?;
            let attention = kernels::PackedAttention {
                dims,
                packing,
                window: self.window(layer.kind),
                bf16: self.bf16,
            };
            let attn = time(Step::Attention, || planar.apply_op1_no_bwd(&attention))?;
            let o = time(Step::LinearO, || layer.wo.forward(&attn))?;
            x = add_norm(&x, &o, &layer.post_attn_norm)?;
            let h = norm(&x, &layer.pre_ff_norm)?;
            let gu = time(Step::LinearGateUp, || layer.wgu.forward(&h))?;
            let act = time(Step::GeluMul, || gu.apply_op1_no_bwd(&kernels::GeluMul))?;
            let dn = time(Step::LinearDown, || layer.wd.forward(&act))?;
            x = add_norm(&x, &dn, &layer.post_ff_norm)?;
        }
        norm(&x, &self.final_norm)
    }

    /// Whether the pass pads its sequences (the candle-op path, `padded.rs`): then a batch
    /// costs its sequences × its longest, not its tokens.
    pub fn pads(&self) -> bool {
        self.kernels == Kernels::Generic
    }

    /// The pass in candle ops, for any device and dtype (a GPU's, and the CPU's generic
    /// kernels). The residual stream stays f32 whatever the working dtype: every norm runs
    /// in f32, as Gemma's reference computes them, and RoPE on the normed q and k too; only
    /// the products' inputs are cast to the working dtype (bf16 on a GPU: tensor cores, f32
    /// sums). Attention runs batched over the padded sequences (`padded.rs`).
    fn forward_generic(&self, x: &Tensor, packing: &Packing, padded: &Padded) -> Result<Tensor> {
        let cfg = &self.cfg;
        let t = packing.total();
        let dims = self.dims();
        let (nh, nkv, hd) = (dims.heads, dims.kv_heads, dims.head_dim);
        let (qw, kw) = (dims.q_width(), dims.kv_width());
        let eps = cfg.rms_norm_eps as f32;
        let dev = &self.device;
        // Copies from the host come first (here and in `pad`): a copy from pageable memory
        // waits until the device has finished what was queued before it.
        let pos: Vec<u32> = packing.positions.iter().map(|&p| p as u32).collect();
        let pos = Tensor::from_vec(pos, t, dev)?;
        let tables: Vec<(Tensor, Tensor)> = [&self.rope_local, &self.rope_global]
            .iter()
            .map(|r| -> Result<(Tensor, Tensor)> {
                Ok((
                    r.cos_t.index_select(&pos, 0)?,
                    r.sin_t.index_select(&pos, 0)?,
                ))
            })
            .collect::<Result<_>>()?;
        let norm = |x: &Tensor, w: &Norm| -> Result<Tensor> {
            let x = x.to_dtype(DType::F32)?.contiguous()?;
            Ok(candle_nn::ops::rms_norm(&x, &w.tensor, eps)?)
        };
        let mut x = x.to_dtype(DType::F32)?;
        for layer in &self.layers {
            let (cos, sin) = match layer.kind {
                LayerKind::Sliding => &tables[0],
                LayerKind::Full => &tables[1],
            };
            let h = time_synced(dev, Step::Norms, || {
                Ok(norm(&x, &layer.input_norm)?.to_dtype(self.dtype)?)
            })?;
            let qkv = time_synced(dev, Step::LinearQkv, || layer.wqkv.forward(&h))?;
            // q or k: per-head norm, then RoPE, in f32.
            let rotated = |start: usize, heads: usize, w: &Norm| -> Result<Tensor> {
                let z = qkv.narrow(1, start, heads * hd)?.reshape((t * heads, hd))?;
                let z = norm(&z, w)?.reshape((1, t, heads, hd))?;
                let z = candle_nn::rotary_emb::rope_thd(&z, cos, sin)?;
                Ok(z.reshape((t, heads * hd))?.to_dtype(self.dtype)?)
            };
            let (q, k, v) = time_synced(dev, Step::QkNormRope, || {
                let v = qkv.narrow(1, qw + kw, kw)?.contiguous()?;
                Ok((
                    rotated(0, nh, &layer.q_norm)?,
                    rotated(qw, nkv, &layer.k_norm)?,
                    v,
                ))
            })?;
            let sliding = layer.kind == LayerKind::Sliding;
            let attn = time_synced(dev, Step::Attention, || {
                padded.attention(&q, &k, &v, dims, sliding)
            })?;
            let o = time_synced(dev, Step::LinearO, || layer.wo.forward(&attn))?;
            let h = time_synced(dev, Step::Norms, || {
                x = (&x + norm(&o, &layer.post_attn_norm)?)?;
                Ok(norm(&x, &layer.pre_ff_norm)?.to_dtype(self.dtype)?)
            })?;
            let gu = time_synced(dev, Step::LinearGateUp, || layer.wgu.forward(&h))?;
            let act = time_synced(dev, Step::GeluMul, || {
                let i = cfg.intermediate_size;
                Ok((gu.narrow(1, 0, i)?.gelu()? * gu.narrow(1, i, i)?)?)
            })?;
            let dn = time_synced(dev, Step::LinearDown, || layer.wd.forward(&act))?;
            x = time_synced(dev, Step::Norms, || {
                Ok((&x + norm(&dn, &layer.post_ff_norm)?)?)
            })?;
        }
        time_synced(dev, Step::Norms, || norm(&x, &self.final_norm))
    }
}
