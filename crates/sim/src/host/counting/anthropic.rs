//! Anthropic's counts, estimated: Claude's tokenizer is not public, so text is counted with
//! o200k and what Anthropic adds around it is fitted on the calibration corpus
//! (`tests/calibration.rs`; BENCHMARKS.md "Token counts against real providers"), starting from
//! the figures Anthropic publishes where there are any.

use serde_json::Value;

use super::Family;
use crate::mock::MockModel;
use ctxbed_harness::format::json_text;
use ctxbed_harness::model::ModelRequest;

/// What one family adds, in tokens.
#[derive(Debug, Clone, Copy)]
struct Constants {
    /// The tool-use system prompt with `tool_choice` `auto` or `none`, and with `any` or
    /// `tool`: Anthropic's pricing page ("Tool use system prompt token count",
    /// docs.anthropic.com/en/docs/tool-use-pricing-and-tokens) lists it per model.
    prompt: (i64, i64),
    /// What the corpus shows beyond the published prompt when tools are offered (auto, forced):
    /// how Anthropic frames each definition, and Claude's tokenizer against o200k on them.
    framing: (i64, i64),
    /// Extended thinking with a budget (`thinking.type` `enabled`).
    thinking: i64,
    /// Adaptive thinking (`thinking.type` `adaptive`).
    adaptive: i64,
    /// Claude's tokenizer against o200k on the whole request, in per cent over (0: the same).
    tokenizer_percent: i64,
}

/// The constants of `family`. Fitted figures are medians over the calibration corpus's
/// requests with the feature (`tests/calibration.rs`; BENCHMARKS.md "Token counts against real
/// providers"), how many beside each.
fn constants(family: Family) -> Constants {
    match family {
        // Published: Claude 3 Opus 530 / 281 (Sonnet 159 / 235, Haiku 264 / 340; Opus's
        // figures are taken for the family, the corpus has one Claude 3 request, without
        // tools).
        Family::Claude3 => Constants {
            prompt: (530, 281),
            framing: (0, 0),
            thinking: 0,
            adaptive: 0,
            tokenizer_percent: 0,
        },
        // Published 346 / 313 (Sonnet 3.7, Claude 4). Fitted: framing -16 (4 requests with
        // auto), +38 (2 with any); thinking 30 as Claude 4.5.
        Family::Claude4 => Constants {
            prompt: (346, 313),
            framing: (-16, 38),
            thinking: 30,
            adaptive: 0,
            tokenizer_percent: 0,
        },
        // Published 346 / 313. Fitted: framing 165 (the median residual over the 103 requests
        // with auto or none is 0), 310 (18 with any or tool: -2.5); thinking 30 (23 requests
        // without tools); adaptive 17 (1 request, Opus 4.6).
        Family::Claude45 => Constants {
            prompt: (346, 313),
            framing: (165, 310),
            thinking: 30,
            adaptive: 17,
            tokenizer_percent: 0,
        },
        // Published 346 / 313 for the Claude 4 models. Fitted: the newer tokenizer counts 11 %
        // more than o200k (the median over 10 plain Opus 4.8 requests: 1.07 to 1.40); framing
        // 50 (7 requests with auto, median residual -9); adaptive thinking adds nothing (3
        // requests: the count is the plain one).
        Family::ClaudeOpus47 => Constants {
            prompt: (346, 313),
            framing: (50, 310),
            thinking: 30,
            adaptive: 0,
            tokenizer_percent: 11,
        },
        // A model that is not Claude's (a mock's own name): Claude 4.5's figures, adaptive
        // thinking counted as thinking with a budget (the one Opus 4.6 request is too little to
        // carry beyond its family).
        _ => Constants {
            prompt: (346, 313),
            framing: (165, 310),
            thinking: 30,
            adaptive: 30,
            tokenizer_percent: 0,
        },
    }
}

/// A structured-output schema (`output_config.format`, or `output_format`): its JSON and the
/// instructions around it, fitted: the median over 12 requests.
const FORMAT: i64 = 143;

/// A task budget (`output_config.task_budget`): the budget Anthropic writes into the prompt,
/// fitted: 2 requests, 39 and 40 tokens.
const TASK_BUDGET: i64 = 39;

/// What Anthropic counts beyond the harness's count of `request`, read from `json`.
pub(super) fn correction(model: &MockModel, json: &Value, request: &ModelRequest) -> i64 {
    let name = json
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let constants = constants(Family::of(name));
    let base = model.count_input_tokens(request) as i64;
    let mut delta = tool_result_images(json) + base * constants.tokenizer_percent / 100;
    if !request.tools.is_empty() {
        let forced = json
            .get("tool_choice")
            .and_then(|choice| choice.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|kind| kind == "any" || kind == "tool");
        let pick = |(auto, any): (i64, i64)| if forced { any } else { auto };
        delta += pick(constants.prompt) + pick(constants.framing);
        let (hidden, listed, loaded) = deferred(model, json, request);
        delta += listed * DEFERRED_LISTED + loaded * DEFERRED_LOADED - hidden;
    }
    let thinking = json
        .get("thinking")
        .and_then(|thinking| thinking.get("type"))
        .and_then(Value::as_str);
    delta += match thinking {
        Some("enabled") => constants.thinking,
        Some("adaptive") => constants.adaptive,
        _ => 0,
    };
    let config = json.get("output_config");
    let format = config
        .and_then(|config| config.get("format"))
        .or_else(|| json.get("output_format"));
    if let Some(schema) = format.and_then(|format| format.get("schema")) {
        delta += model.text_tokens(&json_text(schema)) as i64 + FORMAT;
    }
    if config.is_some_and(|config| config.get("task_budget").is_some()) {
        delta += TASK_BUDGET;
    }
    delta
}

/// A tool marked `defer_loading` is left out of the prompt until a tool search names it in a
/// `tool_reference` ("Tool search tool" guide); only its name stays listed. Fitted: 14 tokens
/// for each one listed (the median over 12 requests before any search), and 30 more for each
/// one a `tool_reference` loaded (21 requests), which the read-back request holds as an empty
/// result.
const DEFERRED_LISTED: i64 = 14;
const DEFERRED_LOADED: i64 = 30;

/// The tools marked `defer_loading`: the harness's count of those no `tool_reference` has
/// loaded yet (which the prompt does not hold), how many are marked, and how many were loaded.
fn deferred(model: &MockModel, json: &Value, request: &ModelRequest) -> (i64, i64, i64) {
    let referenced = tool_result_blocks(json)
        .filter_map(|block| block.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("tool_reference"))
        .filter_map(|part| part.get("tool_name").and_then(Value::as_str))
        .collect::<Vec<_>>();
    let tools = json.get("tools").and_then(Value::as_array);
    let marked: Vec<&str> = tools
        .into_iter()
        .flatten()
        .filter(|tool| tool.get("defer_loading").and_then(Value::as_bool) == Some(true))
        .filter_map(|tool| tool.get("name").and_then(Value::as_str))
        .collect();
    let loaded = marked
        .iter()
        .filter(|name| referenced.contains(name))
        .count();
    let schemas: Vec<_> = request
        .tools
        .iter()
        .filter(|tool| {
            let name = tool.name.as_str();
            marked.contains(&name) && !referenced.contains(&name)
        })
        .cloned()
        .collect();
    let hidden = super::harness_schemas(model, &schemas);
    (hidden, marked.len() as i64, loaded as i64)
}

/// The `tool_result` blocks of a Messages body, in order.
fn tool_result_blocks(json: &Value) -> impl Iterator<Item = &Value> {
    let messages = json.get("messages").and_then(Value::as_array);
    messages
        .into_iter()
        .flatten()
        .filter_map(|message| message.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
}

/// The images inside `tool_result` blocks, which the read-back request keeps as text only:
/// priced as Anthropic prices an image anywhere else (width × height / 750, "Vision" guide).
fn tool_result_images(json: &Value) -> i64 {
    tool_result_blocks(json)
        .filter_map(|block| block.get("content").and_then(Value::as_array))
        .flatten()
        .filter_map(crate::host::images::anthropic_block)
        .filter_map(Result::ok)
        .map(|image| image.tokens as i64)
        .sum()
}
