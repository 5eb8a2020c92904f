//! Wire scenarios (`scenarios/wire/*.toml`): what any harness is asked to do, and what it must
//! achieve, in a format an adapter never reads (`conform` turns it into protocol lines).
//!
//! ```toml
//! description = "A long build investigation, then the provider overflows once"
//! model = "wire-openai-overflow"    # mock-models/wire-openai-overflow.toml
//! system = "You are a build engineer."
//!
//! [[tools]]
//! name = "read_log"
//! description = "Read a build log."
//! parameters = { type = "object", properties = { path = { type = "string" } } }
//! results = [{ chars = 6000, content = "log" }]
//!
//! [[steps]]
//! input = "Why did build {n} fail?"   # {n}: the step's number
//! repeat = 6
//!
//! [[expect]]
//! step = 6
//! reply_contains = "linker"
//! ```

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::scenario::format::diagnostic::{Diagnostic, Diagnostics, from_toml};
use crate::scenario::format::shape::Compiled;
use crate::scenario::format::source::read_source;
use ctxbed_sim::host::Api;
use ctxbed_sim::text::{TextKind, generate_text};

mod fields;

/// Requests one step of a scenario may send before the run is stopped (rule `loop`), unless the
/// scenario says otherwise (`request_limit`).
pub const REQUEST_LIMIT_DEFAULT: u64 = 60;
/// Real seconds one step may take before the adapter is stopped, unless the scenario says.
pub const STEP_TIMEOUT_SECONDS_DEFAULT: u64 = 120;
/// Steps one scenario may expand to.
pub const STEPS_MAX: usize = 256;
/// Anthropic's smallest `budget_tokens` for extended thinking.
pub const THINKING_BUDGET_MIN: u64 = 1_024;
/// The largest window a scenario may advertise.
pub const ADVERTISED_WINDOW_MAX: u64 = 10_000_000;
/// Characters of one generated tool result.
pub const RESULT_CHARS_MAX: usize = 2_000_000;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawWire {
    description: String,
    #[schemars(with = "String")]
    model: Spanned<String>,
    #[serde(default)]
    seed: u64,
    #[serde(default)]
    system: String,
    /// The one API the harness must speak; without it, any API of the mock's provider.
    #[schemars(with = "Option<ApiName>")]
    api: Option<Spanned<String>>,
    /// The window the harness is told of (`CTXBED_WINDOW`, `GET /v1/models`), when it is not the
    /// one the mock enforces: a server that advertises more than it accepts.
    #[schemars(with = "Option<u64>", range(min = 1))]
    advertised_window: Option<Spanned<u64>>,
    /// Anthropic's extended thinking, on with this `budget_tokens` (`CTXBED_THINKING_BUDGET`;
    /// at least 1,024 and below `max_output_tokens`): every request must turn it on.
    #[schemars(with = "Option<u64>", range(min = 1024))]
    thinking_budget: Option<Spanned<u64>>,
    /// Report each request's prompt-cache reads and writes in the trace (no rule judges them).
    #[serde(default)]
    report_cache: bool,
    /// Each step builds on what the tools returned in the one before ("read the next log"):
    /// `retention` then also asks for the tool calls of the session's last step, with their
    /// results (or a summary the harness obtained).
    #[serde(default)]
    keeps_tool_exchanges: bool,
    #[serde(default = "default_max_output")]
    max_output_tokens: u64,
    #[serde(default)]
    stream: bool,
    #[serde(default = "yes")]
    usage: bool,
    #[schemars(with = "Option<u64>", range(min = 1))]
    request_limit: Option<Spanned<u64>>,
    #[schemars(with = "Option<u64>", range(min = 1))]
    step_timeout_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    faults: RawFaults,
    #[serde(default)]
    tools: Vec<RawTool>,
    steps: Vec<RawStep>,
    #[serde(default)]
    expect: Vec<RawExpect>,
    /// The mutants of the reference harness (`ctxbed conform --mutants`) this scenario must
    /// fail: the defects it is about.
    #[serde(default)]
    #[schemars(schema_with = "defects_schema")]
    defects: Vec<Spanned<String>>,
    /// The mutants whose behaviour the description promises is acceptable ("retries or reports
    /// an error": `no_retry`): the kill matrix checks that they pass.
    #[serde(default)]
    #[schemars(schema_with = "defects_schema")]
    allows: Vec<Spanned<String>>,
}

/// `defects`: a list of mutants' names, each once.
fn defects_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = super::plant::MUTANTS
        .iter()
        .map(|(name, _)| *name)
        .collect();
    schemars::json_schema!({
        "type": "array",
        "items": { "type": "string", "enum": names },
        "uniqueItems": true,
    })
}

/// The names `api` takes ([`Api::as_str`]), for the schema.
#[derive(schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum ApiName {
    Openai,
    Responses,
    Anthropic,
}

fn default_max_output() -> u64 {
    512
}

fn yes() -> bool {
    true
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawFaults {
    #[serde(default)]
    reset: Vec<u64>,
    #[serde(default)]
    cut_stream: Vec<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawTool {
    #[schemars(with = "String")]
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    parameters: Option<Value>,
    #[schemars(with = "Vec<RawResult>")]
    results: Spanned<Vec<RawResult>>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawResult {
    text: Option<String>,
    #[schemars(with = "Option<usize>")]
    chars: Option<Spanned<usize>>,
    #[schemars(with = "Option<String>")]
    content: Option<Spanned<String>>,
    #[serde(default)]
    error: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawStep {
    input: String,
    #[serde(default = "default_session")]
    session: String,
    #[serde(default = "default_user")]
    user: String,
    #[schemars(with = "Option<usize>", range(min = 1, max = 200))]
    repeat: Option<Spanned<usize>>,
    /// Images the user attaches to the step's message, after its text: PNG screenshots of
    /// these sizes, drawn from the step's number (each step's differ).
    #[serde(default)]
    images: Vec<WireImage>,
    /// Stop the harness's process and start a new one before this entry's first step, as a
    /// user's process between two runs of a session (the adapter keeps its sessions under
    /// `CTXBED_STATE_DIR`).
    #[serde(default)]
    restart: bool,
    /// Stop the harness at the first tool call of each step of this entry, before the tool
    /// runs, as a human who does not approve it: the step ends `interrupted` (an adapter
    /// declares `interrupts` to run such a scenario; others are not applicable).
    #[serde(default)]
    interrupt: bool,
    /// The harness's process dies while the step's first tool runs (the tool ends it, as a
    /// runtime killed mid-tool); the step ends `crashed`, and the next step must restart the
    /// harness (an adapter declares `crashes` to run such a scenario).
    #[serde(default)]
    crash: bool,
}

/// An image a step attaches: a PNG of this many pixels (at most 8,000 on a side, as
/// Anthropic takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WireImage {
    /// Pixels across.
    #[schemars(range(min = 1, max = 8000))]
    pub width: u32,
    /// Pixels down.
    #[schemars(range(min = 1, max = 8000))]
    pub height: u32,
}

fn default_session() -> String {
    "s1".to_string()
}

fn default_user() -> String {
    "user".to_string()
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[schemars(with = "Option<usize>", range(min = 1))]
    step: Option<Spanned<usize>>,
    reply: Option<String>,
    reply_contains: Option<String>,
    #[schemars(with = "Option<String>")]
    error: Option<Spanned<String>>,
    requests: Option<u64>,
    requests_at_least: Option<u64>,
    requests_at_most: Option<u64>,
    request_contains: Option<String>,
    request_lacks: Option<String>,
}

/// One scripted tool: its schema and what its calls return, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct WireTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    /// (text, is_error) of the 1st, 2nd, … call; the last repeats.
    pub results: Vec<(String, bool)>,
}

/// One agent call.
#[derive(Debug, Clone, PartialEq)]
pub struct WireStep {
    pub user: String,
    pub session: String,
    pub input: String,
    /// Images attached after the input's text.
    pub images: Vec<WireImage>,
    /// A new adapter process serves this step and the ones after it.
    pub restart: bool,
    /// The harness stops at the step's first tool call, before running it (`interrupted`).
    pub interrupt: bool,
    /// The harness's process dies while the step's first tool runs (`crashed`).
    pub crash: bool,
}

/// What a step (or every step) must show.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WireExpect {
    /// 1-based; `None`: every step.
    pub step: Option<usize>,
    pub reply: Option<String>,
    pub reply_contains: Option<String>,
    /// The error kind the step must end in.
    pub error: Option<String>,
    pub requests: Option<u64>,
    pub requests_at_least: Option<u64>,
    pub requests_at_most: Option<u64>,
    pub request_contains: Option<String>,
    /// No request of the step contains this text (e.g. another session's input).
    pub request_lacks: Option<String>,
    /// Where it is written, for failure messages (`file:line`).
    pub at: String,
}

/// A checked wire scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct WireScenario {
    /// The path below `scenarios/` without `.toml`, e.g. `wire/overflow-openai`.
    pub name: String,
    pub description: String,
    /// The mock model's name (its file stem under `mock-models/`).
    pub model: String,
    pub system: String,
    /// The one API the harness must speak; `None`: any API of the provider the mock imitates.
    pub api: Option<Api>,
    /// The window the harness is told of, when not the one the mock enforces.
    pub advertised_window: Option<u64>,
    /// Extended thinking's `budget_tokens`, when the scenario turns thinking on.
    pub thinking_budget: Option<u64>,
    /// The trace reports each request's prompt-cache use.
    pub report_cache: bool,
    /// Each step builds on the tool results of the one before: `retention` asks for the last
    /// step's tool exchanges too.
    pub keeps_tool_exchanges: bool,
    pub max_output_tokens: u64,
    pub stream: bool,
    pub usage: bool,
    pub request_limit: u64,
    pub step_timeout_seconds: u64,
    pub reset: Vec<u64>,
    pub cut_stream: Vec<u64>,
    pub tools: Vec<WireTool>,
    pub steps: Vec<WireStep>,
    pub expect: Vec<WireExpect>,
    /// The mutants of the reference harness it must fail (names of `plant::MUTANTS`).
    pub defects: Vec<String>,
    /// The mutants its description promises pass (names of `plant::MUTANTS`).
    pub allows: Vec<String>,
}

impl WireScenario {
    /// The steps (numbered from 1) before which a new adapter process takes over.
    pub fn restarts(&self) -> Vec<usize> {
        (1..=self.steps.len())
            .filter(|&number| self.steps[number - 1].restart)
            .collect()
    }
}

/// The error kinds an adapter may report (see docs/peer-protocol.md).
pub const ERROR_KINDS: [&str; 10] = [
    "context_overflow",
    "rate_limited",
    "timeout",
    "provider_error",
    "malformed_reply",
    "tool_error",
    "budget_refused",
    "other",
    super::interrupt::INTERRUPTED,
    super::interrupt::CRASHED,
];

/// The JSON Schema of the wire-scenario format (`ctxbed schema wire`), derived from the structs
/// the loader reads.
pub fn schema() -> Value {
    crate::scenario::format::shape::titled(
        serde_json::to_value(schemars::schema_for!(RawWire)).unwrap_or_default(),
        "ctxbed wire scenario",
        "A ctxbed wire scenario (scenarios/wire/*.toml), run against any harness by `ctxbed conform`. See docs/peer-protocol.md.",
    )
}

fn compiled() -> Option<&'static Compiled> {
    static WIRE: std::sync::OnceLock<Option<Compiled>> = std::sync::OnceLock::new();
    WIRE.get_or_init(|| Compiled::new(schema())).as_ref()
}

/// Reads and checks a wire scenario; `name` is its suite name.
///
/// # Errors
/// Every problem found, each with file, line, column and a hint.
pub fn load(path: &Path, name: &str) -> Result<WireScenario, Diagnostics> {
    let label = path.display().to_string();
    let source = read_source(path, &label).map_err(|d| Diagnostics(vec![*d]))?;
    parse(&label, &source, name)
}

/// Parses and checks wire-scenario text (see [`load`]).
///
/// # Errors
/// Every problem found.
pub fn parse(label: &str, source: &str, name: &str) -> Result<WireScenario, Diagnostics> {
    let shape = compiled().map_or_else(Vec::new, |c| c.problems(label, source));
    if !shape.is_empty() {
        return Err(Diagnostics(shape));
    }
    let raw: RawWire =
        toml::from_str(source).map_err(|e| Diagnostics(vec![from_toml(label, source, &e)]))?;
    let mut checker = Checker {
        label,
        source,
        problems: Vec::new(),
    };
    let tools = raw
        .tools
        .iter()
        .enumerate()
        .map(|(index, tool)| checker.tool(&raw, index, tool))
        .collect();
    let steps = checker.steps(&raw.steps);
    let expect = raw
        .expect
        .iter()
        .map(|entry| checker.expectation(entry, steps.len()))
        .collect();
    let (request_limit, step_timeout_seconds) = checker.limits(&raw);
    let api = checker.api(raw.api.as_ref());
    let (defects, allows) = checker.mutants(&raw.defects, &raw.allows);
    let advertised_window = raw
        .advertised_window
        .as_ref()
        .map(|window| checker.positive_up_to(window, "advertised_window", ADVERTISED_WINDOW_MAX));
    let thinking_budget = raw
        .thinking_budget
        .as_ref()
        .map(|budget| checker.thinking_budget(budget, raw.max_output_tokens));
    if !checker.problems.is_empty() {
        crate::scenario::format::diagnostic::sort(&mut checker.problems);
        return Err(Diagnostics(checker.problems));
    }
    Ok(WireScenario {
        name: name.to_string(),
        description: raw.description,
        model: raw.model.into_inner(),
        system: raw.system,
        api,
        advertised_window,
        thinking_budget,
        report_cache: raw.report_cache,
        keeps_tool_exchanges: raw.keeps_tool_exchanges,
        max_output_tokens: raw.max_output_tokens,
        stream: raw.stream,
        usage: raw.usage,
        request_limit,
        step_timeout_seconds,
        reset: raw.faults.reset,
        cut_stream: raw.faults.cut_stream,
        tools,
        steps,
        expect,
        defects,
        allows,
    })
}

/// Checks a wire scenario's parts, collecting every problem with its place.
struct Checker<'a> {
    label: &'a str,
    source: &'a str,
    problems: Vec<Diagnostic>,
}

impl Checker<'_> {
    /// The request limit and the step timeout, each positive, or their defaults.
    fn limits(&mut self, raw: &RawWire) -> (u64, u64) {
        let requests = self.positive(
            raw.request_limit.as_ref(),
            "request_limit",
            REQUEST_LIMIT_DEFAULT,
        );
        let timeout = self.positive(
            raw.step_timeout_seconds.as_ref(),
            "step_timeout_seconds",
            STEP_TIMEOUT_SECONDS_DEFAULT,
        );
        (requests, timeout)
    }

    fn at(&self, span: std::ops::Range<usize>, message: String) -> Diagnostic {
        Diagnostic::at(self.label, self.source, span, message)
    }

    fn line_of(&self, span: std::ops::Range<usize>) -> usize {
        self.source[..span.start].matches('\n').count() + 1
    }

    /// The `index`-th tool, its name checked and its results made.
    fn tool(&mut self, raw: &RawWire, index: usize, tool: &RawTool) -> WireTool {
        let tool_name = tool.name.get_ref();
        let valid = !tool_name.is_empty()
            && tool_name.len() <= 64
            && tool_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            let problem = self
                .at(
                    tool.name.span(),
                    format!("`{tool_name}` is not a valid tool name"),
                )
                .field("tools.name")
                .help("use 1-64 characters from [A-Za-z0-9_-]");
            self.problems.push(problem);
        }
        if raw.tools[..index]
            .iter()
            .any(|t| t.name.get_ref() == tool_name)
        {
            let problem = self
                .at(
                    tool.name.span(),
                    format!("a tool named `{tool_name}` is declared twice"),
                )
                .field("tools.name")
                .help("give each tool its own name");
            self.problems.push(problem);
        }
        if tool.results.get_ref().is_empty() {
            let problem = self
                .at(
                    tool.results.span(),
                    "a tool needs at least one result".into(),
                )
                .field("tools.results")
                .help("add `results = [{ text = \"…\" }]`");
            self.problems.push(problem);
        }
        let results = tool
            .results
            .get_ref()
            .iter()
            .enumerate()
            .filter_map(|(number, result)| {
                let seed = raw.seed ^ ((index as u64) << 32) ^ number as u64;
                self.result(tool, result, seed)
            })
            .collect();
        WireTool {
            name: tool_name.clone(),
            description: tool.description.clone(),
            parameters: tool
                .parameters
                .clone()
                .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}})),
            results,
        }
    }

    /// One scripted result: its text as written, or generated (`chars` of a `content` kind,
    /// from `seed`); `None` after a problem.
    fn result(&mut self, tool: &RawTool, result: &RawResult, seed: u64) -> Option<(String, bool)> {
        match (&result.text, &result.chars) {
            (Some(text), None) => Some((text.clone(), result.error)),
            (None, Some(chars)) => {
                let count = *chars.get_ref();
                if count == 0 || count > RESULT_CHARS_MAX {
                    let problem = self
                        .at(chars.span(), format!("{count} characters is out of range"))
                        .field("tools.results.chars")
                        .help(format!("use 1 to {RESULT_CHARS_MAX}"));
                    self.problems.push(problem);
                    return None;
                }
                let kind = self.content_kind(result.content.as_ref())?;
                Some((generate_text(kind, count, seed), result.error))
            }
            _ => {
                let problem = self
                    .at(
                        tool.results.span(),
                        "each result needs exactly one of `text` and `chars`".into(),
                    )
                    .field("tools.results")
                    .help("write `{ text = \"…\" }` or `{ chars = 4000, content = \"log\" }`");
                self.problems.push(problem);
                None
            }
        }
    }

    /// A generated result's content kind (prose when unnamed); `None` for an unknown name.
    fn content_kind(&mut self, content: Option<&Spanned<String>>) -> Option<TextKind> {
        let Some(content) = content else {
            return Some(TextKind::Prose);
        };
        let found = TextKind::ALL
            .iter()
            .find(|k| k.as_str() == content.get_ref())
            .copied();
        if found.is_none() {
            let names: Vec<&str> = TextKind::ALL.iter().map(|k| k.as_str()).collect();
            let problem = self
                .at(
                    content.span(),
                    format!("`{}` is not a content kind", content.get_ref()),
                )
                .field("tools.results.content")
                .help(format!("use one of: {}", names.join(", ")));
            self.problems.push(problem);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_of_a_file_is_reported_with_its_place() {
        let text = r#"description = "bad"
model = "m"
request_limit = 0

[[tools]]
name = "read log"
results = [{ text = "a", chars = 3 }]

[[steps]]
input = "x"

[[expect]]
step = 4
error = "overflowed"
"#;
        let problems = parse("bad.toml", text, "wire/bad")
            .expect_err("four problems")
            .0;
        let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 5, "{shown:#?}");
        let all = shown.join("\n");
        for needle in [
            "bad.toml:3:17",
            "request_limit",
            "`read log` is not a valid tool name",
            "exactly one of `text` and `chars`",
            "step 4 does not exist",
            "`overflowed` is not an error kind",
            "use one of: context_overflow",
        ] {
            assert!(all.contains(needle), "missing {needle:?} in:\n{all}");
        }
    }

    #[test]
    fn an_unknown_field_names_the_closest_one() {
        let text =
            "description = \"d\"\nmodel = \"m\"\nstep_timeout = 3\n[[steps]]\ninput = \"x\"\n";
        let shown = parse("u.toml", text, "wire/u")
            .expect_err("unknown field")
            .to_string();
        assert!(shown.contains("unknown field `step_timeout`"), "{shown}");
        assert!(shown.contains("step_timeout_seconds"), "{shown}");
    }

    #[test]
    fn repeats_expand_and_number_the_steps() {
        let text =
            "description = \"d\"\nmodel = \"m\"\n[[steps]]\ninput = \"Build {n}?\"\nrepeat = 3\n";
        let scenario = parse("r.toml", text, "wire/r").expect("valid");
        let inputs: Vec<&str> = scenario.steps.iter().map(|s| s.input.as_str()).collect();
        assert_eq!(inputs, ["Build 1?", "Build 2?", "Build 3?"]);
        assert_eq!(scenario.request_limit, REQUEST_LIMIT_DEFAULT);
    }

    #[test]
    fn a_restart_marks_the_first_step_of_its_entry_and_never_the_first_step() {
        let text = "description = \"d\"\nmodel = \"m\"\n[[steps]]\ninput = \"a\"\n[[steps]]\ninput = \"b {n}\"\nrepeat = 2\nrestart = true\n";
        let scenario = parse("r.toml", text, "wire/r").expect("valid");
        let restarts: Vec<bool> = scenario.steps.iter().map(|s| s.restart).collect();
        assert_eq!(restarts, [false, true, false]);
        let first =
            "description = \"d\"\nmodel = \"m\"\n[[steps]]\ninput = \"a\"\nrestart = true\n";
        let problems = parse("r.toml", first, "wire/r").expect_err("a restart before anything ran");
        assert!(problems.to_string().contains("steps.restart"), "{problems}");
    }
}
