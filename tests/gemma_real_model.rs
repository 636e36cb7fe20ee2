//! EmbeddingGemma-300m against PyTorch sentence-transformers outputs.
//!
//! Needs the real model: MEMORIA_TEST_MODEL_DIR=/path/to/embeddinggemma-300m (fetch with
//! shared/tools/fetch-embeddinggemma). Skipped, with a note, when unset. The golden file is
//! read from MEMORIA_GOLDEN or ../shared/golden/embeddinggemma-300m.json.
//!
//! The GGUF tests also need MEMORIA_TEST_GGUF_DIR: a directory with the Q8_0 files that
//! shared/tools/make-embeddinggemma-gguf makes from that model, without the Dense layers
//! (`embeddinggemma-300m-Q8_0.gguf`, as published) and with them (`--dense`).

use std::sync::OnceLock;

use candle_core::Device;
use memoria::embed::{EmbedKind, Embedder};
use memoria::gemma::{GemmaEmbedder, GemmaOptions, Precision};
use memoria::internals::cosine;

/// The f32 model as the product loads it on every start but the first: from its packed
/// model (mapped weights, table-driven tokenizer). The pack is built in a temporary cache
/// first.
fn model() -> Option<&'static GemmaEmbedder> {
    static MODEL: OnceLock<Option<GemmaEmbedder>> = OnceLock::new();
    MODEL.get_or_init(|| packed_model(Precision::F32)).as_ref()
}

/// The same in q8 (Q8_0 weights, int8 activations).
fn q8_model() -> Option<&'static GemmaEmbedder> {
    static MODEL: OnceLock<Option<GemmaEmbedder>> = OnceLock::new();
    MODEL.get_or_init(|| packed_model(Precision::Q8)).as_ref()
}

fn bf16_model() -> Option<&'static GemmaEmbedder> {
    static MODEL: OnceLock<Option<GemmaEmbedder>> = OnceLock::new();
    MODEL.get_or_init(|| packed_model(Precision::Bf16)).as_ref()
}

/// Loads `path` twice with a new cache: the first load writes the pack, the second (the one
/// returned) maps it, with the table-driven tokenizer.
fn load_from_new_pack(path: impl AsRef<std::path::Path>, options: GemmaOptions) -> GemmaEmbedder {
    let cache = Box::leak(Box::new(tempfile::tempdir().unwrap()));
    let options = || GemmaOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        ..options.clone()
    };
    let first = GemmaEmbedder::load(&path, &Device::Cpu, options()).expect("load model");
    assert!(
        first.origin().contains("packed model written to"),
        "{}",
        first.origin()
    );
    drop(first);
    let m = GemmaEmbedder::load(&path, &Device::Cpu, options()).expect("load model");
    assert!(m.origin().starts_with("packed model "), "{}", m.origin());
    assert_eq!(m.tokenizer_words(), "memoria BPE tables");
    m
}

fn packed_model(precision: Precision) -> Option<GemmaEmbedder> {
    let Ok(dir) = std::env::var("MEMORIA_TEST_MODEL_DIR") else {
        eprintln!("note: MEMORIA_TEST_MODEL_DIR is not set; skipping real-model tests");
        return None;
    };
    let options = GemmaOptions {
        precision,
        ..Default::default()
    };
    let m = load_from_new_pack(&dir, options);
    assert_eq!(m.precision(), precision);
    Some(m)
}

/// A GGUF file of MEMORIA_TEST_GGUF_DIR (`embeddinggemma-300m-Q8_0.gguf`, or
/// `embeddinggemma-300m-dense-Q8_0.gguf`); `None`, with a note, without the variable.
fn gguf_path(dense: bool) -> Option<std::path::PathBuf> {
    let Ok(dir) = std::env::var("MEMORIA_TEST_GGUF_DIR") else {
        eprintln!("note: MEMORIA_TEST_GGUF_DIR is not set; skipping the GGUF tests");
        return None;
    };
    let name = match dense {
        true => "embeddinggemma-300m-dense-Q8_0.gguf",
        false => "embeddinggemma-300m-Q8_0.gguf",
    };
    let path = std::path::Path::new(&dir).join(name);
    assert!(path.is_file(), "{} is missing", path.display());
    Some(path)
}

/// The published layout (no Dense layers) with the Dense layers of the safetensors model,
/// in q8, loaded as the product loads it after the first start: from its pack.
fn gguf_model() -> Option<&'static GemmaEmbedder> {
    static MODEL: OnceLock<Option<GemmaEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let (gguf, dir) = (
                gguf_path(false)?,
                std::env::var("MEMORIA_TEST_MODEL_DIR").ok()?,
            );
            let options = GemmaOptions {
                precision: Precision::Q8,
                dense_dir: Some(dir.clone().into()),
                ..Default::default()
            };
            let m = load_from_new_pack(&gguf, options);
            assert_eq!(
                m.dense_words(),
                Some(format!("Dense layers from {dir}").as_str())
            );
            Some(m)
        })
        .as_ref()
}

/// The model loaded from its source files (the `tokenizers` crate, weights converted).
fn model_from_source(precision: Precision) -> Option<GemmaEmbedder> {
    let dir = std::env::var("MEMORIA_TEST_MODEL_DIR").ok()?;
    let options = GemmaOptions {
        precision,
        ..Default::default()
    };
    let m = GemmaEmbedder::load(&dir, &Device::Cpu, options).expect("load model");
    assert_eq!(
        (m.origin(), m.tokenizer_words()),
        ("source files", "tokenizers crate")
    );
    Some(m)
}

/// The packed model is the source model: same fingerprint (so no index re-embeds), and
/// bit-identical vectors for queries and a packed batch of documents, in each precision.
#[test]
fn packed_model_equals_source_model() {
    for precision in [Precision::F32, Precision::Q8, Precision::Bf16] {
        packed_equals_source(precision);
    }
}

fn packed_equals_source(precision: Precision) {
    let packed = match precision {
        Precision::Q8 => q8_model(),
        Precision::Bf16 => bf16_model(),
        _ => model(),
    };
    let (Some(packed), Some(source)) = (packed, model_from_source(precision)) else {
        return;
    };
    assert_eq!(packed.fingerprint(), source.fingerprint());
    let docs = [
        "Mars, known for its reddish appearance, is often referred to as the Red Planet.",
        "東京で会議があった。",
        "",
    ];
    for kind in [EmbedKind::Query, EmbedKind::Document] {
        let a = packed.embed(&docs, kind).unwrap();
        let b = source.embed(&docs, kind).unwrap();
        for (a, b) in a.iter().zip(&b) {
            assert_eq!((&a.vector, a.tokens), (&b.vector, b.tokens));
        }
    }
}

/// The table-driven tokenizer gives the `tokenizers` crate's ids on every text of the eval
/// corpora (SciFact, XQuAD en/es/zh, LoCoMo workspaces) and on awkward strings.
#[test]
fn table_tokenizer_equals_tokenizers_crate_on_corpora() {
    let (Some(m), Ok(dir)) = (model(), std::env::var("MEMORIA_TEST_MODEL_DIR")) else {
        return;
    };
    let reference = tokenizers::Tokenizer::from_file(format!("{dir}/tokenizer.json")).unwrap();
    let eval = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/eval");
    let mut texts: Vec<String> = Vec::new();
    let jsonl = |path: String, limit: usize, texts: &mut Vec<String>| {
        let body = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in body.lines().take(limit) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            for key in ["title", "text"] {
                if let Some(t) = v[key].as_str() {
                    texts.push(t.to_string());
                }
            }
        }
    };
    jsonl(format!("{eval}/scifact/corpus.jsonl"), 1500, &mut texts);
    jsonl(
        format!("{eval}/scifact/queries.jsonl"),
        usize::MAX,
        &mut texts,
    );
    for lang in ["en", "es", "zh"] {
        jsonl(
            format!("{eval}/xquad/xquad-{lang}/corpus.jsonl"),
            usize::MAX,
            &mut texts,
        );
        jsonl(
            format!("{eval}/xquad/xquad-{lang}/queries.jsonl"),
            usize::MAX,
            &mut texts,
        );
    }
    let mut stack = vec![std::path::PathBuf::from(format!("{eval}/locomo"))];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if p.extension().is_some_and(|e| e == "md" || e == "jsonl") {
            texts.push(std::fs::read_to_string(&p).unwrap());
        }
    }
    assert!(texts.len() > 5000, "{} texts", texts.len());
    texts.extend(
        [
            "  two leading spaces, trailing tab\t",
            "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n x",
            "<start_of_turn>user\nhi<end_of_turn><eos><pad><unused99><image_soft_token>",
            "🧑🏽‍🚀 \u{1F1FA}\u{1F1F8} \u{200B}zero\u{200D}width \r\n crlf",
            "\u{0}\u{1}\u{1b}[31mred\u{1b}[0m \u{fffd}",
            "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ ｶﾀｶﾅ",
        ]
        .map(String::from),
    );
    let mut compared = 0;
    // The GGUF file's tokenizer, rebuilt from its SentencePiece vocabulary, too. The
    // published tokenizer.json alone has `<image_soft_token>`, id 262144: one past the
    // model's embedding table (the GGUF vocabulary, 262144 pieces, spells it out instead).
    let gguf = gguf_model();
    let models = [Some(m), gguf];
    for (m, kind) in models
        .iter()
        .flatten()
        .flat_map(|m| [(m, EmbedKind::Query), (m, EmbedKind::Document)])
    {
        let is_gguf = gguf.is_some_and(|g| std::ptr::eq(g, *m));
        for text in &texts {
            if is_gguf && text.contains("<image_soft_token>") {
                continue;
            }
            let (ids, truncated) = m.tokenize(text, kind.into()).unwrap();
            let input = format!("{}{text}", m.prompt(kind.into()));
            let want = reference.encode(input.as_str(), true).unwrap();
            let want = want.get_ids();
            if truncated {
                assert_eq!(ids[..ids.len() - 1], want[..ids.len() - 1], "{text:?}");
            } else {
                assert_eq!(ids, want, "{kind:?} {text:?}");
            }
            compared += 1;
        }
    }
    eprintln!("tokenizer: {compared} encodings equal to the tokenizers crate's");
}

struct Case {
    kind: EmbedKind,
    text: String,
    len: usize,
    head: Vec<u32>,
    tail: Vec<u32>,
    embedding: Vec<f32>,
}

fn golden() -> Option<Vec<Case>> {
    let path = std::env::var("MEMORIA_GOLDEN").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/golden/embeddinggemma-300m.json"
        )
        .to_string()
    });
    // With a real model configured, a missing golden file is a failure, not a skip.
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("golden file {path}: {e} (set MEMORIA_GOLDEN)"));
    let v: serde_json::Value = serde_json::from_str(&text).expect("golden json");
    let ids = |v: &serde_json::Value| -> Vec<u32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect()
    };
    Some(
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| Case {
                kind: if c["kind"] == "query" {
                    EmbedKind::Query
                } else {
                    EmbedKind::Document
                },
                text: c["text"].as_str().unwrap().to_string(),
                len: c["input_ids_len"].as_u64().unwrap() as usize,
                head: ids(&c["input_ids_head"]),
                tail: ids(&c["input_ids_tail"]),
                embedding: c["embedding"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect(),
            })
            .collect(),
    )
}

#[test]
fn golden_cases_match_pytorch() {
    let (Some(m), Some(cases)) = (model(), golden()) else {
        return;
    };
    assert_eq!(cases.len(), 17);
    for kind in [EmbedKind::Query, EmbedKind::Document] {
        let sel: Vec<&Case> = cases.iter().filter(|c| c.kind == kind).collect();
        let texts: Vec<&str> = sel.iter().map(|c| c.text.as_str()).collect();
        // One call per kind: the documents go through packed batches.
        let out = m.embed(&texts, kind).unwrap();
        for (c, e) in sel.iter().zip(&out) {
            let (ids, truncated) = m.tokenize(&c.text, kind.into()).unwrap();
            let label: String = c.text.chars().take(40).collect();
            assert_eq!(ids.len(), c.len, "{label}: token count");
            assert_eq!(e.tokens, c.len, "{label}: reported tokens");
            assert!(!truncated && !e.truncated);
            assert!(
                ids.starts_with(&c.head),
                "{label}: first ids {:?}",
                &ids[..c.head.len().min(ids.len())]
            );
            assert!(ids.ends_with(&c.tail), "{label}: last ids");
            let cos = cosine(&e.vector, &c.embedding);
            assert!(cos >= 0.9999, "{label} ({} tokens): cosine {cos}", c.len);
        }
    }
}

/// q8 (Q8_0 weights, int8 activations; attention in bf16 where the CPU runs bf16 fast)
/// against PyTorch f32: worst cosine ≥ 0.9995 (the gate for every precision `auto` may
/// choose), and a fingerprint of its own, so q8 and f32 vectors never share an index.
#[test]
fn golden_cases_match_pytorch_in_q8() {
    let (Some(q8), Some(f32_model), Some(cases)) = (q8_model(), model(), golden()) else {
        return;
    };
    assert_ne!(q8.fingerprint(), f32_model.fingerprint());
    let worst = worst_golden_cosine(q8, &cases);
    eprintln!(
        "q8 worst cosine to PyTorch f32: {} ({:?})",
        worst.0, worst.1
    );
    assert!(
        worst.0 >= 0.9995,
        "q8: cosine {} for {:?}",
        worst.0,
        worst.1
    );
}

/// bf16 (bf16 weights and activations, f32 sums) against PyTorch f32: worst cosine ≥ 0.9995
/// (the gate for every precision `auto` may choose), from a packed model (the bf16 panels
/// round-trip through the pack), and a fingerprint of its own. Here it runs whichever bf16
/// kernel the CPU has (AMX, AVX512-BF16, or the widened f32 path, whose arithmetic is the
/// same up to the order of the sums).
#[test]
fn golden_cases_match_pytorch_in_bf16() {
    let (Some(bf16), Some(f32_model), Some(cases)) = (bf16_model(), model(), golden()) else {
        return;
    };
    assert_ne!(bf16.fingerprint(), f32_model.fingerprint());
    let worst = worst_golden_cosine(bf16, &cases);
    eprintln!(
        "bf16 worst cosine to PyTorch f32: {} ({:?})",
        worst.0, worst.1
    );
    assert!(
        worst.0 >= 0.9995,
        "bf16: cosine {} for {:?}",
        worst.0,
        worst.1
    );
}

/// The GGUF files made by the shared tool (llama.cpp's converter) match PyTorch within the q8
/// gate: the published layout with the safetensors model's Dense layers, and the `--dense`
/// file on its own (both precisions). Without Dense layers a file embeds into another space,
/// under its own fingerprint, and says so.
#[test]
fn gguf_files_match_pytorch_within_the_q8_gate() {
    let (Some(borrowed), Some(dense), Some(plain), Some(cases)) =
        (gguf_model(), gguf_path(true), gguf_path(false), golden())
    else {
        return;
    };
    let worst = worst_golden_cosine(borrowed, &cases);
    eprintln!(
        "GGUF + safetensors Dense, q8: worst cosine {} ({:?})",
        worst.0, worst.1
    );
    assert!(worst.0 >= 0.995, "cosine {} for {:?}", worst.0, worst.1);
    let mut fingerprints = vec![borrowed.fingerprint().to_string()];
    for precision in [Precision::Q8, Precision::F32] {
        let options = GemmaOptions {
            precision,
            ..Default::default()
        };
        let m = GemmaEmbedder::load(&dense, &Device::Cpu, options).expect("load dense GGUF");
        assert_eq!(m.dense_words(), Some("Dense layers from the GGUF file"));
        let worst = worst_golden_cosine(&m, &cases);
        eprintln!(
            "GGUF --dense, {precision}: worst cosine {} ({:?})",
            worst.0, worst.1
        );
        assert!(worst.0 >= 0.995, "cosine {} for {:?}", worst.0, worst.1);
        fingerprints.push(m.fingerprint().to_string());
    }
    let m = GemmaEmbedder::load(&plain, &Device::Cpu, GemmaOptions::default()).expect("load");
    let words = m.dense_words().unwrap_or_default();
    assert!(
        words.starts_with("no Dense layers: vectors are the file's pooled"),
        "{words}"
    );
    let cases_q: Vec<&Case> = cases
        .iter()
        .filter(|c| c.kind == EmbedKind::Query)
        .collect();
    let out = m
        .embed(&[cases_q[0].text.as_str()], EmbedKind::Query)
        .unwrap();
    let cos = cosine(&out[0].vector, &cases_q[0].embedding);
    eprintln!("GGUF without Dense: cosine {cos} to the sentence embedding");
    assert!(cos.abs() < 0.5, "cosine {cos}: expected another space");
    fingerprints.push(m.fingerprint().to_string());
    let distinct: std::collections::HashSet<&String> = fingerprints.iter().collect();
    assert_eq!(distinct.len(), fingerprints.len(), "{fingerprints:?}");
}

/// The worst cosine of `m`'s vectors to PyTorch's over the golden cases (token counts
/// checked), and the case's first words.
fn worst_golden_cosine(m: &GemmaEmbedder, cases: &[Case]) -> (f32, String) {
    let mut worst = (1.0f32, String::new());
    for kind in [EmbedKind::Query, EmbedKind::Document] {
        let sel: Vec<&Case> = cases.iter().filter(|c| c.kind == kind).collect();
        let texts: Vec<&str> = sel.iter().map(|c| c.text.as_str()).collect();
        let out = m.embed(&texts, kind).unwrap();
        for (c, e) in sel.iter().zip(&out) {
            assert_eq!(e.tokens, c.len);
            let cos = cosine(&e.vector, &c.embedding);
            if cos < worst.0 {
                worst = (cos, c.text.chars().take(40).collect());
            }
        }
    }
    worst
}

#[test]
fn model_card_similarities() {
    let Some(m) = model() else { return };
    let q = m
        .embed(
            &["Which planet is known as the Red Planet?"],
            EmbedKind::Query,
        )
        .unwrap();
    let docs = [
        "Venus is often called Earth's twin because of its similar size and proximity.",
        "Mars, known for its reddish appearance, is often referred to as the Red Planet.",
        "Jupiter, the largest planet in our solar system, has a prominent red spot.",
        "Saturn, famous for its rings, is sometimes mistaken for the Red Planet.",
    ];
    let d = m.embed(&docs, EmbedKind::Document).unwrap();
    let want = [0.301, 0.636, 0.493, 0.489];
    for (e, w) in d.iter().zip(want) {
        let s = cosine(&q[0].vector, &e.vector);
        assert!((s - w).abs() <= 0.002, "similarity {s} vs {w}");
    }
}

#[test]
fn mixed_length_batch_equals_single_texts() {
    let (Some(m), Some(cases)) = (model(), golden()) else {
        return;
    };
    // Mixed lengths 9..166 tokens (the 1,000+ token cases are covered by the golden test).
    let texts: Vec<&str> = cases
        .iter()
        .filter(|c| c.len < 200)
        .map(|c| c.text.as_str())
        .collect();
    let batch = m.embed(&texts, EmbedKind::Document).unwrap();
    for (t, b) in texts.iter().zip(&batch) {
        let single = m.embed(&[t], EmbedKind::Document).unwrap();
        assert_eq!(single[0].tokens, b.tokens);
        let c = cosine(&single[0].vector, &b.vector);
        assert!(
            c >= 0.99999,
            "batch vs single cosine {c} for {} tokens",
            b.tokens
        );
    }
}

#[test]
fn matryoshka_dims_on_real_model() {
    let Some(dir) = std::env::var_os("MEMORIA_TEST_MODEL_DIR") else {
        return;
    };
    let Some(full) = model() else { return };
    let m = GemmaEmbedder::load(
        &dir,
        &Device::Cpu,
        GemmaOptions {
            dims: Some(256),
            precision: Precision::F32,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(m.dims(), 256);
    let text = ["Mars, known for its reddish appearance, is often referred to as the Red Planet."];
    let a = m.embed(&text, EmbedKind::Document).unwrap();
    let b = full.embed(&text, EmbedKind::Document).unwrap();
    assert_eq!(a[0].vector.len(), 256);
    assert!(cosine(&a[0].vector, &b[0].vector[..256]) > 0.99999);
    assert_ne!(m.fingerprint(), full.fingerprint());
}

/// Texts that are empty or have surrounding whitespace embed as sentence-transformers
/// embeds them (it does not strip): token counts equal, cosine ≥ 0.99999. Reference:
/// `tests/data/st-whitespace.json`, written by `tests/data/st-whitespace.py`.
#[test]
fn whitespace_and_empty_texts_match_sentence_transformers() {
    let Some(model) = model() else { return };
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/st-whitespace.json");
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for case in reference["cases"].as_array().unwrap() {
        let kind = match case["kind"].as_str().unwrap() {
            "query" => EmbedKind::Query,
            _ => EmbedKind::Document,
        };
        let text = case["text"].as_str().unwrap();
        let want: Vec<f32> = case["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let got = model.embed(&[text], kind).unwrap().remove(0);
        assert_eq!(
            got.tokens as u64,
            case["tokens"].as_u64().unwrap(),
            "{kind:?} {text:?}"
        );
        let cos = cosine(&got.vector, &want);
        assert!(cos >= 0.99999, "{kind:?} {text:?}: cosine {cos}");
    }
}

/// The GPU build (`--features cuda`) on a GPU: the golden cases on `cuda:0`, f32, within the
/// same gate as the CPU. Skipped, with a note, when no CUDA device can run the model (this
/// also covers a machine with the CUDA libraries but no GPU or driver).
#[cfg(feature = "cuda")]
#[test]
fn golden_cases_match_pytorch_on_cuda() {
    let (Ok(dir), Some(cases)) = (std::env::var("MEMORIA_TEST_MODEL_DIR"), golden()) else {
        return;
    };
    let on_gpu = Device::new_cuda(0)
        .map_err(|e| e.to_string())
        .and_then(|device| {
            GemmaEmbedder::load(&dir, &device, GemmaOptions::default()).map_err(|e| e.to_string())
        })
        .and_then(|m| {
            m.embed(&["probe"], EmbedKind::Query)
                .map_err(|e| e.to_string())
                .map(|_| m)
        });
    let m = match on_gpu {
        Ok(m) => m,
        Err(why) => {
            let why = why.lines().next().unwrap_or_default();
            eprintln!("note: no usable CUDA device ({why}); skipping the CUDA golden test");
            return;
        }
    };
    for kind in [EmbedKind::Query, EmbedKind::Document] {
        let sel: Vec<&Case> = cases.iter().filter(|c| c.kind == kind).collect();
        let texts: Vec<&str> = sel.iter().map(|c| c.text.as_str()).collect();
        let out = m.embed(&texts, kind).unwrap();
        for (c, e) in sel.iter().zip(&out) {
            let cos = cosine(&e.vector, &c.embedding);
            assert!(cos >= 0.9999, "{:?} on cuda: cosine {cos}", c.text);
        }
    }
}
