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

mod anthropic;
mod images;
mod openai;
mod render;

use serde_json::Value;

use super::Api;
use crate::mock::MockModel;
use ctxbed_harness::format::json_text;
use ctxbed_harness::message::ContentPart;
use ctxbed_harness::model::ModelRequest;
use ctxbed_harness::tokens::{TOOL_PART_OVERHEAD_TOKENS, TOOL_SCHEMA_OVERHEAD_TOKENS};
use ctxbed_harness::tools::ToolSchema;

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
    /// The Claude 3 models (`claude-3-*`, but Sonnet 3.7).
    Claude3,
    /// Sonnet 3.7 and the first Claude 4 models: Sonnet 4 and Opus 4 / 4.1.
    Claude4,
    /// Claude 4.5 and 4.6 (Sonnet, Haiku, Opus) and Sonnet 5.
    Claude45,
    /// Opus 4.7 and later, Opus 5 and Fable 5: the newer tokenizer.
    ClaudeOpus47,
}

impl Family {
    /// The family of the model a request names.
    pub fn of(model: &str) -> Family {
        let model = model.to_ascii_lowercase();
        let starts = |prefix: &str| model.starts_with(prefix);
        if let Some(claude) = model.strip_prefix("claude-") {
            Family::claude(claude)
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

    /// The family of a Claude model, named without its `claude-` prefix.
    fn claude(name: &str) -> Family {
        let starts = |prefix: &str| name.starts_with(prefix);
        if starts("3-7") {
            Family::Claude4
        } else if starts("3") {
            Family::Claude3
        } else if ["opus-4-7", "opus-4-8", "opus-4-9", "opus-5", "fable"]
            .iter()
            .any(|prefix| starts(prefix))
        {
            Family::ClaudeOpus47
        } else if [
            "sonnet-4-0",
            "sonnet-4-2",
            "opus-4-0",
            "opus-4-1",
            "opus-4-2",
        ]
        .iter()
        .any(|prefix| starts(prefix))
        {
            Family::Claude4
        } else {
            Family::Claude45
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
            Family::Claude3 => "claude-3",
            Family::Claude4 => "claude-4",
            Family::Claude45 => "claude-4.5",
            Family::ClaudeOpus47 => "claude-opus-4.7",
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
    let base = model.count_input_tokens(request);
    let correction = match api {
        Api::OpenAi | Api::Responses => openai::correction(model, api, json, request),
        Api::Anthropic => anthropic::correction(model, json, request),
    };
    base.saturating_add_signed(correction)
}

/// The harness's count of `tools`, which a provider's rendering replaces.
fn harness_schemas(model: &MockModel, tools: &[ToolSchema]) -> i64 {
    let tokens: u64 = tools
        .iter()
        .map(|tool| {
            TOOL_SCHEMA_OVERHEAD_TOKENS
                + model.text_tokens(&tool.name)
                + model.text_tokens(&tool.description)
                + model.text_tokens(&json_text(&tool.parameters))
        })
        .sum();
    tokens as i64
}

/// The tool calls and results of a request's history, and what the harness counts for them
/// beyond their names, arguments and outputs.
#[derive(Debug, Default)]
struct ToolParts {
    calls: i64,
    results: i64,
    /// The harness's fixed cost of each part and the tokens of its id, which no provider
    /// counts as such.
    ids_and_framing: i64,
    /// The tokens of the tool names the results repeat.
    result_names: i64,
}

fn tool_parts(model: &MockModel, request: &ModelRequest) -> ToolParts {
    let mut parts = ToolParts::default();
    let framing = TOOL_PART_OVERHEAD_TOKENS as i64;
    let tokens = |text: &str| model.text_tokens(text) as i64;
    for part in request.messages.iter().flat_map(|m| m.parts.iter()) {
        match part {
            ContentPart::ToolCall(call) => {
                parts.calls += 1;
                parts.ids_and_framing += framing + tokens(&call.id);
            }
            ContentPart::ToolResult(result) => {
                parts.results += 1;
                parts.ids_and_framing += framing + tokens(&result.call_id);
                parts.result_names += tokens(&result.tool_name);
            }
            _ => {}
        }
    }
    parts
}
