//! Inline expectations: assertions a scenario makes about its own run.
//!
//! Each field of an `[[expect]]` entry becomes one [`Check`], evaluated against the step records
//! and shown (passed or failed) at the end of the trace.

use crate::scenario::format::file::Expectation;
use crate::scenario::run::record::StepRecord;
use ctxbed_harness::agent::EventKind;
use ctxbed_harness::context::manifest::ContextManifest;
use ctxbed_harness::context::manifest::ItemKind;
use ctxbed_harness::model::Purpose;

/// The verdict of one assertion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Line of the `[[expect]]` entry.
    pub line: usize,
    pub description: String,
    pub passed: bool,
    /// What was found, when it failed.
    pub detail: String,
}

/// Evaluates every expectation against the recorded steps.
pub fn evaluate(expectations: &[Expectation], steps: &[StepRecord]) -> Vec<Check> {
    let mut checks = Vec::new();
    for expectation in expectations {
        let selected: Vec<&StepRecord> = steps
            .iter()
            .filter(|step| expectation.step.is_none_or(|n| n == step.index))
            .collect();
        for step in selected {
            checks.extend(step_checks(expectation, step));
        }
    }
    checks
}

fn step_checks(expectation: &Expectation, step: &StepRecord) -> Vec<Check> {
    let line = expectation.line;
    let prefix = format!("step {}", step.index);
    let mut checks = Vec::new();
    let mut push = |description: String, passed: bool, found: String| {
        checks.push(Check {
            line,
            description: format!("{prefix} {description}"),
            passed,
            detail: format!("found: {found}"),
        });
    };
    let reply = step.outcome.as_ref().ok().map(|m| m.text());
    let error = step.outcome.as_ref().err();
    let outcome = || match (&reply, error) {
        (Some(text), _) => format!("reply {text:?}"),
        (None, Some(error)) => format!("error {}: {error}", error.kind()),
        (None, None) => "nothing".to_string(),
    };
    if let Some(expected) = &expectation.reply {
        push(
            format!("reply = {expected:?}"),
            reply.as_deref() == Some(expected.as_str()),
            outcome(),
        );
    }
    if let Some(expected) = &expectation.reply_contains {
        let passed = reply
            .as_deref()
            .is_some_and(|r| r.contains(expected.as_str()));
        push(format!("reply contains {expected:?}"), passed, outcome());
    }
    if let Some(expected) = &expectation.error {
        let passed = error.is_some_and(|e| e.kind() == expected);
        push(format!("error = {expected}"), passed, outcome());
    }
    if let Some(expected) = &expectation.error_contains {
        let passed = error.is_some_and(|e| e.to_string().contains(expected.as_str()));
        push(format!("error contains {expected:?}"), passed, outcome());
    }
    if let Some(expected) = expectation.model_calls {
        let found = step.model_calls();
        push(
            format!("model_calls = {expected}"),
            found == expected,
            found.to_string(),
        );
    }
    let (results, denied) = step.tool_results();
    for (kind, expected) in &expectation.session_records {
        let found = step
            .session_records
            .iter()
            .find(|(k, _)| k == kind)
            .map_or(0, |(_, count)| *count);
        push(
            format!("session log records {kind} ×{expected}"),
            found == *expected,
            found.to_string(),
        );
    }
    for (kind, fields) in &expectation.session_record_fields {
        let records = step.session_record_values(kind);
        let holds = |record: &serde_json::Value| {
            fields
                .iter()
                .all(|(name, value)| record.get(name) == Some(value))
        };
        let wanted: Vec<String> = fields
            .iter()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect();
        push(
            format!("a session log record {kind} has {}", wanted.join(", ")),
            records.iter().any(holds),
            if records.is_empty() {
                format!("no {kind} record")
            } else {
                ctxbed_harness::format::snippet(
                    &records
                        .iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join("; "),
                    ctxbed_harness::limits::SNIPPET_CHARS_MAX,
                )
            },
        );
    }
    if let Some(expected) = expectation.summary_calls {
        let found = step.summary_calls();
        push(
            format!("summary_calls = {expected}"),
            found == expected,
            found.to_string(),
        );
    }
    if let Some(expected) = expectation.observer_calls {
        push(
            format!("observer_calls = {expected}"),
            step.observer_calls == expected,
            step.observer_calls.to_string(),
        );
    }
    if let Some(expected) = expectation.memory_calls {
        let found = step.memory_calls();
        push(
            format!("memory_calls = {expected}"),
            found == expected,
            found.to_string(),
        );
    }
    for (purpose, contains, lacks) in [
        (
            Purpose::Summary,
            &expectation.summary_request_contains,
            &expectation.summary_request_lacks,
        ),
        (
            Purpose::MemoryFlush,
            &expectation.memory_request_contains,
            &expectation.memory_request_lacks,
        ),
    ] {
        let sent: Vec<String> = step
            .requests_for(purpose)
            .into_iter()
            .map(request_text)
            .collect();
        let found = format!("{} {} request(s)", sent.len(), purpose.as_str());
        for needle in contains {
            push(
                format!("a {} request contains {needle:?}", purpose.as_str()),
                sent.iter().any(|text| text.contains(needle.as_str())),
                found.clone(),
            );
        }
        // With no such request at all, "lacks" would hold vacuously: it fails instead.
        for needle in lacks {
            push(
                format!("every {} request lacks {needle:?}", purpose.as_str()),
                !sent.is_empty() && sent.iter().all(|text| !text.contains(needle.as_str())),
                found.clone(),
            );
        }
    }
    if let Some(expected) = expectation.tool_results {
        push(
            format!("tool_results = {expected}"),
            results == expected,
            results.to_string(),
        );
    }
    if let Some(expected) = expectation.denied {
        push(
            format!("denied = {expected}"),
            denied == expected,
            denied.to_string(),
        );
    }
    if let Some(expected) = &expectation.validation {
        let found: Vec<&str> = step
            .reasoning_manifests()
            .map(|m| m.validation.as_str())
            .collect();
        push(
            format!("validation = [{}]", expected.join(", ")),
            found == *expected,
            format!("[{}]", found.join(", ")),
        );
    }
    if let Some(expected) = &expectation.request_messages {
        let found: Vec<i64> = step
            .reasoning_manifests()
            .map(|m| {
                m.items
                    .iter()
                    .filter(|item| matches!(item.kind, ItemKind::Message { .. }))
                    .count() as i64
            })
            .collect();
        let list = |v: &[i64]| {
            v.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        push(
            format!("request_messages = [{}]", list(expected)),
            found == *expected,
            format!("[{}]", list(&found)),
        );
    }
    if let Some(expected) = &expectation.model_calls_at_ms {
        let found: Vec<u64> = step
            .events
            .iter()
            .filter(|event| {
                matches!(&event.kind, EventKind::ModelCallStarted { request_id } if !crate::scenario::run::record::is_compaction_call(request_id))
            })
            .map(|event| event.at.saturating_sub(step_start(step)).as_millis() as u64)
            .collect();
        push(
            format!("model_calls_at_ms = {expected:?}"),
            found == *expected,
            format!("{found:?}"),
        );
    }
    for (prefix, expected) in &expectation.workspace_count_under {
        let found = step
            .workspace_files
            .iter()
            .filter(|p| p.starts_with(prefix.as_str()))
            .count() as u64;
        push(
            format!("workspace holds {expected} file(s) under {prefix:?}"),
            found == *expected,
            found.to_string(),
        );
    }
    for (source, expected) in &expectation.source_loads {
        let found = step.source_loads.get(source).copied().unwrap_or(0);
        push(
            format!("source `{source}` loaded {expected} time(s) so far"),
            found == *expected,
            found.to_string(),
        );
    }
    if let Some(expected) = expectation.elapsed_ms {
        let found = step.elapsed.as_millis();
        push(
            format!("elapsed_ms = {expected}"),
            found == u128::from(expected),
            found.to_string(),
        );
    }
    checks.extend(request_checks(expectation, step, &prefix));
    checks
}

/// When the step's run started (its first event).
fn step_start(step: &StepRecord) -> std::time::Duration {
    step.events
        .first()
        .map(|event| event.at)
        .unwrap_or_default()
}

/// The request-level checks: manifests (items, transforms, layout) and sent requests.
fn request_checks(expectation: &Expectation, step: &StepRecord, prefix: &str) -> Vec<Check> {
    let mut checks = Vec::new();
    let manifests: Vec<&ContextManifest> = step.reasoning_manifests().collect();
    let selected: Vec<(usize, &ContextManifest)> = manifests
        .iter()
        .enumerate()
        .filter(|(index, _)| expectation.request.is_none_or(|n| n == index + 1))
        .map(|(index, m)| (index + 1, *m))
        .collect();
    let mut push = |description: String, passed: bool, found: String| {
        checks.push(Check {
            line: expectation.line,
            description: format!("{prefix} {description}"),
            passed,
            detail: format!("found: {found}"),
        });
    };
    if expectation.request.is_some() && selected.is_empty() {
        push(
            format!("request {} exists", expectation.request.unwrap_or(0)),
            false,
            format!("{} preparation(s)", manifests.len()),
        );
    }
    for (number, manifest) in &selected {
        let at = format!("request {number}");
        // Material items by id, tool schemas as `schema/<name>`.
        let materials: Vec<String> = manifest
            .items
            .iter()
            .filter_map(|item| match item.kind {
                ItemKind::Material { .. } => Some(item.id.clone()),
                ItemKind::ToolSchema => Some(format!("schema/{}", item.id)),
                _ => None,
            })
            .collect();
        for id in &expectation.items_present {
            push(
                format!("{at} has item {id}"),
                materials.contains(id),
                format!("{materials:?}"),
            );
        }
        for id in &expectation.items_absent {
            push(
                format!("{at} lacks item {id}"),
                !materials.contains(id),
                format!("{materials:?}"),
            );
        }
        // Expectations name a transform by its full text form, as traces print it, or by a
        // prefix of it ending in `*`.
        let recorded: Vec<String> = manifest.transforms.iter().map(|t| t.to_string()).collect();
        for transform in &expectation.transforms_include {
            push(
                format!("{at} transform {transform}"),
                transform_recorded(transform, &recorded),
                format!("{recorded:?}"),
            );
        }
        for transform in &expectation.transforms_absent {
            push(
                format!("{at} no transform {transform}"),
                !transform_recorded(transform, &recorded),
                format!("{recorded:?}"),
            );
        }
        for (id, revision) in &expectation.item_revisions {
            let found = match manifest.material(id).map(|item| &item.kind) {
                Some(ItemKind::Material { revision, .. }) => revision.clone(),
                _ => "absent".to_string(),
            };
            push(
                format!("{at} item {id} revision = {revision}"),
                &found == revision,
                found,
            );
        }
        for (id, placement) in &expectation.item_placements {
            let found = match manifest.material(id).map(|item| &item.kind) {
                Some(ItemKind::Material { placement, .. }) => placement.as_str().to_string(),
                _ => "absent".to_string(),
            };
            push(
                format!("{at} item {id} placement = {placement}"),
                &found == placement,
                found,
            );
        }
        if let Some(expected) = expectation.input_limit {
            push(
                format!("{at} input_limit = {expected}"),
                manifest.input_limit == expected,
                manifest.input_limit.to_string(),
            );
        }
        if let Some((input, output)) = expectation.usage {
            let reported = step.events.iter().find_map(|event| match &event.kind {
                EventKind::ModelCallFinished { request_id, usage }
                    if *request_id == manifest.call_id =>
                {
                    Some(*usage)
                }
                _ => None,
            });
            let passed = matches!(reported, Some(Some(usage))
                if usage.input_tokens == input && usage.output_tokens == output);
            let found = match reported {
                Some(Some(usage)) => {
                    format!("{} in, {} out", usage.input_tokens, usage.output_tokens)
                }
                Some(None) => "a reply with no usage".to_string(),
                None => "no reply".to_string(),
            };
            push(
                format!("{at} usage = {input} in, {output} out"),
                passed,
                found,
            );
        }
        if let Some(expected) = expectation.allowance {
            let found = manifest.conversation_allowance;
            push(
                format!("{at} allowance = {expected}"),
                found == expected,
                found.to_string(),
            );
        }
        if let Some(expected) = &expectation.layout {
            let found = layout_tags(manifest);
            push(
                format!("{at} layout = [{}]", expected.join(", ")),
                found == *expected,
                format!("[{}]", found.join(", ")),
            );
        }
        let json = manifest.to_json().to_string();
        for secret in &expectation.manifest_lacks {
            push(
                format!("{at} manifest lacks {secret:?}"),
                !json.contains(secret.as_str()),
                "present".to_string(),
            );
        }
        let sent = step
            .reasoning_requests()
            .get(number - 1)
            .map(|r| request_text(r));
        for needle in &expectation.request_contains {
            let passed = sent
                .as_ref()
                .is_some_and(|text| text.contains(needle.as_str()));
            push(
                format!("{at} sent text contains {needle:?}"),
                passed,
                sent_summary(sent.as_deref()),
            );
        }
        for needle in &expectation.request_lacks {
            let passed = sent
                .as_ref()
                .is_some_and(|text| !text.contains(needle.as_str()));
            push(
                format!("{at} sent text lacks {needle:?}"),
                passed,
                sent_summary(sent.as_deref()),
            );
        }
    }
    checks
}

/// Whether `pattern` (a full transform text, or a prefix ending in `*`) matches a recorded one.
fn transform_recorded(pattern: &str, recorded: &[String]) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => recorded.iter().any(|t| t.starts_with(prefix)),
        None => recorded.iter().any(|t| t == pattern),
    }
}

/// Role or rendered-material tag of each prepared message, in order.
fn layout_tags(manifest: &ContextManifest) -> Vec<String> {
    manifest
        .items
        .iter()
        .filter_map(|item| match &item.kind {
            ItemKind::Message { role, .. } => Some(match item.id.as_str() {
                ctxbed_harness::context::render::TRANSIENT_MESSAGE_ID => "transient".to_string(),
                ctxbed_harness::context::render::REFERENCE_MESSAGE_ID => "reference".to_string(),
                _ => role.as_str().to_string(),
            }),
            _ => None,
        })
        .collect()
}

fn request_text(request: &ctxbed_harness::model::ModelRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| {
            let results: Vec<String> = m.tool_results().map(|r| r.text()).collect();
            let calls: Vec<String> = m.tool_calls().map(|c| c.arguments.to_string()).collect();
            format!("{}\n{}\n{}", m.text(), calls.join("\n"), results.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn sent_summary(sent: Option<&str>) -> String {
    match sent {
        Some(text) => format!("{} chars sent", text.chars().count()),
        None => "no request was sent".to_string(),
    }
}
