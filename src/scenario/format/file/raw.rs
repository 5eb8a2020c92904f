//! The raw serde structs of the scenario TOML format: one struct per table, fields named as
//! the file spells them, values kept with their spans so that checking can point at them.
//! Nothing here is checked; [`super`] turns these into the checked [`super::Scenario`], and
//! [`crate::scenario::format::write`] turns a checked scenario back into these to print it.
//!
//! Reading and writing share these definitions: a field that may be left out of a file is left
//! out of a written one when it is absent (`None`, which the TOML serialiser skips) or equal to
//! its default (an empty list or map, `false`, `0`, an empty string). Spans of written values
//! are empty.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use toml::Spanned;

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawScenario {
    pub(in crate::scenario) description: Option<String>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) seed: Option<Spanned<i64>>,
    #[schemars(with = "RawAgent")]
    pub(in crate::scenario) agent: Spanned<RawAgent>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawTool>")]
    pub(in crate::scenario) tools: Vec<Spanned<RawTool>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawInstruction>")]
    pub(in crate::scenario) instructions: Vec<Spanned<RawInstruction>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawSource>")]
    pub(in crate::scenario) sources: Vec<Spanned<RawSource>>,
    #[serde(default, skip_serializing_if = "RawWorkspace::is_empty")]
    pub(in crate::scenario) workspace: RawWorkspace,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawHistory>")]
    pub(in crate::scenario) history: Vec<Spanned<RawHistory>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawStep>")]
    pub(in crate::scenario) steps: Vec<Spanned<RawStep>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawExpect>")]
    pub(in crate::scenario) expect: Vec<Spanned<RawExpect>>,
    pub(in crate::scenario) task: Option<RawTask>,
    pub(in crate::scenario) network: Option<crate::scenario::format::network::RawNetwork>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawAgent {
    pub(in crate::scenario) name: Option<String>,
    pub(in crate::scenario) agent_id: Option<String>,
    #[schemars(with = "String")]
    pub(in crate::scenario) model: Spanned<String>,
    pub(in crate::scenario) sys_prompt: Option<String>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(in crate::scenario) max_steps: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) model_timeout_ms: Option<Spanned<i64>>,
    #[schemars(
        with = "Option<crate::scenario::format::choice::ChoiceOf<crate::scenario::format::file::EstimatorChoice>>"
    )]
    pub(in crate::scenario) estimator: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<String>")]
    pub(in crate::scenario) deny_tools: Vec<Spanned<String>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) max_input_tokens: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) output_reserve: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) safety_margin: Option<Spanned<i64>>,
    #[schemars(
        with = "Option<crate::scenario::format::choice::ChoiceOf<ctxbed_harness::context::PairingCheck>>"
    )]
    pub(in crate::scenario) tool_pairs: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<String>")]
    pub(in crate::scenario) builtin_tools: Vec<Spanned<String>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) workspace_max_context_tokens: Option<Spanned<i64>>,
    #[schemars(with = "Option<RawOffload>")]
    pub(in crate::scenario) offload: Option<Spanned<RawOffload>>,
    pub(in crate::scenario) omission_order: Option<Vec<String>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) max_output_tokens: Option<Spanned<i64>>,
    #[schemars(with = "Option<RawCompaction>")]
    pub(in crate::scenario) compaction: Option<Spanned<RawCompaction>>,
    pub(in crate::scenario) session_log: Option<bool>,
    #[schemars(
        with = "Option<crate::scenario::format::choice::ChoiceOf<crate::scenario::format::file::SessionStorage>>"
    )]
    pub(in crate::scenario) session_storage: Option<Spanned<String>>,
    #[schemars(with = "Option<bool>")]
    pub(in crate::scenario) session_tools: Option<Spanned<bool>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) kind: Option<Spanned<String>>,
    pub(in crate::scenario) task_list: Option<bool>,
    pub(in crate::scenario) task_context: Option<RawTaskContext>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawTaskContext {
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) include_requirements: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) include_verification_results: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) allow_requirement_proposals: bool,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawTask {
    pub(in crate::scenario) task_id: Option<String>,
    pub(in crate::scenario) objective: Option<String>,
    #[schemars(
        with = "Option<crate::scenario::format::choice::ChoiceOf<ctxbed_harness::task::plan::PlanMode>>"
    )]
    pub(in crate::scenario) plan_mode: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) plan_path: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawCompaction {
    pub(in crate::scenario) enabled: Option<bool>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(in crate::scenario) trigger_messages: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) trigger_tokens: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) keep_tokens: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(in crate::scenario) keep_messages: Option<Spanned<i64>>,
    pub(in crate::scenario) prune: Option<RawPrune>,
    pub(in crate::scenario) truncate_args: Option<RawTruncate>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) summary_prompt: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) summary_model: Option<Spanned<String>>,
    pub(in crate::scenario) flush_before_compact: Option<bool>,
    /// The memory flush's extraction prompt; must contain `{messages}`.
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) memory_prompt: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawPrune {
    pub(in crate::scenario) enabled: Option<bool>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) protect_tokens: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) minimum_prunable_tokens: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>", range(min = 2))]
    pub(in crate::scenario) preview_chars: Option<Spanned<i64>>,
    pub(in crate::scenario) excluded_tools: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawTruncate {
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) trigger_messages: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) trigger_tokens: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) protect_latest: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(in crate::scenario) max_arg_length: Option<Spanned<i64>>,
    pub(in crate::scenario) truncation_text: Option<String>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawOffload {
    pub(in crate::scenario) enabled: Option<bool>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(in crate::scenario) max_result_chars: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) preview_chars: Option<Spanned<i64>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) eviction_path: Option<Spanned<String>>,
    pub(in crate::scenario) excluded_tools: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawInstruction {
    #[schemars(with = "String")]
    pub(in crate::scenario) name: Spanned<String>,
    pub(in crate::scenario) text: String,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawSource {
    #[schemars(with = "String")]
    pub(in crate::scenario) name: Spanned<String>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(in crate::scenario) timeout_ms: Option<Spanned<i64>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) on_failure: Option<Spanned<String>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) latency_ms: Option<Spanned<i64>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) failure: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(in crate::scenario) fail_loads: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawBlock>")]
    pub(in crate::scenario) blocks: Vec<Spanned<RawBlock>>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawBlock {
    pub(in crate::scenario) id: String,
    #[schemars(with = "String")]
    pub(in crate::scenario) kind: Spanned<String>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) text: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) required: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) priority: i32,
    pub(in crate::scenario) revision: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawWrite {
    #[schemars(with = "String")]
    pub(in crate::scenario) path: Spanned<String>,
    pub(in crate::scenario) text: String,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawTool {
    #[schemars(with = "String")]
    pub(in crate::scenario) name: Spanned<String>,
    pub(in crate::scenario) description: Option<String>,
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub(in crate::scenario) parameters: Option<toml::Table>,
    pub(in crate::scenario) text: Option<String>,
    pub(in crate::scenario) texts: Option<Vec<String>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) result_chars: Option<Spanned<i64>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) content: Option<Spanned<String>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) latency_ms: Option<Spanned<i64>>,
    pub(in crate::scenario) fail: Option<String>,
    pub(in crate::scenario) writes: Option<RawWrite>,
    #[schemars(
        with = "Option<crate::scenario::format::choice::ChoiceOf<ctxbed_harness::task::plan::PlanMode>>"
    )]
    pub(in crate::scenario) sets_plan_mode: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(in crate::scenario) responses: Vec<RawResponse>,
    pub(in crate::scenario) exit_code: Option<i32>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawResponse {
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) when_args_contain: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) text: String,
    #[serde(default, skip_serializing_if = "is_default")]
    pub(in crate::scenario) exit_code: i32,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawWorkspace {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(in crate::scenario) files: BTreeMap<String, Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(in crate::scenario) fail_writes_under: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<String, RawGenerated>")]
    pub(in crate::scenario) generated: BTreeMap<String, Spanned<RawGenerated>>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawHistory {
    pub(in crate::scenario) user: Option<String>,
    pub(in crate::scenario) session: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawMessage>")]
    pub(in crate::scenario) messages: Vec<Spanned<RawMessage>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) rounds: Option<Spanned<i64>>,
    pub(in crate::scenario) tool: Option<RawRoundTool>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawRoundTool {
    pub(in crate::scenario) name: String,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) result_chars: Option<Spanned<i64>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) content: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawMessage {
    #[schemars(with = "String")]
    pub(in crate::scenario) role: Spanned<String>,
    pub(in crate::scenario) text: Option<String>,
    pub(in crate::scenario) thinking: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(in crate::scenario) tool_calls: Vec<RawHistoryCall>,
    pub(in crate::scenario) call_id: Option<String>,
    pub(in crate::scenario) name: Option<String>,
    pub(in crate::scenario) error: Option<bool>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) chars: Option<Spanned<i64>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) content: Option<Spanned<String>>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) media: Option<Spanned<String>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) size_bytes: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawHistoryCall {
    pub(in crate::scenario) id: String,
    pub(in crate::scenario) name: String,
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub(in crate::scenario) args: Option<toml::Table>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawStep {
    pub(in crate::scenario) user: Option<String>,
    pub(in crate::scenario) session: Option<String>,
    pub(in crate::scenario) input: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(with = "BTreeMap<String, String>")]
    pub(in crate::scenario) workspace_writes: BTreeMap<String, Spanned<String>>,
    #[schemars(
        with = "Option<crate::scenario::format::choice::ChoiceOf<ctxbed_harness::task::plan::PlanMode>>"
    )]
    pub(in crate::scenario) plan_mode: Option<Spanned<String>>,
    #[schemars(
        with = "Option<crate::scenario::format::choice::ChoiceOf<crate::scenario::format::file::Restart>>"
    )]
    pub(in crate::scenario) restart: Option<Spanned<String>>,
    pub(in crate::scenario) fail_writes_under: Option<Vec<String>>,
    #[schemars(with = "Option<RawAppend>")]
    pub(in crate::scenario) concurrent_append: Option<Spanned<RawAppend>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawAction>")]
    pub(in crate::scenario) actions: Vec<Spanned<RawAction>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawAction>")]
    pub(in crate::scenario) concurrent_actions: Vec<Spanned<RawAction>>,
    /// The application cancels the call this long (virtual time) after the step starts: the
    /// call's future is dropped.
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) cancel_at_ms: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawAppend {
    #[schemars(with = "i64")]
    pub(in crate::scenario) at_ms: Spanned<i64>,
    pub(in crate::scenario) text: String,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) role: Option<Spanned<String>>,
}

/// One application action on task state; which fields apply depends on `kind`.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawAction {
    #[schemars(with = "String")]
    pub(in crate::scenario) kind: Spanned<String>,
    /// Only for `concurrent_actions`: virtual time after the step starts.
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) at_ms: Option<Spanned<i64>>,
    pub(in crate::scenario) requirement: Option<String>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) requirement_kind: Option<Spanned<String>>,
    pub(in crate::scenario) text: Option<String>,
    pub(in crate::scenario) source: Option<String>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) decision: Option<Spanned<String>>,
    pub(in crate::scenario) authority: Option<String>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) expected_revision: Option<Spanned<i64>>,
    pub(in crate::scenario) version: Option<String>,
    pub(in crate::scenario) check: Option<String>,
    pub(in crate::scenario) passed: Option<bool>,
    pub(in crate::scenario) summary: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawExpect {
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(in crate::scenario) step: Option<Spanned<i64>>,
    pub(in crate::scenario) reply: Option<String>,
    pub(in crate::scenario) reply_contains: Option<String>,
    pub(in crate::scenario) error: Option<String>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) model_calls: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) tool_results: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) denied: Option<Spanned<i64>>,
    pub(in crate::scenario) validation: Option<Vec<String>>,
    pub(in crate::scenario) request_messages: Option<Vec<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) elapsed_ms: Option<Spanned<i64>>,
    pub(in crate::scenario) error_contains: Option<String>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) request: Option<Spanned<i64>>,
    pub(in crate::scenario) items_present: Option<Vec<String>>,
    pub(in crate::scenario) items_absent: Option<Vec<String>>,
    pub(in crate::scenario) transforms_include: Option<Vec<String>>,
    pub(in crate::scenario) transforms_absent: Option<Vec<String>>,
    pub(in crate::scenario) item_revisions: Option<BTreeMap<String, String>>,
    pub(in crate::scenario) item_placements: Option<BTreeMap<String, String>>,
    pub(in crate::scenario) layout: Option<Vec<String>>,
    pub(in crate::scenario) request_contains: Option<Vec<String>>,
    pub(in crate::scenario) request_lacks: Option<Vec<String>>,
    pub(in crate::scenario) manifest_lacks: Option<Vec<String>>,
    pub(in crate::scenario) model_calls_at_ms: Option<Vec<u64>>,
    pub(in crate::scenario) source_loads: Option<BTreeMap<String, u64>>,
    pub(in crate::scenario) input_limit: Option<i64>,
    pub(in crate::scenario) allowance: Option<i64>,
    /// The usage the model reported for the request (request-level).
    pub(in crate::scenario) usage: Option<crate::scenario::format::mock_file::RawUsage>,
    pub(in crate::scenario) workspace_count_under: Option<BTreeMap<String, u64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) summary_calls: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) memory_calls: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(in crate::scenario) observer_calls: Option<Spanned<i64>>,
    pub(in crate::scenario) summary_request_contains: Option<Vec<String>>,
    pub(in crate::scenario) memory_request_contains: Option<Vec<String>>,
    pub(in crate::scenario) summary_request_lacks: Option<Vec<String>>,
    pub(in crate::scenario) memory_request_lacks: Option<Vec<String>>,
    pub(in crate::scenario) session_records: Option<BTreeMap<String, u64>>,
    /// Per record kind, fields some record of that kind written in the step must hold.
    pub(in crate::scenario) session_record_fields:
        Option<BTreeMap<String, BTreeMap<String, serde_json::Value>>>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(in crate::scenario) struct RawGenerated {
    #[schemars(with = "i64")]
    pub(in crate::scenario) chars: Spanned<i64>,
    #[schemars(with = "Option<String>")]
    pub(in crate::scenario) content: Option<Spanned<String>>,
}

impl RawWorkspace {
    /// No files, failing prefixes or generated files: the table can be left out.
    pub(in crate::scenario) fn is_empty(&self) -> bool {
        self.files.is_empty() && self.fail_writes_under.is_empty() && self.generated.is_empty()
    }
}

/// Whether a value is its type's default (a field the file may leave out).
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
