//! Anthropic Messages on the wire: a request body (`system`, `messages` of content blocks,
//! `tools` with `input_schema`) read back into a [`ModelRequest`], a reply written as a whole
//! `message` or as the Messages API's named server-sent events (`message_start`,
//! `content_block_start`/`_delta`/`_stop`, `message_delta` with usage, `message_stop`), and
//! errors in its `{"type":"error","error":{…}}` envelope.

use serde_json::{Value, json};

use super::{pieces, read, thinking};
use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput, ToolResult};
use ctxbed_harness::model::{ModelReply, ModelRequest};

/// The text of a `content` that is a string or an array of blocks (text blocks only).
fn blocks_text(content: Option<&Value>) -> String {
    super::openai::content_text(content)
}

/// Reads a Messages request body back into a [`ModelRequest`], as the provider sees it: the
/// `system` field becomes the first message; in a user turn each `tool_result` block becomes a
/// tool message (in block order) and the remaining text a user message after them.
pub fn parse_request(json: &Value) -> ModelRequest {
    let mut reader = Reader::default();
    let system = blocks_text(json.get("system"));
    if !system.is_empty() {
        let id = reader.id();
        reader.messages.push(Message::system(id, system));
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
    }
    let tools = read::tools(json, |tool| Some(read::schema(tool, "input_schema")));
    read::request(reader.messages, tools, json, "max_tokens")
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
                Some("thinking") => parts.push(ContentPart::Thinking {
                    text: block
                        .get("thinking")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                }),
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

    /// A user turn: a tool message per `tool_result` block, in order, then its text blocks
    /// joined as one user message (an empty one for a turn without blocks).
    fn user(&mut self, blocks: &[Value]) {
        let mut texts = Vec::new();
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_result") => self.tool_result(block),
                Some("text") => {
                    if let Some(text) = block.get("text").and_then(Value::as_str) {
                        texts.push(text);
                    }
                }
                _ => {}
            }
        }
        if !texts.is_empty() || blocks.is_empty() {
            let id = self.id();
            self.messages.push(Message::user(id, texts.join("\n")));
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

/// The reply's content blocks: thinking (signed), text, then each tool use.
fn content(reply: &ModelReply) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(thinking) = thinking(reply) {
        let signature = signature(&thinking);
        blocks.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}));
    }
    let text = reply.message.text();
    if !text.is_empty() {
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
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    })
}

/// Each streamed event, framed with its `event:` name: text and thinking in pieces (a thinking
/// block's signature as its last delta, `signature_delta`), each tool use's input as
/// `input_json_delta` pieces, usage in `message_start` and `message_delta`.
pub fn stream_events(reply: &ModelReply, model: &str, number: u64) -> Vec<String> {
    let usage = reply.usage.unwrap_or_default();
    let event = |data: Value| {
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message")
            .to_string();
        format!("event: {name}\ndata: {data}\n\n")
    };
    let mut start = message(reply, model, number);
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"] = json!({"input_tokens": usage.input_tokens, "output_tokens": 1});
    let mut events = vec![event(json!({"type": "message_start", "message": start}))];
    for (index, block) in content(reply).into_iter().enumerate() {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (opening, deltas) = match kind {
            "thinking" => (
                json!({"type": "thinking", "thinking": ""}),
                pieces(block["thinking"].as_str().unwrap_or_default(), 16)
                    .into_iter()
                    .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                    .chain([json!({"type": "signature_delta", "signature": block["signature"]})])
                    .collect::<Vec<_>>(),
            ),
            "tool_use" => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                pieces(&block["input"].to_string(), 8)
                    .into_iter()
                    .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                    .collect(),
            ),
            _ => (
                json!({"type": "text", "text": ""}),
                pieces(block["text"].as_str().unwrap_or_default(), 16)
                    .into_iter()
                    .map(|piece| json!({"type": "text_delta", "text": piece}))
                    .collect(),
            ),
        };
        events.push(event(
            json!({"type": "content_block_start", "index": index, "content_block": opening}),
        ));
        for delta in deltas {
            events.push(event(
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push(event(json!({"type": "content_block_stop", "index": index})));
    }
    events.push(event(json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
        "usage": {"output_tokens": usage.output_tokens},
    })));
    events.push(event(json!({"type": "message_stop"})));
    events
}
