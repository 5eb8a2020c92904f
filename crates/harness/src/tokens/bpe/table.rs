//! Reads a rank table (layout in `table_format`) in place: a token's rank from its bytes.

use super::table_format::{
    PAIR_WORDS, RANK_MASK, SLOT_BYTES, TABLE_HEADER_WORDS, TABLE_MAGIC, head, tag, token_hash,
};

/// A vocabulary's ranks, borrowed from the table's bytes.
pub(crate) struct RankTable {
    starts: &'static [u8],
    slots: &'static [u8],
    pairs: &'static [u8],
    bytes: &'static [u8],
    mask: usize,
    id: usize,
}

fn word(bytes: &[u8], index: usize) -> u32 {
    let at = index * 4;
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

impl RankTable {
    /// The table in `bytes`, which the build script wrote.
    ///
    /// # Panics
    /// When `bytes` is not a table of this layout: the table is part of the binary, so that is
    /// a build defect, never user input.
    /// `id` tells the tables of a process apart (0 or 1: each has its thread's [`Recent`]).
    pub(crate) fn parse(bytes: &'static [u8], id: usize) -> Self {
        assert!(
            bytes.len() >= TABLE_HEADER_WORDS * 4,
            "a rank table has its header"
        );
        assert_eq!(word(bytes, 0), TABLE_MAGIC, "a rank table of this layout");
        let tokens = word(bytes, 1) as usize;
        let slot_count = word(bytes, 2) as usize;
        assert!(slot_count.is_power_of_two() && slot_count >= 2 * tokens);
        let starts_at = TABLE_HEADER_WORDS * 4;
        let slots_at = starts_at + (tokens + 1) * 4;
        let pairs_at = slots_at + slot_count * SLOT_BYTES;
        let bytes_at = pairs_at + PAIR_WORDS * 4;
        assert!(bytes.len() >= bytes_at, "a rank table holds its slots");
        let table = RankTable {
            starts: &bytes[starts_at..slots_at],
            slots: &bytes[slots_at..pairs_at],
            pairs: &bytes[pairs_at..bytes_at],
            bytes: &bytes[bytes_at..],
            mask: slot_count - 1,
            id,
        };
        assert_eq!(
            word(table.starts, tokens) as usize,
            table.bytes.len(),
            "a rank table's byte area is as long as its offsets say"
        );
        table
    }

    /// Which of the process's tables this is: 0 or 1.
    pub(crate) fn id(&self) -> usize {
        self.id
    }

    /// Every token with its rank, in rank order.
    #[cfg(test)]
    pub(crate) fn tokens(&self) -> impl Iterator<Item = (u32, &'static [u8])> + '_ {
        let count = self.starts.len() / 4 - 1;
        (0..count).map(|rank| {
            // Ranks are below 2^RANK_BITS: the header says how many there are.
            let rank = rank as u32;
            (rank, self.token(rank))
        })
    }

    /// The bytes of the token of rank `rank`.
    fn token(&self, rank: u32) -> &'static [u8] {
        let rank = rank as usize;
        let start = word(self.starts, rank) as usize;
        let end = word(self.starts, rank + 1) as usize;
        &self.bytes[start..end]
    }

    /// The rank of the two-byte token `[first, second]`, or `None` when it is no token.
    pub(crate) fn pair_rank(&self, first: u8, second: u8) -> Option<u32> {
        let entry = word(self.pairs, usize::from(first) * 256 + usize::from(second));
        entry.checked_sub(1)
    }

    /// The rank of the token whose bytes are `bytes`, or `None` when no token has them.
    pub(crate) fn rank(&self, bytes: &[u8]) -> Option<u32> {
        if let [first, second] = *bytes {
            return self.pair_rank(first, second);
        }
        self.rank_hashed(bytes, token_hash(bytes))
    }

    /// [`RankTable::rank`] of bytes whose [`token_hash`] is `hash`.
    pub(crate) fn rank_hashed(&self, bytes: &[u8], hash: u64) -> Option<u32> {
        let wanted = tag(hash);
        let length = bytes.len();
        let wanted_head = head(bytes);
        // Truncation is the point: the low bits pick the slot.
        let mut slot = hash as usize & self.mask;
        loop {
            let at = slot * SLOT_BYTES;
            let mut read = [0u8; SLOT_BYTES];
            read.copy_from_slice(&self.slots[at..at + SLOT_BYTES]);
            let [e0, e1, e2, e3, l0, l1, l2, l3, slot_head @ ..] = read;
            let entry = u32::from_le_bytes([e0, e1, e2, e3]);
            if entry == 0 {
                return None;
            }
            if entry & !RANK_MASK == wanted
                && u32::from_le_bytes([l0, l1, l2, l3]) as usize == length
                && slot_head == wanted_head
            {
                let rank = (entry & RANK_MASK) - 1;
                if length <= 8 || self.token(rank)[8..] == bytes[8..] {
                    return Some(rank);
                }
            }
            slot = (slot + 1) & self.mask;
        }
    }
}

/// Entries of a [`Recent`] cache.
const RECENT_ENTRIES: usize = 4096;

/// One remembered answer: `length` 0 when the entry is empty, `rank` [`u32::MAX`] when the
/// bytes are no token; `head` and `tail` are the first eight bytes and the next eight,
/// zero-padded.
#[derive(Clone, Copy, Default)]
struct RecentEntry {
    head: u64,
    tail: u64,
    length: u32,
    rank: u32,
}

/// The longest string a [`Recent`] cache remembers.
const RECENT_BYTES_MAX: usize = 16;

/// A small direct-mapped cache (96 KiB) of recent answers of one table for strings of three to
/// sixteen bytes, kept per thread: text repeats the same few thousand characters and their
/// combinations (two to five Chinese characters are six to fifteen bytes), and a hit saves a
/// read of the table's slots (megabytes, mostly not in the core's caches). It remembers
/// answers of a pure function, so it changes what a count costs, never the count.
pub(crate) struct Recent {
    entries: Box<[RecentEntry]>,
}

impl Default for Recent {
    fn default() -> Self {
        Recent {
            entries: vec![RecentEntry::default(); RECENT_ENTRIES].into_boxed_slice(),
        }
    }
}

impl Recent {
    /// `table.rank(bytes)`, remembered.
    pub(crate) fn rank(&mut self, table: &RankTable, bytes: &[u8]) -> Option<u32> {
        let length = bytes.len();
        if length == 2 {
            return table.pair_rank(bytes[0], bytes[1]);
        }
        let hash = token_hash(bytes);
        if !(3..=RECENT_BYTES_MAX).contains(&length) {
            return table.rank_hashed(bytes, hash);
        }
        let head_word = u64::from_le_bytes(head(bytes));
        let tail_word = match bytes.get(8..) {
            Some(rest) => u64::from_le_bytes(head(rest)),
            None => 0,
        };
        // The hash's middle bits: the table's slot index uses the low ones, its tag the top.
        let index = (hash >> 24) as usize & (RECENT_ENTRIES - 1);
        let entry = self.entries[index];
        if entry.length as usize == length && entry.head == head_word && entry.tail == tail_word {
            return (entry.rank != u32::MAX).then_some(entry.rank);
        }
        let rank = table.rank_hashed(bytes, hash);
        self.entries[index] = RecentEntry {
            head: head_word,
            tail: tail_word,
            length: length as u32,
            rank: rank.unwrap_or(u32::MAX),
        };
        rank
    }
}
