//! A call's session bookkeeping: the committed state it starts from (from memory, or restored
//! from the session log), durable `message` records, checkpoints and flushes of the log.

use super::{Call, Sink, emit, lock};

use crate::agent::events::EventKind;
use crate::agent::{AgentError, AgentInner, RestoreError, SessionKey, SessionState};
use crate::message::Message;
use crate::runtime::RuntimeContext;
use crate::session::{Payload, SessionLogKey, SessionRecord};

/// What a call starts from: the committed history and the version it descends from.
pub(in crate::agent) struct SessionStart {
    pub(in crate::agent) history: Vec<Message>,
    pub(in crate::agent) version: u64,
}

impl SessionStart {
    /// Copies only what a call needs; the log's bookkeeping (one entry per message) stays put.
    fn of(state: &SessionState) -> Self {
        SessionStart {
            history: state.history.clone(),
            version: state.version,
        }
    }
}

/// The session's committed state: from memory, or restored from the session log the first time
/// this agent sees the session (a new process over the same storage). The state is installed
/// in memory before the call's start is returned, so a session is restored once.
pub(in crate::agent) async fn session_state(
    inner: &AgentInner,
    key: &SessionKey,
    runtime: &RuntimeContext,
    sink: &mut Sink<'_>,
) -> Result<SessionStart, RestoreError> {
    if let Some(state) = lock(&inner.sessions).get(key) {
        return Ok(SessionStart::of(state));
    }
    let log_key = SessionLogKey {
        agent_id: inner.agent_id.clone(),
        user_id: runtime.user_id.clone(),
        session_id: runtime.session_id.clone(),
    };
    let restored = match &inner.session_log {
        Some(log) => crate::agent::restore::restore(inner, log.as_ref(), &log_key, runtime).await?,
        None => None,
    };
    let mut sessions = lock(&inner.sessions);
    if let Some(state) = sessions.get(key) {
        // Another call of this agent restored or created the session meanwhile.
        return Ok(SessionStart::of(state));
    }
    let state = match restored {
        Some(restored) => {
            emit(
                inner,
                sink,
                EventKind::SessionRestored {
                    records: restored.records,
                    messages: restored.state.history.len(),
                    torn: restored.torn,
                },
            );
            restored.state
        }
        None => SessionState::default(),
    };
    let start = SessionStart::of(&state);
    sessions.insert(key.clone(), state);
    Ok(start)
}

/// Records what the session log lacks of a committed session state: each message that is new,
/// or changed in place (offload, pruning, argument truncation) since it was logged, as a
/// `message` record; then a `checkpoint` naming the working history, when its ids, the id
/// counter or the task revision moved since the last one.
///
/// `previous` is the history committed before, all of it logged already: a message equal to the
/// one at its position there is skipped without serialising it.
pub(in crate::agent) fn write_durable(
    inner: &AgentInner,
    key: &SessionLogKey,
    call_id: &str,
    state: &mut SessionState,
    previous: &[Message],
) {
    let Some(log) = &inner.session_log else {
        return;
    };
    let record = |kind: &str, payload: serde_json::Value| SessionRecord {
        kind: kind.to_string(),
        call_id: call_id.to_string(),
        payload: payload.into(),
    };
    log_messages(
        log.as_ref(),
        key,
        call_id,
        &mut state.logged,
        &state.history,
        previous,
    );
    let runtime = RuntimeContext {
        user_id: key.user_id.clone(),
        session_id: key.session_id.clone(),
        ..RuntimeContext::default()
    };
    let task = inner.task.state_of(&runtime).snapshot();
    let print =
        crate::agent::restore::checkpoint_print(&state.history, state.messages_created, &task);
    if state.checkpointed != Some(print) {
        state.checkpointed = Some(print);
        state.checkpointed_task_revision = task.revision();
        log.append(
            key,
            record(
                "checkpoint",
                crate::agent::restore::checkpoint_payload(
                    &state.history,
                    state.messages_created,
                    &task,
                ),
            ),
        );
    }
}

/// Flushes the session log, when there is one. A failure of `key`'s own session is returned
/// (its detail); another session's failure is left to that session's writers.
pub(in crate::agent) async fn flush_session(
    inner: &AgentInner,
    key: &SessionLogKey,
    writer: &str,
) -> Result<(), String> {
    let Some(log) = &inner.session_log else {
        return Ok(());
    };
    let Err(error) = log.flush().await else {
        return Ok(());
    };
    let Some((_, own)) = error.failed.iter().find(|(failed, _)| failed == key) else {
        tracing::warn!(writer, %error, "another session's log could not be flushed; its records stay pending");
        return Ok(());
    };
    let detail = own.to_string();
    tracing::warn!(writer, %detail, "session log flush failed; records stay pending");
    Err(detail)
}

/// Appends a `message` record for each of `messages` whose logged version differs from it
/// (new, or changed in place), and returns their ids. A message equal to the one at the same
/// position of `unchanged` (a history whose messages are all logged) is skipped cheaply.
pub(super) fn log_messages(
    log: &dyn crate::session::SessionLog,
    key: &SessionLogKey,
    call_id: &str,
    logged: &mut std::collections::BTreeMap<String, u64>,
    messages: &[Message],
    unchanged: &[Message],
) -> Vec<String> {
    let mut written = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if unchanged.get(index) == Some(message) && logged.contains_key(&message.id) {
            continue;
        }
        let payload = crate::agent::restore::message_payload(message);
        let print = crate::agent::restore::fingerprint_payload(&payload);
        if logged.get(&message.id) == Some(&print) {
            continue;
        }
        logged.insert(message.id.clone(), print);
        written.push(message.id.clone());
        log.append(
            key,
            SessionRecord {
                kind: crate::session::MESSAGE_RECORD.to_string(),
                call_id: call_id.to_string(),
                payload,
            },
        );
    }
    written
}

impl Call<'_> {
    pub(super) fn log_key(&self) -> SessionLogKey {
        SessionLogKey {
            agent_id: self.inner.agent_id.clone(),
            user_id: self.runtime.user_id.clone(),
            session_id: self.runtime.session_id.clone(),
        }
    }

    /// Records a checkpoint of the session's committed state when the task revision moved
    /// since the last one (nothing when it did not); the working history is not committed.
    pub(super) fn checkpoint_task_state(&self) {
        let log_key = self.log_key();
        let revision = self.inner.task.state_of(&self.runtime).revision();
        let mut sessions = lock(&self.inner.sessions);
        let state = sessions.entry(self.key.clone()).or_default();
        if revision == state.checkpointed_task_revision {
            return;
        }
        let committed = state.history.clone();
        write_durable(self.inner, &log_key, &self.call_id, state, &committed);
    }

    /// Writes pending session-log records to durable storage (a no-op for the in-memory log).
    /// A failure keeps the records pending for the next flush. When this call's own session
    /// failed, what the call committed is not durable: the failure is reported as an event and
    /// returned, so the call never acknowledges a commit that a restart would lose. Another
    /// session's failure is that session's calls' concern.
    pub(super) async fn flush_log(&self, sink: &mut Sink<'_>) -> Result<(), AgentError> {
        let Err(detail) = flush_session(self.inner, &self.log_key(), &self.call_id).await else {
            return Ok(());
        };
        emit(
            self.inner,
            sink,
            EventKind::SessionLogFailed {
                detail: detail.clone(),
            },
        );
        Err(AgentError::SessionLog { detail })
    }

    /// Appends a record to the session log, when there is one.
    pub(in crate::agent) fn record(&self, kind: &str, payload: impl Into<Payload>) {
        let Some(log) = &self.inner.session_log else {
            return;
        };
        log.append(
            &self.log_key(),
            SessionRecord {
                kind: kind.to_string(),
                call_id: self.call_id.clone(),
                payload: payload.into(),
            },
        );
    }
}
