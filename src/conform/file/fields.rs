//! The wire-scenario checker's field rules: steps and their repeats, expectations, counts in
//! range, the thinking budget and the pinned API, each problem at its place.

use toml::Spanned;

use super::{
    Checker, ERROR_KINDS, RawExpect, RawStep, STEPS_MAX, THINKING_BUDGET_MIN, WireExpect, WireStep,
};
use crate::scenario::format::diagnostic::Diagnostic;
use ctxbed_sim::host::Api;

impl Checker<'_> {
    /// The steps, each `repeat` expanded and `{n}` replaced by the step's number.
    pub(super) fn steps(&mut self, raw: &[RawStep]) -> Vec<WireStep> {
        let mut steps = Vec::new();
        for step in raw {
            let repeat = step.repeat.as_ref().map_or(1, |r| *r.get_ref());
            if repeat == 0 || steps.len() + repeat > STEPS_MAX {
                let span = step.repeat.as_ref().map_or(0..0, Spanned::span);
                let problem = self
                    .at(span, format!("{repeat} repeats is out of range"))
                    .field("steps.repeat")
                    .help(format!("a scenario has 1 to {STEPS_MAX} steps in all"));
                self.problems.push(problem);
                continue;
            }
            if step.restart && steps.is_empty() {
                self.problems.push(
                    Diagnostic::file_level(
                        self.label,
                        "the first step cannot restart the harness: nothing ran before it",
                    )
                    .field("steps.restart")
                    .help("put `restart = true` on a later [[steps]] entry"),
                );
            }
            for copy in 0..repeat {
                let number = steps.len() + 1;
                steps.push(WireStep {
                    user: step.user.clone(),
                    session: step.session.clone(),
                    input: step.input.replace("{n}", &number.to_string()),
                    images: step.images.clone(),
                    restart: step.restart && copy == 0,
                    interrupt: step.interrupt,
                    crash: step.crash,
                });
            }
        }
        if raw.is_empty() {
            self.problems.push(
                Diagnostic::file_level(
                    self.label,
                    "a wire scenario needs at least one [[steps]] entry",
                )
                .help("add [[steps]] with an `input`"),
            );
        }
        self.stops(&steps);
        steps
    }

    /// A step that crashes the harness is followed by one that starts it again, and no step
    /// both crashes and stops at its tool call.
    fn stops(&mut self, steps: &[WireStep]) {
        for (index, step) in steps.iter().enumerate() {
            let number = index + 1;
            if step.crash && step.interrupt {
                self.problems.push(
                    Diagnostic::file_level(
                        self.label,
                        format!(
                            "step {number} both crashes the harness and stops it at a tool call"
                        ),
                    )
                    .field("steps.crash")
                    .help("keep one of `crash = true` and `interrupt = true`"),
                );
            }
            if step.crash && !steps.get(index + 1).is_some_and(|next| next.restart) {
                self.problems.push(
                    Diagnostic::file_level(
                        self.label,
                        format!("step {number} crashes the harness, and no new process takes over after it"),
                    )
                    .field("steps.crash")
                    .help("give the step after it `restart = true` (and `repeat` no more than 1 to a step that crashes)"),
                );
            }
        }
    }

    /// One `[[expect]]` entry, its step and error kind checked against a scenario of
    /// `step_count` steps.
    pub(super) fn expectation(&mut self, entry: &RawExpect, step_count: usize) -> WireExpect {
        if let Some(step) = &entry.step
            && (*step.get_ref() == 0 || *step.get_ref() > step_count)
        {
            let problem = self
                .at(
                    step.span(),
                    format!("step {} does not exist", step.get_ref()),
                )
                .field("expect.step")
                .help(format!("the scenario has steps 1 to {step_count}"));
            self.problems.push(problem);
        }
        if let Some(error) = &entry.error
            && !ERROR_KINDS.contains(&error.get_ref().as_str())
        {
            let problem = self
                .at(
                    error.span(),
                    format!("`{}` is not an error kind", error.get_ref()),
                )
                .field("expect.error")
                .help(format!("use one of: {}", ERROR_KINDS.join(", ")));
            self.problems.push(problem);
        }
        let line = entry.step.as_ref().map_or(0, |s| self.line_of(s.span()));
        WireExpect {
            step: entry.step.as_ref().map(|s| *s.get_ref()),
            reply: entry.reply.clone(),
            reply_contains: entry.reply_contains.clone(),
            error: entry.error.as_ref().map(|e| e.get_ref().clone()),
            requests: entry.requests,
            requests_at_least: entry.requests_at_least,
            requests_at_most: entry.requests_at_most,
            request_contains: entry.request_contains.clone(),
            request_lacks: entry.request_lacks.clone(),
            at: if line == 0 {
                self.label.to_string()
            } else {
                format!("{}:{line}", self.label)
            },
        }
    }

    /// A count of 1 to 10,000, or `default` when unset (or after a problem).
    pub(super) fn positive(
        &mut self,
        value: Option<&Spanned<u64>>,
        field: &str,
        default: u64,
    ) -> u64 {
        match value {
            Some(v) if *v.get_ref() == 0 || *v.get_ref() > 10_000 => {
                let problem = self
                    .at(v.span(), format!("{} is out of range", v.get_ref()))
                    .field(field)
                    .help("use 1 to 10000");
                self.problems.push(problem);
                default
            }
            Some(v) => *v.get_ref(),
            None => default,
        }
    }

    /// A count of 1 to `max` (`max` after a problem).
    pub(super) fn positive_up_to(&mut self, value: &Spanned<u64>, field: &str, max: u64) -> u64 {
        let count = *value.get_ref();
        if count == 0 || count > max {
            let problem = self
                .at(value.span(), format!("{count} is out of range"))
                .field(field)
                .help(format!("use 1 to {max}"));
            self.problems.push(problem);
            return max;
        }
        count
    }

    /// Extended thinking's budget: at least 1,024 tokens, and below the output bound, as
    /// Anthropic requires.
    pub(super) fn thinking_budget(&mut self, value: &Spanned<u64>, max_output_tokens: u64) -> u64 {
        let budget = *value.get_ref();
        if budget < THINKING_BUDGET_MIN || budget >= max_output_tokens {
            let problem = self
                .at(value.span(), format!("a thinking budget of {budget} tokens"))
                .field("thinking_budget")
                .help(format!(
                    "use {THINKING_BUDGET_MIN} or more, and less than max_output_tokens ({max_output_tokens})"
                ));
            self.problems.push(problem);
        }
        budget
    }

    /// The pinned API, by its name.
    /// The mutants a list (`defects` or `allows`) names, each once.
    fn defects(&mut self, field: &str, values: &[Spanned<String>]) -> Vec<String> {
        let names = || crate::conform::plant::MUTANTS.iter().map(|(name, _)| *name);
        let mut defects: Vec<String> = Vec::new();
        for value in values {
            let name = value.get_ref();
            if defects.contains(name) {
                let problem = self
                    .at(value.span(), format!("`{name}` is listed twice"))
                    .field(field)
                    .help("list each defect once".to_string());
                self.problems.push(problem);
            } else if names().any(|known| known == name) {
                defects.push(name.clone());
            } else {
                let help = match crate::scenario::format::diagnostic::closest(name, names()) {
                    Some(close) => format!(
                        "did you mean `{close}`? `ctxbed conform --mutants` lists every defect"
                    ),
                    None => format!("use one of: {}", names().collect::<Vec<_>>().join(", ")),
                };
                let problem = self
                    .at(
                        value.span(),
                        format!("`{name}` is not a defect a mutant has"),
                    )
                    .field(field)
                    .help(help);
                self.problems.push(problem);
            }
        }
        defects
    }

    /// The mutants a scenario must fail (`defects`) and those it promises pass (`allows`).
    pub(super) fn mutants(
        &mut self,
        defects: &[Spanned<String>],
        allows: &[Spanned<String>],
    ) -> (Vec<String>, Vec<String>) {
        let must = self.defects("defects", defects);
        let may = self.defects("allows", allows);
        self.neither_both(allows, &must);
        (must, may)
    }

    /// No mutant is both one the scenario must fail and one it promises passes.
    fn neither_both(&mut self, allows: &[Spanned<String>], defects: &[String]) {
        for value in allows.iter().filter(|v| defects.contains(v.get_ref())) {
            let problem = self
                .at(
                    value.span(),
                    format!("`{}` is in both `defects` and `allows`", value.get_ref()),
                )
                .field("allows")
                .help("a scenario either fails a mutant or promises it passes".to_string());
            self.problems.push(problem);
        }
    }

    pub(super) fn api(&mut self, value: Option<&Spanned<String>>) -> Option<Api> {
        let value = value?;
        let api = Api::parse(value.get_ref());
        if api.is_none() {
            let names: Vec<&str> = Api::ALL.iter().map(|api| api.as_str()).collect();
            let problem = self
                .at(value.span(), format!("`{}` is not an API", value.get_ref()))
                .field("api")
                .help(format!("use one of: {}", names.join(", ")));
            self.problems.push(problem);
        }
        api
    }
}
