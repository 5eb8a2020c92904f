//! The `[agent]` table, with its `offload` and `compaction` sub-tables, every setting written
//! out so that the loader's defaults never decide.

use ctxbed_harness::compaction::config::CompactionConfig;
use ctxbed_harness::context::offload::OffloadConfig;
use ctxbed_harness::task::TaskContextOptions;

use super::value::{at, count, millis, name};
use super::{WriteError, unsupported};
use crate::scenario::format::choice::Choice;
use crate::scenario::format::file::raw::{
    RawAgent, RawCompaction, RawOffload, RawPrune, RawTaskContext, RawTruncate,
};
use crate::scenario::format::file::{Scenario, SessionStorage};

pub(super) fn agent(scenario: &Scenario) -> Result<RawAgent, WriteError> {
    let spec = &scenario.agent;
    if spec.model != scenario.mock.info.name {
        return Err(unsupported(format!(
            "agent model `{}` with a mock script named `{}`",
            spec.model, scenario.mock.info.name
        )));
    }
    let optional = |value: Option<u64>| value.map(count).transpose();
    let estimator = spec.estimator.name();
    let pairs = spec.pairing.name();
    let summary_model = spec.summary_model.as_ref().map(|m| m.info.name.clone());
    let options = spec.task_context;
    Ok(RawAgent {
        name: Some(spec.name.clone()),
        agent_id: Some(spec.agent_id.clone()),
        model: at(spec.model.clone()),
        sys_prompt: spec.sys_prompt.clone(),
        max_steps: Some(at(i64::from(spec.max_steps))),
        model_timeout_ms: spec.model_timeout.map(millis).transpose()?,
        estimator: Some(name(estimator)),
        deny_tools: spec.deny_tools.iter().cloned().map(at).collect(),
        max_input_tokens: optional(spec.budget.max_input_tokens)?,
        output_reserve: optional(spec.budget.output_reserve)?,
        safety_margin: optional(spec.budget.safety_margin)?,
        tool_pairs: Some(name(pairs)),
        builtin_tools: spec.builtin_tools.iter().cloned().map(at).collect(),
        workspace_max_context_tokens: optional(spec.workspace_max_context_tokens)?,
        offload: Some(at(offload(spec.offload.as_ref())?)),
        omission_order: spec.omission_order.clone(),
        max_output_tokens: optional(spec.budget.requested_max_output)?,
        compaction: Some(at(compaction(spec.compaction.as_ref(), summary_model)?)),
        session_log: Some(spec.session_log),
        session_storage: (spec.session_storage != SessionStorage::default())
            .then(|| name(spec.session_storage.name())),
        session_tools: spec.session_tools.then(|| at(true)),
        kind: Some(name(if spec.react { "react" } else { "harness" })),
        task_list: spec.task_list.then_some(true),
        task_context: (options != TaskContextOptions::default()).then_some(RawTaskContext {
            include_requirements: options.include_requirements,
            include_verification_results: options.include_verification_results,
            allow_requirement_proposals: options.allow_requirement_proposals,
        }),
    })
}

/// Every offload setting, or `enabled = false`.
fn offload(config: Option<&OffloadConfig>) -> Result<RawOffload, WriteError> {
    let Some(config) = config else {
        return Ok(RawOffload {
            enabled: Some(false),
            ..RawOffload::default()
        });
    };
    Ok(RawOffload {
        enabled: None,
        max_result_chars: Some(count(config.max_result_chars as u64)?),
        preview_chars: Some(count(config.preview_chars as u64)?),
        eviction_path: Some(at(config.eviction_path.clone())),
        excluded_tools: Some(config.excluded_tools.iter().cloned().collect()),
    })
}

/// Every compaction setting, or `enabled = false`; a summary model given in code is refused.
fn compaction(
    config: Option<&CompactionConfig>,
    summary_model: Option<String>,
) -> Result<RawCompaction, WriteError> {
    let Some(config) = config else {
        return Ok(RawCompaction {
            enabled: Some(false),
            ..RawCompaction::default()
        });
    };
    if config.model.is_some() {
        return Err(unsupported(
            "a compaction model given in code (use the agent's summary model)",
        ));
    }
    let prune = match &config.prune {
        None => RawPrune {
            enabled: Some(false),
            ..RawPrune::default()
        },
        Some(p) => RawPrune {
            enabled: None,
            protect_tokens: Some(count(p.protect_tokens)?),
            minimum_prunable_tokens: Some(count(p.minimum_prunable_tokens)?),
            preview_chars: Some(count(p.preview_chars as u64)?),
            excluded_tools: Some(p.excluded_tools.iter().cloned().collect()),
        },
    };
    let truncate_args = match &config.truncate_args {
        None => None,
        Some(t) => Some(RawTruncate {
            trigger_messages: Some(count(t.trigger_messages as u64)?),
            trigger_tokens: Some(count(t.trigger_tokens)?),
            protect_latest: Some(count(t.protect_latest as u64)?),
            max_arg_length: Some(count(t.max_arg_length as u64)?),
            truncation_text: Some(t.truncation_text.clone()),
        }),
    };
    Ok(RawCompaction {
        enabled: None,
        trigger_messages: Some(count(config.trigger_messages as u64)?),
        trigger_tokens: Some(count(config.trigger_tokens)?),
        keep_tokens: config.keep_tokens.map(count).transpose()?,
        keep_messages: Some(count(config.keep_messages as u64)?),
        prune: Some(prune),
        truncate_args,
        summary_prompt: Some(at(config.summary_prompt.clone())),
        summary_model: summary_model.map(at),
        flush_before_compact: Some(config.flush_before_compact),
        memory_prompt: (config.memory_prompt
            != ctxbed_harness::compaction::memory::DEFAULT_MEMORY_PROMPT)
            .then(|| at(config.memory_prompt.clone())),
    })
}
