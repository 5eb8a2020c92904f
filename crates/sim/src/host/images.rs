//! Images in requests, as each API takes them inline: read from the request's image parts,
//! priced as that provider prices them ([`ctxbed_harness::image`]), and refused in the
//! provider's words when the file cannot be read.
//!
//! - Chat Completions: a user message's `{"type": "image_url", "image_url": {"url":
//!   "data:image/png;base64,…", "detail": …}}` part.
//! - Responses: an `{"type": "input_image", "image_url": "data:…", "detail": …}` part.
//! - Messages: an `{"type": "image", "source": {"type": "base64", "media_type": …, "data":
//!   …}}` block.
//!
//! `detail: "low"` is 85 tokens; `high`, `auto` or none are priced by tiles. An image given by
//! an `http(s)` URL cannot be fetched here: it is refused as an unreadable image, so a
//! scenario never silently counts it as nothing.

use ctxbed_harness::image::{Image, ImageError, ImagePricing};
use ctxbed_harness::message::{ContentPart, Message, Role, UserInput};
use serde_json::Value;

use super::Api;

/// OpenAI's refusal of an image it cannot read (STranslate/STranslate#277).
pub const OPENAI_UNSUPPORTED_IMAGE: &str = "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].";

/// Anthropic's refusal of an image it cannot decode (anthropics/claude-code#8647).
pub const ANTHROPIC_UNREADABLE_IMAGE: &str = "Could not process image";

/// The image a Chat Completions or Responses content part carries, if it is one.
pub fn openai_part(part: &Value) -> Option<Result<Image, ImageError>> {
    let (url, detail) = match part.get("type").and_then(Value::as_str)? {
        "image_url" => {
            let image = part.get("image_url")?;
            // The API takes the object form; a bare string is read the same way.
            let url = image
                .get("url")
                .or(Some(image))
                .and_then(Value::as_str)
                .unwrap_or_default();
            (url, image.get("detail"))
        }
        "input_image" => (
            part.get("image_url")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            part.get("detail"),
        ),
        _ => return None,
    };
    let pricing = match detail.and_then(Value::as_str) {
        Some("low") => ImagePricing::OpenAiLow,
        _ => ImagePricing::OpenAiTiles,
    };
    Some(from_data_url(url, pricing))
}

/// The image an Anthropic content block carries, if it is one.
pub fn anthropic_block(block: &Value) -> Option<Result<Image, ImageError>> {
    if block.get("type").and_then(Value::as_str) != Some("image") {
        return None;
    }
    let source = block.get("source").unwrap_or(&Value::Null);
    if source.get("type").and_then(Value::as_str) != Some("base64") {
        return Some(Err(ImageError::UnknownFormat));
    }
    let text = |key: &str| source.get(key).and_then(Value::as_str).unwrap_or_default();
    Some(Image::from_base64(
        text("media_type"),
        text("data"),
        ImagePricing::AnthropicArea,
    ))
}

/// An image from a `data:<media type>;base64,<data>` URL.
fn from_data_url(url: &str, pricing: ImagePricing) -> Result<Image, ImageError> {
    let Some((media_type, data)) = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
    else {
        return Err(ImageError::UnknownFormat);
    };
    Image::from_base64(media_type, data, pricing)
}

/// The image a content part of `api` carries, if it is one.
fn read_part(api: Api, part: &Value) -> Option<Result<Image, ImageError>> {
    match api {
        Api::Anthropic => anthropic_block(part),
        Api::OpenAi | Api::Responses => openai_part(part),
    }
}

/// The images of a content value (a string has none) that can be read, in order.
pub fn readable(api: Api, content: Option<&Value>) -> Vec<Image> {
    let parts = content.and_then(Value::as_array).into_iter().flatten();
    parts
        .filter_map(|part| read_part(api, part))
        .filter_map(Result::ok)
        .collect()
}

/// A user message: its text, then the images of its `content` that can be read.
pub fn user_message(id: String, text: String, api: Api, content: Option<&Value>) -> Message {
    Message::new(id, Role::User, user_parts(text, readable(api, content)))
}

/// A user message's parts: its text, then each image.
pub fn user_parts(text: String, images: Vec<Image>) -> Vec<ContentPart> {
    UserInput { text, images }.into_parts()
}

/// The first image of the request the provider could not read, as its refusal message.
pub fn problem(api: Api, json: &Value) -> Option<String> {
    let list = match api {
        Api::Responses => json.get("input"),
        Api::OpenAi | Api::Anthropic => json.get("messages"),
    }?
    .as_array()?;
    for (index, message) in list.iter().enumerate() {
        let parts = message.get("content").and_then(Value::as_array);
        for (at, part) in parts.into_iter().flatten().enumerate() {
            if let Some(Err(error)) = read_part(api, part) {
                return Some(refusal(api, index, at, part, &error));
            }
        }
    }
    None
}

/// The provider's words for an image it cannot read: OpenAI says one thing for every case;
/// Anthropic names an empty image (anthropics/claude-code#12750) and a media type the bytes
/// are not (anthropics/claude-code#15746), and says `Could not process image` otherwise.
fn refusal(api: Api, index: usize, at: usize, part: &Value, error: &ImageError) -> String {
    if api != Api::Anthropic {
        return OPENAI_UNSUPPORTED_IMAGE.to_string();
    }
    let path = format!("messages.{index}.content.{at}.image.source.base64");
    let data = part.pointer("/source/data").and_then(Value::as_str);
    match error {
        _ if data.is_some_and(str::is_empty) => format!("{path}: image cannot be empty"),
        ImageError::MediaTypeMismatch { given, .. } => {
            format!("{path}.data: Image does not match the provided media type {given}")
        }
        _ => ANTHROPIC_UNREADABLE_IMAGE.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The header of a 1024 x 768 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAABAAAAAMA";

    #[test]
    fn each_api_part_is_read_and_priced_as_its_provider_prices_it() {
        let chat = json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}});
        let low = json!({"type": "input_image", "image_url": format!("data:image/png;base64,{PNG}"), "detail": "low"});
        let block = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}});
        let tokens = |read: Option<Result<Image, ImageError>>| read.map(|r| r.map(|i| i.tokens));
        assert_eq!(tokens(openai_part(&chat)), Some(Ok(765)));
        assert_eq!(tokens(openai_part(&low)), Some(Ok(85)));
        assert_eq!(tokens(anthropic_block(&block)), Some(Ok(1049)));
        assert_eq!(
            tokens(openai_part(&json!({"type": "text", "text": "hi"}))),
            None
        );
    }

    #[test]
    fn unreadable_images_get_the_providers_words() {
        let url = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        ]}]});
        assert_eq!(
            problem(Api::OpenAi, &url).as_deref(),
            Some(OPENAI_UNSUPPORTED_IMAGE)
        );
        let block = |media_type: &str, data: &str| {
            json!({"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}},
            ]}]})
        };
        assert_eq!(
            problem(Api::Anthropic, &block("image/jpeg", PNG)).as_deref(),
            Some(
                "messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/jpeg"
            )
        );
        assert_eq!(
            problem(Api::Anthropic, &block("image/png", "")).as_deref(),
            Some("messages.0.content.0.image.source.base64: image cannot be empty")
        );
        assert_eq!(
            problem(Api::Anthropic, &block("image/png", "aGVsbG8=")).as_deref(),
            Some(ANTHROPIC_UNREADABLE_IMAGE)
        );
        assert_eq!(problem(Api::Anthropic, &block("image/png", PNG)), None);
    }
}
