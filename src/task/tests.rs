//! Tests of task state, its tools and its projections. Projection tests go through
//! [`describe`], which renders what one request would show as text compared exactly.

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
    lines.push(format!("transforms: {}", projection.transforms.join(", ")));
    for message in &projection.transient {
        lines.push(message.text());
    }
    lines.join("\n")
}

const NOTE: &str = "Task state kept by the harness for this request. Todo items record progress; \
confirmed requirements record authorisation; verification reports are bounded evidence, valid \
only while CURRENT. None of these declares the task complete.";

// ---- Todo ----

#[test]
fn statuses_and_priorities_have_their_schema_names() {
    for status in TodoStatus::ALL {
        assert_eq!(TodoStatus::parse(status.as_str()), Some(status));
    }
    for priority in TodoPriority::ALL {
        assert_eq!(TodoPriority::parse(priority.as_str()), Some(priority));
    }
    assert_eq!(TodoStatus::parse("done"), None);
    assert_eq!(TodoPriority::parse("urgent"), None);
}

#[test]
fn every_successful_write_bumps_the_one_revision() {
    let mut state = TaskContextState::new();
    assert_eq!(state.todo_revision(), None);
    assert_eq!(
        state.write_todos(vec![item("a", TodoStatus::Pending)]),
        Ok(1)
    );
    state.set_mode(PlanMode::Plan);
    assert_eq!(
        state.write_todos(vec![item("a", TodoStatus::Pending)]),
        Ok(3)
    );
    assert_eq!(state.revision(), 3);
    assert_eq!(state.todo_revision(), Some(3));
}

#[test]
fn a_failed_write_changes_nothing() {
    let long_id = "x".repeat(crate::limits::TASK_NAME_CHARS_MAX + 1);
    let too_many: Vec<TodoItem> = (0..=TODO_ITEMS_MAX)
        .map(|n| item(&format!("i{n}"), TodoStatus::Pending))
        .collect();
    let cases: Vec<(Vec<TodoItem>, TodoError)> = vec![
        (
            vec![
                item("a", TodoStatus::InProgress),
                item("b", TodoStatus::Pending),
                item("c", TodoStatus::InProgress),
            ],
            TodoError::SeveralInProgress {
                ids: vec!["a".into(), "c".into()],
            },
        ),
        (
            vec![TodoItem::new(
                "a",
                " \n ",
                TodoStatus::Pending,
                TodoPriority::Low,
            )],
            TodoError::BlankContent { id: "a".into() },
        ),
        (
            vec![
                item("a", TodoStatus::Pending),
                item(" ", TodoStatus::Pending),
            ],
            TodoError::BlankId { position: 2 },
        ),
        (
            vec![
                item("a", TodoStatus::Pending),
                item("a", TodoStatus::Completed),
            ],
            TodoError::DuplicateId {
                id: "a".into(),
                first: 1,
                second: 2,
            },
        ),
        (
            vec![item(&long_id, TodoStatus::Pending)],
            TodoError::IdTooLong {
                position: 1,
                chars: long_id.len(),
                max: crate::limits::TASK_NAME_CHARS_MAX,
            },
        ),
        (
            too_many,
            TodoError::TooMany {
                count: TODO_ITEMS_MAX + 1,
                max: TODO_ITEMS_MAX,
            },
        ),
    ];
    let mut state = TaskContextState::new();
    state
        .write_todos(vec![item("keep", TodoStatus::InProgress)])
        .expect("a valid list");
    for (items, expected) in cases {
        let before = state.clone();
        assert_eq!(state.write_todos(items), Err(TaskError::Todo(expected)));
        assert_eq!(state, before, "a failed write changed the state");
    }
}

#[test]
fn todo_write_answers_with_the_full_receipt() {
    let shared = SharedTaskState::new();
    let tool = todo::TodoWrite::new(shared.clone());
    let outcome = call_tool(
        &tool,
        json!({"todos": [
            {"id": "reproduce", "content": "Reproduce the failure", "status": "completed", "priority": "high"},
            {"id": "fix", "content": "Fix quoting\nin the writer", "status": "in_progress"},
        ]}),
    );
    assert!(!outcome.is_error);
    assert_eq!(
        outcome_text(&outcome),
        "Todo list (revision 1):\n\
         - [completed] reproduce (high): Reproduce the failure\n\
         - [in_progress] fix (medium): Fix quoting in the writer"
    );
    assert_eq!(outcome.metadata.get(TODO_REVISION_KEY), Some(&json!(1)));
    assert_eq!(shared.snapshot().todos().len(), 2);
}

#[test]
fn todo_write_refuses_bad_arguments_without_changing_the_list() {
    let shared = SharedTaskState::new();
    let tool = todo::TodoWrite::new(shared.clone());
    call_tool(
        &tool,
        json!({"todos": [{"id": "a", "content": "A", "status": "pending"}]}),
    );
    let before = shared.snapshot();
    let cases = [
        (
            json!({}),
            "invalid todo_write arguments: missing required argument `todos`",
        ),
        (
            json!({"todo": []}),
            "invalid todo_write arguments: unknown argument `todo`; did you mean `todos`?",
        ),
        (
            json!({"todos": "a, b"}),
            "invalid todo_write arguments: `todos` must be an array of items, got \"a, b\"",
        ),
        (
            json!({"todos": [{"id": "a", "content": "A", "status": "done"}]}),
            "invalid todo_write arguments: `todos[0]`: unknown status `done`;",
        ),
        (
            json!({"todos": [{"id": "a", "content": "A", "status": "pending", "owner": "me"}]}),
            "invalid todo_write arguments: `todos[0]`: unknown field `owner`;",
        ),
        (
            json!({"todos": [{"id": "a", "status": "pending"}]}),
            "invalid todo_write arguments: `todos[0]`: missing field `content`;",
        ),
        (
            json!({"todos": [
                {"id": "a", "content": "A", "status": "in_progress"},
                {"id": "b", "content": "B", "status": "in_progress"},
            ]}),
            "the Todo list was not changed: items `a`, `b` are all in_progress; at most one item \
             may be in_progress — mark the others pending or completed; the list is still at revision 1",
        ),
    ];
    for (arguments, expected) in cases {
        let outcome = call_tool(&tool, arguments);
        assert!(outcome.is_error);
        let text = outcome_text(&outcome);
        assert!(text.starts_with(expected), "{text}");
        assert_eq!(shared.snapshot(), before);
    }
}

// ---- Task scope ----

#[test]
fn begin_task_is_a_no_op_for_the_same_scope_and_an_error_for_a_new_objective() {
    let mut state = TaskContextState::new();
    let scope = TaskScope::new("export-fix", "Fix the export");
    assert_eq!(state.begin_task(scope.clone()), Ok(BeginOutcome::Started));
    assert_eq!(state.begin_task(scope), Ok(BeginOutcome::Unchanged));
    assert_eq!(state.revision(), 1);
    let before = state.clone();
    let error = state
        .begin_task(TaskScope::new("export-fix", "Rewrite the exporter"))
        .unwrap_err();
    assert_eq!(error.kind(), "objective_mismatch");
    assert_eq!(state, before);
    assert_eq!(
        state.begin_task(TaskScope::new(" ", "x")),
        Err(TaskError::Blank {
            what: "the task id"
        })
    );
}

#[test]
fn a_new_task_drops_the_old_requirements_and_reports_but_keeps_the_todo_list() {
    let mut state = TaskContextState::new();
    state
        .propose(Proposal::new(
            RequirementKind::Acceptance,
            "Tests pass",
            "user",
        ))
        .expect("a proposal");
    state
        .begin_task(TaskScope::new("one", "First"))
        .expect("a task");
    assert_eq!(state.requirements().len(), 1, "early proposals are kept");
    state.set_subject_version("v1").expect("a version");
    let binding = state.current_binding().expect("a binding");
    state
        .record_verification("tests", binding, CheckResult::passed("ok"))
        .expect("a report");
    state
        .write_todos(vec![item("a", TodoStatus::Pending)])
        .expect("a list");
    assert_eq!(
        state.begin_task(TaskScope::new("two", "Second")),
        Ok(BeginOutcome::Replaced {
            previous_task_id: "one".into()
        })
    );
    assert!(state.requirements().is_empty());
    assert_eq!(state.verification_reports().count(), 0);
    assert_eq!(state.todos().len(), 1);
}

// ---- Requirements ----

#[test]
fn proposals_are_deduplicated_on_kind_text_and_source() {
    let mut state = TaskContextState::new();
    let first = state
        .propose(Proposal::new(
            RequirementKind::Constraint,
            "Keep the format",
            "user",
        ))
        .expect("a proposal");
    assert_eq!(
        (first.id.as_str(), first.created, first.revision),
        ("req-1", true, 1)
    );
    let again = state
        .propose(Proposal::new(
            RequirementKind::Constraint,
            " Keep the format ",
            "user",
        ))
        .expect("a duplicate");
    assert_eq!(
        (again.id.as_str(), again.created, again.revision),
        ("req-1", false, 1)
    );
    for (kind, source) in [
        (RequirementKind::Acceptance, "user"),
        (RequirementKind::Constraint, "model"),
    ] {
        let other = state
            .propose(Proposal::new(kind, "Keep the format", source))
            .expect("a distinct proposal");
        assert!(other.created);
    }
    assert_eq!(state.requirements().len(), 3);
    assert!(state.requirements().iter().all(|r| r.is_candidate()));
}

#[test]
fn at_most_sixty_four_requirements_are_held() {
    let mut state = TaskContextState::new();
    for n in 0..REQUIREMENTS_MAX {
        state
            .propose(Proposal::new(
                RequirementKind::Acceptance,
                format!("R{n}"),
                "app",
            ))
            .expect("under the limit");
    }
    let before = state.clone();
    assert_eq!(
        state.propose(Proposal::new(
            RequirementKind::Acceptance,
            "one more",
            "app"
        )),
        Err(TaskError::RequirementLimit {
            max: REQUIREMENTS_MAX
        })
    );
    assert_eq!(state, before);
    let duplicate = state
        .propose(Proposal::new(RequirementKind::Acceptance, "R0", "app"))
        .expect("a duplicate is not a new requirement");
    assert!(!duplicate.created);
}

#[test]
fn decide_checks_the_expected_revision_and_is_idempotent() {
    let mut state = TaskContextState::new();
    let id = state
        .propose(Proposal::new(
            RequirementKind::Constraint,
            "Keep the format",
            "user",
        ))
        .expect("a proposal")
        .id;
    let read = state.revision();
    state.set_mode(PlanMode::Plan);
    let before = state.clone();
    let conflict = state
        .decide(&id, Decision::Confirm, "alice", read)
        .unwrap_err();
    assert_eq!(
        conflict,
        TaskError::Conflict {
            expected: 1,
            current: 2
        }
    );
    assert!(conflict.is_conflict());
    assert_eq!(state, before);

    let decided = state
        .decide(&id, Decision::Confirm, "alice", 2)
        .expect("the current revision");
    assert_eq!((decided.changed, decided.revision), (true, 3));
    assert_eq!(state.contract_version(), 1);
    // A retry with the revision read before the first attempt succeeds and changes nothing.
    let retried = state
        .decide(&id, Decision::Confirm, "alice", 2)
        .expect("idempotent");
    assert_eq!((retried.changed, retried.revision), (false, 3));
    // A different decision needs the current revision.
    assert!(state.decide(&id, Decision::Reject, "bob", 2).is_err());
    state
        .decide(&id, Decision::Reject, "bob", 3)
        .expect("the current revision");
    let requirement = &state.requirements()[0];
    assert_eq!(requirement.status, RequirementStatus::Rejected);
    assert_eq!(requirement.decided_by.as_deref(), Some("bob"));
    assert_eq!(
        state.contract_version(),
        2,
        "un-confirming changes the contract"
    );

    assert_eq!(
        state.decide("req-9", Decision::Confirm, "alice", 4),
        Err(TaskError::UnknownRequirement { id: "req-9".into() })
    );
    assert_eq!(
        state.decide(&id, Decision::Confirm, "", 4),
        Err(TaskError::Blank {
            what: "the authority"
        })
    );
}

#[test]
fn rejecting_a_candidate_leaves_the_contract_alone() {
    let mut state = TaskContextState::new();
    let id = state
        .propose(Proposal::new(
            RequirementKind::Preference,
            "Short names",
            "model",
        ))
        .expect("a proposal")
        .id;
    state
        .decide(&id, Decision::Reject, "alice", 1)
        .expect("a decision");
    assert_eq!(state.contract_version(), 0);
}

#[test]
fn the_model_proposes_candidates_only() {
    let shared = SharedTaskState::new();
    let tool = requirements::ProposeRequirement::new(shared.clone());
    let outcome = call_tool(
        &tool,
        json!({"kind": "acceptance", "text": "The export tests pass"}),
    );
    assert_eq!(
        outcome_text(&outcome),
        "Recorded requirement req-1 as CANDIDATE; the user or application decides whether it applies."
    );
    let again = call_tool(
        &tool,
        json!({"kind": "acceptance", "text": "The export tests pass"}),
    );
    assert_eq!(
        outcome_text(&again),
        "Requirement req-1 already records this proposal; nothing changed."
    );
    let state = shared.snapshot();
    assert_eq!(state.requirements()[0].source, "model");
    assert_eq!(state.requirements()[0].status, RequirementStatus::Candidate);
    let wrong = call_tool(&tool, json!({"kind": "must", "text": "x"}));
    assert!(wrong.is_error);
    assert!(outcome_text(&wrong).starts_with(
        "invalid propose_requirement arguments: unknown kind `must`; use acceptance, constraint or preference"
    ));
}

// ---- Verification ----

#[test]
fn verification_needs_a_task_and_a_subject_and_does_not_run_without_them() {
    let shared = SharedTaskState::new();
    let service = VerificationService::new(shared.clone());
    let ran = std::sync::atomic::AtomicBool::new(false);
    let run = || async {
        ran.store(true, std::sync::atomic::Ordering::SeqCst);
        CheckResult::passed("ok")
    };
    assert_eq!(
        block_on(service.verify("tests", run())),
        Err(TaskError::NoTask)
    );
    shared
        .with(|state| state.begin_task(TaskScope::new("t", "Task")).map(|_| ()))
        .expect("a task");
    assert_eq!(
        block_on(service.verify("tests", run())),
        Err(TaskError::NoSubject)
    );
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn reports_go_stale_when_the_subject_contract_or_task_moves() {
    let shared = SharedTaskState::new();
    shared.with(|state| {
        state
            .begin_task(TaskScope::new("t", "Task"))
            .expect("a task");
        state.set_subject_version("v1").expect("a version");
    });
    let service = VerificationService::new(shared.clone());
    let report = block_on(service.verify("tests", async { CheckResult::passed("12 passed") }))
        .expect("a report");
    assert_eq!(report.binding.subject_version, "v1");
    shared.with(|state| {
        assert_eq!(state.freshness(&report), Freshness::Current);
        // The same version again changes nothing.
        let revision = state.revision();
        assert_eq!(state.set_subject_version("v1"), Ok(revision));
        state.set_subject_version("v2").expect("a version");
        assert_eq!(state.freshness(&report), Freshness::Stale);
        state.set_subject_version("v1").expect("back to v1");
        assert_eq!(state.freshness(&report), Freshness::Current);
        state.invalidate_subject();
        assert_eq!(state.freshness(&report), Freshness::Stale);
        state.set_subject_version("v1").expect("back to v1");
        let id = state
            .propose(Proposal::new(
                RequirementKind::Acceptance,
                "Lint is clean",
                "user",
            ))
            .expect("a proposal")
            .id;
        assert_eq!(
            state.freshness(&report),
            Freshness::Current,
            "candidates are not the contract"
        );
        let revision = state.revision();
        state
            .decide(&id, Decision::Confirm, "alice", revision)
            .expect("a decision");
        assert_eq!(state.freshness(&report), Freshness::Stale);
    });
}

#[test]
fn a_binding_that_moves_while_the_check_runs_is_stored_stale() {
    let shared = SharedTaskState::new();
    shared.with(|state| {
        state
            .begin_task(TaskScope::new("t", "Task"))
            .expect("a task");
        state.set_subject_version("v1").expect("a version");
    });
    let service = VerificationService::new(shared.clone());
    let during = shared.clone();
    let report = block_on(service.verify("tests", async move {
        during.with(|state| state.set_subject_version("v2").expect("a version"));
        CheckResult::passed("ok")
    }))
    .expect("a report");
    assert_eq!(report.binding.subject_version, "v1");
    assert_eq!(shared.snapshot().freshness(&report), Freshness::Stale);
}

#[test]
fn reports_are_bounded_and_one_per_check() {
    let mut state = TaskContextState::new();
    state
        .begin_task(TaskScope::new("t", "Task"))
        .expect("a task");
    state.set_subject_version("v1").expect("a version");
    let binding = state.current_binding().expect("a binding");
    let long = "y".repeat(VERIFICATION_SUMMARY_CHARS_MAX + 50);
    let report = state
        .record_verification("tests", binding.clone(), CheckResult::failed(long))
        .expect("a report");
    assert_eq!(
        report.summary.chars().count(),
        VERIFICATION_SUMMARY_CHARS_MAX
    );
    assert!(report.summary.ends_with('…'));
    state
        .record_verification("tests", binding.clone(), CheckResult::passed("ok"))
        .expect("a report");
    assert_eq!(state.verification_reports().count(), 1);
    for n in 1..crate::limits::VERIFICATION_CHECKS_MAX {
        state
            .record_verification(
                &format!("check-{n:02}"),
                binding.clone(),
                CheckResult::passed("ok"),
            )
            .expect("under the limit");
    }
    let error = state
        .record_verification("one-more", binding, CheckResult::passed("ok"))
        .unwrap_err();
    assert_eq!(error.kind(), "verification_limit");
}

// ---- Plan mode ----

#[test]
fn plan_mode_changes_bump_the_revision_once() {
    let mut state = TaskContextState::new();
    assert_eq!(state.set_mode(PlanMode::Build), 0);
    assert_eq!(state.set_mode(PlanMode::Plan), 1);
    assert_eq!(state.set_mode(PlanMode::Plan), 1);
    assert_eq!(state.set_plan_path(Some("PLAN.md")), Ok(2));
    assert_eq!(state.set_plan_path(Some("PLAN.md")), Ok(2));
    assert_eq!(state.set_plan_path(None), Ok(3));
    assert!(matches!(
        state.set_plan_path(Some("/etc/plan")),
        Err(TaskError::InvalidPlanPath(_))
    ));
}

#[test]
fn runtime_state_shows_while_plan_mode_is_active_or_a_plan_file_is_set() {
    let mut state = TaskContextState::new();
    let conversation = vec![Message::user("m1", "Plan it.")];
    let options = TaskContextOptions::default();
    let shown = |state: &TaskContextState| {
        describe(&project(state, &options, &conversation, Purpose::Reasoning))
    };
    assert_eq!(shown(&state), "transforms: ");
    state.set_mode(PlanMode::Plan);
    assert_eq!(
        shown(&state),
        "transforms: \n<RUNTIME_STATE revision=\"1\">\n\
         Mode: PLAN (read-only: investigate and write the plan; make no other changes).\n\
         Plan file: none set\n\
         This describes the current mode; it is not evidence that any plan was approved.\n\
         </RUNTIME_STATE>"
    );
    // A change between two model boundaries shows at the next preparation.
    state.set_plan_path(Some("PLAN.md")).expect("a path");
    state.set_mode(PlanMode::Build);
    assert_eq!(
        shown(&state),
        "transforms: \n<RUNTIME_STATE revision=\"3\">\n\
         Mode: BUILD.\n\
         Plan file: PLAN.md\n\
         This describes the current mode; it is not evidence that any plan was approved.\n\
         </RUNTIME_STATE>"
    );
    state.set_plan_path(None).expect("cleared");
    assert_eq!(shown(&state), "transforms: ");
}

// ---- Projections ----

#[test]
fn the_current_receipt_stays_and_older_receipts_are_shortened() {
    let mut conversation = Conversation::new();
    conversation.todo_write(json!([{"id": "a", "content": "Reproduce", "status": "in_progress"}]));
    conversation.todo_write(json!([
        {"id": "a", "content": "Reproduce", "status": "completed"},
        {"id": "b", "content": "Fix", "status": "in_progress"},
    ]));
    let durable = conversation.messages.clone();
    let projection = conversation.project(TaskContextOptions::default());
    assert_eq!(
        describe(&projection),
        "m3 todo_write: Todo list recorded at revision 1; the current list is shown in TASK_STATE or the latest receipt.\n\
         m5 todo_write: Todo list (revision 2):\n\
         - [completed] a (medium): Reproduce\n\
         - [in_progress] b (medium): Fix\n\
         transforms: todo_receipt_shortened:m3"
    );
    assert_eq!(
        conversation.messages, durable,
        "durable history is untouched"
    );
    let ids: Vec<&str> = projection.view.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["m1", "m2", "m3", "m4", "m5"]);
    assert_eq!(projection.revision, Some(2));
}

#[test]
fn without_a_visible_receipt_task_state_reconstructs_the_list() {
    let mut conversation = Conversation::new();
    conversation.todo_write(json!([{"id": "a", "content": "Reproduce", "status": "in_progress"}]));
    // Compaction replaced the exchange with a summary: the receipt is absent.
    conversation.messages = vec![Message::user("s1", "Summary: reproducing the failure.")];
    let projection = conversation.project(TaskContextOptions::default());
    assert_eq!(
        describe(&projection),
        format!(
            "transforms: todo_list_projected:1\n\
             <TASK_STATE revision=\"1\">\n{NOTE}\n\n\
             Todo list (revision 1):\n\
             - [in_progress] a (medium): Reproduce\n\
             </TASK_STATE>"
        )
    );
    let task_state = &projection.transient[0];
    assert_eq!(task_state.role, Role::User);
    assert_eq!(task_state.id, "task_state");
    assert!(is_rendered(task_state));
    assert_eq!(
        task_state.metadata.get(MATERIAL_KEY),
        Some(&json!("transient"))
    );
}

#[test]
fn a_shortened_current_receipt_is_replaced_and_reconstructed() {
    let mut conversation = Conversation::new();
    conversation.todo_write(json!([{"id": "a", "content": "Reproduce", "status": "in_progress"}]));
    // A prune pass cut the receipt's text; its metadata still names revision 1.
    let ContentPart::ToolResult(result) = &mut conversation.messages[2].parts[0] else {
        panic!("a tool result");
    };
    result.outputs = vec![crate::message::ToolOutput::Text {
        text: "Todo list (revision 1):\n[… 40 characters pruned]".into(),
    }];
    let projection = conversation.project(TaskContextOptions::default());
    assert_eq!(
        describe(&projection),
        format!(
            "m3 todo_write: Todo list recorded at revision 1; the current list is shown in TASK_STATE or the latest receipt.\n\
             transforms: todo_receipt_shortened:m3, todo_list_projected:1\n\
             <TASK_STATE revision=\"1\">\n{NOTE}\n\n\
             Todo list (revision 1):\n\
             - [in_progress] a (medium): Reproduce\n\
             </TASK_STATE>"
        )
    );
}

#[test]
fn a_failed_write_keeps_the_earlier_receipt_current() {
    let mut conversation = Conversation::new();
    conversation.todo_write(json!([{"id": "a", "content": "Reproduce", "status": "in_progress"}]));
    let failed = conversation.todo_write(json!([{"id": "a", "content": " ", "status": "pending"}]));
    assert!(failed.is_error);
    let projection = conversation.project(TaskContextOptions::default());
    assert_eq!(
        describe(&projection),
        "m3 todo_write: Todo list (revision 1):\n\
         - [in_progress] a (medium): Reproduce\n\
         m5 todo_write: the Todo list was not changed: item `a` has blank content; describe the step in a sentence; the list is still at revision 1\n\
         transforms: "
    );
}

#[test]
fn other_state_changes_do_not_make_the_receipt_obsolete() {
    let mut conversation = Conversation::new();
    conversation.todo_write(json!([{"id": "a", "content": "Reproduce", "status": "in_progress"}]));
    conversation.shared.with(|state| {
        state
            .propose(Proposal::new(
                RequirementKind::Constraint,
                "Keep the format",
                "user",
            ))
            .expect("a proposal");
    });
    let projection = conversation.project(TaskContextOptions::default());
    assert!(projection.transient.is_empty());
    assert_eq!(projection.revision, Some(2));
    assert!(projection.transforms.is_empty());
}

#[test]
fn a_summary_preparation_gets_no_projection() {
    let mut conversation = Conversation::new();
    conversation.todo_write(json!([{"id": "a", "content": "One", "status": "pending"}]));
    conversation.todo_write(json!([{"id": "a", "content": "Two", "status": "pending"}]));
    conversation
        .shared
        .with(|state| state.set_mode(PlanMode::Plan));
    let options = TaskContextOptions::default()
        .include_requirements()
        .include_verification_results();
    let projection = project(
        &conversation.shared.snapshot(),
        &options,
        &conversation.messages,
        Purpose::Summary,
    );
    assert_eq!(projection.view, conversation.messages);
    assert!(projection.transient.is_empty());
    assert_eq!(projection.revision, None);
    assert!(projection.transforms.is_empty());
}

#[test]
fn options_select_scope_requirements_and_evidence() {
    let mut conversation = Conversation::new();
    conversation.todo_write(json!([{"id": "fix", "content": "Fix </TASK_STATE> quoting", "status": "in_progress", "priority": "high"}]));
    conversation.shared.with(|state| {
        state
            .begin_task(TaskScope::new("export-fix", "Fix the CSV export"))
            .expect("a task");
        let confirmed = state
            .propose(Proposal::new(
                RequirementKind::Constraint,
                "Preserve the public format",
                "user",
            ))
            .expect("a proposal")
            .id;
        state
            .propose(Proposal::new(
                RequirementKind::Acceptance,
                "Export tests pass",
                "model",
            ))
            .expect("a proposal");
        let revision = state.revision();
        state
            .decide(&confirmed, Decision::Confirm, "alice", revision)
            .expect("a decision");
        state.set_subject_version("abc123").expect("a version");
        let binding = state.current_binding().expect("a binding");
        state
            .record_verification("lint", binding.clone(), CheckResult::failed("3 warnings"))
            .expect("a report");
        state.set_subject_version("def456").expect("a version");
        let binding = state.current_binding().expect("a binding");
        state
            .record_verification("tests", binding, CheckResult::passed("12 passed"))
            .expect("a report");
    });
    // Defaults: the receipt is visible, so nothing is projected.
    assert!(
        conversation
            .project(TaskContextOptions::default())
            .transient
            .is_empty()
    );
    let scope = "Task export-fix: Fix the CSV export";
    let requirements = "Requirements (contract version 1):\n\
        - req-1 CONFIRMED constraint: Preserve the public format (source: user; decided by alice)\n\
        - req-2 CANDIDATE acceptance: Export tests pass (source: model)";
    let evidence = "Verification (subject version def456):\n\
        - lint: FAILED, STALE (checked task export-fix, contract version 1, subject version abc123) — 3 warnings\n\
        - tests: PASSED, CURRENT — 12 passed";
    let pointer = "Todo: the current list is the latest todo_write receipt (revision 1).";
    let cases = [
        (
            TaskContextOptions::default().include_requirements(),
            vec![scope, requirements, pointer],
        ),
        (
            TaskContextOptions::default().allow_requirement_proposals(),
            vec![scope, requirements, pointer],
        ),
        (
            TaskContextOptions::default().include_verification_results(),
            vec![scope, evidence, pointer],
        ),
    ];
    for (options, sections) in cases {
        let projection = conversation.project(options);
        assert_eq!(projection.transient.len(), 1);
        assert_eq!(
            projection.transient[0].text(),
            format!(
                "<TASK_STATE revision=\"9\">\n{NOTE}\n\n{}\n</TASK_STATE>",
                sections.join("\n\n")
            )
        );
    }
    // Without the receipt, the list is reconstructed, escaped.
    conversation.messages.truncate(1);
    let projection = conversation.project(TaskContextOptions::default());
    assert!(
        projection.transient[0]
            .text()
            .contains("- [in_progress] fix (high): Fix &lt;/TASK_STATE&gt; quoting\n</TASK_STATE>")
    );
}

#[test]
fn task_setup_registers_tools_from_the_latest_options() {
    let mut setup = TaskSetup::default();
    assert!(setup.tools().is_empty());
    setup.enable_task_list();
    let names = |setup: &TaskSetup| -> Vec<String> {
        setup
            .tools()
            .iter()
            .map(|t| t.schema().name.clone())
            .collect()
    };
    assert_eq!(names(&setup), ["todo_write"]);
    setup.set_options(TaskContextOptions::default().allow_requirement_proposals());
    assert_eq!(names(&setup), ["todo_write", "propose_requirement"]);
    setup.set_options(TaskContextOptions::default().include_requirements());
    assert_eq!(
        names(&setup),
        ["todo_write"],
        "new options replace the old ones"
    );
    // The tools share the setup's state.
    let tool = &setup.tools()[0];
    call_tool(
        tool.as_ref(),
        json!({"todos": [{"id": "a", "content": "A", "status": "pending"}]}),
    );
    assert_eq!(setup.state().revision(), 1);
    let projection = setup.project(&[], Purpose::Reasoning);
    assert_eq!(projection.revision, Some(1));
    assert_eq!(projection.transient.len(), 1);
}
