// Length: unit tests only (the rule counts code before its tests); the Responses API's are in
// tests/responses.rs.
//! Unit tests of the wire formats and the host's answers.

use super::*;
use crate::mock::{MockScript, MockTurn, ScriptedCall, TurnAction};
use ctxbed_harness::message::{Message, Role};
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::model::{ModelErrorKind, ModelInfo, Usage};
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime")
}

fn host(imitates: Provider, turns: Vec<MockTurn>, options: HostOptions) -> ProviderHost {
    let mut script = MockScript::new(
        ModelInfo {
            name: "wire".into(),
            context_window: Some(2_000),
            max_output_tokens: None,
        },
        turns,
    );
    script.imitates = imitates;
    ProviderHost::with_options(MockModel::new(script), options)
}

fn body_text(response: http::Response<HostBody>) -> String {
    use http_body_util::BodyExt;
    runtime().block_on(async {
        let bytes = response
            .into_body()
            .collect()
            .await
            .map(|body| body.to_bytes())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

#[test]
fn anthropic_request_reads_system_tool_use_and_tool_results_in_order() {
    let body = json!({
        "model": "wire", "max_tokens": 100,
        "system": [{"type": "text", "text": "Be brief."}],
        "tools": [{"name": "read_log", "description": "Reads.", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_log", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "read_log", "input": {"path": "b"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "one"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "two"}], "is_error": true},
                {"type": "text", "text": "And?"}]}
        ]
    });
    let request = anthropic::parse_request(&body);
    let roles: Vec<Role> = request.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::User
        ]
    );
    assert_eq!(request.messages[0].text(), "Be brief.");
    let calls: Vec<_> = request.messages[2]
        .tool_calls()
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(calls, ["toolu_1", "toolu_2"]);
    let ContentPart::ToolResult(second) = &request.messages[4].parts[0] else {
        panic!("a tool result: {:?}", request.messages[4]);
    };
    assert_eq!(second.call_id, "toolu_2");
    assert_eq!(second.tool_name, "read_log");
    assert!(second.is_error);
    assert_eq!(second.text(), "two");
    assert_eq!(request.messages[5].text(), "And?");
    assert_eq!(request.tools[0].name, "read_log");
    assert_eq!(request.max_output_tokens, Some(100));
    assert!(ctxbed_harness::context::pairs::find_pairing_problem(&request.messages).is_none());
}

#[test]
fn openai_content_given_as_parts_is_counted_as_its_text() {
    let as_string = json!({"messages": [{"role": "user", "content": "alpha beta"}]});
    let as_parts = json!({"messages": [
        {"role": "developer", "content": [{"type": "text", "text": "rules"}]},
        {"role": "user", "content": [{"type": "text", "text": "alpha"}, {"type": "text", "text": "beta"}]}]});
    assert_eq!(
        openai::parse_request(&as_string).messages[0].text(),
        "alpha beta"
    );
    let parsed = openai::parse_request(&as_parts);
    assert_eq!(parsed.messages[0].role, Role::System);
    assert_eq!(parsed.messages[1].text(), "alpha\nbeta");
}

fn reply_with_call() -> ModelReply {
    let message = Message::new(
        "",
        Role::Assistant,
        vec![
            ContentPart::text("Checking the log."),
            ContentPart::tool_call("toolu_0001", "read_log", json!({"path": "build.log"})),
        ],
    );
    ModelReply {
        message,
        usage: Some(Usage {
            input_tokens: 120,
            output_tokens: 30,
            ..Usage::default()
        }),
    }
}

#[test]
fn anthropic_stream_reassembles_to_the_whole_message() {
    let reply = reply_with_call();
    let whole = anthropic::message(&reply, "wire", 7);
    let events: Vec<String> = anthropic::stream_events(&reply, "wire", 7).collect();
    let mut text = String::new();
    let mut input = String::new();
    let mut names = Vec::new();
    for event in &events {
        let (name, data) = event
            .trim_end()
            .split_once('\n')
            .expect("an event line and a data line");
        let data: Value = serde_json::from_str(data.trim_start_matches("data: ")).expect("JSON");
        assert_eq!(
            name,
            format!("event: {}", data["type"].as_str().unwrap_or_default())
        );
        names.push(data["type"].as_str().unwrap_or_default().to_string());
        match data["delta"]["type"].as_str() {
            Some("text_delta") => text.push_str(data["delta"]["text"].as_str().unwrap_or_default()),
            Some("input_json_delta") => {
                input.push_str(data["delta"]["partial_json"].as_str().unwrap_or_default())
            }
            _ => {}
        }
        if data["type"] == "message_delta" {
            assert_eq!(data["delta"]["stop_reason"], "tool_use");
            assert_eq!(data["usage"]["output_tokens"], 30);
        }
    }
    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert_eq!(names.last().map(String::as_str), Some("message_stop"));
    assert_eq!(
        text,
        whole["content"][0]["text"].as_str().unwrap_or_default()
    );
    let input: Value = serde_json::from_str(&input).expect("the input pieces join to JSON");
    assert_eq!(input, whole["content"][1]["input"]);
    assert_eq!(whole["id"], "msg_0007");
    assert_eq!(whole["usage"]["input_tokens"], 120);
}

#[test]
fn openai_usage_can_be_left_out_whole_and_streamed() {
    let reply = reply_with_call();
    assert!(
        openai::completion(&reply, "wire", 1, true)
            .get("usage")
            .is_some()
    );
    assert!(
        openai::completion(&reply, "wire", 1, false)
            .get("usage")
            .is_none()
    );
    let with: Vec<String> = openai::stream_events(&reply, "wire", 1, true).collect();
    let without: Vec<String> = openai::stream_events(&reply, "wire", 1, false).collect();
    assert_eq!(with.len(), without.len() + 1);
    assert!(with.iter().any(|e| e.contains("\"usage\"")));
    assert!(!without.iter().any(|e| e.contains("\"usage\"")));
    assert!(
        without
            .iter()
            .all(|e| e.starts_with("data: ") && e.ends_with("\n\n"))
    );
    assert_eq!(without.last().map(String::as_str), Some("data: [DONE]\n\n"));
}

#[test]
fn summary_requests_are_recognised_only_without_tools() {
    let mut request = openai::parse_request(&json!({"messages": [
        {"role": "user", "content": "Summarize the conversation so far."}]}));
    assert!(asks_for_summary(&request));
    request.tools = vec![ToolSchemaFor::read_log()].into();
    assert!(!asks_for_summary(&request));
    let plain = openai::parse_request(&json!({"messages": [{"role": "user", "content": "Hello"}]}));
    assert!(!asks_for_summary(&plain));
}

struct ToolSchemaFor;
impl ToolSchemaFor {
    fn read_log() -> ctxbed_harness::tools::ToolSchema {
        ctxbed_harness::tools::ToolSchema {
            name: "read_log".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }
    }
}

#[test]
fn an_over_window_anthropic_request_gets_anthropics_overflow_and_is_recorded() {
    let host = host(
        Provider::Anthropic,
        vec![MockTurn::new(TurnAction::reply("never"))],
        HostOptions::default(),
    );
    let long = "word ".repeat(3_000);
    let body =
        json!({"model": "wire", "max_tokens": 10, "messages": [{"role": "user", "content": long}]});
    let response = runtime().block_on(host.answer("/v1/messages", Some(body.to_string().into())));
    assert_eq!(response.status(), 400);
    let text = body_text(response);
    assert!(text.contains("prompt is too long"), "{text}");
    assert!(text.contains(r#""type":"invalid_request_error""#), "{text}");
    let exchanges = host.exchanges();
    assert_eq!(exchanges.len(), 1);
    assert_eq!(
        exchanges[0].outcome,
        Outcome::Error(ModelErrorKind::ContextOverflow)
    );
    assert_eq!(exchanges[0].api, Api::Anthropic);
    assert!(exchanges[0].input_tokens.unwrap_or(0) > 2_000);
}

#[test]
fn a_rate_limit_carries_retry_after_and_the_imitated_envelope() {
    let turns = vec![MockTurn::new(TurnAction::Error(
        crate::mock::ScriptedError::RateLimit,
    ))];
    let options = HostOptions {
        retry_after_seconds: 3,
        ..HostOptions::default()
    };
    let host = host(Provider::Anthropic, turns, options);
    let body =
        json!({"model": "wire", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    let response = runtime().block_on(host.answer("/v1/messages", Some(body.to_string().into())));
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
    assert!(body_text(response).contains("rate_limit_error"));
}

#[test]
fn a_reset_fault_answers_nothing_and_is_recorded_as_reset() {
    let turns = vec![MockTurn::new(TurnAction::Reply {
        thinking: None,
        text: None,
        tool_calls: vec![ScriptedCall {
            id: None,
            name: "read_log".into(),
            arguments: json!({}),
        }],
    })];
    let options = HostOptions {
        faults: HostFaults {
            reset_requests: vec![1],
            cut_stream_requests: Vec::new(),
        },
        ..HostOptions::default()
    };
    let host = host(Provider::OpenAi, turns, options);
    let body = json!({"model": "wire", "messages": [{"role": "user", "content": "hi"}], "tools": [read_log()]});
    let _ = runtime().block_on(host.answer("/v1/chat/completions", Some(body.to_string().into())));
    let response =
        runtime().block_on(host.answer("/v1/chat/completions", Some(body.to_string().into())));
    assert_eq!(response.status(), 200);
    let exchanges = host.exchanges();
    assert_eq!(
        (exchanges[0].status, exchanges[0].outcome.as_str()),
        (0, "reset")
    );
    assert_eq!(exchanges[1].outcome, Outcome::ToolCalls);
    assert!(body_text(response).contains(r#""finish_reason":"tool_calls""#));
}

fn read_log() -> Value {
    json!({"type": "function", "function": {"name": "read_log", "parameters": {"type": "object"}}})
}

fn call_turn(path: &str) -> MockTurn {
    MockTurn::new(TurnAction::Reply {
        thinking: None,
        text: None,
        tool_calls: vec![ScriptedCall {
            id: None,
            name: "read_log".into(),
            arguments: json!({ "path": path }),
        }],
    })
}

fn stepped_host(turns: Vec<MockTurn>) -> ProviderHost {
    host(
        Provider::OpenAi,
        turns,
        HostOptions {
            steps: true,
            ..HostOptions::default()
        },
    )
}

/// Sends `body` to an OpenAI host and returns the exchange it recorded.
fn send(host: &ProviderHost, body: &Value) -> (String, Exchange) {
    let mut body = body.clone();
    body["model"] = "wire".into();
    let response =
        runtime().block_on(host.answer("/v1/chat/completions", Some(body.to_string().into())));
    let text = body_text(response);
    let exchange = host.exchanges().pop().expect("an exchange");
    (text, exchange)
}

const SYSTEM: &str = "You are a build engineer.";

/// The three summariser shapes real harnesses use, over a conversation of one step.
fn summariser_requests(history: &[Value]) -> Vec<Value> {
    let transcript = "user: Why did build 1 fail?\nassistant: The linker ran out of memory.";
    let mut in_last_turn = history.to_vec();
    in_last_turn.push(json!({"role": "user", "content": "Write a brief recap of the conversation so far, in five lines."}));
    vec![
        // The instruction in the system prompt, the history as a plain transcript.
        json!({"messages": [
            {"role": "system", "content": "You compress conversations for a coding agent. Keep decisions and file names."},
            {"role": "user", "content": transcript}]}),
        // The history as messages, the instruction in the last user turn.
        json!({"messages": in_last_turn}),
        // The history wrapped in the harness's own tags.
        json!({"messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": format!("<conversation>\n{transcript}\n</conversation>\nRecap the above.")}]}),
    ]
}

#[test]
fn side_requests_are_told_by_structure_whatever_their_wording() {
    for shape in 0..3 {
        let host = stepped_host(vec![
            call_turn("build-1.log"),
            MockTurn::new(TurnAction::reply("Step 1: the linker ran out of memory.")),
            MockTurn::new(TurnAction::reply("Step 2: the same.")),
        ]);
        host.begin_step(1, "Why did build 1 fail?");
        let user = json!({"role": "user", "content": "Why did build 1 fail?"});
        let system = json!({"role": "system", "content": SYSTEM});
        let first = json!({"messages": [system, user], "tools": [read_log()]});
        let (_, exchange) = send(&host, &first);
        assert!(
            !exchange.side && exchange.outcome == Outcome::ToolCalls,
            "{exchange:?}"
        );
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0001", "type": "function", "function": {"name": "read_log", "arguments": "{\"path\":\"build-1.log\"}"}}]});
        let result = json!({"role": "tool", "tool_call_id": "call_0001", "content": "signal 9"});
        let history = vec![system.clone(), user.clone(), call, result];
        // A summary in the middle of the step, in this shape: a side request, answered by the
        // summariser, using no turn.
        let side = &summariser_requests(&history)[shape];
        let (text, exchange) = send(&host, side);
        assert!(exchange.side, "shape {shape}: {exchange:?}");
        assert!(text.contains("Summary of"), "shape {shape}: {text}");
        // The step goes on where it was: the result of its call gets the step's reply.
        let next = json!({"messages": history, "tools": [read_log()]});
        let (text, exchange) = send(&host, &next);
        assert!(!exchange.side, "shape {shape}: {exchange:?}");
        assert!(text.contains("Step 1: the linker"), "shape {shape}: {text}");
    }
}

#[test]
fn a_continuation_whose_turn_was_rewritten_is_main_loop_when_it_offers_the_steps_tools() {
    let host = stepped_host(vec![
        call_turn("build-1.log"),
        MockTurn::new(TurnAction::reply("Step 1: the linker ran out of memory.")),
    ]);
    host.begin_step(1, "Why did build 1 fail?");
    let system = json!({"role": "system", "content": SYSTEM});
    let user = json!({"role": "user", "content": "Why did build 1 fail?"});
    let (_, first) = send(
        &host,
        &json!({"messages": [system, user], "tools": [read_log()]}),
    );
    let answer = first.answer.expect("a delivered reply is recorded");
    assert_eq!(answer.tool_calls().count(), 1);
    // The harness's compaction replaced the input, the call and its result with a summary and
    // a reminder, and its loop goes on with the step's tools offered: the step's next turn.
    let rewritten = json!({"messages": [
        system,
        {"role": "user", "content": "Summary of the work so far: build-1.log was read."},
        {"role": "user", "content": "Continue with the task."}],
        "tools": [read_log()]});
    let (text, exchange) = send(&host, &rewritten);
    assert!(!exchange.side, "{exchange:?}");
    assert!(text.contains("Step 1: the linker"), "{text}");
    // Without tools, the same request is a side request (a summariser's).
    let host = stepped_host(vec![call_turn("build-1.log")]);
    host.begin_step(1, "Why did build 1 fail?");
    let _ = send(
        &host,
        &json!({"messages": [user_turn()], "tools": [read_log()]}),
    );
    let mut no_tools = rewritten.clone();
    no_tools.as_object_mut().map(|o| o.remove("tools"));
    let (_, exchange) = send(&host, &no_tools);
    assert!(exchange.side, "{exchange:?}");
}

fn user_turn() -> Value {
    json!({"role": "user", "content": "Why did build 1 fail?"})
}

#[test]
fn steps_take_their_own_turns_whatever_earlier_steps_sent() {
    let host = stepped_host(vec![
        call_turn("build-1.log"),
        MockTurn::new(TurnAction::reply("Step 1 done.")),
        call_turn("build-2.log"),
        MockTurn::new(TurnAction::reply("Step 2 done.")),
    ]);
    assert_eq!(host.model().scripted_steps(), 2);
    // Step 1 fails before its tool round: one request, then the harness gives up.
    host.begin_step(1, "One?");
    let one = json!({"messages": [{"role": "user", "content": "One?"}], "tools": [read_log()]});
    let _ = send(&host, &one);
    // Step 2 still gets step 2's turns.
    host.begin_step(2, "Two?");
    let two = json!({"messages": [{"role": "user", "content": "Two?"}], "tools": [read_log()]});
    let (text, exchange) = send(&host, &two);
    assert!(text.contains("build-2.log"), "{text}");
    assert_eq!(exchange.step, Some(2));
    // Anthropic-style merged turns: the input as a line of the last user turn still counts.
    let merged =
        json!({"messages": [{"role": "user", "content": "One?\n\nTwo?"}], "tools": [read_log()]});
    let (text, _) = send(&host, &merged);
    assert!(text.contains("Step 2 done."), "{text}");
    // Past its turns, a step gets a 500 that names the step.
    let (text, _) = send(&host, &two);
    assert!(text.contains("step 2"), "{text}");
}

#[test]
fn requests_before_the_first_step_are_side_requests() {
    let host = stepped_host(vec![MockTurn::new(TurnAction::reply("Step 1."))]);
    let (_, exchange) = send(
        &host,
        &json!({"messages": [{"role": "user", "content": "warm up"}]}),
    );
    assert!(exchange.side);
    assert_eq!(exchange.step, Some(0));
    host.begin_step(1, "Go.");
    let (text, _) = send(
        &host,
        &json!({"messages": [{"role": "user", "content": "Go."}]}),
    );
    assert!(text.contains("Step 1."), "the warm-up used no turn: {text}");
}

#[test]
fn a_tool_call_is_made_only_where_the_tool_was_offered() {
    let host = stepped_host(vec![call_turn("a.log"), call_turn("b.log")]);
    host.begin_step(1, "Go.");
    // No tools offered: the scripted call is answered as text, and the exchange says why.
    let (text, exchange) = send(
        &host,
        &json!({"messages": [{"role": "user", "content": "Go."}]}),
    );
    assert_eq!(exchange.outcome, Outcome::Reply);
    assert!(text.contains("the request offered no tools"), "{text}");
    assert!(
        exchange
            .note
            .as_deref()
            .is_some_and(|n| n.contains("read_log"))
    );
    // Another tool offered: not that one either.
    let other =
        json!({"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}});
    let (_, exchange) = send(
        &host,
        &json!({"messages": [{"role": "user", "content": "Go."}], "tools": [other]}),
    );
    assert_eq!(exchange.outcome, Outcome::Reply);
    assert!(
        exchange
            .note
            .as_deref()
            .is_some_and(|n| n.contains("did not offer"))
    );
}

#[test]
fn a_cli_rows_scripted_call_is_made_through_its_own_shell() {
    let host = stepped_host(vec![call_turn("a.log"), call_turn("b.log")]);
    host.map_calls_to_own_tools(std::collections::BTreeMap::from([(
        "read_log".to_string(),
        1,
    )]));
    host.begin_step(1, "Go.");
    let command = json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]});
    let bash = json!({"type": "function", "function": {"name": "bash", "description": "Execute a bash command.", "parameters": command}});
    let body = json!({"messages": [{"role": "user", "content": "Go."}], "tools": [bash]});
    let (_, exchange) = send(&host, &body);
    assert_eq!(exchange.outcome, Outcome::ToolCalls);
    let answer = exchange.answer.expect("an answer");
    let call = answer.tool_calls().next().expect("a call");
    assert_eq!(call.name, "bash");
    assert_eq!(
        call.arguments,
        json!({"command": "cat ctxbed-tools/read_log-1.txt"})
    );
    let note = exchange.note.expect("a note");
    assert!(
        note.contains("read_log as bash ctxbed-tools/read_log-1.txt"),
        "{note}"
    );
    // The second call stays on the last scripted result; a request without a shell or a
    // read-file tool says why the call cannot be made.
    let (_, exchange) = send(
        &host,
        &json!({"messages": [{"role": "user", "content": "Go."}], "tools": [{"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}]}),
    );
    let note = exchange.note.expect("a note");
    assert!(
        note.contains("no offered tool is a shell or reads a file"),
        "{note}"
    );
}

#[test]
fn a_cut_stream_gives_its_turn_back_to_the_retry() {
    let host = host(
        Provider::OpenAi,
        vec![MockTurn::new(TurnAction::reply("Step 1."))],
        HostOptions {
            steps: true,
            faults: HostFaults {
                reset_requests: Vec::new(),
                cut_stream_requests: vec![1],
            },
            ..HostOptions::default()
        },
    );
    host.begin_step(1, "Go.");
    let body = json!({"messages": [{"role": "user", "content": "Go."}], "stream": true});
    let (_, exchange) = send(&host, &body);
    assert_eq!(exchange.outcome, Outcome::CutStream);
    let (text, exchange) = send(&host, &body);
    assert_eq!(exchange.outcome, Outcome::Reply);
    assert!(text.contains("Step 1."), "{text}");
}

#[test]
fn side_requests_take_the_turns_scripted_for_them_then_the_summariser() {
    use crate::mock::{ScriptedError, TurnCondition};
    let failing_summary = MockTurn {
        when: TurnCondition {
            side: Some(true),
            ..TurnCondition::default()
        },
        ..MockTurn::new(TurnAction::Error(ScriptedError::Transient(503)))
    };
    let host = stepped_host(vec![
        failing_summary,
        MockTurn::new(TurnAction::reply("Step 1.")),
    ]);
    assert_eq!(
        host.model().scripted_steps(),
        1,
        "a side turn belongs to no step"
    );
    host.begin_step(1, "Go.");
    let recap = json!({"messages": [{"role": "user", "content": "Recap, please."}]});
    let (_, exchange) = send(&host, &recap);
    assert!(exchange.side);
    assert_eq!(exchange.status, 503, "the scripted side turn");
    let (text, _) = send(&host, &recap);
    assert!(text.contains("Summary of"), "past its side turns: {text}");
    let (text, _) = send(
        &host,
        &json!({"messages": [{"role": "user", "content": "Go."}]}),
    );
    assert!(
        text.contains("Step 1."),
        "the step's own turn is still there: {text}"
    );
}

#[test]
fn a_request_the_provider_would_refuse_is_refused_in_its_words_and_uses_no_turn() {
    let host = host(
        Provider::OpenAi,
        vec![MockTurn::new(TurnAction::reply("The only turn."))],
        HostOptions::default(),
    );
    let refused = [
        json!([]),
        json!({}),
        json!({"model": "wire", "messages": "hi"}),
        json!({"model": "wire", "messages": null}),
        json!({"model": "wire", "messages": [{"role": "user", "content": "hi"}], "max_tokens": -1}),
        json!({"model": "wire", "messages": [{"role": "user", "content": "hi"}], "max_tokens": "100"}),
        json!({"model": "wire", "messages": [{"role": "user", "content": "hi"}], "stream": "yes"}),
        json!({"model": "wire", "messages": [{"role": "user", "content": "hi"}], "tools": "x"}),
    ];
    for body in &refused {
        let response =
            runtime().block_on(host.answer("/v1/chat/completions", Some(body.to_string().into())));
        assert_eq!(response.status(), 400, "{body}");
        let text = body_text(response);
        assert!(text.contains(r#""type":"invalid_request_error""#), "{text}");
        let exchange = host.exchanges().pop().expect("an exchange");
        assert_eq!(exchange.outcome, Outcome::InvalidRequest, "{body}");
        assert!(exchange.note.is_some());
    }
    // Anthropic requires the output bound.
    let no_bound = json!({"model": "wire", "messages": [{"role": "user", "content": "hi"}]});
    let response =
        runtime().block_on(host.answer("/v1/messages", Some(no_bound.to_string().into())));
    assert_eq!(response.status(), 400);
    assert!(body_text(response).contains("max_tokens: Field required"));
    // None of them used the script's only turn.
    let (text, exchange) = send(
        &host,
        &json!({"messages": [{"role": "user", "content": "hi"}]}),
    );
    assert_eq!(exchange.outcome, Outcome::Reply);
    assert!(text.contains("The only turn."), "{text}");
}

#[test]
fn the_host_keeps_at_most_its_retention_and_counts_every_outcome() {
    let mut turn = MockTurn::new(TurnAction::reply("Again."));
    turn.times = 5;
    let turns = vec![turn];
    let bounded = host(
        Provider::OpenAi,
        turns.clone(),
        HostOptions {
            retain_exchanges: 2,
            ..HostOptions::default()
        },
    );
    let none = host(
        Provider::OpenAi,
        turns,
        HostOptions {
            retain_exchanges: 0,
            ..HostOptions::default()
        },
    );
    let body = json!({"model": "wire", "messages": [{"role": "user", "content": "hi"}]});
    for host in [&bounded, &none] {
        for _ in 0..3 {
            let _ = runtime()
                .block_on(host.answer("/v1/chat/completions", Some(body.to_string().into())));
        }
        let _ = runtime().block_on(host.answer("/v1/chat/completions", Some("[".into())));
        assert_eq!(host.request_count(), 4);
        assert_eq!(
            host.outcomes(),
            std::collections::BTreeMap::from([("not_json", 1), ("reply", 3)])
        );
    }
    let kept: Vec<u64> = bounded.exchanges().iter().map(|e| e.number).collect();
    assert_eq!(kept, [1, 2], "the first ones are kept");
    assert_eq!(bounded.dropped(), 2, "and the drops are counted");
    assert!(none.exchanges().is_empty());
    assert_eq!(none.dropped(), 0, "keeping none is a choice, not a loss");
}

mod responses;
mod thinking_and_cache;

/// A large body is read and counted off the runtime's worker threads: with one worker, a timer
/// task started beside a request of 1.5 MB fires while the request is still being counted
/// (when it was counted on the worker, the timer waited for the whole count).
#[test]
fn a_large_body_is_counted_off_the_worker_threads() {
    use std::time::{Duration, Instant};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .expect("a multi-thread runtime");
    let host = std::sync::Arc::new(host(
        Provider::OpenAi,
        vec![MockTurn::new(TurnAction::reply("ok"))],
        HostOptions::default(),
    ));
    let text: String = (0..150_000u32)
        .map(|i| format!("{i} worker{} ", i % 89))
        .collect();
    let body = json!({"model": "wire", "messages": [{"role": "user", "content": text}]});
    assert!(body.to_string().len() > 1_000_000);
    let (answered, ticked) = runtime.block_on(async move {
        let request = tokio::spawn(async move {
            let response = host
                .answer("/v1/chat/completions", Some(body.to_string().into()))
                .await;
            (response.status(), Instant::now())
        });
        let tick = tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Instant::now()
        });
        let (status, answered) = request.await.expect("answered");
        // The window is 2,000 tokens: the request overflows, after being counted.
        assert_eq!(status.as_u16(), 400);
        (answered, tick.await.expect("ticked"))
    });
    assert!(
        ticked < answered,
        "the timer fired {:?} after the answer",
        ticked - answered
    );
}
