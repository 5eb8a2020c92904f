//! Where a session's log lies: `sessions/<agent>/<user>/<session>.jsonl`, each id encoded into
//! one safe path segment (see the parent module's documentation), and the segment decoded back.

use super::SESSIONS_DIR;
use crate::limits::SESSION_NAME_CHARS_MAX;
use crate::message::content_hash;
use crate::session::SessionLogKey;
use crate::storage::WorkspacePath;

/// The id a [`segment`] encodes, or `None` for a shortened (hashed) or foreign name.
pub(super) fn decode_segment(name: &str) -> Option<Option<String>> {
    match name {
        "~none" => return Some(None),
        "~empty" => return Some(Some(String::new())),
        _ => {}
    }
    let mut bytes = Vec::with_capacity(name.len());
    let mut rest = name.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        if first == b'~' {
            let hex = tail.get(..2)?;
            let text = std::str::from_utf8(hex).ok()?;
            bytes.push(u8::from_str_radix(text, 16).ok()?);
            rest = &tail[2..];
        } else if first.is_ascii_alphanumeric() || first == b'_' || first == b'-' {
            bytes.push(first);
            rest = tail;
        } else {
            return None;
        }
    }
    String::from_utf8(bytes).ok().map(Some)
}

/// The file of one session: `sessions/<agent>/<user>/<session>.jsonl`, each id encoded.
pub fn session_path(key: &SessionLogKey) -> WorkspacePath {
    let path = format!(
        "{SESSIONS_DIR}/{}/{}/{}.jsonl",
        segment(Some(&key.agent_id)),
        segment(key.user_id.as_deref()),
        segment(key.session_id.as_deref())
    );
    WorkspacePath::parse(&path).expect("encoded session paths hold only safe characters")
}

/// One path segment for an id; see the module documentation.
pub(super) fn segment(id: Option<&str>) -> String {
    let id = match id {
        None => return "~none".to_string(),
        Some("") => return "~empty".to_string(),
        Some(id) => id,
    };
    let mut units: Vec<String> = Vec::new();
    for c in id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            units.push(c.to_string());
        } else {
            let mut buffer = [0u8; 4];
            for byte in c.encode_utf8(&mut buffer).bytes() {
                units.push(format!("~{byte:02X}"));
            }
        }
    }
    let encoded: String = units.concat();
    if encoded.len() <= SESSION_NAME_CHARS_MAX {
        return encoded;
    }
    let hash = content_hash(id.as_bytes());
    let budget = SESSION_NAME_CHARS_MAX - 2 - hash.len();
    let mut prefix = String::new();
    for unit in units {
        if prefix.len() + unit.len() > budget {
            break;
        }
        prefix.push_str(&unit);
    }
    format!("{prefix}~h{hash}")
}
