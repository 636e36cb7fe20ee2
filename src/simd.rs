//! The CPU's vector instruction set, chosen once per process, and the small vector
//! arithmetic shared by the embedder and the vector index.
//!
//! Every SIMD kernel in the crate dispatches on [`level`]: the embedding kernels
//! (`gemma::kernels`, `gemma::matmul`, `gemma::q8`, `gemma::bf16`) and the vector index's dot
//! product. The int8 and bf16 kernels also use the [`extensions`] beyond a level's baseline:
//! VNNI's `vpdpbusd`, AVX512-BF16's `vdpbf16ps` and AMX's tiles.
//!
//! One detection, one override: `MEMORIA_EMBED_SIMD` caps what the kernels use, to test and
//! measure every path on one machine: `scalar`, `avx2`, `avx2-vnni` (AVX2 and 256-bit
//! VNNI), `avx512` (AVX-512 without VNNI, BF16 or AMX), `avx512-vnni` (every AVX-512
//! extension, no AMX); unset or `best` takes all the CPU has.

use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Scalar,
    #[allow(dead_code)]
    Avx2,
    #[allow(dead_code)]
    Avx512,
}

/// Instructions beyond a [`Level`]'s baseline that some kernels use, each only where the
/// CPU has it and the override allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Extensions {
    /// 512-bit `vpdpbusd` (AVX512-VNNI); implies the level is AVX-512.
    pub vnni512: bool,
    /// 256-bit `vpdpbusd` (AVX-VNNI, or AVX512-VNNI with VL).
    pub vnni256: bool,
    /// `vdpbf16ps` and `vcvtne2ps2bf16` (AVX512-BF16); implies the level is AVX-512.
    pub bf16: bool,
    /// `vdpbf16ps` at twice the multiply-adds of f32's FMAs per cycle: AMD's (Zen 4 and
    /// later), where `q8` runs attention in bf16 too. Intel's cores without AMX run it at
    /// no more than their FMA rate (docs/performance.md, "Embedding speed"). Implies `bf16`.
    pub bf16_fast: bool,
    /// AMX tiles with `tdpbf16ps`, the kernel having granted this process the tile state.
    pub amx_bf16: bool,
}

/// What the override asks for (`MEMORIA_EMBED_SIMD`, see the module docs).
struct Cap {
    level: Level,
    vnni256: bool,
    avx512_extensions: bool,
    amx: bool,
}

fn cap() -> &'static Cap {
    static CAP: OnceLock<Cap> = OnceLock::new();
    CAP.get_or_init(|| {
        let value = std::env::var("MEMORIA_EMBED_SIMD").unwrap_or_default();
        let cap = |level, vnni256, avx512_extensions, amx| Cap {
            level,
            vnni256,
            avx512_extensions,
            amx,
        };
        match value.trim() {
            "scalar" => cap(Level::Scalar, false, false, false),
            "avx2" => cap(Level::Avx2, false, false, false),
            "avx2-vnni" => cap(Level::Avx2, true, false, false),
            "avx512" => cap(Level::Avx512, false, false, false),
            "avx512-vnni" => cap(Level::Avx512, true, true, false),
            other => {
                if !matches!(other, "" | "best") {
                    tracing::warn!(
                        "MEMORIA_EMBED_SIMD={other:?} is not one of scalar, avx2, avx2-vnni, \
                         avx512, avx512-vnni, best: using everything the CPU has"
                    );
                }
                cap(Level::Avx512, true, true, true)
            }
        }
    })
}

/// The instruction set the kernels use: the best the CPU has, or lower when
/// `MEMORIA_EMBED_SIMD` says so (see the module docs).
pub(crate) fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cap = cap().level;
        let best = detect();
        match (cap, best) {
            (Level::Scalar, _) | (_, Level::Scalar) => Level::Scalar,
            (Level::Avx2, _) | (_, Level::Avx2) => Level::Avx2,
            _ => Level::Avx512,
        }
    })
}

/// The extensions the kernels may use: what the CPU has, within [`level`] and the override.
pub(crate) fn extensions() -> Extensions {
    static EXT: OnceLock<Extensions> = OnceLock::new();
    *EXT.get_or_init(|| {
        let cap = cap();
        let level = level();
        let cpu = detect_extensions();
        let avx512 = level == Level::Avx512 && cap.avx512_extensions;
        let vnni256 = level != Level::Scalar && cap.vnni256 && cpu.vnni256;
        let bf16 = avx512 && cpu.bf16;
        Extensions {
            vnni512: avx512 && cpu.vnni512,
            vnni256,
            bf16,
            bf16_fast: bf16 && cpu.bf16_fast,
            // The AMX kernel converts activations with AVX512-BF16.
            amx_bf16: bf16 && cap.amx && cpu.amx_bf16 && amx_permission().is_ok(),
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

/// The extensions the CPU reports, before the level and the override narrow them; AMX as
/// CPUID reports it, before the kernel is asked for the tile state.
pub(crate) fn detect_extensions() -> Extensions {
    #[cfg(target_arch = "x86_64")]
    {
        let avx512vnni = std::is_x86_feature_detected!("avx512vnni")
            && std::is_x86_feature_detected!("avx512vl");
        // CPUID leaf 7: EDX bit 22 is AMX-BF16, bit 24 AMX-TILE (the std macro does not
        // name AMX on stable Rust).
        let edx = if std::arch::x86_64::__get_cpuid_max(0).0 >= 7 {
            std::arch::x86_64::__cpuid_count(7, 0).edx
        } else {
            0
        };
        // CPUID leaf 0: the vendor's name in ebx, edx, ecx.
        let vendor = std::arch::x86_64::__cpuid(0);
        let amd = [vendor.ebx, vendor.edx, vendor.ecx]
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .eq(*b"AuthenticAMD");
        let bf16 = std::is_x86_feature_detected!("avx512bf16");
        Extensions {
            vnni512: avx512vnni,
            vnni256: avx512vnni || std::is_x86_feature_detected!("avxvnni"),
            bf16,
            bf16_fast: bf16 && amd,
            amx_bf16: edx & (1 << 22) != 0 && edx & (1 << 24) != 0,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    Extensions::default()
}

/// Asks Linux for the AMX tile state (`arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)`), once
/// per process. The error says why AMX is not used: the kernel refused, or this is not
/// Linux on x86-64.
pub(crate) fn amx_permission() -> Result<(), &'static str> {
    static GRANTED: OnceLock<Result<(), &'static str>> = OnceLock::new();
    *GRANTED.get_or_init(|| {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        {
            const ARCH_PRCTL: isize = 158;
            const ARCH_REQ_XCOMP_PERM: usize = 0x1023;
            const XFEATURE_XTILEDATA: usize = 18;
            let ret: isize;
            // SAFETY: arch_prctl with this request only changes which extended states the
            // process may use; it reads and writes no memory of ours.
            unsafe {
                std::arch::asm!(
                    "syscall",
                    inlateout("rax") ARCH_PRCTL => ret,
                    in("rdi") ARCH_REQ_XCOMP_PERM,
                    in("rsi") XFEATURE_XTILEDATA,
                    lateout("rcx") _,
                    lateout("r11") _,
                    options(nostack),
                );
            }
            if ret == 0 {
                Ok(())
            } else {
                Err("the Linux kernel refused the AMX tile state (arch_prctl)")
            }
        }
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        Err("AMX is used on Linux x86-64 only")
    })
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

/// [`dot_lanes`] compiled for AVX-512.
///
/// # Safety
/// The CPU must have AVX-512F and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
    dot_lanes::<true>(a, b)
}

/// [`dot_lanes`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
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

/// `a · b` of two f16 vectors (IEEE half-precision bits), accumulated in f32, converted
/// with F16C (AVX2) or AVX-512 when the CPU has them: the distance an f16 graph is built and
/// walked with, so most of a graph build's arithmetic.
#[inline]
pub(crate) fn dot_f16(a: &[u16], b: &[u16]) -> f32 {
    dot_half(a, b)
}

/// `a · q` of an f16 vector (half-precision bits) and a float one.
#[inline]
pub(crate) fn dot_f16_f32(a: &[u16], q: &[f32]) -> f32 {
    dot_half(a, q)
}

/// The right-hand side of [`dot_half`]: f16 bits or floats.
trait HalfRhs {
    fn len(&self) -> usize;
    fn at(&self, i: usize) -> f32;
    /// Sixteen values from `i` as floats.
    ///
    /// # Safety
    /// AVX-512F; `i + 16 <= self.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load16(&self, i: usize) -> std::arch::x86_64::__m512;
    /// Eight values from `i` as floats.
    ///
    /// # Safety
    /// AVX and F16C; `i + 8 <= self.len()`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(&self, i: usize) -> std::arch::x86_64::__m256;
}

impl HalfRhs for &[u16] {
    fn len(&self) -> usize {
        <[u16]>::len(self)
    }
    fn at(&self, i: usize) -> f32 {
        half::f16::from_bits(self[i]).to_f32()
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(&self, i: usize) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        _mm512_cvtph_ps(_mm256_loadu_si256(self.as_ptr().add(i) as *const __m256i))
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(&self, i: usize) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        _mm256_cvtph_ps(_mm_loadu_si128(self.as_ptr().add(i) as *const __m128i))
    }
}

impl HalfRhs for &[f32] {
    fn len(&self) -> usize {
        <[f32]>::len(self)
    }
    fn at(&self, i: usize) -> f32 {
        self[i]
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(&self, i: usize) -> std::arch::x86_64::__m512 {
        std::arch::x86_64::_mm512_loadu_ps(self.as_ptr().add(i))
    }
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(&self, i: usize) -> std::arch::x86_64::__m256 {
        std::arch::x86_64::_mm256_loadu_ps(self.as_ptr().add(i))
    }
}

#[inline]
fn dot_half<R: HalfRhs>(a: &[u16], b: R) -> f32 {
    let n = a.len().min(b.len());
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: `level` only reports features the CPU has; the loads stay below `n`.
        Level::Avx512 => return unsafe { dot_half_avx512(&a[..n], b, n) },
        // SAFETY: as above (the AVX2 level includes F16C and FMA).
        Level::Avx2 => return unsafe { dot_half_avx2(&a[..n], b, n) },
        Level::Scalar => {}
    }
    (0..n).map(|i| (&a[..n]).at(i) * b.at(i)).sum()
}

/// [`dot_half`] on AVX-512: two accumulators of sixteen lanes.
///
/// # Safety
/// The CPU must have AVX-512F and FMA; `a.len() == n <= b.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn dot_half_avx512<R: HalfRhs>(a: &[u16], b: R, n: usize) -> f32 {
    use std::arch::x86_64::*;
    let (mut acc0, mut acc1) = (_mm512_setzero_ps(), _mm512_setzero_ps());
    let mut i = 0;
    while i + 32 <= n {
        acc0 = _mm512_fmadd_ps(a.load16(i), b.load16(i), acc0);
        acc1 = _mm512_fmadd_ps(a.load16(i + 16), b.load16(i + 16), acc1);
        i += 32;
    }
    if i + 16 <= n {
        acc0 = _mm512_fmadd_ps(a.load16(i), b.load16(i), acc0);
        i += 16;
    }
    let mut sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    for j in i..n {
        sum += a.at(j) * b.at(j);
    }
    sum
}

/// [`dot_half`] on AVX2 with F16C: two accumulators of eight lanes.
///
/// # Safety
/// The CPU must have AVX2, F16C and FMA; `a.len() == n <= b.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c,fma")]
unsafe fn dot_half_avx2<R: HalfRhs>(a: &[u16], b: R, n: usize) -> f32 {
    use std::arch::x86_64::*;
    let (mut acc0, mut acc1) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    let mut i = 0;
    while i + 16 <= n {
        acc0 = _mm256_fmadd_ps(a.load8(i), b.load8(i), acc0);
        acc1 = _mm256_fmadd_ps(a.load8(i + 8), b.load8(i + 8), acc1);
        i += 16;
    }
    if i + 8 <= n {
        acc0 = _mm256_fmadd_ps(a.load8(i), b.load8(i), acc0);
        i += 8;
    }
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), _mm256_add_ps(acc0, acc1));
    let mut sum: f32 = lanes.iter().sum();
    for j in i..n {
        sum += a.at(j) * b.at(j);
    }
    sum
}

/// `codes · query`: an int8 row against a float query (the rescoring of int8 vectors),
/// compiled for AVX-512 and AVX2 with FMA when the CPU has them.
#[inline]
pub(crate) fn dot_i8_f32(codes: &[i8], query: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: `level` only reports features the CPU has.
        Level::Avx512 => return unsafe { dot_i8_f32_avx512(codes, query) },
        // SAFETY: as above.
        Level::Avx2 => return unsafe { dot_i8_f32_avx2(codes, query) },
        Level::Scalar => {}
    }
    dot_i8_f32_lanes(codes, query)
}

/// [`dot_i8_f32_lanes`] compiled for AVX-512.
///
/// # Safety
/// The CPU must have AVX-512F, AVX-512BW and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,fma")]
unsafe fn dot_i8_f32_avx512(codes: &[i8], query: &[f32]) -> f32 {
    dot_i8_f32_lanes(codes, query)
}

/// [`dot_i8_f32_lanes`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_i8_f32_avx2(codes: &[i8], query: &[f32]) -> f32 {
    dot_i8_f32_lanes(codes, query)
}

/// 32 independent sums so the compiler can vectorise the widening and the adds.
#[inline(always)]
fn dot_i8_f32_lanes(codes: &[i8], query: &[f32]) -> f32 {
    const LANES: usize = 32;
    let mut acc = [0f32; LANES];
    let (cc, cq) = (codes.chunks_exact(LANES), query.chunks_exact(LANES));
    let tail: f32 = cc
        .remainder()
        .iter()
        .zip(cq.remainder())
        .map(|(&c, &q)| f32::from(c) * q)
        .sum();
    for (c, q) in cc.zip(cq) {
        for i in 0..LANES {
            acc[i] += f32::from(c[i]) * q[i];
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
    fn int8_and_f16_dots_match_a_plain_sum_at_every_length() {
        for len in [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 768] {
            let codes: Vec<i8> = (0..len).map(|i| ((i * 37) % 255 - 127) as i8).collect();
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let q: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let want: f64 = codes
                .iter()
                .zip(&q)
                .map(|(&x, &y)| f64::from(x) * f64::from(y))
                .sum();
            assert!(
                (f64::from(dot_i8_f32(&codes, &q)) - want).abs() < 1e-2,
                "len {len}"
            );
            // f16 keeps 11 significant bits: each product within ~1e-3 relative.
            let half = |v: &[f32]| -> Vec<u16> {
                v.iter()
                    .map(|&x| half::f16::from_f32(x).to_bits())
                    .collect()
            };
            let (ha, hq) = (half(&a), half(&q));
            let want: f64 = a
                .iter()
                .zip(&q)
                .map(|(&x, &y)| f64::from(x) * f64::from(y))
                .sum();
            assert!(
                (f64::from(dot_f16(&ha, &hq)) - want).abs() < 1e-2,
                "len {len}"
            );
            assert!(
                (f64::from(dot_f16_f32(&ha, &q)) - want).abs() < 1e-2,
                "len {len}"
            );
            let exact: f64 = ha
                .iter()
                .zip(&hq)
                .map(|(&x, &y)| {
                    f64::from(half::f16::from_bits(x).to_f32())
                        * f64::from(half::f16::from_bits(y).to_f32())
                })
                .sum();
            assert!(
                (f64::from(dot_f16(&ha, &hq)) - exact).abs() < 1e-4,
                "len {len}"
            );
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
