//! Anthropic Messages on the wire: a request body (`system`, `messages` of content blocks,
//! `tools` with `input_schema`) read back into a [`ModelRequest`], a reply written as a whole
//! `message` or as the Messages API's named server-sent events (`message_start`,
//! `content_block_start`/`_delta`/`_stop`, `message_delta` with usage, `message_stop`), and
//! errors in its `{"type":"error","error":{…}}` envelope.

use serde_json::{Value, json};

use super::plan::Plan;
use super::{read, thinking};
use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput, ToolResult};
use ctxbed_harness::model::{ModelReply, ModelRequest, Usage};

/// The text of a `content` that is a string or an array of blocks (text blocks only).
fn blocks_text(content: Option<&Value>) -> String {
    super::openai::content_text(content)
}

/// Reads a Messages request body back into a [`ModelRequest`], as the provider sees it: the
/// `system` field becomes the first message; in a user turn each `tool_result` block becomes a
/// tool message (in block order) and the remaining text a user message after them.
pub fn parse_request(json: &Value) -> ModelRequest {
    parse_request_with_breakpoints(json).0
}

/// True for a block (or tool) marked for caching.
fn marked(value: &Value) -> bool {
    value
        .get("cache_control")
        .is_some_and(|control| !control.is_null())
}

/// True when a `content` or `system` field holds a block marked for caching.
fn holds_mark(content: Option<&Value>) -> bool {
    content
        .and_then(Value::as_array)
        .is_some_and(|blocks| blocks.iter().any(marked))
}

/// [`parse_request`], with the cache breakpoints the body marks (`cache_control`), each as the
/// number of read-back messages its prefix holds: 0 for the tools, then the end of the system
/// prompt or of the wire message that holds the marked block (see [`super::cache`]).
pub fn parse_request_with_breakpoints(json: &Value) -> (ModelRequest, Vec<usize>) {
    let mut reader = Reader::default();
    let mut breakpoints = Vec::new();
    let tools = json.get("tools").and_then(Value::as_array);
    if tools.is_some_and(|tools| tools.iter().any(marked)) {
        breakpoints.push(0);
    }
    let system = blocks_text(json.get("system"));
    if !system.is_empty() {
        let id = reader.id();
        reader.messages.push(Message::system(id, system));
    }
    if holds_mark(json.get("system")) {
        breakpoints.push(reader.messages.len());
    }
    let wire = json.get("messages").and_then(Value::as_array);
    for message in wire.into_iter().flatten() {
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(text)) => vec![json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => Vec::new(),
        };
        if role == "assistant" {
            reader.assistant(&blocks);
        } else {
            reader.user(&blocks);
        }
        if holds_mark(message.get("content")) {
            breakpoints.push(reader.messages.len());
        }
    }
    reader.forget_earlier_thinking();
    let tools = read::tools(json, |tool| Some(read::schema(tool, "input_schema")));
    (
        read::request(reader.messages, tools, json, "max_tokens"),
        breakpoints,
    )
}

/// How many blocks (tools, system blocks and message blocks) carry `cache_control`.
pub fn cache_control_count(json: &Value) -> usize {
    let count = |list: Option<&Value>| {
        list.and_then(Value::as_array)
            .map_or(0, |items| items.iter().filter(|item| marked(item)).count())
    };
    let messages = json.get("messages").and_then(Value::as_array);
    count(json.get("tools"))
        + count(json.get("system"))
        + messages
            .into_iter()
            .flatten()
            .map(|message| count(message.get("content")))
            .sum::<usize>()
}

/// The messages read so far, the next message id, and each tool call's name by its id (a
/// `tool_result` names only the call).
#[derive(Default)]
struct Reader {
    messages: Vec<Message>,
    next_id: usize,
    names: std::collections::BTreeMap<String, String>,
}

impl Reader {
    /// The next message id: `wire-0`, `wire-1`, ….
    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("wire-{}", self.next_id - 1)
    }

    /// An assistant turn: its text (empty text dropped), thinking and `tool_use` blocks, in
    /// order, as one message.
    fn assistant(&mut self, blocks: &[Value]) {
        let mut parts = Vec::new();
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let text = block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !text.is_empty() {
                        parts.push(ContentPart::text(text));
                    }
                }
                Some("thinking") => parts.push(ContentPart::thinking(
                    block
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                )),
                // Counted as the thinking it stands for, when the mock made it.
                Some("redacted_thinking") => {
                    let data = block
                        .get("data")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    parts.push(match crate::mock::redacted_text(data) {
                        Some(text) => ContentPart::thinking(text),
                        None => ContentPart::RedactedThinking {
                            data: data.to_string(),
                        },
                    });
                }
                Some("tool_use") => {
                    let call_id = block.get("id").and_then(Value::as_str).unwrap_or_default();
                    let name = block
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    self.names.insert(call_id.to_string(), name.to_string());
                    let input = block.get("input").cloned().unwrap_or(Value::Null);
                    parts.push(ContentPart::tool_call(call_id, name, input));
                }
                _ => {}
            }
        }
        let id = self.id();
        self.messages.push(Message::new(id, Role::Assistant, parts));
    }

    /// Empties the thinking of turns before the last user turn that is not only tool results:
    /// the API strips earlier turns' thinking and does not count it, so neither does the
    /// window check; the current tool loop's thinking counts.
    fn forget_earlier_thinking(&mut self) {
        let Some(last_user) = self
            .messages
            .iter()
            .rposition(|message| message.role == Role::User)
        else {
            return;
        };
        for message in &mut self.messages[..last_user] {
            let thought = message.parts.iter().any(|part| {
                matches!(part, ContentPart::Thinking { text, .. } if !text.is_empty())
                    || matches!(part, ContentPart::RedactedThinking { .. })
            });
            if thought {
                message.parts.retain(|part| {
                    !matches!(
                        part,
                        ContentPart::Thinking { .. } | ContentPart::RedactedThinking { .. }
                    )
                });
            }
        }
    }

    /// A user turn: a tool message per `tool_result` block, in order, then its text blocks
    /// joined as one user message with its images after them (an empty one for a turn without
    /// blocks).
    fn user(&mut self, blocks: &[Value]) {
        let mut texts = Vec::new();
        let mut images = Vec::new();
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_result") => self.tool_result(block),
                Some("text") => {
                    if let Some(text) = block.get("text").and_then(Value::as_str) {
                        texts.push(text);
                    }
                }
                Some("image") => {
                    images.extend(super::images::anthropic_block(block).and_then(Result::ok));
                }
                _ => {}
            }
        }
        if !texts.is_empty() || !images.is_empty() || blocks.is_empty() {
            let id = self.id();
            let parts = super::images::user_parts(texts.join("\n"), images);
            self.messages.push(Message::new(id, Role::User, parts));
        }
    }

    /// A `tool_result` block as a tool message, named after the call it answers.
    fn tool_result(&mut self, block: &Value) {
        let call_id = block
            .get("tool_use_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let result = ToolResult {
            call_id: call_id.to_string(),
            tool_name: self.names.get(call_id).cloned().unwrap_or_default(),
            outputs: vec![ToolOutput::Text {
                text: blocks_text(block.get("content")),
            }],
            is_error: block
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            metadata: Default::default(),
        };
        let id = self.id();
        self.messages.push(Message::new(
            id,
            Role::Tool,
            vec![ContentPart::ToolResult(result)],
        ));
    }
}

/// True when the request turns extended thinking on (`thinking.type` `enabled` or
/// `adaptive`).
pub fn thinking_enabled(json: &Value) -> bool {
    json.get("thinking")
        .and_then(|thinking| thinking.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|kind| kind == "enabled" || kind == "adaptive")
}

/// The thinking written when a request turned thinking on and the scripted turn has none: the
/// API always thinks first then.
pub const UNSCRIPTED_THINKING: &str = "Deciding what to do next.";

/// The reply's thinking as the API would send it: none when the request left thinking off;
/// with thinking on, the scripted thinking, or [`UNSCRIPTED_THINKING`] first when it has none.
/// True when the reply changed (its output tokens then need counting again).
pub fn shape_thinking(reply: &mut ModelReply, enabled: bool) -> bool {
    let thinks = |part: &ContentPart| {
        matches!(
            part,
            ContentPart::Thinking { .. } | ContentPart::RedactedThinking { .. }
        )
    };
    let thought = reply.message.parts.iter().any(thinks);
    if !enabled && thought {
        reply.message.parts.retain(|part| !thinks(part));
        return true;
    }
    if enabled && !thought {
        reply
            .message
            .parts
            .insert(0, ContentPart::thinking(UNSCRIPTED_THINKING));
        return true;
    }
    false
}

/// An error in the Messages API's envelope.
pub fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

/// The signature of a thinking block: deterministic, and checkable from the block's text
/// alone (a keyed SHA-256), so a block handed back altered, or with another's signature, is
/// refused as the API refuses it.
pub fn signature(thinking: &str) -> String {
    format!("ctxbed-{}", super::seal("ctxbed thinking", thinking))
}

/// The reply's content blocks: thinking (signed) or redacted thinking, text, then each tool
/// use.
fn content(reply: &ModelReply) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(thinking) = thinking(reply) {
        let signature = signature(&thinking);
        blocks.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}));
    }
    for part in &reply.message.parts {
        if let ContentPart::RedactedThinking { data } = part {
            blocks.push(json!({"type": "redacted_thinking", "data": data}));
        }
    }
    // A text scripted empty goes out as an empty block, as the API sometimes sends one before a
    // tool use (and refuses it back).
    let text = reply.message.text();
    let scripted = reply
        .message
        .parts
        .iter()
        .any(|part| matches!(part, ContentPart::Text { .. }));
    if !text.is_empty() || (scripted && reply.message.has_tool_calls()) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in reply.message.tool_calls() {
        blocks.push(
            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}),
        );
    }
    blocks
}

fn stop_reason(reply: &ModelReply) -> &'static str {
    if reply.message.has_tool_calls() {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// The usage object: `input_tokens` is the input after the cache's part, which the cache
/// fields report.
fn usage_json(usage: &Usage, output_tokens: u64) -> Value {
    let cached = usage.cache_read_tokens + usage.cache_write_tokens;
    json!({
        "input_tokens": usage.input_tokens.saturating_sub(cached),
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": output_tokens,
    })
}

/// A whole Messages reply; `number` (the host's request number) makes its id.
pub fn message(reply: &ModelReply, model: &str, number: u64) -> Value {
    let usage = reply.usage.unwrap_or_default();
    json!({
        "id": format!("msg_{number:04}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content(reply),
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": usage_json(&usage, usage.output_tokens),
    })
}

/// Each streamed event, framed with its `event:` name: text and thinking in pieces (a thinking
/// block's signature as its last delta, `signature_delta`), each tool use's input as
/// `input_json_delta` pieces, usage in `message_start` and `message_delta`.
pub fn stream_events(reply: &ModelReply, model: &str, number: u64) -> Plan {
    let usage = reply.usage.unwrap_or_default();
    let mut start = message(reply, model, number);
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"] = usage_json(&usage, 1);
    let mut plan = Plan::default();
    plan.event(event(&json!({"type": "message_start", "message": start})));
    for (index, block) in content(reply).into_iter().enumerate() {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let text = |key: &str| block[key].as_str().unwrap_or_default().to_string();
        let opening = match kind {
            "thinking" => json!({"type": "thinking", "thinking": ""}),
            "redacted_thinking" => block.clone(),
            "tool_use" => {
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
            }
            _ => json!({"type": "text", "text": ""}),
        };
        plan.event(event(
            &json!({"type": "content_block_start", "index": index, "content_block": opening}),
        ));
        let delta = move |delta: Value| {
            event(&json!({"type": "content_block_delta", "index": index, "delta": delta}))
        };
        match kind {
            "thinking" => {
                plan.deltas(text("thinking"), 16, move |piece, _| {
                    delta(json!({"type": "thinking_delta", "thinking": piece}))
                });
                plan.event(event(
                    &json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]}}),
                ));
            }
            "redacted_thinking" => {}
            "tool_use" => {
                plan.deltas(block["input"].to_string(), 8, move |piece, _| {
                    delta(json!({"type": "input_json_delta", "partial_json": piece}))
                });
            }
            _ => {
                plan.deltas(text("text"), 16, move |piece, _| {
                    delta(json!({"type": "text_delta", "text": piece}))
                });
            }
        }
        plan.event(event(
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    plan.event(event(&json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
        "usage": {"output_tokens": usage.output_tokens},
    })));
    plan.event(event(&json!({"type": "message_stop"})));
    plan
}

/// One server-sent event, named by its data's `type`.
fn event(data: &Value) -> String {
    let name = data
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    format!("event: {name}\ndata: {data}\n\n")
}
