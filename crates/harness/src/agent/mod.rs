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

mod compact;
pub mod events;
mod restore;
mod run;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{Clock, TokioClock};
use crate::compaction::config::{CompactionConfig, ConfigError};
use crate::context::block::Material;
use crate::context::budget::BudgetSettings;
use crate::context::manifest::ContextManifest;
use crate::context::offload::OffloadConfig;
use crate::context::omission::SelectionPolicy;
use crate::context::source::{ContextSource, RegistrationError, SourceOptions, SourceRegistry};
use crate::context::workspace::MAX_CONTEXT_TOKENS_DEFAULT;
use crate::context::{PairingCheck, Rejected};
use crate::limits;
use crate::message::{ContentPart, Message, Role};
use crate::model::{Model, ModelError};
use crate::runtime::RuntimeContext;
use crate::session::{JsonlSessionLog, SessionLog, SessionLogKey, SessionRecord};
use crate::storage::{MemoryStorage, Storage, WorkspacePath};
use crate::task::{
    BeginOutcome, SharedTaskState, TaskContextOptions, TaskError, TaskScope, TaskSetup, TaskStates,
};
use crate::tokens::{CachedEstimator, RatioEstimator, TokenEstimator};
use crate::tools::{AllowAll, PermissionPolicy, Tool, ToolRegistry, ToolRegistryError};

pub use events::{AgentEvent, EventKind};
pub use restore::RestoreError;

/// Why an agent could not be built. The builder is unchanged and can be fixed and reused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BuildError {
    #[error("no model configured; call `.model(...)` on the builder")]
    MissingModel,
    #[error("max_steps must be between 1 and {max}, got {value}")]
    InvalidMaxSteps { value: u32, max: u32 },
    #[error(transparent)]
    Tool(#[from] ToolRegistryError),
    #[error(transparent)]
    Source(#[from] RegistrationError),
    #[error(
        "instruction name `{0}` is invalid: start with a letter or digit and use only letters, digits, `_`, `.` or `-`"
    )]
    InvalidInstructionName(String),
    #[error("the offload eviction path is invalid: {0}")]
    InvalidEvictionPath(String),
    #[error("invalid compaction configuration: {0}")]
    Compaction(#[from] ConfigError),
    #[error(
        "the session tools read the session log, which is disabled; drop `disable_session_log()` or `enable_session_tools()`"
    )]
    SessionToolsWithoutLog,
}

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
            // Counts and manifest hashes are remembered per message, so a step over a long
            // history only counts what is new.
            estimator: Arc::new(CachedEstimator::new(RatioEstimator)),
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

/// Configures and builds a [`HarnessAgent`]. Cloning keeps every registration (the same
/// source and tool instances) without re-running anything.
#[derive(Clone)]
pub struct HarnessAgentBuilder {
    name: String,
    agent_id: Option<String>,
    model: Option<Arc<dyn Model>>,
    sys_prompt: Option<String>,
    workspace: Option<Arc<dyn Storage>>,
    tools: Vec<Arc<dyn Tool>>,
    permissions: Arc<dyn PermissionPolicy>,
    max_steps: u32,
    policy: ContextPolicy,
    clock: Option<Arc<dyn Clock>>,
    model_timeout: Option<Duration>,
    pairing: PairingCheck,
    instructions: Vec<(String, String)>,
    sources: SourceRegistry,
    source_errors: Vec<RegistrationError>,
    max_context_tokens: u64,
    session_log: Option<Arc<dyn SessionLog>>,
    offload: Option<OffloadConfig>,
    selection: Option<Arc<dyn SelectionPolicy>>,
    compaction: Option<CompactionConfig>,
    session_log_enabled: bool,
    session_tools: bool,
    plain: bool,
    task: TaskSetup,
}

impl HarnessAgentBuilder {
    /// The agent's display name (also the default agent id).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The stable agent id used to key sessions.
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// The model to reason with.
    pub fn model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// Persistent behaviour, placed in the single System message.
    pub fn sys_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.sys_prompt = Some(prompt.into());
        self
    }

    /// Workspace storage (in memory when not set).
    pub fn workspace(mut self, storage: Arc<dyn Storage>) -> Self {
        self.workspace = Some(storage);
        self
    }

    /// Adds a tool; duplicate names are reported by `build`.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// The permission check run before every tool execution.
    pub fn permissions(mut self, policy: Arc<dyn PermissionPolicy>) -> Self {
        self.permissions = policy;
        self
    }

    /// Reasoning steps one call may take (default [`limits::STEPS_PER_CALL_DEFAULT`]).
    pub fn max_steps(mut self, steps: u32) -> Self {
        self.max_steps = steps;
        self
    }

    /// Replaces the whole context policy (limits, estimator, observer).
    pub fn context_policy(mut self, policy: ContextPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// A named application rule, placed in System (required, priority 100, id
    /// `instruction/<name>`). Giving the same name again replaces the earlier text.
    pub fn instruction(mut self, name: impl Into<String>, markdown: impl Into<String>) -> Self {
        let name = name.into();
        let markdown = markdown.into();
        match self.instructions.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = markdown,
            None => self.instructions.push((name, markdown)),
        }
        self
    }

    /// Registers a context source with default options (5 s timeout, FAIL). A bad or duplicate
    /// name is reported by `build` (the registry keeps the earlier registration).
    pub fn context_source(self, name: &str, source: Arc<dyn ContextSource>) -> Self {
        self.context_source_with(name, source, SourceOptions::default())
    }

    /// Registers a context source with options.
    pub fn context_source_with(
        mut self,
        name: &str,
        source: Arc<dyn ContextSource>,
        options: SourceOptions,
    ) -> Self {
        if let Err(error) = self.try_context_source(name, source, options) {
            self.source_errors.push(error);
        }
        self
    }

    /// Registers a context source now, reporting a bad registration immediately.
    ///
    /// # Errors
    /// An invalid or duplicate name or a zero timeout; the registry is unchanged.
    pub fn try_context_source(
        &mut self,
        name: &str,
        source: Arc<dyn ContextSource>,
        options: SourceOptions,
    ) -> Result<(), RegistrationError> {
        self.sources.register(name, source, options)
    }

    /// Configures tool-result offload (on by default with [`OffloadConfig::default`]).
    pub fn tool_result_eviction(mut self, config: OffloadConfig) -> Self {
        self.offload = Some(config);
        self
    }

    /// Configures conversation compaction (on by default with [`CompactionConfig::default`]).
    pub fn compaction(mut self, config: CompactionConfig) -> Self {
        self.compaction = Some(config);
        self
    }

    /// Turns conversation compaction off (and with it overflow recovery).
    pub fn disable_compaction(mut self) -> Self {
        self.compaction = None;
        self
    }

    /// Registers `session_list`, `session_history` and `session_search` over the agent's
    /// session log ([`crate::tools::session`]); the user they read is always the call's.
    pub fn enable_session_tools(mut self) -> Self {
        self.session_tools = true;
        self
    }

    /// Turns the session log off (and with it overflow recovery).
    pub fn disable_session_log(mut self) -> Self {
        self.session_log_enabled = false;
        self
    }

    /// Turns tool-result offload off.
    pub fn disable_tool_result_eviction(mut self) -> Self {
        self.offload = None;
        self
    }

    /// A custom omission order for optional material.
    pub fn context_selection_policy(mut self, policy: Arc<dyn SelectionPolicy>) -> Self {
        self.selection = Some(policy);
        self
    }

    /// Bounds workspace material preparation, in estimated tokens (default 8,000).
    pub fn workspace_max_context_tokens(mut self, tokens: u64) -> Self {
        self.max_context_tokens = tokens;
        self
    }

    /// Where session records go. By default a [`JsonlSessionLog`] over the workspace: one
    /// JSON-lines file per session under `sessions/`, so an agent built later over the same
    /// workspace restores the session.
    pub fn session_log(mut self, log: Arc<dyn SessionLog>) -> Self {
        self.session_log = Some(log);
        self
    }

    /// The clock events are stamped with (tokio's clock, started at build, by default).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Fails a model call that takes longer than this.
    pub fn model_timeout(mut self, timeout: Duration) -> Self {
        self.model_timeout = Some(timeout);
        self
    }

    /// How tool pairing is validated before a request leaves (strict by default).
    pub fn pairing_check(mut self, pairing: PairingCheck) -> Self {
        self.pairing = pairing;
        self
    }

    /// The context-policy version manifests carry: `policy-` and the short content hash of
    /// every setting that shapes preparation, so equal settings give equal versions in any
    /// process, and changing one changes it.
    fn policy_version(&self) -> String {
        let budget = self.policy.budget();
        let compaction = self.compaction.as_ref().map(|config| {
            format!(
                "{config:?} summary_prompt=#{}",
                crate::context::manifest::content_hash(config.summary_prompt.as_bytes())
            )
        });
        let settings = format!(
            "budget={budget:?}\nestimator={} exact={}\npairing={:?}\noffload={:?}\ncompaction={compaction:?}\nselection={}\nworkspace_material_tokens={}\nplain={}",
            self.policy.estimator.method(),
            self.policy.estimator.exact(),
            self.pairing,
            self.offload,
            if self.selection.is_some() {
                "custom"
            } else {
                "default"
            },
            self.max_context_tokens,
            self.plain,
        );
        format!(
            "policy-{}",
            crate::context::manifest::content_hash(settings.as_bytes())
        )
    }

    /// Builds the agent.
    ///
    /// # Errors
    /// No model, an out-of-range `max_steps`, or a duplicate or invalid tool name.
    ///
    /// # Panics
    /// Without a clock configured, must be called inside a tokio runtime with time enabled.
    pub fn build(&self) -> Result<HarnessAgent, BuildError> {
        let model = self.model.clone().ok_or(BuildError::MissingModel)?;
        if self.max_steps == 0 || self.max_steps > limits::STEPS_PER_CALL_MAX {
            return Err(BuildError::InvalidMaxSteps {
                value: self.max_steps,
                max: limits::STEPS_PER_CALL_MAX,
            });
        }
        if let Some(error) = self.source_errors.first() {
            return Err(BuildError::Source(error.clone()));
        }
        let mut instructions = Vec::with_capacity(self.instructions.len());
        for (name, text) in &self.instructions {
            if !crate::context::source::is_valid_name(name) {
                return Err(BuildError::InvalidInstructionName(name.clone()));
            }
            instructions.push(Material::instruction(name, text));
        }
        if let Some(offload) = &self.offload
            && let Err(error) = WorkspacePath::parse(&offload.eviction_path)
        {
            return Err(BuildError::InvalidEvictionPath(error.to_string()));
        }
        if let Some(compaction) = &self.compaction {
            compaction.validate()?;
        }
        let workspace = self
            .workspace
            .clone()
            .unwrap_or_else(|| Arc::new(MemoryStorage::new()));
        // The embedded default: one JSON-lines file per session in the workspace.
        let session_log: Option<Arc<dyn SessionLog>> = self.session_log_enabled.then(|| {
            self.session_log.clone().unwrap_or_else(|| {
                Arc::new(JsonlSessionLog::new(workspace.clone())) as Arc<dyn SessionLog>
            })
        });
        let session_tools = match (&session_log, self.session_tools) {
            (_, false) => Vec::new(),
            (Some(log), true) => crate::tools::session::session_tools(log.clone()),
            (None, true) => return Err(BuildError::SessionToolsWithoutLog),
        };
        let mut tools = ToolRegistry::new();
        for tool in self
            .tools
            .iter()
            .cloned()
            .chain(self.task.tools())
            .chain(session_tools)
        {
            tools.register(tool)?;
        }
        let clock = self
            .clock
            .clone()
            .unwrap_or_else(|| Arc::new(TokioClock::start()));
        let policy_version = self.policy_version();
        Ok(HarnessAgent {
            inner: Arc::new(AgentInner {
                policy_version,
                agent_id: self.agent_id.clone().unwrap_or_else(|| self.name.clone()),
                name: self.name.clone(),
                model,
                sys_prompt: self.sys_prompt.clone(),
                workspace,
                tools,
                permissions: self.permissions.clone(),
                max_steps: self.max_steps,
                policy: self.policy.clone(),
                clock,
                model_timeout: self.model_timeout,
                pairing: self.pairing,
                instructions,
                sources: self.sources.clone(),
                max_context_tokens: self.max_context_tokens,
                session_log,
                compaction: self.compaction.clone(),
                plain: self.plain,
                offload: self.offload.clone(),
                selection: self.selection.clone(),
                sessions: Mutex::new(BTreeMap::new()),
                calls: AtomicU64::new(0),
                task: self.task.clone(),
            }),
        })
    }

    /// Turns on the Todo list: registers `todo_write`, whose receipts and `TASK_STATE`
    /// projection keep the list visible. Does not register `propose_requirement`.
    pub fn enable_task_list(mut self) -> Self {
        self.task.enable_task_list();
        self
    }

    /// Selects the optional task projections; a later call replaces these options entirely.
    /// `allow_requirement_proposals` also registers `propose_requirement`.
    pub fn task_context(mut self, options: TaskContextOptions) -> Self {
        self.task.set_options(options);
        self
    }

    /// The per-session task states the built agent and its task tools will share.
    pub fn task_states(&self) -> TaskStates {
        self.task.states().clone()
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
    /// A builder with defaults: no model, no tools, allow-all permissions, 32 steps.
    pub fn builder() -> HarnessAgentBuilder {
        HarnessAgentBuilder {
            name: "agent".to_string(),
            agent_id: None,
            model: None,
            sys_prompt: None,
            workspace: None,
            tools: Vec::new(),
            permissions: Arc::new(AllowAll),
            max_steps: limits::STEPS_PER_CALL_DEFAULT,
            policy: ContextPolicy::default(),
            clock: None,
            model_timeout: None,
            pairing: PairingCheck::Strict,
            instructions: Vec::new(),
            sources: SourceRegistry::new(),
            source_errors: Vec::new(),
            max_context_tokens: MAX_CONTEXT_TOKENS_DEFAULT,
            session_log: None,
            offload: Some(OffloadConfig::default()),
            selection: None,
            compaction: Some(CompactionConfig::default()),
            session_log_enabled: true,
            session_tools: false,
            plain: false,
            task: TaskSetup::default(),
        }
    }

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
        input: impl Into<String>,
        runtime: RuntimeContext,
    ) -> Result<Message, AgentError> {
        let mut ignore = |_: AgentEvent| {};
        run::run(&self.inner, input.into(), runtime, &mut ignore).await
    }

    /// Runs one call and yields its events as they happen; the last is `RunFinished`.
    ///
    /// Must be called inside a tokio runtime; the run proceeds as the stream is polled.
    pub fn stream_events(&self, input: impl Into<String>, runtime: RuntimeContext) -> EventStream {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let inner = self.inner.clone();
        let input = input.into();
        tokio::spawn(async move {
            let mut forward = |event: AgentEvent| {
                // A dropped stream means nobody listens; the run still completes and commits.
                let _ = sender.send(event);
            };
            let _ = run::run(&inner, input, runtime, &mut forward).await;
        });
        EventStream { receiver }
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

/// The plain ReAct agent: the same reasoning–tool–result loop with none of the context pipeline
/// (no sources, workspace material, budget, offload, compaction, projections or validation).
/// The conversation and tool schemas are sent as they are. It exists as the baseline that shows
/// what the pipeline is for.
///
/// ```
/// use std::sync::Arc;
/// use ctxbed_harness::agent::ReActAgent;
/// use ctxbed_harness::model::ModelInfo;
/// use ctxbed_sim::mock::{MockModel, MockScript, MockTurn, TurnAction};
/// let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
/// runtime.block_on(async {
///     let info = ModelInfo { name: "m".into(), context_window: Some(8_000), max_output_tokens: None };
///     let model = MockModel::new(MockScript::new(info, vec![MockTurn::new(TurnAction::reply("Hi."))]));
///     let agent = ReActAgent::builder().model(Arc::new(model)).build().unwrap();
///     assert_eq!(agent.call("Hello", Default::default()).await.unwrap().text(), "Hi.");
/// });
/// ```
pub struct ReActAgent;

impl ReActAgent {
    /// A builder whose agents run the plain loop. Pipeline settings on it have no effect.
    pub fn builder() -> HarnessAgentBuilder {
        let mut builder = HarnessAgent::builder()
            .disable_compaction()
            .disable_tool_result_eviction();
        builder.plain = true;
        builder
    }
}

/// The events of one run, in order.
#[derive(Debug)]
pub struct EventStream {
    receiver: tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
}

impl EventStream {
    /// The next event, or `None` after `RunFinished`.
    pub async fn next(&mut self) -> Option<AgentEvent> {
        self.receiver.recv().await
    }

    /// Collects every remaining event.
    pub async fn collect(mut self) -> Vec<AgentEvent> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}
