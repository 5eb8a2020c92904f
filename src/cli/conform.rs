//! `ctxbed conform`: wire scenarios (files, or the built-in suite) against harnesses through
//! their adapters (directories under `peers/`, or any command line).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::conform::{self, ConformOptions, matrix, report};
use ctxbed::scenario::check::golden::{GoldenMode, GoldenOutcome};

use super::serve::stop_signal;

/// Sets [`conform::INTERRUPTED`] on Ctrl-C or SIGTERM, from a thread of its own, so a signal
/// between two runs is not lost; the running adapter is then killed by its run.
pub fn listen_for_stop() {
    let spawned = std::thread::Builder::new()
        .name("ctxbed-stop".into())
        .spawn(|| {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(stop_signal());
            conform::INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    if let Err(error) = spawned {
        errln!("warning: Ctrl-C will not stop adapters cleanly: {error}");
    }
}

/// Every adapter directory under `peers` (one holding an executable `run`), sorted, with the
/// reference adapter first.
fn every_adapter(peers: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(peers)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("run").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.sort_by_key(|name| name != "ctxbed");
    names
}

/// `ctxbed conform`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ConformArgs {
    /// Wire scenario files or directories (default: `scenarios/wire` when the current directory
    /// has one, else the built-in suite).
    pub paths: Vec<PathBuf>,
    /// A built-in wire scenario by name (`overflow-openai`); repeat for several. `--list` names
    /// them.
    #[arg(long = "scenario")]
    pub scenarios: Vec<String>,
    /// List the built-in wire scenarios and their mock models, and exit.
    #[arg(long)]
    pub list: bool,
    /// An adapter given as a command line, run by `sh -c` in the current directory
    /// (`--adapter "python my_adapter.py"`); repeat for several. Its runs are reported as
    /// `adapter` (`adapter-2`, … for more) and have no goldens: the verdict is the rules alone.
    #[arg(long = "adapter")]
    pub adapters: Vec<String>,
    /// A harness to test (an adapter directory under --peers); repeat for several (default:
    /// every adapter there, unless --adapter is given).
    #[arg(long = "harness")]
    pub harnesses: Vec<String>,
    /// The directory of adapters.
    #[arg(long, default_value = "peers")]
    pub peers: PathBuf,
    /// Where each run's adapter log, trace and requests are kept, one folder per scenario.
    #[arg(long, default_value = "ctxbed-conform")]
    pub logs: PathBuf,
    /// Rewrite each (scenario, harness) golden trace instead of comparing.
    #[arg(long)]
    pub bless: bool,
    /// Fail on every failing verdict, even one its golden pins as known.
    #[arg(long)]
    pub strict: bool,
    /// Write the matrix here as Markdown, as HTML beside it (`.html`), and a page per harness
    /// in the directory of its stem (`docs/peers.md`: `docs/peers/<harness>.md` and `.html`).
    #[arg(long)]
    pub matrix: Option<PathBuf>,
    /// `text`, or `json`: one object per run (verdict, broken rules, each violation with its
    /// step, the trace and where the log is), then a summary, one per line.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub format: String,
    /// Draw this many wire scenarios from seeds instead of running files or the suite, run each
    /// against every harness with the wire rules as properties, shrink each failing one and
    /// write it under --out; findings are pinned in `golden/generated/<harness>.txt`.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub generate: Option<u64>,
    /// The first seed of --generate.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where --generate writes the smallest failing scenarios, one suite per harness
    /// (`<out>/<harness>/scenarios/wire` and `mock-models`).
    #[arg(long, default_value = "ctxbed-generated")]
    pub out: PathBuf,
    /// Runs at a time (each its own server and adapter process); reports are printed in the
    /// same order as with one. With --generate: harnesses explored at a time (each harness's
    /// seeds in order, in one job).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub jobs: u64,
    /// Start a new adapter process for every scenario, even for an adapter that declares it
    /// can be reset between scenarios (by default its process serves the next scenario of its
    /// harness on the same job).
    #[arg(long)]
    pub fresh_process: bool,
    /// With --generate: where each harness's findings are pinned (`<pins>/<harness>.txt`).
    #[arg(long, requires = "generate", default_value = "golden/generated")]
    pub pins: PathBuf,
    /// With --generate: shrink only the first seed that breaks each rule (the first rule it
    /// breaks); later seeds breaking it are reported, not shrunk. For long explorations.
    #[arg(long, requires = "generate")]
    pub shrink_once_per_rule: bool,
    /// Run every scenario against the reference harness and each of its mutants (the same
    /// harness with one known defect) instead of against harnesses, and check the kill matrix:
    /// each scenario fails the mutants it declares in `defects`, every mutant fails some
    /// scenario. With --matrix, write the matrix there as Markdown (docs/mutants.md).
    #[arg(long, conflicts_with_all = ["harnesses", "adapters", "bless", "generate"])]
    pub mutants: bool,
    /// The most runs --generate spends shrinking one failing seed.
    #[arg(long, default_value_t = ctxbed::conform::explore::SHRINK_RUNS_DEFAULT)]
    pub shrink_runs: usize,
}

/// One wire scenario to run: a file, or one of the built-in suite.
enum Target {
    File(PathBuf),
    Builtin(&'static conform::builtin::Builtin),
}

impl Target {
    fn run(&self, harness: &str, options: &ConformOptions) -> conform::CellReport {
        match self {
            Target::File(path) => conform::run_one(path, harness, options),
            Target::Builtin(builtin) => conform::run_builtin(builtin, harness, options),
        }
    }
}

fn list_builtins() -> ExitCode {
    let suite = conform::builtin::SUITE;
    let name_width = suite.iter().map(|b| b.name.len()).max().unwrap_or(0);
    let model_width = suite.iter().map(|b| b.model.len()).max().unwrap_or(0);
    for builtin in suite {
        outln!(
            "{:<name_width$}  {:<model_width$}  {}",
            builtin.name,
            builtin.model,
            conform::builtin::description(builtin)
        );
    }
    ExitCode::SUCCESS
}

/// The scenarios named: files and directories, built-in names, or by default the current
/// directory's `scenarios/wire` or else the whole built-in suite.
fn targets(paths: &[PathBuf], names: &[String]) -> Result<Vec<Target>, String> {
    let mut targets = Vec::new();
    for name in names {
        match conform::builtin::scenario(name) {
            Some(builtin) => targets.push(Target::Builtin(builtin)),
            None => {
                let known: Vec<&str> = conform::builtin::SUITE.iter().map(|b| b.name).collect();
                return Err(format!(
                    "no built-in wire scenario `{name}`; built in: {}",
                    known.join(", ")
                ));
            }
        }
    }
    let local = Path::new("scenarios/wire");
    let paths = if paths.is_empty() && names.is_empty() && local.is_dir() {
        vec![local.to_path_buf()]
    } else {
        paths.to_vec()
    };
    if paths.is_empty() && names.is_empty() {
        targets.extend(conform::builtin::SUITE.iter().map(Target::Builtin));
        return Ok(targets);
    }
    if !paths.is_empty() {
        let files = ctxbed::suite::discover(&paths).map_err(|error| {
            format!("{error}; name wire scenario files, or built-in ones with --scenario")
        })?;
        if files.is_empty() {
            return Err(format!(
                "no wire scenario (*.toml) under {}",
                paths[0].display()
            ));
        }
        targets.extend(files.into_iter().map(Target::File));
    }
    Ok(targets)
}

/// Each `--adapter` command line with the name its runs are reported under: `adapter`, then
/// `adapter-2`, `adapter-3`, ….
fn named_adapters(adapters: &[String]) -> Vec<(String, String)> {
    adapters
        .iter()
        .enumerate()
        .map(|(index, line)| {
            let name = if index == 0 {
                "adapter".to_string()
            } else {
                format!("adapter-{}", index + 1)
            };
            (name, line.clone())
        })
        .collect()
}

/// The harnesses to run: those named (or every adapter under `peers` when none is named and no
/// command line is given), each checked to have its adapter, then the command-line adapters.
fn harnesses_to_run(
    harnesses: Vec<String>,
    named_adapters: &[(String, String)],
    peers: &Path,
) -> Result<Vec<String>, String> {
    let mut harnesses = if harnesses.is_empty() && named_adapters.is_empty() {
        every_adapter(peers)
    } else {
        harnesses
    };
    if harnesses.is_empty() && named_adapters.is_empty() {
        return Err(format!(
            "no adapter in {} (a directory with an executable `run`); name one with --harness, or give a command with --adapter",
            peers.display()
        ));
    }
    for harness in &harnesses {
        if !peers.join(harness).join("run").is_file() {
            return Err(format!(
                "{} has no adapter `{harness}` (expected {}); adapters: {}",
                peers.display(),
                peers.join(harness).join("run").display(),
                every_adapter(peers).join(", ")
            ));
        }
    }
    harnesses.extend(named_adapters.iter().map(|(name, _)| name.clone()));
    Ok(harnesses)
}

/// The options every run shares: where adapters and logs are, this binary, the command-line
/// adapters, and whether goldens are blessed or compared (a `.new` trace written outside CI).
fn conform_options(
    peers: PathBuf,
    logs: PathBuf,
    adapters: Vec<(String, String)>,
    bless: bool,
    reuse: bool,
) -> ConformOptions {
    let ctxbed_bin = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("ctxbed"));
    let peers_dir = std::path::absolute(&peers).unwrap_or(peers);
    ConformOptions {
        peers_dir,
        logs_dir: logs,
        ctxbed_bin,
        adapters,
        reuse,
        mode: if bless {
            GoldenMode::Bless
        } else {
            GoldenMode::Compare {
                write_new: std::env::var_os("CI").is_none(),
            }
        },
    }
}

/// Prints one report, as JSON or as text.
fn printer(json: bool, strict: bool) -> impl Fn(&conform::CellReport) + Sync {
    move |report| {
        if json {
            outln!("{}", report::json(report, strict));
        } else {
            out!("{}", report::describe(report, strict));
        }
    }
}

/// Runs every (scenario, harness) pair, `jobs` at a time, handing each report to `print` in
/// the pairs' order as soon as it and those before it are done, until done or interrupted.
fn run_all(
    targets: &[Target],
    harnesses: &[String],
    options: &ConformOptions,
    jobs: usize,
    print: &(dyn Fn(&conform::CellReport) + Sync),
) -> Vec<conform::CellReport> {
    // Harness by harness, so a job's next run is most often of the harness whose adapter it
    // kept.
    let pairs: Vec<(&Target, &String)> = harnesses
        .iter()
        .flat_map(|harness| targets.iter().map(move |target| (target, harness)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (sender, receiver) = std::sync::mpsc::channel();
    let mut reports = Vec::with_capacity(pairs.len());
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, pairs.len().max(1)) {
            let sender = sender.clone();
            let (pairs, next) = (&pairs, &next);
            scope.spawn(move || {
                loop {
                    let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((target, harness)) = pairs.get(index) else {
                        break;
                    };
                    if conform::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    if sender.send((index, target.run(harness, options))).is_err() {
                        break;
                    }
                }
                conform::release_adapters();
            });
        }
        drop(sender);
        let mut waiting = std::collections::BTreeMap::new();
        for (index, report) in receiver {
            waiting.insert(index, report);
            while let Some(report) = waiting.remove(&reports.len()) {
                print(&report);
                reports.push(report);
            }
        }
        // Interrupted: the runs that did finish, in order.
        for report in waiting.into_values() {
            print(&report);
            reports.push(report);
        }
    });
    reports
}

/// Prints the summary line (or JSON object) of the runs, and returns how many failed.
fn summarize(
    reports: &[conform::CellReport],
    scenarios: usize,
    harnesses: usize,
    elapsed: std::time::Duration,
    json: bool,
    strict: bool,
) -> usize {
    let failed = reports.iter().filter(|r| !r.ok(strict)).count();
    let count =
        |keep: &dyn Fn(&conform::CellReport) -> bool| reports.iter().filter(|r| keep(r)).count();
    let passed = count(&|r| r.cell == conform::Cell::Pass && r.ok(strict));
    let pinned = count(&|r| matches!(r.cell, conform::Cell::Fail { .. }) && r.ok(strict));
    let not_applicable = count(&|r| matches!(r.cell, conform::Cell::NotApplicable { .. }));
    let new = count(&|r| matches!(r.golden_outcome, Some(GoldenOutcome::Missing { .. })));
    if json {
        outln!(
            "{}",
            serde_json::json!({
                "type": "summary",
                "runs": reports.len(),
                "scenarios": scenarios,
                "harnesses": harnesses,
                "passed": passed,
                "pinned": pinned,
                "failed": failed - new,
                "new": new,
                "not_applicable": not_applicable,
            })
        );
    } else {
        outln!(
            "{} runs ({} scenarios x {} harnesses): {passed} passed, {pinned} failing as their goldens pin, {} failed or changed, {new} new (no golden yet), {not_applicable} not applicable, in {:.0} s",
            reports.len(),
            scenarios,
            harnesses,
            failed - new,
            elapsed.as_secs_f64()
        );
    }
    failed
}

/// Writes the matrix to `path` as Markdown, beside it as HTML, and a page per harness in the
/// directory of its stem (`docs/peers/`), with the bug zoo of the suite the adapters are in
/// (`<peers>/../bugs`, classified as `<peers>/../docs/bugs.md` records); `false` (after saying
/// why) when a file cannot be written.
fn write_matrix(
    path: &Path,
    reports: &[conform::CellReport],
    harnesses: &[String],
    peers_dir: &Path,
    elapsed: std::time::Duration,
) -> bool {
    let absolute =
        |path: &std::path::Path| std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // A run without a golden links to the trace written for review, where there is one.
    let trace = |report: &conform::CellReport| match &report.golden_outcome {
        Some(GoldenOutcome::Missing {
            new_file: Some(new_file),
        }) => absolute(new_file),
        _ => absolute(&report.golden),
    };
    let suite = peers_dir.parent().unwrap_or(peers_dir);
    let layout = matrix::Layout {
        path: absolute(path),
        peers_dir: peers_dir.to_path_buf(),
        trace: &trace,
        zoo: matrix::Zoo::load(&suite.join("bugs"), &suite.join("docs").join("bugs.md")),
    };
    if let Err(error) = std::fs::create_dir_all(layout.harness_dir()) {
        errln!(
            "error: cannot create {}: {error}",
            layout.harness_dir().display()
        );
        return false;
    }
    for (target, text) in matrix::pages(reports, harnesses, &layout, elapsed) {
        if let Err(error) = std::fs::write(&target, text) {
            errln!("error: cannot write {}: {error}", target.display());
            return false;
        }
    }
    outln!(
        "matrix written to {} (and .html), a page per harness in {}",
        path.display(),
        path.with_extension("").display()
    );
    true
}

/// CI never writes goldens.
fn refuse_bless_in_ci(bless: bool) -> Result<(), ExitCode> {
    if bless && std::env::var_os("CI").is_some() {
        errln!(
            "error: --bless with CI set: CI never writes goldens; bless locally, review the traces, and commit"
        );
        return Err(ExitCode::from(2));
    }
    Ok(())
}

/// What `--generate` asks, if it is given.
fn exploration(arguments: &ConformArgs) -> Option<super::explore::Exploration> {
    let (seed, out, runs) = (arguments.seed, arguments.out.clone(), arguments.shrink_runs);
    arguments.generate.map(|count| super::explore::Exploration {
        once_per_rule: arguments.shrink_once_per_rule,
        pins: arguments.pins.clone(),
        ..super::explore::Exploration::new(count, seed, out, runs)
    })
}

pub fn conform_command(arguments: ConformArgs) -> ExitCode {
    let exploration = exploration(&arguments);
    let ConformArgs {
        paths,
        scenarios,
        list,
        adapters,
        harnesses,
        peers,
        logs,
        bless,
        strict,
        matrix: matrix_path,
        format,
        jobs,
        fresh_process,
        mutants,
        ..
    } = arguments;
    let json = format == "json";
    if list {
        return list_builtins();
    }
    if mutants {
        return mutants_command(&paths, &scenarios, logs, matrix_path, jobs as usize);
    }
    let named_adapters = named_adapters(&adapters);
    let chosen = targets(&paths, &scenarios).and_then(|targets| {
        harnesses_to_run(harnesses, &named_adapters, &peers).map(|harnesses| (targets, harnesses))
    });
    let (targets, harnesses) = match chosen {
        Ok(chosen) => chosen,
        Err(problem) => {
            errln!("error: {problem}");
            return ExitCode::from(2);
        }
    };
    if let Err(code) = refuse_bless_in_ci(bless) {
        return code;
    }
    let options = conform_options(peers, logs, named_adapters, bless, !fresh_process);
    listen_for_stop();
    if let Some(exploration) = exploration {
        return super::explore::explore_command(&exploration, &harnesses, &options, jobs as usize);
    }
    let started = std::time::Instant::now();
    let reports = run_all(
        &targets,
        &harnesses,
        &options,
        jobs as usize,
        &printer(json, strict),
    );
    let elapsed = started.elapsed();
    let failed = summarize(
        &reports,
        targets.len(),
        harnesses.len(),
        elapsed,
        json,
        strict,
    );
    if let Some(path) = matrix_path
        && !write_matrix(&path, &reports, &harnesses, &options.peers_dir, elapsed)
    {
        return ExitCode::FAILURE;
    }
    exit_code(failed)
}

/// `--mutants`: the scenarios against the reference harness and each mutant, the kill matrix
/// checked (and written with --matrix); fails when the matrix shows a problem.
fn mutants_command(
    paths: &[PathBuf],
    scenarios: &[String],
    logs: PathBuf,
    matrix_path: Option<PathBuf>,
    jobs: usize,
) -> ExitCode {
    let targets = match targets(paths, scenarios) {
        Ok(targets) => targets,
        Err(problem) => {
            errln!("error: {problem}");
            return ExitCode::from(2);
        }
    };
    let adapters = conform::mutants::adapters();
    let harnesses: Vec<String> = adapters.iter().map(|(name, _)| name.clone()).collect();
    let options = conform_options(PathBuf::from("peers"), logs, adapters, false, true);
    listen_for_stop();
    let started = std::time::Instant::now();
    let reports = run_all(&targets, &harnesses, &options, jobs, &|_| {});
    let rows = conform::mutants::matrix(&reports);
    let problems = conform::mutants::problems(&rows);
    let killed = rows
        .iter()
        .flat_map(|row| row.kills.values())
        .filter(|kill| matches!(kill, conform::mutants::Kill::Killed(_)))
        .count();
    outln!(
        "{} scenarios x {} mutants: {killed} kills, {} problems, in {:.0} s",
        rows.len(),
        harnesses.len() - 1,
        problems.len(),
        started.elapsed().as_secs_f64()
    );
    for problem in &problems {
        outln!("  {problem}");
    }
    if let Some(path) = matrix_path {
        if let Err(error) = std::fs::write(&path, conform::mutants::markdown(&rows)) {
            errln!("error: cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        outln!("kill matrix written to {}", path.display());
    }
    exit_code(problems.len())
}

/// 130 when interrupted, else success when no run failed.
fn exit_code(failed: usize) -> ExitCode {
    if conform::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
        errln!("interrupted: the adapter running was stopped, and no further run started");
        return ExitCode::from(130);
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
