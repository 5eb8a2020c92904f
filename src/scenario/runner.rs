//! Runs a checked scenario on the simulated runtime and records its trace.
//!
//! One current-thread tokio runtime with paused time per run; one [`SeedTree`] from the
//! scenario's seed, forked per concern; in-memory workspace storage. Each step is an agent call
//! consumed through `stream_events`, so the trace is exactly what a streaming client sees.

use std::sync::Arc;
use std::time::Duration;

use super::expect::{Check, evaluate};
use super::file::{EstimatorChoice, Scenario, ToolOutputSpec, ToolSpec};
use super::trace::{StepRecord, Trace, render};
use crate::agent::events::EventKind;
use crate::agent::{AgentError, HarnessAgent};
use crate::context::budget::InputBudget;
use crate::format::duration;
use crate::limits;
use crate::model::mock::{MockModel, SummaryMode};
use crate::runtime::RuntimeContext;
use crate::sim::clock::{Clock, TokioClock};
use crate::sim::rng::SeedTree;
use crate::sim::storage::{MemoryStorage, Storage, WorkspacePath};
use crate::tokens::{
    ApproximateEstimator, CachedEstimator, ExactEstimator, RatioEstimator, TokenEstimator,
    Vocabulary,
};
use crate::tools::{DenyTools, ScriptedOutput, ScriptedTool};

/// The result of one scenario run.
#[derive(Debug, Clone)]
pub struct RunOutput {
    pub trace: Trace,
    pub checks: Vec<Check>,
    /// The canonical rendering (what goldens hold).
    pub text: String,
}

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
    Build(#[from] crate::agent::BuildError),
    #[error("cannot seed the workspace: {0}")]
    Workspace(String),
}

/// Runs a scenario and renders its trace.
///
/// # Errors
/// The runtime, agent or workspace could not be set up (scenario steps that fail are recorded in
/// the trace, not returned).
pub fn run(scenario: &Scenario) -> Result<RunOutput, RunError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    let trace = runtime.block_on(simulate(scenario))?;
    let checks = evaluate(&scenario.expectations, &trace.steps);
    let text = render(&trace, &checks);
    Ok(RunOutput {
        trace,
        checks,
        text,
    })
}

async fn simulate(scenario: &Scenario) -> Result<Trace, RunError> {
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
    let agent = build_agent(scenario, &seeds, clock.clone(), storage)?;
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
    for (index, spec) in scenario.steps.iter().enumerate() {
        let runtime = RuntimeContext {
            user_id: spec.user.clone(),
            session_id: spec.session.clone(),
            ..RuntimeContext::default()
        };
        let started = clock.elapsed();
        let stream = agent.stream_events(spec.input.clone(), runtime);
        let limit = Duration::from_secs(limits::STEP_VIRTUAL_TIME_MAX_SECONDS);
        let (events, timed_out) = match tokio::time::timeout(limit, stream.collect()).await {
            Ok(events) => (events, false),
            Err(_) => (Vec::new(), true),
        };
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
        steps.push(StepRecord {
            index: index + 1,
            spec: spec.clone(),
            events,
            outcome,
            elapsed: clock.elapsed().saturating_sub(started),
        });
    }
    Ok(Trace {
        header: header(scenario),
        steps,
    })
}

fn build_agent(
    scenario: &Scenario,
    seeds: &SeedTree,
    clock: Arc<dyn Clock>,
    storage: Arc<MemoryStorage>,
) -> Result<HarnessAgent, RunError> {
    let spec = &scenario.agent;
    let mut builder = HarnessAgent::builder()
        .name(spec.name.clone())
        .agent_id(spec.agent_id.clone())
        .model(Arc::new(MockModel::new(scenario.mock.clone())))
        .workspace(storage)
        .clock(clock)
        .max_steps(spec.max_steps)
        .estimator(estimator(spec.estimator))
        .budget(spec.budget)
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
    for tool in &scenario.tools {
        builder = builder.tool(scripted_tool(tool, seeds).into_arc());
    }
    Ok(builder.build()?)
}

fn estimator(choice: EstimatorChoice) -> Arc<dyn TokenEstimator> {
    match choice {
        EstimatorChoice::Ratio => Arc::new(RatioEstimator),
        EstimatorChoice::ExactO200k => Arc::new(ExactEstimator::new(Vocabulary::O200k)),
        EstimatorChoice::ExactCl100k => Arc::new(ExactEstimator::new(Vocabulary::Cl100k)),
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
fn header(scenario: &Scenario) -> Vec<String> {
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
                crate::context::PairingCheck::Strict => "strict",
                crate::context::PairingCheck::Unchecked => "unchecked",
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
                .map_or(String::new(), |cap| format!(" (cap {cap})"))
        ),
    ];
    for tool in &scenario.tools {
        let output = match &tool.output {
            ToolOutputSpec::Fixed(text) => format!("fixed {} chars", text.chars().count()),
            ToolOutputSpec::Sequence(texts) => format!("sequence of {}", texts.len()),
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
    lines
}
