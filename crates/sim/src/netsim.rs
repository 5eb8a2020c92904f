//! The simulated network: the same HTTP provider code over turmoil's simulated TCP, against an
//! in-process provider host that serves a mock model's script in the OpenAI-compatible wire
//! format.
//!
//! [`TurmoilTransport`] implements [`Transport`] with a hyper HTTP/1.1 client connection over a
//! `turmoil::net::TcpStream`, one connection per request. [`serve`] is the provider host: a
//! hyper server on a `turmoil::net::TcpListener` that reads each Chat Completions request back
//! into a [`ModelRequest`], asks a [`MockModel`] (which counts, checks and answers exactly as in
//! every other scenario), and writes the answer as a whole JSON reply or as server-sent events;
//! thinking goes out as `reasoning_content`, errors as the provider's status and body.
//! [`HostFaults`] adds faults that belong to the server: a connection dropped before an answer,
//! a stream cut in the middle.
//!
//! Latency, message loss and partitions belong to the network and are turmoil's, seeded from
//! the scenario; all time is turmoil's simulated time, read through `tokio::time`.
//!
//! **Invariant:** nothing here reads the wall clock or an unseeded random source; the host
//! answers request `n` the same way in every run.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::mock::MockModel;
use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput, ToolResult};
use ctxbed_harness::model::{Model, ModelError, ModelReply, ModelRequest, Purpose};
use ctxbed_harness::tools::ToolSchema;
use ctxbed_providers::limits::PROVIDER_REPLY_BYTES_MAX;
use ctxbed_providers::transport::{
    ResponseBody, Transport, TransportError, error_chain, incoming_body,
};

/// HTTP/1.1 over turmoil's simulated TCP.
#[derive(Debug, Clone)]
pub struct TurmoilTransport {
    /// Time allowed to open a connection; past it the attempt is a connection fault (and so
    /// retried), not a timeout of the whole request.
    pub connect_timeout: Duration,
}

#[async_trait]
impl Transport for TurmoilTransport {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError> {
        let Some(host) = request.uri().host().map(str::to_string) else {
            return Err(TransportError::Unsupported("a URL without a host".into()));
        };
        let port = request.uri().port_u16().unwrap_or(80);
        let connect = turmoil::net::TcpStream::connect((host.as_str(), port));
        let stream = match tokio::time::timeout(self.connect_timeout, connect).await {
            Err(_) => {
                return Err(TransportError::Connect(format!(
                    "no connection to {host}:{port} within {}",
                    ctxbed_harness::format::duration(self.connect_timeout)
                )));
            }
            Ok(Err(error)) => return Err(TransportError::Connect(error_chain(&error))),
            Ok(Ok(stream)) => stream,
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| TransportError::Connect(error_chain(&error)))?;
        tokio::spawn(async move {
            // The connection's own error reaches the response or its body.
            let _ = connection.await;
        });
        let mut request = request.map(Full::new);
        let authority = format!("{host}:{port}");
        if let Ok(value) = http::HeaderValue::from_str(&authority) {
            request.headers_mut().insert(http::header::HOST, value);
        }
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| TransportError::Connection(error_chain(&error)))?;
        Ok(response.map(incoming_body))
    }
}

/// Faults the provider host injects by request number (1-based, counting every HTTP request
/// it receives, retries included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFaults {
    /// Requests whose connection is dropped before any answer (a reset).
    pub reset_requests: Vec<u64>,
    /// Requests whose streamed answer is cut after its first events.
    pub cut_stream_requests: Vec<u64>,
}

/// The provider host's state: the mock model behind it and its faults.
#[derive(Debug)]
pub struct ProviderHost {
    model: MockModel,
    faults: HostFaults,
    requests: AtomicU64,
}

impl ProviderHost {
    /// A host answering with `model`.
    pub fn new(model: MockModel, faults: HostFaults) -> Self {
        ProviderHost {
            model,
            faults,
            requests: AtomicU64::new(0),
        }
    }

    /// HTTP requests received so far.
    pub fn request_count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// Serves `host` on a turmoil listener at `port` until the simulation ends.
///
/// # Errors
/// The port cannot be bound.
pub async fn serve(host: Arc<ProviderHost>, port: u16) -> Result<(), std::io::Error> {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let host = host.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let host = host.clone();
                async move { Ok::<_, Infallible>(answer(&host, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

type HostBody = Either<
    Full<Bytes>,
    StreamBody<
        futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, std::io::Error>>>,
    >,
>;

async fn answer(
    host: &ProviderHost,
    request: http::Request<hyper::body::Incoming>,
) -> http::Response<HostBody> {
    let number = host.requests.fetch_add(1, Ordering::Relaxed) + 1;
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return reset(),
    };
    if host.faults.reset_requests.contains(&number) {
        return reset();
    }
    let Ok(json) = serde_json::from_slice::<Value>(&body) else {
        return full(
            400,
            r#"{"error":{"message":"the body is not JSON","type":"invalid_request_error"}}"#.into(),
        );
    };
    let stream = json.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let outcome = host.model.call(&parse_request(&json)).await;
    match outcome {
        Ok(reply) if stream => {
            let events = stream_events(&reply);
            let cut = host.faults.cut_stream_requests.contains(&number);
            streamed(events, cut)
        }
        Ok(reply) => full(200, completion(&reply).to_string()),
        Err(error) => error_response(error).await,
    }
}

fn full(status: u16, body: String) -> http::Response<HostBody> {
    let mut response = http::Response::new(Either::Left(Full::new(Bytes::from(body))));
    *response.status_mut() =
        http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A response whose body fails at once: hyper closes the connection without an answer.
fn reset() -> http::Response<HostBody> {
    let frames = vec![Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "reset by the provider host",
    ))];
    http::Response::new(Either::Right(StreamBody::new(futures_util::stream::iter(
        frames,
    ))))
}

/// Server-sent events; a cut stream sends its first half and then fails.
fn streamed(events: Vec<String>, cut: bool) -> http::Response<HostBody> {
    let keep = if cut { events.len() / 2 } else { events.len() };
    let mut frames: Vec<Result<Frame<Bytes>, std::io::Error>> = events
        .into_iter()
        .take(keep)
        .map(|event| Ok(Frame::data(Bytes::from(format!("data: {event}\n\n")))))
        .collect();
    if cut {
        frames.push(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "stream cut by the provider host",
        )));
    }
    let mut response = http::Response::new(Either::Right(StreamBody::new(
        futures_util::stream::iter(frames),
    )));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    response
}

async fn error_response(error: ModelError) -> http::Response<HostBody> {
    match error {
        ModelError::ContextOverflow { status, body, .. }
        | ModelError::PairingRejected { status, body, .. }
        | ModelError::Rejected { status, body } => full(status, body),
        ModelError::Transient { status, body } => full(status.unwrap_or(503), body),
        ModelError::RateLimited { body, .. } => full(429, body),
        ModelError::MalformedReply { raw, .. } => {
            let mut response = full(200, raw);
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain"),
            );
            response
        }
        ModelError::Timeout { .. } => {
            // The script says the provider never answers in time: hold the request open until
            // the client gives up (bounded so a simulation always ends).
            tokio::time::sleep(Duration::from_secs(
                crate::limits::STEP_VIRTUAL_TIME_MAX_SECONDS,
            ))
            .await;
            full(504, r#"{"error":{"message":"gateway timeout"}}"#.into())
        }
        ModelError::ScriptExhausted { .. } => full(
            500,
            json!({"error": {"message": error.to_string(), "type": "script_exhausted"}})
                .to_string(),
        ),
    }
}

/// Reads a Chat Completions request body back into a [`ModelRequest`], as a provider sees it.
pub fn parse_request(json: &Value) -> ModelRequest {
    let mut messages = Vec::new();
    let mut names = std::collections::BTreeMap::new();
    let wire = json.get("messages").and_then(Value::as_array);
    for (index, message) in wire.into_iter().flatten().enumerate() {
        let id = format!("wire-{index}");
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let parsed = match role {
            "system" => Message::system(id, text),
            "assistant" => {
                let mut parts = Vec::new();
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
                    let arguments = function
                        .get("arguments")
                        .and_then(Value::as_str)
                        .and_then(|text| serde_json::from_str(text).ok())
                        .unwrap_or(Value::Null);
                    names.insert(call_id.to_string(), name.to_string());
                    parts.push(ContentPart::tool_call(call_id, name, arguments));
                }
                Message::new(id, Role::Assistant, parts)
            }
            "tool" => {
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
            _ => Message::user(id, text),
        };
        messages.push(parsed);
    }
    let tools = json.get("tools").and_then(Value::as_array);
    let tools: Arc<[ToolSchema]> = tools
        .into_iter()
        .flatten()
        .filter_map(|tool| tool.get("function"))
        .map(|function| ToolSchema {
            name: function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            description: function
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            parameters: function.get("parameters").cloned().unwrap_or(Value::Null),
        })
        .collect();
    let max_output_tokens = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|key| json.get(*key).and_then(Value::as_u64));
    // The wire does not say why a request was made, so every request reaches the mock as a
    // reasoning request: a mock behind the network scripts its summaries like any other turn.
    ModelRequest {
        call_id: String::new(),
        purpose: Purpose::Reasoning,
        messages: messages.into(),
        tools,
        max_output_tokens,
    }
}

/// A whole Chat Completions reply.
fn completion(reply: &ModelReply) -> Value {
    let text = reply.message.text();
    let calls: Vec<Value> = reply
        .message
        .tool_calls()
        .map(|call| json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments.to_string()}}))
        .collect();
    let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { text.into() }});
    if !calls.is_empty() {
        message["tool_calls"] = calls.into();
    }
    if let Some(thinking) = thinking(reply) {
        message["reasoning_content"] = thinking.into();
    }
    let usage = reply.usage.unwrap_or_default();
    json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": if reply.message.has_tool_calls() { "tool_calls" } else { "stop" }}],
        "usage": {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens},
    })
}

/// The `data` of each streamed event: text in pieces, each tool call's arguments in pieces,
/// usage, `[DONE]`.
fn stream_events(reply: &ModelReply) -> Vec<String> {
    let delta = |delta: Value| json!({"choices": [{"index": 0, "delta": delta}]}).to_string();
    let mut events = vec![delta(json!({"role": "assistant", "content": ""}))];
    for piece in pieces(&thinking(reply).unwrap_or_default(), 16) {
        events.push(delta(json!({"reasoning_content": piece})));
    }
    let text = reply.message.text();
    for piece in pieces(&text, 16) {
        events.push(delta(json!({"content": piece})));
    }
    for (index, call) in reply.message.tool_calls().enumerate() {
        events.push(delta(json!({"tool_calls": [{"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}]})));
        for piece in pieces(&call.arguments.to_string(), 8) {
            events.push(delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
            ));
        }
    }
    let usage = reply.usage.unwrap_or_default();
    events.push(json!({"choices": [], "usage": {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens}}).to_string());
    events.push("[DONE]".to_string());
    debug_assert!(events.iter().map(String::len).sum::<usize>() < PROVIDER_REPLY_BYTES_MAX);
    events
}

/// The reply's thinking parts joined, when it has any.
fn thinking(reply: &ModelReply) -> Option<String> {
    let texts: Vec<&str> = reply
        .message
        .parts
        .iter()
        .filter_map(|part| match part {
            ContentPart::Thinking { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// `text` in pieces of at most `chars` characters.
fn pieces(text: &str, chars: usize) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    characters
        .chunks(chars)
        .map(|chunk| chunk.iter().collect())
        .collect()
}
