//! `ctxbed run`: every scenario run twice, checked and compared with its golden (or blessed),
//! reported as lines, JSON or JUnit.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::scenario::check::golden::GoldenMode;
use ctxbed::suite::{Verdict, run_file};

use super::discover_or_explain;

pub fn run_command(paths: Vec<PathBuf>, bless: bool, quiet: bool, format: &str) -> ExitCode {
    let files = match discover_or_explain(paths) {
        Ok(files) => files,
        Err(code) => return code,
    };
    if bless && std::env::var_os("CI").is_some() {
        errln!(
            "error: --bless with CI set: CI never writes goldens; bless locally, review the diff, and commit"
        );
        return ExitCode::from(2);
    }
    let mode = if bless {
        GoldenMode::Bless
    } else {
        GoldenMode::Compare {
            write_new: std::env::var_os("CI").is_none(),
        }
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut reports = Vec::new();
    for file in &files {
        let report = run_file(file, mode);
        if report.verdict.is_failure() {
            failed += 1;
        } else {
            passed += 1;
        }
        match format {
            "json" => outln!("{}", ctxbed::output::scenario_json(&report)),
            "junit" => {}
            _ => print_report(&report.name, &report.path, &report.verdict, quiet),
        }
        reports.push(report);
    }
    match format {
        "json" => outln!("{}", ctxbed::output::run_summary_json(&reports)),
        "junit" => out!("{}", ctxbed::output::junit(&reports)),
        _ => outln!("\n{passed} passed, {failed} failed"),
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

pub fn print_report(name: &str, path: &std::path::Path, verdict: &Verdict, quiet: bool) {
    match verdict {
        Verdict::Passed { requests, checks } => {
            if !quiet {
                outln!("ok       {name}  ({requests} requests, {checks} checks)");
            }
        }
        Verdict::Blessed {
            changed,
            failed_checks,
        } => {
            let what = if *changed { "blessed" } else { "unchanged" };
            outln!("{what:<8} {name}");
            for check in failed_checks {
                outln!("         {check}");
            }
        }
        Verdict::Failed { reasons } => {
            outln!("FAIL     {name}");
            for reason in reasons {
                for line in reason.lines() {
                    outln!("         {line}");
                }
            }
        }
        Verdict::Invalid { diagnostics } => {
            outln!("INVALID  {}", path.display());
            for diagnostic in diagnostics {
                for line in diagnostic.to_string().lines() {
                    outln!("         {line}");
                }
            }
        }
    }
}
