//! Models: the [`Model`] trait, requests and replies, metadata and [`ModelError`].
//!
//! A model receives a prepared [`ModelRequest`] (messages in final layout, tool schemas, the
//! output reservation) and answers with an assistant [`ModelReply`] or a [`ModelError`]. The
//! scripted mock lives in `ctxbed-sim`; provider wordings in [`provider`]; turning an HTTP status and
//! body into a typed error in [`classify`].
//!
//! **Invariant:** a recognised context overflow is always [`ModelError::ContextOverflow`] and
//! keeps the provider's raw status and body; it is never reported as transient.

pub mod classify;
pub mod provider;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::message::Message;
use crate::message::ToolSchema;
use crate::shared_vec::SharedVec;

/// Why a request is prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Purpose {
    /// A reasoning step of the agent loop.
    Reasoning,
    /// A summary request made by compaction.
    Summary,
    /// The memory flush before a compaction: a request to extract durable facts from the
    /// messages about to be summarised.
    MemoryFlush,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Reasoning => "reasoning",
            Purpose::Summary => "summary",
            Purpose::MemoryFlush => "memory_flush",
        }
    }

    /// True for compaction's own requests (summary, memory flush): System material only, no
    /// context sources, no task projections.
    pub fn is_compaction(self) -> bool {
        matches!(self, Purpose::Summary | Purpose::MemoryFlush)
    }
}

/// What is known about a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub name: String,
    /// Context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Largest reply the model produces, when known.
    pub max_output_tokens: Option<u64>,
}

/// One request to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The preparation this request came from.
    pub call_id: String,
    pub purpose: Purpose,
    /// Shared with the conversation the preparation remembers, so a request over a long
    /// history is laid out without copying it.
    pub messages: SharedVec<Message>,
    /// Shared: every request of an agent holds the same schemas.
    pub tools: Arc<[ToolSchema]>,
    /// Output tokens requested, when the harness asks for a bound.
    pub max_output_tokens: Option<u64>,
}

/// Token usage as the provider reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// The whole prompt, cached or not.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache (0 when it reports none).
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the prompt cache (Anthropic's cache creation).
    pub cache_write_tokens: u64,
}

/// A successful model answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// The assistant message: text, thinking and tool calls.
    pub message: Message,
    pub usage: Option<Usage>,
}

/// A failed model request. Each variant is a distinct class with its own recovery.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ModelError {
    /// The provider said the input does not fit its context window.
    #[error("context overflow reported by {provider} (status {status}){}", sizes(*.actual_tokens, *.max_tokens))]
    ContextOverflow {
        provider: String,
        status: u16,
        body: String,
        /// The size the provider compared with its limit, when it says: the input, or the
        /// input plus the requested output when the provider counts both (`N + M > L`).
        actual_tokens: Option<u64>,
        /// The provider's limit (its context window, or what it allows), when it says.
        max_tokens: Option<u64>,
    },
    /// The provider rejected unpaired tool calls or results.
    #[error(
        "{provider} rejected the tool-call/result pairing (status {status}): {}",
        snippet(body)
    )]
    PairingRejected {
        provider: String,
        status: u16,
        body: String,
    },
    /// No answer within the allowed time.
    #[error("model did not answer within {}", crate::format::duration(*after))]
    Timeout { after: Duration },
    /// The reply could not be understood.
    #[error("malformed model reply: {detail}; raw: {}", snippet(raw))]
    MalformedReply { detail: String, raw: String },
    /// A fault worth retrying (server error, dropped connection).
    #[error("transient provider fault (status {}): {}", status.map_or("none".to_string(), |s| s.to_string()), snippet(body))]
    Transient { status: Option<u16>, body: String },
    /// Too many requests; retry after the given time when known.
    #[error("rate limited: {}", snippet(body))]
    RateLimited {
        retry_after: Option<Duration>,
        body: String,
    },
    /// Any other refusal (bad request, authentication, output-limit errors).
    #[error("request rejected (status {status}): {}", snippet(body))]
    Rejected { status: u16, body: String },
    /// A scripted mock model ran out of turns.
    #[error(
        "mock model `{model}` has no turn left for request {request}; its last turn ends the script at {file}: add a [[turns]] entry after it or raise its `times`"
    )]
    ScriptExhausted {
        model: String,
        file: String,
        request: u64,
    },
}

impl ModelError {
    /// A short stable name of the error class, for traces and events.
    pub fn kind(&self) -> &'static str {
        self.error_kind().as_str()
    }

    /// The error class, typed.
    ///
    /// ```
    /// use ctxbed_harness::model::{ModelError, ModelErrorKind};
    /// let error = ModelError::Rejected { status: 401, body: String::new() };
    /// assert_eq!(error.error_kind(), ModelErrorKind::Rejected);
    /// assert_eq!(error.kind(), "rejected");
    /// ```
    pub fn error_kind(&self) -> ModelErrorKind {
        match self {
            ModelError::ContextOverflow { .. } => ModelErrorKind::ContextOverflow,
            ModelError::PairingRejected { .. } => ModelErrorKind::PairingRejected,
            ModelError::Timeout { .. } => ModelErrorKind::Timeout,
            ModelError::MalformedReply { .. } => ModelErrorKind::MalformedReply,
            ModelError::Transient { .. } => ModelErrorKind::Transient,
            ModelError::RateLimited { .. } => ModelErrorKind::RateLimited,
            ModelError::Rejected { .. } => ModelErrorKind::Rejected,
            ModelError::ScriptExhausted { .. } => ModelErrorKind::ScriptExhausted,
        }
    }
}

/// The class of a [`ModelError`], without its details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ModelErrorKind {
    ContextOverflow,
    PairingRejected,
    Timeout,
    MalformedReply,
    Transient,
    RateLimited,
    Rejected,
    ScriptExhausted,
}

impl ModelErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [ModelErrorKind; 8] = [
        ModelErrorKind::ContextOverflow,
        ModelErrorKind::PairingRejected,
        ModelErrorKind::Timeout,
        ModelErrorKind::MalformedReply,
        ModelErrorKind::Transient,
        ModelErrorKind::RateLimited,
        ModelErrorKind::Rejected,
        ModelErrorKind::ScriptExhausted,
    ];

    /// The stable name traces, events and records use (`context_overflow`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ModelErrorKind::ContextOverflow => "context_overflow",
            ModelErrorKind::PairingRejected => "pairing_rejected",
            ModelErrorKind::Timeout => "timeout",
            ModelErrorKind::MalformedReply => "malformed_reply",
            ModelErrorKind::Transient => "transient",
            ModelErrorKind::RateLimited => "rate_limited",
            ModelErrorKind::Rejected => "rejected",
            ModelErrorKind::ScriptExhausted => "script_exhausted",
        }
    }
}

impl std::fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn sizes(actual: Option<u64>, max: Option<u64>) -> String {
    match (actual, max) {
        (Some(actual), Some(max)) => format!(": {actual} tokens > {max} maximum"),
        (None, Some(max)) => format!(": maximum {max} tokens"),
        (Some(actual), None) => format!(": {actual} tokens"),
        (None, None) => String::new(),
    }
}

/// The provider's own message when the body is a JSON error, else the raw body; bounded.
fn snippet(body: &str) -> String {
    let message = classify::provider_message(body).unwrap_or_else(|| body.to_string());
    crate::format::snippet(&message, crate::limits::SNIPPET_CHARS_MAX)
}

/// A language model the agent can call.
#[async_trait]
pub trait Model: Send + Sync {
    /// Name, window and output limit.
    fn info(&self) -> &ModelInfo;

    /// Answers one request.
    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;
}
