//! Seed statements about task state and its projections: an enabled option with nothing to
//! show, an application's Todo update reaching the next request, `todo_write` beside a
//! `PLAN.md`, a finished Todo list that declares nothing, and requirements, evidence, mode and
//! plan path that outlive the compaction of the exchanges that made them.

mod support;

use std::sync::Arc;

use ctxbed_harness::agent::HarnessAgent;
use ctxbed_harness::compaction::config::CompactionConfig;
use ctxbed_harness::message::Message;
use ctxbed_harness::model::Purpose;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::storage::{MemoryStorage, Storage, WorkspacePath};
use ctxbed_harness::task::plan::PlanMode;
use ctxbed_harness::task::projection::{PLAN_STATE_MESSAGE_ID, TASK_STATE_MESSAGE_ID, project};
use ctxbed_harness::task::requirements::Decision;
use ctxbed_harness::task::todo::{TodoItem, TodoPriority, TodoStatus};
use ctxbed_harness::task::verification::{CheckResult, VerificationService};
use ctxbed_harness::task::{TaskContextOptions, TaskContextState, TaskScope};
use serde_json::json;
use support::{Scripted, Turn, chat_history, info, request_text, runtime};

fn alice() -> RuntimeContext {
    RuntimeContext::new().with_user("alice").with_session("s1")
}

fn todos(items: &[(&str, &str)]) -> serde_json::Value {
    let items: Vec<_> = items
        .iter()
        .map(|(id, status)| json!({"id": id, "content": format!("Step {id}"), "status": status, "priority": "high"}))
        .collect();
    json!({ "todos": items })
}

/// The text of a request's message with this id, if it has one.
fn message(request: &ctxbed_harness::model::ModelRequest, id: &str) -> Option<String> {
    request
        .messages
        .iter()
        .find(|m| m.id == id)
        .map(Message::text)
}

/// S57: `include_verification_results` with no report shows the scope it makes visible and no
/// made-up verification section.
#[test]
fn verification_results_enabled_without_a_report_show_no_verification_section() {
    let options = TaskContextOptions::default().include_verification_results();
    let conversation = vec![Message::user("m1", "Fix the export.")];
    let mut state = TaskContextState::new();
    let empty = project(&state, &options, &conversation, Purpose::Reasoning);
    assert!(
        empty.transient.is_empty(),
        "nothing to show: {:?}",
        empty.transient
    );
    state
        .begin_task(TaskScope::new("T1", "Fix the export"))
        .expect("a task");
    state.set_subject_version("v1").expect("a version");
    let projection = project(&state, &options, &conversation, Purpose::Reasoning);
    let text = projection.transient[0].text();
    assert!(text.contains("Task T1: Fix the export"), "{text}");
    assert!(!text.contains("Verification"), "{text}");
    assert!(
        !text.contains("PASSED") && !text.contains("FAILED"),
        "{text}"
    );
}

/// S59: a Todo update the application makes between calls reaches the next request: the
/// model's older receipt is shortened and `TASK_STATE` shows the application's list.
#[test]
fn an_applications_todo_update_reaches_the_next_request() {
    runtime().block_on(async {
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call("c1", "todo_write", todos(&[("reproduce", "in_progress")])),
                Turn::reply("started"),
                Turn::reply("continuing"),
            ],
        );
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .enable_task_list()
            .build()
            .expect("an agent");
        agent
            .call("Fix the export.", alice())
            .await
            .expect("a reply");
        agent.task_state(&alice()).with(|state| {
            let items = vec![
                TodoItem::new(
                    "reproduce",
                    "Step reproduce",
                    TodoStatus::Completed,
                    TodoPriority::High,
                ),
                TodoItem::new(
                    "ship",
                    "Ship the fix",
                    TodoStatus::InProgress,
                    TodoPriority::Medium,
                ),
            ];
            state.write_todos(items).expect("a valid list");
        });
        agent.call("Go on.", alice()).await.expect("a reply");
        let request = model.reasoning().last().expect("requests").clone();
        let task = message(&request, TASK_STATE_MESSAGE_ID).expect("TASK_STATE");
        assert!(task.contains("[completed] reproduce"), "{task}");
        assert!(
            task.contains("[in_progress] ship (medium): Ship the fix"),
            "{task}"
        );
        let text = request_text(&request);
        assert!(text.contains("Todo list recorded at revision 1"), "{text}");
        assert!(!text.contains("[in_progress] reproduce"), "{text}");
    });
}

/// S66: `todo_write` with a `PLAN.md` in the workspace and named as the plan file: the Todo
/// list is exactly what the tool wrote, and `PLAN.md` is left byte for byte.
#[test]
fn todo_write_beside_a_plan_file_leaves_the_plan_file_and_takes_no_checkbox() {
    const PLAN: &str = "# Plan\n- [ ] reproduce\n- [x] fix quoting\n";
    runtime().block_on(async {
        let storage = Arc::new(MemoryStorage::new());
        let plan = WorkspacePath::parse("PLAN.md").expect("a path");
        storage
            .write(&plan, PLAN.as_bytes().to_vec())
            .await
            .expect("written");
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call(
                    "c1",
                    "todo_write",
                    todos(&[("reproduce", "completed"), ("verify", "in_progress")]),
                ),
                Turn::reply("done"),
            ],
        );
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .workspace(storage.clone())
            .enable_task_list()
            .build()
            .expect("an agent");
        agent.task_state(&alice()).with(|state| {
            state.set_mode(PlanMode::Plan);
            state.set_plan_path(Some("PLAN.md")).expect("a valid path");
        });
        agent.call("Plan the fix.", alice()).await.expect("a reply");
        let after = storage
            .read(&plan)
            .await
            .expect("readable")
            .expect("present");
        assert_eq!(after, PLAN.as_bytes(), "PLAN.md is never rewritten");
        let state = agent.task_state(&alice()).snapshot();
        let items: Vec<(&str, &str)> = state
            .todos()
            .iter()
            .map(|item| (item.id.as_str(), item.status.as_str()))
            .collect();
        assert_eq!(
            items,
            [("reproduce", "completed"), ("verify", "in_progress")]
        );
        let request = model.reasoning().last().expect("requests").clone();
        let plan_state = message(&request, PLAN_STATE_MESSAGE_ID).expect("RUNTIME_STATE");
        assert!(plan_state.contains("Plan file: PLAN.md"), "{plan_state}");
        assert!(!request_text(&request).contains("fix quoting"));
    });
}

/// S71: a Todo list whose every item is completed declares nothing: the loop goes on to the
/// next request, which still shows the task and says that no state declares it complete.
#[test]
fn all_todos_completed_neither_ends_the_call_nor_completes_the_task() {
    runtime().block_on(async {
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call(
                    "c1",
                    "todo_write",
                    todos(&[("fix", "completed"), ("verify", "completed")]),
                ),
                Turn::call(
                    "c2",
                    "todo_write",
                    todos(&[("fix", "completed"), ("verify", "completed")]),
                ),
                Turn::reply("All steps are done; over to you."),
            ],
        );
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .enable_task_list()
            .task_context(TaskContextOptions::default().include_requirements())
            .build()
            .expect("an agent");
        agent
            .begin_task(&alice(), TaskScope::new("T1", "Fix the export"))
            .expect("a task");
        let reply = agent
            .call("Fix the export.", alice())
            .await
            .expect("a reply");
        assert_eq!(reply.text(), "All steps are done; over to you.");
        let requests = model.reasoning();
        assert_eq!(
            requests.len(),
            3,
            "the loop went on after every item was completed"
        );
        for request in &requests[1..] {
            let task = message(request, TASK_STATE_MESSAGE_ID).expect("TASK_STATE");
            assert!(task.contains("Task T1: Fix the export"), "{task}");
            assert!(
                task.contains("None of these declares the task complete."),
                "{task}"
            );
        }
        let state = agent.task_state(&alice()).snapshot();
        assert_eq!(state.scope().map(|s| s.task_id.as_str()), Some("T1"));
    });
}

/// Compaction after three messages, keeping the last two; no memory flush.
fn small_compaction() -> CompactionConfig {
    CompactionConfig {
        trigger_messages: 4,
        keep_tokens: Some(0),
        keep_messages: 2,
        flush_before_compact: false,
        ..CompactionConfig::default()
    }
}

/// S73: a requirement the model proposed, confirmed by the application, and a verification
/// report stay visible after compaction summarised the proposal's tool exchange away.
#[test]
fn requirements_and_evidence_outlive_the_compaction_of_their_exchange() {
    runtime().block_on(async {
        let proposal = json!({"kind": "constraint", "text": "Preserve the public format"});
        let model = Scripted::new(
            info("m", 16_000),
            vec![
                Turn::call("c1", "propose_requirement", proposal),
                Turn::reply("proposed"),
                Turn::reply("checked"),
            ],
        );
        let options = TaskContextOptions::default()
            .allow_requirement_proposals()
            .include_verification_results();
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .task_context(options)
            .compaction(small_compaction())
            .build()
            .expect("an agent");
        agent
            .begin_task(&alice(), TaskScope::new("T1", "Fix the export"))
            .expect("a task");
        agent
            .call("Fix the export.", alice())
            .await
            .expect("a reply");
        let state = agent.task_state(&alice());
        state.with(|s| {
            let id = s.requirements()[0].id.clone();
            let revision = s.revision();
            s.decide(&id, Decision::Confirm, "alice", revision)
                .expect("decided");
            s.set_subject_version("v1").expect("a version");
        });
        VerificationService::new(state)
            .verify("export-tests", async { CheckResult::passed("12 passed") })
            .await
            .expect("verified");
        agent.call("Is it done?", alice()).await.expect("a reply");
        let request = model.reasoning().last().expect("requests").clone();
        let text = request_text(&request);
        assert!(text.contains(support::SUMMARY_TEXT), "compacted: {text}");
        assert!(
            !text.contains("propose_requirement"),
            "the exchange is gone: {text}"
        );
        let task = message(&request, TASK_STATE_MESSAGE_ID).expect("TASK_STATE");
        assert!(
            task.contains("CONFIRMED constraint: Preserve the public format"),
            "{task}"
        );
        assert!(task.contains("export-tests: PASSED, CURRENT"), "{task}");
    });
}

/// S114: PLAN mode and the plan path go through a compaction: the compacted request still
/// projects them, and the state is unchanged.
#[test]
fn plan_mode_and_plan_path_survive_a_compaction() {
    runtime().block_on(async {
        let model = Scripted::new(info("m", 16_000), vec![Turn::reply("planning")]);
        let agent = HarnessAgent::builder()
            .model(model.clone())
            .compaction(small_compaction())
            .build()
            .expect("an agent");
        agent.load_history(&alice(), chat_history(3, 5));
        let revision = agent.task_state(&alice()).with(|state| {
            state.set_mode(PlanMode::Plan);
            state
                .set_plan_path(Some("plans/export.md"))
                .expect("a valid path")
        });
        agent.call("Plan the fix.", alice()).await.expect("a reply");
        let request = &model.reasoning()[0];
        assert!(
            request_text(request).contains(support::SUMMARY_TEXT),
            "compacted"
        );
        let plan = message(request, PLAN_STATE_MESSAGE_ID).expect("RUNTIME_STATE");
        assert!(plan.contains("Mode: PLAN"), "{plan}");
        assert!(plan.contains("Plan file: plans/export.md"), "{plan}");
        let state = agent.task_state(&alice()).snapshot();
        assert_eq!(state.plan().mode, PlanMode::Plan);
        assert_eq!(
            state.revision(),
            revision,
            "compaction changed no task state"
        );
    });
}
