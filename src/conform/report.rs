//! What `ctxbed conform` prints: a line per (scenario, harness), and for each failure its
//! broken rules, the adapter's problem, its log and the trace's diff against the golden.

use std::fmt::Write;

use super::{Cell, CellReport};
use crate::scenario::golden::GoldenOutcome;

/// The lines for one run.
pub fn describe(report: &CellReport, strict: bool) -> String {
    let mut out = String::new();
    let verdict = match (&report.cell, report.ok(strict)) {
        (Cell::Pass, true) => "pass",
        (Cell::NotApplicable { .. }, _) => "n/a ",
        (Cell::Fail { .. }, true) => "fail (pinned by its golden)",
        _ => "FAIL",
    };
    let _ = write!(
        out,
        "{verdict} {} [{}] {:.1} s",
        report.scenario,
        report.harness,
        report.elapsed.as_secs_f64()
    );
    if let Cell::NotApplicable { reason } = &report.cell {
        let _ = write!(out, " ({reason})");
    }
    out.push('\n');
    if let Some(problem) = &report.problem {
        let _ = writeln!(out, "  adapter: {problem}");
    }
    for violation in &report.violations {
        let _ = writeln!(out, "  {}: {}", violation.rule, violation.detail);
    }
    match &report.golden_outcome {
        Some(GoldenOutcome::Mismatch { diff, new_file }) => {
            let _ = writeln!(out, "  the trace differs from {}:", report.golden.display());
            for line in diff.lines() {
                let _ = writeln!(out, "    {line}");
            }
            if let Some(new_file) = new_file {
                let _ = writeln!(
                    out,
                    "  new trace: {} (review, then rerun with --bless)",
                    new_file.display()
                );
            }
        }
        Some(GoldenOutcome::Blessed { changed: true }) => {
            let _ = writeln!(out, "  blessed {}", report.golden.display());
        }
        _ => {}
    }
    if !report.ok(strict) {
        let _ = writeln!(out, "  adapter log: {}", report.log.display());
    }
    out
}
