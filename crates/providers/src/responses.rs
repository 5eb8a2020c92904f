//! OpenAI's Responses wire format (`POST {base_url}/responses`).
//!
//! [`request_body`] serialises a [`ModelRequest`] as input items: system and user messages by
//! role, an assistant message's text as an assistant message item and each of its calls as a
//! `function_call` item (arguments as a JSON string), each tool result as a
//! `function_call_output`; tools as flat `function` tools; the output bound as
//! `max_output_tokens`. It sends `store: false`, so the provider keeps nothing between
//! requests and every request carries the whole conversation the harness prepared: the request
//! the harness counted is the request the provider counts. Thinking is not sent back: the
//! harness keeps no encrypted reasoning, and items go without their output ids, which the
//! API then does not tie to the reasoning that produced them.
//!
//! [`parse_reply`] reads a `response` object: `output_text` parts as text, a `reasoning`
//! item's summary as thinking, `function_call` items as tool calls (by `call_id`); usage from
//! `input_tokens` and `output_tokens`. [`StreamAssembler`] takes the `response.*` events and
//! answers from `response.completed` (or `response.incomplete`) alone, which carries the whole
//! response; an `error` event or `response.failed` is the classified error, and a stream that
//! ends before either is a transient fault.
//!
//! ```
//! use ctxbed_harness::message::Message;
//! use ctxbed_harness::model::{ModelRequest, Purpose};
//! use ctxbed_providers::responses::{StreamAssembler, request_body};
//! use ctxbed_providers::{MaxTokensField, WireOptions};
//! let request = ModelRequest {
//!     call_id: "c1".into(), purpose: Purpose::Reasoning,
//!     messages: vec![Message::system("s", "Be brief."), Message::user("u", "Hi")].into(),
//!     tools: Default::default(), max_output_tokens: Some(64),
//! };
//! let options = WireOptions { model: "m".into(), stream: false, max_tokens_field: MaxTokensField::MaxTokens, max_output_tokens: None, thinking_budget: None };
//! let body = request_body(&request, &options);
//! assert_eq!(body.to_string(), r#"{"model":"m","input":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}],"store":false,"max_output_tokens":64}"#);
//!
//! let mut stream = StreamAssembler::default();
//! stream.event(Some("response.output_text.delta"), r#"{"type":"response.output_text.delta","delta":"Hel"}"#).unwrap();
//! let done = r#"{"type":"response.completed","response":{"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hello"}]}]}}"#;
//! assert!(stream.event(Some("response.completed"), done).unwrap());
//! assert_eq!(stream.finish().unwrap().message.text(), "Hello");
//! ```

use serde_json::{Map, Value, json};

use crate::WireOptions;
use crate::body;
use crate::openai::{outputs_text, parts_text, with_images};
use crate::reply::{error_in_body, malformed, named_event, parse_arguments};
use ctxbed_harness::limits::TOOL_CALLS_PER_REPLY_MAX;
use ctxbed_harness::message::{ContentPart, Message, Role};
use ctxbed_harness::model::{ModelError, ModelReply, ModelRequest, Usage};

/// The name given to the error classifier: the Responses API is OpenAI's, with its codes.
pub const PROVIDER: &str = "openai";

/// The request body for one [`ModelRequest`].
pub fn request_body(request: &ModelRequest, options: &WireOptions) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), options.model.clone().into());
    let input: Vec<Value> = request.messages.iter().flat_map(input_items).collect();
    body.insert("input".into(), input.into());
    let tools = body::tools(request, |tool| {
        json!({
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        })
    });
    if let Some(tools) = tools {
        body.insert("tools".into(), tools);
    }
    body.insert("store".into(), false.into());
    if let Some(max) = request.max_output_tokens.or(options.max_output_tokens) {
        body.insert("max_output_tokens".into(), max.into());
    }
    if options.stream {
        body.insert("stream".into(), true.into());
    }
    Value::Object(body)
}

/// One message as input items: a `function_call_output` per tool result; an assistant
/// message's text, then a `function_call` per call; anything else a message of its role.
fn input_items(message: &Message) -> Vec<Value> {
    match message.role {
        Role::Tool => message
            .tool_results()
            .map(|result| {
                json!({
                    "type": "function_call_output",
                    "call_id": result.call_id,
                    "output": outputs_text(&result.outputs),
                })
            })
            .collect(),
        Role::Assistant => {
            let text = parts_text(&message.parts);
            let mut items = Vec::new();
            if !text.is_empty() {
                items.push(json!({"role": "assistant", "content": text}));
            }
            items.extend(message.tool_calls().map(|call| {
                json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": crate::reply::arguments_text(&call.arguments),
                })
            }));
            items
        }
        Role::System | Role::User => {
            let content = with_images(
                message,
                |text| json!({"type": "input_text", "text": text}),
                |image| json!({"type": "input_image", "image_url": image.data_url(), "detail": "auto"}),
            );
            vec![json!({"role": message.role.as_str(), "content": content})]
        }
    }
}

/// Parses a non-streamed reply.
///
/// # Errors
/// An error the body carries instead of a reply, or a body that is not a usable response
/// ([`ModelError::MalformedReply`] with a bounded raw snippet).
pub fn parse_reply(body: &[u8]) -> Result<ModelReply, ModelError> {
    let json: Value = serde_json::from_slice(body)
        .map_err(|error| malformed(format!("the reply is not JSON: {error}"), body))?;
    if let Some(error) = error_in_body(PROVIDER, &json, &String::from_utf8_lossy(body)) {
        return Err(error);
    }
    parse_response(&json, body)
}

/// A `response` object as a reply; `raw` is quoted in errors.
fn parse_response(json: &Value, raw: &[u8]) -> Result<ModelReply, ModelError> {
    let Some(output) = json.get("output").and_then(Value::as_array) else {
        return Err(malformed("the response has no output array", raw));
    };
    if output.len() > TOOL_CALLS_PER_REPLY_MAX * 2 {
        return Err(malformed("the response has too many output items", raw));
    }
    let mut parts = Vec::new();
    let mut texts = Vec::new();
    for item in output {
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
        match text("type") {
            "reasoning" => {
                let summary = summary_text(item.get("summary"));
                if !summary.is_empty() {
                    parts.push(ContentPart::thinking(summary));
                }
            }
            "message" => texts.extend(output_texts(item.get("content"))),
            "function_call" => {
                let (name, id) = (text("name"), text("call_id"));
                if name.is_empty() {
                    return Err(malformed(format!("function call {id} has no name"), raw));
                }
                let arguments =
                    parse_arguments(name, id, item.get("arguments").unwrap_or(&Value::Null))?;
                parts.push(ContentPart::tool_call(id, name, arguments));
            }
            // Built-in tool calls and item types added later carry nothing the harness keeps.
            _ => {}
        }
    }
    let text = texts.concat();
    if !text.is_empty() {
        let at = parts
            .iter()
            .position(|part| matches!(part, ContentPart::ToolCall(_)))
            .unwrap_or(parts.len());
        parts.insert(at, ContentPart::text(text));
    }
    let usage = json.get("usage").and_then(|usage| {
        Some(Usage {
            input_tokens: usage.get("input_tokens")?.as_u64()?,
            output_tokens: usage
                .get("output_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            cache_read_tokens: usage
                .get("input_tokens_details")
                .and_then(|details| details.get("cached_tokens"))
                .and_then(Value::as_u64)
                .unwrap_or(0),
            ..Usage::default()
        })
    });
    Ok(ModelReply {
        message: Message::new("reply", Role::Assistant, parts),
        usage,
    })
}

/// The texts of a message item's `output_text` parts (refusals too, as text).
fn output_texts(content: Option<&Value>) -> Vec<String> {
    content
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| {
            part.get("text")
                .or_else(|| part.get("refusal"))
                .and_then(Value::as_str)
        })
        .map(str::to_string)
        .collect()
}

/// A reasoning item's summary texts, joined by newlines.
fn summary_text(summary: Option<&Value>) -> String {
    let texts: Vec<&str> = summary
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    texts.join("\n")
}

/// Reassembles a streamed Responses reply from its events.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    /// The whole response of `response.completed` (or `response.incomplete`).
    completed: Option<Value>,
}

impl StreamAssembler {
    /// Takes one event (its `event:` name when the server sent one, and its data); `Ok(true)`
    /// once the response is complete.
    ///
    /// # Errors
    /// An `error` event or `response.failed` (classified), or data that is not JSON.
    pub fn event(&mut self, name: Option<&str>, data: &str) -> Result<bool, ModelError> {
        let (json, kind) = named_event(name, data)?;
        match kind.as_str() {
            "response.completed" | "response.incomplete" => {
                self.completed = Some(json.get("response").cloned().unwrap_or(Value::Null));
                Ok(true)
            }
            "error" => Err(error_in_body(PROVIDER, &json, data)
                .unwrap_or_else(|| malformed("an error event without an error", data.as_bytes()))),
            "response.failed" => {
                let error = json
                    .get("response")
                    .and_then(|response| response.get("error"))
                    .cloned()
                    .unwrap_or(Value::Null);
                let body = json!({"error": error}).to_string();
                Err(
                    error_in_body(PROVIDER, &json!({"error": error}), &body).unwrap_or_else(|| {
                        malformed("a failed response without an error", data.as_bytes())
                    }),
                )
            }
            // Deltas and item events: `response.completed` repeats them whole.
            _ => Ok(false),
        }
    }

    /// The reply, once the stream has ended.
    ///
    /// # Errors
    /// [`ModelError::Transient`] when the stream ended before its response was complete (it was
    /// cut); [`ModelError::MalformedReply`] for a response that cannot be used.
    pub fn finish(self) -> Result<ModelReply, ModelError> {
        match self.completed {
            Some(response) => parse_response(&response, response.to_string().as_bytes()),
            None => Err(ModelError::Transient {
                status: None,
                body: "the stream ended before response.completed".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxbed_harness::message::{ToolOutput, ToolResult};

    fn request() -> ModelRequest {
        let mut assistant = Message::new(
            "a",
            Role::Assistant,
            vec![
                ContentPart::thinking("Logs first."),
                ContentPart::text("Reading."),
                ContentPart::tool_call("call_1", "read_log", json!({"path": "a"})),
            ],
        );
        assistant.name = None;
        let result = ToolResult {
            call_id: "call_1".into(),
            tool_name: "read_log".into(),
            outputs: vec![ToolOutput::Text { text: "oom".into() }],
            is_error: false,
            metadata: Default::default(),
        };
        ModelRequest {
            call_id: "c".into(),
            purpose: ctxbed_harness::model::Purpose::Reasoning,
            messages: vec![
                Message::system("s", "Be brief."),
                Message::user("u", "Why?"),
                assistant,
                Message::new("t", Role::Tool, vec![ContentPart::ToolResult(result)]),
            ]
            .into(),
            tools: vec![ctxbed_harness::tools::ToolSchema {
                name: "read_log".into(),
                description: "Read.".into(),
                parameters: json!({"type": "object"}),
            }]
            .into(),
            max_output_tokens: None,
        }
    }

    #[test]
    fn a_conversation_goes_out_as_input_items_without_thinking() {
        let options = WireOptions {
            model: "m".into(),
            stream: true,
            max_tokens_field: crate::MaxTokensField::MaxTokens,
            max_output_tokens: Some(100),
            thinking_budget: None,
        };
        let body = request_body(&request(), &options);
        let kinds: Vec<String> = body["input"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|item| {
                item.get("type")
                    .or_else(|| item.get("role"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "system",
                "user",
                "assistant",
                "function_call",
                "function_call_output"
            ]
        );
        assert_eq!(body["input"][3]["arguments"], r#"{"path":"a"}"#);
        assert!(body["input"][3].get("id").is_none(), "no output id: {body}");
        assert_eq!(body["tools"][0]["name"], "read_log");
        assert_eq!(body["max_output_tokens"], 100);
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        assert!(!body.to_string().contains("Logs first."));
    }

    #[test]
    fn a_response_reads_back_thinking_text_and_calls() {
        let body = json!({"id": "resp_1", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Logs first."}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_log", "arguments": "{\"path\":\"a\"}"},
        ], "usage": {"input_tokens": 12, "output_tokens": 5}});
        let reply = parse_reply(body.to_string().as_bytes()).expect("a reply");
        assert!(
            matches!(&reply.message.parts[0], ContentPart::Thinking { text, .. } if text == "Logs first.")
        );
        assert_eq!(reply.message.text(), "Reading.");
        let call = reply.message.tool_calls().next().expect("a call");
        assert_eq!(
            (call.id.as_str(), call.name.as_str()),
            ("call_1", "read_log")
        );
        assert_eq!(call.arguments, json!({"path": "a"}));
        assert_eq!(reply.usage.map(|u| u.input_tokens), Some(12));
        // Arguments cut off mid-call are kept as the model sent them, for the tool to refuse.
        let cut = json!({"output": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{\"a\": 1"}]});
        let reply = parse_reply(cut.to_string().as_bytes()).expect("a reply");
        let call = reply.message.tool_calls().next().expect("a call");
        assert_eq!(call.arguments, json!("{\"a\": 1"));
    }

    #[test]
    fn stream_errors_are_classified_and_a_cut_stream_is_transient() {
        let mut stream = StreamAssembler::default();
        let overflow = r#"{"type":"error","sequence_number":2,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}"#;
        assert_eq!(
            stream.event(Some("error"), overflow).map_err(|e| e.kind()),
            Err("context_overflow")
        );
        let failed = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The server had an error while processing your request."}}}"#;
        assert!(StreamAssembler::default().event(None, failed).is_err());
        let mut cut = StreamAssembler::default();
        assert_eq!(
            cut.event(
                None,
                r#"{"type":"response.output_text.delta","delta":"Hel"}"#
            )
            .ok(),
            Some(false)
        );
        assert!(matches!(cut.finish(), Err(ModelError::Transient { .. })));
    }
}
