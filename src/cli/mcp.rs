//! `memoria mcp`: the `memory_search`, `memory_get` and `memory_append` tools over the Model Context Protocol
//! (stdio, JSON-RPC), with the official SDK (`rmcp`).
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

use memoria::config::{Chat, ChatType};
use memoria::{Corpus, Memory, SearchOptions};

use crate::daily::{session_context, today};

/// One served agent.
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

impl Server {
    pub fn new(agents: Vec<Agent>) -> Server {
        Server {
            agents: Arc::new(agents),
        }
    }

    /// The two tools, with their JSON input schemas. `agent` is offered only when the
    /// server serves more than one agent (it is accepted either way).
    fn tools(&self) -> Vec<Tool> {
        let agent_ids: Vec<&str> = self.agents.iter().map(|a| a.id.as_str()).collect();
        let agent = (agent_ids.len() > 1).then(|| {
            json!({
                "type": "string",
                "enum": agent_ids,
                "description": format!("Which agent's memory (default: {}).", agent_ids[0]),
            })
        });
        let mut search = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to recall, in natural language or keywords."},
                "maxResults": {"type": "integer", "minimum": 1, "description": "Results to return (default: query.maxResults, 6)."},
                "minScore": {"type": "number", "minimum": 0, "maximum": 1, "description": "Lowest score returned (default: query.minScore, 0.35)."},
                "corpus": {"type": "string", "enum": ["memory", "sessions", "all"], "description": "Which sources to search (default: every enabled source)."},
                "chatType": {"type": "string", "enum": ["direct", "group", "channel"], "description": "The chat this search serves (default: direct). Citations are hidden in group and channel chats; with the QMD backend, memory.qmd.scope decides whether results are shown."},
                "channel": {"type": "string", "description": "The chat's channel (telegram, discord, …), for memory.qmd.scope."},
                "sessionKey": {"type": "string", "description": "The session key, for memory.qmd.scope's keyPrefix rules."},
            },
            "required": ["query"],
            "additionalProperties": false,
        });
        let mut get = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "A memory file, relative to the workspace (MEMORY.md, memory/…), as memory_search cites it."},
                "from": {"type": "integer", "minimum": 1, "description": "First line, 1-based (default: the whole file)."},
                "lines": {"type": "integer", "minimum": 1, "description": "Number of lines from `from`."},
            },
            "required": ["path"],
            "additionalProperties": false,
        });
        let mut append = json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The note to keep: a line or a few (Markdown)."},
                "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "description": "The daily log to append to, YYYY-MM-DD (default: today, local time)."},
            },
            "required": ["text"],
            "additionalProperties": false,
        });
        let mut context = json!({
            "type": "object",
            "properties": {
                "private": {"type": "boolean", "description": "A private main session: MEMORY.md too (never in group or channel chats; default false)."},
            },
            "additionalProperties": false,
        });
        if let Some(agent) = agent {
            search["properties"]["agent"] = agent.clone();
            get["properties"]["agent"] = agent.clone();
            append["properties"]["agent"] = agent.clone();
            context["properties"]["agent"] = agent;
        }
        let read_only = ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false);
        let context_tool = Tool::new(
            CONTEXT,
            "What a session reads at start: today's and yesterday's daily logs, and MEMORY.md \
             when `private` is true (a private main session only).",
            object(context),
        )
        .annotate(read_only.clone());
        vec![
            Tool::new(
                SEARCH,
                "Search the agent's memory (MEMORY.md, memory/*.md, extra paths and, when enabled, \
                 session transcripts): hybrid semantic + keyword search over ~400-token chunks. \
                 Returns path, line range, score and snippet per hit; read more with memory_get.",
                object(search),
            )
            .annotate(read_only.clone()),
            Tool::new(
                GET,
                "Read a memory file, or `lines` lines of it from line `from` (1-based).",
                object(get),
            )
            .annotate(read_only),
            Tool::new(
                APPEND,
                "Append a note to the daily log memory/YYYY-MM-DD.md (created with its heading), \
                 for agents without file tools: adds to the end, never rewrites. Returns the \
                 path and line range; memory_search finds it after the next sync.",
                object(append),
            )
            .annotate(
                ToolAnnotations::new()
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(false),
            ),
            context_tool,
        ]
    }

    fn agent(&self, args: &Args) -> Result<&Agent, McpError> {
        match args.string("agent")? {
            None => Ok(&self.agents[0]),
            Some(id) => self.agents.iter().find(|a| a.id == id).ok_or_else(|| {
                let served: Vec<&str> = self.agents.iter().map(|a| a.id.as_str()).collect();
                invalid(format!(
                    "`agent`: this server does not serve {id:?} (it serves {})",
                    served.join(", ")
                ))
            }),
        }
    }

    async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, McpError> {
        let args = Args(arguments.unwrap_or_default());
        match name {
            SEARCH => {
                args.only(&[
                    "query",
                    "maxResults",
                    "minScore",
                    "corpus",
                    "chatType",
                    "channel",
                    "sessionKey",
                    "agent",
                ])?;
                let query = args
                    .string("query")?
                    .ok_or_else(|| invalid("`query` is required"))?
                    .to_string();
                let options = SearchOptions {
                    max_results: args.positive("maxResults")?,
                    min_score: args.fraction("minScore")?,
                    corpus: args
                        .choice("corpus", Corpus::parse, "memory, sessions or all")?
                        .unwrap_or(Corpus::All),
                    chat: Chat {
                        chat_type: args
                            .choice("chatType", ChatType::parse, "direct, group or channel")?
                            .unwrap_or_default(),
                        channel: args.string("channel")?.map(str::to_string),
                        session_key: args.string("sessionKey")?.map(str::to_string),
                    },
                };
                let memory = self.agent(&args)?.memory.clone();
                let payload = blocking(move || memory.memory_search(&query, &options)).await?;
                result(&payload, payload.error.is_some())
            }
            GET => {
                args.only(&["path", "from", "lines", "agent"])?;
                let path = args
                    .string("path")?
                    .ok_or_else(|| invalid("`path` is required"))?
                    .to_string();
                let from = args.positive("from")?.map(|n| n as i64);
                let lines = args.positive("lines")?.map(|n| n as i64);
                let memory = self.agent(&args)?.memory.clone();
                let payload = blocking(move || memory.memory_get(&path, from, lines)).await?;
                result(&payload, payload.error.is_some())
            }
            APPEND => {
                args.only(&["text", "date", "agent"])?;
                let text = args
                    .string("text")?
                    .ok_or_else(|| invalid("`text` is required"))?
                    .to_string();
                let date = args.string("date")?.map_or_else(today, str::to_string);
                let memory = self.agent(&args)?.memory.clone();
                match blocking(move || memory.append(&text, &date)).await? {
                    Ok(appended) => result(&appended, false),
                    Err(memoria::Error::Rejected { message }) => Err(invalid(message)),
                    Err(err) => result(&json!({"error": err.to_string()}), true),
                }
            }
            CONTEXT => {
                args.only(&["private", "agent"])?;
                let private = match args.present("private") {
                    None => false,
                    Some(value) => value
                        .as_bool()
                        .ok_or_else(|| invalid("`private`: expected true or false"))?,
                };
                let memory = self.agent(&args)?.memory.clone();
                let files = blocking(move || session_context(&memory, private)).await?;
                result(&json!({ "files": files }), false)
            }
            other => Err(invalid(format!(
                "unknown tool {other:?}: this server has {SEARCH}, {GET}, {APPEND} and {CONTEXT}"
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
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .context("MCP initialisation failed")?;
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

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// A tool call's arguments, read key by key so that every error names its key.
struct Args(JsonObject);

impl Args {
    /// Refuses keys outside `known`.
    fn only(&self, known: &[&str]) -> Result<(), McpError> {
        match self.0.keys().find(|key| !known.contains(&key.as_str())) {
            Some(key) => Err(invalid(format!(
                "unknown argument `{key}` (expected {})",
                known.join(", ")
            ))),
            None => Ok(()),
        }
    }

    fn present(&self, key: &str) -> Option<&Value> {
        self.0.get(key).filter(|value| !value.is_null())
    }

    fn string(&self, key: &str) -> Result<Option<&str>, McpError> {
        match self.present(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(invalid(format!("`{key}`: expected a string, got {other}"))),
        }
    }

    /// One of the names `parse` accepts (`expected` lists them for the error).
    fn choice<T>(
        &self,
        key: &str,
        parse: fn(&str) -> Option<T>,
        expected: &str,
    ) -> Result<Option<T>, McpError> {
        self.string(key)?
            .map(|name| {
                parse(name)
                    .ok_or_else(|| invalid(format!("`{key}`: expected {expected}, got {name:?}")))
            })
            .transpose()
    }

    /// A whole number ≥ 1 (JSON `3` or `3.0`).
    fn positive(&self, key: &str) -> Result<Option<usize>, McpError> {
        let Some(value) = self.present(key) else {
            return Ok(None);
        };
        let number = value.as_f64().filter(|n| n.fract() == 0.0 && *n >= 1.0);
        match number {
            Some(n) if n <= u32::MAX as f64 => Ok(Some(n as usize)),
            _ => Err(invalid(format!(
                "`{key}`: expected a whole number of at least 1, got {value}"
            ))),
        }
    }

    /// A number in 0..=1.
    fn fraction(&self, key: &str) -> Result<Option<f64>, McpError> {
        let Some(value) = self.present(key) else {
            return Ok(None);
        };
        match value.as_f64().filter(|n| (0.0..=1.0).contains(n)) {
            Some(n) => Ok(Some(n)),
            None => Err(invalid(format!(
                "`{key}`: expected a number from 0 to 1, got {value}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: Value) -> Args {
        Args(object(value))
    }

    /// Arguments, the key read, and the number or the error message.
    type Case = (Value, &'static str, Result<Option<usize>, &'static str>);

    #[test]
    fn argument_table() {
        let cases: &[Case] = &[
            (json!({}), "maxResults", Ok(None)),
            (json!({"maxResults": null}), "maxResults", Ok(None)),
            (json!({"maxResults": 3}), "maxResults", Ok(Some(3))),
            (json!({"maxResults": 3.0}), "maxResults", Ok(Some(3))),
            (
                json!({"maxResults": 0}),
                "maxResults",
                Err("`maxResults`: expected a whole number of at least 1, got 0"),
            ),
            (
                json!({"maxResults": 2.5}),
                "maxResults",
                Err("`maxResults`: expected a whole number of at least 1, got 2.5"),
            ),
            (
                json!({"maxResults": "3"}),
                "maxResults",
                Err("`maxResults`: expected a whole number of at least 1, got \"3\""),
            ),
            (
                json!({"maxResults": -1}),
                "maxResults",
                Err("`maxResults`: expected a whole number of at least 1, got -1"),
            ),
        ];
        for (input, key, expected) in cases {
            let got = args(input.clone())
                .positive(key)
                .map_err(|e| e.message.to_string());
            assert_eq!(got, expected.map_err(str::to_string), "{input}");
        }
        assert_eq!(
            args(json!({"minScore": 0.5})).fraction("minScore").ok(),
            Some(Some(0.5))
        );
        assert!(args(json!({"minScore": 1.5})).fraction("minScore").is_err());
        assert!(args(json!({"query": 7})).string("query").is_err());
        let err = args(json!({"query": "x", "limit": 3}))
            .only(&["query", "maxResults"])
            .err()
            .map(|e| e.message.to_string());
        assert_eq!(
            err.as_deref(),
            Some("unknown argument `limit` (expected query, maxResults)")
        );
    }
}
