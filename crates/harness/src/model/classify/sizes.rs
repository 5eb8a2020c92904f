//! The sizes an overflow message reports: the tokens the provider counted and its limit.
//!
//! Read by shape, in this order: the vendor fields (`n_prompt_tokens`, `n_ctx`); a comparison
//! between numbers (`N tokens > M maximum`, `N + K > M`, `(K > M - N)`, `n_keep (N) >= n_ctx
//! (M)`); a range (`should be [1, M]`); and otherwise each number by the words just before it
//! (`maximum context length is M`, `allowed (M)`, `limit of M`, `resulted in N`, `requested
//! about N`, `Given: N`, `for a total of N`). The actual size is what the provider compared with
//! its limit: the input, or the input plus the requested output when the provider counts both
//! (`N + K is greater than M`, `N input tokens plus K 'max_tokens'`). A number in another unit
//! (`314572800 bytes`, `8000 pixels`) or an excess (`exceeded ... by N tokens`) is no size.

/// What a message says about sizes; either part may be missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Reported {
    pub(super) actual: Option<u64>,
    pub(super) max: Option<u64>,
    /// The message states a bound between numbers: a comparison (`N > M`) or a range
    /// (`[1, M]`).
    pub(super) bounded: bool,
}

/// The sizes in `message` (lower-cased), preferring the vendor fields found in `body`.
pub(super) fn reported(message: &str, body: &str) -> Reported {
    let actual = field(body, "n_prompt_tokens");
    let max = field(body, "n_ctx");
    if actual.is_some() || max.is_some() {
        return Reported {
            actual,
            max,
            bounded: false,
        };
    }
    let numbers = numbers(message);
    comparison(message, &numbers).unwrap_or_else(|| by_cues(message, &numbers))
}

/// A number standing alone in the text (not part of `gpt-4`, `messages.22`, `3.5` or an id).
#[derive(Debug, Clone, Copy)]
struct Number {
    value: u64,
    start: usize,
    end: usize,
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Every standalone number, with `20,000` read as twenty thousand.
fn numbers(text: &str) -> Vec<Number> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        let start = at;
        let mut end = at;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        while bytes.get(end) == Some(&b',')
            && bytes
                .get(end + 1..end + 4)
                .is_some_and(|g| g.iter().all(u8::is_ascii_digit))
            && !bytes.get(end + 4).is_some_and(u8::is_ascii_digit)
        {
            end += 4;
        }
        let glued_before = start > 0
            && (is_word_byte(bytes[start - 1])
                || (matches!(bytes[start - 1], b'.' | b'-')
                    && start > 1
                    && bytes[start - 2].is_ascii_alphanumeric()));
        let glued_after = bytes.get(end).is_some_and(|&b| is_word_byte(b))
            || (bytes.get(end) == Some(&b'.')
                && bytes.get(end + 1).is_some_and(u8::is_ascii_digit));
        if !glued_before && !glued_after && !other_unit(&text[end..]) {
            let digits: String = text[start..end]
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            if let Ok(value) = digits.parse() {
                found.push(Number { value, start, end });
            }
        }
        at = end;
        while at < bytes.len() && is_word_byte(bytes[at]) {
            at += 1;
        }
    }
    found
}

/// Units a message may count in besides tokens; a number in one of them is no token count.
const OTHER_UNITS: &[&str] = &[
    "bytes",
    "byte",
    "kb",
    "mb",
    "gb",
    "kib",
    "mib",
    "pixels",
    "px",
    "characters",
    "chars",
    "image",
    "images",
    "pages",
];

/// Whether the word right after a number is another unit than tokens.
fn other_unit(after: &str) -> bool {
    let word: String = after
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    OTHER_UNITS.contains(&word.as_str())
}

/// `N > M` between two neighbouring numbers, with `A + N > M` and `N > M - B` summed.
fn comparison(text: &str, numbers: &[Number]) -> Option<Reported> {
    for (at, pair) in numbers.windows(2).enumerate() {
        let (left, right) = (pair[0], pair[1]);
        let between = &text[left.end..right.start];
        if between.len() > 24
            || between.contains('<')
            || !(between.contains('>') || between.contains('≥'))
        {
            continue;
        }
        let mut actual = left.value;
        if let Some(before) = at.checked_sub(1).map(|i| numbers[i])
            && text[before.end..left.start].trim() == "+"
        {
            actual = actual.saturating_add(before.value);
        }
        if let Some(after) = numbers.get(at + 2)
            && text[right.end..after.start].trim() == "-"
        {
            actual = actual.saturating_add(after.value);
        }
        return Some(Reported {
            actual: Some(actual),
            max: Some(right.value),
            bounded: true,
        });
    }
    None
}

/// What the words before a number say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The limit: `maximum context length is`, `allowed (`, `limit of`, `exceeds`.
    Max,
    /// The size counted: `resulted in`, `requested`, `contains`, `Given:`.
    Actual,
    /// A total of the parts, preferred to any other actual size: `for a total of`.
    Total,
}

/// Words that name the limit for the number that follows.
const MAX_CUES: &[&str] = &[
    "maximum",
    "max",
    "limit",
    "allowed",
    "exceed",
    "exceeds",
    "exceeded",
    "up to",
    "less than",
    "longer than",
    "greater than",
    "larger than",
    "only",
    "supports",
    "context length",
    "context size",
    "context window",
    "model length",
    "n_ctx",
    "<=",
];

/// Words that name the counted size for the number that follows.
const ACTUAL_CUES: &[&str] = &[
    "requested",
    "resulted in",
    "contains",
    "received",
    "given",
    "count",
    "has",
    "n_keep",
    "keep the first",
    "too long",
    "input tokens",
    "prompt tokens",
];

/// Nouns that, right before a number, name what was counted: `length (N`, `request (N`.
const SUBJECT_CUES: &[&str] = &["length", "request", "prompt", "input"];

/// How far before a number its cue may stand (bytes), and for a bare subject noun.
const CUE_REACH: usize = 48;
const SUBJECT_REACH: usize = 12;

/// Each number by its cue: the first limit, and the first size counted (a total wins).
fn by_cues(text: &str, numbers: &[Number]) -> Reported {
    let mut reported = Reported::default();
    let mut total = false;
    let mut range_end = 0;
    for (at, number) in numbers.iter().enumerate() {
        if number.start < range_end {
            continue;
        }
        if let Some(upper) = range(text, numbers, at) {
            reported.max = reported.max.or(Some(upper.value));
            reported.bounded = true;
            range_end = upper.end;
            continue;
        }
        let previous_end = at.checked_sub(1).map_or(0, |i| numbers[i].end);
        let before = &text[previous_end..number.start];
        // `exceeded ... by N tokens`: a difference, neither the size nor the limit.
        if before.trim_end().ends_with(" by") {
            continue;
        }
        match role(before) {
            Some(Role::Max) => reported.max = reported.max.or(Some(number.value)),
            Some(Role::Total) => {
                reported.actual = Some(number.value);
                total = true;
            }
            Some(Role::Actual) if reported.actual.is_none() && !total => {
                let output = output_part(text, numbers, at).unwrap_or(0);
                reported.actual = Some(number.value.saturating_add(output));
            }
            _ => {}
        }
    }
    reported
}

/// The upper end of a range `[A, M]` starting at `numbers[at]`.
fn range(text: &str, numbers: &[Number], at: usize) -> Option<Number> {
    let (low, high) = (numbers[at], *numbers.get(at + 1)?);
    let opens = text[..low.start].trim_end().ends_with('[');
    let joined = text[low.end..high.start].trim() == ",";
    let closes = text[high.end..].trim_start().starts_with(']');
    (opens && joined && closes).then_some(high)
}

/// What is added to a counted size: `N + K`, or the requested output in `N inputs tokens and K
/// max_new_tokens`, `N input tokens plus K 'max_tokens'`.
fn output_part(text: &str, numbers: &[Number], at: usize) -> Option<u64> {
    let next = numbers.get(at + 1)?;
    let gap = &text[numbers[at].end..next.start];
    if gap.trim() == "+" {
        return Some(next.value);
    }
    let after = tail(&text[next.end..], 24);
    let output = ["max_new_tokens", "max_tokens", "output"]
        .iter()
        .any(|marker| after.contains(marker));
    let joined = gap.contains(" and ") || gap.contains(" plus ");
    (gap.len() <= 32 && joined && output).then_some(next.value)
}

/// The role the words just before a number give it: the last cue wins; a bare subject noun
/// counts only right before the number and only when no other cue is there.
fn role(before: &str) -> Option<Role> {
    let near = last(before, CUE_REACH);
    let max = last_cue(near, MAX_CUES);
    let actual = last_cue(near, ACTUAL_CUES);
    let total = last_cue(near, &["total"]);
    let best = [
        (max, Role::Max),
        (actual, Role::Actual),
        (total, Role::Total),
    ]
    .into_iter()
    .filter_map(|(at, role)| at.map(|at| (at, role)))
    .max_by_key(|(at, _)| *at);
    match best {
        Some((_, role)) => Some(role),
        None => last_cue(last(before, SUBJECT_REACH), SUBJECT_CUES).map(|_| Role::Actual),
    }
}

/// A byte that continues a word or a name: `max` in `qwen-max-latest` or `max_tokens` is no cue.
fn is_name_byte(byte: u8) -> bool {
    is_word_byte(byte) || matches!(byte, b'-' | b'.' | b'/')
}

/// Where the last whole-word occurrence of one of `cues` ends in `text`.
fn last_cue(text: &str, cues: &[&str]) -> Option<usize> {
    let bytes = text.as_bytes();
    cues.iter()
        .flat_map(|cue| text.match_indices(cue))
        .filter(|(at, cue)| {
            let end = at + cue.len();
            let symbol = !cue.as_bytes()[0].is_ascii_alphanumeric();
            symbol
                || ((*at == 0 || !is_name_byte(bytes[at - 1]))
                    && bytes.get(end).is_none_or(|&b| !is_name_byte(b)))
        })
        .map(|(at, cue)| at + cue.len())
        .max()
}

/// The last `reach` bytes of `text` (fewer, to stay on a character boundary).
fn last(text: &str, reach: usize) -> &str {
    let mut from = text.len().saturating_sub(reach);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    &text[from..]
}

/// The first `reach` bytes of `text` (fewer, to stay on a character boundary).
fn tail(text: &str, reach: usize) -> &str {
    let mut to = reach.min(text.len());
    while !text.is_char_boundary(to) {
        to -= 1;
    }
    &text[..to]
}

/// A vendor's numeric field, quoted as a key, in a JSON body or its printed form:
/// `"n_ctx": 8192`, `'n_ctx': 8192` (not the words `n_ctx: 4096` of a message).
fn field(body: &str, name: &str) -> Option<u64> {
    body.match_indices(name).find_map(|(at, _)| {
        if !body[..at].ends_with(['"', '\'']) {
            return None;
        }
        let rest = &body[at + name.len()..];
        let value = rest.trim_start_matches(['"', '\'', ':', '=', ' ']);
        if rest.len() - value.len() > 4 || !rest.starts_with(['"', '\'', ':', '=']) {
            return None;
        }
        let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(message: &str) -> (Option<u64>, Option<u64>) {
        let reported = reported(&message.to_lowercase(), "");
        (reported.actual, reported.max)
    }

    #[test]
    fn comparisons_and_sums() {
        assert_eq!(
            sizes("prompt is too long: 219898 tokens > 200000 maximum"),
            (Some(219_898), Some(200_000))
        );
        assert_eq!(
            sizes("exceed context limit: 199759 + 8192 > 200000, decrease input length"),
            (Some(207_951), Some(200_000))
        );
        assert_eq!(
            sizes("request has 24235 input tokens (64000 > 64001 - 24235)"),
            (Some(88_235), Some(64_001))
        );
        assert_eq!(
            sizes("Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)"),
            (Some(15_028), Some(7_424))
        );
    }

    #[test]
    fn cues_name_the_limit_and_the_count() {
        assert_eq!(
            sizes(
                "This model's maximum prompt length is 131072 but the request contains 136973 tokens."
            ),
            (Some(136_973), Some(131_072))
        );
        assert_eq!(
            sizes(
                "The input token count (134123) exceeds the maximum number of tokens allowed (131072)."
            ),
            (Some(134_123), Some(131_072))
        );
        assert_eq!(
            sizes(
                "maximum context length is 262144 tokens. However, you requested 128000 output tokens and your prompt contains at least 134145 input tokens, for a total of at least 262145 tokens"
            ),
            (Some(262_145), Some(262_144))
        );
        assert_eq!(
            sizes(
                "`inputs` tokens + `max_new_tokens` must be <= 2048. Given: 1244 `inputs` tokens and 1000 `max_new_tokens`"
            ),
            (Some(2_244), Some(2_048))
        );
        assert_eq!(
            sizes(
                "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]"
            ),
            (None, Some(30_720))
        );
        assert_eq!(
            sizes("limit of 20,000 input tokens; gpt-4 and messages.22 and 3.5 are no sizes"),
            (None, Some(20_000))
        );
        assert_eq!(
            sizes(
                "failed to invoke model qwen-max-latest, status code: 400, message: Range of input length should be [1, 30720]"
            ),
            (None, Some(30_720))
        );
    }

    #[test]
    fn sums_units_and_excess() {
        assert_eq!(
            sizes("ValueError: Request length 71599 + 2048 is greater than max_seq_len 65536"),
            (Some(73_647), Some(65_536))
        );
        assert_eq!(
            sizes(
                "maximum context length is 2048 tokens. However, your request has 8 input tokens plus 2045 'max_tokens'."
            ),
            (Some(2_053), Some(2_048))
        );
        assert_eq!(
            sizes("Request payload size exceeds the limit: 314572800 bytes."),
            (None, None)
        );
        assert_eq!(
            sizes("prompt too long; exceeded max context length by 540451 tokens"),
            (None, None)
        );
        assert_eq!(
            sizes("number of input tokens (204703) has exceeded max_prompt_tokens (202752) limit."),
            (Some(204_703), Some(202_752))
        );
    }

    #[test]
    fn vendor_fields_come_first() {
        let body = r#"{"error":{"type":"exceed_context_size_error","n_prompt_tokens": 14429,"n_ctx":8192}}"#;
        assert_eq!(
            reported("request (1 tokens) exceeds (2 tokens)", body),
            Reported {
                actual: Some(14_429),
                max: Some(8_192),
                bounded: false,
            }
        );
        assert_eq!(field("'n_ctx': 25088}", "n_ctx"), Some(25_088));
        assert_eq!(field("'n_ctx_slot': 5", "n_ctx"), None);
        assert_eq!(field("(n_keep: 13055>= n_ctx: 4096)", "n_ctx"), None);
    }

    #[test]
    fn odd_text_does_not_panic() {
        for text in [
            "",
            ">",
            "1 >",
            "> 2",
            "[1, ]",
            "é1 > 2é",
            "99999999999999999999999 > 1",
            "1,00",
        ] {
            let _ = sizes(text);
            let _ = reported(text, text);
        }
    }
}
