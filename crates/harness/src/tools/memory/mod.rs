//! Memory: a small deterministic store of notes over the workspace, the `memory_search` and
//! `memory_get` tools, and [`flush_facts`], which a compaction's memory flush calls.
//!
//! **Layout.** Memory is plain Markdown in the workspace, so people and the file tools can read
//! and edit it: the curated `MEMORY.md` at the root, plus every `memory/**/*.md` file (searched
//! in that order, at most [`MEMORY_FILES_MAX`] files). Flushed facts are appended to
//! [`FACTS_FILE`] (`memory/facts.md`), one `- ` list item per fact.
//!
//! **Entries.** A memory file is split into entries: each paragraph (lines up to a blank line)
//! and each top-level list item (`- `, `* `, `+ `, `1. `) is one entry; indented lines and
//! fenced code blocks stay with their entry. A heading is not an entry: it names the *section*
//! of the entries under it, and its words count in search. An entry's id is its file and first
//! line, `MEMORY.md:12` ([`EntryId`]): readable, and stable while the file is only appended to.
//!
//! **Search.** Query and entries are split into lower-cased words of two or more letters or
//! digits (each CJK character is a word; common English words are ignored). An entry's score
//! is the number of distinct query words it holds, section included. Results are ordered by
//! score, then by id (file order, then line), so the same memory and query always give the same
//! results; the tool returns at most
//! [`MEMORY_SEARCH_RESULTS_MAX`](crate::limits::MEMORY_SEARCH_RESULTS_MAX).
//!
//! The tools over this store, `memory_search` and `memory_get`, are in [`tools`] and re-exported
//! here as [`MemorySearch`] and [`MemoryGet`].
//!
//! ```
//! use ctxbed_harness::storage::{MemoryStorage, Storage, WorkspacePath};
//! use ctxbed_harness::tools::memory::{flush_facts, load_memory, search};
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let storage = MemoryStorage::new();
//!     let path = WorkspacePath::parse("MEMORY.md").unwrap();
//!     storage.write(&path, b"# Release\n\nTag only after the checklist passes.\n".to_vec()).await.unwrap();
//!     let facts = vec!["Exports use UTF-8.".to_string(), "exports use  UTF-8.".to_string()];
//!     assert_eq!(flush_facts(&storage, &facts).await.unwrap(), 1); // the second is a duplicate
//!     let memory = load_memory(&storage).await.unwrap();
//!     let hits = search(&memory, "release checklist", 5);
//!     assert_eq!(hits[0].entry.id.to_string(), "MEMORY.md:3");
//!     assert_eq!(hits[0].score, 2);
//! });
//! ```

use std::collections::BTreeSet;

use crate::limits::{
    MEMORY_FACT_CHARS_MAX, MEMORY_FILE_CHARS_MAX, MEMORY_FILES_MAX, MEMORY_FLUSH_FACTS_MAX,
};
use crate::storage::{Storage, StorageError, WorkspacePath};

pub mod tools;

pub use tools::{MemoryGet, MemorySearch};

/// The curated memory file at the workspace root.
pub const MEMORY_FILE: &str = "MEMORY.md";

/// The directory whose `*.md` files are memory too.
pub const MEMORY_DIR: &str = "memory";

/// Where [`flush_facts`] appends.
pub const FACTS_FILE: &str = "memory/facts.md";

/// Words that match almost every entry, so they do not count in search.
const COMMON_WORDS: &[&str] = &[
    "an", "and", "are", "as", "at", "be", "but", "by", "did", "do", "does", "for", "from", "had",
    "has", "have", "how", "in", "into", "is", "it", "its", "of", "on", "or", "our", "that", "the",
    "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "with",
    "you", "your",
];

/// Identifies a memory entry: its file and first line (1-based), shown as `file:line`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId {
    /// The memory file.
    pub path: WorkspacePath,
    /// First line of the entry, 1-based.
    pub line: usize,
}

impl std::fmt::Display for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.path, self.line)
    }
}

/// One entry: a paragraph or top-level list item of a memory file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryEntry {
    /// File and first line.
    pub id: EntryId,
    /// The heading the entry sits under, if any.
    pub section: Option<String>,
    /// The entry's lines as written.
    pub text: String,
    /// Last line of the entry, 1-based.
    pub last_line: usize,
}

/// Every entry of the memory, in id order, plus notes on what was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryIndex {
    /// Entries in id order: `MEMORY.md` first, then `memory/` files by path, then by line.
    pub entries: Vec<MemoryEntry>,
    /// Memory files read.
    pub file_count: usize,
    /// Files skipped and why, one sentence each.
    pub notes: Vec<String>,
}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchHit<'a> {
    /// The matching entry.
    pub entry: &'a MemoryEntry,
    /// Distinct query words the entry holds.
    pub score: usize,
}

/// True for `MEMORY.md` and `memory/**/*.md`.
pub fn is_memory_file(path: &WorkspacePath) -> bool {
    let path = path.as_str();
    path == MEMORY_FILE || (path.starts_with("memory/") && path.ends_with(".md"))
}

/// Splits a memory file into entries (see the module documentation for the rules).
pub fn parse_entries(path: &WorkspacePath, text: &str) -> Vec<MemoryEntry> {
    let mut entries = Vec::new();
    let mut section: Option<String> = None;
    let mut current: Option<(usize, Vec<&str>)> = None;
    let mut in_fence = false;
    let close = |current: &mut Option<(usize, Vec<&str>)>,
                 entries: &mut Vec<MemoryEntry>,
                 section: &Option<String>| {
        if let Some((line, lines)) = current.take() {
            entries.push(MemoryEntry {
                id: EntryId {
                    path: path.clone(),
                    line,
                },
                section: section.clone(),
                last_line: line + lines.len() - 1,
                text: lines.join("\n"),
            });
        }
    };
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let fence = line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~");
        if in_fence || fence {
            in_fence ^= fence;
            current.get_or_insert((number, Vec::new())).1.push(line);
            continue;
        }
        if line.trim().is_empty() {
            close(&mut current, &mut entries, &section);
        } else if let Some(heading) = heading_text(line) {
            close(&mut current, &mut entries, &section);
            section = Some(heading.to_string());
        } else {
            if is_list_item(line) {
                close(&mut current, &mut entries, &section);
            }
            current.get_or_insert((number, Vec::new())).1.push(line);
        }
    }
    close(&mut current, &mut entries, &section);
    entries
}

/// The text of a Markdown ATX heading (`# Title` … `###### Title`).
fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &line[hashes..];
    (rest.is_empty() || rest.starts_with(' ')).then(|| rest.trim().trim_end_matches('#').trim())
}

/// A top-level list item: `- `, `* `, `+ `, or digits then `. ` / `) `.
fn is_list_item(line: &str) -> bool {
    if ["- ", "* ", "+ "]
        .iter()
        .any(|marker| line.starts_with(marker))
    {
        return true;
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && (line[digits..].starts_with(". ") || line[digits..].starts_with(") "))
}

/// Reads every memory file into an index.
///
/// # Errors
/// A storage read or listing failed. Unreadable content (not UTF-8, too large) is skipped with
/// a note instead.
pub async fn load_memory(storage: &dyn Storage) -> Result<MemoryIndex, StorageError> {
    let mut paths = Vec::new();
    if let Ok(root) = WorkspacePath::parse(MEMORY_FILE)
        && storage.read(&root).await?.is_some()
    {
        paths.push(root);
    }
    let listed = storage.list(&format!("{MEMORY_DIR}/")).await?;
    paths.extend(listed.into_iter().filter(is_memory_file));
    let mut index = MemoryIndex::default();
    if paths.len() > MEMORY_FILES_MAX {
        index.notes.push(format!(
            "{} memory files were not searched (at most {MEMORY_FILES_MAX})",
            paths.len() - MEMORY_FILES_MAX
        ));
        paths.truncate(MEMORY_FILES_MAX);
    }
    for path in paths {
        let Some(bytes) = storage.read(&path).await? else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            index
                .notes
                .push(format!("{path} is not UTF-8 text and was skipped"));
            continue;
        };
        let chars = text.chars().count();
        if chars > MEMORY_FILE_CHARS_MAX {
            index.notes.push(format!(
                "{path} has {chars} chars (at most {MEMORY_FILE_CHARS_MAX}) and was skipped"
            ));
            continue;
        }
        index.file_count += 1;
        index.entries.extend(parse_entries(&path, &text));
    }
    Ok(index)
}

/// The searchable words of a text: lower-cased runs of two or more letters or digits, each CJK
/// character on its own, common words left out.
pub fn words(text: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    let mut word = String::new();
    let finish = |word: &mut String, words: &mut BTreeSet<String>| {
        if word.chars().count() >= 2 && !COMMON_WORDS.contains(&word.as_str()) {
            words.insert(std::mem::take(word));
        }
        word.clear();
    };
    for c in text.chars().flat_map(char::to_lowercase) {
        if is_cjk(c) {
            finish(&mut word, &mut words);
            words.insert(c.to_string());
        } else if c.is_alphanumeric() {
            word.push(c);
        } else {
            finish(&mut word, &mut words);
        }
    }
    finish(&mut word, &mut words);
    words
}

/// Ideographs, kana and hangul syllables: scripts written without spaces between words.
fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}'
        | '\u{AC00}'..='\u{D7AF}' | '\u{F900}'..='\u{FAFF}')
}

/// The best entries for `query`: score (distinct query words held) descending, then id order.
/// Entries holding no query word are left out; at most `limit` results.
pub fn search<'a>(memory: &'a MemoryIndex, query: &str, limit: usize) -> Vec<SearchHit<'a>> {
    let query = words(query);
    let mut hits: Vec<(usize, SearchHit<'a>)> = memory
        .entries
        .iter()
        .enumerate()
        .filter_map(|(position, entry)| {
            let mut held = words(&entry.text);
            if let Some(section) = &entry.section {
                held.extend(words(section));
            }
            let score = query.intersection(&held).count();
            (score > 0).then_some((position, SearchHit { entry, score }))
        })
        .collect();
    // Entries are in id order already; the position breaks ties without comparing paths.
    hits.sort_by(|(a_position, a), (b_position, b)| {
        b.score.cmp(&a.score).then(a_position.cmp(b_position))
    });
    hits.into_iter().take(limit).map(|(_, hit)| hit).collect()
}

/// Appends facts to [`FACTS_FILE`], one list item each, skipping blanks and facts the memory
/// already holds (compared without list markers, case or extra whitespace). Each fact is put
/// on one line and cut to [`MEMORY_FACT_CHARS_MAX`] characters; at most
/// [`MEMORY_FLUSH_FACTS_MAX`] facts of the batch are considered. Best-effort: a fact can be lost,
/// a duplicate never added. Returns the number of facts appended.
///
/// # Errors
/// Reading the memory or writing the facts file failed, or the facts file is not UTF-8 text;
/// the facts file is then unchanged.
pub async fn flush_facts(storage: &dyn Storage, facts: &[String]) -> Result<usize, StorageError> {
    let memory = load_memory(storage).await?;
    let mut known: BTreeSet<String> = memory
        .entries
        .iter()
        .map(|entry| normalized(&entry.text))
        .collect();
    let mut added = Vec::new();
    for fact in facts.iter().take(MEMORY_FLUSH_FACTS_MAX) {
        let line = one_line(fact);
        if line.is_empty() || !known.insert(normalized(&line)) {
            continue;
        }
        added.push(line);
    }
    if added.is_empty() {
        return Ok(0);
    }
    let path = facts_path();
    let mut text = match storage.read(&path).await? {
        Some(bytes) => String::from_utf8(bytes).map_err(|_| StorageError::ReadFailed {
            path: path.to_string(),
            reason: "not UTF-8 text, so facts cannot be appended".to_string(),
        })?,
        None => "# Facts\n\n".to_string(),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for line in &added {
        text.push_str("- ");
        text.push_str(line);
        text.push('\n');
    }
    storage.write(&path, text.into_bytes()).await?;
    Ok(added.len())
}

fn facts_path() -> WorkspacePath {
    WorkspacePath::parse(FACTS_FILE).unwrap_or_else(|error| unreachable!("{FACTS_FILE}: {error}"))
}

/// A fact on one line without a list marker, whitespace collapsed, cut to the fact limit.
fn one_line(fact: &str) -> String {
    let collapsed = fact.split_whitespace().collect::<Vec<_>>().join(" ");
    let bare = strip_list_marker(&collapsed);
    if bare.chars().count() <= MEMORY_FACT_CHARS_MAX {
        return bare.to_string();
    }
    let mut cut: String = bare.chars().take(MEMORY_FACT_CHARS_MAX - 1).collect();
    cut.push('…');
    cut
}

/// The comparison key of an entry or fact.
fn normalized(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    strip_list_marker(&collapsed).to_lowercase()
}

fn strip_list_marker(text: &str) -> &str {
    for marker in ["- ", "* ", "+ "] {
        if let Some(rest) = text.strip_prefix(marker) {
            return rest;
        }
    }
    text
}
