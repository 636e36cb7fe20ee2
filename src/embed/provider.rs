//! Which embedder serves an agent: the configured provider resolved to a loaded model, or
//! the reason there is none (SPEC §7).

use std::path::PathBuf;
use std::sync::Arc;

use super::locate::{resolve_model, ModelSearch};
use super::{load_local, Embedder};
use crate::config::{ProviderKind, Settings};
use crate::fallback::Fallback;

/// Where a [`Memory`](crate::Memory)'s embedder comes from.
pub enum EmbedderChoice {
    /// Resolve from the settings (`provider`, `local.modelPath`, …); `model_dir` is an
    /// explicit model directory (`--model DIR`) that wins over everything else.
    FromSettings {
        /// An explicit model directory, or `None` to follow the resolution order.
        model_dir: Option<PathBuf>,
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
}

impl ResolvedEmbedder {
    /// Resolves `choice` (loading the model when the settings name a local one).
    pub(crate) fn resolve(choice: &EmbedderChoice, settings: &Settings) -> ResolvedEmbedder {
        match choice {
            EmbedderChoice::Given {
                embedder,
                provider,
                model,
            } => ResolvedEmbedder {
                embedder: Some(embedder.clone()),
                provider: provider.clone(),
                model: Some(model.clone()),
                fallback: None,
            },
            EmbedderChoice::FromSettings { model_dir } => {
                resolve_embedder(settings, model_dir.clone())
            }
        }
    }
}

/// Resolves the configured provider to an embedder (SPEC §7), or says why there is none.
fn resolve_embedder(settings: &Settings, model_dir: Option<PathBuf>) -> ResolvedEmbedder {
    let none = |fallback: Option<Fallback>| ResolvedEmbedder {
        embedder: None,
        provider: "none".into(),
        model: None,
        fallback,
    };
    let local = |from: &str| -> ResolvedEmbedder {
        let search = ModelSearch::from_process(
            model_dir.clone(),
            settings.local.model_path.clone(),
            settings.local.model_cache_dir.as_ref().map(PathBuf::from),
        );
        let failed = |reason: String| {
            none(Some(Fallback {
                from: from.to_string(),
                reason: format!("{reason}; keyword search only"),
            }))
        };
        match resolve_model(&search) {
            Ok(location) => match load_local(&location.dir) {
                Ok(embedder) => ResolvedEmbedder {
                    embedder: Some(embedder),
                    provider: "local".into(),
                    model: Some(
                        settings
                            .model
                            .clone()
                            .unwrap_or_else(|| "embeddinggemma-300m".into()),
                    ),
                    fallback: None,
                },
                Err(err) => failed(format!("{}: {err}", location.dir.display())),
            },
            Err(err) => failed(err.to_string()),
        }
    };
    match settings.provider {
        ProviderKind::None => none(None),
        ProviderKind::Auto => local("auto"),
        ProviderKind::Local => local("local"),
        remote => {
            let reason = format!(
                "the {} embedding provider is not implemented in this build",
                remote.as_str()
            );
            if settings.fallback == Some(ProviderKind::Local) {
                let mut state = local(remote.as_str());
                if state.embedder.is_some() {
                    state.fallback = Some(Fallback {
                        from: remote.as_str().into(),
                        reason,
                    });
                }
                state
            } else {
                none(Some(Fallback {
                    from: remote.as_str().into(),
                    reason: format!("{reason}; keyword search only"),
                }))
            }
        }
    }
}
