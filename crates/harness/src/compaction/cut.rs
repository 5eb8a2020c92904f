//! Choosing where the kept tail starts, without ever splitting a tool exchange.
//!
//! The cut is the earliest index whose suffix fits the tail budget (at least one message is
//! kept). If it lands on a tool result, it moves back to the assistant message that made the
//! calls, so all parallel calls and all their results stay together. One pass from the end:
//! O(n).
//!
//! ```
//! use ctxbed_harness::compaction::config::TailBudget;
//! use ctxbed_harness::compaction::cut::cut_index;
//! use ctxbed_harness::message::{ContentPart, Message};
//! let messages = vec![
//!     Message::user("u1", "go"),
//!     Message::assistant_tool_calls("a1", vec![
//!         ContentPart::tool_call("c1", "t", serde_json::json!({})),
//!         ContentPart::tool_call("c2", "t", serde_json::json!({})),
//!     ]),
//!     Message::tool_result("r1", "c1", "t", "one", false),
//!     Message::tool_result("r2", "c2", "t", "two", false),
//! ];
//! // Keeping one message would start the tail at a result: the cut moves back to the call.
//! assert_eq!(cut_index(&messages, TailBudget::Messages(1), |_| 1), 1);
//! ```

use super::config::TailBudget;
use crate::message::{Message, Role};

/// Index of the first kept message (0 when there is nothing to summarise).
pub fn cut_index(
    messages: &[Message],
    budget: TailBudget,
    tokens: impl Fn(&Message) -> u64,
) -> usize {
    let count = messages.len();
    if count == 0 {
        return 0;
    }
    let mut start = match budget {
        TailBudget::Messages(keep) => count.saturating_sub(keep.max(1)),
        TailBudget::Tokens(limit) => {
            let mut start = count - 1;
            let mut used = tokens(&messages[start]);
            while start > 0 {
                let cost = tokens(&messages[start - 1]);
                if used + cost > limit {
                    break;
                }
                used += cost;
                start -= 1;
            }
            start
        }
    };
    while start > 0 && messages[start].role == Role::Tool {
        start -= 1;
    }
    start
}

/// True when no tool exchange straddles `cut` (the property every cut must have).
pub fn is_pair_closed(messages: &[Message], cut: usize) -> bool {
    if cut == 0 || cut >= messages.len() {
        return true;
    }
    let prefix_calls: Vec<&str> = messages[..cut]
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| c.id.as_str()))
        .collect();
    // A reused call id may appear on both sides; a suffix result answering a suffix call with
    // the same id is not a split exchange.
    let suffix_calls: Vec<&str> = messages[cut..]
        .iter()
        .flat_map(|m| m.tool_calls().map(|c| c.id.as_str()))
        .collect();
    let suffix_results_answer_prefix =
        messages[cut..]
            .iter()
            .flat_map(|m| m.tool_results())
            .any(|r| {
                prefix_calls.contains(&r.call_id.as_str())
                    && !suffix_calls.contains(&r.call_id.as_str())
            });
    messages[cut].role != Role::Tool && !suffix_results_answer_prefix
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ContentPart;

    fn exchange(round: usize, parallel: usize) -> Vec<Message> {
        let calls = (0..parallel)
            .map(|p| ContentPart::tool_call(format!("c{round}_{p}"), "t", serde_json::json!({})))
            .collect();
        let mut messages = vec![Message::assistant_tool_calls(format!("a{round}"), calls)];
        for p in 0..parallel {
            messages.push(Message::tool_result(
                format!("r{round}_{p}"),
                format!("c{round}_{p}"),
                "t",
                "x",
                false,
            ));
        }
        messages
    }

    #[test]
    fn every_cut_is_pair_closed() {
        let mut messages = vec![Message::user("u", "go")];
        for round in 0..20 {
            messages.extend(exchange(round, 1 + round % 4));
        }
        for keep in 1..messages.len() + 2 {
            let cut = cut_index(&messages, TailBudget::Messages(keep), |_| 1);
            assert!(is_pair_closed(&messages, cut), "keep {keep} cut {cut}");
            let by_tokens = cut_index(&messages, TailBudget::Tokens(keep as u64), |_| 1);
            assert!(
                is_pair_closed(&messages, by_tokens),
                "tokens {keep} cut {by_tokens}"
            );
        }
    }

    #[test]
    fn at_least_one_message_is_kept() {
        let messages = vec![Message::user("u", "a"), Message::user("v", "b")];
        assert_eq!(cut_index(&messages, TailBudget::Tokens(0), |_| 100), 1);
    }

    #[test]
    fn a_token_budget_keeps_the_longest_suffix_that_fits() {
        // Costs 5, 4, 3, 2, 1 from the first message to the last; no tool messages, so the
        // cut is the budget's alone. A suffix costing exactly the limit fits.
        let messages: Vec<Message> = (0..5)
            .map(|i| Message::user(format!("u{i}"), "x"))
            .collect();
        let cost = |m: &Message| 5 - m.id[1..].parse::<u64>().unwrap_or(0);
        for (limit, start) in [
            (0, 4),
            (2, 4),
            (3, 3),
            (5, 3),
            (6, 2),
            (9, 2),
            (10, 1),
            (14, 1),
            (15, 0),
            (100, 0),
        ] {
            let cut = cut_index(&messages, TailBudget::Tokens(limit), cost);
            assert_eq!(cut, start, "limit {limit}");
        }
    }

    #[test]
    fn a_history_that_starts_with_a_result_is_cut_at_its_start() {
        let messages = vec![
            Message::tool_result("r0", "c0", "t", "orphan", false),
            Message::tool_result("r1", "c1", "t", "orphan", false),
        ];
        assert_eq!(cut_index(&messages, TailBudget::Messages(1), |_| 1), 0);
        assert_eq!(cut_index(&messages, TailBudget::Tokens(1), |_| 1), 0);
    }

    #[test]
    fn a_cut_that_splits_an_exchange_is_not_pair_closed() {
        let mut messages = vec![Message::user("u", "go")];
        messages.extend(exchange(0, 2));
        messages.push(Message::user("u2", "next"));
        // [u, a0, r0_0, r0_1, u2]: starting at a result splits the exchange.
        assert!(!is_pair_closed(&messages, 2));
        assert!(!is_pair_closed(&messages, 3));
        for closed in [0, 1, 4, 5, 6] {
            assert!(is_pair_closed(&messages, closed), "cut {closed}");
        }
        // A suffix that starts with a message but answers a call of the prefix is split too.
        let late = vec![
            exchange(1, 1).remove(0),
            Message::user("u3", "meanwhile"),
            Message::tool_result("r1_0", "c1_0", "t", "late", false),
        ];
        assert!(!is_pair_closed(&late, 1));
        assert!(is_pair_closed(&late, 0));
    }

    #[test]
    fn a_reused_call_id_on_both_sides_is_not_a_split() {
        // Found by `ctxbed sweep` (seed 730): the same id in two exchanges.
        let mut messages = vec![Message::user("u", "go")];
        messages.extend(exchange(0, 1));
        messages.push(Message::user("u2", "again"));
        let mut again = exchange(0, 1);
        again[0].id = "a0-again".to_string();
        again[1].id = "r0-again".to_string();
        messages.extend(again);
        let cut = 4;
        assert_eq!(messages[cut].role, crate::message::Role::Assistant);
        assert!(is_pair_closed(&messages, cut));
    }
}
