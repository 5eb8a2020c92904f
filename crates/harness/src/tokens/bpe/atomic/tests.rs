//! Starting from whole characters changes no count: every qualifying character, in pieces
//! around it, counts the same with and without the start, and as the reference counts.
//!
//! Mutating the conditions (a character qualifying beside any byte, or beside any next
//! character's first byte) fails these tests. Leaving out the whole character from condition 2
//! does not: in these two vocabularies no token that holds a whole character and more ranks
//! below that character's own merges, so that part never decides; the argument needs it for
//! any other vocabulary.

use proptest::prelude::*;

use super::super::atomic_format::{KINDS, Kind};
use super::super::{merge, vocab};
use super::*;
use crate::tokens::Vocabulary;

const VOCABULARIES: [Vocabulary; 2] = [Vocabulary::O200k, Vocabulary::Cl100k];

fn reference(vocabulary: Vocabulary) -> &'static bpe_openai::Tokenizer {
    match vocabulary {
        Vocabulary::O200k => bpe_openai::o200k_base(),
        Vocabulary::Cl100k => bpe_openai::cl100k_base(),
    }
}

/// Every token of `vocabulary` that is one character of two or three bytes.
fn character_tokens(vocabulary: Vocabulary) -> Vec<char> {
    vocab(vocabulary)
        .ranks
        .tokens()
        .filter_map(|(_, bytes)| {
            let text = std::str::from_utf8(bytes).ok()?;
            let mut chars = text.chars();
            let first = chars.next()?;
            (chars.next().is_none() && (2..=3).contains(&first.len_utf8())).then_some(first)
        })
        .collect()
}

/// The piece counted from bytes, from whole characters, and by the reference: all equal.
fn assert_same_count(vocabulary: Vocabulary, piece: &[u8]) {
    let ours = vocab(vocabulary);
    let whole = merge::count(&ours.ranks, &ours.atomic, piece);
    let bytewise = merge::count(&ours.ranks, &Atomic::none(), piece);
    let theirs = reference(vocabulary).bpe.count(piece);
    assert_eq!(
        (whole, bytewise),
        (theirs, theirs),
        "{vocabulary:?} count of {:?}",
        String::from_utf8_lossy(piece)
    );
}

/// The flags in the binary are those found from the reference's own tokens, read back in
/// place.
#[test]
fn the_stored_flags_are_the_references() {
    for vocabulary in VOCABULARIES {
        let bpe = &reference(vocabulary).bpe;
        let tokens: Vec<&[u8]> = (0..bpe.num_tokens())
            .map(|rank| bpe.token_bytes(u32::try_from(rank).expect("ranks fit")))
            .collect();
        let found = Atomic::parse(Box::leak(
            super::super::atomic_find::find(&tokens).into_boxed_slice(),
        ));
        let stored = &vocab(vocabulary).atomic;
        for before in KINDS {
            for after in KINDS {
                assert_eq!(found.count(before, after), stored.count(before, after));
            }
        }
        assert_eq!(found.flags, stored.flags, "{vocabulary:?}");
    }
}

#[test]
fn many_characters_qualify_inside_chinese_text() {
    for vocabulary in VOCABULARIES {
        let atomic = &vocab(vocabulary).atomic;
        // Between a continuation byte and a lead byte: a character inside Chinese text.
        let inside = atomic.count(Kind::Continuation, Kind::Lead);
        assert!(inside > 500, "{vocabulary:?}: {inside}");
        assert_eq!(Atomic::none().count(Kind::Edge, Kind::Edge), 0);
    }
}

/// Every character token, qualifying or not, between neighbours drawn from the character
/// tokens and from ASCII, and at each edge of a piece.
#[test]
fn every_character_counts_the_same_in_context() {
    let ascii: Vec<char> = " a.Z0'\n".chars().collect();
    for vocabulary in VOCABULARIES {
        let characters = character_tokens(vocabulary);
        // A fixed sequence (splitmix64), so every run tests the same pieces.
        let mut state = 11u64;
        let mut pick = || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let index = (z ^ (z >> 31)) as usize;
            if index.is_multiple_of(5) {
                ascii[index / 5 % ascii.len()]
            } else {
                characters[index % characters.len()]
            }
        };
        for &character in &characters {
            let neighbours: Vec<char> = (0..4).map(|_| pick()).collect();
            let pieces = [
                format!("{character}"),
                format!("{}{character}", neighbours[0]),
                format!("{character}{}", neighbours[1]),
                format!(
                    "{}{}{character}{}{}",
                    neighbours[0], neighbours[1], neighbours[2], neighbours[3]
                ),
            ];
            for piece in &pieces {
                assert_same_count(vocabulary, piece.as_bytes());
            }
        }
    }
}

#[test]
fn broken_characters_start_as_bytes() {
    let atomic = &vocab(Vocabulary::O200k).atomic;
    // A lead byte without its continuation, an overlong form, a surrogate, a stray
    // continuation byte, and a character cut at the piece's end.
    for piece in [
        &b"\xe4"[..],
        b"\xe0\x80\x80",
        b"\xed\xa0\x80",
        b"\x80\xe4\xb8",
        b"\xe4\xb8",
    ] {
        for at in 0..piece.len() {
            assert_eq!(atomic.length_at(piece, at), 1, "{piece:?} at {at}");
        }
        for vocabulary in VOCABULARIES {
            let ours = vocab(vocabulary);
            assert_eq!(
                merge::count(&ours.ranks, &ours.atomic, piece),
                reference(vocabulary).bpe.count(piece)
            );
        }
    }
    assert_eq!(atomic.length_at("中".as_bytes(), 0), 3);
}

fn characters_strategy(vocabulary: Vocabulary) -> impl Strategy<Value = String> {
    let mut pool = character_tokens(vocabulary);
    pool.extend(" a.,'0\n\u{3002}".chars());
    prop::collection::vec(prop::sample::select(pool), 1..24)
        .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Runs of character tokens, counted as one piece (whatever the pre-tokenizer would do).
    #[test]
    fn runs_of_characters_count_the_same_in_o200k(text in characters_strategy(Vocabulary::O200k)) {
        assert_same_count(Vocabulary::O200k, text.as_bytes());
    }

    #[test]
    fn runs_of_characters_count_the_same_in_cl100k(text in characters_strategy(Vocabulary::Cl100k)) {
        assert_same_count(Vocabulary::Cl100k, text.as_bytes());
    }
}
