//! Steps that stop the harness mid-step: what a step line and a `ready` line say about them,
//! how the answer reads, and the expectation every such step carries.
//!
//! A scenario marks a step `interrupt = true`: at the step's first tool call the harness stops
//! before running the tool, as when a human does not approve it (LangGraph's `interrupt()`, the
//! OpenAI Agents SDK's `needs_approval`), and the adapter answers
//! `{"type":"interrupted","step":N}`. The steps after it go on in the same session, so the
//! scenario shows what the harness does with a call left without its result.
//!
//! Or `crash = true`: the harness's process dies while the step's first tool runs (the tool ends
//! it, as a runtime killed mid-tool or a recycled container), no answer comes, and the next step
//! starts a new process (`restart = true`), which continues the session from what the harness
//! had persisted. Only an adapter whose `ready` line declares `"interrupts": true` (or
//! `"crashes": true`) runs such a scenario; for any other it is not applicable, as a scenario in
//! an API the harness cannot speak.

use serde_json::Value;

use super::checks::{StepEnd, StepRun, Violation};
use super::file::{WireScenario, WireStep};

/// The error kind an interrupted step ends with (what `expect.error` names).
pub const INTERRUPTED: &str = "interrupted";

/// The error kind a step that crashed the harness ends with.
pub const CRASHED: &str = "crashed";

/// What a `ready` line declares to run a step that stops the harness, which steps ask for it,
/// and what they do, for the reason a scenario is not applicable.
type Stop = (&'static str, fn(&WireStep) -> bool, &'static str);

const STOPS: [Stop; 2] = [
    (
        "interrupts",
        |step| step.interrupt,
        "stops the harness at a tool call (`interrupt`)",
    ),
    (
        "crashes",
        |step| step.crash,
        "ends the harness's process while a tool runs (`crash`)",
    ),
];

/// Why a scenario that interrupts or crashes the harness is not applicable to an adapter, or
/// `None` when its `ready` line declares what the scenario asks (`"interrupts": true`,
/// `"crashes": true`).
pub fn unsupported(scenario: &WireScenario, ready: &Value) -> Option<String> {
    STOPS.into_iter().find_map(|(field, asks, what)| {
        let declared = ready.get(field).and_then(Value::as_bool) == Some(true);
        (scenario.steps.iter().any(asks) && !declared).then(|| {
            format!(
                "a step of this scenario {what}, and the adapter's `ready` line does not declare \
                 `\"{field}\": true`"
            )
        })
    })
}

/// How a step that asked for a crash ended when its adapter's output closed without an
/// answer: as it asked.
pub fn crashed() -> StepEnd {
    StepEnd::Error {
        kind: CRASHED.to_string(),
        message: "the process ended while the step's tool ran, as the step asked".to_string(),
    }
}

/// How an `interrupted` answer to step `number` ends it: as the error kind [`INTERRUPTED`] when the
/// step asked for it, a protocol error when it did not.
pub fn end(number: usize, asked: bool) -> Result<StepEnd, String> {
    if asked {
        Ok(StepEnd::Error {
            kind: INTERRUPTED.to_string(),
            message: "the harness stopped at a tool call, as the step asked".to_string(),
        })
    } else {
        Err(format!(
            "the adapter answered `interrupted` to step {number}, which asks for no interrupt"
        ))
    }
}

/// Each step that asked for an interrupt or a crash and ended otherwise (`expect`): the harness
/// ran past its tool call, or the adapter did not stop it.
pub fn expectations(scenario: &WireScenario, steps: &[StepRun]) -> Vec<Violation> {
    let mut found = Vec::new();
    for (index, (step, run)) in scenario.steps.iter().zip(steps).enumerate() {
        let ended = |want: &str| matches!(&run.end, StepEnd::Error { kind, .. } if kind == want);
        let asked = if step.interrupt {
            (!ended(INTERRUPTED))
                .then_some("stops the harness at its first tool call (`interrupt = true`)")
        } else if step.crash {
            (!ended(CRASHED))
                .then_some("ends the harness's process while its first tool runs (`crash = true`)")
        } else {
            None
        };
        if let Some(asked) = asked
            && !run.end.interrupted()
        {
            let number = index + 1;
            let mut violation = Violation::new(
                "expect",
                format!(
                    "step {number}: the step {asked}, but it {}",
                    super::checks::describe_end(&run.end)
                ),
            );
            violation.step = Some(number);
            found.push(violation);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conform::file::parse;
    use serde_json::json;

    fn scenario(interrupt: bool) -> WireScenario {
        let text = format!(
            "description = \"d\"\nmodel = \"m\"\n[[steps]]\ninput = \"a\"\ninterrupt = {interrupt}\n[[steps]]\ninput = \"b\"\n"
        );
        parse("i.toml", &text, "wire/i").expect("parses")
    }

    fn run(end: StepEnd) -> StepRun {
        StepRun {
            end,
            exchanges: Vec::new(),
            count_tokens: 0,
        }
    }

    #[test]
    fn only_an_adapter_that_declares_interrupts_runs_a_scenario_that_asks_for_one() {
        let asks = scenario(true);
        let steps: Vec<bool> = asks.steps.iter().map(|s: &WireStep| s.interrupt).collect();
        assert_eq!(steps, [true, false]);
        let ready = json!({"type": "ready", "interrupts": true});
        assert_eq!(unsupported(&asks, &ready), None);
        let silent = json!({"type": "ready"});
        let reason = unsupported(&asks, &silent).expect("not applicable");
        assert!(reason.contains("\"interrupts\": true"), "{reason}");
        assert_eq!(unsupported(&scenario(false), &silent), None);
    }

    #[test]
    fn a_step_that_crashes_the_harness_is_followed_by_a_new_process() {
        let crash = "description = \"d\"\nmodel = \"m\"\n[[steps]]\ninput = \"a\"\ncrash = true\n[[steps]]\ninput = \"b\"\n";
        let problems = parse("c.toml", crash, "wire/c").expect_err("no restart after the crash");
        assert!(
            problems.to_string().contains("no new process takes over"),
            "{problems}"
        );
        let both = crash.replace("crash = true", "crash = true\ninterrupt = true");
        let problems = parse("c.toml", &both, "wire/c").expect_err("crash and interrupt");
        assert!(problems.to_string().contains("both crashes"), "{problems}");
        let restarted = format!("{crash}restart = true\n");
        let scenario = parse("c.toml", &restarted, "wire/c").expect("parses");
        let silent = json!({"type": "ready", "interrupts": true});
        let reason = unsupported(&scenario, &silent).expect("crashes not declared");
        assert!(reason.contains("\"crashes\": true"), "{reason}");
        let ready = json!({"type": "ready", "crashes": true});
        assert_eq!(unsupported(&scenario, &ready), None);
        let replied = [
            run(StepEnd::Reply("done".into())),
            run(StepEnd::Reply("ok".into())),
        ];
        let found = expectations(&scenario, &replied);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].detail.contains("`crash = true`"), "{found:?}");
        let ended = [run(crashed()), run(StepEnd::Reply("ok".into()))];
        assert!(expectations(&scenario, &ended).is_empty());
    }

    #[test]
    fn an_interrupted_answer_ends_only_a_step_that_asked_for_it() {
        let ended = end(1, true).expect("asked");
        assert!(matches!(ended, StepEnd::Error { ref kind, .. } if kind == INTERRUPTED));
        let wrong = end(2, false).expect_err("not asked");
        assert!(wrong.contains("step 2"), "{wrong}");
    }

    #[test]
    fn a_step_that_asked_for_an_interrupt_and_replied_fails_expect() {
        let asks = scenario(true);
        let replied = [
            run(StepEnd::Reply("done".into())),
            run(StepEnd::Reply("ok".into())),
        ];
        let found = expectations(&asks, &replied);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].rule.as_str(), found[0].step), ("expect", Some(1)));
        assert!(found[0].detail.contains("replied \"done\""), "{found:?}");
        let stopped = [
            run(end(1, true).expect("asked")),
            run(StepEnd::Reply("ok".into())),
        ];
        assert!(expectations(&asks, &stopped).is_empty());
    }
}
