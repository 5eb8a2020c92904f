//! Task state: the `[task]` table, plan modes and task actions.

use ctxbed_harness::task::plan::PlanMode;

use super::WriteError;
use super::value::{at, count, name};
use crate::scenario::format::file::raw::{RawAction, RawTask};
use crate::scenario::format::file::{TaskAction, TaskSpec};

pub(super) fn plan_mode(mode: PlanMode) -> &'static str {
    crate::scenario::format::choice::Choice::name(mode)
}

/// A task action with exactly the fields its kind takes (the loader refuses any other).
pub(super) fn task_action(action: &TaskAction) -> Result<RawAction, WriteError> {
    let kind = match action {
        TaskAction::Propose { .. } => "propose",
        TaskAction::Decide { .. } => "decide",
        TaskAction::SubjectVersion(_) => "subject_version",
        TaskAction::InvalidateSubject => "invalidate_subject",
        TaskAction::Verify { .. } => "verify",
    };
    let mut raw = RawAction {
        kind: name(kind),
        at_ms: None,
        requirement: None,
        requirement_kind: None,
        text: None,
        source: None,
        decision: None,
        authority: None,
        expected_revision: None,
        version: None,
        check: None,
        passed: None,
        summary: None,
    };
    match action {
        TaskAction::Propose { kind, text, source } => {
            raw.requirement_kind = Some(name(kind.as_str()));
            raw.text = Some(text.clone());
            raw.source = Some(source.clone());
        }
        TaskAction::Decide {
            requirement,
            decision,
            authority,
            expected_revision,
        } => {
            raw.requirement = Some(requirement.clone());
            raw.decision = Some(name(decision.as_str()));
            raw.authority = Some(authority.clone());
            raw.expected_revision = Some(count(*expected_revision)?);
        }
        TaskAction::SubjectVersion(version) => raw.version = Some(version.clone()),
        TaskAction::InvalidateSubject => {}
        TaskAction::Verify {
            check,
            passed,
            summary,
        } => {
            raw.check = Some(check.clone());
            raw.passed = Some(*passed);
            raw.summary = Some(summary.clone());
        }
    }
    Ok(raw)
}

/// The `[task]` table: the task scope and the plan settings set before the first step.
pub(super) fn task(spec: &TaskSpec) -> RawTask {
    RawTask {
        task_id: spec.scope.as_ref().map(|scope| scope.task_id.clone()),
        objective: spec.scope.as_ref().map(|scope| scope.objective.clone()),
        plan_mode: spec.plan_mode.map(|mode| name(plan_mode(mode))),
        plan_path: spec.plan_path.clone().map(at),
    }
}
