//! The pre-tokenizers' pieces over runs of CJK ideographs, without the regex engine.
//!
//! Chinese text is long runs of ideographs between punctuation marks, and a run is one piece
//! in both expressions: an ideograph is `\p{Lo}`, which the letter alternatives of both take
//! as many of as there are (o200k_base's as a letter of either case), with at most one
//! character before it that is no letter, number or line break. [`piece_end`] ends such a
//! piece where the regex would, and only when what follows the run cannot extend it: the end
//! of the text, ASCII that is no letter, digit or apostrophe (which could begin a
//! contraction), or a CJK punctuation mark. Anything else is left to the regex engine. Tests
//! compare the two on every short text over a set of characters that covers each class.

/// Whether `c` is a CJK unified ideograph assigned since Unicode 11 (all `\p{Lo}`).
fn is_ideograph(c: char) -> bool {
    ('\u{4E00}'..='\u{9FEF}').contains(&c)
}

/// CJK punctuation marks: no letter, number, mark or space.
fn is_cjk_punctuation(c: char) -> bool {
    matches!(
        c,
        '\u{3001}' | '\u{3002}' | '\u{300C}'
            ..='\u{300F}' | '\u{FF01}' | '\u{FF0C}' | '\u{FF1A}' | '\u{FF1B}' | '\u{FF1F}'
    )
}

/// Whether `c` may stand before a run of letters in the same piece: `[^\r\n\p{L}\p{N}]`,
/// here only where that is known without tables.
fn is_prefix(c: char) -> bool {
    (c.is_ascii() && !c.is_ascii_alphanumeric() && c != '\r' && c != '\n') || is_cjk_punctuation(c)
}

/// Whether `c`, following a run of ideographs, ends its piece in both expressions.
fn ends_run(c: char) -> bool {
    (c.is_ascii() && !c.is_ascii_alphanumeric() && c != '\'') || is_cjk_punctuation(c)
}

/// Where the piece that starts at `at` ends, when it is a run of ideographs (after at most one
/// prefix character) that nothing after it could extend; `None` leaves it to the regex.
pub(super) fn piece_end(text: &str, at: usize) -> Option<usize> {
    let rest = text.get(at..)?;
    let mut chars = rest.char_indices();
    let (_, first) = chars.next()?;
    if !is_ideograph(first) {
        let (_, second) = chars.next()?;
        if !(is_prefix(first) && is_ideograph(second)) {
            return None;
        }
    }
    for (offset, c) in chars {
        if !is_ideograph(c) {
            return ends_run(c).then_some(at + offset);
        }
    }
    Some(text.len())
}
