//! Nothing committed is lost (I5, across steps): between two steps of one session, an
//! acknowledged committed message disappears only through a compaction recorded in the later
//! step's manifests.

use std::collections::{BTreeMap, BTreeSet};

use super::{Violation, ViolationKind};
use crate::scenario::check::outcome::RunOutput;
use crate::scenario::format::file::{Scenario, SessionStorage};
use crate::scenario::run::record::StepRecord;
use ctxbed_harness::agent::AgentError;
use ctxbed_harness::context::Transform;

/// (user id, session id), as the runner keys sessions.
type Key = (Option<String>, Option<String>);

/// Between two steps of one session, an acknowledged committed message disappears only through
/// a compaction recorded in the later step's manifests.
///
/// Acknowledged means durable as far as the agent said: a step with a `session_log_failed`
/// event acknowledged nothing, so its commits are not held against later steps (a restart may
/// lose them; the next acknowledged step of the session holds its history again). History the
/// application loaded is held from the start, except across a restart that comes before any
/// acknowledged step of its session with JSON-lines storage: until then no call has written it.
/// A step that could not restore its session is not compared.
pub(super) fn nothing_lost(scenario: &Scenario, output: &RunOutput) -> Vec<Violation> {
    let mut baseline = Baseline::loaded(scenario);
    let mut found = Vec::new();
    for step in &output.trace.steps {
        let key = (step.spec.user.clone(), step.spec.session.clone());
        if step.spec.restart.is_some() && scenario.agent.session_storage == SessionStorage::Jsonl {
            baseline.restart();
        }
        if matches!(step.outcome, Err(AgentError::Restore(_))) {
            // The call could not read its session back: it has no working history to compare
            // and committed nothing. The log it could not read is held unchanged by I10.
            continue;
        }
        let compacted = step.manifests().any(|(manifest, _)| {
            manifest
                .transforms
                .iter()
                .any(|t| matches!(t, Transform::HistoryCompaction { .. }))
        });
        // A compaction in an unacknowledged step since the baseline explains a loss too.
        let compacted = compacted || baseline.compacted_since.contains(&key);
        if !compacted && let Some(lost) = baseline.lost_by(&key, step) {
            found.push(Violation {
                kind: ViolationKind::CommittedMessageLost,
                step: Some(step.index),
                detail: format!("committed message `{lost}` is gone and nothing was compacted"),
            });
        }
        baseline.advance(key, step, compacted);
    }
    found
}

/// What each session is held to: its last acknowledged committed history.
struct Baseline {
    /// The ids of each session's last acknowledged committed history.
    acknowledged: BTreeMap<Key, Vec<String>>,
    /// Sessions whose baseline is still the history the application loaded, which no call has
    /// written yet.
    loaded_unconfirmed: BTreeSet<Key>,
    /// Sessions with a compaction in an unacknowledged step since their baseline.
    compacted_since: BTreeSet<Key>,
}

impl Baseline {
    /// The history the application loaded, by session (a history with no user or session of its
    /// own belongs to the first step's).
    fn loaded(scenario: &Scenario) -> Self {
        let mut baseline = Baseline {
            acknowledged: BTreeMap::new(),
            loaded_unconfirmed: BTreeSet::new(),
            compacted_since: BTreeSet::new(),
        };
        let first = scenario.steps.first();
        for history in &scenario.history {
            let key = (
                history
                    .user
                    .clone()
                    .or_else(|| first.and_then(|s| s.user.clone())),
                history
                    .session
                    .clone()
                    .or_else(|| first.and_then(|s| s.session.clone())),
            );
            baseline
                .acknowledged
                .entry(key.clone())
                .or_default()
                .extend(history.messages.iter().map(|m| m.id.clone()));
            baseline.loaded_unconfirmed.insert(key);
        }
        baseline
    }

    /// A restart with JSON-lines storage before any call wrote the loaded history may lose it
    /// (an in-memory log survives restarts whole).
    fn restart(&mut self) {
        for unconfirmed in std::mem::take(&mut self.loaded_unconfirmed) {
            self.acknowledged.remove(&unconfirmed);
        }
    }

    /// The first message of the session's baseline that the step's committed history lacks.
    fn lost_by<'a>(&'a self, key: &Key, step: &StepRecord) -> Option<&'a String> {
        let now: BTreeSet<&str> = step
            .committed_history
            .iter()
            .map(|m| m.id.as_str())
            .collect();
        let before = self.acknowledged.get(key)?;
        before.iter().find(|id| !now.contains(id.as_str()))
    }

    /// After a step: an acknowledged step becomes its session's baseline; an unacknowledged
    /// one only remembers a compaction.
    fn advance(&mut self, key: Key, step: &StepRecord, compacted: bool) {
        if step.session_log_failed() {
            if compacted {
                self.compacted_since.insert(key);
            }
        } else {
            self.compacted_since.remove(&key);
            self.loaded_unconfirmed.remove(&key);
            self.acknowledged.insert(
                key,
                step.committed_history
                    .iter()
                    .map(|m| m.id.clone())
                    .collect(),
            );
        }
    }
}
