//! Request validation before a request reaches the mock model: what the imitated provider refuses
//! with a 400 is refused here too, in that provider's words, and uses up no scripted turn.
//!
//! OpenAI Chat Completions words its refusals as `Missing required parameter: 'messages'.`,
//! `Invalid type for 'stream': expected a boolean, but got a string instead.` and `Invalid
//! 'max_tokens': integer below minimum value. Expected a value >= 1, but got -1 instead.`, with
//! the parameter in `param` and a `code`; Anthropic Messages validates like pydantic and says
//! `max_tokens: Field required` or `messages: Input should be a valid list` inside its error
//! envelope. Only what both document as required or typed is checked: the model, the messages (a
//! non-empty list of objects with a role), the output bound (Anthropic requires it), `stream`
//! and `tools`. Everything else passes, as unknown fields do at the providers.

use serde_json::{Value, json};

use super::Api;

mod responses;
mod thinking;

/// A refused request: the provider's 400 body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The body to answer with (status 400).
    pub body: String,
    /// A short account for the exchange record (`messages: not a list`).
    pub reason: String,
    /// The wire rule a harness broke by sending it, when the refusal is one a conformance check
    /// names (`reasoning`: thinking or reasoning not handed back as the API requires;
    /// `references`: an id the server does not hold); `None` for a malformed body.
    pub rule: Option<&'static str>,
}

/// What is wrong with one field, in neutral terms; each provider words it.
#[derive(Debug, Clone, PartialEq)]
enum Problem {
    /// The body is not a JSON object.
    NotObject(&'static str),
    Missing(String),
    /// The field has the wrong JSON type: (field, expected, found).
    WrongType(String, Expected, &'static str),
    /// An integer below its minimum: (field, minimum, found).
    BelowMinimum(String, i64, i64),
    /// A list that must not be empty.
    Empty(String),
    /// Extended thinking's rules (the final assistant message, signatures), in Anthropic's
    /// words.
    Thinking(String),
    /// Prompt caching's rules, in Anthropic's words.
    Cache(String),
    /// A content block the API does not take (an empty text block), in Anthropic's words.
    Content(String),
    /// An image the provider cannot read, in its words ([`super::images::problem`]).
    Image(String),
    /// A value outside the set a field takes (OpenAI's `invalid_value`): the parameter, the
    /// value (`''` for one missing or not a string) and the supported values in its words.
    InvalidValue {
        param: String,
        value: String,
        supported: &'static str,
    },
    /// Responses: `input` empty, and nothing else names what to answer.
    NoInput,
    /// Responses: an item's id that is not of the kind the API issues for its type (the
    /// parameter, the id, the prefix the API expects).
    IdPrefix {
        param: String,
        value: String,
        prefix: &'static str,
    },
    /// A refusal already in the provider's words that breaks no named rule (Anthropic's
    /// checks of the `thinking` setting, of a role, of a thinking block's fields).
    Worded(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    String,
    Integer,
    Boolean,
    List,
    Object,
    /// Responses' `input`: a string or a list of items.
    StringOrList,
    /// One item of Responses' `input`.
    InputItem,
    /// A message's content (and Anthropic's `system`): a string or a list of blocks.
    StringOrObjects,
}

/// Checks a request body as `api`'s provider would.
///
/// # Errors
/// The first problem the provider would report, as its 400 body.
pub fn check(api: Api, json: &Value) -> Result<(), Invalid> {
    check_with(api, json, ChatRoles::OpenAi)
}

/// The roles a Chat Completions message may have: OpenAI's own, or any string (vLLM and
/// llama.cpp hand an unknown role to the model's chat template instead of refusing it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatRoles {
    OpenAi,
    Any,
}

/// [`check`], with the Chat Completions roles the imitated server takes.
///
/// # Errors
/// The first problem the provider would report, as its 400 body.
pub fn check_with(api: Api, json: &Value, roles: ChatRoles) -> Result<(), Invalid> {
    let problem = match api {
        Api::Responses => responses::problem(json),
        Api::OpenAi | Api::Anthropic => first_problem(api, json, roles),
    }
    .or_else(|| match api {
        Api::Anthropic => thinking::setting_problem(json)
            .or_else(|| cache_control_problem(json))
            .or_else(|| blank_text_problem(json))
            .or_else(|| thinking::block_problem(json))
            .or_else(|| thinking::final_message_problem(json)),
        Api::OpenAi | Api::Responses => None,
    })
    .or_else(|| super::images::problem(api, json).map(Problem::Image));
    refusal(api, problem)
}

/// Checks a `count_tokens` body as Anthropic would: a model and messages, no output bound.
///
/// # Errors
/// The first problem, as Anthropic's 400 body.
pub fn check_count_tokens(json: &Value) -> Result<(), Invalid> {
    let problem = match json.as_object() {
        None => Some(Problem::NotObject(kind(json))),
        Some(body) => model_problem(body).or_else(|| {
            messages_problem(
                Api::Anthropic,
                body.get("messages").filter(|v| !v.is_null()),
                ChatRoles::OpenAi,
            )
        }),
    };
    refusal(Api::Anthropic, problem)
}

/// `problem`, if any, as `api`'s refusal.
fn refusal(api: Api, problem: Option<Problem>) -> Result<(), Invalid> {
    match problem {
        None => Ok(()),
        Some(problem) => Err(Invalid {
            reason: reason(&problem),
            rule: match problem {
                Problem::Thinking(_) => Some("reasoning"),
                _ => None,
            },
            body: match api {
                Api::OpenAi | Api::Responses => openai_body(&problem),
                Api::Anthropic => anthropic_body(&problem),
            },
        }),
    }
}

/// A missing model, or one that is not a string.
fn model_problem(body: &serde_json::Map<String, Value>) -> Option<Problem> {
    match body.get("model").filter(|v| !v.is_null()) {
        None => Some(Problem::Missing("model".into())),
        Some(model) if !model.is_string() => Some(Problem::WrongType(
            "model".into(),
            Expected::String,
            kind(model),
        )),
        Some(_) => None,
    }
}

fn first_problem(api: Api, json: &Value, roles: ChatRoles) -> Option<Problem> {
    let Some(body) = json.as_object() else {
        return Some(Problem::NotObject(kind(json)));
    };
    let field = |name: &str| body.get(name).filter(|v| !v.is_null());
    if let Some(problem) = model_problem(body) {
        return Some(problem);
    }
    if let Some(problem) = messages_problem(api, field("messages"), roles) {
        return Some(problem);
    }
    if let Some(problem) = system_problem(body).filter(|_| api == Api::Anthropic) {
        return Some(problem);
    }
    let bounds: &[&str] = match api {
        Api::OpenAi | Api::Responses => &["max_tokens", "max_completion_tokens"],
        Api::Anthropic => &["max_tokens"],
    };
    for name in bounds {
        match field(name) {
            None if api == Api::Anthropic => return Some(Problem::Missing((*name).into())),
            None => {}
            Some(value) => {
                if let Some(problem) = bound_problem(name, value, 1) {
                    return Some(problem);
                }
            }
        }
    }
    stream_and_tools_problem(body)
}

/// An output bound that is not an integer, or is below `minimum`.
fn bound_problem(name: &str, value: &Value, minimum: i64) -> Option<Problem> {
    match value.as_i64() {
        None => Some(Problem::WrongType(
            name.into(),
            Expected::Integer,
            kind(value),
        )),
        Some(number) if number < minimum => {
            Some(Problem::BelowMinimum(name.into(), minimum, number))
        }
        Some(_) => None,
    }
}

/// A `stream` that is not a boolean or `tools` that are not a list.
fn stream_and_tools_problem(body: &serde_json::Map<String, Value>) -> Option<Problem> {
    let field = |name: &str| body.get(name).filter(|v| !v.is_null());
    if let Some(stream) = field("stream").filter(|v| !v.is_boolean()) {
        return Some(Problem::WrongType(
            "stream".into(),
            Expected::Boolean,
            kind(stream),
        ));
    }
    if let Some(tools) = field("tools").filter(|v| !v.is_array()) {
        return Some(Problem::WrongType(
            "tools".into(),
            Expected::List,
            kind(tools),
        ));
    }
    None
}

fn messages_problem(api: Api, messages: Option<&Value>, roles: ChatRoles) -> Option<Problem> {
    let Some(messages) = messages else {
        return Some(Problem::Missing("messages".into()));
    };
    let Some(list) = messages.as_array() else {
        let found = kind(messages);
        return Some(Problem::WrongType("messages".into(), Expected::List, found));
    };
    if list.is_empty() && api == Api::OpenAi {
        return Some(Problem::Empty("messages".into()));
    }
    for (index, message) in list.iter().enumerate() {
        let path = item_path(api, "messages", index);
        let Some(object) = message.as_object() else {
            return Some(Problem::WrongType(path, Expected::Object, kind(message)));
        };
        if let Some(problem) = message_problem(api, &path, object, roles) {
            return Some(problem);
        }
    }
    None
}

/// The roles a Chat Completions message may have, in the API's words.
const CHAT_ROLES: &str = "'system', 'assistant', 'user', 'function', 'tool', and 'developer'";

/// One message's role and content as `api` checks them: a role it knows, and content that is
/// a string or a list (or, OpenAI, null). Chat Completions: ``Invalid value: 'hacker'.
/// Supported values are: …`` at `messages[1].role` and `Invalid type for 'messages[1].content':
/// expected one of a string or array of objects, but got an object instead.` (both measured
/// 2026-08-30, kangminlee-maker/local-OAuth-CLI-API-adapter,
/// test/openai-chat-validation-parity.test.mjs; the second also pydantic/pydantic-ai#2653).
/// Anthropic: `messages: Unexpected role "bogus". Allowed roles are "user" or "assistant"` and
/// `messages.0.content: Input should be a valid array` (measured 2026-08-31, the same
/// repository's test/anthropic-messages-validation-parity.test.mjs); a `system` message is
/// taken, as the API now takes one in some positions.
fn message_problem(
    api: Api,
    path: &str,
    object: &serde_json::Map<String, Value>,
    roles: ChatRoles,
) -> Option<Problem> {
    let role = match object.get("role") {
        None | Some(Value::Null) => return Some(Problem::Missing(format!("{path}.role"))),
        Some(Value::String(role)) => role.as_str(),
        Some(role) => {
            let found = kind(role);
            return Some(Problem::WrongType(
                format!("{path}.role"),
                Expected::String,
                found,
            ));
        }
    };
    let known = match api {
        Api::OpenAi | Api::Responses => {
            roles == ChatRoles::Any
                || matches!(
                    role,
                    "system" | "assistant" | "user" | "function" | "tool" | "developer"
                )
        }
        Api::Anthropic => matches!(role, "user" | "assistant" | "system"),
    };
    if !known {
        return Some(match api {
            Api::OpenAi | Api::Responses => Problem::InvalidValue {
                param: format!("{path}.role"),
                value: role.to_string(),
                supported: CHAT_ROLES,
            },
            Api::Anthropic => Problem::Worded(format!(
                r#"messages: Unexpected role "{role}". Allowed roles are "user" or "assistant""#
            )),
        });
    }
    match object.get("content") {
        Some(Value::Null)
            if api == Api::OpenAi
                && roles == ChatRoles::OpenAi
                && role == "assistant"
                && !calls_something(object) =>
        {
            Some(Problem::Worded(
                "Invalid value for 'content': expected a string, got null.".into(),
            ))
        }
        None | Some(Value::Null | Value::String(_) | Value::Array(_)) => None,
        Some(other) => Some(Problem::WrongType(
            format!("{path}.content"),
            Expected::StringOrObjects,
            kind(other),
        )),
    }
}

/// Whether a Chat Completions assistant message calls a tool (`tool_calls`, or the older
/// `function_call`): only then may its `content` be null. OpenAI refuses a null `content`
/// otherwise: "Invalid value for 'content': expected a string, got null." (docker/docker-agent#63;
/// vercel/ai#14950, checked against the live API).
fn calls_something(object: &serde_json::Map<String, Value>) -> bool {
    object
        .get("tool_calls")
        .and_then(Value::as_array)
        .is_some_and(|calls| !calls.is_empty())
        || object
            .get("function_call")
            .is_some_and(|call| !call.is_null())
}

/// Anthropic's `system`: a string or a list of blocks (`system: Input should be a valid
/// array`, measured as [`message_problem`]'s wordings are).
fn system_problem(body: &serde_json::Map<String, Value>) -> Option<Problem> {
    match body.get("system") {
        None | Some(Value::Null | Value::String(_) | Value::Array(_)) => None,
        Some(other) => Some(Problem::WrongType(
            "system".into(),
            Expected::StringOrObjects,
            kind(other),
        )),
    }
}

/// Anthropic takes at most four cache breakpoints: `A maximum of 4 blocks with cache_control
/// may be provided. Found 5.` (tghamm/Anthropic.SDK#50).
fn cache_control_problem(json: &Value) -> Option<Problem> {
    let found = super::anthropic::cache_control_count(json);
    (found > CACHE_BREAKPOINTS_MAX).then(|| {
        Problem::Cache(format!(
            "A maximum of {CACHE_BREAKPOINTS_MAX} blocks with cache_control may be provided. Found {found}."
        ))
    })
}

/// Anthropic refuses an empty text block anywhere in `messages` (`messages: text content blocks
/// must be non-empty`, bytedance/UI-TARS-desktop#987), and a message whose blocks are all text
/// and all whitespace (`messages: text content blocks must contain non-whitespace text`,
/// anthropics/claude-code#23440); a whitespace block beside other content is accepted
/// (experientiallabs/experiential#804 measured each case).
fn blank_text_problem(json: &Value) -> Option<Problem> {
    let messages = json.get("messages")?.as_array()?;
    let blocks = messages
        .iter()
        .filter_map(|message| message.get("content").and_then(Value::as_array));
    let text_of = |block: &Value| -> Option<String> {
        (block.get("type").and_then(Value::as_str) == Some("text")).then(|| {
            block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        })
    };
    let mut whitespace_only = false;
    for content in blocks {
        let texts: Vec<String> = content.iter().filter_map(text_of).collect();
        if texts.iter().any(String::is_empty) {
            return Some(Problem::Content(
                "messages: text content blocks must be non-empty".into(),
            ));
        }
        whitespace_only |= !texts.is_empty()
            && texts.len() == content.len()
            && texts.iter().all(|text| text.trim().is_empty());
    }
    whitespace_only.then(|| {
        Problem::Content("messages: text content blocks must contain non-whitespace text".into())
    })
}

/// The most blocks Anthropic lets carry `cache_control` in one request.
pub const CACHE_BREAKPOINTS_MAX: usize = 4;

/// `messages[2]` as OpenAI names an item, `messages.2` as Anthropic does.
fn item_path(api: Api, field: &str, index: usize) -> String {
    match api {
        Api::OpenAi | Api::Responses => format!("{field}[{index}]"),
        Api::Anthropic => format!("{field}.{index}"),
    }
}

/// The JSON type of `value`, in OpenAI's words.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a decimal",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn reason(problem: &Problem) -> String {
    match problem {
        Problem::NotObject(found) => format!("the body is {found}, not an object"),
        Problem::Missing(field) => format!("{field}: missing"),
        Problem::WrongType(field, _, found) => format!("{field}: {found}"),
        Problem::BelowMinimum(field, _, found) => format!("{field}: {found}"),
        Problem::Empty(field) => format!("{field}: empty"),
        Problem::Thinking(message)
        | Problem::Cache(message)
        | Problem::Content(message)
        | Problem::Image(message)
        | Problem::Worded(message) => message.clone(),
        Problem::InvalidValue { param, value, .. } => format!("{param}: '{value}' is not taken"),
        Problem::NoInput => "input: empty".into(),
        Problem::IdPrefix { param, value, .. } => {
            format!("{param}: '{value}' is not an id the API issued")
        }
    }
}

/// What a field of the wrong type was expected to be, in OpenAI's words.
fn openai_expected(expected: Expected) -> &'static str {
    match expected {
        Expected::String => "a string",
        Expected::Integer => "an integer",
        Expected::Boolean => "a boolean",
        Expected::List => "an array of objects",
        Expected::Object => "an object",
        // Measured 2026-08-30 (kangminlee-maker/local-OAuth-CLI-API-adapter,
        // test/openai-responses-validation-parity.test.mjs, test/openai-chat-validation-parity.test.mjs;
        // pydantic/pydantic-ai#2653 for a message's content).
        Expected::StringOrList => "one of a string or array of input items",
        Expected::InputItem => "an input item",
        Expected::StringOrObjects => "one of a string or array of objects",
    }
}

fn openai_body(problem: &Problem) -> String {
    let (message, param, code) = match problem {
        Problem::NotObject(found) => (
            format!("Invalid type for 'body': expected an object, but got {found} instead."),
            Value::Null,
            "invalid_type",
        ),
        Problem::Missing(field) if field == "model" => (
            "you must provide a model parameter".to_string(),
            Value::Null,
            "",
        ),
        Problem::Missing(field) => (
            format!("Missing required parameter: '{field}'."),
            field.as_str().into(),
            "missing_required_parameter",
        ),
        Problem::WrongType(field, expected, found) => (
            format!(
                "Invalid type for '{field}': expected {}, but got {found} instead.",
                openai_expected(*expected)
            ),
            field.as_str().into(),
            "invalid_type",
        ),
        Problem::BelowMinimum(field, minimum, found) => (
            format!(
                "Invalid '{field}': integer below minimum value. Expected a value >= {minimum}, but got {found} instead."
            ),
            field.as_str().into(),
            "integer_below_min_value",
        ),
        Problem::Empty(field) => (
            format!(
                "Invalid '{field}': empty array. Expected an array with minimum length 1, but got an empty array instead."
            ),
            field.as_str().into(),
            "empty_array",
        ),
        Problem::Thinking(message)
        | Problem::Cache(message)
        | Problem::Content(message)
        | Problem::Worded(message) => (message.clone(), Value::Null, ""),
        Problem::Image(message) => (message.clone(), Value::Null, "invalid_image_format"),
        Problem::InvalidValue {
            param,
            value,
            supported,
        } => (
            format!("Invalid value: '{value}'. Supported values are: {supported}."),
            param.as_str().into(),
            "invalid_value",
        ),
        Problem::NoInput => (
            r#"One of "input" or "previous_response_id" or 'prompt' or 'conversation' must be provided."#.into(),
            Value::Null,
            "missing_required_parameter",
        ),
        Problem::IdPrefix {
            param,
            value,
            prefix,
        } => (
            format!("Invalid '{param}': '{value}'. Expected an ID that begins with '{prefix}'."),
            param.as_str().into(),
            "invalid_value",
        ),
    };
    openai_envelope(&message, param, code)
}

/// OpenAI's error body: its message, `param` and `code` (none when empty).
fn openai_envelope(message: &str, param: Value, code: &str) -> String {
    let code = if code.is_empty() {
        Value::Null
    } else {
        code.into()
    };
    json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})
        .to_string()
}

fn anthropic_body(problem: &Problem) -> String {
    let message = match problem {
        Problem::NotObject(_) => {
            "Input should be a valid dictionary or object to extract fields from".to_string()
        }
        Problem::Missing(field) => format!("{field}: Field required"),
        Problem::WrongType(field, expected, _) => {
            let expected = match expected {
                Expected::String => "a valid string",
                Expected::Integer => "a valid integer",
                Expected::Boolean => "a valid boolean",
                Expected::List => "a valid list",
                Expected::Object => "a valid dictionary or object to extract fields from",
                Expected::StringOrList => "a valid string or a valid list",
                Expected::InputItem => "a valid dictionary or object to extract fields from",
                // Measured 2026-08-31 for a message's content and for `system`
                // (kangminlee-maker/local-OAuth-CLI-API-adapter,
                // test/anthropic-messages-validation-parity.test.mjs).
                Expected::StringOrObjects => "a valid array",
            };
            format!("{field}: Input should be {expected}")
        }
        Problem::BelowMinimum(field, minimum, _) => {
            format!("{field}: Input should be greater than or equal to {minimum}")
        }
        Problem::Empty(field) => format!("{field}: List should have at least 1 item"),
        Problem::Thinking(message)
        | Problem::Cache(message)
        | Problem::Content(message)
        | Problem::Image(message)
        | Problem::Worded(message) => message.clone(),
        // Only OpenAI's APIs name these.
        Problem::InvalidValue { param, value, .. } => format!("{param}: '{value}'"),
        Problem::NoInput => "input: empty".into(),
        Problem::IdPrefix { param, value, .. } => {
            format!("{param}: '{value}' is not an id the API issued")
        }
    };
    super::anthropic::error_body("invalid_request_error", &message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openai(body: Value) -> String {
        check(Api::OpenAi, &body)
            .err()
            .map(|i| i.body)
            .unwrap_or_default()
    }

    fn anthropic(body: Value) -> String {
        check(Api::Anthropic, &body)
            .err()
            .map(|i| i.body)
            .unwrap_or_default()
    }

    #[test]
    fn empty_and_whitespace_only_text_blocks_are_refused_as_anthropic_refuses_them() {
        let with = |assistant: Value| {
            json!({"model": "m", "max_tokens": 10, "messages": [
                {"role": "user", "content": "Why?"},
                {"role": "assistant", "content": assistant},
                {"role": "user", "content": "Go on."},
            ]})
        };
        let call = json!({"type": "tool_use", "id": "c", "name": "n", "input": {}});
        let text = |t: &str| json!({"type": "text", "text": t});
        let empty = anthropic(with(json!([text(""), call.clone()])));
        assert!(
            empty.contains("messages: text content blocks must be non-empty"),
            "{empty}"
        );
        let alone = anthropic(with(json!([text(" ")])));
        assert!(
            alone.contains("must contain non-whitespace text"),
            "{alone}"
        );
        // Whitespace beside a tool use or beside other text, and an empty list, are taken.
        assert_eq!(anthropic(with(json!([text("\n\n"), call]))), "");
        assert_eq!(anthropic(with(json!([text(" "), text("ok")]))), "");
        assert_eq!(anthropic(with(json!([]))), "");
    }

    #[test]
    fn openai_refuses_null_content_on_an_assistant_message_that_calls_nothing() {
        let with = |assistant: Value| {
            json!({"model": "m", "messages": [
                {"role": "user", "content": "Why?"},
                assistant,
                {"role": "user", "content": "Go on."},
            ]})
        };
        let refused = |body: &Value| {
            check_with(Api::OpenAi, body, ChatRoles::OpenAi)
                .err()
                .map(|i| i.body)
                .unwrap_or_default()
        };
        let null = with(json!({"role": "assistant", "content": null}));
        assert!(
            refused(&null).contains("Invalid value for 'content': expected a string, got null."),
            "{}",
            refused(&null)
        );
        let reasoning_only =
            with(json!({"role": "assistant", "content": null, "reasoning_content": "Hm."}));
        assert!(!refused(&reasoning_only).is_empty());
        let call =
            json!([{"id": "c", "type": "function", "function": {"name": "n", "arguments": "{}"}}]);
        let calling = with(json!({"role": "assistant", "content": null, "tool_calls": call}));
        assert_eq!(
            refused(&calling),
            "",
            "null beside tool calls is the API's own shape"
        );
        let empty = with(json!({"role": "assistant", "content": ""}));
        assert_eq!(refused(&empty), "");
        // A server that is not OpenAI (vLLM, llama.cpp behind the same API) is not held to it.
        assert_eq!(check_with(Api::OpenAi, &null, ChatRoles::Any), Ok(()));
    }

    #[test]
    fn well_formed_requests_pass() {
        let chat = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 10, "stream": true, "tools": []});
        assert_eq!(check(Api::OpenAi, &chat), Ok(()));
        assert_eq!(check(Api::Anthropic, &chat), Ok(()));
        let minimal = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(check(Api::OpenAi, &minimal), Ok(()));
    }

    #[test]
    fn responses_requests_are_checked_as_the_responses_api_checks_them() {
        let responses = |body: Value| {
            check(Api::Responses, &body)
                .err()
                .map(|i| i.body)
                .unwrap_or_default()
        };
        let items = json!([{"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "c", "output": "x"}]);
        assert_eq!(
            check(Api::Responses, &json!({"model": "m", "input": "hi"})),
            Ok(())
        );
        assert_eq!(
            check(
                Api::Responses,
                &json!({"model": "m", "input": items, "max_output_tokens": 16, "stream": true})
            ),
            Ok(())
        );
        assert!(responses(json!({"model": "m", "input": 3})).contains(
            "Invalid type for 'input': expected one of a string or array of input items, but got an integer instead."
        ));
        let roleless = responses(json!({"model": "m", "input": [{"content": "hi"}]}));
        assert!(
            roleless.contains(
                "Invalid value: ''. Supported values are: 'assistant', 'system', 'developer', and 'user'."
            ),
            "{roleless}"
        );
        assert!(
            responses(json!({"model": "m", "input": "hi", "max_output_tokens": 8}))
                .contains("Expected a value >= 16, but got 8 instead.")
        );
        assert!(
            responses(json!({"model": "m", "input": "hi", "previous_response_id": 7}))
                .contains("Invalid type for 'previous_response_id': expected a string")
        );
    }

    #[test]
    fn openai_refusals_use_its_wording() {
        assert!(
            openai(json!([]))
                .contains("Invalid type for 'body': expected an object, but got an array instead.")
        );
        assert!(openai(json!({})).contains("you must provide a model parameter"));
        let missing = openai(json!({"model": "m"}));
        assert!(
            missing.contains("Missing required parameter: 'messages'."),
            "{missing}"
        );
        assert!(missing.contains(r#""code":"missing_required_parameter""#));
        assert!(openai(json!({"model": "m", "messages": "hi"})).contains(
            "Invalid type for 'messages': expected an array of objects, but got a string instead."
        ));
        assert!(openai(json!({"model": "m", "messages": []})).contains("empty array"));
        let ok = json!([{"role": "user", "content": "hi"}]);
        assert!(
            openai(json!({"model": "m", "messages": ok, "max_tokens": -1}))
                .contains("Expected a value >= 1, but got -1 instead.")
        );
        assert!(
            openai(json!({"model": "m", "messages": ok, "max_tokens": "100"})).contains(
                "Invalid type for 'max_tokens': expected an integer, but got a string instead."
            )
        );
        assert!(
            openai(json!({"model": "m", "messages": ok, "stream": "yes"})).contains(
                "Invalid type for 'stream': expected a boolean, but got a string instead."
            )
        );
        assert!(
            openai(json!({"model": "m", "messages": ok, "tools": "x"}))
                .contains("Invalid type for 'tools'")
        );
        assert!(
            openai(json!({"model": "m", "messages": [{"content": "hi"}]}))
                .contains("Missing required parameter: 'messages[0].role'.")
        );
    }

    #[test]
    fn anthropic_refusals_use_its_wording() {
        let ok = json!([{"role": "user", "content": "hi"}]);
        let body = anthropic(json!({"model": "m", "messages": ok}));
        assert_eq!(
            body,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}"#
        );
        assert!(
            anthropic(json!({"model": "m", "messages": null, "max_tokens": 5}))
                .contains("messages: Field required")
        );
        assert!(
            anthropic(json!({"model": "m", "messages": "hi", "max_tokens": 5}))
                .contains("messages: Input should be a valid list")
        );
        assert!(
            anthropic(json!({"model": "m", "messages": ok, "max_tokens": 0}))
                .contains("max_tokens: Input should be greater than or equal to 1")
        );
        assert!(
            anthropic(json!({"model": "m", "messages": ["hi"], "max_tokens": 5}))
                .contains("messages.0: Input should be a valid dictionary")
        );
        assert!(
            anthropic(json!({"messages": ok, "max_tokens": 5})).contains("model: Field required")
        );
    }

    #[test]
    fn an_unknown_role_content_of_another_kind_and_a_numeric_system_are_refused() {
        let hacker =
            json!([{"role": "user", "content": "hi"}, {"role": "hacker", "content": "hi"}]);
        let chat = openai(json!({"model": "m", "messages": hacker}));
        assert!(chat.contains(
            "Invalid value: 'hacker'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."
        ), "{chat}");
        assert!(
            chat.contains(r#""param":"messages[1].role","code":"invalid_value""#),
            "{chat}"
        );
        let claude = anthropic(json!({"model": "m", "max_tokens": 5, "messages": hacker}));
        assert!(claude.contains(
            r#"messages: Unexpected role \"hacker\". Allowed roles are \"user\" or \"assistant\""#
        ), "{claude}");
        let object = json!([{"role": "user", "content": {"type": "text", "text": "hi"}}]);
        let chat = openai(json!({"model": "m", "messages": object}));
        assert!(chat.contains(
            "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an object instead."
        ), "{chat}");
        assert!(
            chat.contains(r#""param":"messages[0].content","code":"invalid_type""#),
            "{chat}"
        );
        let claude = anthropic(json!({"model": "m", "max_tokens": 5, "messages": object}));
        assert!(
            claude.contains("messages.0.content: Input should be a valid array"),
            "{claude}"
        );
        let ok = json!([{"role": "user", "content": "hi"}]);
        let system = anthropic(json!({"model": "m", "max_tokens": 5, "system": 7, "messages": ok}));
        assert!(
            system.contains("system: Input should be a valid array"),
            "{system}"
        );
        // What the APIs take: every known role, content as a string, a list or (OpenAI) null,
        // a system as a string or blocks.
        let roles = json!([{"role": "developer", "content": "x"}, {"role": "system", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": "x"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "x"}]);
        assert_eq!(
            check(Api::OpenAi, &json!({"model": "m", "messages": roles})),
            Ok(())
        );
        // vLLM and llama.cpp hand an unknown role to the chat template.
        let other = json!({"model": "m", "messages": hacker});
        assert_eq!(check_with(Api::OpenAi, &other, ChatRoles::Any), Ok(()));
        let blocks = json!([{"type": "text", "text": "be brief"}]);
        assert_eq!(
            check(
                Api::Anthropic,
                &json!({"model": "m", "max_tokens": 5, "system": blocks, "messages": ok})
            ),
            Ok(())
        );
    }

    #[test]
    fn extended_thinking_keeps_the_block_before_the_tool_use_it_answers() {
        let call = json!({"type": "tool_use", "id": "toolu_1", "name": "read_log", "input": {}});
        let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]});
        let signed = super::super::anthropic::signature("Read it.");
        let thought = json!({"type": "thinking", "thinking": "Read it.", "signature": signed});
        let ask = json!({"role": "user", "content": "Why?"});
        let with = |assistant: Value, thinking: &str| {
            json!({"model": "m", "max_tokens": 4096, "thinking": {"type": thinking, "budget_tokens": 1024},
                   "messages": [ask, assistant, result]})
        };
        let kept = with(
            json!({"role": "assistant", "content": [thought, call]}),
            "enabled",
        );
        assert_eq!(check(Api::Anthropic, &kept), Ok(()));
        let dropped = anthropic(with(
            json!({"role": "assistant", "content": [call]}),
            "enabled",
        ));
        assert!(
            dropped.contains("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block"),
            "{dropped}"
        );
        // Without thinking the same history is fine, and OpenAI has no such rule.
        assert_eq!(
            check(
                Api::Anthropic,
                &with(json!({"role": "assistant", "content": [call]}), "disabled")
            ),
            Ok(())
        );
        // A thinking block handed back altered (in the latest assistant message), or without
        // its signature.
        let altered =
            json!({"type": "thinking", "thinking": "Read it twice.", "signature": signed});
        assert!(
            anthropic(with(
                json!({"role": "assistant", "content": [altered, call]}),
                "enabled"
            ))
            .contains("messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified.")
        );
        let unsigned = json!({"type": "thinking", "thinking": "Read it."});
        assert!(
            anthropic(with(
                json!({"role": "assistant", "content": [unsigned, call]}),
                "enabled"
            ))
            .contains("messages.1.content.0.thinking.signature: Field required")
        );
        let prefill = json!({"model": "m", "max_tokens": 64,
            "messages": [ask, {"role": "assistant", "content": [thought]}]});
        assert!(anthropic(prefill).contains(
            "messages.1.content.0: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`."
        ));
    }
}
