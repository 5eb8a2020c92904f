//! `read_file`: a workspace text file, one bounded page at a time.
//!
//! A page starts at a line (`offset`, **1-based**, as line numbers are shown) and, within that
//! line, at a character (`char_offset`, 0-based). It holds at most `limit` lines (default
//! [`READ_FILE_LINES_DEFAULT`]) and at most [`READ_FILE_CHARS_MAX`] characters, newlines included.
//! Pages end on a line boundary whenever they can; only a line that does not fit in a page of its
//! own is cut, and the next page continues inside it. So a single-line multi-megabyte file (an
//! offloaded tool result) is read in bounded pages by `char_offset`.
//!
//! The result opens with a header naming what is shown, then the text, then — when more remains
//! — the exact call that continues:
//!
//! ```text
//! [big.log: line 1 of 1, chars 0-20000 of 200000]
//! 2026-01-01T00:00:00Z INFO export[5012]: …
//! [truncated: call read_file again with path="big.log", offset=1, char_offset=20000 to continue]
//! ```
//!
//! Reading past the end is a short, non-error result that says where the file ends. Missing
//! files, directories, binary (non-UTF-8 or NUL-holding) content and bad arguments are error
//! results. [`page`] is the pure paging step:
//!
//! ```
//! use ctxbed_harness::tools::read::{Page, PageRequest, page};
//! let text = "one\ntwo\nthree\n";
//! let request = PageRequest { line: 2, char_offset: 0, lines_max: 1, chars_max: 100 };
//! match page(text, request) {
//!     Page::Content { text, next, .. } => {
//!         assert_eq!(text, "two\n");
//!         assert_eq!(next, Some((3, 0)));
//!     }
//!     other => panic!("{other:?}"),
//! }
//! ```

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::args::{ArgumentError, Arguments};
use super::workspace::{checked_path, load_text};
use super::{Tool, ToolContext, ToolOutcome, ToolSchema};
use crate::limits::{
    PATH_CHARS_MAX, READ_FILE_CHARS_MAX, READ_FILE_LINES_DEFAULT, READ_FILE_LINES_MAX,
};
use crate::message::ToolCall;
use crate::storage::Storage;

/// Where a page starts and how much it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// First line, 1-based.
    pub line: usize,
    /// First character within that line, 0-based.
    pub char_offset: usize,
    /// Most lines in the page (at least 1).
    pub lines_max: usize,
    /// Most characters in the page, newlines included (at least 1).
    pub chars_max: usize,
}

/// One page of a text, or why there is nothing to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page<'a> {
    /// The text is empty.
    Empty,
    /// `line` is after the last line.
    PastEnd {
        /// Lines in the text.
        line_count: usize,
    },
    /// `char_offset` is at or after the end of the starting line.
    PastLineEnd {
        /// Lines in the text.
        line_count: usize,
        /// Length of the starting line in characters, newline excluded.
        line_chars: usize,
    },
    /// A contiguous slice of the text.
    Content {
        /// The page: a slice of the text, newlines kept.
        text: &'a str,
        /// First line shown, 1-based.
        first_line: usize,
        /// Last line shown, 1-based.
        last_line: usize,
        /// Character of the first line where the page starts.
        start_char: usize,
        /// When the last line is cut: the character where the page stops in it, and the line's
        /// length in characters (newline excluded).
        cut: Option<(usize, usize)>,
        /// Where the next page starts (`line`, `char_offset`), if anything remains.
        next: Option<(usize, usize)>,
        /// Lines in the text.
        line_count: usize,
        /// Length of the first line in characters, newline excluded.
        first_line_chars: usize,
    },
}

/// Cuts one page out of `text`. Pure; linear in the text. The passes over it are vectorised
/// or blockwise: newlines are tallied in blocks, the starting line's characters are counted
/// once, the skip to `char_offset` counts characters in blocks, and a later line is counted
/// only up to what the page still has room for.
///
/// # Panics
/// When `lines_max` or `chars_max` is zero (a page must be able to make progress).
pub fn page(text: &str, request: PageRequest) -> Page<'_> {
    assert!(request.lines_max > 0, "a page holds at least one line");
    assert!(request.chars_max > 0, "a page holds at least one character");
    let line_count = line_count(text);
    if line_count == 0 {
        return Page::Empty;
    }
    if request.line == 0 || request.line > line_count {
        return Page::PastEnd { line_count };
    }
    let line_start: usize = text
        .split_inclusive('\n')
        .take(request.line - 1)
        .map(str::len)
        .sum();
    let rest = &text[line_start..];
    let first_content = rest.split('\n').next().unwrap_or("");
    let first_line_chars = first_content.chars().count();
    if request.char_offset > 0 && request.char_offset >= first_line_chars {
        return Page::PastLineEnd {
            line_count,
            line_chars: first_line_chars,
        };
    }
    let start = line_start + byte_index(first_content, request.char_offset);
    let filled = fill(text, start, request, first_line_chars);
    assert!(filled.taken > 0, "every page makes progress");
    Page::Content {
        text: &text[start..filled.end],
        first_line: request.line,
        last_line: request.line + filled.taken - 1,
        start_char: request.char_offset,
        cut: filled.cut,
        next: filled.next,
        line_count,
        first_line_chars,
    }
}

/// How far a page starting at byte `start` reaches: see [`Page::Content`].
struct Filled {
    /// Byte where the page ends.
    end: usize,
    /// Lines taken, whole or cut.
    taken: usize,
    cut: Option<(usize, usize)>,
    next: Option<(usize, usize)>,
}

/// Takes lines from byte `start` (character `request.char_offset` of line `request.line`, whose
/// length is `first_line_chars`) while the page has room for them.
fn fill(text: &str, start: usize, request: PageRequest, first_line_chars: usize) -> Filled {
    let mut filled = Filled {
        end: start,
        taken: 0,
        cut: None,
        next: None,
    };
    let mut budget = request.chars_max;
    for (index, segment) in text[start..].split_inclusive('\n').enumerate() {
        let line = request.line + index;
        if filled.taken == request.lines_max || budget == 0 {
            filled.next = Some((line, 0));
            break;
        }
        let content = segment.strip_suffix('\n').unwrap_or(segment);
        // The first segment is the rest of the starting line, whose length is known. A later
        // line is only compared with the budget (it is never cut: a page that already holds a
        // line ends before a line that does not fit), so its count stops past the budget.
        let content_chars = if index == 0 {
            first_line_chars - request.char_offset
        } else {
            chars_at_most(content, budget + 1)
        };
        if content_chars < budget || (content_chars == budget && content.len() == segment.len()) {
            // The whole line fits (its newline too, when it has one and there is room).
            filled.end += segment.len();
            budget -= content_chars + usize::from(content.len() < segment.len());
        } else if content_chars == budget {
            // The line's text fits exactly; its newline is left out of the page.
            filled.end += content.len();
            budget = 0;
        } else if filled.taken > 0 {
            // Keep pages line-aligned: this line starts the next page.
            filled.next = Some((line, 0));
            break;
        } else {
            // A line too long for a page of its own is cut, and the next page continues in it.
            filled.end += byte_index(content, budget);
            let offset_in_line = if index == 0 { request.char_offset } else { 0 };
            let stop = offset_in_line + budget;
            filled.cut = Some((stop, offset_in_line + content_chars));
            filled.next = Some((line, stop));
            filled.taken += 1;
            break;
        }
        filled.taken += 1;
    }
    filled
}

/// Lines in `text`: its newlines, plus one for a last line without a newline. Newlines are
/// counted in one-byte tallies over blocks of 255 bytes, which cannot overflow and which the
/// compiler vectorises (several times faster than a filtered count).
fn line_count(text: &str) -> usize {
    let newlines: usize = text
        .as_bytes()
        .chunks(usize::from(u8::MAX))
        .map(|block| {
            let tally = block
                .iter()
                .fold(0u8, |tally, byte| tally + u8::from(*byte == b'\n'));
            usize::from(tally)
        })
        .sum();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// Characters in `text`, counting no further than `limit`: `min(count, limit)`.
fn chars_at_most(text: &str, limit: usize) -> usize {
    text[..byte_index(text, limit)].chars().count()
}

/// Byte index of the `chars`-th character of `text` (its length when shorter). Skipping
/// characters with [`Iterator::nth`] on [`str::chars`] counts them in blocks, far faster than
/// stepping through `char_indices`.
fn byte_index(text: &str, chars: usize) -> usize {
    let mut rest = text.chars();
    if chars > 0 {
        rest.nth(chars - 1);
    }
    text.len() - rest.as_str().len()
}

/// The `read_file` tool over a workspace [`Storage`].
pub struct ReadFile {
    schema: ToolSchema,
    storage: Arc<dyn Storage>,
}

impl ReadFile {
    /// `read_file` over `storage`.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        let parameters = json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path relative to the workspace root, e.g. `src/main.rs`.",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Line to start at, 1-based (default 1).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": READ_FILE_LINES_MAX,
                    "description": format!("Most lines to return (default {READ_FILE_LINES_DEFAULT})."),
                },
                "char_offset": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Character of the starting line to begin at, 0-based (default 0), for long lines.",
                },
            },
            "required": ["path"],
        });
        ReadFile {
            schema: ToolSchema {
                name: "read_file".to_string(),
                description: format!(
                    "Read a UTF-8 text file in the workspace, one page at a time: at most `limit` \
                     lines and {READ_FILE_CHARS_MAX} characters. When more remains, the result \
                     ends with the exact call that continues."
                ),
                parameters,
            },
            storage,
        }
    }

    async fn run(&self, call: &ToolCall) -> Result<ToolOutcome, ToolOutcome> {
        let schema = &self.schema;
        let (path, request) =
            read_arguments(schema, &call.arguments).map_err(|error| error.outcome(schema))?;
        let path = checked_path(&path)?;
        let text = load_text(self.storage.as_ref(), &path).await?;
        Ok(ToolOutcome::text(render(path.as_str(), &text, request)))
    }
}

fn read_arguments(
    schema: &ToolSchema,
    arguments: &serde_json::Value,
) -> Result<(String, PageRequest), ArgumentError> {
    let arguments = Arguments::parse(schema, arguments)?;
    let path = arguments.required_string("path", PATH_CHARS_MAX)?;
    let line = arguments
        .optional_count("offset", 1, u64::MAX)?
        .unwrap_or(1);
    let lines_max = arguments
        .optional_count("limit", 1, READ_FILE_LINES_MAX as u64)?
        .unwrap_or(READ_FILE_LINES_DEFAULT as u64);
    let char_offset = arguments
        .optional_count("char_offset", 0, u64::MAX)?
        .unwrap_or(0);
    let request = PageRequest {
        line: usize::try_from(line).unwrap_or(usize::MAX),
        char_offset: usize::try_from(char_offset).unwrap_or(usize::MAX),
        lines_max: usize::try_from(lines_max).unwrap_or(READ_FILE_LINES_MAX),
        chars_max: READ_FILE_CHARS_MAX,
    };
    Ok((path.to_string(), request))
}

/// The result text for one page of `text`.
fn render(path: &str, text: &str, request: PageRequest) -> String {
    let quoted_path = serde_json::Value::from(path).to_string();
    match page(text, request) {
        Page::Empty => format!("[{path} is empty]"),
        Page::PastEnd { line_count } => format!(
            "[{path} has {line_count} line{}; offset {} is past the end of the file, so there is \
             nothing more to read]",
            plural(line_count),
            request.line
        ),
        Page::PastLineEnd {
            line_count,
            line_chars,
        } => {
            let after = if request.line < line_count {
                format!(
                    "continue with path={quoted_path}, offset={}",
                    request.line + 1
                )
            } else {
                "that is the end of the file".to_string()
            };
            format!(
                "[line {} of {path} has {line_chars} chars; char_offset {} is past its end; {after}]",
                request.line, request.char_offset
            )
        }
        Page::Content {
            text: shown,
            first_line,
            last_line,
            start_char,
            cut,
            next,
            line_count,
            first_line_chars,
        } => {
            let header = content_header(
                path,
                (first_line, last_line),
                line_count,
                start_char,
                cut,
                first_line_chars,
            );
            let mut out = format!("{header}\n{shown}");
            let whole_file = first_line == 1 && start_char == 0;
            let Some(trailer) = content_trailer(&quoted_path, next, line_count, whole_file) else {
                return out;
            };
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&trailer);
            out
        }
    }
}

/// A page's header: the lines shown (`first`, `last`) of `line_count`, and where a line is
/// entered or cut.
fn content_header(
    path: &str,
    (first_line, last_line): (usize, usize),
    line_count: usize,
    start_char: usize,
    cut: Option<(usize, usize)>,
    first_line_chars: usize,
) -> String {
    let lines = if first_line == last_line {
        format!("line {first_line}")
    } else {
        format!("lines {first_line}-{last_line}")
    };
    let mut header = format!("[{path}: {lines} of {line_count}");
    match (first_line == last_line, start_char, cut) {
        (true, _, Some((stop, chars))) => {
            header.push_str(&format!(", chars {start_char}-{stop} of {chars}"));
        }
        (true, 1.., None) => {
            header.push_str(&format!(
                ", chars {start_char}-{first_line_chars} of {first_line_chars}"
            ));
        }
        (false, _, _) => {
            if start_char > 0 {
                header.push_str(&format!("; line {first_line} from char {start_char}"));
            }
            if let Some((stop, chars)) = cut {
                header.push_str(&format!("; line {last_line} up to char {stop} of {chars}"));
            }
        }
        (true, 0, None) => {}
    }
    header.push(']');
    header
}

/// A page's trailer: the call that continues, or the end of the file. `None` when the page
/// shows the whole file (`whole_file`: it starts at its beginning and nothing follows), which
/// the header already says.
fn content_trailer(
    quoted_path: &str,
    next: Option<(usize, usize)>,
    line_count: usize,
    whole_file: bool,
) -> Option<String> {
    Some(match next {
        Some((line, 0)) => {
            let rest = if line == line_count {
                format!("line {line}")
            } else {
                format!("lines {line}-{line_count}")
            };
            format!(
                "[truncated: {rest} not shown; call read_file again with \
                 path={quoted_path}, offset={line} to continue]"
            )
        }
        Some((line, char_offset)) => format!(
            "[truncated: call read_file again with path={quoted_path}, offset={line}, \
             char_offset={char_offset} to continue]"
        ),
        None if whole_file => return None,
        None => "[end of file]".to_string(),
    })
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

#[async_trait]
impl Tool for ReadFile {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        self.run(call).await.unwrap_or_else(|outcome| outcome)
    }
}
