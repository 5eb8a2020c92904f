//! OpenAI's counts (Chat Completions and Responses): the messages as the harness counts them
//! (o200k, 4 tokens a message, 3 for the reply: OpenAI's cookbook "How to count tokens with
//! tiktoken"), with the tool list rendered as the model reads it ([`super::render`]), tool
//! calls and results framed as OpenAI frames them (no ids), and a structured-output schema
//! added as its `# Response Formats` section.

use serde_json::Value;

use super::{Family, images, render, tool_parts};
use crate::host::Api;
use crate::mock::MockModel;
use ctxbed_harness::format::json_text;
use ctxbed_harness::message::{ContentPart, Role};
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
    // GPT-5 and the o-series count one token less per request (7 and 6 plain requests), on
    // either API.
    let request = match family {
        Family::Gpt5 | Family::OSeries => -1,
        _ => 0,
    };
    let (tools, call, format) = match (api, family) {
        // GPT-5 on Chat Completions adds its tool channel's instructions: 84 tokens with tools
        // (39 requests); a call and its result, 12 (10).
        (Api::OpenAi, Family::Gpt5) => (84, 12, 0),
        // On Responses, 2 with tools (43 requests); a call and its result, 13 (6).
        (Api::Responses, Family::Gpt5) => (2, 13, 0),
        // The rest on Responses: 3 less with tools (9 requests), 9 a call and its result (6).
        (Api::Responses, _) => (-3, 9, 0),
        // The rest on Chat Completions: 2 with tools (17 requests); 9 a call and its result
        // (41).
        _ => (2, 9, 0),
    };
    Constants {
        request,
        tools,
        call,
        result: 0,
        format,
    }
}

/// On Chat Completions the tool block joins a leading system (or developer) message instead of
/// opening one of its own, which saves that message's framing: fitted on the 16 requests with
/// tools and a leading system message (5 over without it, within 2 with it).
const SYSTEM_JOIN: i64 = -5;

/// Parallel calls (two or more in one assistant message) are written back as one call of the
/// `multi_tool_use.parallel` wrapper, whose JSON names each tool again: fitted, per call in such
/// a message, on the 26 requests with one (all within 2 at 7).
const PARALLEL_CALL: i64 = 7;

/// What OpenAI counts beyond the harness's count of `request`, read from `json`.
pub(super) fn correction(model: &MockModel, api: Api, json: &Value, request: &ModelRequest) -> i64 {
    let name = json
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let family = Family::of(name);
    let constants = constants(api, family);
    let tokens = |text: &str| model.text_tokens(text) as i64;
    let mut delta = constants.request;
    if !request.tools.is_empty() {
        delta += tokens(&render::functions(&request.tools)) + constants.tools;
        delta -= super::harness_schemas(model, &request.tools);
        let leading_system = request
            .messages
            .first()
            .is_some_and(|message| message.role == Role::System);
        if api == Api::OpenAi && leading_system {
            delta += SYSTEM_JOIN;
        }
    }
    delta += parallel_calls(request) * PARALLEL_CALL;
    delta += images::correction(name, request);
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
    section.push_str(&json_text(&open_schema(schema)));
    Some(section)
}

/// A schema as the section shows it: without `additionalProperties` and `required`, which a
/// structured output's schema implies (every field is required, none other allowed). Fitted
/// on the calibration corpus: with them the section was 5 and 47 tokens over on the two
/// schemas most requests there use, without them the 9 requests with a schema are within 2.
fn open_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let kept = map
                .iter()
                .filter(|(key, _)| !matches!(key.as_str(), "additionalProperties" | "required"))
                .map(|(key, value)| {
                    let value = if key == "properties" {
                        // Property names are names, not keywords: keep them all.
                        let properties = value.as_object().into_iter().flatten();
                        Value::Object(
                            properties
                                .map(|(name, property)| (name.clone(), open_schema(property)))
                                .collect(),
                        )
                    } else {
                        open_schema(value)
                    };
                    (key.clone(), value)
                })
                .collect();
            Value::Object(kept)
        }
        Value::Array(items) => Value::Array(items.iter().map(open_schema).collect()),
        other => other.clone(),
    }
}

/// The calls made in parallel: those of assistant messages that make two or more.
fn parallel_calls(request: &ModelRequest) -> i64 {
    request
        .messages
        .iter()
        .map(|message| {
            let calls = message.parts.iter();
            calls
                .filter(|part| matches!(part, ContentPart::ToolCall(_)))
                .count() as i64
        })
        .filter(|&calls| calls >= 2)
        .sum()
}
