//! Every maximum in ctxbed, in one place, each with the reason it exists.
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

/// Largest scenario or mock-model file we read, in bytes. Scenarios are hand-written.
pub const SCENARIO_FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// Turns in one mock-model script (after `times` expansion is counted).
pub const MOCK_TURNS_MAX: usize = 10_000;

/// Steps in one scenario.
pub const SCENARIO_STEPS_MAX: usize = 1_000;

/// Generated history rounds in one scenario `[[history]]` entry.
pub const HISTORY_ROUNDS_MAX: u32 = 100_000;

/// Characters a scripted tool may generate for one result (a 10 MB result is a real case).
pub const TOOL_RESULT_CHARS_MAX: usize = 64 * 1024 * 1024;

/// Simulated latency of any one operation. Ten hours is far past any real timeout.
pub const LATENCY_MS_MAX: u64 = 10 * 60 * 60 * 1_000;

/// Characters of provider body or model reply quoted in an error or a trace line.
pub const SNIPPET_CHARS_MAX: usize = 240;

/// Characters of a text shown inline in a trace line before it is elided.
pub const TRACE_TEXT_CHARS_MAX: usize = 72;

/// Files under `scenarios/` that one `ctxbed run` will visit.
pub const SCENARIO_FILES_MAX: usize = 100_000;

const _: () = assert!(STEPS_PER_CALL_DEFAULT <= STEPS_PER_CALL_MAX);
const _: () = assert!(TRACE_TEXT_CHARS_MAX <= SNIPPET_CHARS_MAX);

/// Virtual time one scenario step may take before the runner stops it. Far beyond any script,
/// so that a source that never completes cannot hang a run.
pub const STEP_VIRTUAL_TIME_MAX_SECONDS: u64 = 48 * 60 * 60;

/// Messages one scenario `[[history]]` entry may list inline.
pub const HISTORY_MESSAGES_MAX: usize = 10_000;

/// Per-message token counts one `CachedEstimator` keeps (least recently used evicted first).
/// Enough for the longest inline history with room for generated rounds; an entry is about
/// 150 bytes, so a full cache stays near 10 MB. A history longer than this is still counted
/// correctly, only without the saving.
pub const TOKEN_CACHE_ENTRIES_MAX: usize = 65_536;

const _: () = assert!(TOKEN_CACHE_ENTRIES_MAX >= HISTORY_MESSAGES_MAX);
