//! What every fused CPU kernel shares: its input as a contiguous f32 slice from candle, a
//! raw pointer to its output that rayon tasks write disjoint parts of, and the `gemm`
//! crate's f32 product. Kept below the
//! kernels (`kernels.rs`, `matmul.rs`, `q8.rs`, `bf16.rs`, `amx.rs`) so none of them imports
//! another for it.

use candle_core::{bail, CpuStorage, Layout};

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
