//! Checking `[[history]]` into [`HistorySpec`]s: committed messages given one by one, or
//! generated tool rounds, their text seeded per message.

use ctxbed_harness::message::{ContentPart, MediaKind, Message, Role, ToolOutput, ToolResult};
use ctxbed_sim::rng::SeedStream;
use ctxbed_sim::text::{TextKind, generate_text};
use toml::Spanned;

use super::checked::HistorySpec;
use super::raw::{RawHistory, RawMessage};
use super::text::{result_chars, text_kind};
use crate::scenario::format::mock_file::Checker;

/// One `[[history]]` entry: its messages, then any generated tool rounds.
pub(super) fn history_spec(
    checker: &mut Checker<'_>,
    history: SeedStream,
    index: usize,
    spanned: &Spanned<RawHistory>,
) -> Option<HistorySpec> {
    let raw = spanned.get_ref();
    let field = format!("history[{index}]");
    if raw.messages.len() > crate::limits::HISTORY_MESSAGES_MAX {
        let problem = checker
            .at(
                spanned,
                format!(
                    "{} messages; at most {}",
                    raw.messages.len(),
                    crate::limits::HISTORY_MESSAGES_MAX
                ),
            )
            .field(format!("{field}.messages"));
        checker.problems.push(problem);
        return None;
    }
    let mut messages = Vec::new();
    for (position, message) in raw.messages.iter().enumerate() {
        let id = format!("h{:04}", messages.len() + 1);
        let field = format!("{field}.messages[{position}]");
        let text_key = format!("[{index}].messages[{position}]/{id}");
        if let Some(message) = history_message(checker, history, &text_key, &field, id, message) {
            messages.push(message);
        }
    }
    if let Some(rounds) = &raw.rounds {
        generated_rounds(checker, history, index, spanned, rounds, &mut messages)?;
    }
    Some(HistorySpec {
        user: raw.user.clone(),
        session: raw.session.clone(),
        messages,
    })
}

/// Appends the entry's `rounds` generated tool exchanges (with its `tool`) to `messages`;
/// `None` when they have a problem.
fn generated_rounds(
    checker: &mut Checker<'_>,
    history: SeedStream,
    index: usize,
    spanned: &Spanned<RawHistory>,
    rounds: &Spanned<i64>,
    messages: &mut Vec<Message>,
) -> Option<()> {
    let raw = spanned.get_ref();
    let field = format!("history[{index}]");
    let rounds_field = format!("{field}.rounds");
    let count = checker.count(rounds, &rounds_field, 0)?;
    if count > u64::from(crate::limits::HISTORY_ROUNDS_MAX) {
        let problem = checker
            .at(
                rounds,
                format!(
                    "{count} rounds; at most {}",
                    crate::limits::HISTORY_ROUNDS_MAX
                ),
            )
            .field(rounds_field);
        checker.problems.push(problem);
        return None;
    }
    let Some(tool) = &raw.tool else {
        let problem = checker
            .at(
                rounds,
                "`rounds` needs a `tool = { name = \"...\", result_chars = N }`",
            )
            .field(format!("{field}.tool"));
        checker.problems.push(problem);
        return None;
    };
    let chars = match &tool.result_chars {
        Some(value) => result_chars(checker, value, &format!("{field}.tool.result_chars"))?,
        None => 100,
    };
    let kind = text_kind(
        checker,
        tool.content.as_ref(),
        &format!("{field}.tool.content"),
    )?;
    for round in 0..count {
        generated_round(messages, history, index, round, &tool.name, chars, kind);
    }
    Some(())
}

/// Appends one generated tool exchange: an assistant call and its result.
fn generated_round(
    messages: &mut Vec<Message>,
    history: SeedStream,
    entry: usize,
    round: u64,
    tool: &str,
    chars: usize,
    kind: TextKind,
) {
    let call_id = format!("hist_{entry}_{round}");
    let call = ContentPart::tool_call(call_id.clone(), tool, serde_json::json!({ "round": round }));
    let call_message_id = format!("h{:04}", messages.len() + 1);
    messages.push(Message::assistant_tool_calls(call_message_id, vec![call]));
    let text = generate_text(kind, chars, history.seed_for(&format!("/{entry}/{round}")));
    let result_id = format!("h{:04}", messages.len() + 1);
    messages.push(Message::tool_result(result_id, call_id, tool, text, false));
}

/// One history message; generated text is seeded by `text_key` in the history stream.
fn history_message(
    checker: &mut Checker<'_>,
    history: SeedStream,
    text_key: &str,
    field: &str,
    id: String,
    spanned: &Spanned<RawMessage>,
) -> Option<Message> {
    let raw = spanned.get_ref();
    let roles = ["system", "user", "assistant", "tool"];
    let role = checker.choice(&raw.role, &format!("{field}.role"), &roles, |r| match r {
        "system" => Some(Role::System),
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "tool" => Some(Role::Tool),
        _ => None,
    })?;
    let text = match &raw.chars {
        Some(value) => {
            let chars = result_chars(checker, value, &format!("{field}.chars"))?;
            let kind = text_kind(checker, raw.content.as_ref(), &format!("{field}.content"))?;
            Some(generate_text(kind, chars, history.seed_for(text_key)))
        }
        None => raw.text.clone(),
    };
    if role == Role::Tool {
        return tool_message(checker, field, id, raw, text);
    }
    let mut parts = Vec::new();
    if let Some(thinking) = &raw.thinking {
        parts.push(ContentPart::thinking(thinking.clone()));
    }
    if let Some(text) = text {
        parts.push(ContentPart::text(text));
    }
    if let Some(media) = &raw.media {
        parts.push(media_part(checker, field, raw, media)?);
    }
    for call in &raw.tool_calls {
        let arguments = call
            .args
            .clone()
            .and_then(|table| serde_json::to_value(table).ok())
            .unwrap_or_else(|| serde_json::json!({}));
        parts.push(ContentPart::tool_call(
            call.id.clone(),
            call.name.clone(),
            arguments,
        ));
    }
    Some(Message::new(id, role, parts))
}

/// A `tool` message: the result of call `call_id`, which it must name.
fn tool_message(
    checker: &mut Checker<'_>,
    field: &str,
    id: String,
    raw: &RawMessage,
    text: Option<String>,
) -> Option<Message> {
    let Some(call_id) = &raw.call_id else {
        let problem = checker
            .at(&raw.role, "a tool message needs `call_id` and `name`")
            .field(format!("{field}.call_id"));
        checker.problems.push(problem);
        return None;
    };
    let result = ToolResult {
        call_id: call_id.clone(),
        tool_name: raw.name.clone().unwrap_or_default(),
        outputs: vec![ToolOutput::Text {
            text: text.unwrap_or_default(),
        }],
        is_error: raw.error.unwrap_or(false),
        metadata: Default::default(),
    };
    Some(Message::new(
        id,
        Role::Tool,
        vec![ContentPart::ToolResult(result)],
    ))
}

/// A message's `media` part: its kind and `size_bytes` (0 when absent).
fn media_part(
    checker: &mut Checker<'_>,
    field: &str,
    raw: &RawMessage,
    media: &Spanned<String>,
) -> Option<ContentPart> {
    let kinds = ["image", "audio", "video", "file"];
    let kind = checker.choice(media, &format!("{field}.media"), &kinds, |k| match k {
        "image" => Some(MediaKind::Image),
        "audio" => Some(MediaKind::Audio),
        "video" => Some(MediaKind::Video),
        "file" => Some(MediaKind::File),
        _ => None,
    })?;
    let size_bytes = raw
        .size_bytes
        .as_ref()
        .and_then(|s| checker.count(s, &format!("{field}.size_bytes"), 0))
        .unwrap_or(0);
    Some(ContentPart::Media { kind, size_bytes })
}
