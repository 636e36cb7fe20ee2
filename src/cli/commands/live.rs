//! The long-running commands: `memoria watch` (the live sync in the foreground),
//! `memoria mcp` (the MCP server over stdio, one live sync per agent) and `memoria serve`
//! (embeddings and MCP over HTTP), and how they stop.

use std::process::ExitCode;
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context, Result};

use memoria::config::ProviderKind;
use memoria::gemma::{ModelLocation, ModelNotFound};
use memoria::Memory;

use crate::args::{Cli, Serve};
use crate::render::live_line;
use crate::setup::model_search;
use crate::{mcp, serve, setup};

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
    let agents = served_agents(cli)?;
    // Agents that embed with the local model share one: a second model would double the
    // process's memory, so agents naming different ones are an error (as `serve`'s).
    let local = agents.iter().filter(|agent| {
        let provider = &agent.memory.settings().provider;
        matches!(provider, ProviderKind::Local | ProviderKind::Auto)
    });
    let mut found = models(cli, local)?;
    found.retain(|(_, location)| location.is_ok());
    if !found.is_empty() {
        one_model("memoria mcp", found)?;
    }
    let live = start_live(&agents)?;
    let runtime = runtime()?;
    runtime.block_on(mcp::serve(mcp::Server::new(agents), shutdown_signal()))?;
    let code = stop_live(&runtime, live);
    // The stdio transport reads standard input in a blocking task that ends only with the
    // input: after SIGTERM from a client that keeps its end of the pipe open, waiting for
    // it (as dropping the runtime does) would never return.
    runtime.shutdown_background();
    code
}

/// `memoria serve`: embeddings and the memory tools over HTTP until Ctrl-C or SIGTERM
/// (requests in flight finish; then the live syncs stop as `mcp`'s do). It refuses to start
/// without a local model to load, and indexes the agents' workspaces only once a client
/// speaks MCP at `/mcp`.
pub fn serve(cli: &Cli, args: &Serve) -> Result<ExitCode> {
    if !serve::is_loopback(&args.listen) && args.token.is_none() {
        bail!(
            "--listen {} is not a loopback address: give --token (or MEMORIA_SERVE_TOKEN) so \
             that only clients with it are served",
            args.listen
        );
    }
    let agents = served_agents(cli)?;
    // Without a model the server has nothing to serve: OpenClaw's memory search through it
    // would fail at every request. Finding the model is quick; loading it is not.
    let location = one_model("memoria serve", models(cli, agents.iter())?)?;
    // The agents' indexing starts with the first MCP request: a server used only for
    // embeddings indexes nothing.
    let live: Arc<Mutex<Option<Vec<memoria::LiveSync>>>> = Arc::default();
    let starting = (agents.clone(), live.clone());
    let on_mcp = Box::new(move || {
        let (agents, live) = &starting;
        let Ok(mut live) = live.lock() else { return };
        if live.is_none() {
            eprintln!("memoria serve: the first MCP request: indexing starts");
            match start_live(agents) {
                Ok(started) => *live = Some(started),
                Err(err) => {
                    eprintln!("memoria serve: indexing cannot start: {err:#}");
                    *live = Some(Vec::new());
                }
            }
        }
    });
    let shared = Arc::new(serve::Shared {
        model: OnceLock::new(),
        load_error: OnceLock::new(),
        token: args.token.clone(),
        loopback: serve::is_loopback(&args.listen),
        on_mcp,
    });
    // The model loads while the server already answers /health (503 until it is ready).
    let loading = shared.clone();
    let precision = cli.precision;
    std::thread::spawn(move || {
        let loaded = memoria::embed::load_local_on(&location.dir, precision)
            .with_context(|| format!("{}: cannot load the model", location.dir.display()));
        match loaded {
            Ok((embedder, device)) => {
                eprintln!("memoria serve: model ready on {device}");
                let _ = loading.model.set(serve::Batcher::start(embedder));
            }
            Err(err) => {
                eprintln!("memoria serve: the model cannot load: {err:#}");
                let _ = loading.load_error.set(format!("{err:#}"));
            }
        }
    });
    let runtime = runtime()?;
    let router = serve::router(shared, mcp::Server::new(agents));
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        let addr = listener.local_addr().context("the listening address")?;
        eprintln!(
            "memoria serve: listening on http://{addr} (POST /v1/embeddings, GET /v1/models, \
             GET /health, MCP at /mcp){}",
            if args.token.is_some() {
                "; a Bearer token is required"
            } else {
                ""
            }
        );
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = shutdown_signal().await;
            })
            .await
            .context("the HTTP server failed")
    })?;
    let live = live.lock().ok().and_then(|mut live| live.take());
    stop_live(&runtime, live.unwrap_or_default())
}

/// The local model each of `agents` finds, by agent id.
fn models<'a>(
    cli: &Cli,
    agents: impl Iterator<Item = &'a mcp::Agent>,
) -> Result<Vec<(&'a str, Result<ModelLocation, ModelNotFound>)>> {
    agents
        .map(|agent| {
            let search = model_search(cli, agent.memory.settings())?;
            Ok((agent.id.as_str(), memoria::gemma::resolve_model(&search)))
        })
        .collect()
}

/// The one local model `command` loads: the model each agent's settings find (`found`, in
/// `--agent` order), where they agree (one directory, however named). Agents whose
/// settings name different models are an error naming them, since each other model would
/// be loaded beside the first (and `serve`'s embeddings endpoint serves one); so is an
/// agent that finds none.
fn one_model(
    command: &str,
    found: Vec<(&str, Result<ModelLocation, ModelNotFound>)>,
) -> Result<ModelLocation> {
    let mut chosen: Option<(&str, ModelLocation)> = None;
    let mut missing = None;
    for (agent, location) in found {
        let location = match location {
            Ok(location) => location,
            Err(err) => {
                missing.get_or_insert((agent, err));
                continue;
            }
        };
        match &chosen {
            None => chosen = Some((agent, location)),
            Some((first, model)) if !same_path(&model.dir, &location.dir) => bail!(
                "{command} loads one model, and agents {first} and {agent} name different \
                 ones: {} ({}) and {} ({}); give --model DIR (or MEMORIA_MODEL_DIR) for all, \
                 or make their local.modelPath agree",
                model.dir.display(),
                model.reason,
                location.dir.display(),
                location.reason
            ),
            Some(_) => {}
        }
    }
    match (chosen, missing) {
        (Some((_, location)), None) => Ok(location),
        (Some((first, location)), Some((agent, err))) => bail!(
            "{command} loads one model: agent {first} finds {} ({}), and agent {agent} \
             finds none ({err}); give --model DIR (or MEMORIA_MODEL_DIR) for all",
            location.dir.display(),
            location.reason
        ),
        (None, Some((agent, err))) => Err(anyhow::Error::new(err).context(format!(
            "{command} embeds with the local model, and there is none for agent {agent}"
        ))),
        (None, None) => bail!("{command}: no agent to serve"),
    }
}

/// Whether two paths name one file or directory (through links, where both exist).
fn same_path(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// One memory per `--agent` (each once); their live syncs start apart ([`start_live`]).
fn served_agents(cli: &Cli) -> Result<Vec<mcp::Agent>> {
    let mut ids: Vec<&str> = Vec::new();
    for id in &cli.agent {
        if !ids.contains(&id.as_str()) {
            ids.push(id);
        }
    }
    let mut agents = Vec::new();
    for id in ids {
        let settings = setup::settings_for(cli, id).with_context(|| format!("agent {id}"))?;
        let memory =
            Arc::new(setup::open_memory(cli, settings).with_context(|| format!("agent {id}"))?);
        agents.push(mcp::Agent {
            id: id.to_string(),
            memory,
        });
    }
    Ok(agents)
}

/// One live sync per agent, its events on stderr (prefixed by the agent when several).
fn start_live(agents: &[mcp::Agent]) -> Result<Vec<memoria::LiveSync>> {
    let several = agents.len() > 1;
    agents
        .iter()
        .map(|agent| {
            let prefix = if several {
                format!("[{}] ", agent.id)
            } else {
                String::new()
            };
            agent
                .memory
                .start_live(move |event| eprintln!("{prefix}{}", live_line(event)))
                .with_context(|| format!("agent {}", agent.id))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use memoria::gemma::{ModelLocation, ModelNotFound};

    fn at(dir: &str) -> Result<ModelLocation, ModelNotFound> {
        Ok(ModelLocation {
            dir: PathBuf::from(dir),
            reason: "local.modelPath".into(),
        })
    }

    fn none() -> Result<ModelLocation, ModelNotFound> {
        Err(ModelNotFound::NoDir {
            origin: "local.modelPath".into(),
            dir: PathBuf::from("/nowhere"),
        })
    }

    /// Each case: the agents' models, then the model served or the words the error has.
    #[test]
    fn serve_loads_the_one_model_its_agents_agree_on() {
        type Found = Vec<(&'static str, Result<ModelLocation, ModelNotFound>)>;
        let cases: Vec<(Found, Result<&str, &[&str]>)> = vec![
            (vec![("main", at("/m"))], Ok("/m")),
            (vec![("main", at("/m")), ("work", at("/m"))], Ok("/m")),
            (
                vec![("main", at("/m")), ("work", at("/other"))],
                Err(&["agents main and work", "/m", "/other", "--model"]),
            ),
            (
                vec![("main", at("/m")), ("work", none())],
                Err(&["agent main finds /m", "agent work finds none", "/nowhere"]),
            ),
            (
                vec![("main", none()), ("work", none())],
                Err(&["there is none for agent main", "/nowhere"]),
            ),
        ];
        for (found, want) in cases {
            let agents: Vec<String> = found.iter().map(|(a, _)| a.to_string()).collect();
            let got = super::one_model("memoria serve", found).map_err(|e| format!("{e:#}"));
            match (got, want) {
                (Ok(location), Ok(dir)) => assert_eq!(location.dir, PathBuf::from(dir)),
                (Err(message), Err(words)) => {
                    for word in words {
                        assert!(message.contains(word), "{agents:?}: {message}");
                    }
                }
                (got, want) => panic!("{agents:?}: {got:?}, wanted {want:?}"),
            }
        }
    }
}
