//! Characters that byte-pair merging may start from whole, instead of from their bytes.
//!
//! Merging a piece of Chinese text from its bytes spends most of its work joining each
//! character's three bytes back into the character. Often that work cannot change the
//! outcome, and [`merge`](super::merge) starts from the character as one part. A character `c`
//! of two or three bytes, in a piece where the byte before it and the byte after it are known,
//! qualifies when:
//!
//! 1. merged alone, its bytes end as one token (`c` itself), and `r`, the highest rank among
//!    the merges that take them there, is known; and
//! 2. every token that could join bytes of `c` with bytes around it in this piece ranks above
//!    `r`: every token that ends with a nonempty prefix of `c`'s bytes (the whole of `c`
//!    included) preceded by a byte of the same kind (see [`Kind`]) as the byte before `c`,
//!    and every token that starts with a nonempty suffix of them followed by a byte of the
//!    same kind as the byte after `c`. Nothing precedes a piece's first byte or follows its
//!    last, so at a piece's edge no token is in the way.
//!
//! Why that is enough: while `c` is still in pieces, one of its own merges (rank at most `r`)
//! is always waiting, and any merge that would join a piece of `c` with a neighbour ranks above
//! `r` by (2), so it never comes first; `c` is thus built exactly as when alone. Every merge
//! elsewhere done meanwhile ranks at most `r`, and the merges that join the finished `c` with a
//! neighbour rank above `r` by (2) too, so starting from `c` whole does those same merges, in
//! the same order, and reaches the same parts. The bytes around `c` are the piece's own, so the
//! argument holds for each qualifying character in turn. Tests compare counts with and without
//! this start and against the reference counter.
//!
//! Which characters qualify beside which kinds of bytes is found once per vocabulary from its
//! tokens (milliseconds) and kept as sixteen flags per code point of the Basic Multilingual
//! Plane (128 KiB); characters of four bytes (emoji and rarer scripts) always start as bytes.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::RankTable;

/// Code points the flags cover: the Basic Multilingual Plane.
const CODE_POINTS: usize = 0x1_0000;

/// What borders a character in a piece: a byte of one of three kinds, or the piece's edge.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Edge = 0,
    Ascii = 1,
    Continuation = 2,
    Lead = 3,
}

const KINDS: [Kind; 4] = [Kind::Edge, Kind::Ascii, Kind::Continuation, Kind::Lead];

impl Kind {
    fn of(byte: Option<&u8>) -> Kind {
        match byte {
            None => Kind::Edge,
            Some(0..=0x7F) => Kind::Ascii,
            Some(0x80..=0xBF) => Kind::Continuation,
            Some(_) => Kind::Lead,
        }
    }
}

/// The flag of a character beside `before` and `after`.
fn flag(before: Kind, after: Kind) -> u16 {
    1 << (before as u16 * 4 + after as u16)
}

/// The characters of one vocabulary that merging may start from whole, by what borders them.
pub(crate) struct Atomic {
    /// Per code point, one bit per (kind before, kind after) where the character qualifies.
    flags: Box<[u16]>,
    /// Per code point, one bit per lead byte `0xE0 + j` of a three-byte character after it
    /// where it qualifies after a continuation byte (inside Chinese or Japanese text, where a
    /// token that starts with the character's last byte and the next character's first bytes
    /// would otherwise stop it).
    before_lead: Box<[u16]>,
}

impl Atomic {
    /// No character qualifies: merging starts from bytes (for tests).
    #[cfg(test)]
    pub(crate) fn none() -> Self {
        Atomic {
            flags: vec![0; CODE_POINTS].into_boxed_slice(),
            before_lead: vec![0; CODE_POINTS].into_boxed_slice(),
        }
    }

    /// The qualifying characters of `table`'s vocabulary.
    pub(crate) fn find(table: &RankTable) -> Self {
        let boundaries = Boundaries::of(table);
        let mut flags = vec![0u16; CODE_POINTS].into_boxed_slice();
        let mut before_lead = vec![0u16; CODE_POINTS].into_boxed_slice();
        for (_, bytes) in table.tokens() {
            let Some((code_point, length)) = decode(bytes, 0) else {
                continue;
            };
            if length != bytes.len() {
                continue;
            }
            let Some(highest) = highest_merge_rank(table, bytes) else {
                continue;
            };
            // The lowest rank of a token joining the character with what is on either side.
            let before = KINDS.map(|kind| boundaries.lowest_ending(bytes, Neighbour::Of(kind)));
            let after = KINDS.map(|kind| boundaries.lowest_starting(bytes, Neighbour::Of(kind)));
            for (b, lowest_before) in KINDS.into_iter().zip(before) {
                for (a, lowest_after) in KINDS.into_iter().zip(after) {
                    if highest < lowest_before.min(lowest_after) {
                        flags[code_point] |= flag(b, a);
                    }
                }
            }
            let after_continuation = before[Kind::Continuation as usize];
            for j in 0..16 {
                let lowest_after = boundaries.lowest_starting(bytes, Neighbour::Byte(0xE0 + j));
                if highest < after_continuation.min(lowest_after) {
                    before_lead[code_point] |= 1 << j;
                }
            }
        }
        Atomic { flags, before_lead }
    }

    /// The length of the character that starts at `at` when it qualifies there, else 1.
    pub(crate) fn length_at(&self, piece: &[u8], at: usize) -> usize {
        let Some((code_point, length)) = decode(piece, at) else {
            return 1;
        };
        let flags = self.flags[code_point];
        if flags == 0 {
            return 1;
        }
        let before = Kind::of(at.checked_sub(1).and_then(|i| piece.get(i)));
        let next = piece.get(at + length);
        if flags & flag(before, Kind::of(next)) != 0 {
            return length;
        }
        match next {
            Some(&lead @ 0xE0..=0xEF)
                if matches!(before, Kind::Edge | Kind::Continuation)
                    && self.before_lead[code_point] & 1 << (lead - 0xE0) != 0 =>
            {
                length
            }
            _ => 1,
        }
    }

    /// How many characters qualify between two edges (for tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn count(&self, before: u8, after: u8) -> usize {
        let kind = |byte: u8| match byte {
            0 => Kind::Edge,
            1 => Kind::Ascii,
            2 => Kind::Continuation,
            _ => Kind::Lead,
        };
        let wanted = flag(kind(before), kind(after));
        self.flags.iter().filter(|&&f| f & wanted != 0).count()
    }
}

/// The length of the character a lead byte starts (1 for any other byte).
fn char_len(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 1,
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// The code point and length of the well-formed two- or three-byte character at `at`.
fn decode(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let lead = *bytes.get(at)?;
    match char_len(lead) {
        2 => {
            let second = *bytes.get(at + 1)?;
            is_continuation(second).then(|| {
                (
                    (usize::from(lead & 0x1F) << 6) | usize::from(second & 0x3F),
                    2,
                )
            })
        }
        3 => {
            let second = *bytes.get(at + 1)?;
            let third = *bytes.get(at + 2)?;
            if !is_continuation(second) || !is_continuation(third) {
                return None;
            }
            let code_point = (usize::from(lead & 0x0F) << 12)
                | (usize::from(second & 0x3F) << 6)
                | usize::from(third & 0x3F);
            // Overlong forms and surrogates are not characters.
            (code_point >= 0x800 && !(0xD800..0xE000).contains(&code_point))
                .then_some((code_point, 3))
        }
        _ => None,
    }
}

/// The highest rank among the merges that turn the bytes of a two- or three-byte token into
/// that one token when merged alone, or `None` when they end as more than one part.
fn highest_merge_rank(table: &RankTable, bytes: &[u8]) -> Option<u32> {
    match *bytes {
        [first, second] => table.pair_rank(first, second),
        [first, second, third] => {
            let left = table.pair_rank(first, second);
            let right = table.pair_rank(second, third);
            // The lower rank merges first (the leftmost of equals), then the whole token.
            let first_merge = match (left, right) {
                (Some(l), Some(r)) => l.min(r),
                (Some(l), None) => l,
                (None, Some(r)) => r,
                (None, None) => return None,
            };
            let whole = table.rank(bytes)?;
            Some(first_merge.max(whole))
        }
        _ => None,
    }
}

/// The lowest ranks of the tokens that hold a fragment of non-ASCII bytes and more: the
/// merges across a character's boundaries.
struct Boundaries {
    /// (fragment, kind of the byte before it) → the lowest rank of a token ending with both.
    ending: FragmentRanks,
    /// (fragment, kind of the byte after it, or that byte) → the lowest rank of a token
    /// starting with both.
    starting: FragmentRanks,
}

/// What a fragment's neighbour is known to be: a byte of a kind, or that very byte.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Neighbour {
    Of(Kind),
    Byte(u8),
}

/// Lowest ranks by [`fragment_key`].
type FragmentRanks = HashMap<u64, u32, FixedState>;

/// A fragment of one to three bytes and what its neighbour is, as one word.
fn fragment_key(fragment: &[u8], neighbour: Neighbour) -> u64 {
    debug_assert!((1..=3).contains(&fragment.len()));
    let mut word = [0u8; 8];
    word[..fragment.len()].copy_from_slice(fragment);
    word[3] = fragment.len() as u8;
    match neighbour {
        Neighbour::Of(kind) => word[4] = kind as u8,
        Neighbour::Byte(byte) => [word[5], word[6]] = [1, byte],
    }
    u64::from_le_bytes(word)
}

impl Boundaries {
    fn of(table: &RankTable) -> Self {
        let mut boundaries = Boundaries {
            ending: FragmentRanks::default(),
            starting: FragmentRanks::default(),
        };
        let lower = |map: &mut FragmentRanks, key: u64, rank: u32| {
            let lowest = map.entry(key).or_insert(rank);
            *lowest = (*lowest).min(rank);
        };
        for (rank, bytes) in table.tokens() {
            let length = bytes.len();
            for k in 1..=3.min(length.saturating_sub(1)) {
                let suffix = &bytes[length - k..];
                if suffix[0] >= 0x80 {
                    let before = Neighbour::Of(Kind::of(bytes.get(length - k - 1)));
                    lower(&mut boundaries.ending, fragment_key(suffix, before), rank);
                }
                let prefix = &bytes[..k];
                if prefix[0] >= 0x80 {
                    let after = Neighbour::Of(Kind::of(bytes.get(k)));
                    lower(&mut boundaries.starting, fragment_key(prefix, after), rank);
                    let after = Neighbour::Byte(bytes[k]);
                    lower(&mut boundaries.starting, fragment_key(prefix, after), rank);
                }
            }
        }
        boundaries
    }

    /// The lowest rank of a token that ends with a nonempty prefix of `character`'s bytes
    /// after a byte `before` ([`u32::MAX`] when none does, or at the piece's edge).
    fn lowest_ending(&self, character: &[u8], before: Neighbour) -> u32 {
        if before == Neighbour::Of(Kind::Edge) {
            return u32::MAX;
        }
        (1..=character.len())
            .filter_map(|k| {
                self.ending
                    .get(&fragment_key(&character[..k], before))
                    .copied()
            })
            .min()
            .unwrap_or(u32::MAX)
    }

    /// The lowest rank of a token that starts with a nonempty suffix of `character`'s bytes
    /// before a byte `after` ([`u32::MAX`] when none does, or at the piece's edge).
    fn lowest_starting(&self, character: &[u8], after: Neighbour) -> u32 {
        if after == Neighbour::Of(Kind::Edge) {
            return u32::MAX;
        }
        let n = character.len();
        (1..=n)
            .filter_map(|k| {
                self.starting
                    .get(&fragment_key(&character[n - k..], after))
                    .copied()
            })
            .min()
            .unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests;
