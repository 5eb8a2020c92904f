//! Checking the `[agent]` table: estimator, budget, tool pairing, kind, session storage, the
//! `offload` and `compaction` sub-tables and `builtin_tools`, into an [`AgentSpec`].

use ctxbed_harness::compaction::config::{CompactionConfig, PruneConfig, TruncateArgsConfig};
use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::context::budget::BudgetSettings;
use ctxbed_harness::context::offload::OffloadConfig;
use ctxbed_harness::limits;
use ctxbed_harness::storage::WorkspacePath;
use ctxbed_harness::task::TaskContextOptions;
use toml::Spanned;

use super::checked::{AgentSpec, EstimatorChoice, SessionStorage};
use super::raw::{RawAgent, RawCompaction, RawOffload, RawPrune, RawTruncate};
use crate::scenario::format::mock_file::Checker;

/// Checks the `[agent]` table into an [`AgentSpec`]; `None` when it has a problem.
pub(super) fn agent_spec(
    checker: &mut Checker<'_>,
    spanned: &Spanned<RawAgent>,
) -> Option<AgentSpec> {
    let raw = spanned.get_ref();
    let before = checker.problems.len();
    let max_steps = max_steps(checker, raw);
    let model_timeout = raw
        .model_timeout_ms
        .as_ref()
        .map(|value| checker.latency(Some(value), "agent.model_timeout_ms"));
    let estimator = match &raw.estimator {
        Some(value) => checker.choice_of::<EstimatorChoice>(value, "agent.estimator"),
        None => Some(EstimatorChoice::Approximate),
    };
    let pairing = match &raw.tool_pairs {
        Some(value) => checker.choice_of::<PairingCheck>(value, "agent.tool_pairs"),
        None => Some(PairingCheck::Strict),
    };
    let offload = offload_config(checker, raw.offload.as_ref());
    let compaction = compaction_config(checker, raw.compaction.as_ref());
    let react = is_react(checker, raw);
    let session_storage = match &raw.session_storage {
        Some(value) => checker.choice_of::<SessionStorage>(value, "agent.session_storage"),
        None => Some(SessionStorage::Memory),
    };
    check_session_tools(checker, raw);
    let workspace_max_context_tokens = raw
        .workspace_max_context_tokens
        .as_ref()
        .and_then(|v| checker.count(v, "agent.workspace_max_context_tokens", 0));
    let budget = budget_settings(checker, raw);
    if checker.problems.len() != before {
        return None;
    }
    let name = raw.name.clone().unwrap_or_else(|| "agent".to_string());
    Some(AgentSpec {
        agent_id: raw.agent_id.clone().unwrap_or_else(|| name.clone()),
        name,
        model: raw.model.get_ref().clone(),
        sys_prompt: raw.sys_prompt.clone(),
        max_steps,
        model_timeout,
        estimator: estimator?,
        deny_tools: raw.deny_tools.iter().map(|t| t.get_ref().clone()).collect(),
        budget,
        pairing: pairing?,
        builtin_tools: builtin_tool_names(checker, &raw.builtin_tools),
        workspace_max_context_tokens,
        offload: offload?,
        omission_order: raw.omission_order.clone(),
        compaction: compaction?,
        summary_model: None,
        session_log: raw.session_log.unwrap_or(true),
        session_storage: session_storage?,
        session_tools: raw.session_tools.as_ref().is_some_and(|t| *t.get_ref()),
        react: react?,
        task_list: raw.task_list.unwrap_or(false),
        task_context: raw
            .task_context
            .as_ref()
            .map_or_else(TaskContextOptions::default, |c| TaskContextOptions {
                include_requirements: c.include_requirements,
                include_verification_results: c.include_verification_results,
                allow_requirement_proposals: c.allow_requirement_proposals,
            }),
    })
}

/// `agent.max_steps` (the default when absent), at most the harness's limit.
fn max_steps(checker: &mut Checker<'_>, raw: &RawAgent) -> u32 {
    let Some(value) = &raw.max_steps else {
        return limits::STEPS_PER_CALL_DEFAULT;
    };
    let steps = checker.count(value, "agent.max_steps", 1).unwrap_or(1);
    if steps > u64::from(limits::STEPS_PER_CALL_MAX) {
        let problem = checker
            .at(
                value,
                format!(
                    "`agent.max_steps` is {steps}; at most {}",
                    limits::STEPS_PER_CALL_MAX
                ),
            )
            .field("agent.max_steps");
        checker.problems.push(problem);
    }
    u32::try_from(steps).unwrap_or(1)
}

/// `agent.kind`: whether the agent is a plain ReAct agent (`"react"`) rather than the harness.
fn is_react(checker: &mut Checker<'_>, raw: &RawAgent) -> Option<bool> {
    match &raw.kind {
        Some(value) => checker.choice(value, "agent.kind", &["harness", "react"], |k| match k {
            "harness" => Some(false),
            "react" => Some(true),
            _ => None,
        }),
        None => Some(false),
    }
}

/// The session tools read the session log: both cannot be asked for with the log turned off.
fn check_session_tools(checker: &mut Checker<'_>, raw: &RawAgent) {
    if let Some(tools) = raw.session_tools.as_ref().filter(|t| *t.get_ref())
        && raw.session_log == Some(false)
    {
        let problem = checker
            .at(
                tools,
                "`agent.session_tools` needs the session log, which `agent.session_log = false` turns off",
            )
            .field("agent.session_tools")
            .help("drop one of the two settings");
        checker.problems.push(problem);
    }
}

/// The budget settings: `max_input_tokens`, `output_reserve`, `safety_margin` and
/// `max_output_tokens`, each optional.
fn budget_settings(checker: &mut Checker<'_>, raw: &RawAgent) -> BudgetSettings {
    let mut optional_count = |value: &Option<Spanned<i64>>, field: &str| {
        value.as_ref().and_then(|v| checker.count(v, field, 0))
    };
    BudgetSettings {
        max_input_tokens: optional_count(&raw.max_input_tokens, "agent.max_input_tokens"),
        output_reserve: optional_count(&raw.output_reserve, "agent.output_reserve"),
        safety_margin: optional_count(&raw.safety_margin, "agent.safety_margin"),
        requested_max_output: optional_count(&raw.max_output_tokens, "agent.max_output_tokens"),
    }
}

/// `Some(None)` when offload is disabled; `None` when the section has a problem.
fn offload_config(
    checker: &mut Checker<'_>,
    raw: Option<&Spanned<RawOffload>>,
) -> Option<Option<OffloadConfig>> {
    let Some(spanned) = raw else {
        return Some(Some(OffloadConfig::default()));
    };
    let raw = spanned.get_ref();
    if raw.enabled == Some(false) {
        return Some(None);
    }
    let before = checker.problems.len();
    let mut config = OffloadConfig::default();
    if let Some(value) = &raw.max_result_chars {
        config.max_result_chars = checker
            .count(value, "agent.offload.max_result_chars", 1)
            .unwrap_or(1) as usize;
    }
    if let Some(value) = &raw.preview_chars {
        config.preview_chars = checker
            .count(value, "agent.offload.preview_chars", 0)
            .unwrap_or(0) as usize;
    }
    if let Some(value) = &raw.eviction_path {
        match WorkspacePath::parse(value.get_ref()) {
            Ok(path) => config.eviction_path = path.as_str().to_string(),
            Err(error) => {
                let problem = checker
                    .at(value, error.to_string())
                    .field("agent.offload.eviction_path");
                checker.problems.push(problem);
            }
        }
    }
    if let Some(tools) = &raw.excluded_tools {
        config.excluded_tools = tools.iter().cloned().collect();
    }
    (checker.problems.len() == before).then_some(Some(config))
}

/// `Some(None)` when compaction is disabled; `None` when the section has a problem.
fn compaction_config(
    checker: &mut Checker<'_>,
    raw: Option<&Spanned<RawCompaction>>,
) -> Option<Option<CompactionConfig>> {
    let Some(spanned) = raw else {
        return Some(Some(CompactionConfig::default()));
    };
    let raw = spanned.get_ref();
    if raw.enabled == Some(false) {
        return Some(None);
    }
    let before = checker.problems.len();
    let mut config = CompactionConfig::default();
    let count = compaction_count;
    if let Some(value) = count(checker, &raw.trigger_messages, "trigger_messages", 1) {
        config.trigger_messages = value as usize;
    }
    if let Some(value) = count(checker, &raw.trigger_tokens, "trigger_tokens", 0) {
        config.trigger_tokens = value;
    }
    if let Some(value) = count(checker, &raw.keep_tokens, "keep_tokens", 0) {
        config.keep_tokens = Some(value);
    }
    if let Some(value) = count(checker, &raw.keep_messages, "keep_messages", 1) {
        config.keep_messages = value as usize;
    }
    if let Some(prune) = &raw.prune {
        config.prune = prune_config(checker, prune);
    }
    if let Some(truncate) = &raw.truncate_args {
        config.truncate_args = Some(truncate_args_config(checker, truncate));
    }
    if let Some(prompt) = prompt_template(
        checker,
        raw.summary_prompt.as_ref(),
        "summary_prompt",
        "the conversation to summarise",
    ) {
        config.summary_prompt = prompt;
    }
    if let Some(flush) = raw.flush_before_compact {
        config.flush_before_compact = flush;
    }
    if let Some(prompt) = prompt_template(
        checker,
        raw.memory_prompt.as_ref(),
        "memory_prompt",
        "the messages to extract facts from",
    ) {
        config.memory_prompt = prompt;
    }
    (checker.problems.len() == before).then_some(Some(config))
}

/// An optional count of `agent.compaction.<field>`, at least `min`.
fn compaction_count(
    checker: &mut Checker<'_>,
    value: &Option<Spanned<i64>>,
    field: &str,
    min: i64,
) -> Option<u64> {
    value
        .as_ref()
        .and_then(|v| checker.count(v, &format!("agent.compaction.{field}"), min))
}

/// `agent.compaction.prune`; `None` when it is disabled.
fn prune_config(checker: &mut Checker<'_>, prune: &RawPrune) -> Option<PruneConfig> {
    if prune.enabled == Some(false) {
        return None;
    }
    let count = compaction_count;
    let mut p = PruneConfig::default();
    if let Some(v) = count(checker, &prune.protect_tokens, "prune.protect_tokens", 0) {
        p.protect_tokens = v;
    }
    if let Some(v) = count(
        checker,
        &prune.minimum_prunable_tokens,
        "prune.minimum_prunable_tokens",
        0,
    ) {
        p.minimum_prunable_tokens = v;
    }
    if let Some(v) = count(checker, &prune.preview_chars, "prune.preview_chars", 2) {
        p.preview_chars = v as usize;
    }
    if let Some(tools) = &prune.excluded_tools {
        p.excluded_tools = tools.iter().cloned().collect();
    }
    Some(p)
}

/// `agent.compaction.truncate_args`.
fn truncate_args_config(checker: &mut Checker<'_>, truncate: &RawTruncate) -> TruncateArgsConfig {
    let count = compaction_count;
    let mut t = TruncateArgsConfig::default();
    let field = "truncate_args.trigger_messages";
    if let Some(v) = count(checker, &truncate.trigger_messages, field, 0) {
        t.trigger_messages = v as usize;
    }
    let field = "truncate_args.trigger_tokens";
    if let Some(v) = count(checker, &truncate.trigger_tokens, field, 0) {
        t.trigger_tokens = v;
    }
    let field = "truncate_args.protect_latest";
    if let Some(v) = count(checker, &truncate.protect_latest, field, 0) {
        t.protect_latest = v as usize;
    }
    let field = "truncate_args.max_arg_length";
    if let Some(v) = count(checker, &truncate.max_arg_length, field, 1) {
        t.max_arg_length = v as usize;
    }
    if let Some(text) = &truncate.truncation_text {
        t.truncation_text = text.clone();
    }
    t
}

/// A compaction prompt template (`agent.compaction.<name>`), when given and holding the
/// `{messages}` placeholder; a template without it is a problem naming what goes there.
fn prompt_template(
    checker: &mut Checker<'_>,
    prompt: Option<&Spanned<String>>,
    name: &str,
    what: &str,
) -> Option<String> {
    let prompt = prompt?;
    let placeholder = ctxbed_harness::compaction::config::MESSAGES_PLACEHOLDER;
    if prompt.get_ref().contains(placeholder) {
        return Some(prompt.get_ref().clone());
    }
    let kind = name.trim_end_matches("_prompt");
    let problem = checker
        .at(
            prompt,
            format!("the {kind} prompt has no `{placeholder}` placeholder"),
        )
        .field(format!("agent.compaction.{name}"))
        .help(format!("put `{placeholder}` where {what} should go"));
    checker.problems.push(problem);
    None
}

/// Checks `agent.builtin_tools`: known names (with a did-you-mean), each listed once.
fn builtin_tool_names(checker: &mut Checker<'_>, raw: &[Spanned<String>]) -> Vec<String> {
    let known = ctxbed_harness::tools::builtin::BUILTIN_TOOL_NAMES;
    let mut names: Vec<String> = Vec::new();
    for value in raw {
        let field = "agent.builtin_tools";
        let Some(name) = checker.choice(value, field, &known, |name| {
            known.contains(&name).then(|| name.to_string())
        }) else {
            continue;
        };
        if names.contains(&name) {
            let problem = checker
                .at(value, format!("built-in tool `{name}` is listed twice"))
                .field(field)
                .help("list each built-in tool once");
            checker.problems.push(problem);
            continue;
        }
        names.push(name);
    }
    names
}
