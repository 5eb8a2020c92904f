//! Anthropic's counts, estimated: Claude's tokenizer is not public, so text is counted with
//! o200k and what Anthropic adds around it is fitted on the calibration corpus
//! (`tests/calibration.rs`; BENCHMARKS.md "Token counts against real providers"), starting from
//! the figures Anthropic publishes where there are any.

use serde_json::Value;

use crate::mock::MockModel;
use ctxbed_harness::format::json_text;
use ctxbed_harness::model::ModelRequest;

/// The tool-use system prompt Anthropic adds when a request offers tools, as its pricing page
/// lists it for the Claude 4 models and Sonnet 3.7: 346 tokens with `tool_choice` `auto` or
/// `none`, 313 with `any` or `tool`.
const TOOL_PROMPT_AUTO: i64 = 346;
const TOOL_PROMPT_ANY: i64 = 313;

/// What the corpus shows beyond the published prompt, fitted: the median over the requests
/// that offer tools (124 with `auto` or `none`: 165 more; 25 with `any` or `tool`: 310 more).
/// It holds how Anthropic frames each tool definition, which the harness's count (the schema's
/// JSON) does not.
const TOOL_FRAMING_AUTO: i64 = 165;
const TOOL_FRAMING_ANY: i64 = 310;

/// Extended thinking on: fitted, the median over 23 requests without tools.
const THINKING: i64 = 30;

/// A structured-output schema (`output_config.format`, or `output_format`): its JSON and the
/// instructions around it, fitted: the median over 12 requests.
const FORMAT: i64 = 143;

/// What Anthropic counts beyond the harness's count of `request`, read from `json`.
pub(super) fn correction(model: &MockModel, json: &Value, request: &ModelRequest) -> i64 {
    let mut delta = 0;
    if !request.tools.is_empty() {
        let forced = json
            .get("tool_choice")
            .and_then(|choice| choice.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|kind| kind == "any" || kind == "tool");
        delta += if forced {
            TOOL_PROMPT_ANY + TOOL_FRAMING_ANY
        } else {
            TOOL_PROMPT_AUTO + TOOL_FRAMING_AUTO
        };
    }
    if super::super::anthropic::thinking_enabled(json) {
        delta += THINKING;
    }
    let format = json
        .get("output_config")
        .and_then(|config| config.get("format"))
        .or_else(|| json.get("output_format"));
    if let Some(schema) = format.and_then(|format| format.get("schema")) {
        delta += model.text_tokens(&json_text(schema)) as i64 + FORMAT;
    }
    delta
}
