//! Tool-call/result pairing: the rule strict providers enforce, checked before a request leaves.
//!
//! Every tool call of an assistant message must be answered by the tool messages immediately
//! after it, and every tool result must answer a call of the assistant message before it. The
//! harness validates this on every prepared request (`invalid_tool_pairs`); mock models apply the
//! same rule to answer with a provider's real rejection.
//!
//! ```
//! use ctxbed_harness::context::pairs::{PairingProblem, find_pairing_problem};
//! use ctxbed_harness::message::Message;
//! let orphan = vec![Message::user("u1", "go"), Message::tool_result("t1", "call_9", "execute", "ok", false)];
//! assert_eq!(find_pairing_problem(&orphan),
//!     Some(PairingProblem::ResultWithoutCall { index: 1, call_id: "call_9".into() }));
//! ```

use std::collections::{BTreeSet, HashSet};

use crate::context::transform::Transform;
use crate::message::{Message, Role};

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
/// Returns the first violation in message order.
pub fn find_pairing_problem<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
) -> Option<PairingProblem> {
    let messages = messages.into_iter();
    // Borrowed ids: the check allocates only for the problem it reports.
    let mut scan = PairingScan::<&str>::with_capacity(messages.size_hint().0 / 2);
    for message in messages {
        if scan.feed(message).is_some() {
            break;
        }
    }
    scan.finish()
}

/// How a [`PairingScan`] keeps the call ids it has read: borrowed from the messages (`&str`,
/// for one check over one slice) or owned (`Box<str>`, for a scan that outlives its messages,
/// such as the state a preparation remembers between steps).
pub trait CallIdStore<'a>: Ord + Eq + std::hash::Hash + std::borrow::Borrow<str> {
    fn keep(id: &'a str) -> Self;
}

impl<'a> CallIdStore<'a> for &'a str {
    fn keep(id: &'a str) -> Self {
        id
    }
}

impl CallIdStore<'_> for Box<str> {
    fn keep(id: &str) -> Self {
        id.into()
    }
}

/// [`find_pairing_problem`] one message at a time: feed the messages in order, then
/// [`finish`](PairingScan::finish). A scan can be cloned and fed further, so a conversation that
/// grows is read once (the state after its old messages is kept, the new ones are fed).
///
/// ```
/// use ctxbed_harness::context::pairs::{PairingScan, find_pairing_problem};
/// use ctxbed_harness::message::{ContentPart, Message};
/// let messages = vec![
///     Message::assistant_tool_calls("a1", vec![ContentPart::tool_call("c1", "execute", serde_json::json!({}))]),
///     Message::tool_result("t1", "c1", "execute", "ok", false),
/// ];
/// let mut scan = PairingScan::<Box<str>>::default();
/// scan.feed(&messages[0]);
/// let after_call = scan.clone();
/// scan.feed(&messages[1]);
/// assert_eq!(scan.finish(), None);
/// assert_eq!(after_call.finish(), find_pairing_problem(&messages[..1]));
/// ```
#[derive(Debug, Clone)]
pub struct PairingScan<I> {
    /// Call ids seen so far: membership only, so the set's order is never observed.
    seen: HashSet<I, foldhash::fast::FixedState>,
    /// The calls of the last assistant message still waiting for a result; the smallest id is
    /// reported first.
    open: BTreeSet<I>,
    open_index: usize,
    /// Index of the next message fed.
    next: usize,
    /// The first violation; once found, further messages are not read.
    problem: Option<PairingProblem>,
}

impl<I> Default for PairingScan<I> {
    fn default() -> Self {
        PairingScan {
            seen: HashSet::default(),
            open: BTreeSet::new(),
            open_index: 0,
            next: 0,
            problem: None,
        }
    }
}

impl<'a, I: CallIdStore<'a>> PairingScan<I> {
    /// A scan sized for about `calls` call ids, so its set does not grow step by step.
    pub fn with_capacity(calls: usize) -> Self {
        PairingScan {
            seen: HashSet::with_capacity_and_hasher(calls, Default::default()),
            ..PairingScan::default()
        }
    }

    /// Reads the next message; returns the first violation once there is one.
    pub fn feed(&mut self, message: &'a Message) -> Option<&PairingProblem> {
        if self.problem.is_none() {
            let index = self.next;
            self.next += 1;
            self.problem = self.read(index, message);
        }
        self.problem.as_ref()
    }

    fn read(&mut self, index: usize, message: &'a Message) -> Option<PairingProblem> {
        if let Some(problem) = id_problem(index, message, &mut self.seen) {
            return Some(problem);
        }
        if message.role == Role::Tool {
            for result in message.tool_results() {
                if !self.open.remove(result.call_id.as_str()) {
                    return Some(PairingProblem::ResultWithoutCall {
                        index,
                        call_id: result.call_id.clone(),
                    });
                }
            }
            return None;
        }
        if let Some(call_id) = self.open.iter().next() {
            return Some(PairingProblem::CallWithoutResult {
                index: self.open_index,
                call_id: call_id.borrow().to_string(),
            });
        }
        if message.role == Role::Assistant {
            self.open = message
                .tool_calls()
                .map(|call| I::keep(call.id.as_str()))
                .collect();
            self.open_index = index;
        }
        None
    }

    /// The first violation among the messages fed, counting calls still open at the end.
    pub fn finish(&self) -> Option<PairingProblem> {
        if let Some(problem) = &self.problem {
            return Some(problem.clone());
        }
        self.open
            .iter()
            .next()
            .map(|call_id| PairingProblem::CallWithoutResult {
                index: self.open_index,
                call_id: call_id.borrow().to_string(),
            })
    }

    /// How many messages were read (all fed, or up to the first violation).
    pub fn read_count(&self) -> usize {
        self.next
    }
}

fn id_problem<'a, I: CallIdStore<'a>>(
    index: usize,
    message: &'a Message,
    seen: &mut HashSet<I, foldhash::fast::FixedState>,
) -> Option<PairingProblem> {
    for call in message.tool_calls() {
        if blank(&call.id) {
            return Some(PairingProblem::BlankId { index });
        }
        if !seen.insert(I::keep(call.id.as_str())) {
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

impl PairingProblem {
    /// The same problem with its message index moved by `offset` (a scan of a conversation
    /// that starts at `offset` in the request).
    pub fn shifted(self, offset: usize) -> Self {
        match self {
            PairingProblem::CallWithoutResult { index, call_id } => {
                PairingProblem::CallWithoutResult {
                    index: index + offset,
                    call_id,
                }
            }
            PairingProblem::ResultWithoutCall { index, call_id } => {
                PairingProblem::ResultWithoutCall {
                    index: index + offset,
                    call_id,
                }
            }
            PairingProblem::BlankId { index } => PairingProblem::BlankId {
                index: index + offset,
            },
            PairingProblem::DuplicateCallId { index, call_id } => PairingProblem::DuplicateCallId {
                index: index + offset,
                call_id,
            },
        }
    }
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
    fn a_shifted_problem_names_the_message_at_its_new_place_and_says_so() {
        let id = || "c1".to_string();
        let cases = [
            (
                PairingProblem::CallWithoutResult {
                    index: 2,
                    call_id: id(),
                },
                "tool call `c1` in message 12 has no result in the tool messages after it",
            ),
            (
                PairingProblem::ResultWithoutCall {
                    index: 2,
                    call_id: id(),
                },
                "tool result for `c1` in message 12 answers no call of the assistant message before it",
            ),
            (
                PairingProblem::BlankId { index: 2 },
                "message 12 has a tool call or result with a blank id",
            ),
            (
                PairingProblem::DuplicateCallId {
                    index: 2,
                    call_id: id(),
                },
                "tool call id `c1` in message 12 was already used",
            ),
        ];
        for (problem, shown) in cases {
            assert_eq!(problem.shifted(10).to_string(), shown);
        }
    }

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

    #[test]
    fn pairing_finds_blank_and_reused_ids_where_they_are() {
        let result = |call_id: &str| Message::tool_result("r", call_id, "t", "ok", false);
        let cases = [
            (
                vec![Message::user("u", "go"), calls(" ")],
                PairingProblem::BlankId { index: 1 },
            ),
            (
                vec![Message::user("u", "go"), calls("c1"), result("")],
                PairingProblem::BlankId { index: 2 },
            ),
            (
                vec![calls("c1"), result("c1"), calls("c1"), result("c1")],
                PairingProblem::DuplicateCallId {
                    index: 2,
                    call_id: "c1".into(),
                },
            ),
        ];
        for (messages, problem) in cases {
            assert_eq!(find_pairing_problem(&messages), Some(problem));
        }
    }

    #[test]
    fn a_scan_stops_reading_at_its_first_problem() {
        let messages = [
            Message::user("u", "go"),
            Message::tool_result("r", "c9", "t", "ok", false),
            calls(""),
            Message::user("u2", "again"),
        ];
        let mut scan = PairingScan::<&str>::default();
        assert_eq!(scan.read_count(), 0);
        scan.feed(&messages[0]);
        assert_eq!(scan.read_count(), 1);
        for message in &messages[1..] {
            scan.feed(message);
        }
        // Read up to the orphaned result; the blank id after it is never reached.
        assert_eq!(scan.read_count(), 2);
        assert!(matches!(
            scan.finish(),
            Some(PairingProblem::ResultWithoutCall { index: 1, .. })
        ));
    }
}

/// Synthetic text closing a call that has no recorded result (repair policy only).
pub const REPAIRED_RESULT_TEXT: &str =
    "[no result was recorded for this tool call; it may have been interrupted]";

/// The opt-in repair: drops tool results that answer no call and closes calls that have no
/// result with a stable synthetic error result. Returns the repaired messages and one transform
/// per change ([`Transform::ToolPairsDroppedResult`], [`Transform::ToolPairsClosedCall`]).
pub fn repair(messages: &[Message]) -> (Vec<Message>, Vec<Transform>) {
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
                            transforms.push(Transform::ToolPairsDroppedResult {
                                call_id: result.call_id.clone(),
                            });
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
    transforms: &mut Vec<Transform>,
) {
    for (call_id, name) in open.drain(..) {
        transforms.push(Transform::ToolPairsClosedCall {
            call_id: call_id.clone(),
        });
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
                Transform::ToolPairsDroppedResult {
                    call_id: "c9".to_string()
                },
                Transform::ToolPairsClosedCall {
                    call_id: "c2".to_string()
                },
            ]
        );
        assert_eq!(find_pairing_problem(&repaired), None);
        let (again, none) = repair(&repaired);
        assert_eq!(again, repaired, "repair is idempotent");
        assert!(none.is_empty());
    }
}
