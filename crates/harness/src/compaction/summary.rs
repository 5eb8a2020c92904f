//! Summaries: rendering the prefix into the summary prompt, fitting it to the summariser, and
//! the summary message that replaces the prefix.
//!
//! The prefix includes earlier summaries, so chained compactions collapse into one summary. When
//! the rendered prompt is larger than the summariser's input limit, the oldest renderings are
//! dropped (an earlier summary is kept first) and the prompt says how many were left out:
//! compaction never fails because the history is too large for the summariser.

use serde_json::json;

use super::config::MESSAGES_PLACEHOLDER;
use crate::context::manifest::content_hash;
use crate::message::{ContentPart, Message, Role};
use crate::tokens::TokenEstimator;

/// Metadata key of a summary message (covered ids, summary model).
pub const SUMMARY_KEY: &str = "ctxbed.summary";
/// Characters of one tool result quoted in the summary input.
pub const RESULT_CHARS_IN_SUMMARY: usize = 2_000;

/// True for a summary produced by an earlier compaction.
pub fn is_summary(message: &Message) -> bool {
    message.metadata.contains_key(SUMMARY_KEY)
}

/// One message as a line block of the summary input.
fn render(message: &Message) -> String {
    if is_summary(message) {
        return format!("[earlier summary]\n{}", message.text());
    }
    let mut lines = Vec::new();
    for part in &message.parts {
        match part {
            ContentPart::Text { text } => lines.push(format!("[{}] {text}", message.role.as_str())),
            ContentPart::Thinking { .. }
            | ContentPart::RedactedThinking { .. }
            | ContentPart::Media { .. } => {}
            ContentPart::Image(image) => lines.push(format!(
                "[{} attached a {}x{} image]",
                message.role.as_str(),
                image.width,
                image.height
            )),
            ContentPart::ToolCall(call) => lines.push(format!(
                "[assistant called {} ({})] {}",
                call.name,
                call.id,
                crate::format::snippet(&crate::format::json_text(&call.arguments), 500)
            )),
            ContentPart::ToolResult(result) => lines.push(format!(
                "[{} result ({}){}] {}",
                result.tool_name,
                result.call_id,
                if result.is_error { " error" } else { "" },
                crate::format::snippet(&result.text(), RESULT_CHARS_IN_SUMMARY)
            )),
        }
    }
    lines.join("\n")
}

/// The summary prompt for a prefix, trimmed so that it costs at most `limit` tokens.
pub fn prompt(
    template: &str,
    prefix: &[Message],
    limit: u64,
    estimator: &dyn TokenEstimator,
) -> String {
    let blocks: Vec<String> = prefix
        .iter()
        .map(render)
        .filter(|b| !b.is_empty())
        .collect();
    let fixed = estimator.text_tokens(template) + 32;
    let mut costs: Vec<u64> = blocks
        .iter()
        .map(|b| estimator.text_tokens(b) + 1)
        .collect();
    let mut total: u64 = fixed + costs.iter().sum::<u64>();
    // Keep an earlier summary (always first) when trimming; drop the oldest other blocks.
    let first_droppable = usize::from(prefix.first().is_some_and(is_summary));
    let mut dropped = 0usize;
    let mut next = first_droppable;
    // The newest block is never dropped: if it alone is too large it is cut down below.
    while total > limit && next + 1 < blocks.len() {
        total -= costs[next];
        costs[next] = 0;
        dropped += 1;
        next += 1;
    }
    let mut kept: Vec<&str> = Vec::with_capacity(blocks.len());
    for (index, block) in blocks.iter().enumerate() {
        let omitted = index >= first_droppable && index < first_droppable + dropped;
        if index == first_droppable && dropped > 0 {
            kept.push("[... earlier messages left out to fit the summariser ...]");
        }
        if !omitted {
            kept.push(block);
        }
    }
    let mut conversation = kept.join("\n\n");
    let conversation_tokens = estimator.text_tokens(&conversation).max(1);
    let room = limit.saturating_sub(fixed);
    if conversation_tokens > room {
        // Still too large: keep the newest characters, in proportion to the room left.
        let chars = conversation.chars().count() as u64;
        let keep = usize::try_from(chars.saturating_mul(room) / conversation_tokens).unwrap_or(0);
        let skip = conversation.chars().count().saturating_sub(keep);
        conversation = format!(
            "[... cut to fit the summariser ...]{}",
            conversation.chars().skip(skip).collect::<String>()
        );
    }
    template.replace(MESSAGES_PLACEHOLDER, &conversation)
}

/// The user-role summary message replacing `covered`, with a stable content-derived id.
pub fn summary_message(
    text: &str,
    covered: &[&Message],
    model: &str,
    session_log: bool,
) -> Message {
    let ids: Vec<&str> = covered.iter().map(|m| m.id.as_str()).collect();
    let mut body = format!(
        "[Summary of {} earlier messages]\n{}",
        ids.len(),
        text.trim()
    );
    if session_log {
        body.push_str(
            "\n\n[Earlier detail is kept in the session log: call session_history with this session to read the original messages.]",
        );
    }
    let id = format!(
        "summary-{}",
        content_hash(format!("{}\n{text}", ids.join(",")).as_bytes())
    );
    let mut message = Message::new(id, Role::User, vec![ContentPart::text(body)]);
    message.metadata.insert(
        SUMMARY_KEY.to_string(),
        json!({ "covered": ids, "model": model }),
    );
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::RatioEstimator;

    #[test]
    fn prompt_fits_and_keeps_the_earlier_summary() {
        let earlier = summary_message("old summary", &[], "m", false);
        let mut prefix = vec![earlier];
        for i in 0..100 {
            prefix.push(Message::user(
                format!("u{i}"),
                format!("message number {i} {}", "z".repeat(200)),
            ));
        }
        let text = prompt("S:\n{messages}", &prefix, 500, &RatioEstimator);
        assert!(RatioEstimator.text_tokens(&text) <= 500 + 40);
        assert!(text.contains("[earlier summary]"));
        assert!(text.contains("message number 99"));
        assert!(!text.contains("message number 0 "));
        assert!(text.contains("left out to fit the summariser"));
    }

    #[test]
    fn prompt_drops_the_oldest_blocks_until_it_fits() {
        let prefix: Vec<Message> = (0..5)
            .map(|i| Message::user(format!("u{i}"), format!("block {i} {}", "z".repeat(100))))
            .collect();
        let template = "S:\n{messages}";
        let estimator = RatioEstimator;
        // The budget: the template and 32 tokens of framing, and each block plus one.
        let fixed = estimator.text_tokens(template) + 32;
        let costs: Vec<u64> = prefix
            .iter()
            .map(|m| estimator.text_tokens(&render(m)) + 1)
            .collect();
        let all = fixed + costs.iter().sum::<u64>();
        let shown = |text: &str| -> Vec<usize> {
            (0..5)
                .filter(|i| text.contains(&format!("block {i} ")))
                .collect()
        };

        let exact = prompt(template, &prefix, all, &estimator);
        assert_eq!(shown(&exact), [0, 1, 2, 3, 4], "{exact}");
        assert!(!exact.contains("left out"), "{exact}");
        assert!(!exact.contains("cut to fit"), "{exact}");

        let short = prompt(template, &prefix, all - 1, &estimator);
        assert_eq!(shown(&short), [1, 2, 3, 4], "{short}");
        assert!(short.contains("left out to fit the summariser"), "{short}");
        assert!(!short.contains("cut to fit"), "{short}");

        let two = prompt(template, &prefix, fixed + costs[3] + costs[4], &estimator);
        assert_eq!(shown(&two), [3, 4], "{two}");

        // Room for less than the newest block: it alone is kept, cut to its newest characters.
        let none = prompt(template, &prefix, fixed + 10, &estimator);
        assert!(none.contains("cut to fit the summariser"), "{none}");
        assert!(shown(&none).is_empty(), "{none}");
        // The newest characters, as many as the room left (10 tokens) is of the whole.
        let newest = render(&prefix[4]);
        let whole =
            format!("[... earlier messages left out to fit the summariser ...]\n\n{newest}");
        let keep = whole.chars().count() as u64 * 10 / estimator.text_tokens(&whole);
        let tail: String = whole
            .chars()
            .skip(whole.chars().count() - keep as usize)
            .collect();
        assert_eq!(
            none,
            format!("S:\n[... cut to fit the summariser ...]{tail}")
        );

        // A conversation that costs exactly the room left is not cut.
        let one = &prefix[4..];
        let room = estimator.text_tokens(&render(&one[0]));
        let fitting = prompt(template, one, fixed + room, &estimator);
        assert_eq!(fitting, format!("S:\n{}", render(&one[0])));
    }

    #[test]
    fn summary_ids_are_stable() {
        let a = Message::user("u1", "Fact: the writer uses commas.\nhello");
        let b = Message::assistant(
            "a1",
            "Decision: keep ISO dates.\nFact: the writer uses commas.",
        );
        let first = summary_message("s", &[&a, &b], "m", true);
        let second = summary_message("s", &[&a, &b], "m", true);
        assert_eq!(first.id, second.id);
        assert!(first.text().contains("session_history"));
    }
}
