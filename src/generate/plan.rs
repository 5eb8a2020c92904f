//! Plan mode (generator version 4): the application's plan mode and plan file set before the
//! first step, switched before later steps, and switched by a scripted tool while the agent's
//! own call runs (an application action from inside the tool loop).
//!
//! Draws from its own stream, and the draw that decides whether a seed gets plan mode comes
//! first, so a seed without it draws nothing else.

use super::Draw;
use crate::scenario::format::file::{AgentSpec, StepSpec, TaskSpec, ToolSpec};
use ctxbed_harness::task::plan::PlanMode;

/// Plan files the generator names: a plain one, one in a directory, and one whose directory
/// the workspace write faults may cover.
const PLAN_PATHS: [&str; 3] = ["PLAN.md", "plans/export.md", "notes/plan.md"];

/// In an eighth of the seeds (not the ReAct loop, which has no task state): an initial mode or
/// plan file (or both), a switch before some later steps, and in some seeds a scripted tool
/// that switches the mode on every call.
pub(super) fn plan_mode(
    draw: &mut Draw,
    agent: &AgentSpec,
    task: &mut Option<TaskSpec>,
    steps: &mut [StepSpec],
    tools: &mut [ToolSpec],
) {
    if agent.react || !draw.percent(12) {
        return;
    }
    let task = task.get_or_insert(TaskSpec {
        scope: None,
        plan_mode: None,
        plan_path: None,
    });
    if draw.percent(70) {
        task.plan_mode = Some(mode(draw));
    }
    if draw.percent(50) {
        task.plan_path = Some((*draw.pick(&PLAN_PATHS)).to_string());
    }
    for step in steps.iter_mut().skip(1) {
        if draw.percent(35) {
            step.plan_mode = Some(mode(draw));
        }
    }
    if !tools.is_empty() && draw.percent(40) {
        let index = draw.below(tools.len() as u64) as usize;
        tools[index].sets_plan_mode = Some(mode(draw));
    }
}

fn mode(draw: &mut Draw) -> PlanMode {
    if draw.percent(50) {
        PlanMode::Plan
    } else {
        PlanMode::Build
    }
}
