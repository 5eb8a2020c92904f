//! The scenario file format (`scenarios/**/<name>.toml`), parsed into a checked [`Scenario`].
//!
//! ```toml
//! description = "A tool call, its result, then a final reply"
//! seed = 7
//!
//! [agent]
//! model = "gpt-8k"                # mock-models/gpt-8k.toml
//! sys_prompt = "Investigate and fix."
//! max_steps = 8
//!
//! [[tools]]
//! name = "execute"
//! text = "3 tests passed"
//!
//! [[steps]]
//! user = "alice"
//! session = "s1"
//! input = "Run the tests."
//!
//! [[expect]]
//! step = 1
//! reply = "All green."
//! model_calls = 2
//! ```
//!
//! Every problem in the file is reported, each with file, line, column, field and a hint.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::diagnostic::{Diagnostic, closest, from_toml};
use super::mock_file::{Checker, parse_mock};
use super::source::read_source;
use ctxbed_harness::compaction::config::{CompactionConfig, PruneConfig, TruncateArgsConfig};
use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::context::budget::BudgetSettings;
use ctxbed_harness::context::offload::OffloadConfig;
use ctxbed_harness::limits;
use ctxbed_harness::message::{ContentPart, MediaKind, Message, Role, ToolOutput, ToolResult};
use ctxbed_harness::storage::WorkspacePath;
use ctxbed_harness::task::plan::PlanMode;
use ctxbed_harness::task::requirements::{Decision, RequirementKind};
use ctxbed_harness::task::{TaskContextOptions, TaskScope};
use ctxbed_sim::mock::MockScript;
use ctxbed_sim::rng::SeedTree;
use ctxbed_sim::scripted::{BlockSpec, SourceFailure};
use ctxbed_sim::text::{TextKind, generate_text};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    description: Option<String>,
    seed: Option<Spanned<i64>>,
    agent: Spanned<RawAgent>,
    #[serde(default)]
    tools: Vec<Spanned<RawTool>>,
    #[serde(default)]
    instructions: Vec<Spanned<RawInstruction>>,
    #[serde(default)]
    sources: Vec<Spanned<RawSource>>,
    #[serde(default)]
    workspace: RawWorkspace,
    #[serde(default)]
    history: Vec<Spanned<RawHistory>>,
    #[serde(default)]
    steps: Vec<Spanned<RawStep>>,
    #[serde(default)]
    expect: Vec<Spanned<RawExpect>>,
    task: Option<RawTask>,
    network: Option<super::network::RawNetwork>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    name: Option<String>,
    agent_id: Option<String>,
    model: Spanned<String>,
    sys_prompt: Option<String>,
    max_steps: Option<Spanned<i64>>,
    model_timeout_ms: Option<Spanned<i64>>,
    estimator: Option<Spanned<String>>,
    #[serde(default)]
    deny_tools: Vec<Spanned<String>>,
    max_input_tokens: Option<Spanned<i64>>,
    output_reserve: Option<Spanned<i64>>,
    safety_margin: Option<Spanned<i64>>,
    tool_pairs: Option<Spanned<String>>,
    #[serde(default)]
    builtin_tools: Vec<Spanned<String>>,
    workspace_max_context_tokens: Option<Spanned<i64>>,
    offload: Option<Spanned<RawOffload>>,
    omission_order: Option<Vec<String>>,
    max_output_tokens: Option<Spanned<i64>>,
    compaction: Option<Spanned<RawCompaction>>,
    session_log: Option<bool>,
    session_storage: Option<Spanned<String>>,
    session_tools: Option<Spanned<bool>>,
    kind: Option<Spanned<String>>,
    task_list: Option<bool>,
    task_context: Option<RawTaskContext>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskContext {
    #[serde(default)]
    include_requirements: bool,
    #[serde(default)]
    include_verification_results: bool,
    #[serde(default)]
    allow_requirement_proposals: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    task_id: Option<String>,
    objective: Option<String>,
    plan_mode: Option<Spanned<String>>,
    plan_path: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCompaction {
    enabled: Option<bool>,
    trigger_messages: Option<Spanned<i64>>,
    trigger_tokens: Option<Spanned<i64>>,
    keep_tokens: Option<Spanned<i64>>,
    keep_messages: Option<Spanned<i64>>,
    prune: Option<RawPrune>,
    truncate_args: Option<RawTruncate>,
    summary_prompt: Option<Spanned<String>>,
    summary_model: Option<Spanned<String>>,
    flush_before_compact: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrune {
    enabled: Option<bool>,
    protect_tokens: Option<Spanned<i64>>,
    minimum_prunable_tokens: Option<Spanned<i64>>,
    preview_chars: Option<Spanned<i64>>,
    excluded_tools: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTruncate {
    trigger_messages: Option<Spanned<i64>>,
    trigger_tokens: Option<Spanned<i64>>,
    protect_latest: Option<Spanned<i64>>,
    max_arg_length: Option<Spanned<i64>>,
    truncation_text: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOffload {
    enabled: Option<bool>,
    max_result_chars: Option<Spanned<i64>>,
    preview_chars: Option<Spanned<i64>>,
    eviction_path: Option<Spanned<String>>,
    excluded_tools: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInstruction {
    name: Spanned<String>,
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSource {
    name: Spanned<String>,
    timeout_ms: Option<Spanned<i64>>,
    on_failure: Option<Spanned<String>>,
    latency_ms: Option<Spanned<i64>>,
    failure: Option<Spanned<String>>,
    #[serde(default)]
    fail_loads: Vec<u64>,
    #[serde(default)]
    blocks: Vec<Spanned<RawBlock>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBlock {
    id: String,
    kind: Spanned<String>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    priority: i32,
    revision: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWrite {
    path: Spanned<String>,
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: Spanned<String>,
    description: Option<String>,
    parameters: Option<toml::Table>,
    text: Option<String>,
    texts: Option<Vec<String>>,
    result_chars: Option<Spanned<i64>>,
    content: Option<Spanned<String>>,
    latency_ms: Option<Spanned<i64>>,
    fail: Option<String>,
    writes: Option<RawWrite>,
    sets_plan_mode: Option<Spanned<String>>,
    #[serde(default)]
    responses: Vec<RawResponse>,
    exit_code: Option<i32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponse {
    #[serde(default)]
    when_args_contain: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    exit_code: i32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkspace {
    #[serde(default)]
    files: BTreeMap<String, Spanned<String>>,
    #[serde(default)]
    fail_writes_under: Vec<String>,
    #[serde(default)]
    generated: BTreeMap<String, Spanned<RawGenerated>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHistory {
    user: Option<String>,
    session: Option<String>,
    #[serde(default)]
    messages: Vec<Spanned<RawMessage>>,
    rounds: Option<Spanned<i64>>,
    tool: Option<RawRoundTool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoundTool {
    name: String,
    result_chars: Option<Spanned<i64>>,
    content: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMessage {
    role: Spanned<String>,
    text: Option<String>,
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Vec<RawHistoryCall>,
    call_id: Option<String>,
    name: Option<String>,
    error: Option<bool>,
    chars: Option<Spanned<i64>>,
    content: Option<Spanned<String>>,
    media: Option<Spanned<String>>,
    size_bytes: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHistoryCall {
    id: String,
    name: String,
    args: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    user: Option<String>,
    session: Option<String>,
    input: String,
    #[serde(default)]
    workspace_writes: BTreeMap<String, Spanned<String>>,
    plan_mode: Option<Spanned<String>>,
    restart: Option<Spanned<String>>,
    fail_writes_under: Option<Vec<String>>,
    concurrent_append: Option<Spanned<RawAppend>>,
    #[serde(default)]
    actions: Vec<Spanned<RawAction>>,
    #[serde(default)]
    concurrent_actions: Vec<Spanned<RawAction>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAppend {
    at_ms: Spanned<i64>,
    text: String,
    role: Option<Spanned<String>>,
}

/// One application action on task state; which fields apply depends on `kind`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAction {
    kind: Spanned<String>,
    /// Only for `concurrent_actions`: virtual time after the step starts.
    at_ms: Option<Spanned<i64>>,
    requirement: Option<String>,
    requirement_kind: Option<Spanned<String>>,
    text: Option<String>,
    source: Option<String>,
    decision: Option<Spanned<String>>,
    authority: Option<String>,
    expected_revision: Option<Spanned<i64>>,
    version: Option<String>,
    check: Option<String>,
    passed: Option<bool>,
    summary: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    step: Option<Spanned<i64>>,
    reply: Option<String>,
    reply_contains: Option<String>,
    error: Option<String>,
    model_calls: Option<Spanned<i64>>,
    tool_results: Option<Spanned<i64>>,
    denied: Option<Spanned<i64>>,
    validation: Option<Vec<String>>,
    request_messages: Option<Vec<i64>>,
    elapsed_ms: Option<Spanned<i64>>,
    error_contains: Option<String>,
    request: Option<Spanned<i64>>,
    items_present: Option<Vec<String>>,
    items_absent: Option<Vec<String>>,
    transforms_include: Option<Vec<String>>,
    item_revisions: Option<BTreeMap<String, String>>,
    item_placements: Option<BTreeMap<String, String>>,
    layout: Option<Vec<String>>,
    request_contains: Option<Vec<String>>,
    request_lacks: Option<Vec<String>>,
    manifest_lacks: Option<Vec<String>>,
    model_calls_at_ms: Option<Vec<u64>>,
    source_loads: Option<BTreeMap<String, u64>>,
    input_limit: Option<i64>,
    allowance: Option<i64>,
    workspace_count_under: Option<BTreeMap<String, u64>>,
    summary_calls: Option<Spanned<i64>>,
    session_records: Option<BTreeMap<String, u64>>,
}

/// Which estimator the agent budgets with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EstimatorChoice {
    /// The reference single-ratio estimate.
    Ratio,
    /// Exact o200k counts.
    ExactO200k,
    /// Exact cl100k counts.
    ExactCl100k,
    /// The content-aware approximate estimate (`approx-v1`), with per-message caching.
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
    pub transforms_include: Vec<String>,
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
    /// Number of workspace files under each prefix, after the step.
    pub workspace_count_under: BTreeMap<String, u64>,
    /// Summary model calls in the step.
    pub summary_calls: Option<u64>,
    /// Session-log records of each kind written during the step.
    pub session_records: BTreeMap<String, u64>,
}

/// A checked scenario, ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario's name: its path under `scenarios/` without `.toml`.
    pub name: String,
    /// The file as the user should see it.
    pub label: String,
    pub description: String,
    pub seed: u64,
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
    pub network: Option<super::network::NetworkSpec>,
}

/// Where a scenario's companions live.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The suite root: the directory holding `scenarios/`, `mock-models/` and `golden/`.
    pub root: PathBuf,
    /// The scenario's path relative to `scenarios/`, without `.toml` (its name).
    pub name: String,
}

impl Layout {
    /// Finds the suite root by walking up from the scenario file to a `scenarios` directory;
    /// files outside one use their own directory as the root.
    pub fn of(path: &Path) -> Layout {
        let stem_path = path.with_extension("");
        for ancestor in path.ancestors().skip(1) {
            if ancestor.file_name().is_some_and(|n| n == "scenarios") {
                let root = ancestor.parent().unwrap_or(Path::new("")).to_path_buf();
                let name = stem_path
                    .strip_prefix(ancestor)
                    .map(path_to_name)
                    .unwrap_or_default();
                return Layout { root, name };
            }
        }
        let root = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = stem_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Layout { root, name }
    }

    /// The golden trace's path.
    pub fn golden(&self) -> PathBuf {
        self.root
            .join("golden")
            .join(format!("{}.trace", self.name))
    }

    /// The mock-model file for a model name.
    pub fn mock_model(&self, model: &str) -> PathBuf {
        self.root.join("mock-models").join(format!("{model}.toml"))
    }
}

fn path_to_name(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads, parses and checks a scenario and its mock model.
///
/// # Errors
/// Every problem found in the scenario or its mock-model file.
pub fn load(path: &Path) -> Result<Scenario, Vec<Diagnostic>> {
    let label = path_to_name(path);
    let source = read_source(path, &label).map_err(|d| vec![*d])?;
    let layout = Layout::of(path);
    parse_scenario(&layout, &label, &source)
}

/// Parses and checks scenario text; `layout` locates its mock model.
///
/// # Errors
/// Every problem found in the scenario or its mock-model file.
pub fn parse_scenario(
    layout: &Layout,
    label: &str,
    source: &str,
) -> Result<Scenario, Vec<Diagnostic>> {
    let raw: RawScenario =
        toml::from_str(source).map_err(|error| vec![from_toml(label, source, &error)])?;
    let mut checker = Checker {
        file: label,
        source,
        problems: Vec::new(),
    };
    let seed = match &raw.seed {
        Some(seed) => checker.count(seed, "seed", 0).unwrap_or(0),
        None => {
            checker.problems.push(
                Diagnostic::at(label, source, 0..0, "missing `seed`")
                    .field("seed")
                    .help("add `seed = 1` (any integer); one seed reproduces one run"),
            );
            0
        }
    };
    let seeds = SeedTree::new(seed);
    let agent = agent_spec(&mut checker, &raw.agent);
    let mock = load_mock(&mut checker, layout, &raw.agent.get_ref().model);
    let summary_model = raw
        .agent
        .get_ref()
        .compaction
        .as_ref()
        .and_then(|c| c.get_ref().summary_model.as_ref())
        .and_then(|name| load_mock(&mut checker, layout, name));
    let tools = raw
        .tools
        .iter()
        .enumerate()
        .filter_map(|(i, t)| tool_spec(&mut checker, i, t))
        .collect::<Vec<_>>();
    check_unique_tools(&mut checker, &raw.tools);
    check_denied_tools(&mut checker, &raw.agent, &raw.tools);
    check_builtin_tool_clashes(&mut checker, &raw.agent, &raw.tools);
    let instructions = instruction_specs(&mut checker, &raw.instructions);
    let sources = raw
        .sources
        .iter()
        .enumerate()
        .filter_map(|(i, source)| source_spec(&mut checker, i, source))
        .collect::<Vec<_>>();
    check_unique_sources(&mut checker, &raw.sources);
    let mut workspace_files = workspace_files(&mut checker, &raw.workspace);
    generated_files(&mut checker, &seeds, &raw.workspace, &mut workspace_files);
    let history = raw
        .history
        .iter()
        .enumerate()
        .filter_map(|(i, h)| history_spec(&mut checker, &seeds, i, h))
        .collect();
    let steps = steps(&mut checker, &raw.steps);
    let task = raw.task.as_ref().map(|t| task_spec(&mut checker, t));
    let network = raw
        .network
        .as_ref()
        .map(|n| super::network::network_spec(&mut checker, n));
    let expectations = raw
        .expect
        .iter()
        .enumerate()
        .filter_map(|(i, e)| expectation(&mut checker, i, e, steps.len()))
        .collect();
    if !checker.problems.is_empty() {
        let mut problems = checker.problems;
        super::diagnostic::sort(&mut problems);
        return Err(problems);
    }
    let (Some(mut agent), Some(mock)) = (agent, mock) else {
        unreachable!("a missing agent or model records a problem");
    };
    agent.summary_model = summary_model;
    Ok(Scenario {
        name: layout.name.clone(),
        label: label.to_string(),
        description: raw.description.unwrap_or_default(),
        seed,
        agent,
        mock,
        tools,
        instructions,
        sources,
        workspace_files,
        fail_writes_under: raw.workspace.fail_writes_under,
        history,
        steps,
        expectations,
        task,
        network,
    })
}

fn agent_spec(checker: &mut Checker<'_>, spanned: &Spanned<RawAgent>) -> Option<AgentSpec> {
    let raw = spanned.get_ref();
    let before = checker.problems.len();
    let max_steps = match &raw.max_steps {
        Some(value) => {
            let steps = checker.count(value, "agent.max_steps", 1).unwrap_or(1);
            if steps > u64::from(limits::STEPS_PER_CALL_MAX) {
                let problem = checker
                    .at(
                        value,
                        format!(
                            "`agent.max_steps` is {steps}; at most {}",
                            limits::STEPS_PER_CALL_MAX
                        ),
                    )
                    .field("agent.max_steps");
                checker.problems.push(problem);
            }
            u32::try_from(steps).unwrap_or(1)
        }
        None => limits::STEPS_PER_CALL_DEFAULT,
    };
    let model_timeout = raw
        .model_timeout_ms
        .as_ref()
        .map(|value| checker.latency(Some(value), "agent.model_timeout_ms"));
    let estimator = match &raw.estimator {
        Some(value) => checker.choice(
            value,
            "agent.estimator",
            &["ratio", "approx", "exact-o200k", "exact-cl100k"],
            |v| match v {
                "ratio" => Some(EstimatorChoice::Ratio),
                "approx" => Some(EstimatorChoice::Approximate),
                "exact-o200k" => Some(EstimatorChoice::ExactO200k),
                "exact-cl100k" => Some(EstimatorChoice::ExactCl100k),
                _ => None,
            },
        ),
        None => Some(EstimatorChoice::Ratio),
    };
    let pairing = match &raw.tool_pairs {
        Some(value) => checker.choice(
            value,
            "agent.tool_pairs",
            &["strict", "repair", "unchecked"],
            |v| match v {
                "strict" => Some(PairingCheck::Strict),
                "repair" => Some(PairingCheck::Repair),
                "unchecked" => Some(PairingCheck::Unchecked),
                _ => None,
            },
        ),
        None => Some(PairingCheck::Strict),
    };
    let offload = offload_config(checker, raw.offload.as_ref());
    let compaction = compaction_config(checker, raw.compaction.as_ref());
    let react = match &raw.kind {
        Some(value) => checker.choice(value, "agent.kind", &["harness", "react"], |k| match k {
            "harness" => Some(false),
            "react" => Some(true),
            _ => None,
        }),
        None => Some(false),
    };
    let session_storage =
        match &raw.session_storage {
            Some(value) => checker.choice(
                value,
                "agent.session_storage",
                &["memory", "jsonl"],
                |v| match v {
                    "memory" => Some(SessionStorage::Memory),
                    "jsonl" => Some(SessionStorage::Jsonl),
                    _ => None,
                },
            ),
            None => Some(SessionStorage::Memory),
        };
    if let Some(tools) = raw.session_tools.as_ref().filter(|t| *t.get_ref())
        && raw.session_log == Some(false)
    {
        let problem = checker
            .at(
                tools,
                "`agent.session_tools` needs the session log, which `agent.session_log = false` turns off",
            )
            .field("agent.session_tools")
            .help("drop one of the two settings");
        checker.problems.push(problem);
    }
    let workspace_max_context_tokens = raw
        .workspace_max_context_tokens
        .as_ref()
        .and_then(|v| checker.count(v, "agent.workspace_max_context_tokens", 0));
    let mut optional_count = |value: &Option<Spanned<i64>>, field: &str| {
        value.as_ref().and_then(|v| checker.count(v, field, 0))
    };
    let budget = BudgetSettings {
        max_input_tokens: optional_count(&raw.max_input_tokens, "agent.max_input_tokens"),
        output_reserve: optional_count(&raw.output_reserve, "agent.output_reserve"),
        safety_margin: optional_count(&raw.safety_margin, "agent.safety_margin"),
        requested_max_output: optional_count(&raw.max_output_tokens, "agent.max_output_tokens"),
    };
    if checker.problems.len() != before {
        return None;
    }
    let name = raw.name.clone().unwrap_or_else(|| "agent".to_string());
    Some(AgentSpec {
        agent_id: raw.agent_id.clone().unwrap_or_else(|| name.clone()),
        name,
        model: raw.model.get_ref().clone(),
        sys_prompt: raw.sys_prompt.clone(),
        max_steps,
        model_timeout,
        estimator: estimator?,
        deny_tools: raw.deny_tools.iter().map(|t| t.get_ref().clone()).collect(),
        budget,
        pairing: pairing?,
        builtin_tools: builtin_tool_names(checker, &raw.builtin_tools),
        workspace_max_context_tokens,
        offload: offload?,
        omission_order: raw.omission_order.clone(),
        compaction: compaction?,
        summary_model: None,
        session_log: raw.session_log.unwrap_or(true),
        session_storage: session_storage?,
        session_tools: raw.session_tools.as_ref().is_some_and(|t| *t.get_ref()),
        react: react?,
        task_list: raw.task_list.unwrap_or(false),
        task_context: raw
            .task_context
            .as_ref()
            .map_or_else(TaskContextOptions::default, |c| TaskContextOptions {
                include_requirements: c.include_requirements,
                include_verification_results: c.include_verification_results,
                allow_requirement_proposals: c.allow_requirement_proposals,
            }),
    })
}

fn load_mock(
    checker: &mut Checker<'_>,
    layout: &Layout,
    model: &Spanned<String>,
) -> Option<MockScript> {
    let name = model.get_ref();
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with('.');
    let path = layout.mock_model(name);
    if !valid_name || !path.is_file() {
        let known = known_models(layout);
        let help = match closest(name, known.iter().map(String::as_str)) {
            Some(best) => format!("did you mean `{best}` (mock-models/{best}.toml)?"),
            None if known.is_empty() => {
                "create mock-models/<name>.toml next to the scenarios directory".to_string()
            }
            None => format!("known mock models: {}", known.join(", ")),
        };
        let problem = checker
            .at(model, format!("no mock model named `{name}`"))
            .field("agent.model")
            .help(help);
        checker.problems.push(problem);
        return None;
    }
    // Diagnostics name the file as the user can open it; traces name it relative to the suite
    // root, so goldens do not depend on how the scenario path was given.
    let label = path_to_name(&path);
    let source = match read_source(&path, &label) {
        Ok(source) => source,
        Err(problem) => {
            checker.problems.push(*problem);
            return None;
        }
    };
    match parse_mock(name, &label, &source) {
        Ok(mut script) => {
            script.file = format!("mock-models/{name}.toml");
            Some(script)
        }
        Err(problems) => {
            checker.problems.extend(problems);
            None
        }
    }
}

fn known_models(layout: &Layout) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(layout.root.join("mock-models")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .filter_map(|path| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

fn text_kind(
    checker: &mut Checker<'_>,
    value: Option<&Spanned<String>>,
    field: &str,
) -> Option<TextKind> {
    match value {
        Some(value) => {
            let names = TextKind::ALL.map(TextKind::as_str);
            checker.choice(value, field, &names, TextKind::parse)
        }
        None => Some(TextKind::Prose),
    }
}

fn result_chars(checker: &mut Checker<'_>, value: &Spanned<i64>, field: &str) -> Option<usize> {
    let chars = checker.count(value, field, 0)?;
    if chars > limits::TOOL_RESULT_CHARS_MAX as u64 {
        let problem = checker
            .at(
                value,
                format!(
                    "`{field}` is {chars}; at most {} characters",
                    limits::TOOL_RESULT_CHARS_MAX
                ),
            )
            .field(field.to_string());
        checker.problems.push(problem);
        return None;
    }
    usize::try_from(chars).ok()
}

fn tool_spec(
    checker: &mut Checker<'_>,
    index: usize,
    spanned: &Spanned<RawTool>,
) -> Option<ToolSpec> {
    let raw = spanned.get_ref();
    let field = format!("tools[{index}]");
    let name = raw.name.get_ref();
    if !ctxbed_harness::tools::is_valid_tool_name(name) {
        let problem = checker
            .at(&raw.name, format!("invalid tool name `{name}`"))
            .field(format!("{field}.name"))
            .help("use 1-64 characters from [A-Za-z0-9_-], starting with a letter or digit");
        checker.problems.push(problem);
    }
    let outputs = usize::from(raw.text.is_some())
        + usize::from(raw.texts.is_some())
        + usize::from(raw.result_chars.is_some());
    if outputs > 1 {
        let problem = checker
            .at(
                spanned,
                "a tool gives at most one of `text`, `texts` and `result_chars`",
            )
            .field(field.clone());
        checker.problems.push(problem);
        return None;
    }
    let output = if !raw.responses.is_empty() || raw.exit_code.is_some() {
        let response = |r: &RawResponse| ctxbed_sim::scripted::ScriptedResponse {
            when_args_contain: r.when_args_contain.clone(),
            text: r.text.clone(),
            exit_code: r.exit_code,
        };
        ToolOutputSpec::ByArguments {
            responses: raw.responses.iter().map(response).collect(),
            fallback: ctxbed_sim::scripted::ScriptedResponse {
                when_args_contain: String::new(),
                text: raw.text.clone().unwrap_or_default(),
                exit_code: raw.exit_code.unwrap_or(0),
            },
        }
    } else if let Some(text) = &raw.text {
        ToolOutputSpec::Fixed(text.clone())
    } else if let Some(texts) = &raw.texts {
        ToolOutputSpec::Sequence(texts.clone())
    } else if let Some(chars) = &raw.result_chars {
        let chars = result_chars(checker, chars, &format!("{field}.result_chars"))?;
        let kind = text_kind(checker, raw.content.as_ref(), &format!("{field}.content"))?;
        ToolOutputSpec::Generated { chars, kind }
    } else {
        ToolOutputSpec::Fixed(String::new())
    };
    let latency = checker.latency(raw.latency_ms.as_ref(), &format!("{field}.latency_ms"));
    let writes = match &raw.writes {
        Some(write) => match WorkspacePath::parse(write.path.get_ref()) {
            Ok(path) => Some((path.as_str().to_string(), write.text.clone())),
            Err(error) => {
                let problem = checker
                    .at(&write.path, error.to_string())
                    .field(format!("{field}.writes.path"));
                checker.problems.push(problem);
                None
            }
        },
        None => None,
    };
    let sets_plan_mode = raw
        .sets_plan_mode
        .as_ref()
        .and_then(|value| plan_mode(checker, value, &format!("{field}.sets_plan_mode")));
    Some(ToolSpec {
        writes,
        sets_plan_mode,
        name: name.clone(),
        description: raw.description.clone(),
        parameters: raw
            .parameters
            .clone()
            .and_then(|table| serde_json::to_value(table).ok()),
        output,
        latency,
        fail: raw.fail.clone(),
    })
}

fn check_unique_tools(checker: &mut Checker<'_>, tools: &[Spanned<RawTool>]) {
    let mut seen = BTreeSet::new();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.get_ref().name.get_ref();
        if !seen.insert(name.clone()) {
            let problem = checker
                .at(
                    &tool.get_ref().name,
                    format!("a tool named `{name}` is already defined"),
                )
                .field(format!("tools[{index}].name"))
                .help("tool names must be unique; rename or remove one");
            checker.problems.push(problem);
        }
    }
}

/// Every denied tool must be a tool of the scenario: a typo would silently allow it.
fn check_denied_tools(
    checker: &mut Checker<'_>,
    agent: &Spanned<RawAgent>,
    tools: &[Spanned<RawTool>],
) {
    let builtin = agent.get_ref().builtin_tools.iter().map(|t| t.get_ref());
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t.get_ref().name.get_ref())
        .chain(builtin)
        .map(String::as_str)
        .collect();
    for denied in &agent.get_ref().deny_tools {
        let name = denied.get_ref();
        if names.contains(&name.as_str()) {
            continue;
        }
        let help = match closest(name, names.iter().copied()) {
            Some(best) => format!("did you mean `{best}`?"),
            None => "deny only tools defined under [[tools]] or listed in `agent.builtin_tools`"
                .to_string(),
        };
        let problem = checker
            .at(
                denied,
                format!("`deny_tools` names `{name}`, which is not a tool of this scenario"),
            )
            .field("agent.deny_tools")
            .help(help);
        checker.problems.push(problem);
    }
}

fn workspace_files(checker: &mut Checker<'_>, raw: &RawWorkspace) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for (path, content) in &raw.files {
        match WorkspacePath::parse(path) {
            Ok(checked) => {
                files.insert(checked.as_str().to_string(), content.get_ref().clone());
            }
            Err(error) => {
                let problem = checker
                    .at(content, format!("workspace file `{path}`: {error}"))
                    .field(format!("workspace.files.\"{path}\""));
                checker.problems.push(problem);
            }
        }
    }
    files
}

fn steps(checker: &mut Checker<'_>, raw: &[Spanned<RawStep>]) -> Vec<StepSpec> {
    if raw.is_empty() {
        checker.problems.push(
            Diagnostic::at(
                checker.file,
                checker.source,
                0..0,
                "the scenario has no `[[steps]]`",
            )
            .field("steps")
            .help("add `[[steps]]` with `input = \"...\"` (and optionally `user`, `session`)"),
        );
    }
    if raw.len() > crate::limits::SCENARIO_STEPS_MAX {
        checker.problems.push(
            Diagnostic::file_level(
                checker.file,
                format!(
                    "{} steps; at most {}",
                    raw.len(),
                    crate::limits::SCENARIO_STEPS_MAX
                ),
            )
            .field("steps"),
        );
    }
    let mut steps = Vec::with_capacity(raw.len());
    for (index, step) in raw.iter().enumerate() {
        let step = step.get_ref();
        let mut workspace_writes = BTreeMap::new();
        for (path, text) in &step.workspace_writes {
            match WorkspacePath::parse(path) {
                Ok(checked) => {
                    workspace_writes.insert(checked.as_str().to_string(), text.get_ref().clone());
                }
                Err(error) => {
                    let problem = checker
                        .at(text, format!("workspace file `{path}`: {error}"))
                        .field(format!("steps[{index}].workspace_writes"));
                    checker.problems.push(problem);
                }
            }
        }
        let plan_mode = step
            .plan_mode
            .as_ref()
            .and_then(|value| plan_mode(checker, value, &format!("steps[{index}].plan_mode")));
        let restart = step.restart.as_ref().and_then(|value| {
            checker.choice(
                value,
                &format!("steps[{index}].restart"),
                &["clean", "torn", "corrupt"],
                |v| match v {
                    "clean" => Some(Restart::Clean),
                    "torn" => Some(Restart::Torn),
                    "corrupt" => Some(Restart::Corrupt),
                    _ => None,
                },
            )
        });
        let concurrent_append = step
            .concurrent_append
            .as_ref()
            .and_then(|raw| concurrent_append(checker, index, raw));
        let actions = step
            .actions
            .iter()
            .enumerate()
            .filter_map(|(at, raw)| {
                let field = format!("steps[{index}].actions[{at}]");
                if let Some(time) = &raw.get_ref().at_ms {
                    let problem = checker
                        .at(time, "an action before the call has no `at_ms`")
                        .field(format!("{field}.at_ms"))
                        .help("move it to `concurrent_actions` to take it while the call runs");
                    checker.problems.push(problem);
                    return None;
                }
                task_action(checker, &field, raw)
            })
            .collect();
        let concurrent_actions = step
            .concurrent_actions
            .iter()
            .enumerate()
            .filter_map(|(at, raw)| {
                let field = format!("steps[{index}].concurrent_actions[{at}]");
                let Some(time) = &raw.get_ref().at_ms else {
                    let problem = checker
                        .at(
                            raw,
                            "a concurrent action needs `at_ms`, its time after the step starts",
                        )
                        .field(format!("{field}.at_ms"));
                    checker.problems.push(problem);
                    return None;
                };
                let time = checker.latency(Some(time), &format!("{field}.at_ms"));
                task_action(checker, &field, raw).map(|action| (time, action))
            })
            .collect();
        steps.push(StepSpec {
            user: step.user.clone(),
            session: step.session.clone(),
            input: step.input.clone(),
            workspace_writes,
            plan_mode,
            restart,
            fail_writes_under: step.fail_writes_under.clone(),
            concurrent_append,
            actions,
            concurrent_actions,
        });
    }
    steps
}

fn expectation(
    checker: &mut Checker<'_>,
    index: usize,
    spanned: &Spanned<RawExpect>,
    step_count: usize,
) -> Option<Expectation> {
    let raw = spanned.get_ref();
    let field = format!("expect[{index}]");
    let line = Diagnostic::at(checker.file, checker.source, spanned.span(), "")
        .position
        .map_or(0, |(line, _)| line);
    let before = checker.problems.len();
    let step = raw.step.as_ref().and_then(|value| {
        let step = checker.count(value, &format!("{field}.step"), 1)?;
        if step as usize > step_count {
            let problem = checker
                .at(
                    value,
                    format!("step {step} does not exist; the scenario has {step_count} step(s)"),
                )
                .field(format!("{field}.step"));
            checker.problems.push(problem);
            return None;
        }
        usize::try_from(step).ok()
    });
    let mut count = |value: &Option<Spanned<i64>>, name: &str| {
        value
            .as_ref()
            .and_then(|v| checker.count(v, &format!("{field}.{name}"), 0))
    };
    let expectation = Expectation {
        line,
        step,
        reply: raw.reply.clone(),
        reply_contains: raw.reply_contains.clone(),
        error: raw.error.clone(),
        error_contains: raw.error_contains.clone(),
        model_calls: count(&raw.model_calls, "model_calls"),
        tool_results: count(&raw.tool_results, "tool_results"),
        denied: count(&raw.denied, "denied"),
        validation: raw.validation.clone(),
        request_messages: raw.request_messages.clone(),
        elapsed_ms: count(&raw.elapsed_ms, "elapsed_ms"),
        request: count(&raw.request, "request").and_then(|r| usize::try_from(r).ok()),
        items_present: raw.items_present.clone().unwrap_or_default(),
        items_absent: raw.items_absent.clone().unwrap_or_default(),
        transforms_include: raw.transforms_include.clone().unwrap_or_default(),
        item_revisions: raw.item_revisions.clone().unwrap_or_default(),
        item_placements: raw.item_placements.clone().unwrap_or_default(),
        layout: raw.layout.clone(),
        request_contains: raw.request_contains.clone().unwrap_or_default(),
        request_lacks: raw.request_lacks.clone().unwrap_or_default(),
        manifest_lacks: raw.manifest_lacks.clone().unwrap_or_default(),
        model_calls_at_ms: raw.model_calls_at_ms.clone(),
        source_loads: raw.source_loads.clone().unwrap_or_default(),
        input_limit: raw.input_limit,
        allowance: raw.allowance,
        workspace_count_under: raw.workspace_count_under.clone().unwrap_or_default(),
        summary_calls: count(&raw.summary_calls, "summary_calls"),
        session_records: raw.session_records.clone().unwrap_or_default(),
    };
    (checker.problems.len() == before).then_some(expectation)
}

fn history_spec(
    checker: &mut Checker<'_>,
    seeds: &SeedTree,
    index: usize,
    spanned: &Spanned<RawHistory>,
) -> Option<HistorySpec> {
    let raw = spanned.get_ref();
    let field = format!("history[{index}]");
    if raw.messages.len() > crate::limits::HISTORY_MESSAGES_MAX {
        let problem = checker
            .at(
                spanned,
                format!(
                    "{} messages; at most {}",
                    raw.messages.len(),
                    crate::limits::HISTORY_MESSAGES_MAX
                ),
            )
            .field(format!("{field}.messages"));
        checker.problems.push(problem);
        return None;
    }
    let mut messages = Vec::new();
    for (position, message) in raw.messages.iter().enumerate() {
        let id = format!("h{:04}", messages.len() + 1);
        let field = format!("{field}.messages[{position}]");
        if let Some(message) = history_message(checker, seeds, &field, id, message) {
            messages.push(message);
        }
    }
    if let Some(rounds) = &raw.rounds {
        let rounds_field = format!("{field}.rounds");
        let count = checker.count(rounds, &rounds_field, 0)?;
        if count > u64::from(crate::limits::HISTORY_ROUNDS_MAX) {
            let problem = checker
                .at(
                    rounds,
                    format!(
                        "{count} rounds; at most {}",
                        crate::limits::HISTORY_ROUNDS_MAX
                    ),
                )
                .field(rounds_field);
            checker.problems.push(problem);
            return None;
        }
        let Some(tool) = &raw.tool else {
            let problem = checker
                .at(
                    rounds,
                    "`rounds` needs a `tool = { name = \"...\", result_chars = N }`",
                )
                .field(format!("{field}.tool"));
            checker.problems.push(problem);
            return None;
        };
        let chars = match &tool.result_chars {
            Some(value) => result_chars(checker, value, &format!("{field}.tool.result_chars"))?,
            None => 100,
        };
        let kind = text_kind(
            checker,
            tool.content.as_ref(),
            &format!("{field}.tool.content"),
        )?;
        for round in 0..count {
            generated_round(&mut messages, seeds, index, round, &tool.name, chars, kind);
        }
    }
    Some(HistorySpec {
        user: raw.user.clone(),
        session: raw.session.clone(),
        messages,
    })
}

/// Appends one generated tool exchange: an assistant call and its result.
fn generated_round(
    messages: &mut Vec<Message>,
    seeds: &SeedTree,
    entry: usize,
    round: u64,
    tool: &str,
    chars: usize,
    kind: TextKind,
) {
    let call_id = format!("hist_{entry}_{round}");
    let call = ContentPart::tool_call(call_id.clone(), tool, serde_json::json!({ "round": round }));
    let call_message_id = format!("h{:04}", messages.len() + 1);
    messages.push(Message::assistant_tool_calls(call_message_id, vec![call]));
    let text = generate_text(
        kind,
        chars,
        seeds.seed_for(&format!("history/{entry}/{round}")),
    );
    let result_id = format!("h{:04}", messages.len() + 1);
    messages.push(Message::tool_result(result_id, call_id, tool, text, false));
}

fn history_message(
    checker: &mut Checker<'_>,
    seeds: &SeedTree,
    field: &str,
    id: String,
    spanned: &Spanned<RawMessage>,
) -> Option<Message> {
    let raw = spanned.get_ref();
    let roles = ["system", "user", "assistant", "tool"];
    let role = checker.choice(&raw.role, &format!("{field}.role"), &roles, |r| match r {
        "system" => Some(Role::System),
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "tool" => Some(Role::Tool),
        _ => None,
    })?;
    let text = match &raw.chars {
        Some(value) => {
            let chars = result_chars(checker, value, &format!("{field}.chars"))?;
            let kind = text_kind(checker, raw.content.as_ref(), &format!("{field}.content"))?;
            Some(generate_text(
                kind,
                chars,
                seeds.seed_for(&format!("{field}/{id}")),
            ))
        }
        None => raw.text.clone(),
    };
    if role == Role::Tool {
        let Some(call_id) = &raw.call_id else {
            let problem = checker
                .at(&raw.role, "a tool message needs `call_id` and `name`")
                .field(format!("{field}.call_id"));
            checker.problems.push(problem);
            return None;
        };
        let result = ToolResult {
            call_id: call_id.clone(),
            tool_name: raw.name.clone().unwrap_or_default(),
            outputs: vec![ToolOutput::Text {
                text: text.unwrap_or_default(),
            }],
            is_error: raw.error.unwrap_or(false),
            metadata: Default::default(),
        };
        return Some(Message::new(
            id,
            Role::Tool,
            vec![ContentPart::ToolResult(result)],
        ));
    }
    let mut parts = Vec::new();
    if let Some(thinking) = &raw.thinking {
        parts.push(ContentPart::Thinking {
            text: thinking.clone(),
        });
    }
    if let Some(text) = text {
        parts.push(ContentPart::text(text));
    }
    if let Some(media) = &raw.media {
        let kinds = ["image", "audio", "video", "file"];
        let kind = checker.choice(media, &format!("{field}.media"), &kinds, |k| match k {
            "image" => Some(MediaKind::Image),
            "audio" => Some(MediaKind::Audio),
            "video" => Some(MediaKind::Video),
            "file" => Some(MediaKind::File),
            _ => None,
        })?;
        let size_bytes = raw
            .size_bytes
            .as_ref()
            .and_then(|s| checker.count(s, &format!("{field}.size_bytes"), 0))
            .unwrap_or(0);
        parts.push(ContentPart::Media { kind, size_bytes });
    }
    for call in &raw.tool_calls {
        let arguments = call
            .args
            .clone()
            .and_then(|table| serde_json::to_value(table).ok())
            .unwrap_or_else(|| serde_json::json!({}));
        parts.push(ContentPart::tool_call(
            call.id.clone(),
            call.name.clone(),
            arguments,
        ));
    }
    Some(Message::new(id, role, parts))
}

fn instruction_specs(
    checker: &mut Checker<'_>,
    raw: &[Spanned<RawInstruction>],
) -> Vec<InstructionSpec> {
    let mut specs: Vec<InstructionSpec> = Vec::new();
    for (index, instruction) in raw.iter().enumerate() {
        let instruction = instruction.get_ref();
        let name = instruction.name.get_ref();
        if !ctxbed_harness::context::source::is_valid_name(name) {
            let problem = checker
                .at(
                    &instruction.name,
                    format!("invalid instruction name `{name}`"),
                )
                .field(format!("instructions[{index}].name"))
                .help("start with a letter or digit and use only letters, digits, `_`, `.` or `-`");
            checker.problems.push(problem);
            continue;
        }
        specs.push(InstructionSpec {
            name: name.clone(),
            text: instruction.text.clone(),
        });
    }
    specs
}

fn source_spec(
    checker: &mut Checker<'_>,
    index: usize,
    spanned: &Spanned<RawSource>,
) -> Option<SourceSpec> {
    let raw = spanned.get_ref();
    let field = format!("sources[{index}]");
    let before = checker.problems.len();
    let name = raw.name.get_ref();
    if !ctxbed_harness::context::source::is_valid_name(name) {
        let problem = checker
            .at(&raw.name, format!("invalid source name `{name}`"))
            .field(format!("{field}.name"))
            .help("start with a letter or digit and use only letters, digits, `_`, `.` or `-`");
        checker.problems.push(problem);
    }
    let timeout = raw.timeout_ms.as_ref().and_then(|value| {
        let millis = checker.count(value, &format!("{field}.timeout_ms"), 1)?;
        Some(Duration::from_millis(
            millis.min(crate::limits::LATENCY_MS_MAX),
        ))
    });
    let omit = raw.on_failure.as_ref().map_or(Some(false), |value| {
        checker.choice(
            value,
            &format!("{field}.on_failure"),
            &["fail", "omit"],
            |v| match v {
                "fail" => Some(false),
                "omit" => Some(true),
                _ => None,
            },
        )
    });
    let latency = checker.latency(raw.latency_ms.as_ref(), &format!("{field}.latency_ms"));
    let failure = raw.failure.as_ref().and_then(|value| {
        checker.choice(
            value,
            &format!("{field}.failure"),
            &["error", "no_list", "never", "panic"],
            |v| match v {
                "error" => Some(SourceFailure::Error),
                "no_list" => Some(SourceFailure::NoList),
                "never" => Some(SourceFailure::Never),
                "panic" => Some(SourceFailure::Panic),
                _ => None,
            },
        )
    });
    let mut blocks = Vec::new();
    for (position, block) in raw.blocks.iter().enumerate() {
        let spec = block.get_ref();
        if spec.kind.get_ref() == "system" {
            let problem = checker
                .at(&spec.kind, "a source block cannot be System material")
                .field(format!("{field}.blocks[{position}].kind"))
                .help("dynamic blocks are `runtime` or `reference`; trusted System text belongs in an `[[instructions]]` entry");
            checker.problems.push(problem);
            continue;
        }
        let runtime = checker.choice(
            &spec.kind,
            &format!("{field}.blocks[{position}].kind"),
            &["runtime", "reference"],
            |k| match k {
                "runtime" => Some(true),
                "reference" => Some(false),
                _ => None,
            },
        );
        if let Some(runtime) = runtime {
            blocks.push(BlockSpec {
                id: spec.id.clone(),
                runtime,
                text: spec.text.clone(),
                required: spec.required,
                priority: spec.priority,
                revision: spec.revision.clone(),
            });
        }
    }
    if checker.problems.len() != before {
        return None;
    }
    Some(SourceSpec {
        name: name.clone(),
        timeout,
        omit_on_failure: omit?,
        latency,
        failure,
        fail_loads: raw.fail_loads.clone(),
        blocks,
    })
}

fn check_unique_sources(checker: &mut Checker<'_>, sources: &[Spanned<RawSource>]) {
    let mut seen = BTreeSet::new();
    for (index, source) in sources.iter().enumerate() {
        let name = source.get_ref().name.get_ref();
        if !seen.insert(name.clone()) {
            let problem = checker
                .at(
                    &source.get_ref().name,
                    format!("a source named `{name}` is already defined"),
                )
                .field(format!("sources[{index}].name"))
                .help("source names must be unique; rename or remove one");
            checker.problems.push(problem);
        }
    }
}

/// `Some(None)` when offload is disabled; `None` when the section has a problem.
fn offload_config(
    checker: &mut Checker<'_>,
    raw: Option<&Spanned<RawOffload>>,
) -> Option<Option<OffloadConfig>> {
    let Some(spanned) = raw else {
        return Some(Some(OffloadConfig::default()));
    };
    let raw = spanned.get_ref();
    if raw.enabled == Some(false) {
        return Some(None);
    }
    let before = checker.problems.len();
    let mut config = OffloadConfig::default();
    if let Some(value) = &raw.max_result_chars {
        config.max_result_chars = checker
            .count(value, "agent.offload.max_result_chars", 1)
            .unwrap_or(1) as usize;
    }
    if let Some(value) = &raw.preview_chars {
        config.preview_chars = checker
            .count(value, "agent.offload.preview_chars", 0)
            .unwrap_or(0) as usize;
    }
    if let Some(value) = &raw.eviction_path {
        match WorkspacePath::parse(value.get_ref()) {
            Ok(path) => config.eviction_path = path.as_str().to_string(),
            Err(error) => {
                let problem = checker
                    .at(value, error.to_string())
                    .field("agent.offload.eviction_path");
                checker.problems.push(problem);
            }
        }
    }
    if let Some(tools) = &raw.excluded_tools {
        config.excluded_tools = tools.iter().cloned().collect();
    }
    (checker.problems.len() == before).then_some(Some(config))
}

/// `Some(None)` when compaction is disabled; `None` when the section has a problem.
fn compaction_config(
    checker: &mut Checker<'_>,
    raw: Option<&Spanned<RawCompaction>>,
) -> Option<Option<CompactionConfig>> {
    let Some(spanned) = raw else {
        return Some(Some(CompactionConfig::default()));
    };
    let raw = spanned.get_ref();
    if raw.enabled == Some(false) {
        return Some(None);
    }
    let before = checker.problems.len();
    let mut config = CompactionConfig::default();
    let mut count = |value: &Option<Spanned<i64>>, field: &str, min: i64| {
        value
            .as_ref()
            .and_then(|v| checker.count(v, &format!("agent.compaction.{field}"), min))
    };
    if let Some(value) = count(&raw.trigger_messages, "trigger_messages", 1) {
        config.trigger_messages = value as usize;
    }
    if let Some(value) = count(&raw.trigger_tokens, "trigger_tokens", 0) {
        config.trigger_tokens = value;
    }
    if let Some(value) = count(&raw.keep_tokens, "keep_tokens", 0) {
        config.keep_tokens = Some(value);
    }
    if let Some(value) = count(&raw.keep_messages, "keep_messages", 1) {
        config.keep_messages = value as usize;
    }
    if let Some(prune) = &raw.prune {
        if prune.enabled == Some(false) {
            config.prune = None;
        } else {
            let mut p = PruneConfig::default();
            if let Some(v) = count(&prune.protect_tokens, "prune.protect_tokens", 0) {
                p.protect_tokens = v;
            }
            if let Some(v) = count(
                &prune.minimum_prunable_tokens,
                "prune.minimum_prunable_tokens",
                0,
            ) {
                p.minimum_prunable_tokens = v;
            }
            if let Some(v) = count(&prune.preview_chars, "prune.preview_chars", 2) {
                p.preview_chars = v as usize;
            }
            if let Some(tools) = &prune.excluded_tools {
                p.excluded_tools = tools.iter().cloned().collect();
            }
            config.prune = Some(p);
        }
    }
    if let Some(truncate) = &raw.truncate_args {
        let mut t = TruncateArgsConfig::default();
        if let Some(v) = count(
            &truncate.trigger_messages,
            "truncate_args.trigger_messages",
            0,
        ) {
            t.trigger_messages = v as usize;
        }
        if let Some(v) = count(&truncate.trigger_tokens, "truncate_args.trigger_tokens", 0) {
            t.trigger_tokens = v;
        }
        if let Some(v) = count(&truncate.protect_latest, "truncate_args.protect_latest", 0) {
            t.protect_latest = v as usize;
        }
        if let Some(v) = count(&truncate.max_arg_length, "truncate_args.max_arg_length", 1) {
            t.max_arg_length = v as usize;
        }
        if let Some(text) = &truncate.truncation_text {
            t.truncation_text = text.clone();
        }
        config.truncate_args = Some(t);
    }
    if let Some(prompt) = &raw.summary_prompt {
        if prompt
            .get_ref()
            .contains(ctxbed_harness::compaction::config::MESSAGES_PLACEHOLDER)
        {
            config.summary_prompt = prompt.get_ref().clone();
        } else {
            let problem = checker
                .at(prompt, "the summary prompt has no `{messages}` placeholder")
                .field("agent.compaction.summary_prompt")
                .help("put `{messages}` where the conversation to summarise should go");
            checker.problems.push(problem);
        }
    }
    if let Some(flush) = raw.flush_before_compact {
        config.flush_before_compact = flush;
    }
    (checker.problems.len() == before).then_some(Some(config))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGenerated {
    chars: Spanned<i64>,
    content: Option<Spanned<String>>,
}

/// Checks `agent.builtin_tools`: known names (with a did-you-mean), each listed once.
fn builtin_tool_names(checker: &mut Checker<'_>, raw: &[Spanned<String>]) -> Vec<String> {
    let known = ctxbed_harness::tools::builtin::BUILTIN_TOOL_NAMES;
    let mut names: Vec<String> = Vec::new();
    for value in raw {
        let field = "agent.builtin_tools";
        let Some(name) = checker.choice(value, field, &known, |name| {
            known.contains(&name).then(|| name.to_string())
        }) else {
            continue;
        };
        if names.contains(&name) {
            let problem = checker
                .at(value, format!("built-in tool `{name}` is listed twice"))
                .field(field)
                .help("list each built-in tool once");
            checker.problems.push(problem);
            continue;
        }
        names.push(name);
    }
    names
}

/// A scripted tool may not take a built-in tool's name: the registry would refuse the second.
fn check_builtin_tool_clashes(
    checker: &mut Checker<'_>,
    agent: &Spanned<RawAgent>,
    tools: &[Spanned<RawTool>],
) {
    let builtin: Vec<&str> = agent
        .get_ref()
        .builtin_tools
        .iter()
        .map(|t| t.get_ref().as_str())
        .collect();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.get_ref().name.get_ref();
        if builtin.contains(&name.as_str()) {
            let problem = checker
                .at(
                    &tool.get_ref().name,
                    format!("a tool named `{name}` is also listed in `agent.builtin_tools`"),
                )
                .field(format!("tools[{index}].name"))
                .help("rename the scripted tool or remove the name from `builtin_tools`");
            checker.problems.push(problem);
        }
    }
}

/// Adds `[workspace.generated]` files: deterministic text of an exact length per path, e.g.
/// `"big.log" = { chars = 200000, content = "log" }`, seeded by the scenario seed and the path.
fn generated_files(
    checker: &mut Checker<'_>,
    seeds: &SeedTree,
    raw: &RawWorkspace,
    files: &mut BTreeMap<String, String>,
) {
    for (path, spanned) in &raw.generated {
        let field = format!("workspace.generated.\"{path}\"");
        let checked = match WorkspacePath::parse(path) {
            Ok(checked) => checked,
            Err(error) => {
                let problem = checker
                    .at(spanned, format!("workspace file `{path}`: {error}"))
                    .field(field);
                checker.problems.push(problem);
                continue;
            }
        };
        if files.contains_key(checked.as_str()) {
            let problem = checker
                .at(
                    spanned,
                    format!("workspace file `{path}` is also given under [workspace.files]"),
                )
                .field(field)
                .help("give each workspace file once");
            checker.problems.push(problem);
            continue;
        }
        let generated = spanned.get_ref();
        let Some(chars) = result_chars(checker, &generated.chars, &format!("{field}.chars")) else {
            continue;
        };
        let Some(kind) = text_kind(
            checker,
            generated.content.as_ref(),
            &format!("{field}.content"),
        ) else {
            continue;
        };
        let seed = seeds.seed_for(&format!("workspace/{checked}"));
        files.insert(checked.to_string(), generate_text(kind, chars, seed));
    }
}

fn concurrent_append(
    checker: &mut Checker<'_>,
    index: usize,
    raw: &Spanned<RawAppend>,
) -> Option<ConcurrentAppend> {
    let field = format!("steps[{index}].concurrent_append");
    let append = raw.get_ref();
    let at = checker.latency(Some(&append.at_ms), &format!("{field}.at_ms"));
    let role = match &append.role {
        Some(value) => checker.choice(
            value,
            &format!("{field}.role"),
            &["user", "assistant"],
            |r| match r {
                "user" => Some(Role::User),
                "assistant" => Some(Role::Assistant),
                _ => None,
            },
        )?,
        None => Role::User,
    };
    Some(ConcurrentAppend {
        at,
        role,
        text: append.text.clone(),
    })
}

/// A task action; every field its kind needs must be there, and no other.
fn task_action(
    checker: &mut Checker<'_>,
    field: &str,
    spanned: &Spanned<RawAction>,
) -> Option<TaskAction> {
    const KINDS: [&str; 5] = [
        "propose",
        "decide",
        "subject_version",
        "invalidate_subject",
        "verify",
    ];
    let raw = spanned.get_ref();
    let kind = checker.choice(&raw.kind, &format!("{field}.kind"), &KINDS, |k| {
        KINDS.contains(&k).then(|| k.to_string())
    })?;
    let present: Vec<(&str, bool)> = vec![
        ("requirement", raw.requirement.is_some()),
        ("requirement_kind", raw.requirement_kind.is_some()),
        ("text", raw.text.is_some()),
        ("source", raw.source.is_some()),
        ("decision", raw.decision.is_some()),
        ("authority", raw.authority.is_some()),
        ("expected_revision", raw.expected_revision.is_some()),
        ("version", raw.version.is_some()),
        ("check", raw.check.is_some()),
        ("passed", raw.passed.is_some()),
        ("summary", raw.summary.is_some()),
    ];
    let wanted: &[&str] = match kind.as_str() {
        "propose" => &["requirement_kind", "text", "source"],
        "decide" => &["requirement", "decision", "authority", "expected_revision"],
        "subject_version" => &["version"],
        "invalidate_subject" => &[],
        _ => &["check", "passed", "summary"],
    };
    let before = checker.problems.len();
    for (name, is_present) in &present {
        let needed = wanted.contains(name);
        if needed != *is_present {
            let message = if needed {
                format!("a `{kind}` action needs `{name}`")
            } else {
                format!("a `{kind}` action takes no `{name}`")
            };
            let problem = checker
                .at(spanned, message)
                .field(format!("{field}.{name}"))
                .help(format!(
                    "a `{kind}` action takes: {}",
                    if wanted.is_empty() {
                        "nothing but `kind`".to_string()
                    } else {
                        wanted.join(", ")
                    }
                ));
            checker.problems.push(problem);
        }
    }
    if checker.problems.len() != before {
        return None;
    }
    let text = |value: &Option<String>| value.clone().unwrap_or_default();
    match kind.as_str() {
        "propose" => {
            let value = raw.requirement_kind.as_ref()?;
            let names: Vec<&str> = RequirementKind::ALL.iter().map(|k| k.as_str()).collect();
            let requirement_kind = checker.choice(
                value,
                &format!("{field}.requirement_kind"),
                &names,
                RequirementKind::parse,
            )?;
            Some(TaskAction::Propose {
                kind: requirement_kind,
                text: text(&raw.text),
                source: text(&raw.source),
            })
        }
        "decide" => {
            let decision = checker.choice(
                raw.decision.as_ref()?,
                &format!("{field}.decision"),
                &["confirm", "reject"],
                |d| match d {
                    "confirm" => Some(Decision::Confirm),
                    "reject" => Some(Decision::Reject),
                    _ => None,
                },
            )?;
            let expected_revision = checker.count(
                raw.expected_revision.as_ref()?,
                &format!("{field}.expected_revision"),
                0,
            )?;
            Some(TaskAction::Decide {
                requirement: text(&raw.requirement),
                decision,
                authority: text(&raw.authority),
                expected_revision,
            })
        }
        "subject_version" => Some(TaskAction::SubjectVersion(text(&raw.version))),
        "invalidate_subject" => Some(TaskAction::InvalidateSubject),
        _ => Some(TaskAction::Verify {
            check: text(&raw.check),
            passed: raw.passed.unwrap_or(false),
            summary: text(&raw.summary),
        }),
    }
}

fn plan_mode(checker: &mut Checker<'_>, value: &Spanned<String>, field: &str) -> Option<PlanMode> {
    checker.choice(value, field, &["plan", "build"], |m| match m {
        "plan" => Some(PlanMode::Plan),
        "build" => Some(PlanMode::Build),
        _ => None,
    })
}

fn task_spec(checker: &mut Checker<'_>, raw: &RawTask) -> TaskSpec {
    let scope = match (&raw.task_id, &raw.objective) {
        (Some(task_id), Some(objective)) => {
            Some(TaskScope::new(task_id.clone(), objective.clone()))
        }
        _ => None,
    };
    let plan_mode = raw
        .plan_mode
        .as_ref()
        .and_then(|v| plan_mode(checker, v, "task.plan_mode"));
    let plan_path =
        raw.plan_path
            .as_ref()
            .and_then(|value| match WorkspacePath::parse(value.get_ref()) {
                Ok(path) => Some(path.as_str().to_string()),
                Err(error) => {
                    let problem = checker.at(value, error.to_string()).field("task.plan_path");
                    checker.problems.push(problem);
                    None
                }
            });
    TaskSpec {
        scope,
        plan_mode,
        plan_path,
    }
}
