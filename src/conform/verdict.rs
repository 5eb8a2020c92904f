//! What one (scenario, harness) run came to: its [`Cell`] (pass, fail with the rules broken,
//! or not applicable) and the [`CellReport`] that carries it with the trace, the golden's
//! outcome and what the kill matrix needs.

use std::path::PathBuf;
use std::time::Duration;

use super::checks::Violation;
use super::continuity;
use crate::scenario::check::golden::GoldenOutcome;

/// The verdict of one (scenario, harness) run.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Pass,
    /// Broken rules (each once, in order), or the adapter's failure.
    Fail {
        rules: Vec<String>,
    },
    /// The harness cannot speak the scenario's API.
    NotApplicable {
        reason: String,
    },
}

/// One (scenario, harness) run.
#[derive(Debug, Clone)]
pub struct CellReport {
    pub scenario: String,
    pub harness: String,
    pub version: String,
    /// How the harness manages its context, as its adapter declares (`own`, `docs recipe`,
    /// `none`).
    pub context: String,
    /// What the adapter says its harness is, when it says (`cli`; empty: a library).
    pub kind: String,
    pub cell: Cell,
    pub violations: Vec<Violation>,
    /// What went wrong with the adapter or the scenario, if anything.
    pub problem: Option<String>,
    pub trace: String,
    pub golden: PathBuf,
    pub golden_outcome: Option<GoldenOutcome>,
    pub log: PathBuf,
    pub elapsed: Duration,
    /// The defects the scenario declares (the mutants it must fail).
    pub defects: Vec<String>,
    /// The mutants its description promises pass.
    pub allows: Vec<String>,
    /// Whether `progress` and `retention` had something to judge in this run.
    pub applies: continuity::Applies,
}

impl CellReport {
    /// This report, failed because a file of the scenario does not load.
    pub(super) fn unloadable(mut self, problem: String) -> CellReport {
        self.problem = Some(problem);
        self.cell = Cell::Fail {
            rules: vec!["scenario".into()],
        };
        self
    }

    /// The first violation (of `rule`, or of any rule when `None`) as the trace words it:
    /// `progress: step 1, request 2: it does not carry …`. Without one, a failed
    /// run's adapter problem (`adapter: …`).
    pub fn failing_line(&self, rule: Option<&str>) -> Option<String> {
        let violation = self
            .violations
            .iter()
            .find(|violation| rule.is_none_or(|rule| violation.rule == rule));
        Some(match violation {
            Some(violation) => match violation.step {
                Some(step) if !violation.detail.starts_with("step ") => {
                    format!("{}: step {step}, {}", violation.rule, violation.detail)
                }
                _ => format!("{}: {}", violation.rule, violation.detail),
            },
            None if rule.is_none() && matches!(self.cell, Cell::Fail { .. }) => {
                format!("adapter: {}", self.problem.as_deref()?)
            }
            None => return None,
        })
    }

    /// True when the cell does not fail the run. A golden pins a reviewed verdict, a known
    /// failure included: when one exists, the trace must match it (any change of behaviour is a
    /// mismatch); without one the cell is `new` and fails until it is blessed, whatever its
    /// verdict. `strict` also fails a pinned failure.
    pub fn ok(&self, strict: bool) -> bool {
        let verdict_ok = !matches!(self.cell, Cell::Fail { .. });
        match &self.golden_outcome {
            Some(GoldenOutcome::Mismatch { .. }) | Some(GoldenOutcome::Missing { .. }) => false,
            Some(GoldenOutcome::Matched) | Some(GoldenOutcome::Blessed { .. }) => {
                verdict_ok || !strict
            }
            None => verdict_ok,
        }
    }
}
