//! Tests of task state, its tools and its projections. Projection tests go through
//! [`describe`], which renders what one request would show as text compared exactly.
//! `todos`: the list and its tool; `state`: scope, requirements, verification, plan mode;
//! `projections`: what requests show.

use serde_json::{Value, json};

use super::plan::PlanMode;
use super::projection::{Projection, project};
use super::requirements::{Decision, Proposal, RequirementKind, RequirementStatus};
use super::todo::{TODO_REVISION_KEY, TodoError, TodoItem, TodoPriority, TodoStatus};
use super::verification::{CheckResult, Freshness, VerificationService};
use super::*;
use crate::context::render::{MATERIAL_KEY, is_rendered};
use crate::limits::{REQUIREMENTS_MAX, TODO_ITEMS_MAX, VERIFICATION_SUMMARY_CHARS_MAX};
use crate::message::{ContentPart, Message, Role, ToolCall, ToolResult};
use crate::runtime::RuntimeContext;
use crate::tools::{ToolContext, ToolOutcome};

fn item(id: &str, status: TodoStatus) -> TodoItem {
    TodoItem::new(id, format!("Step {id}"), status, TodoPriority::Medium)
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}

/// Calls a task tool with JSON arguments.
fn call_tool(tool: &dyn Tool, arguments: Value) -> ToolOutcome {
    let context = ToolContext {
        agent_id: "agent".into(),
        runtime: RuntimeContext::new(),
        call_id: "call-1".into(),
    };
    let call = ToolCall {
        id: "c1".into(),
        name: tool.schema().name.clone(),
        arguments,
    };
    block_on(tool.call(&call, &context))
}

fn outcome_text(outcome: &ToolOutcome) -> String {
    outcome
        .outputs
        .iter()
        .map(|output| match output {
            crate::message::ToolOutput::Text { text } => text.clone(),
            crate::message::ToolOutput::Media { .. } => String::new(),
        })
        .collect()
}

/// A conversation builder that runs `todo_write` for real, as the agent loop would record it.
struct Conversation {
    shared: SharedTaskState,
    messages: Vec<Message>,
}

impl Conversation {
    fn new() -> Self {
        Conversation {
            shared: SharedTaskState::new(),
            messages: vec![Message::user("m1", "Fix the export.")],
        }
    }

    fn next_id(&self) -> String {
        format!("m{}", self.messages.len() + 1)
    }

    /// One assistant `todo_write` call and its result.
    fn todo_write(&mut self, items: Value) -> ToolOutcome {
        let call_id = format!("c{}", self.messages.len() + 1);
        let call = Message::assistant_tool_calls(
            self.next_id(),
            vec![ContentPart::tool_call(
                call_id.clone(),
                "todo_write",
                json!({"todos": items}),
            )],
        );
        self.messages.push(call);
        let outcome = call_tool(
            &todo::TodoWrite::new(self.shared.clone()),
            json!({"todos": items}),
        );
        let result = ToolResult {
            call_id,
            tool_name: "todo_write".into(),
            outputs: outcome.outputs.clone(),
            is_error: outcome.is_error,
            metadata: outcome.metadata.clone(),
        };
        let id = self.next_id();
        self.messages.push(Message::new(
            id,
            Role::Tool,
            vec![ContentPart::ToolResult(result)],
        ));
        outcome
    }

    fn project(&self, options: TaskContextOptions) -> Projection {
        project(
            &self.shared.snapshot(),
            &options,
            &self.messages,
            Purpose::Reasoning,
        )
    }
}

/// What a projection shows: each tool result of the view (id and text), the transforms, then
/// each transient message's text.
fn describe(projection: &Projection) -> String {
    let mut lines = Vec::new();
    for message in &projection.view {
        for result in message.tool_results() {
            lines.push(format!(
                "{} {}: {}",
                message.id,
                result.tool_name,
                result.text()
            ));
        }
    }
    let transforms: Vec<String> = projection
        .transforms
        .iter()
        .map(|t| t.to_string())
        .collect();
    lines.push(format!("transforms: {}", transforms.join(", ")));
    for message in &projection.transient {
        lines.push(message.text());
    }
    lines.join("\n")
}

const NOTE: &str = "Task state kept by the harness for this request. Todo items record progress; \
confirmed requirements record authorisation; verification reports are bounded evidence, valid \
only while CURRENT. None of these declares the task complete.";

mod projections;
mod state;
mod todos;
