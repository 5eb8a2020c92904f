//! Runs a checked scenario on the simulated runtime and records its trace.
//!
//! One current-thread tokio runtime with paused time per run; the scenario's one
//! [`SeedTree`](ctxbed_sim::rng::SeedTree), each consumer drawing from its own named
//! [stream](ctxbed_sim::rng::Stream); in-memory workspace storage. Each step is an agent call consumed through `stream_events`, so
//! the trace is exactly what a streaming client sees.
//!
//! The run's world and its set-up before the first step are in `world`, one step in `step`,
//! building the agent in `agent`, the trace header in `header`, the simulated application
//! around the agent in `app`, and the crashes inflicted on session files in `crash`.

mod agent;
mod app;
mod crash;
mod header;
mod step;
mod world;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::record::Trace;
use crate::scenario::format::file::Scenario;
use ctxbed_harness::model::{Model, ModelRequest};
use ctxbed_harness::storage::WorkspacePath;
use ctxbed_sim::mock::MockModel;
use world::Run;

/// Session-log records by (user id, session id).
pub type SessionLogs =
    BTreeMap<(Option<String>, Option<String>), Vec<ctxbed_harness::session::SessionRecord>>;

/// Why a scenario could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start the simulated runtime: {0}")]
    Runtime(#[from] std::io::Error),
    #[error("cannot build the agent: {0}")]
    Build(#[from] ctxbed_harness::agent::BuildError),
    #[error("cannot seed the workspace: {0}")]
    Workspace(String),
    #[error("no built-in tool named `{0}`; see tools::builtin::BUILTIN_TOOL_NAMES")]
    UnknownBuiltinTool(String),
    #[error("the simulated network failed: {0}")]
    Network(String),
}

/// A model the runner drives that hands back the requests it received, for the trace.
pub trait ObservedModel: Model {
    /// Every request received since the last call, in order.
    fn take_received(&self) -> Vec<ModelRequest>;
}

impl ObservedModel for MockModel {
    fn take_received(&self) -> Vec<ModelRequest> {
        MockModel::take_received(self)
    }
}

/// What a run recorded: its trace, every workspace file after the last step (not rendered; for
/// checkers such as `sim::invariants`) and every session's log records, by (user, session)
/// (empty when the session log is off).
#[derive(Debug, Clone)]
pub struct Simulated {
    pub trace: Trace,
    pub workspace: Workspace,
    pub session_logs: SessionLogs,
}

/// Runs a scenario in process on the simulated runtime, its model the mock itself, and returns
/// what it recorded (a scenario with a `[network]` table runs with
/// [`super::networked::run_networked`] instead; `check::outcome::run` chooses).
///
/// # Errors
/// The runtime, agent or workspace could not be set up (scenario steps that fail are recorded in
/// the trace, not returned).
pub fn simulate_scenario(scenario: &Scenario) -> Result<Simulated, RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    let model = Arc::new(MockModel::new(scenario.mock.clone()));
    runtime.block_on(simulate(scenario, model))
}

/// Runs a scenario against another model (a real provider) on a real-time runtime with
/// network I/O, so the model's own timeouts measure real time. Scripted latencies of sources
/// and tools are real waits here. The summary model, if the scenario names one, stays its mock.
///
/// # Errors
/// As [`simulate_scenario`].
pub fn simulate_live(
    scenario: &Scenario,
    model: Arc<dyn ObservedModel>,
) -> Result<Simulated, RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(simulate(scenario, model))
}

/// Every workspace file by path.
pub type Workspace = BTreeMap<WorkspacePath, Vec<u8>>;

/// Runs every step of the scenario against `model` on the current runtime, and returns the
/// trace, the workspace after the last step and every session's log records.
pub(super) async fn simulate(
    scenario: &Scenario,
    model: Arc<dyn ObservedModel>,
) -> Result<Simulated, RunError> {
    let mut run = Run::start(scenario, model).await?;
    run.set_up_task()?;
    run.load_history();
    let mut steps = Vec::with_capacity(scenario.steps.len());
    // Each session's records after its latest step, copied once, at that step; every other
    // step copies only its own records (those past the length before it).
    let mut session_logs = SessionLogs::new();
    let last_step_of: BTreeMap<(Option<String>, Option<String>), usize> = scenario
        .steps
        .iter()
        .enumerate()
        .map(|(index, spec)| ((spec.user.clone(), spec.session.clone()), index))
        .collect();
    for (index, spec) in scenario.steps.iter().enumerate() {
        let record = run.step(index, spec).await?;
        let session = (spec.user.clone(), spec.session.clone());
        if last_step_of.get(&session) == Some(&index) {
            session_logs.insert(session, run.session_records_after(&record).await);
        }
        steps.push(record);
    }
    let (trace, workspace, session_logs) = run.finish(steps, session_logs);
    Ok(Simulated {
        trace,
        workspace,
        session_logs,
    })
}
