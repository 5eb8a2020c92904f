//! How to reach one model: the wire format ([`ProviderKind`]), the configuration
//! ([`ProviderConfig`]) and what the wire formats need of it ([`WireOptions`]).

use std::time::Duration;

use crate::RetryPolicy;

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (OpenAI, vLLM, llama.cpp, Ollama, …).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses.
    Responses,
}

impl ProviderKind {
    /// The name used on the command line and given to the classifier.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Responses => "responses",
        }
    }

    /// How the API counts an image attached at its default detail, for pricing one a user
    /// attaches ([`Image::from_base64`](ctxbed_harness::image::Image::from_base64)).
    pub fn image_pricing(self) -> ctxbed_harness::image::ImagePricing {
        match self {
            ProviderKind::OpenAi | ProviderKind::Responses => {
                ctxbed_harness::image::ImagePricing::OpenAiTiles
            }
            ProviderKind::Anthropic => ctxbed_harness::image::ImagePricing::AnthropicArea,
        }
    }

    /// The name given to the error classifier: the provider whose codes and wordings the
    /// API's errors carry.
    pub fn classifier_name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi | ProviderKind::Responses => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    /// Parses a command-line name.
    pub fn parse(name: &str) -> Option<Self> {
        [
            ProviderKind::OpenAi,
            ProviderKind::Anthropic,
            ProviderKind::Responses,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
    }
}

/// The request field that carries the output bound (Chat Completions only; Anthropic always
/// sends `max_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_tokens`: what local servers and older models read.
    MaxTokens,
    /// `max_completion_tokens`: what newer OpenAI models require.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The JSON field name.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// What the wire formats need besides the request itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireOptions {
    /// The provider's model name.
    pub model: String,
    /// Ask for a streamed reply.
    pub stream: bool,
    pub max_tokens_field: MaxTokensField,
    /// The output bound sent when the request carries none (Anthropic requires one).
    pub max_output_tokens: Option<u64>,
    /// Anthropic's extended thinking: the `budget_tokens` to enable it with (`None`: off).
    pub thinking_budget: Option<u64>,
}

/// How to reach one model. Holds the *name* of the key's environment variable, never the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// For OpenAI-compatible servers the URL up to `/chat/completions` (usually ending in
    /// `/v1`); for Anthropic the URL up to `/v1/messages`.
    pub base_url: String,
    /// The provider's model name.
    pub model: String,
    /// The environment variable holding the API key; `None` sends no key (local servers).
    pub api_key_env: Option<String>,
    /// Ask for streamed replies.
    pub stream: bool,
    pub max_tokens_field: MaxTokensField,
    /// Output bound sent when a request carries none; Anthropic needs one (default 4096).
    pub max_output_tokens: Option<u64>,
    /// The model's context window, when known (reported by [`Model::info`](ctxbed_harness::model::Model::info)).
    pub context_window: Option<u64>,
    /// Time one attempt may take, from sending to the last byte of the reply.
    pub request_timeout: Duration,
    /// Longest silence between two chunks of a reply.
    pub read_timeout: Duration,
    /// `anthropic-version` header value.
    pub anthropic_version: String,
    /// Anthropic's extended thinking: enabled with this `budget_tokens` (at least 1,024, and
    /// below the output bound); `None` leaves it off. Thinking blocks are then handed back
    /// with their signatures, as the API requires.
    pub thinking_budget: Option<u64>,
    pub retry: RetryPolicy,
}

impl ProviderConfig {
    /// Defaults: streaming, `max_tokens`, 10 minutes per attempt, 2 minutes of silence, the
    /// default retry policy (seed 0), and for Anthropic an output bound of 4096.
    pub fn new(kind: ProviderKind, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ProviderConfig {
            kind,
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            stream: true,
            max_tokens_field: MaxTokensField::MaxTokens,
            max_output_tokens: (kind == ProviderKind::Anthropic).then_some(4_096),
            context_window: None,
            request_timeout: Duration::from_secs(600),
            read_timeout: Duration::from_secs(120),
            anthropic_version: "2023-06-01".to_string(),
            thinking_budget: None,
            retry: RetryPolicy::default(),
        }
    }

    /// The URL requests go to: the base URL and the API's route.
    pub(crate) fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.kind {
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
            ProviderKind::Responses => format!("{base}/responses"),
            ProviderKind::Anthropic => format!("{base}/v1/messages"),
        }
    }

    /// What the wire formats need from the configuration.
    pub(crate) fn wire_options(&self) -> WireOptions {
        WireOptions {
            model: self.model.clone(),
            stream: self.stream,
            max_tokens_field: self.max_tokens_field,
            max_output_tokens: self.max_output_tokens,
            thinking_budget: self.thinking_budget,
        }
    }
}
