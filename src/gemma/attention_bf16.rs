//! Attention in the `bf16` precision: q, k, v and the softmax probabilities rounded to
//! bf16, products summed in f32, as the linear layers do (`bf16.rs`).
//!
//! Where `bf16.rs` has a kernel of its own ([`packed_kernel`]: AMX's tiles, or AVX512-BF16's
//! `vdpbf16ps`), both products of an attention task run on it ([`task`]): the scores
//! `q · kᵀ` with the task's keys packed as a `bf16.rs` weight (16 keys per panel, pairs of
//! the head dimension), and the output `p · v` with `vᵀ` packed the same way (16 head
//! dimensions per panel, pairs of keys). Elsewhere `kernels::PackedAttention` runs its f32
//! products on inputs rounded here first ([`round_all`], [`round_in_place`]): the same
//! roundings and the same exact products, so a `bf16` index means one arithmetic on every
//! CPU, up to the order of the sums.

// The SIMD paths are x86-64's: elsewhere (aarch64) what only they use goes unused.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused_imports, unused_variables)
)]

use half::bf16;
use rayon::prelude::*;

use super::bf16::{padded, round_row, Kernel, KSTEP, PANEL};

/// `v` rounded to bf16, kept as f32.
#[inline(always)]
fn round(v: f32) -> f32 {
    bf16::from_f32(v).to_f32()
}

/// A copy of `x` with every value rounded to bf16.
pub fn round_all(x: &[f32]) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    out.par_chunks_mut(1 << 14)
        .zip(x.par_chunks(1 << 14))
        .for_each(|(o, i)| o.iter_mut().zip(i).for_each(|(o, &v)| *o = round(v)));
    out
}

/// Rounds `x` to bf16 in place.
pub fn round_in_place(x: &mut [f32]) {
    x.iter_mut().for_each(|v| *v = round(*v));
}

/// Buffers an attention task reuses.
#[derive(Default)]
pub struct Scratch {
    a: Vec<u16>,
    scores: Vec<f32>,
}

/// The kernel [`task`] runs heads of `head_dim` on, on this CPU: `bf16.rs`'s best when it
/// has its own (AMX or AVX512-BF16); `None` where the products stay in f32.
pub(crate) fn packed_kernel(head_dim: usize) -> Option<Kernel> {
    match Kernel::best() {
        Kernel::Widened => None,
        _ if !head_dim.is_multiple_of(KSTEP) => None,
        kernel => Some(kernel),
    }
}

/// The keys and values of every sequence and kv head, packed once per forward pass as the
/// B operands of the two products (see the module docs), so the query blocks of a sequence
/// share them.
pub struct PackedKv {
    /// Per (sequence, kv head): k panels (16 keys × pairs of the head dimension).
    k: Vec<Vec<u16>>,
    /// Per (sequence, kv head): vᵀ panels (16 head dimensions × pairs of keys, the keys
    /// padded with zeros to whole steps).
    v: Vec<Vec<u16>>,
    kv_heads: usize,
}

impl PackedKv {
    /// Packs k and v (`[tokens, kv_heads × hd]` each) for the sequences `(first, len)`.
    pub fn new(k: &[f32], v: &[f32], kv_heads: usize, hd: usize, seqs: &[(usize, usize)]) -> Self {
        let kw = kv_heads * hd;
        let jobs: Vec<(usize, usize, usize)> = seqs
            .iter()
            .flat_map(|&(off, len)| (0..kv_heads).map(move |g| (off, len, g)))
            .collect();
        let (k, v) = jobs
            .par_iter()
            .map(|&(off, len, g)| {
                let mut row = vec![0u16; 2 * hd];
                let (r0, r1) = row.split_at_mut(hd);
                // k: the pair (c, c + 1) of key j lies at (c / 2) · 32 + (j % 16) · 2.
                let mut kp = vec![0u16; len.div_ceil(PANEL) * hd * PANEL];
                for j in 0..len {
                    let src = &k[(off + j) * kw + g * hd..][..hd];
                    round_row(src, r0);
                    let panel = &mut kp[(j / PANEL) * hd * PANEL..];
                    for c in (0..hd).step_by(2) {
                        let at = (c / 2) * 2 * PANEL + (j % PANEL) * 2;
                        panel[at..at + 2].copy_from_slice(&r0[c..c + 2]);
                    }
                }
                // vᵀ: dimension d of keys j, j + 1 lies at (d / 16) panel, pair j / 2, d % 16.
                let np = padded(len);
                let mut vp = vec![0u16; hd.div_ceil(PANEL) * np * PANEL];
                for j in (0..len).step_by(2) {
                    round_row(&v[(off + j) * kw + g * hd..][..hd], r0);
                    if j + 1 < len {
                        round_row(&v[(off + j + 1) * kw + g * hd..][..hd], r1);
                    } else {
                        r1.fill(0);
                    }
                    for d in 0..hd {
                        let at = (d / PANEL) * np * PANEL + (j / 2) * 2 * PANEL + (d % PANEL) * 2;
                        vp[at] = r0[d];
                        vp[at + 1] = r1[d];
                    }
                }
                (kp, vp)
            })
            .unzip();
        PackedKv { k, v, kv_heads }
    }
}

/// One attention task on `kernel` ([`packed_kernel`]): for each of the `m` query rows (at
/// `q`, `q_rs` apart, of `hd` values), softmax over keys `lo..hi` of its scores against all
/// `nk` keys of sequence `seq`'s kv head `g` (packed in `kv`), times their values, written
/// to `out` (`q_rs` apart). `range(r)` gives row r's `(lo, hi)`; `softmax` is
/// `kernels::softmax_range`.
///
/// # Safety
/// `kernel` is [`packed_kernel`]`(hd)`; q and out hold the rows described; `kv` was packed
/// for these sequences with this `hd`; no other thread writes this task's output rows.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn task(
    kernel: Kernel,
    q: *const f32,
    q_rs: usize,
    m: usize,
    kv: &PackedKv,
    seq: usize,
    g: usize,
    nk: usize,
    hd: usize,
    range: impl Fn(usize) -> (usize, usize),
    softmax: impl Fn(&mut [f32], usize, usize),
    out: *mut f32,
    s: &mut Scratch,
) {
    use super::amx::ROWS;
    let which = seq * kv.kv_heads + g;
    let rows = m.div_ceil(ROWS) * ROWS;
    // q as A: rows × hd, zero rows past m.
    s.a.clear();
    s.a.resize(rows * hd, 0);
    for r in 0..m {
        let src = std::slice::from_raw_parts(q.add(r * q_rs), hd);
        round_row(src, &mut s.a[r * hd..(r + 1) * hd]);
    }
    s.scores.clear();
    s.scores.resize(m * nk, 0.0);
    kernel.matmul_serial(&s.a, m, hd, &kv.k[which], nk, s.scores.as_mut_ptr(), nk);
    // The probabilities as A: rows × nk padded to whole steps, zero beyond.
    let nkp = padded(nk);
    s.a.clear();
    s.a.resize(rows * nkp, 0);
    for r in 0..m {
        let row = &mut s.scores[r * nk..(r + 1) * nk];
        let (lo, hi) = range(r);
        softmax(row, lo, hi);
        round_row(row, &mut s.a[r * nkp..r * nkp + nk]);
    }
    kernel.matmul_serial(&s.a, m, nkp, &kv.v[which], hd, out, q_rs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemma::kernels::softmax_range;

    #[test]
    fn every_kernel_matches_rounded_f32_attention() {
        for kernel in [Kernel::Amx, Kernel::Avx512Bf16] {
            match crate::gemma::bf16::runs(kernel) {
                Ok(()) => task_matches_rounded_f32_attention(kernel),
                Err(why) => eprintln!("bf16 attention on {}: skipped: {why}", kernel.name()),
            }
        }
    }

    fn task_matches_rounded_f32_attention(kernel: Kernel) {
        let hd = 256;
        let mut next = crate::gemma::cpu::test_values(0x1234_5678_9abc_def1_u64);
        // (query rows, keys, window): a tail of rows and keys, and a windowed row range.
        for &(m, nk, window) in &[
            (1, 1, None),
            (5, 17, None),
            (40, 70, None),
            (33, 50, Some(9)),
        ] {
            let (q_rs, kv_rs) = (hd + 8, hd + 4); // strides wider than a row, as in the model
            let q: Vec<f32> = (0..m * q_rs).map(|_| next() * 2.0).collect();
            let k: Vec<f32> = (0..nk * kv_rs).map(|_| next() * 2.0).collect();
            let v: Vec<f32> = (0..nk * kv_rs).map(|_| next()).collect();
            let range = |r: usize| match window {
                Some(w) => ((r * nk / m).saturating_sub(w), (r * nk / m + w).min(nk)),
                None => (0, nk),
            };
            let mut got = vec![f32::NAN; m * q_rs];
            let mut scratch = Scratch::default();
            // One sequence of nk tokens, one kv head (k and v rows kv_rs apart: the packer
            // takes them as [tokens, kv_heads × hd], so pass them unpadded).
            let kc: Vec<f32> = (0..nk)
                .flat_map(|j| k[j * kv_rs..j * kv_rs + hd].to_vec())
                .collect();
            let vc: Vec<f32> = (0..nk)
                .flat_map(|j| v[j * kv_rs..j * kv_rs + hd].to_vec())
                .collect();
            let kv = PackedKv::new(&kc, &vc, 1, hd, &[(0, nk)]);
            // SAFETY: `runs` checked the CPU; the buffers hold the rows described.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                task(
                    kernel,
                    q.as_ptr(),
                    q_rs,
                    m,
                    &kv,
                    0,
                    0,
                    nk,
                    hd,
                    range,
                    softmax_range,
                    got.as_mut_ptr(),
                    &mut scratch,
                )
            };
            for r in 0..m {
                let mut p: Vec<f32> = (0..nk)
                    .map(|j| {
                        (0..hd)
                            .map(|d| round(q[r * q_rs + d]) * round(k[j * kv_rs + d]))
                            .sum()
                    })
                    .collect();
                let (lo, hi) = range(r);
                softmax_range(&mut p, lo, hi);
                round_in_place(&mut p);
                for d in 0..hd {
                    let terms = (0..nk).map(|j| p[j] * round(v[j * kv_rs + d]));
                    let want: f32 = terms.clone().sum();
                    let size: f32 = terms.map(f32::abs).sum();
                    let g = got[r * q_rs + d];
                    assert!(
                        (g - want).abs() <= 1e-2 * size + 1e-6,
                        "({m},{nk}) [{r}][{d}]: {g} vs {want}"
                    );
                }
            }
        }
        eprintln!(
            "bf16 attention on {}: matches the rounded f32 attention",
            kernel.name()
        );
    }
}
