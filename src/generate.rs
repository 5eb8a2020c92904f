//! Random but valid scenarios from one seed, for sweeps.
//!
//! [`generate`] builds a checked [`Scenario`] value directly, without going through TOML: the
//! agent configuration (window, budget caps, compaction and offload settings, tool-pair policy),
//! scripted tools with tiny to huge results in prose, code, JSON, log and CJK text, context
//! sources with latencies around their timeouts and failures under FAIL or OMIT, workspace files,
//! a committed history (long tool chains, parallel calls, media, the odd unpaired exchange), the
//! steps, and a mock-model script whose turns form the conversation and the fault schedule:
//! overflow in the imitated provider's or another provider's wording, malformed replies,
//! timeouts, transient faults, rate limits and pairing rejections. Write failures under a
//! workspace prefix and failing sources complete the model's schedule. A quarter of the seeds
//! enable task state: the script then writes the Todo list (`todo_write`) once or twice,
//! sometimes with a list the tool refuses, so the checker can follow the list across
//! compactions.
//!
//! Around the agent (`faults`, version 3): about a third of the seeds keep the session log as
//! JSON lines in the workspace; a quarter of those restart the agent before a later step (half
//! of them after a torn write: a new agent over the same storage restores the session), and a
//! sixth fail every write under `sessions/` (`session_log_failed`), from the start or from a
//! later step on, sometimes healing before a step after that. An eighth of the seeds have
//! another writer append to a step's session while it runs (`history_conflict`), and a third of
//! the seeds with task state take application actions on it (requirements, decisions, subject
//! versions, verification reports) before a call and while it runs (`state_conflict`).
//!
//! Version 4 reaches the features that landed after the fault schedule: an eighth of the seeds
//! use plan mode (`plan`: a mode or plan file at the start, a switch before later steps, a
//! scripted tool that switches it while the agent's own call runs), a sixth of those with a
//! session log get the session tools and calls to them, a tenth of those with a session log and
//! two steps restart once more (over memory storage too), a tenth count with `approx`,
//! `read_file` calls page from a later line or character, and a scripted summary model may time
//! out, answer malformed, be rate limited, reject pairing, or ask for a tool with its summary.
//! A seventh of the seeds let the model propose requirements, a tenth have the application
//! rewrite `AGENTS.md` or a knowledge file before a later step, turn conditions combine, and one
//! seed in a hundred runs its model behind the simulated network (`network`).
//!
//! Version 5 damages session logs: an eighth of the seeds with JSON-lines storage and two steps
//! restart before a later step after a line in the middle of every session file was zeroed, so
//! each later call of a damaged session fails to restore it (I10 holds the agent to leaving
//! the file as it is).
//!
//! Every concern draws from its own ChaCha8 stream of the generator's stream of the seed tree
//! ([`SeedStream::fork`]; the tree goes into the scenario for its runs), so changing how one part
//! is generated leaves the others as they were. Scenarios stay small (a few requests of a few
//! thousand tokens) so that a sweep runs about a thousand per second per core in release.
//!
//! The mock script always ends with a turn that answers every remaining request
//! ([`limits::MOCK_TURNS_MAX`] times), so no generated run exhausts its script: an exhausted
//! script names the line of its file, which a scenario built in code does not have.
//!
//! ```
//! use ctxbed::generate::generate;
//! let scenario = generate(7);
//! assert_eq!(scenario.seed.seed(), 7);
//! assert!(!scenario.steps.is_empty());
//! assert_eq!(format!("{:?}", generate(7)), format!("{scenario:?}"));
//! ```

use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::limits;
use crate::scenario::format::file::{
    AgentSpec, Scenario, StepSpec, TaskSpec, ToolOutputSpec, ToolSpec,
};
use ctxbed_sim::mock::MockScript;
use ctxbed_sim::rng::{SeedStream, SeedTree, Stream};
use ctxbed_sim::text::{TextKind, generate_text};

mod agent;
mod faults;
mod history;
mod material;
mod model;
mod network;
mod plan;

use agent::{agent, approximate_estimator};
use history::{history, second_session_history};
use material::{instructions, omission_order, sources, workspace_files};
use model::mock_script;

/// The generator's version: raised whenever some seed gives a different scenario than before, so
/// a seed number quoted with a version reproduces the same run. Version 2 added task state;
/// version 3 JSON-lines session storage with restarts and failing session-log writes,
/// concurrent appends, and task actions before and during a call; version 4 plan mode, the
/// session tools, restarts with memory storage and second restarts, the `approx` estimator,
/// `read_file` offsets, more summary-model faults, combined turn conditions, requirement
/// proposals, application writes to workspace material, and the simulated network; version 5
/// restarts after damage inside a session log.
pub const GENERATOR_VERSION: u32 = 5;

/// The directory a generated scenario's name lives under (`sweep/seed-<seed>`).
pub const NAME_PREFIX: &str = "sweep";

/// The mock model's name for a seed (its file is `mock-models/<name>.toml`).
pub fn model_name(seed: u64) -> String {
    format!("sweep-{seed}")
}

/// Builds the scenario for one seed. The same seed always gives the same scenario.
///
/// # Panics
/// Never for any seed; the asserts check that the generator keeps to the scenario rules.
pub fn generate(seed: u64) -> Scenario {
    let tree = SeedTree::new(seed);
    let draws = tree.stream(Stream::Generator);
    let mut tools = tools(&mut Draw::new(&draws, "/tools"));
    let builtin_tools = builtin_tools(&mut Draw::new(&draws, "/builtin"), &tools);
    let mut steps = steps(&mut Draw::new(&draws, "/steps"));
    let mut tool_names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    tool_names.extend(builtin_tools.iter().cloned());
    let mut agent = agent(
        &mut Draw::new(&draws, "/agent"),
        &draws,
        seed,
        &tools,
        builtin_tools,
    );
    let mut mock = mock_script(&mut Draw::new(&draws, "/model"), seed, &tool_names);
    let mut workspace = Draw::new(&draws, "/workspace");
    let workspace_files = workspace_files(&mut workspace);
    let mut fail_writes_under = fail_writes_under(&mut workspace);
    let sources = sources(&mut Draw::new(&draws, "/sources"));
    agent.omission_order = omission_order(
        &mut Draw::new(&draws, "/omission"),
        &sources,
        &workspace_files,
    );
    model::task_list(&mut Draw::new(&draws, "/task"), &mut agent, &mut mock);
    let window = faults::preparation_window(&sources);
    let mut task = around_the_agent(
        &draws,
        window,
        &mut agent,
        &mut steps,
        &mut fail_writes_under,
    );
    later_features(
        &draws, &mut agent, &mut mock, &mut task, &mut steps, &mut tools,
    );
    spare_step_writes(&mut steps, &fail_writes_under);
    let mut history = history(&mut Draw::new(&draws, "/history"), &tool_names);
    history.extend(second_session_history(
        &mut Draw::new(&draws, "/history-2"),
        &steps,
        &tool_names,
    ));
    let scenario = Scenario {
        task,
        network: network::network(&mut Draw::new(&draws, "/network")),
        name: format!("{NAME_PREFIX}/seed-{seed}"),
        label: format!("{NAME_PREFIX}/seed-{seed}.toml"),
        description: format!("Generated by `ctxbed sweep` from seed {seed}"),
        seed: tree,
        agent,
        mock,
        tools,
        instructions: instructions(&mut Draw::new(&draws, "/instructions")),
        sources,
        workspace_files,
        fail_writes_under,
        history,
        steps,
        expectations: Vec::new(),
    };
    assert!(!scenario.steps.is_empty(), "a scenario has a step");
    assert!(
        scenario.steps.len() <= limits::SCENARIO_STEPS_MAX,
        "steps within the limit"
    );
    scenario
}

/// Drops the workspace writes of steps under a failing prefix: the runner writes them before
/// the step, and a failing write would stop the run.
fn spare_step_writes(steps: &mut [StepSpec], fail_writes_under: &[String]) {
    for step in steps {
        step.workspace_writes.retain(|path, _| {
            !fail_writes_under
                .iter()
                .any(|p| path.starts_with(p.as_str()))
        });
    }
}

/// Around the agent (version 3 on): session storage with restarts, torn writes and failing
/// writes, another writer appending during a step, task actions before and during a call
/// (the task state they make is returned), more restarts, and restarts after damage.
fn around_the_agent(
    draws: &SeedStream,
    window: Duration,
    agent: &mut AgentSpec,
    steps: &mut Vec<StepSpec>,
    fail_writes_under: &mut Vec<String>,
) -> Option<TaskSpec> {
    faults::sessions(
        &mut Draw::new(draws, "/sessions"),
        agent,
        steps,
        fail_writes_under,
    );
    faults::concurrent_append(&mut Draw::new(draws, "/append"), steps, window);
    let task = faults::task_actions(&mut Draw::new(draws, "/task-actions"), agent, steps, window);
    faults::more_restarts(&mut Draw::new(draws, "/restarts"), agent, steps);
    faults::corrupt_restart(&mut Draw::new(draws, "/corrupt-restart"), agent, steps);
    task
}

/// The features that landed after the fault schedule (version 4): plan mode, the session
/// tools, the `approx` estimator, requirement proposals and application writes.
fn later_features(
    draws: &SeedStream,
    agent: &mut AgentSpec,
    mock: &mut MockScript,
    task: &mut Option<TaskSpec>,
    steps: &mut [StepSpec],
    tools: &mut [ToolSpec],
) {
    plan::plan_mode(&mut Draw::new(draws, "/plan"), agent, task, steps, tools);
    model::session_tools(&mut Draw::new(draws, "/session-tools"), agent, mock);
    approximate_estimator(&mut Draw::new(draws, "/estimator"), agent);
    model::requirement_proposals(&mut Draw::new(draws, "/proposals"), agent, mock);
    application_writes(&mut Draw::new(draws, "/app-writes"), steps);
}

/// One random stream with the draws the generator needs.
struct Draw(ChaCha8Rng);

impl Draw {
    fn new(draws: &SeedStream, concern: &str) -> Self {
        Draw(draws.fork(concern))
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.0.next_u64() % n }
    }

    /// Uniform in `low..=high`.
    fn range(&mut self, low: u64, high: u64) -> u64 {
        assert!(low <= high, "an empty range");
        low + self.below(high - low + 1)
    }

    /// The index of a step after the first among `steps` (at least two).
    fn later_step(&mut self, steps: usize) -> usize {
        assert!(steps >= 2, "a later step needs two steps");
        self.range(1, steps as u64 - 1) as usize
    }

    /// True with the given probability in percent.
    fn percent(&mut self, chance: u64) -> bool {
        self.below(100) < chance
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        assert!(!items.is_empty(), "pick from an empty list");
        &items[self.below(items.len() as u64) as usize]
    }

    fn seed(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A content kind: prose most often, then code, CJK, logs and JSON.
    fn kind(&mut self) -> TextKind {
        match self.below(100) {
            0..35 => TextKind::Prose,
            35..55 => TextKind::Code,
            55..75 => TextKind::Cjk,
            75..90 => TextKind::Log,
            _ => TextKind::Json,
        }
    }

    /// A length class skewed to small: tiny, small, medium, large, and rarely huge.
    fn size(&mut self) -> usize {
        let (low, high) = match self.below(1000) {
            0..400 => (0, 30),
            400..820 => (30, 150),
            820..960 => (150, 800),
            960..995 => (800, 5_000),
            _ => (5_000, GENERATED_CHARS_MAX),
        };
        self.range(low, high) as usize
    }

    /// Text of the given length in a random kind.
    fn text(&mut self, chars: usize) -> String {
        let kind = self.kind();
        generate_text(kind, chars, self.seed())
    }

    /// Whole milliseconds.
    fn millis(&mut self, low: u64, high: u64) -> Duration {
        Duration::from_millis(self.range(low, high))
    }
}

/// Largest generated text, in characters: big enough to cross every offload and prune threshold
/// the generator picks, small enough that exact counting stays cheap.
const GENERATED_CHARS_MAX: u64 = 25_000;

const TOOL_NAMES: [&str; 5] = ["execute", "search", "fetch_page", "run_query", "list_logs"];

fn tools(draw: &mut Draw) -> Vec<ToolSpec> {
    let count = draw.range(0, TOOL_NAMES.len() as u64) as usize;
    TOOL_NAMES[..count]
        .iter()
        .map(|name| {
            let output = match draw.below(100) {
                0..40 => {
                    let chars = draw.size().min(400);
                    ToolOutputSpec::Fixed(draw.text(chars))
                }
                40..55 => {
                    let count = draw.range(2, 3) as usize;
                    ToolOutputSpec::Sequence(
                        (0..count)
                            .map(|_| {
                                let chars = draw.size().min(2_000);
                                draw.text(chars)
                            })
                            .collect(),
                    )
                }
                _ => ToolOutputSpec::Generated {
                    chars: draw.size(),
                    kind: draw.kind(),
                },
            };
            let latency = if draw.percent(70) {
                Duration::ZERO
            } else {
                draw.millis(1, 8_000)
            };
            let writes = draw.percent(5).then(|| {
                let path = *draw.pick(&["notes/tool.md", "MEMORY.md", "large_tool_results/x"]);
                (path.to_string(), draw.text(60))
            });
            ToolSpec {
                sets_plan_mode: None,
                name: (*name).to_string(),
                description: None,
                parameters: None,
                output,
                latency,
                fail: draw.percent(8).then(|| "connection refused".to_string()),
                writes,
            }
        })
        .collect()
}

fn builtin_tools(draw: &mut Draw, tools: &[ToolSpec]) -> Vec<String> {
    assert!(
        tools
            .iter()
            .all(|t| !ctxbed_harness::tools::builtin::BUILTIN_TOOL_NAMES.contains(&t.name.as_str())),
        "scripted tools never take a built-in name"
    );
    if !draw.percent(20) {
        return Vec::new();
    }
    ctxbed_harness::tools::builtin::BUILTIN_TOOL_NAMES
        .iter()
        .filter(|_| draw.percent(50))
        .map(|name| (*name).to_string())
        .collect()
}

/// In a tenth of the seeds the application rewrites `AGENTS.md` or a knowledge file before a
/// later step, so workspace material changes between calls (generator version 4).
fn application_writes(draw: &mut Draw, steps: &mut [StepSpec]) {
    if steps.len() < 2 || !draw.percent(10) {
        return;
    }
    let index = draw.later_step(steps.len());
    let path = *draw.pick(&["AGENTS.md", "knowledge/export.md", "knowledge/columns.md"]);
    let chars = draw.size().min(4_000);
    let text = draw.text(chars);
    steps[index].workspace_writes.insert(path.to_string(), text);
}

fn fail_writes_under(draw: &mut Draw) -> Vec<String> {
    if !draw.percent(12) {
        return Vec::new();
    }
    let prefix = *draw.pick(&["large_tool_results/", "offload/", "memory/", "", "notes/"]);
    vec![prefix.to_string()]
}

fn steps(draw: &mut Draw) -> Vec<StepSpec> {
    let count = draw.range(1, 4) as usize;
    let two_sessions = draw.percent(25);
    (0..count)
        .map(|index| {
            let second = two_sessions && draw.percent(50);
            let chars = draw.range(1, 200) as usize;
            let mut input = draw.text(chars);
            if draw.percent(15) {
                input.push_str("\nFact: the export keeps its column order.");
            }
            let mut workspace_writes = std::collections::BTreeMap::new();
            if index > 0 && draw.percent(10) {
                let chars = draw.range(1, 500) as usize;
                workspace_writes.insert("MEMORY.md".to_string(), draw.text(chars));
            }
            let user =
                (!draw.percent(10)).then(|| if second { "bob" } else { "alice" }.to_string());
            let session = Some(if second { "s2" } else { "s1" }.to_string());
            StepSpec {
                workspace_writes,
                ..StepSpec::new(user, session, input)
            }
        })
        .collect()
}
