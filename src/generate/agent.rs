//! The generated agent's configuration: window and budget caps, tool pairing, offload and
//! compaction settings, and the estimator.

use std::collections::BTreeSet;

use super::{Draw, model, model_name};
use crate::scenario::format::file::{AgentSpec, EstimatorChoice, ToolSpec};
use ctxbed_harness::compaction::config::{
    CompactionConfig, DEFAULT_SUMMARY_PROMPT, MESSAGES_PLACEHOLDER, PruneConfig, TruncateArgsConfig,
};
use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::context::budget::BudgetSettings;
use ctxbed_harness::context::offload::OffloadConfig;
use ctxbed_sim::rng::SeedStream;

/// The agent: name, model, tools it may use, estimator, budget, pairing, offload and
/// compaction, and a summary model of its own now and then.
pub(super) fn agent(
    draw: &mut Draw,
    draws: &SeedStream,
    seed: u64,
    tools: &[ToolSpec],
    builtin_tools: Vec<String>,
) -> AgentSpec {
    let react = draw.percent(5);
    let mut deny_tools = BTreeSet::new();
    if !tools.is_empty() && draw.percent(10) {
        deny_tools.insert(draw.pick(tools).name.clone());
    }
    let compaction = compaction(draw);
    let summary_model = (compaction.is_some() && draw.percent(20))
        .then(|| model::summary_script(&mut Draw::new(draws, "/summary-model"), seed));
    AgentSpec {
        task_list: false,
        task_context: ctxbed_harness::task::TaskContextOptions::default(),
        name: "agent".to_string(),
        agent_id: "agent".to_string(),
        model: model_name(seed),
        sys_prompt: draw.percent(70).then(|| {
            let chars = draw.range(10, 200) as usize;
            draw.text(chars)
        }),
        max_steps: if draw.percent(10) {
            1
        } else {
            draw.range(2, 10) as u32
        },
        model_timeout: draw.percent(20).then(|| draw.millis(1_000, 120_000)),
        // Exact estimators count every message several times per preparation: keep them to a
        // fifth of the runs so the sweep stays fast.
        estimator: match draw.below(10) {
            0 => EstimatorChoice::ExactO200k,
            1 => EstimatorChoice::ExactCl100k,
            _ => EstimatorChoice::Ratio,
        },
        deny_tools,
        budget: budget(draw),
        pairing: match draw.below(100) {
            0..70 => PairingCheck::Strict,
            70..90 => PairingCheck::Repair,
            _ => PairingCheck::Unchecked,
        },
        builtin_tools,
        workspace_max_context_tokens: draw.percent(20).then(|| draw.range(0, 6_000)),
        offload: offload(draw),
        omission_order: None,
        compaction,
        summary_model,
        session_log: draw.percent(85),
        session_storage: crate::scenario::format::file::SessionStorage::Memory,
        session_tools: false,
        react,
    }
}

/// A tenth of the seeds count with `approx` (cached per message), drawn from its own stream
/// so the rest of the agent is as before.
pub(super) fn approximate_estimator(draw: &mut Draw, agent: &mut AgentSpec) {
    if draw.percent(10) {
        agent.estimator = EstimatorChoice::Approximate;
    }
}

/// Budget settings: an input cap, an output reserve, a safety margin and a requested output
/// maximum, each now and then.
fn budget(draw: &mut Draw) -> BudgetSettings {
    let mut optional =
        |chance: u64, low: u64, high: u64| draw.percent(chance).then(|| draw.range(low, high));
    BudgetSettings {
        max_input_tokens: optional(20, 200, 30_000),
        output_reserve: optional(20, 0, 3_000),
        safety_margin: optional(20, 0, 1_000),
        requested_max_output: optional(10, 0, 6_000),
    }
}

/// Offload of large tool results (off in a quarter of the seeds): thresholds, previews and
/// eviction paths from short lists, sometimes with excluded tools.
fn offload(draw: &mut Draw) -> Option<OffloadConfig> {
    if draw.percent(25) {
        return None;
    }
    let mut config = OffloadConfig {
        max_result_chars: *draw.pick(&[1, 200, 1_000, 4_000, 20_000, 80_000]) as usize,
        preview_chars: *draw.pick(&[0, 10, 100, 2_000]) as usize,
        eviction_path: (*draw.pick(&["large_tool_results", "large_tool_results", "offload/x"]))
            .to_string(),
        ..OffloadConfig::default()
    };
    if draw.percent(20) {
        config.excluded_tools = ["execute", "read_file"]
            .into_iter()
            .filter(|_| draw.percent(50))
            .map(str::to_string)
            .collect();
    }
    Some(config)
}

/// Compaction settings: triggers, the tail kept, pruning, argument truncation and prompts.
fn compaction(draw: &mut Draw) -> Option<CompactionConfig> {
    if draw.percent(30) {
        return None;
    }
    let prune = (!draw.percent(20)).then(|| PruneConfig {
        protect_tokens: draw.range(0, 2_000),
        minimum_prunable_tokens: draw.range(0, 1_000),
        preview_chars: draw.range(2, 2_000) as usize,
        ..PruneConfig::default()
    });
    let truncate_args = draw.percent(30).then(|| TruncateArgsConfig {
        trigger_messages: draw.range(0, 30) as usize,
        trigger_tokens: draw.range(0, 20_000),
        protect_latest: draw.range(0, 10) as usize,
        max_arg_length: draw.range(1, 1_000) as usize,
        ..TruncateArgsConfig::default()
    });
    let summary_prompt = if draw.percent(20) {
        format!("Summarise briefly.\n{MESSAGES_PLACEHOLDER}")
    } else {
        DEFAULT_SUMMARY_PROMPT.to_string()
    };
    Some(CompactionConfig {
        trigger_messages: draw.range(2, 60) as usize,
        trigger_tokens: if draw.percent(60) {
            0
        } else {
            draw.range(100, 20_000)
        },
        keep_tokens: match draw.below(3) {
            0 => None,
            1 => Some(0),
            _ => Some(draw.range(1, 4_000)),
        },
        keep_messages: draw.range(1, 20) as usize,
        truncate_args,
        prune,
        model: None,
        memory_model: None,
        memory_prompt: ctxbed_harness::compaction::memory::DEFAULT_MEMORY_PROMPT.to_string(),
        summary_prompt,
        flush_before_compact: draw.percent(60),
    })
}
