//! The session log: committed facts of each session, in order.
//!
//! The agent records `run/start` and `run/end`, `model/start` and `model/end`, `tool/call`
//! (call id, tool, status ok/error/denied, output size) per executed tool call, one
//! `context/build` per preparation (payload `{"event": {"name": "context_build", "value":
//! {..., "context_manifest": {...}}}}`), `compaction/start` and `compaction/end`, a `message`
//! record for every committed message (again, as a new version, when compaction or offload
//! changes it in place), a `checkpoint` record naming the working history after each commit that
//! changed it (with the task state), and `history/conflict` when a commit lost a race.
//! [`MemorySessionLog`] keeps records in memory, keyed by agent, user and session;
//! [`jsonl::JsonlSessionLog`] commits them to one JSON-lines file per session in workspace
//! storage when flushed, and restores them, ignoring a record torn by a crash mid-write.
//! [`SessionLog::load`] is what a new agent reads to restore a session.
//!
//! **Invariant:** only `message` and `checkpoint` records hold conversation text (the durable
//! history); every other record holds manifests, kinds and figures, never prompt text or error
//! messages.

use std::collections::BTreeMap;
use std::sync::Mutex;

use futures_util::future::BoxFuture;

pub mod jsonl;
mod payload;

pub use payload::Payload;

pub use jsonl::{FlushError, JsonlSessionLog, SessionLogError, TornRecord};

/// One committed record.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// e.g. `context/build`.
    pub kind: String,
    /// The agent call (`call-N`) the record belongs to.
    pub call_id: String,
    /// Shared: a record never changes once written, so copies of a log share their payloads.
    pub payload: Payload,
}

/// Identifies one session's log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SessionLogKey {
    pub agent_id: String,
    pub user_id: Option<String>,
    pub session_id: Option<String>,
}

/// What [`SessionLog::load`] found for a session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// Every committed record of the session, in order.
    pub records: Vec<SessionRecord>,
    /// A last record torn by a crash mid-write, ignored.
    pub torn: Option<TornRecord>,
}

/// Where session records go.
pub trait SessionLog: Send + Sync {
    /// Appends a record to a session's log.
    fn append(&self, key: &SessionLogKey, record: SessionRecord);
    /// Every record of a session, in order.
    fn records(&self, key: &SessionLogKey) -> Vec<SessionRecord>;
    /// How many records a session has (what `records` would return, without copying them).
    fn record_count(&self, key: &SessionLogKey) -> usize {
        self.records(key).len()
    }
    /// Shows `visit` each record of a session from index `start` on, in order, without copying
    /// them. `visit` may run while the log holds its lock: it must not call back into the log.
    fn for_each_from(
        &self,
        key: &SessionLogKey,
        start: usize,
        visit: &mut dyn FnMut(&SessionRecord),
    ) {
        self.records(key).iter().skip(start).for_each(visit);
    }
    /// Commits appended records to durable storage and returns how many it committed. A log
    /// that keeps nothing outside memory has nothing to do.
    ///
    /// # Errors
    /// The sessions whose records could not be written; they stay pending.
    fn flush(&self) -> BoxFuture<'_, Result<usize, FlushError>> {
        Box::pin(async { Ok(0) })
    }
    /// Reads a session's committed records from durable storage, so a new agent over the same
    /// storage can restore it. A log that keeps nothing outside memory returns what it holds.
    ///
    /// # Errors
    /// The records could not be read, or are corrupt before their last line.
    fn load<'a>(
        &'a self,
        key: &'a SessionLogKey,
    ) -> BoxFuture<'a, Result<Loaded, SessionLogError>> {
        Box::pin(async move {
            Ok(Loaded {
                records: self.records(key),
                torn: None,
            })
        })
    }
    /// The sessions this log holds for one agent and user, in order (`None` is the session of
    /// calls made without a session id).
    ///
    /// # Errors
    /// Durable storage could not be listed or read.
    fn sessions<'a>(
        &'a self,
        agent_id: &'a str,
        user_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Option<String>>, SessionLogError>>;
}

/// The durable conversation of a session: the latest version of every message its `message`
/// records hold, in the order the messages were first recorded. Compaction never shortens it.
///
/// # Errors
/// The 1-based position of a `message` record that is not a message, and why.
pub fn durable_history(
    records: &[SessionRecord],
) -> Result<Vec<crate::message::Message>, (usize, String)> {
    let mut position: BTreeMap<String, usize> = BTreeMap::new();
    let mut messages: Vec<crate::message::Message> = Vec::new();
    for (index, record) in records.iter().enumerate() {
        if record.kind != MESSAGE_RECORD {
            continue;
        }
        let message: crate::message::Message = record
            .payload
            .parse()
            .map_err(|error| (index + 1, error.to_string()))?;
        match position.get(&message.id) {
            Some(&at) => messages[at] = message,
            None => {
                position.insert(message.id.clone(), messages.len());
                messages.push(message);
            }
        }
    }
    Ok(messages)
}

/// The kind of the records holding committed messages.
pub const MESSAGE_RECORD: &str = "message";

/// The kind of the records naming the working history after a commit.
pub const CHECKPOINT_RECORD: &str = "checkpoint";

/// An in-memory session log.
#[derive(Debug, Default)]
pub struct MemorySessionLog {
    sessions: Mutex<BTreeMap<SessionLogKey, Vec<SessionRecord>>>,
}

impl MemorySessionLog {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<SessionLogKey, Vec<SessionRecord>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SessionLog for MemorySessionLog {
    fn append(&self, key: &SessionLogKey, record: SessionRecord) {
        self.lock().entry(key.clone()).or_default().push(record);
    }

    fn records(&self, key: &SessionLogKey) -> Vec<SessionRecord> {
        self.lock().get(key).cloned().unwrap_or_default()
    }

    fn record_count(&self, key: &SessionLogKey) -> usize {
        self.lock().get(key).map_or(0, Vec::len)
    }

    fn for_each_from(
        &self,
        key: &SessionLogKey,
        start: usize,
        visit: &mut dyn FnMut(&SessionRecord),
    ) {
        if let Some(records) = self
            .lock()
            .get(key)
            .and_then(|records| records.get(start..))
        {
            records.iter().for_each(visit);
        }
    }

    fn sessions<'a>(
        &'a self,
        agent_id: &'a str,
        user_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Option<String>>, SessionLogError>> {
        let sessions = self
            .lock()
            .keys()
            .filter(|key| key.agent_id == agent_id && key.user_id.as_deref() == user_id)
            .map(|key| key.session_id.clone())
            .collect();
        Box::pin(async move { Ok(sessions) })
    }
}
