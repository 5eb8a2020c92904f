//! `ctxbed conform --generate N --seed S`: wire scenarios drawn from seeds, run against each
//! harness with the wire rules as properties; a failing seed is shrunk and written out (see
//! `conform::explore`). Each harness's findings are pinned in `golden/generated/<harness>.txt`
//! and compared like a golden trace (`--bless` rewrites them).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::{write_err, write_out};
use ctxbed::conform::explore::{self, SeedOutcome};
use ctxbed::conform::{self, ConformOptions};
use ctxbed::scenario::check::golden::GoldenMode;

/// What `--generate` was asked.
pub struct Exploration {
    pub count: u64,
    pub first_seed: u64,
    /// Where shrunk failing scenarios are written.
    pub out: PathBuf,
    /// Where findings are pinned (`golden/generated`).
    pub pins: PathBuf,
    /// The most runs spent shrinking one failing seed.
    pub shrink_runs: usize,
    /// Shrink only the first seed that breaks each rule; later ones are reported unshrunk.
    pub once_per_rule: bool,
}

impl Exploration {
    /// `count` seeds from `first_seed`, failing ones written under `out`, findings pinned in
    /// `golden/generated`.
    pub fn new(count: u64, first_seed: u64, out: PathBuf, shrink_runs: usize) -> Self {
        Exploration {
            count,
            first_seed,
            out,
            pins: PathBuf::from("golden").join("generated"),
            shrink_runs,
            once_per_rule: false,
        }
    }
}

/// One line per seed: `seed 7: pass`, or the rules it broke and the smallest scenario's size.
fn finding_line(outcome: &SeedOutcome) -> String {
    match &outcome.smallest {
        None if outcome.rules.is_empty() => format!("seed {}: pass", outcome.seed),
        None => format!("seed {}: {}", outcome.seed, outcome.rules.join(", ")),
        Some(draft) => {
            let (steps, calls, chars) = draft.size();
            format!(
                "seed {}: {} (smallest: {steps} step(s), {calls} call(s), {chars} result characters)",
                outcome.seed,
                outcome.rules.join(", ")
            )
        }
    }
}

/// The findings file's text for one harness.
fn findings_text(harness: &str, exploration: &Exploration, outcomes: &[SeedOutcome]) -> String {
    let which = if exploration.once_per_rule {
        "the first failing seed of each rule"
    } else {
        "a seed"
    };
    let mut text = format!(
        "generated wire scenarios against {harness}: seeds {}..{}, at most {} shrinking runs {which}\n",
        exploration.first_seed,
        exploration.first_seed + exploration.count,
        exploration.shrink_runs
    );
    for outcome in outcomes {
        text.push_str(&finding_line(outcome));
        text.push('\n');
    }
    text
}

/// Runs every seed against `harness`, printing each finding; the outcomes.
fn explore_harness(
    harness: &str,
    exploration: &Exploration,
    options: &ConformOptions,
) -> Result<Vec<SeedOutcome>, String> {
    let mut outcomes = Vec::new();
    // The rules a seed was shrunk for (with --shrink-once-per-rule, later seeds breaking one
    // first are not shrunk again).
    let mut shrunk = std::collections::BTreeSet::new();
    for seed in exploration.first_seed..exploration.first_seed + exploration.count {
        if conform::INTERRUPTED.load(Ordering::Relaxed) {
            break;
        }
        let shrink_runs = exploration.shrink_runs;
        // Each harness's smallest scenarios apart: seed N shrinks differently for each.
        let out = &exploration.out.join(harness);
        let outcome = explore::explore_seed(seed, harness, options, out, shrink_runs, &shrunk)
            .map_err(|error| format!("cannot write under {}: {error}", out.display()))?;
        if exploration.once_per_rule && outcome.smallest.is_some() {
            shrunk.extend(outcome.rules.first().cloned());
        }
        let written = outcome
            .written
            .as_ref()
            .map_or(String::new(), |(scenario, _)| {
                format!(" -> {}", scenario.display())
            });
        outln!("[{harness}] {}{written}", finding_line(&outcome));
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// Compares (or, blessing, writes) a harness's pinned findings; true when they hold.
fn check_pins(path: &Path, text: &str, mode: GoldenMode) -> bool {
    if matches!(mode, GoldenMode::Bless) {
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, text));
        return match written {
            Ok(()) => {
                outln!("  pinned {}", path.display());
                true
            }
            Err(error) => {
                errln!("error: cannot write {}: {error}", path.display());
                false
            }
        };
    }
    match std::fs::read_to_string(path) {
        Ok(pinned) if pinned == text => true,
        Ok(pinned) => {
            errln!(
                "  changed: {} pins other findings:\n{}",
                path.display(),
                line_diff(&pinned, text)
            );
            false
        }
        Err(_) => {
            errln!(
                "  new: no findings pinned at {} yet; read them, then rerun with --bless",
                path.display()
            );
            false
        }
    }
}

/// The lines that differ, `-` pinned and `+` found.
fn line_diff(pinned: &str, found: &str) -> String {
    let mut out = String::new();
    for line in pinned
        .lines()
        .filter(|line| !found.lines().any(|f| f == *line))
    {
        out.push_str(&format!("    - {line}\n"));
    }
    for line in found
        .lines()
        .filter(|line| !pinned.lines().any(|p| p == *line))
    {
        out.push_str(&format!("    + {line}\n"));
    }
    out
}

/// Explores one harness: its seeds, then its summary printed in one piece and its findings
/// compared with (or, blessing, written to) its pins. True when the pins hold.
fn explore_one(
    harness: &str,
    exploration: &Exploration,
    options: &ConformOptions,
) -> Result<bool, String> {
    let explored = explore_harness(harness, exploration, options);
    conform::release_adapters();
    let outcomes = explored?;
    // An interrupted harness's findings are partial: neither compared nor pinned.
    if conform::INTERRUPTED.load(Ordering::Relaxed) {
        return Ok(true);
    }
    let failing = outcomes.iter().filter(|o| !o.rules.is_empty()).count();
    let mut summary = format!("{harness}: {} seed(s), {failing} failing\n", outcomes.len());
    for (rule, count, smallest) in explore::summary(&outcomes) {
        let smallest = smallest.map_or(String::new(), |path| {
            format!("; smallest: {}", path.display())
        });
        summary.push_str(&format!("  {rule}: {count} seed(s){smallest}\n"));
    }
    out!("{summary}");
    let pins = exploration.pins.join(format!("{harness}.txt"));
    Ok(check_pins(
        &pins,
        &findings_text(harness, exploration, &outcomes),
        options.mode,
    ))
}

/// Runs the exploration for every harness, `jobs` harnesses at a time (each harness's seeds in
/// order, in one job); the exit code.
pub fn explore_command(
    exploration: &Exploration,
    harnesses: &[String],
    options: &ConformOptions,
    jobs: usize,
) -> ExitCode {
    let next = AtomicUsize::new(0);
    let held = AtomicBool::new(true);
    let problem = std::sync::Mutex::new(None::<String>);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, harnesses.len().max(1)) {
            scope.spawn(|| {
                while let Some(harness) = harnesses.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if conform::INTERRUPTED.load(Ordering::Relaxed) {
                        break;
                    }
                    match explore_one(harness, exploration, options) {
                        Ok(pins_hold) => {
                            held.fetch_and(pins_hold, Ordering::Relaxed);
                        }
                        Err(error) => {
                            if let Ok(mut slot) = problem.lock() {
                                slot.get_or_insert(error);
                            }
                            // No further harness starts.
                            next.store(harnesses.len(), Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    if let Some(error) = problem.into_inner().ok().flatten() {
        errln!("error: {error}");
        return ExitCode::FAILURE;
    }
    if conform::INTERRUPTED.load(Ordering::Relaxed) {
        errln!("interrupted: the adapter running was stopped, and no further seed started");
        return ExitCode::from(130);
    }
    if held.load(Ordering::Relaxed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
