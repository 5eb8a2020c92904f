//! Shrinking a failing scenario: every one-step reduction of it (steps, history, sources,
//! tools, turns, faults, materials, settings, shorter texts), tried greedily, biggest cuts
//! first, while the failure still shows.

use std::collections::BTreeSet;

use super::check_scenario;
use crate::invariants::ViolationKind;
use crate::scenario::format::file::{EstimatorChoice, Scenario, SessionStorage};
use crate::scenario::format::network::NetworkSpec;
use ctxbed_harness::message::ContentPart;
use ctxbed_harness::task::TaskContextOptions;
use ctxbed_sim::mock::TurnAction;

/// Greedy shrinking: tries each one-step reduction of the scenario, keeps the first that still
/// shows a violation of one of `kinds`, and starts over; stops when nothing can be dropped or
/// after `checks_max` scenario checks. Returns the smallest scenario found and the checks spent.
pub fn shrink(
    scenario: Scenario,
    kinds: &BTreeSet<ViolationKind>,
    checks_max: u32,
) -> (Scenario, u32) {
    shrink_while(scenario, checks_max, |candidate| {
        check_scenario(candidate)
            .iter()
            .any(|violation| kinds.contains(&violation.kind))
    })
}

/// [`shrink`] with any predicate: keeps each reduction for which `still_fails` holds.
pub fn shrink_while(
    mut scenario: Scenario,
    checks_max: u32,
    mut still_fails: impl FnMut(&Scenario) -> bool,
) -> (Scenario, u32) {
    let mut checks = 0u32;
    'search: loop {
        for candidate in reductions(&scenario) {
            if checks >= checks_max {
                break 'search;
            }
            checks += 1;
            if still_fails(&candidate) {
                scenario = candidate;
                continue 'search;
            }
        }
        break;
    }
    (scenario, checks)
}

/// Every scenario one step smaller than `scenario`, biggest cuts first.
fn reductions(scenario: &Scenario) -> Vec<Scenario> {
    let mut out = Vec::new();
    let mut with = |change: &dyn Fn(&mut Scenario)| {
        let mut candidate = scenario.clone();
        change(&mut candidate);
        out.push(candidate);
    };
    for index in (0..scenario.steps.len())
        .rev()
        .filter(|_| scenario.steps.len() > 1)
    {
        with(&|s| {
            s.steps.remove(index);
            if index == 0 {
                // A restart before the first call restarts nothing the generator would: it
                // draws restarts only before later steps, and the shrunk scenario stays one
                // it could have drawn.
                s.steps[0].restart = None;
            }
        });
    }
    for index in 0..scenario.history.len() {
        with(&|s| {
            s.history.remove(index);
        });
    }
    for index in 0..scenario.sources.len() {
        with(&|s| {
            s.sources.remove(index);
        });
    }
    for index in 0..scenario.tools.len() {
        with(&|s| {
            let tool = s.tools.remove(index);
            s.agent.deny_tools.remove(&tool.name);
        });
    }
    // The last turn answers every remaining request; it stays.
    for index in 0..scenario.mock.turns.len().saturating_sub(1) {
        with(&|s| {
            s.mock.turns.remove(index);
        });
    }
    simplifications(scenario, &mut with);
    shortenings(scenario, &mut with);
    for (entry, history) in scenario.history.iter().enumerate() {
        for index in 0..history.messages.len() {
            with(&|s| {
                let messages = &mut s.history[entry].messages;
                messages.remove(index);
                for (position, message) in messages.iter_mut().enumerate() {
                    message.id = format!("h{:04}", position + 1);
                }
            });
        }
    }
    out
}

/// Dropping faults, materials and settings.
fn simplifications(scenario: &Scenario, with: &mut impl FnMut(&dyn Fn(&mut Scenario))) {
    source_and_write_faults(scenario, with);
    step_faults(scenario, with);
    network_faults(scenario, with);
    session_and_task_settings(scenario, with);
    materials_and_tools(scenario, with);
    agent_settings(scenario, with);
}

/// Dropping each source's failure and each of its blocks, then the failing write prefixes (all
/// at once, then each).
fn source_and_write_faults(scenario: &Scenario, with: &mut impl FnMut(&dyn Fn(&mut Scenario))) {
    for index in 0..scenario.sources.len() {
        if scenario.sources[index].failure.is_some() {
            with(&|s| s.sources[index].failure = None);
        }
        for block in 0..scenario.sources[index].blocks.len() {
            with(&|s| {
                s.sources[index].blocks.remove(block);
            });
        }
    }
    if !scenario.fail_writes_under.is_empty() {
        with(&|s| s.fail_writes_under.clear());
    }
    if scenario.fail_writes_under.len() > 1 {
        for index in 0..scenario.fail_writes_under.len() {
            with(&|s| {
                s.fail_writes_under.remove(index);
            });
        }
    }
}

/// Back to in-memory session storage, no task state, the default task context.
fn session_and_task_settings(scenario: &Scenario, with: &mut impl FnMut(&dyn Fn(&mut Scenario))) {
    if scenario.agent.session_storage != SessionStorage::Memory {
        with(&|s| s.agent.session_storage = SessionStorage::Memory);
    }
    if scenario.task.is_some() {
        with(&|s| s.task = None);
    }
    if scenario.agent.task_context != TaskContextOptions::default() {
        with(&|s| s.agent.task_context = TaskContextOptions::default());
    }
}

/// Dropping each workspace file, instruction and built-in tool, and each scripted tool's plan
/// mode switch.
fn materials_and_tools(scenario: &Scenario, with: &mut impl FnMut(&dyn Fn(&mut Scenario))) {
    for name in scenario.workspace_files.keys() {
        with(&|s| {
            s.workspace_files.remove(name);
        });
    }
    for index in 0..scenario.instructions.len() {
        with(&|s| {
            s.instructions.remove(index);
        });
    }
    for index in 0..scenario.agent.builtin_tools.len() {
        with(&|s| {
            let name = s.agent.builtin_tools.remove(index);
            s.agent.deny_tools.remove(&name);
        });
    }
    for (index, tool) in scenario.tools.iter().enumerate() {
        if tool.sets_plan_mode.is_some() {
            with(&|s| s.tools[index].sets_plan_mode = None);
        }
    }
}

/// Turning agent features off: the session tools, an exact or approximate estimator, the
/// summary model, compaction, offload and the System prompt.
fn agent_settings(scenario: &Scenario, with: &mut impl FnMut(&dyn Fn(&mut Scenario))) {
    let agent = &scenario.agent;
    if agent.session_tools {
        with(&|s| s.agent.session_tools = false);
    }
    if agent.estimator != EstimatorChoice::Ratio {
        with(&|s| s.agent.estimator = EstimatorChoice::Ratio);
    }
    if agent.summary_model.is_some() {
        with(&|s| s.agent.summary_model = None);
    }
    if agent.compaction.is_some() {
        with(&|s| {
            s.agent.compaction = None;
            s.agent.summary_model = None;
        });
    }
    if agent.offload.is_some() {
        with(&|s| s.agent.offload = None);
    }
    if agent.sys_prompt.is_some() {
        with(&|s| s.agent.sys_prompt = None);
    }
}

/// Dropping what happens around a step's call: the restart before it, the change of failing
/// writes, another writer's append, each task action before it and each one during it, the
/// plan mode it sets, the workspace files written before it.
fn step_faults(scenario: &Scenario, with: &mut impl FnMut(&dyn Fn(&mut Scenario))) {
    for (index, step) in scenario.steps.iter().enumerate() {
        if step.restart.is_some() {
            with(&|s| s.steps[index].restart = None);
        }
        if step.fail_writes_under.is_some() {
            with(&|s| s.steps[index].fail_writes_under = None);
        }
        if step.concurrent_append.is_some() {
            with(&|s| s.steps[index].concurrent_append = None);
        }
        for action in 0..step.actions.len() {
            with(&|s| {
                s.steps[index].actions.remove(action);
            });
        }
        for action in 0..step.concurrent_actions.len() {
            with(&|s| {
                s.steps[index].concurrent_actions.remove(action);
            });
        }
        if step.plan_mode.is_some() {
            with(&|s| s.steps[index].plan_mode = None);
        }
        if !step.workspace_writes.is_empty() {
            with(&|s| s.steps[index].workspace_writes.clear());
        }
    }
}

/// Dropping the simulated network, or failing that each of its faults: a reset, a cut stream,
/// a partition.
fn network_faults(scenario: &Scenario, with: &mut impl FnMut(&dyn Fn(&mut Scenario))) {
    let Some(network) = &scenario.network else {
        return;
    };
    with(&|s| s.network = None);
    drop_each(network.faults.reset_requests.len(), with, |n| {
        &mut n.faults.reset_requests
    });
    drop_each(network.faults.cut_stream_requests.len(), with, |n| {
        &mut n.faults.cut_stream_requests
    });
    drop_each(network.partitions.len(), with, |n| &mut n.partitions);
}

/// One candidate per entry of a list in the network spec, without that entry.
fn drop_each<T>(
    count: usize,
    with: &mut impl FnMut(&dyn Fn(&mut Scenario)),
    list: fn(&mut NetworkSpec) -> &mut Vec<T>,
) {
    for index in 0..count {
        with(&|s| {
            if let Some(network) = &mut s.network {
                list(network).remove(index);
            }
        });
    }
}

/// Characters a shortened text keeps.
const SHORT_TEXT_CHARS: usize = 16;

fn shorten(text: &mut String) {
    if let Some((cut, _)) = text.char_indices().nth(SHORT_TEXT_CHARS) {
        text.truncate(cut);
    }
}

/// Smaller texts and quieter turns: what is left after dropping still reads long.
fn shortenings(scenario: &Scenario, with: &mut impl FnMut(&dyn Fn(&mut Scenario))) {
    for (index, turn) in scenario.mock.turns.iter().enumerate() {
        if let TurnAction::Reply {
            thinking,
            text,
            tool_calls,
        } = &turn.action
        {
            let long = |t: &Option<String>| {
                t.as_ref()
                    .is_some_and(|t| t.chars().count() > SHORT_TEXT_CHARS)
            };
            let wordy_arguments = tool_calls.iter().any(|call| {
                call.arguments
                    .as_object()
                    .is_some_and(|map| !map.is_empty())
            });
            if long(thinking) || long(text) || wordy_arguments {
                with(&|s| {
                    if let TurnAction::Reply {
                        thinking,
                        text,
                        tool_calls,
                    } = &mut s.mock.turns[index].action
                    {
                        thinking.iter_mut().for_each(shorten);
                        text.iter_mut().for_each(shorten);
                        for call in tool_calls {
                            call.arguments = serde_json::json!({});
                        }
                    }
                });
            }
        }
        if !turn.latency.is_zero() {
            with(&|s| s.mock.turns[index].latency = std::time::Duration::ZERO);
        }
    }
    for (index, step) in scenario.steps.iter().enumerate() {
        if step.input.chars().count() > SHORT_TEXT_CHARS {
            with(&|s| shorten(&mut s.steps[index].input));
        }
    }
    for (entry, history) in scenario.history.iter().enumerate() {
        let long = history.messages.iter().any(|m| {
            m.parts.iter().any(|part| match part {
                ContentPart::Text { text } | ContentPart::Thinking { text, .. } => {
                    text.chars().count() > SHORT_TEXT_CHARS
                }
                _ => false,
            })
        });
        if long {
            with(&|s| {
                for message in &mut s.history[entry].messages {
                    for part in &mut message.parts {
                        if let ContentPart::Text { text } | ContentPart::Thinking { text, .. } =
                            part
                        {
                            shorten(text);
                        }
                    }
                }
            });
        }
    }
}
