//! The record of a served run: every exchange as one canonical JSON line (object keys sorted at
//! every depth), written as it happens, so two runs that sent the same requests give the same
//! bytes.
//!
//! [`Recorder`] writes each line with a single `write` to a file opened for appending, so lines
//! never interleave or tear at a buffer boundary; the cost of a line does not grow with the
//! record. A server killed while a long line is being written (`kill -9`) may still leave that
//! last line torn: readers of a record skip a torn last line and say so
//! (`conform::record_rules::check_record`). It refuses to write through a symbolic link, onto anything but a regular file, or
//! onto a mock-model file it serves; [`Recorder::finish`] flushes the file to disk.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use ctxbed_sim::host::Exchange;

/// `value` with every object's keys in sorted order.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut sorted = Map::new();
            for key in keys {
                sorted.insert(key.clone(), canonical(&map[key]));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// One exchange as a canonical JSON line (without the newline): the request number, the model
/// that answered and its window, the API and path, whether it streamed, the exact input tokens,
/// the status and outcome, and the request body as sent.
pub fn exchange_line(model: &str, window: Option<u64>, exchange: &Exchange) -> String {
    canonical(&json!({
        "n": exchange.number,
        "model": model,
        "window": window,
        "api": exchange.api.as_str(),
        "path": exchange.path,
        "stream": exchange.stream,
        "input_tokens": exchange.input_tokens,
        "status": exchange.status,
        "outcome": exchange.outcome.as_str(),
        "body": exchange.body,
    }))
    .to_string()
}

/// Why a record file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(
        "{path} is a symbolic link; the record is never written through one (it could overwrite the link's target): name the file itself"
    )]
    Link { path: String },
    #[error("{path} is not a regular file; name a file to create or overwrite")]
    NotFile { path: String },
    #[error(
        "{path} is the mock-model file {model}; the record would overwrite it: name another file"
    )]
    MockFile { path: String, model: String },
    #[error("cannot write the record file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// Writes exchanges to the record file, one whole line per `write`.
#[derive(Debug)]
pub struct Recorder {
    path: String,
    file: Mutex<std::fs::File>,
}

impl Recorder {
    /// Creates (or truncates) the record file at `path`, which must not be a link, anything
    /// but a regular file, or one of `protected` (the mock-model files served).
    ///
    /// # Errors
    /// Each refusal above, or the file cannot be created.
    pub fn create(path: &Path, protected: &[PathBuf]) -> Result<Recorder, RecordError> {
        let label = path.display().to_string();
        if let Ok(metadata) = std::fs::symlink_metadata(path) {
            if metadata.file_type().is_symlink() {
                return Err(RecordError::Link { path: label });
            }
            if !metadata.is_file() {
                return Err(RecordError::NotFile { path: label });
            }
        }
        let target = same_file_key(path);
        if let Some(model) = protected
            .iter()
            .find(|p| target.is_some() && same_file_key(p) == target)
        {
            return Err(RecordError::MockFile {
                path: label,
                model: model.display().to_string(),
            });
        }
        let file = open_for_append(path).map_err(|source| RecordError::Io {
            path: label.clone(),
            source,
        })?;
        Ok(Recorder {
            path: label,
            file: Mutex::new(file),
        })
    }

    /// The record file, as named.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Appends one exchange as a line.
    ///
    /// # Errors
    /// The file cannot be written (full disk, revoked permission).
    pub fn write(
        &self,
        model: &str,
        window: Option<u64>,
        exchange: &Exchange,
    ) -> Result<(), RecordError> {
        let mut line = exchange_line(model, window, exchange);
        line.push('\n');
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(line.as_bytes())
            .map_err(|source| self.io(source))
    }

    /// Flushes the record to disk (at shutdown).
    ///
    /// # Errors
    /// The file cannot be synced.
    pub fn finish(&self) -> Result<(), RecordError> {
        let file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        file.sync_all().map_err(|source| self.io(source))
    }

    fn io(&self, source: std::io::Error) -> RecordError {
        RecordError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// The file's identity (device and inode) when it exists, so two names of one file compare
/// equal; `None` for a file not yet created (it cannot be a mock file).
fn same_file_key(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Opens `path` for appending, truncated, never following a link at the last component.
fn open_for_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    let file = options.open(path)?;
    file.set_len(0)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_at_every_depth_whatever_the_insertion_order() {
        let value: Value =
            serde_json::from_str(r#"{"b":1,"a":{"z":[{"y":1,"x":2}],"c":null}}"#).expect("JSON");
        assert_eq!(
            canonical(&value).to_string(),
            r#"{"a":{"c":null,"z":[{"x":2,"y":1}]},"b":1}"#
        );
    }
}
