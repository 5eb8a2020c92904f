//! The generated committed histories: user and assistant text, tool exchanges with parallel calls
//! and tiny to huge results, media, a foreign System message, and rarely an unpaired exchange.

use super::{Draw, model};
use crate::scenario::format::file::{HistorySpec, StepSpec};
use ctxbed_harness::message::{ContentPart, MediaKind, Message, Role, ToolOutput, ToolResult};

/// One committed history for the first step's session: rounds of user text, assistant text,
/// tool exchanges (parallel calls, tiny to huge results), media, a foreign System message, and
/// rarely an unpaired call or result.
pub(super) fn history(draw: &mut Draw, tool_names: &[String]) -> Vec<HistorySpec> {
    if !draw.percent(50) {
        return Vec::new();
    }
    vec![HistorySpec {
        user: None,
        session: None,
        messages: history_messages(draw, "hc", tool_names),
    }]
}

/// When a step runs in the second session, that session sometimes has a history of its own.
pub(super) fn second_session_history(
    draw: &mut Draw,
    steps: &[StepSpec],
    tool_names: &[String],
) -> Option<HistorySpec> {
    let step = steps.iter().find(|s| s.session.as_deref() == Some("s2"))?;
    draw.percent(40).then(|| HistorySpec {
        user: step.user.clone(),
        session: step.session.clone(),
        messages: history_messages(draw, "hd", tool_names),
    })
}

/// Call ids start with `prefix`, so two histories never share one by accident (a repeated id is a
/// fault the mock script injects on purpose).
fn history_messages(draw: &mut Draw, prefix: &str, tool_names: &[String]) -> Vec<Message> {
    let rounds = draw.range(1, 8);
    let mut messages: Vec<Message> = Vec::new();
    for round in 0..rounds {
        match draw.below(100) {
            0..30 => {
                let chars = draw.size().min(3_000);
                messages.push(Message::user("", draw.text(chars)));
            }
            30..48 => messages.push(assistant_text(draw)),
            48..88 => tool_exchange(draw, &format!("{prefix}{round}"), tool_names, &mut messages),
            88..95 => {
                let chars = draw.range(0, 200) as usize;
                let mut message = Message::user("", draw.text(chars));
                let kind = *draw.pick(&[MediaKind::Image, MediaKind::Audio, MediaKind::File]);
                let size_bytes = draw.range(0, 5_000_000);
                message.parts.push(ContentPart::Media { kind, size_bytes });
                messages.push(message);
            }
            95..97 => {
                let chars = draw.range(1, 200) as usize;
                messages.push(Message::system("", draw.text(chars)));
            }
            _ => unpaired(draw, &format!("{prefix}{round}"), &mut messages),
        }
    }
    for (index, message) in messages.iter_mut().enumerate() {
        // The ids the scenario loader gives history messages, so a written scenario loads back
        // to the same value.
        message.id = format!("h{:04}", index + 1);
    }
    messages
}

fn assistant_text(draw: &mut Draw) -> Message {
    let mut parts = Vec::new();
    if draw.percent(30) {
        let chars = draw.range(1, 300) as usize;
        parts.push(ContentPart::thinking(draw.text(chars)));
    }
    let chars = draw.size().min(3_000);
    parts.push(ContentPart::text(draw.text(chars)));
    Message::new("", Role::Assistant, parts)
}

fn history_call(draw: &mut Draw, id: String, tool_names: &[String]) -> ContentPart {
    let name = if tool_names.is_empty() {
        "execute".to_string()
    } else {
        draw.pick(tool_names).clone()
    };
    ContentPart::tool_call(id, name, model::arguments(draw))
}

fn tool_exchange(draw: &mut Draw, round: &str, tool_names: &[String], out: &mut Vec<Message>) {
    let parallel = if draw.percent(25) {
        draw.range(2, 4)
    } else {
        1
    };
    let calls: Vec<ContentPart> = (0..parallel)
        .map(|k| history_call(draw, format!("{round}_{k}"), tool_names))
        .collect();
    let results: Vec<Message> = calls
        .iter()
        .filter_map(|part| match part {
            ContentPart::ToolCall(call) => Some(tool_message(draw, &call.id, &call.name)),
            _ => None,
        })
        .collect();
    let mut parts = Vec::new();
    if draw.percent(20) {
        let chars = draw.range(1, 200) as usize;
        parts.push(ContentPart::text(draw.text(chars)));
    }
    parts.extend(calls);
    out.push(Message::new("", Role::Assistant, parts));
    out.extend(results);
}

fn tool_message(draw: &mut Draw, call_id: &str, tool: &str) -> Message {
    let chars = draw.size();
    let result = ToolResult {
        call_id: call_id.to_string(),
        tool_name: tool.to_string(),
        outputs: vec![ToolOutput::Text {
            text: draw.text(chars),
        }],
        is_error: draw.percent(10),
        metadata: Default::default(),
    };
    Message::new("", Role::Tool, vec![ContentPart::ToolResult(result)])
}

/// A call without its result, or a result without its call.
fn unpaired(draw: &mut Draw, round: &str, out: &mut Vec<Message>) {
    let id = format!("{round}_orphan");
    if draw.percent(50) {
        let call = ContentPart::tool_call(id, "execute", model::arguments(draw));
        out.push(Message::new("", Role::Assistant, vec![call]));
    } else {
        out.push(tool_message(draw, &id, "execute"));
    }
}
