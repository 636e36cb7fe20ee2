//! The command line: clap's types for the global options and each command's arguments.
//! Choices are the library's own enums ([`plain`]); the search options are checked by the
//! types the MCP tool uses ([`Count`], [`Fraction`]).

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};

use memoria::config::{ChatType, ProviderKind, Ranking};
use memoria::embed::EmbedKind;
use memoria::eval::EvalMode;
use memoria::gemma::Precision;
use memoria::Corpus;

use crate::tool_args::{Count, Fraction};

/// Hybrid memory search for AI agents' Markdown memory (OpenClaw-compatible).
#[derive(Parser)]
#[command(name = "memoria", version, about)]
pub struct Cli {
    /// Agent workspace (default: the configured one, else ~/.openclaw/workspace).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    pub workspace: Option<PathBuf>,
    /// State directory (default: $OPENCLAW_STATE_DIR or ~/.openclaw).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    pub state_dir: Option<PathBuf>,
    /// Agent id (`mcp` serves several: repeat it).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        default_value = "main",
        value_parser = agent_id
    )]
    pub agent: Vec<String>,
    /// OpenClaw config file (default: $OPENCLAW_CONFIG_PATH or <stateDir>/openclaw.json).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "FILE"
    )]
    pub config: Option<PathBuf>,
    /// Embedding provider; `none` searches by keyword only.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_parser = plain::<ProviderKind>()
    )]
    pub provider: Option<ProviderKind>,
    /// Local embedding model: a directory or a GGUF file (wins over $MEMORIA_MODEL_DIR and local.modelPath).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "DIR"
    )]
    pub model: Option<PathBuf>,
    /// Local model arithmetic: f32, q8, bf16 or auto (on the CPU the fastest that passes the
    /// accuracy gates here; on a GPU bf16). Wins over $MEMORIA_PRECISION.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "P",
        value_parser = parse_precision
    )]
    pub precision: Option<Precision>,
    /// Ranking: memoria's (the default) or openclaw, OpenClaw 2026.9's exactly (wins over
    /// plugins.entries.memoria.config.ranking).
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_parser = plain::<Ranking>()
    )]
    pub ranking: Option<Ranking>,
    /// Fleet mode: keep agents' indexes in LanceDB under this URI (s3://bucket/prefix or a
    /// directory), each at <URI>/<agentId>; wins over plugins.entries.memoria.config.store.uri.
    /// Needs a memoria built with the `fleet` feature.
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "URI"
    )]
    pub store_uri: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

fn parse_precision(s: &str) -> std::result::Result<Precision, String> {
    s.parse()
}

/// A library enum's names as the possible values of an option. The library's docs of its
/// variants are not the command line's help: `--help` would list them one per line.
/// `--agent`: an id that can name the agent's directory (a usage error otherwise).
fn agent_id(id: &str) -> Result<String, String> {
    memoria::config::validate_agent_id(id)
        .map(|()| id.to_string())
        .map_err(|e| e.to_string())
}

fn plain<T: ValueEnum + Clone + Send + Sync + 'static>() -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(names::<T>()).try_map(|name| T::from_str(&name, false))
}

fn names<T: ValueEnum + 'static>() -> impl Iterator<Item = PossibleValue> {
    T::value_variants()
        .iter()
        .filter_map(ValueEnum::to_possible_value)
        .map(|value| value.help(None::<&str>))
}

/// `eval --mode`: one retrieval mode, or `all` of them.
#[derive(Clone)]
pub struct Modes(pub Vec<EvalMode>);

fn modes() -> impl TypedValueParser<Value = Modes> {
    let all = PossibleValue::new("all");
    PossibleValuesParser::new(names::<EvalMode>().chain([all])).map(|name| {
        Modes(match EvalMode::from_str(&name, false) {
            Ok(mode) => vec![mode],
            Err(_) => EvalMode::value_variants().to_vec(),
        })
    })
}

#[derive(Subcommand)]
pub enum Command {
    /// Bring the index up to date with the workspace.
    Index(Index),
    /// Search memory (syncs first when the workspace changed).
    Search(Search),
    /// Read lines of a memory file (the memory_get tool).
    Get(Get),
    /// Find the past session messages that hold every word of QUERY (the sessions_search
    /// tool): exact words, case and accents ignored, CJK anywhere; transcripts are read
    /// where OpenClaw writes them.
    SessionsSearch(SessionsSearch),
    /// Show the agent directory, index identity, counts and warnings.
    Status(Status),
    /// Keep the index fresh in the foreground: watch the workspace (and sessions) and print
    /// one line per sync, until Ctrl-C or SIGTERM.
    Watch,
    /// Serve the memory tools over the Model Context Protocol (stdio): memory_search,
    /// memory_get, memory_append, memory_context, sessions_search and memory_status, with a
    /// warm model and a live sync per agent (repeat --agent to serve several).
    Mcp,
    /// Serve over HTTP: OpenAI-compatible embeddings (POST /v1/embeddings, GET /v1/models,
    /// GET /health) from the local model, and the memory tools over MCP's streamable HTTP
    /// at /mcp; one process, one loaded model, a live sync per agent.
    Serve(Serve),
    /// Show the chunks memoria makes of one Markdown file.
    Chunks(Chunks),
    /// Print the project key of the repository at or above DIR (default: the current
    /// directory), as OpenClaw names it: its origin remote's host/path, else path:<root>.
    /// Pass it to `search --project` (or MCP's activeProjectKeys).
    ProjectKey {
        /// A directory inside the repository.
        dir: Option<std::path::PathBuf>,
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
    Append(Append),
    /// What a session reads at start: today's and yesterday's daily logs, and MEMORY.md in a
    /// private (main) session only.
    Context(Context),
    /// Whether the agent runtime should run the pre-compaction memory flush now, and its
    /// prompts: once per compaction cycle per session (SPEC §9).
    FlushPlan(FlushPlan),
    /// Check the config, workspace, embedder and model files, index, lock and live sync,
    /// and say what to do about each problem (exit 1 when a check fails).
    Doctor,
    /// Where the index is kept: copy it to another store (fleet mode's LanceDB, or back).
    Store {
        #[command(subcommand)]
        action: StoreAction,
    },
    /// Where the local embedding model comes from, or download it.
    Model {
        #[command(subcommand)]
        action: ModelAction,
    },
    /// Embed JSONL {"text": …} lines from stdin; writes {"embedding": […], "tokens": n}.
    Embed(Embed),
    /// Measure retrieval quality on evaluation data.
    Eval(Eval),
}

#[derive(Args)]
pub struct Index {
    /// Rebuild everything into a new generation.
    #[arg(long)]
    pub force: bool,
}

#[derive(Args)]
pub struct Search {
    /// The query (or use --queries).
    #[arg(required_unless_present = "queries")]
    pub query: Option<String>,
    /// JSONL file of {"id": …, "query": …} (`-` reads stdin): one JSON payload line per
    /// query.
    #[arg(long, value_name = "FILE", conflicts_with = "query")]
    pub queries: Option<PathBuf>,
    /// Results to return (default: the config's query.maxResults, 6).
    #[arg(short = 'n', long, value_name = "N")]
    pub max_results: Option<Count>,
    /// Lowest score returned, 0 to 1 (default: the config's query.minScore, 0.35).
    #[arg(long, value_name = "X")]
    pub min_score: Option<Fraction>,
    /// Which sources to search: memory, sessions, wiki (the memory-wiki vault) or all
    /// (default: every enabled one).
    #[arg(long, value_parser = plain::<Corpus>(), default_value = "all")]
    pub corpus: Corpus,
    /// The chat the search serves: citations are hidden in group and channel chats, and
    /// with the QMD backend memory.qmd.scope decides whether results are shown.
    #[arg(long, value_parser = plain::<ChatType>(), default_value = "direct")]
    pub chat_type: ChatType,
    /// The chat's channel (telegram, discord, …), for memory.qmd.scope.
    #[arg(long, value_name = "NAME")]
    pub channel: Option<String>,
    /// The session key, for memory.qmd.scope's keyPrefix rules.
    #[arg(long, value_name = "KEY")]
    pub session_key: Option<String>,
    /// Keyword (BM25) scoring only, without embedding the query.
    #[arg(long)]
    pub lexical_only: bool,
    /// An active project key (repeatable, most recent first; `memoria project-key` prints
    /// a repository's): under OpenClaw 2026.9's semantics, entries tagged
    /// `<!-- project: … -->` with all their keys active rank ×1.15, other tagged ones ×0.90.
    #[arg(long = "project", value_name = "KEY")]
    pub projects: Vec<String>,
    /// Print the memory_search tool payload verbatim.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct Serve {
    /// Address to listen on (a non-loopback one needs --token).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:19433")]
    pub listen: std::net::SocketAddr,
    /// Require `Authorization: Bearer TOKEN` on every endpoint but /health.
    #[arg(long, value_name = "TOKEN", env = "MEMORIA_SERVE_TOKEN")]
    pub token: Option<String>,
}

#[derive(Args)]
pub struct SessionsSearch {
    /// The words to find.
    pub query: String,
    /// Messages to return (at most 25).
    #[arg(long, short = 'n', default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=25))]
    pub limit: u64,
    /// Print the sessions_search tool payload verbatim.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct Get {
    /// A memory file relative to the workspace, or a citation as `search` prints it
    /// (`memory/x.md#L3-L8`, `memory/x.md:3-8`).
    pub path: String,
    /// First line (1-based).
    #[arg(long, value_name = "LINE")]
    pub from: Option<i64>,
    /// Number of lines.
    #[arg(long, value_name = "N")]
    pub lines: Option<i64>,
    /// Which corpus to read: memory, wiki (a memory-wiki page by vault path, file name or
    /// id) or all (a memory file, else the wiki page).
    #[arg(long, value_parser = plain::<Corpus>(), default_value = "memory")]
    pub corpus: Corpus,
    /// Print the memory_get tool payload verbatim.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct Status {
    /// Print the status as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct Chunks {
    /// The file, relative to the workspace like `get` (or absolute); `-` reads stdin.
    pub file: PathBuf,
    /// Print the chunks as a JSON array (lines, hash, length).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct Append {
    /// The text to append (`-` reads stdin); it may start with `-` (a list item).
    #[arg(allow_hyphen_values = true)]
    pub text: String,
    /// The day's log to append to, YYYY-MM-DD (default: today, local time).
    #[arg(long, value_name = "DATE")]
    pub date: Option<String>,
    /// Print {"path", "startLine", "endLine"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct Context {
    /// A private main session: MEMORY.md too (never in group or channel chats).
    #[arg(long)]
    pub private: bool,
    /// Print {"files": [{"path", "text"}]}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct FlushPlan {
    /// Tokens in the session's context now.
    #[arg(long, value_name = "N")]
    pub session_tokens: u64,
    /// The model's context window, in tokens.
    #[arg(long, value_name = "N")]
    pub context_window: u64,
    /// Compactions the session has been through (its current cycle).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub compaction_count: u64,
    /// The session; flushes are tracked per session.
    #[arg(long, value_name = "KEY", default_value = "main")]
    pub session_key: String,
    /// Print {"flush", "reason", "threshold", "systemPrompt", "prompt"}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ModelAction {
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

#[derive(Subcommand)]
pub enum StoreAction {
    /// Copy the agent's committed index, as it is (nothing re-chunked or re-embedded), from
    /// the store in force to another: a LanceDB URI (s3://bucket/prefix or a directory;
    /// the config's store.storageOptions apply), or `local`, the agent directory. Then
    /// point the config (or --store-uri) at it.
    Migrate {
        /// The target: a URI, or `local`.
        #[arg(long, value_name = "URI|local")]
        to: String,
    },
}

#[derive(Args)]
pub struct Embed {
    /// Embed as search queries or as documents (chunks): each has its own prompt.
    #[arg(long, value_parser = plain::<EmbedKind>(), default_value = "document")]
    pub kind: EmbedKind,
    /// Matryoshka output size: 768 (full), 512, 256 or 128.
    #[arg(long)]
    pub dim: Option<usize>,
    /// Texts per call to the model (it packs each call into passes of its own width).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    /// After the vectors, one JSON line on stderr: the device, the load time and each
    /// call's texts, tokens and milliseconds (for benchmarks such as scripts/gpu-check);
    /// with MEMORIA_PROFILE=1, the time of each step of the model too.
    #[arg(long)]
    pub timings: bool,
}

#[derive(Args)]
pub struct Eval {
    /// A LoCoMo-style memory workspace dir (workspace/ + queries.jsonl), or a dir of them.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["corpus"])]
    pub locomo: Option<PathBuf>,
    /// BEIR corpus.jsonl (each document one file under memory/).
    #[arg(long, value_name = "FILE", requires_all = ["queries", "qrels"])]
    pub corpus: Option<PathBuf>,
    /// BEIR queries.jsonl.
    #[arg(long, value_name = "FILE")]
    pub queries: Option<PathBuf>,
    /// BEIR qrels TSV.
    #[arg(long, value_name = "FILE")]
    pub qrels: Option<PathBuf>,
    /// Retrieval mode(s) to measure.
    #[arg(long, value_parser = modes(), default_value = "all")]
    pub mode: Modes,
    /// Print the metrics as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write every question's fusion inputs, hits and answers to FILE (JSON lines),
    /// for scripts/fusion_replay.py.
    #[arg(long, value_name = "FILE")]
    pub candidates: Option<PathBuf>,
}

/// `memoria completions SHELL`.
pub fn completions(shell: clap_complete::Shell) {
    clap_complete::generate(
        shell,
        &mut <Cli as clap::CommandFactory>::command(),
        "memoria",
        &mut std::io::stdout(),
    );
}

/// `memoria man`.
pub fn man() -> std::io::Result<()> {
    clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut std::io::stdout())
}
