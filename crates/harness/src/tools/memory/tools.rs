//! The `memory_search` and `memory_get` tools over the memory store of [`super`].
//!
//! `memory_search(query, limit?)` lists the best entries as `id (score of words, section):
//! snippet`; `memory_get(id)` shows one whole entry. No match and an empty memory are plain
//! results; a query without searchable words, a malformed or unknown id and a file outside the
//! memory are error results that say what exists.
//!
//! ```
//! use std::sync::Arc;
//! use ctxbed_harness::message::ToolCall;
//! use ctxbed_harness::runtime::RuntimeContext;
//! use ctxbed_harness::storage::{MemoryStorage, Storage, WorkspacePath};
//! use ctxbed_harness::tools::memory::MemoryGet;
//! use ctxbed_harness::tools::{Tool, ToolContext};
//! use serde_json::json;
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let storage = Arc::new(MemoryStorage::new());
//!     let path = WorkspacePath::parse("MEMORY.md").unwrap();
//!     storage.write(&path, b"Deploys happen on Fridays.\n".to_vec()).await.unwrap();
//!     let tool = MemoryGet::new(storage);
//!     let call = ToolCall { id: "c1".into(), name: "memory_get".into(), arguments: json!({"id": "MEMORY.md:1"}) };
//!     let context = ToolContext { agent_id: "a".into(), runtime: RuntimeContext::new(), call_id: "call-1".into() };
//!     let outcome = tool.call(&call, &context).await;
//!     assert!(!outcome.is_error);
//! });
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::{
    EntryId, MEMORY_DIR, MEMORY_FILE, MemoryEntry, MemoryIndex, is_memory_file, load_memory,
    parse_entries, search, words,
};
use crate::format::snippet;
use crate::limits::{
    MEMORY_QUERY_CHARS_MAX, MEMORY_SEARCH_RESULTS_DEFAULT, MEMORY_SEARCH_RESULTS_MAX,
    MEMORY_SNIPPET_CHARS_MAX, PATH_CHARS_MAX, READ_FILE_CHARS_MAX,
};
use crate::message::ToolCall;
use crate::storage::Storage;
use crate::tools::args::Arguments;
use crate::tools::workspace::checked_path;
use crate::tools::{Tool, ToolContext, ToolOutcome, ToolSchema};

/// The `memory_search` tool: ranked entries for a query.
pub struct MemorySearch {
    schema: ToolSchema,
    storage: Arc<dyn Storage>,
}

/// The `memory_get` tool: one whole entry by id.
pub struct MemoryGet {
    schema: ToolSchema,
    storage: Arc<dyn Storage>,
}

impl MemorySearch {
    /// `memory_search` over `storage`.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        MemorySearch {
            schema: ToolSchema {
                name: "memory_search".to_string(),
                description: "Search long-term memory (MEMORY.md and memory/*.md) for entries \
                              sharing words with the query; returns entry ids for memory_get."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "A few words to look for."},
                        "limit": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": MEMORY_SEARCH_RESULTS_MAX,
                            "description": format!("Most results (default {MEMORY_SEARCH_RESULTS_DEFAULT})."),
                        },
                    },
                    "required": ["query"],
                }),
            },
            storage,
        }
    }

    async fn run(&self, call: &ToolCall) -> Result<ToolOutcome, ToolOutcome> {
        let schema = &self.schema;
        let (query, limit) = Arguments::parse(schema, &call.arguments)
            .and_then(|arguments| {
                let query = arguments.required_string("query", MEMORY_QUERY_CHARS_MAX)?;
                let limit =
                    arguments.optional_count("limit", 1, MEMORY_SEARCH_RESULTS_MAX as u64)?;
                Ok((query, limit))
            })
            .map_err(|error| error.outcome(schema))?;
        let limit = limit.map_or(MEMORY_SEARCH_RESULTS_DEFAULT, |l| {
            usize::try_from(l).unwrap_or(MEMORY_SEARCH_RESULTS_MAX)
        });
        let query_words = words(query);
        if query_words.is_empty() {
            return Err(ToolOutcome::error(format!(
                "the query {} has no searchable words (two or more letters or digits; common \
                 words are ignored); search for a few distinctive words, e.g. \"release checklist\"",
                quoted(query)
            )));
        }
        let memory = load_memory(self.storage.as_ref())
            .await
            .map_err(|error| ToolOutcome::error(error.to_string()))?;
        Ok(ToolOutcome::text(render_search(
            &memory,
            query,
            query_words.len(),
            limit,
        )))
    }
}

fn render_search(memory: &MemoryIndex, query: &str, query_words: usize, limit: usize) -> String {
    let notes: String = memory
        .notes
        .iter()
        .map(|note| format!("\n[{note}]"))
        .collect();
    if memory.file_count == 0 {
        return format!(
            "[memory is empty: no {MEMORY_FILE} and no {MEMORY_DIR}/*.md files]{notes}"
        );
    }
    let matched = search(memory, query, usize::MAX).len();
    let hits = search(memory, query, limit);
    let searched = format!(
        "{} in {}",
        counted(memory.entries.len(), "entry", "entries"),
        counted(memory.file_count, "file", "files")
    );
    if hits.is_empty() {
        return format!(
            "[no memory entry matches {}; searched {searched}; try other words]{notes}",
            quoted(query)
        );
    }
    let shown = if hits.len() < matched {
        format!("the best {} shown", hits.len())
    } else {
        "best first".to_string()
    };
    let mut out = format!(
        "[{} {} {} (searched {searched}); {shown}]",
        counted(matched, "entry", "entries"),
        if matched == 1 { "matches" } else { "match" },
        quoted(query)
    );
    for hit in &hits {
        let section = hit
            .entry
            .section
            .as_ref()
            .map_or(String::new(), |s| format!(", section {}", quoted(s)));
        let text = hit
            .entry
            .text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        out.push_str(&format!(
            "\n{} ({} of {query_words} words{section}): {}",
            hit.entry.id,
            hit.score,
            snippet(&text, MEMORY_SNIPPET_CHARS_MAX)
        ));
    }
    out.push_str("\n[memory_get with an id shows the whole entry]");
    out.push_str(&notes);
    out
}

/// "1 entry", "3 entries".
fn counted(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// A bounded, JSON-quoted rendering of model-given text.
fn quoted(text: &str) -> String {
    serde_json::Value::from(snippet(text, MEMORY_SNIPPET_CHARS_MAX)).to_string()
}

impl MemoryGet {
    /// `memory_get` over `storage`.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        MemoryGet {
            schema: ToolSchema {
                name: "memory_get".to_string(),
                description: "Show one whole memory entry by the id memory_search gave, e.g. \
                              `MEMORY.md:12`."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "An entry id: memory file and first line."},
                    },
                    "required": ["id"],
                }),
            },
            storage,
        }
    }

    async fn run(&self, call: &ToolCall) -> Result<ToolOutcome, ToolOutcome> {
        let schema = &self.schema;
        let id = Arguments::parse(schema, &call.arguments)
            .and_then(|arguments| arguments.required_string("id", PATH_CHARS_MAX + 24))
            .map_err(|error| error.outcome(schema))?;
        let id = parse_id(id)?;
        let bytes = match self.storage.read(&id.path).await {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(ToolOutcome::error(format!(
                    "no memory entry `{id}`: {} does not exist; memory_search finds entries",
                    id.path
                )));
            }
            Err(error) => return Err(ToolOutcome::error(error.to_string())),
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(ToolOutcome::error(format!(
                "{} is not UTF-8 text, so it holds no memory entries",
                id.path
            )));
        };
        let entries = parse_entries(&id.path, &text);
        match entries.iter().find(|entry| entry.id == id) {
            Some(entry) => Ok(ToolOutcome::text(render_entry(entry))),
            None => Err(ToolOutcome::error(no_entry(&id, &entries))),
        }
    }
}

/// Parses `file:line`, where the file must be a memory file.
fn parse_id(id: &str) -> Result<EntryId, ToolOutcome> {
    let shape = || {
        ToolOutcome::error(format!(
            "memory ids look like `MEMORY.md:12` (memory file and first line, as memory_search \
             shows them); got {}",
            quoted(id)
        ))
    };
    let (path, line) = id.rsplit_once(':').ok_or_else(shape)?;
    let line: usize = line.parse().map_err(|_| shape())?;
    if line == 0 {
        return Err(shape());
    }
    let path = checked_path(path)?;
    if !is_memory_file(&path) {
        return Err(ToolOutcome::error(format!(
            "`{path}` is not a memory file; memory lives in {MEMORY_FILE} and {MEMORY_DIR}/*.md \
             (read other files with read_file)"
        )));
    }
    Ok(EntryId { path, line })
}

fn no_entry(id: &EntryId, entries: &[MemoryEntry]) -> String {
    if entries.is_empty() {
        return format!(
            "no memory entry `{id}`: {} holds no entries; memory_search finds entries",
            id.path
        );
    }
    let mut starts: Vec<String> = entries
        .iter()
        .take(10)
        .map(|entry| entry.id.line.to_string())
        .collect();
    if entries.len() > 10 {
        starts.push("…".to_string());
    }
    format!(
        "no memory entry `{id}`; entries in {} start at lines {}; memory_search finds entries",
        id.path,
        starts.join(", ")
    )
}

fn render_entry(entry: &MemoryEntry) -> String {
    let section = entry
        .section
        .as_ref()
        .map_or(String::new(), |s| format!(", section {}", quoted(s)));
    let lines = if entry.last_line == entry.id.line {
        format!("line {}", entry.id.line)
    } else {
        format!("lines {}-{}", entry.id.line, entry.last_line)
    };
    let header = format!("[{}: {lines}{section}]", entry.id.path);
    let chars = entry.text.chars().count();
    if chars <= READ_FILE_CHARS_MAX {
        return format!("{header}\n{}", entry.text);
    }
    let shown: String = entry.text.chars().take(READ_FILE_CHARS_MAX).collect();
    format!(
        "{header}\n{shown}\n[entry cut at {READ_FILE_CHARS_MAX} of {chars} chars; read_file with \
         path={}, offset={} shows the rest]",
        serde_json::Value::from(entry.id.path.as_str()),
        entry.id.line
    )
}

#[async_trait]
impl Tool for MemorySearch {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        self.run(call).await.unwrap_or_else(|outcome| outcome)
    }
}

#[async_trait]
impl Tool for MemoryGet {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        self.run(call).await.unwrap_or_else(|outcome| outcome)
    }
}
