//! Every maximum of the harness, in one place, each with the reason it exists.
//!
//! Hitting a limit is a typed error that names the limit and how to raise it; nothing in the
//! harness or the simulator loops, queues or reads without one of these bounds.

/// Default number of reasoning steps one `call` may take before it fails with
/// `AgentError::MaxStepsExceeded`. A mock model that calls tools forever must stop, not hang CI.
/// Raise it per agent with `HarnessAgentBuilder::max_steps` (scenario: `agent.max_steps`).
pub const STEPS_PER_CALL_DEFAULT: u32 = 32;

/// Hard ceiling on `max_steps`, whatever the configuration says.
pub const STEPS_PER_CALL_MAX: u32 = 1_024;

/// Tool calls one model reply may carry. Real providers cap parallel calls far lower.
pub const TOOL_CALLS_PER_REPLY_MAX: usize = 128;

/// Characters of provider body or model reply quoted in an error or a trace line.
pub const SNIPPET_CHARS_MAX: usize = 240;

const _: () = assert!(STEPS_PER_CALL_DEFAULT <= STEPS_PER_CALL_MAX);

/// Summary requests per compaction: the first, then smaller ones after a summariser overflow.
pub const SUMMARY_ATTEMPTS_MAX: u32 = 3;

/// Characters a scripted tool may generate for one result (a 10 MB result is a real case).
pub const TOOL_RESULT_CHARS_MAX: usize = 64 * 1024 * 1024;

/// Characters of a workspace path. Real file systems stop near 4,096 bytes; a longer "path" is
/// a model pasting content into the wrong argument.
pub const PATH_CHARS_MAX: usize = 1_024;

/// Bytes of one file a workspace directory on disk reads at most: the largest a workspace file
/// or a session log may be, so a huge file someone left in the directory is refused by its size,
/// never loaded into memory.
pub const FS_READ_BYTES_MAX: usize = if WORKSPACE_FILE_BYTES_MAX > SESSION_LOG_BYTES_MAX {
    WORKSPACE_FILE_BYTES_MAX
} else {
    SESSION_LOG_BYTES_MAX
};

/// Files one listing of a workspace directory on disk returns at most: a listing is a walk of
/// the directory tree, and a workspace that holds more is listed by a narrower prefix.
pub const FS_LIST_ENTRIES_MAX: usize = 100_000;

/// Characters of file content one `read_file` call returns. About 5,000–8,000 tokens: enough to
/// read a screenful of code, small enough that a single-line multi-megabyte file (an offloaded
/// tool result) cannot flood the context again. Longer content is paged with `char_offset`.
pub const READ_FILE_CHARS_MAX: usize = 20_000;

/// Lines one `read_file` call returns when the model gives no `limit`.
pub const READ_FILE_LINES_DEFAULT: usize = 200;

/// Largest `limit` a `read_file` call may ask for; the character bound applies as well.
pub const READ_FILE_LINES_MAX: usize = 2_000;

/// Bytes of a workspace file the built-in tools will load. Large enough for any offloaded tool
/// result (`TOOL_RESULT_CHARS_MAX` characters of up to four UTF-8 bytes each).
pub const WORKSPACE_FILE_BYTES_MAX: usize = 4 * TOOL_RESULT_CHARS_MAX;

/// Characters of `content` in one `write_file` call. The content is model output, which real
/// providers cap far below this; more is a runaway generation, not a file.
pub const WRITE_FILE_CHARS_MAX: usize = 1_000_000;

/// Characters of `old` or `new` in one `edit_file` call. Edits are targeted; a rewrite of the
/// whole file is a `write_file`.
pub const EDIT_TEXT_CHARS_MAX: usize = 100_000;

/// Matches of `old` that `edit_file` counts before it stops and says "at least".
pub const EDIT_MATCHES_COUNTED_MAX: usize = 1_000;

/// Line numbers of ambiguous matches that an `edit_file` error lists.
pub const EDIT_MATCHES_LISTED_MAX: usize = 10;

/// Entries one `list_files` call shows; the rest are counted in an "N more" note.
pub const LIST_FILES_ENTRIES_MAX: usize = 200;

/// Characters of a `memory_search` query. A query is a few words; more is pasted content.
pub const MEMORY_QUERY_CHARS_MAX: usize = 1_000;

/// Results `memory_search` returns when the model gives no `limit`.
pub const MEMORY_SEARCH_RESULTS_DEFAULT: usize = 5;

/// Largest `limit` a `memory_search` call may ask for. Search points at entries;
/// `memory_get` reads them.
pub const MEMORY_SEARCH_RESULTS_MAX: usize = 20;

/// Characters of one entry shown in a `memory_search` result line.
pub const MEMORY_SNIPPET_CHARS_MAX: usize = 200;

/// Memory files (`MEMORY.md` plus `memory/**/*.md`) one search reads, in path order.
pub const MEMORY_FILES_MAX: usize = 256;

/// Characters of one memory file that search reads; a larger file is skipped with a note.
/// Memory is curated notes, not logs.
pub const MEMORY_FILE_CHARS_MAX: usize = 1_000_000;

/// Characters of one fact appended by a memory flush; longer facts are cut with `…`.
pub const MEMORY_FACT_CHARS_MAX: usize = 1_000;

/// Facts one memory flush appends; the rest of the batch is dropped (flush is best-effort).
pub const MEMORY_FLUSH_FACTS_MAX: usize = 100;

/// Sessions `session_list` shows and `session_search` reads, in session order. A user with
/// more narrows by reading one session's history.
pub const SESSIONS_LISTED_MAX: usize = 100;

/// Messages `session_history` returns when the model gives no `lastN`.
pub const SESSION_HISTORY_DEFAULT: usize = 20;

/// Largest `lastN` of one `session_history` call.
pub const SESSION_HISTORY_MAX: usize = 100;

/// Characters of one message shown by `session_history` or one hit of `session_search`.
pub const SESSION_SNIPPET_CHARS_MAX: usize = 400;

/// Characters of a `session_search` query.
pub const SESSION_QUERY_CHARS_MAX: usize = 1_000;

/// Hits one `session_search` call lists; the rest are counted.
pub const SESSION_SEARCH_RESULTS_MAX: usize = 20;

const _: () = assert!(SESSION_HISTORY_DEFAULT <= SESSION_HISTORY_MAX);

const _: () = assert!(READ_FILE_LINES_DEFAULT <= READ_FILE_LINES_MAX);

const _: () = assert!(WRITE_FILE_CHARS_MAX <= WORKSPACE_FILE_BYTES_MAX);

const _: () = assert!(EDIT_TEXT_CHARS_MAX <= WRITE_FILE_CHARS_MAX);

const _: () = assert!(EDIT_MATCHES_LISTED_MAX <= EDIT_MATCHES_COUNTED_MAX);

const _: () = assert!(MEMORY_SEARCH_RESULTS_DEFAULT <= MEMORY_SEARCH_RESULTS_MAX);

const _: () = assert!(MEMORY_FACT_CHARS_MAX <= MEMORY_FILE_CHARS_MAX);

/// Items in one Todo list. A working list the model keeps current at every step; a longer list
/// is a plan document, which belongs in a file, and would crowd every request it is projected
/// into.
pub const TODO_ITEMS_MAX: usize = 100;

/// Characters of one Todo item's `content`. An item names one step of work in a sentence.
pub const TODO_CONTENT_CHARS_MAX: usize = 1_000;

/// Characters of a short task name: a Todo item id, a task id, a requirement source, an
/// authority, a verification check name, a subject version or a plan path. Names are keys,
/// not prose.
pub const TASK_NAME_CHARS_MAX: usize = 128;

/// Characters of a task objective set by `begin_task`. An objective is a paragraph; the
/// details belong in requirements.
pub const TASK_OBJECTIVE_CHARS_MAX: usize = 4_000;

/// Requirements one task holds (the reference's limit). Requirements are acceptance criteria
/// and constraints, projected into every request when enabled; more than this is a document.
pub const REQUIREMENTS_MAX: usize = 64;

/// Characters of one requirement's text.
pub const REQUIREMENT_TEXT_CHARS_MAX: usize = 2_000;

/// Verification reports one task keeps: the latest report per check name. A report is a
/// bounded summary of one check (tests, lint, a review), not a log.
pub const VERIFICATION_CHECKS_MAX: usize = 32;

/// Characters of a verification report's summary; a longer summary is cut with `…` when the
/// report is stored. Full logs belong in storage; the projection carries the verdict.
pub const VERIFICATION_SUMMARY_CHARS_MAX: usize = 2_000;

/// Characters of one encoded path segment of a session log file (agent, user or session id).
/// Longer ids keep a prefix and a content hash, so the whole path stays far below
/// `PATH_CHARS_MAX` and distinct ids keep distinct files.
pub const SESSION_NAME_CHARS_MAX: usize = 96;

/// Bytes of one session log file that the JSON-lines log reads or writes. The log is rewritten
/// whole on each flush (storage has no append), so a session beyond this should start a new
/// session rather than make each flush slower.
pub const SESSION_LOG_BYTES_MAX: usize = 256 * 1024 * 1024;

const _: () = assert!(TASK_NAME_CHARS_MAX <= TODO_CONTENT_CHARS_MAX);

const _: () = assert!(TODO_CONTENT_CHARS_MAX <= TASK_OBJECTIVE_CHARS_MAX);

const _: () = assert!(3 * SESSION_NAME_CHARS_MAX + 32 <= PATH_CHARS_MAX);

/// Per-message token counts one `CachedEstimator` keeps (least recently used evicted first).
/// Enough for the longest inline history and for working histories of 100,000 messages and
/// more; an entry is about 250 bytes with both of its maps (messages themselves are shared with
/// the history, not copied), so a full cache stays under 70 MB. A history longer than this is
/// still counted correctly, only without the saving.
pub const TOKEN_CACHE_ENTRIES_MAX: usize = 262_144;

/// Messages the process-wide exact counters (`tokens::shared_exact_counter`) remember by
/// content: a few scenarios' worth (a generated one sends a few hundred distinct messages), so
/// the second run of a scenario finds the counts of the first. About 4 MB per vocabulary when
/// full; the address-keyed memo in front of it keeps [`TOKEN_CACHE_ENTRIES_MAX`] and costs an
/// entry per message alive only.
pub const SHARED_CONTENT_CACHE_ENTRIES_MAX: usize = 16_384;

/// Texts whose exact count one `CachedEstimator` remembers (least recently used evicted first):
/// material that every step repeats, such as instructions and workspace files. An entry is
/// about 100 bytes (the text is not kept, only its hash), so a full cache stays under 2 MB.
pub const TEXT_CACHE_ENTRIES_MAX: usize = 16_384;

/// Bytes of the shortest text whose exact count is remembered: a shorter one is counted again,
/// which costs about what hashing and looking it up would.
pub const TEXT_CACHE_BYTES_MIN: usize = 128;

/// Tool schemas whose count one `CachedEstimator` remembers; past it, the oldest is replaced.
pub const SCHEMA_CACHE_ENTRIES_MAX: usize = 64;

/// Pre-tokenizer pieces whose exact count one thread remembers per vocabulary
/// (`tokens::pieces`); a full memo starts over.
pub const PIECE_MEMO_ENTRIES_MAX: usize = 65_536;

/// Bytes of the longest piece the piece memo remembers; longer pieces are counted each time.
pub const PIECE_MEMO_BYTES_MAX: usize = 64;

/// Renderings of material messages one thread remembers across preparations
/// (`context::rendered`); past it, the oldest is replaced.
pub const RENDER_MEMO_ENTRIES_MAX: usize = 8;

/// Bytes of material text (with the prompt and any System input) past which a rendering is not
/// remembered. An entry holds the input and its rendering; escaping can make a rendering up to
/// five times its text (every character an `&`), so an entry stays under six times this, and
/// about twice it for ordinary text.
pub const RENDER_MEMO_BYTES_MAX: usize = 1 << 20;

/// Conversations one thread remembers across preparations (`context::scanned`): enough for
/// an agent's step (the conversation before and after compaction) and a few agents taking
/// turns; past it, the least recently used is replaced.
pub const CONVERSATION_MEMO_ENTRIES_MAX: usize = 4;

/// Messages of the longest history a thread remembers across preparations; a longer one is read
/// in full at every step. A remembered message costs about 160 bytes beyond the message itself
/// (two handles, its manifest item and its call ids), so a full memo stays under 1 GB.
pub const CONVERSATION_MEMO_MESSAGES_MAX: usize = 1_048_576;

/// Tool-schema lists one thread remembers the counts and manifest items of
/// (`context::schemas`): an agent shares one list among all its requests, so a few cover a few
/// agents taking turns.
pub const SCHEMA_MEMO_ENTRIES_MAX: usize = 4;

/// Changes a [`History`](crate::context::history::History) remembers the position of. A
/// preparation whose remembered revision is further back compares its handles instead, so this
/// bounds memory, not correctness; an agent's step makes a few changes (offloads, a receipt).
pub const HISTORY_EDITS_KEPT: usize = 64;
