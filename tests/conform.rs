//! `ctxbed conform` end to end: the reference row over every wire scenario (against its goldens,
//! twice, byte for byte), and each way an adapter can fail, with the clear failure it must get.

use std::path::{Path, PathBuf};

use ctxbed::conform::{self, Cell, CellReport, ConformOptions};
use ctxbed::scenario::check::golden::{GoldenMode, GoldenOutcome, WIRE_SNAPSHOT_SOURCE};

#[path = "support/golden_snapshot.rs"]
mod golden_snapshot;

fn options(peers: &Path, logs: &Path) -> ConformOptions {
    ConformOptions {
        peers_dir: std::path::absolute(peers).expect("an absolute peers path"),
        logs_dir: logs.to_path_buf(),
        ctxbed_bin: PathBuf::from(env!("CARGO_BIN_EXE_ctxbed")),
        mode: GoldenMode::Compare { write_new: false },
        adapters: Vec::new(),
        reuse: true,
    }
}

fn wire_scenarios() -> Vec<PathBuf> {
    ctxbed::suite::discover(&[PathBuf::from("scenarios/wire")]).expect("the wire scenarios")
}

/// The reference row over every wire scenario: two runs alike byte for byte (one in a new
/// adapter process, one in an adapter process kept across scenarios), each trace asserted
/// against `golden/wire/<scenario>/ctxbed.snap` through insta (so `cargo insta review` shows a
/// changed trace; `CTXBED_BLESS=1` or `ctxbed conform --harness ctxbed --bless` rewrites them).
#[test]
fn the_reference_row_matches_its_goldens_twice() {
    let bless = ctxbed::scenario::check::golden::bless_from_env().expect("the bless switch");
    let logs = tempfile::tempdir().expect("a temporary directory");
    let mut options = options(Path::new("peers"), logs.path());
    options.mode = if bless {
        GoldenMode::Bless
    } else {
        GoldenMode::Skip
    };
    let scenarios = wire_scenarios();
    assert!(
        scenarios.len() >= 12,
        "at least 12 wire scenarios, found {}",
        scenarios.len()
    );
    // Each scenario twice: once in a process of its own, and once by one adapter process that
    // serves every scenario in turn (sent `reset` between them), on a second thread.
    options.reuse = false;
    let kept_logs = tempfile::tempdir().expect("a temporary directory");
    let mut kept_options = self::options(Path::new("peers"), kept_logs.path());
    kept_options.mode = GoldenMode::Skip;
    let (fresh, kept) = std::thread::scope(|scope| {
        let kept = scope.spawn(|| {
            let reports: Vec<CellReport> = scenarios
                .iter()
                .map(|path| conform::run_one(path, "ctxbed", &kept_options))
                .collect();
            conform::release_adapters();
            reports
        });
        let fresh: Vec<CellReport> = scenarios
            .iter()
            .map(|path| conform::run_one(path, "ctxbed", &options))
            .collect();
        (fresh, kept.join().expect("the kept adapter's runs"))
    });
    let served_by_kept = kept
        .iter()
        .filter(|report| {
            std::fs::read_to_string(&report.log)
                .is_ok_and(|log| log.starts_with("[ctxbed] this adapter process served"))
        })
        .count();
    assert_eq!(
        served_by_kept,
        scenarios.len() - 1,
        "every scenario after the first is served by the kept adapter"
    );
    let mut mismatched = Vec::new();
    for (first, second) in fresh.iter().zip(&kept) {
        assert_eq!(
            first.trace, second.trace,
            "{}: a new adapter process and the kept one differ",
            first.scenario
        );
        assert!(
            first
                .golden
                .ends_with(format!("{}/ctxbed.snap", first.scenario)),
            "{}: the golden is {}",
            first.scenario,
            first.golden.display()
        );
        assert!(
            first.problem.is_none(),
            "{}: {:?}",
            first.scenario,
            first.problem
        );
        // The reference row passes every wire scenario: a pinned failure is not enough here.
        assert_eq!(
            first.cell,
            Cell::Pass,
            "{}:\n{}",
            first.scenario,
            first.trace
        );
        if !bless {
            // Every scenario is asserted before the test fails, so one run of `cargo insta
            // review` shows every changed trace.
            let asserted = std::panic::catch_unwind(|| {
                golden_snapshot::assert_golden(&first.golden, &first.trace, WIRE_SNAPSHOT_SOURCE)
            });
            match asserted {
                Ok(Ok(())) => {}
                Ok(Err(problem)) => mismatched.push(format!("{}: {problem}", first.scenario)),
                Err(_) => mismatched.push(format!(
                    "{}: the trace differs from {} (review with `cargo insta review`)",
                    first.scenario,
                    first.golden.display()
                )),
            }
        }
    }
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
}

fn probe(adapter: &str) -> CellReport {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let options = options(Path::new("tests/wire-suite/peers"), logs.path());
    let report = conform::run_one(
        Path::new("tests/wire-suite/scenarios/wire/probe.toml"),
        adapter,
        &options,
    );
    // The probe has no goldens: each verdict is asserted here, and a run that applies is `new`.
    let expected = match report.cell {
        Cell::NotApplicable { .. } => None,
        _ => Some(GoldenOutcome::Missing { new_file: None }),
    };
    assert_eq!(report.golden_outcome, expected);
    report
}

fn problem(report: &CellReport) -> &str {
    report.problem.as_deref().unwrap_or("")
}

/// The adapter's problem names `needle`.
fn assert_problem(report: &CellReport, needle: &str) {
    assert!(problem(report).contains(needle), "{}", problem(report));
}

#[test]
fn the_reference_adapter_passes_the_probe() {
    let report = probe_with_reference();
    assert_eq!(report.cell, Cell::Pass, "{}", report.trace);
    assert!(
        report.trace.contains("-> 200 tool_calls"),
        "{}",
        report.trace
    );
}

fn probe_with_reference() -> CellReport {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let options = options(Path::new("peers"), logs.path());
    conform::run_one(
        Path::new("tests/wire-suite/scenarios/wire/probe.toml"),
        "ctxbed",
        &options,
    )
}

#[test]
fn a_crashing_adapter_fails_with_its_exit_status() {
    let report = probe("crash");
    assert!(matches!(&report.cell, Cell::Fail { rules } if rules.contains(&"adapter".to_string())));
    assert_problem(&report, "exited before answering");
    assert_problem(&report, "exit status: 7");
}

#[test]
fn a_hanging_adapter_is_stopped_at_the_step_timeout() {
    let started = std::time::Instant::now();
    let report = probe("hang");
    assert_problem(&report, "no answer within 3 s");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(report.cell, Cell::Fail { .. }));
}

#[test]
fn garbage_on_the_protocol_is_named() {
    let report = probe("garbage");
    assert_problem(&report, "not a protocol line");
    assert_problem(&report, "Loading model weights");
}

#[test]
fn an_answer_to_the_wrong_step_is_a_protocol_error() {
    let report = probe("wrong-step");
    assert_problem(&report, "wrong or missing `step`");
}

#[test]
fn an_adapter_over_the_request_limit_is_stopped() {
    let report = probe("flood");
    assert_problem(
        &report,
        "step 1: 6 requests — the harness kept sending past any sensible retry",
    );
    assert_eq!(
        report.cell,
        Cell::Fail {
            rules: vec!["loop".to_string()]
        },
        "{}",
        report.trace
    );
}

#[test]
fn an_adapter_that_never_calls_the_model_fails_model_called() {
    let report = probe("silent");
    assert_fails_only_model_called(&report);
}

/// The adapter ran without a problem and its only failing rule is `model_called`.
fn assert_fails_only_model_called(report: &CellReport) {
    assert!(report.problem.is_none(), "{}", problem(report));
    assert_eq!(
        report.cell,
        Cell::Fail {
            rules: vec!["model_called".to_string()]
        },
        "{}",
        report.trace
    );
}

#[test]
fn an_adapter_that_cannot_speak_the_api_is_not_applicable() {
    let report = probe("unsupported");
    assert_eq!(
        report.cell,
        Cell::NotApplicable {
            reason: "no client for this API".into()
        }
    );
}

#[test]
fn a_missing_adapter_is_named_with_its_path() {
    let report = probe("no-such-harness");
    assert_problem(&report, "no-such-harness/run");
    assert_problem(&report, "missing or not executable");
}

#[cfg(unix)]
#[test]
fn sigterm_stops_conform_and_its_adapter_at_once() {
    use std::process::{Command, Stdio};
    let logs = tempfile::tempdir().expect("a temporary directory");
    let child = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args([
            "conform",
            "--peers",
            "tests/wire-suite/peers",
            "--harness",
            "hang-named",
            "--logs",
        ])
        .arg(logs.path())
        .arg("tests/wire-suite/scenarios/wire/probe.toml")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctxbed conform starts");
    // The adapter answers setup at once, then hangs on its step (the step timeout is 3 s).
    std::thread::sleep(std::time::Duration::from_millis(1_000));
    let started = std::time::Instant::now();
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    let output = child.wait_with_output().expect("conform exits");
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1_500),
        "stopped after {:?}",
        started.elapsed()
    );
    assert_eq!(output.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("interrupted: the run was asked to stop"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("interrupted"), "{stderr}");
    let leftover = Command::new("pgrep")
        .args(["-f", "ctxbed-hang-named-adapter"])
        .output()
        .expect("pgrep runs");
    assert!(leftover.stdout.is_empty(), "the adapter is still running");
    let pending = std::path::Path::new("tests/wire-suite/golden/wire/probe/hang-named.snap.new");
    assert!(
        !pending.exists(),
        "an interrupted run wrote a snapshot for review: {}",
        pending.display()
    );
}

#[test]
fn requests_sent_while_setting_up_belong_to_no_step() {
    let report = probe("warm-up");
    // Its only request was the warm-up: the step itself never called the model.
    assert_fails_only_model_called(&report);
    assert!(!report.trace.contains("request 1 "), "{}", report.trace);
}

/// Runs `scenario` against the planted test adapter `adapter` (tests/wire-suite/peers).
fn planted(scenario: &Path, adapter: &str) -> CellReport {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let options = options(Path::new("tests/wire-suite/peers"), logs.path());
    conform::run_one(scenario, adapter, &options)
}

/// Per step, its verdict: the rules it broke (empty: it passed).
fn step_verdicts(report: &CellReport, steps: usize) -> Vec<Vec<String>> {
    (1..=steps)
        .map(|step| {
            conform::checks::step_rules(&report.violations, step)
                .into_iter()
                .map(str::to_string)
                .collect()
        })
        .collect()
}

#[test]
fn a_failed_step_leaves_the_verdicts_of_later_steps_as_they_were() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let reference = options(Path::new("peers"), logs.path());
    let mut shown = 0;
    for path in wire_scenarios() {
        let name = conform::scenario_name(&path);
        let steps = conform::file::load(&path, &name)
            .expect("a wire scenario")
            .steps
            .len();
        if steps < 2 {
            continue;
        }
        // Fail the second step where a third follows (so a session of its own, as in
        // two-sessions, is the one failed), else the first.
        let failed = if steps >= 3 { 2 } else { 1 };
        let clean = conform::run_one(&path, "ctxbed", &reference);
        let broken = planted(&path, &format!("planted-fail-step-{failed}"));
        let before = step_verdicts(&clean, steps);
        let after = step_verdicts(&broken, steps);
        assert!(
            after[failed - 1].contains(&"model_called".to_string()),
            "{name}: the planted step must fail:\n{}",
            broken.trace
        );
        assert_eq!(
            before[failed..],
            after[failed..],
            "{name}: the steps after the failed step {failed} got other verdicts:\n{}",
            broken.trace
        );
        assert!(
            broken
                .trace
                .contains(&format!("(after failed step {failed})")),
            "{name}: a later step's verdict says an earlier step failed:\n{}",
            broken.trace
        );
        shown += 1;
    }
    assert!(shown >= 10, "shown on {shown} scenarios");
}

#[test]
fn a_harness_that_resends_an_overflow_forever_is_shown_by_loop() {
    // The planted `retry_forever` resends the overflowed request until it passes; where the
    // window refuses it for good, the step's request limit (90) stops it, and the kill is shown
    // by `loop`, first of its rules.
    let report = planted(
        Path::new("scenarios/wire/advertised-window.toml"),
        "planted-retry-forever",
    );
    let Cell::Fail { rules } = &report.cell else {
        panic!(
            "retry_forever must fail advertised-window:\n{}",
            report.trace
        );
    };
    assert_eq!(
        rules.first().map(String::as_str),
        Some("loop"),
        "{}",
        report.trace
    );
    assert!(!rules.iter().any(|rule| rule == "adapter"), "{rules:?}");
    assert!(
        report
            .trace
            .contains("step 3: 91 requests — the harness kept sending past any sensible retry"),
        "{}",
        report.trace
    );
}

/// Per wire scenario, a planted fault of the kind its description warns against, and a rule the
/// run must then break.
const FAILS_EACH_SCENARIO: &[(&str, &str, &str)] = &[
    ("advertised-window", "planted-no-context", "expect"),
    ("advertised-window", "planted-retry-same", "overflow_retry"),
    ("basic-tool-round", "planted-orphan-call", "pairing"),
    ("cache-prefix", "planted-no-context", "window"),
    ("chat-reasoning", "planted-drop-thinking", "reasoning"),
    ("chat-reasoning", "planted-no-context", "window"),
    ("completion-budget", "planted-no-context", "window"),
    ("count-tokens", "planted-count-storm", "count_tokens"),
    ("cut-stream", "planted-orphan-call", "pairing"),
    ("empty-text-tool-call", "planted-blank-text", "refused"),
    ("first-input-too-large", "planted-no-context", "window"),
    ("gateway-overflow", "planted-no-context", "expect"),
    ("gateway-overflow", "planted-retry-same", "overflow_retry"),
    ("huge-tool-arguments", "planted-no-context", "window"),
    ("huge-tool-result", "planted-no-context", "window"),
    ("images", "planted-images-free", "window"),
    ("images-anthropic", "planted-images-free", "window"),
    ("malformed-reply", "planted-empty-reply-on-error", "reply"),
    (
        "invalid-tool-arguments",
        "planted-strict-arguments",
        "expect",
    ),
    ("long-session", "planted-no-context", "window"),
    ("many-steps", "planted-no-context", "window"),
    ("many-steps", "planted-past-tools", "retention"),
    ("overflow-anthropic", "planted-no-context", "expect"),
    ("overflow-anthropic", "planted-retry-same", "overflow_retry"),
    ("overflow-openai", "planted-no-context", "expect"),
    ("overflow-openai", "planted-retry-same", "overflow_retry"),
    ("parallel-tools", "planted-orphan-call", "pairing"),
    ("parallel-tools-anthropic", "planted-orphan-call", "pairing"),
    ("rate-limit-retry", "planted-no-retry", "expect"),
    ("rate-limit-storm", "planted-no-retry", "expect"),
    ("responses-overflow", "planted-no-context", "expect"),
    ("responses-overflow", "planted-retry-same", "overflow_retry"),
    ("responses-overflow-stream", "planted-no-context", "expect"),
    (
        "responses-overflow-stream",
        "planted-retry-same",
        "overflow_retry",
    ),
    ("responses-reasoning", "planted-no-context", "window"),
    ("resumed-session", "planted-memory-sessions", "expect"),
    ("resumed-session", "planted-no-context", "window"),
    ("second-overflow", "planted-no-context", "expect"),
    ("second-overflow", "planted-retry-same", "overflow_retry"),
    ("summary-cut-fan-out", "planted-orphan-call", "pairing"),
    ("thinking-compaction", "planted-drop-thinking", "reasoning"),
    ("thinking-compaction", "planted-no-context", "window"),
    ("tool-error", "planted-drop-tool-errors", "expect"),
    ("tool-schemas-fill-window", "planted-no-context", "window"),
    ("tool-results-languages", "planted-no-context", "window"),
    (
        "trim-starts-with-tool-result",
        "planted-orphan-call",
        "pairing",
    ),
    ("two-sessions", "planted-one-session", "expect"),
    ("window-cjk", "planted-no-context", "window"),
    ("window-cjk-no-usage", "planted-no-context", "window"),
    ("window-english", "planted-no-context", "window"),
    ("window-english-no-usage", "planted-no-context", "window"),
];

#[test]
fn every_wire_scenario_fails_the_harness_its_description_warns_of() {
    let scenarios = wire_scenarios();
    for path in &scenarios {
        let name = conform::scenario_name(path);
        assert!(
            FAILS_EACH_SCENARIO
                .iter()
                .any(|(scenario, ..)| format!("wire/{scenario}") == name),
            "{name} has no planted fault that fails it: add one to FAILS_EACH_SCENARIO"
        );
    }
    for (scenario, adapter, rule) in FAILS_EACH_SCENARIO {
        let path = PathBuf::from(format!("scenarios/wire/{scenario}.toml"));
        let report = planted(&path, adapter);
        assert!(
            matches!(&report.cell, Cell::Fail { rules } if rules.iter().any(|r| r == rule)),
            "{scenario} with {adapter} must fail `{rule}`, got {:?}:\n{}",
            report.cell,
            report.trace
        );
        assert!(report.problem.is_none(), "{scenario}: {:?}", report.problem);
    }
}

/// The alternative outcomes a description offers, and the mutant that behaves so: a scenario
/// whose description offers one declares the mutant in `allows`, so the kill matrix
/// (`ctxbed conform --mutants`) checks that the promise holds (the mutant passes).
const PROMISES: &[(&str, &str)] = &[
    ("retries or reports", "no_retry"),
    ("or not at all", "drop_thinking"),
];

#[test]
fn every_alternative_a_description_offers_is_checked_by_the_kill_matrix() {
    let mut offered = 0;
    for path in wire_scenarios() {
        let name = conform::scenario_name(&path);
        let scenario = conform::file::load(&path, &name).expect("a wire scenario");
        let description = scenario.description.to_lowercase();
        assert!(
            description.split_whitespace().count() >= 8,
            "{name}: the description should say what the scenario exercises"
        );
        for (words, mutant) in PROMISES {
            if description.contains(words) {
                offered += 1;
                assert!(
                    scenario.allows.iter().any(|a| a == mutant),
                    "{name}: its description offers \"{words}\", so it must declare `allows = [\"{mutant}\"]` for the kill matrix to check the promise"
                );
            }
        }
        // "Reports the provider's overflow" is no acceptable end: the request that overflowed
        // was over the window.
        assert!(
            !description.contains("reports the provider's overflow"),
            "{name}: a request the provider refuses as an overflow fails `window`"
        );
    }
    assert!(
        offered >= 3,
        "the promises were found in {offered} descriptions"
    );
}

#[test]
fn verdicts_do_not_depend_on_how_a_summariser_words_its_prompt() {
    // Three real summariser shapes (tests/wire-suite/harness/summariser.py), none saying
    // "summarise": the instruction in the system prompt, in the last user turn, or after the
    // history wrapped in tags. Each summary is a side request: it uses no scripted turn, so the
    // steps after it get their own answers and every verdict is the same.
    let shapes = [
        "summariser-system",
        "summariser-last-user",
        "summariser-tags",
    ];
    for scenario in [
        "window-english",
        "window-cjk",
        "many-steps",
        "overflow-openai",
    ] {
        let path = PathBuf::from(format!("scenarios/wire/{scenario}.toml"));
        for shape in shapes {
            let report = planted(&path, shape);
            assert_eq!(
                report.cell,
                Cell::Pass,
                "{scenario} [{shape}]:\n{}",
                report.trace
            );
            assert!(
                report.trace.contains(" side ") && report.trace.contains("0 tools"),
                "{scenario} [{shape}] summarised at least once:\n{}",
                report.trace
            );
        }
    }
}

#[test]
fn a_row_without_a_golden_is_new_and_fails_until_blessed() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args([
            "conform",
            "--peers",
            "tests/wire-suite/peers",
            "--harness",
            "planted-no-retry",
        ])
        .arg("--logs")
        .arg(logs.path())
        .arg("scenarios/wire/basic-tool-round.toml")
        .env("CI", "true")
        .output()
        .expect("ctxbed conform runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.starts_with("NEW  wire/basic-tool-round [planted-no-retry]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("new: no golden at golden/wire/basic-tool-round/planted-no-retry.snap yet; its verdict would be pass"),
        "{stdout}"
    );
    assert!(stdout.contains("1 new (no golden yet)"), "{stdout}");
    assert!(
        !Path::new("golden/wire/basic-tool-round/planted-no-retry.snap.new").exists(),
        "CI never writes files"
    );
}

/// Generated wire scenarios find a planted fault and shrink it: with no context management, a
/// drawn seed breaks `window`; the smallest draft found still breaks it, is no larger, and is
/// written as a scenario that loads and fails the same way when run from its file.
#[test]
fn generated_seeds_find_a_planted_fault_and_shrink_it() {
    use ctxbed::conform::explore;
    let logs = tempfile::tempdir().expect("a temporary directory");
    let out = tempfile::tempdir().expect("a temporary directory");
    let options = options(Path::new("tests/wire-suite/peers"), logs.path());
    let found = (0..20)
        .map(|seed| {
            let none_shrunk = std::collections::BTreeSet::new();
            explore::explore_seed(
                seed,
                "planted-no-context",
                &options,
                out.path(),
                12,
                &none_shrunk,
            )
        })
        .map(|outcome| outcome.expect("written"))
        .find(|outcome| outcome.rules.iter().any(|rule| rule == "window"))
        .expect("a seed among the first twenty that breaks `window` without context management");
    let drawn = ctxbed::conform::generate::Draft::draw(found.seed);
    let smallest = found.smallest.expect("a smallest draft");
    assert!(smallest.size() <= drawn.size(), "{smallest:?}");
    let (scenario, mock) = found.written.expect("the files");
    assert!(mock.is_file(), "{}", mock.display());
    let again = conform::run_one(&scenario, "planted-no-context", &options);
    assert!(
        matches!(&again.cell, Cell::Fail { rules } if rules.iter().any(|r| r == &found.rules[0])),
        "{:?}\n{}",
        again.cell,
        again.trace
    );
    // A seed whose first rule was shrunk for already is reported, not shrunk again
    // (`--shrink-once-per-rule`).
    let shrunk = std::collections::BTreeSet::from([found.rules[0].clone()]);
    let again = explore::explore_seed(
        found.seed,
        "planted-no-context",
        &options,
        out.path(),
        12,
        &shrunk,
    )
    .expect("explored");
    assert_eq!(again.rules, found.rules);
    assert!(again.smallest.is_none() && again.written.is_none() && again.shrink_runs == 0);
    // The reference harness passes the same seed.
    let reference = options_with_peers(logs.path());
    let report = explore::run_draft(&drawn, "ctxbed", &reference);
    assert_eq!(report.cell, Cell::Pass, "{}", report.trace);
}

fn options_with_peers(logs: &Path) -> ConformOptions {
    options(Path::new("peers"), logs)
}
