//! `[[steps]]` entries: the calls and what happens around them.

use ctxbed_harness::message::Role;
use toml::{Table, Value};

use super::task::{plan_mode, task_action};
use super::value::{millis, string_map, strings};
use super::{WriteError, unsupported};
use crate::scenario::file::{ConcurrentAppend, Restart, StepSpec};

pub(super) fn step(spec: &StepSpec) -> Result<Value, WriteError> {
    let mut table = Table::new();
    if let Some(user) = &spec.user {
        table.insert("user".into(), user.clone().into());
    }
    if let Some(session) = &spec.session {
        table.insert("session".into(), session.clone().into());
    }
    table.insert("input".into(), spec.input.clone().into());
    if !spec.workspace_writes.is_empty() {
        table.insert(
            "workspace_writes".into(),
            string_map(&spec.workspace_writes),
        );
    }
    if let Some(mode) = spec.plan_mode {
        table.insert("plan_mode".into(), plan_mode(mode).into());
    }
    if let Some(restart) = spec.restart {
        let name = match restart {
            Restart::Clean => "clean",
            Restart::Torn => "torn",
            Restart::Corrupt => "corrupt",
        };
        table.insert("restart".into(), name.into());
    }
    if let Some(prefixes) = &spec.fail_writes_under {
        table.insert("fail_writes_under".into(), strings(prefixes));
    }
    if let Some(append) = &spec.concurrent_append {
        table.insert(
            "concurrent_append".into(),
            Value::Table(concurrent_append(append)?),
        );
    }
    if !spec.actions.is_empty() {
        let actions: Result<Vec<Value>, WriteError> = spec
            .actions
            .iter()
            .map(|action| task_action(action).map(Value::Table))
            .collect();
        table.insert("actions".into(), Value::Array(actions?));
    }
    if !spec.concurrent_actions.is_empty() {
        let actions: Result<Vec<Value>, WriteError> = spec
            .concurrent_actions
            .iter()
            .map(|(at, action)| {
                let mut entry = task_action(action)?;
                entry.insert("at_ms".into(), millis(*at)?);
                Ok(Value::Table(entry))
            })
            .collect();
        table.insert("concurrent_actions".into(), Value::Array(actions?));
    }
    Ok(Value::Table(table))
}

/// Another writer's append; the loader takes only user and assistant messages.
fn concurrent_append(append: &ConcurrentAppend) -> Result<Table, WriteError> {
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
    let mut table = Table::new();
    table.insert("at_ms".into(), millis(append.at)?);
    table.insert("role".into(), role.into());
    table.insert("text".into(), append.text.clone().into());
    Ok(table)
}
