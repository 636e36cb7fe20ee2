//! What each provider speaking through [`HttpEmbedder`](super::HttpEmbedder)
//! defaults to: endpoint, model, key variable, wire format, limits.

use super::Wire;

/// What the provider defaults to.
pub(crate) struct Defaults {
    pub(crate) provider: &'static str,
    pub(crate) base_url: &'static str,
    pub(crate) model: &'static str,
    pub(crate) key_var: &'static str,
    /// Its name under `models.providers` in the config.
    pub(crate) config_name: &'static str,
    /// The default endpoint refuses requests without a key.
    pub(crate) key_required: bool,
    pub(crate) wire: Wire,
    /// It has a batch API memoria speaks (`remote.batch`).
    pub(crate) batch: bool,
    /// The longest input its default model takes, in tokens; longer texts are cut
    /// ([`fit`]) rather than sent to fail.
    pub(crate) max_input_tokens: usize,
}

/// Mistral's embeddings API (OpenAI's wire format).
pub(crate) const MISTRAL: Defaults = Defaults {
    provider: "mistral",
    base_url: "https://api.mistral.ai/v1",
    model: "mistral-embed",
    key_var: "MISTRAL_API_KEY",
    config_name: "mistral",
    key_required: true,
    wire: Wire::OpenAi { input_type: false },
    batch: false,
    max_input_tokens: 8_192,
};

/// Voyage AI's embeddings API: OpenAI's format plus `input_type`.
pub(crate) const VOYAGE: Defaults = Defaults {
    provider: "voyage",
    base_url: "https://api.voyageai.com/v1",
    model: "voyage-4-large",
    key_var: "VOYAGE_API_KEY",
    config_name: "voyage",
    key_required: true,
    wire: Wire::OpenAi { input_type: true },
    batch: false,
    max_input_tokens: 32_000,
};

/// A local Ollama server's OpenAI-compatible API (no key).
pub(crate) const OLLAMA: Defaults = Defaults {
    provider: "ollama",
    base_url: "http://127.0.0.1:11434/v1",
    model: "nomic-embed-text",
    key_var: "OLLAMA_API_KEY",
    config_name: "ollama",
    key_required: false,
    wire: Wire::OpenAi { input_type: false },
    batch: false,
    max_input_tokens: 8_192,
};

/// OpenAI's documented defaults.
pub(crate) const OPENAI: Defaults = Defaults {
    provider: "openai",
    base_url: "https://api.openai.com/v1",
    model: "text-embedding-3-small",
    key_var: "OPENAI_API_KEY",
    config_name: "openai",
    key_required: true,
    wire: Wire::OpenAi { input_type: false },
    batch: true,
    max_input_tokens: 8_191,
};

/// Any endpoint speaking OpenAI's `/embeddings` (OpenClaw 2026.9's `openai-compatible`):
/// no default endpoint or model, both must be configured.
pub(crate) const OPENAI_COMPATIBLE: Defaults = Defaults {
    provider: "openai-compatible",
    base_url: "",
    model: "",
    key_var: "OPENAI_COMPATIBLE_API_KEY",
    config_name: "openai-compatible",
    key_required: false,
    wire: Wire::OpenAi { input_type: false },
    batch: false,
    max_input_tokens: 8_192,
};

/// LM Studio's local server (OpenAI's wire format, a key optional).
pub(crate) const LMSTUDIO: Defaults = Defaults {
    provider: "lmstudio",
    base_url: "http://localhost:1234/v1",
    model: "text-embedding-nomic-embed-text-v1.5",
    key_var: "LMSTUDIO_API_KEY",
    config_name: "lmstudio",
    key_required: false,
    wire: Wire::OpenAi { input_type: false },
    batch: false,
    max_input_tokens: 8_192,
};

/// DeepInfra's OpenAI-compatible API.
pub(crate) const DEEPINFRA: Defaults = Defaults {
    provider: "deepinfra",
    base_url: "https://api.deepinfra.com/v1/openai",
    model: "BAAI/bge-m3",
    key_var: "DEEPINFRA_API_KEY",
    config_name: "deepinfra",
    key_required: true,
    wire: Wire::OpenAi { input_type: false },
    batch: false,
    max_input_tokens: 8_192,
};

/// Google's Generative Language API.
pub(crate) const GEMINI: Defaults = Defaults {
    provider: "gemini",
    base_url: "https://generativelanguage.googleapis.com/v1beta",
    model: "gemini-embedding-001",
    key_var: "GEMINI_API_KEY",
    config_name: "google",
    key_required: true,
    wire: Wire::Gemini,
    batch: true,
    max_input_tokens: 2_048,
};
