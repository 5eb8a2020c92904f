//! What a request is and what was answered: the [`Api`] a request path names (Anthropic's
//! token-counting route among them) and the [`Exchange`] the host keeps for each request.

use serde_json::Value;

use super::Outcome;
use ctxbed_harness::message::Message;
use ctxbed_harness::model::ModelRequest;

/// The end of Anthropic's token-counting route (`POST /v1/messages/count_tokens`).
pub const COUNT_TOKENS_PATH: &str = "/messages/count_tokens";

/// True for a request to Anthropic's token-counting route.
pub fn is_count_tokens(path: &str) -> bool {
    route_path(path).ends_with(COUNT_TOKENS_PATH)
}

/// A request path without its query and trailing slashes.
fn route_path(path: &str) -> &str {
    path.split('?')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/')
}

/// The wire format of one request, chosen by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Api {
    /// OpenAI Chat Completions (`POST …/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST …/messages`).
    Anthropic,
    /// OpenAI Responses (`POST …/responses`).
    Responses,
}

impl Api {
    /// Every API, in a fixed order.
    pub const ALL: [Api; 3] = [Api::OpenAi, Api::Anthropic, Api::Responses];

    /// `openai` (Chat Completions), `anthropic` (Messages) or `responses` (OpenAI Responses):
    /// the names records, traces and `CTXBED_API` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
            Api::Responses => "responses",
        }
    }

    /// The API named `name` ([`Api::as_str`]).
    pub fn parse(name: &str) -> Option<Api> {
        Api::ALL.into_iter().find(|api| api.as_str() == name)
    }

    /// The API a request path names: `…/messages` is Anthropic's, `…/responses` OpenAI's
    /// Responses, anything else OpenAI's Chat Completions.
    pub fn for_path(path: &str) -> Api {
        let path = route_path(path);
        if path.ends_with("/messages") || path.ends_with(COUNT_TOKENS_PATH) {
            Api::Anthropic
        } else if path.ends_with(super::responses::PATH) {
            Api::Responses
        } else {
            Api::OpenAi
        }
    }
}

/// One request the host received and what it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// 1-based, over every request the host received.
    pub number: u64,
    pub api: Api,
    pub path: String,
    pub stream: bool,
    /// The body as sent (`Value::Null` when it was not JSON).
    pub body: Value,
    /// The body read back as the provider sees it (`None` when it was not JSON).
    pub request: Option<ModelRequest>,
    /// The exact input tokens, counted with the mock's tokenizer.
    pub input_tokens: Option<u64>,
    /// The HTTP status answered (0: the connection was reset, no answer).
    pub status: u16,
    /// `reply` or `tool_calls`, an error kind (`context_overflow`, `pairing_rejected`,
    /// `rate_limited`, …), or a fault (`reset`, `cut_stream`, `not_json`).
    pub outcome: Outcome,
    /// The step the host was in when the request arrived (0: before the first), when it deals
    /// turns to steps.
    pub step: Option<usize>,
    /// True for a side request: one that does not continue the step's conversation (see
    /// [`continues_step`](super::continues_step)); answered without using a main-loop turn.
    pub side: bool,
    /// What the host changed in the scripted answer, and why (a tool call the request did not
    /// offer, answered as text).
    pub note: Option<String>,
    /// What an answered request read from and wrote to the provider's prompt cache.
    pub cache: super::cache::CacheUse,
    /// The wire rule a refused request broke, when its refusal names one
    /// ([`Invalid::rule`](super::validate::Invalid::rule)).
    pub refused_rule: Option<&'static str>,
    /// When the request arrived, on the host's clock (real time in `serve`, simulated time in a
    /// simulation).
    pub received: tokio::time::Instant,
    /// The `Retry-After` a 429 answer carried.
    pub retry_after: Option<std::time::Duration>,
    /// The assistant message the client received (its text and tool calls), when the answer
    /// was a reply delivered whole: not for an error, a reset or a cut stream.
    pub answer: Option<Message>,
}
