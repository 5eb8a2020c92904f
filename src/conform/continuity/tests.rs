//! The rules `progress` and `retention` over hand-built exchanges.

use super::*;
use ctxbed_sim::host::{Api, openai};
use serde_json::{Value, json};

/// A main-loop exchange of `messages`, answered as `outcome` with `answer`.
fn exchange(number: u64, messages: Value, outcome: Outcome, answer: Option<Value>) -> Exchange {
    let body = json!({"messages": messages});
    let answer = answer.map(|reply| {
        let request = openai::parse_request(&json!({"messages": [reply]}));
        request.messages[0].clone()
    });
    Exchange {
        number,
        api: Api::OpenAi,
        path: "/v1/chat/completions".into(),
        stream: false,
        request: Some(openai::parse_request(&body)),
        body,
        input_tokens: Some(100),
        status: 200,
        outcome,
        step: Some(1),
        side: false,
        note: None,
        cache: Default::default(),
        refused_rule: None,
        received: tokio::time::Instant::now(),
        retry_after: None,
        answer,
    }
}

/// The mock's call of a scripted tool, made through a CLI's shell.
fn shell_call(id: &str, file: &str) -> Value {
    let arguments = json!({"command": format!("cat {file}")}).to_string();
    json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "bash", "arguments": arguments}}]})
}

/// `progress` over a step: the mock's shell call, then a request carrying `call` and
/// `result`, then the reply.
fn progress_of(call: Value, result: Value) -> Vec<String> {
    let user = json!({"role": "user", "content": "Why?"});
    let asked = shell_call("call_0001", "ctxbed-tools/read_log-1.txt");
    let run = StepRun {
        end: StepEnd::Reply("ok".into()),
        exchanges: vec![
            exchange(1, json!([user]), Outcome::ToolCalls, Some(asked)),
            exchange(2, json!([user, call, result]), Outcome::Reply, None),
        ],
        count_tokens: 0,
    };
    progress(&run, &[read_log()])
}

/// The scenario's tool, with its one scripted result.
fn read_log() -> WireTool {
    WireTool {
        name: "read_log".into(),
        description: "Read the build log.".into(),
        parameters: json!({"type": "object"}),
        results: vec![("error: out of memory\nline 2".into(), false)],
    }
}

/// `progress` over a step whose tool call, `read_log` (`call_0001`), comes back as the text
/// of the next request's `messages`.
fn progress_in_text(messages: Value) -> Vec<String> {
    let user = json!({"role": "user", "content": "Why?"});
    let asked = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0001", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]});
    let run = StepRun {
        end: StepEnd::Reply("ok".into()),
        exchanges: vec![
            exchange(1, json!([user]), Outcome::ToolCalls, Some(asked)),
            exchange(2, messages, Outcome::Reply, None),
        ],
        count_tokens: 0,
    };
    progress(&run, &[read_log()])
}

#[test]
fn a_tool_exchange_written_as_text_is_carried_with_its_id_and_result() {
    let user = json!({"role": "user", "content": "Why?"});
    let call = json!({"role": "assistant", "content": "Calling tools:\n[{'id': 'call_0001', 'type': 'function', 'function': {'name': 'read_log', 'arguments': {}}}]"});
    let observation =
        json!({"role": "user", "content": "Observation:\nerror: out of memory\n  line 2"});
    assert_eq!(
        progress_in_text(json!([user, call, observation])),
        Vec::<String>::new()
    );
    // A failed call written as its error alone names its tool before the result.
    let failed = json!({"role": "user", "content": "Error executing tool 'read_log' with arguments {}: Exception: error: out of memory line 2"});
    assert_eq!(
        progress_in_text(json!([user, failed])),
        Vec::<String>::new()
    );
    // A structured result is judged as structured: its text does not count here.
    let orphan = json!({"role": "tool", "tool_call_id": "call_0001", "content": "error: out of memory\nline 2"});
    let named = json!({"role": "assistant", "content": "Calling read_log."});
    assert_eq!(progress_in_text(json!([user, named, orphan])).len(), 1);
    let unnamed = json!({"role": "assistant", "content": "Calling the log reader."});
    // The call written down without its result, or the result without the call: lost.
    assert_eq!(progress_in_text(json!([user, call])).len(), 1);
    assert_eq!(
        progress_in_text(json!([user, unnamed, observation])).len(),
        1
    );
    // The result before the call is not the call's result.
    assert_eq!(progress_in_text(json!([user, observation, call])).len(), 1);
}

#[test]
fn a_cli_result_that_wraps_the_file_is_the_result_of_its_call() {
    let call = shell_call("call_0001", "ctxbed-tools/read_log-1.txt");
    // The CLI numbers the lines and adds the exit code: still that call's result.
    let result = json!({"role": "tool", "tool_call_id": "call_0001", "content": "     1\terror: out of memory\n\n[exit code 0]"});
    assert_eq!(progress_of(call, result), Vec::<String>::new());
}

#[test]
fn a_cli_result_of_another_call_is_no_progress() {
    // The CLI ran another command of its own and answered that one: the mock's call is lost.
    let call = shell_call("own_1", "ctxbed-tools/read_log-2.txt");
    let result =
        json!({"role": "tool", "tool_call_id": "own_1", "content": "error: out of memory"});
    let found = progress_of(call, result);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("bash (call_0001)"), "{found:?}");
}

#[test]
fn a_cli_that_renames_ids_carries_its_call_by_name_and_arguments() {
    let call = shell_call("toolu_own", "ctxbed-tools/read_log-1.txt");
    let result = json!({"role": "tool", "tool_call_id": "toolu_own", "content": "line 1"});
    assert_eq!(progress_of(call, result), Vec::<String>::new());
}

/// A two-step session: step 1 reads the log through `read_log` (`call_0001`) and answers
/// "Out of memory."; step 2's first request is `second` (its messages), answered with text.
fn retention_of(second: Value, side: Option<(Value, &str)>) -> Option<String> {
    retention_in(true, second, side)
}

/// [`retention_of`] in a scenario that says (`keeps`) or does not say that its steps build on
/// earlier tool results.
fn retention_in(keeps: bool, second: Value, side: Option<(Value, &str)>) -> Option<String> {
    let source = r#"
description = "Two steps"
model = "wire-8k"
[[steps]]
input = "Why did the build fail?"
[[steps]]
input = "And the fix?"
"#;
    let mut scenario = crate::conform::file::parse("test.toml", source, "wire/test")
        .unwrap_or_else(|e| panic!("{e:?}"));
    scenario.tools = vec![read_log()];
    scenario.keeps_tool_exchanges = keeps;
    let user = json!({"role": "user", "content": "Why did the build fail?"});
    let asked = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0001", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]});
    let result = json!({"role": "tool", "tool_call_id": "call_0001", "content": "error: out of memory\nline 2"});
    let reply = json!({"role": "assistant", "content": "Out of memory."});
    let first = StepRun {
        end: StepEnd::Reply("Out of memory.".into()),
        exchanges: vec![
            exchange(1, json!([user]), Outcome::ToolCalls, Some(asked.clone())),
            exchange(2, json!([user, asked, result]), Outcome::Reply, Some(reply)),
        ],
        count_tokens: 0,
    };
    let mut exchanges = Vec::new();
    if let Some((asked, summary)) = side {
        let mut summarised = exchange(
            3,
            asked,
            Outcome::Reply,
            Some(json!({"role": "assistant", "content": summary})),
        );
        summarised.side = true;
        exchanges.push(summarised);
    }
    exchanges.push(exchange(4, second, Outcome::Reply, None));
    let steps = [
        first,
        StepRun {
            end: StepEnd::Reply("ok".into()),
            exchanges,
            count_tokens: 0,
        },
    ];
    retention(&scenario, &steps, 1)
}

#[test]
fn a_session_keeps_the_tool_exchange_of_its_last_step() {
    let user = json!({"role": "user", "content": "Why did the build fail?"});
    let asked = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0001", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]});
    let result = json!({"role": "tool", "tool_call_id": "call_0001", "content": "error: out of memory\nline 2"});
    let reply = json!({"role": "assistant", "content": "Out of memory."});
    let next = json!({"role": "user", "content": "And the fix?"});
    let whole = json!([user, asked, result, reply, next]);
    assert_eq!(retention_of(whole, None), None);
    // A result cleared to a placeholder still answers its call.
    let cleared = json!({"role": "tool", "tool_call_id": "call_0001", "content": "[cleared]"});
    assert_eq!(
        retention_of(json!([user, asked, cleared, reply, next]), None),
        None
    );
    // Input and reply kept, the exchange between them gone: forgotten, by name.
    let found = retention_of(json!([user, reply, next]), None);
    let found = found.unwrap_or_default();
    assert!(
        found.contains("tool call read_log (call_0001) with its result"),
        "{found}"
    );
    assert!(!found.contains("input"), "{found}");
    // The call kept without its result is no better.
    let found = retention_of(json!([user, asked, reply, next]), None);
    assert!(found.is_some_and(|f| f.contains("read_log (call_0001)")));
    // Where the steps do not build on earlier results, dropping them is a strategy.
    assert_eq!(retention_in(false, json!([user, reply, next]), None), None);
}

#[test]
fn a_summary_the_harness_obtained_stands_for_the_tool_exchange() {
    let asked = json!([{"role": "user", "content": "Summarise: Why did the build fail? read_log said: error: out of memory. Out of memory."}]);
    let summary = "Summary of the build: the log showed out of memory.";
    let next = json!({"role": "user", "content": "And the fix?"});
    let kept = json!([
        {"role": "user", "content": format!("{summary} Why did the build fail?")},
        {"role": "assistant", "content": "Out of memory."},
        next,
    ]);
    assert_eq!(
        retention_of(kept.clone(), Some((asked.clone(), summary))),
        None
    );
    // A summary obtained but not sent stands for nothing.
    let unsent = json!([
        {"role": "user", "content": "Why did the build fail?"},
        {"role": "assistant", "content": "Out of memory."},
        next,
    ]);
    assert!(retention_of(unsent, Some((asked, summary))).is_some());
}

#[test]
fn a_call_the_step_never_answered_is_not_required_of_the_next() {
    let source = r#"
description = "Two steps"
model = "wire-8k"
[[steps]]
input = "Why?"
[[steps]]
input = "And?"
"#;
    let mut scenario = crate::conform::file::parse("test.toml", source, "wire/test")
        .unwrap_or_else(|e| panic!("{e:?}"));
    scenario.tools = vec![read_log()];
    scenario.keeps_tool_exchanges = true;
    let user = json!({"role": "user", "content": "Why?"});
    let asked = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0001", "type": "function", "function": {"name": "read_log", "arguments": "{}"}}]});
    let reply = json!({"role": "assistant", "content": "No idea."});
    let next = json!({"role": "user", "content": "And?"});
    let steps = [
        StepRun {
            end: StepEnd::Reply("No idea.".into()),
            exchanges: vec![
                exchange(1, json!([user]), Outcome::ToolCalls, Some(asked)),
                exchange(2, json!([user]), Outcome::Reply, Some(reply.clone())),
            ],
            count_tokens: 0,
        },
        StepRun {
            end: StepEnd::Reply("ok".into()),
            exchanges: vec![exchange(
                3,
                json!([user, reply, next]),
                Outcome::Reply,
                None,
            )],
            count_tokens: 0,
        },
    ];
    assert_eq!(retention(&scenario, &steps, 1), None);
}
