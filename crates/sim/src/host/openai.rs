//! OpenAI Chat Completions on the wire: a request body read back into a [`ModelRequest`], a
//! reply written as a whole `chat.completion` or as `chat.completion.chunk` server-sent events
//! (text and tool-call arguments in pieces, a final usage chunk, `[DONE]`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::plan::Plan;
use super::{Api, read, thinking};
use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput, ToolResult};
use ctxbed_harness::model::{ModelReply, ModelRequest, Purpose, Usage};
use ctxbed_harness::tools::ToolSchema;
use ctxbed_providers::reply::arguments_text;

/// Reads a Chat Completions request body back into a [`ModelRequest`], as a provider sees it.
pub fn parse_request(json: &Value) -> ModelRequest {
    let mut messages = Vec::new();
    let mut names = std::collections::BTreeMap::new();
    let wire = json.get("messages").and_then(Value::as_array);
    for (index, message) in wire.into_iter().flatten().enumerate() {
        let id = format!("wire-{index}");
        let text = content_text(message.get("content"));
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parsed = match role {
            "system" | "developer" => Message::system(id, text),
            "assistant" => assistant_message(id, text, message, &mut names),
            "tool" => tool_message(id, text, message, &names),
            _ => super::images::user_message(id, text, Api::OpenAi, message.get("content")),
        };
        messages.push(parsed);
    }
    let max_output_tokens = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|key| json.get(*key).and_then(Value::as_u64));
    // The wire does not say why a request was made, so every request reaches the mock as a
    // reasoning request: a mock behind the network scripts its summaries like any other turn.
    ModelRequest {
        call_id: String::new(),
        purpose: Purpose::Reasoning,
        messages: messages.into(),
        tools: tool_schemas(json),
        max_output_tokens,
    }
}

/// An assistant message: its reasoning handed back (`reasoning_content`, DeepSeek's field, as
/// thinking), its text (if any), then its `tool_calls`, each call's name kept in `names` for the
/// tool message that answers it.
fn assistant_message(
    id: String,
    text: String,
    message: &Value,
    names: &mut std::collections::BTreeMap<String, String>,
) -> Message {
    let mut parts = Vec::new();
    let reasoning = message.get("reasoning_content").and_then(Value::as_str);
    if let Some(reasoning) = reasoning.filter(|text| !text.is_empty()) {
        parts.push(ContentPart::thinking(reasoning));
    }
    if !text.is_empty() {
        parts.push(ContentPart::text(text));
    }
    let calls = message.get("tool_calls").and_then(Value::as_array);
    for call in calls.into_iter().flatten() {
        let call_id = call.get("id").and_then(Value::as_str).unwrap_or_default();
        let function = call.get("function").unwrap_or(&Value::Null);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // Arguments that are not JSON stay as their text, as the provider keeps them.
        let arguments = function
            .get("arguments")
            .and_then(Value::as_str)
            .map_or(Value::Null, |text| {
                serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
            });
        names.insert(call_id.to_string(), name.to_string());
        parts.push(ContentPart::tool_call(call_id, name, arguments));
    }
    Message::new(id, Role::Assistant, parts)
}

/// A `tool` message as a tool result, named after the call it answers.
fn tool_message(
    id: String,
    text: String,
    message: &Value,
    names: &std::collections::BTreeMap<String, String>,
) -> Message {
    let call_id = message
        .get("tool_call_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let result = ToolResult {
        call_id: call_id.to_string(),
        tool_name: names.get(call_id).cloned().unwrap_or_default(),
        outputs: vec![ToolOutput::Text { text }],
        is_error: false,
        metadata: Default::default(),
    };
    Message::new(id, Role::Tool, vec![ContentPart::ToolResult(result)])
}

/// The request's `tools`, each read from its `function` object.
fn tool_schemas(json: &Value) -> Arc<[ToolSchema]> {
    read::tools(json, |tool| {
        tool.get("function")
            .map(|function| read::schema(function, "parameters"))
    })
}

/// The text of a message's `content`: a string, or the text parts of an array of parts joined
/// by newlines (other parts, such as images, carry no text).
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A whole Chat Completions reply.
/// `model` and `number` (the host's request number) fill its `model` and `id`.
pub fn completion(reply: &ModelReply, model: &str, number: u64, usage: bool) -> Value {
    let text = reply.message.text();
    let calls: Vec<Value> = reply
        .message
        .tool_calls()
        .map(|call| json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments_text(&call.arguments)}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { text.into() }});
    if !calls.is_empty() {
        message["tool_calls"] = calls.into();
    }
    if let Some(thinking) = thinking(reply) {
        message["reasoning_content"] = thinking.into();
    }
    let mut completion = json!({
        "id": format!("chatcmpl-{number:04}"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": if reply.message.has_tool_calls() { "tool_calls" } else { "stop" }}],
    });
    if usage {
        let usage = reply.usage.unwrap_or_default();
        completion["usage"] = usage_json(&usage);
    }
    completion
}

/// The usage object, with the prompt tokens read from the cache (`prompt_tokens_details`).
fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
    })
}

/// The `chat.completion.chunk` events of one reply, framed as `data: …`.
#[derive(Clone)]
struct Chunks {
    id: Arc<str>,
    model: Arc<str>,
}

impl Chunks {
    fn chunk(&self, choices: Value) -> Value {
        json!({"id": &*self.id, "object": "chat.completion.chunk", "created": 0, "model": &*self.model, "choices": choices})
    }

    fn framed(event: &Value) -> String {
        format!("data: {event}\n\n")
    }

    fn delta(&self, delta: Value) -> String {
        Chunks::framed(&self.chunk(json!([{"index": 0, "delta": delta}])))
    }

    /// `text` as deltas of `chars` characters, each `wrap(piece)`.
    fn deltas(
        &self,
        plan: &mut Plan,
        text: String,
        chars: usize,
        wrap: impl Fn(&str) -> Value + Send + Sync + 'static,
    ) {
        let chunks = self.clone();
        plan.deltas(text, chars, move |piece, _| chunks.delta(wrap(piece)));
    }
}

/// Each streamed event, framed, as a [`Plan`] rendered as it is sent: text in pieces, each tool
/// call's arguments in pieces, usage (when reported), `[DONE]`.
pub fn stream_events(reply: &ModelReply, model: &str, number: u64, usage: bool) -> Plan {
    let chunks = Chunks {
        id: format!("chatcmpl-{number:04}").into(),
        model: model.into(),
    };
    let mut plan = Plan::default();
    plan.event(chunks.delta(json!({"role": "assistant", "content": ""})));
    let thought = thinking(reply).unwrap_or_default();
    chunks.deltas(
        &mut plan,
        thought,
        16,
        |piece| json!({"reasoning_content": piece}),
    );
    chunks.deltas(
        &mut plan,
        reply.message.text(),
        16,
        |piece| json!({"content": piece}),
    );
    for (index, call) in reply.message.tool_calls().enumerate() {
        plan.event(chunks.delta(json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]})));
        chunks.deltas(&mut plan, arguments_text(&call.arguments), 8, move |piece| {
            json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        });
    }
    let finish = if reply.message.has_tool_calls() {
        "tool_calls"
    } else {
        "stop"
    };
    plan.event(Chunks::framed(&chunks.chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
    )));
    if usage {
        let usage = reply.usage.unwrap_or_default();
        let mut last = chunks.chunk(json!([]));
        last["usage"] = usage_json(&usage);
        plan.event(Chunks::framed(&last));
    }
    plan.event("data: [DONE]\n\n".to_string());
    plan
}
