//! The arithmetic the local model's linear layers run in on the CPU.
//!
//! - `f32`: weights held as f16 (lossless for EmbeddingGemma's trained weights, see
//!   `matmul.rs`), products and sums in f32. The reference: PyTorch f32 to 1e-6.
//! - `q8`: weights in Q8_0 and activations quantised to int8 per block of 32, integer
//!   products (`q8.rs`). Vectors move by about 1e-3 in cosine, so a `q8` index has its own
//!   fingerprint and never mixes with `f32` vectors.
//! - `auto` (the default): `q8` where its integer kernel runs (x86-64 with AVX2), else `f32`.
//!   Its accuracy is gated in CI against the PyTorch golden vectors (worst cosine ≥ 0.995)
//!   and LoCoMo's evidence recall.
//!
//! The setting is `MEMORIA_PRECISION` (the CLI's `--precision` sets it) or
//! [`GemmaOptions::precision`](crate::embed::GemmaOptions) for library users. GPUs and the
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
            Precision::Auto if q8_kernel() => Precision::Q8,
            Precision::Auto => Precision::F32,
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

/// Whether the int8 kernel runs as SIMD here (it has a scalar fallback, far slower than f32).
fn q8_kernel() -> bool {
    matches!(level(), Level::Avx2 | Level::Avx512)
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
        let auto = Precision::Auto.resolve();
        assert_ne!(auto, Precision::Auto);
        assert_eq!(auto == Precision::Q8, q8_kernel());
    }
}
