//! Linear layers of the CPU encoder: weights stored as IEEE half, products computed in f32
//! (the `f32` precision), and [`Projection`], which holds a layer's weight in whichever
//! format its path runs (this file's f16 panels, `q8.rs`'s Q8_0 panels, or a candle tensor).
//!
//! Why half: EmbeddingGemma's trained weights round-trip through f16 with 1 − cos ≤ 6e-8
//! on the golden set (bf16: 6e-6), so keeping them as f16 halves the resident size and the
//! bytes a short query streams, at no measurable cost in accuracy. Activations and
//! accumulations stay f32 (Gemma's activations overflow f16, which is why the model does
//! not run *in* f16).
//!
//! Layout: the weight `[N, K]` is stored in panels of [`PANEL`] output rows, each panel
//! `K × PANEL` with the PANEL values of one input column adjacent. A short query's product
//! then needs no horizontal sums: one broadcast x value times one widened weight vector
//! updates PANEL outputs at once, which is what lets the skinny kernel run near the FMA
//! units' peak instead of at a third of it.

use std::cell::RefCell;

use candle_core::{DType, Device, Tensor};
use half::f16;
use half::slice::HalfFloatSliceExt;
use rayon::prelude::*;

use crate::gemma::bf16::Bf16Weight;
use crate::gemma::cpu::{gemm_f32, Linear, LinearWeight, SyncPtr};
use crate::gemma::error::{GemmaError, Result};
use crate::gemma::pack::Pack;
use crate::gemma::q8::{self, Q8Weight};
use crate::gemma::slab::Slab;
use crate::gemma::weights::TensorSource;
use crate::simd::{level, Level};

/// Output rows per weight panel.
pub const PANEL: usize = 16;

/// How a [`Projection`] holds its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightFormat {
    /// A candle tensor on the model's device (the generic path).
    Tensor,
    /// f16 panels for the fused CPU kernels (products in f32).
    Half,
    /// Q8_0 panels for the int8 CPU kernels (`q8.rs`); f16 where a weight's inner size is
    /// not whole blocks of 32.
    Q8,
    /// bf16 panels for the bf16 CPU kernels (`bf16.rs`).
    Bf16,
}

/// A linear layer's weight (`[out, in]`, no bias), held the way the path that runs it wants.
#[derive(Debug)]
pub enum Projection {
    /// f16 in host memory or a packed model, multiplied by [`Linear`] (the fused CPU path);
    /// `name` is its section in the pack.
    Half { name: String, weight: HalfWeight },
    /// Q8_0 in host memory or a packed model, multiplied by [`q8::Linear`].
    Q8 { name: String, weight: Q8Weight },
    /// bf16 in host memory or a packed model, multiplied by [`bf16::Linear`].
    Bf16 { name: String, weight: Bf16Weight },
    /// A tensor on the model's device in the working dtype, multiplied by candle.
    Tensor(Tensor),
}

impl Projection {
    /// Loads the tensors `prefix + name` (each `[rows, cols]`) from `file` and stacks them
    /// along the output dimension, e.g. q, k and v into one `[q + k + v, hidden]` projection.
    /// In the CPU formats, a packed model that holds the stacked panels provides them
    /// instead; they are its section `scope + prefix + names joined by '+'`.
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        file: &dyn TensorSource,
        pack: Option<&Pack>,
        scope: &str,
        prefix: &str,
        names: &[(&str, usize)],
        cols: usize,
        format: WeightFormat,
        device: &Device,
        dtype: DType,
    ) -> Result<Self> {
        if format == WeightFormat::Tensor {
            let parts = names
                .iter()
                .map(|&(name, r)| {
                    file.tensor(&format!("{prefix}{name}"), &[r, cols], device, dtype)
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok(Projection::Tensor(Tensor::cat(&parts, 0)?));
        }
        let rows: usize = names.iter().map(|&(_, r)| r).sum();
        let name = format!(
            "{scope}{prefix}{}",
            names.iter().map(|&(n, _)| n).collect::<Vec<_>>().join("+")
        );
        let q8 = format == WeightFormat::Q8 && cols.is_multiple_of(q8::BLOCK);
        let half = format != WeightFormat::Bf16 && !q8;
        if format == WeightFormat::Bf16 {
            let packed = pack
                .and_then(|p| p.bf16_weight(&name, rows, cols))
                .and_then(|data| Bf16Weight::from_packed(data, rows, cols));
            if let Some(weight) = packed {
                return Ok(Projection::Bf16 { name, weight });
            }
        } else if q8 {
            let packed = pack
                .and_then(|p| p.q8_weight(&name, rows, cols))
                .and_then(|data| Q8Weight::from_packed(data, rows, cols));
            if let Some(weight) = packed {
                return Ok(Projection::Q8 { name, weight });
            }
        } else {
            let packed = pack.and_then(|p| p.weight(&name)).filter(|(data, r, c)| {
                (*r, *c) == (rows, cols) && data.len() == rows.div_ceil(PANEL) * cols * PANEL
            });
            if let Some((data, rows, cols)) = packed {
                let weight = HalfWeight { data, rows, cols };
                return Ok(Projection::Half { name, weight });
            }
        }
        let beyond = |tensor: &str, kind: &str| GemmaError::Unsupported {
            path: file.path().to_path_buf(),
            reason: format!(
                "tensor `{tensor}` has weights beyond {kind}'s range \
                 (the CPU kernels store weights as {kind})"
            ),
        };
        let mut all = Vec::with_capacity(rows * cols);
        for &(part, r) in names {
            let part = format!("{prefix}{part}");
            let values = file.read_f32(&part, &[r, cols])?;
            if half && !fits_half(&values) {
                return Err(beyond(&part, "f16"));
            }
            all.extend_from_slice(&values);
        }
        if format == WeightFormat::Bf16 {
            // Rounding checks every value is finite; the section names the tensors.
            return match Bf16Weight::quantize(&all, rows, cols) {
                Some(weight) => Ok(Projection::Bf16 { name, weight }),
                None => Err(beyond(&name, "bf16")),
            };
        }
        if q8 {
            // Quantising checks every value is finite; the section names the tensors.
            return match Q8Weight::quantize(&all, rows, cols) {
                Some(weight) => Ok(Projection::Q8 { name, weight }),
                None => Err(beyond(&name, "Q8_0")),
            };
        }
        let weight = HalfWeight::pack(&all, rows, cols);
        Ok(Projection::Half { name, weight })
    }

    /// `x · wᵀ`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        Ok(match self {
            Projection::Half { weight, .. } => x.apply_op1_no_bwd(&Linear(weight))?,
            Projection::Q8 { weight, .. } => x.apply_op1_no_bwd(&Linear(weight))?,
            Projection::Bf16 { weight, .. } => x.apply_op1_no_bwd(&Linear(weight))?,
            Projection::Tensor(w) => x.matmul(&w.t()?)?,
        })
    }
}

fn fits_half(values: &[f32]) -> bool {
    let max = f16::MAX.to_f32();
    values.iter().all(|v| v.abs() <= max || v.is_nan())
}

/// A linear layer's weight (PyTorch's `[out, in]`) stored as f16 in panels of [`PANEL`]
/// output rows (see the module docs).
pub struct HalfWeight {
    /// `panels × cols × PANEL` values; rows past `rows` in the last panel are zero.
    data: Slab<f16>,
    rows: usize,
    cols: usize,
}

impl std::fmt::Debug for HalfWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HalfWeight[{}, {}]", self.rows, self.cols)
    }
}

impl HalfWeight {
    /// Rounds `values` (`rows × cols`, row-major) to f16. `None` when a value lies outside
    /// f16's finite range.
    #[cfg(test)]
    pub fn from_f32(values: &[f32], rows: usize, cols: usize) -> Option<Self> {
        fits_half(values).then(|| Self::pack(values, rows, cols))
    }

    fn pack(values: &[f32], rows: usize, cols: usize) -> Self {
        assert_eq!(values.len(), rows * cols, "HalfWeight shape");
        let panels = rows.div_ceil(PANEL);
        let mut data = vec![f16::ZERO; panels * cols * PANEL];
        data.par_chunks_mut(cols * PANEL)
            .enumerate()
            .for_each(|(p, panel)| {
                for r in 0..PANEL.min(rows - p * PANEL) {
                    let row = &values[(p * PANEL + r) * cols..][..cols];
                    for (c, &v) in row.iter().enumerate() {
                        panel[c * PANEL + r] = f16::from_f32(v);
                    }
                }
            });
        HalfWeight {
            data: Slab::Owned(data),
            rows,
            cols,
        }
    }

    /// Output features.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Input features.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The panels, as the pack stores them.
    pub fn panels(&self) -> &[f16] {
        &self.data
    }

    /// Writes the transposed weight as f32, `[cols, rows]` row-major, into `out`.
    fn widen_transposed(&self, out: &mut [f32]) {
        let (n, k) = (self.rows, self.cols);
        out.par_chunks_mut(n).enumerate().for_each(|(c, dst)| {
            for (p, chunk) in dst.chunks_mut(PANEL).enumerate() {
                let src = &self.data[(p * k + c) * PANEL..][..chunk.len()];
                src.convert_to_f32_slice(chunk);
            }
        });
    }
}

/// Rows up to which an f16 product uses the skinny kernel instead of the packed gemm.
pub const SKINNY_MAX_ROWS: usize = 32;

thread_local! {
    /// The f32 copy of the current weight for the gemm path, reused across calls so a
    /// forward pass does not map and fault in megabytes per layer.
    static WIDE: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// `y = x · wᵀ` for `x: [M, K]` (f32) and a [`HalfWeight`] `w: [N, K]`.
///
/// Small M (queries, pooled vectors) goes to a skinny kernel that reads each f16 weight
/// once per block of x rows and widens it in registers. Large M (documents) is bound by
/// arithmetic: the weight is widened to f32 once per call (≈1% of the product's time) and
/// multiplied with the `gemm` crate.
impl LinearWeight for HalfWeight {
    const NAME: &'static str = "memoria-linear-f16";

    fn rows(&self) -> usize {
        self.rows
    }

    fn cols(&self) -> usize {
        self.cols
    }

    fn matmul(&self, x: &[f32], m: usize, y: &mut Vec<f32>) {
        let (n, k) = (self.rows, self.cols);
        if m <= SKINNY_MAX_ROWS && skinny_available() {
            skinny_matmul(x, m, self, y.as_mut_ptr());
            // SAFETY: the skinny kernel wrote all m×n values.
            unsafe { y.set_len(m * n) };
            return;
        }
        WIDE.with(|cell| {
            // A rayon worker that steals another forward pass while this one is in gemm
            // finds the buffer taken and uses its own.
            let mut own = Vec::new();
            let mut borrowed = cell.try_borrow_mut();
            let buf = match borrowed.as_mut() {
                Ok(buf) => &mut **buf,
                Err(_) => &mut own,
            };
            if buf.len() < n * k {
                buf.resize(n * k, 0.0);
            }
            let wt = &mut buf[..n * k];
            self.widen_transposed(wt);
            gemm_f32(x, m, k, wt, n, y);
        });
    }
}

fn skinny_available() -> bool {
    matches!(level(), Level::Avx512 | Level::Avx2)
}

/// `y[M, N] = x[M, K] · wᵀ` for small M, parallel over groups of panels.
fn skinny_matmul(x: &[f32], m: usize, w: &HalfWeight, y: *mut f32) {
    const PANELS_PER_TASK: usize = 8;
    let (n, k) = (w.rows, w.cols);
    let yp = SyncPtr(y);
    let panels = n.div_ceil(PANEL);
    let tasks = panels.div_ceil(PANELS_PER_TASK);
    (0..tasks).into_par_iter().for_each(|t| {
        let yp = &yp;
        let p0 = t * PANELS_PER_TASK;
        let p1 = (p0 + PANELS_PER_TASK).min(panels);
        // SAFETY: each task writes only columns p0·PANEL..min(p1·PANEL, n) of y; the level
        // check guarantees the instructions exist; the panels p0..p1 lie inside w.data.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            let wp = (w.data.as_ptr() as *const u16).add(p0 * k * PANEL);
            let y0 = yp.0.add(p0 * PANEL);
            let cols = (p1 * PANEL).min(n) - p0 * PANEL;
            match level() {
                Level::Avx512 => simd::skinny_v4(x.as_ptr(), m, k, wp, p1 - p0, cols, y0, n),
                Level::Avx2 => simd::skinny_v3(x.as_ptr(), m, k, wp, p1 - p0, cols, y0, n),
                Level::Scalar => unreachable!("skinny kernel without SIMD"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, m, k, p0, p1, yp);
            unreachable!("skinny kernel without SIMD")
        }
    });
}

#[cfg(target_arch = "x86_64")]
// Index loops over the register tiles read like the maths and unroll fully.
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
mod simd {
    use std::arch::x86_64::*;

    use super::PANEL;

    /// The few vector operations the skinny kernel needs.
    ///
    /// # Safety
    /// Every method needs the CPU features of its implementation (AVX-512F, or AVX2 and
    /// FMA, with F16C), and a pointer it reads or writes must hold [`Simd::W`] values.
    pub trait Simd {
        type V: Copy;
        /// Lanes per vector.
        const W: usize;
        unsafe fn zero() -> Self::V;
        unsafe fn splat(p: *const f32) -> Self::V;
        /// Loads W halves and widens them.
        unsafe fn load_half(p: *const u16) -> Self::V;
        unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
        unsafe fn store(p: *mut f32, v: Self::V);
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
        unsafe fn splat(p: *const f32) -> __m512 {
            _mm512_set1_ps(*p)
        }
        #[inline(always)]
        unsafe fn load_half(p: *const u16) -> __m512 {
            _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
        }
        #[inline(always)]
        unsafe fn fma(a: __m512, b: __m512, c: __m512) -> __m512 {
            _mm512_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m512) {
            _mm512_storeu_ps(p, v)
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
        unsafe fn splat(p: *const f32) -> __m256 {
            _mm256_set1_ps(*p)
        }
        #[inline(always)]
        unsafe fn load_half(p: *const u16) -> __m256 {
            _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
        }
        #[inline(always)]
        unsafe fn fma(a: __m256, b: __m256, c: __m256) -> __m256 {
            _mm256_fmadd_ps(a, b, c)
        }
        #[inline(always)]
        unsafe fn store(p: *mut f32, v: __m256) {
            _mm256_storeu_ps(p, v)
        }
    }

    /// MR rows of x times NV vectors' worth of panel columns (NV·W outputs starting at the
    /// panel `w`); `cols` of those outputs are real, the rest is panel padding.
    ///
    /// # Safety
    /// The CPU must have `S`'s features; x holds MR rows of `k` values, w the panel, and y
    /// MR rows of `ldy` outputs from its first column.
    #[inline(always)]
    unsafe fn block<S: Simd, const MR: usize, const NV: usize>(
        x: *const f32,
        k: usize,
        w: *const u16,
        y: *mut f32,
        ldy: usize,
        cols: usize,
    ) {
        let per_panel = PANEL / S::W;
        let mut acc = [[S::zero(); NV]; MR];
        for kk in 0..k {
            let mut wv = [S::zero(); NV];
            for v in 0..NV {
                let panel = v / per_panel;
                let part = v % per_panel;
                wv[v] = S::load_half(w.add((panel * k + kk) * PANEL + part * S::W));
            }
            for i in 0..MR {
                let xb = S::splat(x.add(i * k + kk));
                for v in 0..NV {
                    acc[i][v] = S::fma(xb, wv[v], acc[i][v]);
                }
            }
        }
        for i in 0..MR {
            for v in 0..NV {
                let c = v * S::W;
                let dst = y.add(i * ldy + c);
                if c + S::W <= cols {
                    S::store(dst, acc[i][v]);
                } else if c < cols {
                    let mut tmp = [0f32; 16];
                    S::store(tmp.as_mut_ptr(), acc[i][v]);
                    std::ptr::copy_nonoverlapping(tmp.as_ptr(), dst, cols - c);
                }
            }
        }
    }

    /// All m rows of x (in blocks of MR ≤ 8) times NV vectors of panel columns.
    ///
    /// # Safety
    /// As [`block`], for all `m` rows.
    #[inline(always)]
    unsafe fn rows<S: Simd, const MR: usize, const NV: usize>(
        x: *const f32,
        m: usize,
        k: usize,
        w: *const u16,
        y: *mut f32,
        ldy: usize,
        cols: usize,
    ) {
        let mut i = 0;
        while i + MR <= m {
            block::<S, MR, NV>(x.add(i * k), k, w, y.add(i * ldy), ldy, cols);
            i += MR;
        }
        let (x, y) = (x.add(i * k), y.add(i * ldy));
        match m - i {
            0 => {}
            1 => block::<S, 1, NV>(x, k, w, y, ldy, cols),
            2 => block::<S, 2, NV>(x, k, w, y, ldy, cols),
            3 => block::<S, 3, NV>(x, k, w, y, ldy, cols),
            4 => block::<S, 4, NV>(x, k, w, y, ldy, cols),
            5 => block::<S, 5, NV>(x, k, w, y, ldy, cols),
            6 => block::<S, 6, NV>(x, k, w, y, ldy, cols),
            _ => block::<S, 7, NV>(x, k, w, y, ldy, cols),
        }
    }

    /// `panels` consecutive panels (`cols` real outputs) against all rows of x; y points at
    /// the first panel's first output column. AVX-512: three panels (48 outputs) per pass.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and F16C; x is m×k, w holds `panels` panels of k×PANEL
    /// halves, y has m rows of stride `ldy` with room for `cols` values from its start.
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    pub unsafe fn skinny_v4(
        x: *const f32,
        m: usize,
        k: usize,
        w: *const u16,
        panels: usize,
        cols: usize,
        y: *mut f32,
        ldy: usize,
    ) {
        // 8 rows × 3 panels: 24 accumulators + 3 weights + 1 broadcast of 32 registers.
        const STEP: usize = 3;
        let mut p = 0;
        while p < panels {
            let np = STEP.min(panels - p);
            let (wp, yp) = (w.add(p * k * PANEL), y.add(p * PANEL));
            let c = cols - p * PANEL;
            match np {
                3 => rows::<Avx512, 8, 3>(x, m, k, wp, yp, ldy, c),
                2 => rows::<Avx512, 8, 2>(x, m, k, wp, yp, ldy, c),
                _ => rows::<Avx512, 8, 1>(x, m, k, wp, yp, ldy, c),
            }
            p += np;
        }
    }

    /// As [`skinny_v4`] with AVX2 (16 registers: 6 rows × one panel of two vectors per pass).
    ///
    /// # Safety
    /// As [`skinny_v4`], with AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn skinny_v3(
        x: *const f32,
        m: usize,
        k: usize,
        w: *const u16,
        panels: usize,
        cols: usize,
        y: *mut f32,
        ldy: usize,
    ) {
        for p in 0..panels {
            let c = cols - p * PANEL;
            rows::<Avx2, 6, 2>(x, m, k, w.add(p * k * PANEL), y.add(p * PANEL), ldy, c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

    #[test]
    fn half_weight_shape_and_range() {
        let w = HalfWeight::from_f32(&[0.5, -1.0, 0.25, 2.0], 2, 2).unwrap();
        assert_eq!((w.rows(), w.cols()), (2, 2));
        assert!(HalfWeight::from_f32(&[1e6], 1, 1).is_none()); // outside f16's range
    }

    #[test]
    fn linear_matches_naive_for_awkward_sizes() {
        // Both paths: m ≤ SKINNY_MAX_ROWS (skinny, f16 in registers) and above (widen + gemm).
        for &(m, k, n) in &[
            (1, 17, 9),
            (5, 16, 4),
            (7, 33, 130),
            (32, 48, 5),
            (33, 20, 7),
            (70, 64, 3),
            (15, 40, 100),
            (3, 24, 16 * 9 + 5),
            (40, 24, 16 * 9 + 5),
        ] {
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
                .collect();
            let w: Vec<f32> = (0..n * k)
                .map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0)
                .collect();
            let hw = HalfWeight::from_f32(&w, n, k).unwrap();
            let rounded: Vec<f32> = w.iter().map(|&v| f16::from_f32(v).to_f32()).collect();
            let xt = Tensor::from_slice(&x, (m, k), &Device::Cpu).unwrap();
            let y = xt
                .apply_op1_no_bwd(&Linear(&hw))
                .unwrap()
                .to_vec2::<f32>()
                .unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want: f32 = (0..k).map(|t| x[i * k + t] * rounded[j * k + t]).sum();
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
    fn linear_rejects_mismatched_inner_size() {
        let hw = HalfWeight::from_f32(&[1.0; 6], 2, 3).unwrap();
        let x = Tensor::zeros((4, 5), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(x.apply_op1_no_bwd(&Linear(&hw)).is_err());
    }

    #[test]
    fn half_weight_keeps_range_and_rejects_overflow() {
        // [[65504, -65504], [1e-7, 0.1]] widened transposed is [[65504, 1e-7], [-65504, 0.1]].
        let w = HalfWeight::from_f32(&[65504.0, -65504.0, 1e-7, 0.1], 2, 2).unwrap();
        let mut out = vec![0f32; 4];
        w.widen_transposed(&mut out);
        assert_eq!(out[0], 65504.0);
        assert_eq!(out[2], -65504.0);
        // Subnormal: spacing 2⁻²⁴ ≈ 6e-8, so within half of that.
        assert!((out[1] - 1e-7).abs() <= 3e-8, "subnormal kept: {}", out[1]);
        assert!((out[3] - 0.1).abs() < 1e-4);
        assert!(HalfWeight::from_f32(&[0.0, 70000.0], 1, 2).is_none());
    }
}
