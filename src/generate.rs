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

use std::collections::BTreeSet;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_core::Rng;

use crate::limits;
use crate::scenario::format::file::{
    AgentSpec, EstimatorChoice, InstructionSpec, Scenario, SourceSpec, StepSpec, ToolOutputSpec,
    ToolSpec,
};
use ctxbed_harness::compaction::config::{
    CompactionConfig, DEFAULT_SUMMARY_PROMPT, MESSAGES_PLACEHOLDER, PruneConfig, TruncateArgsConfig,
};
use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::context::budget::BudgetSettings;
use ctxbed_harness::context::offload::OffloadConfig;
use ctxbed_sim::rng::{SeedStream, SeedTree, Stream};
use ctxbed_sim::scripted::{BlockSpec, SourceFailure};
use ctxbed_sim::text::{TextKind, generate_text};

mod faults;
mod history;
mod model;
mod network;
mod plan;

use history::{history, second_session_history};
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
    let tools = tools(&mut Draw::new(&draws, "/tools"));
    let builtin_tools = builtin_tools(&mut Draw::new(&draws, "/builtin"), &tools);
    let steps = steps(&mut Draw::new(&draws, "/steps"));
    let mut tool_names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    tool_names.extend(builtin_tools.iter().cloned());
    let agent = agent(
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
    let mut agent = agent;
    agent.omission_order = omission_order(
        &mut Draw::new(&draws, "/omission"),
        &sources,
        &workspace_files,
    );
    model::task_list(&mut Draw::new(&draws, "/task"), &mut agent, &mut mock);
    let mut steps = steps;
    faults::sessions(
        &mut Draw::new(&draws, "/sessions"),
        &mut agent,
        &mut steps,
        &mut fail_writes_under,
    );
    let window = faults::preparation_window(&sources);
    faults::concurrent_append(&mut Draw::new(&draws, "/append"), &mut steps, window);
    let mut task = faults::task_actions(
        &mut Draw::new(&draws, "/task-actions"),
        &mut agent,
        &mut steps,
        window,
    );
    faults::more_restarts(&mut Draw::new(&draws, "/restarts"), &agent, &mut steps);
    faults::corrupt_restart(
        &mut Draw::new(&draws, "/corrupt-restart"),
        &agent,
        &mut steps,
    );
    let mut tools = tools;
    plan::plan_mode(
        &mut Draw::new(&draws, "/plan"),
        &agent,
        &mut task,
        &mut steps,
        &mut tools,
    );
    model::session_tools(
        &mut Draw::new(&draws, "/session-tools"),
        &mut agent,
        &mut mock,
    );
    approximate_estimator(&mut Draw::new(&draws, "/estimator"), &mut agent);
    model::requirement_proposals(&mut Draw::new(&draws, "/proposals"), &mut agent, &mut mock);
    application_writes(&mut Draw::new(&draws, "/app-writes"), &mut steps);
    for step in &mut steps {
        // The runner writes these before the step; a failing prefix would stop the run.
        step.workspace_writes.retain(|path, _| {
            !fail_writes_under
                .iter()
                .any(|p| path.starts_with(p.as_str()))
        });
    }
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

fn agent(
    draw: &mut Draw,
    draws: &SeedStream,
    seed: u64,
    tools: &[ToolSpec],
    builtin_tools: Vec<String>,
) -> AgentSpec {
    let react = draw.percent(5);
    let mut deny_tools = BTreeSet::new();
    if !tools.is_empty() && draw.percent(10) {
        deny_tools.insert(draw.pick(tools).name.clone());
    }
    let compaction = compaction(draw);
    let summary_model = (compaction.is_some() && draw.percent(20))
        .then(|| model::summary_script(&mut Draw::new(draws, "/summary-model"), seed));
    AgentSpec {
        task_list: false,
        task_context: ctxbed_harness::task::TaskContextOptions::default(),
        name: "agent".to_string(),
        agent_id: "agent".to_string(),
        model: model_name(seed),
        sys_prompt: draw.percent(70).then(|| {
            let chars = draw.range(10, 200) as usize;
            draw.text(chars)
        }),
        max_steps: if draw.percent(10) {
            1
        } else {
            draw.range(2, 10) as u32
        },
        model_timeout: draw.percent(20).then(|| draw.millis(1_000, 120_000)),
        // Exact estimators count every message several times per preparation: keep them to a
        // fifth of the runs so the sweep stays fast.
        estimator: match draw.below(10) {
            0 => EstimatorChoice::ExactO200k,
            1 => EstimatorChoice::ExactCl100k,
            _ => EstimatorChoice::Ratio,
        },
        deny_tools,
        budget: budget(draw),
        pairing: match draw.below(100) {
            0..70 => PairingCheck::Strict,
            70..90 => PairingCheck::Repair,
            _ => PairingCheck::Unchecked,
        },
        builtin_tools,
        workspace_max_context_tokens: draw.percent(20).then(|| draw.range(0, 6_000)),
        offload: offload(draw),
        omission_order: None,
        compaction,
        summary_model,
        session_log: draw.percent(85),
        session_storage: crate::scenario::format::file::SessionStorage::Memory,
        session_tools: false,
        react,
    }
}

/// A tenth of the seeds count with `approx` (cached per message), drawn from its own stream
/// so the rest of the agent is as before.
fn approximate_estimator(draw: &mut Draw, agent: &mut AgentSpec) {
    if draw.percent(10) {
        agent.estimator = EstimatorChoice::Approximate;
    }
}

fn budget(draw: &mut Draw) -> BudgetSettings {
    let mut optional =
        |chance: u64, low: u64, high: u64| draw.percent(chance).then(|| draw.range(low, high));
    BudgetSettings {
        max_input_tokens: optional(20, 200, 30_000),
        output_reserve: optional(20, 0, 3_000),
        safety_margin: optional(20, 0, 1_000),
        requested_max_output: optional(10, 0, 6_000),
    }
}

fn offload(draw: &mut Draw) -> Option<OffloadConfig> {
    if draw.percent(25) {
        return None;
    }
    let mut config = OffloadConfig {
        max_result_chars: *draw.pick(&[1, 200, 1_000, 4_000, 20_000, 80_000]) as usize,
        preview_chars: *draw.pick(&[0, 10, 100, 2_000]) as usize,
        eviction_path: (*draw.pick(&["large_tool_results", "large_tool_results", "offload/x"]))
            .to_string(),
        ..OffloadConfig::default()
    };
    if draw.percent(20) {
        config.excluded_tools = ["execute", "read_file"]
            .into_iter()
            .filter(|_| draw.percent(50))
            .map(str::to_string)
            .collect();
    }
    Some(config)
}

fn compaction(draw: &mut Draw) -> Option<CompactionConfig> {
    if draw.percent(30) {
        return None;
    }
    let prune = (!draw.percent(20)).then(|| PruneConfig {
        protect_tokens: draw.range(0, 2_000),
        minimum_prunable_tokens: draw.range(0, 1_000),
        preview_chars: draw.range(2, 2_000) as usize,
        ..PruneConfig::default()
    });
    let truncate_args = draw.percent(30).then(|| TruncateArgsConfig {
        trigger_messages: draw.range(0, 30) as usize,
        trigger_tokens: draw.range(0, 20_000),
        protect_latest: draw.range(0, 10) as usize,
        max_arg_length: draw.range(1, 1_000) as usize,
        ..TruncateArgsConfig::default()
    });
    let summary_prompt = if draw.percent(20) {
        format!("Summarise briefly.\n{MESSAGES_PLACEHOLDER}")
    } else {
        DEFAULT_SUMMARY_PROMPT.to_string()
    };
    Some(CompactionConfig {
        trigger_messages: draw.range(2, 60) as usize,
        trigger_tokens: if draw.percent(60) {
            0
        } else {
            draw.range(100, 20_000)
        },
        keep_tokens: match draw.below(3) {
            0 => None,
            1 => Some(0),
            _ => Some(draw.range(1, 4_000)),
        },
        keep_messages: draw.range(1, 20) as usize,
        truncate_args,
        prune,
        model: None,
        memory_model: None,
        memory_prompt: ctxbed_harness::compaction::memory::DEFAULT_MEMORY_PROMPT.to_string(),
        summary_prompt,
        flush_before_compact: draw.percent(60),
    })
}

fn instructions(draw: &mut Draw) -> Vec<InstructionSpec> {
    let names = ["change-policy", "style", "safety"];
    let count = draw.range(0, 2) as usize;
    names[..count]
        .iter()
        .map(|name| {
            let chars = draw.range(1, 300) as usize;
            InstructionSpec {
                name: (*name).to_string(),
                text: draw.text(chars),
            }
        })
        .collect()
}

fn sources(draw: &mut Draw) -> Vec<SourceSpec> {
    let names = ["change-record", "ticket", "docs"];
    let count = draw.range(0, 3) as usize;
    names[..count]
        .iter()
        .map(|name| {
            let omit_on_failure = draw.percent(50);
            let failure = draw.percent(20).then(|| match draw.below(100) {
                0..40 => SourceFailure::Error,
                40..65 => SourceFailure::NoList,
                65..97 => SourceFailure::Never,
                _ => SourceFailure::Panic,
            });
            // A source that fails every load under FAIL stops every step; mostly fail some.
            let fail_loads = if draw.percent(if omit_on_failure { 50 } else { 15 }) {
                Vec::new()
            } else {
                (1..=6).filter(|_| draw.percent(30)).collect()
            };
            let block_count = draw.range(0, 3);
            let blocks = (0..block_count)
                .map(|index| block(draw, index, omit_on_failure))
                .collect();
            SourceSpec {
                name: (*name).to_string(),
                timeout: draw.percent(40).then(|| draw.millis(1_000, 10_000)),
                omit_on_failure,
                latency: source_latency(draw),
                failure,
                fail_loads,
                blocks,
            }
        })
        .collect()
}

/// Latencies cluster around the default 5 s timeout, on both sides of it.
fn source_latency(draw: &mut Draw) -> Duration {
    match draw.below(100) {
        0..55 => Duration::ZERO,
        55..85 => draw.millis(1, 3_000),
        _ => draw.millis(4_000, 6_000),
    }
}

fn block(draw: &mut Draw, index: u64, omit_on_failure: bool) -> BlockSpec {
    let chars = if draw.percent(5) {
        draw.range(1_000, 6_000) as usize
    } else {
        draw.range(0, 200) as usize
    };
    let mut text = draw.text(chars);
    if draw.percent(30) {
        text.push_str(" (load {load})");
    }
    // A required block from an OMIT source is a structural error; keep it rare.
    let required = draw.percent(if omit_on_failure { 2 } else { 20 });
    // Rarely a structural problem no failure policy hides: a repeated id or a blank revision.
    let id = if index > 0 && draw.percent(2) {
        format!("b{}", index - 1)
    } else {
        format!("b{index}")
    };
    let revision = match draw.below(100) {
        0..30 => Some("v{load}".to_string()),
        30..31 => Some(" ".to_string()),
        _ => None,
    };
    BlockSpec {
        id,
        runtime: draw.percent(50),
        text,
        required,
        priority: draw.range(0, 15) as i32 - 5,
        revision,
    }
}

/// Now and then a custom omission order over the optional materials the scenario will have, in
/// a random order; rarely with an id the policy must refuse (unknown or required).
fn omission_order(
    draw: &mut Draw,
    sources: &[SourceSpec],
    files: &std::collections::BTreeMap<String, String>,
) -> Option<Vec<String>> {
    if !draw.percent(10) {
        return None;
    }
    let mut ids: Vec<String> = files
        .keys()
        .filter(|path| *path == "MEMORY.md" || path.starts_with("knowledge/"))
        .map(|path| format!("workspace:{path}"))
        .collect();
    for source in sources {
        for block in source.blocks.iter().filter(|b| !b.required) {
            ids.push(format!("source/{}/{}", source.name, block.id));
        }
    }
    let mut order = Vec::new();
    while !ids.is_empty() {
        let index = draw.below(ids.len() as u64) as usize;
        let id = ids.remove(index);
        if draw.percent(80) {
            order.push(id);
        }
    }
    if draw.percent(10) {
        order.push((*draw.pick(&["source/nowhere/x", "instruction/style"])).to_string());
    }
    Some(order)
}

fn workspace_files(draw: &mut Draw) -> std::collections::BTreeMap<String, String> {
    let mut files = std::collections::BTreeMap::new();
    if draw.percent(30) {
        let chars = draw.range(1, 500) as usize;
        files.insert("AGENTS.md".to_string(), draw.text(chars));
    }
    if draw.percent(30) {
        let facts: Vec<String> = (0..draw.range(1, 5))
            .map(|_| {
                let chars = draw.range(5, 120) as usize;
                format!("- Fact: {}", draw.text(chars).replace('\n', " "))
            })
            .collect();
        files.insert("MEMORY.md".to_string(), facts.join("\n"));
    }
    for name in ["knowledge/export.md", "knowledge/columns.md"] {
        if draw.percent(15) {
            let chars = draw.size().min(4_000);
            files.insert(name.to_string(), draw.text(chars));
        }
    }
    if draw.percent(10) {
        let chars = draw.size();
        files.insert("logs/big.log".to_string(), draw.text(chars));
    }
    files
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
