//! Which embedder serves an agent: the configured provider resolved to a loaded model, or
//! the reason there is none (SPEC §7).

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{ProviderKind, Settings};
use crate::embed::embedder::Embedder;
use crate::embed::local::load_local_on;
#[cfg(feature = "remote")]
use crate::embed::remote;
use crate::fallback::Fallback;
use crate::gemma::{resolve_model, ModelSearch, Precision};

/// Where a [`Memory`](crate::Memory)'s embedder comes from.
#[derive(Clone)]
pub enum EmbedderChoice {
    /// Resolve from the settings (`provider`, `local.modelPath`, …); `model_dir` is an
    /// explicit model directory (`--model DIR`) that wins over everything else.
    FromSettings {
        /// An explicit model directory, or `None` to follow the resolution order.
        model_dir: Option<PathBuf>,
        /// The local model's precision on the CPU (or dtype on a GPU), or `None` for
        /// `MEMORIA_PRECISION`, else `auto` (see [`Precision`]).
        precision: Option<Precision>,
    },
    /// Use this embedder (library users with their own model, tests).
    Given {
        /// The embedder.
        embedder: Arc<dyn Embedder>,
        /// The provider name reported in payloads and the index identity.
        provider: String,
        /// The model name reported in payloads and the index identity.
        model: String,
    },
}

/// The embedder actually available, or why there is none.
pub(crate) struct ResolvedEmbedder {
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    /// `"none"` when keyword-only.
    pub(crate) provider: String,
    pub(crate) model: Option<String>,
    /// Set when the configured provider could not be used.
    pub(crate) fallback: Option<Fallback>,
    /// Where a local model runs and in what precision (`cpu, f32, AVX-512 kernels`), for
    /// `status`; `None` for a remote or given embedder.
    pub(crate) device: Option<String>,
    /// The remote client, when a remote provider serves (for `status`).
    #[cfg(feature = "remote")]
    remote: Option<Arc<remote::HttpEmbedder>>,
}

impl ResolvedEmbedder {
    /// An embedder (or none) without a remote client.
    fn plain(
        embedder: Option<Arc<dyn Embedder>>,
        provider: String,
        model: Option<String>,
        fallback: Option<Fallback>,
    ) -> ResolvedEmbedder {
        ResolvedEmbedder {
            embedder,
            provider,
            model,
            fallback,
            device: None,
            #[cfg(feature = "remote")]
            remote: None,
        }
    }

    /// Where the remote provider's API key came from (a config key or an environment
    /// variable, never the key): the serving provider's, else the configured one's, so a
    /// provider that did not answer still says which key it was given.
    pub(crate) fn key_source(&self, settings: &Settings) -> Option<String> {
        #[cfg(feature = "remote")]
        {
            if let Some(remote) = &self.remote {
                return remote.key_source().map(str::to_string);
            }
            let env = |name: &str| std::env::var(name).ok();
            remote_defaults(settings.provider)
                .and_then(|defaults| remote::key_source(defaults, settings, &env))
        }
        #[cfg(not(feature = "remote"))]
        {
            let _ = settings;
            None
        }
    }

    /// The embedder, or [`Error::ModelUnavailable`](crate::error::Error::ModelUnavailable) with
    /// why the configured one cannot serve.
    pub(crate) fn require(&self) -> crate::error::Result<&Arc<dyn Embedder>> {
        self.embedder.as_ref().ok_or_else(|| {
            let reason = self.fallback.as_ref().map_or_else(
                || "no embedding provider is configured (provider none)".to_string(),
                |f| {
                    f.reason
                        .trim_end_matches("; keyword search only")
                        .to_string()
                },
            );
            crate::error::Error::ModelUnavailable { reason }
        })
    }

    /// The remote provider's batch API state (`remote.batch`), when it has one.
    pub(crate) fn batch_state(&self) -> Option<String> {
        #[cfg(feature = "remote")]
        if let Some(remote) = &self.remote {
            return remote.batch_state();
        }
        None
    }

    /// Resolves `choice` (loading the model when the settings name a local one).
    /// `quick`: a look (`status`, `doctor`) probes a remote provider once, briefly, where
    /// indexing and searching retry.
    pub(crate) fn resolve(
        choice: &EmbedderChoice,
        settings: &Settings,
        quick: bool,
    ) -> ResolvedEmbedder {
        match choice {
            EmbedderChoice::Given {
                embedder,
                provider,
                model,
            } => ResolvedEmbedder::plain(
                Some(embedder.clone()),
                provider.clone(),
                Some(model.clone()),
                None,
            ),
            EmbedderChoice::FromSettings {
                model_dir,
                precision,
            } => {
                let local = LocalModel {
                    dir: model_dir.clone(),
                    precision: *precision,
                };
                resolve_embedder(settings, &local, quick)
            }
        }
    }
}

/// Resolves the configured provider to an embedder (SPEC §7), or says why there is none.
/// When the provider cannot serve and `fallback` names another, that one is tried; the
/// payloads then say what was configured and why something else serves.
/// What the caller says of the local model: an explicit directory (`--model`), and its
/// precision.
struct LocalModel {
    dir: Option<PathBuf>,
    precision: Option<Precision>,
}

impl LocalModel {
    /// Where to look for it: this directory, `$MEMORIA_MODEL_DIR`, the config, the caches.
    fn search(&self, settings: &Settings) -> ModelSearch {
        ModelSearch::from_process(
            self.dir.clone(),
            settings.local.model_path.clone(),
            settings.local.model_cache_dir.as_ref().map(PathBuf::from),
        )
    }
}

fn resolve_embedder(settings: &Settings, local: &LocalModel, quick: bool) -> ResolvedEmbedder {
    let none = |fallback| ResolvedEmbedder::plain(None, "none".into(), None, fallback);
    let kind = settings.provider;
    if kind == ProviderKind::None {
        return none(unused_model(settings, local));
    }
    let reason = match try_provider(kind, settings, local, settings.model.as_deref(), quick) {
        Ok(resolved) => return resolved,
        Err(reason) => reason,
    };
    let from = kind.as_str().to_string();
    let fallback = settings
        .fallback
        .filter(|f| !matches!(f, ProviderKind::None | ProviderKind::Auto) && *f != kind);
    match fallback {
        Some(other) => match try_provider(other, settings, local, None, quick) {
            Ok(mut resolved) => {
                resolved.fallback = Some(Fallback { from, reason });
                resolved
            }
            Err(also) => none(Some(Fallback {
                from,
                reason: format!(
                    "{reason}; the fallback {} failed too: {also}; keyword search only",
                    other.as_str()
                ),
            })),
        },
        None => none(Some(Fallback {
            from,
            reason: format!("{reason}; keyword search only"),
        })),
    }
}

/// With the provider `none`, a local model that is named all the same (`--model`,
/// `$MEMORIA_MODEL_DIR`, `local.modelPath`) is not used: said as a fallback from `local`,
/// so `status` and every payload name it instead of answering keyword-only in silence.
fn unused_model(settings: &Settings, local: &LocalModel) -> Option<Fallback> {
    let named = local.search(settings).named()?;
    Some(Fallback {
        from: "local".into(),
        reason: format!(
            "the provider is none (`--provider none` or the config's provider), so the local \
             model named by {named} is not used: keyword search only; drop the provider none \
             to search with the model"
        ),
    })
}

/// One provider, ready to embed, or why not. `model` overrides the provider's default
/// model (the configured `memorySearch.model` for the primary provider; a fallback uses
/// its own default).
fn try_provider(
    kind: ProviderKind,
    settings: &Settings,
    local: &LocalModel,
    model: Option<&str>,
    quick: bool,
) -> Result<ResolvedEmbedder, String> {
    #[cfg(not(feature = "remote"))]
    let _ = quick; // only remote providers probe
    match kind {
        ProviderKind::None => Err("no provider".into()),
        ProviderKind::Bedrock => Err("the bedrock provider is not supported by memoria (Amazon \
             Bedrock's signed AWS requests are not implemented): use local, openai-compatible \
             or another provider"
            .into()),
        ProviderKind::GithubCopilot => Err("the github-copilot provider is not supported by \
             memoria (it needs GitHub Copilot's sign-in, which only OpenClaw holds): use \
             local, openai-compatible or another provider"
            .into()),
        ProviderKind::Local => try_local(settings, local, model),
        // OpenClaw's automatic order: a local model, then OpenAI when a key resolves.
        ProviderKind::Auto => try_local(settings, local, model).or_else(|why| {
            // OpenClaw's automatic order: a local model, then OpenAI, then Gemini, each
            // when its key resolves.
            let mut reasons = vec![why];
            for (remote, config_name, var) in [
                (ProviderKind::OpenAi, "openai", "OPENAI_API_KEY"),
                (ProviderKind::Gemini, "google", "GEMINI_API_KEY"),
            ] {
                if !remote_key_resolves(settings, config_name, var) {
                    continue;
                }
                match try_provider(remote, settings, local, None, quick) {
                    Ok(resolved) => return Ok(resolved),
                    Err(reason) => reasons.push(format!("{}: {reason}", remote.as_str())),
                }
            }
            Err(reasons.join("; "))
        }),
        #[cfg(feature = "remote")]
        ProviderKind::OpenAi
        | ProviderKind::Gemini
        | ProviderKind::Mistral
        | ProviderKind::Voyage
        | ProviderKind::Ollama
        | ProviderKind::OpenAiCompatible
        | ProviderKind::LmStudio
        | ProviderKind::DeepInfra => {
            let Some(defaults) = remote_defaults(kind) else {
                return Err(format!("{} is not a remote provider", kind.as_str()));
            };
            let env = |name: &str| std::env::var(name).ok();
            remote::HttpEmbedder::connect(defaults, settings, model, env, quick)
                .map(|client| {
                    let client = Arc::new(client);
                    ResolvedEmbedder {
                        provider: kind.as_str().into(),
                        model: Some(client.model().to_string()),
                        embedder: Some(client.clone()),
                        fallback: None,
                        device: None,
                        remote: Some(client),
                    }
                })
                .map_err(|err| err.to_string())
        }
        #[cfg(not(feature = "remote"))]
        other => Err(format!(
            "the {} embedding provider needs memoria built with the `remote` feature",
            other.as_str()
        )),
    }
}

/// The defaults of a remote provider (`None` for local, auto, none and the unsupported).
#[cfg(feature = "remote")]
fn remote_defaults(kind: ProviderKind) -> Option<&'static remote::Defaults> {
    Some(match kind {
        ProviderKind::OpenAi => &remote::OPENAI,
        ProviderKind::Gemini => &remote::GEMINI,
        ProviderKind::Mistral => &remote::MISTRAL,
        ProviderKind::Voyage => &remote::VOYAGE,
        ProviderKind::Ollama => &remote::OLLAMA,
        ProviderKind::OpenAiCompatible => &remote::OPENAI_COMPATIBLE,
        ProviderKind::LmStudio => &remote::LMSTUDIO,
        ProviderKind::DeepInfra => &remote::DEEPINFRA,
        _ => return None,
    })
}

/// True when a key for the provider named `config_name` under `models.providers` (whose
/// environment variable is `var`) resolves: the automatic order's test. `remote.apiKey`
/// counts for every provider, as in OpenClaw.
fn remote_key_resolves(settings: &Settings, config_name: &str, var: &str) -> bool {
    if !cfg!(feature = "remote") {
        return false;
    }
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    settings
        .remote
        .api_key
        .as_ref()
        .or_else(|| settings.provider_keys.get(config_name))
        .and_then(|secret| secret.read(&settings.secrets, &env).ok())
        .or_else(|| env(var))
        .is_some()
}

/// The local EmbeddingGemma model, loaded, or why not.
fn try_local(
    settings: &Settings,
    local: &LocalModel,
    model: Option<&str>,
) -> Result<ResolvedEmbedder, String> {
    let location = resolve_model(&local.search(settings)).map_err(|err| err.to_string())?;
    let (embedder, device) = load_local_on(&location.dir, local.precision)
        .map_err(|err| format!("{}: {err}", location.dir.display()))?;
    let mut resolved = ResolvedEmbedder::plain(
        Some(embedder),
        "local".into(),
        Some(model.unwrap_or("embeddinggemma-300m").to_string()),
        None,
    );
    resolved.device = Some(device);
    Ok(resolved)
}
