//! [`MemoryBuilder`]: the common ways to open a [`Memory`], each one call.
//!
//! A Rust program names what it knows (a workspace, where the index lives, which model)
//! and leaves the rest to memoria's defaults; OpenClaw's own config is read only when
//! asked for ([`MemoryBuilder::openclaw_config`]). Paths derived from the state directory
//! (the agent directory, transcripts, the wiki vault) are computed from it when used, so
//! they follow it wherever it is set.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::{self, Env, ProviderKind, Ranking, Settings};
use crate::embed::{Embedder, EmbedderChoice};
use crate::error::Result;
use crate::gemma::Precision;
use crate::Memory;

/// Opens a [`Memory`]: see [`Memory::builder`].
#[derive(Clone)]
pub struct MemoryBuilder {
    env: Env,
    agent: String,
    read_config: bool,
    workspace: Option<PathBuf>,
    model: Option<PathBuf>,
    precision: Option<Precision>,
    provider: Option<ProviderKind>,
    embedder: Option<(Arc<dyn Embedder>, String, String)>,
}

impl Default for MemoryBuilder {
    fn default() -> MemoryBuilder {
        MemoryBuilder {
            env: Env::from_process(),
            agent: "main".into(),
            read_config: false,
            workspace: None,
            model: None,
            precision: None,
            provider: None,
            embedder: None,
        }
    }
}

impl MemoryBuilder {
    /// The agent (`main` by default): its index is `<stateDir>/memory/<agent>/`.
    pub fn agent(mut self, id: impl Into<String>) -> Self {
        self.agent = id.into();
        self
    }

    /// The Markdown workspace to index (`MEMORY.md`, `memory/*.md`, …).
    pub fn workspace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.workspace = Some(dir.into());
        self
    }

    /// The state directory (default: `$OPENCLAW_STATE_DIR`, else `~/.openclaw`), under
    /// which the agent's index lives.
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.env.state_dir = Some(dir.into());
        self
    }

    /// Reads OpenClaw's config (`$OPENCLAW_CONFIG_PATH`, else `<stateDir>/openclaw.json`;
    /// its `memorySearch` / `memory.search` keys, workspace and API keys); without this
    /// call memoria's defaults apply.
    pub fn openclaw_config(mut self) -> Self {
        self.read_config = true;
        self
    }

    /// Reads this OpenClaw config file (JSON5) instead.
    pub fn config_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.env.config_path = Some(file.into());
        self.read_config = true;
        self
    }

    /// The local EmbeddingGemma model: a sentence-transformers directory or a GGUF file.
    /// Named this way it must load: [`open`](Self::open) fails with
    /// [`Error::ModelUnavailable`](crate::Error::ModelUnavailable) when it cannot.
    pub fn model(mut self, path: impl Into<PathBuf>) -> Self {
        self.model = Some(path.into());
        self
    }

    /// The local model's precision (`f32`, `q8`, `bf16`, `auto`); without it,
    /// `MEMORIA_PRECISION`, else `auto` (see [`Precision`]).
    pub fn precision(mut self, precision: Precision) -> Self {
        self.precision = Some(precision);
        self
    }

    /// The ranking: memoria's (the default) or [`Ranking::OpenClaw`], OpenClaw 2026.9's
    /// exactly; wins over the config's `plugins.entries.memoria.config.ranking`.
    pub fn ranking(mut self, ranking: Ranking) -> Self {
        self.env.ranking = Some(ranking);
        self
    }

    /// Fleet mode: the agent's index in LanceDB under `uri` (`s3://bucket/prefix` or a
    /// directory), at `<uri>/<agent>`; wins over the config's
    /// `plugins.entries.memoria.config.store.uri`. Needs the `fleet` feature: without it,
    /// [`open`](Self::open) says so.
    pub fn store_uri(mut self, uri: impl Into<String>) -> Self {
        self.env.store_uri = Some(uri.into());
        self
    }

    /// The embedding provider (`none` for keyword-only search).
    pub fn provider(mut self, provider: ProviderKind) -> Self {
        self.provider = Some(provider);
        self
    }

    /// An embedder of your own, reported as `provider` / `model` in payloads and the index
    /// identity.
    pub fn embedder(
        mut self,
        embedder: Arc<dyn Embedder>,
        provider: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        self.embedder = Some((embedder, provider.into(), model.into()));
        self
    }

    /// The settings the memory would open with.
    pub fn settings(&self) -> Result<Settings> {
        let mut settings = match self.read_config {
            true => config::load_settings(&self.env, &self.agent)?,
            false => {
                config::validate_agent_id(&self.agent)?;
                Settings::builtin(&self.agent, &self.env)
            }
        };
        if let Some(dir) = &self.workspace {
            settings.workspace = dir.clone();
            settings.workspace_origin = "MemoryBuilder::workspace".into();
        }
        if let Some(provider) = self.provider {
            settings.provider = provider;
        }
        Ok(settings)
    }

    /// Opens the memory (nothing is indexed yet: see [`Memory::sync`]).
    pub fn open(self) -> Result<Memory> {
        let settings = self.settings()?;
        let must_load = self.model.is_some() && settings.provider != ProviderKind::None;
        let choice = match self.embedder {
            Some((embedder, provider, model)) => EmbedderChoice::Given {
                embedder,
                provider,
                model,
            },
            None => EmbedderChoice::FromSettings {
                model_dir: self.model.clone(),
                precision: self.precision,
            },
        };
        let memory = Memory::open_with(settings, choice)?;
        if must_load {
            memory.require_embedder()?;
        }
        Ok(memory)
    }
}
