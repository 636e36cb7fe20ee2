//! Linear layers in bfloat16: bf16 weights against bf16-rounded activations, products
//! summed in f32 (the `bf16` precision).
//!
//! bf16 is f32 with the low 16 bits of the mantissa dropped: the same range, 8 significant
//! bits. A product of two bf16 values is exact in f32, so the only errors are the two
//! roundings (weights once, activations per product), as in PyTorch's bfloat16 autocast.
//!
//! # The layout
//!
//! The weight `[N, K]` is stored in panels of [`PANEL`] = 16 output rows, with K padded with
//! zeros to whole steps of [`KSTEP`] = 32. Within a panel, input columns go in pairs: the
//! 64 bytes of pair `c/2` hold the two consecutive weights of each of the 16 rows
//! (`[r][c % 2]`). That is the operand both instructions want:
//!
//! - `vdpbf16ps` (AVX512-BF16) multiplies one 512-bit vector of 16 such pairs by a
//!   broadcast pair of x and adds both products into 16 f32 sums, one per output row;
//! - AMX's `tdpbf16ps` takes a B tile of 16 pairs × 64 bytes, which is 16 consecutive pair
//!   rows of a panel as they lie (`amx.rs`).
//!
//! # The kernels
//!
//! - AMX (`amx.rs`), where the CPU has it and Linux grants the tile state: 32 rows of x
//!   times 32 outputs per pass, four 16 × 16 f32 tiles.
//! - AVX512-BF16 ([`dot_rows`]): 8 rows of x times 3 panels (48 outputs) per pass, the
//!   register tiling of `matmul.rs`'s skinny f16 kernel, on CPUs without AMX. On AMD's Zen 4
//!   `vdpbf16ps` does twice the multiply-adds of f32's FMAs per cycle and `auto` picks
//!   `bf16` there; on Intel's cores it does no more, the kernel is slower than the f32 ones,
//!   and `auto` picks `bf16` only with AMX (`precision.rs`).
//! - Elsewhere the weight is widened to f32 and multiplied with the `gemm` crate, the
//!   activations rounded to bf16 first: the same arithmetic up to the order of the sums,
//!   at f32 speed. It makes `bf16` run, and be measured, on any CPU.
//!
//! The tests hold the reference every kernel is compared with: the same roundings, summed in
//! f64.

// The SIMD paths are x86-64's: elsewhere (aarch64) what only they use goes unused.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_imports, unused_variables)
)]

use std::cell::RefCell;

use half::bf16;
use rayon::prelude::*;

use crate::gemma::cpu::{par_tiles, LinearWeight, SyncPtr};
use crate::gemma::slab::Slab;
use crate::simd::extensions;

/// Output rows per panel.
pub const PANEL: usize = 16;
/// K is padded to whole steps of this many values (one AMX tile's depth).
pub const KSTEP: usize = 32;
// The layout is AMX's B tile (`amx.rs` states the tile's geometry on its own).
#[cfg(target_arch = "x86_64")]
const _: () = assert!(crate::gemma::amx::PANEL == PANEL && crate::gemma::amx::KSTEP == KSTEP);

/// A `[rows, cols]` weight in bf16 panels (see the module docs).
pub struct Bf16Weight {
    /// `panels × padded_cols × PANEL` values; rows past `rows` and columns past `cols` are 0.
    data: Slab<u16>,
    rows: usize,
    cols: usize,
}

impl std::fmt::Debug for Bf16Weight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bf16Weight[{}, {}]", self.rows, self.cols)
    }
}

/// `cols` padded to whole [`KSTEP`]s.
pub fn padded(cols: usize) -> usize {
    cols.div_ceil(KSTEP) * KSTEP
}

/// Values of a packed `[rows, cols]` weight.
pub fn packed_len(rows: usize, cols: usize) -> usize {
    rows.div_ceil(PANEL) * padded(cols) * PANEL
}

/// Where weight column `c` of panel row `r` lies in a panel.
#[inline(always)]
fn at(r: usize, c: usize) -> usize {
    (c / 2) * 2 * PANEL + r * 2 + c % 2
}

/// f32 → bf16 bits, rounding to nearest even (NaN stays NaN).
#[inline(always)]
fn to_bf16(v: f32) -> u16 {
    bf16::from_f32(v).to_bits()
}

/// bf16 bits → f32 (exact).
#[inline(always)]
fn to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

impl Bf16Weight {
    /// Rounds `values` (`rows × cols`, row-major) to bf16. `None` when a value is not
    /// finite.
    pub fn quantize(values: &[f32], rows: usize, cols: usize) -> Option<Self> {
        if values.len() != rows * cols || !values.iter().all(|v| v.is_finite()) {
            return None;
        }
        let per_panel = padded(cols) * PANEL;
        let mut data = vec![0u16; packed_len(rows, cols)];
        data.par_chunks_mut(per_panel.max(1))
            .enumerate()
            .for_each(|(p, panel)| {
                for r in 0..PANEL.min(rows - p * PANEL) {
                    let row = &values[(p * PANEL + r) * cols..][..cols];
                    for (c, &v) in row.iter().enumerate() {
                        panel[at(r, c)] = to_bf16(v);
                    }
                }
            });
        Some(Bf16Weight {
            data: Slab::Owned(data),
            rows,
            cols,
        })
    }

    /// A weight already in this layout (a packed model's section); `None` when the length
    /// does not match the shape.
    pub fn from_packed(data: Slab<u16>, rows: usize, cols: usize) -> Option<Self> {
        (data.len() == packed_len(rows, cols)).then_some(Bf16Weight { data, rows, cols })
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
    pub fn panels(&self) -> &[u16] {
        &self.data
    }

    /// Writes the transposed weight as f32, `[cols, rows]` row-major, into `out`.
    fn widen_transposed(&self, out: &mut [f32]) {
        let (n, k) = (self.rows, padded(self.cols));
        out.par_chunks_mut(n).enumerate().for_each(|(c, dst)| {
            for (j, v) in dst.iter_mut().enumerate() {
                let (p, r) = (j / PANEL, j % PANEL);
                *v = to_f32(self.data[p * k * PANEL + at(r, c)]);
            }
        });
    }
}

/// Which kernel multiplies: the best the CPU has (`crate::simd`'s extensions), by rows of x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// AMX tiles (`amx.rs`).
    Amx,
    /// AVX512-BF16's `vdpbf16ps`.
    Avx512Bf16,
    /// The weight widened to f32 and the `gemm` crate.
    Widened,
}

impl Kernel {
    /// The best kernel on this CPU. AMX runs queries too: padding 15 rows to 32 costs less
    /// than `vdpbf16ps` (a 15-token query 13.0 ms against 26.0 ms on a 2-core Xeon).
    pub(crate) fn best() -> Kernel {
        let ext = extensions();
        if ext.amx_bf16 {
            Kernel::Amx
        } else if ext.bf16 {
            Kernel::Avx512Bf16
        } else {
            Kernel::Widened
        }
    }

    /// `y[M, N] = x · wᵀ` with this kernel on the calling thread, into y with rows `ldy`
    /// apart (≥ n): x is m rows of `kp` values (whole `amx::ROWS` of rows for AMX, zero
    /// past m), w `n.div_ceil(16)` panels (asserted). Attention's products use it.
    ///
    /// # Safety
    /// This CPU runs the kernel (asserted), which is not [`Kernel::Widened`]; y holds m rows
    /// of n values, `ldy` apart, that no other thread touches meanwhile.
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn matmul_serial(
        self,
        x: &[u16],
        m: usize,
        kp: usize,
        w: &[u16],
        n: usize,
        y: *mut f32,
        ldy: usize,
    ) {
        match self {
            Kernel::Amx => crate::gemma::amx::matmul_serial(x, m, kp, w, n, y, ldy),
            Kernel::Avx512Bf16 => {
                let panels = n.div_ceil(PANEL);
                assert!(kp.is_multiple_of(2) && x.len() >= m * kp);
                assert!(w.len() >= panels * kp * PANEL && ldy >= n && extensions().bf16);
                simd::panels(x.as_ptr(), m, kp, w.as_ptr(), panels, n, y, ldy)
            }
            Kernel::Widened => unreachable!("the widened bf16 kernel has no serial product"),
        }
    }

    /// The kernel in words, for `status` and `doctor`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kernel::Amx => "AMX bf16",
            Kernel::Avx512Bf16 => "AVX512-BF16",
            Kernel::Widened => "bf16 widened to f32 (no AVX512-BF16)",
        }
    }
}

thread_local! {
    /// x rounded to bf16 (rows padded for the AMX kernel), and the widened weight of the
    /// fallback: reused across calls.
    static BUFFERS: RefCell<(Vec<u16>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// `y = x · wᵀ` for `x: [M, K]` (f32) and a [`Bf16Weight`] `w: [N, K]`.
impl LinearWeight for Bf16Weight {
    const NAME: &'static str = "memoria-linear-bf16";

    fn rows(&self) -> usize {
        self.rows
    }

    fn cols(&self) -> usize {
        self.cols
    }

    fn matmul(&self, x: &[f32], m: usize, y: &mut Vec<f32>) {
        BUFFERS.with(|cell| {
            // A rayon worker that steals another forward pass while this one runs finds the
            // buffers taken and uses its own.
            let mut own = (Vec::new(), Vec::new());
            let mut borrowed = cell.try_borrow_mut();
            let (xb, wide) = match borrowed.as_mut() {
                Ok(b) => &mut **b,
                Err(_) => &mut own,
            };
            matmul(x, m, self, Kernel::best(), xb, wide, y);
        });
    }
}

/// x (`m × k`, f32) rounded to bf16 into `xb`: rows of `padded(k)` values, zero-padded,
/// and `rows` rows (≥ m; the extra ones zero).
fn round_rows(x: &[f32], m: usize, k: usize, rows: usize, xb: &mut Vec<u16>) {
    let kp = padded(k);
    assert!(x.len() == m * k && rows >= m);
    xb.clear();
    xb.resize(rows * kp, 0);
    xb.par_chunks_mut(kp)
        .zip(x.par_chunks(k))
        .with_min_len(16)
        .for_each(|(dst, src)| round_row(src, dst));
}

/// `src` rounded to bf16 bits into `dst` (nearest even), with `vcvtne2ps2bf16` where the
/// CPU has it.
pub(crate) fn round_row(src: &[f32], dst: &mut [u16]) {
    assert!(dst.len() >= src.len());
    #[cfg(target_arch = "x86_64")]
    if extensions().bf16 {
        // SAFETY: the extension check guarantees AVX512-BF16; dst holds ≥ src.len() values.
        return unsafe { simd::round_row(src, dst) };
    }
    for (d, &v) in dst.iter_mut().zip(src) {
        *d = to_bf16(v);
    }
}

/// `y = x · wᵀ` with `kernel`; `y` is empty with capacity m × n on entry and full after.
fn matmul(
    x: &[f32],
    m: usize,
    w: &Bf16Weight,
    kernel: Kernel,
    xb: &mut Vec<u16>,
    wide: &mut Vec<f32>,
    y: &mut Vec<f32>,
) {
    let (n, k) = (w.rows, w.cols);
    let kp = padded(k);
    match kernel {
        Kernel::Widened => {
            round_rows(x, m, k, m, xb);
            let xr: Vec<f32> = xb.iter().map(|&b| to_f32(b)).collect();
            if wide.len() < n * kp {
                wide.resize(n * kp, 0.0);
            }
            w.widen_transposed(&mut wide[..n * kp]);
            crate::gemma::cpu::gemm_f32(&xr, m, kp, &wide[..n * kp], n, y);
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Amx => {
            let rows = m.div_ceil(crate::gemma::amx::ROWS) * crate::gemma::amx::ROWS;
            round_rows(x, m, k, rows, xb);
            crate::gemma::amx::matmul(xb, m, kp, w.panels(), n, y.as_mut_ptr());
            // SAFETY: the AMX driver wrote all m × n values.
            unsafe { y.set_len(m * n) };
        }
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512Bf16 => {
            round_rows(x, m, k, m, xb);
            dot_rows(xb, m, kp, w.panels(), n, y.as_mut_ptr());
            // SAFETY: dot_rows wrote all m × n values.
            unsafe { y.set_len(m * n) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        _ => unreachable!("{kernel:?} without x86-64"),
    }
}

/// `y[M, N] = xb · wᵀ` with `vdpbf16ps`, parallel over blocks of rows × groups of panels.
#[cfg(target_arch = "x86_64")]
fn dot_rows(xb: &[u16], m: usize, kp: usize, w: &[u16], n: usize, y: *mut f32) {
    const ROWS_PER_TASK: usize = 64;
    let yp = SyncPtr(y);
    // Whole steps of 3 panels (the kernel's width), enough tasks to balance the threads.
    par_tiles(m, ROWS_PER_TASK, n.div_ceil(PANEL), 3, 4, |rows, panels| {
        let yp = &yp;
        let (r0, r1, p0, p1) = (rows.start, rows.end, panels.start, panels.end);
        // SAFETY: the extension check chose this kernel, so the CPU has AVX512-BF16; this
        // task alone writes rows r0..r1 × the columns of panels p0..p1; xb holds m rows of
        // kp values and w the panels.
        unsafe {
            simd::panels(
                xb.as_ptr().add(r0 * kp),
                r1 - r0,
                kp,
                w.as_ptr().add(p0 * kp * PANEL),
                p1 - p0,
                (p1 * PANEL).min(n) - p0 * PANEL,
                yp.0.add(r0 * n + p0 * PANEL),
                n,
            )
        }
    });
}

#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
mod simd {
    use std::arch::x86_64::*;

    use super::PANEL;

    /// One f32 row rounded to bf16 (nearest even) with `vcvtne2ps2bf16`.
    ///
    /// # Safety
    /// The CPU must have AVX512-BF16; `dst` holds at least `src.len()` values.
    #[target_feature(enable = "avx512f,avx512bf16,avx512bw")]
    pub unsafe fn round_row(src: &[f32], dst: &mut [u16]) {
        assert!(dst.len() >= src.len());
        let mut c = 0;
        while c + 32 <= src.len() {
            let lo = _mm512_loadu_ps(src.as_ptr().add(c));
            let hi = _mm512_loadu_ps(src.as_ptr().add(c + 16));
            let v: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
            _mm512_storeu_si512(dst.as_mut_ptr().add(c) as *mut __m512i, v);
            c += 32;
        }
        for (d, &v) in dst[c..].iter_mut().zip(&src[c..]) {
            *d = super::to_bf16(v);
        }
    }

    /// MR rows of x times NP panels; `cols` of the NP × 16 outputs are real.
    ///
    /// # Safety
    /// The CPU must have AVX512-BF16; x holds MR rows of `kp` values, w NP panels, and y
    /// room for MR rows of `ldy` outputs past the first column written.
    #[inline(always)]
    unsafe fn block<const MR: usize, const NP: usize>(
        x: *const u16,
        kp: usize,
        w: *const u16,
        y: *mut f32,
        ldy: usize,
        cols: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); NP]; MR];
        for pair in 0..kp / 2 {
            let mut wv = [_mm512_setzero_ps(); NP];
            for v in 0..NP {
                wv[v] = _mm512_castsi512_ps(_mm512_loadu_si512(
                    w.add(v * kp * PANEL + pair * 2 * PANEL) as *const __m512i,
                ));
            }
            for i in 0..MR {
                let xv = (x.add(i * kp + pair * 2) as *const i32).read_unaligned();
                let xb: __m512bh = std::mem::transmute(_mm512_set1_epi32(xv));
                for v in 0..NP {
                    let wb: __m512bh = std::mem::transmute(wv[v]);
                    acc[i][v] = _mm512_dpbf16_ps(acc[i][v], xb, wb);
                }
            }
        }
        for i in 0..MR {
            for v in 0..NP {
                let c = v * PANEL;
                let dst = y.add(i * ldy + c);
                if c + PANEL <= cols {
                    _mm512_storeu_ps(dst, acc[i][v]);
                } else if c < cols {
                    let mask = (1u16 << (cols - c)) - 1;
                    _mm512_mask_storeu_ps(dst, mask, acc[i][v]);
                }
            }
        }
    }

    /// All `m` rows of x times NP panels, 8 rows at a time.
    ///
    /// # Safety
    /// As [`block`]: AVX512-BF16, and x, w and y hold `m` rows, NP panels and `m` rows of
    /// outputs.
    #[inline(always)]
    unsafe fn rows<const NP: usize>(
        x: *const u16,
        m: usize,
        kp: usize,
        w: *const u16,
        y: *mut f32,
        ldy: usize,
        cols: usize,
    ) {
        let mut i = 0;
        while i + 8 <= m {
            block::<8, NP>(x.add(i * kp), kp, w, y.add(i * ldy), ldy, cols);
            i += 8;
        }
        let (x, y) = (x.add(i * kp), y.add(i * ldy));
        match m - i {
            0 => {}
            1 => block::<1, NP>(x, kp, w, y, ldy, cols),
            2 => block::<2, NP>(x, kp, w, y, ldy, cols),
            3 => block::<3, NP>(x, kp, w, y, ldy, cols),
            4 => block::<4, NP>(x, kp, w, y, ldy, cols),
            5 => block::<5, NP>(x, kp, w, y, ldy, cols),
            6 => block::<6, NP>(x, kp, w, y, ldy, cols),
            _ => block::<7, NP>(x, kp, w, y, ldy, cols),
        }
    }

    /// `panels` consecutive panels (`cols` real outputs) against `m` rows of x (`kp`
    /// apart), three panels per pass: 24 accumulators, 3 weights and a broadcast.
    ///
    /// # Safety
    /// The CPU must have AVX512-BF16; x holds m rows of kp values, w `panels` panels, and y
    /// m rows of stride `ldy` with room for `cols` values from its start.
    #[target_feature(enable = "avx512f,avx512bf16,avx512bw,avx512vl")]
    pub unsafe fn panels(
        x: *const u16,
        m: usize,
        kp: usize,
        w: *const u16,
        panels: usize,
        cols: usize,
        y: *mut f32,
        ldy: usize,
    ) {
        let mut p = 0;
        while p < panels {
            let np = 3.min(panels - p);
            let (wp, yp, c) = (w.add(p * kp * PANEL), y.add(p * PANEL), cols - p * PANEL);
            match np {
                3 => rows::<3>(x, m, kp, wp, yp, ldy, c),
                2 => rows::<2>(x, m, kp, wp, yp, ldy, c),
                _ => rows::<1>(x, m, kp, wp, yp, ldy, c),
            }
            p += np;
        }
    }
}

/// Whether the CPU runs `kernel`, or why not (for the tests of every kernel).
#[cfg(test)]
pub(crate) fn runs(kernel: Kernel) -> Result<(), &'static str> {
    let cpu = crate::simd::detect_extensions();
    match kernel {
        Kernel::Widened => Ok(()),
        Kernel::Avx512Bf16 if cpu.bf16 => Ok(()),
        Kernel::Avx512Bf16 => Err("no avx512_bf16"),
        Kernel::Amx if !cpu.amx_bf16 || !cpu.bf16 => Err("no amx_bf16 with avx512_bf16"),
        Kernel::Amx => match crate::simd::amx_permission() {
            Ok(()) if extensions().amx_bf16 => Ok(()),
            Ok(()) => Err("AMX capped by MEMORIA_EMBED_SIMD"),
            Err(why) => Err(why),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, next: &mut impl FnMut() -> f32, scale: f32) -> Vec<f32> {
        (0..n).map(|_| next() * scale).collect()
    }

    #[test]
    fn weight_layout_round_trips_and_refuses_non_finite() {
        let mut next = crate::gemma::cpu::test_values(7);
        let (n, k) = (19, 40);
        let w = values(n * k, &mut next, 2.0);
        let q = Bf16Weight::quantize(&w, n, k).unwrap();
        assert_eq!(q.panels().len(), 2 * 64 * PANEL);
        let mut wide = vec![0f32; padded(k) * n];
        q.widen_transposed(&mut wide);
        for j in 0..n {
            for c in 0..padded(k) {
                let want = if c < k {
                    to_f32(to_bf16(w[j * k + c]))
                } else {
                    0.0
                };
                assert_eq!(wide[c * n + j], want, "[{j}][{c}]");
            }
        }
        assert!(Bf16Weight::from_packed(Slab::Owned(q.panels().to_vec()), n, k).is_some());
        assert!(Bf16Weight::from_packed(Slab::Owned(vec![0; 5]), n, k).is_none());
        assert!(Bf16Weight::quantize(&[1.0, f32::INFINITY], 1, 2).is_none());
        assert!(Bf16Weight::quantize(&[f32::NAN], 1, 1).is_none());
        // Nearest even: 1 + 2⁻⁸ lies halfway between bf16's 1 and 1 + 2⁻⁷.
        assert_eq!(to_f32(to_bf16(1.0 + 1.0 / 256.0)), 1.0);
        assert_eq!(to_f32(to_bf16(1.0 + 3.0 / 256.0)), 1.0 + 4.0 / 256.0);
    }

    #[test]
    fn every_kernel_matches_the_reference() {
        let mut next = crate::gemma::cpu::test_values(0x9e37_79b9_7f4a_7c15);
        for kernel in [Kernel::Amx, Kernel::Avx512Bf16, Kernel::Widened] {
            if let Err(why) = runs(kernel) {
                eprintln!("{}: skipped: {why}", kernel.name());
                continue;
            }
            // Rows around the 8-row and 32-row passes, K with and without padding,
            // outputs around panels, 3-panel passes and AMX's panel pairs.
            for &(m, k, n) in &[
                (1, 32, 1),
                (5, 40, 17),
                (8, 768, 48),
                (15, 64, 50),
                (16, 96, 16),
                (17, 33, 130),
                (33, 768, 40),
                (70, 1152, 24),
                (130, 64, 290),
            ] {
                let x = values(m * k, &mut next, 3.0);
                let w = values(n * k, &mut next, 0.5);
                let q = Bf16Weight::quantize(&w, n, k).unwrap();
                let (mut xb, mut wide, mut y) = (Vec::new(), Vec::new(), Vec::with_capacity(m * n));
                matmul(&x, m, &q, kernel, &mut xb, &mut wide, &mut y);
                assert_eq!(y.len(), m * n);
                for i in 0..m {
                    for j in 0..n {
                        let (mut want, mut size) = (0f64, 0f64);
                        for c in 0..k {
                            let p = to_f32(to_bf16(x[i * k + c])) as f64
                                * to_f32(to_bf16(w[j * k + c])) as f64;
                            want += p;
                            size += p.abs();
                        }
                        let got = y[i * n + j] as f64;
                        assert!(
                            (got - want).abs() <= 1e-5 * size + 1e-6,
                            "{} ({m},{k},{n}) [{i}][{j}]: {got} vs {want}",
                            kernel.name()
                        );
                    }
                }
            }
            eprintln!("{}: matches the reference", kernel.name());
        }
    }

    #[test]
    fn vector_rounding_matches_the_scalar_one() {
        if !crate::simd::detect_extensions().bf16 {
            eprintln!("vcvtne2ps2bf16: skipped: no avx512_bf16");
            return;
        }
        let mut next = crate::gemma::cpu::test_values(3);
        for len in [1, 31, 32, 33, 64, 100] {
            let mut x = values(len, &mut next, 100.0);
            x[0] = 1.0 + 1.0 / 256.0; // a tie
            let mut got = vec![0u16; len];
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX512-BF16 checked above.
            unsafe {
                simd::round_row(&x, &mut got)
            };
            let want: Vec<u16> = x.iter().map(|&v| to_bf16(v)).collect();
            assert_eq!(got, want, "len {len}");
        }
    }
}
