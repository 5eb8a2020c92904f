//! The conformance suite: every scenario under `scenarios/` is one test, named after its path
//! (`cargo test --test conformance overflow/recover-once` runs one). Each runs twice; the traces
//! must be byte-identical, match `golden/` and pass their inline expectations.
//!
//! Every file under `tests/invalid/` is one test too: it must fail to load, and its rendered
//! diagnostics must match the `.expected` file beside it.
//!
//! Set `CTXBED_BLESS=1` to rewrite goldens and expected diagnostics. Outside CI a mismatch writes
//! `<golden>.trace.new` for review.

use std::path::{Path, PathBuf};

use ctxbed::scenario::file::load;
use ctxbed::scenario::golden::{self, GoldenMode, GoldenOutcome};
use ctxbed::suite::{Verdict, discover, run_file};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let arguments = Arguments::from_args();
    let bless = ctxbed::scenario::golden::bless_from_env().expect("the bless switch");
    let write_new = std::env::var_os("CI").is_none();
    let mut trials = Vec::new();
    let scenarios = discover(&[PathBuf::from("scenarios")]).expect("scenarios/ is readable");
    for path in scenarios {
        let name = path
            .strip_prefix("scenarios")
            .unwrap_or(&path)
            .with_extension("")
            .to_string_lossy()
            .replace('\\', "/");
        trials.push(Trial::test(name, move || {
            scenario_trial(&path, bless, write_new)
        }));
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

fn scenario_trial(path: &Path, bless: bool, write_new: bool) -> Result<(), Failed> {
    let mode = if bless {
        GoldenMode::Bless
    } else {
        GoldenMode::Compare { write_new }
    };
    let report = run_file(path, mode);
    match report.verdict {
        Verdict::Passed { .. } => Ok(()),
        Verdict::Blessed { failed_checks, .. } if failed_checks.is_empty() => Ok(()),
        Verdict::Blessed { failed_checks, .. } => Err(failed_checks.join("\n").into()),
        Verdict::Failed { reasons } => Err(reasons.join("\n").into()),
        Verdict::Invalid { diagnostics } => Err(diagnostics
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
            .into()),
    }
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
