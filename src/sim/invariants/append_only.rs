//! The check that durable records are never rewritten (I10).
//!
//! **I10.** A JSON-lines session log only grows. Across a step's call, every committed line of
//! every session file (everything up to its last newline) stays where it was, byte for byte:
//! the agent appends records, and the flush after a torn write drops only the torn fragment
//! after the last newline. Compaction, pruning and offload change the working history, never
//! the log. A session whose log is corrupt (an unreadable line with lines after it) cannot be
//! restored (nor can one holding an invalid record); the agent must then leave its file exactly as it is, so nothing more is lost and
//! the damage can be repaired by hand. The runner's own damage (a torn or corrupted file before
//! a restart) happens before the call and is not held against the agent.

use super::{Violation, ViolationKind};
use crate::agent::AgentError;
use crate::scenario::file::Scenario;
use crate::scenario::runner::RunOutput;
use crate::scenario::trace::SessionFileBytes;
use crate::session::SessionLogKey;
use crate::session::jsonl::session_path;

/// I10: every session file's committed lines survive each call unchanged, and the file of a
/// session the call could not restore is not touched at all.
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
            let untouchable = unrestored.as_ref().is_some_and(|p| p.as_str() == path);
            if let Some(detail) = rewritten(path, bytes, untouchable) {
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

/// What the call did to a file it must not rewrite, if anything.
fn rewritten(path: &str, bytes: &SessionFileBytes, unrestored: bool) -> Option<String> {
    let before = bytes.before.as_deref()?;
    let Some(after) = bytes.after.as_deref() else {
        return Some(format!(
            "session log `{path}` ({} bytes) was deleted",
            before.len()
        ));
    };
    if unrestored {
        return (after != before).then(|| {
            format!(
                "session log `{path}` could not be restored but was changed: {} bytes before the call, {} after, first difference at byte {}",
                before.len(),
                after.len(),
                first_difference(before, after)
            )
        });
    }
    let committed = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    let committed = &before[..committed];
    (!after.starts_with(committed)).then(|| {
        format!(
            "session log `{path}` rewrote committed records: its first {} bytes (up to the last newline) changed at byte {}; it holds {} bytes after the call",
            committed.len(),
            first_difference(committed, after),
            after.len()
        )
    })
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

    fn file(before: &[u8], after: Option<&[u8]>) -> SessionFileBytes {
        SessionFileBytes {
            before: Some(before.to_vec()),
            after: after.map(<[u8]>::to_vec),
        }
    }

    #[test]
    fn appending_and_dropping_a_torn_tail_keep_the_log() {
        let appended = file(b"{a}\n", Some(b"{a}\n{b}\n"));
        assert_eq!(rewritten("s", &appended, false), None);
        let torn_dropped = file(b"{a}\n{b", Some(b"{a}\n{c}\n"));
        assert_eq!(rewritten("s", &torn_dropped, false), None);
        let new_file = SessionFileBytes {
            before: None,
            after: Some(b"{a}\n".to_vec()),
        };
        assert_eq!(rewritten("s", &new_file, false), None);
        let untouched_corrupt = file(b"\0\0\n{b}\n", Some(b"\0\0\n{b}\n"));
        assert_eq!(rewritten("s", &untouched_corrupt, true), None);
    }

    #[test]
    fn a_changed_committed_line_a_deletion_or_a_touched_corrupt_log_is_found() {
        let changed = rewritten("s", &file(b"{a}\n{b}\n", Some(b"{a}\n{x}\n{c}\n")), false);
        assert!(changed.is_some_and(|d| d.contains("changed at byte 5")));
        let truncated = rewritten("s", &file(b"{a}\n{b}\n", Some(b"{a}\n")), false);
        assert!(truncated.is_some_and(|d| d.contains("changed at byte 4")));
        let deleted = rewritten("s", &file(b"{a}\n", None), false);
        assert!(deleted.is_some_and(|d| d.contains("was deleted")));
        let appended_to_corrupt =
            rewritten("s", &file(b"\0\n{b}\n", Some(b"\0\n{b}\n{c}\n")), true);
        assert!(appended_to_corrupt.is_some_and(|d| d.contains("first difference at byte 6")));
    }
}
