//! `ctxbed explain`: why one model request looked the way it did, as terminal text.
//!
//! [`explain`] picks one preparation of a run by a [`Selector`] and prints, from the same view the
//! HTML report uses (`check::report`): the budget (estimate against the input limit, the
//! window split into limit, safety margin and output reserve, the conversation allowance, tokens
//! per segment), every kept item with its tokens (tool calls grouped with their results, the
//! compaction cut marked), every transform with its reason in words and its figures, the
//! validation and what the model did. [`index`] lists every preparation of the run.
//!
//! Pure: a trace and its scenario in, text out.
//!
//! ```
//! use ctxbed::scenario::check::explain::{Selector, explain};
//! use ctxbed::scenario::check::outcome::run;
//! use ctxbed::scenario::format::file::load;
//! let scenario = load(std::path::Path::new("scenarios/overflow/recover-once.toml")).unwrap();
//! let output = run(&scenario).unwrap();
//! let text = explain(&output.trace, &scenario, Selector::InStep { step: 1, request: 2 }).unwrap();
//! assert!(text.contains("17 older messages were replaced by the summary"));
//! assert!(explain(&output.trace, &scenario, Selector::Number(9)).is_err());
//! ```

use std::fmt::Write as _;

use super::report::{
    Entry, MessageView, Preparation, Segment, Transform, outcome_meaning, preparations,
    validation_meaning,
};
use crate::scenario::format::file::Scenario;
use crate::scenario::run::record::Trace;
use ctxbed_harness::context::manifest::ItemKind;
use ctxbed_harness::context::render::{
    REFERENCE_MESSAGE_ID, SYSTEM_MESSAGE_ID, TRANSIENT_MESSAGE_ID,
};
use ctxbed_harness::format::{duration, snippet};

/// The messages the layout adds around the conversation.
const LAYOUT_MESSAGE_IDS: [&str; 3] = [
    SYSTEM_MESSAGE_ID,
    TRANSIENT_MESSAGE_ID,
    REFERENCE_MESSAGE_ID,
];
/// Width of the id column.
const ID_WIDTH: usize = 26;
/// Longest id or name shown before it is cut.
const ID_CHARS_MAX: usize = 60;

/// Which preparation to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    /// 1-based over every preparation of the run, reasoning and summary.
    Number(usize),
    /// The step's `request`-th reasoning preparation, both 1-based, as `[[expect]]` counts them.
    InStep { step: usize, request: usize },
}

/// The selected request does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "there is no {asked} in this run; it has {count} request preparation(s):\n{index}\
     choose one with `--request N`, or `--step S --request R` (R counts the step's reasoning \
     requests, as `[[expect]]` does)"
)]
pub struct ExplainError {
    /// The request as the user asked for it.
    pub asked: String,
    pub count: usize,
    /// The run's preparations, one line each.
    pub index: String,
}

/// Explains one preparation of a run.
///
/// # Errors
/// No preparation matches the selector; the error lists the ones that exist.
pub fn explain(
    trace: &Trace,
    scenario: &Scenario,
    selector: Selector,
) -> Result<String, ExplainError> {
    let preparations = preparations(trace, scenario);
    let found = preparations.iter().find(|preparation| match selector {
        Selector::Number(number) => preparation.number == number,
        Selector::InStep { step, request } => {
            preparation.step == step && preparation.reasoning_number == Some(request)
        }
    });
    match found {
        Some(preparation) => Ok(render(preparation, preparations.len())),
        None => Err(ExplainError {
            asked: match selector {
                Selector::Number(number) => format!("request {number}"),
                Selector::InStep { step, request } => {
                    format!("reasoning request {request} in step {step}")
                }
            },
            count: preparations.len(),
            index: index_lines(&preparations),
        }),
    }
}

/// Every preparation of the run, one line each, with the numbers `explain` accepts.
pub fn index(trace: &Trace, scenario: &Scenario) -> String {
    index_lines(&preparations(trace, scenario))
}

fn index_lines(preparations: &[Preparation<'_>]) -> String {
    if preparations.is_empty() {
        return "  none: no request went through the context pipeline (a `kind = \"react\"` agent \
                has none)\n"
            .to_string();
    }
    let mut out = String::new();
    for preparation in preparations {
        let manifest = preparation.manifest();
        let position = preparation.reasoning_number.map_or(String::new(), |n| {
            format!("  (--step {} --request {n})", preparation.step)
        });
        let line = format!(
            "  {:>3}  step {}  {:<28} {:<9} {:<16} {:<14}{position}",
            preparation.number,
            preparation.step,
            snippet(&preparation.build.call_id, ID_CHARS_MAX),
            preparation.build.purpose.as_str(),
            manifest.validation.as_str(),
            format!(
                "{}/{}",
                manifest.estimated_input_tokens, manifest.input_limit
            )
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

fn render(preparation: &Preparation<'_>, count: usize) -> String {
    let manifest = preparation.manifest();
    let position = preparation.reasoning_number.map_or(String::new(), |n| {
        format!(", reasoning request {n} of step {}", preparation.step)
    });
    let exact = if manifest.exact { "exact" } else { "estimate" };
    let mut out = format!(
        "request {} of {count}: {} {} (step {}{position}), at {}\nmodel {} · counting {} ({exact})\n",
        preparation.number,
        snippet(&preparation.build.call_id, ID_CHARS_MAX),
        preparation.build.purpose.as_str(),
        preparation.step,
        duration(preparation.at),
        snippet(&manifest.model, ID_CHARS_MAX),
        manifest.counting_method
    );
    out.push_str(&budget(preparation));
    out.push_str(&kept(preparation));
    out.push_str(&changed(preparation));
    let _ = write!(
        out,
        "\nvalidation\n  {}\n\nmodel\n  {}\n",
        validation_meaning(preparation),
        outcome_meaning(preparation)
    );
    out
}

fn budget(preparation: &Preparation<'_>) -> String {
    let manifest = preparation.manifest();
    let mut out = String::from("\nbudget\n");
    let Some(breakdown) = preparation.breakdown else {
        out.push_str("  no figures: the preparation failed before anything was counted\n");
        return out;
    };
    let (estimated, limit) = (manifest.estimated_input_tokens, manifest.input_limit);
    let room = if estimated <= limit {
        format!("{} to spare", limit - estimated)
    } else {
        format!("{} OVER the limit", estimated - limit)
    };
    let share = match u64::try_from(limit) {
        Ok(whole) if whole > 0 => {
            let part = u64::try_from(estimated).unwrap_or(0);
            format!(
                " ({}%)",
                (u128::from(part) * 100 + u128::from(whole) / 2) / u128::from(whole)
            )
        }
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "  estimate {estimated} of input limit {limit} tokens{share}; {room}"
    );
    if let Some(budget) = preparation.budget {
        let window = budget
            .window
            .map_or("unknown window".to_string(), |w| format!("window {w}"));
        let _ = writeln!(
            out,
            "  {window}: input limit {} + safety margin {} + output reserve {}{}",
            budget.input_limit,
            budget.safety_margin,
            budget.output_reserve,
            match budget.window {
                Some(w)
                    if w > budget.input_limit + budget.safety_margin + budget.output_reserve =>
                    " (the limit is capped by max_input_tokens)",
                _ => "",
            }
        );
    }
    let _ = writeln!(
        out,
        "  conversation allowance {}: the limit minus System, transient and reference material, \
         tool schemas and the request overhead",
        manifest.conversation_allowance
    );
    let parts: Vec<String> = Segment::ALL
        .iter()
        .map(|segment| format!("{} {}", segment.label(), breakdown.get(*segment)))
        .collect();
    let _ = writeln!(out, "  {}", parts.join(" · "));
    out
}

fn kept(preparation: &Preparation<'_>) -> String {
    let manifest = preparation.manifest();
    let mut out = String::from("\nkept\n");
    if manifest.items.is_empty() {
        out.push_str("  nothing: no item was recorded\n");
        return out;
    }
    let compacted = preparation
        .transforms
        .iter()
        .find_map(|view| match view.transform {
            Transform::HistoryCompaction { messages } => Some(messages),
            _ => None,
        });
    // Messages in the order they were sent: an entry prints at its first message (entries are
    // in conversation order), layout messages (System, transient, references) on their own.
    let mut entries = preparation.conversation.iter().peekable();
    for item in &manifest.items {
        let ItemKind::Message { role, part_kinds } = &item.kind else {
            continue;
        };
        if let Some(entry) = entries.next_if(|entry| entry_first_id(entry) == item.id) {
            out.push_str(&entry_lines(entry, compacted));
        } else if LAYOUT_MESSAGE_IDS.contains(&item.id.as_str()) {
            let _ = writeln!(
                out,
                "  {:<10} {} {:>7} tok  {}",
                role.as_str(),
                column(&item.id),
                item.tokens,
                part_kinds.join("+")
            );
        }
    }
    for item in &manifest.items {
        let line = match &item.kind {
            ItemKind::Message { .. } => continue,
            ItemKind::ToolSchema => format!(
                "  {:<10} {} {:>7} tok  tool schema",
                "schema",
                column(&item.id),
                item.tokens
            ),
            ItemKind::Material {
                kind,
                placement,
                required,
                priority,
                ..
            } => format!(
                "  {:<10} {} {:>7} tok  {} in {} message, priority {priority}{}",
                "material",
                column(&item.id),
                item.tokens,
                kind.as_str(),
                placement.as_str(),
                if *required { ", required" } else { "" }
            ),
        };
        let _ = writeln!(out, "{line}");
    }
    out
}

fn entry_first_id(entry: &Entry) -> &str {
    match entry {
        Entry::Message(view) | Entry::Summary(view) => &view.id,
        Entry::Exchange { call, .. } => &call.id,
    }
}

fn entry_lines(entry: &Entry, compacted: Option<usize>) -> String {
    match entry {
        Entry::Message(view) => message_line(view, "  ", ""),
        Entry::Summary(view) => {
            let cut = match compacted {
                Some(messages) => format!(
                    "  ✂ compaction cut: {messages} older messages were replaced by the summary \
                     above, in this request\n"
                ),
                None => "  ✂ compaction cut: an earlier compaction replaced the older messages \
                         with the summary above\n"
                    .to_string(),
            };
            message_line(view, "  ", "compaction summary") + &cut
        }
        Entry::Exchange { call, results } => {
            let calls: Vec<String> = call
                .calls
                .iter()
                .map(|(id, name)| format!("{name} ({id})"))
                .collect();
            let note = if calls.is_empty() {
                String::new()
            } else {
                format!("calls {}", calls.join(", "))
            };
            let mut out = message_line(call, "  ", &note);
            for result in results {
                let answers: Vec<String> = result
                    .results
                    .iter()
                    .map(|(id, name, error)| {
                        let error = if *error { ", an error" } else { "" };
                        format!("result of {name} ({id}){error}")
                    })
                    .collect();
                out.push_str(&message_line(result, "    ", &answers.join(", ")));
            }
            out
        }
    }
}

fn message_line(view: &MessageView, indent: &str, note: &str) -> String {
    let width = 12usize.saturating_sub(indent.len());
    let note = if note.is_empty() {
        view.parts.clone()
    } else {
        format!(
            "{}  {}",
            view.parts,
            snippet(note, ctxbed_harness::limits::SNIPPET_CHARS_MAX)
        )
    };
    format!(
        "{indent}{:<width$} {} {:>7} tok  {note}\n",
        view.role.as_str(),
        column(&view.id),
        view.tokens
    )
}

/// An id padded to the id column (longer ids are cut and take the space they need).
fn column(id: &str) -> String {
    format!("{:<ID_WIDTH$}", snippet(id, ID_CHARS_MAX))
}

fn changed(preparation: &Preparation<'_>) -> String {
    let mut out = format!(
        "\ndropped or changed ({} transform(s))\n",
        preparation.transforms.len()
    );
    if preparation.transforms.is_empty() {
        out.push_str(if preparation.breakdown.is_some() {
            "  nothing: every item went into the request unchanged\n"
        } else {
            "  nothing recorded\n"
        });
    }
    for view in &preparation.transforms {
        let _ = writeln!(
            out,
            "  {}",
            snippet(
                &view.transform.to_string(),
                ctxbed_harness::limits::SNIPPET_CHARS_MAX
            )
        );
        let _ = writeln!(out, "    {}", view.meaning);
        if let Some(figures) = &view.figures {
            let _ = writeln!(out, "    {figures}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::check::outcome::{RunOutput, run};
    use crate::scenario::format::file::load;

    fn scenario_run(name: &str) -> (Scenario, RunOutput) {
        let path = format!("scenarios/{name}.toml");
        let scenario = load(std::path::Path::new(&path)).expect("the scenario loads");
        let output = run(&scenario).expect("the scenario runs");
        (scenario, output)
    }

    fn check(name: &str, selector: Selector, expected: &[&str]) {
        let (scenario, output) = scenario_run(name);
        let text = explain(&output.trace, &scenario, selector).expect("the request exists");
        for needle in expected {
            assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
        }
    }

    #[test]
    fn both_selectors_reach_the_same_request() {
        let (scenario, output) = scenario_run("overflow/recover-once");
        let by_number = explain(&output.trace, &scenario, Selector::Number(4));
        let in_step = explain(
            &output.trace,
            &scenario,
            Selector::InStep {
                step: 1,
                request: 2,
            },
        );
        assert_eq!(by_number, in_step);
    }

    #[test]
    fn a_missing_request_lists_the_ones_that_exist() {
        let (scenario, output) = scenario_run("overflow/recover-once");
        for selector in [
            Selector::Number(0),
            Selector::Number(5),
            Selector::InStep {
                step: 2,
                request: 1,
            },
        ] {
            let error = explain(&output.trace, &scenario, selector).expect_err("out of range");
            assert_eq!(error.count, 4);
            let message = error.to_string();
            assert!(message.contains("call-1/r1.retry/memory"), "{message}");
            assert!(message.contains("call-1/r1.retry/summary"), "{message}");
            assert!(message.contains("(--step 1 --request 2)"), "{message}");
        }
        let index = index(&output.trace, &scenario);
        assert_eq!(index.lines().count(), 4);
        assert!(index.lines().all(|line| line == line.trim_end()));
        let (scenario, output) = scenario_run("react/huge-result-react");
        let error = explain(&output.trace, &scenario, Selector::Number(1)).expect_err("none");
        assert!(
            error.to_string().contains("none: no request went through"),
            "{error}"
        );
    }

    #[test]
    fn compaction_is_explained_with_its_cut_and_figures() {
        check(
            "overflow/recover-once",
            Selector::Number(4),
            &[
                "request 4 of 4: call-1/r1.retry reasoning (step 1, reasoning request 2 of step 1)",
                "estimate 823 of input limit 13680 tokens (6%); 12857 to spare",
                "window 16000: input limit 13680 + safety margin 320 + output reserve 2000",
                "summary-cd4a64e9928c5653",
                "✂ compaction cut: 17 older messages were replaced by the summary above",
                "calls execute (hist_0_8)",
                "result of execute (hist_0_8)",
                "conversation 3707 tok in request #1 → 820 tok here",
                "the model replied",
            ],
        );
        check(
            "overflow/recover-once",
            Selector::Number(1),
            &["the model call failed with context_overflow"],
        );
    }

    #[test]
    fn omitted_material_and_a_capped_limit_are_explained() {
        check(
            "budget/omission-order",
            Selector::Number(1),
            &[
                "(the limit is capped by max_input_tokens)",
                "omitted_for_budget:workspace:MEMORY.md",
                "optional material workspace:MEMORY.md was left out",
                "material   source/docs/c-status",
                "System message 106",
            ],
        );
    }

    #[test]
    fn rejected_preparations_say_why_nothing_was_sent() {
        check(
            "budget/budget-exceeded",
            Selector::Number(1),
            &[
                "2537 OVER the limit",
                "budget_exceeded: the estimate 3537 is 2537 over the input limit 1000",
                "not sent: the preparation failed (context_budget_exceeded)",
            ],
        );
        check(
            "sources/slow-fail-build-failed",
            Selector::Number(1),
            &[
                "no figures: the preparation failed before anything was counted",
                "not sent: the preparation failed (source_failed)",
            ],
        );
        check(
            "offload/over-limit",
            Selector::Number(2),
            &["result 80001 chars → message m0003 2232 tok in this request"],
        );
    }
}
