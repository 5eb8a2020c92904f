//! Task state: the `[task]` table, plan modes and task actions.

use ctxbed_harness::task::plan::PlanMode;
use toml::{Table, Value};

use super::WriteError;
use super::value::integer;
use crate::scenario::file::{TaskAction, TaskSpec};

pub(super) fn plan_mode(mode: PlanMode) -> &'static str {
    match mode {
        PlanMode::Plan => "plan",
        PlanMode::Build => "build",
    }
}

/// A task action with exactly the fields its kind takes (the loader refuses any other).
pub(super) fn task_action(action: &TaskAction) -> Result<Table, WriteError> {
    let mut table = Table::new();
    let mut put = |key: &str, value: Value| {
        table.insert(key.into(), value);
    };
    match action {
        TaskAction::Propose { kind, text, source } => {
            put("kind", "propose".into());
            put("requirement_kind", kind.as_str().into());
            put("text", text.clone().into());
            put("source", source.clone().into());
        }
        TaskAction::Decide {
            requirement,
            decision,
            authority,
            expected_revision,
        } => {
            put("kind", "decide".into());
            put("requirement", requirement.clone().into());
            put("decision", decision.as_str().into());
            put("authority", authority.clone().into());
            put("expected_revision", integer(*expected_revision)?);
        }
        TaskAction::SubjectVersion(version) => {
            put("kind", "subject_version".into());
            put("version", version.clone().into());
        }
        TaskAction::InvalidateSubject => put("kind", "invalidate_subject".into()),
        TaskAction::Verify {
            check,
            passed,
            summary,
        } => {
            put("kind", "verify".into());
            put("check", check.clone().into());
            put("passed", (*passed).into());
            put("summary", summary.clone().into());
        }
    }
    Ok(table)
}

/// The `[task]` table: the task scope and the plan settings set before the first step.
pub(super) fn task(spec: &TaskSpec) -> Table {
    let mut table = Table::new();
    if let Some(scope) = &spec.scope {
        table.insert("task_id".into(), scope.task_id.clone().into());
        table.insert("objective".into(), scope.objective.clone().into());
    }
    if let Some(mode) = spec.plan_mode {
        table.insert("plan_mode".into(), plan_mode(mode).into());
    }
    if let Some(path) = &spec.plan_path {
        table.insert("plan_path".into(), path.clone().into());
    }
    table
}
