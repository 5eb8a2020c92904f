//! The approximate estimator's scan: the bytes read a block of 64 at a time, each block
//! classified into bit masks, and the o200k splitter's pieces (words, digit groups,
//! punctuation runs, spaces, newlines) counted from those masks with one block of look-ahead,
//! into [`TextFeatures`].

use super::classify::{self, BLOCK_BYTES, Baseline, Classifier, Masks, classify_with};
use super::script::{Script, ScriptCounts, ScriptTotals};
use super::{PUNCTUATION_LONG_FROM, TextFeatures, WORD_LONG_FROM};

/// What a block passes to the next one: its masks and the masks derived from earlier blocks.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Carry {
    pub(super) masks: Masks,
    pub(super) word_continue: u64,
    pub(super) digit_group_start: u64,
}

/// The features of `bytes`; `han_rare` asks for [`TextFeatures::han_rare_count`] too (it stays
/// zero otherwise).
pub(super) fn scan(bytes: &[u8], han_rare: bool) -> TextFeatures {
    #[cfg(target_arch = "x86_64")]
    if let Some(avx2) = classify::Avx2::detect() {
        // SAFETY: `avx2` proves that the processor has AVX2, POPCNT and BMI1.
        return unsafe { scan_avx2(bytes, han_rare, avx2) };
    }
    scan_with(Baseline, bytes, han_rare)
}

/// The scan compiled for processors with AVX2, POPCNT and BMI1 (population counts become one
/// instruction each).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt,bmi1")]
fn scan_avx2(bytes: &[u8], han_rare: bool, avx2: classify::Avx2) -> TextFeatures {
    scan_with(avx2, bytes, han_rare)
}

/// The scan with one way of classifying blocks; inlined into each caller so that the
/// caller's processor features apply to all of it.
#[inline(always)]
fn scan_with<C: Classifier>(classifier: C, bytes: &[u8], han_rare: bool) -> TextFeatures {
    let (blocks, rest) = bytes.as_chunks::<BLOCK_BYTES>();
    let mut tail = [0u8; BLOCK_BYTES];
    tail[..rest.len()].copy_from_slice(rest);
    let tail_valid = (1u64 << rest.len()) - 1; // rest.len() < 64
    let block_count = blocks.len() + usize::from(!rest.is_empty());
    let block_at = |index: usize| match blocks.get(index) {
        Some(block) => Some((block, u64::MAX)),
        None if index == blocks.len() && !rest.is_empty() => Some((&tail, tail_valid)),
        None => None,
    };
    let masks_of = |index: usize| match block_at(index) {
        Some((block, valid)) => classify_with(classifier, block, valid),
        None => Masks::default(),
    };

    let mut features = TextFeatures::default();
    let mut script_counts = ScriptCounts::new(han_rare);
    let mut carry = Carry::default();
    let mut current = masks_of(0);
    for index in 0..block_count {
        let next = masks_of(index + 1);
        carry = count_pieces(&carry, &current, &next, &mut features);
        if current.lead != 0
            && let Some((block, _)) = block_at(index)
        {
            // The two bytes after the block, for a character that ends past it.
            let after = |offset: usize| {
                let position = (index + 1) * BLOCK_BYTES + offset;
                bytes.get(position).copied().unwrap_or(0x80)
            };
            let after = [after(0), after(1)];
            // Only leads 0xe3 and 0xef need the second byte; without them, the CJK masks have
            // nothing to add to the runs.
            if current.lead_e3_ef == 0 {
                script_counts.add_runs(classifier, block, after, current.lead);
            } else {
                let common = classifier.leads(block);
                script_counts.add_block(classifier, block, &common, after, current.lead);
            }
        }
        current = next;
    }
    add_scripts(&script_counts.finish(), &mut features);
    features
}

pub(super) fn add_scripts(totals: &ScriptTotals, features: &mut TextFeatures) {
    let counts = &totals.by_script;
    features.cyrillic_extended_count += totals.cyrillic_extended;
    features.han_rare_count += totals.han_rare;
    let count = |script: Script| counts[script as usize];
    features.han_count += count(Script::Han);
    features.kana_count += count(Script::Kana);
    features.hangul_count += count(Script::Hangul);
    features.cjk_punctuation_count += count(Script::CjkPunctuation);
    features.latin_count += count(Script::Latin);
    features.greek_count += count(Script::Greek);
    features.cyrillic_count += count(Script::Cyrillic);
    features.hebrew_arabic_count += count(Script::HebrewArabic);
    features.other_two_byte_count += count(Script::OtherTwoByte);
    features.indic_count += count(Script::Indic);
    features.symbol_count += count(Script::Symbol);
    features.other_three_byte_count += count(Script::OtherThreeByte);
    features.four_byte_count += count(Script::FourByte);
}

/// Bit `p` is set when byte `p - n` (counting into the previous block) is in the mask.
#[inline(always)]
fn preceded(current: u64, previous: u64, n: u32) -> u64 {
    debug_assert!((1..64).contains(&n));
    (current << n) | (previous >> (64 - n))
}

/// Bit `p` is set when byte `p + 1` (counting into the next block) is in the mask.
#[inline(always)]
fn followed(current: u64, next: u64) -> u64 {
    (current >> 1) | (next << 63)
}

/// Counts the pieces of one block; returns what the next block needs to see.
#[inline(always)]
pub(super) fn count_pieces(
    carry: &Carry,
    current: &Masks,
    next: &Masks,
    features: &mut TextFeatures,
) -> Carry {
    if current.high == u64::MAX {
        return count_pieces_without_ascii(carry, current, features);
    }
    count_pieces_of_any_block(carry, current, next, features)
}

/// A block without ASCII (much of CJK text) continues a word or starts one at its first byte;
/// it holds no other piece. The same as `count_pieces_of_any_block`, in a few instructions.
#[inline(always)]
fn count_pieces_without_ascii(
    carry: &Carry,
    current: &Masks,
    features: &mut TextFeatures,
) -> Carry {
    let previous_wordish = carry.masks.letter | carry.masks.high;
    let start = !(previous_wordish >> 63) & 1;
    features.word_piece_count += start;
    features.word_non_ascii_count += start;
    Carry {
        masks: *current,
        word_continue: !start,
        digit_group_start: 0,
    }
}

/// Counts the pieces of any block.
#[inline(always)]
pub(super) fn count_pieces_of_any_block(
    carry: &Carry,
    current: &Masks,
    next: &Masks,
    features: &mut TextFeatures,
) -> Carry {
    let previous = &carry.masks;
    let words = word_pieces(carry, current);
    let digit_group_start = digit_groups(carry, current);
    let next_wordish = followed(current.letter | current.high, next.letter | next.high);
    let count = |mask: u64| u64::from(mask.count_ones());
    features.word_piece_count += count(words.start);
    features.word_long_letter_count += count(words.long);
    features.word_non_ascii_count += count(words.start & current.high);
    features.digit_piece_count += count(digit_group_start);
    let (space_pieces, space_splits) = space_pieces(previous, current, next, next_wordish);
    features.space_piece_count += count(space_pieces) + count(space_splits);
    let punctuation = punctuation_pieces(previous, current, next, next_wordish);
    features.punctuation_piece_count += count(punctuation.start);
    features.punctuation_long_count += count(punctuation.long);
    features.word_symbol_count += count(punctuation.joined);
    features.newline_piece_count += count(newline_pieces(previous, current));
    Carry {
        masks: *current,
        word_continue: words.continues,
        digit_group_start,
    }
}

/// Word-piece masks of one block.
struct Words {
    /// First character of each piece.
    start: u64,
    /// Every other character of a piece.
    continues: u64,
    /// ASCII letters at position `WORD_LONG_FROM` or later in their piece.
    long: u64,
}

/// Words are runs of letters and non-ASCII characters, split where lower case meets upper.
#[inline(always)]
fn word_pieces(carry: &Carry, current: &Masks) -> Words {
    let previous = &carry.masks;
    let wordish = current.letter | current.high;
    let previous_wordish = previous.letter | previous.high;
    let lower = current.letter & !current.upper;
    let previous_lower = previous.letter & !previous.upper;
    let camel = current.upper & preceded(lower, previous_lower, 1);
    let start = (wordish & !preceded(wordish, previous_wordish, 1)) | camel;
    let continues = wordish & !start;
    let mut long = current.letter & continues;
    for n in 1..WORD_LONG_FROM {
        long &= preceded(continues, carry.word_continue, n);
    }
    Words {
        start,
        continues,
        long,
    }
}

/// The last space of each run that is a piece, and of each run split in two.
///
/// A single space before a word or a symbol joins it; spaces before a line break join the
/// break; a longer run before digits splits in two (the run but its last space, then that
/// space).
#[inline(always)]
fn space_pieces(previous: &Masks, current: &Masks, next: &Masks, next_wordish: u64) -> (u64, u64) {
    let space = current.space;
    let start = space & !preceded(space, previous.space, 1);
    let end = space & !followed(space, next.space);
    let before_newline = followed(current.newline, next.newline);
    let before_punctuation = followed(current.punctuation, next.punctuation);
    let single_joined = start & (next_wordish | before_punctuation);
    let pieces = end & !before_newline & !single_joined;
    let splits = end & !start & followed(current.digit, next.digit);
    (pieces, splits)
}

/// Punctuation masks of one block.
struct Punctuation {
    /// First symbol of each punctuation piece.
    start: u64,
    /// Symbols at position `PUNCTUATION_LONG_FROM` or later in their run.
    long: u64,
    /// Symbols alone before a word, which join the word's piece.
    joined: u64,
}

/// The first symbol of each punctuation piece, symbols deep inside long runs, and symbols
/// that join a word.
///
/// One symbol alone before a word joins the word, unless a space already joined the symbol.
#[inline(always)]
fn punctuation_pieces(
    previous: &Masks,
    current: &Masks,
    next: &Masks,
    next_wordish: u64,
) -> Punctuation {
    let punctuation = current.punctuation;
    let start = punctuation & !preceded(punctuation, previous.punctuation, 1);
    let end = punctuation & !followed(punctuation, next.punctuation);
    let after_space = preceded(current.space, previous.space, 1);
    let joined = start & end & next_wordish & !after_space;
    let mut long = punctuation;
    for n in 1..=PUNCTUATION_LONG_FROM {
        long &= preceded(punctuation, previous.punctuation, n);
    }
    Punctuation {
        start: start & !joined,
        long,
        joined,
    }
}

/// The first line break of each run that is a piece: a run right after punctuation belongs
/// to the punctuation's piece.
#[inline(always)]
fn newline_pieces(previous: &Masks, current: &Masks) -> u64 {
    let newline = current.newline;
    let start = newline & !preceded(newline, previous.newline, 1);
    start & !preceded(current.punctuation, previous.punctuation, 1)
}

/// First digit of each group of up to three: the run's first digit, then every third one.
#[inline(always)]
fn digit_groups(carry: &Carry, current: &Masks) -> u64 {
    let digit = current.digit;
    let previous = carry.masks.digit;
    let run_start = digit & !preceded(digit, previous, 1);
    let continues_three = digit & preceded(digit, previous, 1) & preceded(digit, previous, 2);
    let mut group_start = run_start;
    loop {
        let more = preceded(group_start, carry.digit_group_start, 3) & continues_three;
        if more & !group_start == 0 {
            return group_start;
        }
        group_start |= more;
    }
}
