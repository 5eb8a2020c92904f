//! The checked scenario model: the typed values a loaded (or generated) scenario holds, ready
//! to run. Every value here passed the checks of [`super`]; nothing here knows the file format.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ctxbed_harness::compaction::config::CompactionConfig;
use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::context::budget::BudgetSettings;
use ctxbed_harness::context::offload::OffloadConfig;
use ctxbed_harness::message::{Message, Role};
use ctxbed_harness::task::plan::PlanMode;
use ctxbed_harness::task::requirements::{Decision, RequirementKind};
use ctxbed_harness::task::{TaskContextOptions, TaskScope};
use ctxbed_sim::mock::MockScript;
use ctxbed_sim::rng::SeedTree;
use ctxbed_sim::scripted::{BlockSpec, SourceFailure};
use ctxbed_sim::text::TextKind;

/// Which estimator the agent budgets with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EstimatorChoice {
    /// The reference single-ratio estimate.
    Ratio,
    /// Exact o200k counts.
    ExactO200k,
    /// Exact cl100k counts.
    ExactCl100k,
    /// The content-aware approximate estimate of the mock model's declared tokenizer
    /// (`approx-v2-o200k` or `approx-v2-cl100k`), with per-message caching.
    Approximate,
}

/// The checked agent configuration.
#[derive(Debug, Clone)]
pub struct AgentSpec {
    pub name: String,
    pub agent_id: String,
    /// The mock model's name (file stem under `mock-models/`).
    pub model: String,
    pub sys_prompt: Option<String>,
    pub max_steps: u32,
    pub model_timeout: Option<Duration>,
    pub estimator: EstimatorChoice,
    pub deny_tools: BTreeSet<String>,
    pub budget: BudgetSettings,
    pub pairing: PairingCheck,
    /// Built-in tools registered over the workspace, in order (`tools::builtin`).
    pub builtin_tools: Vec<String>,
    pub workspace_max_context_tokens: Option<u64>,
    /// Tool-result offload settings; `None` when disabled.
    pub offload: Option<OffloadConfig>,
    /// A fixed custom omission order.
    pub omission_order: Option<Vec<String>>,
    /// Compaction settings; `None` when disabled. The summary model is in `summary_model`.
    pub compaction: Option<CompactionConfig>,
    /// A separate summary mock model.
    pub summary_model: Option<MockScript>,
    pub session_log: bool,
    /// A plain ReAct agent (no context pipeline) instead of the harness agent.
    pub react: bool,
    /// Register `todo_write`.
    pub task_list: bool,
    pub task_context: TaskContextOptions,
    /// Where the session log keeps its records.
    pub session_storage: SessionStorage,
    /// Register `session_list`, `session_history` and `session_search`.
    pub session_tools: bool,
}

/// Where a scenario's session log keeps its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionStorage {
    /// In memory, shared by every agent the scenario builds (a durable store that never fails).
    #[default]
    Memory,
    /// JSON-lines files in the workspace, committed when flushed; a restart loses what was
    /// not flushed, as a crash would.
    Jsonl,
}

/// How the process running the agent restarts before a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// A new agent over the same storage and model; records not yet flushed are lost.
    Clean,
    /// As `Clean`, after a crash that tore the write of one more record: every session file
    /// ends with half a record and no newline.
    Torn,
    /// As `Clean`, after damage in the middle of every session file: in each file, a line with
    /// lines after it that holds no message record (the middle one of those) is overwritten
    /// with as many zero bytes. That is corruption, not a torn write: the new agent cannot
    /// restore the session and must leave its log as it is.
    Corrupt,
}

/// Another writer appending to the step's session while the step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcurrentAppend {
    /// Virtual time after the step starts.
    pub at: Duration,
    pub role: Role,
    pub text: String,
}

/// An application action on task state, taken before the step's call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskAction {
    Propose {
        kind: RequirementKind,
        text: String,
        source: String,
    },
    Decide {
        requirement: String,
        decision: Decision,
        authority: String,
        expected_revision: u64,
    },
    SubjectVersion(String),
    InvalidateSubject,
    Verify {
        check: String,
        passed: bool,
        summary: String,
    },
}

/// Application-owned task state set before the first step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpec {
    pub scope: Option<TaskScope>,
    pub plan_mode: Option<PlanMode>,
    pub plan_path: Option<String>,
}

/// A named instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionSpec {
    pub name: String,
    pub text: String,
}

/// A scripted context source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSpec {
    pub name: String,
    pub timeout: Option<Duration>,
    pub omit_on_failure: bool,
    pub latency: Duration,
    pub failure: Option<SourceFailure>,
    pub fail_loads: Vec<u64>,
    pub blocks: Vec<BlockSpec>,
}

/// What a scripted tool answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutputSpec {
    Fixed(String),
    Sequence(Vec<String>),
    Generated {
        chars: usize,
        kind: TextKind,
    },
    /// Responses chosen by the call's arguments (a scripted shell).
    ByArguments {
        responses: Vec<ctxbed_sim::scripted::ScriptedResponse>,
        fallback: ctxbed_sim::scripted::ScriptedResponse,
    },
}

/// A scenario-defined tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: Option<String>,
    pub parameters: Option<serde_json::Value>,
    pub output: ToolOutputSpec,
    pub latency: Duration,
    pub fail: Option<String>,
    /// A workspace file (path, text) the tool writes on every call.
    pub writes: Option<(String, String)>,
    /// The plan mode the tool switches to on every call (an application action mid-call).
    pub sets_plan_mode: Option<PlanMode>,
}

/// Pre-existing committed history of one session.
#[derive(Debug, Clone, PartialEq)]
pub struct HistorySpec {
    pub user: Option<String>,
    pub session: Option<String>,
    pub messages: Vec<Message>,
}

/// One agent call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSpec {
    pub user: Option<String>,
    pub session: Option<String>,
    pub input: String,
    /// Workspace files written before the call.
    pub workspace_writes: BTreeMap<String, String>,
    /// The plan mode the application sets before the call.
    pub plan_mode: Option<PlanMode>,
    /// The agent's process restarts before the call.
    pub restart: Option<Restart>,
    /// When present, replaces the workspace's failing write prefixes from this step on (an
    /// empty list heals the storage); applied before the restart.
    pub fail_writes_under: Option<Vec<String>>,
    pub concurrent_append: Option<ConcurrentAppend>,
    /// Task-state actions the application takes before the call, in order.
    pub actions: Vec<TaskAction>,
    /// Task-state actions taken while the call runs, each at its virtual time after the step
    /// starts.
    pub concurrent_actions: Vec<(Duration, TaskAction)>,
    /// The application cancels the call (drops its future) this long after the step starts.
    pub cancel_at: Option<Duration>,
}

impl StepSpec {
    /// A call of `user` in `session` with `input`, and nothing else around it: no workspace
    /// writes, plan mode, restart, storage change, other writer or task action.
    pub fn new(user: Option<String>, session: Option<String>, input: impl Into<String>) -> Self {
        StepSpec {
            user,
            session,
            input: input.into(),
            workspace_writes: BTreeMap::new(),
            plan_mode: None,
            restart: None,
            fail_writes_under: None,
            concurrent_append: None,
            actions: Vec::new(),
            concurrent_actions: Vec::new(),
            cancel_at: None,
        }
    }
}

/// Inline assertions about a step (or, without `step`, about every step).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expectation {
    /// Line of the `[[expect]]` entry, for reports.
    pub line: usize,
    /// 1-based step, or `None` for every step.
    pub step: Option<usize>,
    pub reply: Option<String>,
    pub reply_contains: Option<String>,
    pub error: Option<String>,
    pub error_contains: Option<String>,
    pub model_calls: Option<u64>,
    pub tool_results: Option<u64>,
    pub denied: Option<u64>,
    pub validation: Option<Vec<String>>,
    /// Messages in each prepared request of the step, in order.
    pub request_messages: Option<Vec<i64>>,
    pub elapsed_ms: Option<u64>,
    /// 1-based preparation within the step the request-level checks apply to (all when `None`).
    pub request: Option<usize>,
    pub items_present: Vec<String>,
    pub items_absent: Vec<String>,
    /// Transforms the request records: each its full text form, or a prefix of it followed by
    /// `*`.
    pub transforms_include: Vec<String>,
    /// Transforms the request must not record, written like `transforms_include`.
    pub transforms_absent: Vec<String>,
    pub item_revisions: BTreeMap<String, String>,
    pub item_placements: BTreeMap<String, String>,
    pub layout: Option<Vec<String>>,
    pub request_contains: Vec<String>,
    pub request_lacks: Vec<String>,
    pub manifest_lacks: Vec<String>,
    pub model_calls_at_ms: Option<Vec<u64>>,
    /// Loads of each source so far, after the step.
    pub source_loads: BTreeMap<String, u64>,
    pub input_limit: Option<i64>,
    pub allowance: Option<i64>,
    /// Usage (input, output tokens) the model reported for each selected request.
    pub usage: Option<(u64, u64)>,
    /// Number of workspace files under each prefix, after the step.
    pub workspace_count_under: BTreeMap<String, u64>,
    /// Summary model calls in the step.
    pub summary_calls: Option<u64>,
    /// Memory flush model calls in the step.
    pub memory_calls: Option<u64>,
    /// Manifests the context policy's observer received during the step.
    pub observer_calls: Option<u64>,
    /// Texts some summary request of the step contains.
    pub summary_request_contains: Vec<String>,
    /// Texts some memory flush (extraction) request of the step contains.
    pub memory_request_contains: Vec<String>,
    /// Texts no summary request of the step contains (and there is one).
    pub summary_request_lacks: Vec<String>,
    /// Texts no memory flush request of the step contains (and there is one).
    pub memory_request_lacks: Vec<String>,
    /// Session-log records of each kind written during the step.
    pub session_records: BTreeMap<String, u64>,
    /// Per record kind, payload fields (top-level, JSON values) that some record of that kind
    /// written during the step holds.
    pub session_record_fields: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
}

/// A checked scenario, ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario's name: its path under `scenarios/` without `.toml`.
    pub name: String,
    /// The file as the user should see it.
    pub label: String,
    pub description: String,
    /// The root of every random draw of the scenario's runs, built once from the file's
    /// `seed` (which it shows as); each consumer draws from its own stream of it.
    pub seed: SeedTree,
    pub agent: AgentSpec,
    pub mock: MockScript,
    pub tools: Vec<ToolSpec>,
    pub instructions: Vec<InstructionSpec>,
    pub sources: Vec<SourceSpec>,
    pub workspace_files: BTreeMap<String, String>,
    pub fail_writes_under: Vec<String>,
    pub history: Vec<HistorySpec>,
    pub steps: Vec<StepSpec>,
    pub expectations: Vec<Expectation>,
    pub task: Option<TaskSpec>,
    /// With a `[network]` table the mock model answers from behind turmoil's simulated network.
    pub network: Option<crate::scenario::format::network::NetworkSpec>,
}

impl crate::scenario::format::choice::Choice for EstimatorChoice {
    const WHAT: &'static str = "estimator";
    const NAMES: &'static [(Self, &'static str)] = &[
        (EstimatorChoice::Ratio, "ratio"),
        (EstimatorChoice::Approximate, "approx"),
        (EstimatorChoice::ExactO200k, "exact-o200k"),
        (EstimatorChoice::ExactCl100k, "exact-cl100k"),
    ];
}

impl crate::scenario::format::choice::Choice for SessionStorage {
    const WHAT: &'static str = "session_storage";
    const NAMES: &'static [(Self, &'static str)] = &[
        (SessionStorage::Memory, "memory"),
        (SessionStorage::Jsonl, "jsonl"),
    ];
}

impl crate::scenario::format::choice::Choice for Restart {
    const WHAT: &'static str = "restart";
    const NAMES: &'static [(Self, &'static str)] = &[
        (Restart::Clean, "clean"),
        (Restart::Torn, "torn"),
        (Restart::Corrupt, "corrupt"),
    ];
}
