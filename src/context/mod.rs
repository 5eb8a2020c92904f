//! Request preparation: from the working conversation to a validated model request and manifest.
//!
//! [`prepare`] is the one function every reasoning step goes through. It lays out one System
//! message, the conversation, transient state and references ([`render`]) from the materials
//! loaded for this step (instructions, [`workspace`] files once per call, [`source`] blocks once
//! per step), counts the request, computes the input limit, validates tool pairing and then the
//! whole budget, and records a [`manifest::ContextManifest`]. Later stages (offload, omission,
//! compaction, projections) plug in between layout and validation.
//!
//! **Invariant:** `prepare` does no I/O and reads no clock; it is a function of its input.
//!
//! ```
//! use ctxbed::context::{PrepareInput, prepare};
//! use ctxbed::context::budget::BudgetSettings;
//! use ctxbed::message::Message;
//! use ctxbed::model::{ModelInfo, Purpose};
//! use ctxbed::tokens::RatioEstimator;
//! let model = ModelInfo { name: "m".into(), context_window: Some(8_000), max_output_tokens: None };
//! let history = vec![Message::user("u1", "Fix the export.")];
//! let prepared = prepare(&PrepareInput {
//!     call_id: "c1-r1", purpose: Purpose::Reasoning, model: &model,
//!     system_prompt: Some("Be careful."), materials: &[], transforms: &[], history: &history, tools: &[],
//!     estimator: &RatioEstimator, budget: BudgetSettings::default(), pairing: Default::default(),
//! }).unwrap();
//! assert_eq!(prepared.request.messages.len(), 2);
//! assert_eq!(prepared.manifest.validation.as_str(), "passed");
//! ```

pub mod block;
pub mod budget;
pub mod manifest;
pub mod pairs;
pub mod render;
pub mod source;
pub mod workspace;

use budget::{BudgetSettings, InputBudget};
use manifest::{ContextManifest, ItemKind, ManifestItem, Validation, message_hash, part_kinds};
use pairs::{PairingProblem, find_pairing_problem};

use block::{Material, Placement};

use crate::message::{Message, Role};
use crate::model::{ModelInfo, ModelRequest, Purpose};
use crate::tokens::TokenEstimator;
use crate::tools::ToolSchema;

pub use render::SYSTEM_MESSAGE_ID;

/// Everything one preparation reads.
pub struct PrepareInput<'a> {
    /// Id of this preparation (unique per model request attempt).
    pub call_id: &'a str,
    pub purpose: Purpose,
    pub model: &'a ModelInfo,
    pub system_prompt: Option<&'a str>,
    /// Instructions, workspace material and source blocks for this step.
    pub materials: &'a [Material],
    /// Transforms already applied while loading (source failures, workspace truncation).
    pub transforms: &'a [String],
    /// The working conversation, oldest first.
    pub history: &'a [Message],
    pub tools: &'a [ToolSchema],
    pub estimator: &'a dyn TokenEstimator,
    pub budget: BudgetSettings,
    /// How tool-call/result pairing is validated.
    pub pairing: PairingCheck,
}

/// How a preparation validates tool-call/result pairing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PairingCheck {
    /// Reject unpaired calls or results (`invalid_tool_pairs`); never fabricate. The default.
    #[default]
    Strict,
    /// Send the conversation as it is. Only for observing how a provider answers an unpaired
    /// history; recorded in the manifest as the transform `tool_pairs_unchecked`.
    Unchecked,
}

/// A validated request and its manifest.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub request: ModelRequest,
    pub manifest: ContextManifest,
    pub budget: InputBudget,
}

/// Why a preparation was rejected. The manifest records the same outcome.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum PrepareError {
    #[error("invalid tool pairs: {problem}")]
    InvalidToolPairs { problem: PairingProblem },
    #[error(
        "context budget exceeded: the request needs an estimated {estimated} tokens but the input limit is {limit}; shorten required material, raise the limit or enable compaction"
    )]
    ContextBudgetExceeded { estimated: u64, limit: u64 },
    #[error("{0}")]
    SourceFailed(#[from] source::SourceLoadError),
}

impl PrepareError {
    /// The validation outcome this error corresponds to.
    pub fn validation(&self) -> Validation {
        match self {
            PrepareError::InvalidToolPairs { .. } => Validation::InvalidToolPairs,
            PrepareError::ContextBudgetExceeded { .. } => Validation::BudgetExceeded,
            PrepareError::SourceFailed(_) => Validation::BuildFailed,
        }
    }

    /// A short stable name, for events and traces.
    pub fn kind(&self) -> &'static str {
        match self {
            PrepareError::InvalidToolPairs { .. } => "invalid_tool_pairs",
            PrepareError::ContextBudgetExceeded { .. } => "context_budget_exceeded",
            PrepareError::SourceFailed(source::SourceLoadError::Failed { .. }) => "source_failed",
            PrepareError::SourceFailed(source::SourceLoadError::Structural { .. }) => {
                "source_invalid"
            }
        }
    }
}

/// A rejected preparation: the error and the manifest that records it.
#[derive(Debug, Clone)]
pub struct Rejected {
    pub error: PrepareError,
    pub manifest: ContextManifest,
}

/// Prepares one model request.
///
/// # Errors
/// Unpaired tool calls or results (`invalid_tool_pairs`), or an estimate over the input limit
/// (`budget_exceeded`). The returned manifest records the outcome either way.
pub fn prepare(input: &PrepareInput<'_>) -> Result<Prepared, Box<Rejected>> {
    let messages = layout(input.system_prompt, input.materials, input.history);
    let budget = InputBudget::compute(input.model.context_window, &input.budget);
    let mut items = Vec::with_capacity(messages.len() + input.materials.len() + input.tools.len());
    let mut estimated = crate::tokens::REQUEST_OVERHEAD_TOKENS;
    for message in &messages {
        let tokens = input.estimator.message_tokens(message);
        estimated += tokens;
        items.push(ManifestItem {
            kind: ItemKind::Message {
                role: message.role,
                part_kinds: part_kinds(message),
            },
            id: message.id.clone(),
            tokens,
            content_hash: message_hash(message),
        });
    }
    for placement in [
        Placement::System,
        Placement::Transient,
        Placement::Reference,
    ] {
        for material in render::ordered(input.materials, placement) {
            items.push(ManifestItem {
                kind: ItemKind::Material {
                    kind: material.kind,
                    placement: material.placement,
                    revision: material.revision.clone(),
                    required: material.required,
                    priority: material.priority,
                },
                id: material.id.clone(),
                tokens: input.estimator.text_tokens(&material.text),
                content_hash: material.content_hash(),
            });
        }
    }
    for schema in input.tools {
        let tokens = input.estimator.tool_schema_tokens(schema);
        estimated += tokens;
        let serialised = format!(
            "{}\n{}\n{}",
            schema.name, schema.description, schema.parameters
        );
        items.push(ManifestItem {
            kind: ItemKind::ToolSchema,
            id: schema.name.clone(),
            tokens,
            content_hash: manifest::content_hash(serialised.as_bytes()),
        });
    }
    let mut manifest = ContextManifest {
        call_id: input.call_id.to_string(),
        purpose: input.purpose,
        model: input.model.name.clone(),
        estimated_input_tokens: to_signed(estimated),
        input_limit: to_signed(budget.input_limit),
        counting_method: input.estimator.method().to_string(),
        exact: input.estimator.exact(),
        items,
        transforms: input.transforms.to_vec(),
        validation: Validation::Passed,
    };
    let pairing_problem = match input.pairing {
        PairingCheck::Strict => find_pairing_problem(&messages),
        PairingCheck::Unchecked => {
            manifest.transforms.push("tool_pairs_unchecked".to_string());
            None
        }
    };
    let verdict = if let Some(problem) = pairing_problem {
        Err(PrepareError::InvalidToolPairs { problem })
    } else if estimated > budget.input_limit {
        Err(PrepareError::ContextBudgetExceeded {
            estimated,
            limit: budget.input_limit,
        })
    } else {
        Ok(())
    };
    if let Err(error) = verdict {
        manifest.validation = error.validation();
        return Err(Box::new(Rejected { error, manifest }));
    }
    assert!(
        estimated <= budget.input_limit,
        "a passed preparation fits its limit"
    );
    let request = ModelRequest {
        call_id: input.call_id.to_string(),
        purpose: input.purpose,
        messages,
        tools: input.tools.to_vec(),
        max_output_tokens: Some(budget.output_reserve).filter(|reserve| *reserve > 0),
    };
    Ok(Prepared {
        request,
        manifest,
        budget,
    })
}

/// One System message → conversation → transient state → references. Messages rendered by an
/// earlier preparation are dropped and rendered afresh; other System messages in the
/// conversation are merged into the single System message.
fn layout(
    system_prompt: Option<&str>,
    materials: &[Material],
    history: &[Message],
) -> Vec<Message> {
    let foreign_system: Vec<&Message> = history
        .iter()
        .filter(|m| m.role == Role::System && !render::is_rendered(m))
        .collect();
    let conversation = history
        .iter()
        .filter(|m| m.role != Role::System && !render::is_rendered(m));
    let transient = render::material_message(materials, Placement::Transient);
    let reference = render::material_message(materials, Placement::Reference);
    let guidance = transient.is_some() || reference.is_some();
    let system = render::system_message(system_prompt, materials, &foreign_system, guidance);
    let mut messages = Vec::with_capacity(history.len() + 3);
    messages.extend(system);
    messages.extend(conversation.cloned());
    messages.extend(transient);
    messages.extend(reference);
    messages
}

fn to_signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
