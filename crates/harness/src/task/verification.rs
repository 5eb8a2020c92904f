//! Verification evidence: the checked subject's version, and bounded reports bound to what
//! they checked.
//!
//! The application names the version of the subject being checked (a commit, a build id) with
//! [`TaskContextState::set_subject_version`] and clears it with
//! [`TaskContextState::invalidate_subject`]; file changes never update it by themselves.
//! [`VerificationService::verify`] captures the [`Binding`] — task id, contract version,
//! subject version — *before* the check runs, runs it, and stores the report (its summary cut to
//! [`VERIFICATION_SUMMARY_CHARS_MAX`] characters), keeping the latest report per check name.
//! A report whose binding no longer matches the current one is [`Freshness::Stale`]: stale
//! evidence cannot establish the current result, and a passed check never declares the task
//! complete.
//!
//! ```
//! use ctxbed_harness::task::{SharedTaskState, TaskScope};
//! use ctxbed_harness::task::verification::{CheckResult, Freshness, VerificationService};
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let shared = SharedTaskState::new();
//!     shared.with(|state| {
//!         state.begin_task(TaskScope::new("export-fix", "Fix the export")).unwrap();
//!         state.set_subject_version("abc123").unwrap();
//!     });
//!     let service = VerificationService::new(shared.clone());
//!     let report = service.verify("tests", async { CheckResult::passed("12 passed") }).await.unwrap();
//!     shared.with(|state| {
//!         assert_eq!(state.freshness(&report), Freshness::Current);
//!         state.set_subject_version("def456").unwrap();
//!         assert_eq!(state.freshness(&report), Freshness::Stale);
//!     });
//! });
//! ```

use std::future::Future;

use super::{SharedTaskState, TaskContextState, TaskError, check_name};
use crate::limits::{VERIFICATION_CHECKS_MAX, VERIFICATION_SUMMARY_CHARS_MAX};

/// What a report was checked against.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Binding {
    pub task_id: String,
    pub contract_version: u64,
    pub subject_version: String,
}

/// The outcome of running one check.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckResult {
    pub passed: bool,
    /// What the check found, in a few lines; cut when stored.
    pub summary: String,
}

impl CheckResult {
    /// A passed check.
    pub fn passed(summary: impl Into<String>) -> Self {
        CheckResult {
            passed: true,
            summary: summary.into(),
        }
    }

    /// A failed check.
    pub fn failed(summary: impl Into<String>) -> Self {
        CheckResult {
            passed: false,
            summary: summary.into(),
        }
    }
}

/// One stored report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VerificationReport {
    /// The check's name, e.g. `tests`.
    pub check: String,
    pub passed: bool,
    /// At most [`VERIFICATION_SUMMARY_CHARS_MAX`] characters.
    pub summary: String,
    pub binding: Binding,
    /// The task revision at which the report was stored.
    pub revision: u64,
}

/// Whether a report still speaks about the current task, contract and subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    Current,
    /// The binding moved: the report cannot establish the current result.
    Stale,
}

impl Freshness {
    /// `CURRENT` or `STALE`, as projected.
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Current => "CURRENT",
            Freshness::Stale => "STALE",
        }
    }
}

impl TaskContextState {
    /// Names the version of the subject being checked; the same version again changes nothing.
    /// Returns the revision after the call.
    ///
    /// # Errors
    /// A blank or over-long version.
    pub fn set_subject_version(&mut self, version: &str) -> Result<u64, TaskError> {
        check_name("the subject version", version)?;
        if self.subject_version.as_deref() == Some(version) {
            return Ok(self.revision);
        }
        self.subject_version = Some(version.to_string());
        Ok(self.bump())
    }

    /// Marks the subject's version unknown (it changed, and nobody has named the new version):
    /// every report becomes stale. Returns the revision after the call.
    pub fn invalidate_subject(&mut self) -> u64 {
        if self.subject_version.take().is_some() {
            self.bump()
        } else {
            self.revision
        }
    }

    /// The version of the subject, when known.
    pub fn subject_version(&self) -> Option<&str> {
        self.subject_version.as_deref()
    }

    /// What a check run now would be bound to.
    ///
    /// # Errors
    /// No active task, or an unknown subject version.
    pub fn current_binding(&self) -> Result<Binding, TaskError> {
        let scope = self.scope.as_ref().ok_or(TaskError::NoTask)?;
        let subject = self.subject_version.as_ref().ok_or(TaskError::NoSubject)?;
        Ok(Binding {
            task_id: scope.task_id.clone(),
            contract_version: self.contract_version,
            subject_version: subject.clone(),
        })
    }

    /// Stores a report for `check` bound to `binding` (captured before the check ran),
    /// replacing the previous report of that check. A binding that moved meanwhile is stored
    /// as it is, and so shows as stale.
    ///
    /// # Errors
    /// A blank or over-long check name, or a new check name beyond
    /// [`VERIFICATION_CHECKS_MAX`].
    pub fn record_verification(
        &mut self,
        check: &str,
        binding: Binding,
        result: CheckResult,
    ) -> Result<VerificationReport, TaskError> {
        check_name("the check name", check)?;
        if !self.reports.contains_key(check) && self.reports.len() >= VERIFICATION_CHECKS_MAX {
            let example = self.reports.keys().next().cloned().unwrap_or_default();
            return Err(TaskError::VerificationLimit {
                max: VERIFICATION_CHECKS_MAX,
                example,
            });
        }
        let report = VerificationReport {
            check: check.to_string(),
            passed: result.passed,
            summary: bounded(&result.summary, VERIFICATION_SUMMARY_CHARS_MAX),
            binding,
            revision: self.bump(),
        };
        self.reports.insert(check.to_string(), report.clone());
        Ok(report)
    }

    /// The latest report per check, in check-name order.
    pub fn verification_reports(&self) -> impl Iterator<Item = &VerificationReport> {
        self.reports.values()
    }

    /// Whether a report's binding is still the current one. With no task or no subject
    /// version, every report is stale.
    pub fn freshness(&self, report: &VerificationReport) -> Freshness {
        match self.current_binding() {
            Ok(binding) if binding == report.binding => Freshness::Current,
            _ => Freshness::Stale,
        }
    }
}

/// Runs application checks and stores their reports in the task state.
#[derive(Debug, Clone)]
pub struct VerificationService {
    state: SharedTaskState,
}

impl VerificationService {
    /// A service over shared task state.
    pub fn new(state: SharedTaskState) -> Self {
        VerificationService { state }
    }

    /// Captures the current binding, runs `check` (without holding the state lock), and stores
    /// its report. If the task, contract or subject moves while the check runs, the stored
    /// report is already stale.
    ///
    /// # Errors
    /// No active task or unknown subject version (the check does not run), or the check name
    /// is refused when storing.
    pub async fn verify<F>(&self, check: &str, run: F) -> Result<VerificationReport, TaskError>
    where
        F: Future<Output = CheckResult>,
    {
        check_name("the check name", check)?;
        let binding = self.state.with(|state| state.current_binding())?;
        let result = run.await;
        self.state
            .with(|state| state.record_verification(check, binding, result))
    }
}

/// At most `max` characters, with `…` marking a cut.
fn bounded(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
