//! The OpenAI-compatible Chat Completions wire format (`POST {base_url}/chat/completions`).
//!
//! [`request_body`] serialises a [`ModelRequest`] exactly: system, user and assistant
//! messages in order, assistant tool calls with their arguments as a JSON string, one `tool`
//! message per tool result with its `tool_call_id`, tool schemas as `tools` of type
//! `function`, and the output bound as `max_tokens` or `max_completion_tokens`. An assistant
//! message's thinking goes back in `reasoning_content`, the field it came in (OpenAI never sends
//! one; DeepSeek's thinking mode requires it back on a tool-call turn); media placeholders are sent as a short
//! text marker, since the harness holds their size, not their bytes. A tool result's error
//! flag has no field in this format; the result's text carries the explanation.
//!
//! [`parse_reply`] and [`StreamAssembler`] read replies leniently: unknown `finish_reason`
//! values, empty strings, `null`s and extra fields are tolerated; `content` may be a string or
//! an array of text parts; `reasoning_content` (or `reasoning`) becomes a thinking part.
//! Streamed tool calls are reassembled by their `index` from any number of deltas. A stream
//! must end with `data: [DONE]`; one that stops before it is a transient fault.
//!
//! ```
//! use ctxbed_harness::message::Message;
//! use ctxbed_harness::model::{ModelRequest, Purpose};
//! use ctxbed_providers::openai::{StreamAssembler, request_body};
//! use ctxbed_providers::{MaxTokensField, WireOptions};
//! let request = ModelRequest {
//!     call_id: "c1".into(), purpose: Purpose::Reasoning,
//!     messages: vec![Message::system("s", "Be brief."), Message::user("u", "Hi")].into(),
//!     tools: Default::default(), max_output_tokens: Some(64),
//! };
//! let options = WireOptions { model: "m".into(), stream: false, max_tokens_field: MaxTokensField::MaxTokens, max_output_tokens: None, thinking_budget: None };
//! let body = request_body(&request, &options);
//! assert_eq!(body.to_string(), r#"{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"max_tokens":64}"#);
//!
//! let mut stream = StreamAssembler::default();
//! stream.event(r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#).unwrap();
//! stream.event(r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"eos"}]}"#).unwrap();
//! assert!(stream.event("[DONE]").unwrap());
//! assert_eq!(stream.finish().unwrap().message.text(), "Hello");
//! ```

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::WireOptions;
use crate::body;
use crate::limits::TOOL_CALL_ARGUMENTS_BYTES_MAX;
use crate::reply::{
    arguments_text, content_text, error_in_body, malformed, parse_arguments, raw_snippet,
};
use ctxbed_harness::limits::TOOL_CALLS_PER_REPLY_MAX;
use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput};
use ctxbed_harness::model::{ModelError, ModelReply, ModelRequest, Usage};

/// The name given to the error classifier.
pub const PROVIDER: &str = "openai";

/// The request body for one [`ModelRequest`].
pub fn request_body(request: &ModelRequest, options: &WireOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), options.model.clone().into());
    let messages: Vec<Value> = request.messages.iter().flat_map(wire_messages).collect();
    body.insert("messages".into(), messages.into());
    let tools = body::tools(request, |tool| {
        json!({
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }
        })
    });
    if let Some(tools) = tools {
        body.insert("tools".into(), tools);
    }
    if let Some(max) = request.max_output_tokens.or(options.max_output_tokens) {
        body.insert(options.max_tokens_field.as_str().into(), max.into());
    }
    if options.stream {
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// One message as one or more wire messages (a tool message per tool result).
fn wire_messages(message: &Message) -> Vec<Value> {
    match message.role {
        Role::Tool => message
            .tool_results()
            .map(|result| {
                json!({
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "content": outputs_text(&result.outputs),
                })
            })
            .collect(),
        Role::Assistant => vec![assistant_message(message)],
        Role::System | Role::User => {
            let mut wire = Map::new();
            wire.insert("role".into(), message.role.as_str().into());
            let content = with_images(
                message,
                |text| json!({"type": "text", "text": text}),
                |image| json!({"type": "image_url", "image_url": {"url": image.data_url()}}),
            );
            wire.insert("content".into(), content);
            if let Some(name) = &message.name {
                wire.insert("name".into(), name.clone().into());
            }
            vec![Value::Object(wire)]
        }
    }
}

fn assistant_message(message: &Message) -> Value {
    let mut wire = Map::new();
    wire.insert("role".into(), "assistant".into());
    let text = parts_text(&message.parts);
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|call| {
            json!({
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments_text(&call.arguments)},
            })
        })
        .collect();
    let content = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        text.into()
    };
    wire.insert("content".into(), content);
    if let Some(name) = &message.name {
        wire.insert("name".into(), name.clone().into());
    }
    if !calls.is_empty() {
        wire.insert("tool_calls".into(), calls.into());
    }
    let thinking = thinking_text(&message.parts);
    if !thinking.is_empty() {
        wire.insert("reasoning_content".into(), thinking.into());
    }
    Value::Object(wire)
}

/// The message's thinking, handed back as it came: in this format only a reply's
/// `reasoning_content` (or `reasoning`) becomes thinking, so only a provider that sends it (in
/// DeepSeek's thinking mode, which refuses a tool-call turn without it) gets it back.
fn thinking_text(parts: &[ContentPart]) -> String {
    parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Thinking { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A user or system message's `content`: its text (as [`parts_text`]) when it has no image,
/// else a list of parts in order, each run of text one `text` part and each image `image`.
pub(super) fn with_images(
    message: &Message,
    text: impl Fn(String) -> Value,
    image: impl Fn(&ctxbed_harness::image::Image) -> Value,
) -> Value {
    let has_image = |part: &ContentPart| matches!(part, ContentPart::Image(_));
    if !message.parts.iter().any(has_image) {
        return parts_text(&message.parts).into();
    }
    let mut content = Vec::new();
    for run in message.parts.split_inclusive(has_image) {
        let (texts, last) = match run.split_last() {
            Some((ContentPart::Image(picture), texts)) => (texts, Some(picture)),
            _ => (run, None),
        };
        let joined = parts_text(texts);
        if !joined.is_empty() {
            content.push(text(joined));
        }
        content.extend(last.map(&image));
    }
    Value::Array(content)
}

/// Text and media-marker parts joined with newlines; thinking, calls and results excluded.
pub(super) fn parts_text(parts: &[ContentPart]) -> String {
    let texts: Vec<String> = parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(text.clone()),
            ContentPart::Media { kind, size_bytes } => {
                Some(media_marker(kind.as_str(), *size_bytes))
            }
            _ => None,
        })
        .collect();
    texts.join("\n")
}

/// A tool result's outputs as one text.
pub(super) fn outputs_text(outputs: &[ToolOutput]) -> String {
    let texts: Vec<String> = outputs
        .iter()
        .map(|output| match output {
            ToolOutput::Text { text } => text.clone(),
            ToolOutput::Media { kind, size_bytes } => media_marker(kind.as_str(), *size_bytes),
        })
        .collect();
    texts.join("\n")
}

fn media_marker(kind: &str, size_bytes: u64) -> String {
    format!("[{kind} attachment, {size_bytes} bytes]")
}

/// Parses a non-streamed reply.
///
/// # Errors
/// An error the body carries instead of a reply, or a body that is not a usable completion
/// ([`ModelError::MalformedReply`] with a bounded raw snippet).
pub fn parse_reply(body: &[u8]) -> Result<ModelReply, ModelError> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|error| malformed(format!("the reply is not JSON: {error}"), body))?;
    if let Some(error) = error_in_body(PROVIDER, &json, &String::from_utf8_lossy(body)) {
        return Err(error);
    }
    let Some(message) = json
        .get("choices")
        .and_then(|choices| choices.get(0))
        .and_then(|choice| choice.get("message"))
    else {
        return Err(malformed("the reply has no choices[0].message", body));
    };
    let mut parts = Vec::new();
    if let Some(thinking) = reasoning(message).filter(|t| !t.is_empty()) {
        parts.push(ContentPart::thinking(thinking));
    }
    if let Some(text) = message
        .get("content")
        .and_then(content_text)
        .filter(|t| !t.is_empty())
    {
        parts.push(ContentPart::text(text));
    }
    let calls = message.get("tool_calls").and_then(Value::as_array);
    if calls.is_some_and(|calls| calls.len() > TOOL_CALLS_PER_REPLY_MAX) {
        return Err(malformed(
            format!(
                "the reply has more than {TOOL_CALLS_PER_REPLY_MAX} tool calls (limits::TOOL_CALLS_PER_REPLY_MAX)"
            ),
            body,
        ));
    }
    for call in calls.into_iter().flatten() {
        let function = call.get("function").unwrap_or(&Value::Null);
        let id = string_at(call, "id");
        let Some(name) = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            return Err(malformed(
                "a tool call has no function name",
                call.to_string().as_bytes(),
            ));
        };
        let arguments = function.get("arguments").unwrap_or(&Value::Null);
        let arguments = parse_arguments(name, &id, arguments)?;
        parts.push(ContentPart::tool_call(id, name, arguments));
    }
    Ok(ModelReply {
        message: Message::new(String::new(), Role::Assistant, parts),
        usage: json.get("usage").and_then(usage),
    })
}

fn reasoning(message: &Value) -> Option<String> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|key| message.get(*key).and_then(Value::as_str))
        .map(str::to_string)
}

fn string_at(json: &Value, key: &str) -> String {
    json.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn usage(json: &Value) -> Option<Usage> {
    let input_tokens = json.get("prompt_tokens").and_then(Value::as_u64)?;
    let output_tokens = json
        .get("completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cache_read_tokens = json
        .get("prompt_tokens_details")
        .and_then(|details| details.get("cached_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Some(Usage {
        input_tokens,
        output_tokens,
        cache_read_tokens,
        ..Usage::default()
    })
}

/// A tool call being reassembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Reassembles a streamed completion from the `data` of its server-sent events.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    text: String,
    thinking: String,
    calls: BTreeMap<u64, PartialCall>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamAssembler {
    /// Takes one event's data; `Ok(true)` once the terminator `[DONE]` arrived.
    ///
    /// # Errors
    /// An error event, data that is not JSON, or a tool call over its bounds.
    pub fn event(&mut self, data: &str) -> Result<bool, ModelError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let json: Value = serde_json::from_str(data).map_err(|error| {
            malformed(
                format!("a stream event is not JSON: {error}"),
                data.as_bytes(),
            )
        })?;
        if let Some(error) = error_in_body(PROVIDER, &json, data) {
            return Err(error);
        }
        if let Some(usage) = json.get("usage").and_then(usage) {
            self.usage = Some(usage);
        }
        let choices = json.get("choices").and_then(Value::as_array);
        for delta in choices.into_iter().flatten().filter_map(|c| c.get("delta")) {
            self.delta(delta, data)?;
        }
        Ok(false)
    }

    fn delta(&mut self, delta: &Value, data: &str) -> Result<(), ModelError> {
        if let Some(text) = delta.get("content").and_then(content_text) {
            self.text.push_str(&text);
        }
        if let Some(thinking) = reasoning(delta) {
            self.thinking.push_str(&thinking);
        }
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        for (position, call) in calls.into_iter().flatten().enumerate() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            if index >= TOOL_CALLS_PER_REPLY_MAX as u64 {
                return Err(malformed(
                    format!(
                        "a streamed tool call has index {index}, at or above limits::TOOL_CALLS_PER_REPLY_MAX ({TOOL_CALLS_PER_REPLY_MAX})"
                    ),
                    data.as_bytes(),
                ));
            }
            let partial = self.calls.entry(index).or_default();
            let id = string_at(call, "id");
            if !id.is_empty() {
                partial.id = id;
            }
            let function = call.get("function").unwrap_or(&Value::Null);
            let name = string_at(function, "name");
            if !name.is_empty() && partial.name.is_empty() {
                partial.name = name;
            }
            match function.get("arguments") {
                Some(Value::String(piece)) => partial.arguments.push_str(piece),
                Some(object @ Value::Object(_)) => partial.arguments = object.to_string(),
                _ => {}
            }
            if partial.arguments.len() > TOOL_CALL_ARGUMENTS_BYTES_MAX {
                return Err(malformed(
                    format!(
                        "streamed arguments of tool call `{}` exceed limits::TOOL_CALL_ARGUMENTS_BYTES_MAX ({TOOL_CALL_ARGUMENTS_BYTES_MAX} bytes)",
                        partial.name
                    ),
                    partial.arguments.as_bytes(),
                ));
            }
        }
        Ok(())
    }

    /// The reply, once the stream has ended.
    ///
    /// # Errors
    /// [`ModelError::Transient`] when `[DONE]` never came (the stream was cut);
    /// [`ModelError::MalformedReply`] for a tool call without a name or with bad arguments.
    pub fn finish(self) -> Result<ModelReply, ModelError> {
        if !self.done {
            return Err(ModelError::Transient {
                status: None,
                body: format!(
                    "the stream ended before `data: [DONE]`; received so far: {}",
                    raw_snippet(self.text.as_bytes())
                ),
            });
        }
        let mut parts = Vec::new();
        if !self.thinking.is_empty() {
            parts.push(ContentPart::thinking(self.thinking));
        }
        if !self.text.is_empty() {
            parts.push(ContentPart::text(self.text));
        }
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(malformed(
                    format!("streamed tool call {index} has no function name"),
                    call.arguments.as_bytes(),
                ));
            }
            let arguments = parse_arguments(&call.name, &call.id, &Value::String(call.arguments))?;
            parts.push(ContentPart::tool_call(call.id, call.name, arguments));
        }
        Ok(ModelReply {
            message: Message::new(String::new(), Role::Assistant, parts),
            usage: self.usage,
        })
    }
}
