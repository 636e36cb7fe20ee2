//! `memoria serve`: one process, one loaded model, over HTTP:
//!
//! - `POST /v1/embeddings`, OpenAI's wire format: what OpenClaw's `openai-compatible`
//!   provider, the OpenAI SDKs, LangChain and LlamaIndex send to a local embedding server.
//!   Requests from every client go through one queue into the model's batches
//!   ([`Batcher`]), so sixteen clients sending one text each are served at close to batch
//!   throughput; a full queue answers 503 with `Retry-After`.
//! - `GET /v1/models`, `GET /health` (503 while the model loads, as llama-server does).
//! - `/mcp`: the memory tools of `memoria mcp` over MCP's streamable HTTP (rmcp).
//!
//! Every error body is OpenAI's `{"error": {message, type, param, code}}`, the framework's
//! own rejections (an unreadable or oversized body, an unknown route or method) included.
//! Safe by default: a loopback address unless told otherwise, a non-loopback one only with
//! a token; with a token every endpoint but `/health` wants `Authorization: Bearer`; on a
//! loopback address, `Host` and `Origin` must be local (DNS rebinding).

use std::net::SocketAddr;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use serde_json::{json, Value};

use memoria::gemma::MATRYOSHKA_DIMS;
use memoria::{EmbedKind, Embedder, Embedding};

use crate::mcp;

/// The largest request body read (4 MiB: 2,048 inputs of 2 KB, or one very long text).
const MAX_BODY: usize = 4 << 20;
/// A body over [`MAX_BODY`] is still read (and dropped) up to this, so that its client gets
/// the 413 rather than a connection closed while it sends; past it the connection closes.
const MAX_DRAINED: usize = 64 << 20;
/// Characters of one input read: far past the model's 2,048 tokens, which is where every
/// input ends (`memoria embed`'s rule); tokenizing more would only cost time.
const MAX_INPUT_CHARS: usize = 65_536;
/// The most inputs in one request (OpenAI's limit).
const MAX_INPUTS: usize = 2048;
/// Requests waiting for the model before new ones get 503.
const QUEUE: usize = 64;
/// Texts the model embeds in one call (its batches pack them by tokens).
const BATCH_TEXTS: usize = 64;

/// The names the served model answers to (the first is the one `/v1/models` lists first).
pub const MODEL_NAMES: [&str; 4] = [
    "embeddinggemma-300m",
    "google/embeddinggemma-300m",
    "embeddinggemma",
    "embeddinggemma-300m-qat-Q8_0",
];

/// What the handlers share.
pub struct Shared {
    /// The batcher, once the model has loaded.
    pub model: OnceLock<Batcher>,
    /// Why the model could not load, when it could not.
    pub load_error: OnceLock<String>,
    /// `--token`.
    pub token: Option<String>,
    /// Whether the server listens on a loopback address (then `Host` / `Origin` must be
    /// local).
    pub loopback: bool,
    /// Called before every authorised `/mcp` request: starts the agents' indexing the
    /// first time (idempotent), so a server used only for embeddings indexes nothing.
    pub on_mcp: Box<dyn Fn() + Send + Sync>,
}

/// One request's texts on their way to the model.
struct Job {
    texts: Vec<String>,
    kind: EmbedKind,
    reply: tokio::sync::oneshot::Sender<Result<Vec<Embedding>, String>>,
}

/// The queue into the model: requests from every client, embedded together.
pub struct Batcher {
    queue: SyncSender<Job>,
    dims: usize,
}

impl Batcher {
    /// Starts the model's thread: it takes the waiting requests (up to [`BATCH_TEXTS`]
    /// texts), embeds each kind's texts in one call and answers each request its share.
    pub fn start(embedder: Arc<dyn Embedder>) -> Batcher {
        let (queue, jobs) = sync_channel::<Job>(QUEUE);
        let dims = embedder.dims();
        std::thread::Builder::new()
            .name("memoria-embed".into())
            .spawn(move || run_batches(embedder.as_ref(), &jobs))
            .map(|_| ())
            .unwrap_or_else(|e| tracing::error!("cannot start the model thread: {e}"));
        Batcher { queue, dims }
    }
}

fn run_batches(embedder: &dyn Embedder, jobs: &Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        let mut texts = batch[0].texts.len();
        while texts < BATCH_TEXTS {
            match jobs.try_recv() {
                Ok(job) => {
                    texts += job.texts.len();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        for kind in [EmbedKind::Query, EmbedKind::Document] {
            let (same, rest): (Vec<Job>, Vec<Job>) =
                batch.into_iter().partition(|j| j.kind == kind);
            batch = rest;
            embed_in_rounds(embedder, kind, same);
        }
    }
}

/// A request on the model: its job and the embeddings its first texts got so far.
struct Pending {
    job: Job,
    done: Vec<Embedding>,
}

/// Embeds `jobs` (of one kind) in calls of at most [`BATCH_TEXTS`] texts, answering each
/// job when its last text is embedded. Before each call the jobs whose client went away
/// (the handler was dropped with its connection) are dropped with what they had left, so
/// abandoned requests cost the next one at most the call already running.
fn embed_in_rounds(embedder: &dyn Embedder, kind: EmbedKind, jobs: Vec<Job>) {
    let mut pending: Vec<Pending> = jobs
        .into_iter()
        .map(|job| Pending {
            job,
            done: Vec::new(),
        })
        .collect();
    loop {
        let (finished, open): (Vec<Pending>, Vec<Pending>) = pending
            .into_iter()
            .filter(|p| !p.job.reply.is_closed())
            .partition(|p| p.done.len() == p.job.texts.len());
        for p in finished {
            let _ = p.job.reply.send(Ok(p.done));
        }
        pending = open;
        if pending.is_empty() {
            return;
        }
        // The next texts of each waiting request in turn, up to one call's worth.
        let mut round: Vec<(usize, usize)> = Vec::new();
        let mut texts: Vec<&str> = Vec::new();
        for (i, p) in pending.iter().enumerate() {
            let from = p.done.len();
            let take = (p.job.texts.len() - from).min(BATCH_TEXTS - texts.len());
            texts.extend(p.job.texts[from..from + take].iter().map(String::as_str));
            round.push((i, take));
            if texts.len() == BATCH_TEXTS {
                break;
            }
        }
        match embedder.embed(&texts, kind) {
            Ok(embeddings) => {
                let mut embeddings = embeddings.into_iter();
                for (i, take) in round {
                    pending[i].done.extend(embeddings.by_ref().take(take));
                }
            }
            Err(err) => {
                // The requests of this call get the error; the others go on.
                let (failed, rest): (Vec<_>, Vec<_>) = pending
                    .into_iter()
                    .enumerate()
                    .partition(|(i, _)| round.iter().any(|&(r, _)| r == *i));
                for (_, p) in failed {
                    let _ = p.job.reply.send(Err(err.to_string()));
                }
                pending = rest.into_iter().map(|(_, p)| p).collect();
            }
        }
    }
}

/// An error as OpenAI writes it: `{"error": {message, type, param, code}}`.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// `type`.
    pub kind: &'static str,
    /// `message`.
    pub message: String,
    /// `param`.
    pub param: Option<&'static str>,
    /// `code`.
    pub code: Option<&'static str>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {
            "message": self.message, "type": self.kind, "param": self.param, "code": self.code,
        }});
        (self.status, Json(body)).into_response()
    }
}

/// An OpenAI-shaped error.
fn api_error(
    status: StatusCode,
    kind: &'static str,
    message: impl Into<String>,
    param: Option<&'static str>,
    code: Option<&'static str>,
) -> ApiError {
    ApiError {
        status,
        kind,
        message: message.into(),
        param,
        code,
    }
}

fn invalid(message: impl Into<String>, param: &'static str) -> ApiError {
    api_error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        message,
        Some(param),
        None,
    )
}

/// The router: the embeddings API, health, models, and MCP at `/mcp`.
pub fn router(shared: Arc<Shared>, mcp_server: mcp::Server) -> Router {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    // The host check is this module's (it knows the listening address); rmcp's would
    // refuse a non-loopback server's own name.
    let config = StreamableHttpServerConfig::default().disable_allowed_hosts();
    let mcp = StreamableHttpService::new(
        move || Ok(mcp_server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .nest_service("/mcp", mcp)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(shared.clone(), guard))
        .with_state(shared)
}

/// The token and the DNS-rebinding check, before every route.
async fn guard(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if shared.loopback {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("");
        if !is_local_host(host) {
            return api_error(StatusCode::FORBIDDEN, "invalid_request_error", format!("Host {host:?} is not this machine: memoria serve on a loopback address answers local names only"), None, Some("forbidden_host")).into_response();
        }
        if let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
            let host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
            if !is_local_host(host) {
                return api_error(
                    StatusCode::FORBIDDEN,
                    "invalid_request_error",
                    format!("Origin {origin:?} is not this machine"),
                    None,
                    Some("forbidden_origin"),
                )
                .into_response();
            }
        }
    }
    if let Some(token) = &shared.token {
        if request.uri().path() != "/health" && !bearer_is(headers, token) {
            return api_error(
                StatusCode::UNAUTHORIZED,
                "invalid_request_error",
                "missing or wrong Authorization: Bearer token (memoria serve --token)",
                None,
                Some("invalid_api_key"),
            )
            .into_response();
        }
    }
    if request.uri().path().starts_with("/mcp") {
        (shared.on_mcp)();
    }
    next.run(request).await
}

fn bearer_is(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| given.as_bytes() == token.as_bytes())
}

/// `localhost`, `127.0.0.1`, `[::1]`, with or without a port.
fn is_local_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host
            .rsplit_once(':')
            .map_or(host, |(name, port)| match port.parse::<u16>() {
                Ok(_) => name,
                Err(_) => host,
            }),
    };
    matches!(
        name.to_ascii_lowercase().as_str(),
        "localhost" | "127.0.0.1" | "::1"
    )
}

async fn not_found(request: Request) -> Response {
    api_error(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!("no route {} {}", request.method(), request.uri().path()),
        None,
        Some("not_found"),
    )
    .into_response()
}

async fn method_not_allowed(request: Request) -> Response {
    api_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_request_error",
        format!(
            "{} is not allowed on {}",
            request.method(),
            request.uri().path()
        ),
        None,
        Some("method_not_allowed"),
    )
    .into_response()
}

async fn health(State(shared): State<Arc<Shared>>) -> Response {
    match (shared.model.get(), shared.load_error.get()) {
        (Some(_), _) => Json(json!({"status": "ok"})).into_response(),
        (None, Some(why)) => api_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            format!("the model could not load: {why}"),
            None,
            Some("model_unavailable"),
        )
        .into_response(),
        (None, None) => {
            let mut response = api_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "the model is loading",
                None,
                Some("loading"),
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}

async fn models() -> Json<Value> {
    let data: Vec<Value> = MODEL_NAMES
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "memoria"}))
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// What a request asks for, checked.
#[derive(Debug, PartialEq)]
pub struct EmbeddingsRequest {
    /// The texts.
    pub texts: Vec<String>,
    /// The model name as asked (echoed back).
    pub model: String,
    /// `base64` rather than `float`.
    pub base64: bool,
    /// `dimensions`, when asked.
    pub dimensions: Option<usize>,
    /// Query or document (`input_type` / `task`; document when absent).
    pub kind: EmbedKind,
}

/// Reads and checks a request body; the error is OpenAI's shape.
pub fn parse_request(body: &[u8], dims: usize) -> Result<EmbeddingsRequest, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| invalid(format!("the body is not JSON: {e}"), "body"))?;
    let Some(object) = value.as_object() else {
        return Err(invalid("the body must be a JSON object", "body"));
    };
    let texts: Vec<String> = match object.get("input") {
        None | Some(Value::Null) => return Err(invalid("`input` is required", "input")),
        Some(Value::String(text)) => vec![text.clone()],
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(invalid("`input` is an empty list", "input"))
        }
        Some(Value::Array(items)) if items.len() > MAX_INPUTS => {
            return Err(invalid(
                format!(
                    "`input` has {} items; at most {MAX_INPUTS} per request",
                    items.len()
                ),
                "input",
            ))
        }
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        Some(Value::Array(items)) if items.iter().all(|i| i.is_number() || i.is_array()) => {
            return Err(invalid(
                "token arrays are not supported: send the text (memoria tokenizes it itself)",
                "input",
            ))
        }
        Some(_) => {
            return Err(invalid(
                "`input` must be a string or a list of strings",
                "input",
            ))
        }
    };
    if texts.iter().any(|t| t.is_empty()) {
        return Err(invalid("`input` has an empty string", "input"));
    }
    let texts = texts
        .into_iter()
        .map(|t| match t.char_indices().nth(MAX_INPUT_CHARS) {
            Some((byte, _)) => t[..byte].to_string(),
            None => t,
        })
        .collect();
    let model = match object.get("model") {
        Some(Value::String(model)) => model.clone(),
        None | Some(Value::Null) => return Err(invalid("`model` is required", "model")),
        Some(_) => return Err(invalid("`model` must be a string", "model")),
    };
    if !MODEL_NAMES.contains(&model.as_str()) {
        return Err(api_error(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!(
                "The model `{model}` does not exist; this server serves {}",
                MODEL_NAMES.join(", ")
            ),
            Some("model"),
            Some("model_not_found"),
        ));
    }
    let base64 = match object.get("encoding_format") {
        None | Some(Value::Null) => false,
        Some(Value::String(f)) if f == "float" => false,
        Some(Value::String(f)) if f == "base64" => true,
        Some(other) => {
            return Err(invalid(
                format!("`encoding_format` must be \"float\" or \"base64\", got {other}"),
                "encoding_format",
            ))
        }
    };
    let dimensions = match object.get("dimensions") {
        None | Some(Value::Null) => None,
        Some(n) => match n.as_u64().map(|n| n as usize) {
            Some(d) if MATRYOSHKA_DIMS.contains(&d) && d <= dims => Some(d),
            _ => {
                return Err(invalid(
                    format!("`dimensions` must be one of 768, 512, 256, 128, got {n}"),
                    "dimensions",
                ))
            }
        },
    };
    let kind = match object.get("input_type").or_else(|| object.get("task")) {
        None | Some(Value::Null) => EmbedKind::Document,
        Some(Value::String(t)) => match t.to_ascii_lowercase().as_str() {
            "query" | "search_query" | "retrieval.query" | "retrieval_query" => EmbedKind::Query,
            "passage" | "document" | "search_document" | "retrieval.passage"
            | "retrieval_document" => EmbedKind::Document,
            other => {
                return Err(invalid(
                    format!("`input_type` must be query or passage (document), got {other:?}"),
                    "input_type",
                ))
            }
        },
        Some(other) => {
            return Err(invalid(
                format!("`input_type` must be a string, got {other}"),
                "input_type",
            ))
        }
    };
    Ok(EmbeddingsRequest {
        texts,
        model,
        base64,
        dimensions,
        kind,
    })
}

async fn embeddings(State(shared): State<Arc<Shared>>, body: Body) -> Response {
    let body = match read_body(body).await {
        Ok(body) => body,
        Err(error) => return error.into_response(),
    };
    let Some(model) = shared.model.get() else {
        return health(State(shared.clone())).await;
    };
    let request = match parse_request(&body, model.dims) {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = Job {
        texts: request.texts,
        kind: request.kind,
        reply,
    };
    match model.queue.try_send(job) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            let mut response = api_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "the model's queue is full: retry shortly",
                None,
                Some("overloaded"),
            )
            .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
        Err(TrySendError::Disconnected(_)) => {
            return api_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_error",
                "the model thread stopped",
                None,
                None,
            )
            .into_response();
        }
    }
    let embeddings = match answer.await {
        Ok(Ok(embeddings)) => embeddings,
        Ok(Err(why)) => {
            return api_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                format!("embedding failed: {why}"),
                None,
                None,
            )
            .into_response()
        }
        Err(_) => {
            return api_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "the model thread stopped",
                None,
                None,
            )
            .into_response()
        }
    };
    let tokens: usize = embeddings.iter().map(|e| e.tokens).sum();
    let data: Vec<Value> = embeddings
        .into_iter()
        .enumerate()
        .map(|(index, e)| {
            let mut vector = e.vector;
            if let Some(d) = request.dimensions {
                memoria::gemma::truncate_dims(&mut vector, d);
            }
            let embedding = match request.base64 {
                true => Value::String(base64_f32(&vector)),
                false => json!(vector),
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    Json(json!({
        "object": "list",
        "data": data,
        "model": request.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
    .into_response()
}

/// The request body, at most [`MAX_BODY`] bytes (a larger one is a 413 in OpenAI's shape).
async fn read_body(mut body: Body) -> Result<Vec<u8>, ApiError> {
    use http_body_util::BodyExt;
    let mut data = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| invalid(format!("reading the body failed: {e}"), "body"))?;
        if let Ok(chunk) = frame.into_data() {
            seen += chunk.len();
            if seen <= MAX_BODY {
                data.extend_from_slice(&chunk);
            } else if seen > MAX_DRAINED {
                break;
            }
        }
    }
    match seen > MAX_BODY {
        true => Err(api_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("the body is over {MAX_BODY} bytes"),
            Some("body"),
            Some("payload_too_large"),
        )),
        false => Ok(data),
    }
}

/// The vector as OpenAI's base64: little-endian f32s.
fn base64_f32(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Whether `addr` is a loopback address.
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

#[cfg(test)]
mod tests;
