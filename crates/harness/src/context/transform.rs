//! What a preparation stage changed on the way to a request, as a typed [`Transform`].
//!
//! Every stage that drops, rewrites or adds something records one [`Transform`] in the
//! [`ContextManifest`](super::manifest::ContextManifest): loading (workspace files, sources),
//! offload, omission for budget, compaction, pairing repair and the task projection. Its text
//! form ([`Display`](std::fmt::Display)) is `kind:detail` (`tool_pairs_unchecked` has no detail),
//! the form traces print and session logs hold; [`FromStr`] reads that text back and serde
//! writes and reads it as that one string.
//!
//! ```
//! use ctxbed_harness::context::transform::Transform;
//! let transform = Transform::HistoryCompaction { messages: 17 };
//! assert_eq!(transform.to_string(), "history_compaction:17 messages -> 1 summary");
//! assert_eq!(transform.kind(), "history_compaction");
//! assert_eq!("history_compaction:17 messages -> 1 summary".parse(), Ok(transform));
//! assert!("brand_new_stage:x".parse::<Transform>().is_err());
//! ```
//!
//! **Invariant:** for every string `text` that parses, the parsed transform prints as `text`
//! again (numbers are read only in their canonical decimal form). A transform whose free-text
//! fields contain the separator may print as text that parses into a different split: the call
//! id of [`Transform::ToolResultOffload`] is everything before the last `:` of its detail.

use std::fmt;
use std::str::FromStr;

use serde::de::{Deserialize, Deserializer, Error as _};
use serde::ser::{Serialize, Serializer};

use crate::context::source::FailureKind;
use crate::storage::{PathError, WorkspacePath};

/// Longest piece of the parsed text an error quotes.
const QUOTED_CHARS_MAX: usize = 80;

const HISTORY_COMPACTION_SUFFIX: &str = " messages -> 1 summary";
const MEMORY_FLUSH_SUFFIX: &str = " facts";
const HISTORY_COMPACTION_SKIPPED_DETAIL: &str = "nothing_before_the_tail";
const COMPACTION_TAIL_DETAIL: &str = "keep_messages (token cap is 0)";
const DROPPED_RESULT: &str = "dropped_result";
const CLOSED_CALL: &str = "closed_call";

/// One change a preparation stage made, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Transform {
    /// Offload (`context::offload`): the result of tool call `call_id` was over the offload
    /// limit; its full text was written to `path` and the request carries a preview and that
    /// path instead. `tool_result_offload:<call id>:<path>`.
    ToolResultOffload {
        /// The tool call whose result was offloaded.
        call_id: String,
        /// Where the full text is stored in the workspace.
        path: WorkspacePath,
    },
    /// Offload (`context::offload`): writing the result of tool call `call_id` failed, so the
    /// whole result stays in the conversation. `tool_result_offload_failed:<call id>`.
    ToolResultOffloadFailed {
        /// The tool call whose result could not be offloaded.
        call_id: String,
    },
    /// Omission (`context::prepare`): optional material `item_id` was left out because the
    /// request was over its input limit. `omitted_for_budget:<item id>`.
    OmittedForBudget {
        /// The material's id, as its manifest item names it (`source/docs/faq`,
        /// `workspace:MEMORY.md`).
        item_id: String,
    },
    /// Source loading (`context::source::load_all`): source `source_name` failed to load and
    /// its failure policy is OMIT, so none of its blocks are in the request.
    /// `source_unavailable:source/<name>/:<kind>`.
    SourceUnavailable {
        /// The registered source's name.
        source_name: String,
        /// How loading failed.
        kind: FailureKind,
    },
    /// Workspace loading (`context::workspace::load`): file `item_id` was skipped because the
    /// workspace token allowance was used up. `workspace_skipped:<item id>`.
    WorkspaceSkipped {
        /// The material id, `workspace:<file>`.
        item_id: String,
    },
    /// Workspace loading (`context::workspace::load`): file `item_id` was cut to what was left
    /// of the workspace token allowance. `workspace_truncated:<item id>`.
    WorkspaceTruncated {
        /// The material id, `workspace:<file>`.
        item_id: String,
    },
    /// Compaction (`agent::compact`, argument truncation): long tool-call arguments were
    /// shortened in `messages` older messages. `argument_truncation:<messages>`.
    ArgumentTruncation {
        /// How many messages changed.
        messages: usize,
    },
    /// Compaction (`agent::compact`, aggregate prune): `results` older tool results were cut to
    /// short previews, their total going from `tokens_before` to `tokens_after`.
    /// `tool_output_prune:<results> results, <before> -> <after> tokens`.
    ToolOutputPrune {
        /// How many results were pruned.
        results: usize,
        /// Their tokens before pruning.
        tokens_before: u64,
        /// Their tokens after pruning.
        tokens_after: u64,
    },
    /// Compaction (`agent::compact`): no token cap is configured for the tail and the token
    /// budget is 0, so the kept tail is counted in messages.
    /// `compaction_tail:keep_messages (token cap is 0)`.
    CompactionTailInMessages,
    /// Compaction (`agent::compact`): compaction was due but the pair-closed cut left nothing
    /// before the tail to summarise. `history_compaction_skipped:nothing_before_the_tail`.
    HistoryCompactionSkipped,
    /// Compaction (`agent::compact`, memory flush): the memory model extracted facts from the
    /// messages about to be summarised, and `facts` of them were new and appended to the memory
    /// store. `memory_flush:<facts> facts`.
    MemoryFlush {
        /// How many facts were written.
        facts: usize,
    },
    /// Compaction (`agent::compact`, memory flush): the flush failed and compaction went on
    /// without it. `reason` is `write` (the memory store refused the facts), the preparation
    /// error of an extraction request that does not fit (`context_budget_exceeded`), or the memory
    /// model's error kind (`context_overflow`, `timeout`, ...).
    /// `memory_flush_failed:<reason>`.
    MemoryFlushFailed {
        /// Why, as above.
        reason: String,
    },
    /// Compaction (`agent::compact`): a summary replaced the `messages` oldest messages of the
    /// conversation. `history_compaction:<messages> messages -> 1 summary`.
    HistoryCompaction {
        /// How many messages the summary replaced.
        messages: usize,
    },
    /// Compaction (`agent::compact`): compaction was due but the summary failed for `reason`
    /// (e.g. `blank_summary`); the conversation went on without a summary.
    /// `history_compaction_failed:<reason>`.
    HistoryCompactionFailed {
        /// A short reason.
        reason: String,
    },
    /// Pairing repair (`context::pairs::repair`, `tool_pairs = "repair"`): a tool result that
    /// answers no call was dropped from the request.
    /// `tool_pairs_repaired:dropped_result:<call id>`.
    ToolPairsDroppedResult {
        /// The call id the dropped result named.
        call_id: String,
    },
    /// Pairing repair (`context::pairs::repair`, `tool_pairs = "repair"`): a tool call without
    /// a result was closed by a synthetic error result.
    /// `tool_pairs_repaired:closed_call:<call id>`.
    ToolPairsClosedCall {
        /// The call that was closed.
        call_id: String,
    },
    /// Validation (`context::prepare`, `tool_pairs = "unchecked"`): tool pairing was not
    /// checked. `tool_pairs_unchecked`.
    ToolPairsUnchecked,
    /// Task projection (`task::projection::project`): an obsolete Todo receipt in message
    /// `message_id` was shortened to a one-line note. `todo_receipt_shortened:<message id>`.
    TodoReceiptShortened {
        /// The message holding the receipt.
        message_id: String,
    },
    /// Task projection (`task::projection::project`): the Todo list of task revision
    /// `revision` was reconstructed from state into `TASK_STATE`, since no current receipt is
    /// visible. `todo_list_projected:<revision>`.
    TodoListProjected {
        /// The Todo list's revision.
        revision: u64,
    },
}

impl Transform {
    /// Every kind name, in declaration order of the variants (both repair variants share
    /// `tool_pairs_repaired`).
    pub const KINDS: [&'static str; 18] = [
        "tool_result_offload",
        "tool_result_offload_failed",
        "omitted_for_budget",
        "source_unavailable",
        "workspace_skipped",
        "workspace_truncated",
        "argument_truncation",
        "tool_output_prune",
        "compaction_tail",
        "history_compaction_skipped",
        "memory_flush",
        "memory_flush_failed",
        "history_compaction",
        "history_compaction_failed",
        "tool_pairs_repaired",
        "tool_pairs_unchecked",
        "todo_receipt_shortened",
        "todo_list_projected",
    ];

    /// True for the transforms of conversation reduction (argument truncation, prune and
    /// compaction, with the memory flush), which run after omission.
    pub fn is_conversation_reduction(&self) -> bool {
        matches!(
            self,
            Transform::ArgumentTruncation { .. }
                | Transform::ToolOutputPrune { .. }
                | Transform::CompactionTailInMessages
                | Transform::HistoryCompactionSkipped
                | Transform::MemoryFlush { .. }
                | Transform::MemoryFlushFailed { .. }
                | Transform::HistoryCompaction { .. }
                | Transform::HistoryCompactionFailed { .. }
        )
    }

    /// The kind's name: the text form up to its first `:`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transform::ToolResultOffload { .. } => "tool_result_offload",
            Transform::ToolResultOffloadFailed { .. } => "tool_result_offload_failed",
            Transform::OmittedForBudget { .. } => "omitted_for_budget",
            Transform::SourceUnavailable { .. } => "source_unavailable",
            Transform::WorkspaceSkipped { .. } => "workspace_skipped",
            Transform::WorkspaceTruncated { .. } => "workspace_truncated",
            Transform::ArgumentTruncation { .. } => "argument_truncation",
            Transform::ToolOutputPrune { .. } => "tool_output_prune",
            Transform::CompactionTailInMessages => "compaction_tail",
            Transform::HistoryCompactionSkipped => "history_compaction_skipped",
            Transform::MemoryFlush { .. } => "memory_flush",
            Transform::MemoryFlushFailed { .. } => "memory_flush_failed",
            Transform::HistoryCompaction { .. } => "history_compaction",
            Transform::HistoryCompactionFailed { .. } => "history_compaction_failed",
            Transform::ToolPairsDroppedResult { .. } | Transform::ToolPairsClosedCall { .. } => {
                "tool_pairs_repaired"
            }
            Transform::ToolPairsUnchecked => "tool_pairs_unchecked",
            Transform::TodoReceiptShortened { .. } => "todo_receipt_shortened",
            Transform::TodoListProjected { .. } => "todo_list_projected",
        }
    }
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind();
        match self {
            Transform::ToolResultOffload { call_id, path } => write!(f, "{kind}:{call_id}:{path}"),
            Transform::ToolResultOffloadFailed { call_id } => write!(f, "{kind}:{call_id}"),
            Transform::OmittedForBudget { item_id }
            | Transform::WorkspaceSkipped { item_id }
            | Transform::WorkspaceTruncated { item_id } => write!(f, "{kind}:{item_id}"),
            Transform::SourceUnavailable {
                source_name,
                kind: failure,
            } => {
                write!(f, "{kind}:source/{source_name}/:{}", failure.as_str())
            }
            Transform::ArgumentTruncation { messages } => write!(f, "{kind}:{messages}"),
            Transform::ToolOutputPrune {
                results,
                tokens_before,
                tokens_after,
            } => write!(
                f,
                "{kind}:{results} results, {tokens_before} -> {tokens_after} tokens"
            ),
            Transform::CompactionTailInMessages => write!(f, "{kind}:{COMPACTION_TAIL_DETAIL}"),
            Transform::HistoryCompactionSkipped => {
                write!(f, "{kind}:{HISTORY_COMPACTION_SKIPPED_DETAIL}")
            }
            Transform::MemoryFlush { facts } => write!(f, "{kind}:{facts}{MEMORY_FLUSH_SUFFIX}"),
            Transform::MemoryFlushFailed { reason } => write!(f, "{kind}:{reason}"),
            Transform::HistoryCompaction { messages } => {
                write!(f, "{kind}:{messages}{HISTORY_COMPACTION_SUFFIX}")
            }
            Transform::HistoryCompactionFailed { reason } => write!(f, "{kind}:{reason}"),
            Transform::ToolPairsDroppedResult { call_id } => {
                write!(f, "{kind}:{DROPPED_RESULT}:{call_id}")
            }
            Transform::ToolPairsClosedCall { call_id } => {
                write!(f, "{kind}:{CLOSED_CALL}:{call_id}")
            }
            Transform::ToolPairsUnchecked => f.write_str(kind),
            Transform::TodoReceiptShortened { message_id } => write!(f, "{kind}:{message_id}"),
            Transform::TodoListProjected { revision } => write!(f, "{kind}:{revision}"),
        }
    }
}

/// Why a transform's text did not parse. Quoted text is bounded and escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformParseError {
    /// The text before the first `:` names no transform kind.
    #[error(
        "unknown transform kind `{kind}`; known kinds: {}",
        Transform::KINDS.join(", ")
    )]
    UnknownKind {
        /// The name found, bounded.
        kind: String,
    },
    /// The kind is known but its detail is missing, extra or not of the expected form.
    #[error("transform `{kind}` has detail `{detail}`, expected `{kind}{expected}`")]
    Malformed {
        /// The transform kind.
        kind: &'static str,
        /// The detail found (after the first `:`; empty when there was none), bounded.
        detail: String,
        /// The expected form of what follows the kind.
        expected: &'static str,
    },
    /// An offload transform's path is not a valid workspace path.
    #[error("transform `tool_result_offload` names an invalid path: {0}")]
    Path(#[source] PathError),
}

impl FromStr for Transform {
    type Err = TransformParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (name, detail) = match text.split_once(':') {
            Some((name, detail)) => (name, Some(detail)),
            None => (text, None),
        };
        let Some(kind) = Transform::KINDS.iter().copied().find(|kind| *kind == name) else {
            return Err(TransformParseError::UnknownKind {
                kind: crate::format::snippet(name, QUOTED_CHARS_MAX),
            });
        };
        let malformed = |expected: &'static str| TransformParseError::Malformed {
            kind,
            detail: crate::format::snippet(detail.unwrap_or(""), QUOTED_CHARS_MAX),
            expected,
        };
        if kind == "tool_pairs_unchecked" {
            return match detail {
                None => Ok(Transform::ToolPairsUnchecked),
                Some(_) => Err(malformed("")),
            };
        }
        let detail = detail.ok_or_else(|| malformed(expected_detail(kind)))?;
        parse_detail(kind, detail).ok_or_else(|| malformed(expected_detail(kind)))?
    }
}

/// The form of a kind's detail, for errors.
fn expected_detail(kind: &str) -> &'static str {
    match kind {
        "tool_result_offload" => ":<call id>:<path>",
        "tool_result_offload_failed" => ":<call id>",
        "omitted_for_budget" | "workspace_skipped" | "workspace_truncated" => ":<item id>",
        "source_unavailable" => ":source/<name>/:<timeout|error|no_list>",
        "argument_truncation" => ":<messages>",
        "tool_output_prune" => ":<results> results, <before> -> <after> tokens",
        "compaction_tail" => ":keep_messages (token cap is 0)",
        "history_compaction_skipped" => ":nothing_before_the_tail",
        "memory_flush" => ":<facts> facts",
        "memory_flush_failed" => ":<reason>",
        "history_compaction" => ":<messages> messages -> 1 summary",
        "history_compaction_failed" => ":<reason>",
        "tool_pairs_repaired" => {
            ":dropped_result:<call id>` or `tool_pairs_repaired:closed_call:<call id>"
        }
        "todo_receipt_shortened" => ":<message id>",
        "todo_list_projected" => ":<revision>",
        _ => "",
    }
}

/// The transform of a known `kind` with this detail; `None` when the detail is not of the
/// kind's form. A path error is returned as such.
fn parse_detail(kind: &str, detail: &str) -> Option<Result<Transform, TransformParseError>> {
    if kind == "tool_result_offload" {
        let (call_id, path) = detail.rsplit_once(':')?;
        return Some(
            WorkspacePath::parse(path)
                .map(|path| Transform::ToolResultOffload {
                    call_id: call_id.to_string(),
                    path,
                })
                .map_err(TransformParseError::Path),
        );
    }
    text_detail(kind, detail)
        .or_else(|| structured_detail(kind, detail))
        .map(Ok)
}

/// The transforms whose detail is one id or reason, as it is.
fn text_detail(kind: &str, detail: &str) -> Option<Transform> {
    let text = detail.to_string();
    Some(match kind {
        "tool_result_offload_failed" => Transform::ToolResultOffloadFailed { call_id: text },
        "omitted_for_budget" => Transform::OmittedForBudget { item_id: text },
        "workspace_skipped" => Transform::WorkspaceSkipped { item_id: text },
        "workspace_truncated" => Transform::WorkspaceTruncated { item_id: text },
        "memory_flush_failed" if !detail.is_empty() => {
            Transform::MemoryFlushFailed { reason: text }
        }
        "history_compaction_failed" => Transform::HistoryCompactionFailed { reason: text },
        "todo_receipt_shortened" => Transform::TodoReceiptShortened { message_id: text },
        _ => return None,
    })
}

/// The transforms whose detail has a form of its own: counts, fixed words, a source failure,
/// a pairing repair.
fn structured_detail(kind: &str, detail: &str) -> Option<Transform> {
    let text = |value: &str| value.to_string();
    Some(match kind {
        "source_unavailable" => {
            let (source, failure) = detail.strip_prefix("source/")?.rsplit_once("/:")?;
            Transform::SourceUnavailable {
                source_name: text(source),
                kind: FailureKind::from_name(failure)?,
            }
        }
        "argument_truncation" => Transform::ArgumentTruncation {
            messages: number(detail)?,
        },
        "tool_output_prune" => {
            let (results, tokens) = detail.split_once(" results, ")?;
            let (before, after) = tokens.strip_suffix(" tokens")?.split_once(" -> ")?;
            Transform::ToolOutputPrune {
                results: number(results)?,
                tokens_before: number(before)?,
                tokens_after: number(after)?,
            }
        }
        "compaction_tail" if detail == COMPACTION_TAIL_DETAIL => {
            Transform::CompactionTailInMessages
        }
        "history_compaction_skipped" if detail == HISTORY_COMPACTION_SKIPPED_DETAIL => {
            Transform::HistoryCompactionSkipped
        }
        "memory_flush" => Transform::MemoryFlush {
            facts: number(detail.strip_suffix(MEMORY_FLUSH_SUFFIX)?)?,
        },
        "history_compaction" => Transform::HistoryCompaction {
            messages: number(detail.strip_suffix(HISTORY_COMPACTION_SUFFIX)?)?,
        },
        "tool_pairs_repaired" => match detail.split_once(':')? {
            (DROPPED_RESULT, call_id) => Transform::ToolPairsDroppedResult {
                call_id: text(call_id),
            },
            (CLOSED_CALL, call_id) => Transform::ToolPairsClosedCall {
                call_id: text(call_id),
            },
            _ => return None,
        },
        "todo_list_projected" => Transform::TodoListProjected {
            revision: number(detail)?,
        },
        _ => return None,
    })
}

/// A number in canonical decimal form only (digits, no sign, no leading zero), so that what
/// parses prints back the same.
fn number<T: FromStr>(text: &str) -> Option<T> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if canonical { text.parse().ok() } else { None }
}

impl Serialize for Transform {
    /// The text form, as one string.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Transform {
    /// Parses the text form.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> WorkspacePath {
        WorkspacePath::parse(text).expect("a valid test path")
    }

    /// A kind given without its detail is refused with the form its detail takes, for every
    /// kind that has one.
    #[test]
    fn a_missing_detail_is_refused_with_the_form_it_takes() {
        for kind in Transform::KINDS
            .iter()
            .filter(|kind| **kind != "tool_pairs_unchecked")
        {
            match kind.parse::<Transform>() {
                Err(TransformParseError::Malformed { expected, .. }) => {
                    assert!(expected.starts_with(':'), "{kind}: {expected:?}");
                }
                other => panic!("{kind}: {other:?}"),
            }
        }
    }

    /// A kind whose detail is fixed takes only that detail.
    #[test]
    fn a_fixed_detail_must_be_the_one_its_kind_records() {
        for text in [
            "compaction_tail:keep_everything",
            "history_compaction_skipped:nothing_at_all",
        ] {
            let parsed = text.parse::<Transform>();
            assert!(
                matches!(parsed, Err(TransformParseError::Malformed { .. })),
                "{text}: {parsed:?}"
            );
        }
    }

    /// One value of every variant with the text today's stages record for it.
    fn every_variant() -> Vec<(Transform, &'static str)> {
        vec![
            (
                Transform::ToolResultOffload {
                    call_id: "call_0001".into(),
                    path: path("large_tool_results/agent/call_0001-9458d160fc6fa70e"),
                },
                "tool_result_offload:call_0001:large_tool_results/agent/call_0001-9458d160fc6fa70e",
            ),
            (
                Transform::ToolResultOffloadFailed {
                    call_id: "call_0001".into(),
                },
                "tool_result_offload_failed:call_0001",
            ),
            (
                Transform::OmittedForBudget {
                    item_id: "workspace:knowledge/format.md".into(),
                },
                "omitted_for_budget:workspace:knowledge/format.md",
            ),
            (
                Transform::SourceUnavailable {
                    source_name: "flaky".into(),
                    kind: FailureKind::Timeout,
                },
                "source_unavailable:source/flaky/:timeout",
            ),
            (
                Transform::WorkspaceSkipped {
                    item_id: "workspace:knowledge/format.md".into(),
                },
                "workspace_skipped:workspace:knowledge/format.md",
            ),
            (
                Transform::WorkspaceTruncated {
                    item_id: "workspace:MEMORY.md".into(),
                },
                "workspace_truncated:workspace:MEMORY.md",
            ),
            (
                Transform::ArgumentTruncation { messages: 1 },
                "argument_truncation:1",
            ),
            (
                Transform::ToolOutputPrune {
                    results: 8,
                    tokens_before: 64_000,
                    tokens_after: 6_512,
                },
                "tool_output_prune:8 results, 64000 -> 6512 tokens",
            ),
            (
                Transform::CompactionTailInMessages,
                "compaction_tail:keep_messages (token cap is 0)",
            ),
            (
                Transform::HistoryCompactionSkipped,
                "history_compaction_skipped:nothing_before_the_tail",
            ),
            (Transform::MemoryFlush { facts: 2 }, "memory_flush:2 facts"),
            (
                Transform::MemoryFlushFailed {
                    reason: "write".to_string(),
                },
                "memory_flush_failed:write",
            ),
            (
                Transform::HistoryCompaction { messages: 17 },
                "history_compaction:17 messages -> 1 summary",
            ),
            (
                Transform::HistoryCompactionFailed {
                    reason: "blank_summary".into(),
                },
                "history_compaction_failed:blank_summary",
            ),
            (
                Transform::ToolPairsDroppedResult {
                    call_id: "toolu_lost".into(),
                },
                "tool_pairs_repaired:dropped_result:toolu_lost",
            ),
            (
                Transform::ToolPairsClosedCall {
                    call_id: "toolu_open".into(),
                },
                "tool_pairs_repaired:closed_call:toolu_open",
            ),
            (Transform::ToolPairsUnchecked, "tool_pairs_unchecked"),
            (
                Transform::TodoReceiptShortened {
                    message_id: "m3".into(),
                },
                "todo_receipt_shortened:m3",
            ),
            (
                Transform::TodoListProjected { revision: 1 },
                "todo_list_projected:1",
            ),
        ]
    }

    /// The position of a variant in declaration order; no wildcard, so a new variant fails to
    /// compile here until `every_variant` lists it.
    fn ordinal(transform: &Transform) -> usize {
        match transform {
            Transform::ToolResultOffload { .. } => 0,
            Transform::ToolResultOffloadFailed { .. } => 1,
            Transform::OmittedForBudget { .. } => 2,
            Transform::SourceUnavailable { .. } => 3,
            Transform::WorkspaceSkipped { .. } => 4,
            Transform::WorkspaceTruncated { .. } => 5,
            Transform::ArgumentTruncation { .. } => 6,
            Transform::ToolOutputPrune { .. } => 7,
            Transform::CompactionTailInMessages => 8,
            Transform::HistoryCompactionSkipped => 9,
            Transform::MemoryFlush { .. } => 10,
            Transform::MemoryFlushFailed { .. } => 11,
            Transform::HistoryCompaction { .. } => 12,
            Transform::HistoryCompactionFailed { .. } => 13,
            Transform::ToolPairsDroppedResult { .. } => 14,
            Transform::ToolPairsClosedCall { .. } => 15,
            Transform::ToolPairsUnchecked => 16,
            Transform::TodoReceiptShortened { .. } => 17,
            Transform::TodoListProjected { .. } => 18,
        }
    }

    #[test]
    fn every_variant_prints_its_text_and_parses_back() {
        let all = every_variant();
        let ordinals: Vec<usize> = all.iter().map(|(t, _)| ordinal(t)).collect();
        assert_eq!(
            ordinals,
            (0..=18).collect::<Vec<_>>(),
            "one of each, in order"
        );
        for (transform, text) in all {
            assert_eq!(transform.to_string(), text);
            assert_eq!(text.parse::<Transform>(), Ok(transform.clone()), "{text}");
            assert!(text.starts_with(transform.kind()), "{text}");
            assert!(Transform::KINDS.contains(&transform.kind()));
            let json = serde_json::to_string(&transform).unwrap();
            assert_eq!(json, serde_json::to_string(text).unwrap());
            assert_eq!(serde_json::from_str::<Transform>(&json).unwrap(), transform);
        }
    }

    #[test]
    fn every_kind_is_some_variants_kind() {
        let kinds: Vec<&str> = every_variant().iter().map(|(t, _)| t.kind()).collect();
        for kind in Transform::KINDS {
            assert!(kinds.contains(&kind), "{kind}");
        }
    }

    #[test]
    fn free_text_with_separators_round_trips() {
        for transform in [
            Transform::ToolResultOffload {
                call_id: "call:with:colons".into(),
                path: path("large_tool_results/agent/call_with_colons-00"),
            },
            Transform::OmittedForBudget {
                item_id: "source/docs/a:b".into(),
            },
            Transform::SourceUnavailable {
                source_name: "odd/:name".into(),
                kind: FailureKind::NoList,
            },
            Transform::HistoryCompactionFailed {
                reason: "summary request: overflow (1 -> 2)".into(),
            },
            Transform::ToolPairsClosedCall {
                call_id: "a:b".into(),
            },
            Transform::TodoReceiptShortened {
                message_id: String::new(),
            },
        ] {
            let text = transform.to_string();
            assert_eq!(text.parse::<Transform>(), Ok(transform), "{text}");
        }
    }

    #[test]
    fn unknown_or_malformed_text_is_a_clear_error() {
        let error = "brand_new_stage:x".parse::<Transform>().unwrap_err();
        assert_eq!(
            error,
            TransformParseError::UnknownKind {
                kind: "brand_new_stage".into()
            }
        );
        assert!(
            error
                .to_string()
                .contains("unknown transform kind `brand_new_stage`")
        );
        assert!(error.to_string().contains("history_compaction"));
        for (text, kind) in [
            (
                "history_compaction:many messages -> 1 summary",
                "history_compaction",
            ),
            (
                "history_compaction:+3 messages -> 1 summary",
                "history_compaction",
            ),
            (
                "history_compaction:03 messages -> 1 summary",
                "history_compaction",
            ),
            ("history_compaction", "history_compaction"),
            ("tool_output_prune:8 results", "tool_output_prune"),
            ("tool_result_offload:no-path", "tool_result_offload"),
            ("source_unavailable:source/x/:melted", "source_unavailable"),
            ("source_unavailable:x:error", "source_unavailable"),
            ("tool_pairs_repaired:mended:c1", "tool_pairs_repaired"),
            ("tool_pairs_unchecked:yes", "tool_pairs_unchecked"),
            ("compaction_tail:other", "compaction_tail"),
            ("memory_flush_failed:", "memory_flush_failed"),
            ("todo_list_projected:-1", "todo_list_projected"),
            (
                "argument_truncation:99999999999999999999999",
                "argument_truncation",
            ),
        ] {
            match text.parse::<Transform>() {
                Err(TransformParseError::Malformed { kind: found, .. }) => {
                    assert_eq!(found, kind, "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let error = "tool_pairs_repaired:mended:c1"
            .parse::<Transform>()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "transform `tool_pairs_repaired` has detail `mended:c1`, expected \
             `tool_pairs_repaired:dropped_result:<call id>` or \
             `tool_pairs_repaired:closed_call:<call id>`"
        );
        assert!(matches!(
            "tool_result_offload:c1:/etc/passwd".parse::<Transform>(),
            Err(TransformParseError::Path(PathError::Absolute(_)))
        ));
        assert!(serde_json::from_str::<Transform>(r#""nope""#).is_err());
        let long = "x".repeat(10_000);
        let error = long.parse::<Transform>().unwrap_err().to_string();
        assert!(error.len() < 1_000, "errors quote a bounded name");
    }
}
