//! Images a user attaches go to each API as its own image part, after the text, in order; a
//! message without one is sent as before (its text as a string).

use ctxbed_harness::image::Image;
use ctxbed_harness::message::{Message, UserInput};
use ctxbed_harness::model::{ModelRequest, Purpose};
use ctxbed_providers::{MaxTokensField, ProviderKind, WireOptions, anthropic, openai, responses};
use serde_json::{Value, json};

/// The header of a 1024 x 768 PNG: all the mock and the pricing read.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAABAAAAAMA";

fn request(kind: ProviderKind) -> ModelRequest {
    let image = Image::from_base64("image/png", PNG, kind.image_pricing()).expect("a PNG header");
    let input = UserInput::from("What does this show?").with_image(image);
    ModelRequest {
        call_id: String::new(),
        purpose: Purpose::Reasoning,
        messages: vec![
            Message::user("u1", "Hello"),
            Message::user_input("u2", input),
        ]
        .into(),
        tools: Vec::new().into(),
        max_output_tokens: Some(64),
    }
}

fn options() -> WireOptions {
    WireOptions {
        model: "m".into(),
        stream: false,
        max_tokens_field: MaxTokensField::MaxTokens,
        max_output_tokens: Some(64),
        thinking_budget: None,
    }
}

fn last_content(messages: &Value) -> &Value {
    &messages
        .as_array()
        .and_then(|all| all.last())
        .expect("a message")["content"]
}

#[test]
fn images_are_priced_as_each_api_counts_them() {
    let openai = Image::from_base64("image/png", PNG, ProviderKind::OpenAi.image_pricing());
    let anthropic = Image::from_base64("image/png", PNG, ProviderKind::Anthropic.image_pricing());
    // 1024 x 768: already 768 on its shorter side, 2 x 2 tiles; 786,432 pixels / 750.
    assert_eq!(openai.map(|image| image.tokens), Ok(765));
    assert_eq!(anthropic.map(|image| image.tokens), Ok(1049));
}

#[test]
fn chat_completions_sends_an_image_url_part_with_a_data_url() {
    let body = openai::request_body(&request(ProviderKind::OpenAi), &options());
    assert_eq!(body["messages"][0]["content"], json!("Hello"));
    assert_eq!(
        last_content(&body["messages"]),
        &json!([
            {"type": "text", "text": "What does this show?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
        ])
    );
}

#[test]
fn responses_sends_an_input_image_item() {
    let body = responses::request_body(&request(ProviderKind::Responses), &options());
    assert_eq!(body["input"][0]["content"], json!("Hello"));
    assert_eq!(
        last_content(&body["input"]),
        &json!([
            {"type": "input_text", "text": "What does this show?"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}"), "detail": "auto"},
        ])
    );
}

#[test]
fn messages_sends_an_image_block_with_a_base64_source() {
    let body = anthropic::request_body(&request(ProviderKind::Anthropic), &options());
    // Two user messages in a row merge into one, as Anthropic's alternation requires.
    assert_eq!(
        last_content(&body["messages"]),
        &json!([
            {"type": "text", "text": "Hello"},
            {"type": "text", "text": "What does this show?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ])
    );
}
