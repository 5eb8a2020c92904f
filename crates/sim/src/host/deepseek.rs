//! DeepSeek's thinking mode on Chat Completions, for a mock with `deepseek_thinking`: the
//! mock's replies carry their thinking in `reasoning_content` (as every Chat reply with thinking
//! does), and DeepSeek requires it back while a turn's tool calls go on. Its thinking-mode guide
//! says the tool-call process "requires users to pass back reasoning_content to the API", and it
//! answers a tool-call assistant message without it with a 400 naming the message's index
//! ("Missing `reasoning_content` field in the assistant message at message index 2", the body
//! quoted in continuedev/continue#9720 and langgenius/dify-official-plugins#2306).
//!
//! Only the current turn is held to it: the assistant messages with tool calls after the last
//! user message. The guide's own example clears the reasoning of earlier turns before the next
//! question, so a harness that drops it there is not refused.

use serde_json::{Value, json};

use super::validate::Invalid;

/// DeepSeek's 400 for the first tool-call assistant message of the current turn sent back
/// without its `reasoning_content` (absent or null), if any.
///
/// # Errors
/// That 400, as [`Invalid`] with the rule `reasoning`.
pub fn check(json: &Value) -> Result<(), Invalid> {
    let Some(messages) = json.get("messages").and_then(Value::as_array) else {
        return Ok(());
    };
    let turn_start = messages
        .iter()
        .rposition(|message| role(message) == Some("user"))
        .map_or(0, |index| index + 1);
    let missing = messages
        .iter()
        .enumerate()
        .skip(turn_start)
        .find(|(_, message)| {
            role(message) == Some("assistant")
                && message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .is_some_and(|calls| !calls.is_empty())
                && !message
                    .get("reasoning_content")
                    .is_some_and(Value::is_string)
        });
    match missing {
        None => Ok(()),
        Some((index, _)) => Err(missing_reasoning(index)),
    }
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

fn missing_reasoning(index: usize) -> Invalid {
    let message = format!(
        "Missing `reasoning_content` field in the assistant message at message index {index}. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
    );
    Invalid {
        reason: format!(
            "message {index}: a tool-call assistant message of the current turn without its reasoning_content (DeepSeek's thinking mode)"
        ),
        rule: Some("reasoning"),
        body: json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "invalid_request_error"}})
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call() -> Value {
        json!([{"id": "call_1", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}])
    }

    #[test]
    fn the_current_turns_tool_call_needs_its_reasoning_back() {
        let without = json!({"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "content": null, "tool_calls": call()},
            {"role": "tool", "tool_call_id": "call_1", "content": "log"},
        ]});
        let refusal = check(&without).expect_err("refused");
        assert_eq!(refusal.rule, Some("reasoning"));
        assert!(
            refusal.body.contains(
                "Missing `reasoning_content` field in the assistant message at message index 2."
            ),
            "{}",
            refusal.body
        );
        let mut with = without.clone();
        with["messages"][2]["reasoning_content"] = "Read the log.".into();
        assert!(check(&with).is_ok());
        with["messages"][2]["reasoning_content"] = Value::Null;
        assert!(check(&with).is_err(), "null is not handing it back");
    }

    #[test]
    fn earlier_turns_and_plain_replies_are_not_held_to_it() {
        let body = json!({"messages": [
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "content": null, "tool_calls": call()},
            {"role": "tool", "tool_call_id": "call_1", "content": "log"},
            {"role": "assistant", "content": "Memory."},
            {"role": "user", "content": "And now?"},
        ]});
        assert!(check(&body).is_ok());
    }
}
