//! The trace header: the effective configuration of a run, defaults included, so that a
//! changed default shows in goldens.

use ctxbed_harness::context::budget::InputBudget;
use ctxbed_harness::format::duration;
use ctxbed_harness::tokens::{ExactEstimator, TokenEstimator};
use ctxbed_sim::mock::SummaryMode;

use super::agent::estimator;
use crate::scenario::format::file::{
    AgentSpec, Scenario, SessionStorage, SourceSpec, ToolOutputSpec, ToolSpec,
};

/// The effective configuration, defaults included, so a changed default shows in goldens.
pub(super) fn header(scenario: &Scenario, policy_version: &str) -> Vec<String> {
    let agent = &scenario.agent;
    let mut lines = opening_lines(scenario, policy_version);
    lines.extend(task_lines(scenario));
    for tool in &scenario.tools {
        lines.push(tool_line(tool));
    }
    lines.push(offload_line(agent));
    if let Some(order) = &agent.omission_order {
        lines.push(format!("omission_order: [{}]", order.join(", ")));
    }
    lines.push(compaction_line(agent));
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
        lines.push(source_line(source));
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

/// The first lines: scenario, seed, agent, system prompt, model, budget and policy version.
fn opening_lines(scenario: &Scenario, policy_version: &str) -> Vec<String> {
    let agent = &scenario.agent;
    let mock = &scenario.mock;
    let info = &mock.info;
    let budget = InputBudget::compute(info.context_window, &agent.budget);
    let optional = |value: Option<u64>| value.map_or("unknown".to_string(), |v| v.to_string());
    vec![
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
            estimator(agent.estimator, mock.vocabulary).method(),
            crate::scenario::format::choice::Choice::name(agent.pairing),
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
    ]
}

/// The agent's kind when it is the plain loop, its task options and the scenario's task state,
/// each only when set.
fn task_lines(scenario: &Scenario) -> Vec<String> {
    let agent = &scenario.agent;
    let mut lines = Vec::new();
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
    lines
}

/// A scripted tool: its output, latency and whether it fails.
fn tool_line(tool: &ToolSpec) -> String {
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
    format!(
        "tool: {} {output} latency={}{fail}",
        tool.name,
        duration(tool.latency)
    )
}

/// Tool-result offload: its settings, or disabled.
fn offload_line(agent: &AgentSpec) -> String {
    match &agent.offload {
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
    }
}

/// Compaction: its triggers, what it keeps, pruning, argument truncation and summary model, or
/// disabled.
fn compaction_line(agent: &AgentSpec) -> String {
    match &agent.compaction {
        Some(config) => format!(
            "compaction: trigger_messages={} trigger_tokens={} keep={} prune={} truncate_args={} summary_model={} flush_before_compact={}",
            config.trigger_messages,
            if config.trigger_tokens == 0 {
                "allowance".to_string()
            } else {
                config.trigger_tokens.to_string()
            },
            match config.keep_tokens {
                None => "dynamic".to_string(),
                Some(0) => format!("{} messages", config.keep_messages),
                Some(tokens) => format!("{tokens} tokens"),
            },
            config.prune.as_ref().map_or("off".to_string(), |p| format!(
                "protect {} min {} preview {}",
                p.protect_tokens, p.minimum_prunable_tokens, p.preview_chars
            )),
            config
                .truncate_args
                .as_ref()
                .map_or("off".to_string(), |t| format!(
                    "from {} messages or {} tokens, protect {}, max {}",
                    t.trigger_messages, t.trigger_tokens, t.protect_latest, t.max_arg_length
                )),
            agent
                .summary_model
                .as_ref()
                .map_or("agent's".to_string(), |m| m.info.name.clone()),
            config.flush_before_compact
        ),
        None => "compaction: disabled".to_string(),
    }
}

/// A scripted source: its timeout, failure policy, latency, failures and blocks.
fn source_line(source: &SourceSpec) -> String {
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
    format!(
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
    )
}

/// The header line naming the enabled built-in tools; none when there are none, so scenarios
/// without built-in tools keep their goldens.
fn builtin_tools_line(agent: &AgentSpec) -> Option<String> {
    (!agent.builtin_tools.is_empty())
        .then(|| format!("builtin_tools: {}", agent.builtin_tools.join(", ")))
}
