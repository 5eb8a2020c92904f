//! [`History`]: a working conversation that remembers where it last changed, so a preparation
//! knows which of its messages it has read before without comparing them.
//!
//! A preparation remembers the conversations it read (`context::scanned`) and, at the
//! next step, reads only the messages after the longest prefix it has already seen. Given a
//! plain slice it must find that prefix by comparing one handle per message: cheap, but linear in
//! the history. A `History` is a `Vec<Message>` whose every change other than an append goes
//! through a method that records the lowest position it may change. A preparation handed a
//! `History` (through [`HistoryRef`]) asks it "what is the lowest position changed since
//! revision r?" and trusts everything below without reading it, so a step over a history that
//! only grew costs the same at 100 messages as at 100,000.
//!
//! **Invariant:** for one `History` value (one *lineage*), the messages below
//! [`changed_since(r)`](History::changed_since) are the same handles as at revision `r`. Every
//! `&mut` access to a stored message records its position first; lineages are never shared by
//! two values (a clone starts a new one) and never reused.
//!
//! ```
//! use ctxbed_harness::context::history::History;
//! use ctxbed_harness::message::Message;
//! let mut history = History::from(vec![Message::user("u1", "Fix the export.")]);
//! let seen = history.revision();
//! history.push(Message::assistant("a1", "Looking."));
//! assert_eq!(history.changed_since(seen), Some(usize::MAX)); // only grew
//! if let Some(message) = history.get_mut(0) {
//!     message.id = "u0".into();
//! }
//! assert_eq!(history.changed_since(seen), Some(0));
//! assert_eq!(history.len(), 2);
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::limits::HISTORY_EDITS_KEPT;
use crate::message::Message;

/// The next lineage to hand out; 0 is never used.
static NEXT_LINEAGE: AtomicU64 = AtomicU64::new(1);

fn new_lineage() -> u64 {
    NEXT_LINEAGE.fetch_add(1, Ordering::Relaxed)
}

/// A conversation, oldest first, that records where it changes. Reads go through `Deref` to
/// `[Message]`; appends are free; every other change records the lowest position it touches.
/// See the [module documentation](self).
#[derive(Debug)]
pub struct History {
    messages: Vec<Message>,
    lineage: u64,
    /// Changes other than appends made so far.
    revision: u64,
    /// The lowest position of each of the last changes, oldest first; the last entry belongs to
    /// `revision`.
    edits: VecDeque<usize>,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Vec::new().into()
    }

    /// Which value this is: unique among every `History` of the process, never reused.
    pub fn lineage(&self) -> u64 {
        self.lineage
    }

    /// How many changes other than appends this history has had.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The lowest position that may have changed since `revision` (`usize::MAX` when the history
    /// only grew), or `None` when that is no longer known (too many changes ago, or a revision
    /// this history never had).
    pub fn changed_since(&self, revision: u64) -> Option<usize> {
        let behind = self.revision.checked_sub(revision)?;
        let behind = usize::try_from(behind).ok()?;
        if behind > self.edits.len() {
            return None;
        }
        Some(
            self.edits
                .iter()
                .rev()
                .take(behind)
                .copied()
                .min()
                .unwrap_or(usize::MAX),
        )
    }

    /// Appends one message.
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Removes and returns the last message.
    pub fn pop(&mut self) -> Option<Message> {
        let message = self.messages.pop()?;
        self.record(self.messages.len());
        Some(message)
    }

    /// Keeps the first `len` messages.
    pub fn truncate(&mut self, len: usize) {
        if len < self.messages.len() {
            self.messages.truncate(len);
            self.record(len);
        }
    }

    /// Inserts a message at `index`, shifting the ones after it.
    ///
    /// # Panics
    /// When `index` is past the end, as `Vec::insert` does.
    pub fn insert(&mut self, index: usize, message: Message) {
        self.messages.insert(index, message);
        self.record(index);
    }

    /// Removes and returns the message at `index`, or `None` past the end.
    pub fn remove(&mut self, index: usize) -> Option<Message> {
        if index >= self.messages.len() {
            return None;
        }
        self.record(index);
        Some(self.messages.remove(index))
    }

    /// The message at `index`, to change; its position is recorded as changed.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut Message> {
        if index >= self.messages.len() {
            return None;
        }
        self.record(index);
        self.messages.get_mut(index)
    }

    /// Every message, to change; the whole history is recorded as changed. Prefer
    /// [`get_mut`](Self::get_mut) for changes to a few messages.
    pub fn as_mut_slice(&mut self) -> &mut [Message] {
        self.record(0);
        &mut self.messages
    }

    /// Replaces every message.
    pub fn replace(&mut self, messages: Vec<Message>) {
        self.messages = messages;
        self.record(0);
    }

    /// The messages, as a plain vector.
    pub fn into_vec(self) -> Vec<Message> {
        self.messages
    }

    fn record(&mut self, lowest: usize) {
        self.revision += 1;
        if self.edits.len() == HISTORY_EDITS_KEPT {
            self.edits.pop_front();
        }
        self.edits.push_back(lowest);
    }
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

/// A clone is a new lineage: the two change apart from here on.
impl Clone for History {
    fn clone(&self) -> Self {
        self.messages.clone().into()
    }
}

impl PartialEq for History {
    fn eq(&self, other: &Self) -> bool {
        self.messages == other.messages
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        History {
            messages,
            lineage: new_lineage(),
            revision: 0,
            edits: VecDeque::new(),
        }
    }
}

impl std::ops::Deref for History {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

impl Extend<Message> for History {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, iter: I) {
        self.messages.extend(iter);
    }
}

/// The history a preparation reads: a plain slice, or a [`History`] that says what changed.
///
/// ```
/// use ctxbed_harness::context::history::{History, HistoryRef};
/// use ctxbed_harness::message::Message;
/// let plain = vec![Message::user("u1", "Hi")];
/// let tracked = History::from(plain.clone());
/// let (a, b) = (HistoryRef::from(&plain), HistoryRef::from(&tracked));
/// assert_eq!(a.len(), b.len());
/// assert!(a.tracked().is_none() && b.tracked().is_some());
/// ```
#[derive(Debug, Clone, Copy)]
pub struct HistoryRef<'a> {
    messages: &'a [Message],
    tracked: Option<&'a History>,
}

impl<'a> HistoryRef<'a> {
    /// The messages.
    pub fn messages(&self) -> &'a [Message] {
        self.messages
    }

    /// The history itself, when it records its changes.
    pub fn tracked(&self) -> Option<&'a History> {
        self.tracked
    }
}

impl std::ops::Deref for HistoryRef<'_> {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        self.messages
    }
}

impl<'a> From<&'a [Message]> for HistoryRef<'a> {
    fn from(messages: &'a [Message]) -> Self {
        HistoryRef {
            messages,
            tracked: None,
        }
    }
}

impl<'a> From<&'a Vec<Message>> for HistoryRef<'a> {
    fn from(messages: &'a Vec<Message>) -> Self {
        messages.as_slice().into()
    }
}

impl<'a, const N: usize> From<&'a [Message; N]> for HistoryRef<'a> {
    fn from(messages: &'a [Message; N]) -> Self {
        messages.as_slice().into()
    }
}

impl<'a> From<&'a History> for HistoryRef<'a> {
    fn from(history: &'a History) -> Self {
        HistoryRef {
            messages: &history.messages,
            tracked: Some(history),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(count: usize) -> Vec<Message> {
        (0..count)
            .map(|i| Message::user(format!("m{i}"), "text"))
            .collect()
    }

    /// Every change method records the lowest position it can change, appends record nothing,
    /// and a revision too far back (or never had) is unknown.
    #[test]
    fn changes_are_recorded_at_their_lowest_position() {
        let mut history = History::from(messages(10));
        let start = history.revision();
        history.push(Message::user("m10", "more"));
        history.extend(messages(2));
        assert_eq!(history.changed_since(start), Some(usize::MAX));
        history.get_mut(7).expect("in range").id = "seven".into();
        assert_eq!(history.changed_since(start), Some(7));
        let after_seven = history.revision();
        assert!(history.get_mut(99).is_none());
        assert_eq!(history.changed_since(after_seven), Some(usize::MAX));
        history.truncate(12);
        assert_eq!(history.changed_since(after_seven), Some(12));
        history.truncate(50); // longer than the history: no change
        assert_eq!(history.changed_since(after_seven), Some(12));
        let before_insert = history.revision();
        history.insert(9, Message::user("new", "text"));
        assert_eq!(history.changed_since(before_insert), Some(9));
        assert!(history.remove(99).is_none());
        assert_eq!(
            history.remove(10).map(|m| m.id.clone()).as_deref(),
            Some("m9")
        );
        assert_eq!(history.changed_since(before_insert), Some(9));
        history.remove(9);
        let before_pop = history.revision();
        history.pop();
        assert_eq!(history.changed_since(before_pop), Some(10));
        assert_eq!(history.changed_since(after_seven), Some(9));
        assert_eq!(history.changed_since(start), Some(7));
        history.as_mut_slice()[3].id = "three".into();
        assert_eq!(history.changed_since(after_seven), Some(0));
        let before_replace = history.revision();
        history.replace(messages(2));
        assert_eq!(history.changed_since(before_replace), Some(0));
        assert_eq!(history.changed_since(history.revision() + 1), None);
        for _ in 0..HISTORY_EDITS_KEPT {
            history.get_mut(1);
        }
        assert_eq!(history.changed_since(before_replace), None, "too far back");
        assert_eq!(
            history.changed_since(history.revision() - HISTORY_EDITS_KEPT as u64),
            Some(1)
        );
    }

    #[test]
    fn every_value_is_its_own_lineage() {
        let history = History::from(messages(3));
        let copy = history.clone();
        assert_ne!(history.lineage(), copy.lineage());
        assert_eq!(
            history, copy,
            "equal by their messages, whatever their lineage"
        );
        assert_ne!(history, History::from(messages(2)));
        assert_ne!(History::new().lineage(), History::default().lineage());
    }
}
