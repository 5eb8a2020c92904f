//! The request bodies the wire plants send instead of the harness's: each rewrite takes the
//! parsed body of a Chat Completions, Messages or Responses request and changes it in place the
//! way one defective harness would have built it.

use serde_json::{Value, json};

/// What the mock's summariser starts each summary with (`ctxbed_sim::mock::reply::summarize`):
/// how `drop_summary` finds the summaries the harness obtained.
pub const SUMMARY_MARK: &str = "Summary of ";

/// The conversation of a body: Chat and Messages `messages`, Responses `input` (a string input
/// has no turns to change).
fn turns(json: &mut Value) -> Option<&mut Vec<Value>> {
    if json.get("messages").is_some() {
        return json.get_mut("messages").and_then(Value::as_array_mut);
    }
    json.get_mut("input").and_then(Value::as_array_mut)
}

fn kind(value: &Value) -> &str {
    value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn role(value: &Value) -> &str {
    value
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// True for a turn of instructions (Chat `system`, Responses `system` or `developer`).
fn is_system(turn: &Value) -> bool {
    matches!(role(turn), "system" | "developer")
}

/// True for a turn that carries a tool result in any of the three formats.
fn carries_result(turn: &Value) -> bool {
    role(turn) == "tool"
        || kind(turn) == "function_call_output"
        || turn
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| blocks.iter().any(|b| kind(b) == "tool_result"))
}

/// Drops the content blocks `drop` names, then the messages left with no content.
fn drop_blocks(turns: &mut Vec<Value>, drop: impl Fn(&Value) -> bool) {
    for turn in turns.iter_mut() {
        if let Some(blocks) = turn.get_mut("content").and_then(Value::as_array_mut) {
            blocks.retain(|block| !drop(block));
        }
    }
    turns.retain(|turn| {
        turn.get("content")
            .and_then(Value::as_array)
            .is_none_or(|blocks| !blocks.is_empty())
    });
}

/// Every tool result taken out: Chat `tool` messages, Responses `function_call_output` items,
/// Messages `tool_result` blocks (and user messages left empty by that).
pub fn strip_tool_results(json: &mut Value) {
    let Some(turns) = turns(json) else { return };
    turns.retain(|t| role(t) != "tool" && kind(t) != "function_call_output");
    drop_blocks(turns, |block| kind(block) == "tool_result");
}

/// Every tool call and every result taken out, as a harness that runs the calls but never hands
/// them back would send: it asks again from the input alone.
pub fn strip_calls_and_results(json: &mut Value) {
    strip_tool_results(json);
    let Some(turns) = turns(json) else { return };
    turns.retain(|t| kind(t) != "function_call");
    for turn in turns.iter_mut() {
        if let Some(fields) = turn.as_object_mut() {
            fields.remove("tool_calls");
        }
    }
    drop_blocks(turns, |block| kind(block) == "tool_use");
    // A Chat assistant message that was only its calls is left with no content at all.
    turns.retain(|turn| {
        role(turn) != "assistant"
            || turn
                .get("content")
                .is_some_and(|c| !c.is_null() && c.as_str() != Some(""))
    });
}

/// The tool calls and results before the last input taken out, every text kept: a session that
/// stores only the text of each turn, so a step sees its own tool exchanges but none of the
/// earlier steps'.
pub fn drop_past_tools(json: &mut Value) {
    let Some(all) = turns(json) else { return };
    let Some(last) = all
        .iter()
        .rposition(|turn| role(turn) == "user" && !carries_result(turn))
    else {
        return;
    };
    let current = all.split_off(last);
    let mut past = json!({ "messages": std::mem::take(all) });
    strip_calls_and_results(&mut past);
    let mut kept = match past["messages"].take() {
        Value::Array(kept) => kept,
        _ => Vec::new(),
    };
    kept.extend(current);
    if let Some(all) = turns(json) {
        *all = kept;
    }
}

/// Thinking taken out: Messages `thinking` and `redacted_thinking` blocks, Responses
/// `reasoning` items and Chat Completions `reasoning_content`.
pub fn strip_thinking(json: &mut Value) {
    let Some(turns) = turns(json) else { return };
    turns.retain(|item| kind(item) != "reasoning");
    for turn in turns.iter_mut() {
        if let Some(blocks) = turn.get_mut("content").and_then(Value::as_array_mut) {
            blocks.retain(|block| !matches!(kind(block), "thinking" | "redacted_thinking"));
        }
        if let Some(message) = turn.as_object_mut() {
            message.remove("reasoning_content");
        }
    }
}

/// An empty text block first in every assistant turn that calls a tool (Messages `tool_use`).
pub fn blank_text(json: &mut Value) {
    let Some(turns) = turns(json) else { return };
    for turn in turns.iter_mut() {
        let Some(blocks) = turn.get_mut("content").and_then(Value::as_array_mut) else {
            continue;
        };
        if blocks.iter().any(|block| kind(block) == "tool_use") {
            blocks.insert(0, json!({"type": "text", "text": ""}));
        }
    }
}

/// How many turns `keep_last` keeps after the instructions.
pub const KEPT_TURNS: usize = 4;

/// The instructions and the last [`KEPT_TURNS`] turns, cut wherever that falls: trimming by
/// count with no care for calls and their results.
pub fn keep_last(json: &mut Value) {
    let Some(turns) = turns(json) else { return };
    let others = turns.iter().filter(|t| !is_system(t)).count();
    let mut skip = others.saturating_sub(KEPT_TURNS);
    turns.retain(|turn| {
        if is_system(turn) || skip == 0 {
            return true;
        }
        skip -= 1;
        false
    });
}

/// The instructions, then the conversation from its first tool result on: a history that
/// starts with a result whose call was trimmed away.
pub fn from_first_result(json: &mut Value) {
    let Some(turns) = turns(json) else { return };
    let Some(first) = turns.iter().position(carries_result) else {
        return;
    };
    let mut index = 0;
    turns.retain(|turn| {
        index += 1;
        index > first || is_system(turn)
    });
}

/// A second system message, after the conversation.
pub fn second_system(json: &mut Value) {
    let extra = json!({"role": "system", "content": "Planted: a second system message."});
    if let Some(text) = json.get("input").and_then(Value::as_str) {
        json["input"] = json!([{"role": "user", "content": text}]);
    }
    if let Some(turns) = turns(json) {
        turns.push(extra);
    }
}

/// Every turn that holds a summary the mock wrote taken out (the instructions kept).
pub fn drop_summaries(json: &mut Value) {
    let Some(turns) = turns(json) else { return };
    turns.retain(|turn| is_system(turn) || !turn.to_string().contains(SUMMARY_MARK));
}

/// The conversation `history` put before the last turn: a summariser handed the whole history
/// at once, however long.
pub fn with_history(json: &mut Value, history: &[Value]) {
    let Some(turns) = turns(json) else { return };
    let at = turns.len().saturating_sub(1);
    let kept: Vec<Value> = history.iter().filter(|t| !is_system(t)).cloned().collect();
    turns.splice(at..at, kept);
}

/// The conversation of a body, for [`with_history`].
pub fn conversation(json: &Value) -> Vec<Value> {
    json.get("messages")
        .or_else(|| json.get("input"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// True when a request body offers tools.
pub fn offers_tools(json: &Value) -> bool {
    json.get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len(json: &Value, key: &str) -> Option<usize> {
        json[key].as_array().map(Vec::len)
    }

    #[test]
    fn a_blank_text_block_goes_before_each_tool_use_turn() {
        let mut body = json!({"messages": [
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "n", "input": {}}]},
        ]});
        blank_text(&mut body);
        assert_eq!(
            body["messages"][1]["content"][0],
            json!({"type": "text", "text": ""})
        );
        assert_eq!(body["messages"][0]["content"], "Why?");
    }

    #[test]
    fn thinking_is_stripped_in_both_wire_formats() {
        let mut anthropic = json!({"messages": [{"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "redacted_thinking", "data": "d"},
            {"type": "tool_use", "id": "c", "name": "n", "input": {}},
        ]}]});
        strip_thinking(&mut anthropic);
        assert_eq!(
            anthropic["messages"][0]["content"].as_array().map(Vec::len),
            Some(1)
        );
        let mut responses = json!({"input": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"},
        ]});
        strip_thinking(&mut responses);
        assert_eq!(len(&responses, "input"), Some(1));
    }

    #[test]
    fn tool_results_and_calls_are_stripped_in_every_wire_format() {
        let openai = json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"}
        ]});
        let mut results = openai.clone();
        strip_tool_results(&mut results);
        assert_eq!(len(&results, "messages"), Some(2));
        let mut both = openai;
        strip_calls_and_results(&mut both);
        assert_eq!(both["messages"], json!([{"role": "user", "content": "q"}]));
        let anthropic = json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading."}, {"type": "tool_use", "id": "t1"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
        ]});
        let mut results = anthropic.clone();
        strip_tool_results(&mut results);
        assert_eq!(len(&results, "messages"), Some(2));
        let mut both = anthropic;
        strip_calls_and_results(&mut both);
        assert_eq!(
            both["messages"][1]["content"],
            json!([{"type": "text", "text": "Reading."}])
        );
        let mut responses = json!({"input": [
            {"role": "user", "content": "q"},
            {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "r"},
        ]});
        strip_calls_and_results(&mut responses);
        assert_eq!(len(&responses, "input"), Some(1));
    }

    #[test]
    fn trimming_by_count_and_from_the_first_result_keep_the_instructions() {
        let body = json!({"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "1"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
            {"role": "assistant", "content": "2"},
            {"role": "user", "content": "3"},
            {"role": "assistant", "content": "4"},
        ]});
        let mut last = body.clone();
        keep_last(&mut last);
        assert_eq!(len(&last, "messages"), Some(1 + KEPT_TURNS));
        assert_eq!(last["messages"][1]["role"], "tool");
        let mut from = body;
        from_first_result(&mut from);
        assert_eq!(len(&from, "messages"), Some(5));
        assert_eq!(from["messages"][0]["role"], "system");
        assert_eq!(from["messages"][1]["role"], "tool");
    }

    #[test]
    fn a_second_system_message_summaries_dropped_and_history_added() {
        let mut body = json!({"input": "q"});
        second_system(&mut body);
        assert_eq!(body["input"][1]["role"], "system");
        let mut body = json!({"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "Summary of 4 request message(s)."},
            {"role": "user", "content": "q"},
        ]});
        drop_summaries(&mut body);
        assert_eq!(len(&body, "messages"), Some(2));
        let history = conversation(&json!({"messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "old"}]}));
        with_history(&mut body, &history);
        assert_eq!(body["messages"][1]["content"], "old");
        assert_eq!(body["messages"][2]["content"], "q");
    }

    #[test]
    fn past_tool_exchanges_are_dropped_and_the_current_steps_kept() {
        let call = |id: &str| json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]});
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "log"});
        let mut chat = json!({"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Step 1"},
            call("c1"), result("c1"),
            {"role": "assistant", "content": "Out of memory."},
            {"role": "user", "content": "Step 2"},
            call("c2"), result("c2"),
        ]});
        drop_past_tools(&mut chat);
        let roles: Vec<&str> = chat["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| m["role"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "user", "assistant", "tool"]
        );
        assert_eq!(chat["messages"][5]["tool_call_id"], "c2");
        // Messages: a user turn of tool results is no input; the earlier turns lose their blocks.
        let mut messages = json!({"messages": [
            {"role": "user", "content": "Step 1"},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading."}, {"type": "tool_use", "id": "t1", "name": "read_log", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "log"}]},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "Step 2"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "read_log", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "log"}]},
        ]});
        drop_past_tools(&mut messages);
        assert_eq!(len(&messages, "messages"), Some(6));
        assert_eq!(
            messages["messages"][1]["content"],
            json!([{"type": "text", "text": "Reading."}])
        );
        assert_eq!(messages["messages"][5]["content"][0]["tool_use_id"], "t2");
        // Responses: function_call and function_call_output items before the last input go.
        let mut responses = json!({"input": [
            {"role": "user", "content": "Step 1"},
            {"type": "function_call", "call_id": "c1", "name": "read_log", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "log"},
            {"role": "assistant", "content": "Done."},
            {"role": "user", "content": "Step 2"},
        ]});
        drop_past_tools(&mut responses);
        assert_eq!(len(&responses, "input"), Some(3));
    }
}
