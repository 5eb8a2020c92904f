//! OpenAI's counts (Chat Completions and Responses): the messages as the harness counts them
//! (o200k, 4 tokens a message, 3 for the reply: OpenAI's cookbook "How to count tokens with
//! tiktoken"), with the tool list rendered as the model reads it ([`super::render`]), tool
//! calls and results framed as OpenAI frames them (no ids), and a structured-output schema
//! added as its `# Response Formats` section.

use serde_json::Value;

use super::{Family, render, tool_parts};
use crate::host::Api;
use crate::mock::MockModel;
use ctxbed_harness::format::json_text;
use ctxbed_harness::model::ModelRequest;

/// What one family adds to the harness's count, in tokens.
#[derive(Debug, Clone, Copy)]
struct Constants {
    /// Once per request.
    request: i64,
    /// Once when the request offers tools, besides the rendered block.
    tools: i64,
    /// Each tool call in the history, besides its name and arguments.
    call: i64,
    /// Each tool result in the history, besides its output.
    result: i64,
    /// Once when a structured-output schema is given, besides its rendered section.
    format: i64,
}

/// The constants of `family` on `api`. Every figure is fitted on the calibration corpus
/// (`tests/calibration.rs`; BENCHMARKS.md "Token counts against real providers"): the median
/// difference, per API and family, between the provider's count and the rest of this count over
/// the requests that have the feature (how many stands beside each).
fn constants(api: Api, family: Family) -> Constants {
    let mut constants = Constants {
        request: 0,
        tools: 0,
        call: 0,
        result: 0,
        format: 0,
    };
    match (api, family) {
        // GPT-5 and the o-series count one token less per request (7 and 6 plain requests).
        (_, Family::OSeries) => constants.request = -1,
        // GPT-5 on Chat Completions adds its tool channel's instructions: 84 tokens with tools
        // (39 requests); a call and its result, 12 (10).
        (Api::OpenAi, Family::Gpt5) => {
            constants.request = -1;
            constants.tools = 84;
            constants.call = 12;
        }
        // On Responses, 2 with tools (43 requests); a call and its result, 13 (6).
        (_, Family::Gpt5) => {
            constants.request = -1;
            constants.tools = 2;
            constants.call = 13;
        }
        // GPT-4.1 on Chat Completions: 12 with tools (4), 31 a call and its result (4).
        (Api::OpenAi, Family::Gpt41) => {
            constants.tools = 12;
            constants.call = 31;
        }
        // GPT-4o and the rest on Responses: 3 less with tools (9 requests), 9 a call and its
        // result (6), 16 less for the structured-output section (4).
        (Api::Responses, _) => {
            constants.tools = -3;
            constants.call = 9;
            constants.format = -16;
        }
        // GPT-4o and the rest on Chat Completions: 2 with tools (17 requests); 9 a call and its
        // result (41).
        _ => {
            constants.tools = 2;
            constants.call = 9;
        }
    }
    constants
}

/// What OpenAI counts beyond the harness's count of `request`, read from `json`.
pub(super) fn correction(model: &MockModel, api: Api, json: &Value, request: &ModelRequest) -> i64 {
    let family = Family::of(
        json.get("model")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    let constants = constants(api, family);
    let tokens = |text: &str| model.text_tokens(text) as i64;
    let mut delta = constants.request;
    if !request.tools.is_empty() {
        delta += tokens(&render::functions(&request.tools)) + constants.tools;
        delta -= super::harness_schemas(model, &request.tools);
    }
    let parts = tool_parts(model, request);
    delta += parts.calls * constants.call + parts.results * constants.result;
    delta -= parts.ids_and_framing;
    // The result's tool name is not part of what OpenAI renders for it.
    delta -= parts.result_names;
    if let Some(section) = response_format(json) {
        delta += tokens(&section) + constants.format;
    }
    delta
}

/// The structured-output schema of a Chat Completions (`response_format`) or Responses
/// (`text.format`) body, as a `# Response Formats` section.
fn response_format(json: &Value) -> Option<String> {
    let format = json
        .get("response_format")
        .or_else(|| json.get("text").and_then(|text| text.get("format")))?;
    if format.get("type").and_then(Value::as_str) != Some("json_schema") {
        return None;
    }
    // Chat nests the schema under `json_schema`; Responses gives it flat.
    let spec = format.get("json_schema").unwrap_or(format);
    let name = spec.get("name").and_then(Value::as_str).unwrap_or_default();
    let schema = spec.get("schema").unwrap_or(&Value::Null);
    let mut section = format!("# Response Formats\n\n## {name}\n\n");
    if let Some(description) = spec.get("description").and_then(Value::as_str) {
        section.push_str(&format!("// {description}\n"));
    }
    section.push_str(&json_text(schema));
    Some(section)
}
