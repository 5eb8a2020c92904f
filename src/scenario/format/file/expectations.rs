//! Checking `[[expect]]` entries into [`Expectation`]s: inline assertions about a step.

use toml::Spanned;

use super::checked::Expectation;
use super::raw::RawExpect;
use crate::scenario::format::diagnostic::{Diagnostic, closest};
use crate::scenario::format::mock_file::Checker;
use ctxbed_harness::context::transform::Transform;

/// One `[[expect]]` entry, naming a step among the `step_count`.
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
    let step = expected_step(checker, &field, raw, step_count);
    let transforms_include = transform_patterns(
        checker,
        spanned,
        raw.transforms_include.as_deref(),
        &format!("{field}.transforms_include"),
    );
    let transforms_absent = transform_patterns(
        checker,
        spanned,
        raw.transforms_absent.as_deref(),
        &format!("{field}.transforms_absent"),
    );
    let counts = expected_counts(checker, &field, raw);
    let expectation = Expectation {
        line,
        step,
        reply: raw.reply.clone(),
        reply_contains: raw.reply_contains.clone(),
        error: raw.error.clone(),
        error_contains: raw.error_contains.clone(),
        model_calls: counts.model_calls,
        tool_results: counts.tool_results,
        denied: counts.denied,
        validation: raw.validation.clone(),
        request_messages: raw.request_messages.clone(),
        elapsed_ms: counts.elapsed_ms,
        request: counts.request,
        items_present: raw.items_present.clone().unwrap_or_default(),
        items_absent: raw.items_absent.clone().unwrap_or_default(),
        transforms_include,
        transforms_absent,
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
        usage: counts.usage,
        summary_calls: counts.summary_calls,
        memory_calls: counts.memory_calls,
        observer_calls: counts.observer_calls,
        summary_request_contains: raw.summary_request_contains.clone().unwrap_or_default(),
        memory_request_contains: raw.memory_request_contains.clone().unwrap_or_default(),
        summary_request_lacks: raw.summary_request_lacks.clone().unwrap_or_default(),
        memory_request_lacks: raw.memory_request_lacks.clone().unwrap_or_default(),
        session_records: raw.session_records.clone().unwrap_or_default(),
        session_record_fields: raw.session_record_fields.clone().unwrap_or_default(),
    };
    (checker.problems.len() == before).then_some(expectation)
}

/// `step`: which step the entry checks (every step when absent); it must exist.
fn expected_step(
    checker: &mut Checker<'_>,
    field: &str,
    raw: &RawExpect,
    step_count: usize,
) -> Option<usize> {
    raw.step.as_ref().and_then(|value| {
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
    })
}

/// The counts an entry expects, each checked.
struct Counts {
    model_calls: Option<u64>,
    tool_results: Option<u64>,
    denied: Option<u64>,
    elapsed_ms: Option<u64>,
    request: Option<usize>,
    usage: Option<(u64, u64)>,
    summary_calls: Option<u64>,
    memory_calls: Option<u64>,
    observer_calls: Option<u64>,
}

/// Reads the entry's counts (none negative), in the order their problems are reported.
fn expected_counts(checker: &mut Checker<'_>, field: &str, raw: &RawExpect) -> Counts {
    let mut count = |value: Option<&Spanned<i64>>, name: &str| {
        value.and_then(|v| checker.count(v, &format!("{field}.{name}"), 0))
    };
    Counts {
        model_calls: count(raw.model_calls.as_ref(), "model_calls"),
        tool_results: count(raw.tool_results.as_ref(), "tool_results"),
        denied: count(raw.denied.as_ref(), "denied"),
        elapsed_ms: count(raw.elapsed_ms.as_ref(), "elapsed_ms"),
        request: count(raw.request.as_ref(), "request").and_then(|r| usize::try_from(r).ok()),
        usage: raw.usage.as_ref().and_then(|usage| {
            let input = count(Some(&usage.input_tokens), "usage.input_tokens")?;
            let output = count(Some(&usage.output_tokens), "usage.output_tokens")?;
            Some((input, output))
        }),
        summary_calls: count(raw.summary_calls.as_ref(), "summary_calls"),
        memory_calls: count(raw.memory_calls.as_ref(), "memory_calls"),
        observer_calls: count(raw.observer_calls.as_ref(), "observer_calls"),
    }
}

/// Checks transform patterns: each is a transform's full text form (it must parse as one), or
/// a prefix of it followed by `*` (the text before the first `:` must then be a known kind).
fn transform_patterns(
    checker: &mut Checker<'_>,
    spanned: &Spanned<RawExpect>,
    patterns: Option<&[String]>,
    field: &str,
) -> Vec<String> {
    let patterns = patterns.unwrap_or_default();
    for (index, pattern) in patterns.iter().enumerate() {
        let problem = match pattern.strip_suffix('*') {
            Some(prefix) => {
                let kind = prefix.split(':').next().unwrap_or_default();
                (!Transform::KINDS.contains(&kind)).then(|| {
                    let known = Transform::KINDS.join(", ");
                    (
                        format!("unknown transform kind `{kind}` in the prefix `{prefix}*`"),
                        match closest(kind, Transform::KINDS.iter().copied()) {
                            Some(near) => format!("did you mean `{near}`? known kinds: {known}"),
                            None => format!("known kinds: {known}"),
                        },
                    )
                })
            }
            None => pattern.parse::<Transform>().err().map(|error| {
                let kind = pattern.split(':').next().unwrap_or_default();
                let near = match closest(kind, Transform::KINDS.iter().copied()) {
                    Some(near) if near != kind => format!("did you mean `{near}`? "),
                    _ => String::new(),
                };
                (
                    error.to_string(),
                    format!(
                        "{near}write the transform as the trace prints it, or end a prefix of it \
                         with `*` (e.g. `history_compaction:*`)"
                    ),
                )
            }),
        };
        if let Some((message, help)) = problem {
            let problem = checker
                .at(spanned, message)
                .field(format!("{field}[{index}]"))
                .help(help);
            checker.problems.push(problem);
        }
    }
    patterns.to_vec()
}
