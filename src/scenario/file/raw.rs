//! The raw serde structs of the scenario TOML format: one struct per table, fields named as
//! the file spells them, values kept with their spans so that checking can point at them.
//! Nothing here is checked; [`super`] turns these into the checked [`super::Scenario`].

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) description: Option<String>,
    pub(super) seed: Option<Spanned<i64>>,
    pub(super) agent: Spanned<RawAgent>,
    #[serde(default)]
    pub(super) tools: Vec<Spanned<RawTool>>,
    #[serde(default)]
    pub(super) instructions: Vec<Spanned<RawInstruction>>,
    #[serde(default)]
    pub(super) sources: Vec<Spanned<RawSource>>,
    #[serde(default)]
    pub(super) workspace: RawWorkspace,
    #[serde(default)]
    pub(super) history: Vec<Spanned<RawHistory>>,
    #[serde(default)]
    pub(super) steps: Vec<Spanned<RawStep>>,
    #[serde(default)]
    pub(super) expect: Vec<Spanned<RawExpect>>,
    pub(super) task: Option<RawTask>,
    pub(super) network: Option<crate::scenario::network::RawNetwork>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    pub(super) name: Option<String>,
    pub(super) agent_id: Option<String>,
    pub(super) model: Spanned<String>,
    pub(super) sys_prompt: Option<String>,
    pub(super) max_steps: Option<Spanned<i64>>,
    pub(super) model_timeout_ms: Option<Spanned<i64>>,
    pub(super) estimator: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) deny_tools: Vec<Spanned<String>>,
    pub(super) max_input_tokens: Option<Spanned<i64>>,
    pub(super) output_reserve: Option<Spanned<i64>>,
    pub(super) safety_margin: Option<Spanned<i64>>,
    pub(super) tool_pairs: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) builtin_tools: Vec<Spanned<String>>,
    pub(super) workspace_max_context_tokens: Option<Spanned<i64>>,
    pub(super) offload: Option<Spanned<RawOffload>>,
    pub(super) omission_order: Option<Vec<String>>,
    pub(super) max_output_tokens: Option<Spanned<i64>>,
    pub(super) compaction: Option<Spanned<RawCompaction>>,
    pub(super) session_log: Option<bool>,
    pub(super) session_storage: Option<Spanned<String>>,
    pub(super) session_tools: Option<Spanned<bool>>,
    pub(super) kind: Option<Spanned<String>>,
    pub(super) task_list: Option<bool>,
    pub(super) task_context: Option<RawTaskContext>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTaskContext {
    #[serde(default)]
    pub(super) include_requirements: bool,
    #[serde(default)]
    pub(super) include_verification_results: bool,
    #[serde(default)]
    pub(super) allow_requirement_proposals: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTask {
    pub(super) task_id: Option<String>,
    pub(super) objective: Option<String>,
    pub(super) plan_mode: Option<Spanned<String>>,
    pub(super) plan_path: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCompaction {
    pub(super) enabled: Option<bool>,
    pub(super) trigger_messages: Option<Spanned<i64>>,
    pub(super) trigger_tokens: Option<Spanned<i64>>,
    pub(super) keep_tokens: Option<Spanned<i64>>,
    pub(super) keep_messages: Option<Spanned<i64>>,
    pub(super) prune: Option<RawPrune>,
    pub(super) truncate_args: Option<RawTruncate>,
    pub(super) summary_prompt: Option<Spanned<String>>,
    pub(super) summary_model: Option<Spanned<String>>,
    pub(super) flush_before_compact: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrune {
    pub(super) enabled: Option<bool>,
    pub(super) protect_tokens: Option<Spanned<i64>>,
    pub(super) minimum_prunable_tokens: Option<Spanned<i64>>,
    pub(super) preview_chars: Option<Spanned<i64>>,
    pub(super) excluded_tools: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTruncate {
    pub(super) trigger_messages: Option<Spanned<i64>>,
    pub(super) trigger_tokens: Option<Spanned<i64>>,
    pub(super) protect_latest: Option<Spanned<i64>>,
    pub(super) max_arg_length: Option<Spanned<i64>>,
    pub(super) truncation_text: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOffload {
    pub(super) enabled: Option<bool>,
    pub(super) max_result_chars: Option<Spanned<i64>>,
    pub(super) preview_chars: Option<Spanned<i64>>,
    pub(super) eviction_path: Option<Spanned<String>>,
    pub(super) excluded_tools: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInstruction {
    pub(super) name: Spanned<String>,
    pub(super) text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    pub(super) name: Spanned<String>,
    pub(super) timeout_ms: Option<Spanned<i64>>,
    pub(super) on_failure: Option<Spanned<String>>,
    pub(super) latency_ms: Option<Spanned<i64>>,
    pub(super) failure: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) fail_loads: Vec<u64>,
    #[serde(default)]
    pub(super) blocks: Vec<Spanned<RawBlock>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBlock {
    pub(super) id: String,
    pub(super) kind: Spanned<String>,
    #[serde(default)]
    pub(super) text: String,
    #[serde(default)]
    pub(super) required: bool,
    #[serde(default)]
    pub(super) priority: i32,
    pub(super) revision: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWrite {
    pub(super) path: Spanned<String>,
    pub(super) text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTool {
    pub(super) name: Spanned<String>,
    pub(super) description: Option<String>,
    pub(super) parameters: Option<toml::Table>,
    pub(super) text: Option<String>,
    pub(super) texts: Option<Vec<String>>,
    pub(super) result_chars: Option<Spanned<i64>>,
    pub(super) content: Option<Spanned<String>>,
    pub(super) latency_ms: Option<Spanned<i64>>,
    pub(super) fail: Option<String>,
    pub(super) writes: Option<RawWrite>,
    pub(super) sets_plan_mode: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) responses: Vec<RawResponse>,
    pub(super) exit_code: Option<i32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawResponse {
    #[serde(default)]
    pub(super) when_args_contain: String,
    #[serde(default)]
    pub(super) text: String,
    #[serde(default)]
    pub(super) exit_code: i32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkspace {
    #[serde(default)]
    pub(super) files: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    pub(super) fail_writes_under: Vec<String>,
    #[serde(default)]
    pub(super) generated: BTreeMap<String, Spanned<RawGenerated>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHistory {
    pub(super) user: Option<String>,
    pub(super) session: Option<String>,
    #[serde(default)]
    pub(super) messages: Vec<Spanned<RawMessage>>,
    pub(super) rounds: Option<Spanned<i64>>,
    pub(super) tool: Option<RawRoundTool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRoundTool {
    pub(super) name: String,
    pub(super) result_chars: Option<Spanned<i64>>,
    pub(super) content: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMessage {
    pub(super) role: Spanned<String>,
    pub(super) text: Option<String>,
    pub(super) thinking: Option<String>,
    #[serde(default)]
    pub(super) tool_calls: Vec<RawHistoryCall>,
    pub(super) call_id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) error: Option<bool>,
    pub(super) chars: Option<Spanned<i64>>,
    pub(super) content: Option<Spanned<String>>,
    pub(super) media: Option<Spanned<String>>,
    pub(super) size_bytes: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHistoryCall {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) args: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStep {
    pub(super) user: Option<String>,
    pub(super) session: Option<String>,
    pub(super) input: String,
    #[serde(default)]
    pub(super) workspace_writes: BTreeMap<String, Spanned<String>>,
    pub(super) plan_mode: Option<Spanned<String>>,
    pub(super) restart: Option<Spanned<String>>,
    pub(super) fail_writes_under: Option<Vec<String>>,
    pub(super) concurrent_append: Option<Spanned<RawAppend>>,
    #[serde(default)]
    pub(super) actions: Vec<Spanned<RawAction>>,
    #[serde(default)]
    pub(super) concurrent_actions: Vec<Spanned<RawAction>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAppend {
    pub(super) at_ms: Spanned<i64>,
    pub(super) text: String,
    pub(super) role: Option<Spanned<String>>,
}

/// One application action on task state; which fields apply depends on `kind`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAction {
    pub(super) kind: Spanned<String>,
    /// Only for `concurrent_actions`: virtual time after the step starts.
    pub(super) at_ms: Option<Spanned<i64>>,
    pub(super) requirement: Option<String>,
    pub(super) requirement_kind: Option<Spanned<String>>,
    pub(super) text: Option<String>,
    pub(super) source: Option<String>,
    pub(super) decision: Option<Spanned<String>>,
    pub(super) authority: Option<String>,
    pub(super) expected_revision: Option<Spanned<i64>>,
    pub(super) version: Option<String>,
    pub(super) check: Option<String>,
    pub(super) passed: Option<bool>,
    pub(super) summary: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExpect {
    pub(super) step: Option<Spanned<i64>>,
    pub(super) reply: Option<String>,
    pub(super) reply_contains: Option<String>,
    pub(super) error: Option<String>,
    pub(super) model_calls: Option<Spanned<i64>>,
    pub(super) tool_results: Option<Spanned<i64>>,
    pub(super) denied: Option<Spanned<i64>>,
    pub(super) validation: Option<Vec<String>>,
    pub(super) request_messages: Option<Vec<i64>>,
    pub(super) elapsed_ms: Option<Spanned<i64>>,
    pub(super) error_contains: Option<String>,
    pub(super) request: Option<Spanned<i64>>,
    pub(super) items_present: Option<Vec<String>>,
    pub(super) items_absent: Option<Vec<String>>,
    pub(super) transforms_include: Option<Vec<String>>,
    pub(super) item_revisions: Option<BTreeMap<String, String>>,
    pub(super) item_placements: Option<BTreeMap<String, String>>,
    pub(super) layout: Option<Vec<String>>,
    pub(super) request_contains: Option<Vec<String>>,
    pub(super) request_lacks: Option<Vec<String>>,
    pub(super) manifest_lacks: Option<Vec<String>>,
    pub(super) model_calls_at_ms: Option<Vec<u64>>,
    pub(super) source_loads: Option<BTreeMap<String, u64>>,
    pub(super) input_limit: Option<i64>,
    pub(super) allowance: Option<i64>,
    pub(super) workspace_count_under: Option<BTreeMap<String, u64>>,
    pub(super) summary_calls: Option<Spanned<i64>>,
    pub(super) session_records: Option<BTreeMap<String, u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGenerated {
    pub(super) chars: Spanned<i64>,
    pub(super) content: Option<Spanned<String>>,
}
