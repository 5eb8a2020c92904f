//! Checking task state: the `[task]` table, plan modes, and the application's task actions of
//! a step.

use ctxbed_harness::storage::WorkspacePath;
use ctxbed_harness::task::TaskScope;
use ctxbed_harness::task::plan::PlanMode;
use ctxbed_harness::task::requirements::{Decision, RequirementKind};
use toml::Spanned;

use super::checked::{TaskAction, TaskSpec};
use super::raw::{RawAction, RawTask};
use crate::scenario::format::mock_file::Checker;

/// A task action; every field its kind needs must be there, and no other.
pub(super) fn task_action(
    checker: &mut Checker<'_>,
    field: &str,
    spanned: &Spanned<RawAction>,
) -> Option<TaskAction> {
    const KINDS: [&str; 5] = [
        "propose",
        "decide",
        "subject_version",
        "invalidate_subject",
        "verify",
    ];
    let raw = spanned.get_ref();
    let kind = checker.choice(&raw.kind, &format!("{field}.kind"), &KINDS, |k| {
        KINDS.contains(&k).then(|| k.to_string())
    })?;
    if !fields_fit_kind(checker, field, spanned, &kind) {
        return None;
    }
    let text = |value: &Option<String>| value.clone().unwrap_or_default();
    match kind.as_str() {
        "propose" => propose_action(checker, field, raw),
        "decide" => decide_action(checker, field, raw),
        "subject_version" => Some(TaskAction::SubjectVersion(text(&raw.version))),
        "invalidate_subject" => Some(TaskAction::InvalidateSubject),
        _ => Some(TaskAction::Verify {
            check: text(&raw.check),
            passed: raw.passed.unwrap_or(false),
            summary: text(&raw.summary),
        }),
    }
}

/// Whether the action holds exactly the fields its `kind` takes; each missing or extra field
/// is a problem.
fn fields_fit_kind(
    checker: &mut Checker<'_>,
    field: &str,
    spanned: &Spanned<RawAction>,
    kind: &str,
) -> bool {
    let raw = spanned.get_ref();
    let present: Vec<(&str, bool)> = vec![
        ("requirement", raw.requirement.is_some()),
        ("requirement_kind", raw.requirement_kind.is_some()),
        ("text", raw.text.is_some()),
        ("source", raw.source.is_some()),
        ("decision", raw.decision.is_some()),
        ("authority", raw.authority.is_some()),
        ("expected_revision", raw.expected_revision.is_some()),
        ("version", raw.version.is_some()),
        ("check", raw.check.is_some()),
        ("passed", raw.passed.is_some()),
        ("summary", raw.summary.is_some()),
    ];
    let wanted: &[&str] = match kind {
        "propose" => &["requirement_kind", "text", "source"],
        "decide" => &["requirement", "decision", "authority", "expected_revision"],
        "subject_version" => &["version"],
        "invalidate_subject" => &[],
        _ => &["check", "passed", "summary"],
    };
    let before = checker.problems.len();
    for (name, is_present) in &present {
        let needed = wanted.contains(name);
        if needed != *is_present {
            let message = if needed {
                format!("a `{kind}` action needs `{name}`")
            } else {
                format!("a `{kind}` action takes no `{name}`")
            };
            let problem = checker
                .at(spanned, message)
                .field(format!("{field}.{name}"))
                .help(format!(
                    "a `{kind}` action takes: {}",
                    if wanted.is_empty() {
                        "nothing but `kind`".to_string()
                    } else {
                        wanted.join(", ")
                    }
                ));
            checker.problems.push(problem);
        }
    }
    checker.problems.len() == before
}

/// A `propose` action: a requirement of a known kind, its text and source.
fn propose_action(checker: &mut Checker<'_>, field: &str, raw: &RawAction) -> Option<TaskAction> {
    let value = raw.requirement_kind.as_ref()?;
    let names: Vec<&str> = RequirementKind::ALL.iter().map(|k| k.as_str()).collect();
    let requirement_kind = checker.choice(
        value,
        &format!("{field}.requirement_kind"),
        &names,
        RequirementKind::parse,
    )?;
    Some(TaskAction::Propose {
        kind: requirement_kind,
        text: raw.text.clone().unwrap_or_default(),
        source: raw.source.clone().unwrap_or_default(),
    })
}

/// A `decide` action: confirm or reject a requirement, at the revision the decider saw.
fn decide_action(checker: &mut Checker<'_>, field: &str, raw: &RawAction) -> Option<TaskAction> {
    let decision = checker.choice(
        raw.decision.as_ref()?,
        &format!("{field}.decision"),
        &["confirm", "reject"],
        |d| match d {
            "confirm" => Some(Decision::Confirm),
            "reject" => Some(Decision::Reject),
            _ => None,
        },
    )?;
    let expected_revision = checker.count(
        raw.expected_revision.as_ref()?,
        &format!("{field}.expected_revision"),
        0,
    )?;
    Some(TaskAction::Decide {
        requirement: raw.requirement.clone().unwrap_or_default(),
        decision,
        authority: raw.authority.clone().unwrap_or_default(),
        expected_revision,
    })
}

pub(super) fn plan_mode(
    checker: &mut Checker<'_>,
    value: &Spanned<String>,
    field: &str,
) -> Option<PlanMode> {
    checker.choice_of::<PlanMode>(value, field)
}

pub(super) fn task_spec(checker: &mut Checker<'_>, raw: &RawTask) -> TaskSpec {
    let scope = match (&raw.task_id, &raw.objective) {
        (Some(task_id), Some(objective)) => {
            Some(TaskScope::new(task_id.clone(), objective.clone()))
        }
        _ => None,
    };
    let plan_mode = raw
        .plan_mode
        .as_ref()
        .and_then(|v| plan_mode(checker, v, "task.plan_mode"));
    let plan_path =
        raw.plan_path
            .as_ref()
            .and_then(|value| match WorkspacePath::parse(value.get_ref()) {
                Ok(path) => Some(path.as_str().to_string()),
                Err(error) => {
                    let problem = checker.at(value, error.to_string()).field("task.plan_path");
                    checker.problems.push(problem);
                    None
                }
            });
    TaskSpec {
        scope,
        plan_mode,
        plan_path,
    }
}
