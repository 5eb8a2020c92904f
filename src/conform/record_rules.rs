//! The wire rules that need no scenario, checked over the record `ctxbed serve --record`
//! writes (`ctxbed violations RECORD`): `window`, `pairing`, `system` and `duplicate_result` on
//! each request the mock accepted, and `count_tokens` over the whole record.
//!
//! A record has no steps, so the rules that need them (`input`, `overflow_retry`,
//! `model_called`, `reply`, `budget`) and `api` (the record does not say which API the mock
//! imitates) are `conform`'s alone. The rules are the ones [`super::checks`] applies, called
//! from there: nothing is computed twice.

use std::io::{BufRead, Read as _};

use serde_json::Value;

use super::checks::{Violation, request_invariants};
use ctxbed_sim::host::{Api, anthropic, is_count_tokens, openai, responses};

/// The rules a record can be checked for, in the order violations are reported.
pub const RECORD_RULES: [&str; 5] = [
    "window",
    "pairing",
    "system",
    "duplicate_result",
    "count_tokens",
];

/// The longest record line read (a served body is capped well below this).
pub const RECORD_LINE_BYTES_MAX: u64 = 128 * 1024 * 1024;

/// A broken rule found in a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordViolation {
    pub rule: String,
    /// The request's number in the record (`n`); `None` for the record as a whole.
    pub request: Option<u64>,
    /// The model that answered it (empty for the record as a whole).
    pub model: String,
    pub detail: String,
}

/// Why a record cannot be checked.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(
        "unknown rule `{name}`: a record can be checked for {} (the others need a wire scenario's steps: run it with ctxbed conform)",
        RECORD_RULES.join(", ")
    )]
    UnknownRule { name: String },
    #[error(
        "{path}:{line}: {problem}; each line is one JSON object as `ctxbed serve --record` writes it"
    )]
    Line {
        path: String,
        line: usize,
        problem: String,
    },
    #[error("cannot read the record {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// The rules to check: `names` (each one of [`RECORD_RULES`]) or, when empty, all of them.
///
/// # Errors
/// [`RecordError::UnknownRule`] for a name that is not a record rule.
pub fn chosen_rules(names: &[String]) -> Result<Vec<&'static str>, RecordError> {
    if names.is_empty() {
        return Ok(RECORD_RULES.to_vec());
    }
    let mut chosen = Vec::new();
    for name in names {
        let Some(rule) = RECORD_RULES.iter().find(|r| **r == name.as_str()) else {
            return Err(RecordError::UnknownRule { name: name.clone() });
        };
        if !chosen.contains(rule) {
            chosen.push(*rule);
        }
    }
    Ok(chosen)
}

/// What checking a record found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordCheck {
    /// The broken rules, in record order; the `count_tokens` verdict last.
    pub violations: Vec<RecordViolation>,
    /// The last line, when it was torn and so skipped.
    pub torn: Option<TornLine>,
}

/// A last line that stops short of a whole record line: what a server killed in the middle of
/// a write (`kill -9`) leaves at the end of its record. It holds no request to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornLine {
    /// The record, as named.
    pub path: String,
    /// Its line number, from 1.
    pub line: usize,
    /// How many bytes of the line were written.
    pub bytes: usize,
}

impl std::fmt::Display for TornLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: the last line is torn ({} bytes of a record line, as a server killed while writing leaves it); skipped, the lines before it are checked",
            self.path, self.line, self.bytes
        )
    }
}

/// Violations and counts gathered over the record's lines.
#[derive(Default)]
struct Tally {
    found: Vec<RecordViolation>,
    requests: usize,
    count_tokens: usize,
}

/// Checks every line of the record read from `reader` (named `path` in errors) for `rules`,
/// in record order; the `count_tokens` verdict comes last. A last line that stops short of a
/// whole JSON object (a torn write) is skipped and reported in [`RecordCheck::torn`].
///
/// # Errors
/// A line that is not a record line (with its number and what is wrong) and is not a torn last
/// line, or a read error.
pub fn check_record(
    reader: impl BufRead,
    path: &str,
    rules: &[&str],
) -> Result<RecordCheck, RecordError> {
    let mut lines = Lines {
        reader,
        path,
        number: 0,
        line: Vec::new(),
    };
    let mut tally = Tally::default();
    // A line that is not JSON because it stops short: torn if no line follows it.
    let mut cut_short: Option<(usize, String, usize)> = None;
    while lines.advance()? {
        if let Some((number, problem, _)) = cut_short.take() {
            return Err(lines.error(number, problem));
        }
        let text = lines.line.trim_ascii_end();
        let value: Value = match serde_json::from_slice(text) {
            Ok(value) => value,
            Err(error) if error.is_eof() => {
                let written = lines.line.strip_suffix(b"\n").unwrap_or(&lines.line).len();
                cut_short = Some((lines.number, format!("not JSON ({error})"), written));
                continue;
            }
            Err(error) => return Err(lines.error(lines.number, format!("not JSON ({error})"))),
        };
        let entry =
            RecordLine::read(&value).map_err(|problem| lines.error(lines.number, problem))?;
        tally.add(&entry, rules);
    }
    let torn = cut_short.map(|(line, _, bytes)| TornLine {
        path: path.to_string(),
        line,
        bytes,
    });
    Ok(RecordCheck {
        violations: tally.finish(rules),
        torn,
    })
}

/// A record's lines, read one at a time.
struct Lines<'p, R> {
    reader: R,
    path: &'p str,
    /// The number of the line in `line`, from 1.
    number: usize,
    line: Vec<u8>,
}

impl<R: BufRead> Lines<'_, R> {
    /// Reads the next line that is not blank; false at the end of the record.
    fn advance(&mut self) -> Result<bool, RecordError> {
        loop {
            self.line.clear();
            self.number += 1;
            // `take` is Read's; through `by_ref` each line's limit leaves the reader usable.
            let read = std::io::Read::by_ref(&mut self.reader)
                .take(RECORD_LINE_BYTES_MAX + 1)
                .read_until(b'\n', &mut self.line)
                .map_err(|source| RecordError::Io {
                    path: self.path.to_string(),
                    source,
                })?;
            if read == 0 {
                return Ok(false);
            }
            if read as u64 > RECORD_LINE_BYTES_MAX {
                let problem = format!("the line is longer than {RECORD_LINE_BYTES_MAX} bytes");
                return Err(self.error(self.number, problem));
            }
            if !self.line.iter().all(u8::is_ascii_whitespace) {
                return Ok(true);
            }
        }
    }

    fn error(&self, line: usize, problem: String) -> RecordError {
        RecordError::Line {
            path: self.path.to_string(),
            line,
            problem,
        }
    }
}

impl Tally {
    fn add(&mut self, entry: &RecordLine<'_>, rules: &[&str]) {
        match entry.outcome {
            "count_tokens" => self.count_tokens += 1,
            // The provider refused these before reading them as a request.
            "not_json" | "invalid_request" => {}
            _ => {
                self.requests += 1;
                self.found.extend(entry.violations(rules));
            }
        }
    }

    /// The violations, then the `count_tokens` verdict over the whole record.
    fn finish(mut self, rules: &[&str]) -> Vec<RecordViolation> {
        let (requests, count_tokens) = (self.requests, self.count_tokens);
        if rules.contains(&"count_tokens") && count_tokens > requests.max(1) {
            self.found.push(RecordViolation {
                rule: "count_tokens".into(),
                request: None,
                model: String::new(),
                detail: format!(
                    "{count_tokens} count_tokens calls for {requests} request(s) sent; at most one per request"
                ),
            });
        }
        self.found
    }
}

/// The fields of one record line the rules read.
struct RecordLine<'a> {
    number: u64,
    model: &'a str,
    window: Option<u64>,
    api: Api,
    input_tokens: u64,
    outcome: &'a str,
    body: &'a Value,
}

impl<'a> RecordLine<'a> {
    fn read(value: &'a Value) -> Result<Self, String> {
        let field = |name: &str| value.get(name).ok_or_else(|| format!("no `{name}` field"));
        let number = field("n")?.as_u64().ok_or("`n` is not a whole number")?;
        let model = field("model")?.as_str().ok_or("`model` is not a string")?;
        let window = match field("window")? {
            Value::Null => None,
            other => Some(
                other
                    .as_u64()
                    .ok_or("`window` is not a whole number or null")?,
            ),
        };
        let api = field("api")?
            .as_str()
            .and_then(Api::parse)
            .ok_or("`api` is not \"openai\", \"anthropic\" or \"responses\"")?;
        let path = field("path")?.as_str().ok_or("`path` is not a string")?;
        let outcome = field("outcome")?
            .as_str()
            .ok_or("`outcome` is not a string")?;
        let outcome = if is_count_tokens(path) {
            "count_tokens"
        } else {
            outcome
        };
        let input_tokens = match field("input_tokens")? {
            Value::Null => 0,
            other => other
                .as_u64()
                .ok_or("`input_tokens` is not a whole number or null")?,
        };
        Ok(RecordLine {
            number,
            model,
            window,
            api,
            input_tokens,
            outcome,
            body: field("body")?,
        })
    }

    fn violations(&self, rules: &[&str]) -> Vec<RecordViolation> {
        if !self.body.is_object() {
            return Vec::new();
        }
        let request = match self.api {
            Api::OpenAi => openai::parse_request(self.body),
            Api::Anthropic => anthropic::parse_request(self.body),
            Api::Responses => responses::parse_request(self.body),
        };
        let mut found: Vec<Violation> = Vec::new();
        let at = format!("request {} ({})", self.number, self.model);
        request_invariants(&at, &request, self.input_tokens, self.window, &mut found);
        found
            .into_iter()
            .filter(|v| rules.contains(&v.rule.as_str()))
            .map(|v| RecordViolation {
                rule: v.rule,
                request: Some(self.number),
                model: self.model.to_string(),
                detail: v.detail,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u64, window: u64, tokens: u64, body: Value) -> String {
        serde_json::json!({
            "n": n, "model": "m", "window": window, "api": "openai",
            "path": "/v1/chat/completions", "stream": false, "input_tokens": tokens,
            "status": 200, "outcome": "reply", "body": body,
        })
        .to_string()
    }

    fn check(text: &str, rules: &[&str]) -> Result<Vec<RecordViolation>, RecordError> {
        let checked = check_record(text.as_bytes(), "record.jsonl", rules)?;
        assert_eq!(checked.torn, None, "no torn line in {text:?}");
        Ok(checked.violations)
    }

    #[test]
    fn an_orphaned_tool_result_and_an_over_window_request_are_found_by_request() {
        let orphan = serde_json::json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "call_9", "content": "42"},
        ]});
        let fine = serde_json::json!({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "hi"},
        ]});
        let text = format!(
            "{}\n\n{}\n",
            line(1, 100, 95, fine.clone()),
            line(2, 100, 20, orphan)
        );
        let found = check(&text, &RECORD_RULES).expect("a valid record");
        let rules: Vec<(&str, Option<u64>)> =
            found.iter().map(|v| (v.rule.as_str(), v.request)).collect();
        assert_eq!(rules, [("window", Some(1)), ("pairing", Some(2))]);
        assert!(
            found[0]
                .detail
                .contains("95 input tokens + 10 output tokens > the 100-token window")
        );
        assert!(
            found[1].detail.starts_with("request 2 (m): "),
            "{}",
            found[1].detail
        );
        let only_pairing = check(&text, &["pairing"]).expect("a valid record");
        assert_eq!(only_pairing.len(), 1);
        assert!(
            check(&line(1, 1000, 5, fine), &RECORD_RULES)
                .expect("valid")
                .is_empty()
        );
    }

    #[test]
    fn count_tokens_storms_are_counted_over_the_record() {
        let count = serde_json::json!({
            "n": 1, "model": "m", "window": 100, "api": "anthropic",
            "path": "/v1/messages/count_tokens", "stream": false, "input_tokens": 5,
            "status": 200, "outcome": "count_tokens", "body": {"model": "m", "messages": []},
        })
        .to_string();
        let text = format!("{count}\n{count}\n");
        let found = check(&text, &RECORD_RULES).expect("valid");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].rule, "count_tokens");
        assert_eq!(found[0].request, None);
        assert!(
            check(&format!("{count}\n"), &RECORD_RULES)
                .expect("valid")
                .is_empty()
        );
    }

    #[test]
    fn a_bad_line_is_named_with_its_number_and_field() {
        let error = check("{\"n\": 1}\n", &RECORD_RULES).expect_err("no model");
        assert_eq!(
            error.to_string(),
            "record.jsonl:1: no `model` field; each line is one JSON object as `ctxbed serve --record` writes it"
        );
        let error = check("\nnot json\n", &RECORD_RULES).expect_err("not JSON");
        assert!(
            error.to_string().starts_with("record.jsonl:2: not JSON ("),
            "{error}"
        );
    }

    /// A record whose last line a killed server tore: read, the torn line reported by file and
    /// line, the lines before it checked; with or without a newline after it, and with blank
    /// lines after it.
    #[test]
    fn a_torn_last_line_is_skipped_and_reported_and_the_rest_checked() {
        let orphan = serde_json::json!({"model": "m", "messages": [
            {"role": "tool", "tool_call_id": "call_9", "content": "42"},
        ]});
        let fine =
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi é"}]});
        let whole = format!(
            "{}\n{}\n",
            line(1, 1000, 5, fine.clone()),
            line(2, 1000, 5, orphan)
        );
        let last = line(3, 1000, 5, fine);
        // Cut at every byte of the last line that leaves it short of a whole object, mid
        // character included.
        for cut in 1..last.len() {
            let part = &last.as_bytes()[..cut];
            for after in [&b""[..], b"\n", b"\n\n  \n"] {
                let mut text = whole.as_bytes().to_vec();
                text.extend_from_slice(part);
                text.extend_from_slice(after);
                let checked = check_record(&text[..], "record.jsonl", &RECORD_RULES)
                    .unwrap_or_else(|error| panic!("cut at {cut}: {error}"));
                let torn = checked.torn.expect("a torn line");
                assert_eq!((torn.line, torn.bytes), (3, cut), "cut at {cut}");
                let rules: Vec<(&str, Option<u64>)> = checked
                    .violations
                    .iter()
                    .map(|v| (v.rule.as_str(), v.request))
                    .collect();
                assert_eq!(rules, [("pairing", Some(2))], "cut at {cut}");
            }
        }
        let torn = check_record(
            format!("{whole}{{\"n\": 3, \"mod").as_bytes(),
            "r.jsonl",
            &RECORD_RULES,
        )
        .expect("readable")
        .torn
        .expect("torn");
        assert_eq!(
            torn.to_string(),
            "r.jsonl:3: the last line is torn (13 bytes of a record line, as a server killed while writing leaves it); skipped, the lines before it are checked"
        );
    }

    /// Only the last line may be torn: the same cut line with a line after it is an error that
    /// names its line, and so is a last line that is JSON but not a record line, or not JSON
    /// for another reason than stopping short.
    #[test]
    fn a_broken_line_before_the_last_is_still_an_error() {
        let fine =
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let whole = line(1, 1000, 5, fine.clone());
        let cut = &whole[..whole.len() / 2];
        let error =
            check(&format!("{cut}\n{whole}\n"), &RECORD_RULES).expect_err("a broken first line");
        assert!(
            error
                .to_string()
                .starts_with("record.jsonl:1: not JSON (EOF while parsing"),
            "{error}"
        );
        let error = check(&format!("{whole}\n{cut}\n\n{whole}"), &RECORD_RULES)
            .expect_err("a broken middle line");
        assert!(
            error.to_string().starts_with("record.jsonl:2: not JSON ("),
            "{error}"
        );
        let error =
            check(&format!("{whole}\n{{\"n\": 2}}"), &RECORD_RULES).expect_err("not a record line");
        assert!(
            error
                .to_string()
                .starts_with("record.jsonl:2: no `model` field"),
            "{error}"
        );
        let error = check(&format!("{whole}\n{{\"n\": 2]"), &RECORD_RULES).expect_err("not JSON");
        assert!(
            error.to_string().starts_with("record.jsonl:2: not JSON ("),
            "{error}"
        );
    }

    #[test]
    fn rules_are_chosen_by_name_and_unknown_ones_refused() {
        assert_eq!(chosen_rules(&[]).expect("all"), RECORD_RULES.to_vec());
        let chosen = chosen_rules(&["pairing".into(), "window".into(), "pairing".into()]);
        assert_eq!(chosen.expect("known"), ["pairing", "window"]);
        let error = chosen_rules(&["input".into()]).expect_err("a scenario rule");
        assert!(
            error.to_string().contains("unknown rule `input`"),
            "{error}"
        );
        assert!(error.to_string().contains("ctxbed conform"), "{error}");
    }
}
