//! `q8.rs`'s panel kernels with VNNI's `vpdpbusd`: four u8 × i8 products summed into each
//! i32 lane in one instruction, where AVX2 needs `vpsignb`, `vpmaddubsw`, `vpmaddwd` and
//! `vpaddd`.
//!
//! `vpdpbusd` multiplies *unsigned* bytes by signed ones. The activations are the unsigned
//! side: `x + 128`, the sign bit of every byte flipped once per product before the kernels
//! run ([`flip`]), and the sum picks up `128 · Σ w` over the block, which the panels store
//! per row and block (`q8.rs`'s layout) and each block's sum gives back. The sums are exact
//! i32 (no i16 pair saturation as with `vpmaddubsw`), so these kernels give `q8.rs`'s
//! scalar reference's integers exactly; only the f32 accumulation order of the block sums
//! may differ.
//!
//! - [`panel_256`]: the AVX2 kernel's registers, one half panel (8 outputs) per vector;
//!   AVX-VNNI (`vpdpbusd` with a VEX encoding, Alder Lake and later) or AVX512-VNNI with VL.
//! - [`panels_512`]: whole panels, 16 outputs per vector, [`MRW`] rows of x × [`NP`]
//!   panels per pass: 12 i32 sums and 12 f32 totals in registers. Each block's 8
//!   `vpdpbusd` per sum are followed by its scaling (subtract the correction, convert,
//!   multiply the two scales, add), which Q8_0's per-block scales make per-block work.
//!   Measured on a Zen 4 (documents, tokens/s): 4 × 3 1862–1872, 8 × 2 1740, 4 × 4 1725,
//!   4 × 1 1708, 6 × 2 1551, 8 × 1 1508. Up to [`FEW`] rows (a query) it walks the panels
//!   block by block instead, so each block meets every row while it is in L1 ([`rows_512`]).

#![cfg(target_arch = "x86_64")]
// The register tiles read like the maths with index loops.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

/// `q8.rs`'s layout, stated here too so the kernels depend on nothing above them (`q8.rs`
/// asserts the two agree): weights per scale, output rows per panel and per half panel,
/// rows of x per call of the 256-bit kernel, bytes per panel and block, and where a panel
/// block's corrections and quads start.
pub const BLOCK: usize = 32;
pub const PANEL: usize = 16;
pub const HALF: usize = 8;
pub const MR: usize = 6;
pub const PANEL_BLOCK_BYTES: usize = 2 * PANEL * 4 + PANEL * BLOCK;
pub const CORR: usize = PANEL * 4;
pub const QUADS: usize = 2 * PANEL * 4;

/// Rows of x and panels per pass of [`panels_512`].
pub const MRW: usize = 4;
pub const NP: usize = 3;

/// Turns int8 activations into the kernels' unsigned `x + 128` (flips every sign bit).
pub fn flip(xq: &mut [i8]) {
    for v in xq {
        *v ^= i8::MIN;
    }
}

/// One half panel against `mr ≤ MR` rows of x with 256-bit `vpdpbusd`.
///
/// # Safety
/// The CPU must have AVX2 and AVX-VNNI (`vex = true`) or AVX512-VNNI and AVX512-VL
/// (`vex = false`); `xq` holds `mr` rows of `k` values, [`flip`]ped, `xd` their
/// `mr × k / 32` scales, `w` a half panel of `k / 32` blocks from its first byte.
pub unsafe fn panel_256(
    vex: bool,
    xq: &[i8],
    xd: &[f32],
    mr: usize,
    k: usize,
    w: &[u8],
    out: &mut [[f32; HALF]; MR],
) {
    assert!(xq.len() >= mr * k && w.len() + HALF * 4 >= (k / BLOCK) * PANEL_BLOCK_BYTES);
    assert!(xd.len() >= mr * (k / BLOCK));
    let (x, d, w) = (xq.as_ptr(), xd.as_ptr(), w.as_ptr());
    if vex {
        match mr {
            6 => rows_avxvnni::<6>(x, d, k, w, out),
            5 => rows_avxvnni::<5>(x, d, k, w, out),
            4 => rows_avxvnni::<4>(x, d, k, w, out),
            3 => rows_avxvnni::<3>(x, d, k, w, out),
            2 => rows_avxvnni::<2>(x, d, k, w, out),
            _ => rows_avxvnni::<1>(x, d, k, w, out),
        }
    } else {
        match mr {
            6 => rows_vl::<6>(x, d, k, w, out),
            5 => rows_vl::<5>(x, d, k, w, out),
            4 => rows_vl::<4>(x, d, k, w, out),
            3 => rows_vl::<3>(x, d, k, w, out),
            2 => rows_vl::<2>(x, d, k, w, out),
            _ => rows_vl::<1>(x, d, k, w, out),
        }
    }
}

/// [`rows_256`] with AVX-VNNI's `vpdpbusd`.
///
/// # Safety
/// The CPU must have AVX-VNNI; the pointers as [`panel_256`] takes them, for R rows.
#[target_feature(enable = "avx2,fma,avxvnni")]
unsafe fn rows_avxvnni<const R: usize>(
    xq: *const i8,
    xd: *const f32,
    k: usize,
    w: *const u8,
    out: &mut [[f32; HALF]; MR],
) {
    rows_256::<R>(
        |a, b, c| _mm256_dpbusd_avx_epi32(a, b, c),
        xq,
        xd,
        k,
        w,
        out,
    )
}

/// [`rows_256`] with AVX512-VNNI's 256-bit `vpdpbusd`.
///
/// # Safety
/// The CPU must have AVX512-VNNI and AVX512-VL; the pointers as [`panel_256`] takes them,
/// for R rows.
#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
unsafe fn rows_vl<const R: usize>(
    xq: *const i8,
    xd: *const f32,
    k: usize,
    w: *const u8,
    out: &mut [[f32; HALF]; MR],
) {
    rows_256::<R>(|a, b, c| _mm256_dpbusd_epi32(a, b, c), xq, xd, k, w, out)
}

/// R rows of x against one half panel, with `dot` as the u8 × i8 dot product.
///
/// # Safety
/// The CPU must have what `dot` and the 256-bit integer products need (its callers are
/// compiled for it); the pointers as [`panel_256`] takes them, for R rows.
#[inline(always)]
unsafe fn rows_256<const R: usize>(
    dot: impl Fn(__m256i, __m256i, __m256i) -> __m256i,
    xq: *const i8,
    xd: *const f32,
    k: usize,
    w: *const u8,
    out: &mut [[f32; HALF]; MR],
) {
    let blocks = k / BLOCK;
    for o in out.iter_mut().take(R) {
        *o = [0.0; HALF];
    }
    for b in 0..blocks {
        let pb = w.add(b * PANEL_BLOCK_BYTES);
        let xb = xq.add(b * BLOCK);
        let mut isum = [_mm256_setzero_si256(); R];
        for q in 0..BLOCK / 4 {
            let wv = _mm256_loadu_si256(pb.add(QUADS + q * PANEL * 4) as *const __m256i);
            for i in 0..R {
                let xv = (xb.add(i * k + q * 4) as *const i32).read_unaligned();
                isum[i] = dot(isum[i], _mm256_set1_epi32(xv), wv);
            }
        }
        let dw = _mm256_loadu_ps(pb as *const f32);
        let corr = _mm256_loadu_si256(pb.add(CORR) as *const __m256i);
        for i in 0..R {
            let exact = _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[i], corr));
            let scale = _mm256_mul_ps(dw, _mm256_set1_ps(*xd.add(i * blocks + b)));
            let o = out[i].as_mut_ptr();
            _mm256_storeu_ps(o, _mm256_fmadd_ps(exact, scale, _mm256_loadu_ps(o)));
        }
    }
}

/// `y = x · wᵀ` for `m` rows of x and whole panels `w`, `cols` outputs of them real, with
/// 512-bit `vpdpbusd` (see the module docs); y's rows are `ldy` apart.
///
/// # Safety
/// The CPU must have AVX512-F, -BW and -VNNI; `xq` holds `m` rows of `k` values, [`flip`]ped,
/// `xd` their `m × k / 32` scales, `w` whole panels of `k / 32` blocks, at least
/// `cols.div_ceil(16)`, and y room for m rows of `cols` values `ldy` apart that no other
/// thread touches meanwhile.
#[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn panels_512(
    xq: &[i8],
    xd: &[f32],
    m: usize,
    k: usize,
    w: &[u8],
    cols: usize,
    y: *mut f32,
    ldy: usize,
) {
    let (blocks, panels) = (k / BLOCK, cols.div_ceil(PANEL));
    assert!(xq.len() >= m * k && xd.len() >= m * blocks && ldy >= cols);
    assert!(w.len() >= panels * blocks * PANEL_BLOCK_BYTES);
    let (x, d, w) = (xq.as_ptr(), xd.as_ptr(), w.as_ptr());
    let stride = blocks * PANEL_BLOCK_BYTES;
    let mut p = 0;
    while p < panels {
        let (wp, yp, c) = (w.add(p * stride), y.add(p * PANEL), cols - p * PANEL);
        match panels - p {
            1 => rows_512::<1>(x, d, m, k, wp, c, yp, ldy),
            2 => rows_512::<2>(x, d, m, k, wp, c, yp, ldy),
            _ => rows_512::<NP>(x, d, m, k, wp, c, yp, ldy),
        }
        p += NP;
    }
}

/// Rows of x up to which [`rows_512`] walks the panels block by block (a query).
pub const FEW: usize = 16;

/// All `m` rows of x against `P` panels, [`MRW`] rows at a time.
///
/// Up to [`FEW`] rows (a query) go block by block: each block of the panels meets every row
/// while it is in L1, so the weights stream from memory once, evenly through the pass, and
/// their loads overlap the products; the f32 totals live in a small tile in L1. More rows
/// (documents) go row by row over all of K, the totals in registers ([`block_512`]): there
/// the first rows would wait for memory and the others reread the panels from L2, which
/// a long batch amortises.
///
/// # Safety
/// The CPU must have AVX512-VNNI; x, its scales and y hold `m` rows, w the P panels.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn rows_512<const P: usize>(
    x: *const i8,
    d: *const f32,
    m: usize,
    k: usize,
    w: *const u8,
    cols: usize,
    y: *mut f32,
    ldy: usize,
) {
    let blocks = k / BLOCK;
    if m <= FEW {
        let mut acc = [[_mm512_setzero_ps(); P]; FEW];
        for b in 0..blocks {
            for i in (0..m).step_by(MRW) {
                let (xb, db) = (x.add(i * k + b * BLOCK), d.add(i * blocks + b));
                let tile = &mut acc[i..];
                match m - i {
                    1 => step_512::<1, P>(xb, db, k, blocks, w, b, tile),
                    2 => step_512::<2, P>(xb, db, k, blocks, w, b, tile),
                    3 => step_512::<3, P>(xb, db, k, blocks, w, b, tile),
                    _ => step_512::<MRW, P>(xb, db, k, blocks, w, b, tile),
                }
            }
        }
        return store_512(&acc[..m], cols, y, ldy);
    }
    for i in (0..m).step_by(MRW) {
        let (x, d, y) = (x.add(i * k), d.add(i * blocks), y.add(i * ldy));
        match m - i {
            1 => block_512::<1, P>(x, d, k, w, cols, y, ldy),
            2 => block_512::<2, P>(x, d, k, w, cols, y, ldy),
            3 => block_512::<3, P>(x, d, k, w, cols, y, ldy),
            _ => block_512::<MRW, P>(x, d, k, w, cols, y, ldy),
        }
    }
}

// The matches above cover the rows a pass of MRW leaves.
const _: () = assert!(MRW == 4);

/// Block `b` of P panels against R rows of x (`xb` and `db` at the block), added into the
/// f32 totals `tile` (R rows).
///
/// # Safety
/// The CPU must have AVX512-VNNI; `xb`, `db` and `w` hold block `b` of R rows and of P
/// panels.
#[inline(always)]
unsafe fn step_512<const R: usize, const P: usize>(
    xb: *const i8,
    db: *const f32,
    k: usize,
    blocks: usize,
    w: *const u8,
    b: usize,
    tile: &mut [[__m512; P]],
) {
    let stride = blocks * PANEL_BLOCK_BYTES;
    let pb = w.add(b * PANEL_BLOCK_BYTES);
    let mut isum = [[_mm512_setzero_si512(); P]; R];
    for q in 0..BLOCK / 4 {
        let mut wv = [_mm512_setzero_si512(); P];
        for v in 0..P {
            wv[v] = _mm512_loadu_si512(pb.add(v * stride + QUADS + q * 64) as *const __m512i);
        }
        for i in 0..R {
            let xv = _mm512_set1_epi32((xb.add(i * k + q * 4) as *const i32).read_unaligned());
            for v in 0..P {
                isum[i][v] = _mm512_dpbusd_epi32(isum[i][v], xv, wv[v]);
            }
        }
    }
    for v in 0..P {
        let dw = _mm512_loadu_ps(pb.add(v * stride) as *const f32);
        let corr = _mm512_loadu_si512(pb.add(v * stride + CORR) as *const __m512i);
        for i in 0..R {
            let exact = _mm512_cvtepi32_ps(_mm512_sub_epi32(isum[i][v], corr));
            let scale = _mm512_mul_ps(dw, _mm512_set1_ps(*db.add(i * blocks)));
            tile[i][v] = _mm512_fmadd_ps(exact, scale, tile[i][v]);
        }
    }
}

/// The f32 totals of `acc.len()` rows × P panels into y (`cols` of the outputs real).
///
/// # Safety
/// The CPU must have AVX-512F; y holds `acc.len()` rows of `ldy` outputs.
#[inline(always)]
unsafe fn store_512<const P: usize>(acc: &[[__m512; P]], cols: usize, y: *mut f32, ldy: usize) {
    for (i, row) in acc.iter().enumerate() {
        for (v, &sum) in row.iter().enumerate() {
            let c = v * PANEL;
            let dst = y.add(i * ldy + c);
            if c + PANEL <= cols {
                _mm512_storeu_ps(dst, sum);
            } else if c < cols {
                _mm512_mask_storeu_ps(dst, (1u16 << (cols - c)) - 1, sum);
            }
        }
    }
}

/// R rows of x times P panels over all of K, the R × P f32 totals in registers.
///
/// # Safety
/// The CPU must have AVX512-VNNI; x, its scales and y hold R rows, w the P panels.
#[inline(always)]
unsafe fn block_512<const R: usize, const P: usize>(
    x: *const i8,
    d: *const f32,
    k: usize,
    w: *const u8,
    cols: usize,
    y: *mut f32,
    ldy: usize,
) {
    let blocks = k / BLOCK;
    let mut acc = [[_mm512_setzero_ps(); P]; R];
    for b in 0..blocks {
        step_512::<R, P>(x.add(b * BLOCK), d.add(b), k, blocks, w, b, &mut acc);
    }
    store_512(&acc, cols, y, ldy);
}
