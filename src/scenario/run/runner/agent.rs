//! Building a scenario's agent: the harness (or plain ReAct) agent over the run's clock,
//! storage, model and sources, with its estimator, session log, scripted and built-in tools.

use std::sync::Arc;

use ctxbed_harness::agent::{ContextPolicy, HarnessAgent, HarnessAgentBuilder, ReActAgent};
use ctxbed_harness::context::omission::FixedOrder;
use ctxbed_harness::context::source::{FailurePolicy, SourceOptions};
use ctxbed_harness::session::{JsonlSessionLog, MemorySessionLog, SessionLog};
use ctxbed_harness::storage::{MemoryStorage, Storage, WorkspacePath};
use ctxbed_harness::task::TaskStates;
use ctxbed_harness::tokens::{
    ApproximateEstimator, CachedEstimator, RatioEstimator, TokenEstimator, Vocabulary,
    shared_exact_counter,
};
use ctxbed_harness::tools::{DenyTools, Tool};
use ctxbed_sim::rng::{SeedStream, Stream};
use ctxbed_sim::scripted::{PlanModeTool, WritingTool};
use ctxbed_sim::scripted::{ScriptedOutput, ScriptedTool};

use super::RunError;
use super::world::World;
use crate::scenario::format::file::{
    EstimatorChoice, Scenario, SessionStorage, ToolOutputSpec, ToolSpec,
};

/// The scenario's session log, kept by the runner so a restarted agent can be given the same
/// durable store.
#[derive(Clone)]
pub(super) enum SessionLogHandle {
    Memory(Arc<MemorySessionLog>),
    Jsonl(Arc<JsonlSessionLog>),
}

impl SessionLogHandle {
    pub(super) fn shared(&self) -> Arc<dyn SessionLog> {
        match self {
            SessionLogHandle::Memory(log) => log.clone(),
            SessionLogHandle::Jsonl(log) => log.clone(),
        }
    }
}

/// A session log for a (new) agent: JSON lines over the workspace start empty in memory and
/// read storage; the in-memory log is the durable store itself, so a restart keeps it.
pub(super) fn new_session_log(
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

impl World<'_> {
    /// A new agent over this world with `log` as its session log.
    pub(super) fn agent(&self, log: &SessionLogHandle) -> Result<HarnessAgent, RunError> {
        let mut builder = self.material(self.builder(log));
        let task_states = builder.task_states();
        for tool in &self.scenario.tools {
            builder = builder.tool(self.tool(tool, &task_states)?);
        }
        for tool in builtin_tools(&self.scenario.agent.builtin_tools, self.storage.clone())? {
            builder = builder.tool(tool);
        }
        Ok(builder.build()?)
    }

    /// The agent's builder over this world with the agent's settings: its kind, budget, model,
    /// offload, omission, compaction, session log and task options.
    fn builder(&self, session_log: &SessionLogHandle) -> HarnessAgentBuilder {
        let spec = &self.scenario.agent;
        let policy = ContextPolicy {
            max_input_tokens: spec.budget.max_input_tokens,
            output_reserve: spec.budget.output_reserve,
            safety_margin: spec.budget.safety_margin,
            max_output_tokens: spec.budget.requested_max_output,
            estimator: estimator(spec.estimator, self.scenario.mock.vocabulary),
            observer: Some(Arc::new({
                let observed = self.observed.clone();
                move |_: &ctxbed_harness::context::manifest::ContextManifest| {
                    observed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            })),
        };
        let base = if spec.react {
            ReActAgent::builder()
        } else {
            HarnessAgent::builder()
        };
        let mut builder = base
            .name(spec.name.clone())
            .agent_id(spec.agent_id.clone())
            .model(self.model.clone())
            .workspace(self.storage.clone())
            .clock(self.clock.clone())
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
                if let Some(model) = &self.summary_model {
                    config.model = Some(model.clone());
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
        builder
    }

    /// Adds the scenario's instructions and scripted sources, then the task options.
    fn material(&self, mut builder: HarnessAgentBuilder) -> HarnessAgentBuilder {
        let scenario = self.scenario;
        for instruction in &scenario.instructions {
            builder = builder.instruction(instruction.name.clone(), instruction.text.clone());
        }
        for (source_spec, (name, source)) in scenario.sources.iter().zip(&self.sources) {
            let mut options = SourceOptions::default();
            if let Some(timeout) = source_spec.timeout {
                options = options.timeout(timeout);
            }
            if source_spec.omit_on_failure {
                options = options.on_failure(FailurePolicy::Omit);
            }
            builder = builder.context_source_with(name, source.clone(), options);
        }
        if scenario.agent.task_list {
            builder = builder.enable_task_list();
        }
        builder.task_context(scenario.agent.task_context)
    }

    /// A scenario tool: the scripted tool, switching the plan mode and writing its file when
    /// it does.
    fn tool(&self, tool: &ToolSpec, task_states: &TaskStates) -> Result<Arc<dyn Tool>, RunError> {
        let tools = self.scenario.seed.stream(Stream::Tools);
        let mut scripted = scripted_tool(tool, tools).into_arc();
        if let Some(mode) = tool.sets_plan_mode {
            scripted = Arc::new(PlanModeTool {
                inner: scripted,
                states: task_states.clone(),
                mode,
            });
        }
        Ok(match &tool.writes {
            Some((path, text)) => Arc::new(WritingTool {
                inner: scripted,
                storage: self.storage.clone(),
                path: WorkspacePath::parse(path).map_err(|e| RunError::Workspace(e.to_string()))?,
                text: text.clone(),
            }),
            None => scripted,
        })
    }
}

/// The agent's estimator. `approx` approximates the tokenizer the mock model declares
/// (`vocabulary`), as a harness configured for its provider's tokenizer would.
pub(super) fn estimator(
    choice: EstimatorChoice,
    vocabulary: Vocabulary,
) -> Arc<dyn TokenEstimator> {
    match choice {
        EstimatorChoice::Ratio => Arc::new(CachedEstimator::new(RatioEstimator)),
        // The mock models' counter: a message the agent counted, the model does not recount.
        EstimatorChoice::ExactO200k => shared_exact_counter(Vocabulary::O200k),
        EstimatorChoice::ExactCl100k => shared_exact_counter(Vocabulary::Cl100k),
        EstimatorChoice::Approximate => {
            Arc::new(CachedEstimator::new(ApproximateEstimator::new(vocabulary)))
        }
    }
}

/// The scripted tool of a spec; generated output is seeded by its name in the tools stream.
fn scripted_tool(spec: &ToolSpec, tools: SeedStream) -> ScriptedTool {
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
        .with_seed(tools.seed_for(&format!("/{}", spec.name)));
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
