//! Tests of the JSON-lines session log: layout, flush, failure, and torn-record recovery.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::limits::SESSION_NAME_CHARS_MAX;
use crate::storage::MemoryStorage;

fn key(user: Option<&str>, session: Option<&str>) -> SessionLogKey {
    SessionLogKey {
        agent_id: "agent".into(),
        user_id: user.map(str::to_string),
        session_id: session.map(str::to_string),
    }
}

fn record(n: usize) -> SessionRecord {
    SessionRecord {
        kind: "context/build".into(),
        call_id: format!("call-{n}"),
        payload: json!({"n": n, "text": "line\nbreak and \"quotes\""}).into(),
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}

fn put(storage: &MemoryStorage, path: &WorkspacePath, bytes: Vec<u8>) {
    block_on(storage.write(path, bytes)).expect("a test write");
}

fn file(storage: &MemoryStorage, path: &WorkspacePath) -> Vec<u8> {
    storage.snapshot().get(path).cloned().unwrap_or_default()
}

#[test]
fn ids_become_distinct_safe_segments() {
    let cases = [
        (
            key(Some("alice"), Some("s-1")),
            "sessions/agent/alice/s-1.jsonl",
        ),
        (key(None, None), "sessions/agent/~none/~none.jsonl"),
        (
            key(Some(""), Some("~none")),
            "sessions/agent/~empty/~7Enone.jsonl",
        ),
        (
            key(Some("../etc"), Some("a/b")),
            "sessions/agent/~2E~2E~2Fetc/a~2Fb.jsonl",
        ),
        (
            key(Some("a b"), Some("é\u{202e}")),
            "sessions/agent/a~20b/~C3~A9~E2~80~AE.jsonl",
        ),
    ];
    for (key, expected) in cases {
        assert_eq!(session_path(&key).as_str(), expected);
    }
    let long_a = "a".repeat(500);
    let long_b = format!("{}b", "a".repeat(499));
    let path_a = session_path(&key(Some(&long_a), None));
    let path_b = session_path(&key(Some(&long_b), None));
    assert_ne!(path_a, path_b);
    let user_segment = path_a.as_str().split('/').nth(2).expect("a user segment");
    assert_eq!(user_segment.len(), SESSION_NAME_CHARS_MAX);
    assert!(user_segment.contains("~h"));
}

#[test]
fn flushed_records_are_restored_in_order() {
    let storage = Arc::new(MemoryStorage::new());
    let log = JsonlSessionLog::new(storage.clone());
    let alice = key(Some("alice"), Some("s1"));
    let bob = key(Some("bob"), None);
    log.append(&alice, record(1));
    log.append(&bob, record(2));
    log.append(&alice, record(3));
    assert_eq!(log.pending(&alice), 2);
    assert_eq!(block_on(log.flush()), Ok(3));
    assert_eq!(log.pending(&alice), 0);
    assert_eq!(
        block_on(log.flush()),
        Ok(0),
        "nothing pending, nothing written"
    );
    log.append(&alice, record(4));
    assert_eq!(block_on(SessionLog::flush(&log)), Ok(1));
    let text = String::from_utf8(file(&storage, &session_path(&alice))).expect("UTF-8");
    assert_eq!(text.lines().count(), 3);
    assert!(text.ends_with('\n'));

    let fresh = JsonlSessionLog::new(storage);
    let pending_before_restore = record(5);
    fresh.append(&alice, pending_before_restore.clone());
    let restored = block_on(fresh.restore(&alice)).expect("a readable log");
    assert_eq!(restored.records, vec![record(1), record(3), record(4)]);
    assert_eq!(restored.torn, None);
    assert_eq!(
        fresh.records(&alice),
        vec![record(1), record(3), record(4), pending_before_restore]
    );
    assert_eq!(fresh.pending(&alice), 1);
}

#[test]
fn a_torn_last_record_is_ignored_at_every_cut() {
    let path = session_path(&key(None, None));
    let committed: String = (1..=2).map(|n| encode_record(&record(n))).collect();
    let last = encode_record(&record(3));
    for cut in 0..last.len() {
        let mut bytes = committed.clone().into_bytes();
        bytes.extend_from_slice(&last.as_bytes()[..cut]);
        let decoded = decode(&path, &bytes).expect("a torn write is not corruption");
        assert_eq!(decoded.records, vec![record(1), record(2)], "cut {cut}");
        assert_eq!(decoded.committed_bytes, committed.len(), "cut {cut}");
        let expected = (cut > 0).then_some(TornRecord {
            line: 3,
            bytes: cut,
            reason: TornReason::NoNewline,
        });
        assert_eq!(decoded.torn, expected, "cut {cut}");
    }
    let whole = format!("{committed}{last}");
    let decoded = decode(&path, whole.as_bytes()).expect("a whole log");
    assert_eq!(decoded.records.len(), 3);
    assert_eq!(decoded.torn, None);
}

#[test]
fn an_invalid_last_line_is_torn_but_an_invalid_middle_line_is_corruption() {
    let path = session_path(&key(None, None));
    let first = encode_record(&record(1));
    for last in [
        "{\"kind\": \"x\"\n",
        "\n",
        "[1]\n",
        "{\"kind\":\"k\",\"call_id\":\"c\"}\n",
    ] {
        let bytes = format!("{first}{last}");
        let decoded = decode(&path, bytes.as_bytes()).expect("torn, not corrupt");
        assert_eq!(decoded.records, vec![record(1)]);
        assert_eq!(
            decoded.torn.map(|torn| torn.reason),
            Some(TornReason::InvalidRecord),
            "{last:?}"
        );
    }
    let corrupt = format!("{first}garbage\n{}", encode_record(&record(2)));
    let error = decode(&path, corrupt.as_bytes()).unwrap_err();
    assert!(
        matches!(error, SessionLogError::Corrupt { line: 2, .. }),
        "{error}"
    );
}

#[test]
fn flushing_after_a_crash_drops_the_fragment_and_keeps_every_committed_record() {
    let storage = Arc::new(MemoryStorage::new());
    let session = key(Some("alice"), None);
    let path = session_path(&session);
    let last = encode_record(&record(3));
    for cut in 1..last.len() {
        let mut bytes: Vec<u8> = (1..=2)
            .flat_map(|n| encode_record(&record(n)).into_bytes())
            .collect();
        bytes.extend_from_slice(&last.as_bytes()[..cut]);
        put(&storage, &path, bytes);

        let log = JsonlSessionLog::new(storage.clone());
        let restored = block_on(log.restore(&session)).expect("a torn log is readable");
        assert_eq!(restored.records.len(), 2);
        log.append(&session, record(4));
        assert_eq!(block_on(log.flush()), Ok(1));

        let decoded = decode(&path, &file(&storage, &path)).expect("a clean log");
        assert_eq!(
            decoded.records,
            vec![record(1), record(2), record(4)],
            "cut {cut}"
        );
        assert_eq!(decoded.torn, None, "cut {cut}");
    }
}

#[test]
fn a_failed_flush_keeps_the_file_and_the_pending_records() {
    let storage = Arc::new(MemoryStorage::new());
    let log = JsonlSessionLog::new(storage.clone());
    let alice = key(Some("alice"), None);
    let bob = key(Some("bob"), None);
    log.append(&bob, record(1));
    assert_eq!(block_on(log.flush()), Ok(1));
    let before = file(&storage, &session_path(&bob));

    storage.fail_writes_under("sessions/agent/bob/");
    log.append(&alice, record(2));
    log.append(&bob, record(3));
    let error = block_on(log.flush()).unwrap_err();
    assert_eq!(error.flushed, 1, "alice still flushed");
    assert_eq!(error.failed.len(), 1);
    assert_eq!(error.failed[0].0, bob);
    assert!(matches!(error.failed[0].1, SessionLogError::Storage(_)));
    assert_eq!(file(&storage, &session_path(&bob)), before);
    assert_eq!(log.pending(&bob), 1);
    assert_eq!(log.records(&bob), vec![record(1), record(3)]);
    assert_eq!(log.pending(&alice), 0);
}

#[test]
fn a_corrupt_file_is_never_rewritten() {
    let storage = Arc::new(MemoryStorage::new());
    let session = key(None, None);
    let path = session_path(&session);
    let corrupt = format!("garbage\n{}", encode_record(&record(1))).into_bytes();
    put(&storage, &path, corrupt.clone());
    let log = JsonlSessionLog::new(storage.clone());
    assert!(matches!(
        block_on(log.restore(&session)),
        Err(SessionLogError::Corrupt { line: 1, .. })
    ));
    log.append(&session, record(2));
    let error = block_on(log.flush()).unwrap_err();
    assert!(matches!(error.failed[0].1, SessionLogError::Corrupt { .. }));
    assert_eq!(file(&storage, &path), corrupt);
    assert_eq!(log.pending(&session), 1);
}

#[test]
fn segments_decode_back_to_their_ids() {
    for id in [None, Some(""), Some("s1"), Some("a b/ü~x"), Some("--__")] {
        let encoded = segment(id);
        assert_eq!(
            decode_segment(&encoded),
            Some(id.map(str::to_string)),
            "{encoded}"
        );
    }
    let long = "x".repeat(500);
    assert_eq!(
        decode_segment(&segment(Some(&long))),
        None,
        "shortened names are not decoded"
    );
    assert_eq!(decode_segment("~G1"), None);
    assert_eq!(decode_segment("a.b"), None);
}

#[test]
fn sessions_are_listed_from_storage_and_memory() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let storage = Arc::new(MemoryStorage::new());
        let log = JsonlSessionLog::new(storage.clone());
        let key = |user: &str, session: Option<&str>| SessionLogKey {
            agent_id: "fixer".into(),
            user_id: Some(user.into()),
            session_id: session.map(str::to_string),
        };
        let record = SessionRecord {
            kind: "run/start".into(),
            call_id: "call-1".into(),
            payload: serde_json::json!({"session_id": "x".repeat(500)}).into(),
        };
        log.append(&key("alice", Some("s 1")), record.clone());
        log.append(&key("alice", None), record.clone());
        log.append(&key("bob", Some("s2")), record.clone());
        log.append(&key("alice", Some(&"x".repeat(500))), record.clone());
        log.flush().await.unwrap();
        // A new log over the same storage knows nothing in memory: the listing reads storage.
        let fresh = JsonlSessionLog::new(storage);
        fresh.append(&key("alice", Some("pending")), record);
        let sessions = fresh.sessions("fixer", Some("alice")).await.unwrap();
        assert_eq!(
            sessions,
            vec![
                None,
                Some("pending".to_string()),
                Some("s 1".to_string()),
                Some("x".repeat(500)),
            ]
        );
        assert_eq!(
            fresh.sessions("fixer", Some("carol")).await.unwrap(),
            Vec::<Option<String>>::new()
        );
    });
}

#[test]
fn a_file_another_writer_changed_is_read_again_before_appending() {
    let storage = Arc::new(MemoryStorage::new());
    let one = JsonlSessionLog::new(storage.clone());
    let two = JsonlSessionLog::new(storage.clone());
    let session = key(Some("alice"), Some("s"));
    block_on(async {
        one.append(&session, record(1));
        one.flush().await.expect("flush");
        two.append(&session, record(2));
        two.flush().await.expect("flush");
        // `one` remembers the file as it left it; the file has changed since.
        one.append(&session, record(3));
        one.flush().await.expect("flush");
        // Unchanged since `one` wrote it: appended without decoding.
        one.append(&session, record(4));
        one.flush().await.expect("flush");
    });
    let path = session_path(&session);
    let decoded = decode(&path, &file(&storage, &path)).expect("decodes");
    let calls: Vec<&str> = decoded.records.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(calls, ["call-1", "call-2", "call-3", "call-4"]);
}

#[test]
fn for_each_from_visits_the_tail_of_records_in_every_log() {
    let storage = Arc::new(MemoryStorage::default());
    let jsonl = JsonlSessionLog::new(storage);
    let memory = crate::session::MemorySessionLog::default();
    let logs: [&dyn SessionLog; 2] = [&jsonl, &memory];
    let session = key(Some("alice"), Some("s-1"));
    for log in logs {
        for n in 0..5 {
            log.append(&session, record(n));
        }
        let all = log.records(&session);
        for start in 0..=7 {
            let mut seen = Vec::new();
            log.for_each_from(&session, start, &mut |record| seen.push(record.clone()));
            assert_eq!(
                seen,
                all[start.min(all.len())..].to_vec(),
                "visit from {start}"
            );
        }
        log.for_each_from(&key(None, None), 0, &mut |_| {
            panic!("no record in another session")
        });
    }
}

/// A log that only has `records`: the trait's own `for_each_from` visits the same tail.
#[test]
fn the_default_for_each_from_visits_the_tail_of_records() {
    struct Fixed(Vec<SessionRecord>);
    impl SessionLog for Fixed {
        fn append(&self, _: &SessionLogKey, _: SessionRecord) {}
        fn records(&self, _: &SessionLogKey) -> Vec<SessionRecord> {
            self.0.clone()
        }
        fn sessions<'a>(
            &'a self,
            _: &'a str,
            _: Option<&'a str>,
        ) -> BoxFuture<'a, Result<Vec<Option<String>>, SessionLogError>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }
    let log = Fixed((0..3).map(record).collect());
    let session = key(None, None);
    let mut seen = Vec::new();
    log.for_each_from(&session, 1, &mut |record| seen.push(record.clone()));
    assert_eq!(seen, log.0[1..].to_vec());
    log.for_each_from(&session, 9, &mut |_| panic!("no record past the end"));
}

/// A store that counts reads and, unless `revised`, keeps [`Storage`]'s defaults for revisions.
struct Observed {
    inner: MemoryStorage,
    revised: bool,
    reads: std::sync::atomic::AtomicUsize,
}

impl Observed {
    fn new(revised: bool) -> Self {
        Observed {
            inner: MemoryStorage::new(),
            revised,
            reads: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn reads(&self) -> usize {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[async_trait::async_trait]
impl Storage for Observed {
    async fn read(&self, path: &WorkspacePath) -> Result<Option<Vec<u8>>, StorageError> {
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.read(path).await
    }

    async fn write(&self, path: &WorkspacePath, bytes: Vec<u8>) -> Result<(), StorageError> {
        self.inner.write(path, bytes).await
    }

    async fn remove(&self, path: &WorkspacePath) -> Result<(), StorageError> {
        self.inner.remove(path).await
    }

    async fn list(&self, prefix: &str) -> Result<Vec<WorkspacePath>, StorageError> {
        self.inner.list(prefix).await
    }

    async fn write_revised(
        &self,
        path: &WorkspacePath,
        bytes: Vec<u8>,
    ) -> Result<Option<Revision>, StorageError> {
        if self.revised {
            self.inner.write_revised(path, bytes).await
        } else {
            self.inner.write(path, bytes).await.map(|()| None)
        }
    }

    async fn append_at(
        &self,
        path: &WorkspacePath,
        expected: Revision,
        bytes: &[u8],
    ) -> Result<Option<Revision>, StorageError> {
        assert!(
            self.revised,
            "no revision was given, so none can be expected"
        );
        self.inner.append_at(path, expected, bytes).await
    }
}

/// Flushes, another writer's rewrite with a torn tail, a failing write and recovery, on one
/// store; returns the final file.
fn flush_history(storage: &Arc<Observed>) -> Vec<u8> {
    let session = key(Some("alice"), Some("s"));
    let path = session_path(&session);
    let log = JsonlSessionLog::new(storage.clone());
    block_on(async {
        for n in 1..=3 {
            log.append(&session, record(n));
            assert_eq!(log.flush().await, Ok(1));
        }
        // Another writer leaves the file with a torn last line.
        let mut bytes = storage.inner.read(&path).await.unwrap().unwrap();
        bytes.extend_from_slice(&encode_record(&record(90)).as_bytes()[..7]);
        storage.inner.write(&path, bytes).await.unwrap();
        log.append(&session, record(4));
        assert_eq!(log.flush().await, Ok(1));
        storage.inner.fail_writes_under("sessions/");
        log.append(&session, record(5));
        assert!(log.flush().await.is_err());
        assert_eq!(log.pending(&session), 1);
        storage.inner.set_failing_writes(Vec::new());
        log.append(&session, record(6));
        assert_eq!(log.flush().await, Ok(2));
    });
    storage.inner.snapshot().remove(&path).unwrap_or_default()
}

#[test]
fn a_store_with_revisions_gets_appends_and_the_same_file_as_one_without() {
    let revised = Arc::new(Observed::new(true));
    let plain = Arc::new(Observed::new(false));
    let with_revisions = flush_history(&revised);
    let without = flush_history(&plain);
    assert_eq!(with_revisions, without);
    let decoded = decode(&session_path(&key(Some("alice"), Some("s"))), &without).unwrap();
    let calls: Vec<&str> = decoded.records.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(
        calls,
        ["call-1", "call-2", "call-3", "call-4", "call-5", "call-6"]
    );
    assert_eq!(decoded.torn, None, "the other writer's fragment is dropped");
    // With revisions the file is read only by the first flush and by the one after the other
    // writer's change; without, by every flush that writes.
    assert_eq!(revised.reads(), 2);
    assert_eq!(plain.reads(), 6);
}

#[test]
fn appends_in_place_never_grow_a_file_past_its_bound() {
    let storage = Arc::new(MemoryStorage::new());
    let log = JsonlSessionLog::new(storage.clone());
    let session = key(None, None);
    let path = session_path(&session);
    log.append(&session, record(1));
    assert_eq!(block_on(log.flush()), Ok(1));
    let before = file(&storage, &path);
    log.append(
        &session,
        SessionRecord {
            kind: "message".into(),
            call_id: "call-2".into(),
            payload: json!({"text": "x".repeat(SESSION_LOG_BYTES_MAX)}).into(),
        },
    );
    let error = block_on(log.flush()).unwrap_err();
    assert!(matches!(
        error.failed[0].1,
        SessionLogError::TooLarge {
            max: SESSION_LOG_BYTES_MAX,
            ..
        }
    ));
    assert_eq!(file(&storage, &path), before);
    assert_eq!(log.pending(&session), 1);
}
