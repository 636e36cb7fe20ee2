//! The long-running commands: `memoria watch` (the live sync in the foreground) and
//! `memoria mcp` (the MCP server, one live sync per agent), and how they stop.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};

use memoria::Memory;

use crate::args::Cli;
use crate::render::live_line;
use crate::{mcp, setup};

/// `memoria watch`: the live sync in the foreground, one line per event.
pub fn watch(memory: Memory) -> Result<ExitCode> {
    let memory = Arc::new(memory);
    let live = memory.start_live(|event| eprintln!("{}", live_line(event)))?;
    let runtime = runtime()?;
    runtime.block_on(shutdown_signal())?;
    stop_live(&runtime, vec![live])
}

/// `memoria mcp`: one memory and one live sync per agent, served over stdio until the client
/// closes the stream, Ctrl-C or SIGTERM.
pub fn mcp(cli: &Cli) -> Result<ExitCode> {
    let mut ids: Vec<&str> = Vec::new();
    for id in &cli.agent {
        if !ids.contains(&id.as_str()) {
            ids.push(id);
        }
    }
    let several = ids.len() > 1;
    let mut agents = Vec::new();
    let mut live = Vec::new();
    for id in ids {
        let settings = setup::settings_for(cli, id).with_context(|| format!("agent {id}"))?;
        let memory =
            Arc::new(setup::open_memory(cli, settings).with_context(|| format!("agent {id}"))?);
        let prefix = if several {
            format!("[{id}] ")
        } else {
            String::new()
        };
        live.push(memory.start_live(move |event| eprintln!("{prefix}{}", live_line(event)))?);
        agents.push(mcp::Agent {
            id: id.to_string(),
            memory,
        });
    }
    let runtime = runtime()?;
    runtime.block_on(mcp::serve(mcp::Server::new(agents), shutdown_signal()))?;
    stop_live(&runtime, live)
}

/// Stops the live syncs: a sync in progress finishes first, unless a second Ctrl-C or
/// SIGTERM arrives, which exits at once (every commit is atomic, so the index stays
/// consistent either way; the next sync redoes the interrupted work).
fn stop_live(runtime: &tokio::runtime::Runtime, live: Vec<memoria::LiveSync>) -> Result<ExitCode> {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        for sync in live {
            sync.stop();
        }
        let _ = done_tx.send(());
    });
    runtime.block_on(async {
        tokio::select! {
            _ = done_rx => Ok(ExitCode::SUCCESS),
            _ = async {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                eprintln!(
                    "stopping: the sync in progress finishes first (Ctrl-C again to quit now; \
                     the index stays consistent)"
                );
                let _ = shutdown_signal().await;
            } => {
                eprintln!("quitting without waiting for the sync in progress");
                Ok(ExitCode::from(130))
            }
        }
    })
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Resolves on Ctrl-C (SIGINT) or, on Unix, SIGTERM.
async fn shutdown_signal() -> Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("listening for SIGTERM")?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result.context("listening for Ctrl-C")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c()
        .await
        .context("listening for Ctrl-C")?;
    Ok(())
}
