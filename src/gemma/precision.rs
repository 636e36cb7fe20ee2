//! The arithmetic the local model's linear layers run in on the CPU.
//!
//! - `f32`: weights held as f16 (lossless for EmbeddingGemma's trained weights, see
//!   `matmul.rs`), products and sums in f32. The reference: PyTorch f32 to 1e-6.
//! - `q8`: weights in Q8_0 and activations quantised to int8 per block of 32, integer
//!   products (`q8.rs`). Vectors move by about 1e-3 in cosine, so a `q8` index has its own
//!   fingerprint and never mixes with `f32` vectors.
//! - `auto` (the default): `q8` where it was measured faster than `f32`: CPUs whose best
//!   level is AVX2 (documents 1.26×, queries 1.33× on a 2-core Zen 3). On AVX-512 CPUs the
//!   `f32` kernels use 512-bit FMAs while the int8 kernel is 256-bit, and no such machine
//!   was at hand to compare them, so `auto` keeps `f32` there (`q8` can be asked for).
//!   Scalar-only CPUs keep `f32`. The choice depends on the CPU alone, never on a timing,
//!   so one machine always builds the same fingerprint. q8's accuracy is gated in CI
//!   against the PyTorch golden vectors (worst cosine ≥ 0.995).
//!
//! The setting is `MEMORIA_PRECISION` (the CLI's `--precision` sets it) or
//! [`GemmaOptions::precision`](crate::gemma::GemmaOptions) for library users. GPUs and the
//! generic kernels always run the working dtype, whatever the setting says.

use std::fmt;
use std::str::FromStr;

use crate::simd::{level, Level};

/// The environment variable that chooses the precision.
pub const PRECISION_VAR: &str = "MEMORIA_PRECISION";

/// The precision asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// f16 weights, f32 products.
    F32,
    /// Q8_0 weights, int8 activations.
    Q8,
    /// The fastest that passes the accuracy gates on this CPU.
    #[default]
    Auto,
}

impl Precision {
    /// `auto` resolved on this CPU: [`Precision::F32`] or [`Precision::Q8`].
    pub fn resolve(self) -> Precision {
        match self {
            Precision::Auto => auto_on(level()),
            other => other,
        }
    }

    /// The precision `MEMORIA_PRECISION` asks for (`auto` when unset); an error names the
    /// variable and the values it takes.
    pub fn from_env() -> Result<Precision, String> {
        match std::env::var(PRECISION_VAR) {
            Ok(v) if !v.trim().is_empty() => v
                .parse()
                .map_err(|e: String| format!("{PRECISION_VAR}: {e}")),
            _ => Ok(Precision::Auto),
        }
    }

    /// The name `FromStr` accepts.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Q8 => "q8",
            Precision::Auto => "auto",
        }
    }
}

/// What `auto` is on a CPU of `level` (see the module docs).
fn auto_on(level: Level) -> Precision {
    match level {
        Level::Avx2 => Precision::Q8,
        Level::Avx512 | Level::Scalar => Precision::F32,
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Precision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f32" => Ok(Precision::F32),
            "q8" | "q8_0" | "int8" => Ok(Precision::Q8),
            "auto" => Ok(Precision::Auto),
            "bf16" => Err(
                "`bf16` has no CPU kernel in this build (it needs AVX512-BF16 or AMX, and none \
                 was written yet); use f32, q8 or auto"
                    .into(),
            ),
            other => Err(format!("unknown precision `{other}` (f32, q8 or auto)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_refuses_the_rest() {
        for (text, want) in [
            ("f32", Ok(Precision::F32)),
            ("Q8", Ok(Precision::Q8)),
            (" q8_0 ", Ok(Precision::Q8)),
            ("int8", Ok(Precision::Q8)),
            ("auto", Ok(Precision::Auto)),
        ] {
            assert_eq!(text.parse::<Precision>(), want, "{text}");
        }
        for bad in ["bf16", "fp16", ""] {
            let err = bad.parse::<Precision>().unwrap_err();
            assert!(err.contains("f32, q8 or auto"), "{bad}: {err}");
        }
    }

    #[test]
    fn explicit_choices_resolve_to_themselves() {
        assert_eq!(Precision::F32.resolve(), Precision::F32);
        assert_eq!(Precision::Q8.resolve(), Precision::Q8);
        assert_eq!(Precision::Auto.resolve(), auto_on(level()));
        for (cpu, want) in [
            (Level::Avx2, Precision::Q8),
            (Level::Avx512, Precision::F32),
            (Level::Scalar, Precision::F32),
        ] {
            assert_eq!(auto_on(cpu), want, "{cpu:?}");
        }
    }
}
