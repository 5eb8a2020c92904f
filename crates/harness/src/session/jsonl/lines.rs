//! The file format of a session log: one record per JSON line, written ([`encode_record`]) and
//! read back ([`decode`]), with a torn last line told apart from corruption.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::{Decoded, SessionLogError, TornReason, TornRecord};
use crate::session::{Payload, SessionRecord};
use crate::storage::WorkspacePath;

/// One record as one line, newline included. JSON escapes every control character, so the
/// line holds no newline of its own.
pub fn encode_record(record: &SessionRecord) -> String {
    let mut line = Vec::new();
    encode_record_into(record, &mut line);
    String::from_utf8(line).expect("serde_json writes UTF-8")
}

/// [`encode_record`], appended to `out`.
pub(super) fn encode_record_into(record: &SessionRecord, out: &mut Vec<u8>) {
    // The line's object, fields in the order the line shows them; the payload is already JSON
    // text, written as it is. Strings serialise to memory without fail.
    out.extend_from_slice(b"{\"kind\":");
    serde_json::to_writer(&mut *out, &record.kind).expect("a string serialises");
    out.extend_from_slice(b",\"call_id\":");
    serde_json::to_writer(&mut *out, &record.call_id).expect("a string serialises");
    out.extend_from_slice(b",\"payload\":");
    out.extend_from_slice(record.payload.json().as_bytes());
    out.extend_from_slice(b"}\n");
}

/// The committed records of a file's bytes, ignoring a torn last line.
///
/// # Errors
/// [`SessionLogError::Corrupt`] when an invalid line has valid lines after it.
pub fn decode(path: &WorkspacePath, bytes: &[u8]) -> Result<Decoded, SessionLogError> {
    let mut records = Vec::new();
    let mut committed_bytes = 0;
    let mut start = 0;
    let mut line = 0;
    while start < bytes.len() {
        line += 1;
        let (end, terminated) = match bytes[start..].iter().position(|b| *b == b'\n') {
            Some(offset) => (start + offset, true),
            None => (bytes.len(), false),
        };
        let next = if terminated { end + 1 } else { end };
        let parsed = if terminated {
            parse_record(&bytes[start..end])
        } else {
            Err("no newline".to_string())
        };
        match parsed {
            Ok(record) => {
                records.push(record);
                committed_bytes = next;
            }
            Err(_) if next == bytes.len() => {
                let reason = if terminated {
                    TornReason::InvalidRecord
                } else {
                    TornReason::NoNewline
                };
                let torn = TornRecord {
                    line,
                    bytes: next - start,
                    reason,
                };
                return Ok(Decoded {
                    records,
                    committed_bytes,
                    torn: Some(torn),
                });
            }
            Err(reason) => {
                return Err(SessionLogError::Corrupt {
                    path: path.to_string(),
                    line,
                    reason,
                });
            }
        }
        start = next;
    }
    Ok(Decoded {
        records,
        committed_bytes,
        torn: None,
    })
}

/// Every line of a file's bytes that reads as a record, in order, skipping the others: what a
/// damaged log still holds, for checkers and diagnostics. Restoring never reads a log this way;
/// it refuses a corrupt one ([`decode`]).
pub fn readable_records(bytes: &[u8]) -> Vec<SessionRecord> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| parse_record(line).ok())
        .collect()
}

/// One line as a record: an object with string `kind` and `call_id`, and a `payload`.
fn parse_record(line: &[u8]) -> Result<SessionRecord, String> {
    // Fields are taken as JSON text; only `kind` and `call_id` are parsed further, and the
    // payload stays text (see [`Payload`]). A repeated field counts with its last value.
    let object: BTreeMap<String, &RawValue> = match serde_json::from_slice(line) {
        Ok(object) => object,
        Err(error) if error.is_data() => return Err("not a JSON object".to_string()),
        Err(error) => return Err(error.to_string()),
    };
    let text = |name: &str| {
        object
            .get(name)
            .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
            .ok_or_else(|| format!("`{name}` is missing or not a string"))
    };
    let kind = text("kind")?;
    let call_id = text("call_id")?;
    let payload = object
        .get("payload")
        .ok_or_else(|| "`payload` is missing".to_string())?;
    Ok(SessionRecord {
        kind,
        call_id,
        payload: Payload::from(*payload),
    })
}
