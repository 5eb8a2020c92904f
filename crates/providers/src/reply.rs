//! Reply pieces shared by the wire formats: tool-call arguments, errors inside a 200 body, and
//! bounded raw snippets.
//!
//! Parsing is lenient where servers differ harmlessly (empty arguments mean `{}`; arguments
//! sent as an object instead of a string are taken as they are) and strict where the reply
//! cannot be used (arguments that are not JSON are a [`ModelError::MalformedReply`], never a
//! tool call with made-up arguments).

use serde_json::Value;

use crate::limits::PROVIDER_RAW_CHARS_MAX;
use ctxbed_harness::model::ModelError;
use ctxbed_harness::model::classify::classify;

/// At most [`PROVIDER_RAW_CHARS_MAX`] characters of what the server sent, for an error.
pub fn raw_snippet(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(4 * PROVIDER_RAW_CHARS_MAX)];
    let text = String::from_utf8_lossy(head);
    let mut cut: String = text.chars().take(PROVIDER_RAW_CHARS_MAX).collect();
    if head.len() < bytes.len() || text.chars().nth(PROVIDER_RAW_CHARS_MAX).is_some() {
        cut.push('…');
    }
    cut
}

/// A [`ModelError::MalformedReply`] quoting a bounded snippet of `raw`.
pub fn malformed(detail: impl Into<String>, raw: &[u8]) -> ModelError {
    ModelError::MalformedReply {
        detail: detail.into(),
        raw: raw_snippet(raw),
    }
}

/// Parses one tool call's arguments as the server sent them: a JSON object, or `{}` for none.
/// Arguments that are not a JSON object (text cut off mid-call, trailing commentary, a bare
/// value) are kept as the model sent them, as a string, so the call goes on to its tool, which
/// answers the model with an error result it can correct, instead of failing the whole reply.
///
/// # Errors
/// None today; the signature keeps room for limits on what a call may carry.
pub fn parse_arguments(name: &str, id: &str, arguments: &Value) -> Result<Value, ModelError> {
    let text = match arguments {
        Value::Object(_) => return Ok(arguments.clone()),
        Value::Null => return Ok(Value::Object(serde_json::Map::new())),
        Value::String(text) => text,
        other => return Ok(Value::String(other.to_string())),
    };
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => {
            tracing::warn!(
                tool = name,
                call = id,
                "tool-call arguments are not a JSON object; kept as text"
            );
            Ok(Value::String(text.clone()))
        }
    }
}

/// A tool call's arguments as a request carries them back: the JSON text of an object, or the
/// text the model sent when it was not one.
pub fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The error a successful-status body carries instead of a reply, if any: a top-level `error`
/// (OpenAI-compatible servers and gateways) or `"type": "error"` / `"object": "error"`.
/// A numeric `code` between 400 and 599 stands for the status the server did not send.
pub fn error_in_body(provider: &str, json: &Value, raw: &str) -> Option<ModelError> {
    let is_error = json.get("error").is_some_and(|e| !e.is_null())
        || json.get("type").and_then(Value::as_str) == Some("error")
        || json.get("object").and_then(Value::as_str) == Some("error");
    if !is_error {
        return None;
    }
    let code = json
        .get("error")
        .and_then(|error| error.get("code"))
        .or_else(|| json.get("code"))
        .and_then(Value::as_u64)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code));
    let status = code.or_else(|| anthropic_status(json)).unwrap_or(200);
    Some(classify(provider, status, raw))
}

/// The HTTP status that goes with an Anthropic error type (used for errors sent mid-stream,
/// which carry a type but no status).
fn anthropic_status(json: &Value) -> Option<u16> {
    let kind = json.get("error")?.get("type")?.as_str()?;
    Some(match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        // `api_error` and types added later: a fault on the server's side.
        _ => 500,
    })
}

/// A named stream event's data as JSON, with its kind: the data's `type`, else the `event:`
/// name the server sent.
///
/// # Errors
/// [`ModelError::MalformedReply`] for data that is not JSON.
pub fn named_event(name: Option<&str>, data: &str) -> Result<(Value, String), ModelError> {
    let json: Value = serde_json::from_str(data).map_err(|error| {
        malformed(
            format!("a stream event is not JSON: {error}"),
            data.as_bytes(),
        )
    })?;
    let kind = json
        .get("type")
        .and_then(Value::as_str)
        .or(name)
        .unwrap_or_default()
        .to_string();
    Ok((json, kind))
}

/// The text of an OpenAI-style `content`: a string, or an array of text parts.
pub fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_that_are_not_an_object_are_kept_as_sent() {
        assert_eq!(parse_arguments("t", "c", &json!("")).unwrap(), json!({}));
        assert_eq!(parse_arguments("t", "c", &json!(null)).unwrap(), json!({}));
        assert_eq!(
            parse_arguments("t", "c", &json!({"a": 1})).unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            parse_arguments("t", "c", &json!("{\"a\":1}")).unwrap(),
            json!({"a": 1})
        );
        // Cut off or not an object: kept as sent, for the tool to refuse with its schema.
        let cut = json!("{\"command\": \"ls");
        assert_eq!(parse_arguments("execute", "call_9", &cut).unwrap(), cut);
        assert_eq!(
            parse_arguments("t", "c", &json!("[1]")).unwrap(),
            json!("[1]")
        );
        assert_eq!(parse_arguments("t", "c", &json!(7)).unwrap(), json!("7"));
        assert_eq!(arguments_text(&cut), "{\"command\": \"ls");
        assert_eq!(arguments_text(&json!({"a": 1})), "{\"a\":1}");
    }

    #[test]
    fn raw_snippets_are_bounded() {
        let long = "x".repeat(10 * PROVIDER_RAW_CHARS_MAX);
        let snippet = raw_snippet(long.as_bytes());
        assert_eq!(snippet.chars().count(), PROVIDER_RAW_CHARS_MAX + 1);
        assert!(snippet.ends_with('…'));
        assert_eq!(raw_snippet(b"short"), "short");
    }

    #[test]
    fn errors_in_a_success_body_are_classified() {
        let body = r#"{"error":{"message":"Rate limit exceeded","code":429}}"#;
        let json: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            error_in_body("openai", &json, body).unwrap().kind(),
            "rate_limited"
        );
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let json: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            error_in_body("anthropic", &json, body).unwrap().kind(),
            "transient"
        );
        let json = json!({"choices": [], "error": null});
        assert!(error_in_body("openai", &json, "").is_none());
    }
}
