//! CPU kernels for the encoder's non-matmul work, written as candle custom ops.
//!
//! Each op fuses what would otherwise be several candle ops (each a single-threaded pass
//! over memory with its own allocation): RMSNorm with residual add, q/k norm + RoPE,
//! GELU-tanh × up, and packed bidirectional attention over variable-length sequences.
//! They run on rayon (the same pool candle's matmul uses) and are compiled for AVX-512 and
//! AVX2 with runtime dispatch. Only f32 contiguous CPU tensors are accepted: other devices
//! and dtypes take the generic candle path in `encoder.rs`.

// The SIMD paths are x86-64's: elsewhere (aarch64) what only they use goes unused.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_imports, unused_variables)
)]

use candle_core::{bail, CpuStorage, CustomOp1, CustomOp2, Layout, Shape};
use rayon::prelude::*;

use crate::gemma::attention_bf16;
use crate::gemma::cpu::{contiguous_f32, SyncPtr};
use crate::simd::{level, Level};

/// Defines a function compiled three times (AVX-512, AVX2+FMA, baseline) and dispatched
/// on the CPU's features at run time. The body must be safe code.
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn inner($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                /// The kernel compiled for AVX-512.
                ///
                /// # Safety
                /// The CPU must have the features enabled here.
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
                unsafe fn v4($($arg: $ty),*) $(-> $ret)? { inner($($arg),*) }
                /// The kernel compiled for AVX2.
                ///
                /// # Safety
                /// The CPU must have AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
                unsafe fn v3($($arg: $ty),*) $(-> $ret)? { inner($($arg),*) }
                match level() {
                    // SAFETY: the CPU has the features these were compiled for (checked above).
                    Level::Avx512 => return unsafe { v4($($arg),*) },
                    Level::Avx2 => return unsafe { v3($($arg),*) },
                    Level::Scalar => {}
                }
            }
            inner($($arg),*)
        }
    };
}

const LANES: usize = 16;

/// Sum of squares with 16 independent accumulators (vectorises without fast-math).
#[inline(always)]
fn sum_sq(x: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for l in 0..LANES {
            acc[l] += c[l] * c[l];
        }
    }
    let mut s = 0f32;
    for v in chunks.remainder() {
        s += v * v;
    }
    // Pairwise fold of the lanes.
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] += acc[l + w];
        }
    }
    acc[0] + s
}

#[inline(always)]
fn max_of(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for l in 0..LANES {
            acc[l] = if c[l] > acc[l] { c[l] } else { acc[l] };
        }
    }
    let mut m = f32::NEG_INFINITY;
    for &v in chunks.remainder() {
        m = if v > m { v } else { m };
    }
    for &a in &acc {
        m = if a > m { a } else { m };
    }
    m
}

/// e^x to about 2 ulp (Cephes polynomial), branch-free so loops over it vectorise.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const C1: f32 = 0.693_359_4;
    const C2: f32 = -2.121_944_4e-4;
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer
    let xc = x.clamp(-87.0, 88.0);
    let rounded = xc * LOG2E + MAGIC;
    let kf = rounded - MAGIC;
    // The integer k is in the low bits of `rounded`: integer arithmetic that vectorises,
    // where `kf as i32` (a saturating conversion) made LLVM convert lane by lane.
    let k = rounded.to_bits().wrapping_sub(MAGIC.to_bits()) as i32;
    let r = xc - kf * C1 - kf * C2;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    let scale = f32::from_bits(((k + 127) as u32) << 23);
    let v = y * scale;
    if x < -87.0 {
        0.0
    } else {
        v
    }
}

multiversion! {
    /// out = x * rsqrt(mean(x²) + eps) * w1, row by row (`w1` is 1 + weight).
    pub fn rms_norm_rows(x: &[f32], w1: &[f32], eps: f32, out: &mut [f32]) {
        let n = w1.len();
        for (xr, or) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
            let inv = 1.0 / (sum_sq(xr) / n as f32 + eps).sqrt();
            for ((o, &v), &w) in or.iter_mut().zip(xr).zip(w1) {
                *o = (v * inv) * w;
            }
        }
    }
}

multiversion! {
    /// out = x + rms_norm(o) * w1, row by row.
    pub fn add_rms_norm_rows(x: &[f32], o: &[f32], w1: &[f32], eps: f32, out: &mut [f32]) {
        let n = w1.len();
        for ((xr, orow), dst) in x.chunks_exact(n).zip(o.chunks_exact(n)).zip(out.chunks_exact_mut(n)) {
            let inv = 1.0 / (sum_sq(orow) / n as f32 + eps).sqrt();
            for (((d, &xv), &ov), &w) in dst.iter_mut().zip(xr).zip(orow).zip(w1) {
                *d = xv + (ov * inv) * w;
            }
        }
    }
}

multiversion! {
    /// `out[r] = gelu_tanh(gu[r][..n]) * gu[r][n..2n]` for rows of width 2n.
    pub fn gelu_mul(gu: &[f32], n: usize, out: &mut [f32]) {
        const S2PI: f32 = 0.797_884_6; // sqrt(2/pi)
        for (src, dst) in gu.chunks_exact(2 * n).zip(out.chunks_exact_mut(n)) {
            let (gate, up) = src.split_at(n);
            for ((d, &g), &u) in dst.iter_mut().zip(gate).zip(up) {
                let inner = S2PI * (g + 0.044_715 * g * g * g);
                // 0.5 (1 + tanh(y)) = 1 / (1 + e^{-2y}): one exp, one division.
                *d = (g / (1.0 + exp_f32(-2.0 * inner))) * u;
            }
        }
    }
}

multiversion! {
    /// In-place softmax of `x[lo..hi]`; everything outside that range becomes 0.
    pub fn softmax_range(x: &mut [f32], lo: usize, hi: usize) {
        let m = max_of(&x[lo..hi]);
        let mut acc = [0f32; LANES];
        let mut rest = 0f32;
        {
            let span = &mut x[lo..hi];
            let mut chunks = span.chunks_exact_mut(LANES);
            for c in &mut chunks {
                for l in 0..LANES {
                    let e = exp_f32(c[l] - m);
                    c[l] = e;
                    acc[l] += e;
                }
            }
            for v in chunks.into_remainder() {
                let e = exp_f32(*v - m);
                *v = e;
                rest += e;
            }
        }
        let mut w = LANES;
        while w > 1 {
            w /= 2;
            for l in 0..w {
                acc[l] += acc[l + w];
            }
        }
        let inv = 1.0 / (acc[0] + rest);
        for v in &mut x[lo..hi] {
            *v *= inv;
        }
        for v in &mut x[..lo] {
            *v = 0.0;
        }
        for v in &mut x[hi..] {
            *v = 0.0;
        }
    }
}

multiversion! {
    /// RMSNorm (weight `w1`, already including any scale) then rotate-half RoPE, for
    /// `heads` consecutive vectors of `cos.len() * 2` values in `src`, written to `dst`.
    pub fn norm_rope(src: &[f32], w1: &[f32], eps: f32, cos: &[f32], sin: &[f32], dst: &mut [f32]) {
        let d = w1.len();
        let half = d / 2;
        for (x, o) in src.chunks_exact(d).zip(dst.chunks_exact_mut(d)) {
            let inv = 1.0 / (sum_sq(x) / d as f32 + eps).sqrt();
            let (x1, x2) = x.split_at(half);
            let (w_1, w_2) = w1.split_at(half);
            let (o1, o2) = o.split_at_mut(half);
            for j in 0..half {
                let a = (x1[j] * inv) * w_1[j];
                let b = (x2[j] * inv) * w_2[j];
                o1[j] = a * cos[j] - b * sin[j];
                o2[j] = b * cos[j] + a * sin[j];
            }
        }
    }
}

/// Rows per rayon task for row-wise kernels: enough work per task to amortise scheduling.
fn rows_per_task(rows: usize, width: usize) -> usize {
    let min_rows = (16_384 / width.max(1)).max(1);
    let threads = rayon::current_num_threads().max(1);
    let even = rows.div_ceil(threads * 4).max(1);
    even.max(min_rows)
}

/// `x * rsqrt(mean(x²) + eps) * w1` over the last dimension.
pub struct RmsNorm<'a> {
    pub w1: &'a [f32],
    pub eps: f32,
}

impl CustomOp1 for RmsNorm<'_> {
    fn name(&self) -> &'static str {
        "memoria-rms-norm"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = contiguous_f32(s, l, self.name())?;
        let n = self.w1.len();
        if l.dims().last() != Some(&n) {
            bail!("rms-norm: last dim {:?} != weight {n}", l.dims());
        }
        let mut out = vec![0f32; x.len()];
        let step = rows_per_task(x.len() / n.max(1), n) * n;
        out.par_chunks_mut(step)
            .zip(x.par_chunks(step))
            .for_each(|(o, x)| rms_norm_rows(x, self.w1, self.eps, o));
        Ok((CpuStorage::F32(out), l.shape().clone()))
    }
}

/// `x + rms_norm(o) * w1` (Gemma's post-norm residual add).
pub struct AddRmsNorm<'a> {
    pub w1: &'a [f32],
    pub eps: f32,
}

impl CustomOp2 for AddRmsNorm<'_> {
    fn name(&self) -> &'static str {
        "memoria-add-rms-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = contiguous_f32(s1, l1, self.name())?;
        let o = contiguous_f32(s2, l2, self.name())?;
        let n = self.w1.len();
        if l1.dims() != l2.dims() || l1.dims().last() != Some(&n) {
            bail!(
                "add-rms-norm: shapes {:?} {:?} weight {n}",
                l1.dims(),
                l2.dims()
            );
        }
        let mut out = vec![0f32; x.len()];
        let step = rows_per_task(x.len() / n.max(1), n) * n;
        out.par_chunks_mut(step)
            .zip(x.par_chunks(step).zip(o.par_chunks(step)))
            .for_each(|(d, (x, o))| add_rms_norm_rows(x, o, self.w1, self.eps, d));
        Ok((CpuStorage::F32(out), l1.shape().clone()))
    }
}

/// `[T, 2n]` (gate | up) → `[T, n]` = gelu_tanh(gate) * up.
pub struct GeluMul;

impl CustomOp1 for GeluMul {
    fn name(&self) -> &'static str {
        "memoria-gelu-mul"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = contiguous_f32(s, l, self.name())?;
        let (t, w) = l.shape().dims2()?;
        if w % 2 != 0 {
            bail!("gelu-mul: odd width {w}");
        }
        let n = w / 2;
        let mut out = vec![0f32; t * n];
        let rows = rows_per_task(t, n);
        out.par_chunks_mut(rows * n)
            .zip(x.par_chunks(rows * w))
            .for_each(|(o, x)| gelu_mul(x, n, o));
        Ok((CpuStorage::F32(out), Shape::from((t, n))))
    }
}

/// Sequences packed into one `[total_tokens, ..]` tensor: (first row, length) of each.
#[derive(Debug, Clone, Default)]
pub struct Packing {
    /// (first row, length) of each sequence, in order.
    pub seqs: Vec<(usize, usize)>,
    /// Position of every packed token within its sequence.
    pub positions: Vec<usize>,
}

impl Packing {
    /// Sequences of `lengths` tokens, laid end to end.
    pub fn new(lengths: &[usize]) -> Self {
        let mut seqs = Vec::with_capacity(lengths.len());
        let mut positions = Vec::with_capacity(lengths.iter().sum());
        let mut off = 0;
        for &len in lengths {
            seqs.push((off, len));
            positions.extend(0..len);
            off += len;
        }
        Packing { seqs, positions }
    }

    /// Tokens of every sequence together: the packed tensor's rows.
    pub fn total(&self) -> usize {
        self.positions.len()
    }
}

/// Dimensions of the attention block.
#[derive(Debug, Clone, Copy)]
pub struct AttnDims {
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (shared by `heads / kv_heads` query heads each).
    pub kv_heads: usize,
    /// Values per head.
    pub head_dim: usize,
}

impl AttnDims {
    /// Values of all query heads of one token.
    pub fn q_width(&self) -> usize {
        self.heads * self.head_dim
    }
    /// Values of all key (or value) heads of one token.
    pub fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim
    }
    /// One token's row of the fused q/k/v projection.
    pub fn qkv_width(&self) -> usize {
        self.q_width() + 2 * self.kv_width()
    }
}

/// `[T, q|k|v]` from the fused projection → planar `[q: T×H×D | k: T×KV×D | v: T×KV×D]`
/// with q and k RMS-normalised and rotated (q also scaled by the attention scale).
pub struct QkNormRope<'a> {
    pub dims: AttnDims,
    pub q_w1: &'a [f32],
    pub k_w1: &'a [f32],
    pub eps: f32,
    /// `[max_pos, head_dim / 2]` tables.
    pub cos: &'a [f32],
    pub sin: &'a [f32],
    pub positions: &'a [usize],
}

impl CustomOp1 for QkNormRope<'_> {
    fn name(&self) -> &'static str {
        "memoria-qk-norm-rope"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = contiguous_f32(s, l, self.name())?;
        let (t, w) = l.shape().dims2()?;
        let d = self.dims;
        let (qw, kw) = (d.q_width(), d.kv_width());
        let half = d.head_dim / 2;
        if w != d.qkv_width() || self.positions.len() != t {
            bail!(
                "qk-norm-rope: input {:?}, {} positions",
                l.dims(),
                self.positions.len()
            );
        }
        if let Some(&p) = self.positions.iter().max() {
            if (p + 1) * half > self.cos.len() {
                bail!("qk-norm-rope: position {p} beyond the rope table");
            }
        }
        let mut out = vec![0f32; t * w];
        let (q_out, rest) = out.split_at_mut(t * qw);
        let (k_out, v_out) = rest.split_at_mut(t * kw);
        let rows = rows_per_task(t, w);
        q_out
            .par_chunks_mut(rows * qw)
            .zip(k_out.par_chunks_mut(rows * kw))
            .zip(v_out.par_chunks_mut(rows * kw))
            .enumerate()
            .for_each(|(c, ((qo, ko), vo))| {
                let first = c * rows;
                let n = qo.len() / qw;
                for r in 0..n {
                    let tok = first + r;
                    let src = &x[tok * w..(tok + 1) * w];
                    let p = self.positions[tok];
                    let cos = &self.cos[p * half..(p + 1) * half];
                    let sin = &self.sin[p * half..(p + 1) * half];
                    norm_rope(
                        &src[..qw],
                        self.q_w1,
                        self.eps,
                        cos,
                        sin,
                        &mut qo[r * qw..(r + 1) * qw],
                    );
                    norm_rope(
                        &src[qw..qw + kw],
                        self.k_w1,
                        self.eps,
                        cos,
                        sin,
                        &mut ko[r * kw..(r + 1) * kw],
                    );
                    vo[r * kw..(r + 1) * kw].copy_from_slice(&src[qw + kw..]);
                }
            });
        Ok((CpuStorage::F32(out), Shape::from(t * w)))
    }
}

/// Bidirectional attention over packed sequences: planar q|k|v (from [`QkNormRope`]) →
/// `[T, H×D]`. With `window = Some(w)` a query at i sees keys j with |i − j| < w; every row
/// always sees itself, so no row is ever fully masked.
pub struct PackedAttention<'a> {
    pub dims: AttnDims,
    pub packing: &'a Packing,
    pub window: Option<usize>,
    /// The `bf16` precision: q, k, v and the probabilities rounded to bf16, f32 sums
    /// (`attention_bf16.rs`); on AMX tiles or AVX512-BF16 where the CPU has them.
    pub bf16: bool,
}

/// Query tokens per attention task.
const Q_BLOCK: usize = 64;

impl CustomOp1 for PackedAttention<'_> {
    fn name(&self) -> &'static str {
        "memoria-packed-attention"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = contiguous_f32(s, l, self.name())?;
        let d = self.dims;
        let t = self.packing.total();
        if x.len() != t * d.qkv_width() {
            bail!("packed-attention: {} values for {t} tokens", x.len());
        }
        let (qw, kw, hd) = (d.q_width(), d.kv_width(), d.head_dim);
        let packed = self
            .bf16
            .then(|| attention_bf16::packed_kernel(hd))
            .flatten();
        // Without a bf16 kernel, bf16 is the f32 products of rounded inputs.
        let rounded;
        let x = if self.bf16 && packed.is_none() {
            rounded = attention_bf16::round_all(x);
            &rounded[..]
        } else {
            x
        };
        let bf16 = self.bf16;
        let (q, rest) = x.split_at(t * qw);
        let (k, v) = rest.split_at(t * kw);
        let group = d.heads / d.kv_heads;
        // With one kv head all query heads of a token are consecutive rows of stride D.
        let mqa = d.kv_heads == 1;
        let mut tasks = Vec::new();
        for (seq, &(off, len)) in self.packing.seqs.iter().enumerate() {
            let heads: Vec<usize> = if mqa { vec![0] } else { (0..d.heads).collect() };
            for h in heads {
                let mut i0 = 0;
                while i0 < len {
                    let i1 = (i0 + Q_BLOCK).min(len);
                    tasks.push((seq, off, len, h, i0, i1));
                    i0 = i1;
                }
            }
        }
        // A bf16 kernel: every sequence's keys and values packed once, for all its query
        // blocks.
        let packed_kv = packed.map(|kernel| {
            let kv = attention_bf16::PackedKv::new(k, v, d.kv_heads, hd, &self.packing.seqs);
            (kernel, kv)
        });
        // Every value of `out` is written by exactly one task's second gemm (alpha = 0).
        let mut out: Vec<f32> = Vec::with_capacity(t * qw);
        let out_ptr = SyncPtr(out.as_mut_ptr());
        let window = self.window;
        tasks.par_iter().for_each_init(
            || (Vec::<f32>::new(), attention_bf16::Scratch::default()),
            |(scores, scratch), &(seq, off, len, h, i0, i1)| {
                let out_ptr = &out_ptr;
                let (k0, k1) = match window {
                    Some(w) => (i0.saturating_sub(w - 1), (i1 - 1 + w).min(len)),
                    None => (0, len),
                };
                let nk = k1 - k0;
                let rows_per_tok = if mqa { d.heads } else { 1 };
                let m = (i1 - i0) * rows_per_tok;
                let g = h / group;
                let (q_off, q_rs) = if mqa {
                    ((off + i0) * qw, hd)
                } else {
                    ((off + i0) * qw + h * hd, qw)
                };
                let kv_off = (off + k0) * kw + g * hd;
                // The keys row r sees among keys k0..k1, as offsets from k0.
                let keys = move |r: usize, k0: usize, k1: usize| {
                    let i = i0 + r / rows_per_tok;
                    match window {
                        Some(w) => (i.saturating_sub(w - 1).max(k0) - k0, (i + w).min(k1) - k0),
                        None => (0, k1 - k0),
                    }
                };
                #[cfg(target_arch = "x86_64")]
                if let Some((kernel, kv)) = &packed_kv {
                    // All the sequence's keys: a window's keys beyond it get probability 0
                    // from the softmax's range, and the bf16 products cost less than
                    // slicing the packed panels would.
                    // SAFETY: `packed_kernel` chose a kernel this CPU runs; q rows i0..i1
                    // of this sequence and head, `kv` packed for these sequences; this
                    // task alone writes its output rows.
                    unsafe {
                        attention_bf16::task(
                            *kernel,
                            q.as_ptr().add(q_off),
                            q_rs,
                            m,
                            kv,
                            seq,
                            g,
                            len,
                            hd,
                            |r| keys(r, 0, len),
                            softmax_range,
                            out_ptr.0.add(q_off),
                            scratch,
                        )
                    };
                    return;
                }
                scores.clear();
                scores.reserve(m * nk);
                // SAFETY: every pointer/stride pair below stays inside its buffer: q rows
                // i0..i1 of this sequence, k/v rows k0..k1, scores m×nk; output rows i0..i1 of
                // head h (or all heads, mqa) belong to this task alone.
                unsafe {
                    gemm::gemm(
                        m,
                        nk,
                        hd,
                        scores.as_mut_ptr(),
                        1,
                        nk as isize,
                        false,
                        q.as_ptr().add(q_off),
                        1,
                        q_rs as isize,
                        k.as_ptr().add(kv_off),
                        kw as isize,
                        1,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    );
                    // The gemm (alpha = 0, read_dst = false) wrote all m×nk scores.
                    scores.set_len(m * nk);
                }
                for r in 0..m {
                    let (lo, hi) = keys(r, k0, k1);
                    let row = &mut scores[r * nk..(r + 1) * nk];
                    softmax_range(row, lo, hi);
                    if bf16 {
                        attention_bf16::round_in_place(row);
                    }
                }
                unsafe {
                    gemm::gemm(
                        m,
                        hd,
                        nk,
                        out_ptr.0.add(q_off),
                        1,
                        q_rs as isize,
                        false,
                        scores.as_ptr(),
                        1,
                        nk as isize,
                        v.as_ptr().add(kv_off),
                        1,
                        kw as isize,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    );
                }
            },
        );
        // SAFETY: the tasks cover every (token, head) row of every sequence.
        unsafe { out.set_len(t * qw) };
        Ok((CpuStorage::F32(out), Shape::from((t, qw))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = (x as f64).exp();
            let got = exp_f32(x) as f64;
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert_eq!(exp_f32(-200.0), 0.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn softmax_range_zeroes_outside() {
        let mut v = vec![1.0f32, 2.0, 3.0, 4.0, 5.0];
        softmax_range(&mut v, 1, 4);
        assert_eq!(v[0], 0.0);
        assert_eq!(v[4], 0.0);
        let s: f32 = v.iter().sum();
        assert!((s - 1.0).abs() < 1e-6);
        let e = [2f64.exp(), 3f64.exp(), 4f64.exp()];
        let z: f64 = e.iter().sum();
        for (got, want) in v[1..4].iter().zip(e) {
            assert!((*got as f64 - want / z).abs() < 1e-6);
        }
    }
}
