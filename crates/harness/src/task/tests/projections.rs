//! Projections: the model view and the transient messages.

use super::*;

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
    let anonymous = crate::runtime::RuntimeContext::default();
    assert_eq!(setup.state_of(&anonymous).revision(), 1);
    let other = crate::runtime::RuntimeContext::new().with_user("bob");
    assert_eq!(
        setup.state_of(&other).revision(),
        0,
        "each session has its own state"
    );
    let projection = setup.project(&anonymous, &[], Purpose::Reasoning);
    assert_eq!(projection.revision, Some(1));
    assert_eq!(projection.transient.len(), 1);
}
