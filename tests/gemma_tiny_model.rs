//! EmbeddingGemma code paths on a tiny random Gemma3 written to a temp dir: loading and its
//! errors, fused kernels vs plain candle ops, packing/masking, pooling, Matryoshka.
//! Needs no real weights.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{Device, Tensor};
use memoria::embed::{EmbedKind, Embedder};
use memoria::gemma::{GemmaEmbedder, GemmaError, GemmaOptions, Precision, Prompt};
use memoria::internals::cosine;
use serde_json::json;

const HIDDEN: usize = 64;
const INTER: usize = 100;
const VOCAB: usize = 48;
const DENSE_MID: usize = 256;
const OUT: usize = 768;
const WORDS: [&str; 40] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi",
    "psi", "omega", "task", "search", "result", "query", "title", "none", "text", ":", "|", "red",
    "planet", "mars", "venus", "the", "is", "a",
];

struct Spec {
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    sliding_window: usize,
}

const MQA: Spec = Spec {
    heads: 2,
    kv_heads: 1,
    head_dim: 32,
    sliding_window: 8,
};
const GQA: Spec = Spec {
    heads: 4,
    kv_heads: 2,
    head_dim: 16,
    sliding_window: 6,
};

/// Deterministic pseudo-random values in [-scale, scale], exactly representable in f16 (the
/// fused CPU path stores linear weights as f16, so both paths then see the same weights).
fn values(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale;
            half::f16::from_f32(v).to_f32()
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64, scale: f32) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(values(n, seed, scale), shape, &Device::Cpu).unwrap()
}

fn write_json(path: &Path, v: &serde_json::Value) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

fn encoder_tensors(spec: &Spec) -> HashMap<String, Tensor> {
    let (h, hd) = (HIDDEN, spec.head_dim);
    let mut t = HashMap::new();
    let mut seed = 1;
    let mut add = |t: &mut HashMap<String, Tensor>, name: String, shape: &[usize], scale: f32| {
        seed += 1;
        t.insert(name, tensor(shape, seed, scale));
    };
    add(&mut t, "embed_tokens.weight".into(), &[VOCAB, h], 0.5);
    add(&mut t, "norm.weight".into(), &[h], 0.3);
    for l in 0..2 {
        let p = format!("layers.{l}");
        add(&mut t, format!("{p}.input_layernorm.weight"), &[h], 0.3);
        add(
            &mut t,
            format!("{p}.post_attention_layernorm.weight"),
            &[h],
            0.3,
        );
        add(
            &mut t,
            format!("{p}.pre_feedforward_layernorm.weight"),
            &[h],
            0.3,
        );
        add(
            &mut t,
            format!("{p}.post_feedforward_layernorm.weight"),
            &[h],
            0.3,
        );
        add(&mut t, format!("{p}.self_attn.q_norm.weight"), &[hd], 0.3);
        add(&mut t, format!("{p}.self_attn.k_norm.weight"), &[hd], 0.3);
        add(
            &mut t,
            format!("{p}.self_attn.q_proj.weight"),
            &[spec.heads * hd, h],
            0.3,
        );
        add(
            &mut t,
            format!("{p}.self_attn.k_proj.weight"),
            &[spec.kv_heads * hd, h],
            0.3,
        );
        add(
            &mut t,
            format!("{p}.self_attn.v_proj.weight"),
            &[spec.kv_heads * hd, h],
            0.3,
        );
        add(
            &mut t,
            format!("{p}.self_attn.o_proj.weight"),
            &[h, spec.heads * hd],
            0.3,
        );
        add(
            &mut t,
            format!("{p}.mlp.gate_proj.weight"),
            &[INTER, h],
            0.3,
        );
        add(&mut t, format!("{p}.mlp.up_proj.weight"), &[INTER, h], 0.3);
        add(
            &mut t,
            format!("{p}.mlp.down_proj.weight"),
            &[h, INTER],
            0.3,
        );
    }
    t
}

fn tokenizer_json() -> serde_json::Value {
    let mut vocab = serde_json::Map::new();
    for (i, s) in ["<pad>", "<eos>", "<bos>", "<unk>"].iter().enumerate() {
        vocab.insert(s.to_string(), json!(i));
    }
    for (i, w) in WORDS.iter().enumerate() {
        vocab.insert(w.to_string(), json!(i + 4));
    }
    let special = |id: usize, s: &str| {
        json!({"id": id, "content": s, "single_word": false, "lstrip": false, "rstrip": false,
               "normalized": false, "special": true})
    };
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [special(0, "<pad>"), special(1, "<eos>"), special(2, "<bos>"), special(3, "<unk>")],
        "normalizer": null,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<eos>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                     {"SpecialToken": {"id": "<eos>", "type_id": 1}}],
            "special_tokens": {
                "<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]},
                "<eos>": {"id": "<eos>", "ids": [1], "tokens": ["<eos>"]}
            }
        },
        "decoder": null,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    })
}

/// Writes a complete tiny sentence-transformers EmbeddingGemma directory.
fn write_model(dir: &Path, spec: &Spec) {
    write_json(
        &dir.join("config.json"),
        &json!({
            "architectures": ["Gemma3TextModel"],
            "model_type": "gemma3_text",
            "hidden_size": HIDDEN,
            "intermediate_size": INTER,
            "num_hidden_layers": 2,
            "num_attention_heads": spec.heads,
            "num_key_value_heads": spec.kv_heads,
            "head_dim": spec.head_dim,
            "vocab_size": VOCAB,
            "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0,
            "rope_local_base_freq": 10000.0,
            "query_pre_attn_scalar": spec.head_dim,
            "sliding_window": spec.sliding_window,
            "layer_types": ["sliding_attention", "full_attention"],
            "hidden_activation": "gelu_pytorch_tanh",
            "max_position_embeddings": 64,
            "use_bidirectional_attention": true,
            "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0
        }),
    );
    write_json(
        &dir.join("modules.json"),
        &json!([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
            {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"},
            {"idx": 4, "name": "4", "path": "4_Normalize", "type": "sentence_transformers.models.Normalize"}
        ]),
    );
    write_json(
        &dir.join("1_Pooling/config.json"),
        &json!({"word_embedding_dimension": HIDDEN, "pooling_mode_mean_tokens": true, "include_prompt": true}),
    );
    write_json(
        &dir.join("config_sentence_transformers.json"),
        &json!({"prompts": {"query": "task : search result | query : ", "document": "title : none | text : "}}),
    );
    write_json(
        &dir.join("sentence_bert_config.json"),
        &json!({"max_seq_length": 48, "do_lower_case": false}),
    );
    write_json(&dir.join("tokenizer.json"), &tokenizer_json());
    candle_core::safetensors::save(&encoder_tensors(spec), dir.join("model.safetensors")).unwrap();
    for (sub, i, o, seed) in [
        ("2_Dense", HIDDEN, DENSE_MID, 900),
        ("3_Dense", DENSE_MID, OUT, 901),
    ] {
        write_json(
            &dir.join(sub).join("config.json"),
            &json!({"in_features": i, "out_features": o, "bias": false,
                    "activation_function": "torch.nn.modules.linear.Identity"}),
        );
        let mut m = HashMap::new();
        m.insert("linear.weight".to_string(), tensor(&[o, i], seed, 0.2));
        candle_core::safetensors::save(&m, dir.join(sub).join("model.safetensors")).unwrap();
    }
}

fn model_dir(spec: &Spec) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_model(dir.path(), spec);
    dir
}

fn load(dir: &Path, options: GemmaOptions) -> GemmaEmbedder {
    GemmaEmbedder::load(dir, &Device::Cpu, options).unwrap()
}

fn sentence(n: usize, seed: usize) -> String {
    (0..n)
        .map(|i| WORDS[(i * 7 + seed * 13) % 24])
        .collect::<Vec<_>>()
        .join(" ")
}

fn texts() -> Vec<String> {
    // Lengths (with prompt and BOS/EOS) from 9 to 40 tokens: many longer than the windows.
    [1usize, 30, 3, 12, 25, 7, 2, 18]
        .iter()
        .enumerate()
        .map(|(s, &n)| sentence(n, s))
        .collect()
}

#[test]
fn loads_and_reports_shape() {
    let dir = model_dir(&MQA);
    let m = load(dir.path(), GemmaOptions::default());
    assert_eq!(m.dims(), OUT);
    assert_eq!(m.max_tokens(), 48);
    let out = m.embed(&["alpha beta", "gamma"], EmbedKind::Query).unwrap();
    assert_eq!(out.len(), 2);
    for e in &out {
        assert_eq!(e.vector.len(), OUT);
        let norm: f32 = e.vector.iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
        assert!(!e.truncated);
        assert!(e.vector.iter().all(|v| v.is_finite()));
    }
    // "task : search result | query : alpha beta" = 9 words + BOS + EOS.
    assert_eq!(out[0].tokens, 11);
    assert!(m.embed(&[], EmbedKind::Query).unwrap().is_empty());
    // An empty text still has its prompt.
    let e = m.embed(&[""], EmbedKind::Document).unwrap();
    assert_eq!(e[0].tokens, 8);
}

#[test]
fn fused_kernels_match_plain_candle_ops() {
    for spec in [&MQA, &GQA] {
        let dir = model_dir(spec);
        let fused = load(
            dir.path(),
            GemmaOptions {
                precision: Precision::F32,
                ..Default::default()
            },
        );
        let generic = load(
            dir.path(),
            GemmaOptions {
                generic_kernels: true,
                ..Default::default()
            },
        );
        let t = texts();
        let refs: Vec<&str> = t.iter().map(String::as_str).collect();
        let a = fused.embed(&refs, EmbedKind::Document).unwrap();
        let b = generic.embed(&refs, EmbedKind::Document).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.tokens, y.tokens);
            let c = cosine(&x.vector, &y.vector);
            assert!(
                c >= 0.99999,
                "fused vs generic cosine {c} ({} tokens)",
                x.tokens
            );
        }
        // Hidden states too, element by element.
        let (ids, _) = fused.tokenize(&t[1], Prompt::Document).unwrap();
        let ha = fused.hidden_states(&[&ids]).unwrap();
        let hb = generic.hidden_states(&[&ids]).unwrap();
        let max = ha[0]
            .iter()
            .zip(&hb[0])
            .map(|(p, q)| (p - q).abs())
            .fold(0f32, f32::max);
        assert!(max < 1e-3, "max hidden diff {max}");
    }
}

/// q8 (Q8_0 weights, int8 activations; the 100-wide down projection stays f16, not being
/// whole blocks of 32) against the plain candle ops in f32: close, not equal, and with a
/// fingerprint of its own.
#[test]
fn q8_kernels_stay_close_to_plain_candle_ops() {
    for spec in [&MQA, &GQA] {
        let dir = model_dir(spec);
        let q8 = load(
            dir.path(),
            GemmaOptions {
                precision: Precision::Q8,
                ..Default::default()
            },
        );
        assert_eq!(q8.precision(), Precision::Q8);
        let generic = load(
            dir.path(),
            GemmaOptions {
                generic_kernels: true,
                precision: Precision::Q8,
                ..Default::default()
            },
        );
        // The generic kernels run f32 whatever the setting says.
        assert_eq!(generic.precision(), Precision::F32);
        assert_ne!(q8.fingerprint(), generic.fingerprint());
        let t = texts();
        let refs: Vec<&str> = t.iter().map(String::as_str).collect();
        let a = q8.embed(&refs, EmbedKind::Document).unwrap();
        let b = generic.embed(&refs, EmbedKind::Document).unwrap();
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.tokens, y.tokens);
            let c = cosine(&x.vector, &y.vector);
            assert!(c >= 0.995, "q8 vs generic cosine {c} ({} tokens)", x.tokens);
            assert!(c < 1.0 - 1e-7, "q8 gave the f32 vector exactly");
        }
    }
}

#[test]
fn packed_batch_equals_single_runs() {
    for generic_kernels in [false, true] {
        let dir = model_dir(&MQA);
        // A small token budget forces several packed batches as well.
        for batch_tokens in [2048, 50] {
            let m = load(
                dir.path(),
                GemmaOptions {
                    generic_kernels,
                    batch_tokens,
                    ..Default::default()
                },
            );
            let t = texts();
            let refs: Vec<&str> = t.iter().map(String::as_str).collect();
            let batch = m.embed(&refs, EmbedKind::Document).unwrap();
            for (text, b) in refs.iter().zip(&batch) {
                let single = m.embed(&[text], EmbedKind::Document).unwrap();
                assert_eq!(single[0].tokens, b.tokens);
                let c = cosine(&single[0].vector, &b.vector);
                assert!(
                    c >= 0.99999,
                    "batch vs single cosine {c} (generic {generic_kernels})"
                );
            }
        }
    }
}

#[test]
fn sliding_window_limits_attention() {
    // With window w = 8 / 2 + 1 = 5 in the sliding layer, but a full layer after it, every
    // token influences every other. Changing a far token must still change the output, and
    // changing the text must change the vector: a smoke test that the mask is not global.
    let dir = model_dir(&MQA);
    let m = load(dir.path(), GemmaOptions::default());
    let a = sentence(20, 1);
    let mut words: Vec<&str> = a.split(' ').collect();
    words[19] = "omega";
    let b = words.join(" ");
    let e = m.embed(&[&a, &b], EmbedKind::Document).unwrap();
    assert!(cosine(&e[0].vector, &e[1].vector) < 0.999999);
}

#[test]
fn mean_pooling_and_dense_projection() {
    let dir = model_dir(&MQA);
    let m = load(dir.path(), GemmaOptions::default());
    let text = sentence(9, 3);
    let (ids, _) = m.tokenize(&text, Prompt::Document).unwrap();
    let hidden = m.hidden_states(&[&ids]).unwrap().remove(0);
    assert_eq!(hidden.len(), ids.len() * HIDDEN);
    // Reference: mean over all tokens, dense 64→256, dense 256→768, L2 normalise.
    let mut mean = vec![0f64; HIDDEN];
    for row in hidden.chunks(HIDDEN) {
        for (a, v) in mean.iter_mut().zip(row) {
            *a += *v as f64 / ids.len() as f64;
        }
    }
    let w1 = values(DENSE_MID * HIDDEN, 900, 0.2);
    let w2 = values(OUT * DENSE_MID, 901, 0.2);
    let d1: Vec<f64> = (0..DENSE_MID)
        .map(|o| {
            (0..HIDDEN)
                .map(|i| w1[o * HIDDEN + i] as f64 * mean[i])
                .sum()
        })
        .collect();
    let d2: Vec<f32> = (0..OUT)
        .map(|o| {
            (0..DENSE_MID)
                .map(|i| w2[o * DENSE_MID + i] as f64 * d1[i])
                .sum::<f64>() as f32
        })
        .collect();
    let got = m.embed(&[&text], EmbedKind::Document).unwrap().remove(0);
    let c = cosine(&got.vector, &d2);
    assert!(c > 0.999999, "pooling/dense cosine {c}");
}

#[test]
fn matryoshka_truncates_and_renormalises() {
    let dir = model_dir(&MQA);
    let full = load(dir.path(), GemmaOptions::default());
    let t = texts();
    let refs: Vec<&str> = t.iter().map(String::as_str).collect();
    let f = full.embed(&refs, EmbedKind::Query).unwrap();
    let mut prints = vec![full.fingerprint().to_string()];
    for d in [512, 256, 128] {
        let m = load(
            dir.path(),
            GemmaOptions {
                dims: Some(d),
                ..Default::default()
            },
        );
        assert_eq!(m.dims(), d);
        prints.push(m.fingerprint().to_string());
        let e = m.embed(&refs, EmbedKind::Query).unwrap();
        for (a, b) in e.iter().zip(&f) {
            assert_eq!(a.vector.len(), d);
            let norm: f32 = a.vector.iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5);
            assert!(cosine(&a.vector, &b.vector[..d]) > 0.999999);
        }
    }
    prints.sort();
    prints.dedup();
    assert_eq!(prints.len(), 4, "fingerprint must depend on dims");
    let err = GemmaEmbedder::load(
        dir.path(),
        &Device::Cpu,
        GemmaOptions {
            dims: Some(300),
            ..Default::default()
        },
    );
    assert!(matches!(err, Err(GemmaError::InvalidOption(_))));
}

#[test]
fn fingerprint_is_stable_and_tracks_weights() {
    let dir = model_dir(&MQA);
    let a = load(dir.path(), GemmaOptions::default())
        .fingerprint()
        .to_string();
    let b = load(dir.path(), GemmaOptions::default())
        .fingerprint()
        .to_string();
    assert_eq!(a, b);
    let other = model_dir(&GQA);
    let c = load(other.path(), GemmaOptions::default())
        .fingerprint()
        .to_string();
    assert_ne!(a, c);
    let d = load(
        dir.path(),
        GemmaOptions {
            query_prompt: Some("q : ".into()),
            ..Default::default()
        },
    );
    assert_ne!(a, d.fingerprint());
}

#[test]
fn prompts_come_from_config_and_can_be_overridden() {
    let dir = model_dir(&MQA);
    let m = load(dir.path(), GemmaOptions::default());
    assert_eq!(m.prompt(Prompt::Query), "task : search result | query : ");
    assert_eq!(m.prompt(Prompt::Document), "title : none | text : ");
    let o = load(
        dir.path(),
        GemmaOptions {
            query_prompt: Some("query : ".into()),
            document_prompt: Some(String::new()),
            ..Default::default()
        },
    );
    let (ids, _) = o.tokenize("alpha", Prompt::Query).unwrap();
    assert_eq!(ids, vec![2, 4 + 27, 4 + 31, 4, 1]);
    let (ids, _) = o.tokenize("alpha", Prompt::Document).unwrap();
    assert_eq!(ids, vec![2, 4, 1]);
}

#[test]
fn long_inputs_are_truncated_keeping_eos() {
    let dir = model_dir(&MQA);
    let m = load(dir.path(), GemmaOptions::default());
    let long = sentence(100, 2);
    let out = m.embed(&[&long, "alpha"], EmbedKind::Document).unwrap();
    assert!(out[0].truncated);
    assert_eq!(out[0].tokens, 48);
    assert!(!out[1].truncated);
    let (ids, truncated) = m.tokenize(&long, Prompt::Document).unwrap();
    assert!(truncated);
    assert_eq!(ids.len(), 48);
    assert_eq!(ids[0], 2);
    assert_eq!(*ids.last().unwrap(), 1);
    let m2 = load(
        dir.path(),
        GemmaOptions {
            max_tokens: Some(20),
            ..Default::default()
        },
    );
    assert_eq!(
        m2.embed(&[&long], EmbedKind::Document).unwrap()[0].tokens,
        20
    );
}

fn expect_err(dir: &Path) -> GemmaError {
    match GemmaEmbedder::load(dir, &Device::Cpu, GemmaOptions::default()) {
        Ok(_) => panic!("load should fail"),
        Err(e) => e,
    }
}

#[test]
fn missing_files_are_named() {
    for file in [
        "model.safetensors",
        "2_Dense/model.safetensors",
        "tokenizer.json",
        "config.json",
        "modules.json",
    ] {
        let dir = model_dir(&MQA);
        std::fs::remove_file(dir.path().join(file)).unwrap();
        let err = expect_err(dir.path());
        match &err {
            GemmaError::MissingFile { path } => assert!(path.ends_with(file), "{err}"),
            other => panic!("{file}: unexpected error {other}"),
        }
        assert!(err.to_string().contains(file), "{err}");
    }
}

#[test]
fn wrong_shapes_and_missing_tensors_are_named() {
    let dir = model_dir(&MQA);
    let mut t = encoder_tensors(&MQA);
    t.insert(
        "layers.1.self_attn.q_proj.weight".into(),
        tensor(&[32, HIDDEN], 5, 0.1),
    );
    candle_core::safetensors::save(&t, dir.path().join("model.safetensors")).unwrap();
    let err = expect_err(dir.path());
    match &err {
        GemmaError::TensorShape {
            path,
            name,
            expected,
            actual,
        } => {
            assert!(path.ends_with("model.safetensors"));
            assert_eq!(name, "layers.1.self_attn.q_proj.weight");
            assert_eq!(expected, &vec![64, HIDDEN]);
            assert_eq!(actual, &vec![32, HIDDEN]);
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(err.to_string().contains("layers.1.self_attn.q_proj.weight"));

    let mut t = encoder_tensors(&MQA);
    t.remove("layers.0.mlp.down_proj.weight");
    candle_core::safetensors::save(&t, dir.path().join("model.safetensors")).unwrap();
    match expect_err(dir.path()) {
        GemmaError::MissingTensor { name, .. } => assert_eq!(name, "layers.0.mlp.down_proj.weight"),
        other => panic!("unexpected error {other}"),
    }

    // A dense layer of the wrong shape.
    let dir = model_dir(&MQA);
    let mut m = HashMap::new();
    m.insert("linear.weight".to_string(), tensor(&[OUT, 10], 1, 0.1));
    candle_core::safetensors::save(&m, dir.path().join("3_Dense/model.safetensors")).unwrap();
    match expect_err(dir.path()) {
        GemmaError::TensorShape { path, name, .. } => {
            assert!(path.ends_with("3_Dense/model.safetensors"));
            assert_eq!(name, "linear.weight");
        }
        other => panic!("unexpected error {other}"),
    }

    // Garbage instead of a safetensors file.
    std::fs::write(
        dir.path().join("model.safetensors"),
        b"not a safetensors file",
    )
    .unwrap();
    assert!(matches!(
        expect_err(dir.path()),
        GemmaError::Safetensors { .. }
    ));
}

#[test]
fn unknown_architectures_are_rejected() {
    let dir = model_dir(&MQA);
    let path = dir.path().join("config.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    cfg["architectures"] = json!(["BertModel"]);
    write_json(&path, &cfg);
    let err = expect_err(dir.path());
    assert!(matches!(err, GemmaError::Unsupported { .. }), "{err}");
    assert!(
        err.to_string().contains("config.json") && err.to_string().contains("BertModel"),
        "{err}"
    );

    cfg["architectures"] = json!(["Gemma3TextModel"]);
    cfg["layer_types"] = json!(["sliding_attention", "chunked_attention"]);
    write_json(&path, &cfg);
    assert!(matches!(
        expect_err(dir.path()),
        GemmaError::Unsupported { .. }
    ));

    std::fs::write(&path, "{ not json").unwrap();
    assert!(matches!(expect_err(dir.path()), GemmaError::Json { .. }));
}

#[test]
fn bf16_is_refused_on_cpu() {
    let dir = model_dir(&MQA);
    let r = GemmaEmbedder::load(
        dir.path(),
        &Device::Cpu,
        GemmaOptions {
            dtype: Some(candle_core::DType::BF16),
            ..Default::default()
        },
    );
    assert!(matches!(r, Err(GemmaError::InvalidOption(_))));
}

/// Every file under `dir` with its bytes, to show a load wrote nothing there.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            out.push((p.clone(), std::fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

/// The packed model: written on the first load, used on the next (same fingerprint, same
/// vectors), rebuilt with the reason when it is damaged or the model files change, and never
/// written into the model directory.
#[test]
fn packed_model_is_used_and_rebuilt_when_stale_or_damaged() {
    let dir = model_dir(&GQA);
    let before = snapshot(dir.path());
    let cache = tempfile::tempdir().unwrap();
    let options = || GemmaOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        ..Default::default()
    };
    let texts = texts();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let source = load(dir.path(), GemmaOptions::default());
    let want = source.embed(&texts, EmbedKind::Document).unwrap();

    let first = load(dir.path(), options());
    assert!(
        first.origin().contains("packed model written to"),
        "{}",
        first.origin()
    );
    let packed = load(dir.path(), options());
    assert!(
        packed.origin().starts_with("packed model "),
        "{}",
        packed.origin()
    );
    for m in [&first, &packed] {
        assert_eq!(m.fingerprint(), source.fingerprint());
        let got = m.embed(&texts, EmbedKind::Document).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.vector, w.vector);
        }
    }
    // A tokenizer other than Gemma's BPE stays on the tokenizers crate.
    assert_eq!(packed.tokenizer_words(), "tokenizers crate");
    drop((first, packed));

    // A damaged pack is rebuilt, and says why.
    let packs: Vec<_> = std::fs::read_dir(cache.path().join("packed"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(packs.len(), 1, "{packs:?}");
    let mut bytes = std::fs::read(&packs[0]).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&packs[0], &bytes).unwrap();
    let rebuilt = load(dir.path(), options());
    assert!(
        rebuilt.origin().contains("checksum does not match"),
        "{}",
        rebuilt.origin()
    );
    assert_eq!(
        rebuilt.embed(&texts, EmbedKind::Document).unwrap()[0].vector,
        want[0].vector
    );
    drop(rebuilt);
    assert!(load(dir.path(), options())
        .origin()
        .starts_with("packed model "));

    // New Dense weights: the pack is stale, and the new model's vectors are served.
    let dense = dir.path().join("3_Dense/model.safetensors");
    let mut m = HashMap::new();
    m.insert(
        "linear.weight".to_string(),
        tensor(&[OUT, DENSE_MID], 77, 0.2),
    );
    candle_core::safetensors::save(&m, &dense).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&dense)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let changed = load(dir.path(), options());
    assert!(
        changed.origin().contains("model files changed"),
        "{}",
        changed.origin()
    );
    let fresh = load(dir.path(), GemmaOptions::default());
    assert_eq!(changed.fingerprint(), fresh.fingerprint());
    assert_ne!(changed.fingerprint(), source.fingerprint());
    let got = changed.embed(&texts, EmbedKind::Document).unwrap();
    assert_eq!(
        got[0].vector,
        fresh.embed(&texts, EmbedKind::Document).unwrap()[0].vector
    );

    // Nothing but the Dense file this test rewrote changed in the model directory.
    let after = snapshot(dir.path());
    assert_eq!(after.len(), before.len());
    for ((pa, ba), (pb, bb)) in after.iter().zip(&before) {
        assert_eq!(pa, pb);
        assert!(ba == bb || *pa == dense, "{} changed", pa.display());
    }
}
