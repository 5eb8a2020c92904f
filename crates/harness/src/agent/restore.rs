//! Restoring a session from its log, and the fingerprints and checkpoints that make it exact.
//!
//! A commit records each new or changed message as a `message` record and, when the working
//! history's ids, the id counter or the task revision moved, a `checkpoint` record: the ids of
//! the working history in order, the id counter and (once task state exists) the task state.
//! Restoring reads the session's committed records, takes the latest version of every message,
//! and rebuilds the working history from the last checkpoint. A log with messages and no
//! checkpoint (written before a first checkpoint could be) gives every message in order.
//!
//! **Invariant:** a restore never invents or drops a committed message: every id a checkpoint
//! names must have a `message` record, or the restore fails and leaves the log as it is.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Value, json};

use super::{AgentInner, SessionState};
use crate::message::Message;
use crate::runtime::RuntimeContext;
use crate::session::{
    CHECKPOINT_RECORD, MESSAGE_RECORD, Payload, SessionLog, SessionLogError, SessionLogKey,
    TornRecord, durable_history,
};
use crate::task::{SharedTaskState, TaskContextState};

/// Why a session could not be restored from its log. The log is left as it is.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum RestoreError {
    #[error(transparent)]
    Log(#[from] SessionLogError),
    #[error(
        "session log record {index} (`{kind}`) is not valid: {reason}; the log is left as it is — repair or move the session file to start the session afresh"
    )]
    Invalid {
        /// 1-based position among the session's committed records.
        index: usize,
        kind: String,
        reason: String,
    },
}

/// A session rebuilt from its log.
pub(super) struct Restored {
    pub state: SessionState,
    /// Committed records read.
    pub records: usize,
    pub torn: Option<TornRecord>,
}

/// A fingerprint of a message's whole content (its JSON form), to notice in-place changes.
pub(super) fn fingerprint(message: &Message) -> u64 {
    fingerprint_payload(&message_payload(message))
}

/// The fingerprint of the message a `message` record's payload holds, from its text.
pub(super) fn fingerprint_payload(payload: &Payload) -> u64 {
    let mut hasher = DefaultHasher::new();
    hasher.write(payload.json().as_bytes());
    hasher.finish()
}

/// A message as a `message` record's payload.
pub(super) fn message_payload(message: &Message) -> Payload {
    // A message holds no map with non-string keys, so it serialises.
    Payload::new(message).unwrap_or_else(|_| Payload::from(Value::Null))
}

/// A fingerprint of what a checkpoint says.
pub(super) fn checkpoint_print(
    history: &[Message],
    messages_created: u64,
    task: &TaskContextState,
) -> u64 {
    let mut hasher = DefaultHasher::new();
    for message in history {
        message.id.hash(&mut hasher);
    }
    messages_created.hash(&mut hasher);
    task.revision().hash(&mut hasher);
    hasher.finish()
}

/// The payload of a `checkpoint` record.
pub(super) fn checkpoint_payload(
    history: &[Message],
    messages_created: u64,
    task: &TaskContextState,
) -> Value {
    let ids: Vec<&str> = history.iter().map(|m| m.id.as_str()).collect();
    let mut payload = json!({ "history": ids, "messages_created": messages_created });
    if task.revision() > 0 {
        payload["task"] = task.to_checkpoint();
    }
    payload
}

/// Reads a session's committed records and rebuilds its state; `None` when the log holds
/// nothing for it. The session's task state is restored only while it is untouched (revision
/// 0): live state the application already set is never overwritten.
pub(super) async fn restore(
    inner: &AgentInner,
    log: &dyn SessionLog,
    key: &SessionLogKey,
    runtime: &RuntimeContext,
) -> Result<Option<Restored>, RestoreError> {
    let loaded = log.load(key).await?;
    if loaded.records.is_empty() && loaded.torn.is_none() {
        return Ok(None);
    }
    let durable =
        durable_history(&loaded.records).map_err(|(index, reason)| RestoreError::Invalid {
            index,
            kind: MESSAGE_RECORD.to_string(),
            reason,
        })?;
    let order: Vec<String> = durable.iter().map(|m| m.id.clone()).collect();
    let versions: BTreeMap<String, Message> =
        durable.into_iter().map(|m| (m.id.clone(), m)).collect();
    let checkpoint: Option<(usize, Value)> = loaded
        .records
        .iter()
        .enumerate()
        .rev()
        .find(|(_, record)| record.kind == CHECKPOINT_RECORD)
        .map(|(index, record)| (index, record.payload.value()));
    let read = match checkpoint {
        None => Checkpoint {
            ids: order,
            messages_created: 0,
            task: None,
        },
        Some((index, ref payload)) => read_checkpoint(index, payload, &versions)?,
    };
    let mut state = SessionState::default();
    for id in &read.ids {
        if let Some(message) = versions.get(id) {
            state.history.push(message.clone());
        }
    }
    state.messages_created = read.messages_created.max(highest_id(&versions));
    state.logged = versions
        .iter()
        .map(|(id, message)| (id.clone(), fingerprint(message)))
        .collect();
    let checkpointed_task_revision = read.task.as_ref().map_or(0, |task| task.revision());
    let shared = inner.task.state_of(runtime);
    if let Some(task) = read.task {
        adopt_task(&shared, task, key);
    }
    if checkpoint.is_some() {
        state.checkpointed_task_revision = checkpointed_task_revision;
        state.checkpointed = Some(checkpoint_print(
            &state.history,
            read.messages_created,
            &shared.snapshot(),
        ));
    }
    Ok(Some(Restored {
        state,
        records: loaded.records.len(),
        torn: loaded.torn,
    }))
}

/// What the last checkpoint says (or, without one, the order the messages were logged in).
struct Checkpoint {
    /// The working history's ids, in order.
    ids: Vec<String>,
    /// The id counter (0 without a checkpoint).
    messages_created: u64,
    task: Option<TaskContextState>,
}

/// Reads the checkpoint record at `index` (0-based among the committed records). Every id it
/// names must have a `message` record among `versions`.
fn read_checkpoint(
    index: usize,
    payload: &Value,
    versions: &BTreeMap<String, Message>,
) -> Result<Checkpoint, RestoreError> {
    let invalid = |reason: &str| RestoreError::Invalid {
        index: index + 1,
        kind: "checkpoint".to_string(),
        reason: reason.to_string(),
    };
    let ids: Vec<String> = payload
        .get("history")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("`history` is missing or not a list"))?
        .iter()
        .map(|id| id.as_str().map(str::to_string))
        .collect::<Option<_>>()
        .ok_or_else(|| invalid("`history` holds a non-string id"))?;
    let messages_created = payload
        .get("messages_created")
        .and_then(Value::as_u64)
        .ok_or_else(|| invalid("`messages_created` is missing or not a count"))?;
    let task = match payload.get("task") {
        Some(value) => Some(
            TaskContextState::from_checkpoint(value)
                .map_err(|reason| invalid(&format!("task state: {reason}")))?,
        ),
        None => None,
    };
    for id in &ids {
        if !versions.contains_key(id) {
            return Err(invalid(&format!("message `{id}` has no `message` record")));
        }
    }
    Ok(Checkpoint {
        ids,
        messages_created,
        task,
    })
}

/// The highest `m<N>` message id logged: ids handed out after the checkpoint (a call that
/// conflicted or crashed) are never reused.
fn highest_id(versions: &BTreeMap<String, Message>) -> u64 {
    versions
        .keys()
        .filter_map(|id| id.strip_prefix('m').and_then(|n| n.parse::<u64>().ok()))
        .max()
        .unwrap_or(0)
}

/// Restores the checkpointed task state into the session's live state while that is untouched
/// (revision 0); otherwise keeps the live state and warns.
fn adopt_task(shared: &SharedTaskState, task: TaskContextState, key: &SessionLogKey) {
    if shared.revision() == 0 {
        shared.replace(task);
    } else {
        tracing::warn!(
            user_id = ?key.user_id,
            session_id = ?key.session_id,
            live_revision = shared.revision(),
            checkpoint_revision = task.revision(),
            "the session's task state changed before the session was opened, so its \
             checkpointed task state (Todo list, requirements, reports) is not restored; \
             call HarnessAgent::open_session before changing a session's task state"
        );
    }
}
