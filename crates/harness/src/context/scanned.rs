//! Conversations read by earlier preparations, remembered per thread, so a step over a grown
//! conversation reads only its new messages.
//!
//! A preparation reads every message of its history: whether it belongs to the conversation, is
//! a System message to merge or is the rendering of an earlier preparation to drop; its tokens;
//! its manifest item; and its tool pairing. All of it is a function of the message's content,
//! and a message's content never changes behind its handle (a change through `&mut` copies
//! first), so a [`Scan`] keeps a copy of every handle it has read and knows an unchanged message
//! by its address, without reading it.
//!
//! A history that starts with the messages of a remembered scan reuses them: their classes,
//! tokens and items are kept, and when the history extends the whole remembered one, the pairing
//! scan goes on from its remembered state. A history that differs inside the remembered part
//! (pruning, compaction) keeps what comes before the first difference and reads the rest; its
//! pairing is read again from the start.
//!
//! Finding that prefix compares one handle per message. A history handed over as a
//! [`History`](super::history::History) says instead where it changed since the scan last read
//! it, so only the messages from there on are compared. A scan keeps its conversation and their
//! manifest items as [`SharedVec`]s, which every request and manifest laid out from it share.
//!
//! Only estimators that remember counts
//! ([`caches_counts`](crate::tokens::TokenEstimator::caches_counts)) use the memo, and scans are
//! told apart by the estimator's method name: two estimators with one method name count alike.
//! One thread holds at most [`CONVERSATION_MEMO_ENTRIES_MAX`] scans (the least recently used is
//! replaced first), and none over [`CONVERSATION_MEMO_MESSAGES_MAX`] messages.
//!
//! **Invariant:** a scan read through the memo equals a scan of the same history read afresh
//! (`tests::a_remembered_scan_equals_a_fresh_one` here, and the property test
//! `a_remembered_conversation_prepares_what_a_fresh_read_does` in `tests/properties.rs`, which
//! compares whole preparations through random edits).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use super::history::HistoryRef;
use super::manifest::ManifestItem;
use super::pairs::PairingScan;
use super::render;
use crate::limits::{CONVERSATION_MEMO_ENTRIES_MAX, CONVERSATION_MEMO_MESSAGES_MAX};
use crate::message::{Message, Role};
use crate::shared_vec::SharedVec;
use crate::tokens::TokenEstimator;

/// What a history message is to the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Sent as it is, in order.
    Conversation,
    /// A System message of the history, merged into the single System message.
    System,
    /// The rendering of an earlier preparation, dropped and rendered afresh.
    Rendered,
}

/// One history as read: per message its class, per conversation message its manifest item
/// (which holds its tokens), and the tool pairing of the conversation.
#[derive(Debug, Clone)]
pub(super) struct Scan {
    method: &'static str,
    /// Copies of the history's handles, which keep their content alive and unchanged; only a
    /// remembered scan keeps them.
    handles: Vec<Message>,
    /// Per history message read.
    classes: Vec<Class>,
    /// Positions of System messages in the history.
    system_at: Vec<usize>,
    /// The conversation messages, in order: shared with every request laid out around them.
    conversation: SharedVec<Message>,
    /// Per conversation message, in order: shared with every manifest that lists them.
    items: SharedVec<Arc<ManifestItem>>,
    /// Tokens of the conversation messages (the sum of their items' tokens).
    tokens: u64,
    /// Pairing of the conversation on its own (indices from 0). Only a scan kept for later
    /// preparations has one; a one-off scan leaves pairing to a check of the request.
    pairing: Option<PairingScan<Box<str>>>,
    /// The lineage and revision of the [`History`] this scan last read in full, when it read
    /// one: the handles below the position the history reports changed since then are known
    /// equal without comparing them.
    seen: Option<(u64, u64)>,
}

impl Scan {
    fn new(method: &'static str, remembered: bool) -> Self {
        Scan {
            method,
            handles: Vec::new(),
            classes: Vec::new(),
            system_at: Vec::new(),
            conversation: SharedVec::new(),
            items: SharedVec::new(),
            tokens: 0,
            pairing: remembered.then(PairingScan::default),
            seen: None,
        }
    }

    /// Whether the scan is kept for later preparations (it then copies the handles and scans
    /// the pairing).
    fn remembered(&self) -> bool {
        self.pairing.is_some()
    }

    /// History messages read.
    fn read(&self) -> usize {
        self.classes.len()
    }

    /// How many of the first messages of `history` this scan has read. When `history` is the
    /// [`History`] this scan last read, the messages below its first change since then are
    /// taken as read without comparing them; the rest are compared handle by handle.
    fn shared_prefix(&self, history: HistoryRef<'_>) -> usize {
        let unchanged = match (history.tracked(), self.seen) {
            (Some(tracked), Some((lineage, revision))) if tracked.lineage() == lineage => {
                tracked.changed_since(revision).unwrap_or(0)
            }
            _ => 0,
        };
        let unchanged = unchanged.min(self.read()).min(history.len());
        unchanged
            + self.handles[unchanged..]
                .iter()
                .zip(&history[unchanged..])
                .take_while(|(known, message)| known.shares_content(message))
                .count()
    }

    /// Forgets every message from position `keep` on. The forgotten items' tokens are taken off
    /// the total; the pairing of what is kept is read again from the kept handles (so a change
    /// inside the remembered part costs a pass over the call and result ids before it).
    fn truncate(&mut self, keep: usize) {
        debug_assert!(self.remembered());
        self.handles.truncate(keep);
        self.classes.truncate(keep);
        self.system_at.retain(|&at| at < keep);
        let mut pairing = PairingScan::default();
        let mut conversation = 0;
        for (message, class) in self.handles.iter().zip(&self.classes) {
            if *class == Class::Conversation {
                pairing.feed(message);
                conversation += 1;
            }
        }
        let forgotten: u64 = self
            .items
            .iter_range(conversation..self.items.len())
            .map(|item| item.tokens)
            .sum();
        self.tokens -= forgotten;
        self.conversation.truncate(conversation);
        self.items.truncate(conversation);
        debug_assert_eq!(
            self.tokens,
            self.items.iter().map(|item| item.tokens).sum::<u64>()
        );
        self.pairing = Some(pairing);
    }

    /// Reads the messages of `history` after the ones this scan has.
    fn extend(&mut self, history: &[Message], estimator: &dyn TokenEstimator) {
        let start = self.read();
        debug_assert!(history.len() >= start);
        let remembered = self.remembered();
        for message in &history[start..] {
            let class = if render::is_rendered(message) {
                Class::Rendered
            } else if message.role == Role::System {
                Class::System
            } else {
                Class::Conversation
            };
            match class {
                Class::Conversation => {
                    let (tokens, content_hash) = estimator.message_tokens_and_hash(message);
                    self.conversation.push_back(message.clone());
                    self.items.push_back(Arc::new(ManifestItem::message(
                        message,
                        tokens,
                        content_hash,
                    )));
                    self.tokens += tokens;
                    if let Some(pairing) = &mut self.pairing {
                        pairing.feed(message);
                    }
                }
                Class::System => self.system_at.push(self.read()),
                Class::Rendered => {}
            }
            self.classes.push(class);
            if remembered {
                self.handles.push(message.clone());
            }
        }
    }

    /// Tokens of the conversation messages.
    pub(super) fn tokens(&self) -> u64 {
        self.tokens
    }

    /// The manifest item of each conversation message, in order.
    pub(super) fn items(&self) -> &SharedVec<Arc<ManifestItem>> {
        &self.items
    }

    /// The pairing scan of the conversation on its own (indices counted from its first
    /// message), when this scan is remembered; a one-off scan leaves pairing to the request.
    pub(super) fn pairing(&self) -> Option<&PairingScan<Box<str>>> {
        self.pairing.as_ref()
    }

    /// The conversation messages of the history this scan has read, in order.
    pub(super) fn conversation(&self) -> &SharedVec<Message> {
        &self.conversation
    }

    /// The System messages of `history` to merge, which this scan has read.
    pub(super) fn foreign_system<'a>(&self, history: &'a [Message]) -> Vec<&'a Message> {
        self.system_at.iter().map(|&at| &history[at]).collect()
    }
}

#[derive(Default)]
struct Memo {
    /// Most recently used first.
    scans: Vec<Rc<Scan>>,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

/// The scan of `history`: read afresh, or, when the estimator remembers counts, continued from
/// the remembered scan that shares the longest prefix with it.
pub(super) fn scan<'a>(
    history: impl Into<HistoryRef<'a>>,
    estimator: &dyn TokenEstimator,
) -> Rc<Scan> {
    let history = history.into();
    let method = estimator.method();
    if !estimator.caches_counts()
        || history.is_empty()
        || history.len() > CONVERSATION_MEMO_MESSAGES_MAX
    {
        let mut scan = Scan::new(method, false);
        scan.extend(history.messages(), estimator);
        return Rc::new(scan);
    }
    let remembered = MEMO.with_borrow_mut(|memo| take_closest(memo, history, method));
    let mut scan = match remembered {
        Some((mut scan, shared)) => {
            let inner = Rc::make_mut(&mut scan);
            if shared < inner.read() {
                inner.truncate(shared);
            }
            scan
        }
        None => Rc::new(Scan::new(method, true)),
    };
    let seen = history
        .tracked()
        .map(|tracked| (tracked.lineage(), tracked.revision()));
    if scan.read() < history.len() || scan.seen != seen {
        let inner = Rc::make_mut(&mut scan);
        inner.extend(history.messages(), estimator);
        inner.seen = seen;
    }
    debug_assert_eq!(scan.read(), history.len());
    MEMO.with_borrow_mut(|memo| {
        memo.scans.insert(0, Rc::clone(&scan));
        memo.scans.truncate(CONVERSATION_MEMO_ENTRIES_MAX);
    });
    scan
}

/// Removes and returns the remembered scan sharing the longest non-empty prefix with
/// `history`, with that prefix's length.
fn take_closest(
    memo: &mut Memo,
    history: HistoryRef<'_>,
    method: &'static str,
) -> Option<(Rc<Scan>, usize)> {
    let first = history.first()?;
    // The scan this history was last read into comes first: its prefix is known without a
    // comparison. A scan that could not share more than the best found is not compared at all,
    // so a remembered fork of the history (a clone, a compaction's input) costs nothing once
    // the right scan has answered.
    let lineage = history.tracked().map(|tracked| tracked.lineage());
    let mut order: Vec<usize> = (0..memo.scans.len()).collect();
    order.sort_by_key(|&position| {
        lineage.is_none() || memo.scans[position].seen.map(|(seen, _)| seen) != lineage
    });
    let mut best: Option<(usize, usize)> = None;
    for position in order {
        let scan = &memo.scans[position];
        if scan.method != method
            || !scan
                .handles
                .first()
                .is_some_and(|m| m.shares_content(first))
        {
            continue;
        }
        let bound = scan.read().min(history.len());
        if best.is_some_and(|(_, shared)| bound <= shared) {
            continue;
        }
        let shared = scan.shared_prefix(history);
        if best.is_none_or(|(_, known)| shared > known) {
            best = Some((position, shared));
        }
    }
    let (position, shared) = best?;
    Some((memo.scans.remove(position), shared))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::history::History;
    use crate::context::pairs::{PairingProblem, find_pairing_problem};
    use crate::message::ContentPart;
    use crate::tokens::{ApproximateEstimator, CachedEstimator};

    /// The parts of a scan that a preparation reads: tokens, items, pairing, conversation ids
    /// and System ids.
    type Outcome = (
        u64,
        Vec<Arc<ManifestItem>>,
        Option<PairingProblem>,
        Vec<String>,
        Vec<String>,
    );

    fn outcome(scan: &Scan, history: &[Message]) -> Outcome {
        (
            scan.tokens(),
            scan.items().to_vec(),
            pairing_problem(scan),
            scan.conversation()
                .iter()
                .map(|m| m.id.clone())
                .collect::<Vec<_>>(),
            scan.foreign_system(history)
                .into_iter()
                .map(|m| m.id.clone())
                .collect::<Vec<_>>(),
        )
    }

    /// The pairing problem as a preparation finds it: the remembered scan's, or a check of
    /// the conversation.
    fn pairing_problem(scan: &Scan) -> Option<PairingProblem> {
        match scan.pairing() {
            Some(pairing) => pairing.finish(),
            None => find_pairing_problem(scan.conversation()),
        }
    }

    fn fresh(history: &[Message]) -> Rc<Scan> {
        let fresh = scan(history, &ApproximateEstimator::default());
        assert!(
            fresh.pairing().is_none(),
            "a one-off scan leaves pairing alone"
        );
        fresh
    }

    fn exchange(round: usize) -> [Message; 2] {
        let call = format!("call_{round}");
        [
            Message::assistant_tool_calls(
                format!("a{round}"),
                vec![ContentPart::tool_call(
                    call.clone(),
                    "execute",
                    serde_json::json!({ "round": round }),
                )],
            ),
            Message::tool_result(format!("t{round}"), call, "execute", "ok", false),
        ]
    }

    #[test]
    fn a_scan_sets_the_historys_system_messages_apart_from_the_conversation() {
        let history = vec![
            Message::user("u1", "Fix it."),
            Message::system("s1", "Be brief."),
            Message::assistant("a1", "Done."),
            Message::system("s2", "Use metric units."),
        ];
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        for read in [fresh(&history), scan(&history, &estimator)] {
            let system: Vec<&str> = read
                .foreign_system(&history)
                .iter()
                .map(|m| m.id.as_str())
                .collect();
            assert_eq!(system, ["s1", "s2"]);
            let conversation: Vec<&str> =
                read.conversation().iter().map(|m| m.id.as_str()).collect();
            assert_eq!(conversation, ["u1", "a1"]);
        }
    }

    #[test]
    fn a_remembered_scan_equals_a_fresh_one() {
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        let mut history = vec![
            Message::user("u1", "Fix it."),
            Message::system("s1", "Be brief."),
        ];
        for round in 0..4 {
            history.extend(exchange(round));
            let remembered = scan(&history, &estimator);
            assert_eq!(
                outcome(&remembered, &history),
                outcome(&fresh(&history), &history)
            );
        }
        // A call left open, then answered: the remembered pairing goes on from its state.
        let [call, result] = exchange(9);
        history.push(call);
        let open = scan(&history, &estimator);
        assert!(pairing_problem(&open).is_some());
        drop(open);
        history.push(result);
        let closed = scan(&history, &estimator);
        assert_eq!(pairing_problem(&closed), None);
        assert_eq!(
            outcome(&closed, &history),
            outcome(&fresh(&history), &history)
        );
        // A change inside the remembered part: everything after it is read again.
        history[3] = Message::tool_result("t0", "call_0", "execute", "changed", false);
        history.remove(5);
        let changed = scan(&history, &estimator);
        assert_eq!(
            outcome(&changed, &history),
            outcome(&fresh(&history), &history)
        );
        assert!(pairing_problem(&changed).is_some());
    }

    #[test]
    fn scans_are_kept_apart_by_counting_method() {
        struct Twice;
        impl TokenEstimator for Twice {
            fn method(&self) -> &'static str {
                "twice"
            }
            fn exact(&self) -> bool {
                false
            }
            fn text_tokens(&self, text: &str) -> u64 {
                2 * text.len() as u64
            }
            fn caches_counts(&self) -> bool {
                true
            }
        }
        let history = vec![Message::user("u1", "Fix the export.")];
        let approx = scan(
            &history,
            &CachedEstimator::new(ApproximateEstimator::default()),
        )
        .tokens();
        let twice = scan(&history, &Twice).tokens();
        assert_eq!(approx, fresh(&history).tokens());
        assert_eq!(twice, Twice.message_tokens(&history[0]));
        assert_ne!(approx, twice);
    }

    #[test]
    fn a_history_over_the_bound_is_read_but_not_remembered() {
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        // Copies of one message share its content, so the long history is cheap to build.
        let long = vec![Message::user("u", "Hi"); CONVERSATION_MEMO_MESSAGES_MAX + 1];
        let read = scan(&long, &estimator);
        assert_eq!(read.items().len(), long.len());
        assert!(read.pairing().is_none(), "a one-off scan");
        MEMO.with_borrow(|memo| {
            assert!(
                memo.scans
                    .iter()
                    .all(|scan| scan.read() <= CONVERSATION_MEMO_MESSAGES_MAX)
            );
        });
    }

    #[test]
    fn the_memo_holds_a_bounded_number_of_scans() {
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        for index in 0..CONVERSATION_MEMO_ENTRIES_MAX + 3 {
            let history = vec![Message::user(format!("u{index}"), "Hi")];
            scan(&history, &estimator);
        }
        MEMO.with_borrow(|memo| assert_eq!(memo.scans.len(), CONVERSATION_MEMO_ENTRIES_MAX));
    }

    /// A later scan of a longer history goes on from the remembered one: the messages read
    /// before keep their manifest items (the same allocations), and only the new ones are read.
    #[test]
    fn a_longer_history_is_read_from_where_the_remembered_scan_stopped() {
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        let mut history = vec![Message::user("u1", "Fix it.")];
        history.extend(exchange(0));
        let before = scan(&history, &estimator).items().to_vec();
        history.extend(exchange(1));
        let after = scan(&history, &estimator).items().to_vec();
        assert_eq!(after.len(), 5);
        assert!(before.iter().zip(&after).all(|(a, b)| Arc::ptr_eq(a, b)));
    }

    /// A change at a System message of the remembered part: the System messages read again
    /// are listed once, as a fresh scan lists them.
    #[test]
    fn a_changed_system_message_is_listed_once() {
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        let mut history = vec![
            Message::user("u1", "Fix it."),
            Message::system("s1", "Be brief."),
            Message::user("u2", "Go on."),
        ];
        drop(scan(&history, &estimator));
        history[1] = Message::system("s2", "Be thorough.");
        let changed = scan(&history, &estimator);
        assert_eq!(
            outcome(&changed, &history),
            outcome(&fresh(&history), &history)
        );
    }

    /// The memo keeps at most one scan per counting method and first message: a history's scan
    /// is the remembered one it continued (taken out of the memo) or a new one. So
    /// `take_closest` never has two candidates to choose between; its order and its pruning
    /// only spare comparisons (tools/mutants/equivalent.toml).
    #[test]
    fn the_memo_keeps_one_scan_per_first_message() {
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        let first = Message::user("u1", "Fix it.");
        let mut long = vec![first.clone()];
        for round in 0..3 {
            long.extend(exchange(round));
        }
        let fork = vec![first.clone(), Message::user("u2", "Or the import.")];
        let other = vec![Message::user("v1", "Something else.")];
        // Held while the others are read: the memo's copy is then cloned, not taken over.
        let kept = scan(&long, &estimator);
        for history in [&fork, &other, &long, &fork, &long] {
            drop(scan(history.as_slice(), &estimator));
        }
        drop(kept);
        MEMO.with_borrow(|memo| {
            let sharing = memo
                .scans
                .iter()
                .filter(|scan| {
                    scan.handles
                        .first()
                        .is_some_and(|m| m.shares_content(&first))
                })
                .count();
            assert_eq!(sharing, 1);
        });
    }

    /// Two `History` values that start with one shared message and have the same revision: the
    /// second's record of its changes says nothing about the first's scan, so its messages are
    /// compared, not taken as read.
    #[test]
    fn another_history_at_the_same_revision_is_compared() {
        let estimator = CachedEstimator::new(ApproximateEstimator::default());
        let first = Message::user("u1", "Fix it.");
        let one = History::from(vec![
            first.clone(),
            Message::user("u2", "The export."),
            Message::user("u3", "Today."),
        ]);
        drop(scan(&one, &estimator));
        let other = History::from(vec![
            first,
            Message::user("u4", "The import, all of it, with its tests."),
            Message::user("u5", "Tomorrow, after the release."),
        ]);
        assert_ne!(one.lineage(), other.lineage());
        assert_eq!(one.revision(), other.revision());
        let read = scan(&other, &estimator);
        assert_eq!(outcome(&read, &other), outcome(&fresh(&other), &other));
    }
}
