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
//! Which characters qualify beside which kinds of bytes is found from the vocabulary's tokens
//! when the crate is built (`atomic_find.rs`, which the build script runs) and
//! read in place from the binary ([`atomic_format`](super::atomic_format) has the layout), so
//! it costs nothing at run time. Characters of four bytes (emoji and rarer scripts) always
//! start as bytes.

use super::atomic_format::{CODE_POINTS, FLAGS_BYTES, Kind, decode, flag};

/// The characters of one vocabulary that merging may start from whole, by what borders them:
/// flags in the layout of [`atomic_format`](super::atomic_format), read in place.
pub(crate) struct Atomic {
    flags: &'static [u8],
}

impl Atomic {
    /// The flags in `bytes`, which the build script wrote.
    ///
    /// # Panics
    /// When `bytes` is not as long as flags are: they are part of the binary, so that is a
    /// build defect, never user input.
    pub(crate) fn parse(bytes: &'static [u8]) -> Self {
        assert_eq!(
            bytes.len(),
            FLAGS_BYTES,
            "whole-character flags of this layout"
        );
        Atomic { flags: bytes }
    }

    /// No character qualifies: merging starts from bytes (for tests).
    #[cfg(test)]
    pub(crate) fn none() -> Self {
        Atomic::parse(Box::leak(vec![0u8; FLAGS_BYTES].into_boxed_slice()))
    }

    /// Entry `index` of array `array` (0: by kinds, 1: by the next lead byte).
    fn word(&self, array: usize, index: usize) -> u16 {
        let at = 2 * (array * CODE_POINTS + index);
        u16::from_le_bytes([self.flags[at], self.flags[at + 1]])
    }

    /// The length of the character that starts at `at` when it qualifies there, else 1.
    pub(crate) fn length_at(&self, piece: &[u8], at: usize) -> usize {
        let Some((code_point, length)) = decode(piece, at) else {
            return 1;
        };
        let flags = self.word(0, code_point);
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
                    && self.word(1, code_point) & 1 << (lead - 0xE0) != 0 =>
            {
                length
            }
            _ => 1,
        }
    }

    /// How many characters qualify between a byte of kind `before` and one of kind `after`
    /// (for tests).
    #[cfg(test)]
    pub(crate) fn count(&self, before: Kind, after: Kind) -> usize {
        let wanted = flag(before, after);
        (0..CODE_POINTS)
            .filter(|&code_point| self.word(0, code_point) & wanted != 0)
            .count()
    }
}

#[cfg(test)]
mod tests;
