//! The simulated application around the agent: another writer appending to a session, opening
//! a session before touching its task state, and the application's task actions.

use std::sync::Arc;
use std::time::Duration;

use ctxbed_harness::agent::HarnessAgent;
use ctxbed_harness::clock::Clock;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::task::SharedTaskState;
use ctxbed_harness::task::requirements::RequirementKind;

use crate::limits;
use crate::scenario::format::file::{ConcurrentAppend, TaskAction};

/// Another writer appends to the step's session at `append.at` after the step starts; the
/// task returns the trace line saying what it did and when.
pub(super) fn spawn_writer(
    agent: &HarnessAgent,
    runtime: &RuntimeContext,
    clock: &Arc<dyn Clock>,
    append: ConcurrentAppend,
) -> tokio::task::JoinHandle<(Duration, String)> {
    let agent = agent.clone();
    let runtime = runtime.clone();
    let clock = clock.clone();
    tokio::spawn(async move {
        tokio::time::sleep(append.at).await;
        let appended = agent
            .append_message(&runtime, append.role, &append.text)
            .await;
        let text = ctxbed_harness::format::quoted(&append.text, limits::TRACE_TEXT_CHARS_MAX);
        let line = match appended {
            Ok(id) => format!("concurrent_append {id} {} {text}", append.role.as_str()),
            Err(error) => format!(
                "concurrent_append {} {text} not durable: {}",
                append.role.as_str(),
                error.kind()
            ),
        };
        (clock.elapsed(), line)
    })
}

/// A concurrent task action: at `at` after the step starts the application opens the session
/// and takes `action`; the task returns the trace lines saying what it did and when.
pub(super) fn spawn_actor(
    agent: &HarnessAgent,
    runtime: &RuntimeContext,
    clock: &Arc<dyn Clock>,
    at: Duration,
    action: TaskAction,
) -> tokio::task::JoinHandle<Vec<(Duration, String)>> {
    let agent = agent.clone();
    let clock = clock.clone();
    let runtime = runtime.clone();
    tokio::spawn(async move {
        tokio::time::sleep(at).await;
        let mut lines = Vec::new();
        if let Some(line) = open_for_app(&agent, &runtime, false).await {
            lines.push((clock.elapsed(), line));
        }
        let line = apply_action(&agent, &runtime, &action).await;
        lines.push((clock.elapsed(), line));
        lines
    })
}

/// What the simulated application does before it touches a session's task state: it opens
/// the session, as the agent asks ([`HarnessAgent::open_session`]). Restore never overwrites
/// task state that was changed already, so a change made first (by a step's action, or by a
/// concurrent writer that comes before the agent's first call) would replace the restored Todo
/// list and requirements instead of building on them. The line says what opening did; when
/// the session was open already it is shown only if `always` (a step that restarted).
pub(super) async fn open_for_app(
    agent: &HarnessAgent,
    runtime: &RuntimeContext,
    always: bool,
) -> Option<String> {
    match agent.open_session(runtime).await {
        Ok(Some(records)) => Some(format!("app: open_session -> restored {records} record(s)")),
        Ok(None) => always.then(|| "app: open_session -> nothing to restore".to_string()),
        Err(error) => Some(format!("app: open_session -> {}: {error}", error.kind())),
    }
}

/// Takes one application action on the agent's task state; the trace line says its outcome.
pub(super) async fn apply_action(
    agent: &HarnessAgent,
    runtime: &RuntimeContext,
    action: &TaskAction,
) -> String {
    let state = agent.task_state(runtime);
    match action {
        TaskAction::Propose { kind, text, source } => propose(&state, *kind, text, source),
        TaskAction::Decide {
            requirement,
            decision,
            authority,
            expected_revision,
        } => {
            let result =
                state.with(|s| s.decide(requirement, *decision, authority, *expected_revision));
            format!(
                "app: decide {requirement} {} by {authority} expecting revision {expected_revision} -> {}",
                decision.as_str(),
                outcome_text(result.map(|d| d.revision))
            )
        }
        TaskAction::SubjectVersion(version) => {
            let result = state.with(|s| s.set_subject_version(version));
            format!(
                "app: set_subject_version {version} -> {}",
                outcome_text(result)
            )
        }
        TaskAction::InvalidateSubject => {
            let revision = state.with(|s| s.invalidate_subject());
            format!("app: invalidate_subject -> {}", outcome_text(Ok(revision)))
        }
        TaskAction::Verify {
            check,
            passed,
            summary,
        } => {
            let service = ctxbed_harness::task::verification::VerificationService::new(state);
            let result = ctxbed_harness::task::verification::CheckResult {
                passed: *passed,
                summary: summary.clone(),
            };
            let stored = service.verify(check, async move { result }).await;
            format!(
                "app: verify {check} ({}) -> {}",
                if *passed { "passes" } else { "fails" },
                outcome_text(stored.map(|report| report.revision))
            )
        }
    }
}

/// How a task action came out: the revision it made, or the error.
fn outcome_text(result: Result<u64, ctxbed_harness::task::TaskError>) -> String {
    match result {
        Ok(revision) => format!("ok, revision {revision}"),
        Err(error) => format!("{}: {error}", error.kind()),
    }
}

/// Proposes a requirement; the line names it, and whether it duplicates one already there.
fn propose(state: &SharedTaskState, kind: RequirementKind, text: &str, source: &str) -> String {
    let proposal = ctxbed_harness::task::requirements::Proposal::new(
        kind,
        text.to_string(),
        source.to_string(),
    );
    let result = state.with(|s| s.propose(proposal));
    let detail = match &result {
        Ok(proposed) => format!(
            " ({}{})",
            proposed.id,
            if proposed.created {
                ""
            } else {
                ", a duplicate"
            }
        ),
        Err(_) => String::new(),
    };
    format!(
        "app: propose {} requirement from {source} -> {}{detail}",
        kind.as_str(),
        outcome_text(result.map(|p| p.revision))
    )
}
