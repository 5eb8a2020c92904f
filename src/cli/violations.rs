//! `ctxbed violations RECORD`: the wire rules a served run's record breaks (the rules that need
//! no scenario; see `ctxbed::conform::record_rules`), as text or one JSON object per line.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use crate::{write_err, write_out};
use ctxbed::conform::record_rules::{RecordViolation, TornLine, check_record, chosen_rules};

/// `ctxbed violations`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ViolationsArgs {
    /// A record written by `ctxbed serve --record` (one JSON line per request).
    pub record: PathBuf,
    /// Check only this rule (window, pairing, system, duplicate_result, count_tokens); repeat
    /// for several. Default: all of them.
    #[arg(long = "rule")]
    pub rules: Vec<String>,
    /// `text`, or `json`: one object per violation, then a summary object.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
}

/// Exit status 0 when no chosen rule is broken, 1 when one is, 2 when the record or a rule
/// name is wrong. A torn last line (a server killed while writing it) is skipped with a warning
/// on stderr naming the file and line, and in JSON as the summary's `torn_line`.
pub fn violations_command(arguments: ViolationsArgs) -> ExitCode {
    let rules = match chosen_rules(&arguments.rules) {
        Ok(rules) => rules,
        Err(error) => {
            errln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let path = arguments.record.display().to_string();
    let file = match std::fs::File::open(&arguments.record) {
        Ok(file) => file,
        Err(error) => {
            errln!("error: cannot open the record {path}: {error}");
            return ExitCode::from(2);
        }
    };
    let checked = match check_record(std::io::BufReader::new(file), &path, &rules) {
        Ok(checked) => checked,
        Err(error) => {
            errln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    if let Some(torn) = &checked.torn {
        errln!("warning: {torn}");
    }
    let found = checked.violations;
    if arguments.format == "json" {
        print_json(&found, &rules, checked.torn.as_ref());
    } else {
        print_text(&found, &rules);
    }
    if found.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn print_json(found: &[RecordViolation], rules: &[&str], torn: Option<&TornLine>) {
    for violation in found {
        outln!(
            "{}",
            json!({
                "type": "violation",
                "rule": violation.rule,
                "request": violation.request,
                "model": violation.model,
                "detail": violation.detail,
            })
        );
    }
    outln!(
        "{}",
        json!({
            "type": "summary",
            "violations": found.len(),
            "rules": rules,
            "torn_line": torn.map(|torn| torn.line),
        })
    );
}

fn print_text(found: &[RecordViolation], rules: &[&str]) {
    for violation in found {
        outln!("{}: {}", violation.rule, violation.detail);
    }
    if found.is_empty() {
        outln!("no wire rule broken ({})", rules.join(", "));
    } else {
        outln!(
            "{} violation(s) of the rules checked ({})",
            found.len(),
            rules.join(", ")
        );
    }
}
