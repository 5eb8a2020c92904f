//! The host speaking Anthropic's extended thinking (signed and redacted blocks, shown only when
//! the request turns thinking on) and both providers' prompt caches, each figure in the usage
//! the API reports, and each refusal read back by the harness's classifier.

use super::*;
use ctxbed_harness::model::classify::classify;

const MESSAGES: &str = "/v1/messages";

fn thinking_turn(redacted: bool) -> MockTurn {
    MockTurn {
        redacted_thinking: redacted,
        ..MockTurn::new(TurnAction::Reply {
            thinking: Some("Read the linker log first.".into()),
            text: None,
            tool_calls: vec![ScriptedCall {
                id: Some("toolu_1".into()),
                name: "read_log".into(),
                arguments: json!({"path": "link.log"}),
            }],
        })
    }
}

fn post(host: &ProviderHost, path: &str, body: &Value) -> (u16, Value) {
    let response = runtime().block_on(host.answer(path, Some(body.to_string().into())));
    let status = response.status().as_u16();
    let text = body_text(response);
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// The question, offering a tool; `max_tokens` leaves room in the test host's 2,000-token window for
/// Anthropic's tool-use system prompt, which the host counts.
fn question(thinking: bool) -> Value {
    let mut body = json!({
        "model": "wire", "max_tokens": 1_200,
        "tools": [{"name": "read_log", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "Why did the build fail?"}],
    });
    if thinking {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": 1_024});
    }
    body
}

/// The question, the assistant turn as handed back, and the tool's result.
fn continued(assistant: Value) -> Value {
    let mut body = question(true);
    body["messages"] = json!([
        {"role": "user", "content": "Why did the build fail?"},
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ld: out of memory"}]},
    ]);
    body
}

#[test]
fn thinking_is_shown_only_when_the_request_turns_it_on_and_then_always() {
    let host = host(
        Provider::Anthropic,
        vec![
            thinking_turn(false),
            MockTurn::new(TurnAction::reply("Done.")),
        ],
        HostOptions::default(),
    );
    let (_, off) = post(&host, MESSAGES, &question(false));
    let kinds: Vec<&str> = off["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|block| block["type"].as_str())
        .collect();
    assert_eq!(kinds, ["tool_use"], "{off}");
    // With thinking on, a turn scripted without thinking still thinks first, signed.
    let (_, on) = post(&host, MESSAGES, &question(true));
    assert_eq!(on["content"][0]["type"], "thinking", "{on}");
    let text = on["content"][0]["thinking"].as_str().unwrap_or_default();
    assert_eq!(text, anthropic::UNSCRIPTED_THINKING);
    assert_eq!(on["content"][0]["signature"], anthropic::signature(text));
}

#[test]
fn redacted_thinking_goes_back_as_sent_and_a_dropped_block_is_refused() {
    let host = host(
        Provider::Anthropic,
        vec![
            thinking_turn(true),
            MockTurn::new(TurnAction::reply("Done.")),
        ],
        HostOptions::default(),
    );
    let (status, first) = post(&host, MESSAGES, &question(true));
    assert_eq!(status, 200);
    let content = first["content"].as_array().cloned().unwrap_or_default();
    assert_eq!(content[0]["type"], "redacted_thinking", "{first}");
    assert!(
        content[0]["data"]
            .as_str()
            .is_some_and(|d| !d.contains("linker"))
    );
    // The call handed back without the block before it is refused in the API's words.
    let (status, refused) = post(&host, MESSAGES, &continued(json!([content[1].clone()])));
    assert_eq!(status, 400);
    let words = refused.to_string();
    assert!(
        words.contains("Expected `thinking` or `redacted_thinking`, but found `tool_use`"),
        "{words}"
    );
    assert_eq!(classify("anthropic", 400, &words).kind(), "rejected");
    let refusal = host.exchanges().last().cloned().expect("an exchange");
    assert_eq!(refusal.refused_rule, Some("reasoning"));
    // Handed back whole, it is answered; its thinking is counted as the text it stands for.
    let (status, answered) = post(&host, MESSAGES, &continued(Value::Array(content)));
    assert_eq!(status, 200, "{answered}");
    let request = host
        .exchanges()
        .last()
        .and_then(|e| e.request.clone())
        .expect("read back");
    assert!(request.messages.iter().any(|m| m.parts.iter().any(
        |p| matches!(p, ContentPart::Thinking { text, .. } if text == "Read the linker log first.")
    )));
}

#[test]
fn anthropic_caches_up_to_its_breakpoints_and_refuses_a_fifth() {
    let host = host(
        Provider::Anthropic,
        vec![MockTurn {
            times: 3,
            ..MockTurn::new(TurnAction::reply("Done."))
        }],
        HostOptions::default(),
    );
    let long = "The build runs in stages and each stage names itself in the log. ".repeat(80);
    let marked = |question: &str| {
        json!({
            "model": "wire", "max_tokens": 100,
            "system": [{"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": question}],
        })
    };
    let (_, first) = post(&host, MESSAGES, &marked("Why did build 1 fail?"));
    let written = first["usage"]["cache_creation_input_tokens"]
        .as_u64()
        .unwrap_or(0);
    assert!(written >= 1_024, "{first}");
    assert_eq!(first["usage"]["cache_read_input_tokens"], 0);
    let (_, second) = post(&host, MESSAGES, &marked("Why did build 2 fail?"));
    assert_eq!(
        second["usage"]["cache_read_input_tokens"].as_u64(),
        Some(written),
        "{second}"
    );
    assert_eq!(second["usage"]["cache_creation_input_tokens"], 0);
    // Input tokens are those after the cached part; the exchange keeps the whole prompt.
    let exchange = host.exchanges().last().cloned().expect("an exchange");
    let uncached = second["usage"]["input_tokens"].as_u64().unwrap_or(0);
    assert_eq!(exchange.input_tokens, Some(uncached + written));
    assert_eq!(exchange.cache.read, written);
    // Five breakpoints are one too many.
    let mut five = marked("Why?");
    let block = json!({"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}});
    five["messages"][0]["content"] = json!([block, block, block, block]);
    let (status, refused) = post(&host, MESSAGES, &five);
    assert_eq!(status, 400);
    assert!(
        refused
            .to_string()
            .contains("A maximum of 4 blocks with cache_control may be provided. Found 5."),
        "{refused}"
    );
}

#[test]
fn openai_reports_cached_tokens_for_a_prefix_it_has_seen() {
    let host = host(
        Provider::OpenAi,
        vec![MockTurn {
            times: 2,
            ..MockTurn::new(TurnAction::reply("Done."))
        }],
        HostOptions::default(),
    );
    let long = "The build runs in stages and each stage names itself in the log. ".repeat(80);
    let body = |question: &str| {
        json!({"model": "wire", "messages": [
            {"role": "system", "content": long},
            {"role": "user", "content": question},
        ]})
    };
    let (_, first) = post(
        &host,
        "/v1/chat/completions",
        &body("Why did build 1 fail?"),
    );
    assert_eq!(
        first["usage"]["prompt_tokens_details"]["cached_tokens"], 0,
        "{first}"
    );
    let (_, second) = post(
        &host,
        "/v1/chat/completions",
        &body("Why did build 2 fail?"),
    );
    let cached = second["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0);
    assert!(cached >= 1_024 && (cached - 1_024) % 128 == 0, "{second}");
    assert!(cached < second["usage"]["prompt_tokens"].as_u64().unwrap_or(0));
}
