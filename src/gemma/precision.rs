//! The arithmetic the local model's linear layers run in on the CPU.
//!
//! - `f32`: weights held as f16 (lossless for EmbeddingGemma's trained weights, see
//!   `matmul.rs`), products and sums in f32. The reference: PyTorch f32 to 1e-6.
//! - `q8`: weights in Q8_0 and activations quantised to int8 per block of 32, integer
//!   products (`q8.rs`; VNNI's `vpdpbusd` where the CPU has it, `vnni.rs`); attention in
//!   f32, or in bf16 where bf16 products outrun f32's (AMX, AMD's AVX512-BF16:
//!   `encoder::bf16_attention`). Golden worst cosine 0.99969 (0.99968 with bf16 attention).
//! - `bf16`: weights, activations and attention's inputs rounded to bf16, products summed
//!   in f32 (`bf16.rs`, `attention_bf16.rs`); on AMX tiles (`amx.rs`) or AVX512-BF16 where
//!   the CPU has them, else the same arithmetic through f32 products. Golden worst cosine
//!   0.99998.
//! - `auto` (the default), chosen from measurements on each kind of CPU
//!   (docs/performance.md, "Embedding speed"): `bf16` with AMX (documents 1.95× `f32` on a 2-core Xeon), `q8` with
//!   AVX512-VNNI otherwise (Zen 4 with AVX512-BF16: 2.4–2.6× `f32` and 1.3× `bf16`, queries
//!   11–13 ms against 14–15; the Xeon without AMX: 1.44× `f32`, where `bf16` ran at 0.7×)
//!   and on AVX2 (1.1–1.26×), `f32` on AVX-512 CPUs without VNNI and on scalar-only ones.
//!   The choice depends on the CPU alone, never on a timing, so one machine always builds
//!   the same fingerprint. Every precision `auto` may choose is gated in CI against the
//!   PyTorch golden vectors.
//!
//! The setting is `MEMORIA_PRECISION` (the CLI's `--precision` sets it) or
//! [`GemmaOptions::precision`](crate::gemma::GemmaOptions) for library users. The generic
//! kernels always run the working dtype, whatever the setting says. On a GPU the setting
//! chooses the working dtype (`device.rs`): `f32`, or bf16 for `bf16`, `auto` and `q8` (which
//! has no GPU kernels; the words in `status` say so).

use std::fmt;
use std::str::FromStr;

use crate::simd::{extensions, level, Extensions, Level};

/// The environment variable that chooses the precision.
pub const PRECISION_VAR: &str = "MEMORIA_PRECISION";

/// The precision asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// f16 weights, f32 products.
    F32,
    /// Q8_0 weights, int8 activations.
    Q8,
    /// bf16 weights and activations, f32 sums.
    Bf16,
    /// The fastest that passes the accuracy gates on this CPU.
    #[default]
    Auto,
}

impl Precision {
    /// `auto` resolved on this CPU: [`Precision::F32`], [`Precision::Q8`] or
    /// [`Precision::Bf16`].
    pub fn resolve(self) -> Precision {
        match self {
            Precision::Auto => auto_on(level(), extensions()),
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
            Precision::Bf16 => "bf16",
            Precision::Auto => "auto",
        }
    }
}

/// What `auto` is on a CPU of `level` with `ext` (see the module docs), and why in words.
fn auto_on(level: Level, ext: Extensions) -> Precision {
    auto_why(level, ext).0
}

fn auto_why(level: Level, ext: Extensions) -> (Precision, &'static str) {
    match level {
        Level::Avx512 if ext.amx_bf16 => (Precision::Bf16, "AMX"),
        Level::Avx512 if ext.vnni512 => (Precision::Q8, "AVX512-VNNI, no AMX"),
        Level::Avx2 => (Precision::Q8, "AVX2"),
        Level::Avx512 => (Precision::F32, "AVX-512 without VNNI"),
        Level::Scalar => (Precision::F32, "no SIMD kernels"),
    }
}

/// Why `auto` resolves as it does on this CPU (`AMX`, `AVX2`, …), for `status`.
pub(crate) fn auto_reason() -> &'static str {
    auto_why(level(), extensions()).1
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
            "bf16" | "bfloat16" => Ok(Precision::Bf16),
            other => Err(format!(
                "unknown precision `{other}` (f32, q8, bf16 or auto)"
            )),
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
            ("bf16", Ok(Precision::Bf16)),
            ("BFloat16", Ok(Precision::Bf16)),
        ] {
            assert_eq!(text.parse::<Precision>(), want, "{text}");
        }
        for bad in ["fp16", "int4", ""] {
            let err = bad.parse::<Precision>().unwrap_err();
            assert!(err.contains("f32, q8, bf16 or auto"), "{bad}: {err}");
        }
    }

    #[test]
    fn explicit_choices_resolve_to_themselves() {
        assert_eq!(Precision::F32.resolve(), Precision::F32);
        assert_eq!(Precision::Q8.resolve(), Precision::Q8);
        assert_eq!(Precision::Bf16.resolve(), Precision::Bf16);
        assert_eq!(Precision::Auto.resolve(), auto_on(level(), extensions()));
        let none = Extensions::default();
        let vnni = Extensions {
            vnni512: true,
            vnni256: true,
            ..none
        };
        let amx = Extensions {
            bf16: true,
            amx_bf16: true,
            ..vnni
        };
        let intel_bf16 = Extensions { bf16: true, ..vnni };
        let amd_bf16 = Extensions {
            bf16_fast: true,
            ..intel_bf16
        };
        for (cpu, ext, want) in [
            (Level::Avx2, none, Precision::Q8),
            (Level::Avx512, none, Precision::F32),
            (Level::Avx512, vnni, Precision::Q8),
            (Level::Avx512, amx, Precision::Bf16),
            (Level::Avx512, intel_bf16, Precision::Q8),
            (Level::Avx512, amd_bf16, Precision::Q8),
            (Level::Scalar, none, Precision::F32),
        ] {
            assert_eq!(auto_on(cpu, ext), want, "{cpu:?} {ext:?}");
        }
    }
}
