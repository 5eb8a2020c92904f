//! Inline expectations: assertions a scenario makes about its own run.
//!
//! Each field of an `[[expect]]` entry becomes one [`Check`], evaluated against the step records
//! and shown (passed or failed) at the end of the trace.

mod request;

use crate::scenario::format::file::Expectation;
use crate::scenario::run::record::StepRecord;
use ctxbed_harness::agent::EventKind;
use ctxbed_harness::context::manifest::ItemKind;
use ctxbed_harness::model::Purpose;

/// The verdict of one assertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Line of the `[[expect]]` entry.
    pub line: usize,
    pub description: String,
    pub passed: bool,
    /// What was found, when it failed.
    pub detail: String,
}

/// Evaluates every expectation against the recorded steps.
pub fn evaluate(expectations: &[Expectation], steps: &[StepRecord]) -> Vec<Check> {
    let mut checks = Vec::new();
    for expectation in expectations {
        let selected: Vec<&StepRecord> = steps
            .iter()
            .filter(|step| expectation.step.is_none_or(|n| n == step.index))
            .collect();
        for step in selected {
            checks.extend(step_checks(expectation, step));
        }
    }
    checks
}

/// The checks of one expectation on one step, in the order the trace shows them.
struct Checks {
    /// Line of the `[[expect]]` entry.
    line: usize,
    /// `step <n>`, before every description.
    prefix: String,
    list: Vec<Check>,
}

impl Checks {
    /// Adds one check: what it asserts, whether it held, and what was found.
    fn push(&mut self, description: String, passed: bool, found: String) {
        self.list.push(Check {
            line: self.line,
            description: format!("{} {description}", self.prefix),
            passed,
            detail: format!("found: {found}"),
        });
    }
}

/// Every check of one expectation on one step: the step's own, then its requests'.
fn step_checks(expectation: &Expectation, step: &StepRecord) -> Vec<Check> {
    let mut checks = Checks {
        line: expectation.line,
        prefix: format!("step {}", step.index),
        list: Vec::new(),
    };
    outcome_checks(&mut checks, expectation, step);
    if let Some(expected) = expectation.model_calls {
        let found = step.model_calls();
        checks.push(
            format!("model_calls = {expected}"),
            found == expected,
            found.to_string(),
        );
    }
    session_log_checks(&mut checks, expectation, step);
    call_count_checks(&mut checks, expectation, step);
    compaction_request_checks(&mut checks, expectation, step);
    tool_result_checks(&mut checks, expectation, step);
    manifest_count_checks(&mut checks, expectation, step);
    call_timing_check(&mut checks, expectation, step);
    workspace_and_source_checks(&mut checks, expectation, step);
    if let Some(expected) = expectation.elapsed_ms {
        let found = step.elapsed.as_millis();
        checks.push(
            format!("elapsed_ms = {expected}"),
            found == u128::from(expected),
            found.to_string(),
        );
    }
    request::request_checks(&mut checks, expectation, step);
    checks.list
}

/// `reply`, `reply_contains`, `error` and `error_contains`: the step's outcome.
fn outcome_checks(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    let reply = step.outcome.as_ref().ok().map(|m| m.text());
    let error = step.outcome.as_ref().err();
    let outcome = || match (&reply, error) {
        (Some(text), _) => format!("reply {text:?}"),
        (None, Some(error)) => format!("error {}: {error}", error.kind()),
        (None, None) => "nothing".to_string(),
    };
    if let Some(expected) = &expectation.reply {
        checks.push(
            format!("reply = {expected:?}"),
            reply.as_deref() == Some(expected.as_str()),
            outcome(),
        );
    }
    if let Some(expected) = &expectation.reply_contains {
        let passed = reply
            .as_deref()
            .is_some_and(|r| r.contains(expected.as_str()));
        checks.push(format!("reply contains {expected:?}"), passed, outcome());
    }
    if let Some(expected) = &expectation.error {
        let passed = error.is_some_and(|e| e.kind() == expected);
        checks.push(format!("error = {expected}"), passed, outcome());
    }
    if let Some(expected) = &expectation.error_contains {
        let passed = error.is_some_and(|e| e.to_string().contains(expected.as_str()));
        checks.push(format!("error contains {expected:?}"), passed, outcome());
    }
}

/// `session_records` (counts by kind) and `session_record_fields` (a record with these fields).
fn session_log_checks(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    for (kind, expected) in &expectation.session_records {
        let found = step
            .session_records
            .iter()
            .find(|(k, _)| k == kind)
            .map_or(0, |(_, count)| *count);
        checks.push(
            format!("session log records {kind} ×{expected}"),
            found == *expected,
            found.to_string(),
        );
    }
    for (kind, fields) in &expectation.session_record_fields {
        let records = step.session_record_values(kind);
        let holds = |record: &serde_json::Value| {
            fields
                .iter()
                .all(|(name, value)| record.get(name) == Some(value))
        };
        let wanted: Vec<String> = fields
            .iter()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect();
        checks.push(
            format!("a session log record {kind} has {}", wanted.join(", ")),
            records.iter().any(holds),
            if records.is_empty() {
                format!("no {kind} record")
            } else {
                ctxbed_harness::format::snippet(
                    &records
                        .iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join("; "),
                    ctxbed_harness::limits::SNIPPET_CHARS_MAX,
                )
            },
        );
    }
}

/// `summary_calls`, `observer_calls` and `memory_calls`.
fn call_count_checks(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    if let Some(expected) = expectation.summary_calls {
        let found = step.summary_calls();
        checks.push(
            format!("summary_calls = {expected}"),
            found == expected,
            found.to_string(),
        );
    }
    if let Some(expected) = expectation.observer_calls {
        checks.push(
            format!("observer_calls = {expected}"),
            step.observer_calls == expected,
            step.observer_calls.to_string(),
        );
    }
    if let Some(expected) = expectation.memory_calls {
        let found = step.memory_calls();
        checks.push(
            format!("memory_calls = {expected}"),
            found == expected,
            found.to_string(),
        );
    }
}

/// What the summary and memory-flush requests contain or lack.
fn compaction_request_checks(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    for (purpose, contains, lacks) in [
        (
            Purpose::Summary,
            &expectation.summary_request_contains,
            &expectation.summary_request_lacks,
        ),
        (
            Purpose::MemoryFlush,
            &expectation.memory_request_contains,
            &expectation.memory_request_lacks,
        ),
    ] {
        let sent: Vec<String> = step
            .requests_for(purpose)
            .into_iter()
            .map(request_text)
            .collect();
        let found = format!("{} {} request(s)", sent.len(), purpose.as_str());
        for needle in contains {
            checks.push(
                format!("a {} request contains {needle:?}", purpose.as_str()),
                sent.iter().any(|text| text.contains(needle.as_str())),
                found.clone(),
            );
        }
        // With no such request at all, "lacks" would hold vacuously: it fails instead.
        for needle in lacks {
            checks.push(
                format!("every {} request lacks {needle:?}", purpose.as_str()),
                !sent.is_empty() && sent.iter().all(|text| !text.contains(needle.as_str())),
                found.clone(),
            );
        }
    }
}

/// `tool_results` and `denied`: the step's tool results, all and denied.
fn tool_result_checks(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    let (results, denied) = step.tool_results();
    if let Some(expected) = expectation.tool_results {
        checks.push(
            format!("tool_results = {expected}"),
            results == expected,
            results.to_string(),
        );
    }
    if let Some(expected) = expectation.denied {
        checks.push(
            format!("denied = {expected}"),
            denied == expected,
            denied.to_string(),
        );
    }
}

/// `validation` and `request_messages`: per reasoning preparation, its outcome and its count of
/// messages.
fn manifest_count_checks(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    if let Some(expected) = &expectation.validation {
        let found: Vec<&str> = step
            .reasoning_manifests()
            .map(|m| m.validation.as_str())
            .collect();
        checks.push(
            format!("validation = [{}]", expected.join(", ")),
            found == *expected,
            format!("[{}]", found.join(", ")),
        );
    }
    if let Some(expected) = &expectation.request_messages {
        let found: Vec<i64> = step
            .reasoning_manifests()
            .map(|m| {
                m.items
                    .iter()
                    .filter(|item| matches!(item.kind, ItemKind::Message { .. }))
                    .count() as i64
            })
            .collect();
        let list = |v: &[i64]| {
            v.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        checks.push(
            format!("request_messages = [{}]", list(expected)),
            found == *expected,
            format!("[{}]", list(&found)),
        );
    }
}

/// `model_calls_at_ms`: when each reasoning model call started, from the step's start.
fn call_timing_check(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    if let Some(expected) = &expectation.model_calls_at_ms {
        let found: Vec<u64> = step
            .events
            .iter()
            .filter(|event| {
                matches!(&event.kind, EventKind::ModelCallStarted { request_id } if !crate::scenario::run::record::is_compaction_call(request_id))
            })
            .map(|event| event.at.saturating_sub(step_start(step)).as_millis() as u64)
            .collect();
        checks.push(
            format!("model_calls_at_ms = {expected:?}"),
            found == *expected,
            format!("{found:?}"),
        );
    }
}

/// `workspace_count_under` (files under a prefix) and `source_loads` (loads so far).
fn workspace_and_source_checks(checks: &mut Checks, expectation: &Expectation, step: &StepRecord) {
    for (prefix, expected) in &expectation.workspace_count_under {
        let found = step
            .workspace_files
            .iter()
            .filter(|p| p.starts_with(prefix.as_str()))
            .count() as u64;
        checks.push(
            format!("workspace holds {expected} file(s) under {prefix:?}"),
            found == *expected,
            found.to_string(),
        );
    }
    for (source, expected) in &expectation.source_loads {
        let found = step.source_loads.get(source).copied().unwrap_or(0);
        checks.push(
            format!("source `{source}` loaded {expected} time(s) so far"),
            found == *expected,
            found.to_string(),
        );
    }
}

/// When the step's run started (its first event).
fn step_start(step: &StepRecord) -> std::time::Duration {
    step.events
        .first()
        .map(|event| event.at)
        .unwrap_or_default()
}

fn request_text(request: &ctxbed_harness::model::ModelRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| {
            let results: Vec<String> = m.tool_results().map(|r| r.text()).collect();
            let calls: Vec<String> = m.tool_calls().map(|c| c.arguments.to_string()).collect();
            format!("{}\n{}\n{}", m.text(), calls.join("\n"), results.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn sent_summary(sent: Option<&str>) -> String {
    match sent {
        Some(text) => format!("{} chars sent", text.chars().count()),
        None => "no request was sent".to_string(),
    }
}
