//! `memoria`: the command-line interface over the library façade [`memoria::Memory`].
//!
//! This file parses and dispatches; the rest of the binary is in small rooms:
//! - `args`: clap's types (the global options, each command's arguments);
//! - `setup`: from the global options to a command's settings and `Memory`;
//! - `commands/`: one module per command or family of commands;
//! - `render`: human output shared by commands (status, the live sync's lines);
//! - `daily`: the local calendar of the daily logs (`append`, `context`, `flush-plan`, MCP);
//! - `mcp` and `tool_args`: the MCP server, and its tools' argument types.

mod args;
mod commands;
mod daily;
mod mcp;
mod render;
mod serve;
mod setup;
mod tool_args;

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

use args::{Cli, Command};
use commands::{chunks, doctor, eval, index, live, model, notes, search};
use setup::{open_memory, open_memory_to_look, single_agent};

/// Exit codes (docs/configuration.md, "Behaviour decisions"): 0 success, 1 error, 2 usage
/// (clap), 3 index busy (another process is writing; nothing was done, try again later), 4
/// not found.
const EXIT_BUSY: u8 = 3;
const EXIT_NOT_FOUND: u8 = 4;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MEMORIA_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .init();
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", describe(&err));
            exit_code(&err)
        }
    }
}

fn run(cli: &Cli) -> Result<ExitCode> {
    setup::one_stdin(cli)?;
    // `mcp` reads one config per agent it serves, and `doctor` reports a config that does not
    // load instead of stopping at it; every other command starts from its agent's settings.
    let settings = || setup::settings(cli);
    match &cli.command {
        Command::Mcp => live::mcp(cli),
        Command::Serve(args) => live::serve(cli, args),
        Command::Doctor => doctor::doctor(cli, single_agent(cli)?),
        Command::Watch => live::watch(open_memory(cli, settings()?)?),
        Command::Index(args) => {
            let settings = settings()?;
            let named = setup::model_search(cli, &settings)?.named();
            index::index(open_memory(cli, settings)?, args.force, named.is_some())
        }
        Command::Status(args) => index::status(open_memory_to_look(cli, settings()?)?, args),
        Command::Search(args) => search::search(&open_memory(cli, settings()?)?, args),
        Command::Get(args) => search::get(&open_memory(cli, settings()?)?, args),
        Command::SessionsSearch(args) => {
            search::sessions_search(&open_memory(cli, settings()?)?, args)
        }
        Command::Chunks(args) => chunks::chunks(&open_memory(cli, settings()?)?, args),
        Command::ProjectKey { dir } => chunks::project_key(dir.as_deref()),
        Command::Append(args) => notes::append(settings()?, args),
        Command::Context(args) => notes::context(settings()?, args),
        Command::FlushPlan(args) => notes::flush_plan(settings()?, args),
        Command::Store { action } => index::store(&open_memory_to_look(cli, settings()?)?, action),
        Command::Model { action } => model::model(cli, &settings()?, action),
        Command::Embed(args) => model::embed(cli, &settings()?, args),
        Command::Eval(args) => eval::eval(cli, &settings()?, args),
        Command::Completions { shell } => {
            settings()?;
            args::completions(*shell);
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            settings()?;
            args::man().context("writing the man page")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The error and its causes, each said once: memoria's errors already show their cause in
/// their own text (`<file>: <io error>`), and the chain would repeat it.
fn describe(err: &anyhow::Error) -> String {
    let mut text = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

fn exit_code(err: &anyhow::Error) -> ExitCode {
    let busy = err.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<memoria::Error>(),
            Some(memoria::Error::IndexBusy { .. })
        )
    });
    ExitCode::from(if busy { EXIT_BUSY } else { 1 })
}
