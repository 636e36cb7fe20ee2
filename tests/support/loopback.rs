//! A loopback HTTP server that speaks the embedding providers' wire formats, for
//! `tests/remote.rs` and `benches/remote.rs` (no network): it records every request and
//! answers by a script.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The request target, query included.
    pub path: String,
    pub headers: BTreeMap<String, String>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
    pub raw: Vec<u8>,
}

/// What the server answers to the n-th request (0-based): status, headers, body.
pub type Script = dyn Fn(&Request, usize) -> (u16, Vec<(String, String)>, String) + Send + Sync;

pub struct Server {
    pub url: String,
    pub requests: Arc<Mutex<Vec<Request>>>,
}

pub fn serve(script: Box<Script>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let log = requests.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let method = line.split_whitespace().next().unwrap_or("").to_string();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut headers = BTreeMap::new();
            loop {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':') {
                    headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
                }
            }
            let length: usize = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let request = Request {
                method,
                path,
                headers,
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                raw: body,
            };
            let n = {
                let mut log = log.lock().unwrap();
                log.push(request.clone());
                log.len() - 1
            };
            let (status, extra, body) = script(&request, n);
            let mut response = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in extra {
                response.push_str(&format!("{name}: {value}\r\n"));
            }
            response.push_str("\r\n");
            response.push_str(&body);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    Server { url, requests }
}

/// A deterministic embedding: letter counts folded into `dims` values.
pub fn vector(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims];
    for b in text.bytes().filter(u8::is_ascii_alphabetic) {
        v[(b.to_ascii_lowercase() - b'a') as usize % dims] += 1.0;
    }
    v[0] += 0.5;
    v
}

/// OpenAI's answer format for a request's inputs.
pub fn answer(request: &Request, dims: usize) -> String {
    let inputs = request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev() // out of order on purpose: `index` says where each belongs
        .map(|(i, text)| {
            json!({"object": "embedding", "index": i,
                   "embedding": vector(text.as_str().unwrap_or(""), dims)})
        })
        .collect();
    json!({"object": "list", "data": data, "model": request.body["model"],
           "usage": {"prompt_tokens": 1, "total_tokens": 1}})
    .to_string()
}

/// Gemini's answer format for a `batchEmbedContents` request.
pub fn gemini_answer(request: &Request, dims: usize) -> String {
    let requests = request.body["requests"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let embeddings: Vec<Value> = requests
        .iter()
        .map(|r| {
            let text = r["content"]["parts"][0]["text"].as_str().unwrap_or("");
            json!({ "values": vector(text, dims) })
        })
        .collect();
    json!({ "embeddings": embeddings }).to_string()
}

/// OpenAI's format on `/embeddings`; Gemini's on `gemini-embedding-001`; 403 otherwise.
pub fn ok(dims: usize) -> Box<Script> {
    Box::new(move |r: &Request, _| {
        if r.path.ends_with("/embeddings") {
            (200, Vec::new(), answer(r, dims))
        } else if r
            .path
            .ends_with("/models/gemini-embedding-001:batchEmbedContents")
        {
            (200, Vec::new(), gemini_answer(r, dims))
        } else {
            (403, Vec::new(), "{\"error\": \"no such model\"}".into())
        }
    })
}

/// How the batch APIs of [`batches`] behave.
#[derive(Clone, Copy)]
pub struct BatchMode {
    /// Polls that answer "in progress" before a job is done.
    pub polls: usize,
    /// Jobs end as expired (OpenAI) or failed (Gemini) instead.
    pub fail: bool,
}

/// The JSON lines of a multipart upload that have `field`.
fn uploaded_lines(raw: &[u8], field: &str) -> Vec<Value> {
    String::from_utf8_lossy(raw)
        .split('\n')
        .map(|line| line.trim_end_matches('\r'))
        .filter(|line| line.starts_with('{'))
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line.get(field).is_some())
        .collect()
}

/// [`ok`] plus OpenAI's Batch API (`/v1/files`, `/v1/batches`, the output file) and
/// Gemini's (`/upload/v1beta/files`, `:asyncBatchEmbedContent`, `/v1beta/batches/N`, the
/// download), each job's output computed from its uploaded lines.
pub fn batches(dims: usize, mode: BatchMode) -> Box<Script> {
    // Uploaded files (their JSON lines) and jobs (file index, polls so far).
    let files: Mutex<Vec<Vec<Value>>> = Mutex::new(Vec::new());
    let jobs: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
    let direct = ok(dims);
    Box::new(move |r: &Request, n| {
        let path = r.path.as_str();
        let error =
            |status: u16, why: &str| (status, Vec::new(), json!({"error": why}).to_string());
        if r.method == "POST" && (path == "/v1/files" || path.starts_with("/upload/v1beta/files")) {
            let gemini = path.starts_with("/upload");
            let lines = uploaded_lines(&r.raw, if gemini { "key" } else { "custom_id" });
            let mut files = files.lock().unwrap();
            files.push(lines);
            let id = files.len() - 1;
            let body = if gemini {
                json!({"file": {"name": format!("files/in-{id}"), "mimeType": "application/jsonl"}})
            } else {
                json!({"id": format!("file-in-{id}"), "object": "file", "purpose": "batch"})
            };
            return (200, Vec::new(), body.to_string());
        }
        if r.method == "POST" && path == "/v1/batches" {
            let Some(file) = r.body["input_file_id"]
                .as_str()
                .and_then(|f| f.strip_prefix("file-in-"))
            else {
                return error(400, "input_file_id");
            };
            if r.body["endpoint"] != "/v1/embeddings" || r.body["completion_window"] != "24h" {
                return error(400, "endpoint or completion_window");
            }
            let mut jobs = jobs.lock().unwrap();
            jobs.push((file.parse().unwrap(), 0));
            let body = json!({"id": format!("batch_{}", jobs.len() - 1), "object": "batch", "status": "validating"});
            return (200, Vec::new(), body.to_string());
        }
        if r.method == "POST" && path.ends_with(":asyncBatchEmbedContent") {
            let Some(file) = r.body["batch"]["inputConfig"]["fileName"]
                .as_str()
                .and_then(|f| f.strip_prefix("files/in-"))
            else {
                return error(400, "batch.inputConfig.fileName");
            };
            let mut jobs = jobs.lock().unwrap();
            jobs.push((file.parse().unwrap(), 0));
            let body = json!({"name": format!("batches/{}", jobs.len() - 1),
                              "metadata": {"state": "BATCH_STATE_PENDING"}});
            return (200, Vec::new(), body.to_string());
        }
        let openai_job = path.strip_prefix("/v1/batches/batch_");
        let gemini_job = path.strip_prefix("/v1beta/batches/");
        if let Some(job) = openai_job.or(gemini_job).filter(|_| r.method == "GET") {
            let mut jobs = jobs.lock().unwrap();
            let Some((_, polls)) = job.parse::<usize>().ok().and_then(|j| jobs.get_mut(j)) else {
                return error(404, "no such batch");
            };
            *polls += 1;
            let running = *polls <= mode.polls;
            let body = match (openai_job.is_some(), running, mode.fail) {
                (true, true, _) => json!({"id": format!("batch_{job}"), "status": "in_progress"}),
                (true, false, false) => json!({"id": format!("batch_{job}"), "status": "completed",
                                               "output_file_id": format!("file-out-{job}")}),
                (true, false, true) => json!({"id": format!("batch_{job}"), "status": "expired"}),
                (false, true, _) => json!({"name": format!("batches/{job}"),
                                           "metadata": {"state": "BATCH_STATE_RUNNING"}}),
                (false, false, false) => json!({"name": format!("batches/{job}"), "done": true,
                    "metadata": {"state": "BATCH_STATE_SUCCEEDED",
                                 "output": {"responsesFile": format!("files/out-{job}")}}}),
                (false, false, true) => json!({"name": format!("batches/{job}"), "done": true,
                    "metadata": {"state": "BATCH_STATE_FAILED"}}),
            };
            return (200, Vec::new(), body.to_string());
        }
        let openai_out = path
            .strip_prefix("/v1/files/file-out-")
            .and_then(|p| p.strip_suffix("/content"));
        let gemini_out = path
            .strip_prefix("/download/v1beta/files/out-")
            .and_then(|p| p.strip_suffix(":download?alt=media"));
        if let Some(job) = openai_out.or(gemini_out).filter(|_| r.method == "GET") {
            let jobs = jobs.lock().unwrap();
            let Some(&(file, _)) = job.parse::<usize>().ok().and_then(|j| jobs.get(j)) else {
                return error(404, "no such file");
            };
            let files = files.lock().unwrap();
            let mut out = String::new();
            for (i, line) in files[file].iter().enumerate() {
                let answer = if openai_out.is_some() {
                    let text = line["body"]["input"].as_str().unwrap_or("");
                    json!({"id": format!("batch_req_{i}"), "custom_id": line["custom_id"],
                           "response": {"status_code": 200, "request_id": format!("req_{i}"),
                                        "body": {"object": "list", "model": line["body"]["model"],
                                                 "data": [{"object": "embedding", "index": 0,
                                                           "embedding": vector(text, dims)}]}},
                           "error": null})
                } else {
                    let text = line["request"]["content"]["parts"][0]["text"]
                        .as_str()
                        .unwrap_or("");
                    json!({"key": line["key"], "response": {"embedding": {"values": vector(text, dims)}}})
                };
                out.push_str(&answer.to_string());
                out.push('\n');
            }
            return (200, Vec::new(), out);
        }
        direct(r, n)
    })
}
