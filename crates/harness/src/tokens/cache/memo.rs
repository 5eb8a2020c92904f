//! The per-message memo in front of the content-keyed cache: answers for a message seen
//! before without reading it at all.
//!
//! Messages share their content between copies ([`Message`] is copy on write), and the memo
//! keys each entry by the address of that shared content. It holds a [`Watch`] on the content,
//! not a copy of the message: the allocation, and so its address, stays taken while the entry
//! exists, but the content itself goes with the message's last copy, and any change to a copy
//! made elsewhere moves to new content first. So an address names one content for as long as
//! its entry lives, and a lookup is one hash-map probe on an integer; a message whose content
//! is not shared with a remembered one (new, changed in place, or decoded again from the log)
//! misses here and goes to the content-keyed cache, which reads it. A step over a long history
//! thus touches each old message once, without reading its text.
//!
//! The memo holds at most its capacity of entries. When an insert goes over it, the oldest
//! eighth (by last use) is dropped in one pass, so eviction costs O(1) per insert on average
//! and a hit touches nothing but its own entry. An entry whose message has no copy left can
//! never be asked for again (no message holds its address); such entries are dropped whenever
//! the memo has doubled since the last time they were (and from [`PURGE_ENTRIES_MIN`]), so the
//! memo follows the messages alive, not every message ever counted: a process that runs one
//! scenario after another keeps about the entries of the last. Addresses order nothing
//! observable: they are only probed, and eviction goes by last use.

use std::collections::HashMap;

use crate::message::{Message, Watch};

/// Entries below which a memo never looks for dead ones.
pub(super) const PURGE_ENTRIES_MIN: usize = 4_096;

/// One remembered message.
#[derive(Debug)]
struct Entry {
    /// Keeps the content's address taken (and so unique) while the entry exists.
    message: Watch,
    tokens: u64,
    content_hash: Option<String>,
    last_use: u64,
}

/// Messages by the address of their shared content, with their counts and hashes.
#[derive(Debug)]
pub(super) struct Memo {
    capacity: usize,
    entries: HashMap<usize, Entry, foldhash::fast::FixedState>,
    clock: u64,
    /// Entries past which the next insert drops the dead ones.
    purge_at: usize,
}

impl Memo {
    pub(super) fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a memo holds at least one entry");
        Memo {
            capacity,
            entries: HashMap::default(),
            clock: 0,
            purge_at: PURGE_ENTRIES_MIN,
        }
    }

    /// The remembered count of this exact message.
    pub(super) fn tokens(&mut self, message: &Message) -> Option<u64> {
        self.entry(message).map(|entry| entry.tokens)
    }

    /// The remembered count of this exact message and its manifest hash, when that was asked
    /// for before.
    pub(super) fn lookup(&mut self, message: &Message) -> Option<(u64, Option<String>)> {
        self.entry(message)
            .map(|entry| (entry.tokens, entry.content_hash.clone()))
    }

    /// Remembers a message's count and, when known, its manifest hash.
    pub(super) fn insert(&mut self, message: &Message, tokens: u64, content_hash: Option<String>) {
        self.clock += 1;
        let clock = self.clock;
        let entry = self
            .entries
            .entry(message.content_address())
            .or_insert_with(|| Entry {
                message: message.watch(),
                tokens,
                content_hash: None,
                last_use: clock,
            });
        assert!(entry.message.watches(message));
        assert_eq!(entry.tokens, tokens, "a message's count never changes");
        entry.last_use = clock;
        if content_hash.is_some() {
            entry.content_hash = content_hash;
        }
        if self.entries.len() > self.purge_at {
            self.entries.retain(|_, entry| entry.message.alive());
            self.purge_at = (2 * self.entries.len()).max(PURGE_ENTRIES_MIN);
        }
        if self.entries.len() > self.capacity {
            self.evict_oldest();
        }
        assert!(self.entries.len() <= self.capacity);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn entry(&mut self, message: &Message) -> Option<&Entry> {
        self.clock += 1;
        let entry = self.entries.get_mut(&message.content_address())?;
        // The entry keeps the address taken, so it names this content only.
        debug_assert!(entry.message.watches(message));
        entry.last_use = self.clock;
        Some(entry)
    }

    /// Drops the least recently used eighth of the entries (at least one).
    fn evict_oldest(&mut self) {
        let mut last_uses: Vec<u64> = self.entries.values().map(|e| e.last_use).collect();
        let drop_count = (last_uses.len() / 8).max(1);
        let (_, threshold, _) = last_uses.select_nth_unstable(drop_count - 1);
        let threshold = *threshold;
        // Last uses are distinct (one clock tick per operation), so exactly `drop_count` go.
        self.entries.retain(|_, entry| entry.last_use > threshold);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_message_under_the_same_id_misses() {
        let mut memo = Memo::new(4);
        let message = Message::user("m1", "before");
        memo.insert(&message, 3, None);
        assert_eq!(memo.tokens(&message), Some(3));
        let mut changed = message.clone();
        changed.parts = Message::user("m1", "after").parts.clone();
        assert_eq!(memo.tokens(&changed), None);
        let mut tagged = message.clone();
        tagged
            .metadata
            .insert("k".to_string(), serde_json::json!(1));
        assert_eq!(memo.tokens(&tagged), None);
        memo.insert(&changed, 5, Some("h".to_string()));
        assert_eq!(memo.tokens(&changed), Some(5));
        assert_eq!(memo.lookup(&changed), Some((5, Some("h".to_string()))));
        // The unchanged original is still what it was.
        assert_eq!(memo.tokens(&message), Some(3));
        assert_eq!(memo.len(), 2);
        // An equal message that shares no content (decoded again, say) misses.
        let decoded: Message =
            serde_json::from_value(serde_json::to_value(&message).unwrap()).unwrap();
        assert_eq!(decoded, message);
        assert_eq!(memo.tokens(&decoded), None);
    }

    /// The memo keeps no message alive, and forgets the messages that are gone once it has
    /// grown past its purge point; a message still alive is still answered.
    #[test]
    fn dead_messages_are_forgotten() {
        let mut memo = Memo::new(1 << 20);
        let kept = Message::user("kept", "still here");
        memo.insert(&kept, 7, None);
        let text = "x".repeat(1_000);
        for index in 0..3 * PURGE_ENTRIES_MIN {
            let message = Message::user(format!("m{index}"), text.clone());
            let watch = message.watch();
            memo.insert(&message, 1, None);
            drop(message);
            // The content went with the last copy, though the entry may still be there.
            assert!(!watch.alive());
        }
        assert!(memo.len() <= PURGE_ENTRIES_MIN + 1, "{}", memo.len());
        assert_eq!(memo.tokens(&kept), Some(7));
        // A copy changed in place after the memo saw it moves to new content and misses.
        let mut changed = kept.clone();
        drop(kept);
        changed.parts = Message::user("kept", "changed").parts.clone();
        assert_eq!(memo.tokens(&changed), None);
    }

    #[test]
    fn the_oldest_entries_go_first() {
        let mut memo = Memo::new(3);
        let messages: Vec<Message> = (0..4)
            .map(|index| Message::user(format!("m{index}"), "text"))
            .collect();
        memo.insert(&messages[0], 1, None);
        memo.insert(&messages[1], 1, None);
        memo.insert(&messages[2], 1, None);
        assert_eq!(memo.tokens(&messages[0]), Some(1)); // m1 is now the oldest
        memo.insert(&messages[3], 1, None);
        assert_eq!(memo.len(), 3);
        assert_eq!(memo.tokens(&messages[1]), None);
        assert_eq!(memo.tokens(&messages[0]), Some(1));
        assert_eq!(memo.tokens(&messages[3]), Some(1));
    }
}
