//! The async runtime LanceDB runs on: one per process, of its own, so that a store's
//! blocking methods can be called from any thread, a tokio worker of `memoria mcp` or
//! `serve` included (a nested `block_on` would panic there; a future sent here and waited
//! for on a channel cannot).

use std::future::Future;
use std::sync::{mpsc, OnceLock};

use crate::error::{Error, Result};

/// Worker threads: LanceDB's reads and writes are I/O bound against object storage; its
/// CPU-heavy parts (index builds, scans) use their own pools.
const WORKERS: usize = 2;

fn runtime() -> std::result::Result<&'static tokio::runtime::Runtime, String> {
    static RUNTIME: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(WORKERS)
                .thread_name("memoria-lance")
                .enable_all()
                .build()
                .map_err(|err| format!("cannot start LanceDB's runtime: {err}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs `future` on the runtime and waits for its answer.
pub(super) fn run<T: Send + 'static>(
    location: &str,
    future: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let failed = |message: String| Error::Store {
        location: location.to_string(),
        message,
    };
    let runtime = runtime().map_err(failed)?;
    let (tx, rx) = mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv()
        .map_err(|_| failed("a LanceDB operation stopped without an answer (it panicked)".into()))?
}

/// Starts `future` on the runtime without waiting for it (work a caller need not wait for,
/// such as prewarming an index); its failure is logged, naming `location`.
pub(super) fn spawn(
    location: &str,
    future: impl Future<Output = std::result::Result<(), String>> + Send + 'static,
) {
    let at = location.to_string();
    match runtime() {
        Ok(runtime) => {
            runtime.spawn(async move {
                if let Err(err) = future.await {
                    tracing::warn!("{at}: {err}");
                }
            });
        }
        Err(err) => tracing::warn!("{at}: {err}"),
    }
}
