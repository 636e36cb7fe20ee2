//! CPU kernels for the encoder's non-matmul work, written as candle custom ops.
//!
//! Each op fuses what would otherwise be several candle ops (each a single-threaded pass
//! over memory with its own allocation): RMSNorm with residual add, q/k norm + RoPE,
//! GELU-tanh × up, and packed bidirectional attention over variable-length sequences.
//! They run on rayon (the same pool candle's matmul uses) and are compiled for AVX-512 and
//! AVX2 with runtime dispatch. Only f32 contiguous CPU tensors are accepted: other devices
//! and dtypes take the generic candle path in `encoder.rs`.

use std::sync::OnceLock;

use candle_core::{bail, CpuStorage, CustomOp1, CustomOp2, Layout, Shape};
use rayon::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Scalar,
    #[allow(dead_code)]
    Avx2,
    #[allow(dead_code)]
    Avx512,
}

/// The instruction set the kernels use: the best the CPU has, or lower when the
/// environment says `MEMORIA_EMBED_SIMD=avx2|scalar` (to test every path on one machine).
fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cap = match std::env::var("MEMORIA_EMBED_SIMD").as_deref() {
            Ok("scalar") => Level::Scalar,
            Ok("avx2") => Level::Avx2,
            _ => Level::Avx512,
        };
        let best = detect();
        match (cap, best) {
            (Level::Scalar, _) | (_, Level::Scalar) => Level::Scalar,
            (Level::Avx2, _) | (_, Level::Avx2) => Level::Avx2,
            _ => Level::Avx512,
        }
    })
}

fn detect() -> Level {
    {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512dq")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("fma")
            {
                return Level::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Level::Avx2;
            }
        }
        Level::Scalar
    }
}

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
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma")]
                unsafe fn v4($($arg: $ty),*) $(-> $ret)? { inner($($arg),*) }
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
    let kf = (xc * LOG2E + MAGIC) - MAGIC;
    let r = xc - kf * C1 - kf * C2;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    let scale = f32::from_bits(((kf as i32 + 127) as u32) << 23);
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
    /// out[r] = gelu_tanh(gu[r][..n]) * gu[r][n..2n] for rows of width 2n.
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

fn contiguous_f32<'a>(s: &'a CpuStorage, l: &Layout, what: &str) -> candle_core::Result<&'a [f32]> {
    let data = match s {
        CpuStorage::F32(d) => d.as_slice(),
        other => bail!(
            "{what}: expected f32, got {:?}",
            candle_core::backend::BackendStorage::dtype(other)
        ),
    };
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&data[a..b]),
        None => bail!("{what}: input must be contiguous"),
    }
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
    pub seqs: Vec<(usize, usize)>,
    /// Position of every packed token within its sequence.
    pub positions: Vec<usize>,
}

impl Packing {
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

    pub fn total(&self) -> usize {
        self.positions.len()
    }
}

/// Dimensions of the attention block.
#[derive(Debug, Clone, Copy)]
pub struct AttnDims {
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
}

impl AttnDims {
    pub fn q_width(&self) -> usize {
        self.heads * self.head_dim
    }
    pub fn kv_width(&self) -> usize {
        self.kv_heads * self.head_dim
    }
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
}

struct SyncPtr(*mut f32);
// SAFETY: used only to write disjoint regions of one buffer from rayon tasks.
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}

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
        let (q, rest) = x.split_at(t * qw);
        let (k, v) = rest.split_at(t * kw);
        let group = d.heads / d.kv_heads;
        // With one kv head all query heads of a token are consecutive rows of stride D.
        let mqa = d.kv_heads == 1;
        let mut tasks = Vec::new();
        for &(off, len) in &self.packing.seqs {
            let heads: Vec<usize> = if mqa { vec![0] } else { (0..d.heads).collect() };
            for h in heads {
                let mut i0 = 0;
                while i0 < len {
                    let i1 = (i0 + Q_BLOCK).min(len);
                    tasks.push((off, len, h, i0, i1));
                    i0 = i1;
                }
            }
        }
        // Every value of `out` is written by exactly one task's second gemm (alpha = 0).
        let mut out: Vec<f32> = Vec::with_capacity(t * qw);
        let out_ptr = SyncPtr(out.as_mut_ptr());
        let window = self.window;
        tasks
            .par_iter()
            .for_each_init(Vec::<f32>::new, |scores, &(off, len, h, i0, i1)| {
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
                    let i = i0 + r / rows_per_tok;
                    let (lo, hi) = match window {
                        Some(w) => (i.saturating_sub(w - 1).max(k0) - k0, (i + w).min(k1) - k0),
                        None => (0, nk),
                    };
                    softmax_range(&mut scores[r * nk..(r + 1) * nk], lo, hi);
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
            });
        // SAFETY: the tasks cover every (token, head) row of every sequence.
        unsafe { out.set_len(t * qw) };
        Ok((CpuStorage::F32(out), Shape::from((t, qw))))
    }
}

/// Rows up to which [`Linear`] uses the skinny kernel instead of the packed gemm.
pub const SKINNY_MAX_ROWS: usize = 32;

/// `y = x · wᵀ` for `x: [M, K]` and a weight `w: [N, K]` (PyTorch's Linear layout).
///
/// Large M goes to the `gemm` crate. Small M (queries) is memory-bound on streaming the
/// weight, and gemm's packing reads and writes the whole weight again on every call, so a
/// skinny kernel streams each weight row once and dots it with all rows of `x`.
pub struct Linear;

impl CustomOp2 for Linear {
    fn name(&self) -> &'static str {
        "memoria-linear"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let x = contiguous_f32(s1, l1, self.name())?;
        let w = contiguous_f32(s2, l2, self.name())?;
        let (m, k) = l1.shape().dims2()?;
        let (n, k2) = l2.shape().dims2()?;
        if k != k2 {
            bail!("linear: x {:?} vs w {:?}", l1.dims(), l2.dims());
        }
        let mut y: Vec<f32> = Vec::with_capacity(m * n);
        if m == 0 || n == 0 {
        } else if k == 0 {
            y.resize(m * n, 0.0);
        } else if m <= SKINNY_MAX_ROWS && skinny_available() {
            skinny_matmul(x, m, k, w, n, y.as_mut_ptr());
            // SAFETY: the skinny kernel wrote all m×n values.
            unsafe { y.set_len(m * n) };
        } else {
            let threads = rayon::current_num_threads();
            let par = if threads > 1 && m * n * k > 64 * 64 * 64 {
                gemm::Parallelism::Rayon(threads)
            } else {
                gemm::Parallelism::None
            };
            // SAFETY: x is m×k row-major, w is n×k row-major read as its k×n transpose,
            // y is m×n row-major; all in bounds.
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    y.as_mut_ptr(),
                    1,
                    n as isize,
                    false,
                    x.as_ptr(),
                    1,
                    k as isize,
                    w.as_ptr(),
                    k as isize,
                    1,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    par,
                );
                // gemm with alpha = 0 and read_dst = false wrote every value.
                y.set_len(m * n);
            }
        }
        Ok((CpuStorage::F32(y), Shape::from((m, n))))
    }
}

fn skinny_available() -> bool {
    matches!(level(), Level::Avx512 | Level::Avx2)
}

/// `y[M, N] = x[M, K] · w[N, K]ᵀ` for small M, parallel over N.
fn skinny_matmul(x: &[f32], m: usize, k: usize, w: &[f32], n: usize, y: *mut f32) {
    const N_TASK: usize = 128;
    let yp = SyncPtr(y);
    let tasks = n.div_ceil(N_TASK);
    (0..tasks).into_par_iter().for_each(|t| {
        let yp = &yp;
        let n0 = t * N_TASK;
        let n1 = (n0 + N_TASK).min(n);
        // SAFETY: each task writes only columns n0..n1 of y; the level check guarantees
        // the instructions exist.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            match level() {
                Level::Avx512 => simd::skinny::<simd::Avx512>(x, m, k, w, n0, n1, yp.0, n),
                Level::Avx2 => simd::skinny::<simd::Avx2>(x, m, k, w, n0, n1, yp.0, n),
                Level::Scalar => unreachable!("skinny kernel without SIMD"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, m, k, w, n0, n1, yp);
            unreachable!("skinny kernel without SIMD")
        }
    });
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
mod simd {
    use std::arch::x86_64::*;

    /// The few vector operations the skinny kernel needs.
    pub trait Simd {
        type V: Copy;
        const W: usize;
        unsafe fn zero() -> Self::V;
        unsafe fn load(p: *const f32) -> Self::V;
        /// Loads `n < W` values, the rest zero.
        unsafe fn load_partial(p: *const f32, n: usize) -> Self::V;
        unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
        unsafe fn sum(v: Self::V) -> f32;
    }

    pub struct Avx512;
    pub struct Avx2;

    impl Simd for Avx512 {
        type V = __m512;
        const W: usize = 16;
        #[inline(always)]
        unsafe fn zero() -> __m512 {
            _mm512_setzero_ps()
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m512 {
            _mm512_loadu_ps(p)
        }
        #[inline(always)]
        unsafe fn load_partial(p: *const f32, n: usize) -> __m512 {
            _mm512_maskz_loadu_ps(((1u32 << n) - 1) as u16, p)
        }
        #[inline(always)]
        unsafe fn fma(a: __m512, b: __m512, c: __m512) -> __m512 {
            _mm512_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn sum(v: __m512) -> f32 {
            _mm512_reduce_add_ps(v)
        }
    }

    impl Simd for Avx2 {
        type V = __m256;
        const W: usize = 8;
        #[inline(always)]
        unsafe fn zero() -> __m256 {
            _mm256_setzero_ps()
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> __m256 {
            _mm256_loadu_ps(p)
        }
        #[inline(always)]
        unsafe fn load_partial(p: *const f32, n: usize) -> __m256 {
            let mut buf = [0f32; 8];
            std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), n);
            _mm256_loadu_ps(buf.as_ptr())
        }
        #[inline(always)]
        unsafe fn fma(a: __m256, b: __m256, c: __m256) -> __m256 {
            _mm256_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn sum(v: __m256) -> f32 {
            let hi = _mm256_extractf128_ps(v, 1);
            let lo = _mm256_castps256_ps128(v);
            let s = _mm_add_ps(lo, hi);
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
            _mm_cvtss_f32(s)
        }
    }

    /// MR rows of x against NR rows of w: y[i, j] = <x_i, w_j>.
    #[inline(always)]
    unsafe fn block<S: Simd, const MR: usize, const NR: usize>(
        x: *const f32,
        k: usize,
        w: *const f32,
        y: *mut f32,
        ldy: usize,
    ) {
        let mut acc = [[S::zero(); NR]; MR];
        let full = k / S::W * S::W;
        let mut kk = 0;
        while kk < full {
            let mut wv = [S::zero(); NR];
            for (j, v) in wv.iter_mut().enumerate() {
                *v = S::load(w.add(j * k + kk));
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let xv = S::load(x.add(i * k + kk));
                for j in 0..NR {
                    row[j] = S::fma(xv, wv[j], row[j]);
                }
            }
            kk += S::W;
        }
        if full < k {
            let rest = k - full;
            let mut wv = [S::zero(); NR];
            for (j, v) in wv.iter_mut().enumerate() {
                *v = S::load_partial(w.add(j * k + full), rest);
            }
            for (i, row) in acc.iter_mut().enumerate() {
                let xv = S::load_partial(x.add(i * k + full), rest);
                for j in 0..NR {
                    row[j] = S::fma(xv, wv[j], row[j]);
                }
            }
        }
        for (i, row) in acc.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                *y.add(i * ldy + j) = S::sum(v);
            }
        }
    }

    #[inline(always)]
    unsafe fn rows<S: Simd, const NR: usize>(
        x: *const f32,
        m: usize,
        k: usize,
        w: *const f32,
        y: *mut f32,
        ldy: usize,
    ) {
        const MR: usize = 6;
        let mut i = 0;
        while i + MR <= m {
            block::<S, MR, NR>(x.add(i * k), k, w, y.add(i * ldy), ldy);
            i += MR;
        }
        let x = x.add(i * k);
        let y = y.add(i * ldy);
        match m - i {
            0 => {}
            1 => block::<S, 1, NR>(x, k, w, y, ldy),
            2 => block::<S, 2, NR>(x, k, w, y, ldy),
            3 => block::<S, 3, NR>(x, k, w, y, ldy),
            4 => block::<S, 4, NR>(x, k, w, y, ldy),
            _ => block::<S, 5, NR>(x, k, w, y, ldy),
        }
    }

    #[inline(always)]
    unsafe fn skinny_impl<S: Simd>(
        x: &[f32],
        m: usize,
        k: usize,
        w: &[f32],
        n0: usize,
        n1: usize,
        y: *mut f32,
        ldy: usize,
    ) {
        const NR: usize = 4;
        let mut j = n0;
        while j + NR <= n1 {
            rows::<S, NR>(x.as_ptr(), m, k, w.as_ptr().add(j * k), y.add(j), ldy);
            j += NR;
        }
        while j < n1 {
            rows::<S, 1>(x.as_ptr(), m, k, w.as_ptr().add(j * k), y.add(j), ldy);
            j += 1;
        }
    }

    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn skinny_v4(
        x: &[f32],
        m: usize,
        k: usize,
        w: &[f32],
        n0: usize,
        n1: usize,
        y: *mut f32,
        ldy: usize,
    ) {
        skinny_impl::<Avx512>(x, m, k, w, n0, n1, y, ldy)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn skinny_v3(
        x: &[f32],
        m: usize,
        k: usize,
        w: &[f32],
        n0: usize,
        n1: usize,
        y: *mut f32,
        ldy: usize,
    ) {
        skinny_impl::<Avx2>(x, m, k, w, n0, n1, y, ldy)
    }

    /// Columns n0..n1 of `y = x · wᵀ` (y row stride `ldy`).
    ///
    /// # Safety
    /// The CPU must support `S`'s instructions; x is m×k, w is at least n1×k, y has m rows
    /// of `ldy ≥ n1` values.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn skinny<S: Simd + 'static>(
        x: &[f32],
        m: usize,
        k: usize,
        w: &[f32],
        n0: usize,
        n1: usize,
        y: *mut f32,
        ldy: usize,
    ) {
        if std::any::TypeId::of::<S>() == std::any::TypeId::of::<Avx512>() {
            skinny_v4(x, m, k, w, n0, n1, y, ldy)
        } else {
            skinny_v3(x, m, k, w, n0, n1, y, ldy)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

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
    fn linear_matches_naive_for_awkward_sizes() {
        for &(m, k, n) in &[
            (1, 17, 9),
            (5, 16, 4),
            (7, 33, 130),
            (32, 48, 5),
            (33, 20, 7),
            (70, 64, 3),
        ] {
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0)
                .collect();
            let xt = Tensor::from_slice(&x, (m, k), &Device::Cpu).unwrap();
            let wt = Tensor::from_slice(&w, (n, k), &Device::Cpu).unwrap();
            let y = xt
                .apply_op2_no_bwd(&wt, &Linear)
                .unwrap()
                .to_vec2::<f32>()
                .unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want: f32 = (0..k).map(|t| x[i * k + t] * w[j * k + t]).sum();
                    assert!(
                        (y[i][j] - want).abs() < 1e-4,
                        "({m},{k},{n}) [{i},{j}] {} vs {want}",
                        y[i][j]
                    );
                }
            }
        }
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
