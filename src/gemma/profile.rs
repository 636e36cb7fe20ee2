//! Where the encoder spends its time, step by step, for machines without a profiler.
//!
//! With `MEMORIA_PROFILE=1` in the environment, every step of the encoder's forward pass
//! adds its wall time to a per-step total, and [`profile_report`] gives the totals and
//! their shares. Unset, each step costs one check of a cached flag. On a GPU each step
//! waits for the device to finish it ([`time_synced`]), so the totals are the device's
//! time, at the cost of the overlap between launching and running that a pass has
//! otherwise. The benches print the report (`benches/embed.rs`, `memoria embed --timings`);
//! it is how the time of a kernel is told apart from the time around it on a lent machine
//! that has no `perf`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use candle_core::Device;

use crate::gemma::error::Result;

/// The steps of one encoder layer (and the final norm), in forward order, and the two
/// around the encoder.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step {
    Lookup,
    Norms,
    LinearQkv,
    QkNormRope,
    Attention,
    LinearO,
    LinearGateUp,
    GeluMul,
    LinearDown,
    Pooling,
}

const NAMES: [&str; 10] = [
    "token rows",
    "RMSNorm (+ residual)",
    "linear q|k|v",
    "q/k norm + RoPE",
    "attention",
    "linear o",
    "linear gate|up",
    "GELU × up",
    "linear down",
    "mean pooling + Dense",
];

static NANOS: [AtomicU64; 10] = [const { AtomicU64::new(0) }; 10];

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("MEMORIA_PROFILE").is_some_and(|v| v != "0"))
}

/// Runs `f`, adding its wall time to `step`'s total when profiling is on.
#[inline]
pub(crate) fn time<T>(step: Step, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let t = Instant::now();
    let out = f();
    NANOS[step as usize].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    out
}

/// [`time`] for work queued on `device`: when profiling is on, waits for the device to
/// finish `f`'s work before reading the clock.
#[inline]
pub(crate) fn time_synced<T>(
    device: &Device,
    step: Step,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    if !enabled() {
        return f();
    }
    let t = Instant::now();
    let out = f()?;
    device.synchronize()?;
    NANOS[step as usize].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
    Ok(out)
}

/// The time per encoder step since the process started (or the last report), one line
/// each with its share; `None` unless `MEMORIA_PROFILE` is set. Reading resets the totals.
pub fn profile_report() -> Option<String> {
    if !enabled() {
        return None;
    }
    let nanos: Vec<u64> = NANOS.iter().map(|n| n.swap(0, Ordering::Relaxed)).collect();
    let total: u64 = nanos.iter().sum::<u64>().max(1);
    let lines: Vec<String> = NAMES
        .iter()
        .zip(&nanos)
        .map(|(name, &n)| {
            format!(
                "{name}: {:.1} ms ({:.1}%)",
                n as f64 / 1e6,
                100.0 * n as f64 / total as f64
            )
        })
        .collect();
    Some(lines.join("\n"))
}
