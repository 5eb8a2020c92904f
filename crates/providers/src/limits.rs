//! Every maximum of the HTTP providers, each with the reason it exists: what one reply, event,
//! line or error body may hold, and how often and how long a request is retried.

/// Bytes of one server-sent-events line from a model provider. A streamed chunk is a few
/// hundred bytes; a line this long is a broken or hostile server, not a token delta.
pub const SSE_LINE_BYTES_MAX: usize = 1024 * 1024;

/// Bytes of one server-sent event's joined `data` lines. A non-streaming reply in one event
/// (some servers do that) still fits.
pub const SSE_EVENT_BYTES_MAX: usize = 4 * 1024 * 1024;

/// Bytes of one provider answer read from the network, streamed or not. Far above any reply
/// a context window allows; more is a server that never stops.
pub const PROVIDER_REPLY_BYTES_MAX: usize = 32 * 1024 * 1024;

/// Bytes of a provider's error body that are read and kept. Real error bodies are under 2 KB;
/// an HTML error page from a proxy can be larger and is cut here.
pub const PROVIDER_ERROR_BODY_BYTES_MAX: usize = 64 * 1024;

/// Characters of a raw reply kept in a `MalformedReply` error: enough to see what the server
/// sent, small enough for a log line.
pub const PROVIDER_RAW_CHARS_MAX: usize = 2_000;

/// Bytes of one tool call's streamed arguments, reassembled from deltas.
pub const TOOL_CALL_ARGUMENTS_BYTES_MAX: usize = 4 * 1024 * 1024;

/// Attempts of one model request (the first plus retries of transient faults). Retrying a
/// fault more often than this turns a provider outage into a hung agent.
pub const PROVIDER_ATTEMPTS_MAX: u32 = 10;

/// Longest wait between two attempts, whether from backoff or a server's `Retry-After`.
/// A server asking for more is not waited for: its rate-limit error is returned.
pub const RETRY_DELAY_MS_MAX: u64 = 5 * 60 * 1_000;

const _: () = assert!(SSE_LINE_BYTES_MAX <= SSE_EVENT_BYTES_MAX);

const _: () = assert!(SSE_EVENT_BYTES_MAX <= PROVIDER_REPLY_BYTES_MAX);

const _: () = assert!(TOOL_CALL_ARGUMENTS_BYTES_MAX <= PROVIDER_REPLY_BYTES_MAX);

const _: () = assert!(PROVIDER_ERROR_BODY_BYTES_MAX <= PROVIDER_REPLY_BYTES_MAX);
