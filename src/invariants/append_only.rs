//! The check that durable records are never rewritten (I10).
//!
//! **I10.** A JSON-lines session log only grows. Across a step's call, every committed line of
//! every session file stays where it was, byte for byte: the agent appends records, and the
//! flush after a torn write drops only the torn last line (one that does not read as a record,
//! newline or not). Compaction, pruning and offload change the working history, never the log.
//! A corrupt file (an unreadable line with lines after it) cannot be restored, and neither can
//! a session whose log holds an invalid record: such a file must stay exactly as it is, so
//! nothing more is lost and the damage can be repaired by hand. The runner's own damage (a
//! torn or corrupted file before a restart) happens before the call and is not held against
//! the agent.
//!
//! The checker reads the lines itself (a record is a JSON object with a string `kind` and
//! `call_id` and a `payload`); it does not ask the session log what is committed or corrupt.

use super::{Violation, ViolationKind};
use crate::scenario::check::outcome::RunOutput;
use crate::scenario::format::file::Scenario;
use crate::scenario::run::record::SessionFileBytes;
use ctxbed_harness::agent::AgentError;
use ctxbed_harness::session::SessionLogKey;
use ctxbed_harness::session::jsonl::session_path;

/// I10: every session file's committed lines survive each call unchanged, and a corrupt file,
/// or the file of a session the call could not restore, is not touched at all.
pub(super) fn session_logs_only_grow(scenario: &Scenario, output: &RunOutput) -> Vec<Violation> {
    let mut found = Vec::new();
    for step in &output.trace.steps {
        let unrestored = matches!(step.outcome, Err(AgentError::Restore(_))).then(|| {
            session_path(&SessionLogKey {
                agent_id: scenario.agent.agent_id.clone(),
                user_id: step.spec.user.clone(),
                session_id: step.spec.session.clone(),
            })
        });
        for (path, bytes) in &step.session_files {
            let unrestored = unrestored.as_ref().is_some_and(|p| p.as_str() == path);
            if let Some(detail) = rewritten(path, bytes, unrestored) {
                found.push(Violation {
                    kind: ViolationKind::SessionLogRewritten,
                    step: Some(step.index),
                    detail,
                });
            }
        }
    }
    found
}

/// What the call did to a file it must not rewrite, if anything. `unrestored`: the call failed
/// to restore this file's session.
fn rewritten(path: &str, bytes: &SessionFileBytes, unrestored: bool) -> Option<String> {
    let before = bytes.before.as_deref()?;
    let Some(after) = bytes.after.as_deref() else {
        return Some(format!(
            "session log `{path}` ({} bytes) was deleted",
            before.len()
        ));
    };
    let lines = read_lines(before);
    let corrupt_line = lines.corrupt_line;
    if unrestored || corrupt_line.is_some() {
        let why = match corrupt_line {
            Some(line) => format!("is corrupt at line {line}"),
            None => "could not be restored".to_string(),
        };
        return (after != before).then(|| {
            format!(
                "session log `{path}` {why} but the call changed it: {} bytes before, {} after, first difference at byte {}",
                before.len(),
                after.len(),
                first_difference(before, after)
            )
        });
    }
    let committed = &before[..lines.committed_bytes];
    (!after.starts_with(committed)).then(|| {
        format!(
            "session log `{path}` rewrote committed records: its first {} bytes changed at byte {}; it holds {} bytes after the call",
            committed.len(),
            first_difference(committed, after),
            after.len()
        )
    })
}

/// A file's lines as the checker reads them.
struct Lines {
    /// Bytes up to the end of the last record line (a torn last line excluded).
    committed_bytes: usize,
    /// The first unreadable line (1-based) that has lines after it.
    corrupt_line: Option<usize>,
}

fn read_lines(bytes: &[u8]) -> Lines {
    let mut committed_bytes = 0;
    let mut start = 0;
    let mut line = 0;
    while start < bytes.len() {
        line += 1;
        let (end, next) = match bytes[start..].iter().position(|b| *b == b'\n') {
            Some(offset) => (start + offset, start + offset + 1),
            None => (bytes.len(), bytes.len()),
        };
        let terminated = next > end;
        if terminated && is_record(&bytes[start..end]) {
            committed_bytes = next;
        } else if next < bytes.len() {
            return Lines {
                committed_bytes,
                corrupt_line: Some(line),
            };
        }
        start = next;
    }
    Lines {
        committed_bytes,
        corrupt_line: None,
    }
}

/// The shape of a record line; the payload is skipped without being built.
#[derive(serde::Deserialize)]
struct RecordLine<'a> {
    #[serde(borrow)]
    #[allow(dead_code, reason = "only its type is checked")]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    #[allow(dead_code, reason = "only its type is checked")]
    call_id: std::borrow::Cow<'a, str>,
    #[allow(dead_code, reason = "only its presence is checked")]
    payload: serde::de::IgnoredAny,
}

/// A JSON object with a string `kind` and `call_id` and a `payload`.
fn is_record(line: &[u8]) -> bool {
    // serde would also read a struct from an array; a record is an object.
    line.trim_ascii_start().starts_with(b"{")
        && serde_json::from_slice::<RecordLine<'_>>(line).is_ok()
}

/// The index of the first byte where `a` and `b` differ (the shorter length when one is a
/// prefix of the other).
fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &[u8] = br#"{"kind":"message","call_id":"c1","payload":{}}"#;
    const B: &[u8] = br#"{"kind":"checkpoint","call_id":"c1","payload":1}"#;

    fn lines(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    fn file(before: Vec<u8>, after: Option<Vec<u8>>) -> SessionFileBytes {
        SessionFileBytes {
            before: Some(before),
            after,
        }
    }

    #[test]
    fn appending_and_dropping_a_torn_last_line_keep_the_log() {
        let one = lines(&[A, b"\n"]);
        let two = lines(&[A, b"\n", B, b"\n"]);
        assert_eq!(
            rewritten("s", &file(one.clone(), Some(two.clone())), false),
            None
        );
        // A torn tail without a newline, and an invalid last line with one: both dropped.
        let torn = lines(&[A, b"\n", b"{\"kind\":\"mes"]);
        assert_eq!(rewritten("s", &file(torn, Some(two.clone())), false), None);
        let invalid_last = lines(&[A, b"\n", b"not json\n"]);
        assert_eq!(
            rewritten("s", &file(invalid_last, Some(two.clone())), false),
            None
        );
        let new_file = SessionFileBytes {
            before: None,
            after: Some(one),
        };
        assert_eq!(rewritten("s", &new_file, false), None);
        let corrupt = lines(&[b"\0\0\n", B, b"\n"]);
        assert_eq!(
            rewritten("s", &file(corrupt.clone(), Some(corrupt)), false),
            None
        );
    }

    #[test]
    fn a_changed_committed_line_a_deletion_or_a_touched_corrupt_log_is_found() {
        let two = lines(&[A, b"\n", B, b"\n"]);
        let mut changed = two.clone();
        changed[A.len() + 3] = b'x';
        let found = rewritten("s", &file(two.clone(), Some(changed)), false);
        assert!(found.is_some_and(|d| d.contains(&format!("changed at byte {}", A.len() + 3))));
        let truncated = rewritten("s", &file(two.clone(), Some(lines(&[A, b"\n"]))), false);
        assert!(truncated.is_some_and(|d| d.contains(&format!("changed at byte {}", A.len() + 1))));
        let deleted = rewritten("s", &file(two.clone(), None), false);
        assert!(deleted.is_some_and(|d| d.contains("was deleted")));
        // Appending to a corrupt log, whatever the call's outcome, or to one it could not
        // restore.
        let corrupt = lines(&[b"\0\0\n", B, b"\n"]);
        let appended = lines(&[&corrupt, A, b"\n"]);
        let found = rewritten("s", &file(corrupt.clone(), Some(appended)), false);
        assert!(found.is_some_and(|d| d.contains("is corrupt at line 1")));
        let found = rewritten(
            "s",
            &file(two.clone(), Some(lines(&[&two, A, b"\n"]))),
            true,
        );
        assert!(found.is_some_and(|d| d.contains("could not be restored")));
    }

    #[test]
    fn lines_are_read_as_the_log_defines_them() {
        let read = |bytes: &[u8]| {
            let lines = read_lines(bytes);
            (lines.committed_bytes, lines.corrupt_line)
        };
        let n = A.len() + 1;
        assert_eq!(read(b""), (0, None));
        assert_eq!(read(&lines(&[A, b"\n"])), (n, None));
        assert_eq!(read(A), (0, None), "no newline: torn");
        assert_eq!(
            read(&lines(&[A, b"\n", b"{}\n"])),
            (n, None),
            "invalid last: torn"
        );
        assert_eq!(read(&lines(&[A, b"\n", b"{}\n", A, b"\n"])), (n, Some(2)));
        assert!(!is_record(br#"{"kind":1,"call_id":"c","payload":{}}"#));
        assert!(!is_record(br#"{"kind":"k","payload":{}}"#));
        assert!(!is_record(br#"["k","c",{}]"#));
    }
}
