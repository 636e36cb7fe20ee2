//! Linear layers in 8-bit integers: Q8_0 weights against int8-quantised activations.
//!
//! # The format
//!
//! Q8_0 is llama.cpp's: each run of [`BLOCK`] = 32 consecutive weights of a row shares one
//! scale `d = max|w| / 127` and stores `q = round(w / d)` as `i8`, so `w ≈ d · q`. The scale
//! is rounded to f16 as llama.cpp stores it, so a Q8_0 GGUF tensor and the same tensor
//! quantised here hold the same values. Activations are quantised the same way, per row and
//! per block of 32, when a product starts (their scales stay f32). One block's product is
//! then an exact integer sum times two scales:
//!
//! ```text
//! y[i][j] = Σ_b  dx[i][b] · dw[j][b] · Σ_{t in b} qx[i][t] · qw[j][t]
//! ```
//!
//! # The layout
//!
//! The weight `[N, K]` is stored in panels of [`PANEL`] = 16 output rows (one 512-bit
//! vector of i32 sums). A panel holds, block after block, 640 bytes:
//!
//! ```text
//! [0, 64)     the 16 rows' scales, f32
//! [64, 128)   the 16 rows' corrections, i32: 128 · Σ q over the block (see below)
//! [128, 640)  8 "quads" of 64 bytes: 4 consecutive weights of each of the 16 rows
//! ```
//!
//! One 4-byte broadcast of x times one quad is what `vpdpbusd` (or `vpmaddubsw` +
//! `vpmaddwd`) turns into one partial sum per output row, so no horizontal sums are
//! needed. The 256-bit kernels take a panel as two halves of [`HALF`] = 8 rows: half `h`
//! is the 32 bytes at `32 h` of each 64-byte group (scales, corrections, quads), so both
//! widths read the same panels.
//!
//! # The kernels
//!
//! AVX2 (every x86-64 CPU memoria's AVX2 and AVX-512 levels run on): `vpmaddubsw` multiplies
//! unsigned by signed bytes, so the weights' signs move onto x (`vpsignb`) and their
//! magnitudes (≤ 128) are the unsigned side; two products of at most 128 · 127 never
//! saturate the i16 pair sums. Integer sums stay exact within a block, which is what keeps
//! the error at the two roundings (weights and activations).
//!
//! With VNNI (AVX512-VNNI, or AVX-VNNI on AVX2 CPUs) the same panels go through `vpdpbusd`
//! instead (`vnni.rs`), and the activations are stored as `x + 128` for it ([`Kernel`]); the
//! sum then holds `128 · Σ q` of the weights too, which the stored correction takes back.

use half::f16;
use rayon::prelude::*;

use crate::gemma::cpu::{par_tiles, LinearWeight, SyncPtr};
use crate::gemma::slab::Slab;
#[cfg(target_arch = "x86_64")]
use crate::gemma::vnni;
use crate::simd::{extensions, level, Level};

/// Weights (and activations) per scale.
pub const BLOCK: usize = 32;
/// Output rows per panel.
pub const PANEL: usize = 16;
/// Output rows of one pass of the 256-bit kernels: half a panel.
pub const HALF: usize = 8;
/// Bytes per panel and block: 16 f32 scales, 16 i32 corrections, then 16 × 32 weights.
const PANEL_BLOCK_BYTES: usize = CORR + PANEL * 4 + PANEL * BLOCK;
/// Where a panel block's corrections start (its scales start at 0).
const CORR: usize = PANEL * 4;
/// Where a panel block's quads start.
const QUADS: usize = 2 * PANEL * 4;

/// A `[rows, cols]` weight in Q8_0, in panels (see the module docs).
pub struct Q8Weight {
    data: Slab<u8>,
    rows: usize,
    cols: usize,
}

impl std::fmt::Debug for Q8Weight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Q8Weight[{}, {}]", self.rows, self.cols)
    }
}

/// Where weight `t` (0..32) of panel row `r` lies in a panel block.
#[inline(always)]
fn weight_at(r: usize, t: usize) -> usize {
    QUADS + (t / 4) * PANEL * 4 + r * 4 + t % 4
}

/// The scale of panel row `r` in the panel block `pb`.
fn scale_at(pb: &[u8], r: usize) -> f32 {
    f32::from_le_bytes([pb[r * 4], pb[r * 4 + 1], pb[r * 4 + 2], pb[r * 4 + 3]])
}

/// Bytes of a packed `[rows, cols]` weight.
pub fn packed_len(rows: usize, cols: usize) -> usize {
    rows.div_ceil(PANEL) * (cols / BLOCK) * PANEL_BLOCK_BYTES
}

/// One block of 32 weights → its scale and quantised values, as llama.cpp's
/// `quantize_row_q8_0_ref` and gguf-py (halves rounded away from zero, the scale stored
/// as f16).
fn quantize_weights(x: &[f32], q: &mut [i8]) -> f32 {
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for (dst, &v) in q.iter_mut().zip(x) {
        *dst = (v * id).round() as i8;
    }
    f16::from_f32(d).to_f32()
}

/// One block of 32 activations → its scale (kept f32) and quantised values, halves to
/// even as llama.cpp's AVX2 `quantize_row_q8_0` rounds. Branch-free, so it vectorises.
#[inline(always)]
fn quantize_activations(x: &[f32], q: &mut [i8]) -> f32 {
    // Adding 1.5 · 2²³ rounds a value of magnitude < 2²² to an integer, halves to even.
    const MAGIC: f32 = 12_582_912.0;
    let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    for (dst, &v) in q.iter_mut().zip(x) {
        *dst = ((v * id + MAGIC) - MAGIC) as i8;
    }
    d
}

impl Q8Weight {
    /// Quantises `values` (`rows × cols`, row-major). `None` when `cols` is not a multiple
    /// of [`BLOCK`] or a value is not finite.
    pub fn quantize(values: &[f32], rows: usize, cols: usize) -> Option<Self> {
        if values.len() != rows * cols || !cols.is_multiple_of(BLOCK) {
            return None;
        }
        if !values.iter().all(|v| v.is_finite()) {
            return None;
        }
        let blocks = cols / BLOCK;
        let mut data = vec![0u8; packed_len(rows, cols)];
        data.par_chunks_mut(blocks * PANEL_BLOCK_BYTES)
            .enumerate()
            .for_each(|(p, panel)| {
                let mut q = [0i8; BLOCK];
                for r in 0..PANEL.min(rows - p * PANEL) {
                    let row = &values[(p * PANEL + r) * cols..][..cols];
                    for (b, x) in row.chunks_exact(BLOCK).enumerate() {
                        let d = quantize_weights(x, &mut q);
                        let pb = &mut panel[b * PANEL_BLOCK_BYTES..][..PANEL_BLOCK_BYTES];
                        pb[r * 4..r * 4 + 4].copy_from_slice(&d.to_le_bytes());
                        let corr = 128 * q.iter().map(|&v| i32::from(v)).sum::<i32>();
                        pb[CORR + r * 4..CORR + r * 4 + 4].copy_from_slice(&corr.to_le_bytes());
                        for (t, &v) in q.iter().enumerate() {
                            pb[weight_at(r, t)] = v as u8;
                        }
                    }
                }
            });
        Some(Q8Weight {
            data: Slab::Owned(data),
            rows,
            cols,
        })
    }

    /// A weight already in this layout (a packed model's section); `None` when the
    /// length does not match the shape.
    pub fn from_packed(data: Slab<u8>, rows: usize, cols: usize) -> Option<Self> {
        (cols.is_multiple_of(BLOCK) && data.len() == packed_len(rows, cols)).then_some(Q8Weight {
            data,
            rows,
            cols,
        })
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
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// The weight as f32 (`[rows, cols]`, row-major): what the products multiply by.
    #[cfg(test)]
    pub fn dequantize(&self) -> Vec<f32> {
        let (n, k) = (self.rows, self.cols);
        let blocks = k / BLOCK;
        let mut out = vec![0f32; n * k];
        for j in 0..n {
            let (p, r) = (j / PANEL, j % PANEL);
            for b in 0..blocks {
                let pb = &self.data[(p * blocks + b) * PANEL_BLOCK_BYTES..];
                let d = scale_at(pb, r);
                for t in 0..BLOCK {
                    let q = pb[weight_at(r, t)] as i8;
                    out[j * k + b * BLOCK + t] = d * q as f32;
                }
            }
        }
        out
    }
}

/// Rows of x quantised per block: `q` is `m × k`, `d` is `m × k / BLOCK`.
struct QuantRows {
    q: Vec<i8>,
    d: Vec<f32>,
}

/// Each row ends [`prepare`](Kernel::prepare)d for `kernel`.
fn quantize_rows(x: &[f32], m: usize, k: usize, kernel: Kernel) -> QuantRows {
    let mut q = vec![0i8; m * k];
    let mut d = vec![0f32; m * k / BLOCK];
    let avx2 = matches!(level(), Level::Avx2 | Level::Avx512);
    q.par_chunks_mut(k)
        .zip(d.par_chunks_mut(k / BLOCK))
        .zip(x.par_chunks(k))
        .with_min_len(16)
        .for_each(|((qr, dr), xr)| {
            for ((qb, db), xb) in qr
                .chunks_exact_mut(BLOCK)
                .zip(dr.iter_mut())
                .zip(xr.chunks_exact(BLOCK))
            {
                *db = if avx2 {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: the level check guarantees AVX2; both blocks hold 32 values.
                    unsafe {
                        simd::quantize_block(xb, qb)
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    quantize_activations(xb, qb)
                } else {
                    quantize_activations(xb, qb)
                };
            }
            kernel.prepare(qr);
        });
    QuantRows { q, d }
}

/// Rows of x per task: their quantised bytes (≤ 64 × 1152) stay in L2 while every panel
/// of the task's group passes over them. (256 measured slower with the VNNI kernel:
/// 903 against 1005 tokens/s on a Xeon, one window.)
const ROWS_PER_TASK: usize = 64;
/// Rows of x per call of a 256-bit kernel: 6 i32 accumulators, the weights, their
/// magnitudes, ones and two temporaries fit AVX2's 16 registers without spilling.
const MR: usize = 6;

/// `y = x · wᵀ` for `x: [M, K]` (f32) and a [`Q8Weight`] `w: [N, K]`.
impl LinearWeight for Q8Weight {
    const NAME: &'static str = "memoria-linear-q8";

    fn rows(&self) -> usize {
        self.rows
    }

    fn cols(&self) -> usize {
        self.cols
    }

    fn matmul(&self, x: &[f32], m: usize, y: &mut Vec<f32>) {
        // Not zeroed first: for a document batch that is megabytes of stores per layer, and
        // every value is written below.
        matmul(x, m, self, Kernel::best(), y.as_mut_ptr());
        // SAFETY: `matmul` wrote all m×n values.
        unsafe { y.set_len(m * self.rows) };
    }
}

/// `y[M, N] = x[M, K] · wᵀ` with `kernel`, parallel over blocks of rows × groups of
/// panels; `y` has room for m×n values, and every one of them is written (each task owns
/// its rows × panels).
fn matmul(x: &[f32], m: usize, w: &Q8Weight, kernel: Kernel, y: *mut f32) {
    let (n, k) = (w.rows, w.cols);
    let xq = quantize_rows(x, m, k, kernel);
    let yp = SyncPtr(y);
    let blocks = k / BLOCK;
    let panel_bytes = blocks * PANEL_BLOCK_BYTES;
    #[cfg(target_arch = "x86_64")]
    if kernel == Kernel::Vnni512 {
        // Whole panels, a few per pass of the kernel (`vnni::NP`).
        par_tiles(
            m,
            ROWS_PER_TASK,
            n.div_ceil(PANEL),
            vnni::NP,
            4,
            |rows, panels| {
                let yp = &yp;
                let (r0, r1, p0, p1) = (rows.start, rows.end, panels.start, panels.end);
                // SAFETY: `best` chose this kernel, so the CPU has AVX512-VNNI (a test names it
                // only after checking); the slices hold the task's rows and panels, and this
                // task alone writes rows r0..r1 × the columns of panels p0..p1.
                unsafe {
                    vnni::panels_512(
                        &xq.q[r0 * k..r1 * k],
                        &xq.d[r0 * blocks..r1 * blocks],
                        r1 - r0,
                        k,
                        &w.data[p0 * panel_bytes..p1 * panel_bytes],
                        (p1 * PANEL).min(n) - p0 * PANEL,
                        yp.0.add(r0 * n + p0 * PANEL),
                        n,
                    )
                }
            },
        );
        return;
    }
    // Half panels, both halves of a panel in the same task.
    par_tiles(m, ROWS_PER_TASK, n.div_ceil(HALF), 2, 8, |rows, halves| {
        let yp = &yp;
        let (r0, r1) = (rows.start, rows.end);
        for u in halves {
            let (p, h) = (u / 2, u % 2);
            let wp = &w.data[p * panel_bytes + h * HALF * 4..(p + 1) * panel_bytes];
            let cols = (n - u * HALF).min(HALF);
            let mut i = r0;
            while i < r1 {
                let mr = MR.min(r1 - i);
                let xq_rows = &xq.q[i * k..(i + mr) * k];
                let xd_rows = &xq.d[i * blocks..(i + mr) * blocks];
                let mut out = [[0f32; HALF]; MR];
                kernel.panel(xq_rows, xd_rows, mr, k, wp, &mut out);
                for (r, o) in out.iter().take(mr).enumerate() {
                    // SAFETY: this task alone writes rows r0..r1, columns of its halves.
                    unsafe {
                        let dst = yp.0.add((i + r) * n + u * HALF);
                        std::ptr::copy_nonoverlapping(o.as_ptr(), dst, cols);
                    }
                }
                i += mr;
            }
        }
    });
}

#[cfg(target_arch = "x86_64")]
const _: () = assert!(
    vnni::BLOCK == BLOCK
        && vnni::PANEL == PANEL
        && vnni::HALF == HALF
        && vnni::MR == MR
        && vnni::PANEL_BLOCK_BYTES == PANEL_BLOCK_BYTES
        && vnni::CORR == CORR
        && vnni::QUADS == QUADS
);

/// Which panel kernel runs: the best the CPU has (`crate::simd`'s level and extensions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// 512-bit `vpdpbusd` over whole panels (`vnni.rs`).
    Vnni512,
    /// 256-bit `vpdpbusd`: AVX-VNNI's VEX encoding (`vex`) or AVX512-VNNI's with VL.
    Vnni256 { vex: bool },
    /// AVX2's `vpmaddubsw` + `vpmaddwd`.
    Avx2,
    /// Plain Rust.
    Scalar,
}

impl Kernel {
    /// The fastest kernel this CPU runs (and `MEMORIA_EMBED_SIMD` allows).
    pub(crate) fn best() -> Kernel {
        let ext = extensions();
        match level() {
            Level::Avx512 if ext.vnni512 => Kernel::Vnni512,
            Level::Avx512 if ext.vnni256 => Kernel::Vnni256 { vex: false },
            Level::Avx2 if ext.vnni256 => Kernel::Vnni256 { vex: true },
            Level::Avx512 | Level::Avx2 => Kernel::Avx2,
            Level::Scalar => Kernel::Scalar,
        }
    }

    /// The kernel in words, for `status` and `doctor`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kernel::Vnni512 => "AVX512-VNNI int8",
            Kernel::Vnni256 { vex: true } => "AVX-VNNI int8",
            Kernel::Vnni256 { vex: false } => "AVX512-VNNI (256-bit) int8",
            Kernel::Avx2 => "AVX2 int8",
            Kernel::Scalar => "scalar int8",
        }
    }

    /// Puts quantised activations in the form this kernel reads: the VNNI kernels take
    /// `x + 128` as unsigned bytes (`vnni.rs`), the others the int8 values.
    fn prepare(self, xq: &mut [i8]) {
        #[cfg(target_arch = "x86_64")]
        if matches!(self, Kernel::Vnni512 | Kernel::Vnni256 { .. }) {
            vnni::flip(xq);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = xq;
    }

    /// One half panel (`w` from its first byte: see the module docs) against `mr ≤ MR`
    /// rows of x, [`prepare`](Kernel::prepare)d (see [`panel_scalar`]). [`Kernel::Vnni512`]
    /// multiplies whole panels in [`matmul`]; here it runs the 256-bit kernel.
    fn panel(self, xq: &[i8], xd: &[f32], mr: usize, k: usize, w: &[u8], out: &mut Out) {
        // SAFETY (every arm): `best` only names kernels whose instructions the CPU has (a
        // test names others only after checking); the slices hold mr rows of x and their
        // scales, a half panel of w and room for mr rows of HALF outputs (the kernels
        // assert it).
        #[cfg(target_arch = "x86_64")]
        match self {
            Kernel::Vnni512 => return unsafe { vnni::panel_256(false, xq, xd, mr, k, w, out) },
            Kernel::Vnni256 { vex } => {
                return unsafe { vnni::panel_256(vex, xq, xd, mr, k, w, out) }
            }
            Kernel::Avx2 => return unsafe { simd::panel(xq, xd, mr, k, w, out) },
            Kernel::Scalar => {}
        }
        panel_scalar(xq, xd, mr, k, w, out)
    }
}

/// The outputs of one half panel for up to [`MR`] rows of x.
type Out = [[f32; HALF]; MR];

/// One half panel (`w` from its first byte) against `mr` rows of x, in plain Rust (the
/// reference and the fallback).
fn panel_scalar(xq: &[i8], xd: &[f32], mr: usize, k: usize, w: &[u8], out: &mut Out) {
    let blocks = k / BLOCK;
    for b in 0..blocks {
        let pb = &w[b * PANEL_BLOCK_BYTES..];
        for (i, o) in out.iter_mut().enumerate().take(mr) {
            let xb = &xq[i * k + b * BLOCK..][..BLOCK];
            for (r, o) in o.iter_mut().enumerate() {
                let mut sum = 0i32;
                for (t, &xv) in xb.iter().enumerate() {
                    sum += xv as i32 * pb[weight_at(r, t)] as i8 as i32;
                }
                *o += sum as f32 * (scale_at(pb, r) * xd[i * blocks + b]);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    use super::{BLOCK, HALF, MR, PANEL, PANEL_BLOCK_BYTES, QUADS};

    /// [`super::quantize_activations`] with AVX2: the same scale and the same values.
    ///
    /// # Safety
    /// The CPU must have AVX2; `x` and `q` hold 32 values each.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn quantize_block(x: &[f32], q: &mut [i8]) -> f32 {
        assert!(x.len() >= BLOCK && q.len() >= BLOCK);
        let p = x.as_ptr();
        let v = [
            _mm256_loadu_ps(p),
            _mm256_loadu_ps(p.add(8)),
            _mm256_loadu_ps(p.add(16)),
            _mm256_loadu_ps(p.add(24)),
        ];
        let sign = _mm256_set1_ps(-0.0);
        let mut m = _mm256_andnot_ps(sign, v[0]);
        for vi in &v[1..] {
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign, *vi));
        }
        let m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        let m2 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        let m1 = _mm_max_ss(m2, _mm_movehdup_ps(m2));
        let amax = _mm_cvtss_f32(m1);
        let d = amax / 127.0;
        let id = _mm256_set1_ps(if d != 0.0 { 1.0 / d } else { 0.0 });
        const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        let i: [__m256i; 4] =
            v.map(|vi| _mm256_cvtps_epi32(_mm256_round_ps::<NEAREST>(_mm256_mul_ps(vi, id))));
        // Pack 32 i32 → 32 i8; the packs interleave 128-bit lanes, the permute undoes it.
        let w16 = [
            _mm256_packs_epi32(i[0], i[1]),
            _mm256_packs_epi32(i[2], i[3]),
        ];
        let b8 = _mm256_packs_epi16(w16[0], w16[1]);
        let ordered = _mm256_permutevar8x32_epi32(b8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(q.as_mut_ptr() as *mut __m256i, ordered);
        d
    }

    /// One half panel against `mr ≤ MR` rows of x.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `xq` holds `mr` rows of `k` values, `xd` their
    /// `mr × k / 32` scales, `w` a half panel of `k / 32` blocks from its first byte.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn panel(
        xq: &[i8],
        xd: &[f32],
        mr: usize,
        k: usize,
        w: &[u8],
        out: &mut [[f32; HALF]; MR],
    ) {
        assert!(xq.len() >= mr * k && xd.len() >= mr * (k / BLOCK));
        assert!(w.len() + HALF * 4 >= (k / BLOCK) * PANEL_BLOCK_BYTES);
        let (x, d, w) = (xq.as_ptr(), xd.as_ptr(), w.as_ptr());
        match mr {
            6 => rows::<6>(x, d, k, w, out),
            5 => rows::<5>(x, d, k, w, out),
            4 => rows::<4>(x, d, k, w, out),
            3 => rows::<3>(x, d, k, w, out),
            2 => rows::<2>(x, d, k, w, out),
            _ => rows::<1>(x, d, k, w, out),
        }
    }

    /// R rows of quantised x against one panel of Q8_0 weights, into `out`.
    ///
    /// # Safety
    /// The CPU must have AVX2 (its caller, [`panel`], is compiled for it); `xq` and `xd` hold
    /// R rows of `k` quantised values and their block scales, `w` the panel's `k / 32`
    /// blocks.
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // the register tiles read like the maths
    unsafe fn rows<const R: usize>(
        xq: *const i8,
        xd: *const f32,
        k: usize,
        w: *const u8,
        out: &mut [[f32; HALF]; MR],
    ) {
        let blocks = k / BLOCK;
        let ones = _mm256_set1_epi16(1);
        // The f32 sums live in `out` (one load and store per block and row): in registers
        // they would push the integer sums out of them.
        for o in out.iter_mut().take(R) {
            *o = [0.0; HALF];
        }
        for b in 0..blocks {
            let pb = w.add(b * PANEL_BLOCK_BYTES);
            let xb = xq.add(b * BLOCK);
            let mut isum = [_mm256_setzero_si256(); R];
            for q in 0..BLOCK / 4 {
                let wv = _mm256_loadu_si256(pb.add(QUADS + q * PANEL * 4) as *const __m256i);
                let wa = _mm256_abs_epi8(wv);
                for i in 0..R {
                    let xv = (xb.add(i * k + q * 4) as *const i32).read_unaligned();
                    let xs = _mm256_sign_epi8(_mm256_set1_epi32(xv), wv);
                    let pairs = _mm256_maddubs_epi16(wa, xs);
                    isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(pairs, ones));
                }
            }
            let dw = _mm256_loadu_ps(pb as *const f32);
            for i in 0..R {
                let scale = _mm256_mul_ps(dw, _mm256_set1_ps(*xd.add(i * blocks + b)));
                let o = out[i].as_mut_ptr();
                let sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), scale, _mm256_loadu_ps(o));
                _mm256_storeu_ps(o, sum);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemma::cpu::Linear;
    use candle_core::{Device, Tensor};

    fn values(n: usize, seed: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * seed + 7) % 211) as f32 - 105.0) / 105.0 * scale)
            .collect()
    }

    #[test]
    fn quantize_round_trips_within_half_a_step() {
        let (n, k) = (11, 64);
        let w = values(n * k, 53, 0.3);
        let q = Q8Weight::quantize(&w, n, k).unwrap();
        let back = q.dequantize();
        for (j, row) in w.chunks(BLOCK).enumerate() {
            let step = row.iter().fold(0f32, |m, v| m.max(v.abs())) / 127.0;
            for (t, &v) in row.iter().enumerate() {
                // Half a step, plus up to 127 × the f16 rounding of the scale (2⁻¹¹ of it).
                let err = (back[j * BLOCK + t] - v).abs();
                assert!(err <= step * 0.57 + 1e-6, "{v} vs {}", back[j * BLOCK + t]);
            }
        }
    }

    #[test]
    fn activation_quantizers_agree() {
        // Halves (to even), the extremes, zeros and a block of one sign.
        let mut x: Vec<f32> = values(32 * 40, 29, 3.0);
        x[..32].copy_from_slice(&[0.0; 32]);
        for (i, v) in x[32..64].iter_mut().enumerate() {
            *v = i as f32 - 15.5; // with 127 below, the scale is 1: exact halves
        }
        x[32] = 127.0;
        for (i, v) in x[64..96].iter_mut().enumerate() {
            *v = i as f32 + 1.0;
        }
        for xb in x.chunks_exact(BLOCK) {
            let (mut a, mut b) = ([0i8; BLOCK], [0i8; BLOCK]);
            let da = quantize_activations(xb, &mut a);
            if !matches!(level(), Level::Avx2 | Level::Avx512) {
                return;
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX2 checked above.
            let db = unsafe { simd::quantize_block(xb, &mut b) };
            #[cfg(target_arch = "x86_64")]
            assert_eq!((da, a), (db, b), "{xb:?}");
        }
    }

    #[test]
    fn quantize_refuses_what_it_cannot_hold() {
        assert!(Q8Weight::quantize(&[0.0; 2 * 33], 2, 33).is_none()); // not whole blocks
        let mut w = vec![0.5f32; 32];
        w[3] = f32::NAN;
        assert!(Q8Weight::quantize(&w, 1, 32).is_none());
        // All zeros: scale 0, values 0.
        let z = Q8Weight::quantize(&[0.0; 64], 2, 32).unwrap();
        assert!(z.dequantize().iter().all(|&v| v == 0.0));
    }

    #[test]
    fn from_packed_checks_the_length() {
        let q = Q8Weight::quantize(&values(9 * 64, 3, 1.0), 9, 64).unwrap();
        let bytes = q.bytes().to_vec();
        assert!(Q8Weight::from_packed(Slab::Owned(bytes.clone()), 9, 64).is_some());
        assert!(Q8Weight::from_packed(Slab::Owned(bytes[1..].to_vec()), 9, 64).is_none());
        assert!(Q8Weight::from_packed(Slab::Owned(bytes), 9, 48).is_none());
    }

    /// The exact product of the quantised operands, in f64.
    fn reference(x: &[f32], m: usize, k: usize, w: &Q8Weight) -> Vec<f64> {
        let xq = quantize_rows(x, m, k, Kernel::Scalar);
        let wd = w.dequantize();
        let mut y = vec![0f64; m * w.rows];
        for i in 0..m {
            for j in 0..w.rows {
                let mut s = 0f64;
                for t in 0..k {
                    let xv = xq.q[i * k + t] as f64 * xq.d[i * k / BLOCK + t / BLOCK] as f64;
                    s += xv * wd[j * k + t] as f64;
                }
                y[i * w.rows + j] = s;
            }
        }
        y
    }

    #[test]
    fn linear_matches_the_quantised_product_for_awkward_sizes() {
        // Rows not a multiple of MR or of a task, outputs not a multiple of the panel,
        // extreme weights (±127 after quantisation, and -128 is never produced).
        for &(m, k, n) in &[
            (1, 32, 1),
            (3, 64, 9),
            (5, 96, 17),
            (4, 32, 8),
            (70, 64, 3),
            (130, 128, 40),
            (33, 768, 24),
            (7, 64, 50),
            (6, 96, 33),
        ] {
            let x = values(m * k, 37, 4.0);
            let w = values(n * k, 59, 0.2);
            let q = Q8Weight::quantize(&w, n, k).unwrap();
            let want = reference(&x, m, k, &q);
            let xt = Tensor::from_slice(&x, (m, k), &Device::Cpu).unwrap();
            let got = xt.apply_op1_no_bwd(&Linear(&q)).unwrap();
            let got = got.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (*g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                    "({m},{k},{n}): {g} vs {w}"
                );
            }
        }
    }

    /// Whether this CPU runs `kernel` (what `Kernel::best` would need, without the override).
    fn runs(kernel: Kernel) -> Result<(), &'static str> {
        #[cfg(target_arch = "x86_64")]
        let (avx2, vex, vnni) = (
            std::is_x86_feature_detected!("avx2"),
            std::is_x86_feature_detected!("avxvnni"),
            crate::simd::detect_extensions().vnni512,
        );
        #[cfg(not(target_arch = "x86_64"))]
        let (avx2, vex, vnni) = (false, false, false);
        match kernel {
            Kernel::Vnni512 | Kernel::Vnni256 { vex: false } if !vnni => Err("no avx512_vnni"),
            Kernel::Vnni256 { vex: true } if !vex => Err("no avx_vnni"),
            Kernel::Avx2 if !avx2 => Err("no avx2"),
            _ => Ok(()),
        }
    }

    #[test]
    fn every_kernel_matches_the_scalar_panel() {
        // Random values, the extremes of both sides (±127 after quantisation, the bytes
        // where x + 128 reaches 0 and 255), zeros, every row count up to past MR and the
        // 512-bit kernel's pass, counts past its few-rows path (`vnni::FEW`), and outputs
        // ending in a part of a panel and of a pass.
        let mut next = crate::gemma::cpu::test_values(0x2545_f491_4f6c_dd1d_u64);
        let kernels = [
            Kernel::Vnni512,
            Kernel::Vnni256 { vex: false },
            Kernel::Vnni256 { vex: true },
            Kernel::Avx2,
        ];
        for kernel in kernels {
            if let Err(why) = runs(kernel) {
                eprintln!("{}: skipped: {why}", kernel.name());
                continue;
            }
            for &(k, n) in &[(32, 16), (64, 67), (96, 16), (768, 67), (1152, 40)] {
                for m in (1..=MR + 3).chain([17, 23]) {
                    let mut w: Vec<f32> = (0..n * k).map(|_| next()).collect();
                    let mut x: Vec<f32> = (0..m * k).map(|_| next() * 3.0).collect();
                    w[..BLOCK].iter_mut().for_each(|v| *v = 1.0); // all +127
                    x[..BLOCK].iter_mut().for_each(|v| *v = -1.0); // all -127
                    if k > BLOCK {
                        x[BLOCK..2 * BLOCK].iter_mut().for_each(|v| *v = 0.0);
                        w[k..k + BLOCK].iter_mut().for_each(|v| *v = -2.0);
                    }
                    let q = Q8Weight::quantize(&w, n, k).unwrap();
                    let mut got = vec![0f32; m * n];
                    matmul(&x, m, &q, kernel, got.as_mut_ptr());
                    let xq = quantize_rows(&x, m, k, Kernel::Scalar);
                    let panel_bytes = k / BLOCK * PANEL_BLOCK_BYTES;
                    for u in 0..n.div_ceil(HALF) {
                        let (p, h) = (u / 2, u % 2);
                        let wp = &q.bytes()[p * panel_bytes + h * HALF * 4..];
                        for i0 in (0..m).step_by(MR) {
                            let mr = MR.min(m - i0);
                            let mut want = [[0f32; HALF]; MR];
                            let xd = &xq.d[i0 * k / BLOCK..];
                            panel_scalar(&xq.q[i0 * k..], xd, mr, k, wp, &mut want);
                            for (i, row) in want.iter().take(mr).enumerate() {
                                for (r, &e) in row.iter().take(n - u * HALF).enumerate() {
                                    let g = got[(i0 + i) * n + u * HALF + r];
                                    assert!(
                                        (g - e).abs() <= 1e-5 * (1.0 + e.abs()),
                                        "{} k={k} n={n} m={m} [{}][{}]: {g} vs {e}",
                                        kernel.name(),
                                        i0 + i,
                                        u * HALF + r
                                    );
                                }
                            }
                        }
                    }
                }
            }
            eprintln!("{}: matches the scalar panel", kernel.name());
        }
    }

    #[test]
    fn linear_is_close_to_the_f32_product() {
        let (m, k, n) = (6, 256, 16);
        let x = values(m * k, 41, 2.0);
        let w = values(n * k, 43, 0.1);
        let q = Q8Weight::quantize(&w, n, k).unwrap();
        let xt = Tensor::from_slice(&x, (m, k), &Device::Cpu).unwrap();
        let got = xt.apply_op1_no_bwd(&Linear(&q)).unwrap();
        let got = got.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        for i in 0..m {
            for j in 0..n {
                let exact: f32 = (0..k).map(|t| x[i * k + t] * w[j * k + t]).sum();
                let norm: f32 = (0..k).map(|t| (x[i * k + t] * w[j * k + t]).abs()).sum();
                assert!((got[i * n + j] - exact).abs() <= 0.02 * norm, "{i},{j}");
            }
        }
    }

    #[test]
    fn linear_rejects_mismatched_inner_size() {
        let q = Q8Weight::quantize(&[0.5; 64], 2, 32).unwrap();
        let x = Tensor::zeros((4, 64), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(x.apply_op1_no_bwd(&Linear(&q)).is_err());
    }
}
