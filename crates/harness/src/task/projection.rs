//! Projections: what one reasoning request shows of the task state. Pure functions of a state
//! snapshot, the options and the working conversation.
//!
//! [`project`] returns a [`Projection`]:
//!
//! - **`view`** — the conversation as the model sees it. The newest `todo_write` receipt that
//!   matches the current list, word for word, stays in full; every other successful receipt
//!   becomes a one-line note, "recorded at revision R; the current list is shown in TASK_STATE
//!   or the latest receipt", so obsolete progress does not compete with the current list. Only
//!   the returned copy changes; durable history is never touched.
//! - **`transient`** — new user messages, placed after the conversation and never committed
//!   (they carry [`MATERIAL_KEY`] = `transient`, like rendered material): first `TASK_STATE`
//!   (revision; the Todo list when its current receipt is absent or shortened, e.g. after
//!   compaction; scope, requirements and verification reports when the options enable them),
//!   then `RUNTIME_STATE` (plan mode, when PLAN is active or a plan file is set).
//! - **`revision`** — the task revision projected, for the manifest and for detecting a state
//!   change during preparation.
//!
//! A `SUMMARY`-purpose preparation gets no projection: the view is the conversation unchanged.
//!
//! ```
//! use ctxbed_harness::message::Message;
//! use ctxbed_harness::model::Purpose;
//! use ctxbed_harness::task::plan::PlanMode;
//! use ctxbed_harness::task::projection::project;
//! use ctxbed_harness::task::{TaskContextOptions, TaskContextState};
//! let mut state = TaskContextState::new();
//! state.set_mode(PlanMode::Plan);
//! let conversation = vec![Message::user("m1", "Plan the export fix.")];
//! let options = TaskContextOptions::default();
//! let projection = project(&state, &options, &conversation, Purpose::Reasoning);
//! assert_eq!(projection.revision, Some(1));
//! let text = projection.transient[0].text();
//! assert!(text.starts_with("<RUNTIME_STATE revision=\"1\">\nMode: PLAN (read-only"));
//! assert!(text.contains("not evidence that any plan was approved"));
//! assert!(project(&state, &options, &conversation, Purpose::Summary).transient.is_empty());
//! ```

use serde_json::Value;

use super::TaskContextOptions;
use super::TaskContextState;
use super::todo::{TODO_REVISION_KEY, TODO_WRITE_TOOL, one_line as inline, receipt_revision};
use super::verification::{Freshness, VerificationReport};
use crate::context::block::Placement;
use crate::context::render::{MATERIAL_KEY, escape};
use crate::context::transform::Transform;
use crate::message::{ContentPart, Message, ToolOutput, ToolResult};
use crate::model::Purpose;

/// Id of the `TASK_STATE` message.
pub const TASK_STATE_MESSAGE_ID: &str = "task_state";
/// Id of the `RUNTIME_STATE` (plan mode) message.
pub const PLAN_STATE_MESSAGE_ID: &str = "plan_state";
/// Metadata key naming which projection a transient message is (`task_state`, `plan_state`).
pub const PROJECTION_KEY: &str = "ctxbed.projection";

/// The first line of every `TASK_STATE` body: what the state is, and what it is not.
const TASK_STATE_NOTE: &str = "Task state kept by the harness for this request. Todo items record \
progress; confirmed requirements record authorisation; verification reports are bounded evidence, \
valid only while CURRENT. None of these declares the task complete.";

/// What one preparation shows of the task state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Projection {
    /// The conversation as the model sees it: obsolete Todo receipts shortened. Same length,
    /// order and ids as the input.
    pub view: Vec<Message>,
    /// `TASK_STATE` then `RUNTIME_STATE`, each present only when it has something to say.
    pub transient: Vec<Message>,
    /// The task revision projected; `None` for a `SUMMARY` preparation.
    pub revision: Option<u64>,
    /// What changed, for the manifest: [`Transform::TodoReceiptShortened`] per shortened
    /// receipt and [`Transform::TodoListProjected`] (the list was reconstructed from state).
    pub transforms: Vec<Transform>,
}

/// Projects `state` over `conversation` for one preparation.
///
/// Pass the working conversation after offload and compaction, and a snapshot of the state taken
/// once for this preparation. Use `view` as the conversation and place `transient` after it (and
/// after the runtime material message, before references); do not put `transient` into the
/// history given to `context::prepare`, which drops rendered messages. Commit the durable
/// history, never `view`.
///
/// # Example
///
/// Two receipts: the older becomes a note, the current one stays, so no `TASK_STATE` is needed.
///
/// ```
/// use ctxbed_harness::context::Transform;
/// use ctxbed_harness::message::Message;
/// use ctxbed_harness::model::Purpose;
/// use ctxbed_harness::task::projection::project;
/// use ctxbed_harness::task::todo::{render_receipt, TodoItem, TodoPriority, TodoStatus};
/// use ctxbed_harness::task::{TaskContextOptions, TaskContextState};
///
/// let mut state = TaskContextState::new();
/// let first = vec![TodoItem::new("fix", "Fix quoting", TodoStatus::InProgress, TodoPriority::High)];
/// state.write_todos(first.clone()).unwrap();
/// let second = vec![TodoItem::new("fix", "Fix quoting", TodoStatus::Completed, TodoPriority::High)];
/// state.write_todos(second.clone()).unwrap();
/// let conversation = vec![
///     Message::user("m1", "Fix the export."),
///     Message::tool_result("m3", "c1", "todo_write", render_receipt(&first, 1), false),
///     Message::tool_result("m5", "c2", "todo_write", render_receipt(&second, 2), false),
/// ];
/// let projection = project(&state, &TaskContextOptions::default(), &conversation, Purpose::Reasoning);
/// assert_eq!(
///     projection.view[1].tool_results().next().unwrap().text(),
///     "Todo list recorded at revision 1; the current list is shown in TASK_STATE or the latest receipt."
/// );
/// assert_eq!(projection.view[2], conversation[2]);
/// assert!(projection.transient.is_empty());
/// assert_eq!(projection.revision, Some(2));
/// assert_eq!(projection.transforms, [Transform::TodoReceiptShortened { message_id: "m3".into() }]);
/// ```
pub fn project(
    state: &TaskContextState,
    options: &TaskContextOptions,
    conversation: &[Message],
    purpose: Purpose,
) -> Projection {
    if purpose.is_compaction() {
        return Projection {
            view: conversation.to_vec(),
            ..Projection::default()
        };
    }
    let receipts = shorten_receipts(state, conversation);
    let mut transforms = receipts.transforms;
    let mut transient = Vec::new();
    if let Some(task) = task_state_text(state, options, receipts.current_visible) {
        if let (Some(revision), false) = (state.todo_revision(), receipts.current_visible) {
            transforms.push(Transform::TodoListProjected { revision });
        }
        transient.push(transient_message(TASK_STATE_MESSAGE_ID, "task_state", task));
    }
    if let Some(plan) = plan_state_text(state) {
        transient.push(transient_message(PLAN_STATE_MESSAGE_ID, "plan_state", plan));
    }
    assert_eq!(
        receipts.view.len(),
        conversation.len(),
        "the view keeps every message"
    );
    assert!(
        transient.iter().all(crate::context::render::is_rendered),
        "projections are never committed"
    );
    Projection {
        view: receipts.view,
        transient,
        revision: Some(state.revision()),
        transforms,
    }
}

/// The one-line note an obsolete receipt becomes.
pub fn receipt_note(revision: Option<u64>) -> String {
    let recorded = match revision {
        Some(revision) => format!("recorded at revision {revision}"),
        None => "recorded at an earlier revision".to_string(),
    };
    format!("Todo list {recorded}; the current list is shown in TASK_STATE or the latest receipt.")
}

/// The view with obsolete receipts shortened, and whether the current receipt is visible.
struct Receipts {
    view: Vec<Message>,
    current_visible: bool,
    transforms: Vec<Transform>,
}

/// Shortens every successful `todo_write` result except the newest one whose text is the
/// current full receipt. Without a recorded list there is nothing to compare with, so nothing
/// changes.
fn shorten_receipts(state: &TaskContextState, conversation: &[Message]) -> Receipts {
    let mut view = conversation.to_vec();
    let (Some(current), Some(receipt)) = (state.todo_revision(), state.todo_receipt()) else {
        return Receipts {
            view,
            current_visible: false,
            transforms: Vec::new(),
        };
    };
    let found: Vec<(usize, usize, Option<u64>)> = conversation
        .iter()
        .enumerate()
        .flat_map(|(index, message)| {
            message
                .parts
                .iter()
                .enumerate()
                .filter_map(move |(part, content)| match content {
                    ContentPart::ToolResult(result) if is_receipt(result) => {
                        Some((index, part, recorded_revision(result)))
                    }
                    _ => None,
                })
        })
        .collect();
    let kept = found.iter().rev().find(|(index, part, revision)| {
        *revision == Some(current) && result_at(conversation, *index, *part).text() == receipt
    });
    let kept = kept.map(|(index, part, _)| (*index, *part));
    let mut transforms = Vec::new();
    for (index, part, revision) in &found {
        if kept == Some((*index, *part)) {
            continue;
        }
        let note = receipt_note(*revision);
        let ContentPart::ToolResult(result) = &mut view[*index].parts[*part] else {
            unreachable!("found positions hold tool results");
        };
        if result.text() == note {
            continue;
        }
        result.outputs = vec![ToolOutput::Text { text: note }];
        let transform = Transform::TodoReceiptShortened {
            message_id: view[*index].id.clone(),
        };
        if !transforms.contains(&transform) {
            transforms.push(transform);
        }
    }
    Receipts {
        view,
        current_visible: kept.is_some(),
        transforms,
    }
}

/// A successful `todo_write` result.
fn is_receipt(result: &ToolResult) -> bool {
    result.tool_name == TODO_WRITE_TOOL && !result.is_error
}

/// The revision a receipt recorded: its metadata, else its first line.
fn recorded_revision(result: &ToolResult) -> Option<u64> {
    result
        .metadata
        .get(TODO_REVISION_KEY)
        .and_then(Value::as_u64)
        .or_else(|| receipt_revision(&result.text()))
}

fn result_at(conversation: &[Message], index: usize, part: usize) -> &ToolResult {
    match &conversation[index].parts[part] {
        ContentPart::ToolResult(result) => result,
        _ => unreachable!("found positions hold tool results"),
    }
}

/// The `TASK_STATE` text, or `None` when it would carry nothing the model cannot see already.
fn task_state_text(
    state: &TaskContextState,
    options: &TaskContextOptions,
    receipt_visible: bool,
) -> Option<String> {
    let mut sections: Vec<String> = Vec::new();
    if let (true, Some(scope)) = (options.scope_visible(), state.scope()) {
        sections.push(format!(
            "Task {}: {}",
            escape(&inline(&scope.task_id)),
            escape(scope.objective.trim())
        ));
    }
    if let (Some(receipt), false) = (state.todo_receipt(), receipt_visible) {
        sections.push(escape(&receipt));
    }
    if options.requirements_visible() && !state.requirements().is_empty() {
        sections.push(requirements_section(state));
    }
    if options.include_verification_results && state.verification_reports().next().is_some() {
        sections.push(verification_section(state));
    }
    if sections.is_empty() {
        return None;
    }
    if let (Some(revision), true) = (state.todo_revision(), receipt_visible) {
        sections.push(format!(
            "Todo: the current list is the latest todo_write receipt (revision {revision})."
        ));
    }
    Some(format!(
        "<TASK_STATE revision=\"{}\">\n{TASK_STATE_NOTE}\n\n{}\n</TASK_STATE>",
        state.revision(),
        sections.join("\n\n")
    ))
}

fn requirements_section(state: &TaskContextState) -> String {
    let mut text = format!(
        "Requirements (contract version {}):",
        state.contract_version()
    );
    for requirement in state.requirements() {
        let decided = match &requirement.decided_by {
            Some(authority) => format!("; decided by {}", escape(&inline(authority))),
            None => String::new(),
        };
        text.push_str(&format!(
            "\n- {} {} {}: {} (source: {}{decided})",
            requirement.id,
            requirement.status.as_str(),
            requirement.kind.as_str(),
            escape(&inline(&requirement.text)),
            escape(&inline(&requirement.source)),
        ));
    }
    text
}

fn verification_section(state: &TaskContextState) -> String {
    let subject = match state.subject_version() {
        Some(version) => escape(&inline(version)),
        None => "unknown".to_string(),
    };
    let mut text = format!("Verification (subject version {subject}):");
    for report in state.verification_reports() {
        text.push_str(&format!("\n- {}", report_line(state, report)));
    }
    text
}

/// `check: PASSED, CURRENT — summary`; a stale report also says what it was bound to.
fn report_line(state: &TaskContextState, report: &VerificationReport) -> String {
    let verdict = if report.passed { "PASSED" } else { "FAILED" };
    let freshness = state.freshness(report);
    let bound = match freshness {
        Freshness::Current => String::new(),
        Freshness::Stale => format!(
            " (checked task {}, contract version {}, subject version {})",
            escape(&inline(&report.binding.task_id)),
            report.binding.contract_version,
            escape(&inline(&report.binding.subject_version)),
        ),
    };
    format!(
        "{}: {verdict}, {}{bound} — {}",
        escape(&inline(&report.check)),
        freshness.as_str(),
        escape(&inline(report.summary.trim()))
    )
}

/// The `RUNTIME_STATE` text, while PLAN mode is active or a plan file is set.
fn plan_state_text(state: &TaskContextState) -> Option<String> {
    let plan = state.plan();
    if !plan.is_projected() {
        return None;
    }
    let mode = match plan.mode {
        super::plan::PlanMode::Plan => {
            "Mode: PLAN (read-only: investigate and write the plan; make no other changes)."
        }
        super::plan::PlanMode::Build => "Mode: BUILD.",
    };
    let file = match &plan.plan_path {
        Some(path) => escape(path.as_str()),
        None => "none set".to_string(),
    };
    Some(format!(
        "<RUNTIME_STATE revision=\"{}\">\n{mode}\nPlan file: {file}\nThis describes the current mode; it is not evidence that any plan was approved.\n</RUNTIME_STATE>",
        state.revision()
    ))
}

/// A user message marked as transient material, so it is never committed.
fn transient_message(id: &str, projection: &str, text: String) -> Message {
    let mut message = Message::user(id, text);
    message.metadata.insert(
        MATERIAL_KEY.to_string(),
        Value::String(Placement::Transient.as_str().to_string()),
    );
    message.metadata.insert(
        PROJECTION_KEY.to_string(),
        Value::String(projection.to_string()),
    );
    message
}
