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
//!
//! The raw serde structs of the format are in `raw`, the checked model in `checked` (re-exported
//! here), and the checks from one to the other in a module per part of the file.

mod agent;
mod checked;
mod expectations;
mod history;
mod material;
mod mock_models;
pub(super) mod raw;
mod steps;
mod task;
mod text;
mod tools;
mod workspace;

use std::path::{Path, PathBuf};

use super::diagnostic::{Diagnostic, from_toml};
use super::mock_file::Checker;
use super::shape::{LazyShape, titled};
use super::source::read_source;
use ctxbed_sim::mock::MockScript;
use ctxbed_sim::rng::{SeedTree, Stream};

use agent::agent_spec;
pub use checked::{
    AgentSpec, ConcurrentAppend, EstimatorChoice, Expectation, HistorySpec, InstructionSpec,
    Restart, Scenario, SessionStorage, SourceSpec, StepSpec, TaskAction, TaskSpec, ToolOutputSpec,
    ToolSpec,
};
use expectations::expectation;
use history::history_spec;
use material::{check_unique_sources, instruction_specs, source_spec};
use mock_models::load_mock;
use raw::RawScenario;
use steps::steps;
use task::task_spec;
use tools::{check_builtin_tool_clashes, check_denied_tools, check_unique_tools, tool_spec};
use workspace::{generated_files, workspace_files};

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

    /// The golden trace's path: an insta snapshot, `golden/<name>.snap`.
    pub fn golden(&self) -> PathBuf {
        self.root
            .join("golden")
            .join(format!("{}.{}", self.name, SNAPSHOT_EXTENSION))
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
/// The extension of goldens kept as insta snapshots (`golden/<name>.snap`).
pub const SNAPSHOT_EXTENSION: &str = "snap";

/// The scenario format's shape, compiled once.
static SHAPE: LazyShape = LazyShape::new(json_schema);

/// The JSON Schema of a scenario file (`scenarios/**/*.toml`, wire scenarios excepted), derived
/// from the raw serde structs the loader reads, so it cannot drift from the format.
pub fn json_schema() -> serde_json::Value {
    titled(
        serde_json::to_value(schemars::schema_for!(RawScenario)).unwrap_or_default(),
        "ctxbed scenario",
        "A ctxbed scenario file: the agent, its materials, the steps and the expectations. See docs/scenario-format.md.",
    )
}

/// # Errors
/// Every problem found in the scenario or its mock-model file.
pub fn parse_scenario(
    layout: &Layout,
    label: &str,
    source: &str,
) -> Result<Scenario, Vec<Diagnostic>> {
    let shape = SHAPE.problems(label, source);
    if !shape.is_empty() {
        return Err(shape);
    }
    let raw: RawScenario =
        toml::from_str(source).map_err(|error| vec![from_toml(label, source, &error)])?;
    let mut checker = Checker {
        file: label,
        source,
        problems: Vec::new(),
    };
    let seeds = SeedTree::new(scenario_seed(&mut checker, &raw));
    let agent = agent_spec(&mut checker, &raw.agent);
    let (mock, summary_model) = mock_models(&mut checker, layout, &raw);
    let tools = tool_specs(&mut checker, &raw);
    let instructions = instruction_specs(&mut checker, &raw.instructions);
    let sources = source_specs(&mut checker, &raw);
    let mut workspace_files = workspace_files(&mut checker, &raw.workspace);
    generated_files(
        &mut checker,
        seeds.stream(Stream::Workspace),
        &raw.workspace,
        &mut workspace_files,
    );
    let history = history_specs(&mut checker, &seeds, &raw);
    let steps = steps(&mut checker, &raw.steps);
    let task = raw.task.as_ref().map(|t| task_spec(&mut checker, t));
    let network = raw
        .network
        .as_ref()
        .map(|n| super::network::network_spec(&mut checker, n));
    let expectations = expectation_specs(&mut checker, &raw, steps.len());
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
        seed: seeds,
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

/// The scenario's `seed`, which is required (0 stands in when it is missing).
fn scenario_seed(checker: &mut Checker<'_>, raw: &RawScenario) -> u64 {
    match &raw.seed {
        Some(seed) => checker.count(seed, "seed", 0).unwrap_or(0),
        None => {
            checker.problems.push(
                Diagnostic::at(checker.file, checker.source, 0..0, "missing `seed`")
                    .field("seed")
                    .help("add `seed = 1` (any integer); one seed reproduces one run"),
            );
            0
        }
    }
}

/// The agent's mock model and, when compaction names one, the summary model's.
fn mock_models(
    checker: &mut Checker<'_>,
    layout: &Layout,
    raw: &RawScenario,
) -> (Option<MockScript>, Option<MockScript>) {
    let agent = raw.agent.get_ref();
    let mock = load_mock(checker, layout, &agent.model, "agent.model");
    let summary_model = agent
        .compaction
        .as_ref()
        .and_then(|c| c.get_ref().summary_model.as_ref())
        .and_then(|name| load_mock(checker, layout, name, "agent.compaction.summary_model"));
    (mock, summary_model)
}

/// The `[[history]]` messages, their generated text drawn from the history stream.
fn history_specs(
    checker: &mut Checker<'_>,
    seeds: &SeedTree,
    raw: &RawScenario,
) -> Vec<HistorySpec> {
    raw.history
        .iter()
        .enumerate()
        .filter_map(|(i, h)| history_spec(checker, seeds.stream(Stream::History), i, h))
        .collect()
}

/// The `[[expect]]` entries, each naming a step among the `step_count`.
fn expectation_specs(
    checker: &mut Checker<'_>,
    raw: &RawScenario,
    step_count: usize,
) -> Vec<Expectation> {
    raw.expect
        .iter()
        .enumerate()
        .filter_map(|(i, e)| expectation(checker, i, e, step_count))
        .collect()
}

/// The `[[sources]]`, each checked, then checked together for unique names.
fn source_specs(checker: &mut Checker<'_>, raw: &RawScenario) -> Vec<SourceSpec> {
    let sources = raw
        .sources
        .iter()
        .enumerate()
        .filter_map(|(i, source)| source_spec(checker, i, source))
        .collect::<Vec<_>>();
    check_unique_sources(checker, &raw.sources);
    sources
}

/// The `[[tools]]`, each checked, then checked together: unique names, denials of tools that
/// exist, no clash with a built-in tool.
fn tool_specs(checker: &mut Checker<'_>, raw: &RawScenario) -> Vec<ToolSpec> {
    let tools = raw
        .tools
        .iter()
        .enumerate()
        .filter_map(|(i, t)| tool_spec(checker, i, t))
        .collect::<Vec<_>>();
    check_unique_tools(checker, &raw.tools);
    check_denied_tools(checker, &raw.agent, &raw.tools);
    check_builtin_tool_clashes(checker, &raw.agent, &raw.tools);
    tools
}
