//! `bf16.rs`'s product on AMX tiles (`tdpbf16ps`), Sapphire Rapids and later.
//!
//! AMX adds eight tile registers of up to 16 rows × 64 bytes and an instruction that
//! multiplies two of them into a third: `tdpbf16ps C, A, B` adds A (16 rows × 32 bf16)
//! times B (16 pair rows × 16 columns of bf16 pairs) into C (16 × 16 f32). B's layout is
//! exactly 16 consecutive pair rows of a `bf16.rs` panel, so the weights load as they lie.
//!
//! One pass computes 32 rows of x times 2 panels (32 outputs): tiles 0–3 hold the four
//! 16 × 16 sums, 4–5 the two row halves of x, 6–7 the two panels, for every 32 columns of
//! K. x is padded to whole [`ROWS`] with zero rows (`bf16.rs` does it) and K to whole
//! steps of 32 (the layout does it); an odd last panel is paired with itself and half of
//! that pass's sums dropped.
//!
//! Linux gives a process the tile state only when it asks
//! (`crate::simd::amx_permission`), and each thread configures its tiles
//! (`ldtilecfg`) before using them and releases them after (`tilerelease`). Rust has no
//! stable AMX intrinsics, so the instructions are written in `asm!`; no Rust value lives
//! in a tile register.

#![cfg(target_arch = "x86_64")]

use std::arch::asm;

use crate::gemma::cpu::{par_tiles, SyncPtr};

/// Columns of a B tile: 16 outputs, `bf16.rs`'s panel width (asserted there).
pub const PANEL: usize = 16;
/// K per tile step: 32 bf16 values in a 64-byte tile row, `bf16.rs`'s K padding.
pub const KSTEP: usize = 32;

/// Rows of x per pass (two A tiles of 16).
pub const ROWS: usize = 32;

/// `ldtilecfg`'s 64-byte operand: palette 1, tiles 0–7 of 16 rows × 64 bytes.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

impl TileConfig {
    fn full() -> TileConfig {
        let mut c = TileConfig {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            colsb: [0; 16],
            rows: [0; 16],
        };
        for t in 0..8 {
            c.colsb[t] = 64;
            c.rows[t] = 16;
        }
        c
    }
}

/// `y[M, N] = x · wᵀ`: x is `rows ≥ m` rows of `kp` bf16 values (whole [`ROWS`], zero
/// past m), w `n.div_ceil(16)` panels of `kp` columns, y has room for m × n values, all of
/// which are written. Parallel over blocks of rows × groups of panel pairs.
///
/// The caller must have checked `crate::simd::extensions().amx_bf16` (the CPU has AMX and
/// Linux granted its state); x and w must hold what is said above (asserted).
pub fn matmul(x: &[u16], m: usize, kp: usize, w: &[u16], n: usize, y: *mut f32) {
    // A task's panels stream from L3 once per task and are reused by all its row blocks
    // from L1/L2. 512 rows per task measured 1510 tokens/s against 1465 at 128 (documents,
    // 2 threads, one window on a Xeon with AMX): within noise, kept for the reuse.
    const ROWS_PER_TASK: usize = 16 * ROWS;
    let panels = n.div_ceil(PANEL);
    check(x, m, kp, w, panels);
    let yp = SyncPtr(y);
    par_tiles(m, ROWS_PER_TASK, panels.div_ceil(2), 1, 4, |rows, pairs| {
        let yp = &yp;
        let _tiles = Tiles::configure();
        // SAFETY: tiles configured; `check` vouched for x and w; this task alone writes
        // these rows × these panels' columns of y (m × n, stride n).
        unsafe { block(x, kp, w, n, rows, pairs, yp.0, n) };
    });
}

/// [`matmul`] on the calling thread, into y with rows `ldy` apart (≥ n).
///
/// # Safety
/// y holds m rows of n values, `ldy` apart, that no other thread touches meanwhile (the
/// rows of an attention task interleave with other tasks' columns, so no slice of them
/// can be borrowed).
pub unsafe fn matmul_serial(
    x: &[u16],
    m: usize,
    kp: usize,
    w: &[u16],
    n: usize,
    y: *mut f32,
    ldy: usize,
) {
    let panels = n.div_ceil(PANEL);
    check(x, m, kp, w, panels);
    assert!(ldy >= n);
    let _tiles = Tiles::configure();
    block(x, kp, w, n, 0..m, 0..panels.div_ceil(2), y, ldy);
}

fn check(x: &[u16], m: usize, kp: usize, w: &[u16], panels: usize) {
    assert!(kp.is_multiple_of(KSTEP) && x.len() >= m.div_ceil(ROWS) * ROWS * kp);
    assert!(w.len() >= panels * kp * PANEL && crate::simd::extensions().amx_bf16);
}

/// This thread's tiles, configured for the kernel while the value lives.
struct Tiles;

impl Tiles {
    fn configure() -> Tiles {
        let config = TileConfig::full();
        // SAFETY: AMX is granted (checked by the callers); the config is 64 valid bytes.
        unsafe {
            asm!("ldtilecfg [{}]", in(reg) &config as *const TileConfig, options(nostack, readonly))
        };
        Tiles
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        // SAFETY: releases this thread's tile state, configured in `configure`.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }
}

/// Rows `rows` of x times panel pairs `pairs` into y (stride `ldy`).
///
/// # Safety
/// Tiles configured; x holds the rows rounded up to whole [`ROWS`] (kp values each), w the
/// panels, y the rows × n outputs; no other thread writes these outputs.
#[allow(clippy::too_many_arguments)]
unsafe fn block(
    x: &[u16],
    kp: usize,
    w: &[u16],
    n: usize,
    rows: std::ops::Range<usize>,
    pairs: std::ops::Range<usize>,
    y: *mut f32,
    ldy: usize,
) {
    let panels = n.div_ceil(PANEL);
    let mut sums = [[[0f32; PANEL]; 16]; 4];
    for q in pairs {
        let (pa, pb) = (2 * q, (2 * q + 1).min(panels - 1));
        let wa = w[pa * kp * PANEL..].as_ptr();
        let wb = w[pb * kp * PANEL..].as_ptr();
        let mut i = rows.start;
        while i < rows.end {
            pass(x[i * kp..].as_ptr(), kp, wa, wb, &mut sums);
            // Tiles: 0 = rows 0–15 × panel a, 1 = 0–15 × b, 2 = 16–31 × a, 3 = 16–31 × b.
            for (tile, s) in sums.iter().enumerate() {
                let (half, p) = (tile / 2, if tile % 2 == 0 { pa } else { pb });
                if tile % 2 == 1 && pb == pa {
                    continue;
                }
                let cols = (n - p * PANEL).min(PANEL);
                for (r, row) in s.iter().enumerate() {
                    let yi = i + half * 16 + r;
                    if yi < rows.end {
                        let dst = y.add(yi * ldy + p * PANEL);
                        std::ptr::copy_nonoverlapping(row.as_ptr(), dst, cols);
                    }
                }
            }
            i += ROWS;
        }
    }
}

/// 32 rows of x (`kp` apart) times two panels into `sums`, on configured tiles.
///
/// # Safety
/// Tiles 0–7 are configured as 16 × 64 bytes; x holds 32 rows of kp values, wa and wb a
/// panel of kp columns each.
#[inline(always)]
unsafe fn pass(
    x: *const u16,
    kp: usize,
    wa: *const u16,
    wb: *const u16,
    sums: &mut [[[f32; PANEL]; 16]; 4],
) {
    let stride_x = kp * 2;
    let stride_w = 64usize;
    let stride_c = 64usize;
    asm!(
        "tilezero tmm0",
        "tilezero tmm1",
        "tilezero tmm2",
        "tilezero tmm3",
        options(nostack, nomem)
    );
    for s in 0..kp / KSTEP {
        let a0 = x.add(s * KSTEP);
        let a1 = x.add(16 * kp + s * KSTEP);
        // 16 pair rows of a panel = 16 × 32 values.
        let b0 = wa.add(s * KSTEP * PANEL);
        let b1 = wb.add(s * KSTEP * PANEL);
        asm!(
            "tileloadd tmm4, [{a0} + {sx}*1]",
            "tileloadd tmm5, [{a1} + {sx}*1]",
            "tileloadd tmm6, [{b0} + {sw}*1]",
            "tileloadd tmm7, [{b1} + {sw}*1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            a0 = in(reg) a0,
            a1 = in(reg) a1,
            b0 = in(reg) b0,
            b1 = in(reg) b1,
            sx = in(reg) stride_x,
            sw = in(reg) stride_w,
            options(nostack, readonly)
        );
    }
    let c = sums.as_mut_ptr();
    asm!(
        "tilestored [{c0} + {sc}*1], tmm0",
        "tilestored [{c1} + {sc}*1], tmm1",
        "tilestored [{c2} + {sc}*1], tmm2",
        "tilestored [{c3} + {sc}*1], tmm3",
        c0 = in(reg) c,
        c1 = in(reg) c.add(1),
        c2 = in(reg) c.add(2),
        c3 = in(reg) c.add(3),
        sc = in(reg) stride_c,
        options(nostack)
    );
}
