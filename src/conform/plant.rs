//! Planted faults for the reference adapter: ctxbed's own harness made to do one named wrong
//! thing (a mutant), so the test-bed can show that each wire scenario fails a harness that has
//! the defect its description warns against, that every rule fails some harness, and that a
//! failed step does not change the verdicts of later ones.
//!
//! `CTXBED_PEER_PLANT` holds a comma-separated list of plants (the test adapters under
//! `tests/wire-suite/peers/planted-*` each set one; `ctxbed conform --mutants` runs each of
//! [`MUTANTS`] over every scenario). Each is a defect real harnesses have shown: [`MUTANTS`]
//! says what each harness does, and `fail_step=K` answers step K with an error without calling
//! the model. The plants that change what goes over the wire do it in [`transport`]; the others
//! change how the reference adapter builds its agent (`conform::reference`).

pub mod estimate;
mod rewrite;
pub mod transport;

pub use rewrite::SUMMARY_MARK;
pub use transport::PlantedTransport;

/// The environment variable naming the plants.
pub const PLANT_VARIABLE: &str = "CTXBED_PEER_PLANT";

/// Every mutant of the reference harness: its plant's name and the defect it has, as the kill
/// matrix (`docs/mutants.md`) names it.
pub const MUTANTS: &[(&str, &str)] = &[
    (
        "no_results",
        "runs the tool calls but never sends a call or its result back: asks again from the input alone",
    ),
    ("orphan_call", "sends tool calls without their results"),
    (
        "no_history",
        "sends only the current step's input, never the session's history (a new session each step)",
    ),
    (
        "one_session",
        "runs every step in one session, whatever the step says",
    ),
    (
        "memory_sessions",
        "keeps its sessions in memory only, so a restarted process starts them empty",
    ),
    (
        "keep_last",
        "keeps the system prompt and the last four messages, with no care for calls and their results",
    ),
    (
        "trim_to_result",
        "trims its history so that it starts with a tool result whose call was cut away",
    ),
    (
        "no_context",
        "manages no context: no window, no compaction, no offload",
    ),
    ("chars4", "estimates tokens as characters / 4"),
    ("schemas_free", "does not count the tool schemas it sends"),
    ("images_free", "prices an attached image at no tokens"),
    (
        "images_base64",
        "prices an attached image by its base64 text (characters / 4)",
    ),
    (
        "no_overflow_recovery",
        "does not recognise the provider's overflow: reports it as an error, neither compacting nor retrying",
    ),
    (
        "retry_same",
        "answers an overflow by resending the same request once",
    ),
    (
        "retry_forever",
        "answers an overflow by resending the same request until it passes",
    ),
    (
        "summary_overflow",
        "hands its summariser the whole history in one request, however long",
    ),
    (
        "drop_summary",
        "drops the summary it obtained from the requests that follow",
    ),
    (
        "two_systems",
        "sends a second system message after the conversation",
    ),
    (
        "drop_thinking",
        "hands back no thinking (Anthropic thinking blocks, Responses reasoning items, Chat `reasoning_content`)",
    ),
    (
        "ignore_retry_after",
        "ignores a 429's Retry-After and retries on its own backoff",
    ),
    ("no_retry", "never retries a provider error (one attempt)"),
    (
        "empty_reply_on_error",
        "turns any failed call into an empty reply",
    ),
    (
        "drop_tool_errors",
        "hands a failed tool's result to the model as an empty success",
    ),
    (
        "count_storm",
        "asks Anthropic's count_tokens three times before each Messages request",
    ),
    (
        "strict_arguments",
        "fails a whole reply whose tool-call arguments are not a JSON object, instead of handing them to the tool",
    ),
    (
        "blank_text",
        "hands back each Anthropic tool-use turn with an empty text block before its calls",
    ),
    (
        "past_tools",
        "keeps only the text of earlier steps in a session: their tool calls and results are gone",
    ),
];

/// The plants of one adapter run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plants {
    pub fail_step: Option<u64>,
    pub no_results: bool,
    pub orphan_call: bool,
    pub no_history: bool,
    pub one_session: bool,
    pub memory_sessions: bool,
    pub keep_last: bool,
    pub trim_to_result: bool,
    pub no_context: bool,
    pub chars4: bool,
    pub schemas_free: bool,
    pub images_free: bool,
    pub images_base64: bool,
    pub no_overflow_recovery: bool,
    pub retry_same: bool,
    pub retry_forever: bool,
    pub summary_overflow: bool,
    pub drop_summary: bool,
    pub two_systems: bool,
    pub drop_thinking: bool,
    pub ignore_retry_after: bool,
    pub no_retry: bool,
    pub empty_reply_on_error: bool,
    pub drop_tool_errors: bool,
    pub count_storm: bool,
    pub strict_arguments: bool,
    pub blank_text: bool,
    pub past_tools: bool,
}

impl Plants {
    /// Reads [`PLANT_VARIABLE`]; unset or empty plants nothing.
    ///
    /// # Errors
    /// A plant that does not exist, or a step that is not a number.
    pub fn from_env() -> Result<Plants, String> {
        Plants::parse(&std::env::var(PLANT_VARIABLE).unwrap_or_default())
    }

    /// Parses a comma-separated list of plants.
    ///
    /// # Errors
    /// A plant that does not exist, or a step that is not a number.
    pub fn parse(text: &str) -> Result<Plants, String> {
        let mut plants = Plants::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if let Some(step) = item.strip_prefix("fail_step=") {
                plants.fail_step = Some(step.parse().map_err(|_| {
                    format!("{PLANT_VARIABLE}: `fail_step={step}` needs a step number")
                })?);
                continue;
            }
            let flag = plants.flag(item).ok_or_else(|| {
                format!("{PLANT_VARIABLE}: unknown plant `{item}` (see `ctxbed conform --mutants`)")
            })?;
            *flag = true;
        }
        Ok(plants)
    }

    /// The flag of the plant `name`.
    fn flag(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "no_results" => &mut self.no_results,
            "orphan_call" => &mut self.orphan_call,
            "no_history" => &mut self.no_history,
            "one_session" => &mut self.one_session,
            "memory_sessions" => &mut self.memory_sessions,
            "keep_last" => &mut self.keep_last,
            "trim_to_result" => &mut self.trim_to_result,
            "no_context" => &mut self.no_context,
            "chars4" => &mut self.chars4,
            "schemas_free" => &mut self.schemas_free,
            "images_free" => &mut self.images_free,
            "images_base64" => &mut self.images_base64,
            "no_overflow_recovery" => &mut self.no_overflow_recovery,
            "retry_same" => &mut self.retry_same,
            "retry_forever" => &mut self.retry_forever,
            "summary_overflow" => &mut self.summary_overflow,
            "drop_summary" => &mut self.drop_summary,
            "two_systems" => &mut self.two_systems,
            "drop_thinking" => &mut self.drop_thinking,
            "ignore_retry_after" => &mut self.ignore_retry_after,
            "no_retry" => &mut self.no_retry,
            "empty_reply_on_error" => &mut self.empty_reply_on_error,
            "drop_tool_errors" => &mut self.drop_tool_errors,
            "count_storm" => &mut self.count_storm,
            "strict_arguments" => &mut self.strict_arguments,
            "blank_text" => &mut self.blank_text,
            "past_tools" => &mut self.past_tools,
            _ => return None,
        })
    }

    /// True when a plant changes what goes over the wire (and needs [`PlantedTransport`]).
    pub fn touches_the_wire(&self) -> bool {
        self.no_results
            || self.orphan_call
            || self.keep_last
            || self.trim_to_result
            || self.no_overflow_recovery
            || self.retry_same
            || self.retry_forever
            || self.summary_overflow
            || self.drop_summary
            || self.two_systems
            || self.drop_thinking
            || self.ignore_retry_after
            || self.count_storm
            || self.strict_arguments
            || self.blank_text
            || self.past_tools
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plants_parse_and_refuse_unknown_names() {
        let plants = Plants::parse("fail_step=2, no_context").expect("valid plants");
        assert_eq!(plants.fail_step, Some(2));
        assert!(plants.no_context && !plants.orphan_call);
        assert!(Plants::parse("").expect("empty").eq(&Plants::default()));
        assert!(
            Plants::parse("fail_step=x")
                .unwrap_err()
                .contains("step number")
        );
        assert!(
            Plants::parse("forget")
                .unwrap_err()
                .contains("unknown plant `forget`")
        );
    }

    #[test]
    fn every_mutant_parses_to_its_own_plant() {
        let mut seen = Vec::new();
        for (name, defect) in MUTANTS {
            let plants = Plants::parse(name).expect("a mutant's plant parses");
            assert_ne!(plants, Plants::default(), "{name} plants nothing");
            assert!(
                !seen.contains(&plants),
                "{name} plants what another mutant does"
            );
            assert!(!defect.is_empty());
            seen.push(plants);
        }
    }
}
