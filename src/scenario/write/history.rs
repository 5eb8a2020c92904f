//! `[[history]]` entries: committed messages in the loader's canonical shape, refusing any
//! other.

use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput};
use toml::{Table, Value};

use super::value::{integer, json_table};
use super::{WriteError, unsupported};
use crate::scenario::file::HistorySpec;

pub(super) fn history(spec: &HistorySpec) -> Result<Value, WriteError> {
    let mut table = Table::new();
    if let Some(user) = &spec.user {
        table.insert("user".into(), user.clone().into());
    }
    if let Some(session) = &spec.session {
        table.insert("session".into(), session.clone().into());
    }
    let mut messages = Vec::with_capacity(spec.messages.len());
    for (index, message) in spec.messages.iter().enumerate() {
        let id = format!("h{:04}", index + 1);
        if message.id != id {
            return Err(unsupported(format!(
                "history message id `{}` (the loader numbers them; expected `{id}`)",
                message.id
            )));
        }
        messages.push(history_message(message)?);
    }
    table.insert("messages".into(), Value::Array(messages));
    Ok(Value::Table(table))
}

fn history_message(message: &Message) -> Result<Value, WriteError> {
    if !message.metadata.is_empty() || message.name.is_some() {
        return Err(unsupported(format!(
            "history message `{}` with metadata or a name",
            message.id
        )));
    }
    let mut table = Table::new();
    table.insert("role".into(), message.role.as_str().into());
    if message.role == Role::Tool {
        let [ContentPart::ToolResult(result)] = message.parts.as_slice() else {
            return Err(unsupported(format!(
                "tool message `{}` without exactly one result",
                message.id
            )));
        };
        let [ToolOutput::Text { text }] = result.outputs.as_slice() else {
            return Err(unsupported(format!(
                "tool result in `{}` without exactly one text output",
                message.id
            )));
        };
        if !result.metadata.is_empty() {
            return Err(unsupported(format!(
                "tool result metadata in `{}`",
                message.id
            )));
        }
        table.insert("call_id".into(), result.call_id.clone().into());
        table.insert("name".into(), result.tool_name.clone().into());
        table.insert("error".into(), result.is_error.into());
        table.insert("text".into(), text.clone().into());
        return Ok(Value::Table(table));
    }
    message_parts(message, &mut table)?;
    Ok(Value::Table(table))
}

/// Parts in the loader's order: thinking, text, media, tool calls; at most one of each of the
/// first three.
fn message_parts(message: &Message, table: &mut Table) -> Result<(), WriteError> {
    let mut stage = 0;
    let mut calls = Vec::new();
    for part in &message.parts {
        let (order, key) = match part {
            ContentPart::Thinking { text } => (1, Some(("thinking", text))),
            ContentPart::Text { text } => (2, Some(("text", text))),
            ContentPart::Media { kind, size_bytes } => {
                table.insert("media".into(), kind.as_str().into());
                table.insert("size_bytes".into(), integer(*size_bytes)?);
                (3, None)
            }
            ContentPart::ToolCall(call) => {
                let serde_json::Value::Object(map) = &call.arguments else {
                    return Err(unsupported("tool-call arguments that are not an object"));
                };
                let mut entry = Table::new();
                entry.insert("id".into(), call.id.clone().into());
                entry.insert("name".into(), call.name.clone().into());
                entry.insert("args".into(), Value::Table(json_table(map)?));
                calls.push(Value::Table(entry));
                (4, None)
            }
            ContentPart::ToolResult(_) => (5, None),
        };
        let repeated = order == stage && order != 4;
        if order < stage || repeated || order == 5 {
            return Err(unsupported(format!(
                "the parts of history message `{}` (one thinking, text and media part, then tool calls)",
                message.id
            )));
        }
        stage = order;
        if let Some((key, text)) = key {
            table.insert(key.into(), text.clone().into());
        }
    }
    if !calls.is_empty() {
        table.insert("tool_calls".into(), Value::Array(calls));
    }
    Ok(())
}
