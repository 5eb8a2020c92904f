//! Runs a checked scenario on the simulated runtime and records its trace.
//!
//! One current-thread tokio runtime with paused time per run; one [`SeedTree`] from the
//! scenario's seed, forked per concern; in-memory workspace storage. Each step is an agent call
//! consumed through `stream_events`, so the trace is exactly what a streaming client sees.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::expect::{Check, evaluate};
use super::file::{
    ConcurrentAppend, EstimatorChoice, Restart, Scenario, SessionStorage, TaskAction,
    ToolOutputSpec, ToolSpec,
};
use super::trace::{SessionFileBytes, StepRecord, Trace, render};
use crate::limits;
use ctxbed_harness::agent::events::EventKind;
use ctxbed_harness::agent::{AgentError, ContextPolicy, HarnessAgent, ReActAgent};
use ctxbed_harness::clock::{Clock, TokioClock};
use ctxbed_harness::context::budget::InputBudget;
use ctxbed_harness::context::omission::FixedOrder;
use ctxbed_harness::context::source::{FailurePolicy, SourceOptions};
use ctxbed_harness::format::duration;
use ctxbed_harness::model::{Model, ModelRequest};
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::session::{JsonlSessionLog, MemorySessionLog, SessionLog, SessionLogKey};
use ctxbed_harness::storage::{MemoryStorage, Storage, WorkspacePath};
use ctxbed_harness::tokens::{
    ApproximateEstimator, CachedEstimator, ExactEstimator, RatioEstimator, TokenEstimator,
    Vocabulary, shared_exact_counter,
};
use ctxbed_harness::tools::{DenyTools, Tool};
use ctxbed_sim::mock::{MockModel, SummaryMode};
use ctxbed_sim::rng::SeedTree;
use ctxbed_sim::scripted::{PlanModeTool, ScriptedSource, WritingTool};
use ctxbed_sim::scripted::{ScriptedOutput, ScriptedTool};

/// The result of one scenario run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub trace: Trace,
    pub checks: Vec<Check>,
    /// The canonical rendering (what goldens hold).
    pub text: String,
    /// Every workspace file after the last step (not rendered; for checkers such as
    /// `sim::invariants`).
    pub workspace: BTreeMap<WorkspacePath, Vec<u8>>,
    /// Every session's log records after the last step, by (user, session) (not rendered; for
    /// checkers such as `sim::invariants`). Empty when the session log is off.
    pub session_logs: SessionLogs,
}

/// Session-log records by (user id, session id).
pub type SessionLogs =
    BTreeMap<(Option<String>, Option<String>), Vec<ctxbed_harness::session::SessionRecord>>;

impl RunOutput {
    /// True when every inline expectation held.
    pub fn expectations_passed(&self) -> bool {
        self.checks.iter().all(|check| check.passed)
    }
}

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

/// Runs a scenario and renders its trace.
///
/// # Errors
/// The runtime, agent or workspace could not be set up (scenario steps that fail are recorded in
/// the trace, not returned).
pub fn run(scenario: &Scenario) -> Result<RunOutput, RunError> {
    if let Some(network) = &scenario.network {
        return super::network::run_networked(scenario, network);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    let model = Arc::new(MockModel::new(scenario.mock.clone()));
    let (trace, workspace, session_logs) = runtime.block_on(simulate(scenario, model))?;
    Ok(finish(scenario, trace, workspace, session_logs))
}

/// Runs a scenario against another model (a real provider) on a real-time runtime with
/// network I/O, so the model's own timeouts measure real time. Scripted latencies of sources
/// and tools are real waits here. The summary model, if the scenario names one, stays its mock.
///
/// # Errors
/// As [`run`].
pub fn run_live(scenario: &Scenario, model: Arc<dyn ObservedModel>) -> Result<RunOutput, RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (trace, workspace, session_logs) = runtime.block_on(simulate(scenario, model))?;
    Ok(finish(scenario, trace, workspace, session_logs))
}

pub(super) fn finish(
    scenario: &Scenario,
    trace: Trace,
    workspace: Workspace,
    session_logs: SessionLogs,
) -> RunOutput {
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

pub(super) type Workspace = BTreeMap<WorkspacePath, Vec<u8>>;

pub(super) async fn simulate(
    scenario: &Scenario,
    model: Arc<dyn ObservedModel>,
) -> Result<(Trace, Workspace, SessionLogs), RunError> {
    let clock: Arc<dyn Clock> = Arc::new(TokioClock::start());
    let seeds = SeedTree::new(scenario.seed);
    let storage = Arc::new(MemoryStorage::new());
    for (path, content) in &scenario.workspace_files {
        let path = WorkspacePath::parse(path).map_err(|e| RunError::Workspace(e.to_string()))?;
        storage
            .write(&path, content.clone().into_bytes())
            .await
            .map_err(|e| RunError::Workspace(e.to_string()))?;
    }
    for prefix in &scenario.fail_writes_under {
        storage.fail_writes_under(prefix.clone());
    }
    let sources: Vec<(String, Arc<ScriptedSource>)> = scenario
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
        .collect();
    // Every agent of the run (a restart builds a new one) shares the world: clock, storage,
    // model and sources.
    let build = |log: &SessionLogHandle| {
        build_agent(
            scenario,
            &seeds,
            clock.clone(),
            storage.clone(),
            model.clone(),
            &sources,
            log.clone(),
        )
    };
    let mut session_log = new_session_log(scenario, &storage, None);
    // Each step records the session files' bytes around its call (for the I10 check).
    let jsonl_log =
        scenario.agent.session_log && scenario.agent.session_storage == SessionStorage::Jsonl;
    let mut agent = build(&session_log)?;
    if let Some(task) = &scenario.task {
        // Task state belongs to a session: the first step's.
        let first = scenario.steps.first();
        let runtime = RuntimeContext {
            user_id: first.and_then(|s| s.user.clone()),
            session_id: first.and_then(|s| s.session.clone()),
            ..RuntimeContext::default()
        };
        if let Some(scope) = &task.scope {
            agent
                .begin_task(&runtime, scope.clone())
                .map_err(|e| RunError::Workspace(format!("task: {e}")))?;
        }
        let state = agent.task_state(&runtime);
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
    }
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
        let mut messages = agent.history(&runtime);
        messages.extend(history.messages.iter().cloned());
        agent.load_history(&runtime, messages);
    }
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
        let runtime = RuntimeContext {
            user_id: spec.user.clone(),
            session_id: spec.session.clone(),
            ..RuntimeContext::default()
        };
        for (path, text) in &spec.workspace_writes {
            let path =
                WorkspacePath::parse(path).map_err(|e| RunError::Workspace(e.to_string()))?;
            storage
                .write(&path, text.clone().into_bytes())
                .await
                .map_err(|e| RunError::Workspace(e.to_string()))?;
        }
        let mut before = Vec::new();
        let mut after = Vec::new();
        let log_key = SessionLogKey {
            agent_id: scenario.agent.agent_id.clone(),
            user_id: runtime.user_id.clone(),
            session_id: runtime.session_id.clone(),
        };
        let mut records_before = agent.session_record_count(&runtime);
        if let Some(prefixes) = &spec.fail_writes_under {
            storage.set_failing_writes(prefixes.clone());
            before.push(if prefixes.is_empty() {
                "storage: writes no longer fail".to_string()
            } else {
                format!("storage: writes under {prefixes:?} fail from now on")
            });
        }
        if let Some(restart) = spec.restart {
            match restart {
                Restart::Clean => {}
                Restart::Torn => before.extend(tear_session_files(storage.as_ref()).await),
                Restart::Corrupt => before.extend(damage_session_files(storage.as_ref()).await),
            }
            let (log, lost) = match &session_log {
                SessionLogHandle::Jsonl(log) => (
                    new_session_log(scenario, &storage, None),
                    log.pending(&log_key),
                ),
                SessionLogHandle::Memory(_) => {
                    (new_session_log(scenario, &storage, Some(&session_log)), 0)
                }
            };
            session_log = log;
            agent = build(&session_log)?;
            before.push(format!(
                "restart ({}): a new agent over the same storage and model; {lost} unflushed record(s) of this session lost",
                match restart {
                    Restart::Clean => "clean",
                    Restart::Torn => "after a torn write",
                    Restart::Corrupt => "after damage inside the session log",
                }
            ));
            records_before = match &session_log {
                // What the new agent will read back: the records committed to storage.
                SessionLogHandle::Jsonl(_) => JsonlSessionLog::new(storage.clone())
                    .restore(&log_key)
                    .await
                    .map_or(0, |restored| restored.records.len()),
                SessionLogHandle::Memory(log) => log.record_count(&log_key),
            };
        }
        if spec.plan_mode.is_some() || !spec.actions.is_empty() {
            before.extend(open_for_app(&agent, &runtime, spec.restart.is_some()).await);
        }
        if let Some(mode) = spec.plan_mode {
            agent.task_state(&runtime).with(|s| s.set_mode(mode));
        }
        for action in &spec.actions {
            before.push(apply_action(&agent, &runtime, action).await);
        }
        let mut session_files = BTreeMap::new();
        if jsonl_log {
            for (path, bytes) in session_file_bytes(&storage).await {
                session_files.insert(
                    path.as_str().to_string(),
                    SessionFileBytes {
                        before: Some(bytes),
                        after: None,
                    },
                );
            }
        }
        let started = clock.elapsed();
        let writer = spec
            .concurrent_append
            .clone()
            .map(|append| spawn_writer(&agent, &runtime, &clock, append));
        let actors: Vec<_> = spec
            .concurrent_actions
            .iter()
            .map(|(at, action)| {
                let agent = agent.clone();
                let clock = clock.clone();
                let runtime = runtime.clone();
                let (at, action) = (*at, action.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(at).await;
                    let mut lines = Vec::new();
                    if let Some(line) = open_for_app(&agent, &runtime, false).await {
                        lines.push((clock.elapsed(), line));
                    }
                    let line = apply_action(&agent, &runtime, &action).await;
                    lines.push((clock.elapsed(), line));
                    lines
                })
            })
            .collect();
        let stream = agent.stream_events(spec.input.clone(), runtime.clone());
        let limit = Duration::from_secs(ctxbed_sim::limits::STEP_VIRTUAL_TIME_MAX_SECONDS);
        let (events, timed_out) = match tokio::time::timeout(limit, stream.collect()).await {
            Ok(events) => (events, false),
            Err(_) => (Vec::new(), true),
        };
        // Other writers finish even when the step ended before their time.
        if let Some(task) = writer
            && let Ok(line) = task.await
        {
            after.push(line);
        }
        for task in actors {
            if let Ok(lines) = task.await {
                after.extend(lines);
            }
        }
        after.sort_by_key(|(at, _)| *at);
        let outcome = events
            .iter()
            .rev()
            .find_map(|event| match &event.kind {
                EventKind::RunFinished { outcome, .. } => Some(outcome.clone()),
                _ => None,
            })
            .unwrap_or(Err(AgentError::Interrupted));
        assert!(
            timed_out || outcome.is_ok() || !events.is_empty(),
            "a finished run reports events"
        );
        if jsonl_log {
            for (path, bytes) in session_file_bytes(&storage).await {
                session_files
                    .entry(path.as_str().to_string())
                    .or_default()
                    .after = Some(bytes);
            }
        }
        let mut session_records: Vec<(String, u64)> = Vec::new();
        agent.for_each_session_record_from(&runtime, records_before, &mut |record| {
            count_kind(&mut session_records, &record.kind);
        });
        steps.push(StepRecord {
            index: index + 1,
            spec: spec.clone(),
            before,
            after,
            events,
            outcome,
            elapsed: clock.elapsed().saturating_sub(started),
            requests: model.take_received(),
            source_loads: sources
                .iter()
                .map(|(name, source)| (name.clone(), source.loads()))
                .collect(),
            session_records,
            workspace_files: storage
                .list("")
                .await
                .unwrap_or_default()
                .into_iter()
                .map(|path| path.as_str().to_string())
                .collect(),
            committed_history: agent.history(&runtime),
            session_files,
        });
        let session = (spec.user.clone(), spec.session.clone());
        if last_step_of.get(&session) == Some(&index) {
            let restored = !matches!(
                steps.last().map(|s| &s.outcome),
                Some(Err(AgentError::Restore(_)))
            );
            let records = if restored {
                agent.session_records(&runtime)
            } else {
                // The agent could not read the log back: what storage still holds is every
                // line that reads as a record (the log itself is left as it was).
                let path = ctxbed_harness::session::jsonl::session_path(&log_key);
                match storage.read(&path).await {
                    Ok(Some(bytes)) => ctxbed_harness::session::jsonl::readable_records(&bytes),
                    _ => Vec::new(),
                }
            };
            session_logs.insert(session, records);
        }
    }
    // Every agent of a run (restarts build new ones) has the scenario's one policy.
    let policy_version = agent.policy_version().to_string();
    let trace = Trace {
        header: header(scenario, &policy_version),
        steps,
        policy_version: Some(policy_version),
    };
    Ok((trace, storage.snapshot(), session_logs))
}

/// The scenario's session log, kept by the runner so a restarted agent can be given the same
/// durable store.
#[derive(Clone)]
enum SessionLogHandle {
    Memory(Arc<MemorySessionLog>),
    Jsonl(Arc<JsonlSessionLog>),
}

impl SessionLogHandle {
    fn shared(&self) -> Arc<dyn SessionLog> {
        match self {
            SessionLogHandle::Memory(log) => log.clone(),
            SessionLogHandle::Jsonl(log) => log.clone(),
        }
    }
}

/// A session log for a (new) agent: JSON lines over the workspace start empty in memory and
/// read storage; the in-memory log is the durable store itself, so a restart keeps it.
fn new_session_log(
    scenario: &Scenario,
    storage: &Arc<MemoryStorage>,
    keep: Option<&SessionLogHandle>,
) -> SessionLogHandle {
    match (scenario.agent.session_storage, keep) {
        (SessionStorage::Jsonl, _) => {
            SessionLogHandle::Jsonl(Arc::new(JsonlSessionLog::new(storage.clone())))
        }
        (SessionStorage::Memory, Some(kept)) => kept.clone(),
        (SessionStorage::Memory, None) => {
            SessionLogHandle::Memory(Arc::new(MemorySessionLog::new()))
        }
    }
}

/// A crash in the middle of one more write: every session file gets the first half of a copy
/// of its last record, without the newline. Returns a line per file for the trace, or one
/// saying nothing changed (memory storage, or no record written yet).
async fn tear_session_files(storage: &MemoryStorage) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, mut bytes) in session_file_bytes(storage).await {
        let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let start = body
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |at| at + 1);
        let fragment = body[start..body.len()].to_vec();
        let half = fragment[..fragment.len() / 2].to_vec();
        if half.is_empty() {
            continue;
        }
        bytes.extend_from_slice(&half);
        let added = half.len();
        lines.push(match storage.write(&path, bytes).await {
            Ok(_) => {
                format!("crash: a write tore; {path} ends with {added} bytes of half a record")
            }
            Err(error) => format!("crash: {path} could not be torn: {error}"),
        });
    }
    if lines.is_empty() {
        lines.push("crash: no session file has a record to tear; nothing changed".to_string());
    }
    lines
}

/// Every JSON-lines session file's path and bytes.
async fn session_file_bytes(storage: &MemoryStorage) -> Vec<(WorkspacePath, Vec<u8>)> {
    let mut found = Vec::new();
    let files = storage
        .list(&format!(
            "{}/",
            ctxbed_harness::session::jsonl::SESSIONS_DIR
        ))
        .await
        .unwrap_or_default();
    for path in files {
        if let Ok(Some(bytes)) = storage.read(&path).await {
            found.push((path, bytes));
        }
    }
    found
}

/// Overwrites one line in the middle of every session file with as many zero bytes, so a line
/// with lines after it becomes unreadable: the middle one of the lines that have a line after
/// them and hold no `message` record (a damaged message record would be a loss the checker
/// could not tell from the agent's; the I5 check reads every message record that remains).
async fn damage_session_files(storage: &MemoryStorage) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, mut bytes) in session_file_bytes(storage).await {
        let mut starts = vec![0];
        starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(at, b)| **b == b'\n' && at + 1 < bytes.len())
                .map(|(at, _)| at + 1),
        );
        // Lines with a line after them that hold no message record.
        let candidates: Vec<usize> = (0..starts.len().saturating_sub(1))
            .filter(|line| !bytes[starts[*line]..].starts_with(MESSAGE_RECORD_START))
            .collect();
        let Some(&line) = candidates.get(candidates.len().saturating_sub(1) / 2) else {
            continue;
        };
        let (start, end) = (starts[line], starts[line + 1] - 1);
        bytes[start..end].fill(0);
        let zeroed = end - start;
        lines.push(match storage.write(&path, bytes).await {
            Ok(_) => format!(
                "damage: line {} of {path} ({zeroed} bytes) overwritten with zero bytes; {} line(s) follow it",
                line + 1,
                starts.len() - line - 1
            ),
            Err(error) => format!("damage: {path} could not be damaged: {error}"),
        });
    }
    if lines.is_empty() {
        lines.push("damage: no session file has a line to damage; nothing changed".to_string());
    }
    lines
}

/// How a `message` record's line starts (`jsonl::encode_record` writes the kind first).
const MESSAGE_RECORD_START: &[u8] = b"{\"kind\":\"message\"";

/// Another writer appends to the step's session at `append.at` after the step starts; the
/// task returns the trace line saying what it did and when.
fn spawn_writer(
    agent: &HarnessAgent,
    runtime: &RuntimeContext,
    clock: &Arc<dyn Clock>,
    append: ConcurrentAppend,
) -> tokio::task::JoinHandle<(Duration, String)> {
    let agent = agent.clone();
    let runtime = runtime.clone();
    let clock = clock.clone();
    tokio::spawn(async move {
        tokio::time::sleep(append.at).await;
        let appended = agent
            .append_message(&runtime, append.role, &append.text)
            .await;
        let text = ctxbed_harness::format::quoted(&append.text, limits::TRACE_TEXT_CHARS_MAX);
        let line = match appended {
            Ok(id) => format!("concurrent_append {id} {} {text}", append.role.as_str()),
            Err(error) => format!(
                "concurrent_append {} {text} not durable: {}",
                append.role.as_str(),
                error.kind()
            ),
        };
        (clock.elapsed(), line)
    })
}

/// What the simulated application does before it touches a session's task state: it opens
/// the session, as the agent asks ([`HarnessAgent::open_session`]). Restore never overwrites
/// task state that was changed already, so a change made first (by a step's action, or by a
/// concurrent writer that comes before the agent's first call) would replace the restored Todo
/// list and requirements instead of building on them. The line says what opening did; when
/// the session was open already it is shown only if `always` (a step that restarted).
async fn open_for_app(
    agent: &HarnessAgent,
    runtime: &RuntimeContext,
    always: bool,
) -> Option<String> {
    match agent.open_session(runtime).await {
        Ok(Some(records)) => Some(format!("app: open_session -> restored {records} record(s)")),
        Ok(None) => always.then(|| "app: open_session -> nothing to restore".to_string()),
        Err(error) => Some(format!("app: open_session -> {}: {error}", error.kind())),
    }
}

/// Takes one application action on the agent's task state; the trace line says its outcome.
async fn apply_action(
    agent: &HarnessAgent,
    runtime: &RuntimeContext,
    action: &TaskAction,
) -> String {
    let state = agent.task_state(runtime);
    let outcome = |result: Result<u64, ctxbed_harness::task::TaskError>| match result {
        Ok(revision) => format!("ok, revision {revision}"),
        Err(error) => format!("{}: {error}", error.kind()),
    };
    match action {
        TaskAction::Propose { kind, text, source } => {
            let proposal = ctxbed_harness::task::requirements::Proposal::new(
                *kind,
                text.clone(),
                source.clone(),
            );
            let result = state.with(|s| s.propose(proposal));
            let detail = match &result {
                Ok(proposed) => format!(
                    " ({}{})",
                    proposed.id,
                    if proposed.created {
                        ""
                    } else {
                        ", a duplicate"
                    }
                ),
                Err(_) => String::new(),
            };
            format!(
                "app: propose {} requirement from {source} -> {}{detail}",
                kind.as_str(),
                outcome(result.map(|p| p.revision))
            )
        }
        TaskAction::Decide {
            requirement,
            decision,
            authority,
            expected_revision,
        } => {
            let result =
                state.with(|s| s.decide(requirement, *decision, authority, *expected_revision));
            format!(
                "app: decide {requirement} {} by {authority} expecting revision {expected_revision} -> {}",
                decision.as_str(),
                outcome(result.map(|d| d.revision))
            )
        }
        TaskAction::SubjectVersion(version) => {
            let result = state.with(|s| s.set_subject_version(version));
            format!("app: set_subject_version {version} -> {}", outcome(result))
        }
        TaskAction::InvalidateSubject => {
            let revision = state.with(|s| s.invalidate_subject());
            format!("app: invalidate_subject -> {}", outcome(Ok(revision)))
        }
        TaskAction::Verify {
            check,
            passed,
            summary,
        } => {
            let service = ctxbed_harness::task::verification::VerificationService::new(state);
            let result = ctxbed_harness::task::verification::CheckResult {
                passed: *passed,
                summary: summary.clone(),
            };
            let stored = service.verify(check, async move { result }).await;
            format!(
                "app: verify {check} ({}) -> {}",
                if *passed { "passes" } else { "fails" },
                outcome(stored.map(|report| report.revision))
            )
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn build_agent(
    scenario: &Scenario,
    seeds: &SeedTree,
    clock: Arc<dyn Clock>,
    storage: Arc<MemoryStorage>,
    model: Arc<dyn ObservedModel>,
    sources: &[(String, Arc<ScriptedSource>)],
    session_log: SessionLogHandle,
) -> Result<HarnessAgent, RunError> {
    let spec = &scenario.agent;
    let policy = ContextPolicy {
        max_input_tokens: spec.budget.max_input_tokens,
        output_reserve: spec.budget.output_reserve,
        safety_margin: spec.budget.safety_margin,
        max_output_tokens: spec.budget.requested_max_output,
        estimator: estimator(spec.estimator),
        observer: None,
    };
    let base = if spec.react {
        ReActAgent::builder()
    } else {
        HarnessAgent::builder()
    };
    let mut builder = base
        .name(spec.name.clone())
        .agent_id(spec.agent_id.clone())
        .model(model)
        .workspace(storage.clone())
        .clock(clock)
        .max_steps(spec.max_steps)
        .context_policy(policy)
        .pairing_check(spec.pairing)
        .permissions(Arc::new(DenyTools {
            tools: spec.deny_tools.clone(),
        }));
    if let Some(prompt) = &spec.sys_prompt {
        builder = builder.sys_prompt(prompt.clone());
    }
    if let Some(timeout) = spec.model_timeout {
        builder = builder.model_timeout(timeout);
    }
    if let Some(tokens) = spec.workspace_max_context_tokens {
        builder = builder.workspace_max_context_tokens(tokens);
    }
    builder = match spec.offload.as_ref().filter(|_| !spec.react) {
        Some(config) => builder.tool_result_eviction(config.clone()),
        None => builder.disable_tool_result_eviction(),
    };
    if let Some(order) = &spec.omission_order {
        builder = builder.context_selection_policy(Arc::new(FixedOrder(order.clone())));
    }
    builder = match spec.compaction.as_ref().filter(|_| !spec.react) {
        Some(config) => {
            let mut config = config.clone();
            if let Some(script) = &spec.summary_model {
                config.model = Some(Arc::new(MockModel::new(script.clone())));
            }
            builder.compaction(config)
        }
        None => builder.disable_compaction(),
    };
    if spec.session_log {
        builder = builder.session_log(session_log.shared());
        if spec.session_tools {
            builder = builder.enable_session_tools();
        }
    } else {
        builder = builder.disable_session_log();
    }
    for instruction in &scenario.instructions {
        builder = builder.instruction(instruction.name.clone(), instruction.text.clone());
    }
    for (source_spec, (name, source)) in scenario.sources.iter().zip(sources) {
        let mut options = SourceOptions::default();
        if let Some(timeout) = source_spec.timeout {
            options = options.timeout(timeout);
        }
        if source_spec.omit_on_failure {
            options = options.on_failure(FailurePolicy::Omit);
        }
        builder = builder.context_source_with(name, source.clone(), options);
    }
    if spec.task_list {
        builder = builder.enable_task_list();
    }
    builder = builder.task_context(spec.task_context);
    let task_states = builder.task_states();
    for tool in &scenario.tools {
        let mut scripted = scripted_tool(tool, seeds).into_arc();
        if let Some(mode) = tool.sets_plan_mode {
            scripted = Arc::new(PlanModeTool {
                inner: scripted,
                states: task_states.clone(),
                mode,
            });
        }
        let tool: Arc<dyn Tool> = match &tool.writes {
            Some((path, text)) => Arc::new(WritingTool {
                inner: scripted,
                storage: storage.clone(),
                path: WorkspacePath::parse(path).map_err(|e| RunError::Workspace(e.to_string()))?,
                text: text.clone(),
            }),
            None => scripted,
        };
        builder = builder.tool(tool);
    }
    for tool in builtin_tools(&spec.builtin_tools, storage)? {
        builder = builder.tool(tool);
    }
    Ok(builder.build()?)
}

/// Counts one more record of `kind` in `counts` (record kinds in first-seen order).
fn count_kind(counts: &mut Vec<(String, u64)>, kind: &str) {
    match counts.iter_mut().find(|(known, _)| known == kind) {
        Some((_, count)) => *count += 1,
        None => counts.push((kind.to_string(), 1)),
    }
}

fn estimator(choice: EstimatorChoice) -> Arc<dyn TokenEstimator> {
    match choice {
        EstimatorChoice::Ratio => Arc::new(CachedEstimator::new(RatioEstimator)),
        // The mock models' counter: a message the agent counted, the model does not recount.
        EstimatorChoice::ExactO200k => shared_exact_counter(Vocabulary::O200k),
        EstimatorChoice::ExactCl100k => shared_exact_counter(Vocabulary::Cl100k),
        EstimatorChoice::Approximate => Arc::new(CachedEstimator::new(ApproximateEstimator)),
    }
}

fn scripted_tool(spec: &ToolSpec, seeds: &SeedTree) -> ScriptedTool {
    let output = match &spec.output {
        ToolOutputSpec::Fixed(text) => ScriptedOutput::Fixed(text.clone()),
        ToolOutputSpec::Sequence(texts) => ScriptedOutput::Sequence(texts.clone()),
        ToolOutputSpec::Generated { chars, kind } => ScriptedOutput::Generated {
            chars: *chars,
            kind: *kind,
        },
        ToolOutputSpec::ByArguments {
            responses,
            fallback,
        } => ScriptedOutput::ByArguments {
            responses: responses.clone(),
            fallback: fallback.clone(),
        },
    };
    let mut tool = ScriptedTool::new(spec.name.clone(), output)
        .with_latency(spec.latency)
        .with_seed(seeds.seed_for(&format!("tool/{}", spec.name)));
    if spec.description.is_some() || spec.parameters.is_some() {
        let description = spec
            .description
            .clone()
            .unwrap_or_else(|| format!("Scripted tool `{}`.", spec.name));
        let parameters = spec
            .parameters
            .clone()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
        tool = tool.with_schema(description, parameters);
    }
    if let Some(message) = &spec.fail {
        tool = tool.with_failure(message.clone());
    }
    tool
}

/// The effective configuration, defaults included, so a changed default shows in goldens.
fn header(scenario: &Scenario, policy_version: &str) -> Vec<String> {
    let agent = &scenario.agent;
    let mock = &scenario.mock;
    let info = &mock.info;
    let budget = InputBudget::compute(info.context_window, &agent.budget);
    let optional = |value: Option<u64>| value.map_or("unknown".to_string(), |v| v.to_string());
    let mut lines = vec![
        "# ctxbed trace v1".to_string(),
        format!("scenario: {}", scenario.name),
        format!("description: {}", scenario.description),
        format!("seed: {}", scenario.seed),
        format!(
            "agent: name={} id={} max_steps={} model_timeout={} estimator={} tool_pairs={} deny_tools=[{}]",
            agent.name,
            agent.agent_id,
            agent.max_steps,
            agent.model_timeout.map_or("none".to_string(), duration),
            estimator(agent.estimator).method(),
            match agent.pairing {
                ctxbed_harness::context::PairingCheck::Strict => "strict",
                ctxbed_harness::context::PairingCheck::Unchecked => "unchecked",
                ctxbed_harness::context::PairingCheck::Repair => "repair",
            },
            agent
                .deny_tools
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ),
        format!(
            "system_prompt: {}",
            agent
                .sys_prompt
                .as_deref()
                .map_or("none".to_string(), |p| format!(
                    "{} chars",
                    p.chars().count()
                ))
        ),
        format!(
            "model: {} ({}) window={} max_output={} imitates={} tokenizer={} strict={} summaries={} turns={}",
            info.name,
            mock.file,
            optional(info.context_window),
            optional(info.max_output_tokens),
            mock.imitates.as_str(),
            ExactEstimator::new(mock.vocabulary).method(),
            mock.strict,
            match mock.summaries {
                SummaryMode::Auto => "auto",
                SummaryMode::Scripted => "scripted",
            },
            mock.turns.len()
        ),
        format!(
            "budget: output_reserve={} safety_margin={} input_limit={}{}",
            budget.output_reserve,
            budget.safety_margin,
            budget.input_limit,
            agent
                .budget
                .max_input_tokens
                .filter(|cap| *cap > 0)
                .map_or(String::new(), |cap| format!(" (cap {cap})"))
        ),
        format!("policy_version: {policy_version}"),
    ];
    if agent.react {
        lines.push("kind: react (the plain loop: no context pipeline)".to_string());
    }
    if agent.task_list || agent.task_context != ctxbed_harness::task::TaskContextOptions::default()
    {
        let options = agent.task_context;
        lines.push(format!(
            "task: todo_write={} include_requirements={} include_verification_results={} allow_requirement_proposals={}",
            agent.task_list,
            options.include_requirements,
            options.include_verification_results,
            options.allow_requirement_proposals
        ));
    }
    if let Some(task) = &scenario.task {
        lines.push(format!(
            "task_state: scope={} plan_mode={} plan_path={}",
            task.scope
                .as_ref()
                .map_or("none".to_string(), |s| s.task_id.clone()),
            task.plan_mode.map_or("default", |m| m.as_str()),
            task.plan_path.as_deref().unwrap_or("none")
        ));
    }
    for tool in &scenario.tools {
        let output = match &tool.output {
            ToolOutputSpec::Fixed(text) => format!("fixed {} chars", text.chars().count()),
            ToolOutputSpec::Sequence(texts) => format!("sequence of {}", texts.len()),
            ToolOutputSpec::ByArguments {
                responses,
                fallback,
            } => format!(
                "{} scripted responses (fallback exit {})",
                responses.len(),
                fallback.exit_code
            ),
            ToolOutputSpec::Generated { chars, kind } => {
                format!("generated {chars} chars {}", kind.as_str())
            }
        };
        let fail = tool
            .fail
            .as_ref()
            .map_or(String::new(), |_| " fails".to_string());
        lines.push(format!(
            "tool: {} {output} latency={}{fail}",
            tool.name,
            duration(tool.latency)
        ));
    }
    lines.push(match &agent.offload {
        Some(config) => format!(
            "offload: max_result_chars={} preview_chars={} eviction_path={} excluded_tools=[{}]",
            config.max_result_chars,
            config.preview_chars,
            config.eviction_path,
            config
                .excluded_tools
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "offload: disabled".to_string(),
    });
    if let Some(order) = &agent.omission_order {
        lines.push(format!("omission_order: [{}]", order.join(", ")));
    }
    lines.push(match &agent.compaction {
        Some(config) => format!(
            "compaction: trigger_messages={} trigger_tokens={} keep={} prune={} truncate_args={} summary_model={} flush_before_compact={}",
            config.trigger_messages,
            if config.trigger_tokens == 0 { "allowance".to_string() } else { config.trigger_tokens.to_string() },
            match config.keep_tokens {
                None => "dynamic".to_string(),
                Some(0) => format!("{} messages", config.keep_messages),
                Some(tokens) => format!("{tokens} tokens"),
            },
            config.prune.as_ref().map_or("off".to_string(), |p| format!(
                "protect {} min {} preview {}",
                p.protect_tokens, p.minimum_prunable_tokens, p.preview_chars
            )),
            config.truncate_args.as_ref().map_or("off".to_string(), |t| format!(
                "from {} messages or {} tokens, protect {}, max {}",
                t.trigger_messages, t.trigger_tokens, t.protect_latest, t.max_arg_length
            )),
            agent.summary_model.as_ref().map_or("agent's".to_string(), |m| m.info.name.clone()),
            config.flush_before_compact
        ),
        None => "compaction: disabled".to_string(),
    });
    lines.push(format!(
        "session_log: {}",
        match (agent.session_log, agent.session_storage) {
            (false, _) => "off",
            (true, SessionStorage::Memory) => "on",
            (true, SessionStorage::Jsonl) => "on (json lines in the workspace)",
        }
    ));
    if agent.session_tools {
        lines.push("session_tools: session_list, session_history, session_search".to_string());
    }
    if let Some(tokens) = agent.workspace_max_context_tokens {
        lines.push(format!("workspace_max_context_tokens: {tokens}"));
    }
    for instruction in &scenario.instructions {
        lines.push(format!(
            "instruction: {} ({} chars)",
            instruction.name,
            instruction.text.chars().count()
        ));
    }
    for source in &scenario.sources {
        let failure = match source.failure {
            None => "none".to_string(),
            Some(failure) => {
                let on = if source.fail_loads.is_empty() {
                    "every load".to_string()
                } else {
                    format!("loads {:?}", source.fail_loads)
                };
                format!("{failure:?} on {on}").to_lowercase()
            }
        };
        lines.push(format!(
            "source: {} timeout={} on_failure={} latency={} failure={} blocks={}",
            source.name,
            duration(
                source
                    .timeout
                    .unwrap_or(ctxbed_harness::context::source::SOURCE_TIMEOUT_DEFAULT)
            ),
            if source.omit_on_failure {
                "omit"
            } else {
                "fail"
            },
            duration(source.latency),
            failure,
            source.blocks.len()
        ));
    }
    lines.extend(builtin_tools_line(agent));
    for (path, content) in &scenario.workspace_files {
        lines.push(format!(
            "workspace: {path} ({} chars)",
            content.chars().count()
        ));
    }
    for prefix in &scenario.fail_writes_under {
        lines.push(format!("workspace: writes under {prefix:?} fail"));
    }
    for history in &scenario.history {
        lines.push(format!(
            "history: user={} session={} messages={}",
            history.user.as_deref().unwrap_or("(first step)"),
            history.session.as_deref().unwrap_or("(first step)"),
            history.messages.len()
        ));
    }
    if let Some(network) = &scenario.network {
        lines.push(network.header());
    }
    lines
}

/// The scenario's built-in tools over its workspace storage, in the order listed.
fn builtin_tools(
    names: &[String],
    storage: Arc<MemoryStorage>,
) -> Result<Vec<Arc<dyn ctxbed_harness::tools::Tool>>, RunError> {
    let storage: Arc<dyn Storage> = storage;
    names
        .iter()
        .map(|name| {
            ctxbed_harness::tools::builtin::builtin_tool(name, storage.clone())
                .ok_or_else(|| RunError::UnknownBuiltinTool(name.clone()))
        })
        .collect()
}

/// The header line naming the enabled built-in tools; none when there are none, so scenarios
/// without built-in tools keep their goldens.
fn builtin_tools_line(agent: &super::file::AgentSpec) -> Option<String> {
    (!agent.builtin_tools.is_empty())
        .then(|| format!("builtin_tools: {}", agent.builtin_tools.join(", ")))
}
