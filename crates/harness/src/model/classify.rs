//! Turning a provider's HTTP status and body into a typed [`ModelError`].
//!
//! Order: the provider's error code first (`context_length_exceeded`, `exceed_context_size_error`),
//! then the status (429 rate limit, 5xx transient, 401/403 rejected), then message patterns
//! that generalise across providers. Reported sizes (actual and maximum tokens) are parsed where
//! the wording carries them, so recovery can shrink by at least the excess.
//!
//! ```
//! use ctxbed_harness::model::{ModelError, classify::classify};
//! let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"}}"#;
//! match classify("anthropic", 400, body) {
//!     ModelError::ContextOverflow { actual_tokens, max_tokens, .. } => {
//!         assert_eq!((actual_tokens, max_tokens), (Some(200_251), Some(200_000)));
//!     }
//!     other => panic!("not an overflow: {other:?}"),
//! }
//! assert_eq!(classify("openai", 429, "{}").kind(), "rate_limited");
//! ```

use serde_json::Value;

use super::ModelError;

/// Error codes that mean "the input is over the context window".
const OVERFLOW_CODES: &[&str] = &["context_length_exceeded", "exceed_context_size_error"];

/// Lower-case message fragments that mean "the input is over the context window".
const OVERFLOW_PATTERNS: &[&str] = &[
    "maximum context length",
    "context length exceeded",
    "context_length_exceeded",
    "prompt is too long",
    "input is too long",
    "exceeds the available context size",
    "exceeds the context window",
    "exceeds the maximum context",
    "input token count",
    "range of input length",
    "too many input tokens",
    "context window",
    "reduce the length of the messages",
];

/// Fragments of output-limit errors, which are not overflow of the input.
const OUTPUT_LIMIT_PATTERNS: &[&str] = &[
    "max_tokens is too large",
    "max_tokens must be",
    "completion tokens",
    "max_completion_tokens",
    "maximum output",
];

/// Fragments of tool pairing rejections.
const PAIRING_PATTERNS: &[&str] = &[
    "tool_call_id",
    "`tool_use` ids were found without `tool_result`",
    "unexpected `tool_use_id`",
    "must be a response to a preceeding message with 'tool_calls'",
    "must be a response to a preceding message with 'tool_calls'",
];

/// Classifies one failed provider answer.
pub fn classify(provider: &str, status: u16, body: &str) -> ModelError {
    let json: Option<Value> = serde_json::from_str(body).ok();
    let codes = json.as_ref().map(error_codes).unwrap_or_default();
    let message = json
        .as_ref()
        .and_then(error_message)
        .unwrap_or_else(|| body.to_string());
    let lower = message.to_lowercase();

    let overflow_by_code = codes
        .iter()
        .any(|code| OVERFLOW_CODES.contains(&code.as_str()));
    let overflow_by_text = OVERFLOW_PATTERNS.iter().any(|p| lower.contains(p))
        && !OUTPUT_LIMIT_PATTERNS.iter().any(|p| lower.contains(p));
    if overflow_by_code || (status < 500 && status != 429 && overflow_by_text) {
        let (actual_tokens, max_tokens) = reported_sizes(json.as_ref(), &lower);
        return ModelError::ContextOverflow {
            provider: provider.to_string(),
            status,
            body: body.to_string(),
            actual_tokens,
            max_tokens,
        };
    }
    if status == 429 {
        return ModelError::RateLimited {
            retry_after: None,
            body: body.to_string(),
        };
    }
    if status >= 500 {
        return ModelError::Transient {
            status: Some(status),
            body: body.to_string(),
        };
    }
    if PAIRING_PATTERNS
        .iter()
        .any(|p| lower.contains(&p.to_lowercase()))
    {
        return ModelError::PairingRejected {
            provider: provider.to_string(),
            status,
            body: body.to_string(),
        };
    }
    ModelError::Rejected {
        status,
        body: body.to_string(),
    }
}

/// Every string `code` or `type` found at the top level or under `error`.
fn error_codes(json: &Value) -> Vec<String> {
    let mut codes = Vec::new();
    for holder in [Some(json), json.get("error")].into_iter().flatten() {
        for key in ["code", "type"] {
            if let Some(Value::String(code)) = holder.get(key) {
                codes.push(code.clone());
            }
        }
    }
    codes
}

/// The human-readable message inside a provider's JSON error body, when there is one.
pub fn provider_message(body: &str) -> Option<String> {
    let json: Value = serde_json::from_str(body).ok()?;
    error_message(&json)
}

fn error_message(json: &Value) -> Option<String> {
    let message = json
        .get("error")
        .and_then(|error| error.get("message"))
        .or_else(|| json.get("message"))?;
    message.as_str().map(str::to_string)
}

/// (actual, maximum) token counts when the wording reports them.
fn reported_sizes(json: Option<&Value>, lower: &str) -> (Option<u64>, Option<u64>) {
    if let Some(error) = json.and_then(|j| j.get("error")) {
        let actual = error.get("n_prompt_tokens").and_then(Value::as_u64);
        let max = error.get("n_ctx").and_then(Value::as_u64);
        if actual.is_some() || max.is_some() {
            return (actual, max);
        }
    }
    // "prompt is too long: N tokens > M maximum"
    if let Some(rest) = after(lower, "too long: ") {
        let actual = leading_number(rest);
        let max = after(rest, "> ").and_then(leading_number);
        return (actual, max);
    }
    // "maximum context length is M tokens. However, your messages resulted in N tokens"
    if let Some(rest) = after(lower, "maximum context length is ") {
        let max = leading_number(rest);
        let actual = after(rest, "resulted in ")
            .or_else(|| after(rest, "you requested "))
            .and_then(leading_number);
        return (actual, max);
    }
    // "The input token count (N) exceeds the maximum number of tokens allowed (M)"
    if let Some(rest) = after(lower, "input token count (") {
        let actual = leading_number(rest);
        let max = after(rest, "allowed (").and_then(leading_number);
        return (actual, max);
    }
    // "Range of input length should be [1, M]"
    if let Some(rest) = after(lower, "range of input length should be [1, ") {
        return (None, leading_number(rest));
    }
    (None, None)
}

fn after<'a>(text: &'a str, marker: &str) -> Option<&'a str> {
    text.find(marker).map(|at| &text[at + marker.len()..])
}

fn leading_number(text: &str) -> Option<u64> {
    let digits: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::super::provider::Provider;
    use super::*;

    #[test]
    fn every_imitated_overflow_is_recognised_with_sizes() {
        for provider in Provider::ALL {
            let (status, body) = provider.overflow_error(9_000, 8_192);
            let error = classify(provider.as_str(), status, &body);
            let ModelError::ContextOverflow {
                actual_tokens,
                max_tokens,
                ..
            } = error
            else {
                panic!("{provider:?} overflow not recognised: {error:?}");
            };
            assert_eq!(max_tokens, Some(8_192), "{provider:?}");
            if provider != Provider::DashScope {
                assert_eq!(actual_tokens, Some(9_000), "{provider:?}");
            }
        }
    }

    #[test]
    fn pairing_wordings_are_recognised() {
        for provider in [Provider::OpenAi, Provider::Anthropic] {
            let (status, body) = provider.call_without_result_error(6, "call_1");
            assert_eq!(
                classify(provider.as_str(), status, &body).kind(),
                "pairing_rejected"
            );
            let (status, body) = provider.result_without_call_error(2, "call_1");
            assert_eq!(
                classify(provider.as_str(), status, &body).kind(),
                "pairing_rejected"
            );
        }
    }

    #[test]
    fn non_overflow_errors_are_not_overflow() {
        let rate = r#"{"error":{"message":"Rate limit reached for gpt-4 in organization org-x on tokens per min (TPM): Limit 10000, Used 9000, Requested 2000.","type":"tokens","code":"rate_limit_exceeded"}}"#;
        assert_eq!(classify("openai", 429, rate).kind(), "rate_limited");
        let output = r#"{"error":{"message":"max_tokens is too large: 10000. This model supports at most 4096 completion tokens, whereas you provided 10000.","type":"invalid_request_error","param":"max_tokens","code":null}}"#;
        assert_eq!(classify("openai", 400, output).kind(), "rejected");
        let auth = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(classify("openai", 401, auth).kind(), "rejected");
        assert_eq!(
            classify("openai", 503, "<html>bad gateway</html>").kind(),
            "transient"
        );
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(classify("anthropic", 529, overloaded).kind(), "transient");
    }

    #[test]
    fn unlisted_wordings_generalise() {
        let mistral = r#"{"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_error","code":3051}"#;
        assert_eq!(classify("mistral", 400, mistral).kind(), "context_overflow");
        let deepseek = r#"{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (70000 in the messages, 0 in the completion).","type":"invalid_request_error","code":"invalid_request_error"}}"#;
        match classify("deepseek", 400, deepseek) {
            ModelError::ContextOverflow {
                actual_tokens,
                max_tokens,
                ..
            } => {
                assert_eq!((actual_tokens, max_tokens), (Some(70_000), Some(65_536)));
            }
            other => panic!("{other:?}"),
        }
    }
}
