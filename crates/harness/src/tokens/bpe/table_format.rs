//! The layout of a vocabulary's rank table, shared by the build script that writes it and the
//! reader that looks ranks up in it (both include this file, so the two cannot disagree).
//!
//! A table is a sequence of little-endian `u32` words followed by bytes (a slot is
//! [`SLOT_BYTES`] bytes):
//!
//! | words | what |
//! | --- | --- |
//! | 1 | [`TABLE_MAGIC`] |
//! | 1 | `n`, the number of tokens (ranks `0..n`, `n` below 2^[`RANK_BITS`]) |
//! | 1 | `s`, the number of hash slots (a power of two, at least twice `n`) |
//! | `n + 1` | where each token's bytes start in the byte area (the last is its length) |
//! | `4 s` | open-addressing slots of four words each: the entry, 0 when the slot is empty, else [`slot_entry`] (`rank + 1` in the low [`RANK_BITS`] bits, a tag of the token's hash above them); the token's length; its first eight bytes (zero-padded) |
//! | [`PAIR_WORDS`] | every two-byte string `[a, b]` at `a * 256 + b`: `rank + 1` of its token, 0 when it is none |
//!
//! and then the byte area: every token's bytes, in rank order. A token is found by hashing its
//! bytes with [`token_hash`], starting at slot `hash & (s - 1)` and probing the next slots until
//! one is empty or holds the same tag, length and first bytes (and, for a token longer than
//! eight bytes, the same bytes in the byte area). A token of eight bytes or fewer, nearly every
//! one, is thus found or refused by reading its slot alone: one cache line, not three.

/// The first word of every table (`"ctx5"` in little-endian bytes): a table of another layout
/// is refused.
pub const TABLE_MAGIC: u32 = u32::from_le_bytes(*b"ctx5");

/// The words before the start offsets: magic, token count, slot count.
pub const TABLE_HEADER_WORDS: usize = 3;

/// Bytes of one slot: entry, length, first eight bytes.
pub const SLOT_BYTES: usize = 16;

/// A token's first eight bytes, zero-padded, as the slot holds them.
///
/// Read as at most two overlapping fixed-size loads, not a copy of variable length (a call
/// into `memcpy` for each lookup of a short piece's pair).
pub fn head(bytes: &[u8]) -> [u8; 8] {
    let n = bytes.len();
    let word = match n {
        0 => 0,
        1 => u64::from(bytes[0]),
        2..4 => {
            let low = u64::from(u16::from_le_bytes([bytes[0], bytes[1]]));
            let high = u64::from(u16::from_le_bytes([bytes[n - 2], bytes[n - 1]]));
            low | high << (8 * (n - 2))
        }
        4..8 => {
            let low = u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
            let high = u64::from(u32::from_le_bytes([
                bytes[n - 4],
                bytes[n - 3],
                bytes[n - 2],
                bytes[n - 1],
            ]));
            low | high << (8 * (n - 4))
        }
        _ => u64::from_le_bytes([
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
        ]),
    };
    word.to_le_bytes()
}

/// Words of the two-byte table: one per pair of bytes.
pub const PAIR_WORDS: usize = 256 * 256;

/// Bits of a slot that hold `rank + 1`; the rest hold the tag.
pub const RANK_BITS: u32 = 18;

/// The mask of a slot's `rank + 1`.
pub const RANK_MASK: u32 = (1 << RANK_BITS) - 1;

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// The hash a token's search starts from: its bytes read as little-endian words, eight at a
/// time (the last zero-padded), each folded in by a multiply, with the length mixed in first.
/// A string of at most eight bytes, nearly every token, is one word and one multiply.
pub fn token_hash(bytes: &[u8]) -> u64 {
    let seed = (bytes.len() as u64).wrapping_mul(MULTIPLIER);
    if bytes.len() <= 8 {
        return fold(seed, u64::from_le_bytes(head(bytes)));
    }
    let mut hash = seed;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        hash = fold(hash, u64::from_le_bytes(word));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        hash = fold(hash, u64::from_le_bytes(head(rest)));
    }
    hash
}

fn fold(hash: u64, word: u64) -> u64 {
    let hash = (hash ^ word).wrapping_mul(MULTIPLIER);
    hash ^ (hash >> 29)
}

/// The tag a hash gives its slot entries: bits the slot index does not use.
pub fn tag(hash: u64) -> u32 {
    // The top bits of the hash; the slot index comes from the low ones.
    ((hash >> (64 - (32 - RANK_BITS))) as u32) << RANK_BITS
}

/// The slot entry of the token of rank `rank` whose bytes hash to `hash`.
pub fn slot_entry(rank: u32, hash: u64) -> u32 {
    debug_assert!(rank < RANK_MASK);
    tag(hash) | (rank + 1)
}
