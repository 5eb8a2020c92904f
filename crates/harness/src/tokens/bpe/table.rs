//! Reads a rank table (layout in `table_format`) in place: a token's rank from its bytes.

use super::table_format::{TABLE_HEADER_WORDS, TABLE_MAGIC, token_hash};

/// A vocabulary's ranks, borrowed from the table's bytes.
pub(crate) struct RankTable {
    starts: &'static [u8],
    slots: &'static [u8],
    bytes: &'static [u8],
    mask: usize,
}

fn word(bytes: &[u8], index: usize) -> u32 {
    let at = index * 4;
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

impl RankTable {
    /// The table in `bytes`, which the build script wrote.
    ///
    /// # Panics
    /// When `bytes` is not a table of this layout: the table is part of the binary, so that is
    /// a build defect, never user input.
    pub(crate) fn parse(bytes: &'static [u8]) -> Self {
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
        let bytes_at = slots_at + slot_count * 4;
        assert!(bytes.len() >= bytes_at, "a rank table holds its slots");
        let table = RankTable {
            starts: &bytes[starts_at..slots_at],
            slots: &bytes[slots_at..bytes_at],
            bytes: &bytes[bytes_at..],
            mask: slot_count - 1,
        };
        assert_eq!(
            word(table.starts, tokens) as usize,
            table.bytes.len(),
            "a rank table's byte area is as long as its offsets say"
        );
        table
    }

    /// The bytes of the token of rank `rank`.
    fn token(&self, rank: u32) -> &'static [u8] {
        let rank = rank as usize;
        let start = word(self.starts, rank) as usize;
        let end = word(self.starts, rank + 1) as usize;
        &self.bytes[start..end]
    }

    /// The rank of the token whose bytes are `bytes`, or `None` when no token has them.
    pub(crate) fn rank(&self, bytes: &[u8]) -> Option<u32> {
        // Truncation is the point: the low bits pick the slot.
        let mut slot = token_hash(bytes) as usize & self.mask;
        loop {
            let entry = word(self.slots, slot);
            if entry == 0 {
                return None;
            }
            if self.token(entry - 1) == bytes {
                return Some(entry - 1);
            }
            slot = (slot + 1) & self.mask;
        }
    }
}
