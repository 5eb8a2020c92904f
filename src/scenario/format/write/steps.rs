//! `[[steps]]` entries: the calls and what happens around them.

use ctxbed_harness::message::Role;

use super::task::{plan_mode, task_action};
use super::value::{at, each, millis, name};
use super::{WriteError, unsupported};
use crate::scenario::format::choice::Choice;
use crate::scenario::format::file::raw::{RawAppend, RawStep};
use crate::scenario::format::file::{ConcurrentAppend, StepSpec};

pub(super) fn step(spec: &StepSpec) -> Result<RawStep, WriteError> {
    let restart = spec.restart.map(|restart| name(restart.name()));
    let concurrent_actions = spec
        .concurrent_actions
        .iter()
        .map(|(time, action)| {
            let mut raw = task_action(action)?;
            raw.at_ms = Some(millis(*time)?);
            Ok(at(raw))
        })
        .collect::<Result<Vec<_>, WriteError>>()?;
    Ok(RawStep {
        user: spec.user.clone(),
        session: spec.session.clone(),
        input: spec.input.clone(),
        workspace_writes: spec
            .workspace_writes
            .iter()
            .map(|(path, text)| (path.clone(), at(text.clone())))
            .collect(),
        plan_mode: spec.plan_mode.map(|mode| name(plan_mode(mode))),
        restart,
        fail_writes_under: spec.fail_writes_under.clone(),
        concurrent_append: spec
            .concurrent_append
            .as_ref()
            .map(concurrent_append)
            .transpose()?
            .map(at),
        actions: each(&spec.actions, task_action)?,
        concurrent_actions,
        cancel_at_ms: spec.cancel_at.map(millis).transpose()?,
    })
}

/// Another writer's append; the loader takes only user and assistant messages.
fn concurrent_append(append: &ConcurrentAppend) -> Result<RawAppend, WriteError> {
    let role = match append.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        other => {
            return Err(unsupported(format!(
                "a concurrent append of a {} message (only user or assistant)",
                other.as_str()
            )));
        }
    };
    Ok(RawAppend {
        at_ms: millis(append.at)?,
        text: append.text.clone(),
        role: Some(name(role)),
    })
}
