//! Task state: the Todo list, task scope, requirements, verification evidence and plan mode,
//! and their projections into each reasoning request.
//!
//! [`TaskContextState`] owns every piece of task state behind **one revision counter**: each
//! change bumps it, so a caller that read revision N can tell whether anything moved before it
//! writes ([`TaskContextState::expect_revision`], and the `expected_revision` of
//! [`TaskContextState::decide`]). The pieces, and who maintains them:
//!
//! - Todo progress ([`mod@todo`]): the model, through the `todo_write` tool ([`todo::TodoWrite`]),
//!   or the application through [`TaskContextState::write_todos`]. A write replaces the whole
//!   list; a failed write changes nothing.
//! - Task identity and objective: the application, through [`TaskContextState::begin_task`].
//! - Requirements ([`requirements`]): candidates are proposed (by the application, or by the
//!   model through `propose_requirement` when [`TaskContextOptions::allow_requirement_proposals`]
//!   is on); only a trusted caller confirms or rejects them, with `decide`.
//! - The checked subject's version and verification reports ([`verification`]): the
//!   application sets the version, and [`verification::VerificationService`] stores bounded
//!   reports bound to (task, contract version, subject version).
//! - Plan mode ([`plan`]): PLAN (read-only) or BUILD, and the plan file's path.
//!
//! [`projection::project`] turns a snapshot of this state, the [`TaskContextOptions`] and the
//! working conversation into what one request shows: a `TASK_STATE` message when the current
//! Todo receipt is not visible (or requirements and evidence are enabled), a `RUNTIME_STATE`
//! message for plan mode, and a model view in which obsolete Todo receipts are one-line notes.
//!
//! **Invariants:** nothing here parses user messages, `PLAN.md` or Markdown checkboxes, or
//! watches files; nothing declares the task complete — Todo completion is progress, a confirmed
//! requirement is authorisation, a passed check is bounded evidence, and the application decides.
//! Projections never change durable history: they return new messages marked as transient
//! material.
//!
//! ```
//! use ctxbed_harness::message::Message;
//! use ctxbed_harness::model::Purpose;
//! use ctxbed_harness::task::todo::{TodoItem, TodoPriority, TodoStatus};
//! use ctxbed_harness::task::projection::project;
//! use ctxbed_harness::task::{TaskContextOptions, TaskContextState, TaskScope};
//!
//! let mut state = TaskContextState::new();
//! state.begin_task(TaskScope::new("export-fix", "Fix the CSV export")).unwrap();
//! let revision = state
//!     .write_todos(vec![TodoItem::new("fix", "Fix quoting", TodoStatus::InProgress, TodoPriority::High)])
//!     .unwrap();
//! assert_eq!(revision, 2);
//!
//! // No receipt in the conversation (say, after compaction): TASK_STATE carries the list.
//! let conversation = vec![Message::user("m1", "Fix the export.")];
//! let projection = project(&state, &TaskContextOptions::default(), &conversation, Purpose::Reasoning);
//! assert_eq!(projection.transient.len(), 1);
//! assert!(projection.transient[0].text().contains("Todo list (revision 2):"));
//! assert_eq!(projection.view, conversation);
//! ```

pub mod plan;
pub mod projection;
pub mod requirements;
pub mod todo;
pub mod verification;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::limits::{TASK_NAME_CHARS_MAX, TASK_OBJECTIVE_CHARS_MAX};
use crate::model::Purpose;
use crate::runtime::RuntimeContext;
use crate::tools::Tool;

use plan::PlanState;
use projection::Projection;
use requirements::Requirement;
use todo::{TodoError, TodoItem};
use verification::VerificationReport;

/// The identity and objective of the task the application is working on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TaskScope {
    /// A stable id chosen by the application (at most [`TASK_NAME_CHARS_MAX`] characters).
    pub task_id: String,
    /// What the task is for, in a sentence or a paragraph.
    pub objective: String,
}

impl TaskScope {
    /// A scope with this id and objective.
    pub fn new(task_id: impl Into<String>, objective: impl Into<String>) -> Self {
        TaskScope {
            task_id: task_id.into(),
            objective: objective.into(),
        }
    }
}

/// Which optional task information the model sees. All off by default; the Todo list needs no
/// option. A new `task_context(...)` replaces the whole value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskContextOptions {
    /// Project requirements (and the task scope).
    pub include_requirements: bool,
    /// Project verification reports with their freshness (and the task scope).
    pub include_verification_results: bool,
    /// Register the `propose_requirement` tool; also projects requirements.
    pub allow_requirement_proposals: bool,
}

impl TaskContextOptions {
    /// A copy that projects requirements.
    #[must_use]
    pub fn include_requirements(mut self) -> Self {
        self.include_requirements = true;
        self
    }

    /// A copy that projects verification reports.
    #[must_use]
    pub fn include_verification_results(mut self) -> Self {
        self.include_verification_results = true;
        self
    }

    /// A copy that lets the model propose candidate requirements (and projects requirements).
    #[must_use]
    pub fn allow_requirement_proposals(mut self) -> Self {
        self.allow_requirement_proposals = true;
        self
    }

    /// True when requirements are projected.
    pub fn requirements_visible(&self) -> bool {
        self.include_requirements || self.allow_requirement_proposals
    }

    /// True when an existing task scope and objective are projected: any option does it.
    pub fn scope_visible(&self) -> bool {
        self.requirements_visible() || self.include_verification_results
    }
}

/// What [`TaskContextState::begin_task`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeginOutcome {
    /// There was no task; this one starts.
    Started,
    /// The same scope was already active; nothing changed.
    Unchanged,
    /// A different task was active; its requirements and reports were dropped.
    Replaced { previous_task_id: String },
}

/// Why a task-state operation was refused. A refused operation changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    #[error(
        "revision conflict: expected task revision {expected}, but the task state is at revision {current}; read the current state and retry"
    )]
    Conflict { expected: u64, current: u64 },
    #[error(
        "task `{task_id}` is already active with a different objective; begin a task with a new id to change the objective"
    )]
    ObjectiveMismatch { task_id: String },
    #[error("{what} is blank; give a non-blank value")]
    Blank { what: &'static str },
    #[error("{what} is {chars} characters long; at most {max}")]
    TooLong {
        what: &'static str,
        chars: usize,
        max: usize,
    },
    #[error("the Todo list was not changed: {0}")]
    Todo(#[from] TodoError),
    #[error(
        "a task holds at most {max} requirements; decide or drop existing ones before proposing more"
    )]
    RequirementLimit { max: usize },
    #[error("no requirement has id `{id}`")]
    UnknownRequirement { id: String },
    #[error("no task is active; call `begin_task` before verifying")]
    NoTask,
    #[error(
        "the subject version is unknown (never set, or invalidated); call `set_subject_version` before verifying"
    )]
    NoSubject,
    #[error(
        "a task keeps reports for at most {max} checks; reuse an existing check name such as `{example}`"
    )]
    VerificationLimit { max: usize, example: String },
    #[error("invalid plan path: {0}")]
    InvalidPlanPath(String),
}

impl TaskError {
    /// A short stable name of the error class, for traces and expectations.
    pub fn kind(&self) -> &'static str {
        match self {
            TaskError::Conflict { .. } => "revision_conflict",
            TaskError::ObjectiveMismatch { .. } => "objective_mismatch",
            TaskError::Blank { .. } | TaskError::TooLong { .. } => "invalid_value",
            TaskError::Todo(_) => "invalid_todo",
            TaskError::RequirementLimit { .. } => "requirement_limit",
            TaskError::UnknownRequirement { .. } => "unknown_requirement",
            TaskError::NoTask => "no_task",
            TaskError::NoSubject => "no_subject",
            TaskError::VerificationLimit { .. } => "verification_limit",
            TaskError::InvalidPlanPath(_) => "invalid_plan_path",
        }
    }

    /// True for a wrong expected revision: re-read the state and retry.
    pub fn is_conflict(&self) -> bool {
        matches!(self, TaskError::Conflict { .. })
    }
}

/// Every piece of task state, behind one revision counter.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskContextState {
    revision: u64,
    scope: Option<TaskScope>,
    todos: Vec<TodoItem>,
    /// The revision of the last successful Todo write; `None` before the first.
    todo_revision: Option<u64>,
    requirements: Vec<Requirement>,
    /// Number of the next requirement id; never reused, even across tasks.
    requirements_created: u64,
    /// Bumped whenever the set of confirmed requirements changes.
    contract_version: u64,
    subject_version: Option<String>,
    /// The latest report per check name, in name order.
    reports: BTreeMap<String, VerificationReport>,
    plan: PlanState,
}

impl TaskContextState {
    /// Empty state at revision 0: no task, no Todo list, BUILD mode.
    pub fn new() -> Self {
        Self::default()
    }

    /// The revision: the number of changes so far.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Checks that nothing changed since the caller read `expected`.
    ///
    /// # Errors
    /// [`TaskError::Conflict`] when the revision moved.
    pub fn expect_revision(&self, expected: u64) -> Result<(), TaskError> {
        if expected == self.revision {
            Ok(())
        } else {
            Err(TaskError::Conflict {
                expected,
                current: self.revision,
            })
        }
    }

    /// The active task, if any.
    pub fn scope(&self) -> Option<&TaskScope> {
        self.scope.as_ref()
    }

    /// Starts a task. The same scope again changes nothing; a different task id replaces the
    /// task and drops its requirements and verification reports (they belonged to it). The Todo
    /// list, subject version and plan mode are kept, and so are requirements proposed before the
    /// first task began.
    ///
    /// # Errors
    /// A blank or over-long id or objective, or the active task id with a different objective
    /// ([`TaskError::ObjectiveMismatch`]).
    pub fn begin_task(&mut self, scope: TaskScope) -> Result<BeginOutcome, TaskError> {
        check_name("the task id", &scope.task_id)?;
        check_text(
            "the task objective",
            &scope.objective,
            TASK_OBJECTIVE_CHARS_MAX,
        )?;
        let outcome = match &self.scope {
            Some(active) if *active == scope => return Ok(BeginOutcome::Unchanged),
            Some(active) if active.task_id == scope.task_id => {
                return Err(TaskError::ObjectiveMismatch {
                    task_id: scope.task_id,
                });
            }
            Some(active) => BeginOutcome::Replaced {
                previous_task_id: active.task_id.clone(),
            },
            None => BeginOutcome::Started,
        };
        if matches!(outcome, BeginOutcome::Replaced { .. }) {
            if !self.requirements.iter().all(Requirement::is_candidate) {
                self.contract_version += 1;
            }
            self.requirements.clear();
            self.reports.clear();
        }
        self.scope = Some(scope);
        self.bump();
        Ok(outcome)
    }

    /// Records one change and returns the new revision.
    fn bump(&mut self) -> u64 {
        self.revision += 1;
        self.revision
    }
}

/// Task state shared by the agent, its task tools and the application.
///
/// Every mutation happens under the lock, so a check of the expected revision and the change
/// that follows it are atomic. A clone shares the same state.
#[derive(Clone, Default)]
pub struct SharedTaskState(Arc<Mutex<TaskContextState>>);

impl std::fmt::Debug for SharedTaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `try_lock`: formatting inside `with` must not deadlock.
        let revision = match self.0.try_lock() {
            Ok(state) => Some(state.revision),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                Some(poisoned.into_inner().revision)
            }
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        f.debug_struct("SharedTaskState")
            .field("revision", &revision)
            .finish()
    }
}

impl TaskContextState {
    /// The whole state as one JSON value, for session-log checkpoints.
    pub fn to_checkpoint(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Rebuilds the state from a checkpoint value, re-checking the Todo list's rules and the
    /// revision order (a checkpoint comes from a file and is not trusted).
    ///
    /// # Errors
    /// A value that does not describe task state, or one that breaks its rules.
    pub fn from_checkpoint(value: &serde_json::Value) -> Result<Self, String> {
        let state: TaskContextState =
            serde_json::from_value(value.clone()).map_err(|error| error.to_string())?;
        todo::validate(&state.todos).map_err(|error| error.to_string())?;
        if state.todo_revision.is_some_and(|r| r > state.revision) {
            return Err("the Todo revision is newer than the state's revision".to_string());
        }
        Ok(state)
    }
}

impl SharedTaskState {
    /// Replaces the whole state (restoring a checkpoint).
    pub fn replace(&self, state: TaskContextState) {
        *self.lock() = state;
    }

    /// Empty shared state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `change` on the state under the lock and returns what it returns.
    pub fn with<R>(&self, change: impl FnOnce(&mut TaskContextState) -> R) -> R {
        change(&mut self.lock())
    }

    /// A copy of the current state: what one preparation projects.
    pub fn snapshot(&self) -> TaskContextState {
        self.lock().clone()
    }

    /// The current revision.
    pub fn revision(&self) -> u64 {
        self.lock().revision
    }

    /// Recovers the state if a holder panicked: every method leaves it consistent, because each
    /// validates before its first write.
    fn lock(&self) -> MutexGuard<'_, TaskContextState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Task state per session: each (user, session) an agent serves has its own task state, as it
/// has its own conversation, so one user's Todo list or requirements never reach another's
/// requests. Cloning shares the states.
#[derive(Clone, Default)]
pub struct TaskStates(Arc<Mutex<BTreeMap<SessionIdentity, SharedTaskState>>>);

/// A session's identity: user id and session id, as the runtime context gives them.
type SessionIdentity = (Option<String>, Option<String>);

impl std::fmt::Debug for TaskStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sessions = self.lock().len();
        f.debug_struct("TaskStates")
            .field("sessions", &sessions)
            .finish()
    }
}

impl TaskStates {
    /// The task state of the call's session (created empty on first use).
    pub fn of(&self, runtime: &RuntimeContext) -> SharedTaskState {
        self.lock()
            .entry((runtime.user_id.clone(), runtime.session_id.clone()))
            .or_default()
            .clone()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<SessionIdentity, SharedTaskState>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a task tool finds the state it changes: one shared state (a tool used on its own), or
/// the calling session's state (the agent's tools).
#[derive(Debug, Clone)]
pub enum StateSource {
    Shared(SharedTaskState),
    PerSession(TaskStates),
}

impl StateSource {
    /// The state a call with this runtime context works on.
    pub fn resolve(&self, runtime: &RuntimeContext) -> SharedTaskState {
        match self {
            StateSource::Shared(state) => state.clone(),
            StateSource::PerSession(states) => states.of(runtime),
        }
    }
}

/// What an agent is configured with: the per-session task states, whether the Todo list is
/// enabled, and the projection options. The agent builder holds one; cloning shares the states.
#[derive(Debug, Clone, Default)]
pub struct TaskSetup {
    states: TaskStates,
    task_list: bool,
    options: TaskContextOptions,
}

impl TaskSetup {
    /// Turns on the Todo list: registers `todo_write`.
    pub fn enable_task_list(&mut self) {
        self.task_list = true;
    }

    /// Replaces the projection options entirely.
    pub fn set_options(&mut self, options: TaskContextOptions) {
        self.options = options;
    }

    /// Every session's task state.
    pub fn states(&self) -> &TaskStates {
        &self.states
    }

    /// The task state of the call's session.
    pub fn state_of(&self, runtime: &RuntimeContext) -> SharedTaskState {
        self.states.of(runtime)
    }

    /// The projection options.
    pub fn options(&self) -> TaskContextOptions {
        self.options
    }

    /// True when `enable_task_list` was called.
    pub fn task_list_enabled(&self) -> bool {
        self.task_list
    }

    /// The task tools to register, in order: `todo_write` when the Todo list is enabled,
    /// `propose_requirement` when requirement proposals are allowed.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        if self.task_list {
            tools.push(Arc::new(todo::TodoWrite::over(StateSource::PerSession(
                self.states.clone(),
            ))));
        }
        if self.options.allow_requirement_proposals {
            tools.push(Arc::new(requirements::ProposeRequirement::over(
                StateSource::PerSession(self.states.clone()),
            )));
        }
        tools
    }

    /// Projects a snapshot of the session's current state over `conversation` (see
    /// [`projection::project`]).
    pub fn project(
        &self,
        runtime: &RuntimeContext,
        conversation: &[crate::message::Message],
        purpose: Purpose,
    ) -> Projection {
        let state = self.states.of(runtime).snapshot();
        projection::project(&state, &self.options, conversation, purpose)
    }
}

/// Checks a short name: non-blank, at most [`TASK_NAME_CHARS_MAX`] characters.
fn check_name(what: &'static str, value: &str) -> Result<(), TaskError> {
    check_text(what, value, TASK_NAME_CHARS_MAX)
}

/// Checks a text: non-blank, at most `max` characters.
fn check_text(what: &'static str, value: &str, max: usize) -> Result<(), TaskError> {
    if value.trim().is_empty() {
        return Err(TaskError::Blank { what });
    }
    let chars = value.chars().count();
    if chars > max {
        return Err(TaskError::TooLong { what, chars, max });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
