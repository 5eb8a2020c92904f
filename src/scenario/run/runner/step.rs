//! One step of a run: what happens before the call (workspace writes, failing writes, a
//! restart, the application's actions), the call with the other writers around it, and the
//! step's record for the trace.

use std::collections::BTreeMap;
use std::time::Duration;

use ctxbed_harness::agent::AgentError;
use ctxbed_harness::agent::events::{AgentEvent, EventKind};
use ctxbed_harness::message::Message;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::session::{JsonlSessionLog, SessionLog, SessionLogKey, SessionRecord};
use ctxbed_harness::storage::Storage;
use tokio::task::JoinHandle;

use super::RunError;
use super::agent::{SessionLogHandle, new_session_log};
use super::app::{apply_action, open_for_app, spawn_actor, spawn_writer};
use super::crash::{damage_session_files, session_file_bytes, tear_session_files};
use super::world::{Run, write_files};
use crate::scenario::format::file::{Restart, StepSpec};
use crate::scenario::run::record::{SessionFileBytes, StepRecord};

impl Run<'_> {
    /// Runs step `index` (0-based) and records it.
    pub(super) async fn step(
        &mut self,
        index: usize,
        spec: &StepSpec,
    ) -> Result<StepRecord, RunError> {
        let runtime = runtime_of(spec);
        write_files(&self.world.storage, &spec.workspace_writes).await?;
        let log_key = self.log_key(&runtime);
        let (before, records_before) = self.before_call(spec, &runtime, &log_key).await?;
        let mut session_files = self.session_files_before().await;
        let clock = &self.world.clock;
        let started = clock.elapsed();
        let observed_before = self
            .world
            .observed
            .load(std::sync::atomic::Ordering::SeqCst);
        let others = self.spawn_other_writers(spec, &runtime);
        let (events, end) = self.call(spec, &runtime).await;
        let timed_out = end == CallEnd::TimedOut;
        // Other writers finish even when the step ended before their time.
        let mut after = others.finish().await;
        if let (CallEnd::Cancelled, Some(at)) = (end, spec.cancel_at) {
            after.push((
                started + at,
                "application cancels the call (its future is dropped)".to_string(),
            ));
            after.sort_by_key(|(at, _)| *at);
        }
        let outcome = outcome_of(&events);
        assert!(
            timed_out || outcome.is_ok() || !events.is_empty(),
            "a finished run reports events"
        );
        self.session_files_after(&mut session_files).await;
        let (session_records, new_session_records) =
            self.session_records_since(&runtime, records_before);
        Ok(StepRecord {
            index: index + 1,
            spec: spec.clone(),
            before,
            after,
            events,
            outcome,
            elapsed: clock.elapsed().saturating_sub(started),
            requests: self.world.model.take_received(),
            summary_model_requests: self
                .world
                .summary_model
                .as_ref()
                .map(|model| model.take_received())
                .unwrap_or_default(),
            source_loads: self
                .world
                .sources
                .iter()
                .map(|(name, source)| (name.clone(), source.loads()))
                .collect(),
            session_records,
            new_session_records,
            observer_calls: self
                .world
                .observed
                .load(std::sync::atomic::Ordering::SeqCst)
                .saturating_sub(observed_before),
            workspace_files: self.workspace_files().await,
            committed_history: self.agent.history(&runtime),
            session_files,
        })
    }

    /// The session records written since the first `records_before`: their counts by kind, in
    /// the order kinds first appear, and the records themselves.
    fn session_records_since(
        &self,
        runtime: &RuntimeContext,
        records_before: usize,
    ) -> (Vec<(String, u64)>, Vec<SessionRecord>) {
        let mut session_records: Vec<(String, u64)> = Vec::new();
        let mut new_session_records = Vec::new();
        self.agent
            .for_each_session_record_from(runtime, records_before, &mut |record| {
                count_kind(&mut session_records, &record.kind);
                // Payloads are shared, so this copies handles; they are parsed only when an
                // expectation reads their fields.
                new_session_records.push(record.clone());
            });
        (session_records, new_session_records)
    }

    /// Every file in the workspace, by path.
    async fn workspace_files(&self) -> Vec<String> {
        self.world
            .storage
            .list("")
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|path| path.as_str().to_string())
            .collect()
    }

    /// Every record of the step's session after the step: what the agent holds, or, when it
    /// could not read the log back, every line of the session file that reads as a record (the
    /// log itself is left as it was).
    pub(super) async fn session_records_after(&self, record: &StepRecord) -> Vec<SessionRecord> {
        let runtime = runtime_of(&record.spec);
        if !matches!(record.outcome, Err(AgentError::Restore(_))) {
            return self.agent.session_records(&runtime);
        }
        let path = ctxbed_harness::session::jsonl::session_path(&self.log_key(&runtime));
        match self.world.storage.read(&path).await {
            Ok(Some(bytes)) => ctxbed_harness::session::jsonl::readable_records(&bytes),
            _ => Vec::new(),
        }
    }

    fn log_key(&self, runtime: &RuntimeContext) -> SessionLogKey {
        SessionLogKey {
            agent_id: self.world.scenario.agent.agent_id.clone(),
            user_id: runtime.user_id.clone(),
            session_id: runtime.session_id.clone(),
        }
    }

    /// What happens before the call: failing writes change, the agent restarts, the
    /// application acts. Returns the trace lines and the session's record count the step's
    /// records are counted from.
    async fn before_call(
        &mut self,
        spec: &StepSpec,
        runtime: &RuntimeContext,
        log_key: &SessionLogKey,
    ) -> Result<(Vec<String>, usize), RunError> {
        let mut before = Vec::new();
        let mut records_before = self.agent.session_record_count(runtime);
        if let Some(prefixes) = &spec.fail_writes_under {
            self.world.storage.set_failing_writes(prefixes.clone());
            before.push(if prefixes.is_empty() {
                "storage: writes no longer fail".to_string()
            } else {
                format!("storage: writes under {prefixes:?} fail from now on")
            });
        }
        if let Some(restart) = spec.restart {
            records_before = self.restart(restart, log_key, &mut before).await?;
        }
        let agent = &self.agent;
        if spec.plan_mode.is_some() || !spec.actions.is_empty() {
            before.extend(open_for_app(agent, runtime, spec.restart.is_some()).await);
        }
        if let Some(mode) = spec.plan_mode {
            agent.task_state(runtime).with(|s| s.set_mode(mode));
        }
        for action in &spec.actions {
            before.push(apply_action(agent, runtime, action).await);
        }
        Ok((before, records_before))
    }

    /// Restarts the agent's process (after tearing or damaging the session files, if asked):
    /// a new session log where the old one did not survive, and a new agent. Adds the trace
    /// lines to `before` and returns the session's record count the new agent will read back.
    async fn restart(
        &mut self,
        restart: Restart,
        log_key: &SessionLogKey,
        before: &mut Vec<String>,
    ) -> Result<usize, RunError> {
        let scenario = self.world.scenario;
        let storage = &self.world.storage;
        match restart {
            Restart::Clean => {}
            Restart::Torn => before.extend(tear_session_files(storage.as_ref()).await),
            Restart::Corrupt => before.extend(damage_session_files(storage.as_ref()).await),
        }
        let (log, lost) = match &self.session_log {
            SessionLogHandle::Jsonl(log) => (
                new_session_log(scenario, storage, None),
                log.pending(log_key),
            ),
            SessionLogHandle::Memory(_) => (
                new_session_log(scenario, storage, Some(&self.session_log)),
                0,
            ),
        };
        self.session_log = log;
        self.agent = self.world.agent(&self.session_log)?;
        before.push(format!(
            "restart ({}): a new agent over the same storage and model; {lost} unflushed record(s) of this session lost",
            match restart {
                Restart::Clean => "clean",
                Restart::Torn => "after a torn write",
                Restart::Corrupt => "after damage inside the session log",
            }
        ));
        Ok(match &self.session_log {
            // What the new agent will read back: the records committed to storage.
            SessionLogHandle::Jsonl(_) => JsonlSessionLog::new(storage.clone())
                .restore(log_key)
                .await
                .map_or(0, |restored| restored.records.len()),
            SessionLogHandle::Memory(log) => log.record_count(log_key),
        })
    }

    /// Starts the step's other writers: the concurrent append and the concurrent task actions,
    /// each waiting for its time after the step starts.
    fn spawn_other_writers(&self, spec: &StepSpec, runtime: &RuntimeContext) -> OtherWriters {
        let clock = &self.world.clock;
        let writer = spec
            .concurrent_append
            .clone()
            .map(|append| spawn_writer(&self.agent, runtime, clock, append));
        let actors = spec
            .concurrent_actions
            .iter()
            .map(|(at, action)| spawn_actor(&self.agent, runtime, clock, *at, action.clone()))
            .collect();
        OtherWriters { writer, actors }
    }

    /// The agent's call, its events collected, and how it ended. Past the step's virtual time
    /// limit it has no events; cancelled by the application (`cancel_at_ms`), it keeps the
    /// events before the cancel.
    async fn call(&self, spec: &StepSpec, runtime: &RuntimeContext) -> (Vec<AgentEvent>, CallEnd) {
        let stream = self
            .agent
            .stream_events(spec.input.clone(), runtime.clone());
        let limit = Duration::from_secs(ctxbed_sim::limits::STEP_VIRTUAL_TIME_MAX_SECONDS);
        match spec.cancel_at.filter(|at| *at < limit) {
            Some(at) => {
                let mut events = Vec::new();
                let mut stream = std::pin::pin!(stream);
                let collect = async {
                    while let Some(event) = stream.next().await {
                        events.push(event);
                    }
                };
                match tokio::time::timeout(at, collect).await {
                    Ok(()) => (events, CallEnd::Finished),
                    Err(_) => (events, CallEnd::Cancelled),
                }
            }
            None => match tokio::time::timeout(limit, stream.collect()).await {
                Ok(events) => (events, CallEnd::Finished),
                Err(_) => (Vec::new(), CallEnd::TimedOut),
            },
        }
    }

    /// Every session file's bytes just before the call (none unless the log is JSON lines).
    async fn session_files_before(&self) -> BTreeMap<String, SessionFileBytes> {
        let mut session_files = BTreeMap::new();
        if self.jsonl_log {
            for (path, bytes) in session_file_bytes(&self.world.storage).await {
                session_files.insert(
                    path.as_str().to_string(),
                    SessionFileBytes {
                        before: Some(bytes),
                        after: None,
                    },
                );
            }
        }
        session_files
    }

    /// Adds every session file's bytes after the step.
    async fn session_files_after(&self, session_files: &mut BTreeMap<String, SessionFileBytes>) {
        if self.jsonl_log {
            for (path, bytes) in session_file_bytes(&self.world.storage).await {
                session_files
                    .entry(path.as_str().to_string())
                    .or_default()
                    .after = Some(bytes);
            }
        }
    }
}

/// The call's outcome, as its last `RunFinished` event reports it; interrupted without one.
fn outcome_of(events: &[AgentEvent]) -> Result<Message, AgentError> {
    events
        .iter()
        .rev()
        .find_map(|event| match &event.kind {
            EventKind::RunFinished { outcome, .. } => Some(outcome.clone()),
            _ => None,
        })
        .unwrap_or(Err(AgentError::Interrupted))
}

/// How a step's call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallEnd {
    Finished,
    /// Past the step's virtual time limit.
    TimedOut,
    /// Dropped by the application at the step's `cancel_at_ms`.
    Cancelled,
}

/// The step's other writers while they run.
struct OtherWriters {
    writer: Option<JoinHandle<(Duration, String)>>,
    actors: Vec<JoinHandle<Vec<(Duration, String)>>>,
}

impl OtherWriters {
    /// Waits for every writer; their trace lines in the order of their times.
    async fn finish(self) -> Vec<(Duration, String)> {
        let mut after = Vec::new();
        if let Some(task) = self.writer
            && let Ok(line) = task.await
        {
            after.push(line);
        }
        for task in self.actors {
            if let Ok(lines) = task.await {
                after.extend(lines);
            }
        }
        after.sort_by_key(|(at, _)| *at);
        after
    }
}

/// The identity of a step's call.
fn runtime_of(spec: &StepSpec) -> RuntimeContext {
    RuntimeContext {
        user_id: spec.user.clone(),
        session_id: spec.session.clone(),
        ..RuntimeContext::default()
    }
}

/// Counts one more record of `kind` in `counts` (record kinds in first-seen order).
fn count_kind(counts: &mut Vec<(String, u64)>, kind: &str) {
    match counts.iter_mut().find(|(known, _)| known == kind) {
        Some((_, count)) => *count += 1,
        None => counts.push((kind.to_string(), 1)),
    }
}
