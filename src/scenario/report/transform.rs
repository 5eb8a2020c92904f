//! Manifest transforms, parsed from the text the stages record, with their meaning in words.
//!
//! Each stage records a transform as `name:detail` (see `context` and `agent::compact`). A
//! transform this module does not know, or one whose detail does not parse, is
//! [`Transform::Other`] and is shown as recorded.

/// Longest id, name or path shown in words before it is cut.
const ID_CHARS_MAX: usize = 120;

/// A manifest transform, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transform {
    Offloaded {
        call_id: String,
        path: String,
    },
    OffloadFailed {
        call_id: String,
    },
    OmittedForBudget {
        item_id: String,
    },
    SourceUnavailable {
        source: String,
        reason: String,
    },
    HistoryCompaction {
        messages: u64,
    },
    HistoryCompactionFailed {
        reason: String,
    },
    HistoryCompactionSkipped {
        reason: String,
    },
    CompactionTail {
        note: String,
    },
    ToolOutputPrune {
        results: u64,
        before: u64,
        after: u64,
    },
    ArgumentTruncation {
        messages: u64,
    },
    MemoryFlush {
        facts: u64,
    },
    DroppedOrphanResult {
        call_id: String,
    },
    ClosedOpenCall {
        call_id: String,
    },
    PairsUnchecked,
    WorkspaceSkipped {
        item_id: String,
    },
    WorkspaceTruncated {
        item_id: String,
    },
    /// A transform this report does not know; shown as recorded.
    Other,
}

impl Transform {
    /// Parses a manifest transform string; an unknown or malformed one is [`Transform::Other`].
    pub fn parse(raw: &str) -> Transform {
        let (name, rest) = raw.split_once(':').unwrap_or((raw, ""));
        let text = |value: &str| value.to_string();
        let number = |value: &str| value.trim().parse::<u64>().ok();
        let parsed = match name {
            "tool_result_offload" => {
                rest.rsplit_once(':')
                    .map(|(call, path)| Transform::Offloaded {
                        call_id: text(call),
                        path: text(path),
                    })
            }
            "tool_result_offload_failed" => Some(Transform::OffloadFailed {
                call_id: text(rest),
            }),
            "omitted_for_budget" => Some(Transform::OmittedForBudget {
                item_id: text(rest),
            }),
            "source_unavailable" => rest.rsplit_once(':').map(|(source, reason)| {
                let source = source.strip_prefix("source/").unwrap_or(source);
                Transform::SourceUnavailable {
                    source: text(source.strip_suffix('/').unwrap_or(source)),
                    reason: text(reason),
                }
            }),
            "history_compaction" => rest
                .strip_suffix(" messages -> 1 summary")
                .and_then(number)
                .map(|messages| Transform::HistoryCompaction { messages }),
            "history_compaction_failed" => {
                Some(Transform::HistoryCompactionFailed { reason: text(rest) })
            }
            "history_compaction_skipped" => {
                Some(Transform::HistoryCompactionSkipped { reason: text(rest) })
            }
            "compaction_tail" => Some(Transform::CompactionTail { note: text(rest) }),
            "tool_output_prune" => parse_prune(rest),
            "argument_truncation" => {
                number(rest).map(|messages| Transform::ArgumentTruncation { messages })
            }
            "memory_flush" => rest
                .strip_suffix(" facts")
                .and_then(number)
                .map(|facts| Transform::MemoryFlush { facts }),
            "tool_pairs_repaired" => match rest.split_once(':') {
                Some(("dropped_result", call)) => Some(Transform::DroppedOrphanResult {
                    call_id: text(call),
                }),
                Some(("closed_call", call)) => Some(Transform::ClosedOpenCall {
                    call_id: text(call),
                }),
                _ => None,
            },
            "tool_pairs_unchecked" if rest.is_empty() => Some(Transform::PairsUnchecked),
            "workspace_skipped" => Some(Transform::WorkspaceSkipped {
                item_id: text(rest),
            }),
            "workspace_truncated" => Some(Transform::WorkspaceTruncated {
                item_id: text(rest),
            }),
            _ => None,
        };
        parsed.unwrap_or(Transform::Other)
    }

    /// The transform's name as the manifest spells it (the part before the first `:`).
    pub fn name(raw: &str) -> &str {
        raw.split_once(':').map_or(raw, |(name, _)| name)
    }

    /// What the transform did, in words. Ids and paths are bounded and escaped like trace text.
    pub fn meaning(&self) -> String {
        let shown = |text: &str| ctxbed_harness::format::snippet(text, ID_CHARS_MAX);
        match self {
            Transform::Offloaded { call_id, path } => format!(
                "the result of tool call {} was over the offload limit: it was saved to {}, and \
                 the request carries a head/tail preview and that path instead",
                shown(call_id),
                shown(path)
            ),
            Transform::OffloadFailed { call_id } => format!(
                "offloading the result of tool call {} failed (the write was refused), so the \
                 whole result stays in the conversation",
                shown(call_id)
            ),
            Transform::OmittedForBudget { item_id } => format!(
                "optional material {} was left out: the request was over its input limit, and \
                 optional material leaves first, in the omission order",
                shown(item_id)
            ),
            Transform::SourceUnavailable { source, reason } => format!(
                "context source {} did not load ({}); its on_failure policy is \"omit\", so none \
                 of its blocks are in the request",
                shown(source),
                shown(reason)
            ),
            Transform::HistoryCompaction { messages } => format!(
                "compaction replaced the {messages} oldest conversation messages with one summary \
                 message; the cut never separates a tool call from its result"
            ),
            Transform::HistoryCompactionFailed { reason } => format!(
                "compaction was due but failed ({}); the conversation went without a summary",
                shown(reason)
            ),
            Transform::HistoryCompactionSkipped { reason } => format!(
                "compaction was due but had nothing to summarise ({})",
                shown(reason)
            ),
            Transform::CompactionTail { note } => format!(
                "the compaction tail is counted in messages: {}",
                shown(note)
            ),
            Transform::ToolOutputPrune { results, .. } => format!(
                "{results} older tool results were pruned to short previews before any summary"
            ),
            Transform::ArgumentTruncation { messages } => {
                format!("long tool-call arguments were truncated in {messages} older message(s)")
            }
            Transform::MemoryFlush { facts } => format!(
                "before compaction, {facts} fact(s) from the summarised messages were flushed to \
                 memory"
            ),
            Transform::DroppedOrphanResult { call_id } => format!(
                "a tool result for {} had no call, so it was dropped (tool_pairs = \"repair\")",
                shown(call_id)
            ),
            Transform::ClosedOpenCall { call_id } => format!(
                "tool call {} had no result, so a synthetic error result closes it (tool_pairs = \
                 \"repair\")",
                shown(call_id)
            ),
            Transform::PairsUnchecked => {
                "tool pairing was not checked (tool_pairs = \"unchecked\")".to_string()
            }
            Transform::WorkspaceSkipped { item_id } => format!(
                "workspace file {} was skipped: the workspace token allowance was used up",
                shown(item_id)
            ),
            Transform::WorkspaceTruncated { item_id } => format!(
                "workspace file {} was cut to what was left of the workspace token allowance",
                shown(item_id)
            ),
            Transform::Other => "recorded by a stage this report does not describe".to_string(),
        }
    }
}

fn parse_prune(rest: &str) -> Option<Transform> {
    let (results, tokens) = rest.split_once(" results, ")?;
    let (before, after) = tokens.strip_suffix(" tokens")?.split_once(" -> ")?;
    Some(Transform::ToolOutputPrune {
        results: results.parse().ok()?,
        before: before.parse().ok()?,
        after: after.parse().ok()?,
    })
}
