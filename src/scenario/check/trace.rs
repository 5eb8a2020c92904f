//! The trace of a scenario run and its canonical text rendering.
//!
//! The golden files are this rendering. It lists the effective configuration (defaults
//! included), then every step's events with virtual timestamps: each preparation's manifest
//! (messages by role, id, parts, tokens and content hash; tool schemas; transforms; validation),
//! each model call and reply, tool calls and results, and the outcome. Prose is shown quoted
//! and bounded, never in full, so a diff reads as the changed behaviour.
//!
//! **Invariant:** the rendering holds no wall-clock time, no absolute path and no host name.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use crate::limits::TRACE_TEXT_CHARS_MAX;
use crate::scenario::check::expect::Check;
use crate::scenario::run::record::{StepRecord, Trace};
use ctxbed_harness::agent::AgentError;
use ctxbed_harness::agent::events::{CustomValue, EventKind};
use ctxbed_harness::context::manifest::{ContextManifest, ItemKind, ManifestItem};
use ctxbed_harness::format::{duration, quoted};
use ctxbed_harness::message::{Message, ToolOutput, ToolResult};
use ctxbed_harness::session::TornRecord;

/// Renders a trace and its expectation checks as canonical text.
pub fn render(trace: &Trace, checks: &[Check]) -> String {
    let mut out = String::with_capacity(rendered_len_hint(trace));
    for line in &trace.header {
        let _ = writeln!(out, "{line}");
    }
    let mut lines = ItemLines::default();
    for step in &trace.steps {
        render_step(&mut out, &mut lines, step, trace.policy_version.as_deref());
    }
    if !checks.is_empty() {
        let _ = writeln!(out, "\nexpectations:");
        for check in checks {
            let verdict = if check.passed { "ok  " } else { "FAIL" };
            let _ = writeln!(
                out,
                "  {verdict} line {}: {}",
                check.line, check.description
            );
            if !check.passed {
                let _ = writeln!(out, "       {}", check.detail);
            }
        }
    }
    out
}

/// About the length of a trace's rendering, so the buffer is allocated once rather than grown
/// (and copied) step by step: a line per header entry, event, manifest item and transform, at
/// a typical line's length. A hint only; the rendering never depends on it.
fn rendered_len_hint(trace: &Trace) -> usize {
    const LINE: usize = 96;
    let header: usize = trace.header.iter().map(|line| line.len() + 1).sum();
    let steps: usize = trace
        .steps
        .iter()
        .map(|step| {
            let manifests: usize = step
                .manifests()
                .map(|(manifest, _)| manifest.items.len() + manifest.transforms.len() + 2)
                .sum();
            (step.before.len() + step.after.len() + step.events.len() + manifests + 4) * LINE
        })
        .sum();
    header + steps
}

fn render_step(
    out: &mut String,
    lines: &mut ItemLines,
    step: &StepRecord,
    policy_version: Option<&str>,
) {
    let spec = &step.spec;
    let _ = writeln!(
        out,
        "\nstep {} user={} session={} input={}",
        step.index,
        spec.user.as_deref().unwrap_or("-"),
        spec.session.as_deref().unwrap_or("-"),
        quoted(&spec.input, TRACE_TEXT_CHARS_MAX)
    );
    for line in &step.before {
        let _ = writeln!(out, "  {line}");
    }
    // Other writers' lines go between the events, in time order (an event first on a tie).
    let mut others = step.after.iter().peekable();
    // Events come in bursts at one virtual time: the stamp is formatted when the time moves.
    let mut stamp: Option<(std::time::Duration, String)> = None;
    for event in &step.events {
        while let Some((at, line)) = others.next_if(|(at, _)| *at < event.at) {
            let _ = writeln!(out, "  {:>9} {line}", duration(*at));
        }
        if stamp.as_ref().is_none_or(|(at, _)| *at != event.at) {
            stamp = Some((event.at, format!("{:>9}", duration(event.at))));
        }
        let shown = stamp.as_ref().map_or("", |(_, shown)| shown.as_str());
        render_event(out, lines, shown, &event.kind, policy_version);
    }
    for (at, line) in others {
        let _ = writeln!(out, "  {:>9} {line}", duration(*at));
    }
    if !step.session_records.is_empty() {
        let kinds: Vec<String> = step
            .session_records
            .iter()
            .map(|(kind, count)| format!("{kind}×{count}"))
            .collect();
        let _ = writeln!(out, "  session_log {}", kinds.join(" "));
    }
    let _ = writeln!(out, "  elapsed {}", duration(step.elapsed));
}

/// One event's line; a context build also gets its manifest's lines.
fn render_event(
    out: &mut String,
    lines: &mut ItemLines,
    stamp: &str,
    kind: &EventKind,
    policy_version: Option<&str>,
) {
    let text = |t: &str| quoted(t, TRACE_TEXT_CHARS_MAX);
    let line = match kind {
        EventKind::RunStarted { call_id } => format!("run_started {call_id}"),
        EventKind::SessionRestored {
            records,
            messages,
            torn,
        } => session_restored_line(*records, *messages, torn.as_ref()),
        EventKind::SessionLogFailed { detail } => {
            format!("session_log_failed {}", text(detail))
        }
        EventKind::Custom {
            name,
            value: CustomValue::ContextBuild(build),
        } => {
            let _ = writeln!(
                out,
                "  {stamp} {name} {} {} {}{}",
                build.call_id,
                build.purpose.as_str(),
                build.status,
                build
                    .error_kind
                    .map(|k| format!(" error={k}"))
                    .unwrap_or_default()
            );
            render_manifest(out, lines, &build.manifest, policy_version);
            return;
        }
        EventKind::ModelCallStarted { request_id } => format!("model_call {request_id}"),
        EventKind::ModelCallFinished { request_id, usage } => match usage {
            Some(usage) => format!(
                "model_reply {request_id} usage in={} out={}",
                usage.input_tokens, usage.output_tokens
            ),
            None => format!("model_reply {request_id}"),
        },
        EventKind::ModelCallFailed { request_id, error } => {
            format!(
                "model_error {request_id} {}: {}",
                error.kind(),
                text(&error.to_string())
            )
        }
        EventKind::Thinking { text: t } => format!("thinking {}", text(t)),
        EventKind::Text { text: t } => format!("text {}", text(t)),
        EventKind::ToolCall { call } => format!(
            "tool_call {} {} {}",
            call.id,
            call.name,
            ctxbed_harness::format::snippet(
                &ctxbed_harness::format::json_text(&call.arguments),
                TRACE_TEXT_CHARS_MAX,
            )
        ),
        EventKind::ToolResult { result, denied } => tool_result_line(result, *denied),
        EventKind::RunFinished { call_id, outcome } => run_finished_line(call_id, outcome),
    };
    let _ = writeln!(out, "  {stamp} {line}");
}

/// `session_restored`: records and messages read, and a torn last record when there was one.
fn session_restored_line(records: usize, messages: usize, torn: Option<&TornRecord>) -> String {
    format!(
        "session_restored records={records} messages={messages}{}",
        torn.map_or(String::new(), |torn| format!(
            " torn=line {} ({} bytes, {})",
            torn.line,
            torn.bytes,
            match torn.reason {
                ctxbed_harness::session::jsonl::TornReason::NoNewline => "no newline",
                ctxbed_harness::session::jsonl::TornReason::InvalidRecord => "not a record",
            }
        ))
    )
}

/// `tool_result`: the call, the tool, its status, size, media count and text.
fn tool_result_line(result: &ToolResult, denied: bool) -> String {
    let status = match (denied, result.is_error) {
        (true, _) => "denied",
        (false, true) => "error",
        (false, false) => "ok",
    };
    let media = result
        .outputs
        .iter()
        .filter(|o| matches!(o, ToolOutput::Media { .. }))
        .count();
    let media = if media > 0 {
        format!(" +{media} media")
    } else {
        String::new()
    };
    format!(
        "tool_result {} {} {status} {} chars{media} {}",
        result.call_id,
        result.tool_name,
        result.text_chars(),
        quoted(&result.text(), TRACE_TEXT_CHARS_MAX)
    )
}

/// `run_finished`: the reply's id, or the error.
fn run_finished_line(call_id: &str, outcome: &Result<Message, AgentError>) -> String {
    match outcome {
        Ok(reply) => format!("run_finished {call_id} ok reply={}", reply.id),
        Err(error) => format!(
            "run_finished {call_id} error {}: {}",
            error.kind(),
            ctxbed_harness::format::snippet(
                &error.to_string(),
                ctxbed_harness::limits::SNIPPET_CHARS_MAX
            )
        ),
    }
}

/// Each manifest item's line, by the item's address. Successive manifests share the items of
/// unchanged messages, so a trace shows the same item at every step; its line is formatted
/// once per rendering. Items outlive the rendering (the trace holds them), so an address names
/// one item throughout. Only looked up, never iterated: its order shows nowhere.
#[derive(Default)]
struct ItemLines(HashMap<*const ManifestItem, String>);

fn render_manifest(
    out: &mut String,
    lines: &mut ItemLines,
    manifest: &ContextManifest,
    policy_version: Option<&str>,
) {
    let exact = if manifest.exact { "exact" } else { "estimate" };
    let policy = if manifest.policy_version.as_deref() == policy_version {
        String::new()
    } else {
        format!(
            " policy_version={}",
            manifest.policy_version.as_deref().unwrap_or("none")
        )
    };
    let _ = writeln!(
        out,
        "              tokens={}/{} allowance={} method={} ({exact}) validation={}{}{policy}",
        manifest.estimated_input_tokens,
        manifest.input_limit,
        manifest.conversation_allowance,
        manifest.counting_method,
        manifest.validation.as_str(),
        manifest
            .task_revision
            .filter(|revision| *revision > 0)
            .map_or(String::new(), |revision| format!(
                " task_revision={revision}"
            ))
    );
    for item in &manifest.items {
        let line = lines
            .0
            .entry(Arc::as_ptr(item))
            .or_insert_with(|| item_line(item));
        out.push_str(line);
    }
    for transform in &manifest.transforms {
        let _ = writeln!(out, "              transform {transform}");
    }
}

/// A manifest item's line in the trace, with its newline.
fn item_line(item: &ManifestItem) -> String {
    let mut line = String::new();
    let (label, parts) = match &item.kind {
        ItemKind::Message { role, part_kinds } => (role.as_str(), part_kinds.join("+")),
        ItemKind::ToolSchema => ("schema", String::new()),
        ItemKind::Material {
            kind,
            placement,
            revision,
            required,
            priority,
        } => {
            let required = if *required { " required" } else { "" };
            let _ = writeln!(
                line,
                "              | material  {} {} tok  {} in {} prio={priority}{required} rev={}",
                item.id,
                item.tokens,
                kind.as_str(),
                placement.as_str(),
                ctxbed_harness::format::snippet(revision, 24)
            );
            return line;
        }
    };
    let _ = writeln!(
        line,
        "              | {label:<9} {:<10} {:>7} tok  {parts:<22} #{}",
        item.id,
        item.tokens,
        &item.content_hash[..item.content_hash.len().min(8)]
    );
    line
}
