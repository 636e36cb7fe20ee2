//! `memoria mcp`: the `memory_search`, `memory_get`, `memory_append`, `memory_context` and
//! `memory_status` tools over the Model Context Protocol (stdio, JSON-RPC), with the
//! official SDK (`rmcp`).
//! Each tool's input schema and argument parsing come from one type (`tool_args`).
//!
//! One process serves one or more agents (`--agent` repeated). Each agent is one
//! [`Memory`] with its own live sync (watcher, interval, session start); all of them share
//! one loaded embedding model. `initialize` answers at once: the live syncs load the model
//! in the background, and a search that arrives before it is loaded waits for that load
//! (it never silently answers keyword-only).
//!
//! A tool result carries the SPEC §6 payload twice: as `structuredContent`, and as its one
//! text item, which is byte for byte the line `memoria search --json` / `get --json` prints.
//! Bad arguments and unknown tools are JSON-RPC errors (`invalid_params`) naming the key; a
//! search or read that fails is a result with `isError: true` and the SPEC error payload.
//! Stdout carries only the protocol; logs go to stderr.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};

use memoria::Memory;

use crate::daily::{session_context, today};
use crate::tool_args::{
    self, AppendArgs, ContextArgs, GetArgs, SearchArgs, SessionsSearchArgs, StatusArgs,
};

/// One served agent.
#[derive(Clone)]
pub struct Agent {
    pub id: String,
    pub memory: Arc<Memory>,
}

/// The MCP server: the tools over the served agents (the first is the default).
#[derive(Clone)]
pub struct Server {
    agents: Arc<Vec<Agent>>,
}

const SEARCH: &str = "memory_search";
const GET: &str = "memory_get";
const APPEND: &str = "memory_append";
const CONTEXT: &str = "memory_context";
const STATUS: &str = "memory_status";
const SESSIONS: &str = "sessions_search";

impl Server {
    pub fn new(agents: Vec<Agent>) -> Server {
        Server {
            agents: Arc::new(agents),
        }
    }

    /// The tools, with their input schemas (from their argument types, [`tool_args`]).
    /// `agent` is offered only when the server serves more than one agent (it is accepted
    /// either way).
    fn tools(&self) -> Vec<Tool> {
        let agent_ids: Vec<&str> = self.agents.iter().map(|a| a.id.as_str()).collect();
        let agent = (agent_ids.len() > 1).then(|| {
            json!({
                "type": "string",
                "enum": agent_ids,
                "description": format!("Which agent's memory (default: {}).", agent_ids[0]),
            })
        });
        let schema = |mut schema: JsonObject| {
            if let (Some(agent), Some(Value::Object(properties))) =
                (&agent, schema.get_mut("properties"))
            {
                properties.insert("agent".into(), agent.clone());
            }
            schema
        };
        let read_only = ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false);
        vec![
            Tool::new(
                SEARCH,
                "Search the agent's memory (MEMORY.md, memory/*.md, extra paths and, when enabled, \
                 session transcripts): hybrid semantic + keyword search over ~400-token chunks. \
                 Returns path, line range, score and snippet per hit; read more with memory_get.",
                schema(tool_args::schema::<SearchArgs>()),
            )
            .annotate(read_only.clone()),
            Tool::new(
                GET,
                "Read a memory file, or `lines` lines of it from line `from` (1-based).",
                schema(tool_args::schema::<GetArgs>()),
            )
            .annotate(read_only.clone()),
            Tool::new(
                APPEND,
                "Append a note to the daily log memory/YYYY-MM-DD.md (created with its heading), \
                 for agents without file tools: adds to the end, never rewrites. Returns the \
                 path and line range; memory_search finds it after the next sync.",
                schema(tool_args::schema::<AppendArgs>()),
            )
            .annotate(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(false),
            ),
            Tool::new(
                CONTEXT,
                "What a session reads at start: today's and yesterday's daily logs, and MEMORY.md \
                 when `private` is true (a private main session only).",
                schema(tool_args::schema::<ContextArgs>()),
            )
            .annotate(read_only.clone()),
            Tool::new(
                SESSIONS,
                "Search past session transcripts for the user or assistant message that said \
                 something: exact words (every word must occur, whole words, case and accents \
                 ignored; CJK anywhere). Returns the session, JSONL line, role and a snippet \
                 per message, newest session first on ties.",
                schema(tool_args::schema::<SessionsSearchArgs>()),
            )
            .annotate(read_only.clone()),
            Tool::new(
                STATUS,
                "The state of the agent's memory index, as `memoria status --json` prints it \
                 from this process: files, chunks, mode, provider and model, fallback, dirty, \
                 last sync, the live sync's watcher, warnings. For runtimes that show memory \
                 health; agents rarely need it.",
                schema(tool_args::schema::<StatusArgs>()),
            )
            .annotate(read_only),
        ]
    }

    /// The memory of the agent named (the first agent's when none is).
    fn memory(&self, agent: Option<&str>) -> Result<Arc<Memory>, McpError> {
        let Some(id) = agent else {
            return Ok(self.agents[0].memory.clone());
        };
        match self.agents.iter().find(|a| a.id == id) {
            Some(agent) => Ok(agent.memory.clone()),
            None => {
                let served: Vec<&str> = self.agents.iter().map(|a| a.id.as_str()).collect();
                Err(invalid(format!(
                    "`agent`: this server does not serve {id:?} (it serves {})",
                    served.join(", ")
                )))
            }
        }
    }

    async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        let arguments = arguments.unwrap_or_default();
        match name {
            SEARCH => {
                let args: SearchArgs = parse(&arguments)?;
                let memory = self.memory(args.agent.as_deref())?;
                let (query, options) = args.into_search();
                let payload = blocking(move || memory.memory_search(&query, &options)).await?;
                result(&payload, payload.error.is_some())
            }
            GET => {
                let args: GetArgs = parse(&arguments)?;
                let memory = self.memory(args.agent.as_deref())?;
                let get = args.into_get().map_err(invalid)?;
                let payload = blocking(move || {
                    memory.memory_get_in(get.corpus, &get.path, get.from, get.lines)
                })
                .await?;
                // A wiki page not found is an answer (`status: "not_found"`), not a failure.
                let failed = payload.error.is_some() && payload.wiki.is_none();
                result(&payload, failed)
            }
            APPEND => {
                let args: AppendArgs = parse(&arguments)?;
                let memory = self.memory(args.agent.as_deref())?;
                let date = args.date.unwrap_or_else(today);
                let text = args.text;
                match blocking(move || memory.append(&text, &date)).await? {
                    Ok(appended) => result(&appended, false),
                    Err(memoria::Error::Rejected { message }) => Err(invalid(message)),
                    Err(err) => result(&json!({"error": err.to_string()}), true),
                }
            }
            CONTEXT => {
                let args: ContextArgs = parse(&arguments)?;
                let memory = self.memory(args.agent.as_deref())?;
                let private = args.private();
                let files = blocking(move || session_context(&memory, private)).await?;
                result(&json!({ "files": files }), false)
            }
            SESSIONS => {
                let args: SessionsSearchArgs = parse(&arguments)?;
                let memory = self.memory(args.agent.as_deref())?;
                let limit = args.limit.map(|n| n.0);
                let query = args.query;
                let payload = blocking(move || memory.sessions_search(&query, limit)).await?;
                result(&payload, payload.error.is_some())
            }
            STATUS => {
                let args: StatusArgs = parse(&arguments)?;
                let memory = self.memory(args.agent.as_deref())?;
                match blocking(move || memory.status()).await? {
                    Ok(status) => result(&status, false),
                    Err(err) => result(&json!({"error": err.to_string()}), true),
                }
            }
            other => Err(invalid(format!(
                "unknown tool {other:?}: this server has {SEARCH}, {GET}, {APPEND}, {CONTEXT}, \
                 {SESSIONS} and {STATUS}"
            ))),
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("memoria", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Agent memory. Call memory_search before answering questions about prior work, \
                 decisions, dates, people, preferences or todos; then memory_get to read the \
                 lines a hit cites. memory_append keeps a note in today's daily log.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(&request.name, request.arguments)
            .await
            .map(CallToolResponse::from)
    }
}

/// Serves `server` on stdin/stdout until the client closes the stream or `shutdown`
/// resolves.
pub async fn serve(
    server: Server,
    shutdown: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    use anyhow::Context;
    // Listening for the signal from the start: one during the handshake stops the server
    // as gracefully as one after it.
    tokio::pin!(shutdown);
    let running = tokio::select! {
        running = server.serve(rmcp::transport::stdio()) => {
            running.context("MCP initialisation failed")?
        }
        signal = &mut shutdown => return signal,
    };
    tokio::select! {
        quit = running.waiting() => {
            let quit = quit.context("the MCP server task failed")?;
            tracing::info!("MCP client went away: {quit:?}");
        }
        signal = shutdown => signal?,
    }
    Ok(())
}

/// A tool result: the payload as structured content and as its one text item, the same
/// bytes the CLI's `--json` prints.
fn result(payload: &impl serde::Serialize, is_error: bool) -> Result<CallToolResult, McpError> {
    let text = serde_json::to_string(payload)
        .map_err(|err| McpError::internal_error(format!("serialising the payload: {err}"), None))?;
    let value = serde_json::to_value(payload)
        .map_err(|err| McpError::internal_error(format!("serialising the payload: {err}"), None))?;
    let mut result = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(value);
    Ok(result)
}

/// Runs library work (searches load indexes, embed queries, read files) off the protocol
/// task.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, McpError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| McpError::internal_error(format!("the tool call failed: {err}"), None))
}

fn invalid(message: impl Into<Cow<'static, str>>) -> McpError {
    McpError::invalid_params(message, None)
}

/// A tool call's arguments as the tool's argument type; refused as invalid params naming
/// the key.
fn parse<T: serde::de::DeserializeOwned>(arguments: &JsonObject) -> Result<T, McpError> {
    tool_args::parse(arguments).map_err(invalid)
}
