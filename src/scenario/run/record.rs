//! What a scenario run records: the trace (its header lines and one record per step, with
//! every event the agent streamed, the requests the model received and the session files'
//! bytes). The runner fills it; `check::expect` judges it and `check::trace` renders it.
//!
//! **Invariant:** nothing here reads the wall clock; every time is the simulated clock's.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::scenario::format::file::StepSpec;
use ctxbed_harness::agent::AgentError;
use ctxbed_harness::agent::events::{AgentEvent, CustomValue, EventKind};
use ctxbed_harness::context::manifest::ContextManifest;
use ctxbed_harness::message::Message;
use ctxbed_harness::model::ModelRequest;
use ctxbed_harness::session::SessionRecord;

/// Everything recorded while running one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// Effective configuration, one line each.
    pub header: Vec<String>,
    pub steps: Vec<StepRecord>,
    /// The agent's context-policy version (in the header); a manifest carrying another is
    /// rendered with its own.
    pub policy_version: Option<String>,
}

/// One step (agent call) of a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRecord {
    /// 1-based.
    pub index: usize,
    pub spec: StepSpec,
    /// What happened before the call: restarts, torn writes, application actions.
    pub before: Vec<String>,
    /// What other writers did during the step, with the virtual time they did it.
    pub after: Vec<(Duration, String)>,
    pub events: Vec<AgentEvent>,
    pub outcome: Result<Message, AgentError>,
    /// Virtual time the step took.
    pub elapsed: Duration,
    /// The requests the model received during the step (not rendered in the trace).
    pub requests: Vec<ModelRequest>,
    /// The requests a separate summary model received during the step (summaries and memory
    /// flushes; not rendered).
    pub summary_model_requests: Vec<ModelRequest>,
    /// Loads of each scripted source so far, after the step.
    pub source_loads: BTreeMap<String, u64>,
    /// Workspace file paths after the step.
    pub workspace_files: Vec<String>,
    /// Session-log records written during the step, by kind, in first-seen order.
    pub session_records: Vec<(String, u64)>,
    /// Manifests the context policy's observer received during the step (not rendered).
    pub observer_calls: u64,
    /// Session-log records written during the step, in order (not rendered; see
    /// [`StepRecord::session_record_values`]).
    pub new_session_records: Vec<SessionRecord>,
    /// The step's session's committed working history after the step (not rendered; for
    /// checkers such as `crate::invariants`).
    pub committed_history: Vec<Message>,
    /// The bytes of every JSON-lines session file just before the call (after the runner's
    /// restart, damage and application actions) and after the step, by path (not rendered; for
    /// checkers such as `crate::invariants`). Empty unless the session log is JSON lines.
    pub session_files: BTreeMap<String, SessionFileBytes>,
}

/// True for the id of a compaction request: a summary (`<id>/summary`, `<id>/summary.2`) or a
/// memory flush (`<id>/memory`).
pub fn is_compaction_call(request_id: &str) -> bool {
    request_id.contains("/summary") || request_id.ends_with("/memory")
}

/// One session file's bytes around a step's call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SessionFileBytes {
    /// Before the call; `None` when the file did not exist yet.
    pub before: Option<Vec<u8>>,
    /// After the step; `None` when the file does not exist.
    pub after: Option<Vec<u8>>,
}

impl StepRecord {
    /// The payloads of the session-log records of `kind` written during the step, parsed, in
    /// order, each with its record's `call_id` beside its own fields (the run a record belongs
    /// to is part of what it says).
    pub fn session_record_values(&self, kind: &str) -> Vec<serde_json::Value> {
        self.new_session_records
            .iter()
            .filter(|record| record.kind == kind)
            .map(|record| {
                let mut value = record.payload.value();
                if let Some(fields) = value.as_object_mut() {
                    fields
                        .entry("call_id")
                        .or_insert_with(|| serde_json::Value::from(record.call_id.clone()));
                }
                value
            })
            .collect()
    }

    /// True when the step's call could not write its session log (`session_log_failed`), so it
    /// acknowledged nothing it committed as durable.
    pub fn session_log_failed(&self) -> bool {
        self.events
            .iter()
            .any(|event| matches!(event.kind, EventKind::SessionLogFailed { .. }))
    }

    /// Manifests of every preparation in this step, in order.
    pub fn manifests(&self) -> impl Iterator<Item = (&ContextManifest, &'static str)> {
        self.events.iter().filter_map(|event| match &event.kind {
            EventKind::Custom {
                value: CustomValue::ContextBuild(build),
                ..
            } => Some((&build.manifest, build.status)),
            _ => None,
        })
    }

    /// Manifests of the reasoning preparations only (summary preparations excluded), in order.
    pub fn reasoning_manifests(&self) -> impl Iterator<Item = &ContextManifest> {
        self.manifests()
            .map(|(manifest, _)| manifest)
            .filter(|manifest| manifest.purpose == ctxbed_harness::model::Purpose::Reasoning)
    }

    /// Number of reasoning model calls started in this step (compaction's summary and memory
    /// flush calls excluded).
    pub fn model_calls(&self) -> u64 {
        self.count(|kind| {
            matches!(kind, EventKind::ModelCallStarted { request_id } if !is_compaction_call(request_id))
        })
    }

    /// Number of summary model calls started in this step.
    pub fn summary_calls(&self) -> u64 {
        self.count(|kind| {
            matches!(kind, EventKind::ModelCallStarted { request_id } if request_id.contains("/summary"))
        })
    }

    /// Number of memory flush model calls started in this step.
    pub fn memory_calls(&self) -> u64 {
        self.count(|kind| {
            matches!(kind, EventKind::ModelCallStarted { request_id } if request_id.ends_with("/memory"))
        })
    }

    /// The requests of one purpose the agent's model and the summary model received, in order
    /// for each model.
    pub fn requests_for(&self, purpose: ctxbed_harness::model::Purpose) -> Vec<&ModelRequest> {
        self.requests
            .iter()
            .chain(&self.summary_model_requests)
            .filter(|request| request.purpose == purpose)
            .collect()
    }

    /// The reasoning requests the model received (summary requests excluded).
    pub fn reasoning_requests(&self) -> Vec<&ModelRequest> {
        self.requests
            .iter()
            .filter(|request| request.purpose == ctxbed_harness::model::Purpose::Reasoning)
            .collect()
    }

    /// Number of tool results recorded, and how many of them were denials.
    pub fn tool_results(&self) -> (u64, u64) {
        let all = self.count(|kind| matches!(kind, EventKind::ToolResult { .. }));
        let denied = self.count(|kind| matches!(kind, EventKind::ToolResult { denied: true, .. }));
        (all, denied)
    }

    fn count(&self, matches: impl Fn(&EventKind) -> bool) -> u64 {
        self.events
            .iter()
            .filter(|event| matches(&event.kind))
            .count() as u64
    }
}
