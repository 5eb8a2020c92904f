//! Configuring and building an agent: [`HarnessAgentBuilder`] (from [`HarnessAgent::builder`]
//! or [`ReActAgent::builder`]), its registrations and settings, the policy version manifests
//! carry, and [`BuildError`].
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{AgentInner, ContextPolicy, HarnessAgent};
use crate::clock::{Clock, TokioClock};
use crate::compaction::config::{CompactionConfig, ConfigError};
use crate::context::PairingCheck;
use crate::context::block::Material;
use crate::context::offload::OffloadConfig;
use crate::context::omission::SelectionPolicy;
use crate::context::source::{ContextSource, RegistrationError, SourceOptions, SourceRegistry};
use crate::context::workspace::MAX_CONTEXT_TOKENS_DEFAULT;
use crate::limits;
use crate::model::Model;
use crate::session::{JsonlSessionLog, SessionLog};
use crate::storage::{MemoryStorage, Storage, WorkspacePath};
use crate::task::{TaskContextOptions, TaskSetup, TaskStates};
use crate::tools::{AllowAll, PermissionPolicy, Tool, ToolRegistry, ToolRegistryError};

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
    #[error(
        "instruction `{0}` is given twice; give each instruction its own name, or put both texts in one `instruction(...)`"
    )]
    DuplicateInstruction(String),
    #[error("the offload eviction path is invalid: {0}")]
    InvalidEvictionPath(String),
    #[error("invalid compaction configuration: {0}")]
    Compaction(#[from] ConfigError),
    #[error(
        "the session tools read the session log, which is disabled; drop `disable_session_log()` or `enable_session_tools()`"
    )]
    SessionToolsWithoutLog,
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

    /// Workspace storage: the files the built-in tools read and write, offloaded tool results,
    /// `AGENTS.md`/`MEMORY.md`/`knowledge/` material and, by default, the session logs.
    ///
    /// Give [`FsStorage::open`](crate::storage::FsStorage::open) to keep them in a directory.
    /// Without this setting the workspace is a [`MemoryStorage`]: everything in it is lost
    /// with the agent, and a later agent cannot restore the sessions (`build` says so in a
    /// `tracing` event).
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
    /// `instruction/<name>`). Names are unique: giving one twice is reported by `build`.
    pub fn instruction(mut self, name: impl Into<String>, markdown: impl Into<String>) -> Self {
        self.instructions.push((name.into(), markdown.into()));
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
                "{config:?} summary_prompt=#{} memory_prompt=#{}",
                crate::context::manifest::content_hash(config.summary_prompt.as_bytes()),
                crate::context::manifest::content_hash(config.memory_prompt.as_bytes())
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
        self.check_steps_and_sources()?;
        let instructions = self.instruction_materials()?;
        self.check_offload_and_compaction()?;
        let workspace = self.workspace_storage();
        // The embedded default: one JSON-lines file per session in the workspace.
        let session_log: Option<Arc<dyn SessionLog>> = self.session_log_enabled.then(|| {
            self.session_log.clone().unwrap_or_else(|| {
                Arc::new(JsonlSessionLog::new(workspace.clone())) as Arc<dyn SessionLog>
            })
        });
        let tools = self.tool_registry(session_log.as_ref())?;
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

    /// `max_steps` is in range and every source registered.
    fn check_steps_and_sources(&self) -> Result<(), BuildError> {
        if self.max_steps == 0 || self.max_steps > limits::STEPS_PER_CALL_MAX {
            return Err(BuildError::InvalidMaxSteps {
                value: self.max_steps,
                max: limits::STEPS_PER_CALL_MAX,
            });
        }
        if let Some(error) = self.source_errors.first() {
            return Err(BuildError::Source(error.clone()));
        }
        Ok(())
    }

    /// The instructions as materials, in order; each name valid and given once.
    fn instruction_materials(&self) -> Result<Vec<Material>, BuildError> {
        let mut instructions = Vec::with_capacity(self.instructions.len());
        for (index, (name, text)) in self.instructions.iter().enumerate() {
            if !crate::context::source::is_valid_name(name) {
                return Err(BuildError::InvalidInstructionName(name.clone()));
            }
            if self.instructions[..index].iter().any(|(n, _)| n == name) {
                return Err(BuildError::DuplicateInstruction(name.clone()));
            }
            instructions.push(Material::instruction(name, text));
        }
        Ok(instructions)
    }

    /// The offload eviction path and the compaction configuration, when set, are valid.
    fn check_offload_and_compaction(&self) -> Result<(), BuildError> {
        if let Some(offload) = &self.offload
            && let Err(error) = WorkspacePath::parse(&offload.eviction_path)
        {
            return Err(BuildError::InvalidEvictionPath(error.to_string()));
        }
        if let Some(compaction) = &self.compaction {
            compaction.validate()?;
        }
        Ok(())
    }

    /// The workspace storage set, else a fresh in-memory one (and a `tracing` event saying so).
    fn workspace_storage(&self) -> Arc<dyn Storage> {
        self.workspace.clone().unwrap_or_else(|| {
            tracing::info!(
                agent = %self.name,
                "no workspace storage set: files, offloaded results and session logs are kept in \
                 memory and lost with the agent; set `workspace(FsStorage::open(dir)?)` to keep them"
            );
            Arc::new(MemoryStorage::new())
        })
    }

    /// The registry of the agent's tools: the registered ones, the task tools, then the session
    /// tools when enabled (they need `session_log`).
    fn tool_registry(
        &self,
        session_log: Option<&Arc<dyn SessionLog>>,
    ) -> Result<ToolRegistry, BuildError> {
        let session_tools = match (session_log, self.session_tools) {
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
        Ok(tools)
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
