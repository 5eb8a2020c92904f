//! Workspace file tools: [`WriteFile`], [`EditFile`] and [`ListFiles`] (`read_file` lives in
//! [`super::read`]), all over the [`Storage`] trait.
//!
//! Every path goes through [`WorkspacePath::parse`] before any storage call, so no tool can
//! touch anything outside the workspace: `..`, absolute paths, backslashes, control characters
//! and invisible or direction-changing characters are refused with the reason. Every failure —
//! bad arguments, a missing file, an ambiguous edit, a failed write — is an error
//! [`ToolOutcome`] that tells the model what to do next; nothing here panics on model input.
//!
//! - `write_file(path, content)` creates or replaces a file (content at most
//!   [`WRITE_FILE_CHARS_MAX`] characters). A failed write leaves the previous file unchanged.
//! - `edit_file(path, old, new)` replaces the one exact occurrence of `old`. When `old` is absent,
//!   or occurs more than once (overlapping occurrences count), nothing changes and the error
//!   says how many matches, at which lines.
//! - `list_files(dir?)` lists the files and subdirectories directly in a directory, sorted, at
//!   most [`LIST_FILES_ENTRIES_MAX`] with an "N more" note.
//!
//! ```
//! use std::sync::Arc;
//! use ctxbed_harness::message::ToolCall;
//! use ctxbed_harness::runtime::RuntimeContext;
//! use ctxbed_harness::storage::{MemoryStorage, Storage};
//! use ctxbed_harness::tools::{Tool, ToolContext};
//! use ctxbed_harness::tools::workspace::{EditFile, WriteFile};
//! use serde_json::json;
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
//!     let context = ToolContext {
//!         agent_id: "agent".into(),
//!         runtime: RuntimeContext::new(),
//!         call_id: "call-1".into(),
//!     };
//!     let call = |name: &str, arguments| ToolCall { id: "c1".into(), name: name.into(), arguments };
//!     let write = WriteFile::new(storage.clone());
//!     let outcome = write.call(&call("write_file", json!({"path": "a.md", "content": "x = 1\n"})), &context).await;
//!     assert!(!outcome.is_error);
//!     let edit = EditFile::new(storage.clone());
//!     let outcome = edit.call(&call("edit_file", json!({"path": "a.md", "old": "1", "new": "2"})), &context).await;
//!     assert!(!outcome.is_error);
//!     let escape = write.call(&call("write_file", json!({"path": "../x", "content": ""})), &context).await;
//!     assert!(escape.is_error);
//! });
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::Arguments;
use super::{Tool, ToolContext, ToolOutcome, ToolSchema};
use crate::limits::{
    EDIT_MATCHES_COUNTED_MAX, EDIT_MATCHES_LISTED_MAX, EDIT_TEXT_CHARS_MAX, LIST_FILES_ENTRIES_MAX,
    PATH_CHARS_MAX, WORKSPACE_FILE_BYTES_MAX, WRITE_FILE_CHARS_MAX,
};
use crate::message::ToolCall;
use crate::session::jsonl::SESSIONS_DIR;
use crate::storage::{Storage, WorkspacePath};

/// The `write_file` tool: creates or replaces a workspace file.
pub struct WriteFile {
    schema: ToolSchema,
    storage: Arc<dyn Storage>,
}

/// The `edit_file` tool: replaces one exact, unique occurrence of a text in a workspace file.
pub struct EditFile {
    schema: ToolSchema,
    storage: Arc<dyn Storage>,
}

/// The `list_files` tool: the entries directly in a workspace directory.
pub struct ListFiles {
    schema: ToolSchema,
    storage: Arc<dyn Storage>,
}

/// The JSON schema of a `path` argument.
fn path_property() -> Value {
    json!({
        "type": "string",
        "description": "File path relative to the workspace root, e.g. `notes/todo.md`.",
    })
}

/// Checks a model-given path; the error result explains the refusal. The session logs'
/// directory is off limits: it holds every user's conversations, which only the session tools
/// read, and only for the calling user.
pub(crate) fn checked_path(path: &str) -> Result<WorkspacePath, ToolOutcome> {
    let path = WorkspacePath::parse(path).map_err(|error| ToolOutcome::error(error.to_string()))?;
    if is_session_log(&path) {
        return Err(ToolOutcome::error(format!(
            "`{path}` is in `{SESSIONS_DIR}/`, where the session logs are kept; the workspace tools do not open them: use session_history or session_search"
        )));
    }
    Ok(path)
}

/// True for the session logs' directory and everything in it.
fn is_session_log(path: &WorkspacePath) -> bool {
    let path = path.as_str();
    path == SESSIONS_DIR
        || path
            .strip_prefix(SESSIONS_DIR)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Loads a file as UTF-8 text.
///
/// # Errors
/// An error result for a failed read, a missing file (saying when the path is a directory), a
/// file over [`WORKSPACE_FILE_BYTES_MAX`], or content that is not UTF-8 text or holds NUL bytes.
pub(crate) async fn load_text(
    storage: &dyn Storage,
    path: &WorkspacePath,
) -> Result<String, ToolOutcome> {
    let bytes = match storage.read(path).await {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(ToolOutcome::error(missing_file(storage, path).await)),
        Err(error) => return Err(ToolOutcome::error(error.to_string())),
    };
    if bytes.len() > WORKSPACE_FILE_BYTES_MAX {
        return Err(ToolOutcome::error(format!(
            "`{path}` is {} bytes; the built-in tools load files of at most {WORKSPACE_FILE_BYTES_MAX} bytes",
            bytes.len()
        )));
    }
    if let Some(position) = first_nul(&bytes) {
        return Err(ToolOutcome::error(format!(
            "`{path}` is binary (a NUL byte at byte {position}); only UTF-8 text files can be shown or edited"
        )));
    }
    String::from_utf8(bytes).map_err(|error| {
        let position = error.utf8_error().valid_up_to();
        let byte = error.as_bytes().get(position).copied().unwrap_or(0);
        ToolOutcome::error(format!(
            "`{path}` is not UTF-8 text (byte 0x{byte:02X} at byte {position}); only UTF-8 text files can be shown or edited"
        ))
    })
}

/// The position of the first NUL byte. Blocks are searched with the vectorised
/// [`slice::contains`]; only the block that holds one is walked.
fn first_nul(bytes: &[u8]) -> Option<usize> {
    const BLOCK: usize = 4096;
    let block = bytes.chunks(BLOCK).position(|chunk| chunk.contains(&0))?;
    let within = bytes[block * BLOCK..].iter().position(|byte| *byte == 0)?;
    Some(block * BLOCK + within)
}

/// Why `path` cannot be read: not there, or a directory.
async fn missing_file(storage: &dyn Storage, path: &WorkspacePath) -> String {
    if is_directory(storage, path).await {
        format!("`{path}` is a directory, not a file; list_files shows its entries")
    } else {
        format!(
            "no file `{path}` in the workspace; list_files shows what exists and write_file creates files"
        )
    }
}

async fn is_directory(storage: &dyn Storage, path: &WorkspacePath) -> bool {
    storage
        .list(&format!("{path}/"))
        .await
        .is_ok_and(|entries| !entries.is_empty())
}

/// Number of lines as `read_file` counts them.
fn line_count(text: &str) -> usize {
    text.split_inclusive('\n').count()
}

/// "1 line" or "N lines".
fn lines_phrase(count: usize) -> String {
    if count == 1 {
        "1 line".to_string()
    } else {
        format!("{count} lines")
    }
}

/// Runs a tool body: both arms are outcomes.
fn settle(result: Result<ToolOutcome, ToolOutcome>) -> ToolOutcome {
    result.unwrap_or_else(|outcome| outcome)
}

impl WriteFile {
    /// `write_file` over `storage`.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        WriteFile {
            schema: ToolSchema {
                name: "write_file".to_string(),
                description: format!(
                    "Create or replace a UTF-8 text file in the workspace with `content` (at most \
                     {WRITE_FILE_CHARS_MAX} characters). To change part of a file, use edit_file."
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": path_property(),
                        "content": {"type": "string", "description": "The complete new content."},
                    },
                    "required": ["path", "content"],
                }),
            },
            storage,
        }
    }

    async fn run(&self, call: &ToolCall) -> Result<ToolOutcome, ToolOutcome> {
        let schema = &self.schema;
        let (path, content) = Arguments::parse(schema, &call.arguments)
            .and_then(|arguments| {
                Ok((
                    arguments.required_string("path", PATH_CHARS_MAX)?,
                    arguments.required_string("content", WRITE_FILE_CHARS_MAX)?,
                ))
            })
            .map_err(|error| error.outcome(schema))?;
        let path = checked_path(path)?;
        let storage = self.storage.as_ref();
        if is_directory(storage, &path).await {
            return Err(ToolOutcome::error(format!(
                "`{path}` is a directory; write to a file inside it, e.g. `{path}/notes.md`"
            )));
        }
        if let Some(parent) = file_ancestor(storage, &path).await {
            return Err(ToolOutcome::error(format!(
                "`{parent}` is a file, so `{path}` cannot be created inside it"
            )));
        }
        let previous = storage.read(&path).await.ok().flatten().map(|b| b.len());
        let what = if previous.is_some() {
            "replaced"
        } else {
            "created"
        };
        if let Err(error) = storage.write(&path, content.as_bytes().to_vec()).await {
            let state = if previous.is_some() {
                "the file is unchanged"
            } else {
                "nothing was written"
            };
            return Err(ToolOutcome::error(format!("{error}; {state}")));
        }
        let was = previous.map_or(String::new(), |bytes| format!(" (was {bytes} bytes)"));
        Ok(ToolOutcome::text(format!(
            "{what} {path}: {} chars in {}{was}",
            content.chars().count(),
            lines_phrase(line_count(content))
        )))
    }
}

/// The first ancestor of `path` that exists as a file, if any.
async fn file_ancestor(storage: &dyn Storage, path: &WorkspacePath) -> Option<WorkspacePath> {
    let text = path.as_str();
    for (index, _) in text.match_indices('/') {
        let Ok(ancestor) = WorkspacePath::parse(&text[..index]) else {
            continue;
        };
        if matches!(storage.read(&ancestor).await, Ok(Some(_))) {
            return Some(ancestor);
        }
    }
    None
}

impl EditFile {
    /// `edit_file` over `storage`.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        EditFile {
            schema: ToolSchema {
                name: "edit_file".to_string(),
                description: "Replace one exact occurrence of `old` with `new` in a workspace \
                              text file. `old` must match exactly once, including whitespace and \
                              line breaks; include surrounding lines to make it unique."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "path": path_property(),
                        "old": {"type": "string", "description": "The exact text to replace."},
                        "new": {"type": "string", "description": "The replacement text."},
                    },
                    "required": ["path", "old", "new"],
                }),
            },
            storage,
        }
    }

    async fn run(&self, call: &ToolCall) -> Result<ToolOutcome, ToolOutcome> {
        let schema = &self.schema;
        let (path, old, new) = Arguments::parse(schema, &call.arguments)
            .and_then(|arguments| {
                Ok((
                    arguments.required_string("path", PATH_CHARS_MAX)?,
                    arguments.required_string("old", EDIT_TEXT_CHARS_MAX)?,
                    arguments.required_string("new", EDIT_TEXT_CHARS_MAX)?,
                ))
            })
            .map_err(|error| error.outcome(schema))?;
        let path = checked_path(path)?;
        if old.is_empty() {
            return Err(ToolOutcome::error(
                "`old` is empty; give the exact text to replace (read_file shows it)",
            ));
        }
        if old == new {
            return Err(ToolOutcome::error(
                "`old` and `new` are the same; nothing to change",
            ));
        }
        let text = load_text(self.storage.as_ref(), &path).await?;
        let matches = match_positions(&text, old);
        let position = match matches.as_slice() {
            [] => return Err(ToolOutcome::error(not_found(&path, &text, old))),
            [only] => *only,
            several => return Err(ToolOutcome::error(ambiguous(&path, &text, several))),
        };
        let mut edited = String::with_capacity(text.len() - old.len() + new.len());
        edited.push_str(&text[..position]);
        edited.push_str(new);
        edited.push_str(&text[position + old.len()..]);
        if edited.len() > WORKSPACE_FILE_BYTES_MAX {
            return Err(ToolOutcome::error(format!(
                "the edited file would be {} bytes; at most {WORKSPACE_FILE_BYTES_MAX}; the file is unchanged",
                edited.len()
            )));
        }
        let line = line_of(&text, position);
        let (chars, lines) = (edited.chars().count(), line_count(&edited));
        if let Err(error) = self.storage.write(&path, edited.into_bytes()).await {
            return Err(ToolOutcome::error(format!(
                "{error}; the file is unchanged"
            )));
        }
        Ok(ToolOutcome::text(format!(
            "edited {path}: replaced 1 match at line {line} ({} chars -> {} chars); the file now has {chars} chars in {}",
            old.chars().count(),
            new.chars().count(),
            lines_phrase(lines),
        )))
    }
}

/// Byte positions where `needle` starts, overlapping occurrences included, at most
/// [`EDIT_MATCHES_COUNTED_MAX`].
fn match_positions(text: &str, needle: &str) -> Vec<usize> {
    let mut positions = Vec::new();
    let mut from = 0;
    while positions.len() < EDIT_MATCHES_COUNTED_MAX {
        let Some(found) = text[from..].find(needle) else {
            break;
        };
        let position = from + found;
        positions.push(position);
        // Step one character, not one match, so overlapping occurrences count as ambiguous.
        let step = text[position..].chars().next().map_or(1, char::len_utf8);
        from = position + step;
    }
    positions
}

/// 1-based line of a byte position.
fn line_of(text: &str, position: usize) -> usize {
    text[..position].matches('\n').count() + 1
}

fn not_found(path: &WorkspacePath, text: &str, old: &str) -> String {
    let trimmed = old.trim();
    let trimmed_match = if trimmed.is_empty() || trimmed == old {
        None
    } else {
        text.find(trimmed)
    };
    let hint = trimmed_match.map_or(String::new(), |position| {
        format!(
            " (without its leading and trailing whitespace it occurs at line {})",
            line_of(text, position)
        )
    });
    format!(
        "`old` was not found in {path}{hint}; it must match exactly, including whitespace and \
         line breaks: read_file shows the current text; the file is unchanged"
    )
}

fn ambiguous(path: &WorkspacePath, text: &str, positions: &[usize]) -> String {
    let count = if positions.len() >= EDIT_MATCHES_COUNTED_MAX {
        format!("at least {} times", positions.len())
    } else {
        format!("{} times", positions.len())
    };
    let mut lines: Vec<String> = positions
        .iter()
        .take(EDIT_MATCHES_LISTED_MAX)
        .map(|position| line_of(text, *position).to_string())
        .collect();
    if positions.len() > EDIT_MATCHES_LISTED_MAX {
        lines.push("…".to_string());
    }
    format!(
        "`old` occurs {count} in {path} (at lines {}); include more surrounding text so that it \
         occurs exactly once; the file is unchanged",
        lines.join(", ")
    )
}

/// One entry directly in a listed directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Entry {
    File,
    /// A subdirectory and the number of files under it.
    Directory(usize),
}

impl ListFiles {
    /// `list_files` over `storage`.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        ListFiles {
            schema: ToolSchema {
                name: "list_files".to_string(),
                description: format!(
                    "List the files and subdirectories directly in a workspace directory, \
                     sorted (at most {LIST_FILES_ENTRIES_MAX})."
                ),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "dir": {
                            "type": "string",
                            "description": "Directory relative to the workspace root; omit for the root.",
                        },
                    },
                }),
            },
            storage,
        }
    }

    async fn run(&self, call: &ToolCall) -> Result<ToolOutcome, ToolOutcome> {
        let schema = &self.schema;
        let dir = Arguments::parse(schema, &call.arguments)
            .and_then(|arguments| arguments.optional_string("dir", PATH_CHARS_MAX))
            .map_err(|error| error.outcome(schema))?;
        let dir = match dir.unwrap_or("") {
            "" | "." | "./" => None,
            dir => Some(checked_path(dir)?),
        };
        let prefix = dir.as_ref().map_or(String::new(), |dir| format!("{dir}/"));
        let storage = self.storage.as_ref();
        let mut files = storage
            .list(&prefix)
            .await
            .map_err(|error| ToolOutcome::error(error.to_string()))?;
        files.retain(|file| !is_session_log(file));
        let label = dir
            .as_ref()
            .map_or("workspace root".to_string(), |dir| format!("{dir}/"));
        if files.is_empty() {
            return match &dir {
                None => Ok(ToolOutcome::text("[workspace root: empty]")),
                Some(dir) if matches!(storage.read(dir).await, Ok(Some(_))) => {
                    Err(ToolOutcome::error(format!(
                        "`{dir}` is a file, not a directory; read it with read_file"
                    )))
                }
                Some(dir) => Err(ToolOutcome::error(format!(
                    "no directory `{dir}` in the workspace; list_files without `dir` lists the root"
                ))),
            };
        }
        Ok(ToolOutcome::text(render_listing(&label, &prefix, &files)))
    }
}

/// The listing text: a header with counts, one entry per line, an "N more" note.
fn render_listing(label: &str, prefix: &str, files: &[WorkspacePath]) -> String {
    let mut entries: BTreeMap<(&str, bool), Entry> = BTreeMap::new();
    for file in files {
        let rest = &file.as_str()[prefix.len()..];
        match rest.split_once('/') {
            Some((directory, _)) => {
                let entry = entries
                    .entry((directory, true))
                    .or_insert(Entry::Directory(0));
                if let Entry::Directory(count) = entry {
                    *count += 1;
                }
            }
            None => {
                entries.insert((rest, false), Entry::File);
            }
        }
    }
    let file_count = entries.values().filter(|e| **e == Entry::File).count();
    let directory_count = entries.len() - file_count;
    let mut out = format!(
        "[{label}: {file_count} file{}, {directory_count} director{}]",
        if file_count == 1 { "" } else { "s" },
        if directory_count == 1 { "y" } else { "ies" }
    );
    for ((name, _), entry) in entries.iter().take(LIST_FILES_ENTRIES_MAX) {
        match entry {
            Entry::File => out.push_str(&format!("\n{prefix}{name}")),
            Entry::Directory(count) => out.push_str(&format!(
                "\n{prefix}{name}/ ({count} file{})",
                if *count == 1 { "" } else { "s" }
            )),
        }
    }
    if entries.len() > LIST_FILES_ENTRIES_MAX {
        out.push_str(&format!(
            "\n[… and {} more entries; list a subdirectory to narrow the listing]",
            entries.len() - LIST_FILES_ENTRIES_MAX
        ));
    }
    out
}

#[async_trait]
impl Tool for WriteFile {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        settle(self.run(call).await)
    }
}

#[async_trait]
impl Tool for EditFile {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        settle(self.run(call).await)
    }
}

#[async_trait]
impl Tool for ListFiles {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        settle(self.run(call).await)
    }
}
