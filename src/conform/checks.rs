//! Wire invariants and expectations, checked over the requests the mock actually received.
//!
//! | rule | what must hold |
//! | --- | --- |
//! | `window` | each request's exact input tokens plus the output it asks for fit the window |
//! | `pairing` | every tool call answered, every result preceded by its call |
//! | `system` | at most one system message, and it first |
//! | `input` | every reasoning request of a step carries the step's input |
//! | `overflow_retry` | after an overflow, the next reasoning request of the step is strictly smaller; nothing is sent after a second overflow in one step |
//! | `duplicate_result` | no tool call has two results in one request |
//! | `budget` | a step the harness refused for budget was not in fact refused by the provider |
//! | `model_called` | the harness sent at least one request over the scenario |
//!
//! Summary requests (recognised by the host by their shape) are exempt from `input` and are not
//! counted as retries.

use std::collections::BTreeMap;

use ctxbed_harness::context::pairs::find_pairing_problem;
use ctxbed_harness::message::{ContentPart, Role};
use ctxbed_harness::model::Purpose;
use ctxbed_sim::host::Exchange;

use super::file::{WireExpect, WireScenario};

/// How one step ended, as the adapter reported it.
#[derive(Debug, Clone, PartialEq)]
pub enum StepEnd {
    Reply(String),
    Error { kind: String, message: String },
}

/// One step's run: its end and the exchanges it caused.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRun {
    pub end: StepEnd,
    pub exchanges: Vec<Exchange>,
}

/// A broken rule or unmet expectation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub rule: String,
    pub detail: String,
}

impl Violation {
    fn new(rule: &str, detail: impl Into<String>) -> Self {
        Violation {
            rule: rule.to_string(),
            detail: detail.into(),
        }
    }
}

fn is_summary(exchange: &Exchange) -> bool {
    exchange
        .request
        .as_ref()
        .is_some_and(|r| r.purpose == Purpose::Summary)
}

/// Every wire invariant over the steps' exchanges, in step and request order.
pub fn invariants(
    scenario: &WireScenario,
    window: Option<u64>,
    steps: &[StepRun],
) -> Vec<Violation> {
    let mut found = Vec::new();
    let total: usize = steps.iter().map(|s| s.exchanges.len()).sum();
    if total == 0 && !steps.is_empty() {
        found.push(Violation::new(
            "model_called",
            "the harness never called the model (no request reached the mock)",
        ));
    }
    for (index, run) in steps.iter().enumerate() {
        let number = index + 1;
        let input = scenario.steps.get(index).map_or("", |s| s.input.as_str());
        let mut overflows = 0;
        let mut after_overflow: Option<u64> = None;
        for exchange in &run.exchanges {
            let at = format!("step {number}, request {}", exchange.number);
            if overflows >= 2 {
                found.push(Violation::new(
                    "overflow_retry",
                    format!("{at}: sent after two overflow errors in the same step"),
                ));
            }
            let Some(request) = &exchange.request else {
                continue;
            };
            let tokens = exchange.input_tokens.unwrap_or(0);
            if let Some(window) = window {
                let output = request.max_output_tokens.unwrap_or(0);
                if tokens + output > window {
                    found.push(Violation::new(
                        "window",
                        format!("{at}: {tokens} input tokens + {output} output tokens > the {window}-token window"),
                    ));
                }
            }
            if let Some(problem) = find_pairing_problem(&request.messages) {
                found.push(Violation::new("pairing", format!("{at}: {problem}")));
            }
            let systems: Vec<usize> = request
                .messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m.role == Role::System)
                .map(|(i, _)| i)
                .collect();
            if systems.len() > 1 || systems.first().is_some_and(|&i| i != 0) {
                found.push(Violation::new(
                    "system",
                    format!("{at}: system messages at positions {systems:?}; at most one, first"),
                ));
            }
            let mut results: BTreeMap<&str, usize> = BTreeMap::new();
            for message in request.messages.iter() {
                for part in &message.parts {
                    if let ContentPart::ToolResult(result) = part {
                        *results.entry(result.call_id.as_str()).or_default() += 1;
                    }
                }
            }
            for (call, count) in results.iter().filter(|(_, n)| **n > 1) {
                found.push(Violation::new(
                    "duplicate_result",
                    format!("{at}: tool call {call} has {count} results"),
                ));
            }
            if is_summary(exchange) {
                continue;
            }
            let carries_input = request
                .messages
                .iter()
                .any(|m| m.role == Role::User && m.text().contains(input));
            if !input.is_empty() && !carries_input {
                found.push(Violation::new(
                    "input",
                    format!("{at}: no user message carries the step's input"),
                ));
            }
            if let Some(before) = after_overflow.take()
                && tokens >= before
            {
                found.push(Violation::new(
                    "overflow_retry",
                    format!("{at}: the retry after an overflow has {tokens} input tokens, not fewer than the {before} that overflowed"),
                ));
            }
            if exchange.outcome == "context_overflow" {
                overflows += 1;
                after_overflow = Some(tokens);
            }
        }
        if let StepEnd::Error { kind, .. } = &run.end
            && kind == "budget_refused"
            && run
                .exchanges
                .last()
                .is_some_and(|e| e.outcome == "context_overflow")
        {
            found.push(Violation::new(
                "budget",
                format!("step {number}: reported as refused for budget, but the provider refused its last request as an overflow"),
            ));
        }
    }
    found
}

/// The scenario's own expectations.
pub fn expectations(scenario: &WireScenario, steps: &[StepRun]) -> Vec<Violation> {
    let mut found = Vec::new();
    for expect in &scenario.expect {
        let numbers: Vec<usize> = match expect.step {
            Some(step) => vec![step],
            None => (1..=steps.len()).collect(),
        };
        for number in numbers {
            let Some(run) = steps.get(number - 1) else {
                found.push(Violation::new(
                    "expect",
                    format!("{}: step {number} did not run", expect.at),
                ));
                continue;
            };
            check_one(expect, number, run, &mut found);
        }
    }
    found
}

fn check_one(expect: &WireExpect, number: usize, run: &StepRun, found: &mut Vec<Violation>) {
    let mut fail = |detail: String| {
        found.push(Violation::new(
            "expect",
            format!("{}: step {number}: {detail}", expect.at),
        ));
    };
    let reply = match &run.end {
        StepEnd::Reply(text) => Some(text.as_str()),
        StepEnd::Error { .. } => None,
    };
    let describe = || match &run.end {
        StepEnd::Reply(text) => format!("replied {:?}", ctxbed_harness::format::snippet(text, 80)),
        StepEnd::Error { kind, message } => {
            format!(
                "failed with {kind}: {}",
                ctxbed_harness::format::snippet(message, 120)
            )
        }
    };
    if let Some(want) = &expect.reply
        && reply != Some(want.as_str())
    {
        fail(format!(
            "expected the reply {want:?}, but it {}",
            describe()
        ));
    }
    if let Some(want) = &expect.reply_contains
        && !reply.is_some_and(|text| text.contains(want.as_str()))
    {
        fail(format!(
            "expected a reply containing {want:?}, but it {}",
            describe()
        ));
    }
    if let Some(want) = &expect.error {
        let got = match &run.end {
            StepEnd::Error { kind, .. } => Some(kind.as_str()),
            StepEnd::Reply(_) => None,
        };
        if got != Some(want.as_str()) {
            fail(format!("expected the error {want}, but it {}", describe()));
        }
    }
    let count = run.exchanges.len() as u64;
    if let Some(want) = expect.requests
        && count != want
    {
        fail(format!(
            "expected {want} requests, the mock received {count}"
        ));
    }
    if let Some(least) = expect.requests_at_least
        && count < least
    {
        fail(format!(
            "expected at least {least} requests, the mock received {count}"
        ));
    }
    if let Some(most) = expect.requests_at_most
        && count > most
    {
        fail(format!(
            "expected at most {most} requests, the mock received {count}"
        ));
    }
    let sent = |needle: &str| {
        run.exchanges.iter().any(|e| {
            e.request.as_ref().is_some_and(|r| {
                r.messages.iter().any(|m| {
                    m.text().contains(needle)
                        || m.parts.iter().any(|p| match p {
                            ContentPart::ToolResult(result) => result.text().contains(needle),
                            _ => false,
                        })
                })
            })
        })
    };
    if let Some(needle) = &expect.request_contains
        && !sent(needle)
    {
        fail(format!("no request of the step contained {needle:?}"));
    }
    if let Some(needle) = &expect.request_lacks
        && sent(needle)
    {
        fail(format!("a request of the step contained {needle:?}"));
    }
}
