//! The HTTP providers against a real HTTP server (wiremock), on real time.
//!
//! Exact request bodies (snapshots in `tests/snapshots/`), whole and streamed replies, every
//! error class, retries (counted by the requests the server received), the key never shown,
//! and `ctxbed record` writing a mock model that replays under the normal runner.
//!
//! These tests run on tokio's real clock: wiremock's delays are real, so every delay here is
//! tens of milliseconds.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ctxbed_harness::message::{ContentPart, Message, Metadata, Role, ToolOutput, ToolResult};
use ctxbed_harness::model::{Model, ModelError, ModelRequest, Purpose, Usage};
use ctxbed_harness::tools::ToolSchema;
use ctxbed_providers::transport::ChunkStream;
use ctxbed_providers::{
    ApiKey, HttpProvider, HyperTransport, ProviderConfig, ProviderKind, ResponseBody, RetryPolicy,
    Transport, TransportError,
};
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-test-7f3a9c21-never-shown";

fn config(kind: ProviderKind, base_url: &str, stream: bool) -> ProviderConfig {
    let mut config = ProviderConfig::new(kind, base_url, "test-model");
    config.stream = stream;
    config.request_timeout = Duration::from_secs(5);
    config.read_timeout = Duration::from_secs(5);
    config.retry = RetryPolicy {
        attempts_max: 1,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(200),
        seed: 1,
    };
    config
}

fn provider_with(config: ProviderConfig) -> HttpProvider {
    HttpProvider::new(
        config,
        Some(ApiKey::new(KEY)),
        Arc::new(HyperTransport::new()),
    )
    .expect("valid configuration")
}

fn openai(server: &MockServer, stream: bool) -> HttpProvider {
    provider_with(config(
        ProviderKind::OpenAi,
        &format!("{}/v1", server.uri()),
        stream,
    ))
}

fn responses(server: &MockServer, stream: bool) -> HttpProvider {
    provider_with(config(
        ProviderKind::Responses,
        &format!("{}/v1", server.uri()),
        stream,
    ))
}

fn anthropic(server: &MockServer, stream: bool) -> HttpProvider {
    provider_with(config(ProviderKind::Anthropic, &server.uri(), stream))
}

/// A request with everything the wire formats must carry: system text, a user turn, an
/// assistant turn with text and two tool calls, their results (one an error), a media
/// placeholder, a final user turn, two tool schemas and an output bound.
fn prepared_request() -> ModelRequest {
    let schema = |name: &str, description: &str, property: &str| ToolSchema {
        name: name.into(),
        description: description.into(),
        parameters: json!({
            "type": "object",
            "properties": {property: {"type": "string"}},
            "required": [property],
        }),
    };
    let result = |call_id: &str, tool: &str, text: &str, is_error: bool| ToolResult {
        call_id: call_id.into(),
        tool_name: tool.into(),
        outputs: vec![ToolOutput::Text { text: text.into() }],
        is_error,
        metadata: Metadata::new(),
    };
    ModelRequest {
        call_id: "call-1".into(),
        purpose: Purpose::Reasoning,
        messages: vec![
            Message::system("m0", "Investigate and fix."),
            Message::user("m1", "Check the export fix."),
            Message::new(
                "m2",
                Role::Assistant,
                vec![
                    ContentPart::thinking("Run the tests first."),
                    ContentPart::text("Running the tests."),
                    ContentPart::tool_call("call_a", "execute", json!({"command": "cargo test"})),
                    ContentPart::tool_call("call_b", "read_file", json!({"path": "src/x.rs"})),
                ],
            ),
            Message::new(
                "m3",
                Role::Tool,
                vec![
                    ContentPart::ToolResult(result("call_a", "execute", "12 passed", false)),
                    ContentPart::ToolResult(result("call_b", "read_file", "no such file", true)),
                ],
            ),
            Message::new(
                "m4",
                Role::User,
                vec![
                    ContentPart::text("Here is the screenshot."),
                    ContentPart::Media {
                        kind: ctxbed_harness::message::MediaKind::Image,
                        size_bytes: 2048,
                    },
                ],
            ),
        ]
        .into(),
        tools: vec![
            schema("execute", "Run a shell command.", "command"),
            schema("read_file", "Read a file.", "path"),
        ]
        .into(),
        max_output_tokens: Some(256),
    }
}

fn simple_request() -> ModelRequest {
    ModelRequest {
        call_id: "call-1".into(),
        purpose: Purpose::Reasoning,
        messages: vec![Message::user("m1", "Hi")].into(),
        tools: Default::default(),
        max_output_tokens: None,
    }
}

/// Compares the exact bytes sent with the snapshot (pretty JSON, compacted in key order).
/// `CTXBED_BLESS=1` rewrites the snapshot instead (never under `CI`).
fn check_snapshot(name: &str, sent: &[u8]) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(name);
    let sent: serde_json::Value = serde_json::from_slice(sent).expect("the body is JSON");
    if ctxbed::scenario::check::golden::bless_from_env().expect("the bless switch") {
        let pretty = serde_json::to_string_pretty(&sent).expect("serialisable");
        std::fs::write(&file, pretty + "\n").expect("snapshot written");
    }
    let expected = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}; run with CTXBED_BLESS=1", file.display()));
    let expected: serde_json::Value = serde_json::from_str(&expected).expect("snapshot is JSON");
    assert_eq!(
        serde_json::to_string(&sent).expect("serialisable"),
        serde_json::to_string(&expected).expect("serialisable"),
        "request body differs from {}",
        file.display()
    );
}

async fn only_request_body(server: &MockServer) -> wiremock::Request {
    let mut requests = server.received_requests().await.expect("recording on");
    assert_eq!(requests.len(), 1, "exactly one request");
    requests.remove(0)
}

fn sse(events: &[String]) -> String {
    events.iter().map(|e| format!("{e}\n\n")).collect()
}

fn data(json: serde_json::Value) -> String {
    format!("data: {json}")
}

fn stream_response(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn json_response(status: u16, body: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(body.to_string(), "application/json")
}

// ---------------------------------------------------------------- requests

#[tokio::test]
async fn openai_request_is_sent_exactly() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .respond_with(json_response(
            200,
            r#"{"choices":[{"message":{"role":"assistant","content":"ok"}}]}"#,
        ))
        .mount(&server)
        .await;
    let reply = openai(&server, false)
        .call(&prepared_request())
        .await
        .expect("a reply");
    assert_eq!(reply.message.text(), "ok");
    let request = only_request_body(&server).await;
    check_snapshot("provider_openai_request.json", &request.body);
}

#[tokio::test]
async fn openai_streaming_request_asks_for_usage_and_the_configured_field() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(stream_response(sse(&["data: [DONE]".to_string()])))
        .mount(&server)
        .await;
    let mut config = config(ProviderKind::OpenAi, &format!("{}/v1", server.uri()), true);
    config.max_tokens_field = ctxbed_providers::MaxTokensField::MaxCompletionTokens;
    let mut request = simple_request();
    request.max_output_tokens = Some(99);
    provider_with(config)
        .call(&request)
        .await
        .expect("empty reply");
    let sent: serde_json::Value =
        serde_json::from_slice(&only_request_body(&server).await.body).expect("JSON");
    assert_eq!(
        sent,
        json!({
            "model": "test-model",
            "messages": [{"role": "user", "content": "Hi"}],
            "max_completion_tokens": 99,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn anthropic_request_is_sent_exactly() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(json_response(
            200,
            r#"{"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":3,"output_tokens":1}}"#,
        ))
        .mount(&server)
        .await;
    let reply = anthropic(&server, false)
        .call(&prepared_request())
        .await
        .expect("a reply");
    assert_eq!(reply.message.text(), "ok");
    let request = only_request_body(&server).await;
    assert!(request.headers.get("authorization").is_none());
    check_snapshot("provider_anthropic_request.json", &request.body);
}

// ---------------------------------------------------------------- replies

#[tokio::test]
async fn openai_whole_reply_is_read_leniently() {
    let server = MockServer::start().await;
    let body = json!({
        "id": "x", "object": "chat.completion", "system_fingerprint": "",
        "choices": [{
            "index": 0,
            "finish_reason": "eos",
            "message": {
                "role": "assistant",
                "content": "Running it.",
                "reasoning_content": "Tests first.",
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "execute", "arguments": "{\"command\":\"ls\"}"}},
                    {"id": "", "type": "function", "function": {"name": "list", "arguments": ""}}
                ],
                "extra": {"anything": true}
            }
        }],
        "usage": {"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135}
    });
    Mock::given(method("POST"))
        .respond_with(json_response(200, &body.to_string()))
        .mount(&server)
        .await;
    let reply = openai(&server, false)
        .call(&simple_request())
        .await
        .expect("a reply");
    assert_eq!(
        reply.message.parts,
        vec![
            ContentPart::thinking("Tests first."),
            ContentPart::text("Running it."),
            ContentPart::tool_call("call_1", "execute", json!({"command": "ls"})),
            // A call without an id gets one, unique for the provider.
            ContentPart::tool_call("call_missing_0001", "list", json!({})),
        ]
    );
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 120,
            output_tokens: 15,
            ..Usage::default()
        })
    );
}

/// Text and two interleaved tool calls, each argument split into pieces of at most 3 bytes.
fn openai_stream_body() -> String {
    let mut events = vec![data(
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}),
    )];
    for piece in ["Let", " me", " check", "."] {
        events.push(data(
            json!({"choices":[{"index":0,"delta":{"content":piece},"finish_reason":null}]}),
        ));
    }
    let first = "{\"command\": \"cargo test\"}";
    let second = "{\"path\": \"src/lib.rs\"}";
    events.push(data(json!({"choices":[{"index":0,"delta":{"tool_calls":[
        {"index":0,"id":"call_a","type":"function","function":{"name":"execute","arguments":""}}]}}]})));
    events.push(data(json!({"choices":[{"index":0,"delta":{"tool_calls":[
        {"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":""}}]}}]})));
    let pieces = |text: &str| -> Vec<String> {
        text.as_bytes()
            .chunks(3)
            .map(|c| String::from_utf8(c.to_vec()).expect("ASCII"))
            .collect()
    };
    let (a, b) = (pieces(first), pieces(second));
    for i in 0..a.len().max(b.len()) {
        for (index, parts) in [(0, &a), (1, &b)] {
            if let Some(piece) = parts.get(i) {
                events.push(data(json!({"choices":[{"index":0,"delta":{"tool_calls":[
                    {"index":index,"function":{"arguments":piece}}]}}]})));
            }
        }
    }
    events.push(data(
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ));
    events.push(data(
        json!({"choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20}}),
    ));
    events.push("data: [DONE]".to_string());
    sse(&events)
}

fn expected_stream_reply() -> Vec<ContentPart> {
    vec![
        ContentPart::text("Let me check."),
        ContentPart::tool_call("call_a", "execute", json!({"command": "cargo test"})),
        ContentPart::tool_call("call_b", "read_file", json!({"path": "src/lib.rs"})),
    ]
}

#[tokio::test]
async fn openai_stream_reassembles_text_and_tool_calls_split_across_deltas() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(stream_response(openai_stream_body()))
        .mount(&server)
        .await;
    let reply = openai(&server, true)
        .call(&simple_request())
        .await
        .expect("a reply");
    assert_eq!(reply.message.parts, expected_stream_reply());
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 50,
            output_tokens: 20,
            ..Usage::default()
        })
    );
}

/// A transport that answers with a fixed streamed body cut into chunks of one size.
struct ChunkedTransport {
    body: Vec<u8>,
    chunk_size: usize,
}

#[async_trait::async_trait]
impl Transport for ChunkedTransport {
    async fn send(
        &self,
        _request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError> {
        let chunks: Vec<Result<Bytes, TransportError>> = self
            .body
            .chunks(self.chunk_size)
            .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
            .collect();
        let stream: ChunkStream = Box::pin(futures_util::stream::iter(chunks));
        let mut response = http::Response::new(ResponseBody::from_stream(stream));
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/event-stream; charset=utf-8"),
        );
        Ok(response)
    }
}

#[tokio::test]
async fn streams_split_into_any_chunks_with_any_line_ending_give_the_same_reply() {
    let lf = openai_stream_body();
    for body in [lf.clone(), lf.replace('\n', "\r\n"), lf.replace('\n', "\r")] {
        for chunk_size in [1, 2, 3, 7, 64] {
            let transport = ChunkedTransport {
                body: body.clone().into_bytes(),
                chunk_size,
            };
            let provider = HttpProvider::new(
                config(ProviderKind::OpenAi, "http://127.0.0.1:9/v1", true),
                None,
                Arc::new(transport),
            )
            .expect("valid configuration");
            let reply = provider.call(&simple_request()).await.expect("a reply");
            assert_eq!(
                reply.message.parts,
                expected_stream_reply(),
                "chunks of {chunk_size}"
            );
        }
    }
}

fn anthropic_stream_body() -> String {
    let event = |name: &str, json: serde_json::Value| format!("event: {name}\ndata: {json}");
    let mut events = vec![
        event(
            "message_start",
            json!({"type":"message_start","message":{"id":"msg_1","role":"assistant","content":[],"usage":{"input_tokens":40,"output_tokens":1}}}),
        ),
        event("ping", json!({"type":"ping"})),
        event(
            "content_block_start",
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
        ),
        event(
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Run the tests."}}),
        ),
        event(
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}),
        ),
        event(
            "content_block_stop",
            json!({"type":"content_block_stop","index":0}),
        ),
        event(
            "content_block_start",
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        ),
        event(
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me "}}),
        ),
        event(
            "brand_new_event",
            json!({"type":"brand_new_event","detail":1}),
        ),
        event(
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"check."}}),
        ),
        event(
            "content_block_stop",
            json!({"type":"content_block_stop","index":1}),
        ),
        event(
            "content_block_start",
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"execute","input":{}}}),
        ),
    ];
    for piece in ["{\"com", "mand\"", ": \"car", "go test", "\"}"] {
        events.push(event(
            "content_block_delta",
            json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":piece}}),
        ));
    }
    events.push(event(
        "content_block_stop",
        json!({"type":"content_block_stop","index":2}),
    ));
    events.push(event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":33}}),
    ));
    events.push(event("message_stop", json!({"type":"message_stop"})));
    sse(&events)
}

#[tokio::test]
async fn anthropic_stream_reassembles_blocks_and_ignores_unknown_events() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(stream_response(anthropic_stream_body()))
        .mount(&server)
        .await;
    let reply = anthropic(&server, true)
        .call(&simple_request())
        .await
        .expect("a reply");
    assert_eq!(
        reply.message.parts,
        vec![
            ContentPart::Thinking {
                text: "Run the tests.".into(),
                signature: Some("abc".into()),
            },
            ContentPart::text("Let me check."),
            ContentPart::tool_call("toolu_1", "execute", json!({"command": "cargo test"})),
        ]
    );
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 40,
            output_tokens: 33,
            ..Usage::default()
        })
    );
}

#[tokio::test]
async fn anthropic_whole_reply_is_read() {
    let server = MockServer::start().await;
    let body = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_9", "name": "execute", "input": {"command": "ls"}},
            {"type": "server_tool_use", "id": "srv", "name": "web", "input": {}}
        ],
        "usage": {"input_tokens": 10, "output_tokens": 4, "cache_read_input_tokens": 0}
    });
    Mock::given(method("POST"))
        .respond_with(json_response(200, &body.to_string()))
        .mount(&server)
        .await;
    let reply = anthropic(&server, false)
        .call(&simple_request())
        .await
        .expect("a reply");
    assert_eq!(
        reply.message.parts,
        vec![
            ContentPart::text("Checking."),
            ContentPart::tool_call("toolu_9", "execute", json!({"command": "ls"})),
        ]
    );
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 10,
            output_tokens: 4,
            ..Usage::default()
        })
    );
}

// ---------------------------------------------------------------- errors

/// Serves one answer and returns what the provider made of it.
async fn error_for(
    kind: ProviderKind,
    stream: bool,
    response: ResponseTemplate,
) -> (ModelError, HttpProvider) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(response)
        .mount(&server)
        .await;
    let provider = match kind {
        ProviderKind::OpenAi => openai(&server, stream),
        ProviderKind::Responses => responses(&server, stream),
        ProviderKind::Anthropic => anthropic(&server, stream),
    };
    let error = provider
        .call(&simple_request())
        .await
        .expect_err("an error");
    (error, provider)
}

fn assert_bounded(error: &ModelError) {
    let shown = error.to_string();
    assert!(
        shown.chars().count() < 2 * ctxbed_harness::limits::SNIPPET_CHARS_MAX + 200,
        "unbounded error text: {} chars",
        shown.chars().count()
    );
    if let ModelError::MalformedReply { raw, .. } = error {
        assert!(raw.chars().count() <= ctxbed_providers::limits::PROVIDER_RAW_CHARS_MAX + 1);
    }
}

#[tokio::test]
async fn http_errors_are_classified_by_the_shared_classifier() {
    let openai_overflow = r#"{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let (error, _) = error_for(
        ProviderKind::OpenAi,
        false,
        json_response(400, openai_overflow),
    )
    .await;
    let ModelError::ContextOverflow {
        actual_tokens,
        max_tokens,
        status,
        body,
        ..
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(
        (*actual_tokens, *max_tokens, *status),
        (Some(4294), Some(4097), 400)
    );
    assert_eq!(body, openai_overflow);

    let anthropic_overflow = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"}}"#;
    let (error, _) = error_for(
        ProviderKind::Anthropic,
        true,
        json_response(400, anthropic_overflow),
    )
    .await;
    assert!(
        matches!(
            error,
            ModelError::ContextOverflow {
                actual_tokens: Some(200_251),
                max_tokens: Some(200_000),
                ..
            }
        ),
        "{error:?}"
    );

    let pairing = r#"{"error":{"message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_x","type":"invalid_request_error","param":"messages.[3].role","code":null}}"#;
    let cases: Vec<(ResponseTemplate, &str)> = vec![
        (json_response(400, pairing), "pairing_rejected"),
        (
            json_response(401, r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#),
            "rejected",
        ),
        (json_response(403, r#"{"error":{"message":"forbidden"}}"#), "rejected"),
        (json_response(500, r#"{"error":{"message":"internal"}}"#), "transient"),
        (json_response(503, ""), "transient"),
        (
            ResponseTemplate::new(502).set_body_raw(
                "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>",
                "text/html",
            ),
            "transient",
        ),
    ];
    for (response, kind) in cases {
        let (error, _) = error_for(ProviderKind::OpenAi, false, response).await;
        assert_eq!(error.kind(), kind, "{error:?}");
        assert_bounded(&error);
    }
}

#[tokio::test]
async fn rate_limits_carry_retry_after() {
    let response = json_response(
        429,
        r#"{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}"#,
    )
    .insert_header("retry-after", "7");
    let (error, _) = error_for(ProviderKind::OpenAi, false, response).await;
    assert_eq!(
        error,
        ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            body: r#"{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}"#
                .into(),
        }
    );
}

#[tokio::test]
async fn bad_replies_are_typed_errors_with_bounded_snippets() {
    let html = format!(
        "<html><body><h1>Service Unavailable</h1>{}</body></html>",
        "<p>padding</p>".repeat(2_000)
    );
    let bad_arguments = json!({"choices":[{"message":{"tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"execute","arguments":"{\"command\": \"ls"}}]}}]});
    let cases: Vec<(ResponseTemplate, &str, &str)> = vec![
        (
            ResponseTemplate::new(200).set_body_raw(html, "text/html"),
            "malformed_reply",
            "<html><body><h1>Service Unavailable",
        ),
        (
            json_response(200, r#"{"choices":[{"message":{"content":"trunc"#),
            "malformed_reply",
            "{\"choices\"",
        ),
        (
            json_response(200, r#"{"id":"x"}"#),
            "malformed_reply",
            "{\"id\"",
        ),
        (
            json_response(
                200,
                r#"{"error":{"message":"upstream overloaded","code":503}}"#,
            ),
            "transient",
            "",
        ),
        (
            json_response(
                200,
                r#"{"object":"error","message":"This model's maximum context length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion).","type":"BadRequestError","param":null,"code":400}"#,
            ),
            "context_overflow",
            "",
        ),
    ];
    // Arguments that are not JSON are kept as the model sent them, for the tool to refuse, and
    // go back as sent.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_response(200, &bad_arguments.to_string()))
        .mount(&server)
        .await;
    let reply = openai(&server, false)
        .call(&simple_request())
        .await
        .expect("a reply");
    let call = reply.message.tool_calls().next().expect("a call");
    assert_eq!(call.arguments, json!("{\"command\": \"ls"));
    let mut back = simple_request();
    back.messages = vec![reply.message.clone()].into();
    let options = ctxbed_providers::WireOptions {
        model: "m".into(),
        stream: false,
        max_tokens_field: ctxbed_providers::MaxTokensField::MaxTokens,
        max_output_tokens: None,
        thinking_budget: None,
    };
    let body = ctxbed_providers::openai::request_body(&back, &options);
    assert_eq!(
        body["messages"][0]["tool_calls"][0]["function"]["arguments"],
        "{\"command\": \"ls"
    );
    for (response, kind, raw_start) in cases {
        let (error, _) = error_for(ProviderKind::OpenAi, false, response).await;
        assert_eq!(error.kind(), kind, "{error:?}");
        assert_bounded(&error);
        if let ModelError::MalformedReply { raw, .. } = &error {
            assert!(raw.starts_with(raw_start), "{raw}");
        }
    }
}

#[tokio::test]
async fn broken_streams_are_typed_errors() {
    // No [DONE]: the stream was cut, a transient fault.
    let cut = sse(&[data(
        json!({"choices":[{"index":0,"delta":{"content":"Hal"}}]}),
    )]);
    let (error, _) = error_for(ProviderKind::OpenAi, true, stream_response(cut)).await;
    assert_eq!(error.kind(), "transient", "{error:?}");
    assert!(error.to_string().contains("[DONE]"), "{error}");

    // No message_stop.
    let cut = sse(&[format!(
        "event: message_start\ndata: {}",
        json!({"type":"message_start","message":{"usage":{"input_tokens":1}}})
    )]);
    let (error, _) = error_for(ProviderKind::Anthropic, true, stream_response(cut)).await;
    assert_eq!(error.kind(), "transient", "{error:?}");
    assert!(error.to_string().contains("message_stop"), "{error}");

    // An error event mid-stream is classified like an HTTP error.
    let overloaded = sse(&[
        format!(
            "event: message_start\ndata: {}",
            json!({"type":"message_start","message":{}})
        ),
        format!(
            "event: error\ndata: {}",
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
        ),
    ]);
    let (error, _) = error_for(ProviderKind::Anthropic, true, stream_response(overloaded)).await;
    assert_eq!(error.kind(), "transient", "{error:?}");

    // An OpenAI-compatible server's error chunk.
    let error_chunk = sse(&[data(
        json!({"error":{"message":"prompt is too long: 9000 tokens > 8192 maximum","type":"invalid_request_error","code":400}}),
    )]);
    let (error, _) = error_for(ProviderKind::OpenAi, true, stream_response(error_chunk)).await;
    assert!(
        matches!(
            error,
            ModelError::ContextOverflow {
                actual_tokens: Some(9000),
                max_tokens: Some(8192),
                ..
            }
        ),
        "{error:?}"
    );

    // The Responses API: a stream that ends before response.completed, and an overflow sent
    // as the stream's error event.
    let cut = sse(&[format!(
        "event: response.output_text.delta\ndata: {}",
        json!({"type":"response.output_text.delta","delta":"Hal","sequence_number":2})
    )]);
    let (error, _) = error_for(ProviderKind::Responses, true, stream_response(cut)).await;
    assert_eq!(error.kind(), "transient", "{error:?}");
    assert!(error.to_string().contains("response.completed"), "{error}");
    let overflow = sse(&[format!(
        "event: error\ndata: {}",
        json!({"type":"error","sequence_number":2,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}})
    )]);
    let (error, _) = error_for(ProviderKind::Responses, true, stream_response(overflow)).await;
    assert_eq!(error.kind(), "context_overflow", "{error:?}");

    // A chunk that is not JSON is malformed; streamed arguments that are not JSON are kept as
    // sent, for the tool to refuse.
    let garbage = sse(&["data: {not json".to_string(), "data: [DONE]".to_string()]);
    let (error, _) = error_for(ProviderKind::OpenAi, true, stream_response(garbage)).await;
    assert_eq!(error.kind(), "malformed_reply", "{error:?}");
    let bad_arguments = sse(&[
        data(
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"execute","arguments":"{\"a\":"}}]}}]}),
        ),
        "data: [DONE]".to_string(),
    ]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(stream_response(bad_arguments))
        .mount(&server)
        .await;
    let reply = openai(&server, true)
        .call(&simple_request())
        .await
        .expect("a reply");
    let call = reply.message.tool_calls().next().expect("a call");
    assert_eq!(
        (call.id.as_str(), &call.arguments),
        ("c1", &json!("{\"a\":"))
    );

    // A line over the decoder's bound.
    let huge = format!(
        "data: {}\n\n",
        "x".repeat(ctxbed_providers::limits::SSE_LINE_BYTES_MAX + 10)
    );
    let (error, _) = error_for(ProviderKind::OpenAi, true, stream_response(huge)).await;
    assert_eq!(error.kind(), "malformed_reply", "{error:?}");
    assert_bounded(&error);
}

#[tokio::test]
async fn connection_faults_and_slow_servers_are_typed() {
    // A port nobody listens on: bind, read the port, close.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    drop(listener);
    let provider = provider_with(config(
        ProviderKind::OpenAi,
        &format!("http://127.0.0.1:{port}/v1"),
        false,
    ));
    let error = provider.call(&simple_request()).await.expect_err("refused");
    assert_eq!(error.kind(), "transient", "{error:?}");
    assert!(error.to_string().contains("connect"), "{error}");

    let https = provider_with(config(
        ProviderKind::OpenAi,
        "https://127.0.0.1:1/v1",
        false,
    ));
    let error = https.call(&simple_request()).await.expect_err("no TLS");
    assert_eq!(error.kind(), "rejected", "{error:?}");

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_response(200, "{}").set_delay(Duration::from_millis(500)))
        .mount(&server)
        .await;
    let mut slow = config(ProviderKind::OpenAi, &format!("{}/v1", server.uri()), false);
    slow.request_timeout = Duration::from_millis(100);
    let error = provider_with(slow)
        .call(&simple_request())
        .await
        .expect_err("too slow");
    assert_eq!(
        error,
        ModelError::Timeout {
            after: Duration::from_millis(100)
        }
    );
}

// ---------------------------------------------------------------- retries

fn retrying(server: &MockServer, attempts_max: u32) -> HttpProvider {
    let mut config = config(ProviderKind::OpenAi, &format!("{}/v1", server.uri()), false);
    config.retry.attempts_max = attempts_max;
    provider_with(config)
}

async fn received_count(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .expect("recording on")
        .len()
}

const OK_REPLY: &str = r#"{"choices":[{"message":{"content":"finally"}}]}"#;

#[tokio::test]
async fn transient_faults_are_retried_until_a_reply() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_response(503, r#"{"error":{"message":"busy"}}"#))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(json_response(200, OK_REPLY))
        .mount(&server)
        .await;
    let reply = retrying(&server, 4)
        .call(&simple_request())
        .await
        .expect("a reply after two retries");
    assert_eq!(reply.message.text(), "finally");
    assert_eq!(received_count(&server).await, 3);
}

#[tokio::test]
async fn rate_limits_wait_for_retry_after_then_retry() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            json_response(429, r#"{"error":{"message":"slow down"}}"#)
                .insert_header("retry-after-ms", "30"),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(json_response(200, OK_REPLY))
        .mount(&server)
        .await;
    let started = std::time::Instant::now();
    let reply = retrying(&server, 3)
        .call(&simple_request())
        .await
        .expect("a reply");
    assert_eq!(reply.message.text(), "finally");
    assert!(started.elapsed() >= Duration::from_millis(30));
    assert_eq!(received_count(&server).await, 2);
}

#[tokio::test]
async fn retries_stop_at_the_attempt_bound_and_a_too_long_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_response(502, "<html>bad gateway</html>"))
        .mount(&server)
        .await;
    let error = retrying(&server, 3)
        .call(&simple_request())
        .await
        .expect_err("never succeeds");
    assert_eq!(error.kind(), "transient");
    assert_eq!(received_count(&server).await, 3);

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(json_response(429, "{}").insert_header("retry-after", "3600"))
        .mount(&server)
        .await;
    let error = retrying(&server, 5)
        .call(&simple_request())
        .await
        .expect_err("not waited for");
    assert_eq!(error.kind(), "rate_limited");
    assert_eq!(received_count(&server).await, 1);
}

#[tokio::test]
async fn overflow_pairing_and_rejections_are_never_retried() {
    for (status, body) in [
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 10 tokens. However, your messages resulted in 20 tokens.","code":"context_length_exceeded"}}"#,
        ),
        (
            400,
            r#"{"error":{"message":"messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"}}"#,
        ),
        (401, r#"{"error":{"message":"bad key"}}"#),
        (200, "not json"),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(json_response(status, body))
            .mount(&server)
            .await;
        let error = retrying(&server, 5)
            .call(&simple_request())
            .await
            .expect_err("final");
        assert!(
            !matches!(
                error,
                ModelError::Transient { .. } | ModelError::RateLimited { .. }
            ),
            "{error:?}"
        );
        assert_eq!(received_count(&server).await, 1, "{body}");
    }
}

// ---------------------------------------------------------------- the key

#[tokio::test]
async fn the_key_never_appears_in_debug_output_or_errors() {
    let server = MockServer::start().await;
    let echo = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}. You can find your API key at the dashboard.","code":"invalid_api_key"}}}}"#
    );
    Mock::given(method("POST"))
        .respond_with(json_response(401, &echo))
        .mount(&server)
        .await;
    for provider in [openai(&server, false), anthropic(&server, true)] {
        let error = provider.call(&simple_request()).await.expect_err("401");
        assert_eq!(error.kind(), "rejected");
        for shown in [
            format!("{provider:?}"),
            format!("{:?}", provider.config()),
            format!("{error:?}"),
            error.to_string(),
        ] {
            assert!(!shown.contains(KEY), "key shown in: {shown}");
        }
        assert!(format!("{error:?}").contains("<redacted>"));
    }
    assert_eq!(format!("{:?}", ApiKey::new(KEY)), "ApiKey(<redacted>)");
    // The key went out, in the header only.
    let requests = server.received_requests().await.expect("recording on");
    assert_eq!(
        requests[0]
            .headers
            .get("authorization")
            .map(|v| v.to_str().ok()),
        Some(Some(format!("Bearer {KEY}").as_str()))
    );
    assert!(!String::from_utf8_lossy(&requests[0].body).contains(KEY));
}

#[test]
fn a_missing_key_variable_is_named_without_a_value() {
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, "http://127.0.0.1:1/v1", "m");
    config.api_key_env = Some("CTXBED_TEST_VARIABLE_THAT_IS_NEVER_SET".into());
    let error = HttpProvider::from_env(config).expect_err("unset");
    assert!(
        error
            .to_string()
            .contains("CTXBED_TEST_VARIABLE_THAT_IS_NEVER_SET")
    );
    let bad = ProviderConfig::new(ProviderKind::OpenAi, "localhost:8080", "m");
    assert!(HttpProvider::from_env(bad).is_err());
}

// ---------------------------------------------------------------- record and replay

const RECORD_SCENARIO: &str = r#"description = "One tool call, then a reply"
seed = 5

[agent]
model = "placeholder"
sys_prompt = "Investigate and fix."

[[tools]]
name = "execute"
description = "Run a shell command."
parameters = { type = "object", properties = { command = { type = "string" } }, required = ["command"] }
text = "test result: ok. 12 passed"

[[steps]]
user = "alice"
session = "s1"
input = "Check that the export fix works."

[[steps]]
user = "alice"
session = "s1"
input = "And the import?"
"#;

const PLACEHOLDER_MOCK: &str = "window = 8000\n[[turns]]\nreply = \"unused\"\n";

/// A suite holding the record scenario and a placeholder mock model, and where the recording
/// goes.
struct RecordSuite {
    root: tempfile::TempDir,
    scenario: std::path::PathBuf,
    recorded: std::path::PathBuf,
}

impl RecordSuite {
    fn new() -> Self {
        let root = tempfile::tempdir().expect("temporary directory");
        std::fs::create_dir_all(root.path().join("scenarios")).expect("mkdir");
        std::fs::create_dir_all(root.path().join("mock-models")).expect("mkdir");
        let scenario = root.path().join("scenarios/record-me.toml");
        std::fs::write(&scenario, RECORD_SCENARIO).expect("write");
        std::fs::write(
            root.path().join("mock-models/placeholder.toml"),
            PLACEHOLDER_MOCK,
        )
        .expect("write");
        let recorded = root.path().join("mock-models/recorded.toml");
        RecordSuite {
            root,
            scenario,
            recorded,
        }
    }

    /// `ctxbed record` on the scenario against `base_url`, with `extra` arguments.
    fn record(&self, base_url: &str, extra: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_ctxbed"));
        command
            .arg("record")
            .arg(&self.scenario)
            .args(["--provider", "openai", "--model", "test-model"])
            .args(["--base-url", base_url])
            .args(extra)
            .arg("-o")
            .arg(&self.recorded);
        command
    }
}

/// Runs `ctxbed record` against `base_url`; returns the exit status, standard error and
/// whether the output file exists.
fn record_against(base_url: &str) -> (std::process::ExitStatus, String, bool) {
    let suite = RecordSuite::new();
    let output = suite.record(base_url, &[]).output().expect("ctxbed runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status, stderr, suite.recorded.exists())
}

#[test]
fn record_against_a_closed_port_fails_and_writes_nothing() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    for url in [
        format!("http://127.0.0.1:{port}/v1"),
        format!("https://127.0.0.1:{port}/v1"),
    ] {
        let (status, stderr, written) = record_against(&url);
        assert!(!status.success(), "{url}: {stderr}");
        assert!(!written, "{url}: a file was written");
        assert!(
            stderr.contains("got no answer from the server"),
            "{url}: {stderr}"
        );
        assert!(stderr.contains("nothing was recorded"), "{url}: {stderr}");
    }
}

#[test]
fn record_writes_a_mock_model_that_replays_under_the_runner() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(MockServer::start());
    let tool_call = json!({"choices":[{"message":{"content":"Running the tests.","tool_calls":[
        {"id":"call_rec1","type":"function","function":{"name":"execute","arguments":"{\"command\":\"cargo test\"}"}}]}}]});
    let overflow = r#"{"error":{"message":"This model's maximum context length is 300 tokens. However, your messages resulted in 412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    runtime.block_on(async {
        Mock::given(method("POST"))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(
                json_response(200, &tool_call.to_string())
                    .set_delay(std::time::Duration::from_millis(20)),
            )
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(json_response(
                200,
                r#"{"choices":[{"message":{"content":"All 12 tests pass."},"finish_reason":"stop"}]}"#,
            ))
            .up_to_n_times(1)
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(json_response(400, overflow))
            .with_priority(3)
            .mount(&server)
            .await;
    });

    let suite = RecordSuite::new();
    let (root, recorded) = (&suite.root, &suite.recorded);
    let output = suite
        .record(
            &format!("{}/v1", server.uri()),
            &["--no-stream", "--api-key-env", "CTXBED_RECORD_TEST_KEY"],
        )
        .env("CTXBED_RECORD_TEST_KEY", KEY)
        .output()
        .expect("ctxbed runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let text = std::fs::read_to_string(recorded).expect("recorded file");
    // Every request the server received is one recorded turn: two replies, then the overflow
    // answer to each request of step 2 (how many depends on the agent's overflow recovery).
    let received = runtime.block_on(received_count(&server));
    assert!(received >= 3, "{received}");
    assert!(
        stdout.contains(&format!(
            "recorded {received} turn(s), {} of them errors",
            received - 2
        )),
        "{stdout}\n{text}"
    );
    assert_eq!(text.matches("[[turns]]").count(), received, "{text}");
    // Each turn keeps the time its answer took: at least the server's 20 ms delay on the first.
    let first_latency: u64 = text
        .lines()
        .find_map(|line| line.strip_prefix("latency_ms = "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no latency recorded:\n{text}"));
    assert!(first_latency >= 20, "{first_latency} ms\n{text}");
    for shown in [&stdout, &stderr, &text.as_str().into()] {
        assert!(!shown.contains(KEY), "key shown in: {shown}");
    }

    // The recorded file replays: the same scenario pointed at it, under the simulated runner.
    let replay_path = root.path().join("scenarios/replay.toml");
    std::fs::write(
        &replay_path,
        RECORD_SCENARIO.replace("model = \"placeholder\"", "model = \"recorded\""),
    )
    .expect("write");
    let scenario = ctxbed::scenario::format::file::load(&replay_path).unwrap_or_else(|problems| {
        panic!(
            "{}\n{text}",
            problems.iter().map(ToString::to_string).collect::<String>()
        )
    });
    let replayed = ctxbed::scenario::check::outcome::run(&scenario).expect("replay runs");
    let trace = &replayed.text;
    assert!(trace.contains("Running the tests."), "{trace}");
    assert!(trace.contains("call_rec1"), "{trace}");
    assert!(trace.contains("All 12 tests pass."), "{trace}");
    assert!(trace.contains("context_overflow"), "{trace}");
    // The replay asked exactly as many times as the live run: no turn left over or missing.
    assert!(!trace.contains("script_exhausted"), "{trace}");
    let replay_requests: usize = replayed
        .trace
        .steps
        .iter()
        .map(|step| step.requests.len())
        .sum();
    assert_eq!(replay_requests, received, "{trace}");
    // Deterministic: a second replay gives the same bytes.
    let again = ctxbed::scenario::check::outcome::run(&scenario).expect("replay runs");
    assert_eq!(again.text, replayed.text);
}

const RETRY_SCENARIO: &str = r#"description = "A transient provider fault is retried inside the provider: one preparation, one source load"
seed = 9

[agent]
model = "placeholder"

[[sources]]
name = "ci"
blocks = [{ id = "pipeline", kind = "runtime", text = "Pipeline run {load} is green", revision = "run-{load}" }]

[[steps]]
input = "Is the pipeline green?"

[[expect]]
step = 1
reply = "Green."
model_calls = 1
source_loads = { "ci" = 1 }
"#;

/// SPEC R37: a retry inside the provider is not a new preparation and reloads no source.
#[test]
fn provider_retries_do_not_prepare_again_or_reload_sources() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(json_response(503, r#"{"error":{"message":"busy"}}"#))
            .up_to_n_times(2)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .respond_with(json_response(
                200,
                r#"{"choices":[{"message":{"content":"Green."}}]}"#,
            ))
            .mount(&server)
            .await;
        server
    });
    let root = tempfile::tempdir().expect("temporary directory");
    std::fs::create_dir_all(root.path().join("scenarios")).expect("mkdir");
    std::fs::create_dir_all(root.path().join("mock-models")).expect("mkdir");
    let scenario_path = root.path().join("scenarios/retry.toml");
    std::fs::write(&scenario_path, RETRY_SCENARIO).expect("write");
    std::fs::write(
        root.path().join("mock-models/placeholder.toml"),
        PLACEHOLDER_MOCK,
    )
    .expect("write");
    let scenario = ctxbed::scenario::format::file::load(&scenario_path).expect("valid scenario");

    let mut config = config(ProviderKind::OpenAi, &format!("{}/v1", server.uri()), false);
    config.retry.attempts_max = 4;
    let provider = Arc::new(provider_with(config));
    let recorder = Arc::new(ctxbed_sim::recording::RecordingModel::new(provider));
    let output = ctxbed::scenario::check::outcome::run_live(&scenario, recorder).expect("runs");
    assert!(output.expectations_passed(), "{}", output.text);
    assert_eq!(runtime.block_on(received_count(&server)), 3);
}

/// The TLS build's transport (reqwest) runs the same provider code; checked over plain HTTP,
/// since no HTTPS server is reachable from a test.
#[cfg(feature = "tls")]
#[tokio::test]
async fn the_reqwest_transport_carries_the_same_streams() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(stream_response(openai_stream_body()))
        .mount(&server)
        .await;
    let provider = HttpProvider::new(
        config(ProviderKind::OpenAi, &format!("{}/v1", server.uri()), true),
        Some(ApiKey::new(KEY)),
        Arc::new(ctxbed_providers::transport::ReqwestTransport::default()),
    )
    .expect("valid configuration");
    let reply = provider.call(&simple_request()).await.expect("a reply");
    assert_eq!(reply.message.parts, expected_stream_reply());
}
