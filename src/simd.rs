//! The CPU's vector instruction set, chosen once per process, and the small vector
//! arithmetic shared by the embedder and the vector index.
//!
//! Every SIMD kernel in the crate dispatches on [`level`]: the embedding kernels
//! (`gemma::kernels`, `gemma::matmul`, `gemma::q8`) and the vector index's dot product. One detection,
//! one override (`MEMORIA_EMBED_SIMD=avx2|scalar`, to test every path on one machine).

use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Scalar,
    #[allow(dead_code)]
    Avx2,
    #[allow(dead_code)]
    Avx512,
}

/// The instruction set the kernels use: the best the CPU has, or lower when the
/// environment says `MEMORIA_EMBED_SIMD=avx2|scalar` (to test every path on one machine).
pub(crate) fn level() -> Level {
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
            if std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("fma")
                && std::is_x86_feature_detected!("f16c")
            {
                return Level::Avx2;
            }
        }
        Level::Scalar
    }
}

/// Dot product, compiled for AVX-512 and AVX2 with FMA when the CPU has them (runtime
/// check): it is most of an HNSW search's arithmetic, and the baseline x86-64 build only
/// has 4-wide SSE without FMA.
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: `level` only reports features the CPU has.
        Level::Avx512 => return unsafe { dot_avx512(a, b) },
        // SAFETY: as above.
        Level::Avx2 => return unsafe { dot_avx2(a, b) },
        Level::Scalar => {}
    }
    dot_lanes::<false>(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes::<true>(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes::<true>(a, b)
}

/// 64 independent lanes (four AVX-512 registers) so the adds do not wait on each other.
/// `FMA` only where the target has it: elsewhere `mul_add` is a slow library call.
#[inline(always)]
fn dot_lanes<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 64;
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] = if FMA {
                x[i].mul_add(y[i], acc[i])
            } else {
                acc[i] + x[i] * y[i]
            };
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// Scales `v` to unit length, accumulating the norm in f64 (as PyTorch's `normalize` does
/// for the embedder's output). A zero or non-finite vector becomes all zeros and the answer
/// is false: it has no direction.
pub(crate) fn l2_normalize(v: &mut [f32]) -> bool {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 && norm.is_finite() {
        let norm = norm.max(1e-12) as f32;
        v.iter_mut().for_each(|x| *x /= norm);
        true
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_a_plain_sum_at_every_length() {
        for len in [0, 1, 7, 63, 64, 65, 768] {
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let want: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            assert!((f64::from(dot(&a, &b)) - want).abs() < 1e-4, "len {len}");
        }
    }

    #[test]
    fn l2_normalize_table() {
        // (input, expected output, has a direction)
        let rows: &[(&[f32], &[f32], bool)] = &[
            (&[3.0, 4.0], &[0.6, 0.8], true),
            (&[0.0, 0.0], &[0.0, 0.0], false),
            (&[f32::NAN, 1.0], &[0.0, 0.0], false),
            (&[f32::INFINITY, 1.0], &[0.0, 0.0], false),
            (&[-2.0], &[-1.0], true),
        ];
        for (input, want, direction) in rows {
            let mut v = input.to_vec();
            assert_eq!(l2_normalize(&mut v), *direction, "{input:?}");
            assert_eq!(&v[..], *want, "{input:?}");
        }
    }
}
