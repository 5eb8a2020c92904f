//! The rules that make doing nothing fail: a harness must keep doing its job, not only fit the
//! window and pair its calls.
//!
//! | rule | what must hold |
//! | --- | --- |
//! | `progress` | after the mock makes tool calls in a step, the step's next main-loop request carries every one of those calls with its result, or the step ends in a reported error |
//! | `retention` | the first main-loop request of a step whose session completed an earlier step carries that step's input and reply: verbatim, or through a summary the harness obtained of them |
//!
//! **Carries**, for `progress`: the request holds a call with the call's id (or, for a harness
//! that renames ids, its name and arguments) and a result of that call. A harness that writes
//! its tool exchanges into its messages' text instead (smolagents: "Calling tools: …", then
//! "Observation: …", or only "Error executing tool 'read_log' with arguments …" for a call that
//! failed) carries a call when the text of the request's messages holds the call's id or its
//! tool's name and, after it, the first 200 characters of one of the results the scenario
//! scripts for that tool. A request that repeats the step's
//! previous main-loop request carries no new call, so it is no progress.
//!
//! **Carries**, for `retention`: some message of the request contains the text (the input, or the
//! text of the mock's last answer in that step), whitespace runs counted as one space; or it
//! contains the whole answer of a side request the harness sent after that step began whose
//! request itself carried the text, or carried such an answer (a summary of a summary). Only the
//! session's last completed step is required: trimming older turns stays legal, forgetting the
//! last one does not, and a summary the harness obtained and then dropped is forgetting. A step
//! that ended in an error (its input refused, say) is not required of the next.

use std::cell::OnceCell;

use ctxbed_harness::message::{ContentPart, Message, Role, ToolCall};
use ctxbed_harness::model::ModelRequest;
use ctxbed_sim::host::{Exchange, Outcome};

use super::checks::{StepEnd, StepRun, Violation};
use super::file::{WireScenario, WireTool};

/// Where the rules had something to judge in one run: the mock made a tool call in some step
/// (`progress`), or a step's session had completed an earlier step (`retention`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applies {
    pub progress: bool,
    pub retention: bool,
}

impl Applies {
    /// What `steps` gave the rules to judge.
    pub fn of(scenario: &WireScenario, steps: &[StepRun]) -> Applies {
        let progress = steps.iter().any(|run| {
            main_loop(run).any(|(e, _)| {
                e.outcome == Outcome::ToolCalls
                    && e.answer.as_ref().is_some_and(Message::has_tool_calls)
            })
        });
        // One pass: a step whose session already completed a step gives retention work.
        let mut completed = std::collections::BTreeSet::new();
        let mut retention = false;
        for (step, run) in scenario.steps.iter().zip(steps) {
            let session = (step.user.as_str(), step.session.as_str());
            retention |= completed.contains(&session);
            if last_reply(run).is_some() {
                completed.insert(session);
            }
        }
        Applies {
            progress,
            retention,
        }
    }
}

/// Both rules over every step, each violation carrying its step's number.
pub fn check(scenario: &WireScenario, steps: &[StepRun]) -> Vec<Violation> {
    let mut found = Vec::new();
    for (index, run) in steps.iter().enumerate() {
        let number = index + 1;
        for detail in progress(run, &scenario.tools) {
            found.push(violation("progress", detail, number));
        }
        if let Some(detail) = retention(scenario, steps, index) {
            found.push(violation("retention", detail, number));
        }
    }
    found
}

fn violation(rule: &str, detail: String, step: usize) -> Violation {
    Violation {
        rule: rule.to_string(),
        detail: format!("step {step}, {detail}"),
        step: Some(step),
    }
}

/// The main-loop requests of a step: sent on the step's lane, with a body the host could read.
fn main_loop(run: &StepRun) -> impl Iterator<Item = (&Exchange, &ModelRequest)> {
    run.exchanges
        .iter()
        .filter(|e| !e.side)
        .filter_map(|e| e.request.as_ref().map(|r| (e, r)))
}

/// `progress` over one step: each delivered tool-call answer is followed by a main-loop request
/// carrying its calls and their results, unless the step ends in a reported error.
fn progress(run: &StepRun, tools: &[WireTool]) -> Vec<String> {
    let mut found = Vec::new();
    // The calls of the last delivered tool-call answer not yet carried back, and its request.
    let mut pending: Option<(u64, Vec<&ToolCall>)> = None;
    for (exchange, request) in main_loop(run) {
        if let Some((asked, calls)) = pending.take() {
            // The messages' text, read once for every call the request carries only as text.
            let text = OnceCell::new();
            let missing: Vec<String> = calls
                .iter()
                .filter(|call| {
                    !carries_call(request, call)
                        && !carries_as_text(text.get_or_init(|| text_of(request)), call, tools)
                })
                .map(|call| describe_call(call))
                .collect();
            if !missing.is_empty() {
                found.push(format!(
                    "request {}: it does not carry the mock's tool call{} {} from request {asked} with {}: the harness did not go on with its tool loop",
                    exchange.number,
                    if missing.len() == 1 { "" } else { "s" },
                    missing.join(", "),
                    if missing.len() == 1 { "its result" } else { "their results" },
                ));
            }
        }
        if exchange.outcome == Outcome::ToolCalls
            && let Some(answer) = &exchange.answer
        {
            let calls: Vec<&ToolCall> = answer.tool_calls().collect();
            if !calls.is_empty() {
                pending = Some((exchange.number, calls));
            }
        }
    }
    if let (Some((asked, calls)), StepEnd::Reply(_)) = (pending, &run.end) {
        let names: Vec<String> = calls.iter().map(|call| describe_call(call)).collect();
        found.push(format!(
            "request {asked}: the step ended in a reply without sending back the result of the mock's tool call{} {}",
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        ));
    }
    found
}

fn describe_call(call: &ToolCall) -> String {
    format!("{} ({})", call.name, call.id)
}

/// True when `request` holds `call` (by id, or by name and arguments) and a result of it.
fn carries_call(request: &ModelRequest, call: &ToolCall) -> bool {
    let sent: Vec<&ToolCall> = request
        .messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .filter(|sent| {
            sent.id == call.id || (sent.name == call.name && sent.arguments == call.arguments)
        })
        .collect();
    sent.iter().any(|sent| {
        request
            .messages
            .iter()
            .flat_map(|m| m.tool_results())
            .any(|result| result.call_id == sent.id)
    })
}

/// How much of a scripted result (its first characters, whitespace squashed) a tool exchange
/// written as text must hold.
const TEXT_RESULT_HEAD: usize = 200;

/// The text parts of `request`'s messages (not tool results), each squashed, one a line.
fn text_of(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .flat_map(|message| message.parts.iter())
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(squash(text) + "\n"),
            _ => None,
        })
        .collect()
}

/// True when `text` (a request's [`text_of`]) holds `call`'s id or its tool's name and, after
/// it, the head of one of the results the scenario scripts for the call's tool: the tool
/// exchange written into the messages' text.
fn carries_as_text(text: &str, call: &ToolCall, tools: &[WireTool]) -> bool {
    let Some(tool) = tools.iter().find(|tool| tool.name == call.name) else {
        return false;
    };
    let named = [call.id.as_str(), call.name.as_str()]
        .iter()
        .filter_map(|name| text.find(name).map(|at| at + name.len()))
        .min();
    let Some(at) = named else {
        return false;
    };
    let after = &text[at..];
    // A result's head: a harness may cut a long result short, as it may a structured one.
    tool.results.iter().any(|(result, _)| {
        let head: String = squash(result).chars().take(TEXT_RESULT_HEAD).collect();
        !head.is_empty() && after.contains(head.as_str())
    })
}

/// `retention` for step `index` (from 0): its first main-loop request against the session's
/// last completed step before it.
fn retention(scenario: &WireScenario, steps: &[StepRun], index: usize) -> Option<String> {
    let this = scenario.steps.get(index)?;
    let (first, request) = main_loop(steps.get(index)?).next()?;
    let (earlier, reply) = (0..index).rev().find_map(|before| {
        let step = scenario.steps.get(before)?;
        if step.user != this.user || step.session != this.session {
            return None;
        }
        last_reply(steps.get(before)?).map(|reply| (before, reply))
    })?;
    let input = scenario.steps.get(earlier)?.input.trim().to_string();
    let since = steps.get(earlier)?.exchanges.first()?.number;
    let side: Vec<&Exchange> = steps[earlier..=index]
        .iter()
        .flat_map(|run| &run.exchanges)
        .filter(|e| e.side && e.number > since && e.number < first.number)
        .collect();
    let mut lost = Vec::new();
    for (what, text) in [("input", input), ("reply", reply)] {
        if !text.is_empty() && !carried(request, &text, &side) {
            lost.push(format!(
                "{what} {:?}",
                ctxbed_harness::format::snippet(&text, 60)
            ));
        }
    }
    if lost.is_empty() {
        return None;
    }
    Some(format!(
        "request {}: the session's previous step {} is forgotten: its {} is in neither the request nor a summary the harness obtained and sent",
        first.number,
        earlier + 1,
        lost.join(" and its "),
    ))
}

/// The text of the mock's last delivered text answer in a step that ended in a reply.
fn last_reply(run: &StepRun) -> Option<String> {
    if !matches!(run.end, StepEnd::Reply(_)) {
        return None;
    }
    let text = main_loop(run)
        .filter(|(e, _)| e.outcome == Outcome::Reply)
        .filter_map(|(e, _)| e.answer.as_ref())
        .last()?
        .text();
    Some(text.trim().to_string())
}

/// Whether `request` carries `text` itself or through a chain of summaries among `side` (the
/// side requests sent before it, in order): its text, or the whole answer of a side request
/// whose own request carried the text or such an answer.
pub fn carried(request: &ModelRequest, text: &str, side: &[&Exchange]) -> bool {
    let mut carriers = vec![squash(text)];
    for exchange in side {
        let (Some(asked), Some(answer)) = (&exchange.request, &exchange.answer) else {
            continue;
        };
        let summary = squash(&answer.text());
        if summary.is_empty() {
            continue;
        }
        let inside = request_text(asked);
        if carriers.iter().any(|c| inside.contains(c.as_str())) {
            carriers.push(summary);
        }
    }
    let sent = request_text(request);
    carriers.iter().any(|c| sent.contains(c.as_str()))
}

/// Every text of a request (messages' text and tool results'), whitespace squashed, one line
/// per part.
fn request_text(request: &ModelRequest) -> String {
    let mut all = String::new();
    for message in request.messages.iter() {
        for part in message.parts.iter() {
            let text = match part {
                ContentPart::Text { text } => squash(text),
                ContentPart::ToolResult(result) => squash(&result.text()),
                _ => continue,
            };
            all.push_str(&text);
            all.push('\n');
        }
        if message.role == Role::Assistant {
            // A reply split into several text parts is carried when their whole is.
            all.push_str(&squash(&Message::text(message)));
            all.push('\n');
        }
    }
    all
}

/// `text` with each run of whitespace as one space, trimmed.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
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
}
