//! The wire rules judged by what the provider refused, and by what the scenario turned on:
//!
//! | rule | what must hold |
//! | --- | --- |
//! | `reasoning` | thinking blocks (Anthropic) and reasoning items (Responses) go back with the tool calls they preceded, unaltered, as the API requires: no request is refused for them; and in a scenario that turns thinking on, every Messages request turns it on |
//! | `references` | every `previous_response_id` and `item_reference` names something the server holds (a stored response, within the mock's bounds), and no input item repeats one the request already holds (in the conversation it goes on from, or earlier in its own input) |
//! | `refused` | no other request is refused as the provider refuses a malformed one (a body that is not JSON, a field of the wrong type, an empty text block, …) |
//! | `retry_after` | after a 429 with `Retry-After: N`, the step's next request comes no sooner than N seconds after the refused one arrived (less [`RETRY_AFTER_SLACK`]) |
//!
//! The provider's own check decides (`Exchange::refused_rule`), so the rule fails exactly where
//! the real API would have answered 400, in its words.

use std::time::Duration;

use ctxbed_sim::host::{Api, Exchange, Outcome};

use super::checks::{StepRun, Violation};
use super::file::WireScenario;

/// How much sooner than its `Retry-After` a retry may come (clocks and timers are coarse).
pub const RETRY_AFTER_SLACK: Duration = Duration::from_millis(100);

/// The violations of these rules in every step.
pub fn check(scenario: &WireScenario, steps: &[StepRun]) -> Vec<Violation> {
    let mut found = Vec::new();
    for (index, run) in steps.iter().enumerate() {
        let number = index + 1;
        found.extend(early_retries(number, run));
        for exchange in &run.exchanges {
            if let Some(violation) = refused(number, exchange) {
                found.push(violation);
            }
            if scenario.thinking_budget.is_some() {
                found.extend(thinking_off(number, exchange));
            }
        }
    }
    found
}

/// The rule a refused request broke, with the provider's words.
fn refused(number: usize, exchange: &Exchange) -> Option<Violation> {
    let malformed = matches!(exchange.outcome, Outcome::InvalidRequest | Outcome::NotJson);
    let rule = exchange
        .refused_rule
        .or_else(|| malformed.then_some("refused"))?;
    let words = exchange.note.as_deref().unwrap_or("refused");
    Some(Violation {
        rule: rule.to_string(),
        detail: format!(
            "step {number}, request {}: the provider refused it ({}): {words}",
            exchange.number, exchange.status
        ),
        step: Some(number),
    })
}

/// Requests that came sooner after a 429 than its `Retry-After` asked. The detail names no
/// measured time, so a trace stays the same from run to run.
fn early_retries(number: usize, run: &StepRun) -> Vec<Violation> {
    run.exchanges
        .windows(2)
        .filter_map(|pair| {
            let (refused, next) = (&pair[0], &pair[1]);
            let asked = refused.retry_after?;
            let waited = next.received.saturating_duration_since(refused.received);
            (waited + RETRY_AFTER_SLACK < asked).then(|| Violation {
                rule: "retry_after".into(),
                detail: format!(
                    "step {number}, request {}: sent sooner than the {} s that request {}'s 429 asked for (Retry-After)",
                    next.number,
                    asked.as_secs(),
                    refused.number
                ),
                step: Some(number),
            })
        })
        .collect()
}

/// A Messages request that left thinking off in a scenario that turns it on.
fn thinking_off(number: usize, exchange: &Exchange) -> Option<Violation> {
    if exchange.api != Api::Anthropic || exchange.body.is_null() {
        return None;
    }
    if ctxbed_sim::host::anthropic::thinking_enabled(&exchange.body) {
        return None;
    }
    Some(Violation {
        rule: "reasoning".into(),
        detail: format!(
            "step {number}, request {}: extended thinking is off; this scenario turns it on (CTXBED_THINKING_BUDGET)",
            exchange.number
        ),
        step: Some(number),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::checks::StepEnd;
    use serde_json::json;

    fn exchange(body: serde_json::Value, refused_rule: Option<&'static str>) -> Exchange {
        Exchange {
            number: 3,
            api: Api::Anthropic,
            path: "/v1/messages".into(),
            stream: false,
            body,
            request: None,
            input_tokens: None,
            status: if refused_rule.is_some() { 400 } else { 200 },
            outcome: if refused_rule.is_some() {
                Outcome::InvalidRequest
            } else {
                Outcome::Reply
            },
            step: Some(1),
            side: false,
            note: refused_rule
                .map(|_| "messages.1.content.0: Invalid `signature` in `thinking` block".into()),
            cache: Default::default(),
            refused_rule,
            received: tokio::time::Instant::now(),
            retry_after: None,
            answer: None,
        }
    }

    fn scenario(thinking_budget: Option<u64>) -> WireScenario {
        let source = r#"
description = "d"
model = "m"
max_output_tokens = 4096
[[steps]]
input = "hi"
"#;
        let mut scenario =
            crate::conform::file::parse("t.toml", source, "wire/t").expect("a scenario");
        scenario.thinking_budget = thinking_budget;
        scenario
    }

    fn run(exchanges: Vec<Exchange>) -> Vec<StepRun> {
        vec![StepRun {
            end: StepEnd::Reply("done".into()),
            exchanges,
            count_tokens: 0,
        }]
    }

    #[test]
    fn a_refusal_that_names_a_rule_breaks_it_in_the_providers_words() {
        let steps = run(vec![exchange(json!({}), Some("reasoning"))]);
        let found = check(&scenario(None), &steps);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rule, "reasoning");
        assert_eq!(found[0].step, Some(1));
        assert!(found[0].detail.contains("Invalid `signature`"), "{found:?}");
        // A refusal for a malformed body breaks `refused`; an answered request breaks nothing.
        let mut malformed = exchange(json!({}), None);
        malformed.outcome = Outcome::InvalidRequest;
        malformed.status = 400;
        let found = check(&scenario(None), &run(vec![malformed]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rule, "refused");
        assert!(check(&scenario(None), &run(vec![exchange(json!({}), None)])).is_empty());
    }

    #[test]
    fn a_retry_sooner_than_retry_after_breaks_the_rule_and_a_patient_one_does_not() {
        let mut refused = exchange(json!({}), None);
        refused.outcome = Outcome::Error(ctxbed_harness::model::ModelErrorKind::RateLimited);
        refused.status = 429;
        refused.retry_after = Some(Duration::from_secs(2));
        let mut early = exchange(json!({}), None);
        early.number = 4;
        early.received = refused.received + Duration::from_millis(500);
        let found = check(&scenario(None), &run(vec![refused.clone(), early.clone()]));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rule, "retry_after");
        assert!(
            found[0]
                .detail
                .contains("the 2 s that request 3's 429 asked for")
        );
        early.received = refused.received + Duration::from_millis(1_950);
        assert!(check(&scenario(None), &run(vec![refused, early])).is_empty());
    }

    #[test]
    fn thinking_left_off_fails_only_where_the_scenario_turns_it_on() {
        let off = json!({"model": "m", "messages": []});
        let on = json!({"model": "m", "messages": [], "thinking": {"type": "enabled", "budget_tokens": 1024}});
        let found = check(
            &scenario(Some(1024)),
            &run(vec![exchange(off.clone(), None)]),
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].detail.contains("extended thinking is off"));
        assert!(check(&scenario(Some(1024)), &run(vec![exchange(on, None)])).is_empty());
        assert!(check(&scenario(None), &run(vec![exchange(off, None)])).is_empty());
    }
}
