// Length: `meaning` is a table, one arm per transform kind, kept as one exhaustive `match` so
// that a new kind cannot go without words.
//! Manifest transforms in words, for the report and `explain`.
//!
//! The stages record typed [`Transform`]s (see `ctxbed_harness::context::transform`); this
//! module says what each one did.

use ctxbed_harness::context::transform::Transform;

/// Longest id, name or path shown in words before it is cut.
const ID_CHARS_MAX: usize = 120;

/// What the transform did, in words. Ids and paths are bounded and escaped like trace text.
pub fn meaning(transform: &Transform) -> String {
    let shown = |text: &str| ctxbed_harness::format::snippet(text, ID_CHARS_MAX);
    match transform {
        Transform::ToolResultOffload { call_id, path } => format!(
            "the result of tool call {} was over the offload limit: it was saved to {}, and \
             the request carries a head/tail preview and that path instead",
            shown(call_id),
            shown(path.as_str())
        ),
        Transform::ToolResultOffloadFailed { call_id } => format!(
            "offloading the result of tool call {} failed (the write was refused), so the \
             whole result stays in the conversation",
            shown(call_id)
        ),
        Transform::OmittedForBudget { item_id } => format!(
            "optional material {} was left out: the request was over its input limit, and \
             optional material leaves first, in the omission order",
            shown(item_id)
        ),
        Transform::SourceUnavailable { source_name, kind } => format!(
            "context source {} did not load ({}); its on_failure policy is \"omit\", so none \
             of its blocks are in the request",
            shown(source_name),
            kind.as_str()
        ),
        Transform::HistoryCompaction { messages } => format!(
            "compaction replaced the {messages} oldest conversation messages with one summary \
             message; the cut never separates a tool call from its result"
        ),
        Transform::HistoryCompactionFailed { reason } => format!(
            "compaction was due but failed ({}); the conversation went without a summary",
            shown(reason)
        ),
        Transform::HistoryCompactionSkipped => {
            "compaction was due but had nothing to summarise (nothing_before_the_tail)".to_string()
        }
        Transform::CompactionTailInMessages => {
            "the compaction tail is counted in messages: keep_messages (token cap is 0)".to_string()
        }
        Transform::ToolOutputPrune { results, .. } => {
            format!("{results} older tool results were pruned to short previews before any summary")
        }
        Transform::ArgumentTruncation { messages } => {
            format!("long tool-call arguments were truncated in {messages} older message(s)")
        }
        Transform::MemoryFlush { facts } => format!(
            "before compaction, the memory model extracted facts from the summarised messages; \
             {facts} new one(s) were written to memory"
        ),
        Transform::MemoryFlushFailed { reason } => {
            let why = match reason.as_str() {
                "write" => "the memory store refused the facts".to_string(),
                "context_budget_exceeded" => {
                    "the extraction request did not fit the memory model".to_string()
                }
                other => format!("the memory model failed: {}", shown(other)),
            };
            format!(
                "before compaction, extracting facts from the summarised messages into memory \
                 failed ({why}); compaction went on without them"
            )
        }
        Transform::ToolPairsDroppedResult { call_id } => format!(
            "a tool result for {} had no call, so it was dropped (tool_pairs = \"repair\")",
            shown(call_id)
        ),
        Transform::ToolPairsClosedCall { call_id } => format!(
            "tool call {} had no result, so a synthetic error result closes it (tool_pairs = \
             \"repair\")",
            shown(call_id)
        ),
        Transform::ToolPairsUnchecked => {
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
        Transform::TodoReceiptShortened { message_id } => format!(
            "the obsolete Todo receipt in message {} was shortened to a one-line note; the \
             current list is in TASK_STATE or the latest receipt",
            shown(message_id)
        ),
        Transform::TodoListProjected { revision } => format!(
            "no current Todo receipt is in view, so the Todo list of revision {revision} was \
             reconstructed from task state into TASK_STATE"
        ),
    }
}
