//! The step a host is in and how a request is told apart by structure: [`continues_step`] for a
//! request continuing the step's conversation, [`asks_for_memory`] and [`asks_for_summary`] for
//! a side request's wording.

use serde_json::Value;

use ctxbed_harness::message::{ContentPart, Role};
use ctxbed_harness::model::ModelRequest;

/// A tool call the mock made during a step.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuedCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// The step a host is in, as the test-bed announced it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepState {
    /// 1-based; 0 before the first step.
    pub number: usize,
    /// The input the step's call was given.
    pub input: String,
    /// The tool calls the mock answered this step's main-loop requests with.
    pub calls: Vec<IssuedCall>,
}

/// True when `request` continues the conversation of `step`: its last turn (the last message that
/// is not a system message) is the step's input or carries the result of a tool call the mock
/// made in this step, or, once the mock has made a tool call in this step, the request offers
/// the tools the step called (a harness's loop going on after its compaction rewrote the turn). When the request offers tools, every turn after the last assistant message
/// counts (a harness may add a reminder after the results), and so does a line of a turn that is
/// the input (turns merged into one). Any other request (a summary, a
/// memory extraction, a title, a classifier, however it is worded) is a side request.
pub fn continues_step(request: &ModelRequest, step: &StepState) -> bool {
    let turns: Vec<&ctxbed_harness::message::Message> = request
        .messages
        .iter()
        .filter(|message| message.role != Role::System)
        .collect();
    let Some(last) = turns.last() else {
        return false;
    };
    if is_step_turn(request, last, step) || offers_the_steps_tools(request, step) {
        return true;
    }
    !request.tools.is_empty()
        && turns
            .iter()
            .rev()
            .take_while(|message| message.role != Role::Assistant)
            .any(|message| is_step_turn(request, message, step))
}

/// True when the mock has made a tool call in this step and the request offers every tool the
/// step called: the harness's own loop going on, whatever it did to the turn (its compaction may
/// have replaced the input, the calls and their results with a summary and a reminder). A side
/// request (a summary, a title) offers no tools, or not the step's.
fn offers_the_steps_tools(request: &ModelRequest, step: &StepState) -> bool {
    !step.calls.is_empty()
        && step
            .calls
            .iter()
            .all(|call| request.tools.iter().any(|tool| tool.name == call.name))
}

/// A user turn that is the step's input, or a turn carrying a result of one of the step's calls
/// (by id, or by the name and arguments of the call it answers, for a harness that renames ids).
fn is_step_turn(
    request: &ModelRequest,
    message: &ctxbed_harness::message::Message,
    step: &StepState,
) -> bool {
    let input = step.input.trim();
    let text = message.text();
    // With tools offered, the input may share its turn with other lines (consecutive user
    // turns merged, as Anthropic's alternation forces; a reminder added after it): a line of
    // the turn that is the input counts. A request without tools must be the input itself.
    let is_input = message.role == Role::User
        && !input.is_empty()
        && (text.trim() == input
            || message
                .parts
                .iter()
                .any(|part| matches!(part, ContentPart::Text { text } if text.trim() == input))
            || (!request.tools.is_empty() && text.lines().any(|line| line.trim() == input)));
    if is_input {
        return true;
    }
    let issued = |call_id: &str| {
        step.calls.iter().any(|call| call.id == call_id)
            || request
                .messages
                .iter()
                .flat_map(|m| m.tool_calls())
                .filter(|call| call.id == call_id)
                .any(|call| {
                    step.calls
                        .iter()
                        .any(|c| c.name == call.name && c.arguments == call.arguments)
                })
    };
    message.parts.iter().any(|part| match part {
        ContentPart::ToolResult(result) => issued(&result.call_id),
        _ => false,
    })
}

/// True when a request carries no tools and its last message asks to extract facts into
/// long-term memory: how a host that cannot see a request's purpose recognises a harness's
/// memory flush (ctxbed's default extraction prompt says both).
pub fn asks_for_memory(request: &ModelRequest) -> bool {
    if !request.tools.is_empty() {
        return false;
    }
    request.messages.last().is_some_and(|last| {
        let lower = last.text().to_lowercase();
        lower.contains("long-term memory") && lower.contains("extract")
    })
}

/// Whether a request asks for a summary: no tools, and its last message mentions summarising
/// or condensing (checked after [`asks_for_memory`]).
pub fn asks_for_summary(request: &ModelRequest) -> bool {
    if !request.tools.is_empty() {
        return false;
    }
    let Some(last) = request.messages.last() else {
        return false;
    };
    let asks = |text: &str| {
        let lower = text.to_lowercase();
        lower.contains("summar") || lower.contains("condense")
    };
    last.parts.iter().any(|part| match part {
        ContentPart::Text { text } => asks(text),
        _ => false,
    }) || (last.role == Role::User && asks(&last.text()))
}
