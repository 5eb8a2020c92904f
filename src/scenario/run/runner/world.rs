//! The world of one run (clock, workspace storage, model and scripted sources, shared by every
//! agent the run builds), the run in progress (its session log and the agent of the
//! moment), and what happens before the first step: seeding the workspace, task state and
//! pre-existing history.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use ctxbed_harness::agent::HarnessAgent;
use ctxbed_harness::clock::{Clock, TokioClock};
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::storage::{MemoryStorage, Storage, WorkspacePath};
use ctxbed_sim::mock::MockModel;
use ctxbed_sim::scripted::ScriptedSource;

use super::agent::{SessionLogHandle, new_session_log};
use super::header::header;
use super::{ObservedModel, RunError, SessionLogs, Workspace};
use crate::scenario::format::file::{Scenario, SessionStorage};
use crate::scenario::run::record::{StepRecord, Trace};

/// What every agent of a run shares: a restart builds a new agent over the same world
/// ([`World::agent`]).
pub(super) struct World<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) storage: Arc<MemoryStorage>,
    pub(super) model: Arc<dyn ObservedModel>,
    /// The scenario's separate summary model, one for the whole run (its script goes on
    /// across restarts, as a remote model's would).
    pub(super) summary_model: Option<Arc<MockModel>>,
    /// Manifests the context policy's observer received, over the whole run (every agent of
    /// the run shares the one observer, as agents of one builder do).
    pub(super) observed: Arc<AtomicU64>,
    pub(super) sources: Vec<(String, Arc<ScriptedSource>)>,
}

/// A run in progress: its world, its session log and the agent of the moment.
pub(super) struct Run<'a> {
    pub(super) world: World<'a>,
    pub(super) session_log: SessionLogHandle,
    pub(super) agent: HarnessAgent,
    /// Each step records the session files' bytes around its call (for the I10 check).
    pub(super) jsonl_log: bool,
}

impl<'a> Run<'a> {
    /// The world with the scenario's workspace files, failing write prefixes and sources, and
    /// the first agent over it.
    pub(super) async fn start(
        scenario: &'a Scenario,
        model: Arc<dyn ObservedModel>,
    ) -> Result<Run<'a>, RunError> {
        let clock: Arc<dyn Clock> = Arc::new(TokioClock::start());
        let storage = Arc::new(MemoryStorage::new());
        write_files(&storage, &scenario.workspace_files).await?;
        for prefix in &scenario.fail_writes_under {
            storage.fail_writes_under(prefix.clone());
        }
        let world = World {
            scenario,
            clock,
            storage,
            model,
            summary_model: scenario
                .agent
                .summary_model
                .as_ref()
                .map(|script| Arc::new(MockModel::new(script.clone()))),
            observed: Arc::new(AtomicU64::new(0)),
            sources: scripted_sources(scenario),
        };
        let session_log = new_session_log(scenario, &world.storage, None);
        let jsonl_log =
            scenario.agent.session_log && scenario.agent.session_storage == SessionStorage::Jsonl;
        let agent = world.agent(&session_log)?;
        Ok(Run {
            world,
            session_log,
            agent,
            jsonl_log,
        })
    }

    /// Sets the scenario's task state, which belongs to a session: the first step's.
    pub(super) fn set_up_task(&self) -> Result<(), RunError> {
        let scenario = self.world.scenario;
        let Some(task) = &scenario.task else {
            return Ok(());
        };
        let first = scenario.steps.first();
        let runtime = RuntimeContext {
            user_id: first.and_then(|s| s.user.clone()),
            session_id: first.and_then(|s| s.session.clone()),
            ..RuntimeContext::default()
        };
        if let Some(scope) = &task.scope {
            self.agent
                .begin_task(&runtime, scope.clone())
                .map_err(|e| RunError::Workspace(format!("task: {e}")))?;
        }
        let state = self.agent.task_state(&runtime);
        let mode = task.plan_mode;
        let path = task.plan_path.clone();
        state
            .with(|s| {
                if let Some(mode) = mode {
                    s.set_mode(mode);
                }
                s.set_plan_path(path.as_deref())
            })
            .map_err(|e| RunError::Workspace(format!("task: {e}")))?;
        Ok(())
    }

    /// Appends each `[[history]]` entry to its session's committed history (the first step's
    /// user and session unless the entry names its own).
    pub(super) fn load_history(&self) {
        let scenario = self.world.scenario;
        for history in &scenario.history {
            let first = scenario.steps.first();
            let runtime = RuntimeContext {
                user_id: history
                    .user
                    .clone()
                    .or_else(|| first.and_then(|s| s.user.clone())),
                session_id: history
                    .session
                    .clone()
                    .or_else(|| first.and_then(|s| s.session.clone())),
                ..RuntimeContext::default()
            };
            let mut messages = self.agent.history(&runtime);
            messages.extend(history.messages.iter().cloned());
            self.agent.load_history(&runtime, messages);
        }
    }

    /// The trace of the finished run, the workspace after its last step and the session logs.
    pub(super) fn finish(
        self,
        steps: Vec<StepRecord>,
        session_logs: SessionLogs,
    ) -> (Trace, Workspace, SessionLogs) {
        // Every agent of a run (restarts build new ones) has the scenario's one policy.
        let policy_version = self.agent.policy_version().to_string();
        let trace = Trace {
            header: header(self.world.scenario, &policy_version),
            steps,
            policy_version: Some(policy_version),
        };
        (trace, self.world.storage.snapshot(), session_logs)
    }
}

/// Writes each (path, text) into workspace storage.
pub(super) async fn write_files(
    storage: &MemoryStorage,
    files: &BTreeMap<String, String>,
) -> Result<(), RunError> {
    for (path, content) in files {
        let path = WorkspacePath::parse(path).map_err(|e| RunError::Workspace(e.to_string()))?;
        storage
            .write(&path, content.clone().into_bytes())
            .await
            .map_err(|e| RunError::Workspace(e.to_string()))?;
    }
    Ok(())
}

/// The scenario's scripted sources, by name.
fn scripted_sources(scenario: &Scenario) -> Vec<(String, Arc<ScriptedSource>)> {
    scenario
        .sources
        .iter()
        .map(|spec| {
            let source = ScriptedSource::new(
                spec.blocks.clone(),
                spec.latency,
                spec.failure,
                spec.fail_loads.clone(),
            );
            (spec.name.clone(), Arc::new(source))
        })
        .collect()
}
