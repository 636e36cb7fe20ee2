//! `q8.rs`'s panel kernel with VNNI's `vpdpbusd`: four u8 × i8 products summed into each
//! i32 lane in one instruction, where AVX2 needs `vpsignb`, `vpmaddubsw`, `vpmaddwd` and
//! `vpaddd`.
//!
//! `vpdpbusd` multiplies *unsigned* bytes by signed ones. The activations are the unsigned
//! side: `x + 128`, the sign bit of every byte flipped once per product before the kernels
//! run ([`flip`]), and the sum picks up `128 · Σ w` over the block, which is subtracted once
//! per block and row. That correction is itself one
//! `vpdpbusd` per weight vector (`0x80` bytes times the weights), shared by every row of x.
//! The sums are exact i32 (no i16 pair saturation as with `vpmaddubsw`), so these kernels
//! give `q8.rs`'s scalar reference's integers exactly; only the f32 accumulation order of
//! the block sums may differ.
//!
//! - [`panel_256`]: the AVX2 kernel's layout and registers, one panel (8 outputs) per
//!   vector; AVX-VNNI (`vpdpbusd` with a VEX encoding, Alder Lake and later) or
//!   AVX512-VNNI with VL.
//! - [`panel_512`]: two quads of a panel per 512-bit vector. The weights are permuted once
//!   per load (shared by the rows) so lanes `2r` and `2r + 1` hold row `r`'s two quads,
//!   which lets one 64-bit broadcast of x feed both; the pairs are added at the end.

#![cfg(target_arch = "x86_64")]
// The register tiles read like the maths with index loops.
#![allow(clippy::needless_range_loop)]

use std::arch::x86_64::*;

/// `q8.rs`'s layout, stated here too so the kernels depend on nothing above them (`q8.rs`
/// asserts the two agree): weights per scale, output rows per panel, rows of x per call,
/// bytes per panel and block.
pub const BLOCK: usize = 32;
pub const PANEL: usize = 8;
pub const MR: usize = 6;
pub const PANEL_BLOCK_BYTES: usize = PANEL * 4 + PANEL * BLOCK;

/// Four bytes of 128: what `x + 128` adds, as the unsigned side of the correction.
const FLIP: i32 = 0x8080_8080_u32 as i32;

/// Turns int8 activations into the kernels' unsigned `x + 128` (flips every sign bit).
pub fn flip(xq: &mut [i8]) {
    for v in xq {
        *v ^= i8::MIN;
    }
}

/// One panel against `mr ≤ MR` rows of x with 256-bit `vpdpbusd`.
///
/// # Safety
/// The CPU must have AVX2 and AVX-VNNI (`vex = true`) or AVX512-VNNI and AVX512-VL
/// (`vex = false`); `xq` holds `mr` rows of `k` values, [`flip`]ped, `xd` their
/// `mr × k / 32` scales, `w` one panel of `k / 32` blocks.
pub unsafe fn panel_256(
    vex: bool,
    xq: &[i8],
    xd: &[f32],
    mr: usize,
    k: usize,
    w: &[u8],
    out: &mut [[f32; PANEL]; MR],
) {
    assert!(xq.len() >= mr * k && w.len() >= (k / BLOCK) * PANEL_BLOCK_BYTES);
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

#[target_feature(enable = "avx2,fma,avxvnni")]
unsafe fn rows_avxvnni<const R: usize>(
    xq: *const i8,
    xd: *const f32,
    k: usize,
    w: *const u8,
    out: &mut [[f32; PANEL]; MR],
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

#[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
unsafe fn rows_vl<const R: usize>(
    xq: *const i8,
    xd: *const f32,
    k: usize,
    w: *const u8,
    out: &mut [[f32; PANEL]; MR],
) {
    rows_256::<R>(|a, b, c| _mm256_dpbusd_epi32(a, b, c), xq, xd, k, w, out)
}

#[inline(always)]
unsafe fn rows_256<const R: usize>(
    dot: impl Fn(__m256i, __m256i, __m256i) -> __m256i,
    xq: *const i8,
    xd: *const f32,
    k: usize,
    w: *const u8,
    out: &mut [[f32; PANEL]; MR],
) {
    let blocks = k / BLOCK;
    let flip = _mm256_set1_epi32(FLIP);
    for o in out.iter_mut().take(R) {
        *o = [0.0; PANEL];
    }
    for b in 0..blocks {
        let pb = w.add(b * PANEL_BLOCK_BYTES);
        let xb = xq.add(b * BLOCK);
        let mut isum = [_mm256_setzero_si256(); R];
        let mut corr = _mm256_setzero_si256();
        for q in 0..BLOCK / 4 {
            let wv = _mm256_loadu_si256(pb.add(PANEL * 4 + q * 32) as *const __m256i);
            corr = dot(corr, flip, wv);
            for i in 0..R {
                let xv = (xb.add(i * k + q * 4) as *const i32).read_unaligned();
                isum[i] = dot(isum[i], _mm256_set1_epi32(xv), wv);
            }
        }
        let dw = _mm256_loadu_ps(pb as *const f32);
        for i in 0..R {
            let exact = _mm256_cvtepi32_ps(_mm256_sub_epi32(isum[i], corr));
            let scale = _mm256_mul_ps(dw, _mm256_set1_ps(*xd.add(i * blocks + b)));
            let o = out[i].as_mut_ptr();
            _mm256_storeu_ps(o, _mm256_fmadd_ps(exact, scale, _mm256_loadu_ps(o)));
        }
    }
}

/// One panel against `mr ≤ MR` rows of x with 512-bit `vpdpbusd` (see the module docs).
///
/// # Safety
/// The CPU must have AVX512-F, -BW, -VL and -VNNI; the slices as for [`panel_256`].
#[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")]
pub unsafe fn panel_512(
    xq: &[i8],
    xd: &[f32],
    mr: usize,
    k: usize,
    w: &[u8],
    out: &mut [[f32; PANEL]; MR],
) {
    assert!(xq.len() >= mr * k && w.len() >= (k / BLOCK) * PANEL_BLOCK_BYTES);
    assert!(xd.len() >= mr * (k / BLOCK));
    let (x, d, w) = (xq.as_ptr(), xd.as_ptr(), w.as_ptr());
    match mr {
        6 => rows_512::<6>(x, d, k, w, out),
        5 => rows_512::<5>(x, d, k, w, out),
        4 => rows_512::<4>(x, d, k, w, out),
        3 => rows_512::<3>(x, d, k, w, out),
        2 => rows_512::<2>(x, d, k, w, out),
        _ => rows_512::<1>(x, d, k, w, out),
    }
}

#[inline(always)]
unsafe fn rows_512<const R: usize>(
    xq: *const i8,
    xd: *const f32,
    k: usize,
    w: *const u8,
    out: &mut [[f32; PANEL]; MR],
) {
    let blocks = k / BLOCK;
    let flip = _mm512_set1_epi32(FLIP);
    // Lane 2r ← row r of the even quad (lane r), lane 2r + 1 ← row r of the odd one (8 + r).
    let pair = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    // Each row's scale in both of its lanes.
    let twice = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    let mut acc = [_mm512_setzero_ps(); R];
    for b in 0..blocks {
        let pb = w.add(b * PANEL_BLOCK_BYTES);
        let xb = xq.add(b * BLOCK);
        let mut isum = [_mm512_setzero_si512(); R];
        let mut corr = _mm512_setzero_si512();
        for q in 0..BLOCK / 8 {
            let raw = _mm512_loadu_si512(pb.add(PANEL * 4 + q * 64) as *const __m512i);
            let wv = _mm512_permutexvar_epi32(pair, raw);
            corr = _mm512_dpbusd_epi32(corr, flip, wv);
            for i in 0..R {
                let xv = (xb.add(i * k + q * 8) as *const i64).read_unaligned();
                isum[i] = _mm512_dpbusd_epi32(isum[i], _mm512_set1_epi64(xv), wv);
            }
        }
        let dw = _mm512_castps256_ps512(_mm256_loadu_ps(pb as *const f32));
        let dw = _mm512_permutexvar_ps(twice, dw);
        for i in 0..R {
            let exact = _mm512_cvtepi32_ps(_mm512_sub_epi32(isum[i], corr));
            let scale = _mm512_mul_ps(dw, _mm512_set1_ps(*xd.add(i * blocks + b)));
            acc[i] = _mm512_fmadd_ps(exact, scale, acc[i]);
        }
    }
    for i in 0..R {
        let mut lanes = [0f32; 16];
        _mm512_storeu_ps(lanes.as_mut_ptr(), acc[i]);
        for r in 0..PANEL {
            out[i][r] = lanes[2 * r] + lanes[2 * r + 1];
        }
    }
}
