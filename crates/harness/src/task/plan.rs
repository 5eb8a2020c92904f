//! Plan mode: PLAN (read-only) or BUILD, and the plan file's path.
//!
//! The application changes the mode with [`TaskContextState::set_mode`] and names the plan file
//! with [`TaskContextState::set_plan_path`]; both are task state, so they bump the revision, and
//! a change made between two model boundaries shows at the next preparation. The projection is a
//! `RUNTIME_STATE` message, present while PLAN mode is active or a plan file is set; it states
//! that it is not evidence that a plan was approved. The plan file is never read or parsed here.
//!
//! ```
//! use ctxbed_harness::task::TaskContextState;
//! use ctxbed_harness::task::plan::PlanMode;
//! let mut state = TaskContextState::new();
//! assert_eq!(state.plan().mode, PlanMode::Build);
//! state.set_mode(PlanMode::Plan);
//! state.set_plan_path(Some("PLAN.md")).unwrap();
//! assert!(state.plan().is_projected());
//! assert!(state.set_plan_path(Some("../PLAN.md")).is_err());
//! ```

use super::{TaskContextState, TaskError};
use crate::storage::WorkspacePath;

/// The agent's working mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PlanMode {
    /// Read-only: investigate and write the plan.
    Plan,
    /// Normal work. The default.
    #[default]
    Build,
}

impl PlanMode {
    /// `PLAN` or `BUILD`, as projected.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanMode::Plan => "PLAN",
            PlanMode::Build => "BUILD",
        }
    }
}

/// The mode and the plan file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanState {
    pub mode: PlanMode,
    /// The plan file, relative to the workspace.
    pub plan_path: Option<WorkspacePath>,
}

impl PlanState {
    /// True when the projection shows: PLAN mode is active or a plan file is set.
    pub fn is_projected(&self) -> bool {
        self.mode == PlanMode::Plan || self.plan_path.is_some()
    }
}

impl TaskContextState {
    /// Switches the mode; the same mode again changes nothing. Returns the revision after the
    /// call.
    pub fn set_mode(&mut self, mode: PlanMode) -> u64 {
        if self.plan.mode == mode {
            return self.revision;
        }
        self.plan.mode = mode;
        self.bump()
    }

    /// Sets or clears the plan file's path; the same path again changes nothing. Returns the
    /// revision after the call.
    ///
    /// # Errors
    /// A path that [`WorkspacePath::parse`] refuses.
    pub fn set_plan_path(&mut self, path: Option<&str>) -> Result<u64, TaskError> {
        let path = path
            .map(WorkspacePath::parse)
            .transpose()
            .map_err(|error| TaskError::InvalidPlanPath(error.to_string()))?;
        if self.plan.plan_path == path {
            return Ok(self.revision);
        }
        self.plan.plan_path = path;
        Ok(self.bump())
    }

    /// The mode and plan file.
    pub fn plan(&self) -> &PlanState {
        &self.plan
    }
}
