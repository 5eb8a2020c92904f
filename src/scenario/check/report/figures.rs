//! Each recorded transform of a preparation as the report shows it ([`TransformView`]): its
//! meaning in words, and the figures the trace holds for it.

use super::{Preparation, TransformView, meaning};
use crate::scenario::run::record::StepRecord;
use ctxbed_harness::agent::events::EventKind;
use ctxbed_harness::context::manifest::ContextManifest;
use ctxbed_harness::context::transform::Transform;
use ctxbed_harness::model::ModelRequest;

/// A recorded transform with its meaning and figures.
pub(super) fn transform_view(
    transform: &Transform,
    preparation: &Preparation<'_>,
    earlier: &[Preparation<'_>],
    step: &StepRecord,
    request: Option<&ModelRequest>,
) -> TransformView {
    TransformView {
        meaning: meaning(transform),
        figures: figures(transform, preparation, earlier, step, request),
        transform: transform.clone(),
    }
}

/// The figures the trace holds for a transform: conversation tokens against the previous
/// preparation for compaction stages, characters and preview tokens for an offload, the last
/// kept size of omitted material.
fn figures(
    transform: &Transform,
    preparation: &Preparation<'_>,
    earlier: &[Preparation<'_>],
    step: &StepRecord,
    request: Option<&ModelRequest>,
) -> Option<String> {
    match transform {
        Transform::HistoryCompaction { .. }
        | Transform::ArgumentTruncation { .. }
        | Transform::HistoryCompactionFailed { .. } => {
            let previous = preparation.previous?;
            let now = preparation.breakdown?;
            let forced = if previous.overflowed {
                format!(
                    " (forced: the provider rejected request #{} as too long)",
                    previous.number
                )
            } else {
                String::new()
            };
            Some(format!(
                "conversation {} tok in request #{} → {} tok here; whole request {} → {} tok{forced}",
                previous.conversation_tokens,
                previous.number,
                now.conversation,
                previous.estimated_tokens,
                now.total()
            ))
        }
        Transform::ToolOutputPrune {
            tokens_before,
            tokens_after,
            ..
        } => Some(format!(
            "pruned results {tokens_before} → {tokens_after} tok"
        )),
        Transform::ToolResultOffload { call_id, .. }
        | Transform::ToolResultOffloadFailed { call_id } => {
            offload_figures(call_id, step, request, &preparation.build.manifest)
        }
        Transform::OmittedForBudget { item_id } => earlier.iter().rev().find_map(|before| {
            let item = before.build.manifest.material(item_id)?;
            Some(format!(
                "{} tok when last kept, in request #{}",
                item.tokens, before.number
            ))
        }),
        _ => None,
    }
}

/// An offloaded result's size in characters, and the tokens of the message that carries its
/// preview in this request.
fn offload_figures(
    call_id: &str,
    step: &StepRecord,
    request: Option<&ModelRequest>,
    manifest: &ContextManifest,
) -> Option<String> {
    let chars = step.events.iter().find_map(|event| match &event.kind {
        EventKind::ToolResult { result, .. } if result.call_id == call_id => {
            Some(result.text_chars())
        }
        _ => None,
    });
    let carrier = request.and_then(|request| {
        request
            .messages
            .iter()
            .find(|m| m.tool_results().any(|r| r.call_id == call_id))
    });
    let tokens = carrier.and_then(|message| {
        manifest
            .items
            .iter()
            .find(|item| item.id == message.id)
            .map(|item| (item.id.as_str(), item.tokens))
    });
    match (chars, tokens) {
        (Some(chars), Some((id, tokens))) => Some(format!(
            "result {chars} chars → message {id} {tokens} tok in this request"
        )),
        (Some(chars), None) => Some(format!("result {chars} chars")),
        (None, Some((id, tokens))) => Some(format!("message {id} {tokens} tok in this request")),
        (None, None) => None,
    }
}
