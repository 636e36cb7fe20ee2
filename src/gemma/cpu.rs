//! What every fused CPU kernel shares: its input as a contiguous f32 slice from candle, a
//! raw pointer to its output that rayon tasks write disjoint parts of, and the `gemm`
//! crate's f32 product. Kept below the
//! kernels (`kernels.rs`, `matmul.rs`, `q8.rs`, `bf16.rs`, `amx.rs`) so none of them imports
//! another for it.

use candle_core::{bail, CpuStorage, Layout};
use rayon::prelude::*;

/// The f32 values of a contiguous CPU tensor, or an error naming the op (`what`).
pub(crate) fn contiguous_f32<'a>(
    s: &'a CpuStorage,
    l: &Layout,
    what: &str,
) -> candle_core::Result<&'a [f32]> {
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

/// A raw pointer into an output buffer that rayon tasks write disjoint parts of.
pub(crate) struct SyncPtr(pub(crate) *mut f32);
// SAFETY: used only to write disjoint regions of one buffer from rayon tasks.
unsafe impl Send for SyncPtr {}
unsafe impl Sync for SyncPtr {}

/// `y = x · wt` with the gemm crate, for `wt: [K, N]` row-major; `y` is empty with
/// capacity m×n on entry.
pub(crate) fn gemm_f32(x: &[f32], m: usize, k: usize, wt: &[f32], n: usize, y: &mut Vec<f32>) {
    let threads = rayon::current_num_threads();
    let par = if threads > 1 && m * n * k > 64 * 64 * 64 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    assert!(y.capacity() >= m * n && x.len() >= m * k && wt.len() >= n * k);
    // SAFETY: x is m×k row-major, wt is k×n row-major, y has room for m×n row-major
    // values; all in bounds (checked above).
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
            wt.as_ptr(),
            1,
            n as isize,
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

/// A linear layer's weights in one of the CPU kernels' formats (f16 panels, Q8_0, bf16):
/// `[rows, cols]` in PyTorch's `[out, in]` layout.
pub(crate) trait LinearWeight: Sync {
    /// The candle op's name (errors name it).
    const NAME: &'static str;
    /// Output units.
    fn rows(&self) -> usize;
    /// Input values per row of x.
    fn cols(&self) -> usize;
    /// `y = x · wᵀ` for `m` rows of x (`m`, `rows` and `cols` all positive): `y` is empty
    /// with room for `m × rows` values, and holds all of them when this returns.
    fn matmul(&self, x: &[f32], m: usize, y: &mut Vec<f32>);
}

/// `y = x · wᵀ` for `x: [M, K]` (f32) and a [`LinearWeight`] `w: [N, K]`, as a candle op:
/// the scaffolding every format shares (the shapes checked, an empty product).
pub(crate) struct Linear<'a, W>(pub &'a W);

impl<W: LinearWeight> candle_core::CustomOp1 for Linear<'_, W> {
    fn name(&self) -> &'static str {
        W::NAME
    }

    fn cpu_fwd(
        &self,
        s: &CpuStorage,
        l: &Layout,
    ) -> candle_core::Result<(CpuStorage, candle_core::Shape)> {
        let n = self.0.rows();
        let (x, m, k) = linear_input(s, l, W::NAME, (n, self.0.cols()))?;
        let y = match m > 0 && n > 0 && k > 0 {
            true => {
                let mut y = Vec::with_capacity(m * n);
                self.0.matmul(x, m, &mut y);
                debug_assert_eq!(y.len(), m * n);
                y
            }
            false => vec![0f32; m * n],
        };
        Ok((CpuStorage::F32(y), candle_core::Shape::from((m, n))))
    }
}

/// A linear layer's input: x as `[m, k]` f32 and the weight's `[n, k]`, checked to agree;
/// returns `(x, m, k)`. The error names the op's shapes.
fn linear_input<'a>(
    s: &'a CpuStorage,
    l: &Layout,
    what: &str,
    (n, wk): (usize, usize),
) -> candle_core::Result<(&'a [f32], usize, usize)> {
    let x = contiguous_f32(s, l, what)?;
    let (m, k) = l.shape().dims2()?;
    if k != wk {
        bail!("linear: x {:?} vs w [{n}, {wk}]", l.dims());
    }
    Ok((x, m, k))
}

/// Runs `task(rows, units)` in parallel over blocks of `rows_per_task` of m rows × groups
/// of the `units` output units (panels, panel pairs), every group a whole number of `step`
/// units (a kernel's width), with enough groups for about `per_thread` tasks per thread.
/// Each task owns its rows × units, so tasks may write their outputs without locks.
pub(crate) fn par_tiles(
    m: usize,
    rows_per_task: usize,
    units: usize,
    step: usize,
    per_thread: usize,
    task: impl Fn(std::ops::Range<usize>, std::ops::Range<usize>) + Sync,
) {
    let row_tasks = m.div_ceil(rows_per_task);
    let threads = rayon::current_num_threads().max(1);
    let steps = units.div_ceil(step);
    let groups = (threads * per_thread).div_ceil(row_tasks).clamp(1, steps);
    let per_group = steps.div_ceil(groups) * step;
    let groups = units.div_ceil(per_group);
    (0..row_tasks * groups).into_par_iter().for_each(|t| {
        let (rt, g) = (t / groups, t % groups);
        task(
            rt * rows_per_task..((rt + 1) * rows_per_task).min(m),
            g * per_group..((g + 1) * per_group).min(units),
        )
    });
}

/// A deterministic stream of values in [-1, 1) (xorshift64), for the kernels' tests.
#[cfg(test)]
pub(crate) fn test_values(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
    }
}
