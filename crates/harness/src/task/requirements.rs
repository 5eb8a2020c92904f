//! Requirements: candidates anyone may propose, which only a trusted caller confirms or rejects.
//!
//! [`TaskContextState::propose`] records a `CANDIDATE` (deduplicated on kind + text + source, at
//! most [`REQUIREMENTS_MAX`]); [`TaskContextState::decide`] confirms or rejects it on behalf of
//! a named authority, checking the caller's expected revision. Deciding what is already decided
//! is a no-op, so a retried decision is safe. The set of confirmed requirements is the task's
//! **contract**; its version moves whenever that set changes, which makes verification reports
//! made against the old contract stale.
//!
//! The `propose_requirement` tool ([`ProposeRequirement`]) lets the model propose candidates,
//! always with source `model`; it cannot confirm anything. User messages are never parsed into
//! requirements.
//!
//! ```
//! use ctxbed_harness::task::TaskContextState;
//! use ctxbed_harness::task::requirements::{Decision, Proposal, RequirementKind, RequirementStatus};
//! let mut state = TaskContextState::new();
//! let proposal = Proposal::new(RequirementKind::Constraint, "Preserve the public format", "user");
//! let first = state.propose(proposal.clone()).unwrap();
//! assert!(first.created);
//! assert!(!state.propose(proposal).unwrap().created); // a duplicate
//! let revision = state.revision();
//! state.decide(&first.id, Decision::Confirm, "alice", revision).unwrap();
//! assert_eq!(state.requirements()[0].status, RequirementStatus::Confirmed);
//! assert!(state.decide(&first.id, Decision::Reject, "bob", revision).unwrap_err().is_conflict());
//! ```

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{SharedTaskState, StateSource, TaskContextState, TaskError, check_name, check_text};
use crate::format::snippet;
use crate::limits::{REQUIREMENT_TEXT_CHARS_MAX, REQUIREMENTS_MAX};
use crate::message::ToolCall;
use crate::tools::args::{ArgumentError, Arguments};
use crate::tools::{Tool, ToolContext, ToolOutcome, ToolSchema};

/// The tool's registered name.
pub const PROPOSE_REQUIREMENT_TOOL: &str = "propose_requirement";

/// The source recorded for proposals made by the model through the tool.
pub const MODEL_SOURCE: &str = "model";

/// What a requirement constrains.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum RequirementKind {
    /// A condition the result must meet to be accepted ("the export tests pass").
    Acceptance,
    /// Something the work must not change or break ("preserve the public format").
    Constraint,
    /// A wish that does not block acceptance.
    Preference,
}

impl RequirementKind {
    /// Every kind, in the order the schema lists them.
    pub const ALL: [RequirementKind; 3] = [
        RequirementKind::Acceptance,
        RequirementKind::Constraint,
        RequirementKind::Preference,
    ];

    /// The name in the tool schema and the projection.
    pub fn as_str(self) -> &'static str {
        match self {
            RequirementKind::Acceptance => "acceptance",
            RequirementKind::Constraint => "constraint",
            RequirementKind::Preference => "preference",
        }
    }

    /// The kind with this name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// Where a requirement stands.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum RequirementStatus {
    /// Proposed; authorises nothing yet.
    Candidate,
    /// Confirmed by a trusted caller: part of the contract.
    Confirmed,
    /// Rejected by a trusted caller.
    Rejected,
}

impl RequirementStatus {
    /// The upper-case name shown in projections.
    pub fn as_str(self) -> &'static str {
        match self {
            RequirementStatus::Candidate => "CANDIDATE",
            RequirementStatus::Confirmed => "CONFIRMED",
            RequirementStatus::Rejected => "REJECTED",
        }
    }
}

/// A trusted caller's decision on a requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Confirm,
    Reject,
}

impl Decision {
    /// The decision's name, as scenario files spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Confirm => "confirm",
            Decision::Reject => "reject",
        }
    }

    fn status(self) -> RequirementStatus {
        match self {
            Decision::Confirm => RequirementStatus::Confirmed,
            Decision::Reject => RequirementStatus::Rejected,
        }
    }
}

/// A requirement to propose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub kind: RequirementKind,
    /// The requirement, in a sentence; at most [`REQUIREMENT_TEXT_CHARS_MAX`] characters.
    pub text: String,
    /// Who proposed it (`user`, `application`, `model`, …).
    pub source: String,
}

impl Proposal {
    /// A proposal.
    pub fn new(kind: RequirementKind, text: impl Into<String>, source: impl Into<String>) -> Self {
        Proposal {
            kind,
            text: text.into(),
            source: source.into(),
        }
    }
}

/// One recorded requirement.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Requirement {
    /// `req-N`, never reused.
    pub id: String,
    pub kind: RequirementKind,
    pub text: String,
    pub source: String,
    pub status: RequirementStatus,
    /// The authority of the decision that set the current status.
    pub decided_by: Option<String>,
}

impl Requirement {
    /// True while no one has decided it.
    pub fn is_candidate(&self) -> bool {
        self.status == RequirementStatus::Candidate
    }
}

/// What [`TaskContextState::propose`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposed {
    /// The new requirement's id, or the id of the identical one already recorded.
    pub id: String,
    /// False for a duplicate (nothing changed).
    pub created: bool,
    /// The revision after the call.
    pub revision: u64,
}

/// What [`TaskContextState::decide`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decided {
    /// False when the requirement already had this status (nothing changed).
    pub changed: bool,
    /// The revision after the call.
    pub revision: u64,
}

impl TaskContextState {
    /// Records a candidate requirement, or returns the identical one (same kind, text and
    /// source) already recorded, whatever its status.
    ///
    /// # Errors
    /// Blank or over-long text or source, or [`REQUIREMENTS_MAX`] requirements already held.
    pub fn propose(&mut self, proposal: Proposal) -> Result<Proposed, TaskError> {
        check_text(
            "the requirement text",
            &proposal.text,
            REQUIREMENT_TEXT_CHARS_MAX,
        )?;
        check_name("the requirement source", &proposal.source)?;
        let text = proposal.text.trim();
        if let Some(existing) = self.requirements.iter().find(|requirement| {
            requirement.kind == proposal.kind
                && requirement.text == text
                && requirement.source == proposal.source
        }) {
            return Ok(Proposed {
                id: existing.id.clone(),
                created: false,
                revision: self.revision,
            });
        }
        if self.requirements.len() >= REQUIREMENTS_MAX {
            return Err(TaskError::RequirementLimit {
                max: REQUIREMENTS_MAX,
            });
        }
        self.requirements_created += 1;
        let id = format!("req-{}", self.requirements_created);
        self.requirements.push(Requirement {
            id: id.clone(),
            kind: proposal.kind,
            text: text.to_string(),
            source: proposal.source,
            status: RequirementStatus::Candidate,
            decided_by: None,
        });
        Ok(Proposed {
            id,
            created: true,
            revision: self.bump(),
        })
    }

    /// Confirms or rejects a requirement on behalf of `authority`. Deciding what already has
    /// that status changes nothing and succeeds whatever the expected revision, so a retry is
    /// safe; any other decision requires `expected_revision` to be the current revision.
    ///
    /// # Errors
    /// An unknown id, a blank or over-long authority, or [`TaskError::Conflict`].
    pub fn decide(
        &mut self,
        id: &str,
        decision: Decision,
        authority: &str,
        expected_revision: u64,
    ) -> Result<Decided, TaskError> {
        check_name("the authority", authority)?;
        let Some(index) = self.requirements.iter().position(|r| r.id == id) else {
            return Err(TaskError::UnknownRequirement {
                id: snippet(id, 40),
            });
        };
        let status = decision.status();
        let previous = self.requirements[index].status;
        if previous == status {
            return Ok(Decided {
                changed: false,
                revision: self.revision,
            });
        }
        self.expect_revision(expected_revision)?;
        let requirement = &mut self.requirements[index];
        requirement.status = status;
        requirement.decided_by = Some(authority.to_string());
        if previous == RequirementStatus::Confirmed || status == RequirementStatus::Confirmed {
            self.contract_version += 1;
        }
        Ok(Decided {
            changed: true,
            revision: self.bump(),
        })
    }

    /// Every requirement, in proposal order.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The version of the contract (the set of confirmed requirements).
    pub fn contract_version(&self) -> u64 {
        self.contract_version
    }
}

/// The `propose_requirement` tool: the model proposes a candidate requirement.
pub struct ProposeRequirement {
    schema: ToolSchema,
    state: StateSource,
}

impl ProposeRequirement {
    /// The tool over one shared task state.
    pub fn new(state: SharedTaskState) -> Self {
        Self::over(StateSource::Shared(state))
    }

    /// The tool over the state `state` resolves for each call's session.
    pub fn over(state: StateSource) -> Self {
        let kinds: Vec<&str> = RequirementKind::ALL.iter().map(|k| k.as_str()).collect();
        ProposeRequirement {
            schema: ToolSchema {
                name: PROPOSE_REQUIREMENT_TOOL.to_string(),
                description: "Propose a requirement you believe the task has (an acceptance \
                    criterion, a constraint or a preference). It is recorded as a CANDIDATE; \
                    only the user or application can confirm it, and a candidate authorises \
                    nothing."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": kinds},
                        "text": {"type": "string", "description": "The requirement, in a sentence."},
                    },
                    "required": ["kind", "text"],
                }),
            },
            state,
        }
    }
}

impl std::fmt::Debug for ProposeRequirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProposeRequirement").finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for ProposeRequirement {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, context: &ToolContext) -> ToolOutcome {
        let proposal = match parse_proposal(&self.schema, &call.arguments) {
            Ok(proposal) => proposal,
            Err(error) => return error.outcome(&self.schema),
        };
        match self
            .state
            .resolve(&context.runtime)
            .with(|state| state.propose(proposal))
        {
            Ok(Proposed {
                id, created: true, ..
            }) => ToolOutcome::text(format!(
                "Recorded requirement {id} as CANDIDATE; the user or application decides whether it applies."
            )),
            Ok(Proposed { id, .. }) => ToolOutcome::text(format!(
                "Requirement {id} already records this proposal; nothing changed."
            )),
            Err(error) => ToolOutcome::error(format!("nothing was recorded: {error}")),
        }
    }
}

/// Reads the tool's arguments into a proposal from the model.
fn parse_proposal(schema: &ToolSchema, arguments: &Value) -> Result<Proposal, ArgumentError> {
    let checked = Arguments::parse(schema, arguments)?;
    let name = checked.required_string("kind", 40)?;
    let kind = RequirementKind::parse(name).ok_or_else(|| {
        ArgumentError::new(format!(
            "unknown kind `{}`; use acceptance, constraint or preference",
            snippet(name, 40)
        ))
    })?;
    let text = checked.required_string("text", REQUIREMENT_TEXT_CHARS_MAX)?;
    Ok(Proposal::new(kind, text, MODEL_SOURCE))
}
