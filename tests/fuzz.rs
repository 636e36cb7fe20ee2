//! Property-based fuzzing of every parser that reads user input: the Markdown chunker, the
//! JSON5 config (text and resolved values), the query/document analyzer, and session
//! transcripts (JSONL). Each target
//! runs `MEMORIA_FUZZ_CASES` generated inputs (default 2,000; CI uses the default) and
//! must never panic; the chunker's output must also stay well-formed. The seed is fixed,
//! so every run (CI's included) tries the same inputs and a failure reproduces.
//!
//! `MEMORIA_FUZZ_CASES=100000 cargo test --test fuzz --release` runs a longer campaign.

use std::path::Path;

use memoria::config::{self, Env};
use memoria::internals::chunk_markdown;
use memoria::internals::{redact, terms, transcript, AnalyzerMode};
use memoria::ChunkParams;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn cases() -> u32 {
    std::env::var("MEMORIA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000)
}

/// Runs `test` on `cases()` values of `strategy`, printing how many ran.
fn fuzz<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value)) {
    let config = Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    };
    // A fixed seed: CI runs the same inputs every time, so a failure reproduces.
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let result = runner.run(&strategy, |value| {
        test(value);
        Ok(())
    });
    if let Err(err) = result {
        panic!("{name}: {err}");
    }
    println!("fuzz {name}: {} cases, 0 failures", cases());
}

/// Text with Markdown structure, CJK, emoji, combining marks, CR/LF, NUL and long runs.
fn markdownish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[a-zA-Z0-9 ]{0,40}",
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("# ".to_string()),
        Just("```".to_string()),
        Just("- [ ] ".to_string()),
        "[记忆日本語한국어😀🧠é\u{301}\u{200d}\u{0}\t]{0,20}",
        "x{0,3000}",
    ];
    proptest::collection::vec(piece, 0..80).prop_map(|pieces| pieces.concat())
}

#[test]
fn chunker_never_panics_and_ranges_stay_in_the_file() {
    let params = (1usize..600, 0usize..700);
    fuzz(
        "chunker",
        (markdownish(), params),
        |(text, (tokens, overlap))| {
            let params = ChunkParams {
                tokens,
                overlap: overlap.min(tokens.saturating_sub(1)),
            };
            let lines = text.split('\n').count().max(1);
            for chunk in chunk_markdown(&text, params) {
                assert!(chunk.start_line >= 1 && chunk.start_line <= chunk.end_line);
                assert!(chunk.end_line <= lines, "{} > {lines}", chunk.end_line);
                assert_eq!(chunk.hash.len(), 64);
            }
        },
    );
}

/// JSON5-looking text: brackets, quotes, comments, escapes, numbers, keys memoria reads.
fn json5ish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(":".to_string()),
        Just(",".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("//".to_string()),
        Just("/*".to_string()),
        Just("*/".to_string()),
        Just("\n".to_string()),
        Just("agents".to_string()),
        Just("defaults".to_string()),
        Just("memorySearch".to_string()),
        Just("list".to_string()),
        Just("query".to_string()),
        Just("hybrid".to_string()),
        Just("apiKey".to_string()),
        "-?[0-9]{1,20}(\\.[0-9]{0,5})?(e[+-]?[0-9]{1,3})?",
        Just("NaN".to_string()),
        Just("Infinity".to_string()),
        "[a-z]{1,8}",
    ];
    proptest::collection::vec(piece, 0..120).prop_map(|pieces| pieces.concat())
}

/// Arbitrary JSON values shaped like a config (objects of the keys memoria reads).
fn config_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<i64>().prop_map(|i| Value::Number(i.into())),
        "[a-z~/{}. ]{0,12}".prop_map(Value::String),
    ];
    let keys = prop_oneof![
        Just("agents"),
        Just("defaults"),
        Just("list"),
        Just("id"),
        Just("memorySearch"),
        Just("memory"),
        Just("query"),
        Just("hybrid"),
        Just("vectorWeight"),
        Just("chunking"),
        Just("tokens"),
        Just("store"),
        Just("path"),
        Just("remote"),
        Just("apiKey"),
        Just("source"),
        Just("extraPaths"),
        Just("compaction"),
        Just("memoryFlush"),
        Just("workspace"),
    ];
    leaf.prop_recursive(6, 64, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(keys.clone(), inner, 0..5).prop_map(|map| {
                Value::Object(map.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

#[test]
fn config_parsing_and_resolution_never_panic() {
    let env = Env {
        home: Some("/home/u".into()),
        state_dir: None,
        config_path: None,
        ranking: None,
        store_uri: None,
    };
    fuzz("config text", json5ish(), |text| {
        if let Ok(value) = config::parse_config_text(&text, Path::new("fuzz.json5")) {
            let _ = config::resolve(&value, "main", &env);
        }
    });
    fuzz("config values", config_value(), |value| {
        let _ = config::resolve(&value, "main", &env);
        let _ = config::resolve(&value, "a", &env);
    });
}

#[test]
fn analyzer_never_panics() {
    let text = prop_oneof![markdownish(), "[a-zA-Z0-9_./\\-]{0,300}", "\\PC{0,200}",];
    fuzz("analyzer", text, |text| {
        for mode in [AnalyzerMode::Index, AnalyzerMode::Query] {
            for term in terms(&text, mode) {
                assert!(!term.is_empty());
                assert!(term.len() <= 128, "{} bytes", term.len());
            }
        }
    });
}

/// JSONL as OpenClaw writes it, damaged: message records (string or array content, any
/// role), other records, secrets, broken lines, blank lines, CRLF, NUL, odd Unicode.
fn jsonlish() -> impl Strategy<Value = String> {
    let text = "[a-zA-Z0-9 .,:/@=_-]{0,60}|[记忆😀é\u{301}\u{0}\t\n\\\"]{0,20}";
    let record = prop_oneof![
        (
            prop_oneof![
                Just("user"),
                Just("assistant"),
                Just("system"),
                Just("tool")
            ],
            text
        )
            .prop_map(|(role, text)| serde_json::json!({"type": "message",
                "message": {"role": role, "content": text}})
            .to_string()),
        (text, text).prop_map(|(a, b)| serde_json::json!({"type": "message",
            "message": {"role": "assistant", "content": [
                {"type": "text", "text": a}, {"type": "toolCall", "name": "x"},
                {"type": "text", "text": b}]}})
        .to_string()),
        Just(r#"{"type":"session","id":"s"}"#.to_string()),
        Just(r#"{"type":"message","message":{"role":"user","content":42}}"#.to_string()),
        Just(r#"{"type":"message","message":null}"#.to_string()),
        text.prop_map(
            |text| serde_json::json!({"type": "message", "message": {"role": "user",
            "content": format!("{text} key sk-abcdefghijklmnopqrstuvwx {text}")}})
            .to_string()
        ),
        Just("{broken".to_string()),
        Just(String::new()),
        "[\\{}\\[\\]\":,a-z0-9 ]{0,40}",
    ];
    (proptest::collection::vec(record, 0..40), any::<bool>())
        .prop_map(|(lines, crlf)| lines.join(if crlf { "\r\n" } else { "\n" }))
}

#[test]
fn transcripts_never_panic_and_cite_real_lines_in_order() {
    fuzz("session transcript", jsonlish(), |jsonl| {
        let input_lines = jsonl.lines().count();
        let t = transcript(&jsonl, "sessions/fuzz.jsonl");
        assert_eq!(t.text.lines().count(), t.source_lines.len(), "{jsonl:?}");
        assert!(t.source_lines.windows(2).all(|w| w[0] < w[1]), "{jsonl:?}");
        assert!(
            t.source_lines.iter().all(|&l| l >= 1 && l <= input_lines),
            "{jsonl:?}"
        );
        for line in t.text.lines() {
            assert!(
                line.starts_with("User: ") || line.starts_with("Assistant: "),
                "{line:?}"
            );
        }
        assert!(
            !t.text.contains("sk-abcdefghijklmnop"),
            "secrets are redacted: {jsonl:?}"
        );
        for w in &t.warnings {
            assert!(w.starts_with("sessions/fuzz.jsonl:"), "{w}");
        }
        let _ = redact(&jsonl);
    });
}
