//! Anthropic's extended thinking as the API checks it: the `thinking` setting (its type and
//! budget), the thinking blocks handed back (their text, signature and redacted data), and
//! the rule that a tool loop's final assistant message starts with its thinking.

use serde_json::Value;

use super::Problem;
use crate::host::anthropic;

/// The smallest `budget_tokens` Anthropic takes.
pub const BUDGET_MIN: i64 = 1024;

/// The `thinking` setting, as Anthropic refuses it: a type it does not know, an enabled one
/// without a budget, a budget under [`BUDGET_MIN`], or one not under `max_tokens`.
pub(super) fn setting_problem(json: &Value) -> Option<Problem> {
    let thinking = json.get("thinking").filter(|v| !v.is_null())?;
    let said = |message: String| Some(Problem::Worded(message));
    let Some(setting) = thinking.as_object() else {
        // Measured 2026-08-31 (kangminlee-maker/local-OAuth-CLI-API-adapter,
        // test/anthropic-messages-validation-parity.test.mjs, row "thinking as a string").
        return said("thinking: Input should be an object".into());
    };
    let kind = setting
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match kind {
        "enabled" => {}
        "adaptive" => return forced_tool_problem(json),
        "disabled" => return None,
        other => {
            // `thinking: Input tag 'adaptive' found using 'type' does not match any of the
            // expected tags: 'enabled', 'disabled'` (a model without adaptive thinking; quoted
            // in a public comment found by the code index). The list with `adaptive` added, in
            // the SDK's union order, is not confirmed by a public capture.
            return said(format!(
                "thinking: Input tag '{other}' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'"
            ));
        }
    }
    // Pydantic names the tagged member's field `thinking.enabled.budget_tokens`: its minimum is
    // `thinking.enabled.budget_tokens: Input should be greater than or equal to 1024`
    // (danny-avila/LibreChat#8346, themaximalist/llm.js#30); a missing or non-integer one is
    // worded the same way (`Field required`, `Input should be a valid integer`), which no
    // public capture shows for this field.
    let budget = match setting.get("budget_tokens").filter(|v| !v.is_null()) {
        None => return said("thinking.enabled.budget_tokens: Field required".into()),
        Some(value) => match value.as_i64() {
            None => {
                return said(
                    "thinking.enabled.budget_tokens: Input should be a valid integer".into(),
                );
            }
            Some(budget) => budget,
        },
    };
    if budget < BUDGET_MIN {
        return said(format!(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to {BUDGET_MIN}"
        ));
    }
    if let Some(problem) = forced_tool_problem(json) {
        return Some(problem);
    }
    // liuw1535/antigravity2api-nodejs#149. Interleaved thinking (a beta header the host does
    // not see) lifts this rule; a request is read without its headers, so it holds always.
    let max_tokens = json.get("max_tokens").and_then(Value::as_i64)?;
    (budget >= max_tokens).then(|| {
        Problem::Worded(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size".into(),
        )
    })
}

/// Thinking with a `tool_choice` that forces a tool (`any`, or `tool` by name), which
/// Anthropic refuses (its extended-thinking guide: thinking is not compatible with forced tool
/// use): `Thinking may not be enabled when tool_choice forces tool use.`
/// (langchain-ai/langchain#35539, fixed by #35544; mastra-ai/mastra#7507; usestrix/strix#503).
fn forced_tool_problem(json: &Value) -> Option<Problem> {
    let forced = json
        .get("tool_choice")
        .and_then(|choice| choice.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|kind| kind == "any" || kind == "tool");
    forced.then(|| {
        Problem::Worded("Thinking may not be enabled when tool_choice forces tool use.".into())
    })
}

/// Whether `signature` has the form of one the host gives (`ctxbed-` and 64 hex digits).
fn well_formed(signature: &str) -> bool {
    signature
        .strip_prefix("ctxbed-")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The thinking blocks handed back, as Anthropic checks each: its text a string
/// (`messages.1.content.0.thinking.thinking: Input should be a valid string`, pydantic's
/// wording at the field's path, as for the signature below; no public capture of this field),
/// then its signature: missing (`messages.1.content.0.thinking.signature: Field required`,
/// lbjlaq/Antigravity-Manager#1650); in the latest assistant message, one the host gave but
/// for other text (``messages.1.content.0: `thinking` or `redacted_thinking` blocks in the
/// latest assistant message cannot be modified. These blocks must remain as they were in the
/// original response.``, anthropics/claude-code#19539, #63203); otherwise one that is not the
/// text's (``messages.1.content.0: Invalid `signature` in `thinking` block``,
/// ding113/claude-code-hub#518). A `redacted_thinking` block whose data the host did not give
/// is ``messages.23.content.2: Invalid `data` in `redacted_thinking` block``
/// (anthropics/claude-code#56708).
pub(super) fn block_problem(json: &Value) -> Option<Problem> {
    let messages = json.get("messages")?.as_array()?;
    let role = |m: &Value| m.get("role").and_then(Value::as_str) == Some("assistant");
    let latest = messages.iter().rposition(role);
    for (index, message) in messages.iter().enumerate() {
        let Some(blocks) = message.get("content").and_then(Value::as_array) else {
            continue;
        };
        for (at, block) in blocks.iter().enumerate() {
            let found = match block.get("type").and_then(Value::as_str) {
                Some("thinking") => thinking_block(block, Some(index) == latest),
                Some("redacted_thinking") => redacted_block(block),
                _ => None,
            };
            if let Some((at_field, problem)) = found {
                let path = format!("messages.{index}.content.{at}{at_field}");
                return Some(match problem {
                    Said::Malformed(words) => Problem::Worded(format!("{path}: {words}")),
                    Said::Rule(words) => Problem::Thinking(format!("{path}: {words}")),
                });
            }
        }
    }
    None
}

/// What is wrong with one block: a malformed field, or a rule of handing thinking back.
enum Said {
    Malformed(&'static str),
    Rule(&'static str),
}

fn thinking_block(block: &Value, latest: bool) -> Option<(&'static str, Said)> {
    let text = match block.get("thinking") {
        None => return Some((".thinking.thinking", Said::Malformed("Field required"))),
        Some(Value::String(text)) => text,
        Some(_) => {
            return Some((
                ".thinking.thinking",
                Said::Malformed("Input should be a valid string"),
            ));
        }
    };
    let Some(signature) = block.get("signature").and_then(Value::as_str) else {
        return Some((".thinking.signature", Said::Rule("Field required")));
    };
    if signature == anthropic::signature(text) {
        return None;
    }
    Some(if latest && well_formed(signature) {
        (
            "",
            Said::Rule(
                "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.",
            ),
        )
    } else {
        ("", Said::Rule("Invalid `signature` in `thinking` block"))
    })
}

fn redacted_block(block: &Value) -> Option<(&'static str, Said)> {
    let data = block
        .get("data")
        .and_then(Value::as_str)
        .unwrap_or_default();
    crate::mock::redacted_text(data).is_none().then_some((
        "",
        Said::Rule("Invalid `data` in `redacted_thinking` block"),
    ))
}

/// Extended thinking's rule (Anthropic): with `thinking` enabled, the final assistant message of
/// a tool loop (the one whose `tool_use` the last user turn answers) must start with its
/// `thinking` or `redacted_thinking` block, as the model sent it; with thinking off, an assistant
/// message in the final position may not hold one.
pub(super) fn final_message_problem(json: &Value) -> Option<Problem> {
    let messages = json.get("messages")?.as_array()?;
    let enabled = super::super::anthropic::thinking_enabled(json);
    let role = |m: &Value| {
        m.get("role")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let blocks = |m: &Value| -> Vec<String> {
        match m.get("content") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|b| {
                    b.get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("text")
                        .to_string()
                })
                .collect(),
            Some(Value::String(_)) => vec!["text".to_string()],
            _ => Vec::new(),
        }
    };
    let last = messages.len().checked_sub(1)?;
    if !enabled {
        if role(&messages[last]) != "assistant" {
            return None;
        }
        let at = blocks(&messages[last])
            .iter()
            .position(|kind| kind == "thinking" || kind == "redacted_thinking")?;
        return Some(Problem::Thinking(format!(
            "messages.{last}.content.{at}: When thinking is disabled, an `assistant` message in the final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request."
        )));
    }
    // The last assistant message, when the user turn after it answers its tool calls.
    let index = messages.iter().rposition(|m| role(m) == "assistant")?;
    let answered = messages.get(index + 1).is_some_and(|next| {
        role(next) == "user" && blocks(next).iter().any(|kind| kind == "tool_result")
    });
    let kinds = blocks(&messages[index]);
    if !answered || !kinds.iter().any(|kind| kind == "tool_use") {
        return None;
    }
    let first = kinds.first().map_or("text", String::as_str);
    if first == "thinking" || first == "redacted_thinking" {
        return None;
    }
    Some(Problem::Thinking(format!(
        "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    )))
}

#[cfg(test)]
mod tests {
    use super::super::{Api, check};
    use serde_json::{Value, json};

    fn refusal(body: &Value) -> String {
        check(Api::Anthropic, body)
            .err()
            .map(|i| i.body)
            .unwrap_or_default()
    }

    fn asking(thinking: Value, max_tokens: u64) -> Value {
        json!({"model": "m", "max_tokens": max_tokens, "thinking": thinking,
               "messages": [{"role": "user", "content": "Why?"}]})
    }

    #[test]
    fn the_thinking_setting_is_refused_as_anthropic_refuses_it() {
        let budget = |tokens: Value, max: u64| {
            refusal(&asking(
                json!({"type": "enabled", "budget_tokens": tokens}),
                max,
            ))
        };
        assert!(
            budget(json!(512), 4096).contains(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            ),
            "{}",
            budget(json!(512), 4096)
        );
        assert!(budget(json!(2048), 2048).contains(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
        ));
        assert!(
            budget(json!("lots"), 4096)
                .contains("thinking.enabled.budget_tokens: Input should be a valid integer")
        );
        assert!(
            refusal(&asking(json!({"type": "enabled"}), 4096))
                .contains("thinking.enabled.budget_tokens: Field required")
        );
        assert!(refusal(&asking(json!({"type": "sometimes"}), 4096)).contains(
            "thinking: Input tag 'sometimes' found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'"
        ));
        assert!(
            refusal(&asking(json!("on"), 4096)).contains("thinking: Input should be an object")
        );
        // What the API takes.
        assert_eq!(budget(json!(1024), 2048), "");
        assert_eq!(refusal(&asking(json!({"type": "adaptive"}), 64)), "");
        assert_eq!(refusal(&asking(json!({"type": "disabled"}), 64)), "");
        assert_eq!(refusal(&asking(Value::Null, 64)), "");
    }

    #[test]
    fn thinking_with_a_forced_tool_choice_is_refused() {
        let refused = "Thinking may not be enabled when tool_choice forces tool use.";
        let with_choice = |thinking: &Value, choice: Value| {
            let mut body = asking(thinking.clone(), 4096);
            body["tools"] = json!([{"name": "read_log", "input_schema": {"type": "object"}}]);
            body["tool_choice"] = choice;
            refusal(&body)
        };
        for thinking in [
            json!({"type": "enabled", "budget_tokens": 2048}),
            json!({"type": "adaptive"}),
        ] {
            for choice in [
                json!({"type": "any"}),
                json!({"type": "tool", "name": "read_log"}),
            ] {
                assert!(with_choice(&thinking, choice).contains(refused));
            }
            for choice in [json!({"type": "auto"}), json!({"type": "none"})] {
                assert_eq!(with_choice(&thinking, choice), "");
            }
        }
        let disabled = json!({"type": "disabled"});
        assert_eq!(with_choice(&disabled, json!({"type": "any"})), "");
    }

    #[test]
    fn thinking_blocks_handed_back_are_checked_field_by_field() {
        let signed = crate::host::anthropic::signature("Read it.");
        let call = json!({"type": "tool_use", "id": "toolu_1", "name": "read_log", "input": {}});
        let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]});
        let with = |earlier: Value, latest: Value| {
            json!({"model": "m", "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024},
                   "messages": [{"role": "user", "content": "Why?"},
                                {"role": "assistant", "content": [earlier, call.clone()]}, result.clone(),
                                {"role": "assistant", "content": [latest, call.clone()]}, result.clone()]})
        };
        let good = json!({"type": "thinking", "thinking": "Read it.", "signature": signed});
        assert_eq!(refusal(&with(good.clone(), good.clone())), "");
        let altered =
            json!({"type": "thinking", "thinking": "Read it twice.", "signature": signed});
        assert!(refusal(&with(good.clone(), altered.clone())).contains(
            "messages.3.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response."
        ));
        // Not the latest assistant message, or a signature the host never gives.
        assert!(
            refusal(&with(altered, good.clone()))
                .contains("messages.1.content.0: Invalid `signature` in `thinking` block")
        );
        let forged =
            json!({"type": "thinking", "thinking": "Read it.", "signature": "EqQBCgIYAhIM"});
        assert!(
            refusal(&with(good.clone(), forged))
                .contains("messages.3.content.0: Invalid `signature` in `thinking` block")
        );
        let number = json!({"type": "thinking", "thinking": 7, "signature": signed});
        assert!(
            refusal(&with(good.clone(), number))
                .contains("messages.3.content.0.thinking.thinking: Input should be a valid string")
        );
        let made_up = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"});
        assert!(
            refusal(&with(good.clone(), made_up))
                .contains("messages.3.content.0: Invalid `data` in `redacted_thinking` block")
        );
        let mut message = ctxbed_harness::message::Message::new(
            "a",
            ctxbed_harness::message::Role::Assistant,
            vec![ctxbed_harness::message::ContentPart::thinking("Read it.")],
        );
        crate::mock::redact_thinking(&mut message);
        let data = match &message.parts[0] {
            ctxbed_harness::message::ContentPart::RedactedThinking { data } => data.clone(),
            other => panic!("{other:?}"),
        };
        let given = json!({"type": "redacted_thinking", "data": data});
        assert_eq!(refusal(&with(good, given)), "");
    }
}
