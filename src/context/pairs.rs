//! Tool-call/result pairing: the rule strict providers enforce, checked before a request leaves.
//!
//! Every tool call of an assistant message must be answered by the tool messages immediately
//! after it, and every tool result must answer a call of the assistant message before it. The
//! harness validates this on every prepared request (`invalid_tool_pairs`); mock models apply the
//! same rule to answer with a provider's real rejection.
//!
//! ```
//! use ctxbed::context::pairs::{PairingProblem, find_pairing_problem};
//! use ctxbed::message::Message;
//! let orphan = vec![Message::user("u1", "go"), Message::tool_result("t1", "call_9", "execute", "ok", false)];
//! assert_eq!(find_pairing_problem(&orphan),
//!     Some(PairingProblem::ResultWithoutCall { index: 1, call_id: "call_9".into() }));
//! ```

use std::collections::{BTreeSet, HashSet};

use crate::message::{Message, Role};

/// Call ids seen so far: membership only, so the set's order is never observed.
type SeenIds<'a> = HashSet<&'a str, foldhash::fast::RandomState>;

/// True when an id is empty or only whitespace (what `trim().is_empty()` says, reading only
/// up to the first other character).
fn blank(id: &str) -> bool {
    id.chars().all(char::is_whitespace)
}

/// The first pairing violation found, with the offending message position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingProblem {
    /// An assistant tool call not answered by the tool messages that follow it.
    CallWithoutResult { index: usize, call_id: String },
    /// A tool result whose call is not in the assistant message before it.
    ResultWithoutCall { index: usize, call_id: String },
    /// A tool call or result with a blank id.
    BlankId { index: usize },
    /// A call id used by more than one tool call.
    DuplicateCallId { index: usize, call_id: String },
}

/// Checks the pairing rules: every call of an assistant message is answered by the tool
/// messages immediately after it, and every tool result answers a call of that assistant message.
pub fn find_pairing_problem(messages: &[Message]) -> Option<PairingProblem> {
    // Borrowed ids: the check allocates only for the problem it reports. `seen` needs no
    // order; `open` reports its smallest id first.
    let mut open: BTreeSet<&str> = BTreeSet::new();
    let mut open_index = 0;
    // Sized for a history of tool exchanges (a call and a result per two messages), so the
    // set does not grow step by step.
    let mut seen = SeenIds::with_capacity_and_hasher(messages.len() / 2, Default::default());
    for (index, message) in messages.iter().enumerate() {
        if let Some(problem) = id_problem(index, message, &mut seen) {
            return Some(problem);
        }
        if message.role == Role::Tool {
            for result in message.tool_results() {
                if !open.remove(result.call_id.as_str()) {
                    return Some(PairingProblem::ResultWithoutCall {
                        index,
                        call_id: result.call_id.clone(),
                    });
                }
            }
            continue;
        }
        if let Some(call_id) = open.iter().next() {
            return Some(PairingProblem::CallWithoutResult {
                index: open_index,
                call_id: (*call_id).to_string(),
            });
        }
        if message.role == Role::Assistant {
            open = message.tool_calls().map(|call| call.id.as_str()).collect();
            open_index = index;
        }
    }
    open.into_iter()
        .next()
        .map(|call_id| PairingProblem::CallWithoutResult {
            index: open_index,
            call_id: call_id.to_string(),
        })
}

fn id_problem<'a>(
    index: usize,
    message: &'a Message,
    seen: &mut SeenIds<'a>,
) -> Option<PairingProblem> {
    for call in message.tool_calls() {
        if blank(&call.id) {
            return Some(PairingProblem::BlankId { index });
        }
        if !seen.insert(call.id.as_str()) {
            return Some(PairingProblem::DuplicateCallId {
                index,
                call_id: call.id.clone(),
            });
        }
    }
    if message.tool_results().any(|r| blank(&r.call_id)) {
        return Some(PairingProblem::BlankId { index });
    }
    None
}

impl std::fmt::Display for PairingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PairingProblem::CallWithoutResult { index, call_id } => write!(
                f,
                "tool call `{call_id}` in message {index} has no result in the tool messages after it"
            ),
            PairingProblem::ResultWithoutCall { index, call_id } => write!(
                f,
                "tool result for `{call_id}` in message {index} answers no call of the assistant message before it"
            ),
            PairingProblem::BlankId { index } => {
                write!(
                    f,
                    "message {index} has a tool call or result with a blank id"
                )
            }
            PairingProblem::DuplicateCallId { index, call_id } => {
                write!(
                    f,
                    "tool call id `{call_id}` in message {index} was already used"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ContentPart;
    use serde_json::Value;

    #[test]
    fn blank_is_trim_is_empty() {
        for id in [
            "",
            " ",
            "\t\n",
            "\u{3000}\u{a0}",
            " a ",
            "a",
            "\u{200b}",
            "call_1 ",
        ] {
            assert_eq!(blank(id), id.trim().is_empty(), "{id:?}");
        }
    }

    fn calls(id: &str) -> Message {
        Message::assistant_tool_calls("a", vec![ContentPart::tool_call(id, "t", Value::Null)])
    }

    #[test]
    fn pairing_accepts_a_closed_exchange() {
        let messages = vec![
            Message::user("u", "go"),
            calls("c1"),
            Message::tool_result("r", "c1", "t", "ok", false),
            Message::assistant("b", "done"),
        ];
        assert_eq!(find_pairing_problem(&messages), None);
    }

    #[test]
    fn pairing_finds_both_directions() {
        let open = vec![
            Message::user("u", "go"),
            calls("c1"),
            Message::user("u2", "x"),
        ];
        assert_eq!(
            find_pairing_problem(&open),
            Some(PairingProblem::CallWithoutResult {
                index: 1,
                call_id: "c1".into()
            })
        );
        let trailing = vec![Message::user("u", "go"), calls("c1")];
        assert!(matches!(
            find_pairing_problem(&trailing),
            Some(PairingProblem::CallWithoutResult { .. })
        ));
        let orphan = vec![
            Message::user("u", "go"),
            Message::tool_result("r", "c9", "t", "ok", false),
        ];
        assert_eq!(
            find_pairing_problem(&orphan),
            Some(PairingProblem::ResultWithoutCall {
                index: 1,
                call_id: "c9".into()
            })
        );
    }
}

/// Synthetic text closing a call that has no recorded result (repair policy only).
pub const REPAIRED_RESULT_TEXT: &str =
    "[no result was recorded for this tool call; it may have been interrupted]";

/// The opt-in repair: drops tool results that answer no call and closes calls that have no
/// result with a stable synthetic error result. Returns the repaired messages and one transform
/// per change (`tool_pairs_repaired:dropped_result:<id>`, `tool_pairs_repaired:closed_call:<id>`).
pub fn repair(messages: &[Message]) -> (Vec<Message>, Vec<String>) {
    let mut repaired: Vec<Message> = Vec::with_capacity(messages.len());
    let mut transforms = Vec::new();
    let mut open: Vec<(String, String)> = Vec::new();
    for message in messages {
        if message.role == Role::Tool {
            let mut kept = message.clone();
            kept.parts.retain(|part| match part {
                crate::message::ContentPart::ToolResult(result) => {
                    match open.iter().position(|(id, _)| *id == result.call_id) {
                        Some(at) => {
                            open.remove(at);
                            true
                        }
                        None => {
                            transforms.push(format!(
                                "tool_pairs_repaired:dropped_result:{}",
                                result.call_id
                            ));
                            false
                        }
                    }
                }
                _ => true,
            });
            if !kept.parts.is_empty() {
                repaired.push(kept);
            }
            continue;
        }
        close_open_calls(&mut open, &mut repaired, &mut transforms);
        if message.role == Role::Assistant {
            open = message
                .tool_calls()
                .map(|c| (c.id.clone(), c.name.clone()))
                .collect();
        }
        repaired.push(message.clone());
    }
    close_open_calls(&mut open, &mut repaired, &mut transforms);
    (repaired, transforms)
}

fn close_open_calls(
    open: &mut Vec<(String, String)>,
    repaired: &mut Vec<Message>,
    transforms: &mut Vec<String>,
) {
    for (call_id, name) in open.drain(..) {
        transforms.push(format!("tool_pairs_repaired:closed_call:{call_id}"));
        repaired.push(Message::tool_result(
            format!("repair-{call_id}"),
            call_id,
            name,
            REPAIRED_RESULT_TEXT,
            true,
        ));
    }
}

#[cfg(test)]
mod repair_tests {
    use super::*;
    use crate::message::ContentPart;

    #[test]
    fn repair_closes_calls_and_drops_orphans() {
        let messages = vec![
            Message::user("u", "go"),
            Message::tool_result("orphan", "c9", "t", "stray", false),
            Message::assistant_tool_calls(
                "a",
                vec![
                    ContentPart::tool_call("c1", "t", serde_json::Value::Null),
                    ContentPart::tool_call("c2", "t", serde_json::Value::Null),
                ],
            ),
            Message::tool_result("r1", "c1", "t", "ok", false),
            Message::user("u2", "next"),
        ];
        let (repaired, transforms) = repair(&messages);
        assert_eq!(
            transforms,
            vec![
                "tool_pairs_repaired:dropped_result:c9",
                "tool_pairs_repaired:closed_call:c2"
            ]
        );
        assert_eq!(find_pairing_problem(&repaired), None);
        let (again, none) = repair(&repaired);
        assert_eq!(again, repaired, "repair is idempotent");
        assert!(none.is_empty());
    }
}
