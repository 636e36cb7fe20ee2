//! Where the CPU encoder spends its time, step by step, for machines without a profiler.
//!
//! With `MEMORIA_PROFILE=1` in the environment, every step of the fused encoder's forward
//! pass adds its wall time to a per-step total, and [`profile_report`] gives the totals
//! and their shares. Unset, each step costs one check of a cached flag. The benches print
//! the report (`benches/embed.rs`); it is how the time of a kernel is told apart from the
//! time around it on a lent machine that has no `perf`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// The steps of one encoder layer (and the final norm), in forward order.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step {
    Norms,
    LinearQkv,
    QkNormRope,
    Attention,
    LinearO,
    LinearGateUp,
    GeluMul,
    LinearDown,
}

const NAMES: [&str; 8] = [
    "RMSNorm (+ residual)",
    "linear q|k|v",
    "q/k norm + RoPE",
    "attention",
    "linear o",
    "linear gate|up",
    "GELU × up",
    "linear down",
];

static NANOS: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

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
