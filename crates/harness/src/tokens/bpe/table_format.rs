//! The layout of a vocabulary's rank table, shared by the build script that writes it and the
//! reader that looks ranks up in it (both include this file, so the two cannot disagree).
//!
//! A table is a sequence of little-endian `u32` words followed by bytes:
//!
//! | words | what |
//! | --- | --- |
//! | 1 | [`TABLE_MAGIC`] |
//! | 1 | `n`, the number of tokens (ranks `0..n`) |
//! | 1 | `s`, the number of hash slots (a power of two, at least twice `n`) |
//! | `n + 1` | where each token's bytes start in the byte area (the last is its length) |
//! | `s` | open-addressing slots: `rank + 1` of the token whose bytes hash there, 0 when empty |
//!
//! and then the byte area: every token's bytes, in rank order. A token is found by hashing its
//! bytes with [`token_hash`], starting at slot `hash & (s - 1)` and probing the next slots until
//! the token's bytes match or a slot is empty.

/// The first word of every table (`"ctx1"` in little-endian bytes): a table of another layout
/// is refused.
pub const TABLE_MAGIC: u32 = u32::from_le_bytes(*b"ctx1");

/// The words before the start offsets: magic, token count, slot count.
pub const TABLE_HEADER_WORDS: usize = 3;

/// FNV-1a over the bytes, 64 bits: the slot a token's search starts from.
pub fn token_hash(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
