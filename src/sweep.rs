//! Seed sweeps: generate, run twice, check every invariant, shrink and write what fails.
//!
//! [`sweep`] runs the seeds `start..start + count` that belong to its [`Shard`] (seed modulo the
//! shard count), on `jobs` threads. Each seed's scenario comes from [`generate`]; it runs twice
//! ([`check_scenario`]): the first run is checked by [`invariants::check`], the pair by
//! [`invariants::check_record_determinism`] (the second run's record against the first run,
//! rendered only when it differs), and a panic anywhere is a violation too. A failing seed is
//! shrunk ([`shrink`]: drop steps, history, sources, tools, turns and faults — restarts,
//! concurrent appends, task actions, write failures, JSON-lines session storage, plan modes,
//! session tools, the estimator, the simulated network — while the same kind of violation
//! persists) and written as a
//! scenario file plus its mock models, which plain `ctxbed run` reproduces. The report is in seed order, whatever the thread timing.
//!
//! Wall time is the caller's business: progress is reported as counts through a callback.
//!
//! ```
//! use ctxbed::sweep::{Shard, SweepConfig, sweep};
//! let config = SweepConfig { start: 0, count: 4, shard: Shard::ALL, jobs: 1, out_dir: None, shrink: false };
//! let report = sweep(&config, &|_| {});
//! assert_eq!(report.runs, 4);
//! assert!(report.failures.is_empty(), "{:?}", report.failures);
//! ```

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::generate::{GENERATOR_VERSION, generate};
use super::invariants::{self, Violation, ViolationKind};
use crate::scenario::check::outcome::{RunOutput, run, simulate};
use crate::scenario::format::file::{Scenario, load};
use crate::scenario::format::write::write;
use crate::scenario::run::runner::RunError;
use ctxbed_harness::limits;

mod shrink;

pub use shrink::{shrink, shrink_while};

/// Which seeds this process runs: those with `seed % total == index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub total: u64,
}

impl Shard {
    /// One shard holding every seed.
    pub const ALL: Shard = Shard { index: 0, total: 1 };

    /// Parses `k/n` (0 ≤ k < n).
    ///
    /// # Errors
    /// Not two numbers separated by `/`, `n` = 0, or `k` ≥ `n`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (index, total) = text
            .split_once('/')
            .ok_or_else(|| format!("shard `{text}` is not `k/n`, e.g. `0/4`"))?;
        let number = |part: &str| {
            part.trim()
                .parse::<u64>()
                .map_err(|_| format!("shard `{text}`: `{part}` is not a number"))
        };
        let shard = Shard {
            index: number(index)?,
            total: number(total)?,
        };
        if shard.total == 0 || shard.index >= shard.total {
            return Err(format!(
                "shard `{text}`: need 0 ≤ k < n, e.g. `0/{}` … `{}/{}`",
                shard.total.max(1),
                shard.total.max(1) - 1,
                shard.total.max(1)
            ));
        }
        Ok(shard)
    }

    /// True when the seed belongs to this shard.
    pub fn holds(self, seed: u64) -> bool {
        seed % self.total == self.index
    }
}

/// What to sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepConfig {
    /// First seed of the range.
    pub start: u64,
    /// Seeds in the range (before sharding).
    pub count: u64,
    pub shard: Shard,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// Where failing seeds are written; nothing is written when `None`.
    pub out_dir: Option<PathBuf>,
    /// Shrink failing seeds before writing them.
    pub shrink: bool,
}

/// Counts reported after each seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// The seed just checked (and, when it failed, shrunk and written).
    pub seed: u64,
    /// Seeds of this shard checked so far.
    pub done: u64,
    /// Seeds of this shard in the range.
    pub total: u64,
    /// Failing seeds so far.
    pub failing: u64,
}

/// One failing seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub seed: u64,
    /// The violations of the generated scenario.
    pub violations: Vec<Violation>,
    /// The violations of the shrunk scenario (the same as `violations` without shrinking).
    pub shrunk: Vec<Violation>,
    /// Scenario checks the shrinker spent.
    pub shrink_runs: u32,
    /// The written scenario file.
    pub file: Option<PathBuf>,
    /// Why nothing was written, when nothing was.
    pub not_written: Option<String>,
    /// The written file, loaded and run, shows a violation of the same kind.
    pub reproduced: bool,
}

/// The outcome of a sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Seeds checked (each ran twice).
    pub runs: u64,
    /// Violations of every failing seed, by kind.
    pub violations_by_kind: BTreeMap<ViolationKind, u64>,
    /// Failing seeds, in seed order.
    pub failures: Vec<Failure>,
}

/// Seeds of the shard in the range.
pub fn shard_seeds(config: &SweepConfig) -> u64 {
    let end = config.start.saturating_add(config.count);
    let total = config.shard.total;
    let below = |n: u64| n / total + u64::from(n % total > config.shard.index);
    below(end) - below(config.start)
}

/// Runs the sweep; `progress` is called after every seed (from worker threads).
pub fn sweep(config: &SweepConfig, progress: &(dyn Fn(Progress) + Sync)) -> SweepReport {
    install_panic_capture();
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let written = AtomicU64::new(0);
    let failures: Mutex<Vec<Failure>> = Mutex::new(Vec::new());
    let total = shard_seeds(config);
    let worker = || {
        loop {
            let offset = next.fetch_add(1, Ordering::SeqCst);
            if offset >= config.count {
                return;
            }
            let seed = config.start.saturating_add(offset);
            if !config.shard.holds(seed) {
                continue;
            }
            let violations = check_seed(seed);
            let mut failing = lock(&failures).len() as u64;
            if !violations.is_empty() {
                let write_slot = written.fetch_add(1, Ordering::SeqCst);
                let failure = handle_failure(config, seed, violations, write_slot);
                let mut list = lock(&failures);
                list.push(failure);
                failing = list.len() as u64;
            }
            let done = done.fetch_add(1, Ordering::SeqCst) + 1;
            progress(Progress {
                seed,
                done,
                total,
                failing,
            });
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..config.jobs.max(1) {
            scope.spawn(worker);
        }
    });
    let mut failures = failures
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    failures.sort_by_key(|failure| failure.seed);
    let mut violations_by_kind = BTreeMap::new();
    for violation in failures.iter().flat_map(|f| &f.violations) {
        *violations_by_kind.entry(violation.kind).or_insert(0) += 1;
    }
    SweepReport {
        runs: done.into_inner(),
        violations_by_kind,
        failures,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The violations of one seed's generated scenario.
pub fn check_seed(seed: u64) -> Vec<Violation> {
    match guarded(|| generate(seed)) {
        Ok(scenario) => check_scenario(&scenario),
        Err(message) => vec![Violation {
            kind: ViolationKind::Panic,
            step: None,
            detail: format!("the generator panicked: {message}"),
        }],
    }
}

/// Runs a scenario twice and checks every invariant; a panic is a violation, not a crash.
pub fn check_scenario(scenario: &Scenario) -> Vec<Violation> {
    let first = match checked_run(scenario) {
        Ok(output) => output,
        Err(violation) => return vec![violation],
    };
    let mut violations = invariants::check(scenario, &first.0);
    if let Some(message) = first.1 {
        for violation in &mut violations {
            if violation.kind == ViolationKind::RunNotFinished {
                violation
                    .detail
                    .push_str(&format!("; the task panicked: {message}"));
            }
        }
    }
    // The second run is only compared with the first: it is rendered only if it differs.
    match checked(|| simulate(scenario)) {
        Ok(second) => violations.extend(invariants::check_record_determinism(
            scenario, &first.0, second,
        )),
        Err(violation) => violations.push(violation),
    }
    violations
}

/// One run, with the message of any panic caught inside it (a harness task's panic is caught
/// by the runtime and shows as a missing `run_finished`).
fn checked_run(scenario: &Scenario) -> Result<(RunOutput, Option<String>), Violation> {
    let output = checked(|| run(scenario))?;
    Ok((output, take_panic()))
}

/// `run` guarded: its error or panic as a violation.
fn checked<T>(run: impl FnOnce() -> Result<T, RunError>) -> Result<T, Violation> {
    match guarded(run) {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(error)) => Err(Violation {
            kind: ViolationKind::RunFailed,
            step: None,
            detail: error.to_string(),
        }),
        Err(message) => Err(Violation {
            kind: ViolationKind::Panic,
            step: None,
            detail: ctxbed_harness::format::snippet(&message, limits::SNIPPET_CHARS_MAX),
        }),
    }
}

thread_local! {
    /// Set while this thread runs a guarded closure: panics are recorded, not printed.
    static CAPTURING: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Installs, once per process, a panic hook that records the message of a panic on a thread
/// inside [`guarded`] and leaves every other panic to the previous hook.
fn install_panic_capture() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let captured = CAPTURING.with(|cell| {
                let mut cell = cell.borrow_mut();
                match cell.as_mut() {
                    Some(messages) => {
                        messages.push(info.to_string());
                        true
                    }
                    None => false,
                }
            });
            if !captured {
                previous(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into its message; panics inside are recorded for [`take_panic`].
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_panic_capture();
    CAPTURING.with(|cell| *cell.borrow_mut() = Some(Vec::new()));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    let messages = CAPTURING.with(|cell| cell.borrow_mut().take().unwrap_or_default());
    PANICS.with(|cell| *cell.borrow_mut() = messages.first().cloned());
    outcome.map_err(|payload| {
        messages.first().cloned().unwrap_or_else(|| {
            payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "a panic without a message".to_string())
        })
    })
}

thread_local! {
    /// The first panic message of the last guarded closure on this thread.
    static PANICS: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn take_panic() -> Option<String> {
    PANICS.with(|cell| cell.borrow_mut().take())
}

fn handle_failure(
    config: &SweepConfig,
    seed: u64,
    violations: Vec<Violation>,
    write_slot: u64,
) -> Failure {
    let mut failure = Failure {
        seed,
        shrunk: violations.clone(),
        violations,
        shrink_runs: 0,
        file: None,
        not_written: None,
        reproduced: false,
    };
    let Some(dir) = &config.out_dir else {
        failure.not_written = Some("no output directory".to_string());
        return failure;
    };
    if write_slot >= crate::limits::SWEEP_FAILURES_WRITTEN_MAX {
        failure.not_written = Some(format!(
            "more than {} failing seeds; rerun this seed alone",
            crate::limits::SWEEP_FAILURES_WRITTEN_MAX
        ));
        return failure;
    }
    let Ok(mut scenario) = guarded(|| generate(seed)) else {
        failure.not_written = Some("the generator panicked".to_string());
        return failure;
    };
    let kinds: BTreeSet<ViolationKind> = failure.violations.iter().map(|v| v.kind).collect();
    if config.shrink {
        let (shrunk, runs) = shrink(scenario, &kinds, crate::limits::SHRINK_CHECKS_MAX);
        failure.shrink_runs = runs;
        failure.shrunk = check_scenario(&shrunk);
        scenario = shrunk;
    }
    let path = dir.join(format!("seed-{seed}.toml"));
    let comment = regression_comment(seed, config.shrink, &failure.shrunk, &path);
    match write(&scenario, &path, &comment) {
        Ok(written) => {
            failure.reproduced = reproduces(&written.scenario, &kinds);
            failure.file = Some(written.scenario);
        }
        Err(error) => failure.not_written = Some(error.to_string()),
    }
    failure
}

fn regression_comment(seed: u64, shrunk: bool, violations: &[Violation], path: &Path) -> String {
    let how = if shrunk { "shrunk" } else { "as generated" };
    let mut lines = vec![
        format!(
            "Found by `ctxbed sweep` at seed {seed} ({how}, generator version {GENERATOR_VERSION}). Not blessed: review before adding a golden."
        ),
        format!("Reproduce: ctxbed run {}", path.display()),
    ];
    lines.extend(violations.iter().map(|v| format!("violation: {v}")));
    lines.join("\n")
}

/// Loads the written file and checks it still shows one of the kinds.
fn reproduces(path: &Path, kinds: &BTreeSet<ViolationKind>) -> bool {
    let Ok(scenario) = load(path) else {
        return false;
    };
    check_scenario(&scenario)
        .iter()
        .any(|violation| kinds.contains(&violation.kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_the_range_exactly() {
        for total in 1..5 {
            let mut seen = 0;
            for index in 0..total {
                let shard = Shard { index, total };
                let config = SweepConfig {
                    start: 3,
                    count: 17,
                    shard,
                    jobs: 1,
                    out_dir: None,
                    shrink: false,
                };
                let expected = (3..20).filter(|seed| shard.holds(*seed)).count() as u64;
                assert_eq!(shard_seeds(&config), expected, "{index}/{total}");
                seen += expected;
            }
            assert_eq!(seen, 17);
        }
        assert_eq!(Shard::parse("1/4"), Ok(Shard { index: 1, total: 4 }));
        assert!(Shard::parse("4/4").is_err());
        assert!(Shard::parse("1/0").is_err());
        assert!(Shard::parse("x").is_err());
    }

    #[test]
    fn panics_become_messages() {
        let outcome: Result<(), String> = guarded(|| panic!("boom"));
        assert!(outcome.unwrap_err().contains("boom"));
    }
}
