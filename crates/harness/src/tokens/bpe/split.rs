//! The pre-tokenizers of o200k_base and cl100k_base: the regular expressions tiktoken
//! publishes for them, which split a text into the pieces byte-pair merging works on.
//!
//! Both published expressions end in `\s+(?!\S)` — whitespace not followed by a non-space —
//! and the regex engine here has no look-ahead. So that alternative becomes two patterns: the
//! look-ahead pattern `\s+\s`, whose match gives back its last character (the one the
//! look-ahead would only have peeked at), and `\s+` for what remains. A piece starts where the
//! previous one ended and is the first pattern's match anchored there.
//!
//! A text that is ASCII throughout is split by [`ascii`](super::ascii) instead, which ends
//! every piece where the expressions would, at a fraction of the regex engine's cost. In other
//! text, a piece inside an ASCII stretch that the stretch alone decides is ended the same way,
//! and a run of CJK ideographs by [`ideographs`](super::ideographs); the regex engine ends the
//! rest.

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

use super::ascii::{self, Flavour};
use super::ideographs;

/// o200k_base's expression without its look-ahead alternative.
const O200K_MAIN: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+$",
);

/// cl100k_base's expression without its look-ahead alternative.
const CL100K_MAIN: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)",
    r"|[^\r\n\p{L}\p{N}]?\p{L}+",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"|\s*[\r\n]+",
    r"|\s+$",
);

/// Whitespace followed by whitespace: the match minus its last character is `\s+(?!\S)`.
const LOOK_AHEAD: &str = r"\s+\s";

/// Whitespace, when nothing before matched.
const WHITESPACE: &str = r"\s+";

/// The index of [`LOOK_AHEAD`] among the patterns.
const LOOK_AHEAD_PATTERN: usize = 1;

/// A vocabulary's pre-tokenizer.
pub(super) struct Splitter {
    regex: Regex,
    flavour: Flavour,
}

impl Splitter {
    pub(super) fn o200k() -> Self {
        Self::new(O200K_MAIN, Flavour::O200k)
    }

    pub(super) fn cl100k() -> Self {
        Self::new(CL100K_MAIN, Flavour::Cl100k)
    }

    fn new(main: &str, flavour: Flavour) -> Self {
        let regex = Regex::new_many(&[main, LOOK_AHEAD, WHITESPACE])
            .expect("the pre-tokenizer expressions are valid");
        Splitter { regex, flavour }
    }

    /// The pieces of `text`, in order; together they are `text`.
    pub(super) fn split<'t>(&'t self, text: &'t str) -> Pieces<'t> {
        Pieces {
            splitter: self,
            by_hand: true,
            text,
            at: 0,
            next_other: None,
        }
    }

    /// Splits with the regex engine whatever the text (for tests of the other paths).
    #[cfg(test)]
    pub(super) fn split_by_regex<'t>(&'t self, text: &'t str) -> Pieces<'t> {
        Pieces {
            by_hand: false,
            ..self.split(text)
        }
    }
}

/// The pieces of one text.
pub(super) struct Pieces<'t> {
    splitter: &'t Splitter,
    /// ASCII stretches are split by [`ascii`] and runs of ideographs by [`ideographs`] where
    /// those decide the piece (off only in tests).
    by_hand: bool,
    text: &'t str,
    at: usize,
    /// The first byte at or after some earlier start that is not ASCII (the text's length
    /// when none is), once looked for.
    next_other: Option<usize>,
}

impl Pieces<'_> {
    /// Where the piece at `start` ends, when the ASCII or ideograph path decides it (always,
    /// when the rest of the text is ASCII).
    fn piece_end_by_hand(&mut self, start: usize) -> Option<usize> {
        let bytes = self.text.as_bytes();
        let next_other = match self.next_other.filter(|&known| known >= start) {
            Some(known) => known,
            None => {
                let found = bytes[start..]
                    .iter()
                    .position(|b| !b.is_ascii())
                    .map_or(bytes.len(), |offset| start + offset);
                self.next_other = Some(found);
                found
            }
        };
        if next_other == bytes.len() {
            return Some(ascii::piece_end(self.splitter.flavour, bytes, start));
        }
        if next_other > start
            && let Some(end) =
                ascii::piece_end_before(self.splitter.flavour, bytes, start, next_other)
        {
            return Some(end);
        }
        // A run of ideographs, perhaps after an ASCII prefix (a quote, a space).
        ideographs::piece_end(self.text, start)
    }
}

impl<'t> Iterator for Pieces<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        let rest = &self.text[self.at..];
        if rest.is_empty() {
            return None;
        }
        let start = self.at;
        if self.by_hand
            && let Some(end) = self.piece_end_by_hand(start)
        {
            self.at = end;
            return Some(&self.text[start..end]);
        }
        let end = match self
            .splitter
            .regex
            .find(Input::new(rest).anchored(Anchored::Yes))
        {
            Some(found) if found.pattern().as_usize() == LOOK_AHEAD_PATTERN => {
                let matched = &rest[..found.end()];
                // `\s+\s` matches two characters at least, so one is left after giving one back.
                let peeked = matched.chars().next_back().map_or(0, char::len_utf8);
                start + found.end() - peeked
            }
            Some(found) if found.end() > 0 => start + found.end(),
            // Every character is matched by some alternative; should one not be, the rest of
            // the text is one piece, so every byte is still counted.
            _ => self.text.len(),
        };
        self.at = end;
        Some(&self.text[start..end])
    }
}
