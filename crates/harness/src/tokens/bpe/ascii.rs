//! The pre-tokenizers of [`split`](super::split) on ASCII text, without the regex engine.
//!
//! On ASCII, the published expressions' Unicode classes are small sets: `\p{L}` the letters,
//! `\p{Lu}` (with `\p{Lt}`, `\p{Lm}`, `\p{Lo}`, `\p{M}`, which hold no ASCII) the capitals,
//! `\p{Ll}` the small letters, `\p{N}` the digits, and `\s` tab, line feed, vertical tab, form
//! feed, carriage return and space. [`piece_end`] walks the alternatives in the expressions'
//! order, each as its leftmost-first match would end, so a piece ends where the regex's would:
//! tests compare the two on every short text over a set of characters that covers each class,
//! and on random ASCII text.
//!
//! Only a text that is ASCII throughout may be split here: a piece's match can look past its
//! first character, and on other text the classes are not these.

/// Which expression to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavour {
    O200k,
    Cl100k,
}

/// Where the piece that starts at `at` ends, for `bytes` ASCII from `at` on
/// (`at < bytes.len()`).
pub(super) fn piece_end(flavour: Flavour, bytes: &[u8], at: usize) -> usize {
    // Only the first byte: checking the whole rest for every piece would make debug builds
    // quadratic in the text's length.
    debug_assert!(at < bytes.len() && bytes[at].is_ascii());
    let main = match flavour {
        Flavour::O200k => o200k_main(bytes, at),
        Flavour::Cl100k => cl100k_main(bytes, at),
    };
    if let Some(end) = main {
        return end;
    }
    // `\s+\s`, giving its last character back, then `\s+`.
    let spaces = run(bytes, at, is_space);
    match spaces {
        0 => bytes.len(),
        1 => at + 1,
        _ => at + spaces - 1,
    }
}

/// Where the piece that starts at `at` ends in a text that is ASCII from `at` up to `limit`,
/// its first byte of another character there, when the ASCII bytes alone decide it; `None`
/// when the characters from `limit` on could change it.
///
/// [`piece_end`] on the ASCII stretch `bytes[..limit]` reads forward from `at` only. Every
/// alternative's runs stop at the first byte outside their class, so an alternative that
/// reads `limit` has either ended there (the piece would end at `limit` or past it, not
/// accepted) or failed there, when a run of whitespace reaching `limit` might have continued
/// with Unicode whitespace (not accepted either). A prefix or a contraction looks at most
/// three bytes past its start, so a piece ending three bytes or more before `limit` read
/// nothing past it. Tests compare this with the regex engine on every short text over a set of
/// ASCII and other characters of each class.
pub(super) fn piece_end_before(
    flavour: Flavour,
    bytes: &[u8],
    at: usize,
    limit: usize,
) -> Option<usize> {
    debug_assert!(at < limit && limit <= bytes.len());
    let stretch = &bytes[..limit];
    let end = piece_end(flavour, stretch, at);
    let spaces_reach_limit = at + run(stretch, at, is_space) == limit;
    (end + 3 <= limit && !spaces_reach_limit).then_some(end)
}

/// o200k_base's main expression: two letter alternatives (the capitals then the small letters,
/// each with an optional prefix and contraction), up to three digits, punctuation, line breaks
/// and trailing whitespace.
fn o200k_main(bytes: &[u8], at: usize) -> Option<usize> {
    // `P?[Lu]*[Ll]+C?`
    let letters = |start: usize| {
        let capitals = start + run(bytes, start, is_upper);
        let small = run(bytes, capitals, is_lower);
        (small > 0).then(|| contraction(bytes, capitals + small))
    };
    // `P?[Lu]+[Ll]*C?`
    let capitals = |start: usize| {
        let capitals = run(bytes, start, is_upper);
        (capitals > 0).then(|| {
            let small = run(bytes, start + capitals, is_lower);
            contraction(bytes, start + capitals + small)
        })
    };
    with_prefix(bytes, at, letters)
        .or_else(|| with_prefix(bytes, at, capitals))
        .or_else(|| digits(bytes, at))
        .or_else(|| punctuation(bytes, at, |b| b == b'\r' || b == b'\n' || b == b'/'))
        .or_else(|| line_breaks(bytes, at))
}

/// cl100k_base's main expression: a contraction, letters with an optional prefix, up to three
/// digits, punctuation, line breaks and trailing whitespace.
fn cl100k_main(bytes: &[u8], at: usize) -> Option<usize> {
    let after = contraction(bytes, at);
    if after > at {
        return Some(after);
    }
    let letters = |start: usize| {
        let letters = run(bytes, start, |b| b.is_ascii_alphabetic());
        (letters > 0).then_some(start + letters)
    };
    with_prefix(bytes, at, letters)
        .or_else(|| digits(bytes, at))
        .or_else(|| punctuation(bytes, at, |b| b == b'\r' || b == b'\n'))
        .or_else(|| line_breaks(bytes, at))
}

/// `[^\r\n\p{L}\p{N}]?` then `rest`: with the prefix first, then without it.
fn with_prefix(bytes: &[u8], at: usize, rest: impl Fn(usize) -> Option<usize>) -> Option<usize> {
    let prefix = bytes[at];
    if prefix != b'\r'
        && prefix != b'\n'
        && !prefix.is_ascii_alphanumeric()
        && at + 1 < bytes.len()
        && let Some(end) = rest(at + 1)
    {
        return Some(end);
    }
    rest(at)
}

/// `\p{N}{1,3}`. Reads at most three bytes: measuring the whole run for every piece of three
/// made a run of `n` digits cost `n²/6` reads.
fn digits(bytes: &[u8], at: usize) -> Option<usize> {
    let digits = bytes[at.min(bytes.len())..]
        .iter()
        .take(3)
        .take_while(|b| b.is_ascii_digit())
        .count();
    (digits > 0).then_some(at + digits)
}

/// ` ?[^\s\p{L}\p{N}]+` then `trailer*`: with the space first, then without it.
fn punctuation(bytes: &[u8], at: usize, trailer: impl Fn(u8) -> bool) -> Option<usize> {
    let marks = |start: usize| {
        let marks = run(bytes, start, is_mark);
        (marks > 0).then(|| start + marks + run(bytes, start + marks, &trailer))
    };
    if bytes[at] == b' '
        && let Some(end) = marks(at + 1)
    {
        return Some(end);
    }
    marks(at)
}

/// `\s*[\r\n]+` (through the last line break of the whitespace), then `\s+$`.
fn line_breaks(bytes: &[u8], at: usize) -> Option<usize> {
    let spaces = run(bytes, at, is_space);
    let whitespace = &bytes[at..at + spaces];
    if let Some(last) = whitespace.iter().rposition(|&b| b == b'\r' || b == b'\n') {
        return Some(at + last + 1);
    }
    (spaces > 0 && at + spaces == bytes.len()).then_some(bytes.len())
}

/// After an optional `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`.
fn contraction(bytes: &[u8], at: usize) -> usize {
    if bytes.get(at) != Some(&b'\'') {
        return at;
    }
    let lower = |offset: usize| bytes.get(at + offset).map(u8::to_ascii_lowercase);
    match (lower(1), lower(2)) {
        (Some(b's' | b't' | b'm' | b'd'), _) => at + 2,
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => at + 3,
        _ => at,
    }
}

/// How many bytes from `at` on satisfy `class`.
fn run(bytes: &[u8], at: usize, class: impl Fn(u8) -> bool) -> usize {
    bytes[at.min(bytes.len())..]
        .iter()
        .position(|&b| !class(b))
        .unwrap_or(bytes.len().saturating_sub(at))
}

fn is_upper(byte: u8) -> bool {
    byte.is_ascii_uppercase()
}

fn is_lower(byte: u8) -> bool {
    byte.is_ascii_lowercase()
}

/// `\s` on ASCII: tab, line feed, vertical tab, form feed, carriage return, space.
fn is_space(byte: u8) -> bool {
    matches!(byte, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

/// `[^\s\p{L}\p{N}]` on ASCII.
fn is_mark(byte: u8) -> bool {
    !is_space(byte) && !byte.is_ascii_alphanumeric()
}
