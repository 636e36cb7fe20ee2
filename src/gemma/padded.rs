//! Attention (and mean pooling) over padded sequences, batched: how the candle-op encoder
//! attends on a GPU (and with the generic kernels on the CPU).
//!
//! The fused CPU kernels attend sequence by sequence inside one packed `[tokens, …]` tensor.
//! On a GPU, a few small kernels per sequence and layer would leave the device idle between
//! launches (256 documents × 24 layers × ~10 kernels is 60,000 launches for one batch).
//! Instead, [`Padded`] gathers the packed rows into a `[sequences, longest, …]` layout,
//! attention runs as two batched matrix products with an additive mask over the padding
//! keys (and, in sliding layers of sequences longer than the window, over keys outside
//! it), and the rows are scattered back into the packed order. Everything else in a layer
//! (norms, projections, the MLP) stays on the packed rows, where padding costs nothing.
//!
//! The sentence vector's mean pooling runs on the same layout: one batched product of each
//! sequence's padded rows with its weights (1 / length, 0 for padding), where a scatter-add
//! into the sums would have one thread per column walk every row of the batch in turn.
//!
//! Padding is kept small by the caller: texts are sorted longest first before they are
//! batched, and a batch's padded size (sequences × longest) is what `batch_tokens` bounds
//! for an encoder that pads ([`Encoder::pads`](crate::gemma::encoder::Encoder::pads)).
//!
//! Scores and softmax run in f32 whatever the working dtype; the products run in it (bf16
//! on a GPU: tensor cores with f32 sums).

use candle_core::{DType, Device, Tensor};

use crate::gemma::error::Result;
use crate::gemma::kernels::{AttnDims, Packing};

/// The padded layout of one packed batch, on the device: built once per forward pass,
/// shared by every layer.
#[derive(Debug)]
pub(crate) struct Padded {
    /// Sequences.
    batch: usize,
    /// The longest sequence's length: every sequence's padded length.
    len: usize,
    /// `[batch × len]`: the packed row each padded slot reads (padding repeats the
    /// sequence's first row; its keys are masked, its outputs never read).
    gather: Tensor,
    /// `[tokens]`: the padded slot each packed row comes back from.
    scatter: Tensor,
    /// `[batch, 1, len]`: 0 for a sequence's keys, −∞ for its padding.
    key_mask: Tensor,
    /// `[batch, 1, len]`: 1 / length for a sequence's rows, 0 for its padding.
    mean_weights: Tensor,
    /// `[len, len]`: 0 where |i − j| < window, −∞ elsewhere; only when a sequence is longer
    /// than the sliding window.
    window_mask: Option<Tensor>,
}

/// Slots, indices and masks of [`Padded`], computed on the host (pure).
#[derive(Debug, PartialEq)]
pub(crate) struct Plan {
    pub batch: usize,
    pub len: usize,
    pub gather: Vec<u32>,
    pub scatter: Vec<u32>,
    pub key_mask: Vec<f32>,
    pub mean_weights: Vec<f32>,
    /// Present when `len > window`.
    pub window_mask: Option<Vec<f32>>,
}

impl Plan {
    /// The padded layout of `packing`, with the window mask of sliding layers that see keys
    /// with |i − j| < `window`.
    pub fn new(packing: &Packing, window: usize) -> Plan {
        let batch = packing.seqs.len();
        let len = packing.seqs.iter().map(|&(_, l)| l).max().unwrap_or(0);
        let mut gather = Vec::with_capacity(batch * len);
        let mut scatter = vec![0u32; packing.total()];
        let mut key_mask = Vec::with_capacity(batch * len);
        let mut mean_weights = Vec::with_capacity(batch * len);
        for (b, &(off, l)) in packing.seqs.iter().enumerate() {
            for i in 0..len {
                if i < l {
                    gather.push((off + i) as u32);
                    scatter[off + i] = (b * len + i) as u32;
                    key_mask.push(0.0);
                    mean_weights.push(1.0 / l as f32);
                } else {
                    gather.push(off as u32);
                    key_mask.push(f32::NEG_INFINITY);
                    mean_weights.push(0.0);
                }
            }
        }
        let window_mask = (len > window).then(|| {
            (0..len)
                .flat_map(|i| {
                    (0..len).map(move |j| match i.abs_diff(j) < window {
                        true => 0.0,
                        false => f32::NEG_INFINITY,
                    })
                })
                .collect()
        });
        Plan {
            batch,
            len,
            gather,
            scatter,
            key_mask,
            mean_weights,
            window_mask,
        }
    }
}

impl Padded {
    /// Uploads the layout of `packing` to `device` (see [`Plan::new`]).
    pub fn new(packing: &Packing, window: usize, device: &Device) -> Result<Self> {
        let plan = Plan::new(packing, window);
        let (batch, len) = (plan.batch, plan.len);
        Ok(Padded {
            batch,
            len,
            gather: Tensor::from_vec(plan.gather, batch * len, device)?,
            scatter: Tensor::from_vec(plan.scatter, packing.total(), device)?,
            key_mask: Tensor::from_vec(plan.key_mask, (batch, 1, len), device)?,
            mean_weights: Tensor::from_vec(plan.mean_weights, (batch, 1, len), device)?,
            window_mask: match plan.window_mask {
                Some(m) => Some(Tensor::from_vec(m, (len, len), device)?),
                None => None,
            },
        })
    }

    /// The mean of each sequence's rows of packed f32 `hs` (`[tokens, hidden]`):
    /// `[sequences, hidden]`, as one batched product of each sequence's padded rows with its
    /// weights (1 / length, 0 for padding).
    pub fn mean(&self, hs: &Tensor) -> Result<Tensor> {
        let rows = hs
            .index_select(&self.gather, 0)?
            .reshape((self.batch, self.len, hs.dim(1)?))?;
        Ok(self.mean_weights.matmul(&rows)?.squeeze(1)?)
    }

    /// Attention of packed `q` (`[tokens, heads × head_dim]`, normed, rotated and scaled)
    /// over packed `k` and `v` (`[tokens, kv_heads × head_dim]`), each sequence to itself:
    /// `[tokens, heads × head_dim]`, in `q`'s dtype. `sliding` keeps each query to the keys
    /// within the window.
    pub fn attention(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        dims: AttnDims,
        sliding: bool,
    ) -> Result<Tensor> {
        let (b, l) = (self.batch, self.len);
        let (nh, nkv, hd) = (dims.heads, dims.kv_heads, dims.head_dim);
        // The query heads that share a key/value head sit next to each other (head h reads
        // kv head h / g, as transformers' `repeat_kv` has it), so each kv head's queries are
        // one `[g × len, head_dim]` matrix and no key or value is repeated.
        let g = nh / nkv;
        let q = q
            .index_select(&self.gather, 0)?
            .reshape((b, l, nkv, g, hd))?
            .permute((0, 2, 3, 1, 4))?
            .contiguous()?
            .reshape((b * nkv, g * l, hd))?;
        let kv = |z: &Tensor| -> Result<Tensor> {
            Ok(z.index_select(&self.gather, 0)?
                .reshape((b, l, nkv, hd))?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((b * nkv, l, hd))?)
        };
        let (k, v) = (kv(k)?, kv(v)?);
        let scores = q.matmul(&k.t()?)?.to_dtype(DType::F32)?;
        let mut scores = scores
            .reshape((b, nkv * g * l, l))?
            .broadcast_add(&self.key_mask)?;
        if let (true, Some(window)) = (sliding, &self.window_mask) {
            scores = scores.reshape((b * nh, l, l))?.broadcast_add(window)?;
        }
        let p = candle_nn::ops::softmax_last_dim(&scores)?
            .to_dtype(q.dtype())?
            .reshape((b * nkv, g * l, l))?;
        let o = p.matmul(&v)?;
        Ok(o.reshape((b, nkv, g, l, hd))?
            .permute((0, 3, 1, 2, 4))?
            .contiguous()?
            .reshape((b * l, nh * hd))?
            .index_select(&self.scatter, 0)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f32 = f32::NEG_INFINITY;

    #[test]
    fn plan_pads_to_the_longest_and_scatters_back() {
        let packing = Packing::new(&[3, 1]);
        let plan = Plan::new(&packing, 8);
        assert_eq!((plan.batch, plan.len), (2, 3));
        // Sequence 1 (row 3) is padded with its own first row twice.
        assert_eq!(plan.gather, vec![0, 1, 2, 3, 3, 3]);
        assert_eq!(plan.scatter, vec![0, 1, 2, 3]);
        assert_eq!(plan.key_mask, vec![0.0, 0.0, 0.0, 0.0, INF, INF]);
        let third = 1.0 / 3.0;
        assert_eq!(plan.mean_weights, vec![third, third, third, 1.0, 0.0, 0.0]);
        assert_eq!(plan.window_mask, None);
    }

    #[test]
    fn plan_masks_the_window_only_past_it() {
        let plan = Plan::new(&Packing::new(&[3]), 2);
        let m = plan.window_mask.expect("len 3 > window 2");
        #[rustfmt::skip]
        assert_eq!(m, vec![
            0.0, 0.0, INF,
            0.0, 0.0, 0.0,
            INF, 0.0, 0.0,
        ]);
        assert_eq!(Plan::new(&Packing::new(&[2]), 2).window_mask, None);
    }

    #[test]
    fn mean_averages_each_sequence_alone() {
        let packing = Packing::new(&[3, 1]);
        let dev = Device::Cpu;
        let hs = Tensor::from_slice(&[1f32, 10., 2., 20., 3., 30., 7., 70.], (4, 2), &dev).unwrap();
        let padded = Padded::new(&packing, 8, &dev).unwrap();
        let mean = padded.mean(&hs).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(mean, vec![vec![2.0, 20.0], vec![7.0, 70.0]]);
    }

    /// Attention through the padded layout equals attention sequence by sequence (a plain
    /// softmax over each sequence's own keys), for grouped query heads and a window.
    #[test]
    fn attention_matches_each_sequence_alone() {
        let dims = AttnDims {
            heads: 4,
            kv_heads: 2,
            head_dim: 3,
        };
        let lengths = [5, 2, 4];
        let packing = Packing::new(&lengths);
        let t = packing.total();
        let val = |i: usize, salt: usize| ((i * 7 + salt * 13) % 11) as f32 / 5.0 - 1.0;
        let qv: Vec<f32> = (0..t * 12).map(|i| val(i, 1)).collect();
        let kvals: Vec<f32> = (0..t * 6).map(|i| val(i, 2)).collect();
        let vvals: Vec<f32> = (0..t * 6).map(|i| val(i, 3)).collect();
        let dev = Device::Cpu;
        let q = Tensor::from_slice(&qv, (t, 12), &dev).unwrap();
        let k = Tensor::from_slice(&kvals, (t, 6), &dev).unwrap();
        let v = Tensor::from_slice(&vvals, (t, 6), &dev).unwrap();
        for (window, sliding) in [(16, false), (3, true)] {
            let padded = Padded::new(&packing, window, &dev).unwrap();
            let got = padded.attention(&q, &k, &v, dims, sliding).unwrap();
            let got = got.to_vec2::<f32>().unwrap();
            for &(off, len) in &packing.seqs {
                for i in 0..len {
                    for h in 0..4 {
                        let kvh = h / 2;
                        let keys: Vec<usize> = (0..len)
                            .filter(|&j| !sliding || i.abs_diff(j) < window)
                            .collect();
                        let s: Vec<f32> = keys
                            .iter()
                            .map(|&j| {
                                (0..3)
                                    .map(|d| {
                                        qv[(off + i) * 12 + h * 3 + d]
                                            * kvals[(off + j) * 6 + kvh * 3 + d]
                                    })
                                    .sum()
                            })
                            .collect();
                        let max = s.iter().cloned().fold(f32::MIN, f32::max);
                        let e: Vec<f32> = s.iter().map(|x| (x - max).exp()).collect();
                        let z: f32 = e.iter().sum();
                        for d in 0..3 {
                            let want: f32 = keys
                                .iter()
                                .zip(&e)
                                .map(|(&j, w)| w / z * vvals[(off + j) * 6 + kvh * 3 + d])
                                .sum();
                            let have = got[off + i][h * 3 + d];
                            assert!((have - want).abs() < 1e-5, "{have} vs {want}");
                        }
                    }
                }
            }
        }
    }
}
