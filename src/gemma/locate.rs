//! Where the local embedding model comes from (resolution order, `memoria model path/pull`).
//!
//! Order: an explicit directory (`--model DIR`, else `$MEMORIA_MODEL_DIR`), then the config's
//! `local.modelPath` (a directory, or `hf:owner/repo` looked up in the Hugging Face cache),
//! then `models/embeddinggemma-300m/` (in the current directory, then next to the
//! executable's `../models/`), then `embeddinggemma-300m/` in memoria's cache directory
//! ([`cache_dir`], `~/.cache/memoria`: where memoria's tools fetch it), then the Hugging
//! Face cache for google/embeddinggemma-300m (where `memoria model pull` puts it), then the
//! GGUF file OpenClaw's local provider downloads by default ([`OPENCLAW_DEFAULT_GGUF`], in
//! `local.modelCacheDir` or node-llama-cpp's models directory), so a model OpenClaw already
//! fetched serves memoria too. Any explicit location may instead be a GGUF file (`….gguf`,
//! or `hf:owner/repo/file.gguf` in `local.modelPath`), as OpenClaw's local provider takes.
//! Nothing here downloads; `pull` does, explicitly.

use std::path::{Path, PathBuf};

/// The default model repository.
pub const DEFAULT_REPO: &str = "google/embeddinggemma-300m";

/// The model OpenClaw 2026.9's local provider uses when `local.modelPath` is unset, as its
/// `hf:` URI (node-llama-cpp downloads it on first use).
pub const OPENCLAW_DEFAULT_GGUF: &str =
    "ggml-org/embeddinggemma-300m-qat-q8_0-GGUF/embeddinggemma-300m-qat-Q8_0.gguf";

/// The model directory's name in memoria's cache directory ([`cache_dir`]).
pub const CACHED_MODEL: &str = "embeddinggemma-300m";

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
    /// memoria's cache directory ([`cache_dir`]), whose [`CACHED_MODEL`] is searched.
    pub memoria_cache: Option<PathBuf>,
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
            memoria_cache: cache_dir(),
        }
    }
}

impl ModelSearch {
    /// The location named explicitly, the first by precedence (`--model`,
    /// `$MEMORIA_MODEL_DIR`, `local.modelPath`), as `what (where)`; `None` when the search
    /// order alone decides.
    pub fn named(&self) -> Option<String> {
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

impl ModelNotFound {
    /// What named the unusable location (`--model`, `MEMORIA_MODEL_DIR`, `local.modelPath`)
    /// and the location, or `None` when nothing was named and nothing was found.
    pub fn named(&self) -> Option<(&str, &Path)> {
        match self {
            ModelNotFound::Incomplete { origin, dir, .. }
            | ModelNotFound::NoDir { origin, dir } => Some((origin, dir)),
            ModelNotFound::NoGguf { origin, path } => Some((origin, path)),
            ModelNotFound::Nowhere { .. } => None,
        }
    }
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
            if let Some(found) = file.and_then(|f| downloaded_by_openclaw(search, repo, f).ok()) {
                let origin = format!("local.modelPath ({path}), downloaded by OpenClaw");
                return check(found, &origin);
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
    if let Some(cache) = &search.memoria_cache {
        let dir = cache.join(CACHED_MODEL);
        if missing_file(&dir).is_none() {
            return Ok(ModelLocation {
                reason: format!("memoria's cache ({})", cache.display()),
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
    // OpenClaw's default model, where its local provider downloaded it.
    let (repo, file) = split_hf_uri(OPENCLAW_DEFAULT_GGUF);
    match file.map(|f| downloaded_by_openclaw(search, repo, f)) {
        Some(Ok(found)) => {
            return Ok(ModelLocation {
                reason: "OpenClaw's default local model, downloaded by OpenClaw".into(),
                dir: found,
            })
        }
        Some(Err(tried)) => looked.extend(tried.iter().map(|p| p.display().to_string())),
        None => {}
    }
    Err(ModelNotFound::Nowhere {
        looked: looked.join(", "),
    })
}

/// Where OpenClaw's runtime (node-llama-cpp) downloaded `hf:repo/file`: `local.modelCacheDir`,
/// else node-llama-cpp's own models directory. Else every path tried.
fn downloaded_by_openclaw(
    search: &ModelSearch,
    repo: &str,
    file: &str,
) -> Result<PathBuf, Vec<PathBuf>> {
    let Some(name) = node_llama_cpp_name(repo, file) else {
        return Err(Vec::new());
    };
    let tried: Vec<PathBuf> = search
        .config_cache_dir
        .iter()
        .chain(search.node_llama_cpp_dir.iter())
        .map(|dir| dir.join(&name))
        .collect();
    match tried.iter().find(|path| path.is_file()) {
        Some(found) => Ok(found.clone()),
        None => Err(tried),
    }
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
mod tests;
