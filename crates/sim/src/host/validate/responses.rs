//! A Responses API request as the API checks it: a model; `input` given, not empty, a string or
//! a list of items each of a type the API knows (items without a `type` are messages, with one
//! of its roles); `instructions` a string; `max_output_tokens` an integer of at least 16;
//! `stream` and `tools` typed; `previous_response_id` a string (which ones are held is
//! `super::super::chains`').
//!
//! Each wording was measured against the live API on 2026-08-30
//! (kangminlee-maker/local-OAuth-CLI-API-adapter, test/openai-responses-validation-parity.test.mjs).

use serde_json::Value;

use super::{
    Api, Expected, Problem, bound_problem, item_path, kind, model_problem, stream_and_tools_problem,
};

/// The item types the API takes in `input`, in its words.
pub(super) const ITEM_TYPES: &str = "'additional_tools', 'agent_message', 'apply_patch_call', 'apply_patch_call_output', 'code_interpreter_call', 'compaction', 'compaction_trigger', 'computer_call', 'computer_call_output', 'custom_tool_call', 'custom_tool_call_output', 'file_search_call', 'function_call', 'function_call_output', 'image_generation_call', 'item_reference', 'local_shell_call', 'local_shell_call_output', 'mcp_approval_request', 'mcp_approval_response', 'mcp_call', 'mcp_list_tools', 'message', 'multi_agent_call', 'multi_agent_call_output', 'program', 'program_output', 'reasoning', 'shell_call', 'shell_call_output', 'tool_search_call', 'tool_search_output', and 'web_search_call'";

/// The roles a message item may have, in the API's words.
pub(super) const ROLES: &str = "'assistant', 'system', 'developer', and 'user'";

pub(super) fn problem(json: &Value) -> Option<Problem> {
    let Some(body) = json.as_object() else {
        return Some(Problem::NotObject(kind(json)));
    };
    let field = |name: &str| body.get(name).filter(|v| !v.is_null());
    if let Some(problem) = model_problem(body) {
        return Some(problem);
    }
    // `input` may be left empty only when the request names what to answer another way.
    let elsewhere = ["previous_response_id", "prompt", "conversation"]
        .iter()
        .any(|name| field(name).is_some());
    let input = match body.get("input") {
        None if field("prompt").is_none() && field("conversation").is_none() => {
            return Some(Problem::Missing("input".into()));
        }
        // The API's own sentence for a null input.
        Some(Value::Null) => {
            return Some(Problem::WrongType(
                "input".into(),
                Expected::String,
                "an object",
            ));
        }
        other => other,
    };
    if let Some(problem) = input.and_then(|input| input_problem(input, elsewhere)) {
        return Some(problem);
    }
    if let Some(instructions) = field("instructions").filter(|v| !v.is_string()) {
        let found = kind(instructions);
        return Some(Problem::WrongType(
            "instructions".into(),
            Expected::String,
            found,
        ));
    }
    if let Some(problem) =
        field("max_output_tokens").and_then(|value| bound_problem("max_output_tokens", value, 16))
    {
        return Some(problem);
    }
    if let Some(problem) = stream_and_tools_problem(body) {
        return Some(problem);
    }
    // Whether a `previous_response_id` names a stored response is `super::super::chains`'.
    match field("previous_response_id") {
        Some(Value::String(_)) | None => None,
        Some(other) => Some(Problem::WrongType(
            "previous_response_id".into(),
            Expected::String,
            kind(other),
        )),
    }
}

/// What is wrong with `input`: empty with nothing else to answer, not a string or a list, or
/// an item the API does not take.
fn input_problem(input: &Value, elsewhere: bool) -> Option<Problem> {
    let items = match input {
        Value::String(text) if text.is_empty() && !elsewhere => return Some(Problem::NoInput),
        Value::String(_) => return None,
        Value::Array(items) if items.is_empty() && !elsewhere => return Some(Problem::NoInput),
        Value::Array(items) => items,
        other => {
            return Some(Problem::WrongType(
                "input".into(),
                Expected::StringOrList,
                kind(other),
            ));
        }
    };
    items.iter().enumerate().find_map(|(index, item)| {
        let path = item_path(Api::Responses, "input", index);
        item_problem(path, item)
    })
}

/// An input item that is not an object, of a type the API does not know, or a message of a
/// role it does not know (a missing type or role is named as `''`).
fn item_problem(path: String, item: &Value) -> Option<Problem> {
    let Some(object) = item.as_object() else {
        return Some(Problem::WrongType(path, Expected::InputItem, kind(item)));
    };
    let named = |key: &str| match object.get(key) {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_str().unwrap_or_default()),
    };
    let invalid = |value: &str, supported| Problem::InvalidValue {
        param: path.clone(),
        value: value.to_string(),
        supported,
    };
    match named("type") {
        Some("message") | None => {}
        Some("reasoning") => return reasoning_id_problem(&path, object),
        Some(known) if ITEM_TYPES.contains(&format!("'{known}'")) => return None,
        Some(unknown) => return Some(invalid(unknown, ITEM_TYPES)),
    }
    match named("role") {
        Some("assistant" | "system" | "developer" | "user") => None,
        role => Some(invalid(role.unwrap_or_default(), ROLES)),
    }
}

/// A reasoning item's `id`, when it has one, is the API's (`rs_…`): an empty or made-up id is
/// refused in the API's words (langchain-ai/langchainjs#11044 quotes it for `id: ""`;
/// jlcodes99/cockpit-tools#2090 for an id of another prefix). An item with no id at all is
/// taken (langchain-ai/langchainjs#11045, whose fix sends reasoning rebuilt from a stream so).
fn reasoning_id_problem(path: &str, object: &serde_json::Map<String, Value>) -> Option<Problem> {
    match object.get("id") {
        Some(Value::String(id)) if !id.starts_with("rs") => Some(Problem::IdPrefix {
            param: format!("{path}.id"),
            value: id.clone(),
            prefix: "rs",
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Api, check};
    use serde_json::{Value, json};

    fn refusal(body: Value) -> String {
        check(Api::Responses, &body)
            .err()
            .map(|i| i.body)
            .unwrap_or_default()
    }

    #[test]
    fn an_item_of_an_unknown_type_or_role_is_an_invalid_value() {
        let body = refusal(json!({"model": "m", "input": [{"type": "note", "text": "x"}]}));
        assert!(
            body.contains(
                "Invalid value: 'note'. Supported values are: 'additional_tools', 'agent_message',"
            ),
            "{body}"
        );
        assert!(
            body.contains(r#""param":"input[0]","code":"invalid_value""#),
            "{body}"
        );
        let body = refusal(json!({"model": "m", "input": [
            {"role": "user", "content": "hi"}, {"role": "hacker", "content": "hi"}]}));
        assert!(
            body.contains(
                "Invalid value: 'hacker'. Supported values are: 'assistant', 'system', 'developer', and 'user'."
            ),
            "{body}"
        );
        assert!(body.contains(r#""param":"input[1]""#), "{body}");
        let body = refusal(json!({"model": "m", "input": [7]}));
        assert!(
            body.contains(
                "Invalid type for 'input[0]': expected an input item, but got an integer instead."
            ),
            "{body}"
        );
        // Every type the API knows, and each role, is taken.
        let items = json!([{"role": "developer", "content": "be brief"}, {"type": "message", "role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "x"}]);
        assert_eq!(
            check(Api::Responses, &json!({"model": "m", "input": items})),
            Ok(())
        );
    }

    #[test]
    fn input_missing_or_empty_is_refused_unless_something_else_names_the_answer() {
        let body = refusal(json!({"model": "m"}));
        assert!(
            body.contains("Missing required parameter: 'input'."),
            "{body}"
        );
        assert!(
            body.contains(r#""code":"missing_required_parameter""#),
            "{body}"
        );
        let said = r#"One of \"input\" or \"previous_response_id\" or 'prompt' or 'conversation' must be provided."#;
        for empty in [json!([]), json!("")] {
            let body = refusal(json!({"model": "m", "input": empty}));
            assert!(body.contains(said), "{body}");
            assert!(
                body.contains(r#""param":null,"code":"missing_required_parameter""#),
                "{body}"
            );
        }
        assert_eq!(
            check(
                Api::Responses,
                &json!({"model": "m", "prompt": {"id": "pmpt_1"}})
            ),
            Ok(())
        );
        assert_eq!(
            check(
                Api::Responses,
                &json!({"model": "m", "input": [], "conversation": "conv_1"})
            ),
            Ok(())
        );
    }

    #[test]
    fn a_reasoning_item_id_must_be_one_the_api_issues() {
        let reasoning = |item: Value| {
            json!({"model": "m", "input": [{"role": "user", "content": "hi"}, item,
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]})
        };
        let body = refusal(reasoning(
            json!({"type": "reasoning", "id": "", "summary": []}),
        ));
        assert!(
            body.contains("Invalid 'input[1].id': ''. Expected an ID that begins with 'rs'."),
            "{body}"
        );
        assert!(body.contains(r#""param":"input[1].id""#), "{body}");
        let body = refusal(reasoning(
            json!({"type": "reasoning", "id": "item_df7e40c3", "summary": []}),
        ));
        assert!(
            body.contains(
                "Invalid 'input[1].id': 'item_df7e40c3'. Expected an ID that begins with 'rs'."
            ),
            "{body}"
        );
        // The API's own ids, and no id at all, pass this check (the reasoning rules judge them).
        for item in [
            json!({"type": "reasoning", "id": "rs_0001", "summary": []}),
            json!({"type": "reasoning", "summary": []}),
        ] {
            assert_eq!(check(Api::Responses, &reasoning(item)), Ok(()));
        }
    }

    #[test]
    fn instructions_must_be_a_string() {
        let body = refusal(json!({"model": "m", "input": "hi", "instructions": ["be brief"]}));
        assert!(
            body.contains(
                "Invalid type for 'instructions': expected a string, but got an array instead."
            ),
            "{body}"
        );
        assert_eq!(
            check(
                Api::Responses,
                &json!({"model": "m", "input": "hi", "instructions": "be brief"})
            ),
            Ok(())
        );
    }
}
