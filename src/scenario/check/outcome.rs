//! A scenario run and judged in one call: the run layer's record, the inline expectations
//! evaluated over it, and its canonical text (what goldens hold).

use std::sync::Arc;

use super::expect::{Check, evaluate};
use super::trace::render;
use crate::scenario::format::file::Scenario;
use crate::scenario::run::networked::run_networked;
use crate::scenario::run::record::Trace;
use crate::scenario::run::runner::{
    ObservedModel, RunError, SessionLogs, Simulated, Workspace, simulate_live, simulate_scenario,
};

/// The result of one scenario run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub trace: Trace,
    pub checks: Vec<Check>,
    /// The canonical rendering (what goldens hold).
    pub text: String,
    /// Every workspace file after the last step (not rendered; for checkers such as
    /// `sim::invariants`).
    pub workspace: Workspace,
    /// Every session's log records after the last step, by (user, session) (not rendered; for
    /// checkers such as `sim::invariants`). Empty when the session log is off.
    pub session_logs: SessionLogs,
}

impl RunOutput {
    /// True when every inline expectation held.
    pub fn expectations_passed(&self) -> bool {
        self.checks.iter().all(|check| check.passed)
    }
}

/// Runs a scenario on the simulated runtime (over the simulated network when it has a
/// `[network]` table) and judges it.
///
/// # Errors
/// The runtime, agent or workspace could not be set up (scenario steps that fail are recorded in
/// the trace, not returned).
pub fn run(scenario: &Scenario) -> Result<RunOutput, RunError> {
    Ok(judge(scenario, simulate(scenario)?))
}

/// Runs a scenario as [`run`] does and returns what it recorded, neither judged nor rendered:
/// enough to compare with another run's record (`invariants::check_record_determinism`).
///
/// # Errors
/// As [`run`].
pub fn simulate(scenario: &Scenario) -> Result<Simulated, RunError> {
    match &scenario.network {
        Some(network) => run_networked(scenario, network),
        None => simulate_scenario(scenario),
    }
}

/// Runs a scenario against another model (a real provider) on a real-time runtime; see
/// [`simulate_live`].
///
/// # Errors
/// As [`run`].
pub fn run_live(scenario: &Scenario, model: Arc<dyn ObservedModel>) -> Result<RunOutput, RunError> {
    Ok(judge(scenario, simulate_live(scenario, model)?))
}

/// Evaluates the scenario's expectations over what a run recorded and renders it.
pub fn judge(scenario: &Scenario, simulated: Simulated) -> RunOutput {
    let Simulated {
        trace,
        workspace,
        session_logs,
    } = simulated;
    let checks = evaluate(&scenario.expectations, &trace.steps);
    let text = render(&trace, &checks);
    RunOutput {
        trace,
        checks,
        text,
        workspace,
        session_logs,
    }
}
