//! The host speaking OpenAI's Responses API: overflows whole and streamed, unpaired items,
//! and reasoning items handed back or not, each in the API's words and read back by the
//! harness's classifier.

use super::*;
use ctxbed_harness::model::classify::classify;

const PATH: &str = "/v1/responses";

fn read_log() -> Value {
    json!({"type": "function", "name": "read_log", "parameters": {"type": "object"}})
}

fn thinking_call_turn() -> MockTurn {
    MockTurn::new(TurnAction::Reply {
        thinking: Some("Read the linker log first.".into()),
        text: None,
        tool_calls: vec![ScriptedCall {
            id: None,
            name: "read_log".into(),
            arguments: json!({"path": "link.log"}),
        }],
    })
}

fn post(host: &ProviderHost, body: &Value) -> (u16, String) {
    let response = runtime().block_on(host.answer(PATH, Some(body.to_string().into())));
    let status = response.status().as_u16();
    (status, body_text(response))
}

/// The `data:` objects of a stream's events, by event name.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|frame| {
            let mut lines = frame.lines();
            let name = lines.next()?.strip_prefix("event: ")?.to_string();
            let data = serde_json::from_str(lines.next()?.strip_prefix("data: ")?).ok()?;
            Some((name, data))
        })
        .collect()
}

#[test]
fn an_overflow_is_a_400_whole_and_an_error_event_streamed_and_both_read_as_overflow() {
    let host = host(
        Provider::OpenAi,
        vec![MockTurn::new(TurnAction::reply("never"))],
        HostOptions::default(),
    );
    let long = "word ".repeat(3_000);
    let (status, body) = post(&host, &json!({"model": "wire", "input": long}));
    assert_eq!(status, 400);
    let json: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(json["error"]["code"], "context_length_exceeded");
    assert_eq!(json["error"]["param"], "input");
    assert!(
        classify("openai", 400, &body).kind() == "context_overflow",
        "{body}"
    );

    let (status, body) = post(
        &host,
        &json!({"model": "wire", "input": long, "stream": true}),
    );
    assert_eq!(status, 200);
    let events = events(&body);
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["response.created", "response.in_progress", "error"]);
    let (_, error) = &events[2];
    assert_eq!(error["sequence_number"], 2);
    assert!(
        classify("openai", 200, &error.to_string()).kind() == "context_overflow",
        "{error}"
    );
    let exchanges = host.exchanges();
    assert!(
        exchanges
            .iter()
            .all(|exchange| exchange.api == Api::Responses
                && exchange.outcome == Outcome::Error(ModelErrorKind::ContextOverflow))
    );
}

#[test]
fn unpaired_items_are_refused_in_the_apis_words_and_read_as_pairing() {
    let host = host(
        Provider::OpenAi,
        vec![MockTurn::new(TurnAction::reply("never"))],
        HostOptions::default(),
    );
    let orphan = json!({"model": "wire", "input": [
        {"role": "user", "content": "Why?"},
        {"type": "function_call_output", "call_id": "call_9", "output": "42"},
    ]});
    let (status, body) = post(&host, &orphan);
    assert_eq!(status, 400);
    assert!(
        body.contains("No tool call found for function call output with call_id call_9."),
        "{body}"
    );
    assert_eq!(
        classify("openai", 400, &body).kind(),
        "pairing_rejected",
        "{body}"
    );
    let unanswered = json!({"model": "wire", "input": [
        {"role": "user", "content": "Why?"},
        {"type": "function_call", "call_id": "call_3", "name": "read_log", "arguments": "{}"},
        {"role": "user", "content": "And?"},
    ]});
    let (status, body) = post(&host, &unanswered);
    assert_eq!(status, 400);
    assert!(
        body.contains("No tool output found for function call call_3."),
        "{body}"
    );
    assert_eq!(classify("openai", 400, &body).kind(), "pairing_rejected");
}

#[test]
fn reasoning_goes_out_encrypted_when_asked_and_must_come_back_before_its_call() {
    let host = host(
        Provider::OpenAi,
        vec![
            thinking_call_turn(),
            MockTurn::new(TurnAction::reply("The linker ran out of memory.")),
        ],
        HostOptions::default(),
    );
    let question = json!({"role": "user", "content": "Why did the build fail?"});
    let ask = json!({"model": "wire", "input": [question], "tools": [read_log()],
                     "include": [reasoning::ENCRYPTED_CONTENT], "store": false});
    let (status, body) = post(&host, &ask);
    assert_eq!(status, 200, "{body}");
    let response: Value = serde_json::from_str(&body).expect("JSON");
    let output = response["output"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = output.iter().filter_map(|i| i["type"].as_str()).collect();
    assert_eq!(kinds, ["reasoning", "function_call"]);
    assert_eq!(output[0]["id"], "rs_0001");
    assert_eq!(
        output[0]["encrypted_content"],
        reasoning::encrypted_content("rs_0001")
    );
    assert!(response["usage"]["output_tokens_details"]["reasoning_tokens"].as_u64() > Some(0));
    let result =
        json!({"type": "function_call_output", "call_id": output[1]["call_id"], "output": "oom"});

    // The call handed back without the reasoning before it: refused, and no turn is used.
    let dropped = json!({"model": "wire", "store": false, "tools": [read_log()],
                         "input": [question, output[1], result]});
    let (status, body) = post(&host, &dropped);
    assert_eq!(status, 400);
    let refusal: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        refusal["error"]["message"],
        "Item 'fc_0001_0' of type 'function_call' was provided without its required 'reasoning' item: 'rs_0001'."
    );
    assert_eq!(classify("openai", 400, &body).kind(), "rejected", "{body}");
    assert_eq!(
        host.exchanges().last().map(|e| e.outcome),
        Some(Outcome::InvalidRequest)
    );

    let whole = json!({"model": "wire", "store": false, "tools": [read_log()],
                       "input": [question, output[0], output[1], result]});
    let (status, body) = post(&host, &whole);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("The linker ran out of memory."), "{body}");
    let request = host
        .exchanges()
        .pop()
        .and_then(|e| e.request)
        .expect("a request");
    let assistant = &request.messages[1];
    assert!(
        assistant
            .parts
            .iter()
            .any(|part| matches!(part, ContentPart::Thinking { .. })),
        "the reasoning's summary is read back as the assistant's thinking: {assistant:?}"
    );
}

#[test]
fn streamed_replies_number_every_event_and_carry_the_reasoning_item() {
    let host = host(
        Provider::OpenAi,
        vec![thinking_call_turn()],
        HostOptions::default(),
    );
    let ask = json!({"model": "wire", "input": "Why?", "tools": [read_log()], "stream": true});
    let (status, body) = post(&host, &ask);
    assert_eq!(status, 200);
    let events = events(&body);
    let numbers: Vec<u64> = events
        .iter()
        .filter_map(|(_, data)| data["sequence_number"].as_u64())
        .collect();
    assert_eq!(numbers, (0..events.len() as u64).collect::<Vec<_>>());
    let (last, completed) = events.last().expect("events");
    assert_eq!(last, "response.completed");
    let output = &completed["response"]["output"];
    assert_eq!(output[0]["type"], "reasoning");
    // Not asked for: no encrypted content.
    assert!(output[0].get("encrypted_content").is_none());
    assert_eq!(output[1]["arguments"], r#"{"path":"link.log"}"#);
}

#[test]
fn a_previous_response_is_read_as_the_conversation_it_holds() {
    let host = host(
        Provider::OpenAi,
        vec![
            MockTurn::new(TurnAction::reply("The linker ran out of memory.")),
            MockTurn::new(TurnAction::reply("Still the linker.")),
            MockTurn::new(TurnAction::reply("Unstored.")),
        ],
        HostOptions::default(),
    );
    let (status, first) = post(&host, &json!({"model": "wire", "input": "Why?"}));
    assert_eq!(status, 200, "{first}");
    assert!(first.contains(r#""id":"resp_0001""#), "{first}");
    let next = json!({"model": "wire", "previous_response_id": "resp_0001", "input": "Sure?"});
    let (status, body) = post(&host, &next);
    assert_eq!(status, 200, "{body}");
    let exchange = host.exchanges().pop().expect("an exchange");
    let request = exchange.request.expect("a request");
    let texts: Vec<String> = request.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, ["Why?", "The linker ran out of memory.", "Sure?"]);
    // Counted as the conversation the model reads, not as the short body.
    let alone = json!({"model": "wire", "input": "Sure?", "store": false});
    assert_eq!(post(&host, &alone).0, 200);
    let short = host.exchanges().pop().and_then(|e| e.input_tokens);
    assert!(
        exchange.input_tokens > short,
        "{:?} {short:?}",
        exchange.input_tokens
    );
    // The unstored response is not held; the held one's message cannot come twice.
    let (status, body) = post(
        &host,
        &json!({"model": "wire", "previous_response_id": "resp_0003", "input": "Again?"}),
    );
    assert_eq!(status, 400);
    assert!(
        body.contains("Previous response with id 'resp_0003' not found."),
        "{body}"
    );
    let (status, body) = post(
        &host,
        &json!({"model": "wire", "previous_response_id": "resp_0002",
            "input": [{"type": "item_reference", "id": "msg_0001"}]}),
    );
    assert_eq!(status, 400);
    assert!(
        body.contains("Duplicate item found with id msg_0001."),
        "{body}"
    );
}

#[test]
fn stored_items_are_resolved_by_reference_and_unknown_ones_refused() {
    let host = host(
        Provider::OpenAi,
        vec![
            MockTurn::new(TurnAction::reply("The linker ran out of memory.")),
            MockTurn::new(TurnAction::reply("Still the linker.")),
        ],
        HostOptions::default(),
    );
    let (status, body) = post(&host, &json!({"model": "wire", "input": "Why?"}));
    assert_eq!(status, 200, "{body}");
    let again = json!({"model": "wire", "input": [
        {"role": "user", "content": "Why?"},
        {"type": "item_reference", "id": "msg_0001"},
        {"role": "user", "content": "Sure?"},
    ]});
    let (status, body) = post(&host, &again);
    assert_eq!(status, 200, "{body}");
    let request = host
        .exchanges()
        .pop()
        .and_then(|e| e.request)
        .expect("a request");
    assert_eq!(request.messages[1].text(), "The linker ran out of memory.");
    let unknown = json!({"model": "wire", "input": [{"type": "item_reference", "id": "msg_0042"}]});
    let (status, body) = post(&host, &unknown);
    assert_eq!(status, 400);
    assert!(
        body.contains("Item with id 'msg_0042' not found."),
        "{body}"
    );
    // A response asked not to be stored cannot be referred to.
    let unstored = json!({"model": "wire", "input": "Why?", "store": false});
    let host = self::host(
        Provider::OpenAi,
        vec![MockTurn::new(TurnAction::reply("Unstored."))],
        HostOptions::default(),
    );
    assert_eq!(post(&host, &unstored).0, 200);
    let (status, _) = post(
        &host,
        &json!({"model": "wire", "input": [{"type": "item_reference", "id": "msg_0001"}]}),
    );
    assert_eq!(status, 400);
}

#[test]
fn reasoning_of_an_unstored_response_passed_by_id_is_refused_as_not_persisted() {
    let host = host(
        Provider::OpenAi,
        vec![thinking_call_turn()],
        HostOptions::default(),
    );
    let ask = json!({"model": "wire", "input": "Why?", "tools": [read_log()], "store": false});
    let (status, body) = post(&host, &ask);
    assert_eq!(status, 200, "{body}");
    let response: Value = serde_json::from_str(&body).expect("JSON");
    let call = &response["output"][1];
    let result =
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "oom"});
    let by_id = json!({"type": "reasoning", "id": "rs_0001", "summary": []});
    let back = json!({"model": "wire", "store": false, "tools": [read_log()],
                      "input": [{"role": "user", "content": "Why?"}, by_id, call, result]});
    let (status, body) = post(&host, &back);
    assert_eq!(status, 400);
    assert!(
        body.contains("Item with id 'rs_0001' not found. Items are not persisted when `store` is set to false."),
        "{body}"
    );
}
