//! Argument truncation: shorten long string arguments of older tool calls.
//!
//! Off until configured. Runs when the conversation has at least `trigger_messages` messages or
//! `trigger_tokens` tokens; the newest `protect_latest` messages are untouched. In older
//! assistant tool calls, every string (at any depth of the JSON arguments) longer than
//! `max_arg_length` becomes its first 20 characters plus `truncation_text`. Message ids, call ids
//! and metadata are kept.

use serde_json::Value;

use super::config::TruncateArgsConfig;
use crate::message::{ContentPart, Message};

/// Characters kept at the start of a truncated string.
pub const KEPT_PREFIX_CHARS: usize = 20;

/// Truncates in place; returns how many strings were shortened.
pub fn truncate_args(
    messages: &mut [Message],
    config: &TruncateArgsConfig,
    conversation_tokens: u64,
) -> usize {
    let triggered =
        messages.len() >= config.trigger_messages || conversation_tokens >= config.trigger_tokens;
    if !triggered {
        return 0;
    }
    let older = messages.len().saturating_sub(config.protect_latest);
    let mut count = 0;
    for message in &mut messages[..older] {
        // Read before writing: a change through `&mut` copies a shared message.
        let has_long = message
            .tool_calls()
            .any(|call| is_long(&call.arguments, config));
        if !has_long {
            continue;
        }
        for part in &mut message.parts {
            if let ContentPart::ToolCall(call) = part {
                count += shorten(&mut call.arguments, config);
            }
        }
    }
    count
}

/// True when `shorten` would change something in `value`.
fn is_long(value: &Value, config: &TruncateArgsConfig) -> bool {
    match value {
        Value::String(text) => text.chars().count() > config.max_arg_length,
        Value::Array(items) => items.iter().any(|item| is_long(item, config)),
        Value::Object(map) => map.values().any(|item| is_long(item, config)),
        _ => false,
    }
}

fn shorten(value: &mut Value, config: &TruncateArgsConfig) -> usize {
    match value {
        Value::String(text) if text.chars().count() > config.max_arg_length => {
            let kept: String = text.chars().take(KEPT_PREFIX_CHARS).collect();
            *text = format!("{kept}{}", config.truncation_text);
            1
        }
        Value::Array(items) => items.iter_mut().map(|item| shorten(item, config)).sum(),
        Value::Object(map) => map.values_mut().map(|item| shorten(item, config)).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings over 10 characters shortened in every call, none protected.
    fn every_call_over_ten() -> TruncateArgsConfig {
        TruncateArgsConfig {
            trigger_messages: 1,
            protect_latest: 0,
            max_arg_length: 10,
            ..TruncateArgsConfig::default()
        }
    }

    #[test]
    fn only_older_long_strings_are_truncated() {
        let config = TruncateArgsConfig {
            trigger_messages: 2,
            protect_latest: 1,
            max_arg_length: 10,
            ..TruncateArgsConfig::default()
        };
        let call = |id: &str| {
            Message::assistant_tool_calls(
                id,
                vec![ContentPart::tool_call(
                    format!("c-{id}"),
                    "write_file",
                    serde_json::json!({"path": "a.txt", "content": "x".repeat(50), "nested": ["y".repeat(30)]}),
                )],
            )
        };
        let mut messages = vec![call("old"), call("new")];
        assert_eq!(truncate_args(&mut messages, &config, 0), 2);
        let old = messages[0].tool_calls().next().unwrap();
        assert_eq!(old.id, "c-old");
        assert_eq!(old.arguments["path"], "a.txt");
        assert_eq!(
            old.arguments["content"],
            format!("{}{}", "x".repeat(20), config.truncation_text)
        );
        let new = messages[1].tool_calls().next().unwrap();
        assert_eq!(new.arguments["content"].as_str().unwrap().len(), 50);
    }

    #[test]
    fn a_long_string_deep_in_an_array_is_found() {
        let config = every_call_over_ten();
        let mut messages = vec![Message::assistant_tool_calls(
            "a",
            vec![ContentPart::tool_call(
                "c",
                "t",
                serde_json::json!({"short": "ok", "lines": [["z".repeat(11)], "y".repeat(10)]}),
            )],
        )];
        assert_eq!(truncate_args(&mut messages, &config, 0), 1);
        let call = messages[0].tool_calls().next().unwrap();
        assert_eq!(
            call.arguments["lines"][0][0],
            format!("{}{}", "z".repeat(11), config.truncation_text)
        );
        assert_eq!(
            call.arguments["lines"][1],
            "y".repeat(10),
            "at the limit: kept"
        );
    }

    #[test]
    fn a_call_with_nothing_to_shorten_is_not_copied() {
        let config = every_call_over_ten();
        let at_limit = Message::assistant_tool_calls(
            "a",
            vec![ContentPart::tool_call(
                "c",
                "t",
                serde_json::json!({"s": "y".repeat(10)}),
            )],
        );
        let mut messages = vec![at_limit.clone()];
        assert_eq!(truncate_args(&mut messages, &config, 0), 0);
        assert!(
            messages[0].shares_content(&at_limit),
            "a message shared with an earlier request stays shared when nothing in it changes"
        );
    }
}
