//! The Anthropic Messages wire format (`POST {base_url}/v1/messages`).
//!
//! [`request_body`] serialises a [`ModelRequest`] exactly: system messages become the
//! top-level `system` text (joined by blank lines); assistant text and tool calls become
//! `text` and `tool_use` blocks; tool results become `tool_result` blocks (with `is_error`
//! when set) in a user message; consecutive messages that map to the same role are merged, as
//! the API requires alternating roles. Tool schemas go out as `tools` with `input_schema`;
//! `max_tokens` is always sent. With extended thinking on (`thinking_budget`), `thinking` is
//! sent enabled with that budget, and each assistant turn's signed `thinking` and
//! `redacted_thinking` blocks go back first, unchanged, as the API requires of the turn a tool
//! loop continues; thinking without a signature (from another provider) is not sent, nor is any
//! thinking when it is off.
//!
//! [`parse_reply`] reads `content` blocks (`text`, `tool_use`, `thinking` with its signature,
//! `redacted_thinking`; others ignored) and `usage`, whose input is the whole prompt: uncached
//! input plus the tokens written to and read from the prompt cache. [`StreamAssembler`]
//! follows the event stream: `message_start` (input usage), `content_block_start`,
//! `content_block_delta` (`text_delta`, `input_json_delta`, `thinking_delta`,
//! `signature_delta`; other delta types ignored), `content_block_stop`, `message_delta` (output
//! usage), `message_stop` (the end), `ping`, and `error` (classified like an HTTP error).
//! Unknown event types are ignored, as Anthropic documents that new ones may appear. A stream
//! that ends before `message_stop` is a transient fault.
//!
//! ```
//! use ctxbed_providers::anthropic::StreamAssembler;
//! let mut stream = StreamAssembler::default();
//! for data in [
//!     r#"{"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}"#,
//!     r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"execute","input":{}}}"#,
//!     r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"command\":"}}"#,
//!     r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"ls\"}"}}"#,
//!     r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
//! ] {
//!     assert!(!stream.event(None, data).unwrap());
//! }
//! assert!(stream.event(Some("message_stop"), r#"{"type":"message_stop"}"#).unwrap());
//! let reply = stream.finish().unwrap();
//! let call = reply.message.tool_calls().next().unwrap();
//! assert_eq!(call.arguments["command"], "ls");
//! assert_eq!(reply.usage.unwrap().output_tokens, 9);
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::WireOptions;
use crate::body;
use crate::limits::TOOL_CALL_ARGUMENTS_BYTES_MAX;
use crate::openai::{outputs_text, parts_text, with_images};
use crate::reply::{error_in_body, malformed, named_event, parse_arguments, raw_snippet};
use ctxbed_harness::limits::TOOL_CALLS_PER_REPLY_MAX;
use ctxbed_harness::message::{ContentPart, Message, Role};
use ctxbed_harness::model::{ModelError, ModelReply, ModelRequest, Usage};
use ctxbed_harness::shared_vec::SharedVec;

/// The name given to the error classifier.
pub const PROVIDER: &str = "anthropic";

/// The output bound sent when neither the request nor the configuration gives one.
pub const MAX_TOKENS_DEFAULT: u64 = 4_096;

/// The request body for one [`ModelRequest`].
pub fn request_body(request: &ModelRequest, options: &WireOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), options.model.clone().into());
    let max_tokens = request
        .max_output_tokens
        .or(options.max_output_tokens)
        .unwrap_or(MAX_TOKENS_DEFAULT);
    // Anthropic refuses a thinking budget that is not under `max_tokens` (``` `max_tokens` must be
    // greater than `thinking.budget_tokens`. ``` liuw1535/antigravity2api-nodejs#149); thinking
    // counts toward `max_tokens`, so a bound at or under the budget gets the budget on top.
    let max_tokens = match options.thinking_budget {
        Some(budget) if max_tokens <= budget => max_tokens + budget,
        _ => max_tokens,
    };
    body.insert("max_tokens".into(), max_tokens.into());
    let system: Vec<String> = request
        .messages
        .iter()
        .filter(|message| message.role == Role::System)
        .map(|message| parts_text(&message.parts))
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), system.join("\n\n").into());
    }
    let thinking = options.thinking_budget.is_some();
    body.insert(
        "messages".into(),
        messages(&request.messages, thinking).into(),
    );
    if let Some(budget) = options.thinking_budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    }
    let tools = body::tools(request, |tool| {
        json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.parameters,
        })
    });
    if let Some(tools) = tools {
        body.insert("tools".into(), tools);
    }
    if options.stream {
        body.insert("stream".into(), true.into());
    }
    Value::Object(body)
}

/// Non-system messages as alternating user/assistant messages of content blocks; with
/// `thinking`, an assistant turn's signed thinking goes first.
fn messages(messages: &SharedVec<Message>, thinking: bool) -> Vec<Value> {
    let mut wire: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::System => continue,
            Role::User => ("user", user_blocks(message)),
            Role::Tool => ("user", result_blocks(message)),
            Role::Assistant => {
                let mut blocks = if thinking {
                    thinking_blocks(message)
                } else {
                    Vec::new()
                };
                blocks.extend(text_blocks(message));
                blocks.extend(message.tool_calls().map(|call| {
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": tool_input(&call.arguments)})
                }));
                ("assistant", blocks)
            }
        };
        match wire.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => wire.push((role, blocks)),
        }
    }
    wire.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// A call's `input`: the API takes only an object, so arguments the model sent as something
/// else (kept as text) go back as an empty object.
fn tool_input(arguments: &Value) -> Value {
    if arguments.is_object() {
        arguments.clone()
    } else {
        Value::Object(Map::new())
    }
}

/// The message's thinking as the provider sent it: signed `thinking` and `redacted_thinking`
/// blocks (unsigned thinking cannot be handed back and is left out).
fn thinking_blocks(message: &Message) -> Vec<Value> {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Thinking {
                text,
                signature: Some(signature),
            } => Some(json!({"type": "thinking", "thinking": text, "signature": signature})),
            ContentPart::RedactedThinking { data } => {
                Some(json!({"type": "redacted_thinking", "data": data}))
            }
            _ => None,
        })
        .collect()
}

/// A user message's blocks: its text, with each image an `image` block of base64 source, in
/// order.
fn user_blocks(message: &Message) -> Vec<Value> {
    let content = with_images(
        message,
        |text| json!({"type": "text", "text": text}),
        |image| json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}),
    );
    match content {
        Value::Array(blocks) => blocks,
        _ => text_blocks(message),
    }
}

fn text_blocks(message: &Message) -> Vec<Value> {
    let text = parts_text(&message.parts);
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

fn result_blocks(message: &Message) -> Vec<Value> {
    message
        .tool_results()
        .map(|result| {
            let mut block = Map::new();
            block.insert("type".into(), "tool_result".into());
            block.insert("tool_use_id".into(), result.call_id.clone().into());
            block.insert("content".into(), outputs_text(&result.outputs).into());
            if result.is_error {
                block.insert("is_error".into(), true.into());
            }
            Value::Object(block)
        })
        .collect()
}

/// Parses a non-streamed reply.
///
/// # Errors
/// An error the body carries instead of a reply, or a body without a `content` array
/// ([`ModelError::MalformedReply`] with a bounded raw snippet).
pub fn parse_reply(body: &[u8]) -> Result<ModelReply, ModelError> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|error| malformed(format!("the reply is not JSON: {error}"), body))?;
    if let Some(error) = error_in_body(PROVIDER, &json, &String::from_utf8_lossy(body)) {
        return Err(error);
    }
    let Some(content) = json.get("content").and_then(Value::as_array) else {
        return Err(malformed("the reply has no content array", body));
    };
    if content.len() > TOOL_CALLS_PER_REPLY_MAX * 2 {
        return Err(malformed("the reply has too many content blocks", body));
    }
    let mut assembler = StreamAssembler::default();
    for (index, block) in content.iter().enumerate() {
        assembler.start_block(index as u64, block);
    }
    assembler.usage = json.get("usage").and_then(usage);
    assembler.done = true;
    assembler.finish()
}

/// The usage figures: `input_tokens` counts only the input after the last cache breakpoint,
/// so the prompt's size is it plus the tokens written to and read from the cache.
fn usage(json: &Value) -> Option<Usage> {
    let figure = |key: &str| json.get(key).and_then(Value::as_u64).unwrap_or(0);
    let uncached = json.get("input_tokens").and_then(Value::as_u64)?;
    let cache_write_tokens = figure("cache_creation_input_tokens");
    let cache_read_tokens = figure("cache_read_input_tokens");
    Some(Usage {
        input_tokens: uncached + cache_write_tokens + cache_read_tokens,
        output_tokens: figure("output_tokens"),
        cache_read_tokens,
        cache_write_tokens,
    })
}

/// One content block being assembled.
#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        /// The `input` of the start event, used when no JSON deltas follow.
        input: Value,
        json: String,
    },
    /// A block type the harness does not represent (server tools, citations…).
    Other,
}

/// Reassembles a streamed Messages reply from its events.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    blocks: BTreeMap<u64, Block>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamAssembler {
    /// Takes one event (its `event:` name when the server sent one, and its data);
    /// `Ok(true)` once `message_stop` arrived.
    ///
    /// # Errors
    /// An `error` event (classified), data that is not JSON, or a block over its bounds.
    pub fn event(&mut self, name: Option<&str>, data: &str) -> Result<bool, ModelError> {
        let (json, kind) = named_event(name, data)?;
        let index = json.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind.as_str() {
            "message_start" => {
                let usage = json.get("message").and_then(|m| m.get("usage"));
                self.usage = usage.and_then(self::usage);
            }
            "content_block_start" => {
                if index >= (TOOL_CALLS_PER_REPLY_MAX * 2) as u64 {
                    return Err(malformed(
                        format!("content block index {index} is past the bound on blocks"),
                        data.as_bytes(),
                    ));
                }
                let block = json.get("content_block").unwrap_or(&Value::Null);
                self.start_block(index, block);
            }
            "content_block_delta" => {
                let delta = json.get("delta").unwrap_or(&Value::Null);
                self.delta(index, delta, data)?;
            }
            "message_delta" => {
                let output = json
                    .get("usage")
                    .and_then(|u| u.get("output_tokens"))
                    .and_then(Value::as_u64);
                if let Some(output_tokens) = output {
                    let usage = self.usage.get_or_insert_with(Usage::default);
                    usage.output_tokens = output_tokens;
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(true);
            }
            "error" => {
                return Err(error_in_body(PROVIDER, &json, data).unwrap_or_else(|| {
                    malformed("an error event without an error", data.as_bytes())
                }));
            }
            // `ping`, `content_block_stop` and event types added later carry nothing we keep.
            _ => {}
        }
        Ok(false)
    }

    fn start_block(&mut self, index: u64, block: &Value) {
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let assembled = match block.get("type").and_then(Value::as_str) {
            Some("text") => Block::Text(text("text")),
            Some("thinking") => Block::Thinking {
                text: text("thinking"),
                signature: text("signature"),
            },
            Some("redacted_thinking") => Block::Redacted(text("data")),
            Some("tool_use") => Block::ToolUse {
                id: text("id"),
                name: text("name"),
                input: block.get("input").cloned().unwrap_or(Value::Null),
                json: String::new(),
            },
            _ => Block::Other,
        };
        self.blocks.insert(index, assembled);
    }

    fn delta(&mut self, index: u64, delta: &Value, data: &str) -> Result<(), ModelError> {
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(malformed(
                format!("a delta for content block {index}, which never started"),
                data.as_bytes(),
            ));
        };
        let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        match (delta.get("type").and_then(Value::as_str), block) {
            (Some("text_delta"), Block::Text(text)) => text.push_str(piece("text")),
            (Some("thinking_delta"), Block::Thinking { text, .. }) => {
                text.push_str(piece("thinking"));
            }
            (Some("signature_delta"), Block::Thinking { signature, .. }) => {
                signature.push_str(piece("signature"));
            }
            (Some("input_json_delta"), Block::ToolUse { name, json, .. }) => {
                json.push_str(piece("partial_json"));
                if json.len() > TOOL_CALL_ARGUMENTS_BYTES_MAX {
                    return Err(malformed(
                        format!(
                            "streamed input of tool call `{name}` exceeds limits::TOOL_CALL_ARGUMENTS_BYTES_MAX ({TOOL_CALL_ARGUMENTS_BYTES_MAX} bytes)"
                        ),
                        json.as_bytes(),
                    ));
                }
            }
            // Citations and delta types added later.
            _ => {}
        }
        Ok(())
    }

    /// The reply, once the stream has ended.
    ///
    /// # Errors
    /// [`ModelError::Transient`] when `message_stop` never came (the stream was cut);
    /// [`ModelError::MalformedReply`] for a tool call without a name or with bad input.
    pub fn finish(self) -> Result<ModelReply, ModelError> {
        if !self.done {
            return Err(ModelError::Transient {
                status: None,
                body: format!(
                    "the stream ended before `message_stop` after {} content block(s)",
                    self.blocks.len()
                ),
            });
        }
        let mut thinking = Vec::new();
        let mut parts = Vec::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) if !text.is_empty() => parts.push(ContentPart::text(text)),
                Block::Thinking { text, signature }
                    if !text.is_empty() || !signature.is_empty() =>
                {
                    thinking.push(ContentPart::Thinking {
                        text,
                        signature: (!signature.is_empty()).then_some(signature),
                    });
                }
                Block::Redacted(data) => thinking.push(ContentPart::RedactedThinking { data }),
                Block::ToolUse {
                    id,
                    name,
                    input,
                    json,
                } => {
                    if name.is_empty() {
                        return Err(malformed(
                            format!("tool_use block {id} has no name"),
                            raw_snippet(json.as_bytes()).as_bytes(),
                        ));
                    }
                    let arguments = if json.is_empty() {
                        parse_arguments(&name, &id, &input)?
                    } else {
                        parse_arguments(&name, &id, &Value::String(json))?
                    };
                    parts.push(ContentPart::tool_call(id, name, arguments));
                }
                _ => {}
            }
        }
        thinking.extend(parts);
        Ok(ModelReply {
            message: Message::new(String::new(), Role::Assistant, thinking),
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(thinking_budget: Option<u64>) -> WireOptions {
        WireOptions {
            model: "m".into(),
            stream: false,
            max_tokens_field: crate::MaxTokensField::MaxTokens,
            max_output_tokens: Some(2_048),
            thinking_budget,
        }
    }

    #[test]
    fn signed_and_redacted_thinking_is_read_and_handed_back_first_when_on() {
        let body = json!({"content": [
            {"type": "thinking", "thinking": "Logs first.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "toolu_1", "name": "read_log", "input": {"path": "a"}},
        ], "usage": {"input_tokens": 10, "cache_read_input_tokens": 1_000, "cache_creation_input_tokens": 24, "output_tokens": 5}});
        let reply = parse_reply(body.to_string().as_bytes()).expect("a reply");
        assert_eq!(
            reply.message.parts[0],
            ContentPart::Thinking {
                text: "Logs first.".into(),
                signature: Some("sig-1".into())
            }
        );
        let usage = reply.usage.expect("usage");
        assert_eq!(usage.input_tokens, 1_034, "the whole prompt, cached or not");
        assert_eq!(
            (usage.cache_read_tokens, usage.cache_write_tokens),
            (1_000, 24)
        );
        let request = ModelRequest {
            call_id: "c".into(),
            purpose: ctxbed_harness::model::Purpose::Reasoning,
            messages: SharedVec::from(vec![Message::user("u", "Why?"), reply.message.clone()]),
            tools: Vec::new().into(),
            max_output_tokens: None,
        };
        let on = request_body(&request, &options(Some(1_024)));
        assert_eq!(
            on["thinking"],
            json!({"type": "enabled", "budget_tokens": 1_024})
        );
        // A bound at or under the budget (the context's reserve in a small window) would be
        // refused: the budget goes on top of it.
        let small = ModelRequest {
            max_output_tokens: Some(1_000),
            ..request.clone()
        };
        assert_eq!(
            request_body(&small, &options(Some(1_024)))["max_tokens"],
            2_024
        );
        assert_eq!(request_body(&small, &options(None))["max_tokens"], 1_000);
        let blocks = &on["messages"][1]["content"];
        assert_eq!(blocks[0]["type"], "thinking");
        assert_eq!(blocks[0]["signature"], "sig-1");
        assert_eq!(
            blocks[1],
            json!({"type": "redacted_thinking", "data": "opaque"})
        );
        assert_eq!(blocks[2]["type"], "tool_use");
        // Off: no thinking goes out, and none is asked for.
        let off = request_body(&request, &options(None));
        assert!(off.get("thinking").is_none());
        assert_eq!(off["messages"][1]["content"][0]["type"], "tool_use");
    }

    #[test]
    fn a_streamed_signature_is_assembled() {
        let mut stream = StreamAssembler::default();
        for data in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":3,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Logs "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"first."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-2"}}"#,
        ] {
            assert!(!stream.event(None, data).expect("an event"));
        }
        assert!(stream.event(Some("message_stop"), "{}").expect("the end"));
        let reply = stream.finish().expect("a reply");
        assert!(matches!(
            &reply.message.parts[0],
            ContentPart::Thinking { text, signature: Some(s) } if text == "Logs first." && s == "sig-2"
        ));
    }
}
