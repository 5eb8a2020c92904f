//! Every maximum of the test-bed (scenario and mock-model files, generated histories, traces,
//! sweeps and the simulated network), each with the reason it exists. The harness's own limits
//! are in `ctxbed_harness::limits`, the providers' in `ctxbed_providers::limits`.

use ctxbed_harness::limits::{SNIPPET_CHARS_MAX, TOKEN_CACHE_ENTRIES_MAX};

/// Largest scenario or mock-model file we read, in bytes. Scenarios are hand-written.
pub const SCENARIO_FILE_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// Turns in one mock-model script (after `times` expansion is counted).
pub const MOCK_TURNS_MAX: usize = 10_000;

/// Steps in one scenario.
pub const SCENARIO_STEPS_MAX: usize = 1_000;

/// Generated history rounds in one scenario `[[history]]` entry.
pub const HISTORY_ROUNDS_MAX: u32 = 100_000;

/// Simulated latency of any one operation. Ten hours is far past any real timeout.
pub const LATENCY_MS_MAX: u64 = 10 * 60 * 60 * 1_000;

/// The coarsest tick of a simulated network: a second already delivers every message on a
/// whole-second boundary, coarser than any latency or timeout worth simulating.
pub const NETWORK_TICK_MS_MAX: u64 = 1_000;

/// Characters of a text shown inline in a trace line before it is elided.
pub const TRACE_TEXT_CHARS_MAX: usize = 72;

/// Files under `scenarios/` that one `ctxbed run` will visit.
pub const SCENARIO_FILES_MAX: usize = 100_000;

const _: () = assert!(TRACE_TEXT_CHARS_MAX <= SNIPPET_CHARS_MAX);

/// Messages one scenario `[[history]]` entry may list inline.
pub const HISTORY_MESSAGES_MAX: usize = 10_000;

const _: () = assert!(TOKEN_CACHE_ENTRIES_MAX >= HISTORY_MESSAGES_MAX);

/// Scenario checks (two runs each) the sweep's shrinker spends on one failing seed. Greedy
/// shrinking of a generated scenario settles in far fewer; the bound keeps a pathological seed
/// from stalling a sweep.
pub const SHRINK_CHECKS_MAX: u32 = 400;

/// Failing seeds one sweep shrinks and writes out. A bug that fails every seed should produce a
/// handful of reproductions, not thousands of files; the rest are listed by seed.
pub const SWEEP_FAILURES_WRITTEN_MAX: u64 = 20;

/// Simulated seconds one network scenario may run (turmoil's simulation duration). Each
/// simulated millisecond is a step of every simulated host, so this bound is far below the
/// in-process runner's per-step limit; network scenarios are short.
pub const NETWORK_SIMULATION_SECONDS_MAX: u64 = 60 * 60;

/// How long `ctxbed serve` holds a request whose turn is scripted as a timeout before answering
/// 504 (before `--time-scale`): longer than any client's default timeout worth testing, short
/// enough that a forgotten client does not hold the server for ever.
pub const SERVE_HANG_SECONDS: u64 = 600;

/// Mock models one `ctxbed serve --models DIR` loads.
pub const SERVE_MODELS_MAX: usize = 1_000;

/// The largest request body `ctxbed serve` reads; a larger one is answered as a reset
/// connection, as a real provider's front end would refuse it.
pub const SERVE_REQUEST_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Bytes of request bodies `ctxbed serve` holds at once, across every connection: two of the
/// largest bodies. A body is charged its declared length before it is read (one without a
/// length as it arrives) until its request is answered; past the budget a request is answered
/// with the provider's 413 `request_too_large`, so concurrent large or half-sent bodies cannot
/// grow the process without bound. (Reading a body as JSON and counting it costs several times
/// its bytes on top; the budget bounds that too, in proportion.)
pub const SERVE_BODIES_IN_FLIGHT_BYTES_MAX: usize = 2 * SERVE_REQUEST_BYTES_MAX;

/// Connections `ctxbed serve` holds open at once, so a flood of clients cannot exhaust the
/// process's open files. At the cap a new client makes room by closing the longest-idle
/// kept-alive connection (as nginx does), so leaked keep-alive connections cannot lock anyone
/// out; when every connection is busy or has not yet sent its first request, it waits.
pub const SERVE_CONNECTIONS_MAX: usize = 256;

/// How long a client may take to send a request's headers, and how long an open connection may
/// sit idle between requests, before `ctxbed serve` closes it.
pub const SERVE_HEADER_SECONDS: u64 = 30;

/// How long a client may take to send a request's body once its headers are in (a body shorter
/// than its `Content-Length` would otherwise hold the connection for ever).
pub const SERVE_BODY_SECONDS: u64 = 60;

/// How long a write to a client may wait without going through (a client that stopped reading
/// a reply, its window and our send buffer full) before `ctxbed serve` closes the connection
/// and drops the reply. A streamed reply is rendered as it is written, so until then the
/// connection holds the reply and what its buffers hold, not the whole stream.
pub const SERVE_WRITE_SECONDS: u64 = 30;

/// The longest pause after a failed `accept` (at the open-file limit, say): the server backs off
/// from 10 ms, doubling to this, instead of spinning.
pub const SERVE_ACCEPT_BACKOFF_MS_MAX: u64 = 1_000;
