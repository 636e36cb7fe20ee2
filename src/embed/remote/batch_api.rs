//! The HTTP side of the asynchronous batch APIs of OpenAI and Gemini: [`BatchApi`] for
//! [`HttpEmbedder`]. When memoria uses them is [`crate::embed::backfill`]'s policy.
//!
//! **OpenAI** (and endpoints that copy it): the texts become a JSONL file, one
//! `/v1/embeddings` request per line with the text's hash as `custom_id`, uploaded with
//! `POST {base}/files` (multipart form, `purpose=batch`). `POST {base}/batches` creates the
//! job (`endpoint: /v1/embeddings`, `completion_window: 24h`), `GET {base}/batches/{id}`
//! polls its `status`, and once it is `completed`, `GET {base}/files/{output_file_id}/content`
//! is JSONL with each answer under `response.body`, found by `custom_id`.
//!
//! **Gemini**: the JSONL file (`{"key", "request": EmbedContentRequest}` per line, task type
//! `RETRIEVAL_DOCUMENT`) is uploaded to `{root}/upload/v1beta/files` (multipart/related).
//! `POST {base}/models/{model}:asyncBatchEmbedContent` with `batch.inputConfig.fileName`
//! creates the job, an operation named `batches/{id}`; `GET {base}/batches/{id}` polls
//! `metadata.state` (`BATCH_STATE_SUCCEEDED`, …). The output file named in
//! `metadata.output.responsesFile` is read from
//! `{root}/download/v1beta/{file}:download?alt=media`: one `{"key", "response": {"embedding":
//! {"values"}}}` per line.
//!
//! Every call goes through [`HttpEmbedder::call`] (retries, key redaction, the
//! configured headers).

use std::collections::HashMap;

use serde_json::{json, Value};

use super::{excerpt, fit, lock, CallLimits, HttpEmbedder, Payload, Wire};
use crate::digest::sha256_hex;
use crate::embed::embedder::{BatchApi, BatchOptions, EmbedError, EmbedKind, JobState};

impl BatchApi for HttpEmbedder {
    fn submit(&self, items: &[(&str, &str)]) -> Result<String, EmbedError> {
        match self.wire {
            Wire::Gemini => self.submit_gemini(items),
            Wire::OpenAi { .. } => self.submit_openai(items),
        }
    }

    fn poll(&self, job: &str) -> Result<JobState, EmbedError> {
        let job = self.checked_id(job)?;
        let url = match self.wire {
            Wire::Gemini => format!("{}/{job}", self.base),
            Wire::OpenAi { .. } => format!("{}/batches/{job}", self.base),
        };
        let answer = self.json_of(&url, self.call(&url, Payload::Get, CallLimits::BATCH)?)?;
        Ok(match self.wire {
            Wire::Gemini => gemini_state(&answer),
            Wire::OpenAi { .. } => openai_state(&answer),
        })
    }

    fn results(&self, output: &str) -> Result<HashMap<String, Vec<f32>>, EmbedError> {
        let output = self.checked_id(output)?;
        let url = match self.wire {
            Wire::Gemini => {
                let (root, version) = self.gemini_root();
                format!("{root}/download{version}/{output}:download?alt=media")
            }
            Wire::OpenAi { .. } => format!("{}/files/{output}/content", self.base),
        };
        let text = self.call(&url, Payload::Get, CallLimits::BATCH_OUTPUT)?;
        let mut vectors = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line).map_err(|e| {
                self.error(None, format!("{url}: line {}: invalid JSON: {e}", n + 1))
            })?;
            // A line the provider failed (an `error`, a non-200 status) is left out: its
            // text goes through a direct request.
            let found = match self.wire {
                Wire::Gemini => value.get("key").and_then(Value::as_str).zip(
                    value
                        .pointer("/response/embedding/values")
                        .or_else(|| value.pointer("/embedding/values")),
                ),
                Wire::OpenAi { .. } => value.get("custom_id").and_then(Value::as_str).zip(
                    value
                        .pointer("/response/body/data/0/embedding")
                        .filter(|_| value.pointer("/response/status_code") == Some(&json!(200))),
                ),
            };
            let Some((id, embedding)) = found else {
                continue;
            };
            let vector = self
                .vector(Some(embedding))
                .map_err(|why| self.error(None, format!("{url}: line {} ({id}): {why}", n + 1)))?;
            vectors.insert(id.to_string(), vector);
        }
        Ok(vectors)
    }

    fn options(&self) -> BatchOptions {
        self.batch.unwrap_or(BatchOptions {
            wait: true,
            concurrency: 1,
            poll_interval: std::time::Duration::from_secs(2),
            timeout: std::time::Duration::from_secs(3600),
        })
    }

    fn disable(&self, reason: String) {
        tracing::warn!("{}: {reason}", self.provider);
        *lock(&self.batch_off) = Some(reason);
    }
}

impl HttpEmbedder {
    fn submit_openai(&self, items: &[(&str, &str)]) -> Result<String, EmbedError> {
        let mut jsonl = String::new();
        for (id, text) in items {
            let text = fit(text, self.max_input_tokens).0;
            let line = json!({
                "custom_id": id,
                "method": "POST",
                "url": "/v1/embeddings",
                "body": {"model": self.model, "input": text},
            });
            jsonl.push_str(&line.to_string());
            jsonl.push('\n');
        }
        let boundary = boundary(&jsonl);
        let body = multipart(
            &boundary,
            &[
                ("Content-Disposition: form-data; name=\"purpose\"", b"batch"),
                (
                    "Content-Disposition: form-data; name=\"file\"; \
                     filename=\"memoria-embeddings.jsonl\"\r\nContent-Type: application/jsonl",
                    jsonl.as_bytes(),
                ),
            ],
        );
        let url = format!("{}/files", self.base);
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let file = self.upload(&url, &content_type, &body, "/id")?;
        let url = format!("{}/batches", self.base);
        let request = json!({
            "input_file_id": file,
            "endpoint": "/v1/embeddings",
            "completion_window": "24h",
            "metadata": {"source": "memoria"},
        });
        let batch = self.call(&url, Payload::Json(&request), CallLimits::BATCH)?;
        self.field(&url, &self.json_of(&url, batch)?, "/id")
    }

    fn submit_gemini(&self, items: &[(&str, &str)]) -> Result<String, EmbedError> {
        let mut jsonl = String::new();
        for (id, text) in items {
            let text = fit(text, self.max_input_tokens).0;
            let line =
                json!({"key": id, "request": self.gemini_request(text, EmbedKind::Document)});
            jsonl.push_str(&line.to_string());
            jsonl.push('\n');
        }
        let boundary = boundary(&jsonl);
        let metadata =
            json!({"file": {"displayName": "memoria-embeddings", "mimeType": "application/jsonl"}})
                .to_string();
        let body = multipart(
            &boundary,
            &[
                (
                    "Content-Type: application/json; charset=UTF-8",
                    metadata.as_bytes(),
                ),
                ("Content-Type: application/jsonl", jsonl.as_bytes()),
            ],
        );
        let (root, version) = self.gemini_root();
        let url = format!("{root}/upload{version}/files?uploadType=multipart");
        let content_type = format!("multipart/related; boundary={boundary}");
        let file = self.upload(&url, &content_type, &body, "/file/name")?;
        let url = format!(
            "{}/{}:asyncBatchEmbedContent",
            self.base,
            self.gemini_model()
        );
        let request = json!({"batch": {
            "displayName": "memoria-embeddings",
            "inputConfig": {"fileName": file},
        }});
        let batch = self.call(&url, Payload::Json(&request), CallLimits::BATCH)?;
        self.field(&url, &self.json_of(&url, batch)?, "/name")
    }

    /// Gemini's root and API version: `https://host/v1beta` → (`https://host`, `/v1beta`);
    /// a base URL without a version segment is the root itself.
    fn gemini_root(&self) -> (String, String) {
        match self.base.rsplit_once('/') {
            Some((root, version))
                if version.starts_with('v')
                    && version[1..].starts_with(|c: char| c.is_ascii_digit()) =>
            {
                (root.to_string(), format!("/{version}"))
            }
            _ => (self.base.clone(), String::new()),
        }
    }

    /// Sends a multipart body and returns the answer's string at `pointer` (the file id).
    fn upload(
        &self,
        url: &str,
        content_type: &str,
        body: &[u8],
        pointer: &str,
    ) -> Result<String, EmbedError> {
        let payload = Payload::Raw {
            content_type,
            bytes: body,
        };
        let answer = self.call(url, payload, CallLimits::BATCH)?;
        self.field(url, &self.json_of(url, answer)?, pointer)
    }

    fn json_of(&self, url: &str, text: String) -> Result<Value, EmbedError> {
        serde_json::from_str(&text).map_err(|e| {
            self.error(
                None,
                format!("{url}: invalid answer: {e}: {}", excerpt(&text)),
            )
        })
    }

    /// A string field of an answer (a file or job id).
    fn field(&self, url: &str, answer: &Value, pointer: &str) -> Result<String, EmbedError> {
        answer
            .pointer(pointer)
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .ok_or_else(|| {
                self.error(
                    None,
                    format!(
                        "{url}: the answer has no `{}`: {}",
                        pointer.trim_start_matches('/').replace('/', "."),
                        excerpt(&answer.to_string())
                    ),
                )
            })
    }

    /// A job or file id from the provider, checked before it goes into a URL.
    fn checked_id<'a>(&self, id: &'a str) -> Result<&'a str, EmbedError> {
        let fine = !id.is_empty()
            && !id.split('/').any(|part| part.is_empty() || part == "..")
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
        if fine {
            Ok(id)
        } else {
            Err(self.error(None, format!("unusable job or file id {id:?}")))
        }
    }
}

/// An OpenAI batch's state from `GET /batches/{id}`.
fn openai_state(answer: &Value) -> JobState {
    let status = answer.get("status").and_then(Value::as_str).unwrap_or("");
    let errors: Vec<&str> = answer
        .pointer("/errors/data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("message").and_then(Value::as_str))
        .collect();
    let why = |what: &str| match errors.is_empty() {
        true => what.to_string(),
        false => format!("{what}: {}", errors.join("; ")),
    };
    match status {
        "completed" => match answer.get("output_file_id").and_then(Value::as_str) {
            Some(file) if !file.is_empty() => JobState::Done(file.to_string()),
            _ => JobState::Failed(why(
                "completed without an output file (every request failed)",
            )),
        },
        "failed" | "expired" | "cancelled" | "cancelling" => JobState::Failed(why(status)),
        "" => JobState::Failed(format!("no status in {}", excerpt(&answer.to_string()))),
        running => JobState::Running(running.to_string()),
    }
}

/// A Gemini batch's state from `GET /batches/{id}` (an operation).
fn gemini_state(answer: &Value) -> JobState {
    if let Some(message) = answer.pointer("/error/message").and_then(Value::as_str) {
        return JobState::Failed(message.to_string());
    }
    let state = answer
        .pointer("/metadata/state")
        .or_else(|| answer.get("state"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let short = state
        .trim_start_matches("BATCH_STATE_")
        .trim_start_matches("JOB_STATE_");
    let done = answer.get("done").and_then(Value::as_bool) == Some(true);
    match short {
        "SUCCEEDED" => {}
        "FAILED" | "CANCELLED" | "EXPIRED" => return JobState::Failed(state.to_string()),
        _ if !done => return JobState::Running(state.to_string()),
        _ => {}
    }
    let output = [
        "/metadata/output/responsesFile",
        "/response/responsesFile",
        "/response/output/responsesFile",
        "/output/responsesFile",
    ]
    .iter()
    .find_map(|p| answer.pointer(p).and_then(Value::as_str));
    match output {
        Some(file) if !file.is_empty() => JobState::Done(file.to_string()),
        _ => JobState::Failed(format!(
            "finished without an output file: {}",
            excerpt(&answer.to_string())
        )),
    }
}

/// A multipart boundary that does not occur in `content`.
fn boundary(content: &str) -> String {
    let mut salt = 0u32;
    loop {
        let candidate = format!(
            "memoria-{}",
            &sha256_hex(format!("{salt}{content}").as_bytes())[..32]
        );
        if !content.contains(&candidate) {
            return candidate;
        }
        salt += 1;
    }
}

/// A multipart body: each part is its header lines and its content.
fn multipart(boundary: &str, parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (headers, content) in parts {
        body.extend_from_slice(format!("--{boundary}\r\n{headers}\r\n\r\n").as_bytes());
        body.extend_from_slice(content);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_states() {
        let table = [
            (
                json!({"status": "validating"}),
                JobState::Running("validating".into()),
            ),
            (
                json!({"status": "in_progress"}),
                JobState::Running("in_progress".into()),
            ),
            (
                json!({"status": "completed", "output_file_id": "file-9"}),
                JobState::Done("file-9".into()),
            ),
            (
                json!({"status": "completed", "output_file_id": null, "error_file_id": "file-e"}),
                JobState::Failed("completed without an output file (every request failed)".into()),
            ),
            (
                json!({"status": "failed", "errors": {"data": [{"message": "bad line 3"}]}}),
                JobState::Failed("failed: bad line 3".into()),
            ),
            (
                json!({"status": "expired"}),
                JobState::Failed("expired".into()),
            ),
            (json!({}), JobState::Failed("no status in {}".into())),
        ];
        for (answer, want) in table {
            assert_eq!(openai_state(&answer), want, "{answer}");
        }
    }

    #[test]
    fn gemini_states() {
        let table = [
            (
                json!({"name": "batches/1", "metadata": {"state": "BATCH_STATE_PENDING"}}),
                JobState::Running("BATCH_STATE_PENDING".into()),
            ),
            (
                json!({"metadata": {"state": "BATCH_STATE_SUCCEEDED", "output": {"responsesFile": "files/out"}}, "done": true}),
                JobState::Done("files/out".into()),
            ),
            (
                json!({"done": true, "response": {"responsesFile": "files/o2"}}),
                JobState::Done("files/o2".into()),
            ),
            (
                json!({"metadata": {"state": "BATCH_STATE_EXPIRED"}}),
                JobState::Failed("BATCH_STATE_EXPIRED".into()),
            ),
            (
                json!({"done": true, "error": {"message": "quota"}}),
                JobState::Failed("quota".into()),
            ),
        ];
        for (answer, want) in table {
            assert_eq!(gemini_state(&answer), want, "{answer}");
        }
    }

    #[test]
    fn multipart_bodies() {
        let body = multipart("B", &[("H: 1", b"one"), ("H: 2", b"two")]);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "--B\r\nH: 1\r\n\r\none\r\n--B\r\nH: 2\r\n\r\ntwo\r\n--B--\r\n"
        );
        let b = boundary("text");
        assert!(b.starts_with("memoria-") && b.len() == 40);
    }
}
