//! Checking `[[steps]]` into [`StepSpec`]s: the calls, and what happens around each (workspace
//! writes, plan mode, restarts, failing writes, another writer, task actions).

use std::collections::BTreeMap;
use std::time::Duration;

use ctxbed_harness::message::Role;
use ctxbed_harness::storage::WorkspacePath;
use toml::Spanned;

use super::checked::{ConcurrentAppend, Restart, StepSpec, TaskAction};
use super::raw::{RawAppend, RawStep};
use super::task::{plan_mode, task_action};
use crate::scenario::format::diagnostic::Diagnostic;
use crate::scenario::format::mock_file::Checker;

/// Checks the `[[steps]]`: at least one, at most the limit, each into a [`StepSpec`].
pub(super) fn steps(checker: &mut Checker<'_>, raw: &[Spanned<RawStep>]) -> Vec<StepSpec> {
    if raw.is_empty() {
        checker.problems.push(
            Diagnostic::at(
                checker.file,
                checker.source,
                0..0,
                "the scenario has no `[[steps]]`",
            )
            .field("steps")
            .help("add `[[steps]]` with `input = \"...\"` (and optionally `user`, `session`)"),
        );
    }
    if raw.len() > crate::limits::SCENARIO_STEPS_MAX {
        checker.problems.push(
            Diagnostic::file_level(
                checker.file,
                format!(
                    "{} steps; at most {}",
                    raw.len(),
                    crate::limits::SCENARIO_STEPS_MAX
                ),
            )
            .field("steps"),
        );
    }
    raw.iter()
        .enumerate()
        .map(|(index, step)| step_spec(checker, index, step.get_ref()))
        .collect()
}

/// One step: its call and what happens around it.
fn step_spec(checker: &mut Checker<'_>, index: usize, step: &RawStep) -> StepSpec {
    let workspace_writes = workspace_writes(checker, index, step);
    let plan_mode = step
        .plan_mode
        .as_ref()
        .and_then(|value| plan_mode(checker, value, &format!("steps[{index}].plan_mode")));
    let restart = step
        .restart
        .as_ref()
        .and_then(|value| checker.choice_of::<Restart>(value, &format!("steps[{index}].restart")));
    let concurrent_append = step
        .concurrent_append
        .as_ref()
        .and_then(|raw| concurrent_append(checker, index, raw));
    let actions = actions(checker, index, step);
    let concurrent_actions = concurrent_actions(checker, index, step);
    let cancel_at = step
        .cancel_at_ms
        .as_ref()
        .map(|time| checker.latency(Some(time), &format!("steps[{index}].cancel_at_ms")));
    StepSpec {
        user: step.user.clone(),
        session: step.session.clone(),
        input: step.input.clone(),
        workspace_writes,
        plan_mode,
        restart,
        fail_writes_under: step.fail_writes_under.clone(),
        concurrent_append,
        actions,
        concurrent_actions,
        cancel_at,
    }
}

/// `workspace_writes`: files written before the call, by checked path.
fn workspace_writes(
    checker: &mut Checker<'_>,
    index: usize,
    step: &RawStep,
) -> BTreeMap<String, String> {
    let mut workspace_writes = BTreeMap::new();
    for (path, text) in &step.workspace_writes {
        match WorkspacePath::parse(path) {
            Ok(checked) => {
                workspace_writes.insert(checked.as_str().to_string(), text.get_ref().clone());
            }
            Err(error) => {
                let problem = checker
                    .at(text, format!("workspace file `{path}`: {error}"))
                    .field(format!("steps[{index}].workspace_writes"));
                checker.problems.push(problem);
            }
        }
    }
    workspace_writes
}

/// `actions`: task actions taken before the call, which have no time.
fn actions(checker: &mut Checker<'_>, index: usize, step: &RawStep) -> Vec<TaskAction> {
    step.actions
        .iter()
        .enumerate()
        .filter_map(|(at, raw)| {
            let field = format!("steps[{index}].actions[{at}]");
            if let Some(time) = &raw.get_ref().at_ms {
                let problem = checker
                    .at(time, "an action before the call has no `at_ms`")
                    .field(format!("{field}.at_ms"))
                    .help("move it to `concurrent_actions` to take it while the call runs");
                checker.problems.push(problem);
                return None;
            }
            task_action(checker, &field, raw)
        })
        .collect()
}

/// `concurrent_actions`: task actions taken while the call runs, each at its `at_ms`.
fn concurrent_actions(
    checker: &mut Checker<'_>,
    index: usize,
    step: &RawStep,
) -> Vec<(Duration, TaskAction)> {
    step.concurrent_actions
        .iter()
        .enumerate()
        .filter_map(|(at, raw)| {
            let field = format!("steps[{index}].concurrent_actions[{at}]");
            let Some(time) = &raw.get_ref().at_ms else {
                let problem = checker
                    .at(
                        raw,
                        "a concurrent action needs `at_ms`, its time after the step starts",
                    )
                    .field(format!("{field}.at_ms"));
                checker.problems.push(problem);
                return None;
            };
            let time = checker.latency(Some(time), &format!("{field}.at_ms"));
            task_action(checker, &field, raw).map(|action| (time, action))
        })
        .collect()
}

fn concurrent_append(
    checker: &mut Checker<'_>,
    index: usize,
    raw: &Spanned<RawAppend>,
) -> Option<ConcurrentAppend> {
    let field = format!("steps[{index}].concurrent_append");
    let append = raw.get_ref();
    let at = checker.latency(Some(&append.at_ms), &format!("{field}.at_ms"));
    let role = match &append.role {
        Some(value) => checker.choice(
            value,
            &format!("{field}.role"),
            &["user", "assistant"],
            |r| match r {
                "user" => Some(Role::User),
                "assistant" => Some(Role::Assistant),
                _ => None,
            },
        )?,
        None => Role::User,
    };
    Some(ConcurrentAppend {
        at,
        role,
        text: append.text.clone(),
    })
}
