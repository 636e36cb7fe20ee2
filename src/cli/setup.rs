//! From the global options to a command's settings and [`Memory`]: the agent, the config
//! (a file or standard input), --workspace, --provider and --model.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use memoria::config::{self, Env, Settings};
use memoria::{EmbedderChoice, Memory};

use crate::args::{Cli, Command};

/// The one agent of a command that serves one.
pub fn single_agent(cli: &Cli) -> Result<&str> {
    match cli.agent.as_slice() {
        [agent] => Ok(agent),
        // clap replaces the default with the first --agent, so this is two or more.
        _ => bail!("only `memoria mcp` serves several agents: give one --agent"),
    }
}

/// The settings of the command's one agent.
pub fn settings(cli: &Cli) -> Result<Settings> {
    settings_for(cli, single_agent(cli)?)
}

/// The settings of `agent`, with the global options applied.
pub fn settings_for(cli: &Cli, agent: &str) -> Result<Settings> {
    let settings = load_config(cli, &env_for(cli)?, agent)?;
    apply_overrides(cli, settings)
}

/// The config's settings for `agent`: the file `env` names, or standard input for
/// `--config -` (read once per process).
pub fn load_config(
    cli: &Cli,
    env: &Env,
    agent: &str,
) -> std::result::Result<Settings, config::ConfigError> {
    if cli.config.as_deref() != Some(Path::new("-")) {
        return config::load_settings(env, agent);
    }
    static STDIN: std::sync::OnceLock<std::io::Result<String>> = std::sync::OnceLock::new();
    let stdin = Path::new("<stdin>");
    let text = STDIN
        .get_or_init(|| std::io::read_to_string(std::io::stdin()))
        .as_ref()
        .map_err(|e| config::ConfigError::Io {
            file: stdin.to_path_buf(),
            error: std::io::Error::new(e.kind(), e.to_string()),
        })?;
    let value = config::parse_config_text(text, stdin)?;
    let mut settings =
        config::resolve(&value, agent, env).map_err(|e| e.in_file(stdin.to_path_buf()))?;
    for warning in &mut settings.warnings {
        *warning = format!("<stdin>: {warning}");
    }
    Ok(settings)
}

/// Refuses two inputs from standard input in one command (it can be read once), and
/// `--config -` for `mcp`, whose stdin carries the protocol.
pub fn one_stdin(cli: &Cli) -> Result<()> {
    let config = cli.config.as_deref() == Some(Path::new("-"));
    let dash = |p: &Option<PathBuf>| p.as_deref() == Some(Path::new("-"));
    let command = match &cli.command {
        Command::Mcp => 1,
        Command::Embed(_) => 1,
        Command::Search(args) => usize::from(dash(&args.queries)),
        Command::Chunks(args) => usize::from(args.file == Path::new("-")),
        Command::Append(args) => usize::from(args.text == "-"),
        Command::Eval(args) => [&args.corpus, &args.queries, &args.qrels]
            .into_iter()
            .filter(|p| dash(p))
            .count(),
        _ => 0,
    };
    if usize::from(config) + command > 1 {
        bail!(
            "standard input can feed one input only (`--config -`, `--queries -`, `chunks -`, \
             an eval file, `embed`'s texts; `mcp` speaks over it)"
        );
    }
    Ok(())
}

/// The process environment with --state-dir, --config and --ranking applied.
pub fn env_for(cli: &Cli) -> Result<Env> {
    let mut env = Env::from_process();
    if let Some(dir) = &cli.state_dir {
        env.state_dir = Some(absolute(dir)?);
    }
    if let Some(file) = &cli.config {
        env.config_path = Some(absolute(file)?);
    }
    env.ranking = cli.ranking;
    env.store_uri = cli.store_uri.clone();
    Ok(env)
}

/// --workspace and --provider over the configured settings.
pub fn apply_overrides(cli: &Cli, mut settings: Settings) -> Result<Settings> {
    if let Some(ws) = &cli.workspace {
        settings.workspace = absolute(ws)?;
        settings.workspace_origin = "--workspace".into();
    } else if settings.workspace.is_relative() {
        settings.workspace = absolute(&settings.workspace)?;
    }
    if let Some(provider) = cli.provider {
        settings.provider = provider;
    }
    Ok(settings)
}

/// `path` made absolute against the current directory.
pub fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("{}: invalid path", path.display()))
}

/// The memory of `settings`, its embedder from the settings (or --model).
pub fn open_memory(cli: &Cli, settings: Settings) -> Result<Memory> {
    let model_dir = cli.model.as_deref().map(absolute).transpose()?;
    Ok(Memory::open_with(
        settings,
        EmbedderChoice::FromSettings {
            model_dir,
            precision: cli.precision,
        },
    )?)
}

/// Like [`open_memory`], for a look (`status`, `doctor`): a remote provider is probed
/// once, briefly, not retried.
pub fn open_memory_to_look(cli: &Cli, settings: Settings) -> Result<Memory> {
    let model_dir = cli.model.as_deref().map(absolute).transpose()?;
    Ok(Memory::open_to_look(
        settings,
        EmbedderChoice::FromSettings {
            model_dir,
            precision: cli.precision,
        },
    )?)
}

/// Where to look for the local model: --model, $MEMORIA_MODEL_DIR, the config, the caches.
pub fn model_search(cli: &Cli, settings: &Settings) -> Result<memoria::gemma::ModelSearch> {
    Ok(memoria::gemma::ModelSearch::from_process(
        cli.model.as_deref().map(absolute).transpose()?,
        settings.local.model_path.clone(),
        settings.local.model_cache_dir.as_ref().map(PathBuf::from),
    ))
}
