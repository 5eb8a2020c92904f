//! The rules that make doing nothing fail: a harness must keep doing its job, not only fit the
//! window and pair its calls.
//!
//! | rule | what must hold |
//! | --- | --- |
//! | `progress` | after the mock makes tool calls in a step, the step's next main-loop request carries every one of those calls with its result, or the step ends in a reported error |
//! | `retention` | the first main-loop request of a step whose session completed an earlier step carries that step's input and reply (and, where the scenario's steps build on earlier tool results, the tool calls the harness sent back in that step with their results): verbatim, or through a summary the harness obtained of them |
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
//!
//! In a scenario whose steps build on what the tools returned before (`keeps_tool_exchanges`:
//! "read the next log"), the tool calls of that step are required too, as `progress` counts
//! them: the call (by id, or by name and arguments) with a result of it, or the exchange written
//! as text. Only calls the harness sent back within the step are required, and a result may be
//! shortened, offloaded or replaced by a placeholder: keeping a step's input and reply while
//! dropping the tool exchange between them (a session that stores only the text of each turn)
//! is forgetting there. Elsewhere dropping earlier turns' tool exchanges is a strategy (the AI
//! SDK's `pruneMessages`), not judged. A request that holds the whole answer of a side request
//! sent since that step began (a summary) needs no call of it.

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
                .filter(|call| !carries(request, &text, call, tools))
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

/// True when `request` carries `call` with a result: structured ([`carries_call`]) or written
/// as text ([`carries_as_text`], its text read into `text` once per request).
fn carries(
    request: &ModelRequest,
    text: &OnceCell<String>,
    call: &ToolCall,
    tools: &[WireTool],
) -> bool {
    carries_call(request, call)
        || carries_as_text(text.get_or_init(|| text_of(request)), call, tools)
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
    // The step's tool exchanges, where the scenario's steps build on them, unless a summary the
    // harness obtained stands for the step.
    if scenario.keeps_tool_exchanges && !carries_a_summary(request, &side) {
        let text = OnceCell::new();
        let dropped: Vec<String> = sent_back(&steps[earlier], &scenario.tools)
            .into_iter()
            .filter(|call| !carries(request, &text, call, &scenario.tools))
            .map(describe_call)
            .collect();
        if !dropped.is_empty() {
            lost.push(format!(
                "tool call{} {} with {}",
                if dropped.len() == 1 { "" } else { "s" },
                dropped.join(", "),
                if dropped.len() == 1 {
                    "its result"
                } else {
                    "their results"
                },
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

/// The mock's tool calls in `run` that the harness sent back with their results within the
/// step (a call it never answered is `progress`'s, not the next step's).
fn sent_back<'a>(run: &'a StepRun, tools: &[WireTool]) -> Vec<&'a ToolCall> {
    let mut asked: Vec<&ToolCall> = Vec::new();
    let mut answered: Vec<&ToolCall> = Vec::new();
    for (exchange, request) in main_loop(run) {
        let text = OnceCell::new();
        asked.retain(|call| {
            let carried = carries(request, &text, call, tools);
            if carried {
                answered.push(call);
            }
            !carried
        });
        if exchange.outcome == Outcome::ToolCalls
            && let Some(answer) = &exchange.answer
        {
            asked.extend(answer.tool_calls());
        }
    }
    answered
}

/// Whether `request` holds the whole answer of one of `side`, the side requests sent since the
/// previous step began: a summary the harness obtained, which may stand for that step's tool
/// exchanges.
fn carries_a_summary(request: &ModelRequest, side: &[&Exchange]) -> bool {
    let sent = OnceCell::new();
    side.iter()
        .filter_map(|exchange| exchange.answer.as_ref())
        .map(|answer| squash(&answer.text()))
        .filter(|summary| !summary.is_empty())
        .any(|summary| {
            sent.get_or_init(|| request_text(request))
                .contains(summary.as_str())
        })
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
mod tests;
