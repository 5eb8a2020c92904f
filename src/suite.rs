//! Running many scenario files: discovery, the per-file verdict and the summary.
//!
//! Every scenario is run twice and the two renderings must be byte-identical before the golden
//! is consulted; the first run must also keep every invariant [`crate::invariants`] checks. A file
//! that does not load is reported with its diagnostics and the others
//! still run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::limits;
use crate::scenario::check::golden::{self, GoldenMode, GoldenOutcome};
use crate::scenario::check::outcome::run;
use crate::scenario::format::diagnostic::Diagnostic;
use crate::scenario::format::file::{Layout, load};

/// The verdict on one scenario file.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// The scenario's name (its path under `scenarios/`).
    pub name: String,
    pub path: PathBuf,
    pub verdict: Verdict,
    /// The trace the scenario rendered (both runs alike), when it ran.
    pub trace: Option<String>,
}

/// What happened to one file.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// Matched its golden and every expectation held.
    Passed { requests: u64, checks: usize },
    /// Golden rewritten (expectations are still checked).
    Blessed {
        changed: bool,
        failed_checks: Vec<String>,
    },
    /// Something is wrong; each reason is printable.
    Failed { reasons: Vec<String> },
    /// The file did not load.
    Invalid { diagnostics: Vec<Diagnostic> },
}

impl Verdict {
    /// True for a verdict that should fail a run.
    pub fn is_failure(&self) -> bool {
        match self {
            Verdict::Passed { .. } => false,
            Verdict::Blessed { failed_checks, .. } => !failed_checks.is_empty(),
            Verdict::Failed { .. } | Verdict::Invalid { .. } => true,
        }
    }
}

/// The directory of wire scenarios (`scenarios/wire/`), which a suite walk leaves to
/// `ctxbed conform`.
pub const WIRE_DIR: &str = "wire";

/// Every `.toml` file under the given paths (files are taken as given; a `wire/` directory below
/// a given directory is skipped, as it holds wire scenarios), sorted, deduplicated.
///
/// # Errors
/// A path that does not exist or a directory that cannot be read.
pub fn discover(paths: &[PathBuf]) -> std::io::Result<Vec<PathBuf>> {
    let mut found = BTreeSet::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut found)?;
        } else if path.is_file() {
            found.insert(path.clone());
        } else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} does not exist", path.display()),
            ));
        }
    }
    Ok(found.into_iter().collect())
}

fn walk(dir: &Path, found: &mut BTreeSet<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries {
        if found.len() >= limits::SCENARIO_FILES_MAX {
            return Ok(());
        }
        if path.is_dir() {
            // Wire scenarios are another format, run by `ctxbed conform`.
            if path.file_name().is_some_and(|name| name == WIRE_DIR) {
                continue;
            }
            walk(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "toml") {
            found.insert(path);
        }
    }
    Ok(())
}

/// Loads, runs (twice), checks and compares one scenario file.
pub fn run_file(path: &Path, mode: GoldenMode) -> FileReport {
    let layout = Layout::of(path);
    let (verdict, trace) = match load(path) {
        Err(diagnostics) => (Verdict::Invalid { diagnostics }, None),
        Ok(scenario) => verdict(&scenario, &layout, mode),
    };
    FileReport {
        name: layout.name,
        path: path.to_path_buf(),
        verdict,
        trace,
    }
}

fn verdict(
    scenario: &crate::scenario::format::file::Scenario,
    layout: &Layout,
    mode: GoldenMode,
) -> (Verdict, Option<String>) {
    let rerun = format!(
        "rerun: ctxbed show {} (seed {})",
        scenario.label, scenario.seed
    );
    let (first, second) = match (run(scenario), run(scenario)) {
        (Ok(first), Ok(second)) => (first, second),
        (Err(error), _) | (_, Err(error)) => {
            let failed = Verdict::Failed {
                reasons: vec![error.to_string(), rerun],
            };
            return (failed, None);
        }
    };
    let verdict = judge(scenario, layout, mode, &first, &second, rerun);
    (verdict, Some(first.text))
}

/// The verdict on two runs of `scenario`: invariants, determinism, expectations, golden.
fn judge(
    scenario: &crate::scenario::format::file::Scenario,
    layout: &Layout,
    mode: GoldenMode,
    first: &crate::scenario::check::outcome::RunOutput,
    second: &crate::scenario::check::outcome::RunOutput,
    rerun: String,
) -> Verdict {
    let mut reasons: Vec<String> = crate::invariants::check(scenario, first)
        .iter()
        .map(|violation| format!("invariant broken: {violation}"))
        .collect();
    if first.text != second.text {
        reasons.push(format!(
            "nondeterministic: two runs of seed {} differ\n{}",
            scenario.seed,
            golden::diff(&first.text, &second.text)
        ));
    }
    let failed_checks: Vec<String> = first
        .checks
        .iter()
        .filter(|check| !check.passed)
        .map(|check| {
            format!(
                "expectation at {}:{} failed: {} ({})",
                scenario.label, check.line, check.description, check.detail
            )
        })
        .collect();
    let golden_path = layout.golden();
    let outcome = match golden::check(&golden_path, &first.text, mode) {
        Ok(outcome) => outcome,
        Err(error) => {
            reasons.push(format!(
                "cannot use golden {}: {error}",
                golden_path.display()
            ));
            return Verdict::Failed { reasons };
        }
    };
    let golden_label = format!("golden/{}.{}", layout.name, golden::SNAPSHOT_EXTENSION);
    match outcome {
        GoldenOutcome::Matched => {}
        GoldenOutcome::Blessed { changed } if reasons.is_empty() => {
            return Verdict::Blessed { changed, failed_checks };
        }
        GoldenOutcome::Blessed { .. } => {}
        GoldenOutcome::Missing { new_file } => reasons.push(format!(
            "no golden at {golden_label}{}; review the trace and bless it with `ctxbed run --bless {}`",
            new_file.map_or(String::new(), |_| format!(" (new trace written to {golden_label}.new)")),
            scenario.label
        )),
        GoldenOutcome::Mismatch { diff, new_file } => reasons.push(format!(
            "trace differs from {golden_label}{}:\n{diff}",
            new_file.map_or(String::new(), |_| format!(" (new trace written to {golden_label}.new)"))
        )),
    }
    reasons.extend(failed_checks);
    if reasons.is_empty() {
        let requests = first.trace.steps.iter().map(|s| s.model_calls()).sum();
        Verdict::Passed {
            requests,
            checks: first.checks.len(),
        }
    } else {
        reasons.push(rerun);
        Verdict::Failed { reasons }
    }
}
