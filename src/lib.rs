//! # memoria
//!
//! An embedded search engine for AI agents' Markdown memory, compatible with OpenClaw's
//! `memory_search` / `memory_get` tools. One agent directory per agent holds a BM25 index
//! (tantivy, with a multilingual analyzer), the chunks' EmbeddingGemma vectors (exact scan,
//! or an HNSW graph past 10k chunks) and an embedding cache; searches are hybrid when an
//! embedder is available and say in every payload what served them and why anything fell
//! back. Chunk line ranges, scores and the tool JSON are OpenClaw's.
//!
//! ```no_run
//! use memoria::{Memory, SearchOptions};
//!
//! # fn main() -> memoria::Result<()> {
//! // A workspace of Markdown notes, an index under the state directory
//! // (<state>/memory/main/), and the local EmbeddingGemma model (a directory in the
//! // sentence-transformers layout, or a GGUF file). Leave out `model` to look for it
//! // where memoria does, and search by keywords when there is none (the answer says so).
//! let memory = Memory::builder()
//!     .workspace("/home/me/notes")
//!     .state_dir("/home/me/.local/state/memoria")
//!     .model("/home/me/models/embeddinggemma-300m")
//!     .open()?;
//! // Index the workspace: chunk, embed new chunks (cached), commit a generation.
//! let report = memory.sync(false, &|_progress| {})?;
//! println!("{} files, {} chunks", report.files, report.chunks);
//! // The `memory_search` tool: ranked chunks with path, line range, score and snippet,
//! // plus the mode (`hybrid`, `fts-only`, `vector-only`) and any fallback with its reason.
//! let payload = memory.memory_search("what did we decide about the database?", &SearchOptions::default());
//! println!("{}", serde_json::to_string_pretty(&payload).unwrap());
//! // The `memory_get` tool: lines 10..20 of a memory file.
//! let lines = memory.memory_get("MEMORY.md", Some(10), Some(10));
//! println!("{}", lines.text);
//! # Ok(()) }
//! ```
//!
//! An OpenClaw user's memory, as OpenClaw's config describes it (`$OPENCLAW_CONFIG_PATH` or
//! `~/.openclaw/openclaw.json`: workspace, `memorySearch`, API keys):
//!
//! ```no_run
//! # fn main() -> memoria::Result<()> {
//! let memory = memoria::Memory::builder().openclaw_config().agent("main").open()?;
//! # Ok(()) }
//! ```
//!
//! `docs/ARCHITECTURE.md` has the module map and the invariants; [`Memory`] is the façade
//! the CLI uses, and the types re-exported here, with the public modules, are the whole
//! public API.

#![deny(missing_docs)]

mod analyzer;
mod annotation;
pub mod append;
mod atomic;
mod builder;
mod chunk;
mod clock;
mod codec;
pub mod config;
mod digest;
pub mod embed;
mod error;
pub mod eval;
mod fallback;
pub mod flush;
mod freshness;
pub mod gemma;
mod index;
#[cfg(feature = "fleet")]
mod lance;
mod live;
mod migrate;
mod passage;
mod payload;
pub mod project;
mod qmd;
mod recall;
mod search;
mod simd;
mod status;
mod store;
mod sync;
mod title;
mod transcript;
mod transcript_search;
mod wiki;
mod workspace;

use std::path::Path;
use std::sync::Arc;

use config::Settings;
use freshness::Agent;

pub use builder::MemoryBuilder;
pub use chunk::{Chunk, ChunkParams};
pub use embed::{EmbedError, EmbedKind, Embedder, EmbedderChoice, Embedding};
pub use error::{Error, Result};
pub use fallback::Fallback;
pub use live::{LiveEvent, LiveStatus, LiveSync, WatcherState};
pub use migrate::MigrateReport;
pub use payload::{GetPayload, SearchPayload, SearchResult};
pub use qmd::QmdStatus;
pub use search::{
    Candidate, Candidates, Corpus, Hit, Mode, Provenance, Recall, SearchOptions, SearchResponse,
    Served, Superseded, WikiPage,
};
pub use status::{EmbeddingStatus, Status};
pub use store::{Identity, StoreCache};
pub use sync::{SyncProgress, SyncReport};
pub use transcript_search::{SessionHit, SessionsSearchPayload};

/// Internals that the benches and the integration tests use directly; not part of the
/// API, and they may change in any release.
#[doc(hidden)]
pub mod internals {
    pub use crate::analyzer::{terms, AnalyzerMode};
    pub use crate::chunk::chunk_markdown;
    pub use crate::embed::cosine;
    pub use crate::index::vector::{VectorIndex, VectorParams};
    pub use crate::index::WriterLock;
    pub use crate::store::FORMAT_VERSION;
    pub use crate::transcript::{redact, transcript, Transcript};

    /// Takes `memory`'s writer lock, as another process's sync would hold it.
    pub fn hold_writer_lock(memory: &crate::Memory) -> crate::Result<WriterLock> {
        memory.agent.dir().lock_writer()
    }
}

/// One agent's memory: configuration, workspace and agent directory.
///
/// **Threading.** `Memory` is `Send + Sync`: share it between threads behind an `Arc`.
/// - Searches, `memory_get` and `status` run concurrently and never wait for a sync.
/// - [`Memory::sync`] takes the agent directory's writer lock, so one sync runs at a time
///   across processes and a second fails at once with [`Error::IndexBusy`].
/// - The first call that needs the embedder loads it (seconds for the local model); calls
///   that need it meanwhile wait for that one load. Every `Memory` of a process that uses
///   the same local model directory shares one loaded copy.
/// - Without a live sync, a search first syncs a changed workspace itself (as the CLI
///   does, `sync.onSearch`). With one ([`Memory::start_live`]), syncs run on the live
///   sync's thread and a search answers at once from the last committed index.
///
/// The work is done below: `freshness` (when to sync), `recall` (who answers a query),
/// `payload` (the tools' JSON), `status` (what `status` reports).
pub struct Memory {
    agent: Arc<Agent>,
}

impl Memory {
    /// The common ways to open a memory, one call each: a workspace, a state directory, a
    /// model, OpenClaw's config or none (see [`MemoryBuilder`]).
    pub fn builder() -> MemoryBuilder {
        MemoryBuilder::default()
    }

    /// Opens the agent directory named by `settings` (creating it if needed); the embedder
    /// is resolved from the settings when first needed.
    pub fn open(settings: Settings) -> Result<Memory> {
        Self::open_with(
            settings,
            EmbedderChoice::FromSettings {
                model_dir: None,
                precision: None,
            },
        )
    }

    /// Like [`Memory::open_with`], for a look at the memory (what `status` and `doctor`
    /// do): a remote embedding provider is probed once, within 2 s, rather than retried as
    /// indexing and searching do, so an offline look answers at once (and says why the
    /// provider did not serve).
    pub fn open_to_look(settings: Settings, choice: EmbedderChoice) -> Result<Memory> {
        Ok(Memory {
            agent: Arc::new(Agent::open_to_look(settings, choice)?),
        })
    }

    /// Like [`Memory::open`] with an explicit embedder choice.
    pub fn open_with(settings: Settings, choice: EmbedderChoice) -> Result<Memory> {
        Ok(Memory {
            agent: Arc::new(Agent::open(settings, choice)?),
        })
    }

    /// The resolved settings this memory was opened with.
    pub fn settings(&self) -> &Settings {
        self.agent.settings()
    }

    /// The agent directory (`<stateDir>/memory/<agentId>`).
    pub fn agent_root(&self) -> &Path {
        self.agent.dir().root()
    }

    /// Whether a sync could run now: takes the writer lock and releases it at once.
    /// [`Error::IndexBusy`] when another process holds it; another error when the agent
    /// directory cannot be written.
    pub fn can_sync(&self) -> Result<()> {
        self.agent.store().writer().map(drop)
    }

    /// The embedding provider and model serving searches (`"none"` when keyword-only).
    pub fn provider(&self) -> (&str, Option<&str>) {
        let resolved = self.agent.resolved();
        (&resolved.provider, resolved.model.as_deref())
    }

    /// The embedder in use, if any (loads it on first call).
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.agent.resolved().embedder.as_ref()
    }

    /// The embedder in use (loading it on first call), or
    /// [`Error::ModelUnavailable`] with why the configured one cannot serve.
    pub fn require_embedder(&self) -> Result<&Arc<dyn Embedder>> {
        self.agent.resolved().require()
    }

    /// The index identity under the current settings and embedder.
    pub fn identity(&self) -> Identity {
        self.agent.identity()
    }

    /// Brings the index up to date with the workspace (a full rebuild into a new generation
    /// when `force` or when the identity changed), embedding new chunks when an embedder is
    /// available. Fails with [`Error::IndexBusy`] when another process is writing.
    pub fn sync(&self, force: bool, progress: &dyn Fn(SyncProgress)) -> Result<SyncReport> {
        self.agent.sync(force, progress)
    }

    /// Starts keeping this memory fresh in the background (see [`LiveSync`] and the
    /// `live` module docs): a sync now when `sync.onSessionStart` (or no index exists), on
    /// file-system events debounced by `sync.watchDebounceMs` when `sync.watch`, every
    /// `sync.intervalMinutes`, and when a search finds the workspace changed while not
    /// watching. It also loads the embedder at once, so that the first search finds it
    /// loaded. `on_event` hears every sync, failure and watcher change (on the live sync's
    /// thread). Fails with [`Error::AlreadyLive`] if a live sync already runs.
    pub fn start_live(&self, on_event: impl Fn(&LiveEvent) + Send + 'static) -> Result<LiveSync> {
        self.agent.start_live(Box::new(on_event))
    }

    /// Searches memory: the ranked hits and what served them (SPEC §5).
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<SearchResponse> {
        recall::search(&self.agent, query, options)
    }

    /// The `memory_search` tool: never fails, errors become the SPEC §6 error payload.
    pub fn memory_search(&self, query: &str, options: &SearchOptions) -> SearchPayload {
        recall::memory_search(&self.agent, query, options)
    }

    /// The `memory_get` tool (SPEC §6): whole file, or `lines` lines from line `from`.
    pub fn memory_get(&self, path: &str, from: Option<i64>, lines: Option<i64>) -> GetPayload {
        self.memory_get_in(Corpus::Memory, path, from, lines)
    }

    /// `memory_get` with its `corpus`: `wiki` reads a memory-wiki page (by vault path, file
    /// name or `id`; 200 lines of its body by default), `all` a memory file when there is
    /// one by that path and the wiki page otherwise, `memory` (and `sessions`) as
    /// [`memory_get`](Self::memory_get).
    pub fn memory_get_in(
        &self,
        corpus: Corpus,
        path: &str,
        from: Option<i64>,
        lines: Option<i64>,
    ) -> GetPayload {
        payload::memory_get_in(
            self.settings(),
            self.agent.collections(),
            corpus,
            path,
            from,
            lines,
            &|indexed| recall::stored_file(&self.agent, indexed),
        )
    }

    /// The `sessions_search` tool: exact full-text search over the agent's session
    /// transcripts, message by message, read where OpenClaw writes them (whether or not
    /// session memory indexes them); `limit` hits, 10 by default, 25 at most.
    pub fn sessions_search(&self, query: &str, limit: Option<usize>) -> SessionsSearchPayload {
        transcript_search::search_dir(&self.settings().transcripts_dir(), query, limit)
    }

    /// Appends `text` to the daily log `memory/<date>.md` (created with its heading), the
    /// one write memoria makes to memory files; see [`append`]. The index is
    /// synced right after, so the note is searchable at once (unless another sync holds the
    /// index: that one, or the watcher, picks it up).
    pub fn append(&self, text: &str, date: &str) -> Result<append::Appended> {
        if let Some(err) = self.agent.workspace_missing() {
            return Err(err);
        }
        let workspace = &self.settings().workspace;
        // Complete any append a crash interrupted first (see `append`).
        append::recover(workspace)?;
        let appended = append::append(workspace, text, date)?;
        self.agent.sync_after_append();
        Ok(appended)
    }

    /// What a session reads at start (`memoria context`, the `memory_context` tool):
    /// `MEMORY.md` first when `private` (a private main session, never a group chat), then
    /// the daily logs `memory/<day>.md` of `days` (`YYYY-MM-DD`, oldest first); only the
    /// files that exist.
    pub fn context(&self, days: &[String], private: bool) -> Vec<GetPayload> {
        let paths = private
            .then(|| "MEMORY.md".to_string())
            .into_iter()
            .chain(days.iter().map(|day| format!("memory/{day}.md")));
        paths
            .filter(|path| self.settings().workspace.join(path).is_file())
            .map(|path| self.memory_get(&path, None, None))
            .filter(|payload| payload.error.is_none())
            .collect()
    }

    /// The pre-compaction memory flush decision for session `key` (SPEC §9): `session` is
    /// (session tokens, context window, compaction count), `today` the user's date
    /// (`YYYY-MM-DD`). Once per compaction cycle: a flush decided is recorded.
    pub fn flush_plan(
        &self,
        key: &str,
        session: (u64, u64, u64),
        today: &str,
    ) -> Result<flush::FlushPlan> {
        flush::plan_session(self.settings(), self.agent.dir(), key, session, today)
    }

    /// The chunks the index makes of `text` as the workspace file `path` (a relative path:
    /// `MEMORY.md` and `USER.md` are cut per entry under OpenClaw's semantics), with their
    /// line ranges and hashes: what `memoria chunks` shows, to see how a note is cut.
    pub fn chunks(&self, path: &str, text: &str) -> Vec<Chunk> {
        let settings = self.settings();
        let params = ChunkParams {
            tokens: settings.chunking.tokens,
            overlap: settings.chunking.overlap,
        };
        let curated = ["MEMORY.md", "USER.md"].contains(&path);
        match settings.semantics.is_openclaw() {
            true if curated => chunk::chunk_entries(text, params),
            true => chunk::chunk_markdown_openclaw(text, params),
            false => chunk::chunk_markdown(text, params),
        }
    }

    /// The agent directory's state.
    pub fn status(&self) -> Result<Status> {
        status::status(&self.agent)
    }

    /// Copies the committed index to the store `to` names (a local agent directory into
    /// fleet mode's LanceDB, or back), as it is: nothing re-chunked or re-embedded. The
    /// memory keeps using its own store; open it with the other to use the copy.
    pub fn migrate_store(&self, to: &config::StoreBackend) -> Result<MigrateReport> {
        migrate::migrate(&self.agent, to)
    }
}
