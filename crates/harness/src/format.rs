//! Small, deterministic text formatting shared by errors and traces.
//!
//! ```
//! use ctxbed_harness::format::{duration, snippet};
//! assert_eq!(duration(std::time::Duration::from_millis(5_000)), "5s");
//! assert_eq!(duration(std::time::Duration::from_millis(1_250)), "1.250s");
//! assert_eq!(snippet("abcdef", 4), "abc…");
//! ```

use std::time::Duration;

/// A JSON value's compact text: the same bytes as its `Display` (`value.to_string()`), written
/// straight into a buffer instead of through a formatter, which costs about twice as much (and
/// not checked again as UTF-8 afterwards, which `serde_json::to_string` knows it is).
pub fn json_text(value: &serde_json::Value) -> String {
    // A `Value`'s map keys are strings and a `String` never fails a write.
    serde_json::to_string(value).expect("a JSON value always serialises")
}

/// A duration as `Nms`, `Ns` or `N.mmms`; never a raw float.
pub fn duration(value: Duration) -> String {
    let millis = value.as_millis();
    if millis < 1_000 {
        format!("{millis}ms")
    } else if millis.is_multiple_of(1_000) {
        format!("{}s", millis / 1_000)
    } else {
        format!("{}.{:03}s", millis / 1_000, millis % 1_000)
    }
}

/// At most `max_chars` characters, with `…` marking a cut; control characters and
/// [unusual characters](unusual_character) (bidi controls, zero-width characters…) escaped, so a
/// trace line shows what the text is, not what it would display as.
pub fn snippet(text: &str, max_chars: usize) -> String {
    // Escapes only as far as the bound: the text may be megabytes, the snippet is a line.
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    let mut written = 0;
    // Byte length of `out` after its first `max_chars - 1` characters: where a cut goes (0 when
    // `max_chars` is 0 or 1).
    let mut cut_at = 0;
    for c in text.chars() {
        let escape = needs_escape(c);
        let mut push = |shown: char| {
            if written + 1 == max_chars {
                cut_at = out.len();
            }
            written += 1;
            if written <= max_chars {
                out.push(shown);
            }
        };
        if escape {
            c.escape_default().for_each(&mut push);
        } else {
            push(c);
        }
        if written > max_chars {
            out.truncate(cut_at);
            out.push('…');
            return out;
        }
    }
    out
}

/// True for characters a snippet shows escaped: control and unusual characters.
fn needs_escape(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    c.is_control() || unusual_character(c).is_some()
}

/// A quoted, escaped, bounded rendering of text for one trace line.
pub fn quoted(text: &str, max_chars: usize) -> String {
    let inner = snippet(text, max_chars).replace('"', "\\\"");
    format!("\"{inner}\"")
}

/// Invisible, direction-changing or look-alike code points. Each range is inclusive and named
/// for error messages.
const UNUSUAL_CHARACTERS: &[(char, char, &str)] = &[
    ('\u{00A0}', '\u{00A0}', "a no-break space"),
    ('\u{00AD}', '\u{00AD}', "a soft hyphen"),
    ('\u{034F}', '\u{034F}', "a combining grapheme joiner"),
    ('\u{061C}', '\u{061C}', "a bidi control"),
    ('\u{115F}', '\u{1160}', "an invisible filler"),
    ('\u{180E}', '\u{180E}', "an invisible separator"),
    ('\u{2000}', '\u{200A}', "an unusual space"),
    ('\u{200B}', '\u{200D}', "a zero-width character"),
    ('\u{200E}', '\u{200F}', "a bidi control"),
    ('\u{2028}', '\u{2029}', "a line or paragraph separator"),
    ('\u{202A}', '\u{202E}', "a bidi control"),
    ('\u{202F}', '\u{202F}', "an unusual space"),
    ('\u{205F}', '\u{205F}', "an unusual space"),
    ('\u{2060}', '\u{2064}', "an invisible formatting character"),
    ('\u{2066}', '\u{2069}', "a bidi control"),
    ('\u{206A}', '\u{206F}', "an invisible formatting character"),
    ('\u{3000}', '\u{3000}', "an unusual space"),
    ('\u{3164}', '\u{3164}', "an invisible filler"),
    ('\u{FE00}', '\u{FE0F}', "a variation selector"),
    ('\u{FEFF}', '\u{FEFF}', "a zero-width no-break space"),
    ('\u{FFA0}', '\u{FFA0}', "an invisible filler"),
    (
        '\u{FFF9}',
        '\u{FFFB}',
        "an interlinear annotation character",
    ),
    ('\u{FFFC}', '\u{FFFD}', "a replacement character"),
    ('\u{E0000}', '\u{E007F}', "a tag character"),
];

/// What kind of unusual character `c` is ("a bidi control", "a zero-width character", …), if
/// it is one: a character that makes text display differently from what it is. Workspace paths
/// refuse them and snippets escape them.
pub fn unusual_character(c: char) -> Option<&'static str> {
    UNUSUAL_CHARACTERS
        .iter()
        .find(|(first, last, _)| (*first..=*last).contains(&c))
        .map(|(_, _, kind)| *kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_escapes_and_bounds() {
        assert_eq!(snippet("a\nb", 10), "a\\nb");
        assert_eq!(snippet("héllo", 5), "héllo");
        assert_eq!(snippet("héllo!", 5), "héll…");
        assert_eq!(quoted("say \"hi\"", 20), "\"say \\\"hi\\\"\"");
        assert_eq!(snippet("a\u{202e}b\u{200b}c", 40), "a\\u{202e}b\\u{200b}c");
        assert_eq!(snippet("报告 ok", 40), "报告 ok");
    }

    /// The rule `snippet` follows, written the plain way: escape everything, then cut.
    fn snippet_by_rule(text: &str, max_chars: usize) -> String {
        let escaped: String = text
            .chars()
            .flat_map(|c| {
                let escape = c.is_control() || unusual_character(c).is_some();
                let shown: Vec<char> = if escape {
                    c.escape_default().collect()
                } else {
                    vec![c]
                };
                shown
            })
            .collect();
        if escaped.chars().count() <= max_chars {
            return escaped;
        }
        let mut cut: String = escaped.chars().take(max_chars.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }

    #[test]
    fn snippet_cuts_where_the_rule_does() {
        for text in [
            "",
            "a",
            "ab",
            "\n",
            "a\nb",
            "\u{202e}",
            "报告\t",
            "x\u{200b}\u{200b}y",
        ] {
            for max in 0..12 {
                assert_eq!(
                    snippet(text, max),
                    snippet_by_rule(text, max),
                    "{text:?} at {max}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn snippet_matches_the_rule(text in "(\\PC|\\n|\\t|\u{202e}|\u{200b}|\u{7f}|\u{85}){0,40}", max in 0usize..48) {
            proptest::prop_assert_eq!(snippet(&text, max), snippet_by_rule(&text, max));
        }
    }

    #[test]
    fn durations_are_integers() {
        assert_eq!(duration(Duration::ZERO), "0ms");
        assert_eq!(duration(Duration::from_secs(600)), "600s");
    }
}
