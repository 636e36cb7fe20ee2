use super::*;

fn parse(body: Value) -> Result<EmbeddingsRequest, ApiError> {
    parse_request(body.to_string().as_bytes(), 768)
}

#[test]
fn requests_are_read_as_openai_writes_them() {
    let ok = parse(json!({"model": "embeddinggemma-300m", "input": "hello"})).unwrap();
    assert_eq!(ok.texts, ["hello"]);
    assert_eq!(
        (ok.base64, ok.dimensions, ok.kind),
        (false, None, EmbedKind::Document)
    );
    let ok = parse(
        json!({"model": "google/embeddinggemma-300m", "input": ["a", "b"],
        "encoding_format": "base64", "dimensions": 256, "input_type": "query", "user": "u"}),
    )
    .unwrap();
    assert_eq!(
        (ok.texts.len(), ok.base64, ok.dimensions, ok.kind),
        (2, true, Some(256), EmbedKind::Query)
    );
    assert_eq!(
        parse(json!({"model": "embeddinggemma", "input": "x", "task": "passage"}))
            .unwrap()
            .kind,
        EmbedKind::Document
    );
    let cases = [
        (json!({"input": "x"}), 400, "`model` is required"),
        (
            json!({"model": "gpt-4", "input": "x"}),
            404,
            "The model `gpt-4` does not exist",
        ),
        (
            json!({"model": "embeddinggemma", "input": []}),
            400,
            "empty list",
        ),
        (
            json!({"model": "embeddinggemma", "input": [1, 2, 3]}),
            400,
            "token arrays are not supported",
        ),
        (
            json!({"model": "embeddinggemma", "input": [[1, 2]]}),
            400,
            "token arrays are not supported",
        ),
        (
            json!({"model": "embeddinggemma", "input": 7}),
            400,
            "a string or a list of strings",
        ),
        (
            json!({"model": "embeddinggemma", "input": ["a", 1]}),
            400,
            "a string or a list of strings",
        ),
        (
            json!({"model": "embeddinggemma", "input": ""}),
            400,
            "empty string",
        ),
        (
            json!({"model": "embeddinggemma", "input": vec!["x"; 2049]}),
            400,
            "at most 2048",
        ),
        (
            json!({"model": "embeddinggemma", "input": "x", "dimensions": 300}),
            400,
            "`dimensions` must be one of",
        ),
        (
            json!({"model": "embeddinggemma", "input": "x", "dimensions": "256"}),
            400,
            "`dimensions` must be one of",
        ),
        (
            json!({"model": "embeddinggemma", "input": "x", "encoding_format": "hex"}),
            400,
            "`encoding_format`",
        ),
        (
            json!({"model": "embeddinggemma", "input": "x", "input_type": "code"}),
            400,
            "`input_type`",
        ),
        (json!(["not", "an", "object"]), 400, "a JSON object"),
    ];
    for (body, status, message) in cases {
        let error = parse(body.clone()).unwrap_err();
        assert_eq!(error.status.as_u16(), status, "{body}");
        assert!(error.message.contains(message), "{body}: {}", error.message);
    }
    let err = parse_request(b"{not json", 768).unwrap_err();
    assert_eq!(err.status, StatusCode::BAD_REQUEST);
}

#[test]
fn local_hosts() {
    for host in [
        "localhost",
        "localhost:8080",
        "127.0.0.1",
        "127.0.0.1:19433",
        "[::1]",
        "[::1]:80",
        "LOCALHOST",
    ] {
        assert!(is_local_host(host), "{host}");
    }
    for host in [
        "example.com",
        "evil.localhost.example",
        "10.0.0.2:80",
        "",
        "127.0.0.1.nip.io",
    ] {
        assert!(!is_local_host(host), "{host}");
    }
}

#[test]
fn base64_is_little_endian_f32() {
    assert_eq!(base64_f32(&[1.0]), "AACAPw==");
}

/// A model that embeds only when told to, counting the calls and their sizes.
struct Gate {
    open: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    calls: std::sync::Mutex<Vec<usize>>,
}

impl Embedder for Gate {
    fn embed(&self, texts: &[&str], _: EmbedKind) -> Result<Vec<Embedding>, memoria::EmbedError> {
        let _ = self.open.lock().unwrap().recv();
        self.calls.lock().unwrap().push(texts.len());
        Ok(texts
            .iter()
            .map(|_| Embedding {
                vector: vec![1.0, 0.0],
                tokens: 3,
                truncated: false,
            })
            .collect())
    }
    fn dims(&self) -> usize {
        2
    }
    fn fingerprint(&self) -> &str {
        "gate"
    }
    fn max_tokens(&self) -> usize {
        2048
    }
}

/// Waiting requests are embedded together, and a full queue answers 503 with Retry-After.
#[test]
fn requests_share_the_models_batches_and_a_full_queue_says_retry() {
    let (shared, gate, release) = gated();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = || Body::from(r#"{"model": "embeddinggemma", "input": ["a", "b"]}"#);
    runtime.block_on(async {
        // The first request holds the model; the next ones wait in the queue.
        let first = tokio::spawn(embeddings(State(shared.clone()), body()));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let mut waiting = Vec::new();
        for _ in 0..QUEUE {
            waiting.push(tokio::spawn(embeddings(State(shared.clone()), body())));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let full = embeddings(State(shared.clone()), body()).await;
        assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(full.headers()[header::RETRY_AFTER], "1");
        for _ in 0..=QUEUE {
            release.send(()).unwrap();
        }
        assert_eq!(first.await.unwrap().status(), StatusCode::OK);
        for request in waiting {
            assert_eq!(request.await.unwrap().status(), StatusCode::OK);
        }
    });
    // 64 waiting requests of 2 texts went to the model in batches of up to 64 texts.
    let calls = gate.calls.lock().unwrap().clone();
    assert_eq!(calls[0], 2, "the first request alone");
    assert!(
        calls[1..].iter().all(|&n| n > 2),
        "waiting requests batched together: {calls:?}"
    );
    assert_eq!(calls.iter().sum::<usize>(), 2 * (QUEUE + 1));
}

/// The server of a test: [`Gate`] as its model.
fn gated() -> (Arc<Shared>, Arc<Gate>, std::sync::mpsc::Sender<()>) {
    let (release, open) = std::sync::mpsc::channel();
    let gate = Arc::new(Gate {
        open: std::sync::Mutex::new(open),
        calls: Default::default(),
    });
    let shared = Arc::new(Shared {
        model: OnceLock::new(),
        load_error: OnceLock::new(),
        token: None,
        loopback: true,
        on_mcp: Box::new(|| {}),
    });
    let _ = shared.model.set(Batcher::start(gate.clone()));
    (shared, gate, release)
}

/// A request of `n` texts.
fn texts(n: usize) -> Body {
    let input: Vec<String> = (0..n).map(|i| format!("text {i}")).collect();
    Body::from(json!({"model": "embeddinggemma", "input": input}).to_string())
}

/// Requests whose clients went away (their handlers dropped, as hyper drops them with the
/// connection) are not embedded: queued ones not at all, a running one not past the call
/// under way. The next request waits for one call, not for them.
#[test]
fn abandoned_requests_do_not_delay_the_next_one() {
    let (shared, gate, release) = gated();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pause = || tokio::time::sleep(std::time::Duration::from_millis(50));
    runtime.block_on(async {
        // A request of 200 texts holds the model in its first call of 64.
        let heavy = tokio::spawn(embeddings(State(shared.clone()), texts(200)));
        pause().await;
        // Five requests of 32 texts wait behind it; then every one of their clients,
        // and the heavy one's, goes away.
        let mut abandoned = Vec::new();
        for _ in 0..5 {
            abandoned.push(tokio::spawn(embeddings(State(shared.clone()), texts(32))));
        }
        pause().await;
        heavy.abort();
        for request in &abandoned {
            request.abort();
        }
        pause().await;
        let next = tokio::spawn(embeddings(State(shared.clone()), texts(1)));
        pause().await;
        release.send(()).unwrap(); // the heavy request's call under way
        release.send(()).unwrap(); // the next request's
        let answered = tokio::time::timeout(std::time::Duration::from_secs(10), next).await;
        let answered = answered.expect("the next request waited for abandoned ones");
        assert_eq!(answered.unwrap().status(), StatusCode::OK);
    });
    assert_eq!(
        gate.calls.lock().unwrap().clone(),
        [BATCH_TEXTS, 1],
        "only the call under way and the next request's were embedded"
    );
}

/// A request larger than one call is embedded in calls of up to 64 texts and answered
/// whole, in order.
#[test]
fn a_large_request_is_embedded_in_calls_and_answered_whole() {
    let (shared, gate, release) = gated();
    for _ in 0..4 {
        release.send(()).unwrap();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let response = runtime.block_on(embeddings(State(shared), texts(200)));
    assert_eq!(response.status(), StatusCode::OK);
    let body = runtime
        .block_on(http_body_util::BodyExt::collect(response.into_body()))
        .unwrap()
        .to_bytes();
    let answer: Value = serde_json::from_slice(&body).unwrap();
    let data = answer["data"].as_array().unwrap();
    assert_eq!(data.len(), 200);
    assert!(data.iter().enumerate().all(|(i, d)| d["index"] == i));
    assert_eq!(gate.calls.lock().unwrap().clone(), [64, 64, 64, 8]);
}
