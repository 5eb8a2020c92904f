//! The memory flush's pure parts: the default extraction prompt, what the extraction request
//! covers, and reading facts out of the memory model's reply.
//!
//! Before a summary replaces a prefix of the conversation, compaction asks a model (the memory
//! model, else the summary model) to extract the facts worth keeping into long-term memory
//! (`memory/facts.md`). The request carries the prefix rendered like the summary input, without
//! earlier summaries: their messages were flushed when those summaries were made.
//!
//! ```
//! use ctxbed_harness::compaction::memory::parse_facts;
//! let reply = "- The export writes ISO dates.\n* Tests run with `make check`.\n2. CI is on 2 cores.";
//! assert_eq!(
//!     parse_facts(reply),
//!     ["The export writes ISO dates.", "Tests run with `make check`.", "CI is on 2 cores."]
//! );
//! assert!(parse_facts("NONE").is_empty());
//! ```

use super::summary::is_summary;
use crate::message::Message;

/// The extraction prompt used unless one is configured; `{messages}` is replaced by the
/// messages about to be summarised.
pub const DEFAULT_MEMORY_PROMPT: &str = "The older messages of this conversation are about to be \
replaced by a summary. Before that, extract the facts from them that are worth keeping in \
long-term memory: decisions and their reasons, the user's preferences and constraints, names, \
paths, commands and figures that later work will need. Leave out anything temporary, \
speculative or already obvious from the task.\n\
Answer with one fact per line, each starting with \"- \" and understandable on its own. If \
nothing is worth keeping, answer NONE.\n\n\
Conversation:\n{messages}";

/// The messages an extraction request covers: the prefix without earlier summaries.
pub fn flush_input(prefix: &[Message]) -> Vec<Message> {
    prefix.iter().filter(|m| !is_summary(m)).cloned().collect()
}

/// The facts in a memory model's reply: one per non-blank line, with a leading list marker
/// (`-`, `*`, `•`, `1.`, `1)`) removed. A reply of `NONE` (any case, optionally with a full
/// stop) has none. Duplicates are left to the memory store, which skips facts it holds.
pub fn parse_facts(reply: &str) -> Vec<String> {
    let trimmed = reply.trim();
    if is_none(trimmed) {
        return Vec::new();
    }
    trimmed
        .lines()
        .map(strip_marker)
        .filter(|line| !line.is_empty() && !is_none(line))
        .map(str::to_string)
        .collect()
}

fn is_none(text: &str) -> bool {
    text.trim_end_matches('.').eq_ignore_ascii_case("none")
}

fn strip_marker(line: &str) -> &str {
    let line = line.trim();
    if matches!(line, "-" | "*" | "•") {
        return "";
    }
    for marker in ["- ", "* ", "• "] {
        if let Some(rest) = line.strip_prefix(marker) {
            return rest.trim();
        }
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let rest = &line[digits..];
        if let Some(rest) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return rest.trim();
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::summary::summary_message;

    #[test]
    fn markers_blanks_and_none_are_removed() {
        assert_eq!(
            parse_facts("\n  - one\n\n10) ten\n•  bullet \nplain line\n- \nnone.\n"),
            ["one", "ten", "bullet", "plain line"]
        );
        // A line that only looks like a list item keeps its text.
        assert_eq!(
            parse_facts(". dotted\n) closed\n1.5 kg"),
            [". dotted", ") closed", "1.5 kg"]
        );
        assert!(parse_facts("None.").is_empty());
        assert!(parse_facts("   ").is_empty());
        // A number that is part of the fact stays.
        assert_eq!(parse_facts("2026 is the year"), ["2026 is the year"]);
    }

    #[test]
    fn earlier_summaries_are_not_flushed_again() {
        let user = Message::user("u1", "Fact: the writer uses commas.");
        let earlier = summary_message("s", &[&user], "m", false);
        let later = Message::user("u2", "Decision: keep ISO dates.");
        let covered = flush_input(&[earlier, later.clone()]);
        assert_eq!(covered, [later]);
    }

    #[test]
    fn the_default_prompt_has_the_placeholder_once() {
        assert_eq!(
            DEFAULT_MEMORY_PROMPT
                .matches(super::super::config::MESSAGES_PLACEHOLDER)
                .count(),
            1
        );
        assert!(DEFAULT_MEMORY_PROMPT.contains("long-term memory"));
    }
}
