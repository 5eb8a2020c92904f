//! Checking `[[expect]]` entries into [`Expectation`]s: inline assertions about a step.

use toml::Spanned;

use super::checked::Expectation;
use super::raw::RawExpect;
use crate::scenario::diagnostic::Diagnostic;
use crate::scenario::mock_file::Checker;

pub(super) fn expectation(
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
