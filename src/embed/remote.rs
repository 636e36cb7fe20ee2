//! Remote embedding over HTTP (SPEC §7). Two wire formats: OpenAI's `/embeddings`, which
//! OpenAI, Mistral, Voyage (plus its `input_type`), Ollama's `/v1` and every
//! OpenAI-compatible endpoint speak (LM Studio, vLLM, a gateway, set through
//! `remote.baseUrl`); and Gemini's `batchEmbedContents` (see [`Wire`]). OpenAI's and
//! Gemini's asynchronous batch APIs are in `remote/batch_api.rs`.
//!
//! `POST {baseUrl}/embeddings` with `{"model", "input": [...]}` and `Authorization: Bearer
//! <key>`; `remote.headers` are sent too and win over memoria's own. The answer's
//! `data[].embedding` are matched to the inputs by `data[].index`, checked (count, length,
//! finite values) and L2-normalised.
//!
//! **Robustness.** 429, 5xx, timeouts and connection failures are retried with exponential
//! backoff and jitter, honouring `Retry-After`, within a bounded total time (60 s for a
//! batch of documents, 10 s for a query: a search must not hang on a dead provider). Any
//! other status is an error at once, naming the provider, the status and the answer.
//!
//! **Keys** come from `remote.apiKey` (a string or a SecretRef: `env`, `file`, `exec`), else
//! `models.providers.<name>.apiKey`, else the provider's environment variable
//! (`OPENAI_API_KEY`). A key is sent in the
//! `Authorization` header only: it is never part of the fingerprint (so never in the
//! agent directory), a log line or an error message.

mod batch_api;
mod defaults;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::config::{Secret, Settings};
use crate::digest::sha256_hex;
use crate::embed::embedder::{BatchApi, BatchOptions, EmbedError, EmbedKind, Embedder, Embedding};
pub(crate) use defaults::*;

/// Inputs per request: keeps answers well under the body limit (64 × 3,072 floats).
const BATCH: usize = 64;

/// How long one call may take, retries included, and how much of an answer it reads.
#[derive(Clone, Copy)]
pub(crate) struct CallLimits {
    /// The whole call, retries included.
    budget: Duration,
    /// One request.
    request: Duration,
    /// The largest answer read.
    answer_bytes: u64,
    /// Tries at most (retries while the budget lasts).
    attempts: u32,
}

impl CallLimits {
    /// A query: a search must not hang on a dead provider.
    const QUERY: CallLimits = CallLimits {
        budget: Duration::from_secs(10),
        request: Duration::from_secs(10),
        answer_bytes: 64 << 20,
        attempts: u32::MAX,
    };
    /// The probe of a look (`status`, `doctor`): one short try, offline or not.
    const PROBE: CallLimits = CallLimits {
        budget: Duration::from_secs(2),
        request: Duration::from_secs(2),
        answer_bytes: 64 << 20,
        attempts: 1,
    };
    /// 64 documents (an answer of 64 × 3,072 floats is about 4 MB of JSON).
    const DOCUMENTS: CallLimits = CallLimits {
        budget: Duration::from_secs(60),
        request: Duration::from_secs(30),
        answer_bytes: 64 << 20,
        attempts: u32::MAX,
    };
    /// A batch job's upload (up to 64 MB of texts), creation or poll.
    pub(crate) const BATCH: CallLimits = CallLimits {
        budget: Duration::from_secs(600),
        request: Duration::from_secs(300),
        answer_bytes: 64 << 20,
        attempts: u32::MAX,
    };
    /// A batch job's output: up to 10,000 vectors of 3,072 floats as JSON.
    pub(crate) const BATCH_OUTPUT: CallLimits = CallLimits {
        budget: Duration::from_secs(600),
        request: Duration::from_secs(300),
        answer_bytes: 1 << 30,
        attempts: u32::MAX,
    };
}
/// First retry delay; it doubles up to [`MAX_DELAY`].
const FIRST_DELAY: Duration = Duration::from_millis(250);
const MAX_DELAY: Duration = Duration::from_secs(8);

/// An embedding provider over HTTP, speaking its wire format ([`Wire`]: OpenAI's, which
/// OpenAI-compatible endpoints share, or Gemini's).
pub(crate) struct HttpEmbedder {
    provider: &'static str,
    /// `remote.baseUrl` or the provider's default, without a final `/`.
    base: String,
    url: String,
    model: String,
    key: Option<String>,
    headers: Vec<(String, String)>,
    wire: Wire,
    dims: usize,
    fingerprint: String,
    /// Where the key came from (`remote.apiKey`, `models.providers.openai.apiKey`,
    /// `OPENAI_API_KEY`), never the key.
    key_source: Option<String>,
    /// `remote.batch` when it applies (OpenAI and Gemini with `enabled: true`).
    batch: Option<BatchOptions>,
    /// Why the batch API is off for this process, once a job was refused.
    batch_off: Mutex<Option<String>>,
    /// [`Defaults::max_input_tokens`].
    max_input_tokens: usize,
    /// The configured `input_type` of queries and of documents (`queryInputType` /
    /// `documentInputType`, else `inputType`), sent when set.
    input_types: (Option<String>, Option<String>),
    /// `outputDimensionality`, sent as `dimensions`.
    dimensions: Option<u32>,
    agent: ureq::Agent,
}

/// A provider's request and answer format.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// `POST {base}/embeddings`, `{model, input}`, `Authorization: Bearer`, answers
    /// `data[].{index, embedding}`; `input_type` adds Voyage's `document` / `query`.
    OpenAi { input_type: bool },
    /// Gemini's `POST {base}/models/{model}:batchEmbedContents`, one request per text
    /// with `taskType` `RETRIEVAL_DOCUMENT` / `RETRIEVAL_QUERY`, `x-goog-api-key`,
    /// answers `embeddings[].values` in order.
    Gemini,
}

/// Where `defaults`' provider takes its API key from, without reading it: the first of
/// `remote.apiKey`, `models.providers.<name>.apiKey` that is configured, else the
/// provider's environment variable when it is set.
pub(crate) fn key_source(
    defaults: &Defaults,
    settings: &Settings,
    var: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    configured_keys(defaults, settings)
        .into_iter()
        .find_map(|(source, secret)| secret.map(|_| source))
        .or_else(|| {
            var(defaults.key_var)
                .filter(|k| !k.is_empty())
                .map(|_| defaults.key_var.to_string())
        })
}

fn configured_keys<'s>(
    defaults: &Defaults,
    settings: &'s Settings,
) -> [(String, Option<&'s Secret>); 2] {
    [
        (
            "remote.apiKey".to_string(),
            settings.remote.api_key.as_ref(),
        ),
        (
            format!("models.providers.{}.apiKey", defaults.config_name),
            settings.provider_keys.get(defaults.config_name),
        ),
    ]
}

/// The API key for `defaults`' provider and where it came from: `remote.apiKey`, else
/// `models.providers.<name>.apiKey`, else the provider's environment variable. A
/// configured key that cannot be read (a SecretRef whose variable is unset, a file or
/// command that fails) is an error naming it: it does not fall through to the next place.
pub(crate) fn find_key(
    defaults: &Defaults,
    settings: &Settings,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<(String, String)>, String> {
    for (source, secret) in configured_keys(defaults, settings) {
        if let Some(secret) = secret {
            return secret
                .read(&settings.secrets, var)
                .map(|key| Some((source.clone(), key)))
                .map_err(|why| format!("{source}: {why}"));
        }
    }
    Ok(var(defaults.key_var)
        .filter(|k| !k.is_empty())
        .map(|key| (defaults.key_var.to_string(), key)))
}

impl HttpEmbedder {
    /// The client `settings` describe, with its output length learnt from one probe
    /// request (which also proves the endpoint, model and key work). `var` reads the
    /// environment.
    pub(crate) fn connect(
        defaults: &Defaults,
        settings: &Settings,
        model: Option<&str>,
        var: impl Fn(&str) -> Option<String>,
        quick: bool,
    ) -> Result<HttpEmbedder, EmbedError> {
        let base = settings
            .remote
            .base_url
            .as_deref()
            .unwrap_or(defaults.base_url)
            .trim_end_matches('/');
        let (key_source, key) = find_key(defaults, settings, &var)
            .map_err(|why| EmbedError::Remote {
                provider: defaults.provider.to_string(),
                message: format!("the API key cannot be read: {why}"),
                status: None,
            })?
            .unzip();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(CallLimits::BATCH.request))
            .http_status_as_error(false)
            .build()
            .into();
        let model = model.unwrap_or(defaults.model).to_string();
        // openai-compatible has neither default: say which key is missing, before any call.
        let missing = |what: &str| EmbedError::Remote {
            provider: defaults.provider.to_string(),
            message: format!("{what} is required for the {} provider", defaults.provider),
            status: None,
        };
        if base.is_empty() {
            return Err(missing("remote.baseUrl"));
        }
        if model.is_empty() {
            return Err(missing("model"));
        }
        let remote = &settings.remote;
        let input_types = (
            remote
                .query_input_type
                .clone()
                .or(remote.input_type.clone()),
            remote
                .document_input_type
                .clone()
                .or(remote.input_type.clone()),
        );
        let url = match defaults.wire {
            Wire::OpenAi { .. } => format!("{base}/embeddings"),
            Wire::Gemini => format!(
                "{base}/models/{}:batchEmbedContents",
                model.trim_start_matches("models/")
            ),
        };
        let batch = &settings.remote.batch;
        let batch = (batch.enabled && defaults.batch).then(|| BatchOptions {
            wait: batch.wait,
            concurrency: batch.concurrency,
            poll_interval: Duration::from_millis(batch.poll_interval_ms),
            timeout: Duration::from_secs(batch.timeout_minutes.saturating_mul(60)),
        });
        let mut client = HttpEmbedder {
            provider: defaults.provider,
            base: base.to_string(),
            url,
            model,
            key,
            headers: settings
                .remote
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            wire: defaults.wire,
            dims: 0,
            fingerprint: String::new(),
            key_source,
            batch,
            batch_off: Mutex::new(None),
            max_input_tokens: defaults.max_input_tokens,
            input_types,
            dimensions: remote.output_dimensionality,
            agent,
        };
        if client.key.is_none() && defaults.key_required && base == defaults.base_url {
            return Err(client.error(
                None,
                format!(
                    "no API key: set memorySearch.remote.apiKey, models.providers.{}.apiKey or {}",
                    defaults.config_name, defaults.key_var
                ),
            ));
        }
        let probe = match quick {
            // A look (status, doctor): one short try, no retries.
            true => client
                .call(
                    &client.url,
                    Payload::Json(&client.body(&["dimension probe"], EmbedKind::Query)),
                    CallLimits::PROBE,
                )
                .and_then(|text| client.parse(&text, 1))?,
            false => client.request(&["dimension probe"], EmbedKind::Query)?,
        };
        client.dims = probe.first().map_or(0, Vec::len);
        if client.dims == 0 {
            return Err(client.error(None, "the probe answer has an empty embedding".into()));
        }
        // Header names only: their values may be credentials.
        let header_names: Vec<&str> = client.headers.iter().map(|(k, _)| k.as_str()).collect();
        client.fingerprint = format!(
            "{}:{}:{}",
            client.provider,
            client.model,
            &sha256_hex(
                format!(
                    "{}\0{}\0{}\0{}{}",
                    client.url,
                    client.model,
                    client.dims,
                    header_names.join(","),
                    // what changes the vectors; absent, the fingerprint is as before
                    match (&client.input_types, client.dimensions) {
                        ((None, None), None) => String::new(),
                        ((q, d), dims) => format!("\0{q:?}\0{d:?}\0{dims:?}"),
                    }
                )
                .as_bytes()
            )[..16]
        );
        Ok(client)
    }

    /// The model name, as payloads and the index identity report it.
    pub(crate) fn model(&self) -> &str {
        &self.model
    }

    /// Where the key came from, when there is one (never the key).
    pub(crate) fn key_source(&self) -> Option<&str> {
        self.key_source.as_deref()
    }

    /// The batch API's state, for `status`: `None` when it does not apply.
    pub(crate) fn batch_state(&self) -> Option<String> {
        let options = self.batch?;
        Some(match lock(&self.batch_off).as_ref() {
            Some(why) => format!("off: {why}"),
            None => format!(
                "on ({}, {} job(s) at once)",
                if options.wait {
                    "waits"
                } else {
                    "does not wait"
                },
                options.concurrency
            ),
        })
    }

    /// An error naming the provider, with the key redacted; `status` is a refusal's HTTP
    /// status.
    fn error(&self, status: Option<u16>, message: String) -> EmbedError {
        let message = match &self.key {
            Some(key) if !key.is_empty() => message.replace(key.as_str(), "[REDACTED]"),
            _ => message,
        };
        EmbedError::Remote {
            provider: self.provider.to_string(),
            message,
            status,
        }
    }

    /// The request body embedding `inputs` as `kind`.
    fn body(&self, inputs: &[&str], kind: EmbedKind) -> Value {
        match self.wire {
            Wire::OpenAi { input_type } => {
                let mut body = json!({"model": self.model, "input": inputs});
                let configured = match kind {
                    EmbedKind::Query => &self.input_types.0,
                    EmbedKind::Document => &self.input_types.1,
                };
                if let Some(value) = configured {
                    body["input_type"] = json!(value);
                } else if input_type {
                    body["input_type"] = json!(match kind {
                        EmbedKind::Query => "query",
                        EmbedKind::Document => "document",
                    });
                }
                if let Some(dimensions) = self.dimensions {
                    body["dimensions"] = json!(dimensions);
                }
                body
            }
            Wire::Gemini => {
                let requests: Vec<Value> = inputs
                    .iter()
                    .map(|text| self.gemini_request(text, kind))
                    .collect();
                json!({ "requests": requests })
            }
        }
    }

    /// One call embedding `inputs` (at most [`BATCH`]), retried within its limits.
    fn request(&self, inputs: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let body = self.body(inputs, kind);
        let limits = match kind {
            EmbedKind::Query => CallLimits::QUERY,
            EmbedKind::Document => CallLimits::DOCUMENTS,
        };
        let text = self.call(&self.url, Payload::Json(&body), limits)?;
        self.parse(&text, inputs.len())
    }

    /// One HTTP call, retried on 408, 429, 5xx, timeouts and connection failures with
    /// backoff and jitter (honouring `Retry-After`) within `limits.budget`; no single
    /// request lasts longer than `limits.request` or outlasts the budget (a hung server must
    /// not hold a search for the whole request timeout). Returns the answer's text.
    pub(crate) fn call(
        &self,
        url: &str,
        payload: Payload,
        limits: CallLimits,
    ) -> Result<String, EmbedError> {
        let budget = limits.budget;
        let started = Instant::now();
        let mut delay = FIRST_DELAY;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let left = budget.saturating_sub(started.elapsed());
            let timeout = left.clamp(Duration::from_millis(100), limits.request);
            let (retry_after, failure) = match self.send(url, &payload, timeout, limits) {
                Ok(Answer::Ok(text)) => return Ok(text),
                Ok(Answer::Retry {
                    status,
                    after,
                    text,
                }) => (after, format!("HTTP {status}: {}", excerpt(&text))),
                Ok(Answer::Fatal { status, text }) => {
                    return Err(self.error(
                        Some(status),
                        format!("{url} answered HTTP {status}: {}", excerpt(&text)),
                    ))
                }
                Err(err) => (None, err),
            };
            let wait = retry_after.unwrap_or_else(|| jitter(delay, attempt));
            if attempt >= limits.attempts || started.elapsed() + wait > budget {
                return Err(self.error(
                    None,
                    format!(
                        "{url} failed after {attempt} attempt(s) in {:.1} s: {failure}",
                        started.elapsed().as_secs_f64()
                    ),
                ));
            }
            tracing::debug!("{}: {failure}; retrying in {wait:?}", self.provider);
            std::thread::sleep(wait);
            delay = (delay * 2).min(MAX_DELAY);
        }
    }

    /// The request `payload` describes, with the key, memoria's headers and the
    /// configured ones (which win).
    fn send(
        &self,
        url: &str,
        payload: &Payload,
        timeout: Duration,
        limits: CallLimits,
    ) -> Result<Answer, String> {
        let response = match payload {
            Payload::Get => self
                .authorised(
                    self.agent
                        .get(url)
                        .config()
                        .timeout_global(Some(timeout))
                        .build(),
                )
                .call(),
            Payload::Json(body) => self.post(url, timeout, "application/json").send_json(body),
            Payload::Raw {
                content_type,
                bytes,
            } => self.post(url, timeout, content_type).send(*bytes),
        };
        let mut response = response.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = response
            .body_mut()
            .with_config()
            .limit(limits.answer_bytes)
            .read_to_string()
            .map_err(|e| format!("reading the answer: {e}"))?;
        Ok(match status {
            200..=299 => Answer::Ok(text),
            408 | 429 | 500..=599 => Answer::Retry {
                status,
                after,
                text,
            },
            _ => Answer::Fatal { status, text },
        })
    }

    fn post(
        &self,
        url: &str,
        timeout: Duration,
        content_type: &str,
    ) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        self.authorised(
            self.agent
                .post(url)
                .config()
                .timeout_global(Some(timeout))
                .build()
                .header("Content-Type", content_type),
        )
    }

    fn authorised<B>(&self, mut request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        if let Some(key) = &self.key {
            request = match self.wire {
                Wire::OpenAi { .. } => request.header("Authorization", format!("Bearer {key}")),
                Wire::Gemini => request.header("x-goog-api-key", key.as_str()),
            };
        }
        for (name, value) in &self.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request
    }

    /// Gemini's `EmbedContentRequest` for one text.
    fn gemini_request(&self, text: &str, kind: EmbedKind) -> Value {
        let task = match kind {
            EmbedKind::Query => "RETRIEVAL_QUERY",
            EmbedKind::Document => "RETRIEVAL_DOCUMENT",
        };
        json!({"model": self.gemini_model(), "content": {"parts": [{"text": text}]},
               "taskType": task})
    }

    /// `models/{model}`.
    fn gemini_model(&self) -> String {
        format!("models/{}", self.model.trim_start_matches("models/"))
    }

    /// The vectors of an answer, in input order, checked and normalised.
    fn parse(&self, text: &str, count: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let invalid =
            |why: String| self.error(None, format!("{}: invalid answer: {why}", self.url));
        let value: Value =
            serde_json::from_str(text).map_err(|e| invalid(format!("{e}: {}", excerpt(text))))?;
        let (list, field) = match self.wire {
            Wire::OpenAi { .. } => ("data", "embedding"),
            Wire::Gemini => ("embeddings", "values"),
        };
        let data = value
            .get(list)
            .and_then(Value::as_array)
            .ok_or_else(|| invalid(format!("no `{list}` array: {}", excerpt(text))))?;
        if data.len() != count {
            return Err(invalid(format!(
                "{} embeddings for {count} inputs",
                data.len()
            )));
        }
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; count];
        for (position, item) in data.iter().enumerate() {
            let index = item
                .get("index")
                .and_then(Value::as_u64)
                .map_or(position, |i| i as usize);
            let vector = self
                .vector(item.get(field))
                .map_err(|why| invalid(format!("{list}[{position}]: {why}")))?;
            match vectors.get_mut(index) {
                Some(slot @ None) => *slot = Some(vector),
                _ => return Err(invalid(format!("{list}[{position}] has index {index}"))),
            }
        }
        Ok(vectors.into_iter().flatten().collect())
    }

    /// One embedding of an answer (a JSON array of numbers), checked and normalised.
    fn vector(&self, value: Option<&Value>) -> Result<Vec<f32>, String> {
        let mut vector: Vec<f32> = value
            .and_then(Value::as_array)
            .ok_or("no embedding array")?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32).filter(|x| x.is_finite()))
            .collect::<Option<_>>()
            .ok_or("a value is not a finite number")?;
        if self.dims != 0 && vector.len() != self.dims {
            return Err(format!(
                "an embedding of {} values, expected {} (did the model change?)",
                vector.len(),
                self.dims
            ));
        }
        if vector.is_empty() {
            return Err("an empty embedding".into());
        }
        crate::simd::l2_normalize(&mut vector);
        Ok(vector)
    }
}

/// What one HTTP call sends.
pub(crate) enum Payload<'a> {
    Get,
    Json(&'a Value),
    Raw {
        content_type: &'a str,
        bytes: &'a [u8],
    },
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

enum Answer {
    Ok(String),
    Retry {
        status: u16,
        after: Option<Duration>,
        text: String,
    },
    Fatal {
        status: u16,
        text: String,
    },
}

/// `text` cut, on a character boundary, so that a conservative estimate of its tokens
/// stays within `limit`, and whether it was cut. The estimate counts 4 ASCII characters
/// per token and 1.5 tokens for any other character (CJK, emoji and accented text take
/// more tokens per character in every provider's tokenizer), so a chunk of ~400 tokens is
/// never cut and an oversized query or transcript line is cut instead of failing.
pub(crate) fn fit(text: &str, limit: usize) -> (&str, bool) {
    // In quarter tokens.
    let budget = limit.saturating_mul(4);
    let mut cost = 0usize;
    for (at, c) in text.char_indices() {
        cost += if c.is_ascii() { 1 } else { 6 };
        if cost > budget {
            return (&text[..at], true);
        }
    }
    (text, false)
}

/// The first 200 characters of an answer, for error messages.
fn excerpt(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// `delay` ± 25 %, varied by attempt and clock so that clients do not retry in lockstep.
fn jitter(delay: Duration, attempt: u32) -> Duration {
    let clock = crate::clock::now().subsec_nanos();
    let nanos = clock ^ attempt.wrapping_mul(2_654_435_761);
    let unit = f64::from(nanos % 1000) / 1000.0; // 0..1
    delay.mul_f64(0.75 + unit * 0.5)
}

impl Embedder for HttpEmbedder {
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Embedding>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let fitted: Vec<(&str, bool)> = batch
                .iter()
                .map(|text| fit(text, self.max_input_tokens))
                .collect();
            let inputs: Vec<&str> = fitted.iter().map(|(text, _)| *text).collect();
            for (vector, (_, truncated)) in self.request(&inputs, kind)?.into_iter().zip(&fitted) {
                out.push(Embedding {
                    vector,
                    tokens: 0,
                    truncated: *truncated,
                });
            }
        }
        Ok(out)
    }

    fn dims(&self) -> usize {
        self.dims
    }

    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    fn max_tokens(&self) -> usize {
        self.max_input_tokens
    }

    fn batch_api(&self) -> Option<&dyn BatchApi> {
        match (self.batch, lock(&self.batch_off).is_none()) {
            (Some(_), true) => Some(self),
            _ => None,
        }
    }

    /// A request costs a round trip; its texts cost the provider little.
    fn min_batch(&self) -> usize {
        64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_cut_at_characters() {
        assert_eq!(excerpt("  short  "), "short");
        let long = "é".repeat(300);
        assert_eq!(excerpt(&long).chars().count(), 201);
    }

    #[test]
    fn inputs_are_cut_to_the_provider_limit() {
        let table: [(&str, usize, &str, bool); 6] = [
            ("short", 10, "short", false),
            ("abcdefgh", 2, "abcdefgh", false), // 8 ASCII characters: 2 tokens
            ("abcdefghi", 2, "abcdefgh", true),
            ("日本語の", 3, "日本", true), // 1.5 tokens a character
            ("aé", 1, "a", true),
            ("", 0, "", false),
        ];
        for (text, limit, cut, truncated) in table {
            assert_eq!(fit(text, limit), (cut, truncated), "{text:?} in {limit}");
        }
        let chunk = "word ".repeat(320); // ~400 tokens of English
        assert!(!fit(&chunk, GEMINI.max_input_tokens).1);
    }

    #[test]
    fn jitter_stays_within_a_quarter() {
        for attempt in 0..50 {
            let d = jitter(Duration::from_millis(1000), attempt);
            assert!(d >= Duration::from_millis(750) && d <= Duration::from_millis(1250));
        }
    }
}
