//! `[[history]]` entries: committed messages in the loader's canonical shape, refusing any
//! other.

use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput};

use super::value::{at, count, json_object, name};
use super::{WriteError, unsupported};
use crate::scenario::format::file::HistorySpec;
use crate::scenario::format::file::raw::{RawHistory, RawHistoryCall, RawMessage};

pub(super) fn history(spec: &HistorySpec) -> Result<RawHistory, WriteError> {
    let mut messages = Vec::with_capacity(spec.messages.len());
    for (index, message) in spec.messages.iter().enumerate() {
        let id = format!("h{:04}", index + 1);
        if message.id != id {
            return Err(unsupported(format!(
                "history message id `{}` (the loader numbers them; expected `{id}`)",
                message.id
            )));
        }
        messages.push(at(history_message(message)?));
    }
    Ok(RawHistory {
        user: spec.user.clone(),
        session: spec.session.clone(),
        messages,
        ..RawHistory::default()
    })
}

fn history_message(message: &Message) -> Result<RawMessage, WriteError> {
    if !message.metadata.is_empty() || message.name.is_some() {
        return Err(unsupported(format!(
            "history message `{}` with metadata or a name",
            message.id
        )));
    }
    let mut raw = RawMessage {
        role: name(message.role.as_str()),
        text: None,
        thinking: None,
        tool_calls: Vec::new(),
        call_id: None,
        name: None,
        error: None,
        chars: None,
        content: None,
        media: None,
        size_bytes: None,
    };
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
        raw.call_id = Some(result.call_id.clone());
        raw.name = Some(result.tool_name.clone());
        raw.error = Some(result.is_error);
        raw.text = Some(text.clone());
        return Ok(raw);
    }
    message_parts(message, &mut raw)?;
    Ok(raw)
}

/// Parts in the loader's order: thinking, text, media, tool calls; at most one of each of the
/// first three.
fn message_parts(message: &Message, raw: &mut RawMessage) -> Result<(), WriteError> {
    let mut stage = 0;
    for part in &message.parts {
        let order = match part {
            // A history file holds no signatures; a signed part is written as its text.
            ContentPart::Thinking { text, .. } => {
                raw.thinking = Some(text.clone());
                1
            }
            ContentPart::Text { text } => {
                raw.text = Some(text.clone());
                2
            }
            ContentPart::Media { kind, size_bytes } => {
                raw.media = Some(name(kind.as_str()));
                raw.size_bytes = Some(count(*size_bytes)?);
                3
            }
            ContentPart::ToolCall(call) => {
                raw.tool_calls.push(RawHistoryCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    args: Some(json_object(&call.arguments, "tool-call arguments")?),
                });
                4
            }
            ContentPart::ToolResult(_)
            | ContentPart::RedactedThinking { .. }
            | ContentPart::Image(_) => 5,
        };
        let repeated = order == stage && order != 4;
        if order < stage || repeated || order == 5 {
            return Err(unsupported(format!(
                "the parts of history message `{}` (one thinking, text and media part, then tool calls; no redacted thinking or images)",
                message.id
            )));
        }
        stage = order;
    }
    Ok(())
}
