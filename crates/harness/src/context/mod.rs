//! Request preparation: from the working conversation to a validated model request and manifest.
//!
//! [`prepare`] is the one function every reasoning step goes through. It lays out one System
//! message, the conversation, transient state and references ([`render`]) from the materials
//! loaded for this step (instructions, [`workspace`] files once per call, [`source`] blocks once
//! per step), counts the request, computes the input limit, validates tool pairing and then the
//! whole budget, and records a [`manifest::ContextManifest`]; optional material is omitted there
//! while the request is over budget ([`omission`]).
//!
//! The stages that do I/O or call a model run before it, in the agent's step
//! (`agent::run`'s `Call::prepare`, the pipeline's top function): [`source::load_all`] loads the
//! dynamic sources, [`offload`] moves oversized tool results to the workspace, compaction
//! reduces the conversation within [`conversation_allowance`], and the task projection adds
//! transient state; their transforms are handed to `prepare` and recorded in its manifest.
//!
//! **Invariant:** `prepare` does no I/O and reads no clock; it is a function of its input.
//!
//! ```
//! use ctxbed_harness::context::{PrepareInput, prepare};
//! use ctxbed_harness::context::budget::BudgetSettings;
//! use ctxbed_harness::message::Message;
//! use ctxbed_harness::model::{ModelInfo, Purpose};
//! use ctxbed_harness::tokens::RatioEstimator;
//! let model = ModelInfo { name: "m".into(), context_window: Some(8_000), max_output_tokens: None };
//! let history = vec![Message::user("u1", "Fix the export.")];
//! let prepared = prepare(&PrepareInput {
//!     call_id: "c1-r1", purpose: Purpose::Reasoning, model: &model,
//!     system_prompt: Some("Be careful."), materials: &[], transforms: &[], history: (&history).into(),
//!     projections: &[], tools: &Default::default(),
//!     estimator: &RatioEstimator, budget: BudgetSettings::default(), pairing: Default::default(),
//!     selection: None,
//! }).unwrap();
//! assert_eq!(prepared.request.messages.len(), 2);
//! assert_eq!(prepared.manifest.validation.as_str(), "passed");
//! ```

pub mod block;
pub mod budget;
pub mod history;
pub mod manifest;
pub mod offload;
pub mod omission;
pub mod pairs;
mod parts;
pub mod render;
mod rendered;
mod scanned;
mod schemas;
pub mod source;
pub mod transform;
pub mod workspace;

use std::ops::Range;
use std::rc::Rc;
use std::sync::Arc;

use budget::{BudgetSettings, InputBudget};
use history::HistoryRef;
use manifest::{ContextManifest, ManifestItem, Validation};
use pairs::{PairingProblem, find_pairing_problem};
use parts::Parts;

use block::Material;
use omission::SelectionPolicy;

use crate::message::Message;
use crate::message::ToolSchema;
use crate::model::{ModelInfo, ModelRequest, Purpose};
use crate::shared_vec::SharedVec;
use crate::tokens::TokenEstimator;

pub use render::SYSTEM_MESSAGE_ID;
pub use transform::Transform;

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
    pub transforms: &'a [Transform],
    /// The working conversation, oldest first: a slice or `Vec` (`(&messages).into()`), or a
    /// [`History`](history::History), which tells the preparation what changed since the
    /// last step so it need not compare the messages it has read before.
    pub history: HistoryRef<'a>,
    /// Task and plan projections (`TASK_STATE`, `RUNTIME_STATE`), placed after the runtime
    /// material; never omitted, never committed.
    pub projections: &'a [Message],
    pub tools: &'a Arc<[ToolSchema]>,
    pub estimator: &'a dyn TokenEstimator,
    pub budget: BudgetSettings,
    /// How tool-call/result pairing is validated.
    pub pairing: PairingCheck,
    /// A custom omission order (the default order when `None`).
    pub selection: Option<&'a dyn SelectionPolicy>,
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
    /// Drop results that answer no call and close calls that have no result with a stable
    /// synthetic error result, in the request view only; each change is a transform. For users
    /// who want the behaviour of harnesses that repair instead of rejecting.
    Repair,
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
        "context budget exceeded: the request needs an estimated {estimated} tokens but the input limit is {limit} after omission and any compaction; shorten the input or required material, raise the limit, or enable compaction if it is off"
    )]
    ContextBudgetExceeded { estimated: u64, limit: u64 },
    #[error("{0}")]
    SourceFailed(#[from] source::SourceLoadError),
    #[error("invalid selection policy: {0}")]
    InvalidSelection(#[from] omission::SelectionError),
    #[error("task or plan state changed while the request was prepared; nothing was committed")]
    StateConflict,
    #[error(
        "the session's history changed while the request was prepared (another writer committed first); the newer history is kept and this call's messages are in the session log"
    )]
    HistoryConflict,
}

impl PrepareError {
    /// The validation outcome this error corresponds to.
    pub fn validation(&self) -> Validation {
        match self {
            PrepareError::InvalidToolPairs { .. } => Validation::InvalidToolPairs,
            PrepareError::ContextBudgetExceeded { .. } => Validation::BudgetExceeded,
            PrepareError::SourceFailed(_) | PrepareError::InvalidSelection(_) => {
                Validation::BuildFailed
            }
            PrepareError::StateConflict => Validation::StateConflict,
            PrepareError::HistoryConflict => Validation::HistoryConflict,
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
            PrepareError::InvalidSelection(_) => "invalid_selection_policy",
            PrepareError::StateConflict => "state_conflict",
            PrepareError::HistoryConflict => "history_conflict",
        }
    }
}

/// A rejected preparation: the error and the manifest that records it.
#[derive(Debug, Clone)]
pub struct Rejected {
    pub error: PrepareError,
    pub manifest: ContextManifest,
}

/// Prepares one model request: pairing repair (when configured), omission for budget, layout,
/// counting, the conversation allowance, then validation of pairing and of the whole budget.
///
/// # Errors
/// Unpaired tool calls or results (`invalid_tool_pairs`), an estimate over the input limit once
/// every optional material is gone (`budget_exceeded`), or an invalid selection policy
/// (`build_failed`). The returned manifest records the outcome either way.
pub fn prepare(input: &PrepareInput<'_>) -> Result<Prepared, Box<Rejected>> {
    let budget = InputBudget::compute(input.model.context_window, &input.budget);
    let mut transforms = input.transforms.to_vec();
    let repaired = repair_pairs(input, &mut transforms);
    let history = repaired.as_ref().map_or(input.history, HistoryRef::from);
    let parts = Parts::split(
        input.system_prompt,
        history,
        input.projections,
        input.estimator,
    );
    let FixedCost {
        conversation_tokens: _,
        schemas,
        projection_tokens,
        fixed,
    } = FixedCost::of(input, &parts);
    let schema_tokens = schemas.tokens;
    let selection = select_materials(input, &parts, fixed, budget.input_limit)
        .map_err(|error| build_failed(input, error))?;
    record_omissions(&mut transforms, &selection.omitted);
    let (messages, conversation) = parts.assemble(&selection.kept);
    let counted = count(
        input,
        &parts,
        &messages,
        conversation.clone(),
        &selection.kept,
        &schemas,
    );
    let material_messages = counted.estimated - fixed + projection_tokens;
    let allowance = allowance_within(budget.input_limit, material_messages, schema_tokens);
    let estimated = counted.estimated;
    let mut manifest = passed_manifest(input, &budget, allowance, counted, transforms);
    if let Err(error) = validate(
        input.pairing,
        &parts,
        &messages,
        conversation,
        estimated,
        budget.input_limit,
        &mut manifest,
    ) {
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
        tools: Arc::clone(input.tools),
        max_output_tokens: Some(budget.output_reserve).filter(|reserve| *reserve > 0),
    };
    Ok(Prepared {
        request,
        manifest,
        budget,
    })
}

/// With [`PairingCheck::Repair`], the conversation with its pairing repaired (each repair added
/// to `transforms`); `None` otherwise, when the history is used as it is.
fn repair_pairs(input: &PrepareInput<'_>, transforms: &mut Vec<Transform>) -> Option<Vec<Message>> {
    (input.pairing == PairingCheck::Repair).then(|| {
        let (messages, repairs) = pairs::repair(input.history.messages());
        transforms.extend(repairs);
        messages
    })
}

/// The rejection of a preparation whose selection policy is invalid, before anything was laid
/// out: a `build_failed` manifest.
fn build_failed(input: &PrepareInput<'_>, error: omission::SelectionError) -> Box<Rejected> {
    let manifest = ContextManifest::early_failure(
        input.call_id,
        input.purpose,
        &input.model.name,
        Validation::BuildFailed,
    );
    Box::new(Rejected {
        error: error.into(),
        manifest,
    })
}

/// Adds an `omitted_for_budget` transform per omitted material. Omission is decided before
/// conversation reduction (the reduction runs within the allowance left after it), so its
/// transforms go before compaction's.
fn record_omissions(transforms: &mut Vec<Transform>, omitted: &[String]) {
    let omitted_at = transforms
        .iter()
        .position(Transform::is_conversation_reduction)
        .unwrap_or(transforms.len());
    transforms.splice(
        omitted_at..omitted_at,
        omitted.iter().map(|id| Transform::OmittedForBudget {
            item_id: id.clone(),
        }),
    );
}

/// The conversation allowance: the input limit less the material messages (projections
/// included), the tool schemas and the request overhead; at least 1.
fn allowance_within(input_limit: u64, material_messages: u64, schema_tokens: u64) -> u64 {
    input_limit
        .saturating_sub(material_messages + schema_tokens + crate::tokens::REQUEST_OVERHEAD_TOKENS)
        .max(1)
}

/// The manifest of a preparation as counted, before validation (which may still reject it).
fn passed_manifest(
    input: &PrepareInput<'_>,
    budget: &InputBudget,
    allowance: u64,
    counted: Counted,
    transforms: Vec<Transform>,
) -> ContextManifest {
    ContextManifest {
        call_id: input.call_id.to_string(),
        purpose: input.purpose,
        model: input.model.name.clone(),
        estimated_input_tokens: to_signed(counted.estimated),
        input_limit: to_signed(budget.input_limit),
        conversation_allowance: to_signed(allowance),
        counting_method: input.estimator.method().to_string(),
        exact: input.estimator.exact(),
        items: counted.items,
        transforms,
        validation: Validation::Passed,
        task_revision: None,
        policy_version: None,
    }
}

/// What a request costs before any material: the conversation, the tool schemas, the
/// projections and the request overhead. None of it is ever omitted.
struct FixedCost {
    conversation_tokens: u64,
    /// The tool schemas' tokens and manifest items.
    schemas: Rc<schemas::Listed>,
    projection_tokens: u64,
    fixed: u64,
}

impl FixedCost {
    fn of(input: &PrepareInput<'_>, parts: &Parts<'_>) -> Self {
        let estimator = input.estimator;
        let conversation_tokens = parts.scan.tokens();
        let schemas = schemas::listed(input.tools, estimator);
        let projection_tokens = input
            .projections
            .iter()
            .map(|m| estimator.message_tokens(m))
            .sum();
        FixedCost {
            conversation_tokens,
            fixed: crate::tokens::REQUEST_OVERHEAD_TOKENS
                + conversation_tokens
                + schemas.tokens
                + projection_tokens,
            schemas,
            projection_tokens,
        }
    }
}

/// Omission for budget, in the default or the custom order.
fn select_materials<'a>(
    input: &PrepareInput<'a>,
    parts: &Parts<'_>,
    fixed: u64,
    limit: u64,
) -> Result<omission::Selection<'a>, omission::SelectionError> {
    let order = match input.selection {
        Some(policy) => {
            let order = policy.omission_order(input.materials);
            omission::validate_order(&order, input.materials)?;
            order
        }
        None => omission::default_order(input.materials),
    };
    let measure = |kept: &[Material]| fixed + parts.material_tokens(kept, input.estimator);
    Ok(omission::select(
        input.materials,
        &order,
        limit,
        input.estimator,
        measure,
    ))
}

/// The conversation allowance `prepare` would compute for this input, and the conversation's
/// current tokens: the budget the compaction stage works within. Pairing repair is not applied.
pub fn conversation_allowance(input: &PrepareInput<'_>) -> (u64, u64) {
    let budget = InputBudget::compute(input.model.context_window, &input.budget);
    let parts = Parts::split(
        input.system_prompt,
        input.history,
        input.projections,
        input.estimator,
    );
    let FixedCost {
        conversation_tokens,
        schemas,
        projection_tokens,
        fixed,
    } = FixedCost::of(input, &parts);
    let schema_tokens = schemas.tokens;
    let kept = match select_materials(input, &parts, fixed, budget.input_limit) {
        Ok(selection) => selection.kept,
        Err(_) => std::borrow::Cow::Borrowed(input.materials),
    };
    let material_tokens = parts.material_tokens(&kept, input.estimator) + projection_tokens;
    let allowance = allowance_within(budget.input_limit, material_tokens, schema_tokens);
    (allowance, conversation_tokens)
}

/// Pairing first, then the whole budget. `conversation` is where the conversation lies in
/// `messages`.
fn validate(
    pairing: PairingCheck,
    parts: &Parts<'_>,
    messages: &SharedVec<Message>,
    conversation: Range<usize>,
    estimated: u64,
    limit: u64,
    manifest: &mut ContextManifest,
) -> Result<(), PrepareError> {
    let problem = match pairing {
        PairingCheck::Strict | PairingCheck::Repair => {
            pairing_problem(parts, messages, conversation)
        }
        PairingCheck::Unchecked => {
            manifest.transforms.push(Transform::ToolPairsUnchecked);
            None
        }
    };
    if let Some(problem) = problem {
        return Err(PrepareError::InvalidToolPairs { problem });
    }
    if estimated > limit {
        return Err(PrepareError::ContextBudgetExceeded { estimated, limit });
    }
    Ok(())
}

/// The first pairing violation of the request. Messages around the conversation that hold no
/// tool call or result change nothing a scan of the conversation found (they close no call, and
/// a call still open is reported either way), so the conversation's remembered scan answers;
/// otherwise (or with no remembered scan) the whole request is read.
fn pairing_problem(
    parts: &Parts<'_>,
    messages: &SharedVec<Message>,
    conversation: Range<usize>,
) -> Option<PairingProblem> {
    let plain = |m: &Message| m.tool_calls().next().is_none() && m.tool_results().next().is_none();
    if let Some(scan) = parts.scan.pairing()
        && messages
            .iter_range(0..conversation.start)
            .chain(messages.iter_range(conversation.end..messages.len()))
            .all(plain)
    {
        return scan
            .finish()
            .map(|problem| problem.shifted(conversation.start));
    }
    find_pairing_problem(messages)
}

struct Counted {
    items: SharedVec<Arc<ManifestItem>>,
    estimated: u64,
}

/// One manifest item per message, retained material and tool schema, and the total. The
/// conversation lies at `conversation` in `messages`; its items come from its scan.
fn count(
    input: &PrepareInput<'_>,
    parts: &Parts<'_>,
    messages: &SharedVec<Message>,
    conversation: Range<usize>,
    kept: &[Material],
    schemas: &schemas::Listed,
) -> Counted {
    // The conversation's items are the scan's, shared; only the few items around them are new.
    let mut items = parts.scan.items().clone();
    let mut estimated = crate::tokens::REQUEST_OVERHEAD_TOKENS + parts.scan.tokens();
    let mut item = |message: &Message| {
        let (tokens, content_hash) = input.estimator.message_tokens_and_hash(message);
        estimated += tokens;
        Arc::new(ManifestItem::message(message, tokens, content_hash))
    };
    let before: Vec<_> = messages
        .iter_range(0..conversation.start)
        .map(&mut item)
        .collect();
    let after: Vec<_> = messages
        .iter_range(conversation.end..messages.len())
        .map(&mut item)
        .collect();
    for item in before.into_iter().rev() {
        items.push_front(item);
    }
    items.extend(after);
    items.extend(parts.material_items(kept, input.estimator).iter().cloned());
    items.extend(schemas.items.iter().cloned());
    estimated += schemas.tokens;
    Counted { items, estimated }
}

fn to_signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::manifest::ItemKind;
    use super::parts::material_item;
    use super::*;
    use crate::context::block::ContextBlock;

    /// Omission is decided before conversation reduction, so its transforms go in front of the
    /// first reduction's and after everything recorded before it.
    #[test]
    fn omissions_are_recorded_before_the_conversation_reduction() {
        let mut transforms = vec![
            Transform::ToolResultOffloadFailed {
                call_id: "call_1".into(),
            },
            Transform::ArgumentTruncation { messages: 2 },
            Transform::HistoryCompactionSkipped,
        ];
        record_omissions(&mut transforms, &["workspace:NOTES.md".to_string()]);
        let kinds: Vec<&str> = transforms.iter().map(Transform::kind).collect();
        assert_eq!(
            kinds,
            [
                "tool_result_offload_failed",
                "omitted_for_budget",
                "argument_truncation",
                "history_compaction_skipped"
            ]
        );
    }

    /// The memo of rendered material messages answers only for the same set of materials.
    #[test]
    fn rendered_materials_follow_the_set_asked_for() {
        let materials = [
            Material::instruction("rules", "Be brief."),
            Material::from_block("s", &ContextBlock::runtime("clock", "It is noon.")),
            Material::from_block("s", &ContextBlock::reference("doc", "See the guide.")),
        ];
        let history = [Message::user("u1", "Hi")];
        let estimator = crate::tokens::RatioEstimator;
        let parts = Parts::split(Some("You help."), (&history).into(), &[], &estimator);
        let fresh = Parts::split(Some("You help."), (&history).into(), &[], &estimator);
        let subsets = [
            &materials[..],
            &materials[..1],
            &materials[1..],
            &materials[..],
            &[],
        ];
        for subset in subsets {
            assert_eq!(
                parts.material_messages(subset),
                fresh.render_materials(subset),
                "{:?}",
                subset.iter().map(|m| &m.id).collect::<Vec<_>>()
            );
        }
    }

    /// Items counted for a set other than the one last rendered are not remembered with that
    /// rendering: the rendered set, asked for next, gets its own items.
    #[test]
    fn material_items_are_remembered_only_for_the_set_rendered() {
        use crate::tokens::{CachedEstimator, RatioEstimator};
        let materials = [
            Material::instruction("rules", "Be brief."),
            Material::from_block("s", &ContextBlock::runtime("clock", "It is noon.")),
            Material::from_block("s", &ContextBlock::reference("doc", "See the guide.")),
        ];
        let history = [Message::user("u1", "Hi")];
        let estimator = CachedEstimator::new(RatioEstimator);
        let parts = Parts::split(Some("You help."), (&history).into(), &[], &estimator);
        let ids = |items: Rc<[Arc<ManifestItem>]>| {
            items.iter().map(|item| item.id.clone()).collect::<Vec<_>>()
        };
        parts.material_messages(&materials);
        assert_eq!(
            ids(parts.material_items(&materials[..1], &estimator)).len(),
            1
        );
        parts.material_messages(&materials);
        let all = ids(parts.material_items(&materials, &estimator));
        let expected: Vec<_> = render::in_layout_order(&materials)
            .map(|material| material.id.clone())
            .collect();
        assert_eq!((all.len(), all), (3, expected));
    }

    /// Material items remembered with a rendering are handed out again (the same items, not
    /// recounted) to the next step with the same counting method, and only to it: each
    /// estimator's manifest lists its own counts, step after step.
    #[test]
    fn remembered_material_items_follow_the_counting_method() {
        use crate::tokens::{ApproximateEstimator, CachedEstimator, RatioEstimator};
        let materials = [
            Material::instruction("rules", "Be brief and check every figure twice."),
            Material::from_block("s", &ContextBlock::runtime("clock", "It is noon.")),
            Material::from_block("s", &ContextBlock::reference("doc", "See the 2024 guide.")),
        ];
        let history = [Message::user("u1", "Hi")];
        let model = ModelInfo {
            name: "m".into(),
            context_window: Some(100_000),
            max_output_tokens: None,
        };
        let approx = CachedEstimator::new(ApproximateEstimator::default());
        let ratio = CachedEstimator::new(RatioEstimator);
        let material_items = |estimator: &dyn TokenEstimator| {
            let prepared = prepare(&PrepareInput {
                call_id: "c1",
                purpose: Purpose::Reasoning,
                model: &model,
                system_prompt: Some("You help."),
                materials: &materials,
                transforms: &[],
                history: (&history).into(),
                projections: &[],
                tools: &Default::default(),
                estimator,
                budget: BudgetSettings::default(),
                pairing: PairingCheck::Strict,
                selection: None,
            })
            .expect("prepares");
            prepared
                .manifest
                .items
                .iter()
                .filter(|item| matches!(item.kind, ItemKind::Material { .. }))
                .cloned()
                .collect::<Vec<_>>()
        };
        let listed = |items: Vec<Arc<ManifestItem>>| {
            items
                .iter()
                .map(|item| (item.id.clone(), item.tokens, item.content_hash.clone()))
                .collect::<Vec<_>>()
        };
        let same_items = |a: &[Arc<ManifestItem>], b: &[Arc<ManifestItem>]| {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b))
        };
        let fresh = |estimator: &dyn TokenEstimator| {
            render::in_layout_order(&materials)
                .map(|material| {
                    let item = material_item(material, estimator);
                    (item.id, item.tokens, item.content_hash)
                })
                .collect::<Vec<_>>()
        };
        let (by_approx, by_ratio) = (
            fresh(&ApproximateEstimator::default()),
            fresh(&RatioEstimator),
        );
        assert_eq!(by_approx.len(), 3);
        assert_ne!(
            by_approx, by_ratio,
            "the two methods count these texts apart"
        );
        let first = material_items(&approx);
        let again = material_items(&approx);
        assert!(
            same_items(&first, &again),
            "the second step reuses the items"
        );
        assert_eq!(listed(again), by_approx);
        for _ in 0..2 {
            assert_eq!(listed(material_items(&approx)), by_approx);
            assert_eq!(listed(material_items(&ratio)), by_ratio);
        }
    }

    /// A preparation of `history` with one projection, as `pairing` checks it, in `window`.
    fn prepared_with(
        history: &[Message],
        pairing: PairingCheck,
        window: Option<u64>,
    ) -> Result<Prepared, Box<Rejected>> {
        let model = ModelInfo {
            name: "m".into(),
            context_window: window,
            max_output_tokens: None,
        };
        let projections = [Message::user("task", "Tasks: fix the export.")];
        prepare(&PrepareInput {
            call_id: "c1",
            purpose: Purpose::Reasoning,
            model: &model,
            system_prompt: Some("You help."),
            materials: &[Material::instruction("rules", "Be brief.")],
            transforms: &[],
            history: history.into(),
            projections: &projections,
            tools: &Default::default(),
            estimator: &crate::tokens::RatioEstimator,
            budget: BudgetSettings::default(),
            pairing,
            selection: None,
        })
    }

    /// The conversation allowance is the input limit less everything in the request but the
    /// conversation: the materials, the projections, the overhead.
    #[test]
    fn the_allowance_is_the_limit_less_all_but_the_conversation() {
        let history = [
            Message::user("u1", "Fix the export, it fails on large files."),
            Message::assistant("a1", "Looking at it now."),
        ];
        let prepared =
            prepared_with(&history, PairingCheck::Strict, Some(8_000)).expect("prepares");
        let manifest = &prepared.manifest;
        let conversation: u64 = history
            .iter()
            .map(|m| crate::tokens::RatioEstimator.message_tokens(m))
            .sum();
        let estimated = u64::try_from(manifest.estimated_input_tokens).expect("counted");
        let limit = u64::try_from(manifest.input_limit).expect("a limit");
        assert!(
            estimated > conversation + 10,
            "the rest of the request costs something"
        );
        assert_eq!(
            manifest.conversation_allowance,
            i64::try_from(limit - (estimated - conversation)).expect("fits")
        );
        // The output reserve goes on the request when there is one.
        assert_eq!(
            prepared.request.max_output_tokens,
            Some(prepared.budget.output_reserve)
        );
        assert!(prepared.budget.output_reserve > 0);
        let unknown = prepared_with(&history, PairingCheck::Strict, None).expect("prepares");
        assert_eq!(unknown.budget.output_reserve, 0);
        assert_eq!(unknown.request.max_output_tokens, None);
    }

    /// Only `PairingCheck::Repair` repairs: a result whose call is gone is dropped and recorded;
    /// the strict check rejects the same history.
    #[test]
    fn only_the_repair_check_repairs_pairing() {
        let history = [
            Message::user("u1", "Fix it."),
            Message::tool_result("t1", "call_gone", "execute", "ok", false),
            Message::assistant("a1", "Done."),
        ];
        let repaired =
            prepared_with(&history, PairingCheck::Repair, Some(8_000)).expect("repaired");
        assert!(
            repaired
                .request
                .messages
                .iter()
                .all(|m| m.tool_results().next().is_none())
        );
        assert!(!repaired.manifest.transforms.is_empty());
        let rejected = prepared_with(&history, PairingCheck::Strict, Some(8_000))
            .expect_err("an orphan result");
        assert_eq!(rejected.error.kind(), "invalid_tool_pairs");
        assert!(rejected.manifest.transforms.is_empty());
    }

    /// Each rejection has its own stable name.
    #[test]
    fn every_rejection_names_its_kind() {
        let failed = |kind| {
            PrepareError::SourceFailed(source::SourceLoadError::Failed {
                source_name: "s".into(),
                kind,
                message: "down".into(),
            })
        };
        let errors = [
            (
                PrepareError::InvalidToolPairs {
                    problem: PairingProblem::BlankId { index: 0 },
                },
                "invalid_tool_pairs",
            ),
            (
                PrepareError::ContextBudgetExceeded {
                    estimated: 2,
                    limit: 1,
                },
                "context_budget_exceeded",
            ),
            (failed(source::FailureKind::Error), "source_failed"),
            (
                PrepareError::SourceFailed(source::SourceLoadError::Structural {
                    source_name: "s".into(),
                    problem: "empty".into(),
                }),
                "source_invalid",
            ),
            (
                PrepareError::InvalidSelection(omission::SelectionError::Unknown("x".into())),
                "invalid_selection_policy",
            ),
            (PrepareError::StateConflict, "state_conflict"),
            (PrepareError::HistoryConflict, "history_conflict"),
        ];
        for (error, kind) in errors {
            assert_eq!(error.kind(), kind, "{error}");
        }
    }
}
