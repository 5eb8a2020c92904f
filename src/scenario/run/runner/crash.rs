//! Crashes and damage the runner inflicts on JSON-lines session files before a restart, and
//! reading those files' bytes.

use ctxbed_harness::storage::{MemoryStorage, Storage, WorkspacePath};

/// A crash in the middle of one more write: every session file gets the first half of a copy
/// of its last record, without the newline. Returns a line per file for the trace, or one
/// saying nothing changed (memory storage, or no record written yet).
pub(super) async fn tear_session_files(storage: &MemoryStorage) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, mut bytes) in session_file_bytes(storage).await {
        let body = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let start = body
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |at| at + 1);
        let fragment = body[start..body.len()].to_vec();
        let half = fragment[..fragment.len() / 2].to_vec();
        if half.is_empty() {
            continue;
        }
        bytes.extend_from_slice(&half);
        let added = half.len();
        lines.push(match storage.write(&path, bytes).await {
            Ok(_) => {
                format!("crash: a write tore; {path} ends with {added} bytes of half a record")
            }
            Err(error) => format!("crash: {path} could not be torn: {error}"),
        });
    }
    if lines.is_empty() {
        lines.push("crash: no session file has a record to tear; nothing changed".to_string());
    }
    lines
}

/// Every JSON-lines session file's path and bytes.
pub(super) async fn session_file_bytes(storage: &MemoryStorage) -> Vec<(WorkspacePath, Vec<u8>)> {
    let mut found = Vec::new();
    let files = storage
        .list(&format!(
            "{}/",
            ctxbed_harness::session::jsonl::SESSIONS_DIR
        ))
        .await
        .unwrap_or_default();
    for path in files {
        if let Ok(Some(bytes)) = storage.read(&path).await {
            found.push((path, bytes));
        }
    }
    found
}

/// Overwrites one line in the middle of every session file with as many zero bytes, so a line
/// with lines after it becomes unreadable: the middle one of the lines that have a line after
/// them and hold no `message` record (a damaged message record would be a loss the checker
/// could not tell from the agent's; the I5 check reads every message record that remains).
pub(super) async fn damage_session_files(storage: &MemoryStorage) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, mut bytes) in session_file_bytes(storage).await {
        let mut starts = vec![0];
        starts.extend(
            bytes
                .iter()
                .enumerate()
                .filter(|(at, b)| **b == b'\n' && at + 1 < bytes.len())
                .map(|(at, _)| at + 1),
        );
        // Lines with a line after them that hold no message record.
        let candidates: Vec<usize> = (0..starts.len().saturating_sub(1))
            .filter(|line| !bytes[starts[*line]..].starts_with(MESSAGE_RECORD_START))
            .collect();
        let Some(&line) = candidates.get(candidates.len().saturating_sub(1) / 2) else {
            continue;
        };
        let (start, end) = (starts[line], starts[line + 1] - 1);
        bytes[start..end].fill(0);
        let zeroed = end - start;
        lines.push(match storage.write(&path, bytes).await {
            Ok(_) => format!(
                "damage: line {} of {path} ({zeroed} bytes) overwritten with zero bytes; {} line(s) follow it",
                line + 1,
                starts.len() - line - 1
            ),
            Err(error) => format!("damage: {path} could not be damaged: {error}"),
        });
    }
    if lines.is_empty() {
        lines.push("damage: no session file has a line to damage; nothing changed".to_string());
    }
    lines
}

/// How a `message` record's line starts (`jsonl::encode_record` writes the kind first).
const MESSAGE_RECORD_START: &[u8] = b"{\"kind\":\"message\"";
