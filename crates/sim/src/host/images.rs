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

/// The most images Anthropic takes in one request: `Too much media: 0 document pages + 102
/// images > 100` (anthropics/claude-code#19822, #3397).
pub const ANTHROPIC_IMAGES_MAX: usize = 100;

/// Past this many images in one request, Anthropic holds every image of it to
/// [`ANTHROPIC_MANY_SIDE_MAX`] (platform.claude.com vision docs, "request limits", quoted in
/// charmbracelet/crush#3810).
pub const ANTHROPIC_MANY_IMAGES: usize = 20;

/// The longest side Anthropic takes: `At least one of the image dimensions exceed max allowed
/// size: 8000 pixels` (anthropics/claude-code#4778).
pub const ANTHROPIC_SIDE_MAX: u32 = 8000;

/// The longest side in a request of more than [`ANTHROPIC_MANY_IMAGES`] images: `At least one
/// of the image dimensions exceed max allowed size for many-image requests: 2000 pixels`
/// (anthropics/claude-code#24630).
pub const ANTHROPIC_MANY_SIDE_MAX: u32 = 2000;

/// The most base64 text one Anthropic image may have, measured on the text, not the file:
/// `image exceeds 5 MB maximum: 15908784 bytes > 5242880 bytes` (anthropics/claude-code#10612;
/// measured on the base64 length: lobehub/lobehub#14711, ai-ecoverse/slicc#117).
pub const ANTHROPIC_IMAGE_BASE64_MAX: usize = 5 * 1024 * 1024;

/// Every image part of a request, with the path of its content part as the API names it
/// (`messages.2.content.0`): a message's parts, and (Anthropic) the images inside a
/// `tool_result`'s content, which Anthropic counts too.
fn image_parts(api: Api, json: &Value) -> Vec<(String, &Value)> {
    fn items(value: Option<&Value>) -> impl Iterator<Item = &Value> {
        value.and_then(Value::as_array).into_iter().flatten()
    }
    let list = match api {
        Api::Responses => json.get("input"),
        Api::OpenAi | Api::Anthropic => json.get("messages"),
    };
    let is_image = |part: &Value| read_part(api, part).is_some();
    let mut found = Vec::new();
    for (index, message) in items(list).enumerate() {
        for (at, part) in items(message.get("content")).enumerate() {
            let path = format!("messages.{index}.content.{at}");
            if is_image(part) {
                found.push((path, part));
            } else if api == Api::Anthropic
                && part.get("type").and_then(Value::as_str) == Some("tool_result")
            {
                for (inner, nested) in items(part.get("content")).enumerate() {
                    if is_image(nested) {
                        found.push((format!("{path}.content.{inner}"), nested));
                    }
                }
            }
        }
    }
    found
}

/// The first image of the request the provider refuses, as its refusal message: too many
/// images (Anthropic), then each image in order: too large (Anthropic), unreadable from its
/// header, a side too long (Anthropic), or a file that is not whole ([`image_check`]).
///
/// [`image_check`]: super::image_check
pub fn problem(api: Api, json: &Value) -> Option<String> {
    let parts = image_parts(api, json);
    if api == Api::Anthropic && parts.len() > ANTHROPIC_IMAGES_MAX {
        // Document pages are not counted here: a request with PDFs says 0 of them.
        return Some(format!(
            "Too much media: 0 document pages + {} images > {ANTHROPIC_IMAGES_MAX}",
            parts.len()
        ));
    }
    let many = parts.len() > ANTHROPIC_MANY_IMAGES;
    parts
        .iter()
        .find_map(|(path, part)| part_problem(api, path, part, many))
}

/// What the provider says of one image part, if it refuses it.
fn part_problem(api: Api, path: &str, part: &Value, many: bool) -> Option<String> {
    let data = part.pointer("/source/data").and_then(Value::as_str);
    if api == Api::Anthropic
        && let Some(size) = data
            .map(str::len)
            .filter(|&n| n > ANTHROPIC_IMAGE_BASE64_MAX)
    {
        return Some(format!(
            "{path}.image.source.base64: image exceeds 5 MB maximum: {size} bytes > {ANTHROPIC_IMAGE_BASE64_MAX} bytes"
        ));
    }
    let image = match read_part(api, part)? {
        Ok(image) => image,
        Err(error) => return Some(refusal(api, path, part, &error)),
    };
    if api == Api::Anthropic {
        let (side, which) = if many {
            (ANTHROPIC_MANY_SIDE_MAX, " for many-image requests")
        } else {
            (ANTHROPIC_SIDE_MAX, "")
        };
        if image.width.max(image.height) > side {
            return Some(format!(
                "{path}.image.source.base64.data: At least one of the image dimensions exceed max allowed size{which}: {side} pixels"
            ));
        }
    }
    // A file cut short or damaged past its header: OpenAI says its one sentence; Anthropic's
    // wording for a file it cannot decode is `Could not process image` (no public report
    // names a cut or damaged file separately, so the same sentence is used).
    super::image_check::check_base64(&image.data)
        .err()
        .map(|_| unreadable(api))
}

/// The provider's sentence for an image it cannot decode.
fn unreadable(api: Api) -> String {
    match api {
        Api::Anthropic => ANTHROPIC_UNREADABLE_IMAGE.to_string(),
        Api::OpenAi | Api::Responses => OPENAI_UNSUPPORTED_IMAGE.to_string(),
    }
}

/// The provider's words for an image it cannot read: OpenAI says one thing for every case;
/// Anthropic names an empty image (anthropics/claude-code#12750) and a media type the bytes
/// are not (anthropics/claude-code#15746), and says `Could not process image` otherwise.
/// `path` is the content part's (`messages.0.content.1`).
fn refusal(api: Api, path: &str, part: &Value, error: &ImageError) -> String {
    if api != Api::Anthropic {
        return OPENAI_UNSUPPORTED_IMAGE.to_string();
    }
    let path = format!("{path}.image.source.base64");
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
        let whole = base64_of(&super::super::image_check::png_file(64, 48));
        assert_eq!(problem(Api::Anthropic, &block("image/png", &whole)), None);
    }

    fn base64_of(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// An Anthropic request of one user message holding `count` copies of the PNG `file`.
    fn anthropic_images(file: &[u8], count: usize) -> Value {
        let block = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64_of(file)}});
        json!({"messages": [{"role": "user", "content": vec![block; count]}]})
    }

    #[test]
    fn anthropic_refuses_an_image_over_5_mb_of_base64() {
        let data = "A".repeat(ANTHROPIC_IMAGE_BASE64_MAX + 4);
        let body = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        ]}]});
        assert_eq!(
            problem(Api::Anthropic, &body).as_deref(),
            Some(
                "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: 5242884 bytes > 5242880 bytes"
            )
        );
    }

    #[test]
    fn anthropic_refuses_more_than_100_images_as_too_much_media() {
        let small = super::super::image_check::png_file(8, 8);
        assert_eq!(
            problem(Api::Anthropic, &anthropic_images(&small, 100)),
            None
        );
        assert_eq!(
            problem(Api::Anthropic, &anthropic_images(&small, 101)).as_deref(),
            Some("Too much media: 0 document pages + 101 images > 100")
        );
        // Images inside a tool result count too.
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64_of(&small)}});
        let result =
            json!({"type": "tool_result", "tool_use_id": "t", "content": vec![image.clone(); 51]});
        let body = json!({"messages": [
            {"role": "user", "content": [result]},
            {"role": "user", "content": vec![image; 50]},
        ]});
        assert!(problem(Api::Anthropic, &body).is_some_and(|m| m.contains("101 images > 100")));
    }

    #[test]
    fn anthropic_holds_sides_to_8000_pixels_and_to_2000_past_20_images() {
        let wide = super::super::image_check::png_file(8001, 2);
        assert_eq!(
            problem(Api::Anthropic, &anthropic_images(&wide, 1)).as_deref(),
            Some(
                "messages.0.content.0.image.source.base64.data: At least one of the image dimensions exceed max allowed size: 8000 pixels"
            )
        );
        let large = super::super::image_check::png_file(2001, 2);
        assert_eq!(problem(Api::Anthropic, &anthropic_images(&large, 20)), None);
        assert_eq!(
            problem(Api::Anthropic, &anthropic_images(&large, 21)).as_deref(),
            Some(
                "messages.0.content.0.image.source.base64.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels"
            )
        );
        // OpenAI scales a large image down instead.
        let url = format!("data:image/png;base64,{}", base64_of(&wide));
        let chat = json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]});
        assert_eq!(problem(Api::OpenAi, &chat), None);
    }

    #[test]
    fn a_cut_or_damaged_image_is_refused_by_both_apis() {
        let whole = super::super::image_check::png_file(64, 48);
        let cut = &whole[..whole.len() - 30];
        let mut damaged = whole.clone();
        damaged[45] ^= 0x55;
        let zero = super::super::image_check::png_file(0, 48);
        for file in [cut, &damaged[..], &zero[..]] {
            assert_eq!(
                problem(Api::Anthropic, &anthropic_images(file, 1)).as_deref(),
                Some(ANTHROPIC_UNREADABLE_IMAGE)
            );
            let url = format!("data:image/png;base64,{}", base64_of(file));
            let chat = json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url.clone()}}]}]});
            let responses = json!({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": url}]}]});
            assert_eq!(
                problem(Api::OpenAi, &chat).as_deref(),
                Some(OPENAI_UNSUPPORTED_IMAGE)
            );
            assert_eq!(
                problem(Api::Responses, &responses).as_deref(),
                Some(OPENAI_UNSUPPORTED_IMAGE)
            );
        }
        let url = format!("data:image/png;base64,{}", base64_of(&whole));
        let chat = json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]});
        assert_eq!(problem(Api::OpenAi, &chat), None);
    }
}
