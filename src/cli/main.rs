//! `memoria`: the command-line interface over the library façade [`memoria::Memory`].

mod doctor;
mod mcp;

use std::io::IsTerminal;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use memoria::config::{self, Env, ProviderKind, Settings};
use memoria::SyncProgress;
use memoria::{chunk_markdown, ChunkParams};
use memoria::{eval, Corpus, EmbedderChoice, LiveEvent, Memory, SearchOptions, WatcherState};

/// Hybrid memory search for AI agents' Markdown memory (OpenClaw-compatible).
#[derive(Parser)]
#[command(name = "memoria", version, about)]
struct Cli {
    /// Agent workspace (default: the configured one, else ~/.openclaw/workspace).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    workspace: Option<PathBuf>,
    /// State directory (default: $OPENCLAW_STATE_DIR or ~/.openclaw).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    state_dir: Option<PathBuf>,
    /// Agent id (`mcp` serves several: repeat it).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        default_value = "main"
    )]
    agent: Vec<String>,
    /// OpenClaw config file (default: $OPENCLAW_CONFIG_PATH or <stateDir>/openclaw.json).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "FILE"
    )]
    config: Option<PathBuf>,
    /// Embedding provider; `none` searches by keyword only.
    #[arg(long, global = true, help_heading = "Global options", value_enum)]
    provider: Option<ProviderArg>,
    /// Local embedding model: a directory or a GGUF file (wins over $MEMORIA_MODEL_DIR and local.modelPath).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    model: Option<PathBuf>,
    /// Local model arithmetic on the CPU: f32, q8 or auto (the fastest that passes the
    /// accuracy gates here). Sets $MEMORIA_PRECISION for this run.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "P",
        value_parser = parse_precision
    )]
    precision: Option<memoria::gemma::Precision>,
    #[command(subcommand)]
    command: Command,
}

fn parse_precision(s: &str) -> std::result::Result<memoria::gemma::Precision, String> {
    s.parse()
}

#[derive(Clone, Copy, ValueEnum)]
enum ProviderArg {
    Auto,
    None,
    Local,
    Openai,
    Gemini,
    Voyage,
    Mistral,
    Ollama,
}

#[derive(Subcommand)]
enum Command {
    /// Bring the index up to date with the workspace.
    Index {
        /// Rebuild everything into a new generation.
        #[arg(long)]
        force: bool,
    },
    /// Search memory (syncs first when the workspace changed).
    Search {
        /// The query (or use --queries).
        query: Option<String>,
        /// JSONL file of {"id": …, "query": …} (`-` reads stdin): one JSON payload line per
        /// query.
        #[arg(long, value_name = "FILE", conflicts_with = "query")]
        queries: Option<PathBuf>,
        /// Results to return (default: the config's query.maxResults, 6).
        #[arg(short = 'n', long, value_name = "N")]
        max_results: Option<usize>,
        /// Lowest score returned, 0 to 1 (default: the config's query.minScore, 0.35).
        #[arg(long, value_name = "X")]
        min_score: Option<f64>,
        /// Which sources to search: memory, sessions or all (default: every enabled one).
        #[arg(long, value_enum, default_value = "all")]
        corpus: CorpusArg,
        /// The chat the search serves: citations are hidden in group and channel chats, and
        /// with the QMD backend memory.qmd.scope decides whether results are shown.
        #[arg(long, value_enum, default_value = "direct")]
        chat_type: ChatTypeArg,
        /// The chat's channel (telegram, discord, …), for memory.qmd.scope.
        #[arg(long, value_name = "NAME")]
        channel: Option<String>,
        /// The session key, for memory.qmd.scope's keyPrefix rules.
        #[arg(long, value_name = "KEY")]
        session_key: Option<String>,
        /// Print the memory_search tool payload verbatim.
        #[arg(long)]
        json: bool,
    },
    /// Read lines of a memory file (the memory_get tool).
    Get {
        /// A memory file relative to the workspace, or a citation as `search` prints it
        /// (`memory/x.md#L3-L8`, `memory/x.md:3-8`).
        path: String,
        /// First line (1-based).
        #[arg(long, value_name = "LINE")]
        from: Option<i64>,
        /// Number of lines.
        #[arg(long, value_name = "N")]
        lines: Option<i64>,
        /// Print the memory_get tool payload verbatim.
        #[arg(long)]
        json: bool,
    },
    /// Show the agent directory, index identity, counts and warnings.
    Status {
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Keep the index fresh in the foreground: watch the workspace (and sessions) and print
    /// one line per sync, until Ctrl-C or SIGTERM.
    Watch,
    /// Serve memory_search and memory_get over the Model Context Protocol (stdio), with a
    /// warm model and a live sync per agent (repeat --agent to serve several).
    Mcp,
    /// Show the chunks memoria makes of one Markdown file.
    Chunks {
        /// The file, relative to the workspace like `get` (or absolute); `-` reads stdin.
        file: PathBuf,
        /// Print the chunks as a JSON array (lines, hash, length).
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout: `memoria man > memoria.1`.
    Man,
    /// Append a note to today's daily log, memory/YYYY-MM-DD.md (created with its heading):
    /// the only write memoria makes to memory files, for agents without file tools.
    Append {
        /// The text to append (`-` reads stdin); it may start with `-` (a list item).
        #[arg(allow_hyphen_values = true)]
        text: String,
        /// The day's log to append to, YYYY-MM-DD (default: today, local time).
        #[arg(long, value_name = "DATE")]
        date: Option<String>,
        /// Print {"path", "startLine", "endLine"}.
        #[arg(long)]
        json: bool,
    },
    /// What a session reads at start: today's and yesterday's daily logs, and MEMORY.md in a
    /// private (main) session only.
    Context {
        /// A private main session: MEMORY.md too (never in group or channel chats).
        #[arg(long)]
        private: bool,
        /// Print {"files": [{"path", "text"}]}.
        #[arg(long)]
        json: bool,
    },
    /// Whether the agent runtime should run the pre-compaction memory flush now, and its
    /// prompts: once per compaction cycle per session (SPEC §9).
    FlushPlan {
        /// Tokens in the session's context now.
        #[arg(long, value_name = "N")]
        session_tokens: u64,
        /// The model's context window, in tokens.
        #[arg(long, value_name = "N")]
        context_window: u64,
        /// Compactions the session has been through (its current cycle).
        #[arg(long, value_name = "N", default_value_t = 0)]
        compaction_count: u64,
        /// The session; flushes are tracked per session.
        #[arg(long, value_name = "KEY", default_value = "main")]
        session_key: String,
        /// Print {"flush", "reason", "threshold", "systemPrompt", "prompt"}.
        #[arg(long)]
        json: bool,
    },
    /// Check the config, workspace, embedder and model files, index, lock and live sync,
    /// and say what to do about each problem (exit 1 when a check fails).
    Doctor,
    /// Where the local embedding model comes from, or download it.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
    /// Embed JSONL {"text": …} lines from stdin; writes {"embedding": […], "tokens": n}.
    Embed {
        /// Embed as search queries or as documents (chunks): each has its own prompt.
        #[arg(long, value_enum, default_value = "document")]
        kind: KindArg,
        /// Matryoshka output size: 768 (full), 512, 256 or 128.
        #[arg(long)]
        dim: Option<usize>,
    },
    /// Measure retrieval quality on evaluation data.
    Eval {
        /// A LoCoMo-style memory workspace dir (workspace/ + queries.jsonl), or a dir of them.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["corpus"])]
        locomo: Option<PathBuf>,
        /// BEIR corpus.jsonl (each document one file under memory/).
        #[arg(long, value_name = "FILE", requires_all = ["queries", "qrels"])]
        corpus: Option<PathBuf>,
        /// BEIR queries.jsonl.
        #[arg(long, value_name = "FILE")]
        queries: Option<PathBuf>,
        /// BEIR qrels TSV.
        #[arg(long, value_name = "FILE")]
        qrels: Option<PathBuf>,
        /// Retrieval mode(s) to measure.
        #[arg(long, value_enum, default_value = "all")]
        mode: EvalModeArg,
        /// Print the metrics as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ModelAction {
    /// Print the model directory (or GGUF file) that would be used, and why.
    Path,
    /// Download a model into the Hugging Face cache (needs network; google/embeddinggemma-300m
    /// needs an accepted Gemma licence on huggingface.co and HF_TOKEN).
    Pull {
        /// The Hugging Face repository, or `owner/repo/file.gguf` for one GGUF file (such as
        /// ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf, OpenClaw's).
        /// Default: what `local.modelPath` names when it is an `hf:` URI, else
        /// google/embeddinggemma-300m.
        repo: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum CorpusArg {
    All,
    Memory,
    Sessions,
}

#[derive(Clone, Copy, ValueEnum)]
enum ChatTypeArg {
    Direct,
    Group,
    Channel,
}

#[derive(Clone, Copy, ValueEnum)]
enum KindArg {
    Query,
    Document,
}

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
    if let Some(precision) = cli.precision {
        // Before any thread starts: the model loader (and `mcp`'s agents) read it from here.
        std::env::set_var(memoria::gemma::PRECISION_VAR, precision.as_str());
    }
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", describe(&err));
            exit_code(&err)
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

/// Exit codes: 0 success, 1 error, 2 usage error (clap's), 3 index busy (another process
/// is writing; nothing was done, try again later).
/// Exit codes (documented in the README): 0 success, 1 error, 2 usage (clap), 3 index
/// busy, 4 not found.
const EXIT_BUSY: u8 = 3;
const EXIT_NOT_FOUND: u8 = 4;

/// True when `path` (a `memory_get` path) names a file that exists: a memory file or
/// extra path under the workspace, or a session transcript.
fn memory_file_exists(memory: &Memory, path: &str) -> bool {
    let settings = memory.settings();
    match (path.strip_prefix("sessions/"), settings.sessions_dir()) {
        (Some(name), Some(dir)) => dir.join(name).is_file(),
        _ => settings.workspace.join(path).is_file(),
    }
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

/// The one agent of a command that serves one.
fn single_agent(cli: &Cli) -> Result<&str> {
    match cli.agent.as_slice() {
        [agent] => Ok(agent),
        // clap replaces the default with the first --agent, so this is two or more.
        _ => bail!("only `memoria mcp` serves several agents: give one --agent"),
    }
}

fn settings(cli: &Cli) -> Result<Settings> {
    settings_for(cli, single_agent(cli)?)
}

fn settings_for(cli: &Cli, agent: &str) -> Result<Settings> {
    let settings = load_config(cli, &env_for(cli)?, agent)?;
    apply_overrides(cli, settings)
}

/// The config's settings for `agent`: the file `env` names, or standard input for
/// `--config -` (read once per process).
fn load_config(
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
fn one_stdin(cli: &Cli) -> Result<()> {
    let config = cli.config.as_deref() == Some(Path::new("-"));
    let dash = |p: &Option<PathBuf>| p.as_deref() == Some(Path::new("-"));
    let command = match &cli.command {
        Command::Mcp => 1,
        Command::Embed { .. } => 1,
        Command::Search { queries, .. } => usize::from(dash(queries)),
        Command::Chunks { file, .. } => usize::from(file == Path::new("-")),
        Command::Append { text, .. } => usize::from(text == "-"),
        Command::Eval {
            corpus,
            queries,
            qrels,
            ..
        } => [corpus, queries, qrels]
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

/// The process environment with --state-dir and --config applied.
fn env_for(cli: &Cli) -> Result<Env> {
    let mut env = Env::from_process();
    if let Some(dir) = &cli.state_dir {
        env.state_dir = Some(absolute(dir)?);
    }
    if let Some(file) = &cli.config {
        env.config_path = Some(absolute(file)?);
    }
    Ok(env)
}

/// --workspace and --provider over the configured settings.
fn apply_overrides(cli: &Cli, mut settings: Settings) -> Result<Settings> {
    if let Some(ws) = &cli.workspace {
        settings.workspace = absolute(ws)?;
        settings.workspace_origin = "--workspace".into();
    } else if settings.workspace.is_relative() {
        settings.workspace = absolute(&settings.workspace)?;
    }
    if let Some(provider) = cli.provider {
        settings.provider = match provider {
            ProviderArg::Auto => ProviderKind::Auto,
            ProviderArg::None => ProviderKind::None,
            ProviderArg::Local => ProviderKind::Local,
            ProviderArg::Openai => ProviderKind::OpenAi,
            ProviderArg::Gemini => ProviderKind::Gemini,
            ProviderArg::Voyage => ProviderKind::Voyage,
            ProviderArg::Mistral => ProviderKind::Mistral,
            ProviderArg::Ollama => ProviderKind::Ollama,
        };
    }
    Ok(settings)
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("{}: invalid path", path.display()))
}

fn run(cli: Cli) -> Result<ExitCode> {
    one_stdin(&cli)?;
    // `mcp` reads one config per agent it serves.
    if let Command::Mcp = cli.command {
        return mcp_command(&cli);
    }
    // `doctor` reports a config that does not load instead of stopping at it.
    if let Command::Doctor = cli.command {
        return doctor::doctor(&cli, single_agent(&cli)?);
    }
    let settings = settings(&cli)?;
    match &cli.command {
        Command::Mcp => mcp_command(&cli),
        Command::Doctor => doctor::doctor(&cli, single_agent(&cli)?),
        Command::Watch => watch_command(open_memory(&cli, settings)?),
        Command::Index { force } => index(open_memory(&cli, settings)?, *force),
        Command::Model { action } => model_command(&cli, &settings, action),
        Command::Embed { kind, dim } => embed_command(&cli, &settings, *kind, *dim),
        Command::Search {
            query,
            queries,
            max_results,
            min_score,
            corpus,
            chat_type,
            channel,
            session_key,
            json,
        } => {
            let memory = open_memory(&cli, settings)?;
            let options = SearchOptions {
                max_results: *max_results,
                min_score: *min_score,
                corpus: match corpus {
                    CorpusArg::All => Corpus::All,
                    CorpusArg::Memory => Corpus::Memory,
                    CorpusArg::Sessions => Corpus::Sessions,
                },
                chat: memoria::config::Chat {
                    chat_type: match chat_type {
                        ChatTypeArg::Direct => memoria::config::ChatType::Direct,
                        ChatTypeArg::Group => memoria::config::ChatType::Group,
                        ChatTypeArg::Channel => memoria::config::ChatType::Channel,
                    },
                    channel: channel.clone(),
                    session_key: session_key.clone(),
                },
            };
            match (query, queries) {
                (_, Some(file)) => search_batch(&memory, file, &options),
                (Some(query), None) => search_one(&memory, query, &options, *json),
                (None, None) => bail!("give a QUERY or --queries FILE"),
            }
        }
        Command::Get {
            path,
            from,
            lines,
            json,
        } => {
            let memory = open_memory(&cli, settings)?;
            let (path, from, lines) = match citation(path) {
                Some(_) if from.is_some() || lines.is_some() => {
                    bail!("{path} names a line range already: drop --from/--lines, or the range")
                }
                Some((file, start, count)) => (file, Some(start), Some(count)),
                None => (path.as_str(), *from, *lines),
            };
            let payload = memory.memory_get(path, from, lines);
            // The tool reads a missing file as empty (OpenClaw's behaviour); the command says
            // so and exits 4, so a script can tell "empty" from "not there".
            let missing = payload.error.is_none() && !memory_file_exists(&memory, path);
            if *json {
                println!("{}", serde_json::to_string(&payload)?);
            } else if let Some(error) = &payload.error {
                eprintln!("error: {error}");
                return Ok(ExitCode::from(1));
            } else {
                print!("{}", payload.text);
                if !payload.text.is_empty() && !payload.text.ends_with('\n') {
                    println!();
                }
            }
            if missing {
                eprintln!("{path}: no such memory file");
                return Ok(ExitCode::from(EXIT_NOT_FOUND));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Status { json } => {
            let status = open_memory(&cli, settings)?.status()?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                println!("agent        {}", status.agent_id);
                println!("agent dir    {}", status.agent_dir);
                println!("workspace    {}", status.workspace);
                if !status.extra_paths.is_empty() {
                    println!("extra paths  {}", status.extra_paths.join(", "));
                }
                match status.generation {
                    Some(generation) => println!("generation   {generation}"),
                    None => println!("generation   (none yet)"),
                }
                println!("files        {}", status.files);
                println!("chunks       {}", status.chunks);
                println!("bytes        {}", status.bytes);
                println!(
                    "chunking     {} tokens, {} overlap; sources {}",
                    status.identity.chunk_tokens,
                    status.identity.chunk_overlap,
                    status.identity.sources.join(",")
                );
                if let Some(qmd) = &status.qmd {
                    println!(
                        "backend      qmd ({}; now answering: {}); collections {}",
                        qmd.command,
                        qmd.serving,
                        qmd.collections.join(",")
                    );
                }
                println!(
                    "mode         {} (provider {})",
                    status.mode, status.provider
                );
                if let Some(fallback) = &status.fallback {
                    println!("fallback     from {}: {}", fallback.from, fallback.reason);
                }
                if let Some(embedding) = &status.embedding {
                    let model = status.model.as_deref().unwrap_or("?");
                    let vectors = status.vectors.unwrap_or(0);
                    let device = embedding
                        .device
                        .as_deref()
                        .map_or(String::new(), |d| format!(" on {d}"));
                    println!(
                        "model        {model} ({} dims){device}; {vectors} vectors",
                        embedding.dims
                    );
                    if let Some(source) = &embedding.key_source {
                        println!("api key      from {source}");
                    }
                    if let Some(batch) = &embedding.batch {
                        println!(
                            "batch API    {batch}; {} job(s) pending, {} chunk(s) waiting",
                            embedding.batch_jobs, embedding.awaiting_batch
                        );
                    }
                    if let Some(error) = &embedding.last_error {
                        println!("embed error  {error}");
                    }
                }
                println!(
                    "fresh        {}",
                    if status.dirty {
                        "no: the workspace changed since the last sync"
                    } else {
                        "yes"
                    }
                );
                match &status.live {
                    Some(live) => {
                        let state = match live.watcher {
                            WatcherState::Watching => "watching",
                            WatcherState::Polling => "polling",
                            WatcherState::Off => "watcher off",
                        };
                        let mut line =
                            format!("{state} (process {}, {} syncs", live.pid, live.syncs);
                        if let Some(at) = live.last_sync_at {
                            line.push_str(&format!(", last at unix {at}"));
                        }
                        line.push(')');
                        if let Some(reason) = &live.reason {
                            line.push_str(&format!(": {reason}"));
                        }
                        println!("live         {line}");
                        if let Some(error) = &live.last_sync_error {
                            println!("live error   {error}");
                        }
                    }
                    None => println!(
                        "live         no live sync (`memoria mcp` or `memoria watch` keep the \
                         index fresh)"
                    ),
                }
                for warning in &status.warnings {
                    println!("warning      {warning}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Append { text, date, json } => {
            let text = match text.as_str() {
                "-" => std::io::read_to_string(std::io::stdin()).context("reading stdin")?,
                text => text.to_string(),
            };
            let date = date.clone().unwrap_or_else(mcp::today);
            let memory =
                Memory::open_with(settings, EmbedderChoice::FromSettings { model_dir: None })?;
            let appended = memory.append(&text, &date)?;
            if *json {
                println!("{}", serde_json::to_string(&appended)?);
            } else {
                println!(
                    "appended to {}#L{}-L{}",
                    appended.path, appended.start_line, appended.end_line
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Context { private, json } => {
            let memory =
                Memory::open_with(settings, EmbedderChoice::FromSettings { model_dir: None })?;
            let files = mcp::session_context(&memory, *private);
            if *json {
                println!("{}", serde_json::json!({ "files": files }));
            } else {
                for file in &files {
                    println!(
                        "## {}\n\n{}",
                        file["path"].as_str().unwrap_or(""),
                        file["text"].as_str().unwrap_or("").trim_end()
                    );
                }
                if files.is_empty() {
                    println!(
                        "no daily log for today or yesterday{}",
                        if *private { ", and no MEMORY.md" } else { "" }
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::FlushPlan {
            session_tokens,
            context_window,
            compaction_count,
            session_key,
            json,
        } => {
            let today = mcp::today();
            let memory =
                Memory::open_with(settings, EmbedderChoice::FromSettings { model_dir: None })?;
            let plan = memory.flush_plan(
                session_key,
                (*session_tokens, *context_window, *compaction_count),
                &today,
            )?;
            if *json {
                println!("{}", serde_json::to_string(&plan)?);
            } else {
                println!("flush        {}", if plan.flush { "yes" } else { "no" });
                println!("reason       {}", plan.reason);
                println!("system       {}", plan.system_prompt);
                println!("prompt       {}", plan.prompt);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                *shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "memoria",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Man => {
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut std::io::stdout())
                .context("writing the man page")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Chunks { file, json } => {
            let (file, (text, lossy)) = if file == Path::new("-") {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)
                    .context("reading stdin")?;
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let lossy = std::str::from_utf8(&bytes).is_err();
                (PathBuf::from("<stdin>"), (text, lossy))
            } else {
                let file = settings.workspace.join(file);
                let read = memoria::read_text(&file)?;
                (file, read)
            };
            let file = &file;
            if lossy {
                eprintln!(
                    "warning: {}: invalid UTF-8 replaced with U+FFFD",
                    file.display()
                );
            }
            let params = ChunkParams {
                tokens: settings.chunking.tokens,
                overlap: settings.chunking.overlap,
            };
            let chunks = chunk_markdown(&text, params);
            let rows: Vec<serde_json::Value> = chunks
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "startLine": c.start_line, "endLine": c.end_line,
                        "hash": c.hash, "chars": c.text.encode_utf16().count(),
                    })
                })
                .collect();
            if *json {
                println!("{}", serde_json::to_string(&rows)?);
            } else {
                println!(
                    "{}: {} (budget {} chars, overlap {} chars)",
                    file.display(),
                    count(chunks.len() as u64, "chunk"),
                    params.max_chars(),
                    params.overlap_chars()
                );
                for c in &chunks {
                    println!(
                        "  L{}-L{}  {:>5} chars  {}",
                        c.start_line,
                        c.end_line,
                        c.text.encode_utf16().count(),
                        &c.hash[..12]
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Eval {
            locomo,
            corpus,
            queries,
            qrels,
            mode,
            json,
        } => {
            // `-` (one of them): standard input, kept as a file named by its content so the
            // eval cache (keyed by path) stays right.
            let from_stdin = |path: &PathBuf| -> Result<PathBuf> {
                if path != Path::new("-") {
                    return Ok(path.clone());
                }
                let text = std::io::read_to_string(std::io::stdin()).context("reading stdin")?;
                let dir = settings.state_dir.join("eval");
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let file = dir.join(format!(
                    "stdin-{}.txt",
                    &memoria::sha256_hex(text.as_bytes())[..16]
                ));
                std::fs::write(&file, text)
                    .with_context(|| format!("writing {}", file.display()))?;
                Ok(file)
            };
            let beir = match (corpus, queries, qrels) {
                (Some(c), Some(q), Some(r)) => {
                    Some((from_stdin(c)?, from_stdin(q)?, from_stdin(r)?))
                }
                _ => None,
            };
            let beir = beir
                .as_ref()
                .map(|(c, q, r)| (c.as_path(), q.as_path(), r.as_path()));
            run_eval(&cli, &settings, locomo.as_deref(), beir, *mode, *json)
        }
    }
}

fn open_memory(cli: &Cli, settings: Settings) -> Result<Memory> {
    let model_dir = cli.model.as_deref().map(absolute).transpose()?;
    Ok(Memory::open_with(
        settings,
        EmbedderChoice::FromSettings { model_dir },
    )?)
}

fn model_search(cli: &Cli, settings: &Settings) -> Result<memoria::gemma::ModelSearch> {
    Ok(memoria::gemma::ModelSearch::from_process(
        cli.model.as_deref().map(absolute).transpose()?,
        settings.local.model_path.clone(),
        settings.local.model_cache_dir.as_ref().map(PathBuf::from),
    ))
}

fn model_command(cli: &Cli, settings: &Settings, action: &ModelAction) -> Result<ExitCode> {
    match action {
        ModelAction::Path => match memoria::gemma::resolve_model(&model_search(cli, settings)?) {
            Ok(location) => {
                println!("{}", location.dir.display());
                eprintln!("from {}", location.reason);
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => {
                eprintln!("{err}");
                Ok(ExitCode::from(1))
            }
        },
        ModelAction::Pull { repo } => {
            let search = model_search(cli, settings)?;
            let Some(cache) = search.pull_cache() else {
                bail!("no Hugging Face cache: set HF_HOME or local.modelCacheDir");
            };
            let configured = settings.local.model_path.as_deref();
            let repo = match (repo, configured.and_then(|p| p.strip_prefix("hf:"))) {
                (Some(repo), _) => repo.as_str(),
                (None, Some(uri)) => uri,
                (None, None) => memoria::gemma::DEFAULT_REPO,
            };
            eprintln!("downloading {repo} into {}", cache.display());
            let dir = memoria::gemma::pull(repo, cache)?;
            println!("{}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn embed_command(
    cli: &Cli,
    settings: &Settings,
    kind: KindArg,
    dim: Option<usize>,
) -> Result<ExitCode> {
    let location = memoria::gemma::resolve_model(&model_search(cli, settings)?)?;
    let (embedder, device) = memoria::embed::load_local_on(&location.dir)
        .with_context(|| format!("{}: cannot load the model", location.dir.display()))?;
    // Which device and precision produced the vectors (stdout carries only the vectors).
    eprintln!("memoria: model on {device}");
    if let Some(dim) = dim {
        if !memoria::gemma::MATRYOSHKA_DIMS.contains(&dim) || dim > embedder.dims() {
            bail!("--dim {dim}: choose one of 768, 512, 256, 128");
        }
    }
    let kind = match kind {
        KindArg::Query => memoria::embed::EmbedKind::Query,
        KindArg::Document => memoria::embed::EmbedKind::Document,
    };
    let mut texts = Vec::new();
    for (i, line) in std::io::stdin().lock().lines().enumerate() {
        let line = line.with_context(|| format!("stdin: line {}", i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("stdin: line {}: invalid JSON", i + 1))?;
        let Some(text) = record.get("text").and_then(|t| t.as_str()) else {
            bail!("stdin: line {}: missing string \"text\"", i + 1);
        };
        texts.push(text.to_string());
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for batch in texts.chunks(64) {
        let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
        for embedding in embedder.embed(&refs, kind)? {
            if embedding.truncated {
                eprintln!(
                    "warning: an input was longer than {} tokens and was truncated",
                    embedder.max_tokens()
                );
            }
            let mut vector = embedding.vector;
            if let Some(dim) = dim {
                memoria::gemma::truncate_dims(&mut vector, dim);
            }
            let line = serde_json::json!({"embedding": vector, "tokens": embedding.tokens});
            writeln!(out, "{line}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn index(memory: Memory, force: bool) -> Result<ExitCode> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} indexing [{bar:30}] {bytes}/{total_bytes} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let report = memory.sync(force, &|p| match p {
        SyncProgress::Files {
            files_done,
            files_total,
            bytes_done,
            bytes_total,
        } => {
            bar.set_length(bytes_total);
            bar.set_position(bytes_done);
            bar.set_message(format!("{files_done}/{files_total} files"));
        }
        SyncProgress::Embedding {
            chunks_done,
            chunks_total,
        } => {
            if bar.length() != Some(chunks_total as u64) {
                // From bytes to chunks: restart the position, rate and ETA (the bar said
                // `74802/76 chunks 0.001/s` when it kept the byte count).
                bar.reset();
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} embedding [{bar:30}] {pos}/{len} chunks {per_sec} eta {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar.set_length(chunks_total as u64);
            }
            bar.set_position(chunks_done as u64);
        }
    })?;
    bar.finish_and_clear();
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    let skipped = match report.warnings.len() {
        0 => String::new(),
        1 => ", 1 warning (above; `memoria status` lists it)".to_string(),
        n => format!(", {n} warnings (above; `memoria status` lists them)"),
    };
    println!(
        "indexed {} ({} changed, {} removed), {} in {:.2}s{}{skipped} → {}",
        count(report.files as u64, "file"),
        report.indexed,
        report.removed,
        count(report.chunks, "chunk"),
        report.seconds,
        if report.rebuilt {
            " (new generation)"
        } else {
            ""
        },
        memory.agent_root().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `memoria watch`: the live sync in the foreground, one line per event.
fn watch_command(memory: Memory) -> Result<ExitCode> {
    let memory = std::sync::Arc::new(memory);
    let live = memory.start_live(|event| eprintln!("{}", live_line(event)))?;
    let runtime = runtime()?;
    runtime.block_on(shutdown_signal())?;
    stop_live(&runtime, vec![live])
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

/// `n noun` or `n nouns`.
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A citation as `search` prints it, `path#L3-L8` / `path#L3` / `path:3-8` / `path:3`, as
/// (path, first line, number of lines); `None` for a plain path.
fn citation(text: &str) -> Option<(&str, i64, i64)> {
    let (path, range) = match text.rsplit_once("#L") {
        Some((path, range)) => (path, range.replacen("-L", "-", 1)),
        None => {
            let (path, range) = text.rsplit_once(':')?;
            (path, range.to_string())
        }
    };
    if !path.ends_with(".md") {
        return None;
    }
    let (start, end) = match range.split_once('-') {
        Some((start, end)) => (start.parse::<i64>().ok()?, end.parse::<i64>().ok()?),
        None => {
            let line = range.parse::<i64>().ok()?;
            (line, line)
        }
    };
    (start >= 1 && end >= start).then_some((path, start, end - start + 1))
}

/// `memoria mcp`: one memory and one live sync per agent, served over stdio until the client
/// closes the stream, Ctrl-C or SIGTERM.
fn mcp_command(cli: &Cli) -> Result<ExitCode> {
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
        let settings = settings_for(cli, id).with_context(|| format!("agent {id}"))?;
        let memory =
            std::sync::Arc::new(open_memory(cli, settings).with_context(|| format!("agent {id}"))?);
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

/// One log line for a live-sync event.
fn live_line(event: &LiveEvent) -> String {
    let now = clock();
    match event {
        LiveEvent::Synced(report) => {
            let mut line = format!(
                "{now} synced: {} ({} changed, {} removed), {}",
                count(report.files as u64, "file"),
                report.indexed,
                report.removed,
                count(report.chunks, "chunk")
            );
            if report.embedded + report.cached > 0 {
                line.push_str(&format!(
                    ", {} embedded, {} reused",
                    report.embedded, report.cached
                ));
            }
            line.push_str(&format!(" in {:.2}s", report.seconds));
            if report.deferred > 0 {
                line.push_str(&format!(
                    "; {} transcript(s) below sync.sessions thresholds wait",
                    report.deferred
                ));
            }
            if let Some(error) = &report.embed_error {
                line.push_str(&format!("; embedding failed: {error}"));
            }
            for warning in &report.warnings {
                line.push_str(&format!("\n{now} warning: {warning}"));
            }
            line
        }
        LiveEvent::Failed(error) => format!("{now} sync failed (retrying with backoff): {error}"),
        LiveEvent::Busy => {
            format!("{now} index busy: another process is writing; retrying in 2 s")
        }
        LiveEvent::Watcher(status) => {
            let state = match status.watcher {
                WatcherState::Watching => "watching",
                WatcherState::Polling => "polling",
                WatcherState::Off => "off",
            };
            let mut line = format!("{now} watcher {state}");
            if !status.roots.is_empty() {
                line.push_str(&format!(": {}", status.roots.join(", ")));
            }
            if let Some(reason) = &status.reason {
                line.push_str(&format!(" ({reason})"));
            }
            line
        }
    }
}

/// The time of day in UTC, `HH:MM:SSZ` (no time-zone database is read).
fn clock() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let day = secs % 86_400;
    format!("{:02}:{:02}:{:02}Z", day / 3600, day % 3600 / 60, day % 60)
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

fn search_one(
    memory: &Memory,
    query: &str,
    options: &SearchOptions,
    json: bool,
) -> Result<ExitCode> {
    let payload = memory.memory_search(query, options);
    if json {
        println!("{}", serde_json::to_string(&payload)?);
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(error) = &payload.error {
        eprintln!("error: {error}");
        return Ok(ExitCode::from(1));
    }
    match (&payload.warning, payload.results.is_empty()) {
        (Some(why), true) => println!("no results: {why}"),
        (None, true) => println!("no results"),
        (Some(why), false) => eprintln!("warning: {why}"),
        (None, false) => {}
    }
    for (i, result) in payload.results.iter().enumerate() {
        println!(
            "{}. {}:{}-{}  score {:.3}",
            i + 1,
            result.path,
            result.start_line,
            result.end_line,
            result.score
        );
        let preview: String = result
            .snippet
            .lines()
            .take(4)
            .collect::<Vec<_>>()
            .join("\n   ");
        println!("   {preview}");
    }
    let mode = payload.mode.as_deref().unwrap_or("?");
    let provider = payload.provider.as_deref().unwrap_or("?");
    eprintln!("mode {mode} (provider {provider})");
    if let Some(fallback) = &payload.fallback {
        eprintln!("fallback from {}: {}", fallback.from, fallback.reason);
    }
    Ok(ExitCode::SUCCESS)
}

fn search_batch(memory: &Memory, file: &Path, options: &SearchOptions) -> Result<ExitCode> {
    let reader: Box<dyn BufRead> = if file == Path::new("-") {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(file)
                .with_context(|| format!("{}: cannot open", file.display()))?,
        ))
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (i, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{}: line {}", file.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("{}: line {}: invalid JSON", file.display(), i + 1))?;
        let Some(query) = record.get("query").and_then(|q| q.as_str()) else {
            bail!(
                "{}: line {}: missing string \"query\"",
                file.display(),
                i + 1
            );
        };
        let mut payload = serde_json::to_value(memory.memory_search(query, options))?;
        if let (Some(object), Some(id)) = (payload.as_object_mut(), record.get("id")) {
            object.insert("id".into(), id.clone());
        }
        writeln!(out, "{}", serde_json::to_string(&payload)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EvalModeArg {
    Bm25,
    Vector,
    Hybrid,
    All,
}

fn run_eval(
    cli: &Cli,
    settings: &Settings,
    locomo: Option<&Path>,
    beir: Option<(&Path, &Path, &Path)>,
    mode: EvalModeArg,
    json: bool,
) -> Result<ExitCode> {
    let modes: Vec<eval::EvalMode> = match mode {
        EvalModeArg::Bm25 => vec![eval::EvalMode::Bm25],
        EvalModeArg::Vector => vec![eval::EvalMode::Vector],
        EvalModeArg::Hybrid => vec![eval::EvalMode::Hybrid],
        EvalModeArg::All => vec![
            eval::EvalMode::Bm25,
            eval::EvalMode::Vector,
            eval::EvalMode::Hybrid,
        ],
    };
    // Load the embedder once and share it across every workspace and mode.
    let probe = open_memory(cli, settings.clone())?;
    let embedder = probe.embedder().cloned();
    let (provider, model) = probe.provider();
    let (provider, model) = (provider.to_string(), model.unwrap_or_default().to_string());
    drop(probe);
    let open = |settings: Settings| -> memoria::Result<Memory> {
        match (&embedder, settings.provider) {
            (Some(embedder), p) if p != ProviderKind::None => Memory::open_with(
                settings,
                EmbedderChoice::Given {
                    embedder: embedder.clone(),
                    provider: provider.clone(),
                    model: model.clone(),
                },
            ),
            _ => Memory::open(settings),
        }
    };
    // Persistent scratch space: a re-run reuses its indexes and embedding cache.
    let eval_root = settings.state_dir.join("eval");
    let mut results = Vec::new();
    for mode in modes {
        if mode != eval::EvalMode::Bm25 && embedder.is_none() {
            eprintln!("skipping {}: no embedding model available", mode.as_str());
            continue;
        }
        let settings = mode.apply(settings.clone());
        let mut these = Vec::new();
        if let Some(dir) = locomo {
            let dirs = eval::memory_workspaces(dir)?;
            if dirs.is_empty() {
                bail!(
                    "{}: no queries.jsonl here or in its subdirectories",
                    dir.display()
                );
            }
            for dir in &dirs {
                let name = dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                let scratch = eval_root.join(format!("locomo-{name}"));
                these.push(eval::eval_memory_workspace(
                    dir, &settings, &open, &scratch,
                )?);
            }
        } else if let Some((corpus, queries, qrels)) = beir {
            let absolute = absolute(corpus)?;
            let tag = &memoria::sha256_hex(absolute.to_string_lossy().as_bytes())[..12];
            let scratch = eval_root.join(format!("beir-{tag}"));
            these.push(eval::eval_beir(
                corpus, queries, qrels, &settings, &open, &scratch,
            )?);
        } else {
            bail!("give --locomo DIR, or --corpus, --queries and --qrels");
        }
        if these.len() > 1 {
            these.push(pooled(&these));
        }
        for m in &mut these {
            m.mode = mode.as_str().to_string();
        }
        results.extend(these);
    }
    for m in &results {
        if json {
            println!("{}", serde_json::to_string(m)?);
            continue;
        }
        let recall: Vec<String> = m
            .recall
            .iter()
            .map(|(k, v)| format!("recall@{k} {v:.3}"))
            .collect();
        let ndcg = m
            .ndcg10
            .map(|v| format!("nDCG@10 {v:.3}  "))
            .unwrap_or_default();
        println!(
            "{:<7} {:<10} {:>5} queries  {ndcg}{}  MRR {:.3}  no result {}",
            m.mode,
            m.name,
            m.queries,
            recall.join("  "),
            m.mrr,
            m.empty
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Question-weighted totals over several sets.
fn pooled(results: &[eval::Metrics]) -> eval::Metrics {
    let total: usize = results.iter().map(|m| m.queries).sum();
    let weight = |f: &dyn Fn(&eval::Metrics) -> f64| {
        results.iter().map(|m| f(m) * m.queries as f64).sum::<f64>() / total.max(1) as f64
    };
    let recall = results[0]
        .recall
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (*k, weight(&|m| m.recall[i].1)))
        .collect();
    eval::Metrics {
        name: "all".into(),
        mode: String::new(),
        queries: total,
        recall,
        mrr: weight(&|m| m.mrr),
        ndcg10: None,
        empty: results.iter().map(|m| m.empty).sum(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn citation_table() {
        let cases = [
            ("memory/x.md#L3-L8", Some(("memory/x.md", 3, 6))),
            ("memory/x.md#L3", Some(("memory/x.md", 3, 1))),
            ("memory/x.md:3-8", Some(("memory/x.md", 3, 6))),
            ("memory/x.md:3", Some(("memory/x.md", 3, 1))),
            ("MEMORY.md#L1-L17", Some(("MEMORY.md", 1, 17))),
            ("memory/x.md", None),
            ("memory/x.md#L8-L3", None),
            ("memory/x.md#L0", None),
            ("memory/x.md:abc", None),
            ("memory/x.txt:3", None),
            ("C:/notes/x.md", None),
        ];
        for (text, want) in cases {
            assert_eq!(super::citation(text), want, "{text}");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(super::count(0, "chunk"), "0 chunks");
        assert_eq!(super::count(1, "chunk"), "1 chunk");
        assert_eq!(super::count(2, "file"), "2 files");
    }
}
