//! Generated wire scenarios: a [`Draft`] drawn from a seed (API, window, output budget,
//! streaming, usage, steps of tool rounds with parallel calls, result sizes and content kinds,
//! one fault or none), written out as a wire scenario and its mock model, and made smaller by
//! [`Draft::smaller`] while a harness still fails it (see `conform::explore`).
//!
//! Same seed, same draft, same files: every draw comes from a ChaCha8 stream seeded from the
//! seed alone.

mod shrink;

use std::fmt::Write as _;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// The most steps a draft has.
pub const DRAFT_STEPS_MAX: usize = 12;
/// The most tool rounds in one step.
pub const ROUNDS_MAX: usize = 3;
/// The most parallel calls in one round.
pub const PARALLEL_MAX: usize = 3;
/// The longest tool result drawn, in characters.
pub const RESULT_CHARS_MAX: usize = 6_000;

/// The wire format a draft speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftApi {
    OpenAi,
    Responses,
    Anthropic,
}

/// A fault the mock injects once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftFault {
    /// The first request of this step (from 0) is refused as an overflow.
    Overflow(usize),
    /// The first request of this step is refused with a 429.
    RateLimit(usize),
}

/// One tool round: parallel calls, each result's length and content kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    pub results: Vec<(usize, &'static str)>,
}

/// A generated wire scenario before it is written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub seed: u64,
    pub api: DraftApi,
    pub window: u64,
    pub max_output_tokens: u64,
    pub stream: bool,
    pub usage: bool,
    /// Per step, its tool rounds before the reply.
    pub steps: Vec<Vec<Round>>,
    pub fault: Option<DraftFault>,
}

const KINDS: [&str; 5] = ["prose", "code", "json", "log", "cjk"];
const WINDOWS: [u64; 6] = [4_000, 6_000, 8_000, 12_000, 16_000, 32_000];

impl Draft {
    /// The draft of `seed`.
    pub fn draw(seed: u64) -> Draft {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut below = |n: u64| rng.next_u64() % n.max(1);
        let api = match below(10) {
            0..5 => DraftApi::OpenAi,
            5..7 => DraftApi::Responses,
            _ => DraftApi::Anthropic,
        };
        let window = WINDOWS[below(WINDOWS.len() as u64) as usize];
        let max_output_tokens = 256 + 128 * below(7);
        let stream = below(2) == 0;
        let usage = below(4) != 0;
        let step_count = 1 + below(DRAFT_STEPS_MAX as u64) as usize;
        let mut steps = Vec::with_capacity(step_count);
        for _ in 0..step_count {
            let rounds = below(ROUNDS_MAX as u64 + 1) as usize;
            let step = (0..rounds)
                .map(|_| {
                    let calls = 1 + below(PARALLEL_MAX as u64) as usize;
                    let results = (0..calls)
                        .map(|_| {
                            let chars = 100 + below(RESULT_CHARS_MAX as u64 - 99) as usize;
                            (chars, KINDS[below(KINDS.len() as u64) as usize])
                        })
                        .collect();
                    Round { results }
                })
                .collect();
            steps.push(step);
        }
        let fault_step = below(step_count as u64) as usize;
        let fault = match below(10) {
            0..2 => Some(DraftFault::Overflow(fault_step)),
            2..3 => Some(DraftFault::RateLimit(fault_step)),
            _ => None,
        };
        Draft {
            seed,
            api,
            window,
            max_output_tokens,
            stream,
            usage,
            steps,
            fault,
        }
    }

    /// The scenario's name (`gen-<seed>`), also its mock model's stem with `wire-` before it.
    pub fn name(&self) -> String {
        format!("gen-{}", self.seed)
    }

    /// The mock model's name.
    pub fn model(&self) -> String {
        format!("wire-{}", self.name())
    }

    /// A size for ordering drafts: steps, then calls, then characters of results.
    pub fn size(&self) -> (usize, usize, usize) {
        let rounds = self.steps.iter().flatten();
        let calls = rounds.clone().map(|round| round.results.len()).sum();
        let chars = rounds
            .flat_map(|round| &round.results)
            .map(|(chars, _)| chars)
            .sum();
        (self.steps.len(), calls, chars)
    }

    /// The wire scenario's text.
    pub fn scenario_toml(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "description = \"Generated from seed {}: {} step(s) of tool rounds in a {}-token window{}\"",
            self.seed,
            self.steps.len(),
            self.window,
            self.fault
                .map_or(String::new(), |fault| format!(", {}", fault_words(fault)))
        );
        let _ = writeln!(out, "model = \"{}\"", self.model());
        out.push_str("system = \"You are a build engineer. Use the tools to investigate, then answer in one sentence.\"\n");
        if self.api == DraftApi::Responses {
            out.push_str("api = \"responses\"\n");
        }
        let _ = writeln!(out, "max_output_tokens = {}", self.max_output_tokens);
        let _ = writeln!(out, "stream = {}", self.stream);
        let _ = writeln!(out, "usage = {}", self.usage);
        out.push_str("request_limit = 120\n\n");
        out.push_str("[[tools]]\nname = \"read_log\"\ndescription = \"Read one build log and return its text.\"\n");
        out.push_str("parameters = { type = \"object\", properties = { path = { type = \"string\", description = \"The log file.\" } }, required = [\"path\"] }\n");
        let results: Vec<String> = self
            .steps
            .iter()
            .flatten()
            .flat_map(|round| &round.results)
            .map(|(chars, kind)| format!("{{ chars = {chars}, content = \"{kind}\" }}"))
            .collect();
        let results = if results.is_empty() {
            vec!["{ text = \"empty log\" }".to_string()]
        } else {
            results
        };
        let _ = writeln!(out, "results = [{}]\n", results.join(", "));
        for index in 0..self.steps.len() {
            let _ = writeln!(
                out,
                "[[steps]]\ninput = \"Step {}: why did build {} fail?\"\n",
                index + 1,
                index + 1
            );
        }
        out
    }

    /// The mock model's text.
    pub fn mock_toml(&self) -> String {
        let imitates = match self.api {
            DraftApi::Anthropic => "anthropic",
            DraftApi::OpenAi | DraftApi::Responses => "openai",
        };
        let mut out = format!(
            "description = \"Generated from seed {}\"\nwindow = {}\nimitates = \"{imitates}\"\n\n",
            self.seed, self.window
        );
        let mut call = 0;
        for (index, rounds) in self.steps.iter().enumerate() {
            let step = index + 1;
            if let Some(kind) = self.fault.and_then(|fault| fault_turn(fault, index)) {
                let _ = writeln!(out, "[[turns]]\nerror = \"{kind}\"\nstep = {step}\n");
            }
            for round in rounds {
                let calls: Vec<String> = round
                    .results
                    .iter()
                    .map(|_| {
                        call += 1;
                        format!("{{ name = \"read_log\", args = {{ path = \"log-{call}.txt\" }} }}")
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "[[turns]]\ntool_calls = [{}]\nstep = {step}\n",
                    calls.join(", ")
                );
            }
            let _ = writeln!(
                out,
                "[[turns]]\nreply = \"Step {step}: the build ran out of memory.\"\nstep = {step}\n"
            );
        }
        out
    }
}

fn fault_words(fault: DraftFault) -> String {
    match fault {
        DraftFault::Overflow(step) => format!("an overflow at step {}", step + 1),
        DraftFault::RateLimit(step) => format!("a 429 at step {}", step + 1),
    }
}

/// The error turn a fault puts before step `index`'s turns, if it is that step's.
fn fault_turn(fault: DraftFault, index: usize) -> Option<&'static str> {
    match fault {
        DraftFault::Overflow(step) if step == index => Some("overflow"),
        DraftFault::RateLimit(step) if step == index => Some("rate_limit"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_draft_and_files_every_time() {
        for seed in 0..50 {
            let draft = Draft::draw(seed);
            assert_eq!(draft, Draft::draw(seed));
            assert_eq!(draft.scenario_toml(), Draft::draw(seed).scenario_toml());
            assert!((1..=DRAFT_STEPS_MAX).contains(&draft.steps.len()));
            let scenario =
                crate::conform::file::parse("gen.toml", &draft.scenario_toml(), "wire/gen")
                    .unwrap_or_else(|problems| {
                        panic!("seed {seed}: {problems}\n{}", draft.scenario_toml())
                    });
            assert_eq!(scenario.steps.len(), draft.steps.len());
        }
        let drafts: Vec<Draft> = (0..200).map(Draft::draw).collect();
        assert!(drafts.iter().any(|d| d.api == DraftApi::Anthropic));
        assert!(
            drafts
                .iter()
                .any(|d| matches!(d.fault, Some(DraftFault::Overflow(_))))
        );
        assert!(
            drafts
                .iter()
                .any(|d| d.steps.iter().flatten().any(|r| r.results.len() > 1))
        );
    }
}
