//! Task scope, requirements, verification evidence and plan mode.

use super::*;

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

#[test]
fn formatting_the_shared_state_inside_a_change_does_not_deadlock() {
    let shared = SharedTaskState::new();
    let inside = shared.with(|_| format!("{shared:?}"));
    assert_eq!(inside, "SharedTaskState { revision: None }");
    assert_eq!(
        format!("{shared:?}"),
        "SharedTaskState { revision: Some(0) }"
    );
}
