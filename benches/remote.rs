//! A remote embedding provider's cost, against the loopback server of the tests with 20 ms
//! added to every answer (about a nearby cloud region): indexing throughput in chunks/s
//! with batching off (direct requests of 64 inputs) and on (one OpenAI Batch API job:
//! upload, create, poll, output file; the server finishes jobs at once, so this measures
//! memoria's side of the flow, not a real provider's queue, which takes minutes to hours),
//! and the latency of a hybrid search whose query is embedded remotely.
//!
//! `cargo bench --bench remote`; numbers for the development VM are in issue 12's notes.

use std::time::{Duration, Instant};

use memoria::config::{Env, ProviderKind, Secret, Settings};
use memoria::{Memory, SearchOptions};

#[path = "../tests/support/loopback.rs"]
#[allow(dead_code)]
mod loopback;

const LATENCY: Duration = Duration::from_millis(20);
const DIMS: usize = 1536;
const FILES: usize = 1000;

fn main() {
    let jobs = loopback::batches(
        DIMS,
        loopback::BatchMode {
            polls: 0,
            fail: false,
        },
    );
    let server = loopback::serve(Box::new(move |request: &loopback::Request, n| {
        std::thread::sleep(LATENCY);
        jobs(request, n)
    }));
    let tmp = std::env::temp_dir().join(format!("memoria-bench-remote-{}", std::process::id()));
    let ws = tmp.join("ws");
    std::fs::create_dir_all(ws.join("memory")).expect("mkdir");
    for i in 0..FILES {
        let text: String = (0..40)
            .map(|j| {
                format!(
                    "Note {i} line {j}: the project ships feature {} soon.\n",
                    i * 7 + j
                )
            })
            .collect();
        std::fs::write(ws.join(format!("memory/note-{i:04}.md")), text).expect("write");
    }
    let mut last = None;
    for batch in [false, true] {
        let env = Env {
            home: Some(tmp.clone()),
            state_dir: Some(tmp.join(format!("state-{batch}"))),
            config_path: None,
            ranking: None,
            store_uri: None,
        };
        let mut settings = Settings::builtin("bench", &env);
        settings.workspace = ws.clone();
        settings.provider = ProviderKind::OpenAi;
        settings.remote.base_url = Some(format!("{}/v1", server.url));
        settings.remote.api_key = Some(Secret::Literal("sk-bench".into()));
        settings.remote.batch.enabled = batch;
        let memory = Memory::open(settings).expect("open");
        let before = server.requests.lock().map(|r| r.len()).unwrap_or(0);
        let started = Instant::now();
        let report = memory.sync(false, &|_| {}).expect("sync");
        let seconds = started.elapsed().as_secs_f64();
        assert_eq!(report.embed_error, None);
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        assert_eq!(report.embedded as u64, report.chunks);
        let requests = server.requests.lock().map(|r| r.len()).unwrap_or(0) - before;
        println!(
            "indexing through the remote provider ({} ms per answer, {DIMS}-d), batching {}: \
             {} chunks in {seconds:.2} s = {:.0} chunks/s ({requests} requests incl. the probe)",
            LATENCY.as_millis(),
            if batch { "on" } else { "off" },
            report.chunks,
            report.chunks as f64 / seconds
        );
        last = Some(memory);
    }
    let memory = last.expect("indexed");
    let options = SearchOptions::default();
    let mut times: Vec<f64> = (0..100)
        .map(|i| {
            let t = Instant::now();
            let payload = memory.memory_search(&format!("when does feature {i} ship"), &options);
            assert_eq!(payload.mode.as_deref(), Some("hybrid"));
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "hybrid search with the query embedded remotely: p50 {:.1} ms, p99 {:.1} ms (100 queries)",
        times[50], times[98]
    );
    drop(memory);
    let _ = std::fs::remove_dir_all(&tmp);
}
