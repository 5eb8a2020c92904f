//! OpenAI Responses on the wire (`POST /v1/responses`): a request body (`instructions`, `input`
//! as a string or a list of items — messages, `function_call`, `function_call_output`,
//! `reasoning` — and flat function `tools`) read back into a [`ModelRequest`], a reply written as
//! a whole `response` object or as the API's named `response.*` server-sent events, and the
//! API's own 400 wordings for an overflow and for unpaired calls and outputs.
//!
//! A stored response (`store` on, the API's default) is kept: its output items for references
//! (`super::stored`), its conversation for `previous_response_id` (`super::chains`), its
//! reasoning by id (`super::reasoning`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::openai::content_text;
use super::plan::Plan;
use super::{read, reasoning, thinking};
use ctxbed_harness::context::pairs::{PairingProblem, find_pairing_problem};
use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput, ToolResult};
use ctxbed_harness::model::{ModelReply, ModelRequest};

/// The route's end (`POST /v1/responses`).
pub const PATH: &str = "/responses";

/// Builds the messages of a request from its input items, in order.
#[derive(Default)]
struct Reader {
    messages: Vec<Message>,
    /// Each call's tool name by call id, for the outputs that answer it.
    names: BTreeMap<String, String>,
    /// The assistant message being built: reasoning, text and calls join into one message
    /// until anything else comes.
    open: Option<Vec<ContentPart>>,
    next_id: usize,
}

impl Reader {
    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("wire-{}", self.next_id - 1)
    }

    fn close(&mut self) {
        if let Some(parts) = self.open.take() {
            let id = self.id();
            self.messages.push(Message::new(id, Role::Assistant, parts));
        }
    }

    fn push(&mut self, role: Role, parts: Vec<ContentPart>) {
        self.close();
        let id = self.id();
        self.messages.push(Message::new(id, role, parts));
    }

    fn item(&mut self, item: &Value) {
        let text = |key: &str| item.get(key).and_then(Value::as_str).unwrap_or_default();
        match text("type") {
            "function_call" => {
                let arguments = serde_json::from_str(text("arguments")).unwrap_or(Value::Null);
                self.names
                    .insert(text("call_id").to_string(), text("name").to_string());
                self.open
                    .get_or_insert_with(Vec::new)
                    .push(ContentPart::tool_call(
                        text("call_id"),
                        text("name"),
                        arguments,
                    ));
            }
            "function_call_output" => {
                let call_id = text("call_id");
                let result = ToolResult {
                    call_id: call_id.to_string(),
                    tool_name: self.names.get(call_id).cloned().unwrap_or_default(),
                    outputs: vec![ToolOutput::Text {
                        text: content_text(item.get("output")),
                    }],
                    is_error: false,
                    metadata: Default::default(),
                };
                self.push(Role::Tool, vec![ContentPart::ToolResult(result)]);
            }
            "reasoning" => {
                self.close();
                let summary = content_text(item.get("summary"));
                self.open = Some(vec![ContentPart::thinking(summary)]);
            }
            "message" | "" => {
                let content = item.get("content");
                self.message(text("role"), content_text(content), content);
            }
            // Anything else the mock does not read.
            _ => {}
        }
    }

    /// Empties the reasoning of turns before the last user message: the API ignores reasoning
    /// items that are not relevant to the request (those of earlier turns) and does not count
    /// them, so neither does the window check. The current tool loop's reasoning counts.
    fn forget_earlier_reasoning(&mut self) {
        let last_user = self
            .messages
            .iter()
            .rposition(|message| message.role == Role::User)
            .unwrap_or(0);
        for message in &mut self.messages[..last_user] {
            let reasoned = message
                .parts
                .iter()
                .any(|part| matches!(part, ContentPart::Thinking { text, .. } if !text.is_empty()));
            if reasoned {
                for part in &mut message.parts {
                    if let ContentPart::Thinking { text, .. } = part {
                        text.clear();
                    }
                }
            }
        }
    }

    fn message(&mut self, role: &str, text: String, content: Option<&Value>) {
        match role {
            "assistant" => {
                // Text after reasoning belongs to the same output; after anything else it opens
                // a new assistant message.
                let joins = self.open.as_ref().is_some_and(|parts| {
                    parts
                        .iter()
                        .all(|part| matches!(part, ContentPart::Thinking { .. }))
                });
                if !joins {
                    self.close();
                }
                let parts = self.open.get_or_insert_with(Vec::new);
                if !text.is_empty() {
                    parts.push(ContentPart::text(text));
                }
            }
            "system" | "developer" => self.push(Role::System, vec![ContentPart::text(text)]),
            _ => {
                let images = super::images::readable(super::Api::Responses, content);
                self.push(Role::User, super::images::user_parts(text, images));
            }
        }
    }
}

/// Reads a Responses request body back into a [`ModelRequest`], as the provider sees it:
/// `instructions` first as a system message; a reasoning item, the assistant message and the
/// `function_call` items after it as one assistant message (the reasoning's summary as its
/// thinking, counted only after the last user message, as the API counts it); each
/// `function_call_output` as a tool message.
pub fn parse_request(json: &Value) -> ModelRequest {
    let mut reader = Reader::default();
    let instructions = json
        .get("instructions")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !instructions.is_empty() {
        reader.push(Role::System, vec![ContentPart::text(instructions)]);
    }
    match json.get("input") {
        Some(Value::String(text)) => reader.message("user", text.clone(), None),
        Some(Value::Array(items)) => items.iter().for_each(|item| reader.item(item)),
        _ => {}
    }
    reader.close();
    reader.forget_earlier_reasoning();
    let messages = outputs_after_their_calls(reader.messages);
    let tools = read::tools(json, |tool| {
        (tool.get("type").and_then(Value::as_str) == Some("function"))
            .then(|| read::schema(tool, "parameters"))
    });
    read::request(messages, tools, json, "max_output_tokens")
}

/// The messages with each tool output moved to follow the assistant message holding its call,
/// wherever the input put it: the Responses API pairs a `function_call_output` with its
/// `function_call` by `call_id`, not by position, so an item between them (Codex sends a
/// developer message there, deepseek-ai/DeepSeek-V3#1588; "the OpenAI Responses API pairs tool
/// calls with their outputs by call_id regardless of position",
/// deepseek-ai/awesome-deepseek-integration#740) is no pairing problem. An output whose call is
/// nowhere in the input stays where it was, and is refused as the API refuses it.
fn outputs_after_their_calls(messages: Vec<Message>) -> Vec<Message> {
    let calls: BTreeMap<&str, usize> = messages
        .iter()
        .enumerate()
        .flat_map(|(index, message)| {
            message
                .tool_calls()
                .map(move |call| (call.id.as_str(), index))
        })
        .collect();
    // Per assistant message, the outputs that answer its calls, in input order.
    let mut answers: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool {
            continue;
        }
        let owner = message
            .tool_results()
            .next()
            .and_then(|result| calls.get(result.call_id.as_str()));
        if let Some(&owner) = owner {
            answers.entry(owner).or_default().push(index);
        }
    }
    let moved: std::collections::BTreeSet<usize> = answers.values().flatten().copied().collect();
    let mut slots: Vec<Option<Message>> = messages.into_iter().map(Some).collect();
    let mut ordered = Vec::with_capacity(slots.len());
    for index in 0..slots.len() {
        if moved.contains(&index) {
            continue;
        }
        if let Some(message) = slots[index].take() {
            ordered.push(message);
        }
        for &output in answers.get(&index).into_iter().flatten() {
            if let Some(message) = slots[output].take() {
                ordered.push(message);
            }
        }
    }
    ordered
}

/// How a reply goes out: the model's name, ids from the host's request number, usage when the
/// host reports it, the reasoning's encrypted content when the request asked for it, and how many
/// of the output tokens were reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape<'a> {
    pub model: &'a str,
    pub number: u64,
    pub usage: bool,
    pub encrypted: bool,
    /// The request's `store`, echoed.
    pub stored: bool,
    pub reasoning_tokens: u64,
}

/// The id of the response to request `number` (`resp_0003`), by which a later request names
/// it in `previous_response_id`.
pub fn response_id(number: u64) -> String {
    format!("resp_{number:04}")
}

/// The output items of a reply: a reasoning item when the turn thinks (its summary, and its
/// encrypted content when asked), the text as one assistant message, each call as a
/// `function_call` item.
pub fn output_items(reply: &ModelReply, shape: &Shape<'_>) -> Vec<Value> {
    let number = shape.number;
    let mut items = Vec::new();
    if let Some(thinking) = thinking(reply) {
        let id = reasoning::reasoning_id(number);
        let mut item = json!({
            "type": "reasoning",
            "id": id,
            "summary": [{"type": "summary_text", "text": thinking}],
        });
        if shape.encrypted {
            item["encrypted_content"] = reasoning::encrypted_content(&id).into();
        }
        items.push(item);
    }
    let text = reply.message.text();
    if !text.is_empty() {
        items.push(message_item(number, &text, "completed"));
    }
    for (index, call) in reply.message.tool_calls().enumerate() {
        items.push(json!({
            "type": "function_call",
            "id": format!("fc_{number:04}_{index}"),
            "call_id": call.id,
            "name": call.name,
            "arguments": ctxbed_providers::reply::arguments_text(&call.arguments),
            "status": "completed",
        }));
    }
    items
}

fn message_item(number: u64, text: &str, status: &str) -> Value {
    let content = if text.is_empty() && status != "completed" {
        json!([])
    } else {
        json!([{"type": "output_text", "text": text, "annotations": []}])
    };
    json!({
        "type": "message",
        "id": format!("msg_{number:04}"),
        "status": status,
        "role": "assistant",
        "content": content,
    })
}

/// The `response` object with `status` and `output`; usage only when reported and complete.
fn response_object(
    reply: Option<&ModelReply>,
    shape: &Shape<'_>,
    status: &str,
    output: Vec<Value>,
) -> Value {
    let mut response = json!({
        "id": response_id(shape.number),
        "object": "response",
        "created_at": 0,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": null,
        "model": shape.model,
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "store": shape.stored,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "metadata": {},
        "usage": null,
    });
    if let Some(reply) = reply
        && shape.usage
        && status == "completed"
    {
        let usage = reply.usage.unwrap_or_default();
        response["usage"] = json!({
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": shape.reasoning_tokens},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        });
    }
    response
}

/// A whole Responses reply.
pub fn response(reply: &ModelReply, shape: &Shape<'_>) -> Value {
    let output = output_items(reply, shape);
    response_object(Some(reply), shape, "completed", output)
}

/// Frames one server-sent event of the Responses stream, numbered `sequence`.
fn framed(kind: &str, mut data: Value, sequence: usize) -> String {
    data["type"] = kind.into();
    data["sequence_number"] = sequence.into();
    format!("event: {kind}\ndata: {data}\n\n")
}

/// The events of the Responses stream, numbered in order.
struct Events {
    plan: Plan,
}

impl Events {
    fn push(&mut self, kind: &str, data: Value) {
        let sequence = self.plan.planned();
        self.plan.event(framed(kind, data, sequence));
    }

    /// `text` in pieces of `chars` characters, each the event `kind` made by `data(piece)`.
    fn deltas(
        &mut self,
        kind: &'static str,
        text: String,
        chars: usize,
        data: impl Fn(&str) -> Value + Send + Sync + 'static,
    ) {
        let first = self.plan.planned();
        self.plan.deltas(text, chars, move |piece, n| {
            framed(kind, data(piece), first + n)
        });
    }

    /// `response.created` and `response.in_progress`, which open every stream.
    fn opened(shape: &Shape<'_>) -> Self {
        let mut events = Events {
            plan: Plan::default(),
        };
        let pending = response_object(None, shape, "in_progress", Vec::new());
        events.push("response.created", json!({"response": pending}));
        events.push("response.in_progress", json!({"response": pending}));
        events
    }

    /// An output message's events: added, its content part, the text in deltas, done.
    fn message(&mut self, index: usize, item_id: &Value, text: &str, number: u64) {
        let at = json!({"item_id": item_id, "output_index": index, "content_index": 0});
        let with = |mut base: Value, key: &str, value: Value| {
            base[key] = value;
            base
        };
        let added = message_item(number, "", "in_progress");
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
        );
        let empty = json!({"type": "output_text", "text": "", "annotations": []});
        self.push(
            "response.content_part.added",
            with(at.clone(), "part", empty),
        );
        let delta_at = at.clone();
        self.deltas(
            "response.output_text.delta",
            text.to_string(),
            16,
            move |piece| with(delta_at.clone(), "delta", piece.into()),
        );
        self.push(
            "response.output_text.done",
            with(at.clone(), "text", text.into()),
        );
        let part = json!({"type": "output_text", "text": text, "annotations": []});
        self.push("response.content_part.done", with(at, "part", part));
    }

    /// A function call's events: added with empty arguments, the arguments in deltas, done.
    fn call(&mut self, index: usize, item: &Value) {
        let item_id = item["id"].clone();
        let arguments = item["arguments"].as_str().unwrap_or_default().to_string();
        let mut added = item.clone();
        added["arguments"] = "".into();
        added["status"] = "in_progress".into();
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
        );
        let delta_id = item_id.clone();
        self.deltas(
            "response.function_call_arguments.delta",
            arguments.clone(),
            8,
            move |piece| json!({"item_id": delta_id, "output_index": index, "delta": piece}),
        );
        self.push(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
        );
    }
}

/// Each streamed event, framed as `event: <type>` and its data: `response.created` and
/// `response.in_progress`, then per output item `response.output_item.added`, its deltas (text
/// in pieces with its content part; a call's arguments in pieces) and `…done` events, then
/// `response.completed` with the whole response. Each event carries its `sequence_number`.
pub fn stream_events(reply: &ModelReply, shape: &Shape<'_>) -> Plan {
    let mut events = Events::opened(shape);
    for (index, item) in output_items(reply, shape).into_iter().enumerate() {
        match item["type"].as_str().unwrap_or_default() {
            "message" => events.message(index, &item["id"], &reply.message.text(), shape.number),
            "function_call" => events.call(index, &item),
            _ => events.push(
                "response.output_item.added",
                json!({"output_index": index, "item": item}),
            ),
        }
        events.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
    }
    events.push(
        "response.completed",
        json!({"response": response(reply, shape)}),
    );
    events.plan
}

/// A streamed request over the window: the API answers 200, opens the stream, then sends an
/// `error` event holding the overflow (the third event, `sequence_number` 2, as
/// dyad-sh/dyad#1672 shows) and ends it.
pub fn overflow_events(shape: &Shape<'_>) -> Plan {
    let mut events = Events::opened(shape);
    events.push("error", json!({"error": overflow_error()}));
    events.plan
}

/// An error in the Responses API's envelope.
pub fn error_body(message: &str, param: Option<&str>, code: Option<&str>) -> String {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})
        .to_string()
}

/// The overflow's error object: `context_length_exceeded` on `input`, in the words of
/// the-open-agent/openagent#2344 and dyad-sh/dyad#1672 (no sizes given).
fn overflow_error() -> Value {
    json!({
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "param": "input",
    })
}

/// The Responses API's overflow answer to a whole (not streamed) request: a 400 with the same
/// error as the stream's `error` event (maximhq/bifrost#4413 saw the non-streamed path carry it
/// whole).
pub fn overflow_body() -> String {
    json!({"error": overflow_error()}).to_string()
}

/// The Responses API's pairing refusal for the first unpaired call or output of `request`:
/// `No tool output found for function call …` for a call without its output, `No tool call
/// found for function call output with call_id …` for an output without its call.
pub fn pairing_body(request: &ModelRequest) -> String {
    let message = match find_pairing_problem(request.messages.iter()) {
        Some(PairingProblem::CallWithoutResult { call_id, .. }) => {
            format!("No tool output found for function call {call_id}.")
        }
        Some(
            PairingProblem::ResultWithoutCall { call_id, .. }
            | PairingProblem::DuplicateCallId { call_id, .. },
        ) => format!("No tool call found for function call output with call_id {call_id}."),
        Some(PairingProblem::BlankId { .. }) | None => {
            "No tool call found for function call output with call_id .".to_string()
        }
    };
    error_body(&message, Some("input"), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxbed_harness::model::Usage;

    fn reply(parts: Vec<ContentPart>) -> ModelReply {
        ModelReply {
            message: Message::new("m", Role::Assistant, parts),
            usage: Some(Usage {
                input_tokens: 12,
                output_tokens: 5,
                ..Usage::default()
            }),
        }
    }

    #[test]
    fn input_items_become_paired_messages() {
        let body = json!({
            "model": "m",
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": "Why did the build fail?"},
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Logs first."}]},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading."}]},
                {"type": "function_call", "call_id": "call_1", "name": "read_log", "arguments": "{\"path\":\"a\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "read_log", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "line 1"},
                {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "line 2"}]},
            ],
            "tools": [{"type": "function", "name": "read_log", "description": "Read.", "parameters": {"type": "object"}}],
            "max_output_tokens": 64,
        });
        let request = parse_request(&body);
        let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool
            ]
        );
        assert_eq!(request.messages[2].tool_calls().count(), 2);
        assert_eq!(request.messages[2].text(), "Reading.");
        assert!(
            matches!(&request.messages[2].parts[0], ContentPart::Thinking { text, .. } if text == "Logs first.")
        );
        assert!(find_pairing_problem(request.messages.iter()).is_none());
        assert_eq!(request.tools[0].name, "read_log");
        assert_eq!(request.max_output_tokens, Some(64));
        assert_eq!(parse_request(&json!({"input": "hi"})).messages.len(), 1);
    }

    #[test]
    fn outputs_pair_with_their_calls_by_call_id_wherever_they_sit() {
        // Codex's order: a developer message, and a user message, between the calls and their
        // outputs, the outputs in another order than the calls.
        let request = parse_request(&json!({"input": [
            {"role": "user", "content": "Why?"},
            {"type": "function_call", "call_id": "call_1", "name": "read_log", "arguments": "{}"},
            {"type": "function_call", "call_id": "call_2", "name": "read_log", "arguments": "{}"},
            {"role": "developer", "content": "A hook's note."},
            {"type": "function_call_output", "call_id": "call_2", "output": "two"},
            {"role": "user", "content": "Also this."},
            {"type": "function_call_output", "call_id": "call_1", "output": "one"},
        ]}));
        assert_eq!(find_pairing_problem(request.messages.iter()), None);
        let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::Tool,
                Role::Tool,
                Role::System,
                Role::User
            ]
        );
        // An output whose call is nowhere is still refused.
        let orphan = parse_request(&json!({"input": [
            {"role": "user", "content": "x"},
            {"type": "function_call_output", "call_id": "call_9", "output": "42"},
            {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "1"},
        ]}));
        assert!(find_pairing_problem(orphan.messages.iter()).is_some());
    }

    #[test]
    fn unpaired_items_get_the_apis_wording() {
        let orphan = parse_request(&json!({"input": [
            {"role": "user", "content": "x"},
            {"type": "function_call_output", "call_id": "call_9", "output": "42"},
        ]}));
        assert!(
            pairing_body(&orphan)
                .contains("No tool call found for function call output with call_id call_9.")
        );
        let unanswered = parse_request(&json!({"input": [
            {"role": "user", "content": "x"},
            {"type": "function_call", "call_id": "call_3", "name": "f", "arguments": "{}"},
            {"role": "user", "content": "and?"},
        ]}));
        let body: Value = serde_json::from_str(&pairing_body(&unanswered)).expect("JSON");
        assert_eq!(
            body["error"]["message"],
            "No tool output found for function call call_3."
        );
        assert_eq!(body["error"]["param"], "input");
        let overflow: Value = serde_json::from_str(&overflow_body()).expect("JSON");
        assert_eq!(overflow["error"]["code"], "context_length_exceeded");
    }

    #[test]
    fn a_reply_is_a_response_whole_and_as_events() {
        let answer = reply(vec![
            ContentPart::text("Calling."),
            ContentPart::tool_call("call_1", "read_log", json!({"path": "build.log"})),
        ]);
        let shape = |usage| Shape {
            model: "m",
            number: 3,
            usage,
            encrypted: false,
            stored: true,
            reasoning_tokens: 0,
        };
        let whole = response(&answer, &shape(true));
        assert_eq!(whole["id"], "resp_0003");
        assert_eq!(whole["output"][0]["content"][0]["text"], "Calling.");
        assert_eq!(whole["output"][1]["call_id"], "call_1");
        assert_eq!(whole["output"][1]["arguments"], "{\"path\":\"build.log\"}");
        assert_eq!(whole["usage"]["total_tokens"], 17);
        let events: Vec<String> = stream_events(&answer, &shape(false)).collect();
        let kinds: Vec<&str> = events
            .iter()
            .filter_map(|event| event.lines().next()?.strip_prefix("event: "))
            .collect();
        assert_eq!(kinds.first(), Some(&"response.created"));
        assert_eq!(kinds.last(), Some(&"response.completed"));
        assert!(kinds.contains(&"response.output_text.delta"));
        assert!(kinds.contains(&"response.function_call_arguments.done"));
        let numbers: Vec<u64> = events
            .iter()
            .filter_map(|event| event.lines().nth(1)?.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .filter_map(|data| data["sequence_number"].as_u64())
            .collect();
        assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
        let last: Value = serde_json::from_str(
            events
                .last()
                .and_then(|e| e.lines().nth(1)?.strip_prefix("data: "))
                .unwrap_or("{}"),
        )
        .expect("JSON");
        assert_eq!(last["response"]["usage"], Value::Null);
    }
}
