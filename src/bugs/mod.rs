//! `ctxbed bugs`: real, fixed context-management bugs of harnesses, replayed. Each bug file
//! ([`file`](mod@file), docs/bug-format.md) names a harness, the versions before and after the fix, and the
//! wire scenarios that tell them apart; [`run`] runs them at both versions and classifies the
//! bug; [`report`] writes what was found, `docs/bugs.md` included.

pub mod file;
pub mod report;
pub mod run;

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use file::{Bug, ScenarioRef, load, schema};
pub use run::{BugOptions, BugRun, Classification, SideRun, run_bug};

use crate::scenario::format::diagnostic::Diagnostics;

/// The bug files under `paths` (files as given, directories searched for `*.toml` one level
/// down, `locks/` aside), sorted by path.
///
/// # Errors
/// A path that does not exist or cannot be read.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    for path in paths {
        if path.is_file() {
            found.push(path.clone());
            continue;
        }
        let entries =
            std::fs::read_dir(path).map_err(|error| format!("{}: {error}", path.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let file = entry.path();
            if file.is_file() && file.extension().is_some_and(|ext| ext == "toml") {
                found.push(file);
            }
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}

/// Loads every bug file, reporting every file's problems at once.
///
/// # Errors
/// The diagnostics of every file that does not load.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Bug>, Vec<Diagnostics>> {
    let mut bugs = Vec::new();
    let mut problems = Vec::new();
    for path in paths {
        match load(path) {
            Ok(bug) => bugs.push(bug),
            Err(diagnostics) => problems.push(diagnostics),
        }
    }
    if problems.is_empty() {
        Ok(bugs)
    } else {
        Err(problems)
    }
}

/// Runs every bug, `jobs` at a time, calling `done` as each ends; returns the runs in the
/// bugs' order.
pub fn run_all(
    bugs: &[Bug],
    jobs: usize,
    options: &BugOptions,
    done: &(dyn Fn(&BugRun) + Sync),
) -> Vec<BugRun> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<BugRun>>> = Mutex::new(vec![None; bugs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, bugs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(bug) = bugs.get(index) else { break };
                    if crate::conform::INTERRUPTED.load(Ordering::Relaxed) {
                        break;
                    }
                    let run = run_bug(bug, options);
                    done(&run);
                    if let Ok(mut results) = results.lock() {
                        results[index] = Some(run);
                    }
                }
                crate::conform::release_adapters();
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}
