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

type Memo = HashMap<Box<[u8]>, u32, foldhash::fast::FixedState>;

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
            if let Some(&tokens) = memo.get(bytes) {
                total += u64::from(tokens);
                continue;
            }
            let tokens = vocab.piece_count(bytes);
            // A piece has at most one token per byte, so its count fits.
            let remembered = u32::try_from(tokens).expect("a short piece's count fits in u32");
            if memo.len() >= PIECE_MEMO_ENTRIES_MAX {
                memo.clear();
            }
            memo.insert(bytes.into(), remembered);
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
