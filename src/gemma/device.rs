//! Where the model runs: the GPU when the build has one and it works, else the CPU, and
//! that choice in words for `status`.
//!
//! A build with the `cuda` or `metal` feature tries its GPU first and proves it with one
//! short embedding, because a device that opens may still fail on the first kernel (an
//! old driver, a missing library, a GPU older than the kernels' compute capability). When
//! it fails for any reason but an unreadable model (which would fail on the CPU too), the
//! model loads on the CPU and the words carry the reason. `MEMORIA_DEVICE=cpu` keeps a GPU
//! build on the CPU (a shared GPU host, a comparison).
//!
//! On a CUDA GPU the precision setting chooses the working dtype: bf16 for `auto` and
//! `bf16` (tensor cores, f32 sums; norms and the residual stream in f32), f32 for `f32`;
//! `q8` has no GPU kernels and runs bf16 there, as the words say. Passes are
//! [`GPU_BATCH_TOKENS`](crate::gemma::GPU_BATCH_TOKENS) wide, or `MEMORIA_GPU_BATCH_TOKENS`.
//! Metal runs f32.
//!
//! On the CPU, the load takes the packed-model cache (`$MEMORIA_CACHE_DIR`, see
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
#[cfg(any(feature = "cuda", feature = "metal"))]
use crate::gemma::options::GPU_BATCH_TOKENS;
use crate::gemma::precision::{auto_reason, Precision};
use crate::gemma::{bf16, q8};
use crate::simd::{amx_permission, detect_extensions, level, Level};

/// The environment variable that keeps a GPU build on the CPU: `cpu`, or `auto` (the
/// default: the GPU when one works).
const DEVICE_VAR: &str = "MEMORIA_DEVICE";

/// Whether `MEMORIA_DEVICE` lets the GPU be tried; an error names the variable.
fn gpu_allowed() -> Result<bool> {
    match std::env::var(DEVICE_VAR) {
        Err(_) => Ok(true),
        Ok(v) => match v.trim() {
            "" | "auto" => Ok(true),
            "cpu" => Ok(false),
            other => Err(GemmaError::InvalidOption(format!(
                "{DEVICE_VAR}={other}: expected auto or cpu"
            ))),
        },
    }
}

/// The GPU of this build: the first CUDA device, or the default Metal device.
#[cfg(any(feature = "cuda", feature = "metal"))]
fn default_device() -> Result<Device> {
    #[cfg(feature = "cuda")]
    return cuda_device(0);
    #[cfg(all(feature = "metal", not(feature = "cuda")))]
    return Ok(Device::new_metal(0)?);
}

/// CUDA device `ordinal` with a stream of its own. candle's default device queues on the
/// calling thread's default stream, so a tensor uploaded by one thread and used by a
/// rayon worker would cross streams unordered; with one stream for the device, every copy,
/// kernel, allocation and free is ordered on it, whichever thread queues it.
#[cfg(feature = "cuda")]
fn cuda_device(ordinal: usize) -> Result<Device> {
    let device = candle_core::CudaDevice::new_with_stream(ordinal)?;
    // SAFETY: every tensor of this device is made, used and freed on its one stream (see
    // above), so there is nothing for cross-stream events to order; without them an
    // allocation makes no two events and a launch records none.
    unsafe { device.disable_event_tracking() };
    Ok(Device::Cuda(device))
}

/// The GPU, in words: `cuda:0 (NVIDIA H100 80GB HBM3)`.
#[cfg(any(feature = "cuda", feature = "metal"))]
fn gpu_words(device: Option<&Device>) -> String {
    #[cfg(feature = "cuda")]
    {
        let name = device
            .and_then(|d| d.as_cuda_device().ok())
            .and_then(|d| d.cuda_stream().context().name().ok());
        match name {
            Some(name) => format!("cuda:0 ({})", name.trim()),
            None => "cuda:0".to_string(),
        }
    }
    #[cfg(all(feature = "metal", not(feature = "cuda")))]
    {
        let _ = device;
        "metal".to_string()
    }
}

/// The environment variable that sets a GPU's pass width in tokens (default
/// [`GPU_BATCH_TOKENS`](crate::gemma::GPU_BATCH_TOKENS)); lower it for a GPU with little
/// memory.
#[cfg(any(feature = "cuda", feature = "metal"))]
const GPU_BATCH_TOKENS_VAR: &str = "MEMORIA_GPU_BATCH_TOKENS";

/// A GPU's pass width: `MEMORIA_GPU_BATCH_TOKENS`, else `GPU_BATCH_TOKENS`.
#[cfg(any(feature = "cuda", feature = "metal"))]
fn gpu_batch_tokens() -> Result<usize> {
    match std::env::var(GPU_BATCH_TOKENS_VAR) {
        Err(_) => Ok(GPU_BATCH_TOKENS),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 512 => Ok(n),
            _ => Err(GemmaError::InvalidOption(format!(
                "{GPU_BATCH_TOKENS_VAR}={v}: expected a number of tokens, at least 512"
            ))),
        },
    }
}

/// The GPU's working dtype for the precision asked for, and what to say about it.
#[cfg(any(feature = "cuda", feature = "metal"))]
fn gpu_dtype(asked: Precision) -> (candle_core::DType, &'static str) {
    use candle_core::DType;
    if cfg!(feature = "metal") && !cfg!(feature = "cuda") {
        return match asked {
            Precision::F32 | Precision::Auto => (DType::F32, ""),
            _ => (DType::F32, " (precision applies to the CPU kernels only)"),
        };
    }
    match asked {
        Precision::F32 => (DType::F32, ""),
        Precision::Bf16 => (DType::BF16, ""),
        Precision::Auto => (DType::BF16, " (auto: bf16 tensor cores)"),
        Precision::Q8 => (DType::BF16, " (q8 has no GPU kernels: bf16)"),
    }
}

/// Loads the model at `dir` in the precision `asked` where it runs best, and says where,
/// in words (`cuda:0 (…), bf16`,
/// `cpu, f32, AVX-512 kernels; loaded from …; tokenizer: …`).
///
/// A build with a GPU backend (`cuda`, `metal`) loads on the GPU and checks it with one
/// short embedding. When there is no usable GPU (no device, no driver, a failing kernel),
/// the model runs on the CPU instead, and the words say why. A GGUF file without Dense
/// layers borrows them from a sentence-transformers copy of the model when one is found
/// ([`dense_source`](crate::gemma::locate::dense_source)).
pub(crate) fn load_on_best_device(dir: &Path, asked: Precision) -> Result<(GemmaEmbedder, String)> {
    // A GGUF file without Dense layers borrows them from a sentence-transformers copy.
    let dense_dir = is_gguf(dir).then(|| dense_source(dir)).flatten();
    let with_dense = |words: &mut String, embedder: &GemmaEmbedder| {
        if let Some(dense) = embedder.dense_words() {
            words.push_str(&format!("; {dense}"));
        }
    };
    #[cfg(any(feature = "cuda", feature = "metal"))]
    let gpu_failed = match gpu_allowed()? {
        false => Some(format!("{DEVICE_VAR}=cpu")),
        true => {
            let (dtype, note) = gpu_dtype(asked);
            let mut gpu = gpu_words(None);
            let on_gpu = default_device().and_then(|device| {
                gpu = gpu_words(Some(&device));
                let options = GemmaOptions {
                    dense_dir: dense_dir.clone(),
                    dtype: Some(dtype),
                    batch_tokens: gpu_batch_tokens()?,
                    ..GemmaOptions::default()
                };
                let embedder = GemmaEmbedder::load(dir, &device, options)?;
                let prompt = crate::gemma::options::Prompt::Query;
                let (ids, _) = embedder.tokenize("memoria device check", prompt)?;
                embedder.embed_ids(&[&ids])?;
                Ok(embedder)
            });
            match on_gpu {
                Ok(embedder) => {
                    let mut words = format!("{gpu}, {}{note}", embedder.precision());
                    with_dense(&mut words, &embedder);
                    return Ok((embedder, words));
                }
                // A model that cannot be read fails the same way on the CPU.
                Err(err @ (GemmaError::MissingFile { .. } | GemmaError::Io { .. })) => {
                    return Err(err)
                }
                Err(err) => {
                    // candle's errors may carry a backtrace after their first line.
                    let err = err.to_string();
                    let why = err.lines().next().unwrap_or_default();
                    tracing::warn!("{gpu}: the GPU cannot run the model ({why}); using the CPU");
                    Some(format!("{gpu} failed: {why}"))
                }
            }
        }
    };
    #[cfg(not(any(feature = "cuda", feature = "metal")))]
    let gpu_failed: Option<String> = None;
    #[cfg(not(any(feature = "cuda", feature = "metal")))]
    gpu_allowed()?;
    let options = GemmaOptions {
        cache_dir: cache_dir(),
        precision: asked,
        dense_dir,
        ..GemmaOptions::default()
    };
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
