//! Seed sweeps in `cargo test`: a range of generated scenarios keeps every invariant, a generated
//! scenario written to files loads back and runs to the same trace (each fault of the schedule
//! included), the generator draws every fault, and the shrinker shrinks them away.
//!
//! The seed range itself is swept by `tests/seeds.rs`, one test per block of seeds;
//! `ctxbed sweep --seeds N` runs many more in release.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use ctxbed::generate::generate;
use ctxbed::invariants::{ViolationKind, check};
use ctxbed::scenario::check::outcome::{RunOutput, run};
use ctxbed::scenario::format::file::{
    ConcurrentAppend, EstimatorChoice, Restart, Scenario, SessionStorage, SourceSpec, TaskAction,
    TaskSpec, load,
};
use ctxbed::scenario::format::network::NetworkSpec;
use ctxbed::scenario::format::write::write;
use ctxbed::sweep::{Shard, SweepConfig, check_seed, shrink_while, sweep};
use ctxbed_harness::agent::events::{CustomValue, EventKind};
use ctxbed_harness::context::Transform;
use ctxbed_harness::context::source::SOURCE_TIMEOUT_DEFAULT;
use ctxbed_harness::message::{ContentPart, Role, ToolOutput};
use ctxbed_harness::model::ModelError;
use ctxbed_harness::model::classify::classify;
use ctxbed_harness::task::plan::PlanMode;
use ctxbed_harness::task::requirements::{Decision, RequirementKind};
use ctxbed_harness::task::{TaskContextOptions, TaskScope};
use ctxbed_sim::mock::{ScriptedError, TurnAction};
use ctxbed_sim::netsim::HostFaults;
use ctxbed_sim::scripted::SourceFailure;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// Seeds of the file round-trip test.
const ROUND_TRIP_SEEDS: u64 = 40;
/// Cases of the written-scenario property when `PROPTEST_CASES` is not set.
const WRITE_CASES_DEFAULT: u32 = 64;
/// The property's fixed seed when `PROPTEST_RNG_SEED` is not set.
const WRITE_RNG_SEED_DEFAULT: u64 = 0x5ced_f11e;

#[test]
fn a_sweep_on_two_threads_checks_each_seed_of_its_shard_once() {
    let config = SweepConfig {
        start: 30,
        count: 24,
        shard: Shard { index: 1, total: 3 },
        jobs: 2,
        out_dir: None,
        shrink: false,
    };
    let seen = std::sync::Mutex::new(Vec::new());
    let report = sweep(&config, &|progress| {
        assert_eq!(progress.total, 8);
        seen.lock()
            .expect("not poisoned")
            .push((progress.seed, progress.done));
    });
    assert_eq!(report.runs, 8);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let mut seen = seen.into_inner().expect("not poisoned");
    let mut done: Vec<u64> = seen.iter().map(|(_, done)| *done).collect();
    done.sort_unstable();
    assert_eq!(done, (1..=8).collect::<Vec<_>>(), "one report per seed");
    seen.sort_unstable();
    let seeds: Vec<u64> = seen.iter().map(|(seed, _)| *seed).collect();
    assert_eq!(seeds, vec![31, 34, 37, 40, 43, 46, 49, 52]);
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

/// Loads the written file back and checks that every field the fault schedule sets came back
/// as it was generated, and that plain `ctxbed show` (what `ctxbed run` compares with a golden)
/// renders the same trace as the generated scenario.
fn round_trip_faults(seed: u64, root: &Path) {
    round_trip(seed, root);
    let mut generated = generate(seed);
    let path = root.join(format!("scenarios/regressions/seed-{seed}.toml"));
    let loaded = load(&path).expect("the written file loads");
    assert_eq!(generated.steps, loaded.steps, "seed {seed}: steps");
    assert_eq!(
        generated.fail_writes_under, loaded.fail_writes_under,
        "seed {seed}: write failures"
    );
    assert_eq!(generated.task, loaded.task, "seed {seed}: the task");
    let agent = |a: &ctxbed::scenario::format::file::AgentSpec| {
        (
            a.session_log,
            a.session_storage,
            a.session_tools,
            a.task_list,
            a.task_context,
        )
    };
    assert_eq!(
        agent(&generated.agent),
        agent(&loaded.agent),
        "seed {seed}: agent"
    );
    generated.name = loaded.name.clone();
    generated.label = loaded.label.clone();
    let expected = run(&generated).expect("runs").text;
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .arg("show")
        .arg(&path)
        .env("CI", "true")
        .output()
        .expect("ctxbed runs");
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "seed {seed}: ctxbed show failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        shown == expected,
        "seed {seed}: `ctxbed show` of the written file differs from the generated run"
    );
}

/// Which of the generator's faults and features a scenario has.
fn faults(scenario: &Scenario) -> BTreeSet<&'static str> {
    let mut found = agent_faults(scenario);
    model_and_source_faults(scenario, &mut found);
    found
}

/// Which of the generator's faults around the agent a scenario has: sessions, restarts,
/// concurrent writers, task and plan state, the network and the estimator.
fn agent_faults(scenario: &Scenario) -> BTreeSet<&'static str> {
    let mut found = BTreeSet::new();
    let jsonl = scenario.agent.session_storage == SessionStorage::Jsonl;
    if scenario
        .steps
        .iter()
        .filter(|s| s.restart.is_some())
        .count()
        > 1
    {
        found.insert("two restarts");
    }
    if scenario.agent.session_tools {
        found.insert("session tools");
    }
    if scenario.network.is_some() {
        found.insert("network");
    }
    if scenario.agent.task_context.allow_requirement_proposals {
        found.insert("requirement proposals");
    }
    let app_writes = scenario.steps.iter().any(|step| {
        step.workspace_writes
            .keys()
            .any(|path| path == "AGENTS.md" || path.starts_with("knowledge/"))
    });
    if app_writes {
        found.insert("app writes");
    }
    if scenario.agent.estimator == EstimatorChoice::Approximate {
        found.insert("approx-v2");
    }
    if scenario
        .task
        .as_ref()
        .is_some_and(|t| t.plan_mode.is_some() || t.plan_path.is_some())
        || scenario.steps.iter().any(|s| s.plan_mode.is_some())
    {
        found.insert("plan mode");
    }
    if scenario.tools.iter().any(|t| t.sets_plan_mode.is_some()) {
        found.insert("tool sets plan mode");
    }
    let summary_faults = scenario.agent.summary_model.as_ref().is_some_and(|model| {
        model
            .turns
            .iter()
            .any(|turn| !turn.latency.is_zero() || !matches!(turn.action, TurnAction::Summarize))
    });
    if summary_faults {
        found.insert("summary model faults");
    }
    for step in &scenario.steps {
        match step.restart {
            Some(Restart::Clean) if jsonl => {
                found.insert("restart clean");
            }
            Some(Restart::Torn) if jsonl => {
                found.insert("restart torn");
            }
            Some(Restart::Corrupt) if jsonl => {
                found.insert("restart corrupt");
            }
            Some(_) => {
                found.insert("restart memory");
            }
            None => {}
        }
        if step.concurrent_append.is_some() {
            found.insert("concurrent_append");
        }
        if !step.actions.is_empty() {
            found.insert("actions");
        }
        if !step.concurrent_actions.is_empty() {
            found.insert("concurrent_actions");
        }
    }
    if jsonl {
        found.insert("jsonl");
        let sessions_fail =
            |prefixes: &[String]| prefixes.iter().any(|p| "sessions/".starts_with(p.as_str()));
        let mut failing = sessions_fail(&scenario.fail_writes_under);
        for step in &scenario.steps {
            match &step.fail_writes_under {
                Some(prefixes) if sessions_fail(prefixes) => {
                    found.insert("sessions/ write failure from a later step");
                    failing = true;
                }
                Some(_) if failing => {
                    found.insert("sessions/ write failure heals");
                    failing = false;
                }
                _ => {}
            }
            if failing {
                found.insert("sessions/ write failure");
            }
        }
    }
    found
}

/// The faults of the model's schedule (in-process seeds only: over the network a timeout reads
/// like the network's own), of the context sources and of workspace writes.
fn model_and_source_faults(scenario: &Scenario, found: &mut BTreeSet<&'static str>) {
    if scenario.network.is_none() {
        let kinds: BTreeSet<&str> = scenario
            .mock
            .turns
            .iter()
            .filter_map(|turn| match &turn.action {
                TurnAction::Error(error) => model_fault(error),
                _ => None,
            })
            .collect();
        found.extend(kinds.iter().copied().filter(|kind| {
            // Another wording counts only alone, so its effect is its own.
            *kind != "overflow in another provider's wording" || !kinds.contains("model overflow")
        }));
    }
    for source in &scenario.sources {
        found.extend(source_faults(source));
        if source.blocks.iter().any(|block| block.required) {
            found.insert("required block");
        }
    }
    let workspace_fails = |prefixes: &[String]| prefixes.iter().any(|p| fails_workspace_writes(p));
    if workspace_fails(&scenario.fail_writes_under)
        || scenario.steps.iter().any(|step| {
            step.fail_writes_under
                .as_deref()
                .is_some_and(workspace_fails)
        })
    {
        found.insert("workspace write failure");
    }
}

/// The model fault a scripted error is, if it is one of the schedule's.
fn model_fault(error: &ScriptedError) -> Option<&'static str> {
    match error {
        ScriptedError::Overflow => Some("model overflow"),
        ScriptedError::Raw { status, body }
            if matches!(
                classify("any", *status, body),
                ModelError::ContextOverflow { .. }
            ) =>
        {
            Some("overflow in another provider's wording")
        }
        ScriptedError::Malformed(_) => Some("malformed reply"),
        ScriptedError::Timeout => Some("model timeout"),
        _ => None,
    }
}

/// The faults of one context source.
fn source_faults(source: &SourceSpec) -> Vec<&'static str> {
    let mut found = Vec::new();
    // A load that outlasts the timeout times out before it can fail otherwise.
    let slow = source.latency >= source.timeout.unwrap_or(SOURCE_TIMEOUT_DEFAULT);
    let times_out = slow || source.failure == Some(SourceFailure::Never);
    match source.failure {
        Some(SourceFailure::Error) if !slow => found.push("source error"),
        Some(SourceFailure::NoList) if !slow => found.push("source no list"),
        _ => {}
    }
    if times_out {
        found.push("source timeout");
    }
    if source.failure.is_some() || times_out {
        found.push(if source.omit_on_failure {
            "OMIT source fails"
        } else {
            "FAIL source fails"
        });
    }
    found
}

/// A write-failure prefix outside `sessions/` (the empty one included) fails workspace writes.
fn fails_workspace_writes(prefix: &str) -> bool {
    !prefix.starts_with("sessions/")
}

/// Every fault and feature the generator can draw (the rarest, a second restart, is left to
/// `the_generator_draws_its_rare_features`).
const FAULTS: [&str; 30] = [
    "model overflow",
    "overflow in another provider's wording",
    "malformed reply",
    "model timeout",
    "source error",
    "source no list",
    "source timeout",
    "OMIT source fails",
    "FAIL source fails",
    "required block",
    "workspace write failure",
    "jsonl",
    "network",
    "requirement proposals",
    "app writes",
    "restart clean",
    "restart torn",
    "restart corrupt",
    "restart memory",
    "session tools",
    "approx-v2",
    "plan mode",
    "tool sets plan mode",
    "sessions/ write failure",
    "sessions/ write failure from a later step",
    "sessions/ write failure heals",
    "concurrent_append",
    "actions",
    "concurrent_actions",
    "summary model faults",
];

#[test]
fn the_fault_schedule_draws_every_fault() {
    let mut seen: BTreeMap<&str, u64> = BTreeMap::new();
    for seed in 0..400 {
        let scenario = generate(seed);
        for fault in faults(&scenario) {
            *seen.entry(fault).or_default() += 1;
        }
        // Faults only where they mean something.
        let jsonl = scenario.agent.session_storage == SessionStorage::Jsonl;
        assert!(!jsonl || scenario.agent.session_log, "seed {seed}");
        let restarts = scenario.steps.iter().filter(|s| s.restart.is_some());
        assert!(
            scenario.agent.session_log || restarts.count() == 0,
            "seed {seed}"
        );
        assert!(
            !scenario.agent.session_tools || scenario.agent.session_log,
            "seed {seed}"
        );
        assert!(
            scenario.steps.first().is_none_or(|s| s.restart.is_none()),
            "seed {seed}: a restart comes before a later step"
        );
        let actions = scenario
            .steps
            .iter()
            .any(|s| !s.actions.is_empty() || !s.concurrent_actions.is_empty());
        assert!(!actions || scenario.agent.task_list, "seed {seed}");
    }
    for fault in FAULTS {
        assert!(
            seen.get(fault).copied().unwrap_or(0) > 0,
            "no seed below 400 has {fault}: {seen:?}"
        );
    }
    // Roughly the intended rates: JSON lines in about a third of the seeds, each other fault
    // in at least a few.
    let jsonl = seen["jsonl"];
    assert!((90..180).contains(&jsonl), "{seen:?}");
}

/// Features too rare for seeds below 400 are still drawn: a second restart, `read_file` pages
/// past the first line or character, and a summary model that answers with a tool call.
#[test]
fn the_generator_draws_its_rare_features() {
    let mut two_restarts = false;
    let mut read_offsets = BTreeSet::new();
    let mut summary_tool_call = false;
    for seed in 0..3_000 {
        let scenario = generate(seed);
        two_restarts |= faults(&scenario).contains("two restarts");
        for turn in &scenario.mock.turns {
            if let TurnAction::Reply { tool_calls, .. } = &turn.action {
                for call in tool_calls.iter().filter(|c| c.name == "read_file") {
                    for key in ["offset", "char_offset"] {
                        if call.arguments.get(key).is_some() {
                            read_offsets.insert(key);
                        }
                    }
                }
            }
        }
        summary_tool_call |= scenario.agent.summary_model.as_ref().is_some_and(|model| {
            model.turns.iter().any(|turn| {
                matches!(&turn.action, TurnAction::Reply { tool_calls, .. } if !tool_calls.is_empty())
            })
        });
    }
    assert!(two_restarts, "no seed below 3,000 restarts twice");
    assert_eq!(
        read_offsets.len(),
        2,
        "read_file offsets drawn: {read_offsets:?}"
    );
    assert!(
        summary_tool_call,
        "no summary model below 3,000 calls a tool"
    );
}

/// The scenario with one model, source or workspace fault taken out (a failing model turn
/// becomes a transient 503, a failing or slow source a healthy one, a workspace write failure
/// goes), or `None` for the faults this does not know how to take out.
fn without(fault: &str, mut scenario: Scenario) -> Option<Scenario> {
    match fault {
        "model overflow"
        | "overflow in another provider's wording"
        | "malformed reply"
        | "model timeout" => {
            for turn in &mut scenario.mock.turns {
                if matches!(&turn.action, TurnAction::Error(error) if model_fault(error) == Some(fault))
                {
                    turn.action = TurnAction::Error(ScriptedError::Transient(503));
                }
            }
        }
        "source error" | "source no list" | "source timeout" | "OMIT source fails"
        | "FAIL source fails" => {
            for source in &mut scenario.sources {
                if source_faults(source).contains(&fault) {
                    source.failure = None;
                    source.latency = Duration::ZERO;
                }
            }
        }
        "workspace write failure" => {
            scenario
                .fail_writes_under
                .retain(|p| !fails_workspace_writes(p));
            for step in &mut scenario.steps {
                if let Some(prefixes) = &mut step.fail_writes_under {
                    prefixes.retain(|p| !fails_workspace_writes(p));
                }
            }
        }
        _ => return None,
    }
    Some(scenario)
}

/// The faults do what they are for: among seeds 0..400, some run of a seed with the fault shows
/// its effect in the trace, and for the faults [`without`] can take out, shows it more often
/// than the same scenario without the fault. Only seeds with the fault are run, and each search
/// stops at the first.
#[test]
fn the_faults_take_effect() {
    let effects: [(&str, &[&str]); 23] = [
        ("model overflow", &["context_overflow"]),
        (
            "overflow in another provider's wording",
            &["context_overflow"],
        ),
        ("malformed reply", &["malformed_reply"]),
        ("model timeout", &["model did not answer within"]),
        ("source error", &["failed (error)", ":error\n"]),
        ("source no list", &["failed (no_list)", ":no_list\n"]),
        ("source timeout", &["failed (timeout)", ":timeout\n"]),
        (
            "OMIT source fails",
            &["transform source_unavailable:source/"],
        ),
        (
            "FAIL source fails",
            &["error source_failed: request preparation failed: source `"],
        ),
        (
            "workspace write failure",
            &["injected write failure", "_offload_failed:"],
        ),
        ("concurrent_append", &["validation=history_conflict"]),
        ("concurrent_actions", &["validation=state_conflict"]),
        ("actions", &["app: "]),
        ("sessions/ write failure", &["session_log_failed"]),
        (
            "sessions/ write failure heals",
            &["storage: writes no longer fail"],
        ),
        ("restart torn", &["torn=line"]),
        ("restart corrupt", &["is unreadable and lines follow it"]),
        ("restart clean", &["session_restored"]),
        ("restart memory", &["session_restored"]),
        ("session tools", &[" session_history "]),
        ("plan mode", &["plan_state"]),
        ("approx-v2", &["method=approx-v2-"]),
        ("requirement proposals", &[" propose_requirement ok "]),
    ];
    for (fault, effect) in effects {
        let shown = |scenario: &Scenario| {
            let text = run(scenario).expect("runs").text;
            effect
                .iter()
                .map(|e| text.matches(e).count())
                .sum::<usize>()
        };
        let found = (0..400).find(|seed| {
            let scenario = generate(*seed);
            faults(&scenario).contains(fault) && {
                let with = shown(&scenario);
                // Where the fault can be taken out, the effect must be its own: fewer
                // without it (a context overflow, say, also comes from the window check).
                match without(fault, scenario) {
                    Some(cleared) => with > shown(&cleared),
                    None => with > 0,
                }
            }
        });
        assert!(
            found.is_some(),
            "no seed below 400 with {fault} shows any of {effect:?} (more often than without it)"
        );
    }
    // Over the network, retries are invisible in the trace; the request timeout of the
    // `[network]` table is not.
    let timed_out = (0..400).any(|seed| {
        let scenario = generate(seed);
        scenario.network.as_ref().is_some_and(|network| {
            let effect = format!(
                "model did not answer within {}",
                ctxbed_harness::format::duration(network.request_timeout)
            );
            run(&scenario).expect("runs").text.contains(&effect)
        })
    });
    assert!(
        timed_out,
        "no network seed below 400 hits its request timeout"
    );
}

#[test]
fn a_written_scenario_with_each_fault_reruns_identically() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut covered = BTreeSet::new();
    for seed in 0..400 {
        let new: Vec<&str> = faults(&generate(seed))
            .into_iter()
            .filter(|fault| !covered.contains(fault))
            .collect();
        if new.is_empty() {
            continue;
        }
        round_trip_faults(seed, dir.path());
        covered.extend(new);
        if FAULTS.iter().all(|fault| covered.contains(fault)) {
            return;
        }
    }
    panic!("seeds below 400 cover only {covered:?}");
}

/// Every field the writer learned for the fault schedule (and the task table, task context and
/// plan modes), set by hand on one generated scenario, loads back equal.
#[test]
fn every_step_and_task_field_writes_and_loads_back() {
    let mut scenario = generate(5);
    scenario.agent.session_storage = SessionStorage::Jsonl;
    scenario.agent.session_tools = scenario.agent.session_log;
    scenario.agent.task_list = !scenario.agent.react;
    scenario.agent.task_context = TaskContextOptions {
        include_requirements: true,
        include_verification_results: true,
        allow_requirement_proposals: true,
    };
    scenario.fail_writes_under = vec!["notes/".to_string(), "sessions/".to_string()];
    scenario.task = Some(TaskSpec {
        scope: Some(TaskScope::new("export-fix", "Fix the export.")),
        plan_mode: Some(PlanMode::Plan),
        plan_path: Some("PLAN.md".to_string()),
    });
    if let Some(tool) = scenario.tools.first_mut() {
        tool.sets_plan_mode = Some(PlanMode::Build);
    }
    let template = scenario.steps[0].clone();
    let actions = vec![
        TaskAction::Propose {
            kind: RequirementKind::Constraint,
            text: "Columns follow the documented order.".to_string(),
            source: "user".to_string(),
        },
        TaskAction::Decide {
            requirement: "req-1".to_string(),
            decision: Decision::Reject,
            authority: "lead".to_string(),
            expected_revision: 2,
        },
        TaskAction::SubjectVersion("commit-a1".to_string()),
        TaskAction::InvalidateSubject,
        TaskAction::Verify {
            check: "export-tests".to_string(),
            passed: false,
            summary: "1 failed".to_string(),
        },
    ];
    let mut steps = vec![template.clone(); 3];
    steps[0].actions = actions.clone();
    steps[0].plan_mode = Some(PlanMode::Plan);
    steps[0].concurrent_append = Some(ConcurrentAppend {
        at: Duration::from_millis(250),
        role: Role::Assistant,
        text: "Ops: the export moved to v2.".to_string(),
    });
    steps[1].restart = Some(Restart::Torn);
    steps[1].fail_writes_under = Some(vec!["notes/".to_string()]);
    steps[2].fail_writes_under = Some(Vec::new());
    steps[1].concurrent_actions = actions
        .iter()
        .enumerate()
        .map(|(index, action)| (Duration::from_millis(100 * index as u64), action.clone()))
        .collect();
    steps[1].concurrent_append = Some(ConcurrentAppend {
        at: Duration::ZERO,
        role: Role::User,
        text: "Also check the totals.".to_string(),
    });
    steps[2].restart = Some(Restart::Clean);
    steps[2].plan_mode = Some(PlanMode::Build);
    scenario.steps = steps;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("scenarios/regressions/fields.toml");
    write(&scenario, &path, "every field").expect("writes");
    let loaded = match load(&path) {
        Ok(loaded) => loaded,
        Err(problems) => {
            let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            panic!("does not load back:\n{}", problems.join("\n"));
        }
    };
    assert_eq!(scenario.steps, loaded.steps);
    assert_eq!(scenario.fail_writes_under, loaded.fail_writes_under);
    assert_eq!(scenario.task, loaded.task);
    assert_eq!(scenario.tools, loaded.tools);
    assert_eq!(scenario.agent.session_storage, loaded.agent.session_storage);
    assert_eq!(scenario.agent.session_tools, loaded.agent.session_tools);
    assert_eq!(scenario.agent.task_list, loaded.agent.task_list);
    assert_eq!(scenario.agent.task_context, loaded.agent.task_context);
    scenario.name = loaded.name.clone();
    scenario.label = loaded.label.clone();
    let (a, b) = (run(&scenario).expect("runs"), run(&loaded).expect("runs"));
    assert_eq!(a.text, b.text);
    assert_eq!(a.workspace, b.workspace);
    // What the format cannot say is refused, with the reason.
    scenario.steps[0]
        .concurrent_append
        .as_mut()
        .expect("set")
        .role = Role::System;
    let error = write(&scenario, &path, "").expect_err("a System append has no file form");
    assert!(error.to_string().contains("concurrent append"), "{error}");
}

#[test]
fn the_shrinker_drops_each_fault() {
    // A stand-in failure that needs none of the faults: "some step exists".
    let seed = (0..400)
        .find(|seed| agent_faults(&generate(*seed)).len() >= 4)
        .expect("some seed has several faults");
    let mut scenario = generate(seed);
    // The features of generator version 4 too, whatever this seed drew.
    scenario.agent.session_log = true;
    scenario.agent.session_tools = true;
    scenario.agent.estimator = EstimatorChoice::Approximate;
    scenario.agent.task_context.allow_requirement_proposals = true;
    scenario.network = Some(a_network());
    for step in &mut scenario.steps {
        step.workspace_writes
            .insert("AGENTS.md".to_string(), "Keep replies short.".to_string());
    }
    if let Some(tool) = scenario.tools.first_mut() {
        tool.sets_plan_mode = Some(PlanMode::Plan);
    }
    let (shrunk, _) = shrink_while(scenario, 10_000, |s| !s.steps.is_empty());
    assert!(faults(&shrunk).is_empty(), "{:?}", faults(&shrunk));
    assert!(shrunk.sources.is_empty() && shrunk.mock.turns.len() <= 1);
    assert_eq!(shrunk.agent.session_storage, SessionStorage::Memory);
    assert!(shrunk.fail_writes_under.is_empty() && shrunk.task.is_none());
    // And one that needs exactly one: "some step restarts after a torn write" keeps that
    // restart and JSON lines, and drops every other fault.
    let Some(seed) = (0..400).find(|seed| {
        let found = agent_faults(&generate(*seed));
        found.contains("restart torn") && found.len() >= 3
    }) else {
        panic!("no seed below 400 has a torn restart among other faults");
    };
    let needs_torn = |s: &Scenario| {
        s.agent.session_storage == SessionStorage::Jsonl
            && s.steps
                .iter()
                .any(|step| step.restart == Some(Restart::Torn))
    };
    let (shrunk, _) = shrink_while(generate(seed), 10_000, needs_torn);
    let expected: BTreeSet<&str> = ["jsonl", "restart torn"].into_iter().collect();
    assert_eq!(faults(&shrunk), expected);
    assert!(shrunk.steps.iter().all(|s| s.fail_writes_under.is_none()));
}

/// A valid network table with one of each fault.
fn a_network() -> NetworkSpec {
    NetworkSpec {
        latency_min: Duration::from_millis(1),
        latency_max: Duration::from_millis(10),
        stream: true,
        request_timeout: Duration::from_secs(30),
        connect_timeout: Duration::from_secs(2),
        retry_attempts: 2,
        retry_base: Duration::from_millis(500),
        retry_max: Duration::from_secs(4),
        faults: HostFaults {
            reset_requests: vec![1],
            cut_stream_requests: vec![2],
        },
        partitions: vec![(Duration::from_millis(100), Duration::from_millis(900))],
        tick: Duration::from_millis(10),
    }
}

#[test]
fn a_network_table_the_loader_would_refuse_is_not_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut scenario = generate(1);
    scenario.network = Some(a_network());
    let path = dir.path().join("scenarios/network.toml");
    write(&scenario, &path, "").expect("a valid network table writes");
    assert_eq!(
        load(&path).expect("and loads back").network,
        Some(a_network())
    );
    type Breaks = fn(&mut NetworkSpec);
    let broken: [(&str, Breaks); 8] = [
        ("latency range", |n| {
            n.latency_min = Duration::from_millis(11)
        }),
        ("no attempt", |n| n.retry_attempts = 0),
        ("too many attempts", |n| n.retry_attempts = 11),
        ("capped delay", |n| n.retry_max = Duration::from_millis(499)),
        ("request 0", |n| n.faults.cut_stream_requests = vec![0]),
        ("partition", |n| {
            n.partitions = vec![(Duration::from_secs(1), Duration::from_secs(1))]
        }),
        ("tick 0", |n| n.tick = Duration::ZERO),
        ("coarse tick", |n| n.tick = Duration::from_millis(1_001)),
    ];
    for (what, breaks) in broken {
        let mut network = a_network();
        breaks(&mut network);
        assert!(network.refusal().is_some(), "{what}");
        scenario.network = Some(network);
        let error = write(&scenario, &path, "").expect_err(what);
        assert!(
            error.to_string().contains("the loader would refuse"),
            "{what}: {error}"
        );
    }
}

/// What a written and loaded scenario must equal: the checked scenario as it prints, without
/// what depends on where the file is (name, label) and on its layout (the line of each mock
/// turn, which only messages quote).
fn comparable(mut scenario: Scenario) -> String {
    scenario.name.clear();
    scenario.label.clear();
    let scripts = std::iter::once(&mut scenario.mock).chain(scenario.agent.summary_model.as_mut());
    for script in scripts {
        for turn in &mut script.turns {
            turn.line = 0;
        }
    }
    format!("{scenario:?}")
}

fn write_config() -> Config {
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = WRITE_CASES_DEFAULT;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(WRITE_RNG_SEED_DEFAULT);
    }
    config.failure_persistence = None;
    config
}

proptest! {
    #![proptest_config(write_config())]

    /// A checked scenario written to files and loaded back is the same scenario, for
    /// generated scenarios of any seed a file can hold (TOML integers stop at `i64::MAX`; the
    /// generator reaches every part of the format the writer can say).
    #[test]
    fn a_written_scenario_loads_back_equal(seed in 0..=i64::MAX as u64) {
        let generated = generate(seed);
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("scenarios/regressions/written.toml");
        write(&generated, &path, "property").expect("a generated scenario writes");
        let loaded = load(&path).unwrap_or_else(|problems| {
            let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            panic!("seed {seed} does not load back:\n{}", problems.join("\n"))
        });
        prop_assert_eq!(comparable(generated), comparable(loaded));
    }
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
    let fails = |scenario: &ctxbed::scenario::format::file::Scenario| {
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
    for row in ["I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I10"] {
        assert!(kinds.contains(row), "{row}");
    }
}

/// The first generated seed with task state whose run shows a Todo receipt and then compacts.
fn seed_with_todo_and_compaction() -> (ctxbed::scenario::format::file::Scenario, RunOutput) {
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
                        .any(|t| matches!(t, Transform::HistoryCompaction { .. })) =>
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
            for message in request.messages.iter_mut() {
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

/// The suite's corrupt-log scenario: its session log is damaged before step 3, so steps 3 and 4
/// cannot restore it.
fn corrupt_log_run() -> (Scenario, RunOutput) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/sessions/corrupt-log.toml");
    let scenario = load(&path).expect("the corrupt-log scenario loads");
    let output = run(&scenario).expect("it runs");
    (scenario, output)
}

/// A session file's bytes after the call of step `index` (counted from 0).
fn bytes_after<'a>(output: &'a mut RunOutput, file: &str, index: usize) -> &'a mut Vec<u8> {
    output.trace.steps[index]
        .session_files
        .get_mut(file)
        .and_then(|bytes| bytes.after.as_mut())
        .expect("the file's bytes after the call")
}

#[test]
fn the_append_only_check_sees_a_rewritten_log() {
    let (scenario, output) = corrupt_log_run();
    assert_eq!(check(&scenario, &output), Vec::new());
    let file = "sessions/agent/alice/export.jsonl";
    for index in [1, 2, 3] {
        let bytes = &output.trace.steps[index].session_files[file];
        assert!(
            bytes.before.is_some() && bytes.after.is_some(),
            "step {}: the file's bytes are recorded around the call",
            index + 1
        );
    }
    let i10 = |output: &RunOutput| -> Vec<String> {
        check(&scenario, output)
            .into_iter()
            .filter(|v| v.kind == ViolationKind::SessionLogRewritten)
            .map(|v| v.to_string())
            .collect()
    };
    // A call that rewrote a committed line of a readable log.
    let mut rewritten = output.clone();
    bytes_after(&mut rewritten, file, 1)[0] = b' ';
    let found = i10(&rewritten);
    assert!(
        found.len() == 1
            && found[0].contains("at step 2")
            && found[0].contains("changed at byte 0"),
        "{found:?}"
    );
    // A call that appended to the corrupt log it could not restore.
    let mut appended = output.clone();
    bytes_after(&mut appended, file, 3).extend_from_slice(b"{}\n");
    let found = i10(&appended);
    assert!(
        found.len() == 1
            && found[0].contains("at step 4")
            && found[0].contains("is corrupt at line 9 but the call changed it"),
        "{found:?}"
    );
    // Appending is what a readable log allows.
    let mut grown = output;
    bytes_after(&mut grown, file, 1).extend_from_slice(b"{}\n");
    assert_eq!(i10(&grown), Vec::<String>::new());
}

/// Copies the first 32 characters of a body that `pick` accepts (the last 32 when `tail`) into
/// the first manifest of that body's step, and returns what the checker then reports.
fn leak_body(pick: impl Fn(&str) -> bool, tail: bool) -> Vec<ctxbed::invariants::Violation> {
    let (scenario, mut output) = seed_with_todo_and_compaction();
    assert!(check(&scenario, &output).is_empty());
    let (step, head) = output
        .trace
        .steps
        .iter()
        .enumerate()
        .find_map(|(index, step)| {
            let body = step
                .requests
                .iter()
                .flat_map(|r| &r.messages)
                .map(|m| m.text())
                .find(|text| text.chars().count() >= 32 && pick(text))?;
            step.manifests().next()?;
            let window: String = if tail {
                let mut last: Vec<char> = body.chars().rev().take(32).collect();
                last.reverse();
                last.into_iter().collect()
            } else {
                body.chars().take(32).collect()
            };
            Some((index, window))
        })
        .expect("a step with a manifest and a long body");
    for event in &mut output.trace.steps[step].events {
        if let EventKind::Custom {
            value: CustomValue::ContextBuild(build),
            ..
        } = &mut event.kind
        {
            build
                .manifest
                .transforms
                .push(Transform::HistoryCompactionFailed { reason: head });
            break;
        }
    }
    check(&scenario, &output)
}

#[test]
fn the_leak_check_sees_body_text_in_a_manifest() {
    for tail in [false, true] {
        let violations = leak_body(
            |text| {
                let chars: Vec<char> = text.chars().collect();
                let window = if tail {
                    &chars[chars.len() - 32..]
                } else {
                    &chars[..32]
                };
                window.iter().all(|c| !matches!(c, '\n' | '"' | '\\'))
            },
            tail,
        );
        assert!(
            violations
                .iter()
                .any(|v| v.kind == ViolationKind::ManifestLeak
                    && v.detail.contains("holds body text")),
            "tail {tail}: {violations:?}"
        );
    }
    // A body with a newline in its head is found too, though the manifest's JSON escapes it.
    let violations = leak_body(|text| text.chars().take(32).any(|c| c == '\n'), false);
    assert!(
        violations
            .iter()
            .any(|v| v.kind == ViolationKind::ManifestLeak),
        "{violations:?}"
    );
}
