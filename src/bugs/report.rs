//! What a `ctxbed bugs` run reports: one line per bug and the figures (text), one JSON object
//! per bug and a summary, JUnit XML, and the page (`docs/bugs.md`): per bug, the verdicts before
//! and after and the failing request's line, as a maintainer would have seen it.
//!
//! The page holds nothing that depends on timing or the machine (no durations, no paths but
//! the repository's), so it is the same from run to run.

use serde_json::{Value, json};

use super::file::Bug;
use super::run::{BugRun, Classification, SideRun};
use crate::output::xml_escape;

/// The figures of a run.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Figures {
    pub bugs: usize,
    pub detected: usize,
    pub missed: usize,
    pub false_alarms_explained: usize,
    pub false_alarms_unexplained: usize,
    pub not_reproducible: usize,
    pub harnesses: usize,
}

impl Figures {
    pub fn of(runs: &[BugRun]) -> Figures {
        let mut figures = Figures {
            bugs: runs.len(),
            ..Figures::default()
        };
        let mut harnesses: Vec<&str> = runs.iter().map(|run| run.bug.harness.as_str()).collect();
        harnesses.sort_unstable();
        harnesses.dedup();
        figures.harnesses = harnesses.len();
        for run in runs {
            match &run.classification {
                Classification::Detected => figures.detected += 1,
                Classification::Missed { .. } => figures.missed += 1,
                Classification::FalseAlarm {
                    explanation: Some(_),
                } => {
                    figures.false_alarms_explained += 1;
                }
                Classification::FalseAlarm { explanation: None } => {
                    figures.false_alarms_unexplained += 1;
                }
                Classification::NotReproducible { .. } => figures.not_reproducible += 1,
            }
        }
        figures
    }

    /// Bugs that ran on both sides.
    pub fn runnable(&self) -> usize {
        self.bugs - self.not_reproducible
    }

    /// Detected bugs among the runnable, in percent (an explained false alarm was detected).
    pub fn detection_percent(&self) -> f64 {
        let runnable = self.runnable();
        if runnable == 0 {
            return 0.0;
        }
        (self.detected + self.false_alarms_explained) as f64 * 100.0 / runnable as f64
    }

    pub fn line(&self) -> String {
        format!(
            "{} bugs across {} harnesses: {} detected, {} missed, {} false alarms ({} explained), {} not reproducible; detection {:.1} % of the {} runnable",
            self.bugs,
            self.harnesses,
            self.detected,
            self.missed,
            self.false_alarms_explained + self.false_alarms_unexplained,
            self.false_alarms_explained,
            self.not_reproducible,
            self.detection_percent(),
            self.runnable()
        )
    }
}

/// What one side came to, in a few words: `pass`, `fail: pairing (summary-cut-fan-out)`.
pub fn side_words(side: Option<&SideRun>) -> String {
    match side {
        None => "not run".into(),
        Some(SideRun::NoEnvironment { .. }) => "cannot be installed".into(),
        Some(SideRun::Ran { verdicts }) => {
            let failing: Vec<String> = verdicts
                .iter()
                .filter_map(|verdict| {
                    if let Some(reason) = &verdict.not_applicable {
                        return Some(format!("n/a ({}: {reason})", verdict.scenario));
                    }
                    (!verdict.rules.is_empty())
                        .then(|| format!("{} ({})", verdict.rules.join(", "), verdict.scenario))
                })
                .collect();
            if failing.is_empty() {
                "pass".into()
            } else {
                format!("fail: {}", failing.join("; "))
            }
        }
    }
}

fn why(classification: &Classification) -> Option<&str> {
    match classification {
        Classification::Detected => None,
        Classification::Missed { why } | Classification::NotReproducible { why } => Some(why),
        Classification::FalseAlarm { explanation } => explanation.as_deref(),
    }
}

/// One line per bug for the terminal.
pub fn text_line(run: &BugRun) -> String {
    let bug = &run.bug;
    let mut line = format!(
        "{:<24} {}  {} ({} → {})  before: {}  after: {}  ({:.1} s)",
        run.classification.label(),
        bug.id,
        bug.row(),
        Bug::versions(&bug.before),
        Bug::versions(&bug.after),
        side_words(run.before.as_ref()),
        side_words(run.after.as_ref()),
        run.elapsed.as_secs_f64()
    );
    if let Some(why) = why(&run.classification) {
        line.push_str(&format!("\n  {why}"));
    }
    line
}

fn side_json(side: Option<&SideRun>) -> Value {
    match side {
        None => Value::Null,
        Some(SideRun::NoEnvironment { why }) => json!({ "installed": false, "why": why }),
        Some(SideRun::Ran { verdicts }) => json!({
            "installed": true,
            "scenarios": verdicts.iter().map(|verdict| json!({
                "scenario": verdict.scenario,
                "rules": verdict.rules,
                "not_applicable": verdict.not_applicable,
                "failing_line": verdict.failing_line,
                "problem": verdict.problem,
                "log": verdict.log.display().to_string(),
            })).collect::<Vec<_>>(),
        }),
    }
}

/// One JSON object for a bug.
pub fn json_line(run: &BugRun) -> Value {
    let bug = &run.bug;
    json!({
        "type": "bug",
        "id": bug.id,
        "harness": bug.harness,
        "variant": bug.variant,
        "rule": bug.rule,
        "before_versions": Bug::versions(&bug.before),
        "after_versions": Bug::versions(&bug.after),
        "references": bug.references,
        "classification": run.classification.label(),
        "why": why(&run.classification),
        "before": side_json(run.before.as_ref()),
        "after": side_json(run.after.as_ref()),
        "seconds": run.elapsed.as_secs_f64(),
    })
}

/// The summary object that ends JSON output.
pub fn json_summary(figures: &Figures, seconds: f64) -> Value {
    json!({
        "type": "summary",
        "bugs": figures.bugs,
        "harnesses": figures.harnesses,
        "detected": figures.detected,
        "missed": figures.missed,
        "false_alarms_explained": figures.false_alarms_explained,
        "false_alarms_unexplained": figures.false_alarms_unexplained,
        "not_reproducible": figures.not_reproducible,
        "detection_percent": figures.detection_percent(),
        "seconds": seconds,
    })
}

/// JUnit XML: one test case per bug; a miss or an unexplained false alarm fails, a bug that
/// cannot be reproduced is skipped.
pub fn junit(runs: &[BugRun]) -> String {
    let failures = runs.iter().filter(|run| run.classification.fails()).count();
    let skipped = runs
        .iter()
        .filter(|run| matches!(run.classification, Classification::NotReproducible { .. }))
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"ctxbed\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">\n  <testsuite name=\"ctxbed bugs\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">\n",
        runs.len(),
        runs.len()
    ));
    for run in runs {
        let open = format!(
            "    <testcase classname=\"bugs.{}\" name=\"{}\" time=\"{:.3}\"",
            xml_escape(&run.bug.harness),
            xml_escape(&run.bug.id),
            run.elapsed.as_secs_f64()
        );
        let body = format!(
            "before: {}\nafter: {}",
            side_words(run.before.as_ref()),
            side_words(run.after.as_ref())
        );
        let message = why(&run.classification).unwrap_or(run.classification.label());
        match &run.classification {
            classification if classification.fails() => out.push_str(&format!(
                "{open}>\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>\n",
                xml_escape(message),
                xml_escape(classification.label()),
                xml_escape(&body)
            )),
            Classification::NotReproducible { why } => out.push_str(&format!(
                "{open}>\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                xml_escape(why)
            )),
            _ => out.push_str(&format!("{open}/>\n")),
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The page: the figures, a table of every bug, then each bug's failing line.
pub fn page(runs: &[BugRun], command: &str) -> String {
    let figures = Figures::of(runs);
    let mut out = String::from("# The bug zoo: real harness bugs, before and after their fix\n\n");
    out.push_str(&format!(
        "Generated by `{command}` (docs/bug-format.md says what a bug file holds). Each bug's\nwire scenarios ran against its harness at the last release with the bug and the first without it.\n\n**{}.**\n\n",
        figures.line()
    ));
    out.push_str("| bug | harness | before → after | scenarios | rule | before | after | verdict |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for run in runs {
        let bug = &run.bug;
        let scenarios: Vec<String> = bug.scenarios.iter().map(|s| s.name()).collect();
        out.push_str(&format!(
            "| [{}](#{}) | {} | {} → {} | {} | {} | {} | {} | {} |\n",
            bug.id,
            bug.id,
            bug.row(),
            cell(&Bug::versions(&bug.before)),
            cell(&Bug::versions(&bug.after)),
            cell(&scenarios.join(", ")),
            bug.rule,
            cell(&side_words(run.before.as_ref())),
            cell(&side_words(run.after.as_ref())),
            run.classification.label()
        ));
    }
    for run in runs {
        out.push_str(&bug_section(run));
    }
    out
}

fn bug_section(run: &BugRun) -> String {
    let bug = &run.bug;
    let mut out = format!("\n## {}\n\n{}\n\n", bug.id, bug.title);
    out.push_str(&format!(
        "- harness: {} ({} → {})\n- reports: {}\n- verdict: **{}**",
        bug.row(),
        Bug::versions(&bug.before),
        Bug::versions(&bug.after),
        bug.references.join(", "),
        run.classification.label()
    ));
    if let Some(why) = why(&run.classification) {
        out.push_str(&format!(": {why}"));
    }
    out.push('\n');
    if !bug.note.is_empty() {
        out.push_str(&format!("\n{}\n", bug.note.trim()));
    }
    if let Some(SideRun::Ran { verdicts }) = &run.before {
        for verdict in verdicts {
            if let Some(line) = &verdict.failing_line {
                out.push_str(&format!(
                    "\nBefore the fix, `{}` ({}):\n\n```text\n{}\n```\n",
                    verdict.scenario,
                    Bug::versions(&bug.before),
                    line.trim()
                ));
            }
        }
    }
    out
}
