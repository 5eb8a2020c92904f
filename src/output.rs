//! Machine-readable reports of `ctxbed run` and `ctxbed sweep` for CI systems: JSON lines (one
//! object per scenario or seed, then a summary object) and JUnit XML (one test case per
//! scenario; a failure carries its reasons and the command that reruns it).

use serde_json::{Value, json};

use crate::suite::{FileReport, Verdict};
use crate::sweep::{SweepConfig, SweepReport};

/// The command that reruns one scenario file.
fn rerun(report: &FileReport) -> String {
    format!("ctxbed run {}", report.path.display())
}

/// One scenario's report as a JSON object.
pub fn scenario_json(report: &FileReport) -> Value {
    let mut object =
        json!({"type": "scenario", "name": report.name, "path": report.path.display().to_string()});
    let details = match &report.verdict {
        Verdict::Passed { requests, checks } => {
            json!({"outcome": "passed", "requests": requests, "checks": checks})
        }
        Verdict::Blessed {
            changed,
            failed_checks,
        } => json!({
            "outcome": if failed_checks.is_empty() { "blessed" } else { "failed" },
            "golden_changed": changed,
            "reasons": failed_checks,
        }),
        Verdict::Failed { reasons } => json!({"outcome": "failed", "reasons": reasons}),
        Verdict::Invalid { diagnostics } => json!({
            "outcome": "invalid",
            "reasons": diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }),
    };
    if let (Some(object), Value::Object(details)) = (object.as_object_mut(), details) {
        object.extend(details);
    }
    if report.verdict.is_failure() {
        object["rerun"] = rerun(report).into();
    }
    object
}

/// The closing summary of a run.
pub fn run_summary_json(reports: &[FileReport]) -> Value {
    let failed = reports.iter().filter(|r| r.verdict.is_failure()).count();
    json!({"type": "summary", "scenarios": reports.len(), "passed": reports.len() - failed, "failed": failed})
}

/// Text safe inside XML 1.0: markup escaped, and characters XML cannot carry (controls other
/// than tab and line breaks) replaced by U+FFFD.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A JUnit XML document: one `testsuite` named `ctxbed run`, one `testcase` per scenario
/// (class name: the scenario's directory); a failing scenario has a `failure` (an invalid file
/// an `error`) whose message is its first reason and whose text holds every reason and the
/// rerun command.
pub fn junit(reports: &[FileReport]) -> String {
    let failures = reports
        .iter()
        .filter(|r| r.verdict.is_failure() && !matches!(r.verdict, Verdict::Invalid { .. }))
        .count();
    let errors = reports
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Invalid { .. }))
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"ctxbed\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\">\n",
        reports.len()
    ));
    out.push_str(&format!(
        "  <testsuite name=\"ctxbed run\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\">\n",
        reports.len()
    ));
    for report in reports {
        let class = match report.name.rsplit_once('/') {
            Some((dir, _)) => format!("scenarios.{}", dir.replace('/', ".")),
            None => "scenarios".to_string(),
        };
        let open = format!(
            "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\"",
            xml_escape(&class),
            xml_escape(&report.name),
            xml_escape(&report.path.display().to_string())
        );
        let reasons: Vec<String> = match &report.verdict {
            Verdict::Passed { .. } => Vec::new(),
            Verdict::Blessed { failed_checks, .. } => failed_checks.clone(),
            Verdict::Failed { reasons } => reasons.clone(),
            Verdict::Invalid { diagnostics } => {
                diagnostics.iter().map(ToString::to_string).collect()
            }
        };
        if !report.verdict.is_failure() {
            out.push_str(&open);
            out.push_str("/>\n");
            continue;
        }
        let element = if matches!(report.verdict, Verdict::Invalid { .. }) {
            "error"
        } else {
            "failure"
        };
        let message = reasons
            .first()
            .and_then(|reason| reason.lines().next())
            .unwrap_or("failed");
        let mut body = reasons.join("\n");
        body.push_str(&format!("\nrerun: {}", rerun(report)));
        out.push_str(&open);
        out.push_str(&format!(
            ">\n      <{element} message=\"{}\" type=\"{}\">{}</{element}>\n    </testcase>\n",
            xml_escape(message),
            if element == "error" {
                "invalid"
            } else {
                "scenario"
            },
            xml_escape(&body)
        ));
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// One JSON line per seed of the sweep's shard, in seed order (passing seeds too), then a
/// summary line.
pub fn sweep_json_lines(config: &SweepConfig, report: &SweepReport, seconds: f64) -> Vec<String> {
    let mut failures = report.failures.iter().peekable();
    let mut lines = Vec::new();
    let end = config.start.saturating_add(config.count);
    for seed in (config.start..end).filter(|s| s % config.shard.total == config.shard.index) {
        let failure = failures.next_if(|f| f.seed == seed);
        let line = match failure {
            None => json!({"type": "seed", "seed": seed, "outcome": "passed"}),
            Some(failure) => json!({
                "type": "seed",
                "seed": seed,
                "outcome": "failed",
                "violations": failure.violations.iter().map(|v| json!({"kind": v.kind.as_str(), "step": v.step, "detail": v.detail})).collect::<Vec<_>>(),
                "written": failure.file.as_ref().map(|f| f.display().to_string()),
                "not_written": failure.not_written,
                "reproduced": failure.reproduced,
                "rerun": failure.file.as_ref().map(|f| format!("ctxbed run {}", f.display())),
            }),
        };
        lines.push(line.to_string());
    }
    let by_kind: serde_json::Map<String, Value> = report
        .violations_by_kind
        .iter()
        .map(|(kind, count)| (kind.as_str().to_string(), json!(count)))
        .collect();
    lines.push(
        json!({"type": "summary", "seeds": report.runs, "failing": report.failures.len(), "violations_by_kind": by_kind, "seconds": (seconds * 10.0).round() / 10.0})
            .to_string(),
    );
    lines
}
