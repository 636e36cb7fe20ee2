use super::*;

#[cfg(feature = "download")]
#[test]
fn the_token_comes_from_hf_token_else_the_saved_login() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_str().unwrap().to_string();
    std::fs::create_dir_all(tmp.path().join(".cache/huggingface")).unwrap();
    std::fs::write(tmp.path().join(".cache/huggingface/token"), "hf_saved\n").unwrap();
    std::fs::create_dir_all(tmp.path().join("hfhome")).unwrap();
    std::fs::write(tmp.path().join("hfhome/token"), "hf_home_token").unwrap();
    let hf_home = tmp.path().join("hfhome").to_str().unwrap().to_string();
    type Vars<'a> = &'a [(&'a str, &'a str)];
    let table: [(Vars, Option<&str>); 5] = [
        (&[("HF_TOKEN", "hf_env"), ("HOME", &home)], Some("hf_env")),
        (&[("HOME", &home)], Some("hf_saved")),
        (
            &[("HOME", &home), ("HF_HOME", &hf_home)],
            Some("hf_home_token"),
        ),
        (&[("HF_HOME", "/no/such/dir")], None),
        (&[], None),
    ];
    for (vars, want) in table {
        let var = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        assert_eq!(saved_token(var).as_deref(), want, "{vars:?}");
    }
}

#[test]
fn pull_stores_where_lookup_looks() {
    let mut search = ModelSearch {
        cli_dir: None,
        env_dir: None,
        config_path: None,
        config_cache_dir: None,
        cwd: None,
        exe_dir: None,
        hf_cache: Some(PathBuf::from("/hf/hub")),
        node_llama_cpp_dir: None,
        memoria_cache: None,
    };
    assert_eq!(search.pull_cache(), Some(Path::new("/hf/hub")));
    search.config_cache_dir = Some(PathBuf::from("/mine"));
    assert_eq!(search.pull_cache(), Some(Path::new("/mine")));
}

fn model_dir(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name);
    for file in REQUIRED_FILES {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    dir
}

fn hf_cache(root: &Path, repo: &str) -> PathBuf {
    let cache = root.join("hub");
    let repo_dir = cache.join(format!("models--{}", repo.replace('/', "--")));
    std::fs::create_dir_all(repo_dir.join("refs")).unwrap();
    std::fs::write(repo_dir.join("refs/main"), "abc123\n").unwrap();
    let snapshot = model_dir(&repo_dir.join("snapshots"), "abc123");
    assert!(snapshot.is_dir());
    cache
}

#[test]
fn resolution_order() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let cli = model_dir(root, "cli");
    let env = model_dir(root, "env");
    let config = model_dir(root, "config");
    let cwd = root.join("cwd");
    model_dir(&cwd.join("models"), "embeddinggemma-300m");
    let cache = hf_cache(root, DEFAULT_REPO);
    let ours = root.join("memoria-cache");
    model_dir(&ours, CACHED_MODEL);
    let node = root.join("node-llama-cpp");
    std::fs::create_dir_all(&node).unwrap();
    let openclaws = node.join("hf_ggml-org_embeddinggemma-300m-qat-Q8_0.gguf");
    std::fs::write(&openclaws, "GGUF").unwrap();
    let all = ModelSearch {
        cli_dir: Some(cli.clone()),
        env_dir: Some(env.clone()),
        config_path: Some(config.display().to_string()),
        config_cache_dir: None,
        cwd: Some(cwd.clone()),
        exe_dir: None,
        hf_cache: Some(cache.clone()),
        node_llama_cpp_dir: Some(node),
        memoria_cache: Some(ours.clone()),
    };
    let pick = |s: &ModelSearch| resolve_model(s).map(|l| l.dir);
    assert_eq!(pick(&all), Ok(cli));
    let s = ModelSearch {
        cli_dir: None,
        ..all.clone()
    };
    assert_eq!(pick(&s), Ok(env));
    let s = ModelSearch { env_dir: None, ..s };
    assert_eq!(pick(&s), Ok(config));
    let s = ModelSearch {
        config_path: None,
        ..s
    };
    assert_eq!(pick(&s), Ok(cwd.join("models/embeddinggemma-300m")));
    let s = ModelSearch { cwd: None, ..s };
    assert_eq!(pick(&s), Ok(ours.join(CACHED_MODEL)));
    let s = ModelSearch {
        memoria_cache: None,
        ..s
    };
    assert_eq!(
        pick(&s),
        Ok(cache.join("models--google--embeddinggemma-300m/snapshots/abc123"))
    );
    let s = ModelSearch {
        hf_cache: None,
        ..s
    };
    assert_eq!(pick(&s), Ok(openclaws));
    let s = ModelSearch {
        node_llama_cpp_dir: None,
        ..s
    };
    assert!(matches!(
        resolve_model(&s),
        Err(ModelNotFound::Nowhere { .. })
    ));
    // hf:owner/repo in local.modelPath looks in the cache.
    let other = hf_cache(&root.join("other"), "me/my-gemma");
    let s = ModelSearch {
        config_path: Some("hf:me/my-gemma".into()),
        hf_cache: Some(other.clone()),
        ..ModelSearch::default()
    };
    assert_eq!(
        pick(&s),
        Ok(other.join("models--me--my-gemma/snapshots/abc123"))
    );
}

#[test]
fn gguf_files_are_models_too() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let pick = |s: &ModelSearch| resolve_model(s).map(|l| l.dir);
    // A file path, from --model or local.modelPath; a missing one is an error naming it.
    let file = root.join("m.gguf");
    std::fs::write(&file, "GGUF").unwrap();
    let s = ModelSearch {
        cli_dir: Some(file.clone()),
        ..ModelSearch::default()
    };
    assert_eq!(pick(&s), Ok(file.clone()));
    let missing = ModelSearch {
        config_path: Some(root.join("nope.GGUF").display().to_string()),
        ..ModelSearch::default()
    };
    assert!(matches!(
        resolve_model(&missing),
        Err(ModelNotFound::NoGguf { origin, .. }) if origin == "local.modelPath"
    ));
    // hf:owner/repo/file.gguf, OpenClaw's default, in the Hugging Face cache.
    let cache = hf_cache(root, "ggml-org/embeddinggemma-300M-GGUF");
    let snapshot = cache.join("models--ggml-org--embeddinggemma-300M-GGUF/snapshots/abc123");
    std::fs::write(snapshot.join("embeddinggemma-300M-Q8_0.gguf"), "GGUF").unwrap();
    let uri = "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf";
    let s = ModelSearch {
        config_path: Some(uri.into()),
        hf_cache: Some(cache.clone()),
        ..ModelSearch::default()
    };
    assert_eq!(pick(&s), Ok(snapshot.join("embeddinggemma-300M-Q8_0.gguf")));
    let s = ModelSearch {
        config_path: Some("hf:ggml-org/embeddinggemma-300M-GGUF/other.gguf".into()),
        ..s
    };
    assert!(matches!(
        resolve_model(&s),
        Err(ModelNotFound::Nowhere { .. })
    ));
    // Downloaded by OpenClaw: node-llama-cpp's name in its models directory.
    let node = root.join("node-models");
    std::fs::create_dir_all(&node).unwrap();
    let downloaded = node.join("hf_ggml-org_embeddinggemma-300M-Q8_0.gguf");
    std::fs::write(&downloaded, "GGUF").unwrap();
    let s = ModelSearch {
        config_path: Some(uri.into()),
        node_llama_cpp_dir: Some(node.clone()),
        ..ModelSearch::default()
    };
    assert_eq!(pick(&s), Ok(downloaded));
    let names = [
        (
            (
                "ggml-org/embeddinggemma-300M-GGUF",
                "embeddinggemma-300M-Q8_0.gguf",
            ),
            Some("hf_ggml-org_embeddinggemma-300M-Q8_0.gguf"),
        ),
        (("me/models", "gemma.gguf"), Some("hf_me_models_gemma.gguf")),
        (
            ("me/x-GGUF", "sub/dir/y.gguf"),
            Some("hf_me_x-GGUF_sub__dir_y.gguf"),
        ),
        (("me/y-GGUF", "y/y.gguf"), Some("hf_me_y.gguf")),
        (("me/m", "a b.gguf"), None),
        (("me/m", "model.bin"), None),
    ];
    for ((repo, file), want) in names {
        assert_eq!(
            node_llama_cpp_name(repo, file).as_deref(),
            want,
            "{repo} {file}"
        );
    }
    // URIs split into repository and file.
    let table = [
        ("o/r", ("o/r", None)),
        ("o/r/f.gguf", ("o/r", Some("f.gguf"))),
        ("o/r/sub/f.gguf", ("o/r", Some("sub/f.gguf"))),
        ("o", ("o", None)),
    ];
    for (uri, want) in table {
        assert_eq!(split_hf_uri(uri), want, "{uri}");
    }
}

#[test]
fn dense_layers_beside_a_gguf_file_are_used_only_when_loadable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let gguf = dir.join("m.gguf");
    std::fs::write(&gguf, "GGUF").unwrap();
    let modules = r#"[
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"},
        {"idx": 4, "name": "4", "path": "4_Normalize", "type": "sentence_transformers.models.Normalize"}
    ]"#;
    std::fs::write(dir.join("modules.json"), modules).unwrap();
    for d in ["2_Dense", "3_Dense"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
        std::fs::write(dir.join(d).join("config.json"), "{}").unwrap();
        std::fs::write(dir.join(d).join("model.safetensors"), "x").unwrap();
    }
    // The pooling config the pipeline reads is missing: not used from here.
    assert_ne!(dense_source(&gguf).as_deref(), Some(dir));
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    let pooling = r#"{"pooling_mode_mean_tokens": true, "include_prompt": true}"#;
    std::fs::write(dir.join("1_Pooling/config.json"), pooling).unwrap();
    assert_eq!(dense_source(&gguf).as_deref(), Some(dir));
}

#[test]
fn an_incomplete_explicit_directory_is_an_error_naming_the_missing_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = model_dir(tmp.path(), "m");
    std::fs::remove_file(dir.join("2_Dense/model.safetensors")).unwrap();
    let s = ModelSearch {
        cli_dir: Some(dir),
        ..ModelSearch::default()
    };
    let err = resolve_model(&s).unwrap_err().to_string();
    assert!(
        err.contains("--model") && err.contains("2_Dense/model.safetensors"),
        "{err}"
    );
}
