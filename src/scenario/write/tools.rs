//! `[[tools]]` and `[[sources]]` entries: the scripted tools and context sources.

use ctxbed_sim::scripted::SourceFailure;
use toml::{Table, Value};

use super::task::plan_mode;
use super::value::{integer, json_table, millis, strings};
use super::{WriteError, unsupported};
use crate::scenario::file::{SourceSpec, ToolOutputSpec, ToolSpec};

pub(super) fn tool(spec: &ToolSpec) -> Result<Value, WriteError> {
    let mut table = Table::new();
    table.insert("name".into(), spec.name.clone().into());
    if let Some(description) = &spec.description {
        table.insert("description".into(), description.clone().into());
    }
    if let Some(parameters) = &spec.parameters {
        let serde_json::Value::Object(map) = parameters else {
            return Err(unsupported("tool parameters that are not a JSON object"));
        };
        table.insert("parameters".into(), Value::Table(json_table(map)?));
    }
    match &spec.output {
        ToolOutputSpec::Fixed(text) => {
            table.insert("text".into(), text.clone().into());
        }
        ToolOutputSpec::Sequence(texts) => {
            table.insert("texts".into(), strings(texts));
        }
        ToolOutputSpec::Generated { chars, kind } => {
            table.insert("result_chars".into(), (*chars as i64).into());
            table.insert("content".into(), kind.as_str().into());
        }
        ToolOutputSpec::ByArguments {
            responses,
            fallback,
        } => {
            table.insert("text".into(), fallback.text.clone().into());
            table.insert("exit_code".into(), i64::from(fallback.exit_code).into());
            let list: Vec<Value> = responses
                .iter()
                .map(|r| {
                    let mut response = Table::new();
                    response.insert(
                        "when_args_contain".into(),
                        r.when_args_contain.clone().into(),
                    );
                    response.insert("text".into(), r.text.clone().into());
                    response.insert("exit_code".into(), i64::from(r.exit_code).into());
                    Value::Table(response)
                })
                .collect();
            table.insert("responses".into(), Value::Array(list));
        }
    }
    table.insert("latency_ms".into(), millis(spec.latency)?);
    if let Some(fail) = &spec.fail {
        table.insert("fail".into(), fail.clone().into());
    }
    if let Some(mode) = spec.sets_plan_mode {
        table.insert("sets_plan_mode".into(), plan_mode(mode).into());
    }
    if let Some((path, text)) = &spec.writes {
        let mut writes = Table::new();
        writes.insert("path".into(), path.clone().into());
        writes.insert("text".into(), text.clone().into());
        table.insert("writes".into(), Value::Table(writes));
    }
    Ok(Value::Table(table))
}

pub(super) fn source(spec: &SourceSpec) -> Result<Value, WriteError> {
    let mut table = Table::new();
    table.insert("name".into(), spec.name.clone().into());
    if let Some(timeout) = spec.timeout {
        table.insert("timeout_ms".into(), millis(timeout)?);
    }
    let on_failure = if spec.omit_on_failure { "omit" } else { "fail" };
    table.insert("on_failure".into(), on_failure.into());
    table.insert("latency_ms".into(), millis(spec.latency)?);
    if let Some(failure) = spec.failure {
        let name = match failure {
            SourceFailure::Error => "error",
            SourceFailure::NoList => "no_list",
            SourceFailure::Never => "never",
            SourceFailure::Panic => "panic",
        };
        table.insert("failure".into(), name.into());
    }
    if !spec.fail_loads.is_empty() {
        let loads: Result<Vec<Value>, WriteError> =
            spec.fail_loads.iter().map(|l| integer(*l)).collect();
        table.insert("fail_loads".into(), Value::Array(loads?));
    }
    let blocks = spec.blocks.iter().map(|block| {
        let mut entry = Table::new();
        entry.insert("id".into(), block.id.clone().into());
        let kind = if block.runtime {
            "runtime"
        } else {
            "reference"
        };
        entry.insert("kind".into(), kind.into());
        entry.insert("text".into(), block.text.clone().into());
        entry.insert("required".into(), block.required.into());
        entry.insert("priority".into(), i64::from(block.priority).into());
        if let Some(revision) = &block.revision {
            entry.insert("revision".into(), revision.clone().into());
        }
        Value::Table(entry)
    });
    table.insert("blocks".into(), Value::Array(blocks.collect()));
    Ok(Value::Table(table))
}
