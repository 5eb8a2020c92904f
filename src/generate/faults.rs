//! The fault schedule around the agent (generator version 3): JSON-lines session storage with
//! process restarts (clean, or after a torn write) and failing session-log writes (which a later
//! step may start or heal), another
//! writer appending to a session while a call runs, and application actions on task state
//! before and during a call.
//!
//! Each concern draws from its own stream, and every draw that decides whether a seed gets a
//! fault comes first, so a seed without the fault draws nothing else from that stream.

use std::time::Duration;

use super::Draw;
use crate::scenario::format::file::{
    AgentSpec, ConcurrentAppend, Restart, SessionStorage, SourceSpec, StepSpec, TaskAction,
    TaskSpec,
};
use ctxbed_harness::context::source::SourceOptions;
use ctxbed_harness::message::Role;
use ctxbed_harness::task::TaskScope;
use ctxbed_harness::task::requirements::{Decision, RequirementKind};

/// The prefix the JSON-lines session log writes under (`sessions/<agent>/<user>/...`).
pub(super) const SESSIONS_PREFIX: &str = "sessions/";

/// JSON-lines session storage in about a third of the seeds (those with a session log); among
/// them a quarter restart the agent before a later step (half of those after a torn write) and
/// a sixth fail the session-log writes (from the start or from a later step, sometimes healing
/// before a step after that). A single-step scenario gets a second step in the same session to
/// restart before.
pub(super) fn sessions(
    draw: &mut Draw,
    agent: &mut AgentSpec,
    steps: &mut Vec<StepSpec>,
    fail_writes_under: &mut Vec<String>,
) {
    if !agent.session_log || !draw.percent(40) {
        return;
    }
    agent.session_storage = SessionStorage::Jsonl;
    if draw.percent(25) {
        if steps.len() == 1 {
            let first = &steps[0];
            let chars = draw.range(1, 120) as usize;
            steps.push(StepSpec::new(
                first.user.clone(),
                first.session.clone(),
                draw.text(chars),
            ));
        }
        let index = draw.later_step(steps.len());
        steps[index].restart = Some(if draw.percent(50) {
            Restart::Torn
        } else {
            Restart::Clean
        });
    }
    if draw.percent(17) && !fail_writes_under.iter().any(|p| p == SESSIONS_PREFIX) {
        session_write_failure(draw, steps, fail_writes_under);
    }
}

/// Session-log writes fail from the start, or from a later step on; sometimes the storage heals
/// before a step after that. The other failing prefixes stay as they were throughout.
fn session_write_failure(
    draw: &mut Draw,
    steps: &mut [StepSpec],
    fail_writes_under: &mut Vec<String>,
) {
    let others = fail_writes_under.clone();
    let mut failing = others.clone();
    failing.push(SESSIONS_PREFIX.to_string());
    let last = steps.len() - 1;
    let from = if last > 0 && draw.percent(40) {
        let from = draw.range(1, last as u64) as usize;
        steps[from].fail_writes_under = Some(failing);
        from
    } else {
        *fail_writes_under = failing;
        0
    };
    if from < last && draw.percent(50) {
        let heal = draw.range(from as u64 + 1, last as u64) as usize;
        steps[heal].fail_writes_under = Some(others);
    }
}

/// How long a step's first preparation spends loading sources, at most: each source's latency
/// up to its timeout, one after the other. A concurrent change inside this window lands while a
/// request is prepared, which is what the conflict checks are for.
pub(super) fn preparation_window(sources: &[SourceSpec]) -> Duration {
    let default = SourceOptions::default().timeout;
    sources
        .iter()
        .map(|source| source.latency.min(source.timeout.unwrap_or(default)))
        .sum()
}

/// A time after the step starts for another writer: inside the first preparation's window
/// (when it has one) more often than not, otherwise before, during or after the model calls.
fn concurrent_time(draw: &mut Draw, window: Duration) -> Duration {
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    if window_ms > 1 && draw.percent(60) {
        return draw.millis(1, window_ms - 1);
    }
    match draw.below(100) {
        0..15 => Duration::ZERO,
        15..80 => draw.millis(1, 3_000),
        _ => draw.millis(3_000, 12_000),
    }
}

/// In an eighth of the seeds another writer appends a user (or assistant) message to one step's
/// session, mostly while the step's first request is prepared (`history_conflict`), otherwise
/// before, during or after its model calls.
pub(super) fn concurrent_append(draw: &mut Draw, steps: &mut [StepSpec], window: Duration) {
    if steps.is_empty() || !draw.percent(12) {
        return;
    }
    let index = draw.below(steps.len() as u64) as usize;
    let at = concurrent_time(draw, window);
    let role = if draw.percent(70) {
        Role::User
    } else {
        Role::Assistant
    };
    let chars = draw.range(1, 160) as usize;
    steps[index].concurrent_append = Some(ConcurrentAppend {
        at,
        role,
        text: draw.text(chars),
    });
}

/// Action kinds one step takes at most, before the call and during it.
const ACTIONS_PER_STEP_MAX: u64 = 3;

/// In a third of the seeds with task state the application changes it: actions before some
/// steps' calls and actions while they run, mostly inside the first preparation's window (a
/// preparation must refuse to commit over them: `state_conflict`). Mostly with a task scope (verification needs one); sometimes the
/// projection shows requirements or verification reports.
pub(super) fn task_actions(
    draw: &mut Draw,
    agent: &mut AgentSpec,
    steps: &mut [StepSpec],
    window: Duration,
) -> Option<TaskSpec> {
    if !agent.task_list || steps.is_empty() || !draw.percent(33) {
        return None;
    }
    agent.task_context.include_requirements = draw.percent(50);
    agent.task_context.include_verification_results = draw.percent(50);
    let task = draw.percent(75).then(|| TaskSpec {
        scope: Some(TaskScope::new(
            "export-fix",
            "Restore the documented column order of the export.",
        )),
        plan_mode: None,
        plan_path: None,
    });
    let mut any = false;
    for step in steps.iter_mut() {
        if draw.percent(40) {
            for _ in 0..draw.range(1, ACTIONS_PER_STEP_MAX) {
                step.actions.push(action(draw));
            }
        }
        if draw.percent(40) {
            for _ in 0..draw.range(1, ACTIONS_PER_STEP_MAX) {
                let at = concurrent_time(draw, window);
                step.concurrent_actions.push((at, action(draw)));
            }
        }
        any |= !step.actions.is_empty() || !step.concurrent_actions.is_empty();
    }
    if !any {
        // The seed was drawn for actions: give the last step one taken while it runs.
        let at = concurrent_time(draw, window);
        let action = action(draw);
        steps[steps.len() - 1].concurrent_actions.push((at, action));
    }
    task
}

/// One application action on task state; now and then one the state refuses (a blank text, an
/// unknown requirement, a stale expected revision).
fn action(draw: &mut Draw) -> TaskAction {
    match draw.below(100) {
        0..30 => TaskAction::Propose {
            kind: *draw.pick(&RequirementKind::ALL),
            text: if draw.percent(5) {
                " ".to_string()
            } else {
                (*draw.pick(&[
                    "Columns follow the documented order.",
                    "The export keeps the amount column.",
                    "Replies stay short.",
                    "导出 保留 列顺序",
                ]))
                .to_string()
            },
            source: (*draw.pick(&["user", "alice", "ops"])).to_string(),
        },
        30..50 => TaskAction::Decide {
            requirement: format!("req-{}", draw.range(1, 3)),
            decision: if draw.percent(70) {
                Decision::Confirm
            } else {
                Decision::Reject
            },
            authority: "lead".to_string(),
            expected_revision: draw.range(0, 8),
        },
        50..75 => TaskAction::SubjectVersion(
            (*draw.pick(&["commit-a1", "commit-b2", "commit-c3"])).into(),
        ),
        75..83 => TaskAction::InvalidateSubject,
        _ => TaskAction::Verify {
            check: (*draw.pick(&["export-tests", "lint"])).to_string(),
            passed: draw.percent(70),
            summary: (*draw.pick(&["14 passed", "1 failed", "clean"])).to_string(),
        },
    }
}

/// Restarts beyond the JSON-lines ones `sessions` draws (generator version 4): a tenth of the
/// seeds with a session log and two steps or more restart the agent before one more later step.
/// With memory storage the new agent reads the same in-process log back (a clean restart:
/// nothing is torn); with JSON lines this is a second restart, clean or after a torn write.
pub(super) fn more_restarts(draw: &mut Draw, agent: &AgentSpec, steps: &mut [StepSpec]) {
    if !agent.session_log || steps.len() < 2 || !draw.percent(10) {
        return;
    }
    let index = draw.later_step(steps.len());
    if steps[index].restart.is_some() {
        return;
    }
    let jsonl = agent.session_storage == SessionStorage::Jsonl;
    steps[index].restart = Some(if jsonl && draw.percent(50) {
        Restart::Torn
    } else {
        Restart::Clean
    });
}

/// Damage inside a session log (generator version 5): an eighth of the seeds with JSON-lines
/// session storage and two steps or more restart the agent before a later step after a line in
/// the middle of every session file was overwritten (replacing any restart drawn there). Every
/// later call of a damaged session then fails to restore it, and must leave its log as it is.
pub(super) fn corrupt_restart(draw: &mut Draw, agent: &AgentSpec, steps: &mut [StepSpec]) {
    if !agent.session_log
        || agent.session_storage != SessionStorage::Jsonl
        || steps.len() < 2
        || !draw.percent(12)
    {
        return;
    }
    let index = draw.later_step(steps.len());
    steps[index].restart = Some(Restart::Corrupt);
}
