//! Where the model runs: the GPU when the build has one and it works, else the CPU, and
//! that choice in words for `status`.
//!
//! A build with the `cuda` or `metal` feature tries its GPU first and proves it with one
//! short embedding, because a device that opens may still fail on the first kernel (an
//! old driver, a missing library). When it fails for any reason but an unreadable model
//! (which would fail on the CPU too), the model loads on the CPU and the words carry the
//! reason. On the CPU, the load takes the packed-model cache (`$MEMORIA_CACHE_DIR`, see
//! [`cache_dir`](crate::gemma::locate::cache_dir)) and the precision of
//! `MEMORIA_PRECISION`, and the words say which kernels run (`AVX-512`, `AVX2`, `AVX2
//! int8`, `AVX512-VNNI int8`, `AMX bf16`, `scalar`, …), where the weights came from and
//! which tokenizer runs.

use std::path::Path;

use candle_core::Device;

use crate::gemma::embedder::GemmaEmbedder;
use crate::gemma::error::{GemmaError, Result};
use crate::gemma::gguf::is_gguf;
use crate::gemma::locate::{cache_dir, dense_source};
use crate::gemma::options::GemmaOptions;
use crate::gemma::precision::{auto_reason, Precision};
use crate::gemma::{bf16, q8};
use crate::simd::{amx_permission, detect_extensions, level, Level};

/// The device models run on: the first CUDA or Metal device when built with that feature,
/// else the CPU.
pub fn default_device() -> Result<Device> {
    #[cfg(feature = "cuda")]
    return Ok(Device::new_cuda(0)?);
    #[cfg(all(feature = "metal", not(feature = "cuda")))]
    return Ok(Device::new_metal(0)?);
    #[cfg(not(any(feature = "cuda", feature = "metal")))]
    Ok(Device::Cpu)
}

/// Loads the model at `dir` where it runs best, and says where, in words (`cuda:0, f32`,
/// `cpu, f32, AVX-512 kernels; loaded from …; tokenizer: …`).
///
/// A build with a GPU backend (`cuda`, `metal`) loads on the GPU and checks it with one
/// short embedding. When there is no usable GPU (no device, no driver, a failing kernel),
/// the model runs on the CPU instead, and the words say why. A GGUF file without Dense
/// layers borrows them from a sentence-transformers copy of the model when one is found
/// ([`dense_source`](crate::gemma::locate::dense_source)).
pub(crate) fn load_on_best_device(dir: &Path) -> Result<(GemmaEmbedder, String)> {
    // A GGUF file without Dense layers borrows them from a sentence-transformers copy.
    let dense_dir = is_gguf(dir).then(|| dense_source(dir)).flatten();
    let with_dense = |words: &mut String, embedder: &GemmaEmbedder| {
        if let Some(dense) = embedder.dense_words() {
            words.push_str(&format!("; {dense}"));
        }
    };
    #[cfg(any(feature = "cuda", feature = "metal"))]
    let gpu_failed = {
        let on_gpu = default_device().and_then(|device| {
            let options = GemmaOptions {
                dense_dir: dense_dir.clone(),
                ..GemmaOptions::default()
            };
            let embedder = GemmaEmbedder::load(dir, &device, options)?;
            let (ids, _) =
                embedder.tokenize("memoria device check", crate::gemma::options::Prompt::Query)?;
            embedder.embed_ids(&[&ids])?;
            Ok(embedder)
        });
        match on_gpu {
            Ok(embedder) => {
                let mut words = gpu_words().to_string();
                if let Ok(p @ (Precision::Q8 | Precision::Bf16)) = Precision::from_env() {
                    words.push_str(&format!(" (precision {p} applies to the CPU kernels only)"));
                }
                with_dense(&mut words, &embedder);
                return Ok((embedder, words));
            }
            // A model that cannot be read fails the same way on the CPU.
            Err(err @ (GemmaError::MissingFile { .. } | GemmaError::Io { .. })) => return Err(err),
            Err(err) => {
                tracing::warn!(
                    "{}: the GPU cannot run the model ({err}); using the CPU",
                    gpu_words()
                );
                Some(format!("{} failed: {err}", gpu_words()))
            }
        }
    };
    #[cfg(not(any(feature = "cuda", feature = "metal")))]
    let gpu_failed: Option<String> = None;
    let options = GemmaOptions {
        cache_dir: cache_dir(),
        precision: Precision::from_env().map_err(GemmaError::InvalidOption)?,
        dense_dir,
        ..GemmaOptions::default()
    };
    let asked = options.precision;
    let embedder = GemmaEmbedder::load(dir, &Device::Cpu, options)?;
    let kernels = match (level(), embedder.precision()) {
        (_, Precision::Q8) if embedder.bf16_attention() => format!(
            "{} and {} attention",
            q8::Kernel::best().name(),
            bf16::Kernel::best().name()
        ),
        (_, Precision::Q8) => q8::Kernel::best().name().to_string(),
        (_, Precision::Bf16) => bf16::Kernel::best().name().to_string(),
        (Level::Avx512, _) => "AVX-512".to_string(),
        (Level::Avx2, _) => "AVX2".to_string(),
        (Level::Scalar, _) => "scalar".to_string(),
    };
    let chosen = match asked {
        Precision::Auto => format!(" (auto: {})", auto_reason()),
        _ => String::new(),
    };
    let mut words = format!("cpu, {}{chosen}, {kernels} kernels", embedder.precision());
    if let Some(why) = gpu_failed {
        words.push_str(&format!(" ({why})"));
    }
    if detect_extensions().amx_bf16 {
        if let Err(why) = amx_permission() {
            words.push_str(&format!(" (the CPU has AMX, unused: {why})"));
        }
    }
    words.push_str(&format!(
        "; loaded from {}; tokenizer: {}",
        embedder.origin(),
        embedder.tokenizer_words()
    ));
    with_dense(&mut words, &embedder);
    Ok((embedder, words))
}

/// The GPU of this build, in words.
#[cfg(any(feature = "cuda", feature = "metal"))]
fn gpu_words() -> &'static str {
    if cfg!(feature = "cuda") {
        "cuda:0, f32"
    } else {
        "metal, f32"
    }
}
