//! Chat Completions reasoning goes back the way it came: a reply's `reasoning_content` becomes a
//! thinking part, and the assistant message holding it is sent with it in `reasoning_content`
//! (DeepSeek's thinking mode refuses a tool-call turn without it); a message without thinking
//! is sent without the field, as OpenAI expects.

use ctxbed_harness::message::Message;
use ctxbed_harness::model::{ModelRequest, Purpose};
use ctxbed_providers::{MaxTokensField, WireOptions, openai};
use serde_json::Value;

fn body(messages: Vec<Message>) -> Value {
    let request = ModelRequest {
        call_id: String::new(),
        purpose: Purpose::Reasoning,
        messages: messages.into(),
        tools: Vec::new().into(),
        max_output_tokens: Some(64),
    };
    let options = WireOptions {
        model: "m".into(),
        stream: false,
        max_tokens_field: MaxTokensField::MaxTokens,
        max_output_tokens: Some(64),
        thinking_budget: None,
    };
    openai::request_body(&request, &options)
}

#[test]
fn a_replys_reasoning_content_goes_back_on_its_tool_call_message() {
    let reply = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning_content":"Read the log first.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_log","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#;
    let assistant = openai::parse_reply(reply).expect("a reply").message;
    let sent = body(vec![Message::user("u", "Why?"), assistant]);
    let message = &sent["messages"][1];
    assert_eq!(
        message["reasoning_content"], "Read the log first.",
        "{sent}"
    );
    assert_eq!(message["tool_calls"][0]["id"], "call_1", "{sent}");
}

#[test]
fn a_message_without_thinking_has_no_reasoning_field() {
    let reply = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}]}"#;
    let assistant = openai::parse_reply(reply).expect("a reply").message;
    let sent = body(vec![Message::user("u", "Why?"), assistant]);
    let message = sent["messages"][1]
        .as_object()
        .expect("an assistant message");
    assert!(!message.contains_key("reasoning_content"), "{sent}");
    assert_eq!(message["content"], "Done.");
}
