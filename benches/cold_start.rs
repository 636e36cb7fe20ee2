//! Cold start: process start → first query vector, as `memoria embed --kind query` (or a
//! fresh MCP server) sees it, with the CPU time and peak RSS of each process.
//!
//! MEMORIA_TEST_MODEL_DIR=/path/to/embeddinggemma-300m cargo bench --bench cold_start
//! Optional: BENCH_RUNS (default 10).
//!
//! Three ways to start, interleaved run by run so the machine's drift hits them alike:
//! - `first start`: an empty cache; this process converts the model and writes the pack;
//! - `packed model`: every later start, mapping the pack;
//! - `source files`: a cache that cannot be written (what every start cost before the pack).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

struct Sample {
    wall: f64,
    cpu: f64,
    rss_mb: f64,
}

/// One `memoria embed --kind query` with `cache` as its cache directory.
// The child is reaped by `wait4` (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn start(model: &str, cache: &Path) -> Sample {
    let t = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .args(["--model", model, "embed", "--kind", "query"])
        .env("MEMORIA_CACHE_DIR", cache)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn memoria");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"{\"text\": \"which machine runs the memory gateway\"}\n")
        .expect("write query");
    drop(stdin);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().expect("stdout"), &mut out)
        .expect("read vector");
    let mut status = 0;
    // SAFETY: plain FFI; `usage` is written by wait4 for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    // SAFETY: as above.
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = t.elapsed().as_secs_f64();
    assert!(rc == pid && status == 0, "memoria embed failed");
    assert!(out.contains("\"embedding\""), "no vector: {out}");
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    Sample {
        wall,
        cpu: secs(usage.ru_utime) + secs(usage.ru_stime),
        rss_mb: usage.ru_maxrss as f64 / 1024.0,
    }
}

fn report(name: &str, samples: &[Sample]) {
    let median = |f: &dyn Fn(&Sample) -> f64| {
        let mut v: Vec<f64> = samples.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let min = |f: &dyn Fn(&Sample) -> f64| samples.iter().map(f).fold(f64::MAX, f64::min);
    println!(
        "{name:<14} runs {:>2}  wall p50 {:.3} s (min {:.3})  CPU p50 {:.3} s (min {:.3})  peak RSS p50 {:.0} MB",
        samples.len(),
        median(&|s| s.wall),
        min(&|s| s.wall),
        median(&|s| s.cpu),
        min(&|s| s.cpu),
        median(&|s| s.rss_mb),
    );
}

fn main() {
    let Ok(model) = std::env::var("MEMORIA_TEST_MODEL_DIR") else {
        eprintln!("note: MEMORIA_TEST_MODEL_DIR is not set; skipping the cold-start bench");
        return;
    };
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let tmp = tempfile::tempdir().expect("tempdir");
    let unwritable = tmp.path().join("a-file");
    std::fs::write(&unwritable, b"not a directory").expect("write");
    let (mut first, mut packed, mut source) = (Vec::new(), Vec::new(), Vec::new());
    // Warm the page cache for the source files and the binary.
    start(&model, &unwritable);
    for i in 0..runs {
        let cache = tmp.path().join(format!("cache-{i}"));
        if i < 3 {
            first.push(start(&model, &cache));
        }
        packed.push(start(&model, &tmp.path().join("cache-0")));
        source.push(start(&model, &unwritable));
    }
    report("first start", &first);
    report("packed model", &packed);
    report("source files", &source);
}
