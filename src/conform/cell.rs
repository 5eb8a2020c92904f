//! One (scenario, harness) run: the scenario and its mock loaded (from a file or built in), the
//! adapter driven, the rules checked, the trace kept beside the log and, for adapters under
//! `peers/`, compared with its golden.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Cell, CellReport, ConformOptions, DriveOutcome, builtin, checks, drive, file, trace};
use crate::scenario::check::golden::{self, GoldenOutcome};
use crate::scenario::format::file::Layout;
use crate::serve::{Models, ServeOptions};
use ctxbed_sim::host::HostFaults;
use file::WireScenario;

/// Runs one wire scenario file against one harness.
pub fn run_one(path: &Path, harness: &str, options: &ConformOptions) -> CellReport {
    let layout = Layout::of(path);
    let golden = layout
        .root
        .join("golden")
        .join(&layout.name)
        .join(format!("{harness}.{}", golden::SNAPSHOT_EXTENSION));
    let report = blank_report(&layout.name, harness, golden, options);
    let scenario = match file::load(path, &layout.name) {
        Ok(scenario) => scenario,
        Err(diagnostics) => {
            return report.unloadable(format!("the scenario does not load:\n{diagnostics}"));
        }
    };
    let serve = serve_options(&scenario);
    let models = match Models::load_file(&layout.mock_model(&scenario.model), &serve) {
        Ok(models) => models,
        Err(error) => {
            return report.unloadable(format!("the mock model does not load:\n{error}"));
        }
    };
    run_cell(report, &scenario, models, serve, options)
}

/// Runs one built-in wire scenario ([`builtin::SUITE`]) against one harness. Built-in runs have
/// no goldens: the verdict is the rules alone.
pub fn run_builtin(
    builtin: &builtin::Builtin,
    harness: &str,
    options: &ConformOptions,
) -> CellReport {
    let source = Source {
        name: builtin.name,
        origin: "built in",
        scenario: builtin.scenario,
        model: builtin.model,
        mock: builtin.mock,
    };
    run_source(&source, harness, options)
}

/// A wire scenario and its mock model given as text (built in, or generated).
pub struct Source<'a> {
    /// The scenario's name without `wire/`.
    pub name: &'a str,
    /// Where the text comes from, for diagnostics (`built in`, `generated`).
    pub origin: &'a str,
    pub scenario: &'a str,
    pub model: &'a str,
    pub mock: &'a str,
}

/// Runs a wire scenario given as text against one harness; no golden: the verdict is the
/// rules alone.
pub fn run_source(source: &Source<'_>, harness: &str, options: &ConformOptions) -> CellReport {
    let name = format!("wire/{}", source.name);
    let report = blank_report(&name, harness, PathBuf::new(), options);
    let label = format!("({}) scenarios/{name}.toml", source.origin);
    let scenario = match file::parse(&label, source.scenario, &name) {
        Ok(scenario) => scenario,
        Err(diagnostics) => {
            return report.unloadable(format!("the scenario does not load:\n{diagnostics}"));
        }
    };
    let serve = serve_options(&scenario);
    let mock_label = format!("({}) mock-models/{}.toml", source.origin, source.model);
    let models = match Models::load_source(source.model, &mock_label, source.mock, &serve) {
        Ok(models) => models,
        Err(error) => {
            return report.unloadable(format!("the mock model does not load:\n{error}"));
        }
    };
    // No golden path: `run_cell` compares nothing.
    run_cell(report, &scenario, models, serve, options)
}

/// A report of `scenario` against `harness` before it runs.
fn blank_report(
    scenario: &str,
    harness: &str,
    golden: PathBuf,
    options: &ConformOptions,
) -> CellReport {
    let log = options
        .logs_dir
        .join(scenario)
        .join(format!("{harness}.log"));
    CellReport {
        scenario: scenario.to_string(),
        harness: harness.to_string(),
        version: String::new(),
        context: String::new(),
        kind: String::new(),
        cell: Cell::Fail { rules: Vec::new() },
        violations: Vec::new(),
        problem: None,
        trace: String::new(),
        golden,
        golden_outcome: None,
        log,
        elapsed: Duration::ZERO,
        defects: Vec::new(),
        allows: Vec::new(),
        applies: Default::default(),
    }
}

/// How the server behind one wire scenario answers.
fn serve_options(scenario: &WireScenario) -> ServeOptions {
    let mut serve = ServeOptions::default();
    serve.host.report_usage = scenario.usage;
    serve.host.faults = HostFaults {
        reset_requests: scenario.reset.clone(),
        cut_stream_requests: scenario.cut_stream.clone(),
    };
    serve.host.hang = Duration::from_secs(scenario.step_timeout_seconds + 5);
    serve.host.steps = true;
    serve.advertised_window = scenario.advertised_window;
    serve
}

/// Runs a loaded scenario and its models against the harness `report` names.
fn run_cell(
    mut report: CellReport,
    scenario: &WireScenario,
    models: Models,
    serve: ServeOptions,
    options: &ConformOptions,
) -> CellReport {
    let started = std::time::Instant::now();
    let harness = report.harness.clone();
    let harness = harness.as_str();
    let log = report.log.clone();
    let golden = report.golden.clone();
    if let Some(scripted) = models
        .iter()
        .next()
        .map(|(_, host)| host.model().scripted_steps())
        && scripted < scenario.steps.len()
    {
        return report.unloadable(format!(
            "the mock model {} scripts turns for {scripted} step(s), but the scenario has {} steps: each step's turns run up to its first plain text reply (or give turns `step = N`)",
            scenario.model,
            scenario.steps.len()
        ));
    }
    if let Some(parent) = log.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::remove_file(&log);
    // The thread's runtime and kept adapter serve every run of this thread.
    let outcome = super::pool::on_worker(|runtime, pool| {
        runtime.block_on(drive(scenario, harness, options, models, serve, &log, pool))
    });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(problem) => {
            report.problem = Some(problem);
            return report;
        }
    };
    report.elapsed = started.elapsed();
    let by_command = !options.pins_goldens(harness);
    judge(&mut report, scenario, outcome, by_command);
    // The trace is kept beside the adapter's log, wherever the logs go.
    if let Err(error) = std::fs::write(log.with_extension("trace"), &report.trace) {
        tracing::warn!(path = %log.display(), %error, "cannot keep the trace");
    }
    let pinned = options.pins_goldens(harness) && !golden.as_os_str().is_empty();
    // An interrupted run's trace says where the run was stopped, not what the harness does: it
    // is neither compared with the golden nor written beside it for review.
    if pinned && !matches!(report.cell, Cell::NotApplicable { .. }) && !super::interrupted() {
        // A run without a golden is `new`: its trace is written beside the golden's place for
        // review (outside CI), and it fails until it is blessed.
        report.golden_outcome = Some(
            match golden::check_from(
                &golden,
                &report.trace,
                options.mode,
                golden::WIRE_SNAPSHOT_SOURCE,
            ) {
                Ok(outcome) => outcome,
                Err(error) => GoldenOutcome::Mismatch {
                    diff: format!("the golden cannot be used: {error}"),
                    new_file: None,
                },
            },
        );
    }
    report
}

/// For a CLI row, the row's problem when a request offered no tool its scripted calls could be
/// made with: the scenario's tool results could not reach the CLI, which is no verdict on it.
fn no_own_tool(outcome: &DriveOutcome) -> Option<String> {
    if outcome.kind != "cli" {
        return None;
    }
    let marker = ctxbed_sim::host::own_tools::NO_OWN_TOOL;
    let exchange = outcome
        .steps
        .iter()
        .flat_map(|step| &step.exchanges)
        .find(|e| e.note.as_deref().is_some_and(|n| n.starts_with(marker)))?;
    Some(format!(
        "request {}: {marker}, so the CLI cannot run the scenario's tools (a CLI row needs a shell or a read-file tool)",
        exchange.number
    ))
}

/// Fills `report` from a finished run: the rules checked, the trace, the verdict. A command-line
/// adapter (`--adapter`, the pytest plugin, the npm package: `by_command`) is reported as
/// `adapter`, but its trace's header names the harness as its `ready` line does, when it does.
fn judge(
    report: &mut CellReport,
    scenario: &WireScenario,
    outcome: DriveOutcome,
    by_command: bool,
) {
    report.version = outcome.version.clone();
    report.defects = scenario.defects.clone();
    report.allows = scenario.allows.clone();
    report.context = outcome.context.clone();
    report.kind = outcome.kind.clone();
    let mut outcome = outcome;
    if outcome.problem.is_none() {
        outcome.problem = no_own_tool(&outcome);
    }
    let window = outcome.window;
    let mut violations = Vec::new();
    if let (Some(step), Some(problem)) = (outcome.looped, &outcome.problem) {
        violations.push(checks::looped(step, problem));
    }
    if outcome.unsupported.is_none() {
        violations.extend(checks::invariants(scenario, window, &outcome.steps));
        violations.extend(checks::api(&outcome.apis, &outcome.steps));
        violations.extend(checks::count_tokens(&outcome.steps));
        violations.extend(super::continuity::check(scenario, &outcome.steps));
        report.applies = super::continuity::Applies::of(scenario, &outcome.steps);
        violations.extend(super::refusals::check(scenario, &outcome.steps));
        if outcome.problem.is_none() {
            violations.extend(checks::expectations(scenario, &outcome.steps));
        }
    }
    let ready_name = outcome.name.trim();
    let name = if by_command && !ready_name.is_empty() {
        ctxbed_harness::format::snippet(ready_name, 100)
    } else {
        report.harness.clone()
    };
    report.trace = trace::render(
        scenario,
        trace::Harness {
            name: &name,
            version: &outcome.version,
            context: &outcome.context,
        },
        window,
        &outcome.steps,
        outcome.problem.as_deref(),
        &violations,
    );
    report.cell = if let Some(reason) = outcome.unsupported {
        Cell::NotApplicable { reason }
    } else if violations.is_empty() && outcome.problem.is_none() {
        Cell::Pass
    } else {
        let mut rules: Vec<String> = Vec::new();
        // A step stopped by the request limit is the harness's `loop`, not the adapter's fault.
        if outcome.problem.is_some() && outcome.looped.is_none() {
            rules.push("adapter".into());
        }
        for violation in &violations {
            if !rules.contains(&violation.rule) {
                rules.push(violation.rule.clone());
            }
        }
        Cell::Fail { rules }
    };
    report.problem = outcome.problem;
    report.violations = violations;
}
