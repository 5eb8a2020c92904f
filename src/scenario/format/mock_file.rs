//! The mock-model file format (`mock-models/<name>.toml`) and its checks.
//!
//! ```toml
//! description = "An 8k OpenAI-like model that overflows once, then replies"
//! window = 8000            # omit for an unknown window
//! max_output = 1024
//! imitates = "openai"      # whose error wording: openai, anthropic, gemini, dashscope, vllm, llamacpp
//! tokenizer = "o200k"      # exact counting of each received request: o200k or cl100k
//! strict = true            # reject unpaired tool exchanges and input over the window
//! deepseek_thinking = false # DeepSeek's thinking mode: a tool-call turn needs its reasoning_content back
//! summaries = "auto"       # summary requests: "auto" (deterministic summariser) or "scripted"
//! memory_flushes = "auto"  # memory flush requests: "auto" (deterministic extractor) or "scripted"
//!
//! [[turns]]
//! when = { tokens_over = 3000 }
//! error = "overflow"
//!
//! [[turns]]
//! reply = "Fixed."
//! latency_ms = 1500
//! ```
//!
//! A turn is a reply (`reply`, `thinking`, `tool_calls`), `summarize = true`,
//! `extract_facts = true`, or an `error`
//! (`overflow`, `pairing`, `timeout`, `malformed`, `transient`, `rate_limit`, `raw`). `times`
//! repeats it; `when` skips it unless every condition holds.

mod actions;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::diagnostic::{Diagnostic, closest, from_toml};
use super::shape::{LazyShape, titled};
use ctxbed_harness::model::ModelInfo;
use ctxbed_harness::model::Purpose;
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::tokens::Vocabulary;
use ctxbed_sim::mock::{MockScript, MockTurn, SummaryMode, TurnAction, TurnCondition};

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMock {
    /// Documentation for the reader of the file.
    #[serde(default)]
    pub(super) description: Option<String>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(super) window: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(super) max_output: Option<Spanned<i64>>,
    #[schemars(with = "Option<String>")]
    pub(super) imitates: Option<Spanned<String>>,
    #[schemars(with = "Option<super::choice::ChoiceOf<Vocabulary>>")]
    pub(super) tokenizer: Option<Spanned<String>>,
    pub(super) strict: Option<bool>,
    /// DeepSeek's thinking mode on Chat Completions: a tool-call assistant message of the
    /// current turn sent back without `reasoning_content` is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) deepseek_thinking: bool,
    #[schemars(with = "Option<super::choice::ChoiceOf<SummaryMode>>")]
    pub(super) summaries: Option<Spanned<String>>,
    #[schemars(with = "Option<super::choice::ChoiceOf<SummaryMode>>")]
    pub(super) memory_flushes: Option<Spanned<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawTurn>")]
    pub(super) turns: Vec<Spanned<RawTurn>>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTurn {
    pub(super) when: Option<RawCondition>,
    pub(super) reply: Option<String>,
    pub(super) thinking: Option<String>,
    #[schemars(with = "Option<Vec<RawCall>>")]
    pub(super) tool_calls: Option<Vec<Spanned<RawCall>>>,
    pub(super) summarize: Option<bool>,
    pub(super) extract_facts: Option<bool>,
    #[schemars(with = "Option<String>")]
    pub(super) error: Option<Spanned<String>>,
    #[schemars(with = "Option<i64>", range(min = 100))]
    pub(super) status: Option<Spanned<i64>>,
    pub(super) body: Option<String>,
    pub(super) raw: Option<String>,
    #[schemars(with = "Option<i64>")]
    pub(super) latency_ms: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(super) times: Option<Spanned<i64>>,
    /// Usage figures to report instead of the exact counts (what a recorded model reported).
    pub(super) usage: Option<RawUsage>,
    /// The step (from 1) whose main-loop requests this turn answers in `ctxbed conform`; give
    /// every main-loop turn a step, or none (then each step's turns run up to its first plain
    /// text reply).
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(super) step: Option<Spanned<i64>>,
    /// The turn's `thinking` is withheld: Anthropic answers it as a `redacted_thinking` block
    /// (opaque data to hand back unchanged); the Responses API as a reasoning item without a
    /// summary.
    pub(super) redacted_thinking: Option<bool>,
    /// The `Retry-After` header, in seconds, of a `rate_limit` turn's 429 (default: the
    /// server's, 1).
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(super) retry_after_seconds: Option<Spanned<i64>>,
}

/// Usage figures a turn reports instead of the exact counts.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawUsage {
    #[schemars(with = "i64")]
    pub(super) input_tokens: Spanned<i64>,
    #[schemars(with = "i64")]
    pub(super) output_tokens: Spanned<i64>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCondition {
    #[schemars(with = "Option<i64>")]
    pub(super) tokens_over: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(super) tokens_at_most: Option<Spanned<i64>>,
    pub(super) contains: Option<String>,
    #[schemars(with = "Option<String>")]
    pub(super) purpose: Option<Spanned<String>>,
    /// `true`: the turn answers side requests only (summaries, memory extraction, any request
    /// that does not continue the conversation); `false`: main-loop requests only.
    pub(super) side: Option<bool>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCall {
    pub(super) id: Option<String>,
    pub(super) name: String,
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub(super) args: Option<toml::Table>,
    /// The arguments as raw text, sent as they are (OpenAI and Responses), so a scenario can
    /// hand a harness arguments that are not valid JSON; instead of `args`.
    pub(super) raw_args: Option<String>,
}

const ERROR_KINDS: &[&str] = &[
    "overflow",
    "pairing",
    "timeout",
    "malformed",
    "transient",
    "rate_limit",
    "raw",
];

/// The mock-model format's shape, compiled once.
static SHAPE: LazyShape = LazyShape::new(json_schema);

/// The JSON Schema of a mock-model file (`mock-models/*.toml`), derived from the raw serde
/// structs the loader reads.
pub fn json_schema() -> serde_json::Value {
    titled(
        serde_json::to_value(schemars::schema_for!(RawMock)).unwrap_or_default(),
        "ctxbed mock model",
        "A ctxbed mock-model file: window, wording, tokenizer and a script of turns. See docs/scenario-format.md.",
    )
}

/// Parses and checks one mock-model file. `name` is the model's name (its file stem).
///
/// # Errors
/// Every problem found, each with file, line, column, field and a hint.
pub fn parse_mock(name: &str, file: &str, source: &str) -> Result<MockScript, Vec<Diagnostic>> {
    let shape = SHAPE.problems(file, source);
    if !shape.is_empty() {
        return Err(shape);
    }
    let raw: RawMock =
        toml::from_str(source).map_err(|error| vec![from_toml(file, source, &error)])?;
    let mut checker = Checker {
        file,
        source,
        problems: Vec::new(),
    };
    let (window, max_output) = limits(&mut checker, &raw);
    let imitates = raw
        .imitates
        .as_ref()
        .map_or(Some(Provider::OpenAi), |value| {
            checker.choice(
                value,
                "imitates",
                Provider::ALL.map(Provider::as_str).as_slice(),
                Provider::parse,
            )
        });
    let vocabulary = raw
        .tokenizer
        .as_ref()
        .map_or(Some(Vocabulary::O200k), |value| {
            checker.choice_of::<Vocabulary>(value, "tokenizer")
        });
    let mut mode = |value: Option<&Spanned<String>>, field: &str| {
        value.map_or(Some(SummaryMode::Auto), |value| {
            checker.choice_of::<SummaryMode>(value, field)
        })
    };
    let summaries = mode(raw.summaries.as_ref(), "summaries");
    let memory_flushes = mode(raw.memory_flushes.as_ref(), "memory_flushes");
    let turns = mock_turns(&mut checker, &raw.turns);
    if !checker.problems.is_empty() {
        let mut problems = checker.problems;
        super::diagnostic::sort(&mut problems);
        return Err(problems);
    }
    let (Some(imitates), Some(vocabulary), Some(summaries), Some(memory_flushes)) =
        (imitates, vocabulary, summaries, memory_flushes)
    else {
        unreachable!("a failed choice records a problem");
    };
    Ok(MockScript {
        info: ModelInfo {
            name: name.to_string(),
            context_window: window,
            max_output_tokens: max_output,
        },
        imitates,
        vocabulary,
        strict: raw.strict.unwrap_or(true),
        deepseek_thinking: raw.deepseek_thinking,
        summaries,
        memory_flushes,
        turns,
        file: file.to_string(),
    })
}

/// The model's `window` and `max_output`, each checked when given.
fn limits(checker: &mut Checker<'_>, raw: &RawMock) -> (Option<u64>, Option<u64>) {
    let window = raw
        .window
        .as_ref()
        .and_then(|w| checker.count(w, "window", 1));
    let max_output = raw
        .max_output
        .as_ref()
        .and_then(|m| checker.count(m, "max_output", 1));
    (window, max_output)
}

/// The `[[turns]]`: at most the limit, each checked; when any turn has a `step`, every
/// main-loop (not `side`) turn must have one.
fn mock_turns(checker: &mut Checker<'_>, turns: &[Spanned<RawTurn>]) -> Vec<MockTurn> {
    if turns.len() > crate::limits::MOCK_TURNS_MAX {
        checker.problems.push(
            Diagnostic::file_level(
                checker.file,
                format!(
                    "{} turns; at most {} are allowed",
                    turns.len(),
                    crate::limits::MOCK_TURNS_MAX
                ),
            )
            .field("turns"),
        );
    }
    let checked: Vec<MockTurn> = turns
        .iter()
        .enumerate()
        .filter_map(|(index, turn)| checker.turn(index, turn))
        .collect();
    let stepped = |turn: &Spanned<RawTurn>| turn.get_ref().step.is_some();
    let side = |turn: &Spanned<RawTurn>| {
        turn.get_ref()
            .when
            .as_ref()
            .is_some_and(|when| when.side == Some(true))
    };
    if turns.iter().any(&stepped) {
        for (index, turn) in turns.iter().enumerate() {
            if !stepped(turn) && !side(turn) {
                checker.problems.push(
                    checker
                        .at(turn, format!("turns[{index}] has no `step`, but other turns have one"))
                        .field(format!("turns[{index}].step"))
                        .help("give every main-loop turn a `step = N`, or remove `step` from all of them"),
                );
            }
        }
    }
    checked
}

/// Collects problems while converting raw values.
pub(super) struct Checker<'a> {
    pub file: &'a str,
    pub source: &'a str,
    pub problems: Vec<Diagnostic>,
}

impl Checker<'_> {
    pub fn at<T>(&self, value: &Spanned<T>, message: impl Into<String>) -> Diagnostic {
        Diagnostic::at(self.file, self.source, value.span(), message)
    }

    /// A non-negative integer at least `min`.
    pub fn count(&mut self, value: &Spanned<i64>, field: &str, min: i64) -> Option<u64> {
        let number = *value.get_ref();
        if number < min {
            let problem = self
                .at(
                    value,
                    format!("`{field}` must be at least {min}, found {number}"),
                )
                .field(field)
                .help(format!("write a whole number ≥ {min}"));
            self.problems.push(problem);
            return None;
        }
        u64::try_from(number).ok()
    }

    /// A latency in milliseconds within the limit.
    pub fn latency(&mut self, value: Option<&Spanned<i64>>, field: &str) -> Duration {
        let Some(value) = value else {
            return Duration::ZERO;
        };
        let Some(millis) = self.count(value, field, 0) else {
            return Duration::ZERO;
        };
        if millis > crate::limits::LATENCY_MS_MAX {
            let problem = self
                .at(
                    value,
                    format!(
                        "`{field}` is {millis} ms; at most {} ms (ten hours) is allowed",
                        crate::limits::LATENCY_MS_MAX
                    ),
                )
                .field(field);
            self.problems.push(problem);
            return Duration::ZERO;
        }
        Duration::from_millis(millis)
    }

    /// One of a fixed set of names, with a suggestion for typos.
    pub fn choice<T>(
        &mut self,
        value: &Spanned<String>,
        field: &str,
        names: &[&str],
        parse: impl Fn(&str) -> Option<T>,
    ) -> Option<T> {
        let text = value.get_ref();
        if let Some(parsed) = parse(text) {
            return Some(parsed);
        }
        let help = match closest(text, names.iter().copied()) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!("expected one of: {}", names.join(", ")),
        };
        let problem = self
            .at(value, format!("unknown {field} `{text}`"))
            .field(field)
            .help(help);
        self.problems.push(problem);
        None
    }

    /// The choice `value` names, or `None` with a problem recorded (the names come from the
    /// choice itself, so the help text always lists what parses).
    pub fn choice_of<T: super::choice::Choice>(
        &mut self,
        value: &Spanned<String>,
        field: &str,
    ) -> Option<T> {
        self.choice(value, field, &T::names(), T::parse)
    }

    fn turn(&mut self, index: usize, spanned: &Spanned<RawTurn>) -> Option<MockTurn> {
        let turn = spanned.get_ref();
        let field = format!("turns[{index}]");
        let (line, _) = Diagnostic::at(self.file, self.source, spanned.span(), "")
            .position
            .unwrap_or((0, 0));
        let latency = self.latency(turn.latency_ms.as_ref(), &format!("{field}.latency_ms"));
        let times = match &turn.times {
            Some(value) => {
                let times = self.count(value, &format!("{field}.times"), 1)?;
                u32::try_from(times.min(crate::limits::MOCK_TURNS_MAX as u64)).unwrap_or(1)
            }
            None => 1,
        };
        let when = match &turn.when {
            Some(raw) => self.condition(raw, &field)?,
            None => TurnCondition::default(),
        };
        let usage = match &turn.usage {
            None => None,
            Some(raw) => {
                let input =
                    self.count(&raw.input_tokens, &format!("{field}.usage.input_tokens"), 0);
                let output = self.count(
                    &raw.output_tokens,
                    &format!("{field}.usage.output_tokens"),
                    0,
                );
                Some(ctxbed_harness::model::Usage {
                    input_tokens: input?,
                    output_tokens: output?,
                    ..ctxbed_harness::model::Usage::default()
                })
            }
        };
        let step = match &turn.step {
            Some(value) => {
                let step = self.count(value, &format!("{field}.step"), 1)?;
                Some(usize::try_from(step).unwrap_or(usize::MAX))
            }
            None => None,
        };
        let redacted_thinking = turn.redacted_thinking == Some(true);
        if redacted_thinking && turn.thinking.is_none() {
            let problem = self
                .at(spanned, "`redacted_thinking = true` withholds the turn's thinking, but the turn has none")
                .field(format!("{field}.redacted_thinking"))
                .help("give the thinking it stands for: `thinking = \"...\"`");
            self.problems.push(problem);
        }
        let retry_after = self.retry_after(turn, &field);
        let action = self.action(turn, spanned, &field)?;
        Some(MockTurn {
            when,
            action,
            latency,
            times,
            line,
            usage,
            step,
            redacted_thinking,
            retry_after,
        })
    }

    /// A rate-limit turn's `Retry-After`; on any other turn the field is a mistake.
    fn retry_after(&mut self, turn: &RawTurn, field: &str) -> Option<Duration> {
        let value = turn.retry_after_seconds.as_ref()?;
        let field = format!("{field}.retry_after_seconds");
        let rate_limit = turn
            .error
            .as_ref()
            .is_some_and(|e| e.get_ref() == "rate_limit");
        if !rate_limit {
            let problem = self
                .at(value, "`retry_after_seconds` belongs to a rate-limit turn")
                .field(field)
                .help("add `error = \"rate_limit\"`, or remove the field");
            self.problems.push(problem);
            return None;
        }
        let seconds = self.count(value, &field, 1)?;
        Some(Duration::from_secs(seconds))
    }

    fn condition(&mut self, raw: &RawCondition, field: &str) -> Option<TurnCondition> {
        let before = self.problems.len();
        let tokens_over = raw
            .tokens_over
            .as_ref()
            .and_then(|v| self.count(v, &format!("{field}.when.tokens_over"), 0));
        let tokens_at_most = raw
            .tokens_at_most
            .as_ref()
            .and_then(|v| self.count(v, &format!("{field}.when.tokens_at_most"), 0));
        let purpose = raw.purpose.as_ref().and_then(|v| {
            self.choice(
                v,
                &format!("{field}.when.purpose"),
                &["reasoning", "summary", "memory_flush"],
                |p| match p {
                    "reasoning" => Some(Purpose::Reasoning),
                    "summary" => Some(Purpose::Summary),
                    "memory_flush" => Some(Purpose::MemoryFlush),
                    _ => None,
                },
            )
        });
        (self.problems.len() == before).then(|| TurnCondition {
            tokens_over,
            tokens_at_most,
            contains: raw.contains.clone(),
            purpose,
            side: raw.side,
        })
    }

    fn action(
        &mut self,
        turn: &RawTurn,
        spanned: &Spanned<RawTurn>,
        field: &str,
    ) -> Option<TurnAction> {
        let replies = turn.reply.is_some() || turn.thinking.is_some() || turn.tool_calls.is_some();
        let summarize = turn.summarize == Some(true);
        let extract = turn.extract_facts == Some(true);
        let kinds = usize::from(replies)
            + usize::from(summarize)
            + usize::from(extract)
            + usize::from(turn.error.is_some());
        if kinds != 1 {
            let problem = self
                .at(
                    spanned,
                    "a turn must do exactly one thing: reply, summarize, extract_facts or error",
                )
                .field(field.to_string())
                .help(
                    "give `reply`/`tool_calls`, or `summarize = true`, or `extract_facts = true`, \
                     or `error = \"...\"`",
                );
            self.problems.push(problem);
            return None;
        }
        if let Some(error) = &turn.error {
            return self.error_action(turn, error, field).map(TurnAction::Error);
        }
        if summarize {
            return Some(TurnAction::Summarize);
        }
        if extract {
            return Some(TurnAction::ExtractFacts);
        }
        self.reply_action(turn, spanned, field)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_figures_are_read_checked_and_written_back() {
        let source =
            "[[turns]]\nreply = \"Done.\"\nusage = { input_tokens = 1234, output_tokens = 56 }\n";
        let script = parse_mock("m", "mock-models/m.toml", source).expect("valid");
        let usage = script.turns[0].usage.expect("usage");
        assert_eq!((usage.input_tokens, usage.output_tokens), (1_234, 56));
        let written = crate::scenario::format::write::mock_toml(&script).expect("written");
        assert!(written.contains("input_tokens = 1234"), "{written}");
        let again =
            parse_mock("m", "mock-models/m.toml", &written).expect("the written file loads");
        assert_eq!(again.turns[0].usage, script.turns[0].usage);

        let negative =
            "[[turns]]\nreply = \"x\"\nusage = { input_tokens = -1, output_tokens = 2 }\n";
        let problems = parse_mock("m", "m.toml", negative).expect_err("a negative count");
        let shown = problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(shown.contains("turns[0].usage.input_tokens"), "{shown}");
        assert!(shown.contains("m.toml:3:"), "{shown}");
    }

    #[test]
    fn parses_a_full_script() {
        let source = r#"
window = 8000
imitates = "anthropic"
[[turns]]
when = { tokens_over = 3000, purpose = "reasoning" }
error = "overflow"
[[turns]]
reply = "Looking."
tool_calls = [{ name = "execute", args = { command = "ls" } }]
latency_ms = 1500
times = 2
"#;
        let script = parse_mock("m", "m.toml", source).unwrap();
        assert_eq!(script.info.context_window, Some(8000));
        assert_eq!(script.imitates, Provider::Anthropic);
        assert_eq!(script.turns.len(), 2);
        assert_eq!(script.turns[0].when.tokens_over, Some(3000));
        assert_eq!(script.turns[1].times, 2);
        assert_eq!(script.turns[1].line, 7);
    }

    #[test]
    fn reports_every_problem_with_positions() {
        let source = "imitates = \"antropic\"\n[[turns]]\nerror = \"overflw\"\n[[turns]]\nreply = \"x\"\nerror = \"timeout\"\n";
        let problems = parse_mock("m", "m.toml", source).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert_eq!(problems[0].position, Some((1, 12)));
        assert_eq!(
            problems[0].help.as_deref(),
            Some("did you mean `anthropic`?")
        );
        assert_eq!(
            problems[1].help.as_deref(),
            Some("did you mean `overflow`?")
        );
        assert!(problems[2].message.contains("exactly one thing"));
    }

    #[test]
    fn unknown_field_suggests_the_right_one() {
        let problems = parse_mock("m", "m.toml", "windw = 3\n").unwrap_err();
        assert_eq!(problems[0].help.as_deref(), Some("did you mean `window`?"));
        assert_eq!(problems[0].position, Some((1, 1)));
    }

    #[test]
    fn turns_name_their_step_all_or_none_and_side_turns_need_none() {
        let source = r#"
[[turns]]
step = 2
reply = "Second."
[[turns]]
when = { side = true }
error = "timeout"
[[turns]]
step = 1
reply = "First."
"#;
        let script = parse_mock("m", "mock-models/m.toml", source).expect("valid steps");
        assert_eq!(script.turns[0].step, Some(2));
        assert_eq!(script.turns[1].when.side, Some(true));
        assert_eq!(
            ctxbed_sim::mock::step_groups(&script.turns),
            [vec![2], vec![0]]
        );
        let written = super::super::write::mock_toml(&script).expect("writes back");
        let again = parse_mock("m", "m.toml", &written).expect("the written file loads");
        let marks = |turns: &[MockTurn]| -> Vec<(Option<usize>, Option<bool>)> {
            turns.iter().map(|t| (t.step, t.when.side)).collect()
        };
        assert_eq!(marks(&again.turns), marks(&script.turns), "{written}");

        let mixed = "[[turns]]\nstep = 1\nreply = \"a\"\n[[turns]]\nreply = \"b\"\n";
        let problems = parse_mock("m", "m.toml", mixed).expect_err("a turn without a step");
        assert!(
            problems[0].message.contains("turns[1] has no `step`"),
            "{problems:?}"
        );
        assert_eq!(problems[0].position.map(|(line, _)| line), Some(4));
        let zero = parse_mock("m", "m.toml", "[[turns]]\nstep = 0\nreply = \"a\"\n");
        assert!(zero.is_err(), "steps count from 1");
    }

    #[test]
    fn without_steps_each_step_runs_up_to_its_first_plain_reply() {
        let source = r#"
[[turns]]
error = "overflow"
[[turns]]
tool_calls = [{ name = "read_log" }]
[[turns]]
reply = "One."
[[turns]]
reply = "Two."
[[turns]]
error = "timeout"
"#;
        let script = parse_mock("m", "m.toml", source).expect("valid");
        assert_eq!(
            ctxbed_sim::mock::step_groups(&script.turns),
            [vec![0, 1, 2], vec![3], vec![4]]
        );
    }
}
