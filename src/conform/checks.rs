//! Wire invariants and expectations, checked over the requests the mock actually received.
//!
//! | rule | what must hold |
//! | --- | --- |
//! | `window` | each request's exact input tokens plus the output it asks for fit the window |
//! | `pairing` | every tool call answered, every result preceded by its call |
//! | `system` | at most one system message, and it first |
//! | `input` | every main-loop request of a step carries the step's input in a user message, or the whole answer of a side request of the step whose request carried it (a summary the harness obtained) |
//! | `overflow_retry` | at most one retry per overflowed request, and it strictly smaller: the step's next main-loop request after an overflow has fewer input tokens, and is not sent at all when that retry overflowed too (a reply or a tool call in between starts afresh: a new request of the tool loop is not a retry) |
//! | `duplicate_result` | no tool call has two results in one request |
//! | `budget` | a step the harness refused for budget was not in fact refused by the provider |
//! | `model_called` | the harness sent at least one request over the scenario, and every step that did not end in a budget refusal sent one |
//! | `reply` | a step ends in a non-empty reply or a reported error |
//! | `api` | every request speaks the API of the scenario's mock (Chat Completions or Messages) |
//! | `count_tokens` | a step asks Anthropic's `count_tokens` at most once per request it sends |
//! | `loop` | a step sends at most the scenario's `request_limit` requests; past it the harness is stopped ([`loop_detail`]) |
//!
//! `reasoning` and `references`, judged by what the provider refused, are in
//! [`refusals`](super::refusals).
//!
//! Side requests (those that do not continue the step's conversation, told apart by the host by
//! structure: see `ctxbed_sim::host::continues_step`) are exempt from `input` and are not
//! counted as retries; but a step whose requests were all side requests fails `input`, unless
//! it ended refused for budget (a harness that summarised and then stopped honestly).
//! Violations found in a step carry its number, so each step has its own verdict.

use std::collections::BTreeMap;

use ctxbed_harness::context::pairs::find_pairing_problem;
use ctxbed_harness::message::{ContentPart, Role};
use ctxbed_sim::host::{Api, Exchange};

use super::file::{WireExpect, WireScenario};

/// Why a step that sent more than the scenario's `limit` requests was stopped: the detail of
/// rule `loop`, and the run's problem. It names the request that crossed the limit (how many
/// more arrived before the harness was stopped depends on timing, so it is not said).
pub fn loop_detail(step: usize, limit: u64) -> String {
    let crossing = limit + 1;
    format!(
        "step {step}: {crossing} requests — the harness kept sending past any sensible retry (the scenario allows {limit} a step; it was stopped)"
    )
}

/// The `loop` violation of a step stopped by the request limit (its detail the run's problem).
pub fn looped(step: usize, problem: &str) -> Violation {
    Violation {
        rule: "loop".to_string(),
        detail: problem.to_string(),
        step: Some(step),
    }
}

/// How one step ended, as the adapter reported it.
#[derive(Debug, Clone, PartialEq)]
pub enum StepEnd {
    Reply(String),
    Error { kind: String, message: String },
}

impl StepEnd {
    /// True for a step the user's stop (Ctrl-C, SIGTERM) cut short.
    pub fn interrupted(&self) -> bool {
        matches!(self, StepEnd::Error { kind, message }
            if kind == "adapter" && *message == super::peer::PeerError::Interrupted.to_string())
    }
}

/// One step's run: its end and the exchanges it caused.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRun {
    pub end: StepEnd,
    /// The model requests of the step (`count_tokens` calls are not among them).
    pub exchanges: Vec<Exchange>,
    /// How many times the step asked Anthropic's `count_tokens` route.
    pub count_tokens: usize,
}

/// A broken rule or unmet expectation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub rule: String,
    pub detail: String,
    /// The step (1-based) it was found in; `None` for the scenario as a whole.
    pub step: Option<usize>,
}

impl Violation {
    pub(crate) fn new(rule: &str, detail: impl Into<String>) -> Self {
        Violation {
            rule: rule.to_string(),
            detail: detail.into(),
            step: None,
        }
    }
}

/// Per step (1-based), the rules its violations broke, each once, in order.
pub fn step_rules(violations: &[Violation], step: usize) -> Vec<&str> {
    let mut rules: Vec<&str> = Vec::new();
    for violation in violations.iter().filter(|v| v.step == Some(step)) {
        if !rules.contains(&violation.rule.as_str()) {
            rules.push(&violation.rule);
        }
    }
    rules
}

/// Every wire invariant over the steps' exchanges, in step and request order.
pub fn invariants(
    scenario: &WireScenario,
    window: Option<u64>,
    steps: &[StepRun],
) -> Vec<Violation> {
    let mut found = Vec::new();
    let total: usize = steps.iter().map(|s| s.exchanges.len()).sum();
    // A step the user's stop cut short says nothing of whether the harness calls the model.
    if total == 0 && steps.iter().any(|run| !run.end.interrupted()) {
        found.push(Violation::new(
            "model_called",
            "the harness never called the model (no request reached the mock)",
        ));
    }
    for (index, run) in steps.iter().enumerate() {
        let number = index + 1;
        let start = found.len();
        step_invariants(scenario, index, run, window, total, &mut found);
        for violation in &mut found[start..] {
            violation.step = Some(number);
        }
    }
    found
}

/// No polling storm: a step asks `count_tokens` at most once per request it sends (once, when
/// it sends none).
pub fn count_tokens(steps: &[StepRun]) -> Vec<Violation> {
    let mut found = Vec::new();
    for (index, run) in steps.iter().enumerate() {
        let allowed = run.exchanges.len().max(1);
        if run.count_tokens > allowed {
            let mut violation = Violation::new(
                "count_tokens",
                format!(
                    "step {}: {} count_tokens calls for {} request(s) sent",
                    index + 1,
                    run.count_tokens,
                    run.exchanges.len()
                ),
            );
            violation.step = Some(index + 1);
            found.push(violation);
        }
    }
    found
}

/// Every request speaks one of the scenario's APIs (`api`: those of the provider its mock
/// imitates, or the one the scenario pins): a harness that sends Chat Completions to a scenario
/// meant for Anthropic Messages, or for the Responses API, has not been tested on it.
pub fn api(accepted: &[Api], steps: &[StepRun]) -> Vec<Violation> {
    let names: Vec<&str> = accepted.iter().map(|api| api.as_str()).collect();
    let mut found = Vec::new();
    for (index, run) in steps.iter().enumerate() {
        if let Some(other) = run.exchanges.iter().find(|e| !accepted.contains(&e.api)) {
            let mut violation = Violation::new(
                "api",
                format!(
                    "step {}: request {} spoke {} ({}); this scenario's model speaks {}",
                    index + 1,
                    other.number,
                    other.api.as_str(),
                    other.path,
                    names.join(" or ")
                ),
            );
            violation.step = Some(index + 1);
            found.push(violation);
        }
    }
    found
}

/// The invariants of one step (`index` from 0); `total` is the scenario's request count.
fn step_invariants(
    scenario: &WireScenario,
    index: usize,
    run: &StepRun,
    window: Option<u64>,
    total: usize,
    found: &mut Vec<Violation>,
) {
    let number = index + 1;
    let input = scenario.steps.get(index).map_or("", |s| s.input.as_str());
    end_invariants(number, run, total, found);
    let main = run
        .exchanges
        .iter()
        .filter(|e| !e.side && e.request.is_some())
        .count();
    let side = run.exchanges.iter().filter(|e| e.side).count();
    // A step that summarised and then refused for budget stopped honestly before its main
    // request: that is the `budget` rule's to judge, not a lost input.
    let refused = matches!(&run.end, StepEnd::Error { kind, .. } if kind == "budget_refused");
    if main == 0 && side > 0 && !input.is_empty() && !refused {
        found.push(Violation::new(
            "input",
            format!("step {number}: none of its {side} request(s) continued the conversation (none ended in the step's input or in a result of a tool call made in this step), so each was answered as a side request"),
        ));
    }
    exchange_invariants(number, run, input, window, found);
    if let StepEnd::Error { kind, .. } = &run.end
        && kind == "budget_refused"
        && run
            .exchanges
            .last()
            .is_some_and(|e| e.outcome.is_overflow())
    {
        found.push(Violation::new(
                "budget",
                format!("step {number}: reported as refused for budget, but the provider refused its last request as an overflow"),
            ));
    }
}

/// How the step ended: not in an empty reply, nor in an error (other than a budget refusal)
/// before any request when the scenario sent some.
fn end_invariants(number: usize, run: &StepRun, total: usize, found: &mut Vec<Violation>) {
    match &run.end {
        StepEnd::Reply(text) if text.trim().is_empty() => found.push(Violation::new(
            "reply",
            format!("step {number}: the harness replied with empty text; a step ends in a non-empty reply or a reported error"),
        )),
        StepEnd::Error { kind, .. } if run.exchanges.is_empty() && kind != "budget_refused" && total > 0 && !run.end.interrupted() => {
            found.push(Violation::new(
                "model_called",
                format!("step {number}: it failed with {kind} before sending any request to the model"),
            ));
        }
        _ => {}
    }
}

/// The step's requests in order: each request's own rules, the step's input in every main
/// request, and at most one retry per overflowed request, strictly smaller.
///
/// A main-loop request after an overflow is that request's retry; a reply or a tool call ends
/// the chain, so the next overflow (a new request of the tool loop, which carries a new result)
/// gets its own retry. A retry that overflows in turn allows no third try.
fn exchange_invariants(
    number: usize,
    run: &StepRun,
    input: &str,
    window: Option<u64>,
    found: &mut Vec<Violation>,
) {
    // The last main-loop request that overflowed: its number, size, and whether it was itself
    // a retry.
    let mut overflowed: Option<(u64, u64, bool)> = None;
    for exchange in &run.exchanges {
        let at = format!("step {number}, request {}", exchange.number);
        let Some(request) = &exchange.request else {
            continue;
        };
        let tokens = exchange.input_tokens.unwrap_or(0);
        request_invariants(&at, request, tokens, window, found);
        if exchange.side {
            continue;
        }
        let carries_input = request
            .messages
            .iter()
            .any(|m| m.role == Role::User && m.text().contains(input));
        // Or through a summary of it the harness obtained in this step and sent.
        let summarised = || {
            let side: Vec<&Exchange> = run
                .exchanges
                .iter()
                .filter(|e| e.side && e.number < exchange.number)
                .collect();
            super::continuity::carried(request, input, &side)
        };
        if !input.is_empty() && !carries_input && !summarised() {
            found.push(Violation::new(
                "input",
                format!("{at}: no user message carries the step's input, nor a summary of it the harness obtained"),
            ));
        }
        let retry = overflowed.take();
        match retry {
            Some((first, _, true)) => found.push(Violation::new(
                "overflow_retry",
                format!("{at}: a second retry after request {first}'s retry overflowed too; at most one retry per overflowed request"),
            )),
            Some((first, before, false)) if tokens >= before => found.push(Violation::new(
                "overflow_retry",
                format!("{at}: the retry after an overflow has {tokens} input tokens, not fewer than the {before} of request {first}, which overflowed"),
            )),
            _ => {}
        }
        if exchange.outcome.is_overflow() {
            overflowed = Some((exchange.number, tokens, retry.is_some()));
        }
    }
}

/// The rules every request obeys, main-loop or side: window, pairing, system, duplicate results.
pub(crate) fn request_invariants(
    at: &str,
    request: &ctxbed_harness::model::ModelRequest,
    tokens: u64,
    window: Option<u64>,
    found: &mut Vec<Violation>,
) {
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
            let start = found.len();
            check_one(expect, number, run, &mut found);
            for violation in &mut found[start..] {
                violation.step = Some(number);
            }
        }
    }
    found.extend(super::interrupt::expectations(scenario, steps));
    found
}

/// One expectation over one step (`number` from 1): its end, its request count, and what its
/// requests contained.
fn check_one(expect: &WireExpect, number: usize, run: &StepRun, found: &mut Vec<Violation>) {
    let mut fail = |detail: String| {
        found.push(Violation::new(
            "expect",
            format!("{}: step {number}: {detail}", expect.at),
        ));
    };
    check_end(expect, run, &mut fail);
    check_request_count(expect, run, &mut fail);
    check_request_text(expect, run, &mut fail);
}

/// How a step ended, for a failed expectation: its reply or its error, shortened.
pub(crate) fn describe_end(end: &StepEnd) -> String {
    match end {
        StepEnd::Reply(text) => format!("replied {:?}", ctxbed_harness::format::snippet(text, 80)),
        StepEnd::Error { kind, message } => {
            format!(
                "failed with {kind}: {}",
                ctxbed_harness::format::snippet(message, 120)
            )
        }
    }
}

/// The expected reply, reply text or error kind.
fn check_end(expect: &WireExpect, run: &StepRun, fail: &mut impl FnMut(String)) {
    let reply = match &run.end {
        StepEnd::Reply(text) => Some(text.as_str()),
        StepEnd::Error { .. } => None,
    };
    if let Some(want) = &expect.reply
        && reply != Some(want.as_str())
    {
        fail(format!(
            "expected the reply {want:?}, but it {}",
            describe_end(&run.end)
        ));
    }
    if let Some(want) = &expect.reply_contains
        && !reply.is_some_and(|text| text.contains(want.as_str()))
    {
        fail(format!(
            "expected a reply containing {want:?}, but it {}",
            describe_end(&run.end)
        ));
    }
    if let Some(want) = &expect.error {
        let got = match &run.end {
            StepEnd::Error { kind, .. } => Some(kind.as_str()),
            StepEnd::Reply(_) => None,
        };
        if got != Some(want.as_str()) {
            fail(format!(
                "expected the error {want}, but it {}",
                describe_end(&run.end)
            ));
        }
    }
}

/// The expected number of requests: exactly, at least, at most.
fn check_request_count(expect: &WireExpect, run: &StepRun, fail: &mut impl FnMut(String)) {
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
}

/// Text some request of the step must, or must not, have contained.
fn check_request_text(expect: &WireExpect, run: &StepRun, fail: &mut impl FnMut(String)) {
    if let Some(needle) = &expect.request_contains
        && !step_sent(run, needle)
    {
        fail(format!("no request of the step contained {needle:?}"));
    }
    if let Some(needle) = &expect.request_lacks
        && step_sent(run, needle)
    {
        fail(format!("a request of the step contained {needle:?}"));
    }
}

/// Whether a request of the step had `needle` in a message's text or a tool result's.
fn step_sent(run: &StepRun, needle: &str) -> bool {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::file::parse;
    use ctxbed_harness::model::ModelErrorKind;
    use ctxbed_sim::host::{Api, Outcome, openai};
    use serde_json::{Value, json};

    fn scenario() -> WireScenario {
        parse(
            "t.toml",
            "description = \"t\"\nmodel = \"m\"\n[[steps]]\ninput = \"Why?\"\n",
            "wire/t",
        )
        .expect("a valid scenario")
    }

    const OVERFLOW: Outcome = Outcome::Error(ModelErrorKind::ContextOverflow);

    fn exchange(number: u64, messages: Value, tokens: u64, outcome: Outcome) -> Exchange {
        let body = json!({"messages": messages, "max_tokens": 100});
        Exchange {
            number,
            api: Api::OpenAi,
            path: "/v1/chat/completions".into(),
            stream: false,
            request: Some(openai::parse_request(&body)),
            body,
            input_tokens: Some(tokens),
            status: 200,
            outcome,
            step: Some(1),
            side: false,
            note: None,
            cache: Default::default(),
            refused_rule: None,
            received: tokio::time::Instant::now(),
            retry_after: None,
            answer: None,
        }
    }

    fn rules(exchanges: Vec<Exchange>) -> Vec<String> {
        let run = StepRun {
            end: StepEnd::Reply("ok".into()),
            exchanges,
            count_tokens: 0,
        };
        invariants(&scenario(), Some(1_000), &[run])
            .into_iter()
            .map(|v| v.rule)
            .collect()
    }

    fn user() -> Value {
        json!({"role": "user", "content": "Why?"})
    }

    #[test]
    fn a_step_stopped_by_the_request_limit_is_a_loop() {
        let detail = loop_detail(3, 60);
        assert_eq!(
            detail,
            "step 3: 61 requests — the harness kept sending past any sensible retry (the scenario allows 60 a step; it was stopped)"
        );
        let violation = looped(3, &detail);
        assert_eq!(violation.rule, "loop");
        assert_eq!(violation.step, Some(3));
        assert_eq!(step_rules(&[violation], 3), ["loop"]);
    }

    #[test]
    fn a_clean_step_breaks_nothing() {
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]});
        let result = json!({"role": "tool", "tool_call_id": "c1", "content": "done"});
        let exchanges = vec![
            exchange(
                1,
                json!([{"role": "system", "content": "s"}, user()]),
                50,
                Outcome::ToolCalls,
            ),
            exchange(
                2,
                json!([{"role": "system", "content": "s"}, user(), call, result]),
                80,
                Outcome::Reply,
            ),
        ];
        assert!(rules(exchanges).is_empty());
    }

    #[test]
    fn each_rule_can_fail() {
        let over = vec![exchange(1, json!([user()]), 901, Outcome::Reply)];
        assert_eq!(rules(over), ["window"]);
        let at_limit = vec![exchange(1, json!([user()]), 900, Outcome::Reply)];
        assert!(
            rules(at_limit).is_empty(),
            "900 + 100 output fits a 1,000 window exactly"
        );

        let orphan = json!({"role": "tool", "tool_call_id": "c9", "content": "x"});
        assert_eq!(
            rules(vec![exchange(
                1,
                json!([user(), orphan]),
                10,
                Outcome::Reply
            )]),
            ["pairing"]
        );

        let late_system = json!([user(), {"role": "system", "content": "s"}]);
        assert_eq!(
            rules(vec![exchange(1, late_system, 10, Outcome::Reply)]),
            ["system"]
        );

        let no_input = json!([{"role": "user", "content": "something else"}]);
        assert_eq!(
            rules(vec![exchange(1, no_input, 10, Outcome::Reply)]),
            ["input"]
        );

        let not_smaller = vec![
            exchange(1, json!([user()]), 500, OVERFLOW),
            exchange(2, json!([user()]), 500, Outcome::Reply),
        ];
        assert_eq!(rules(not_smaller), ["overflow_retry"]);
        let third_try = vec![
            exchange(1, json!([user()]), 500, OVERFLOW),
            exchange(2, json!([user()]), 400, OVERFLOW),
            exchange(3, json!([user()]), 300, Outcome::Reply),
        ];
        assert_eq!(rules(third_try), ["overflow_retry"]);

        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]});
        let result = json!({"role": "tool", "tool_call_id": "c1", "content": "done"});
        let twice = json!([user(), call, result.clone(), result]);
        assert!(
            rules(vec![exchange(1, twice, 10, Outcome::Reply)])
                .contains(&"duplicate_result".to_string())
        );

        assert_eq!(rules(Vec::new()), ["model_called"]);
    }

    #[test]
    fn a_step_cut_short_by_the_users_stop_is_not_a_missing_model_call() {
        let stopped = |exchanges: Vec<Exchange>| StepRun {
            end: StepEnd::Error {
                kind: "adapter".into(),
                message: crate::conform::peer::PeerError::Interrupted.to_string(),
            },
            exchanges,
            count_tokens: 0,
        };
        assert!(invariants(&scenario(), Some(1_000), &[stopped(Vec::new())]).is_empty());
        let answered = StepRun {
            end: StepEnd::Reply("ok".into()),
            exchanges: vec![exchange(1, json!([user()]), 10, Outcome::Reply)],
            count_tokens: 0,
        };
        let both = invariants(&scenario(), Some(1_000), &[answered, stopped(Vec::new())]);
        assert!(both.is_empty(), "{both:?}");
    }

    #[test]
    fn each_overflowed_request_of_the_tool_loop_gets_its_own_retry() {
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]});
        let result = json!({"role": "tool", "tool_call_id": "c1", "content": "done"});
        let looped = json!([user(), call, result]);
        // The first request overflows and its smaller retry gets a tool call; the tool loop's
        // next request (a new request, carrying the result) overflows, and its own smaller
        // retry succeeds: two overflows in a step, one retry each.
        let steps = vec![
            exchange(1, json!([user()]), 500, OVERFLOW),
            exchange(2, json!([user()]), 400, Outcome::ToolCalls),
            exchange(3, looped.clone(), 900, OVERFLOW),
            exchange(4, looped.clone(), 600, Outcome::Reply),
        ];
        assert!(rules(steps).is_empty());
        // A retry that overflowed again allows no third try, smaller or not.
        let again = vec![
            exchange(1, looped.clone(), 900, OVERFLOW),
            exchange(2, looped.clone(), 800, OVERFLOW),
            exchange(3, looped, 700, Outcome::Reply),
        ];
        let found = invariants(
            &scenario(),
            Some(1_000),
            &[StepRun {
                end: StepEnd::Reply("ok".into()),
                exchanges: again,
                count_tokens: 0,
            }],
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].detail.contains("request 3: a second retry"),
            "{found:?}"
        );
    }

    #[test]
    fn the_input_may_go_on_in_a_summary_the_harness_obtained_in_the_step() {
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]});
        let result = json!({"role": "tool", "tool_call_id": "c1", "content": "done"});
        // The mock's summariser quotes each user turn's first line: not the input here.
        let summary = "Summary of 1 request message(s).\n- user: <conversation>";
        let mut side = exchange(
            2,
            json!([{"role": "user", "content": "<conversation>\nuser: Why?\n</conversation>"}]),
            10,
            Outcome::Reply,
        );
        side.side = true;
        side.answer = Some(ctxbed_harness::message::Message::assistant("a", summary));
        let after = |text: &str| {
            exchange(
                3,
                json!([{"role": "user", "content": text}, call.clone(), result.clone()]),
                40,
                Outcome::Reply,
            )
        };
        let first = exchange(1, json!([user()]), 10, Outcome::ToolCalls);
        let summarised = format!("Here is a summary of the conversation to date: {summary}");
        assert!(rules(vec![first.clone(), side.clone(), after(&summarised)]).is_empty());
        // A summary obtained and left out, or one that never saw the input, carries nothing.
        assert_eq!(
            rules(vec![first.clone(), side.clone(), after("Continue.")]),
            ["input"]
        );
        let mut blind = side;
        blind.request = Some(openai::parse_request(
            &json!({"messages": [{"role": "user", "content": "something else"}]}),
        ));
        assert_eq!(rules(vec![first, blind, after(&summarised)]), ["input"]);
    }

    #[test]
    fn a_budget_refusal_after_a_provider_overflow_is_caught() {
        let run = StepRun {
            end: StepEnd::Error {
                kind: "budget_refused".into(),
                message: String::new(),
            },
            exchanges: vec![exchange(1, json!([user()]), 500, OVERFLOW)],
            count_tokens: 0,
        };
        let found = invariants(&scenario(), Some(1_000), &[run]);
        assert_eq!(found.last().map(|v| v.rule.as_str()), Some("budget"));
    }

    #[test]
    fn expectations_report_what_happened_instead() {
        let text = "description = \"t\"\nmodel = \"m\"\n[[steps]]\ninput = \"Why?\"\n[[expect]]\nstep = 1\nreply_contains = \"memory\"\nrequests = 2\nrequest_lacks = \"Why\"\n";
        let scenario = parse("t.toml", text, "wire/t").expect("valid");
        let run = StepRun {
            end: StepEnd::Reply("disk full".into()),
            exchanges: vec![exchange(1, json!([user()]), 10, Outcome::Reply)],
            count_tokens: 0,
        };
        let found = expectations(&scenario, &[run]);
        let details: Vec<&str> = found.iter().map(|v| v.detail.as_str()).collect();
        assert_eq!(found.len(), 3, "{details:?}");
        assert!(details[0].starts_with("t.toml:6: step 1: expected a reply containing \"memory\", but it replied \"disk full\""), "{details:?}");
        assert!(details[1].contains("expected 2 requests, the mock received 1"));
        assert!(details[2].contains("a request of the step contained \"Why\""));
    }

    #[test]
    fn a_request_in_another_api_than_the_scenarios_breaks_api() {
        let steps = vec![StepRun {
            end: StepEnd::Reply("ok".into()),
            exchanges: vec![exchange(1, json!([user()]), 10, Outcome::Reply)],
            count_tokens: 0,
        }];
        assert!(api(&[Api::OpenAi], &steps).is_empty());
        assert!(api(&[Api::OpenAi, Api::Responses], &steps).is_empty());
        assert_eq!(api(&[Api::Responses], &steps).len(), 1);
        let found = api(&[Api::Anthropic], &steps);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].rule, "api");
        assert_eq!(found[0].step, Some(1));
        assert!(
            found[0].detail.contains("spoke openai"),
            "{}",
            found[0].detail
        );
    }
}
