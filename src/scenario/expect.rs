//! Inline expectations: assertions a scenario makes about its own run.
//!
//! Each field of an `[[expect]]` entry becomes one [`Check`], evaluated against the step records
//! and shown (passed or failed) at the end of the trace.

use super::file::Expectation;
use super::trace::StepRecord;
use crate::context::manifest::ItemKind;

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

fn step_checks(expectation: &Expectation, step: &StepRecord) -> Vec<Check> {
    let line = expectation.line;
    let prefix = format!("step {}", step.index);
    let mut checks = Vec::new();
    let mut push = |description: String, passed: bool, found: String| {
        checks.push(Check {
            line,
            description: format!("{prefix} {description}"),
            passed,
            detail: format!("found: {found}"),
        });
    };
    let reply = step.outcome.as_ref().ok().map(|m| m.text());
    let error = step.outcome.as_ref().err();
    let outcome = || match (&reply, error) {
        (Some(text), _) => format!("reply {text:?}"),
        (None, Some(error)) => format!("error {}: {error}", error.kind()),
        (None, None) => "nothing".to_string(),
    };
    if let Some(expected) = &expectation.reply {
        push(
            format!("reply = {expected:?}"),
            reply.as_deref() == Some(expected.as_str()),
            outcome(),
        );
    }
    if let Some(expected) = &expectation.reply_contains {
        let passed = reply
            .as_deref()
            .is_some_and(|r| r.contains(expected.as_str()));
        push(format!("reply contains {expected:?}"), passed, outcome());
    }
    if let Some(expected) = &expectation.error {
        let passed = error.is_some_and(|e| e.kind() == expected);
        push(format!("error = {expected}"), passed, outcome());
    }
    if let Some(expected) = &expectation.error_contains {
        let passed = error.is_some_and(|e| e.to_string().contains(expected.as_str()));
        push(format!("error contains {expected:?}"), passed, outcome());
    }
    if let Some(expected) = expectation.model_calls {
        let found = step.model_calls();
        push(
            format!("model_calls = {expected}"),
            found == expected,
            found.to_string(),
        );
    }
    let (results, denied) = step.tool_results();
    if let Some(expected) = expectation.tool_results {
        push(
            format!("tool_results = {expected}"),
            results == expected,
            results.to_string(),
        );
    }
    if let Some(expected) = expectation.denied {
        push(
            format!("denied = {expected}"),
            denied == expected,
            denied.to_string(),
        );
    }
    if let Some(expected) = &expectation.validation {
        let found: Vec<&str> = step
            .manifests()
            .map(|(m, _)| m.validation.as_str())
            .collect();
        push(
            format!("validation = [{}]", expected.join(", ")),
            found == *expected,
            format!("[{}]", found.join(", ")),
        );
    }
    if let Some(expected) = &expectation.request_messages {
        let found: Vec<i64> = step
            .manifests()
            .map(|(m, _)| {
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
        push(
            format!("request_messages = [{}]", list(expected)),
            found == *expected,
            format!("[{}]", list(&found)),
        );
    }
    if let Some(expected) = expectation.elapsed_ms {
        let found = step.elapsed.as_millis();
        push(
            format!("elapsed_ms = {expected}"),
            found == u128::from(expected),
            found.to_string(),
        );
    }
    checks
}
