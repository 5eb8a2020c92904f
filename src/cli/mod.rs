//! The commands of the `ctxbed` binary, one module each (`main.rs` only parses and dispatches),
//! and what several of them share: finding scenario files, loading and running one.

pub mod bugs;
pub mod check;
pub mod conform;
pub mod explain;
pub mod explore;
pub mod record;
pub mod report;
pub mod run;
pub mod serve;
pub mod show;
pub mod signals;
pub mod sweep;
pub mod violations;

use std::path::PathBuf;
use std::process::ExitCode;

use crate::write_err;
use ctxbed::scenario::check::outcome::{RunOutput, run};
use ctxbed::scenario::format::file::{Scenario, load};
use ctxbed::suite::discover;

pub fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

/// The scenario files under `paths` (default: `scenarios`), or the error to print: a missing
/// default directory says where ctxbed expects to run.
pub fn discover_or_explain(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>, ExitCode> {
    let defaulted = paths.is_empty();
    discover(&default_paths(paths)).map_err(|error| {
        errln!("error: {error}");
        if defaulted && error.kind() == std::io::ErrorKind::NotFound {
            errln!(
                "help: run ctxbed from a suite's root (the directory holding scenarios/, mock-models/ and golden/), \
                 or name scenario files or directories; the README's quick start makes one"
            );
        }
        ExitCode::from(2)
    })
}

/// Loads one scenario; on failure prints its diagnostics and returns exit code 2.
pub fn load_or_report(path: &std::path::Path) -> Result<Scenario, ExitCode> {
    load(path).map_err(|diagnostics| {
        for diagnostic in diagnostics {
            err!("{diagnostic}");
        }
        ExitCode::from(2)
    })
}

/// Loads and runs one scenario; on failure prints why and returns the exit code.
pub fn load_and_run(path: &std::path::Path) -> Result<(Scenario, RunOutput), ExitCode> {
    let scenario = load_or_report(path)?;
    match run(&scenario) {
        Ok(output) => Ok((scenario, output)),
        Err(error) => {
            errln!("error: {error}");
            Err(ExitCode::FAILURE)
        }
    }
}
