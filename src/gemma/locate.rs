//! Where the local embedding model comes from (resolution order, `memoria model path/pull`).
//!
//! Order: an explicit directory (`--model DIR`, else `$MEMORIA_MODEL_DIR`), then the config's
//! `local.modelPath` (a directory, or `hf:owner/repo` looked up in the Hugging Face cache),
//! then `models/embeddinggemma-300m/` (in the current directory, then next to the
//! executable's `../models/`), then the Hugging Face cache for google/embeddinggemma-300m.
//! Any explicit location may instead be a GGUF file (`….gguf`, or
//! `hf:owner/repo/file.gguf` in `local.modelPath`), as OpenClaw's local provider takes.
//! Nothing here downloads; `pull` does, explicitly.

use std::path::{Path, PathBuf};

/// The default model repository.
pub const DEFAULT_REPO: &str = "google/embeddinggemma-300m";

/// Files a sentence-transformers EmbeddingGemma directory must have.
pub(crate) const REQUIRED_FILES: &[&str] = &[
    "model.safetensors",
    "config.json",
    "tokenizer.json",
    "config_sentence_transformers.json",
    "modules.json",
    "2_Dense/model.safetensors",
    "3_Dense/model.safetensors",
    "2_Dense/config.json",
    "3_Dense/config.json",
];

/// Where a model directory was found and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLocation {
    /// The model directory, or a GGUF file.
    pub dir: PathBuf,
    /// Which rule of the resolution order chose it.
    pub reason: String,
}

/// The inputs of model resolution (explicit so tests need no process environment).
#[derive(Debug, Clone, Default)]
pub struct ModelSearch {
    /// `--model DIR`.
    pub cli_dir: Option<PathBuf>,
    /// `$MEMORIA_MODEL_DIR`.
    pub env_dir: Option<PathBuf>,
    /// Config `local.modelPath`.
    pub config_path: Option<String>,
    /// Config `local.modelCacheDir` (a Hugging Face hub cache directory).
    pub config_cache_dir: Option<PathBuf>,
    /// Current directory and the executable's directory, for `models/`.
    pub cwd: Option<PathBuf>,
    /// The running executable's directory (for `../models/`).
    pub exe_dir: Option<PathBuf>,
    /// `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`.
    pub hf_cache: Option<PathBuf>,
    /// node-llama-cpp's models directory (`~/.node-llama-cpp/models`), where OpenClaw's
    /// local provider downloads `hf:` GGUF files when `local.modelCacheDir` is unset.
    pub node_llama_cpp_dir: Option<PathBuf>,
}

impl ModelSearch {
    /// Fills the environment-derived fields from the process.
    pub fn from_process(
        cli_dir: Option<PathBuf>,
        config_path: Option<String>,
        config_cache_dir: Option<PathBuf>,
    ) -> ModelSearch {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let hf_cache = var("HF_HUB_CACHE")
            .or_else(|| var("HF_HOME").map(|h| h.join("hub")))
            .or_else(|| var("HOME").map(|h| h.join(".cache/huggingface/hub")));
        ModelSearch {
            cli_dir,
            env_dir: var("MEMORIA_MODEL_DIR"),
            config_path,
            config_cache_dir,
            cwd: std::env::current_dir().ok(),
            exe_dir: std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf)),
            hf_cache,
            node_llama_cpp_dir: var("HOME").map(|h| h.join(".node-llama-cpp").join("models")),
        }
    }
}

impl ModelSearch {
    /// The location named explicitly, the first by precedence (`--model`,
    /// `$MEMORIA_MODEL_DIR`, `local.modelPath`), as `what (where)`.
    pub(crate) fn named(&self) -> Option<String> {
        let dir = |origin: &str, dir: &PathBuf| format!("{origin} ({})", dir.display());
        self.cli_dir
            .as_ref()
            .map(|d| dir("--model", d))
            .or_else(|| self.env_dir.as_ref().map(|d| dir("$MEMORIA_MODEL_DIR", d)))
            .or_else(|| {
                let path = self.config_path.as_ref()?;
                Some(format!("local.modelPath ({path})"))
            })
    }

    /// Where `memoria model pull` stores: `local.modelCacheDir`, else the Hugging Face
    /// cache lookup searches (`$HF_HUB_CACHE`, `$HF_HOME/hub`, `~/.cache/huggingface/hub`).
    pub fn pull_cache(&self) -> Option<&Path> {
        self.config_cache_dir
            .as_deref()
            .or(self.hf_cache.as_deref())
    }
}

/// memoria's cache directory (the packed models live in its `packed/`): `$MEMORIA_CACHE_DIR`,
/// else `$XDG_CACHE_HOME/memoria`, else `~/.cache/memoria`; `None` without a home.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("MEMORIA_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("memoria")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("memoria")))
}

/// Why no model was found (or why an explicitly named one is unusable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelNotFound {
    #[error("{origin} names {dir}, which is not a usable model directory: missing {missing}")]
    /// A directory was named explicitly but lacks a required file.
    Incomplete {
        /// What named it (`--model`, `$MEMORIA_MODEL_DIR`, `local.modelPath`).
        origin: String,
        /// The directory.
        dir: PathBuf,
        /// The first missing file.
        missing: String,
    },
    #[error("{origin} names {dir}, which does not exist (or is not a directory)")]
    /// A directory was named explicitly but is not there.
    NoDir {
        /// What named it.
        origin: String,
        /// The directory.
        dir: PathBuf,
    },
    #[error("{origin} names {path}, a GGUF file that does not exist")]
    /// A GGUF file was named explicitly but is not there.
    NoGguf {
        /// What named it.
        origin: String,
        /// The file.
        path: PathBuf,
    },
    #[error("no local embedding model: looked in {looked}; run `memoria model pull` (needs network, an accepted Gemma licence and HF_TOKEN) or pass --model DIR")]
    /// No rule found a model.
    Nowhere {
        /// Every place looked in.
        looked: String,
    },
}

/// The first missing required file of `dir`, if any.
pub fn missing_file(dir: &Path) -> Option<&'static str> {
    REQUIRED_FILES
        .iter()
        .copied()
        .find(|f| !dir.join(f).is_file())
}

/// The snapshot directory of `repo` in a Hugging Face hub cache (`refs/main` → snapshot).
pub fn hf_cache_snapshot(cache: &Path, repo: &str) -> Option<PathBuf> {
    let repo_dir = cache.join(format!("models--{}", repo.replace('/', "--")));
    let revision = std::fs::read_to_string(repo_dir.join("refs").join("main")).ok()?;
    let dir = repo_dir.join("snapshots").join(revision.trim());
    dir.is_dir().then_some(dir)
}

/// Resolves the model directory (see the module doc for the order). An explicitly named
/// location that is incomplete is an error, never silently skipped.
pub fn resolve_model(search: &ModelSearch) -> Result<ModelLocation, ModelNotFound> {
    let explicit = [
        (search.cli_dir.clone(), "--model"),
        (search.env_dir.clone(), "MEMORIA_MODEL_DIR"),
    ];
    for (dir, origin) in explicit {
        if let Some(dir) = dir {
            return check(dir, origin);
        }
    }
    let caches: Vec<PathBuf> = search
        .config_cache_dir
        .iter()
        .chain(search.hf_cache.iter())
        .cloned()
        .collect();
    if let Some(path) = &search.config_path {
        if let Some(uri) = path.strip_prefix("hf:") {
            let (repo, file) = split_hf_uri(uri);
            for cache in &caches {
                if let Some(dir) = hf_cache_snapshot(cache, repo) {
                    let found = file.map_or(dir.clone(), |f| dir.join(f));
                    if file.is_some() && !found.is_file() {
                        continue;
                    }
                    return check(
                        found,
                        &format!("local.modelPath ({path}) in the Hugging Face cache"),
                    );
                }
            }
            // Where OpenClaw (node-llama-cpp) downloaded the file: `local.modelCacheDir`,
            // else node-llama-cpp's own models directory.
            let node_dirs = search
                .config_cache_dir
                .iter()
                .chain(search.node_llama_cpp_dir.iter());
            if let Some(name) = file.and_then(|f| node_llama_cpp_name(repo, f)) {
                for dir in node_dirs {
                    let found = dir.join(&name);
                    if found.is_file() {
                        let origin = format!("local.modelPath ({path}), downloaded by OpenClaw");
                        return check(found, &origin);
                    }
                }
            }
            return Err(ModelNotFound::Nowhere {
                looked: format!(
                    "local.modelPath {path} is not in the Hugging Face cache ({}; \
                     `memoria model pull {uri}` downloads it)",
                    list(&caches)
                ),
            });
        }
        return check(PathBuf::from(path), "local.modelPath");
    }
    let mut looked = Vec::new();
    let bundled = [
        search
            .cwd
            .as_ref()
            .map(|d| d.join("models/embeddinggemma-300m")),
        search
            .exe_dir
            .as_ref()
            .map(|d| d.join("../models/embeddinggemma-300m")),
    ];
    for dir in bundled.into_iter().flatten() {
        if missing_file(&dir).is_none() {
            return Ok(ModelLocation {
                reason: "models/embeddinggemma-300m".into(),
                dir,
            });
        }
        looked.push(dir.display().to_string());
    }
    for cache in &caches {
        if let Some(dir) = hf_cache_snapshot(cache, DEFAULT_REPO) {
            if missing_file(&dir).is_none() {
                return Ok(ModelLocation {
                    reason: format!("Hugging Face cache ({})", cache.display()),
                    dir,
                });
            }
        }
        looked.push(format!("{} ({DEFAULT_REPO})", cache.display()));
    }
    Err(ModelNotFound::Nowhere {
        looked: looked.join(", "),
    })
}

/// The file name node-llama-cpp (OpenClaw's local runtime) gives `hf:owner/repo/file`
/// in its models directory: `hf_<owner>_<file>`, with `<repo>_` after the owner unless
/// the file name starts with the repository's name less `-GGUF`, and the file's folders
/// (joined by `__`) before it unless the last one is the file's own name. `None` for names
/// with characters node-llama-cpp would rewrite, so memoria never guesses.
pub fn node_llama_cpp_name(repo: &str, file: &str) -> Option<String> {
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    let (owner, model) = repo.split_once('/')?;
    let mut folders: Vec<&str> = file.split('/').collect();
    let name = folders.pop()?;
    if !plain(owner) || !plain(model) || !plain(name) || !folders.iter().all(|f| plain(f)) {
        return None;
    }
    let lower = |s: &str| s.to_ascii_lowercase();
    let stem = lower(name).strip_suffix(".gguf")?.to_string();
    let mut prefix = vec!["hf", owner];
    let exact = lower(model)
        .strip_suffix("-gguf")
        .is_some_and(|base| stem.starts_with(base));
    if !exact {
        prefix.push(model);
    }
    if folders.last().is_some_and(|last| lower(last) == stem) {
        folders.pop();
    }
    let joined = folders.join("__");
    if !joined.is_empty() {
        prefix.push(&joined);
    }
    Some(format!("{}_{name}", prefix.join("_")))
}

/// `owner/repo` and, for `owner/repo/file.gguf`, the file within it.
pub fn split_hf_uri(uri: &str) -> (&str, Option<&str>) {
    let mut slashes = uri.match_indices('/').map(|(i, _)| i);
    match (slashes.next(), slashes.next()) {
        (Some(_), Some(second)) => (&uri[..second], Some(&uri[second + 1..])),
        _ => (uri, None),
    }
}

/// A sentence-transformers copy of the model whose Dense modules apply after a GGUF file
/// that has none: the file's own directory when its `modules.json` names Dense modules that
/// are there (`2_Dense/`, `3_Dense/`), else the first complete directory of the default search
/// (`models/embeddinggemma-300m`, the Hugging Face cache).
pub fn dense_source(gguf: &Path) -> Option<PathBuf> {
    // Usable when its modules.json reads as a pipeline (as the load will read it) and names
    // Dense modules whose files are there.
    let usable = |dir: &Path| {
        crate::gemma::model_files::Pipeline::from_dir(dir).is_ok_and(|p| {
            !p.dense_dirs.is_empty()
                && p.dense_dirs.iter().all(|d| {
                    d.join("config.json").is_file() && d.join("model.safetensors").is_file()
                })
        })
    };
    let beside = gguf.parent()?;
    if beside.join("modules.json").is_file() && usable(beside) {
        return Some(beside.to_path_buf());
    }
    let mut search = ModelSearch::from_process(None, None, None);
    search.env_dir = None;
    resolve_model(&search)
        .ok()
        .map(|location| location.dir)
        .filter(|dir| dir.is_dir())
}

fn check(dir: PathBuf, origin: &str) -> Result<ModelLocation, ModelNotFound> {
    if crate::gemma::gguf::is_gguf(&dir) {
        return match dir.is_file() {
            true => Ok(ModelLocation {
                dir,
                reason: origin.to_string(),
            }),
            false => Err(ModelNotFound::NoGguf {
                origin: origin.to_string(),
                path: dir,
            }),
        };
    }
    if !dir.is_dir() {
        return Err(ModelNotFound::NoDir {
            origin: origin.to_string(),
            dir,
        });
    }
    match missing_file(&dir) {
        None => Ok(ModelLocation {
            dir,
            reason: origin.to_string(),
        }),
        Some(missing) => Err(ModelNotFound::Incomplete {
            origin: origin.to_string(),
            dir,
            missing: missing.to_string(),
        }),
    }
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Files `pull` downloads (the sentence-transformers layout).
#[cfg(feature = "download")]
const PULL_FILES: &[&str] = &[
    "model.safetensors",
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config_sentence_transformers.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "2_Dense/config.json",
    "2_Dense/model.safetensors",
    "3_Dense/config.json",
    "3_Dense/model.safetensors",
];

/// Downloads `repo` into the Hugging Face cache `cache` (a `hub` directory: the one lookup
/// searches, see [`ModelSearch::pull_cache`]) with progress bars, and returns the snapshot
/// directory. `owner/repo/file.gguf` (or `hf:owner/repo/file.gguf`) downloads that one file
/// (such as the GGUF OpenClaw's local provider uses; ggml-org's needs no token) and returns
/// its path. `HF_ENDPOINT` names another hub (a mirror); the token is `$HF_TOKEN`, else the
/// one `huggingface-cli login` saved (`$HF_TOKEN_PATH`, `$HF_HOME/token`,
/// `~/.cache/huggingface/token`); google/embeddinggemma-300m is gated:
/// accept the Gemma licence on huggingface.co first. Needs the `download` feature.
#[cfg(feature = "download")]
pub fn pull(repo: &str, cache: &Path) -> Result<PathBuf, PullError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let mut builder =
        hf_hub::api::sync::ApiBuilder::from_cache(hf_hub::Cache::new(cache.to_path_buf()))
            .with_progress(true)
            .with_token(saved_token(var));
    if let Some(endpoint) = var("HF_ENDPOINT") {
        builder = builder.with_endpoint(endpoint.trim_end_matches('/').to_string());
    }
    let api = builder
        .build()
        .map_err(|e| PullError(format!("cannot set up the download: {e}")))?;
    let hint = "needs network access to the hub (HF_ENDPOINT, default huggingface.co); gated \
                models need an accepted licence and a token: HF_TOKEN or `huggingface-cli login`";
    let (repo, file) = split_hf_uri(repo.strip_prefix("hf:").unwrap_or(repo));
    let model = api.model(repo.to_string());
    if let Some(file) = file {
        // One file of a repository: a GGUF model.
        return model
            .get(file)
            .map_err(|e| PullError(format!("{repo}/{file}: {e} ({hint})")));
    }
    let mut dir = None;
    for file in PULL_FILES {
        let path = model
            .get(file)
            .map_err(|e| PullError(format!("{repo}/{file}: {e} ({hint})")))?;
        if *file == "model.safetensors" {
            dir = path.parent().map(Path::to_path_buf);
        }
    }
    dir.ok_or_else(|| {
        PullError(format!(
            "{repo}: download finished without model.safetensors"
        ))
    })
}

/// The Hugging Face token: `$HF_TOKEN`, else the file `$HF_TOKEN_PATH`, else `$HF_HOME/token`,
/// else `~/.cache/huggingface/token` (where `huggingface-cli login` saves it). `var` reads the
/// environment.
#[cfg(feature = "download")]
fn saved_token(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(token) = var("HF_TOKEN") {
        return Some(token);
    }
    let file = var("HF_TOKEN_PATH")
        .map(PathBuf::from)
        .or_else(|| var("HF_HOME").map(|home| Path::new(&home).join("token")))
        .or_else(|| var("HOME").map(|home| Path::new(&home).join(".cache/huggingface/token")))?;
    let token = std::fs::read_to_string(file).ok()?;
    Some(token.trim().to_string()).filter(|t| !t.is_empty())
}

/// Why `memoria model pull` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("model pull failed: {0}")]
pub struct PullError(pub String);

#[cfg(test)]
mod tests {
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
        let all = ModelSearch {
            cli_dir: Some(cli.clone()),
            env_dir: Some(env.clone()),
            config_path: Some(config.display().to_string()),
            config_cache_dir: None,
            cwd: Some(cwd.clone()),
            exe_dir: None,
            hf_cache: Some(cache.clone()),
            node_llama_cpp_dir: None,
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
        assert_eq!(
            pick(&s),
            Ok(cache.join("models--google--embeddinggemma-300m/snapshots/abc123"))
        );
        let s = ModelSearch {
            hf_cache: None,
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
}
