//! The offload check (I4): every offload placeholder a request or a committed history holds
//! points to a workspace file with the result's full original text.
//!
//! The original texts come from the trace, not the harness: the scenario's loaded history and
//! every `tool_result` event, by call id. Each (call id, path) pair is checked once, at the first
//! step that shows it.

use std::collections::{BTreeMap, BTreeSet};

use super::{Violation, ViolationKind};
use crate::scenario::check::outcome::RunOutput;
use crate::scenario::format::file::Scenario;
use ctxbed_harness::agent::events::EventKind;
use ctxbed_harness::context::offload::OFFLOAD_KEY;
use ctxbed_harness::message::Message;
use ctxbed_harness::storage::WorkspacePath;

/// The full text of every tool result the run saw, by call id: the scenario's history and every
/// `tool_result` event.
fn originals(scenario: &Scenario, output: &RunOutput) -> BTreeMap<String, Vec<String>> {
    let mut texts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let history = scenario.history.iter().flat_map(|h| &h.messages);
    for result in history.flat_map(Message::tool_results) {
        texts
            .entry(result.call_id.clone())
            .or_default()
            .push(result.text());
    }
    for event in output.trace.steps.iter().flat_map(|s| &s.events) {
        if let EventKind::ToolResult { result, .. } = &event.kind {
            texts
                .entry(result.call_id.clone())
                .or_default()
                .push(result.text());
        }
    }
    texts
}

pub(super) fn offloads(scenario: &Scenario, output: &RunOutput) -> Vec<Violation> {
    let originals = originals(scenario, output);
    let mut found = Vec::new();
    let mut checked: BTreeSet<(String, String)> = BTreeSet::new();
    for step in &output.trace.steps {
        let requests = step.requests.iter().flat_map(|r| &r.messages);
        for message in requests.chain(&step.committed_history) {
            for result in message.tool_results() {
                let Some(marker) = result.metadata.get(OFFLOAD_KEY) else {
                    continue;
                };
                let path = marker["path"].as_str().unwrap_or_default().to_string();
                if !checked.insert((result.call_id.clone(), path.clone())) {
                    continue;
                }
                let known = originals.get(&result.call_id).map(Vec::as_slice);
                if let Some(detail) = offload_problem(output, &path, marker, known) {
                    found.push(Violation {
                        kind: ViolationKind::BrokenOffload,
                        step: Some(step.index),
                        detail: format!("result `{}`: {detail}", result.call_id),
                    });
                }
            }
        }
    }
    found
}

fn offload_problem(
    output: &RunOutput,
    path: &str,
    marker: &serde_json::Value,
    originals: Option<&[String]>,
) -> Option<String> {
    let Ok(checked) = WorkspacePath::parse(path) else {
        return Some(format!(
            "the placeholder's path {path:?} is not a workspace path"
        ));
    };
    let Some(bytes) = output.workspace.get(&checked) else {
        return Some(format!("`{path}` is not in the workspace"));
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Some(format!("`{path}` is not UTF-8"));
    };
    let chars = text.chars().count() as u64;
    if marker["chars"].as_u64() != Some(chars) {
        return Some(format!(
            "`{path}` holds {chars} characters, the placeholder says {}",
            marker["chars"]
        ));
    }
    match originals {
        Some(originals) if !originals.iter().any(|original| original == text) => Some(format!(
            "`{path}` does not hold the result's original text ({chars} characters)"
        )),
        _ => None,
    }
}
