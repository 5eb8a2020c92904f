//! The `[agent]` table, with its `offload` and `compaction` sub-tables.

use ctxbed_harness::compaction::config::CompactionConfig;
use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::context::offload::OffloadConfig;
use toml::{Table, Value};

use super::value::{integer, millis, strings};
use super::{WriteError, unsupported};
use crate::scenario::file::{AgentSpec, EstimatorChoice, Scenario, SessionStorage};

pub(super) fn agent(scenario: &Scenario) -> Result<Table, WriteError> {
    let spec: &AgentSpec = &scenario.agent;
    if spec.model != scenario.mock.info.name {
        return Err(unsupported(format!(
            "agent model `{}` with a mock script named `{}`",
            spec.model, scenario.mock.info.name
        )));
    }
    let mut table = Table::new();
    table.insert("name".into(), spec.name.clone().into());
    table.insert("agent_id".into(), spec.agent_id.clone().into());
    table.insert("model".into(), spec.model.clone().into());
    if let Some(prompt) = &spec.sys_prompt {
        table.insert("sys_prompt".into(), prompt.clone().into());
    }
    table.insert("max_steps".into(), i64::from(spec.max_steps).into());
    if let Some(timeout) = spec.model_timeout {
        table.insert("model_timeout_ms".into(), millis(timeout)?);
    }
    let estimator = match spec.estimator {
        EstimatorChoice::Ratio => "ratio",
        EstimatorChoice::ExactO200k => "exact-o200k",
        EstimatorChoice::ExactCl100k => "exact-cl100k",
        EstimatorChoice::Approximate => "approx",
    };
    table.insert("estimator".into(), estimator.into());
    if !spec.deny_tools.is_empty() {
        table.insert("deny_tools".into(), strings(&spec.deny_tools));
    }
    let budget = [
        ("max_input_tokens", spec.budget.max_input_tokens),
        ("output_reserve", spec.budget.output_reserve),
        ("safety_margin", spec.budget.safety_margin),
        ("max_output_tokens", spec.budget.requested_max_output),
        (
            "workspace_max_context_tokens",
            spec.workspace_max_context_tokens,
        ),
    ];
    for (key, value) in budget {
        if let Some(value) = value {
            table.insert(key.into(), integer(value)?);
        }
    }
    let pairs = match spec.pairing {
        PairingCheck::Strict => "strict",
        PairingCheck::Repair => "repair",
        PairingCheck::Unchecked => "unchecked",
    };
    table.insert("tool_pairs".into(), pairs.into());
    if !spec.builtin_tools.is_empty() {
        table.insert("builtin_tools".into(), strings(&spec.builtin_tools));
    }
    table.insert("offload".into(), offload(spec.offload.as_ref()));
    if let Some(order) = &spec.omission_order {
        table.insert("omission_order".into(), strings(order));
    }
    let summary_model = spec.summary_model.as_ref().map(|m| m.info.name.clone());
    table.insert(
        "compaction".into(),
        compaction(spec.compaction.as_ref(), summary_model)?,
    );
    table.insert("session_log".into(), spec.session_log.into());
    if spec.session_storage == SessionStorage::Jsonl {
        table.insert("session_storage".into(), "jsonl".into());
    }
    if spec.session_tools {
        table.insert("session_tools".into(), true.into());
    }
    if spec.task_list {
        table.insert("task_list".into(), true.into());
    }
    let options = spec.task_context;
    if options != ctxbed_harness::task::TaskContextOptions::default() {
        let mut context = Table::new();
        for (key, on) in [
            ("include_requirements", options.include_requirements),
            (
                "include_verification_results",
                options.include_verification_results,
            ),
            (
                "allow_requirement_proposals",
                options.allow_requirement_proposals,
            ),
        ] {
            if on {
                context.insert(key.into(), true.into());
            }
        }
        table.insert("task_context".into(), Value::Table(context));
    }
    let kind = if spec.react { "react" } else { "harness" };
    table.insert("kind".into(), kind.into());
    Ok(table)
}

fn offload(config: Option<&OffloadConfig>) -> Value {
    let mut table = Table::new();
    match config {
        None => {
            table.insert("enabled".into(), false.into());
        }
        Some(config) => {
            table.insert(
                "max_result_chars".into(),
                (config.max_result_chars as i64).into(),
            );
            table.insert("preview_chars".into(), (config.preview_chars as i64).into());
            table.insert("eviction_path".into(), config.eviction_path.clone().into());
            table.insert("excluded_tools".into(), strings(&config.excluded_tools));
        }
    }
    Value::Table(table)
}

fn compaction(
    config: Option<&CompactionConfig>,
    summary_model: Option<String>,
) -> Result<Value, WriteError> {
    let mut table = Table::new();
    let Some(config) = config else {
        table.insert("enabled".into(), false.into());
        return Ok(Value::Table(table));
    };
    if config.model.is_some() {
        return Err(unsupported(
            "a compaction model given in code (use the agent's summary model)",
        ));
    }
    table.insert(
        "trigger_messages".into(),
        (config.trigger_messages as i64).into(),
    );
    table.insert("trigger_tokens".into(), integer(config.trigger_tokens)?);
    if let Some(keep) = config.keep_tokens {
        table.insert("keep_tokens".into(), integer(keep)?);
    }
    table.insert("keep_messages".into(), (config.keep_messages as i64).into());
    let mut prune = Table::new();
    match &config.prune {
        None => {
            prune.insert("enabled".into(), false.into());
        }
        Some(p) => {
            prune.insert("protect_tokens".into(), integer(p.protect_tokens)?);
            prune.insert(
                "minimum_prunable_tokens".into(),
                integer(p.minimum_prunable_tokens)?,
            );
            prune.insert("preview_chars".into(), (p.preview_chars as i64).into());
            prune.insert("excluded_tools".into(), strings(&p.excluded_tools));
        }
    }
    table.insert("prune".into(), Value::Table(prune));
    if let Some(t) = &config.truncate_args {
        let mut truncate = Table::new();
        truncate.insert(
            "trigger_messages".into(),
            (t.trigger_messages as i64).into(),
        );
        truncate.insert("trigger_tokens".into(), integer(t.trigger_tokens)?);
        truncate.insert("protect_latest".into(), (t.protect_latest as i64).into());
        truncate.insert("max_arg_length".into(), (t.max_arg_length as i64).into());
        truncate.insert("truncation_text".into(), t.truncation_text.clone().into());
        table.insert("truncate_args".into(), Value::Table(truncate));
    }
    table.insert(
        "summary_prompt".into(),
        config.summary_prompt.clone().into(),
    );
    if let Some(name) = summary_model {
        table.insert("summary_model".into(), name.into());
    }
    table.insert(
        "flush_before_compact".into(),
        config.flush_before_compact.into(),
    );
    Ok(Value::Table(table))
}
