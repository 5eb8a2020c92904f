//! The agent: [`HarnessAgent`], its builder, and the reasoning–tool–result loop.
//!
//! `call(input, runtime)` restores the session's committed working history, accepts the input and
//! runs reasoning steps: each step goes through [`crate::context::prepare`], calls the model, and,
//! when the reply asks for tools, checks permission, executes them (concurrently, recorded in call
//! order) and returns to preparation. A reply without tool calls ends the call. `stream_events`
//! yields the same run as [`events::AgentEvent`]s.
//!
//! **Invariant:** the agent reads time only through its [`Clock`], and never knows whether the
//! model, tools or storage are simulated.
//!
//! ```
//! use std::sync::Arc;
//! use ctxbed_harness::agent::HarnessAgent;
//! use ctxbed_harness::model::ModelInfo;
//! use ctxbed_sim::mock::{MockModel, MockScript, MockTurn, TurnAction};
//! use ctxbed_harness::runtime::RuntimeContext;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
//! runtime.block_on(async {
//!     let info = ModelInfo { name: "m".into(), context_window: Some(8_000), max_output_tokens: None };
//!     let model = MockModel::new(MockScript::new(info, vec![MockTurn::new(TurnAction::reply("Fixed."))]));
//!     let agent = HarnessAgent::builder().name("fixer").model(Arc::new(model)).build().unwrap();
//!     let reply = agent.call("Fix it.", RuntimeContext::new().with_user("alice")).await.unwrap();
//!     assert_eq!(reply.text(), "Fixed.");
//! });
//! ```

mod builder;
mod compact;
pub mod events;
mod restore;
mod run;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::Clock;
use crate::compaction::config::CompactionConfig;
use crate::context::block::Material;
use crate::context::budget::BudgetSettings;
use crate::context::manifest::ContextManifest;
use crate::context::offload::OffloadConfig;
use crate::context::omission::SelectionPolicy;
use crate::context::source::SourceRegistry;
use crate::context::{PairingCheck, Rejected};
use crate::message::{ContentPart, Message, Role, UserInput};
use crate::model::{Model, ModelError};
use crate::runtime::RuntimeContext;
use crate::session::{SessionLog, SessionLogKey, SessionRecord};
use crate::storage::Storage;
use crate::task::{BeginOutcome, SharedTaskState, TaskError, TaskScope, TaskSetup};
use crate::tokens::{ApproximateEstimator, CachedEstimator, TokenEstimator};
use crate::tools::{PermissionPolicy, ToolRegistry};

pub use builder::{BuildError, HarnessAgentBuilder, ReActAgent};
pub use events::{AgentEvent, EventKind};
pub use restore::RestoreError;

/// Receives every preparation's manifest, successful or failed.
///
/// Called synchronously before the provider request; keep it fast. A panicking observer never
/// fails a valid build.
pub trait ManifestObserver: Send + Sync {
    fn observe(&self, manifest: &ContextManifest);
}

impl<F: Fn(&ContextManifest) + Send + Sync> ManifestObserver for F {
    fn observe(&self, manifest: &ContextManifest) {
        self(manifest);
    }
}

/// Budget and estimation settings. `context_policy(...)` replaces the whole policy.
#[derive(Clone)]
pub struct ContextPolicy {
    /// Cap on input tokens (`None`: derived from the model window).
    pub max_input_tokens: Option<u64>,
    /// Output reservation (`None`: the default).
    pub output_reserve: Option<u64>,
    /// Safety margin (`None`: the default).
    pub safety_margin: Option<u64>,
    /// Output tokens requested from the model; a value above the reservation raises it.
    pub max_output_tokens: Option<u64>,
    pub estimator: Arc<dyn TokenEstimator>,
    pub observer: Option<Arc<dyn ManifestObserver>>,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        ContextPolicy {
            max_input_tokens: None,
            output_reserve: None,
            safety_margin: None,
            max_output_tokens: None,
            // The content-aware estimate: within a few per cent of exact o200k on prose, code,
            // JSON, logs and CJK text, where a single ratio is off by up to 88 % (see
            // BENCHMARKS.md). Counts and manifest hashes are remembered per message, so a step
            // over a long history only counts what is new.
            estimator: Arc::new(CachedEstimator::new(ApproximateEstimator::default())),
            observer: None,
        }
    }
}

impl std::fmt::Debug for ContextPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextPolicy")
            .field("max_input_tokens", &self.max_input_tokens)
            .field("output_reserve", &self.output_reserve)
            .field("safety_margin", &self.safety_margin)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("estimator", &self.estimator.method())
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl ContextPolicy {
    fn budget(&self) -> BudgetSettings {
        BudgetSettings {
            max_input_tokens: self.max_input_tokens,
            output_reserve: self.output_reserve,
            safety_margin: self.safety_margin,
            requested_max_output: self.max_output_tokens,
        }
    }
}

/// Why a call failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum AgentError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("request preparation failed: {}", .0.error)]
    Prepare(Box<Rejected>),
    #[error(
        "step limit {limit} reached without a final reply; raise it with `max_steps` (scenario: `agent.max_steps`)"
    )]
    MaxStepsExceeded { limit: u32 },
    #[error("the model asked for {count} tool calls in one reply; at most {max} are accepted")]
    TooManyToolCalls { count: usize, max: usize },
    #[error("the run ended without reporting an outcome")]
    Interrupted,
    #[error(
        "the session's history changed during this call (another writer committed first); the newer history is kept, and this call's messages are in the session log: call again to continue from it"
    )]
    HistoryConflict,
    #[error("cannot restore the session: {0}")]
    Restore(#[from] RestoreError),
    /// The session log could not be written, so what the call committed is not durable. The
    /// records stay pending in this agent and are written by its next flush that succeeds; a
    /// restart before then loses them.
    #[error(
        "the session log could not be written ({detail}); what this call committed is not durable yet: its records stay pending and are written by the next call that can write them, and a restart before then loses them"
    )]
    SessionLog { detail: String },
}

impl PartialEq for Rejected {
    fn eq(&self, other: &Self) -> bool {
        self.error == other.error && self.manifest == other.manifest
    }
}

impl AgentError {
    /// A short stable name of the error class, for traces and expectations.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentError::Model(error) => error.kind(),
            AgentError::Prepare(rejected) => rejected.error.kind(),
            AgentError::MaxStepsExceeded { .. } => "max_steps_exceeded",
            AgentError::TooManyToolCalls { .. } => "too_many_tool_calls",
            AgentError::Interrupted => "interrupted",
            AgentError::HistoryConflict => "history_conflict",
            AgentError::Restore(_) => "session_restore_failed",
            AgentError::SessionLog { .. } => "session_log_failed",
        }
    }
}

/// Identifies one conversation: agent, user and session.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SessionKey {
    user_id: Option<String>,
    session_id: Option<String>,
}

/// Committed working state of one session.
#[derive(Debug, Clone, Default)]
struct SessionState {
    history: Vec<Message>,
    /// Message ids handed out so far; ids come from here, so concurrent writers never share one.
    messages_created: u64,
    /// Bumped by every change of `history`: a commit succeeds only over the version its call
    /// started from (compare-and-swap).
    version: u64,
    /// A fingerprint of the version of each message the session log holds.
    logged: BTreeMap<String, u64>,
    /// A fingerprint of the last checkpoint written (history ids, id counter, task revision).
    checkpointed: Option<u64>,
    /// The task revision the last checkpoint holds (0 before any).
    checkpointed_task_revision: u64,
}

impl SessionState {
    /// Hands out the session's next message id.
    fn next_message_id(&mut self) -> String {
        self.messages_created += 1;
        format!("m{:04}", self.messages_created)
    }
}

struct AgentInner {
    agent_id: String,
    name: String,
    model: Arc<dyn Model>,
    sys_prompt: Option<String>,
    workspace: Arc<dyn Storage>,
    tools: ToolRegistry,
    permissions: Arc<dyn PermissionPolicy>,
    max_steps: u32,
    policy: ContextPolicy,
    clock: Arc<dyn Clock>,
    model_timeout: Option<Duration>,
    pairing: PairingCheck,
    instructions: Vec<Material>,
    sources: SourceRegistry,
    max_context_tokens: u64,
    session_log: Option<Arc<dyn SessionLog>>,
    compaction: Option<CompactionConfig>,
    /// A plain ReAct agent: the loop without the context pipeline.
    plain: bool,
    offload: Option<OffloadConfig>,
    selection: Option<Arc<dyn SelectionPolicy>>,
    /// Every manifest's `policy_version`.
    policy_version: String,
    sessions: Mutex<BTreeMap<SessionKey, SessionState>>,
    calls: AtomicU64,
    task: TaskSetup,
}

/// An agent with the harness pipeline. Cheap to clone; clones share sessions.
#[derive(Clone)]
pub struct HarnessAgent {
    inner: Arc<AgentInner>,
}

impl std::fmt::Debug for HarnessAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HarnessAgent")
            .field("agent_id", &self.inner.agent_id)
            .field("tools", &self.inner.tools)
            .finish()
    }
}

impl HarnessAgent {
    /// The agent id.
    pub fn agent_id(&self) -> &str {
        &self.inner.agent_id
    }

    /// The agent name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The context-policy version every manifest of this agent carries
    /// ([`ContextManifest::policy_version`](crate::context::manifest::ContextManifest)).
    pub fn policy_version(&self) -> &str {
        &self.inner.policy_version
    }

    /// Runs one call to completion and returns the final assistant reply.
    ///
    /// # Errors
    /// A model failure, a rejected preparation, or the step limit.
    pub async fn call(
        &self,
        input: impl Into<UserInput>,
        runtime: RuntimeContext,
    ) -> Result<Message, AgentError> {
        let mut ignore = |_: AgentEvent| {};
        run::run(&self.inner, input.into(), runtime, &mut ignore).await
    }

    /// Runs one call and yields its events as they happen; the last is `RunFinished`.
    ///
    /// The stream is lazy: nothing happens (no session restore, source load, preparation or
    /// model request) until it is first polled, as a cold reactive stream. Once started, the run
    /// goes on in a task of its own: a stream dropped after its first event still completes and
    /// commits. Must be polled inside a tokio runtime.
    pub fn stream_events(
        &self,
        input: impl Into<UserInput>,
        runtime: RuntimeContext,
    ) -> EventStream {
        EventStream {
            state: StreamState::Cold(Some(ColdRun {
                inner: self.inner.clone(),
                input: input.into(),
                runtime,
            })),
        }
    }

    /// Replaces a session's committed working history (e.g. a conversation imported from
    /// elsewhere). Like a commit it bumps the session's version, so a call preparing at the same
    /// time fails with `history_conflict` rather than overwrite it. The messages and a checkpoint
    /// are recorded in the session log.
    pub fn load_history(&self, runtime: &RuntimeContext, history: Vec<Message>) {
        let key = run::session_key(runtime);
        let mut sessions = run::lock(&self.inner.sessions);
        let state = sessions.entry(key).or_default();
        state.messages_created = state.messages_created.max(history.len() as u64);
        let previous = std::mem::replace(&mut state.history, history);
        state.version += 1;
        run::write_durable(
            &self.inner,
            &self.log_key(runtime),
            run::EXTERNAL_WRITER,
            state,
            &previous,
        );
    }

    /// Appends a message to a session's committed history, as another writer sharing the
    /// session would (an application note, a second process). The message gets the session's
    /// next id, is recorded in the session log with a checkpoint and flushed, and bumps the
    /// version: a call preparing at the same time fails with `history_conflict` and keeps this
    /// message. Returns the new message's id once it is durable.
    ///
    /// # Errors
    /// The session could not be restored ([`AgentError::Restore`]), or the session log could
    /// not be written ([`AgentError::SessionLog`]): the message is in the
    /// working history and its records stay pending for the next flush, but a restart before
    /// then loses it.
    pub async fn append_message(
        &self,
        runtime: &RuntimeContext,
        role: Role,
        text: &str,
    ) -> Result<String, AgentError> {
        // A session this agent has not seen yet is restored first, so the message extends the
        // durable history (and takes the next id after it) instead of starting a new one.
        self.open_session(runtime).await?;
        let log_key = self.log_key(runtime);
        let id = {
            let mut sessions = run::lock(&self.inner.sessions);
            let state = sessions.entry(run::session_key(runtime)).or_default();
            let id = state.next_message_id();
            let previous = state.history.clone();
            state.history.push(Message::new(
                id.clone(),
                role,
                vec![ContentPart::text(text)],
            ));
            state.version += 1;
            run::write_durable(
                &self.inner,
                &log_key,
                run::EXTERNAL_WRITER,
                state,
                &previous,
            );
            id
        };
        run::flush_session(&self.inner, &log_key, run::EXTERNAL_WRITER)
            .await
            .map_err(|detail| AgentError::SessionLog { detail })?;
        Ok(id)
    }

    /// A session's committed working history.
    pub fn history(&self, runtime: &RuntimeContext) -> Vec<Message> {
        let sessions = run::lock(&self.inner.sessions);
        sessions
            .get(&run::session_key(runtime))
            .map(|state| state.history.clone())
            .unwrap_or_default()
    }

    /// How many session-log records a session has, without copying them.
    pub fn session_record_count(&self, runtime: &RuntimeContext) -> usize {
        self.inner
            .session_log
            .as_ref()
            .map_or(0, |log| log.record_count(&self.log_key(runtime)))
    }

    /// The session log records of a session, in order.
    pub fn session_records(&self, runtime: &RuntimeContext) -> Vec<SessionRecord> {
        self.inner
            .session_log
            .as_ref()
            .map(|log| log.records(&self.log_key(runtime)))
            .unwrap_or_default()
    }

    /// Shows `visit` each session log record of a session from index `start` on, in order,
    /// without copying them; `visit` must not call into the agent.
    pub fn for_each_session_record_from(
        &self,
        runtime: &RuntimeContext,
        start: usize,
        visit: &mut dyn FnMut(&SessionRecord),
    ) {
        if let Some(log) = &self.inner.session_log {
            log.for_each_from(&self.log_key(runtime), start, visit);
        }
    }

    fn log_key(&self, runtime: &RuntimeContext) -> SessionLogKey {
        SessionLogKey {
            agent_id: self.inner.agent_id.clone(),
            user_id: runtime.user_id.clone(),
            session_id: runtime.session_id.clone(),
        }
    }

    /// Number of calls started on this agent.
    pub fn calls_started(&self) -> u64 {
        self.inner.calls.load(Ordering::SeqCst)
    }

    /// Restores a session from the session log if this agent has not seen it yet (what a call
    /// does on entry), and returns the records read (`None` when there was nothing to restore
    /// or the session was already open).
    ///
    /// An application that changes a session's task state before the first call of a new
    /// agent (after a restart, say) opens the session first: restore never overwrites task
    /// state that was changed already, so a change made before it would replace the restored
    /// Todo list and requirements instead of building on them.
    ///
    /// # Errors
    /// The session log could not be read or is corrupt ([`AgentError::Restore`]).
    pub async fn open_session(
        &self,
        runtime: &RuntimeContext,
    ) -> Result<Option<usize>, AgentError> {
        let mut restored = None;
        let mut sink = |event: AgentEvent| {
            if let EventKind::SessionRestored { records, .. } = event.kind {
                restored = Some(records);
            }
        };
        run::session_state(&self.inner, &run::session_key(runtime), runtime, &mut sink).await?;
        Ok(restored)
    }

    /// The task state of a session: what its requests project and its task tools update.
    /// Each user and session has its own. After a restart, [`open_session`](Self::open_session)
    /// first.
    pub fn task_state(&self, runtime: &RuntimeContext) -> SharedTaskState {
        self.inner.task.state_of(runtime)
    }

    /// Starts a task in a session's task state (see [`TaskContextState::begin_task`]).
    ///
    /// [`TaskContextState::begin_task`]: crate::task::TaskContextState::begin_task
    ///
    /// # Errors
    /// A blank or over-long scope, or the active task id with a different objective.
    pub fn begin_task(
        &self,
        runtime: &RuntimeContext,
        scope: TaskScope,
    ) -> Result<BeginOutcome, TaskError> {
        self.inner
            .task
            .state_of(runtime)
            .with(|state| state.begin_task(scope))
    }
}

/// The events of one run, in order. Lazy: the run starts at the first [`next`](Self::next).
///
/// Dropping the stream cancels the run, as cancelling a subscription does: the run stops at its
/// next await point (a source load, a model request, a tool, a session-log write), whatever it
/// was doing. Work a dropped future cannot stop (a remote request already received, blocking
/// work) may still finish elsewhere. What the run committed before stays committed; records it
/// had not yet flushed stay pending for the session's next flush.
pub struct EventStream {
    state: StreamState,
}

enum StreamState {
    /// Not polled yet: what the run needs (`None` only while it is being started).
    Cold(Option<ColdRun>),
    /// Started: the run's events as it sends them, and the handle that cancels it.
    Running(
        tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
        tokio::task::AbortHandle,
    ),
}

/// A call that has not started.
struct ColdRun {
    inner: Arc<AgentInner>,
    input: UserInput,
    runtime: RuntimeContext,
}

impl ColdRun {
    /// Starts the run in a task of its own; returns where its events arrive and the handle
    /// that cancels it.
    fn start(
        self,
    ) -> (
        tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
        tokio::task::AbortHandle,
    ) {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut forward = |event: AgentEvent| {
                let _ = sender.send(event);
            };
            let _ = run::run(&self.inner, self.input, self.runtime, &mut forward).await;
        });
        (receiver, task.abort_handle())
    }
}

impl Drop for EventStream {
    /// Cancels the run if it is still going (a finished run has nothing left to cancel).
    fn drop(&mut self) {
        if let StreamState::Running(_, abort) = &self.state {
            abort.abort();
        }
    }
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            StreamState::Cold(_) => "not started",
            StreamState::Running(..) => "running",
        };
        f.debug_struct("EventStream")
            .field("state", &state)
            .finish()
    }
}

impl EventStream {
    /// The next event, or `None` after `RunFinished`. The first call starts the run.
    pub async fn next(&mut self) -> Option<AgentEvent> {
        if let StreamState::Cold(cold) = &mut self.state {
            let (receiver, abort) = cold.take()?.start();
            self.state = StreamState::Running(receiver, abort);
        }
        match &mut self.state {
            StreamState::Running(receiver, _) => receiver.recv().await,
            StreamState::Cold(_) => None,
        }
    }

    /// Collects every remaining event (the run goes to its end; dropping the future of
    /// `collect` before then cancels it).
    pub async fn collect(mut self) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}
