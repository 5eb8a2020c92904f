//! Exact byte-pair counting for the o200k_base and cl100k_base vocabularies, offline.
//!
//! A text is split by the vocabulary's pre-tokenizer ([`split`]) into pieces, and each piece
//! is counted by byte-pair merging over the vocabulary's ranks ([`merge`]): start from single
//! bytes and merge, again and again, the adjacent pair whose joined bytes have the lowest rank
//! (the leftmost of equals), until no adjacent pair is a token. That is the encoding tiktoken
//! defines; the count is the number of parts left. The ranks are a table the build script
//! writes from the vocabularies `bpe-openai` carries ([`table`]), read in place from the
//! binary: nothing is deserialised, and only the pages a count touches become resident.
//!
//! **Invariant:** for every text, [`Vocab::count`] equals `bpe_openai`'s count for that
//! vocabulary (tests compare the two on corpora of every script the estimator corpus holds and
//! on random text).

mod ascii;
mod atomic;
#[cfg(test)]
mod atomic_find;
#[allow(dead_code)]
mod atomic_format;
mod ideographs;
mod merge;
mod split;
mod table;
#[allow(dead_code)]
mod table_format;

use std::sync::LazyLock;

use super::Vocabulary;

pub(crate) use table::RankTable;
pub(crate) use table_format::head;

/// A vocabulary: its pre-tokenizer, its rank table and the characters merging starts from
/// whole.
pub(crate) struct Vocab {
    splitter: split::Splitter,
    ranks: RankTable,
    atomic: atomic::Atomic,
}

static O200K: LazyLock<Vocab> = LazyLock::new(|| Vocab {
    splitter: split::Splitter::o200k(),
    ranks: RankTable::parse(
        include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.ranks")),
        0,
    ),
    atomic: atomic::Atomic::parse(include_bytes!(concat!(
        env!("OUT_DIR"),
        "/o200k_base.atomic"
    ))),
});

static CL100K: LazyLock<Vocab> = LazyLock::new(|| Vocab {
    splitter: split::Splitter::cl100k(),
    ranks: RankTable::parse(
        include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.ranks")),
        1,
    ),
    atomic: atomic::Atomic::parse(include_bytes!(concat!(
        env!("OUT_DIR"),
        "/cl100k_base.atomic"
    ))),
});

/// The vocabulary `vocabulary` names, built on first use.
pub(crate) fn vocab(vocabulary: Vocabulary) -> &'static Vocab {
    match vocabulary {
        Vocabulary::O200k => &O200K,
        Vocabulary::Cl100k => &CL100K,
    }
}

impl Vocab {
    /// The exact token count of `text`.
    pub(crate) fn count(&self, text: &str) -> u64 {
        self.pieces(text)
            .map(|piece| self.piece_count(piece.as_bytes()))
            .sum()
    }

    /// The pre-tokenizer's pieces of `text`, in order; together they are `text`.
    pub(crate) fn pieces<'t>(&'t self, text: &'t str) -> impl Iterator<Item = &'t str> + 't {
        self.splitter.split(text)
    }

    /// The token count of one piece.
    pub(crate) fn piece_count(&self, piece: &[u8]) -> u64 {
        merge::count(&self.ranks, &self.atomic, piece) as u64
    }
}

#[cfg(test)]
mod tests;
