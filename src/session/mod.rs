//! The session log: committed facts of each session, in order.
//!
//! Today it records one `context/build` record per preparation (successful or failed), whose
//! payload is `{"event": {"name": "context_build", "value": {..., "context_manifest": {...}}}}`.
//! [`MemorySessionLog`] keeps records in memory, keyed by agent, user and session;
//! [`jsonl::JsonlSessionLog`] commits them to one JSON-lines file per session in workspace
//! storage when flushed, and restores them, ignoring a record torn by a crash mid-write.
//!
//! **Invariant:** records hold manifests and kinds, never prompt text or error messages.

use std::collections::BTreeMap;
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde_json::Value;

pub mod jsonl;

pub use jsonl::{FlushError, JsonlSessionLog};

/// One committed record.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    /// e.g. `context/build`.
    pub kind: String,
    /// The agent call (`call-N`) the record belongs to.
    pub call_id: String,
    pub payload: Value,
}

/// Identifies one session's log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SessionLogKey {
    pub agent_id: String,
    pub user_id: Option<String>,
    pub session_id: Option<String>,
}

/// Where session records go.
pub trait SessionLog: Send + Sync {
    /// Appends a record to a session's log.
    fn append(&self, key: &SessionLogKey, record: SessionRecord);
    /// Every record of a session, in order.
    fn records(&self, key: &SessionLogKey) -> Vec<SessionRecord>;
    /// Commits appended records to durable storage and returns how many it committed. A log
    /// that keeps nothing outside memory has nothing to do.
    ///
    /// # Errors
    /// The sessions whose records could not be written; they stay pending.
    fn flush(&self) -> BoxFuture<'_, Result<usize, FlushError>> {
        Box::pin(async { Ok(0) })
    }
}

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
}
