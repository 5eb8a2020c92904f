//! A session log kept as JSON lines in workspace [`Storage`]: one file per session, one record
//! per line, appended in order.
//!
//! **Layout.** `sessions/<agent>/<user>/<session>.jsonl` ([`session_path`]). Each id is encoded
//! into one safe path segment: ASCII letters, digits, `_` and `-` stay; every other byte becomes
//! `~XX` (upper-case hex); a missing id is `~none`, an empty one `~empty`; an encoding longer
//! than [`SESSION_NAME_CHARS_MAX`](crate::limits::SESSION_NAME_CHARS_MAX) keeps a prefix and
//! adds `~h` and a content hash. Distinct ids give distinct files.
//!
//! **Appending and flushing.** [`SessionLog::append`] stays synchronous and infallible: the loop
//! records facts from synchronous code and a log write must never fail a run. Appended records
//! wait in memory until [`JsonlSessionLog::flush`] (or [`SessionLog::flush`]) writes them; a
//! record is *committed* once the flush that carried it succeeded. A failed flush keeps the
//! records pending for the next flush, and the file keeps its previous content (storage writes
//! replace a file whole, and an append adds all its bytes or none). When the store tracks
//! [`Revision`]s and the file is still at the revision this log's last write gave it, a flush
//! appends the pending records in place ([`Storage::append_at`]). Otherwise (the first flush of
//! a session, a store without revisions, another writer) it rewrites the file: read, keep every
//! committed record, add the pending ones, write. Files are bounded by [`SESSION_LOG_BYTES_MAX`].
//!
//! **Torn records.** A crash in the middle of a write can leave a last line without its newline,
//! or a last line that is not a record. [`decode`] detects it and ignores it ([`TornRecord`]):
//! a record counts only once its whole line and newline were written, so nothing committed
//! before it is lost, and the next flush drops the fragment before appending. An invalid line
//! *followed by* valid records is not a torn write but corruption: reading reports it, and
//! flushing refuses to rewrite the file.
//!
//! ```
//! use std::sync::Arc;
//! use ctxbed_harness::session::{SessionLog, SessionLogKey, SessionRecord};
//! use ctxbed_harness::session::jsonl::{JsonlSessionLog, session_path};
//! use ctxbed_harness::storage::{MemoryStorage, Storage};
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let storage = Arc::new(MemoryStorage::new());
//!     let key = SessionLogKey { agent_id: "fixer".into(), user_id: Some("alice".into()), session_id: None };
//!     let log = JsonlSessionLog::new(storage.clone());
//!     let record = SessionRecord { kind: "run/start".into(), call_id: "call-1".into(), payload: serde_json::json!({}).into() };
//!     log.append(&key, record.clone());
//!     assert_eq!(log.pending(&key), 1);
//!     assert_eq!(log.flush().await.unwrap(), 1);
//!     assert_eq!(session_path(&key).as_str(), "sessions/fixer/alice/~none.jsonl");
//!
//!     // A later process restores the committed records.
//!     let restored = JsonlSessionLog::new(storage).restore(&key).await.unwrap();
//!     assert_eq!(restored.records, vec![record]);
//!     assert!(restored.torn.is_none());
//! });
//! ```

mod lines;
mod path;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{Loaded, SessionLog, SessionLogKey, SessionRecord};
use crate::limits::SESSION_LOG_BYTES_MAX;
use crate::storage::{Revision, Storage, StorageError, WorkspacePath};

use lines::encode_record_into;
pub use lines::{decode, encode_record, readable_records};
pub use path::session_path;
use path::{decode_segment, segment};

/// The workspace directory holding session logs.
pub const SESSIONS_DIR: &str = "sessions";

/// Why a session log file could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionLogError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(
        "session log `{path}` would hold {bytes} bytes; at most {max} — start a new session to keep flushes fast"
    )]
    TooLarge {
        path: String,
        bytes: usize,
        max: usize,
    },
    #[error(
        "session log `{path}`: line {line} is unreadable and lines follow it, so this is corruption, not a torn write; the log is left as it is — repair or remove line {line}, or start a new session ({reason})"
    )]
    Corrupt {
        path: String,
        line: usize,
        reason: String,
    },
}

/// Flushing some sessions failed; their records stay pending for the next flush.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} session log(s) could not be flushed; first: {}", .failed.len(), .failed.first().map(|(_, e)| e.to_string()).unwrap_or_default())]
pub struct FlushError {
    /// Records committed by the sessions that did flush.
    pub flushed: usize,
    /// Each session that failed, in key order, and why.
    pub failed: Vec<(SessionLogKey, SessionLogError)>,
}

/// A last line ignored because its write did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornRecord {
    /// 1-based line number.
    pub line: usize,
    /// Bytes of the fragment.
    pub bytes: usize,
    pub reason: TornReason,
}

/// Why the last line is not a committed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TornReason {
    /// The line has no terminating newline.
    NoNewline,
    /// The line ends with a newline but is not a record.
    InvalidRecord,
}

/// The committed records of a file, and the torn fragment ignored after them.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub records: Vec<SessionRecord>,
    /// Bytes of the file that hold committed records (a prefix of it).
    pub committed_bytes: usize,
    pub torn: Option<TornRecord>,
}

/// What [`JsonlSessionLog::restore`] read.
#[derive(Debug, Clone, PartialEq)]
pub struct Restored {
    /// The committed records of the file, in order.
    pub records: Vec<SessionRecord>,
    pub torn: Option<TornRecord>,
}

/// A [`SessionLog`] that commits records to JSON-lines files in [`Storage`] on flush.
pub struct JsonlSessionLog {
    storage: Arc<dyn Storage>,
    journals: Mutex<BTreeMap<SessionLogKey, Journal>>,
    /// Serialises flushes, so two never write the same records twice.
    flushing: tokio::sync::Mutex<()>,
}

/// The records known for one session; `records[flushed..]` are pending.
#[derive(Debug, Clone, Default)]
struct Journal {
    records: Vec<SessionRecord>,
    flushed: usize,
    /// What this log knows of the session's file without reading it.
    file: KnownFile,
}

/// What a log knows of a session's file from its own last read or write of it.
#[derive(Debug, Clone, Default)]
enum KnownFile {
    /// Nothing: the next flush reads the file and decodes it.
    #[default]
    Unknown,
    /// The file's committed bytes as this log last read or wrote them, for a store that does
    /// not track revisions: a flush that finds the file unchanged appends to it without
    /// decoding it again.
    Bytes(Arc<Vec<u8>>),
    /// The file as this log last wrote it, `bytes` long, holding only committed records: while
    /// the store still has it at this revision, a flush appends in place without reading it.
    Revision { revision: Revision, bytes: usize },
}

impl std::fmt::Debug for JsonlSessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonlSessionLog")
            .field("sessions", &self.lock().len())
            .finish_non_exhaustive()
    }
}

impl JsonlSessionLog {
    /// A log over this storage; nothing is read until [`restore`](Self::restore).
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        JsonlSessionLog {
            storage,
            journals: Mutex::new(BTreeMap::new()),
            flushing: tokio::sync::Mutex::new(()),
        }
    }

    /// Records appended to a session and not yet committed.
    pub fn pending(&self, key: &SessionLogKey) -> usize {
        self.lock()
            .get(key)
            .map_or(0, |journal| journal.records.len() - journal.flushed)
    }

    /// Reads a session's committed records from its file and makes them this log's view of the
    /// session, followed by any records appended here and not yet flushed.
    ///
    /// # Errors
    /// A failed read, a file over [`SESSION_LOG_BYTES_MAX`], or corruption before the last line.
    pub async fn restore(&self, key: &SessionLogKey) -> Result<Restored, SessionLogError> {
        let _flushing = self.flushing.lock().await;
        let path = session_path(key);
        let mut bytes = read_bounded(self.storage.as_ref(), &path).await?;
        let decoded = decode(&path, &bytes)?;
        // The next flush drops a torn tail: it appends to the committed prefix.
        bytes.truncate(decoded.committed_bytes);
        let mut journals = self.lock();
        let journal = journals.entry(key.clone()).or_default();
        journal.file = KnownFile::Bytes(Arc::new(bytes));
        let pending = journal.records.split_off(journal.flushed);
        journal.records = decoded.records.clone();
        journal.flushed = journal.records.len();
        journal.records.extend(pending);
        Ok(Restored {
            records: decoded.records,
            torn: decoded.torn,
        })
    }

    /// Commits every session's pending records, in key order, and returns how many records
    /// were committed. A session that fails keeps its records pending; the others still flush.
    ///
    /// # Errors
    /// [`FlushError`] listing each session that failed.
    pub async fn flush(&self) -> Result<usize, FlushError> {
        let _flushing = self.flushing.lock().await;
        let keys: Vec<SessionLogKey> = self
            .lock()
            .iter()
            .filter(|(_, journal)| journal.flushed < journal.records.len())
            .map(|(key, _)| key.clone())
            .collect();
        let mut flushed = 0;
        let mut failed = Vec::new();
        for key in keys {
            match self.flush_locked(&key).await {
                Ok(count) => flushed += count,
                Err(error) => failed.push((key, error)),
            }
        }
        if failed.is_empty() {
            Ok(flushed)
        } else {
            Err(FlushError { flushed, failed })
        }
    }

    /// Commits one session's pending records; the caller holds `flushing`.
    async fn flush_locked(&self, key: &SessionLogKey) -> Result<usize, SessionLogError> {
        // Pending records are encoded under the lock, so they are not copied out first.
        let (start, pending, encoded, known) = {
            let journals = self.lock();
            let Some(journal) = journals.get(key) else {
                return Ok(0);
            };
            let mut encoded = Vec::new();
            for record in &journal.records[journal.flushed..] {
                encode_record_into(record, &mut encoded);
            }
            (
                journal.flushed,
                journal.records.len() - journal.flushed,
                encoded,
                journal.file.clone(),
            )
        };
        if pending == 0 {
            return Ok(0);
        }
        let path = session_path(key);
        if let KnownFile::Revision { revision, bytes } = known {
            let total = bytes + encoded.len();
            check_size(&path, total)?;
            // The file is still as this log left it: only the new lines are written.
            if let Some(revision) = self.storage.append_at(&path, revision, &encoded).await? {
                let file = KnownFile::Revision {
                    revision,
                    bytes: total,
                };
                return Ok(self.committed(key, start, pending, file));
            }
        }
        let mut bytes = read_bounded(self.storage.as_ref(), &path).await?;
        // Decoding is the costly part of a rewrite; the file is decoded again only when it is
        // not what this log last left there (first use, or another writer).
        let unchanged = match &known {
            KnownFile::Bytes(committed) => committed.as_slice() == bytes.as_slice(),
            KnownFile::Unknown | KnownFile::Revision { .. } => false,
        };
        if !unchanged {
            let decoded = decode(&path, &bytes)?;
            bytes.truncate(decoded.committed_bytes);
        }
        bytes.extend_from_slice(&encoded);
        check_size(&path, bytes.len())?;
        let total = bytes.len();
        let file = match self.storage.write_revised(&path, bytes.clone()).await? {
            Some(revision) => KnownFile::Revision {
                revision,
                bytes: total,
            },
            None => KnownFile::Bytes(Arc::new(bytes)),
        };
        Ok(self.committed(key, start, pending, file))
    }

    /// Marks `pending` records from `start` committed, the file now being `file`.
    fn committed(
        &self,
        key: &SessionLogKey,
        start: usize,
        pending: usize,
        file: KnownFile,
    ) -> usize {
        let mut journals = self.lock();
        let journal = journals.entry(key.clone()).or_default();
        assert_eq!(journal.flushed, start, "flushes are serialised");
        journal.flushed = start + pending;
        journal.file = file;
        pending
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<SessionLogKey, Journal>> {
        self.journals.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SessionLog for JsonlSessionLog {
    fn append(&self, key: &SessionLogKey, record: SessionRecord) {
        self.lock()
            .entry(key.clone())
            .or_default()
            .records
            .push(record);
    }

    fn records(&self, key: &SessionLogKey) -> Vec<SessionRecord> {
        self.lock()
            .get(key)
            .map(|journal| journal.records.clone())
            .unwrap_or_default()
    }

    fn record_count(&self, key: &SessionLogKey) -> usize {
        self.lock()
            .get(key)
            .map_or(0, |journal| journal.records.len())
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
            .and_then(|journal| journal.records.get(start..))
        {
            records.iter().for_each(visit);
        }
    }

    fn flush(&self) -> BoxFuture<'_, Result<usize, FlushError>> {
        Box::pin(JsonlSessionLog::flush(self))
    }

    fn load<'a>(
        &'a self,
        key: &'a SessionLogKey,
    ) -> BoxFuture<'a, Result<Loaded, SessionLogError>> {
        Box::pin(async move {
            let restored = self.restore(key).await?;
            Ok(Loaded {
                records: self.records(key),
                torn: restored.torn,
            })
        })
    }

    fn sessions<'a>(
        &'a self,
        agent_id: &'a str,
        user_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<Option<String>>, SessionLogError>> {
        Box::pin(async move {
            let mut found: std::collections::BTreeSet<Option<String>> = self
                .lock()
                .keys()
                .filter(|key| key.agent_id == agent_id && key.user_id.as_deref() == user_id)
                .map(|key| key.session_id.clone())
                .collect();
            let dir = format!(
                "{SESSIONS_DIR}/{}/{}/",
                segment(Some(agent_id)),
                segment(user_id)
            );
            for path in self.storage.list(&dir).await? {
                let Some(name) = path
                    .as_str()
                    .strip_prefix(&dir)
                    .and_then(|name| name.strip_suffix(".jsonl"))
                    .filter(|name| !name.contains('/'))
                else {
                    continue;
                };
                match decode_segment(name) {
                    Some(session) => {
                        found.insert(session);
                    }
                    // A shortened name: the session id is in the file's `run/start` records.
                    None => {
                        let bytes = read_bounded(self.storage.as_ref(), &path).await?;
                        let decoded = decode(&path, &bytes)?;
                        if let Some(session) = decoded.records.iter().find_map(|record| {
                            (record.kind == "run/start")
                                .then(|| record.payload.value())
                                .and_then(|payload| {
                                    payload
                                        .get("session_id")
                                        .and_then(Value::as_str)
                                        .map(str::to_string)
                                })
                        }) {
                            found.insert(Some(session));
                        }
                    }
                }
            }
            Ok(found.into_iter().collect())
        })
    }
}

/// A file's bytes (empty when it does not exist), refusing files over the limit.
async fn read_bounded(
    storage: &dyn Storage,
    path: &WorkspacePath,
) -> Result<Vec<u8>, SessionLogError> {
    let bytes = storage.read(path).await?.unwrap_or_default();
    check_size(path, bytes.len())?;
    Ok(bytes)
}

/// A session file may hold at most [`SESSION_LOG_BYTES_MAX`] bytes.
fn check_size(path: &WorkspacePath, bytes: usize) -> Result<(), SessionLogError> {
    if bytes > SESSION_LOG_BYTES_MAX {
        return Err(SessionLogError::TooLarge {
            path: path.to_string(),
            bytes,
            max: SESSION_LOG_BYTES_MAX,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
