//! What `ctxbed conform` prints: a line per (scenario, harness), and for each failure its
//! broken rules, the adapter's problem, its log and the trace's diff against the golden.

use std::fmt::Write;

use super::{Cell, CellReport};
use crate::scenario::check::golden::GoldenOutcome;

/// The lines for one run.
pub fn describe(report: &CellReport, strict: bool) -> String {
    let mut out = String::new();
    let new = matches!(report.golden_outcome, Some(GoldenOutcome::Missing { .. }));
    let verdict = match (&report.cell, report.ok(strict)) {
        (Cell::NotApplicable { .. }, _) => "n/a ",
        _ if new => "NEW ",
        (Cell::Pass, true) => "pass",
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
    describe_golden(&mut out, report);
    if !report.ok(strict) {
        let _ = writeln!(out, "  adapter log: {}", report.log.display());
    }
    out
}

/// The lines on the run's golden: the diff and new trace of a mismatch, the would-be verdict
/// of a run without one, or what a blessing pinned.
fn describe_golden(out: &mut String, report: &CellReport) {
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
        Some(GoldenOutcome::Missing { new_file }) => {
            let _ = writeln!(
                out,
                "  new: no golden at {} yet; its verdict would be {}",
                report.golden.display(),
                verdict_words(&report.cell)
            );
            if let Some(new_file) = new_file {
                let _ = writeln!(
                    out,
                    "  new trace: {} (review it, then rerun with --bless to pin it)",
                    new_file.display()
                );
            }
        }
        Some(GoldenOutcome::Blessed { changed }) => {
            let _ = writeln!(
                out,
                "  {} {}: pins {}",
                if *changed { "blessed" } else { "unchanged" },
                report.golden.display(),
                verdict_words(&report.cell)
            );
        }
        _ => {}
    }
}

/// One run as a JSON object on one line (`ctxbed conform --format json`): the verdict (`pass`,
/// `fail`, `n/a`, or `new` without a golden), whether it fails the run (`ok`), the broken rules,
/// each violation with its step, the adapter's problem, the trace and where its files are. No
/// wall-clock figure is in it, so two runs print the same object.
pub fn json(report: &CellReport, strict: bool) -> String {
    let new = matches!(report.golden_outcome, Some(GoldenOutcome::Missing { .. }));
    let (verdict, rules, reason) = match &report.cell {
        Cell::Pass => ("pass", Vec::new(), None),
        Cell::Fail { rules } => ("fail", rules.clone(), None),
        Cell::NotApplicable { reason } => ("n/a", Vec::new(), Some(reason.clone())),
    };
    let golden = match &report.golden_outcome {
        None => "none",
        Some(GoldenOutcome::Matched) => "matched",
        Some(GoldenOutcome::Blessed { .. }) => "blessed",
        Some(GoldenOutcome::Missing { .. }) => "missing",
        Some(GoldenOutcome::Mismatch { .. }) => "mismatch",
    };
    let violations: Vec<serde_json::Value> = report
        .violations
        .iter()
        .map(|violation| {
            serde_json::json!({
                "rule": violation.rule,
                "step": violation.step,
                "detail": violation.detail,
            })
        })
        .collect();
    serde_json::json!({
        "type": "run",
        "scenario": report.scenario,
        "harness": report.harness,
        "version": report.version,
        "context": report.context,
        "verdict": if new { "new" } else { verdict },
        "ok": report.ok(strict),
        "rules": rules,
        "violations": violations,
        "problem": report.problem,
        "reason": reason,
        "golden": golden,
        "log": report.log,
        "trace": report.trace,
    })
    .to_string()
}

/// A verdict in words: `pass`, `fail: window, expect`, `n/a`.
pub fn verdict_words(cell: &Cell) -> String {
    match cell {
        Cell::Pass => "pass".to_string(),
        Cell::Fail { rules } => format!("fail: {}", rules.join(", ")),
        Cell::NotApplicable { .. } => "n/a".to_string(),
    }
}
