//! Pieces the request readers share (`openai`, `responses`, `anthropic`): a tool schema from
//! whichever fields a format names, a text field, and the request they all build.

use std::sync::Arc;

use serde_json::Value;

use ctxbed_harness::message::Message;
use ctxbed_harness::model::{ModelRequest, Purpose};
use ctxbed_harness::tools::ToolSchema;

/// A string field of `value`, or empty.
pub(super) fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The tool schema `tool` describes: its `name`, `description`, and its parameters under
/// `parameters` (the field each format names its own way).
pub(super) fn schema(tool: &Value, parameters: &str) -> ToolSchema {
    ToolSchema {
        name: text(tool, "name"),
        description: text(tool, "description"),
        parameters: tool.get(parameters).cloned().unwrap_or(Value::Null),
    }
}

/// The tools of a request body: each item of its `tools` list that `pick` finds a schema in.
pub(super) fn tools(
    json: &Value,
    pick: impl Fn(&Value) -> Option<ToolSchema>,
) -> Arc<[ToolSchema]> {
    json.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(pick)
        .collect()
}

/// A reasoning request of `messages` and `tools`, bounded by `json[max_field]`.
pub(super) fn request(
    messages: Vec<Message>,
    tools: Arc<[ToolSchema]>,
    json: &Value,
    max_field: &str,
) -> ModelRequest {
    ModelRequest {
        call_id: String::new(),
        purpose: Purpose::Reasoning,
        messages: messages.into(),
        tools,
        max_output_tokens: json.get(max_field).and_then(Value::as_u64),
    }
}
