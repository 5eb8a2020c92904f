//! A memo of exact counts per pre-tokenizer piece, for exact counting of text that repeats.
//!
//! An exact count is the sum, over the pieces the vocabulary's pre-tokenizer splits a text
//! into, of each piece's byte-pair count: that is what `bpe::Vocab::count` computes.
//! Text repeats its words, so [`count`] remembers the count of every short piece, per thread and
//! per vocabulary, and runs the byte-pair encoder only on pieces it has not seen before. The sum
//! is the same number; only its cost changes.
//!
//! Limits: pieces longer than [`PIECE_MEMO_BYTES_MAX`] are counted every time, and a memo that
//! holds [`PIECE_MEMO_ENTRIES_MAX`] pieces starts over. Each thread has its own memo, so no lock
//! is taken and nothing depends on which thread counted first.
//!
//! [`PIECE_MEMO_BYTES_MAX`]: crate::limits::PIECE_MEMO_BYTES_MAX
//! [`PIECE_MEMO_ENTRIES_MAX`]: crate::limits::PIECE_MEMO_ENTRIES_MAX

use std::cell::RefCell;
use std::collections::HashMap;

use super::Vocabulary;
use super::bpe::Vocab;
use crate::limits::{PIECE_MEMO_BYTES_MAX, PIECE_MEMO_ENTRIES_MAX};

/// One vocabulary's remembered counts: pieces of up to [`PACKED_BYTES_MAX`] bytes (most words)
/// under their bytes and length packed into one word, longer ones under their bytes.
#[derive(Default)]
struct Memo {
    packed: HashMap<u64, u32, foldhash::fast::FixedState>,
    longer: HashMap<Box<[u8]>, u32, foldhash::fast::FixedState>,
}

/// Pieces up to this many bytes are keyed by [`packed`].
const PACKED_BYTES_MAX: usize = 7;

/// A short piece as one word: its bytes, zero-padded, in the low seven bytes and its length in
/// the top one, so two pieces share a key only when they are equal.
fn packed(bytes: &[u8]) -> u64 {
    debug_assert!(bytes.len() <= PACKED_BYTES_MAX);
    u64::from_le_bytes(super::bpe::head(bytes)) | (bytes.len() as u64) << 56
}

impl Memo {
    fn get(&self, bytes: &[u8]) -> Option<u32> {
        if bytes.len() <= PACKED_BYTES_MAX {
            self.packed.get(&packed(bytes)).copied()
        } else {
            self.longer.get(bytes).copied()
        }
    }

    fn len(&self) -> usize {
        self.packed.len() + self.longer.len()
    }

    /// Remembers a count, starting over when the memo is full.
    fn insert(&mut self, bytes: &[u8], tokens: u32) {
        if self.len() >= PIECE_MEMO_ENTRIES_MAX {
            self.packed.clear();
            self.longer.clear();
        }
        if bytes.len() <= PACKED_BYTES_MAX {
            self.packed.insert(packed(bytes), tokens);
        } else {
            self.longer.insert(bytes.into(), tokens);
        }
    }
}

thread_local! {
    /// One memo per vocabulary, indexed by [`memo_index`].
    static MEMOS: RefCell<[Memo; 2]> = RefCell::new([Memo::default(), Memo::default()]);
}

fn memo_index(vocabulary: Vocabulary) -> usize {
    match vocabulary {
        Vocabulary::O200k => 0,
        Vocabulary::Cl100k => 1,
    }
}

/// The exact count of `text` with `vocab`, the vocabulary `vocabulary`: the same number as
/// `vocab.count(text)`.
pub(super) fn count(vocab: &Vocab, vocabulary: Vocabulary, text: &str) -> u64 {
    MEMOS.with_borrow_mut(|memos| {
        let memo = &mut memos[memo_index(vocabulary)];
        let mut total = 0u64;
        for piece in vocab.pieces(text) {
            let bytes = piece.as_bytes();
            if bytes.len() > PIECE_MEMO_BYTES_MAX {
                total += vocab.piece_count(bytes);
                continue;
            }
            if let Some(tokens) = memo.get(bytes) {
                total += u64::from(tokens);
                continue;
            }
            let tokens = vocab.piece_count(bytes);
            // A piece has at most one token per byte, so its count fits.
            let remembered = u32::try_from(tokens).expect("a short piece's count fits in u32");
            memo.insert(bytes, remembered);
            total += tokens;
        }
        total
    })
}

/// Pieces remembered by this thread for `vocabulary` (for tests).
#[cfg(test)]
pub(super) fn remembered(vocabulary: Vocabulary) -> usize {
    MEMOS.with_borrow(|memos| memos[memo_index(vocabulary)].len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces that differ only by trailing zero bytes, or in any byte, get different keys.
    #[test]
    fn packed_keys_tell_every_short_piece_apart() {
        let pieces: [&[u8]; 8] = [
            b"", b"\0", b"\0\0", b"a", b"a\0", b" the", b" thE", b"abcdefg",
        ];
        let keys: std::collections::BTreeSet<u64> = pieces.iter().map(|p| packed(p)).collect();
        assert_eq!(keys.len(), pieces.len());
        let mut memo = Memo::default();
        for (tokens, piece) in (1..).zip(pieces) {
            memo.insert(piece, tokens);
        }
        memo.insert(b"abcdefgh", 9);
        for (tokens, piece) in (1..).zip(pieces) {
            assert_eq!(memo.get(piece), Some(tokens));
        }
        assert_eq!(
            (memo.get(b"abcdefgh"), memo.get(b"abcdefg\0")),
            (Some(9), None)
        );
    }
}
