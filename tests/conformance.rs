//! The conformance suite: every scenario under `scenarios/` is one test, named after its path
//! (`cargo test --test conformance overflow/recover-once` runs one). Each runs twice; the traces
//! must be byte-identical, match `golden/` and pass their inline expectations.
//!
//! Every file under `tests/invalid/` is one test too: it must fail to load, and its rendered
//! diagnostics must match the `.expected` file beside it.
//!
//! Goldens are insta file snapshots (`golden/<name>.snap`), asserted with
//! `insta::assert_snapshot!`: outside CI a changed trace is written as `<name>.snap.new` and
//! `cargo insta review` shows and accepts each; under `CI` nothing is written and a mismatch
//! fails. `CTXBED_BLESS=1` rewrites goldens and expected diagnostics directly, writing the same
//! bytes as insta (and as `ctxbed run --bless`).

use std::path::{Path, PathBuf};

use ctxbed::scenario::check::golden::{self, GoldenMode, GoldenOutcome};
use ctxbed::scenario::format::file::{Layout, load};
use ctxbed::suite::{Verdict, discover, run_file};
use libtest_mimic::{Arguments, Failed, Trial};

#[path = "support/golden_snapshot.rs"]
mod golden_snapshot;

fn main() {
    let arguments = Arguments::from_args();
    let bless = ctxbed::scenario::check::golden::bless_from_env().expect("the bless switch");
    let mut trials = Vec::new();
    let scenarios = discover(&[PathBuf::from("scenarios")]).expect("scenarios/ is readable");
    for path in scenarios {
        let name = path
            .strip_prefix("scenarios")
            .unwrap_or(&path)
            .with_extension("")
            .to_string_lossy()
            .replace('\\', "/");
        trials.push(Trial::test(name, move || scenario_trial(&path, bless)));
    }
    let invalid = discover(&[PathBuf::from("tests/invalid")]).expect("tests/invalid/ is readable");
    for path in invalid
        .into_iter()
        .filter(|p| !p.starts_with("tests/invalid/mock-models"))
    {
        let name = format!(
            "invalid/{}",
            path.file_stem().unwrap_or_default().to_string_lossy()
        );
        trials.push(Trial::test(name, move || invalid_trial(&path, bless)));
    }
    libtest_mimic::run(&arguments, trials).exit();
}

fn scenario_trial(path: &Path, bless: bool) -> Result<(), Failed> {
    let mode = if bless {
        GoldenMode::Bless
    } else {
        GoldenMode::Skip
    };
    let report = run_file(path, mode);
    match report.verdict {
        Verdict::Passed { .. } => {}
        Verdict::Blessed { failed_checks, .. } if failed_checks.is_empty() => return Ok(()),
        Verdict::Blessed { failed_checks, .. } => return Err(failed_checks.join("\n").into()),
        Verdict::Failed { reasons } => return Err(reasons.join("\n").into()),
        Verdict::Invalid { diagnostics } => {
            return Err(diagnostics
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
                .into());
        }
    }
    let trace = report.trace.ok_or("the scenario ran but left no trace")?;
    assert_golden(&Layout::of(path).golden(), &trace)
}

/// Asserts `trace` against the snapshot file `golden` through insta.
fn assert_golden(golden: &Path, trace: &str) -> Result<(), Failed> {
    golden_snapshot::assert_golden(golden, trace, golden::SNAPSHOT_SOURCE).map_err(Failed::from)
}

fn invalid_trial(path: &Path, bless: bool) -> Result<(), Failed> {
    let rendered = match load(path) {
        Ok(_) => {
            return Err(format!(
                "{} loaded, but it is in tests/invalid and must not",
                path.display()
            )
            .into());
        }
        Err(diagnostics) => diagnostics
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let expected = path.with_extension("expected");
    let mode = if bless {
        GoldenMode::Bless
    } else {
        GoldenMode::Compare { write_new: false }
    };
    match golden::check(&expected, &rendered, mode).map_err(|e| e.to_string())? {
        GoldenOutcome::Matched | GoldenOutcome::Blessed { .. } => Ok(()),
        GoldenOutcome::Missing { .. } => Err(format!(
            "no {}; the diagnostics were:\n{rendered}\nbless with CTXBED_BLESS=1",
            expected.display()
        )
        .into()),
        GoldenOutcome::Mismatch { diff, .. } => Err(format!("diagnostics differ:\n{diff}").into()),
    }
}
