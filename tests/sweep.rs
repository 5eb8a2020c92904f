//! Seed sweeps in `cargo test`: a range of generated scenarios keeps every invariant, a generated
//! scenario written to files loads back and runs to the same trace, and the shrinker shrinks.
//!
//! `CTXBED_SWEEP_SEEDS=N` changes how many seeds the sweep test runs (default
//! [`SWEEP_SEEDS_DEFAULT`]); `ctxbed sweep --seeds N` runs many more in release.

use std::collections::BTreeSet;
use std::path::Path;

use ctxbed::agent::events::{CustomValue, EventKind};
use ctxbed::message::{ContentPart, ToolOutput};
use ctxbed::scenario::file::load;
use ctxbed::scenario::runner::{RunOutput, run};
use ctxbed::scenario::write::write;
use ctxbed::sim::generate::generate;
use ctxbed::sim::invariants::{ViolationKind, check};
use ctxbed::sim::sweep::{Shard, SweepConfig, check_seed, shrink_while, sweep};

/// Seeds the sweep test checks: about ten seconds in a debug build on two cores.
const SWEEP_SEEDS_DEFAULT: u64 = 200;

/// Seeds of the file round-trip test.
const ROUND_TRIP_SEEDS: u64 = 40;

#[test]
fn a_sweep_keeps_every_invariant() {
    let count = std::env::var("CTXBED_SWEEP_SEEDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(SWEEP_SEEDS_DEFAULT);
    let config = SweepConfig {
        start: 0,
        count,
        shard: Shard::ALL,
        jobs: std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        out_dir: None,
        shrink: false,
    };
    let report = sweep(&config, &|_| {});
    assert_eq!(report.runs, count);
    let failures: Vec<String> = report
        .failures
        .iter()
        .map(|failure| {
            let violations: Vec<String> =
                failure.violations.iter().map(|v| v.to_string()).collect();
            format!(
                "seed {}: {}\n  reproduce: cargo run --release -- sweep --seeds 1 --start {}",
                failure.seed,
                violations.join("; "),
                failure.seed
            )
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The written name depends on where the file goes; everything else must load back as it was.
fn round_trip(seed: u64, root: &Path) {
    let mut generated = generate(seed);
    let path = root.join(format!("scenarios/regressions/seed-{seed}.toml"));
    let written = write(&generated, &path, "round trip").expect("a generated scenario writes");
    assert_eq!(
        written.mock_models.len(),
        1 + usize::from(generated.agent.summary_model.is_some())
    );
    let loaded = match load(&path) {
        Ok(loaded) => loaded,
        Err(problems) => {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            panic!(
                "seed {seed} does not load back:\n{}\n{text}",
                problems.join("\n")
            );
        }
    };
    generated.name = loaded.name.clone();
    generated.label = loaded.label.clone();
    let (a, b) = (run(&generated).expect("runs"), run(&loaded).expect("runs"));
    assert_eq!(
        a.text, b.text,
        "seed {seed}: the written scenario runs differently"
    );
    assert_eq!(
        a.workspace, b.workspace,
        "seed {seed}: the workspace differs"
    );
}

#[test]
fn generated_scenarios_round_trip_through_files() {
    let dir = tempfile::tempdir().expect("temp dir");
    for seed in 0..ROUND_TRIP_SEEDS {
        round_trip(seed, dir.path());
    }
}

#[test]
fn the_same_seed_generates_the_same_scenario() {
    for seed in [0, 1, u64::from(u32::MAX)] {
        assert_eq!(
            format!("{:?}", generate(seed)),
            format!("{:?}", generate(seed))
        );
    }
    assert_ne!(format!("{:?}", generate(1)), format!("{:?}", generate(2)));
    assert!(check_seed(5).is_empty());
}

#[test]
fn the_shrinker_keeps_only_what_the_failure_needs() {
    // A stand-in failure: "some history message is a tool result". The smallest scenario that
    // still shows it has one step, no sources, tools or instructions, and one history message.
    let seed = (0..200)
        .find(|seed| {
            let scenario = generate(*seed);
            scenario.steps.len() > 1
                && scenario.history.iter().any(|h| {
                    h.messages.len() > 2
                        && h.messages.iter().any(|m| m.tool_results().next().is_some())
                })
        })
        .expect("some seed has a history with tool results");
    let fails = |scenario: &ctxbed::scenario::file::Scenario| {
        scenario
            .history
            .iter()
            .flat_map(|h| &h.messages)
            .any(|m| m.tool_results().next().is_some())
    };
    let (shrunk, checks) = shrink_while(generate(seed), 10_000, fails);
    assert!(fails(&shrunk));
    assert!(checks > 0);
    assert_eq!(shrunk.steps.len(), 1);
    assert!(shrunk.sources.is_empty() && shrunk.tools.is_empty());
    assert!(shrunk.instructions.is_empty() && shrunk.workspace_files.is_empty());
    assert_eq!(shrunk.mock.turns.len(), 1, "only the final turn stays");
    let messages: Vec<_> = shrunk.history.iter().flat_map(|h| &h.messages).collect();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages[0].id, "h0001",
        "ids are renumbered as the loader would"
    );
    // A shrunk scenario still writes and loads.
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("seed.toml");
    write(&shrunk, &path, "").expect("writes");
    assert!(load(&path).is_ok());
}

#[test]
fn every_violation_kind_names_its_invariant() {
    let kinds: BTreeSet<&str> = ViolationKind::ALL.iter().map(|k| k.invariant()).collect();
    for row in ["I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9"] {
        assert!(kinds.contains(row), "{row}");
    }
}

/// The first generated seed with task state whose run shows a Todo receipt and then compacts.
fn seed_with_todo_and_compaction() -> (ctxbed::scenario::file::Scenario, RunOutput) {
    for seed in 0..400 {
        let scenario = generate(seed);
        if !scenario.agent.task_list || !scenario.agent.session_log {
            continue;
        }
        let output = run(&scenario).expect("a generated scenario runs");
        let events = output.trace.steps.iter().flat_map(|s| &s.events);
        let mut receipt = false;
        let mut compacted_after = false;
        for event in events {
            match &event.kind {
                EventKind::ToolResult { result, .. }
                    if result.tool_name == "todo_write" && !result.is_error =>
                {
                    receipt = true;
                }
                EventKind::Custom {
                    value: CustomValue::ContextBuild(build),
                    ..
                } if receipt
                    && build
                        .manifest
                        .transforms
                        .iter()
                        .any(|t| t.starts_with("history_compaction:")) =>
                {
                    compacted_after = true;
                }
                _ => {}
            }
        }
        if compacted_after {
            return (scenario, output);
        }
    }
    panic!("no seed below 400 writes a Todo list and then compacts");
}

#[test]
fn the_todo_check_sees_a_list_lost_after_compaction() {
    let (scenario, mut output) = seed_with_todo_and_compaction();
    assert!(check(&scenario, &output).is_empty());
    // Hide every Todo line from the requests: the checker must notice.
    for step in &mut output.trace.steps {
        for request in &mut step.requests {
            for message in &mut request.messages {
                for part in &mut message.parts {
                    if let ContentPart::Text { text } = part {
                        *text = text.replace("- [", "- (");
                    }
                    if let ContentPart::ToolResult(result) = part {
                        for output in &mut result.outputs {
                            if let ToolOutput::Text { text } = output {
                                *text = text.replace("- [", "- (");
                            }
                        }
                    }
                }
            }
        }
    }
    let kinds: BTreeSet<ViolationKind> = check(&scenario, &output).iter().map(|v| v.kind).collect();
    assert!(kinds.contains(&ViolationKind::TodoLost), "{kinds:?}");
}

#[test]
fn the_durable_history_check_sees_a_missing_record() {
    let (scenario, mut output) = seed_with_todo_and_compaction();
    assert!(check(&scenario, &output).is_empty());
    let records = output
        .session_logs
        .values_mut()
        .next()
        .expect("a session log");
    let index = records
        .iter()
        .rposition(|r| r.kind == "message")
        .expect("a message record");
    records.remove(index);
    let violations = check(&scenario, &output);
    assert!(
        violations
            .iter()
            .any(|v| v.kind == ViolationKind::CommittedMessageLost
                && v.detail.contains("no `message` record")),
        "{violations:?}"
    );
}
