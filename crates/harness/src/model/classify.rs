//! Turning a provider's HTTP status and body into a typed [`ModelError`].
//!
//! Providers word the same failure in many ways, so errors are recognised by their structure,
//! not by a list of known sentences. In order:
//!
//! 1. **Read the body.** A JSON body gives its codes (string `code`, `type`, `status`, `reason`
//!    at any depth) and its messages (`message`, `error`, `detail`, `raw`, ...), also from JSON
//!    nested inside a message string (Gemini through some SDKs, OpenRouter's `metadata.raw`).
//!    Any other body (plain text, a printed SDK exception) is its own message.
//! 2. **Codes**, whatever the status: an identifier saying the context is exceeded
//!    (`context_length_exceeded`, `exceed_context_size_error`, `ContextWindowExceededError`),
//!    or Anthropic's `request_too_large`, is an overflow; `overloaded_error` is transient; a
//!    rate-limit code is a rate limit where no failure status was sent (an error inside a 200).
//! 3. **Status:** 429 is a rate limit; 402 (a limit of the account, not of the model) is
//!    rejected.
//! 4. **Pairing by shape:** the message names a tool call (`tool_calls`, `tool_use`, `toolUse`,
//!    function call), its result (`tool_result`, tool messages, a tool role, function response,
//!    output) and a relation between them (must, followed, preceding, without, missing,
//!    expected, same number); or a tool-result turn placed against another turn (`role 'user'
//!    after role 'tool'`, the last entry holding tool results); or a call id that is not unique.
//! 5. **Overflow by shape:** the input (prompt, input, messages, request) against a limit
//!    (exceeds, too long, longer than, `<=`, `N > M`), or the context window (or the model's
//!    own length) with a limit or a counted size, or a counted size above a stated limit. Never
//!    when the limited quantity is the output (`max_tokens`, output or completion tokens, with
//!    no input counted) or a rate (tokens per minute, quota). Dotted paths and URLs are not read
//!    as words: `messages.7.content.image: image exceeds ...` does not name the messages.
//! 6. **Status again:** 5xx is a transient fault. It comes after the shapes because a body that
//!    says what is wrong is better evidence than its status: llama.cpp sends some overflows as
//!    500, a gateway wraps an upstream 400 in a 502.
//!
//! Anything else is [`ModelError::Rejected`]. The sizes an overflow reports (actual and
//! maximum tokens) are parsed where the wording carries them, so recovery can shrink by at
//! least the excess. The rules are checked against 228 real bodies from 26 providers, gathered
//! in two batches, each with a held-out part the rules were not tuned on
//! (`tests/provider_errors.rs` and its data file).
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
//! let output = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 32000 > 4096, which is the maximum allowed number of output tokens for claude-3-opus-20240229"}}"#;
//! assert_eq!(classify("anthropic", 400, output).kind(), "rejected");
//! let pairing = r#"{"object":"error","message":"Not the same number of function calls and responses","type":"invalid_request_error"}"#;
//! assert_eq!(classify("mistral", 400, pairing).kind(), "pairing_rejected");
//! assert_eq!(classify("openai", 429, "{}").kind(), "rate_limited");
//! ```

mod sizes;
mod text;

use serde_json::Value;

use self::sizes::Reported;
use self::text::Text;
use super::ModelError;

/// Classifies one failed provider answer.
pub fn classify(provider: &str, status: u16, body: &str) -> ModelError {
    let report = Report::read(body);
    let overflow = || ModelError::ContextOverflow {
        provider: provider.to_string(),
        status,
        body: body.to_string(),
        actual_tokens: report.sizes.actual,
        max_tokens: report.sizes.max,
    };
    let transient = || ModelError::Transient {
        status: Some(status),
        body: body.to_string(),
    };
    let rate_limited = || ModelError::RateLimited {
        retry_after: None,
        body: body.to_string(),
    };
    if report.names_overflow() {
        return overflow();
    }
    if report.names_overload() {
        return transient();
    }
    if status == 429 || (status < 400 && report.names_rate_limit()) {
        return rate_limited();
    }
    // Payment required: a limit of the account (credits, balance), whatever it is about.
    if status == 402 {
        return ModelError::Rejected {
            status,
            body: body.to_string(),
        };
    }
    // A body that says what is wrong is better evidence than a status: a server may send a
    // context overflow or a template's pairing error as a 500, or wrap it in a gateway's 502.
    if is_pairing(&report.text) {
        return ModelError::PairingRejected {
            provider: provider.to_string(),
            status,
            body: body.to_string(),
        };
    }
    if is_overflow_wording(&report.text, &report.sizes) {
        return overflow();
    }
    if status >= 500 {
        return transient();
    }
    ModelError::Rejected {
        status,
        body: body.to_string(),
    }
}

/// The human-readable message inside a provider's JSON error body, when there is one.
pub fn provider_message(body: &str) -> Option<String> {
    let json: Value = serde_json::from_str(body).ok()?;
    let message = json
        .get("error")
        .and_then(|error| error.get("message"))
        .or_else(|| json.get("message"))?;
    message.as_str().map(str::to_string)
}

/// Keys whose string value is a machine-readable code.
const CODE_KEYS: &[&str] = &["code", "type", "status", "reason", "error_type", "__type"];

/// Keys whose string value is a message (or a nested error body, as a string).
const MESSAGE_KEYS: &[&str] = &[
    "message",
    "error",
    "detail",
    "msg",
    "raw",
    "errorMessage",
    "Message",
];

/// How deep a JSON body is read, and how many message strings are parsed as nested JSON.
const JSON_DEPTH_MAX: usize = 16;
const NESTED_BODIES_MAX: usize = 4;

/// What an error body says, read once.
struct Report {
    codes: Vec<String>,
    /// Every message, one per line.
    text: Text,
    sizes: Reported,
}

impl Report {
    fn read(body: &str) -> Self {
        let mut parts = Parts::default();
        match serde_json::from_str::<Value>(body) {
            Ok(json) => parts.collect(&json, 0),
            Err(_) => parts.messages.push(body.to_string()),
        }
        if parts.messages.is_empty() {
            parts.messages.push(body.to_string());
        }
        let text = Text::new(&parts.messages.join("\n"));
        let sizes = sizes::reported(&text.lower, body);
        Report {
            codes: parts.codes,
            text,
            sizes,
        }
    }

    /// A code, or an identifier in a message, that says the context is exceeded.
    fn names_overflow(&self) -> bool {
        self.codes.iter().map(String::as_str).any(is_overflow_code)
            || self.text.words().any(is_overflow_code)
    }

    /// A code saying the server is overloaded (`overloaded_error`), as Anthropic sends inside a
    /// stream that began with 200: transient whatever the status.
    fn names_overload(&self) -> bool {
        self.codes
            .iter()
            .any(|code| squash(code).contains("overloaded"))
    }

    /// A code saying a rate limit was hit (`rate_limit_error`, `rate_limit_exceeded`). It decides
    /// only where the status does not (an error inside a 200 body): Groq sends its per-minute
    /// budget errors as 413 with this code, and those are not retried.
    fn names_rate_limit(&self) -> bool {
        self.codes
            .iter()
            .any(|code| squash(code).contains("ratelimit"))
    }
}

/// An identifier lower-cased with everything but letters and digits removed.
fn squash(identifier: &str) -> String {
    identifier
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Codes and messages gathered from a JSON body.
#[derive(Default)]
struct Parts {
    codes: Vec<String>,
    messages: Vec<String>,
    nested: usize,
}

impl Parts {
    fn collect(&mut self, value: &Value, depth: usize) {
        if depth > JSON_DEPTH_MAX {
            return;
        }
        match value {
            Value::Object(map) => {
                for (key, value) in map {
                    match value {
                        Value::String(code) if CODE_KEYS.contains(&key.as_str()) => {
                            self.codes.push(code.clone());
                        }
                        Value::String(message) if MESSAGE_KEYS.contains(&key.as_str()) => {
                            self.message(message, depth);
                        }
                        other => self.collect(other, depth + 1),
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.collect(item, depth + 1);
                }
            }
            _ => {}
        }
    }

    /// A message string, or the error body it carries as JSON text.
    fn message(&mut self, message: &str, depth: usize) {
        let trimmed = message.trim();
        if self.nested < NESTED_BODIES_MAX && (trimmed.starts_with('{') || trimmed.starts_with('['))
        {
            self.nested += 1;
            if let Ok(inner @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str(trimmed)
            {
                self.collect(&inner, depth + 1);
                return;
            }
        }
        self.messages.push(message.to_string());
    }
}

/// An identifier saying the context is exceeded: it names the context and exceeding it
/// (`context_length_exceeded`, `exceed_context_size_error`, `ContextWindowExceededError`,
/// `model_context_window_exceeded`), or is Anthropic's `request_too_large`.
fn is_overflow_code(identifier: &str) -> bool {
    let squashed = squash(identifier);
    (squashed.contains("context") && (squashed.contains("exceed") || squashed.contains("overflow")))
        || squashed == "requesttoolarge"
}

/// A tool exchange the provider will not take, recognised by shape:
///
/// - a tool call, its result and a relation between them: `tool_use` ids without `tool_result`
///   blocks, messages with role `tool` that must follow `tool_calls`, no tool output found for a
///   function call, a function response turn that must come after a function call turn, not
///   the same number of function calls and responses, a tool role with no previous message
///   holding a tool call;
/// - a tool result placed against another turn: `unexpected role 'tool' after role 'user'`,
///   `'user' after role 'tool'`, a message after a last entry holding tool results;
/// - a call id that is not unique (`tool_use ids must be unique`).
///
/// A refusal about a thinking block or reasoning item is none of these, whatever calls and
/// results it mentions: the block is what is missing or altered, and dropping tool messages
/// would not mend it.
fn is_pairing(text: &Text) -> bool {
    if names_reasoning_block(text) {
        return false;
    }
    (names_call(text) && names_result(text) && names_relation(text))
        || (names_tool_turn(text) && names_turn_order(text))
        || (names_call(text) && text.has_word(&["unique", "duplicate", "duplicated"]))
}

/// A thinking block or reasoning item (`thinking` block, `redacted_thinking`, `reasoning` item).
fn names_reasoning_block(text: &Text) -> bool {
    text.has_squashed(&["redactedthinking"])
        || text.has_phrase(&[
            &["thinking", "block"],
            &["thinking", "blocks"],
            &["reasoning", "item"],
            &["reasoning", "items"],
        ])
}

fn names_call(text: &Text) -> bool {
    text.has_squashed(&["toolcall", "tooluse", "functioncall"])
        || text.has_phrase(&[
            &["function", "call"],
            &["function", "calls"],
            &["tool", "call"],
            &["tool", "calls"],
            &["tool", "use"],
        ])
}

/// A result, or the id a result carries to name its call (`tool_call_id`, `tool_use_id`,
/// `call_id`).
fn names_result(text: &Text) -> bool {
    text.has_squashed(&["toolresult", "toolcallid", "tooluseid", "callid"])
        || text.has_word(&[
            "result",
            "results",
            "response",
            "responses",
            "responding",
            "output",
            "outputs",
        ])
        || names_tool_turn(text)
}

/// A turn that carries tool results: a message in the tool role, tool messages, tool results.
fn names_tool_turn(text: &Text) -> bool {
    text.has_squashed(&["toolresult"])
        || text.has_phrase(&[
            &["tool", "message"],
            &["tool", "messages"],
            &["role", "tool"],
            &["tool", "role"],
            &["tool", "result"],
            &["tool", "results"],
        ])
}

/// One turn placed against another: an order word shortly before a turn (`after role`,
/// `previous assistant message`, `last entry`, `immediately after a user turn`).
fn names_turn_order(text: &Text) -> bool {
    text.has_near(
        &[
            "after",
            "before",
            "preceding",
            "preceeding",
            "previous",
            "following",
            "followed",
            "last",
        ],
        &["role", "message", "messages", "turn", "turns", "entry"],
        3,
    )
}

fn names_relation(text: &Text) -> bool {
    text.has_word(&[
        "must",
        "follow",
        "followed",
        "following",
        "preceding",
        "preceeding",
        "previous",
        "after",
        "next",
        "corresponding",
        "without",
        "missing",
        "found",
        "expected",
        "unexpected",
        "insufficient",
        "same",
        "equal",
        "ensure",
    ]) || text.has_phrase(&[&["not", "have"]])
}

/// The input against a limit; the context window with a limit or a counted size; or a counted
/// size above a stated limit. Not when the limit is on the output or on a rate.
fn is_overflow_wording(text: &Text, sizes: &Reported) -> bool {
    if limits_output(text) || limits_rate(text) {
        return false;
    }
    let subject = names_input(text)
        || text.has_word(&["request"])
        || text.has_phrase(&[&["token", "count"], &["number", "of", "tokens"]]);
    let limit = states_limit(text) || sizes.bounded;
    let measure = text.has_word_starting(&["token", "context"])
        || text.has_word(&["length", "size", "n_ctx", "max_model_len"])
        || text.has_phrase(&[&["too", "long"], &["longer", "than"]]);
    let context = text.has_word_starting(&["context"])
        || text.has_word(&["n_ctx", "max_model_len"])
        || names_model_length(text);
    let above = matches!((sizes.actual, sizes.max), (Some(actual), Some(max)) if actual > max);
    (subject && limit && measure)
        || (context && (limit || sizes.actual.is_some()))
        || (subject && above)
}

/// The model's own length, which is its context window: `maximum model length`, `model length`,
/// `model max length`, `model's maximum length`.
fn names_model_length(text: &Text) -> bool {
    text.has_phrase(&[&["model", "length"]])
        || (text.has_near(&["model"], &["length"], 3)
            && text.has_phrase(&[&["max", "length"], &["maximum", "length"]]))
}

/// The input side of a request: the prompt, the input, the messages.
fn names_input(text: &Text) -> bool {
    text.has_word_starting(&["prompt", "input"]) || text.has_word(&["messages"])
}

/// Words that put a quantity against a limit.
fn states_limit(text: &Text) -> bool {
    text.has_word_starting(&["exceed", "overflow"])
        || text.has_phrase(&[
            &["too", "long"],
            &["too", "large"],
            &["too", "many"],
            &["longer", "than"],
            &["greater", "than"],
            &["larger", "than"],
            &["more", "than"],
            &["less", "than"],
            &["not", "enough"],
            &["up", "to"],
            &["cannot", "truncate"],
        ])
        || text.lower.contains("<=")
}

/// A limit on the output alone: `max_tokens` (or output, completion tokens) with no input
/// counted, as in "max_tokens is too large ... at most 4096 completion tokens".
fn limits_output(text: &Text) -> bool {
    let output = text.has_word(&[
        "max_tokens",
        "max_completion_tokens",
        "max_new_tokens",
        "max_output_tokens",
    ]) || text.has_phrase(&[
        &["output", "tokens"],
        &["output", "token"],
        &["completion", "tokens"],
        &["maximum", "tokens"],
        &["max", "tokens"],
    ]);
    output && !names_input(text)
}

/// A limit on a rate or a budget: tokens per minute or day, a rate limit, a quota.
fn limits_rate(text: &Text) -> bool {
    text.has_word(&["quota", "tpm", "tpd", "rpm", "ratelimit"])
        || text.has_phrase(&[
            &["rate", "limit"],
            &["per", "minute"],
            &["per", "min"],
            &["per", "hour"],
            &["per", "day"],
            &["per", "second"],
        ])
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
    fn overflows_that_count_the_completion_are_read_back_with_the_total() {
        for provider in Provider::ALL {
            // Messages alone fit (6,000 of 8,192); with 4,000 of completion they do not.
            let (status, body) = provider.overflow_error_split(6_000, 4_000, 8_192);
            let error = classify(provider.as_str(), status, &body);
            let ModelError::ContextOverflow {
                actual_tokens,
                max_tokens,
                ..
            } = error
            else {
                panic!("{provider:?} overflow not recognised: {error:?}\n{body}");
            };
            assert_eq!(max_tokens, Some(8_192), "{provider:?}: {body}");
            if provider != Provider::DashScope {
                assert_eq!(actual_tokens, Some(10_000), "{provider:?}: {body}");
            }
        }
    }

    #[test]
    fn pairing_wordings_are_recognised() {
        for provider in Provider::ALL {
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
        // A result naming a call that is not there, by the id it carries.
        let unknown_id = r#"{"error":{"message":"Invalid parameter: 'tool_call_id' of 'call_1' not found in 'tool_calls' of previous message.","type":"invalid_request_error"}}"#;
        assert_eq!(
            classify("openai", 400, unknown_id).kind(),
            "pairing_rejected"
        );
        // Tools named without a call/result relation are not a pairing error.
        let empty = r#"{"error":{"message":"Invalid 'messages[2].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.","type":"invalid_request_error"}}"#;
        assert_eq!(classify("openai", 400, empty).kind(), "rejected");
    }

    #[test]
    fn non_overflow_errors_are_not_overflow() {
        let rate = r#"{"error":{"message":"Rate limit reached for gpt-4 in organization org-x on tokens per min (TPM): Limit 10000, Used 9000, Requested 2000.","type":"tokens","code":"rate_limit_exceeded"}}"#;
        assert_eq!(classify("openai", 429, rate).kind(), "rate_limited");
        // The same wording in a 413 or a stream is still not an overflow.
        assert_eq!(classify("groq", 413, rate).kind(), "rejected");
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
        let temperature = r#"{"error":{"message":"Invalid value for temperature: 3.5 is above the maximum of 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}"#;
        assert_eq!(classify("openai", 400, temperature).kind(), "rejected");
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

    #[test]
    fn tool_turns_out_of_order_and_duplicate_ids_are_pairing() {
        for body in [
            r#"{"object":"error","message":"Unexpected role 'user' after role 'tool'","type":"invalid_request_message_order"}"#,
            "Message has tool role, but there was no previous assistant message with a tool call!",
            "invalid request: cannot specify message if the last entry in chat history contains tool results",
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.1: `tool_use` ids must be unique"}}"#,
        ] {
            assert_eq!(
                classify("any", 400, body).kind(),
                "pairing_rejected",
                "{body}"
            );
        }
        // A tool role that does not exist, tool definitions, a form of id, a tool message's
        // content: no pairing.
        for body in [
            r#"messages: Unexpected role "tool". Allowed roles are "user" or "assistant". See https://docs.anthropic.com/en/docs/tool-use"#,
            "tools: Tool names must be unique.",
            "Tool call id was turn1_0 but must be a-z, A-Z, 0-9, with a length of 9.",
            "'messages.2' : for 'role:tool' the following must be satisfied[('messages.2.content' : value must be a string)]",
        ] {
            assert_eq!(classify("any", 400, body).kind(), "rejected", "{body}");
        }
    }

    #[test]
    fn the_body_outranks_the_status_and_parts_are_not_the_context() {
        let llamacpp = r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#;
        assert_eq!(
            classify("llamacpp", 500, llamacpp).kind(),
            "context_overflow"
        );
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(classify("anthropic", 200, overloaded).kind(), "transient");
        let credits =
            "Prompt tokens limit exceeded: 64128 > 6964. To increase, upgrade to a paid account";
        assert_eq!(classify("openrouter", 402, credits).kind(), "rejected");
        let image = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content.2.image.source.base64: image exceeds 5 MB maximum: 15908784 bytes > 5242880 bytes"}}"#;
        assert_eq!(classify("anthropic", 400, image).kind(), "rejected");
        match classify(
            "moonshot",
            400,
            "model max length exceeded, max length:8192",
        ) {
            ModelError::ContextOverflow { max_tokens, .. } => assert_eq!(max_tokens, Some(8_192)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn codes_win_over_status_and_nesting_is_read() {
        let llamacpp = r#"{"error":{"code":500,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":1407,"n_ctx":256}}"#;
        assert_eq!(
            classify("llamacpp", 500, llamacpp).kind(),
            "context_overflow"
        );
        let nested = r#"{"error":{"message":"{\"error\":{\"code\":400,\"message\":\"The input token count (5) exceeds the maximum number of tokens allowed (4).\"}}","code":400}}"#;
        match classify("gemini", 400, nested) {
            ModelError::ContextOverflow {
                actual_tokens,
                max_tokens,
                ..
            } => assert_eq!((actual_tokens, max_tokens), (Some(5), Some(4))),
            other => panic!("{other:?}"),
        }
    }

    proptest::proptest! {
        /// Any body classifies without a panic, including text built from the pieces the
        /// readers look for (numbers, comparisons, ranges, nested JSON, multi-byte text).
        #[test]
        fn any_body_classifies(
            body in "([0-9]{1,22}|[<>=+\\-\\[\\],:.'\"{} ]|n_ctx|tokens|maximum|context|exceeds|tool_use|result|é|\\\\\"|\\PC){0,60}",
            status in 0u16..600,
        ) {
            let error = classify("fuzz", status, &body);
            let _ = error.to_string();
            let transient = matches!(error, ModelError::Transient { .. });
            proptest::prop_assert!(!transient || status >= 500);
        }
    }

    #[test]
    fn odd_bodies_do_not_panic() {
        for body in [
            "",
            "{",
            "[]",
            "null",
            r#"{"error":"{\"error\":\"{\\\"error\\\":\\\"[1, 2]\\\"}\"}"}"#,
            "\u{0}\u{ffff} > 1",
            "é 9999999999999999999999999 tokens > 1 maximum",
        ] {
            for status in [0, 200, 400, 429, 500, 599] {
                let _ = classify("fuzz", status, body).to_string();
            }
        }
    }
}
