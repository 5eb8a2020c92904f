//! How a host behaves beyond its mock model's script: the faults it injects ([`HostFaults`])
//! and its options ([`HostOptions`]).

use std::time::Duration;

/// Exchanges one host keeps in memory by default; past it, requests are still answered and
/// counted, and [`ProviderHost::dropped`] says how many were not kept.
///
/// [`ProviderHost::dropped`]: super::ProviderHost::dropped
pub const EXCHANGES_MAX: usize = 100_000;

/// Faults the provider host injects by request number (1-based, counting every HTTP request
/// it receives, retries included).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFaults {
    /// Requests whose connection is dropped before any answer (a reset).
    pub reset_requests: Vec<u64>,
    /// Requests whose streamed answer is cut after its first events.
    pub cut_stream_requests: Vec<u64>,
}

/// How a host behaves beyond its mock model's script.
#[derive(Debug, Clone, PartialEq)]
pub struct HostOptions {
    pub faults: HostFaults,
    /// Treat a request without tools whose last message asks for a summary as a summary
    /// request, and one asking to extract facts into long-term memory as a memory flush (the
    /// wire does not say why a request was made). Off in network scenarios, whose
    /// mocks script summaries like any other turn; on in `ctxbed serve`, where each harness
    /// words its own summary prompt.
    pub infer_summaries: bool,
    /// Send usage figures (OpenAI's `usage`, its final usage chunk). Anthropic's replies always
    /// carry usage, as the real API's do.
    pub report_usage: bool,
    /// How long a turn scripted as a timeout holds its request before answering 504.
    pub hang: Duration,
    /// The `retry-after` header (seconds) sent with a 429.
    pub retry_after_seconds: u64,
    /// Deal the script's turns to steps ([`ProviderHost::begin_step`]): each request is told
    /// apart by structure as the step's main-loop request or a side request, main-loop requests
    /// are answered from their step's own turns, side requests by the turns scripted for them or
    /// the deterministic summariser. Requests before the first step are side requests. On in
    /// `ctxbed conform`; off in network scenarios and in a plain `ctxbed serve`, which play the
    /// script in arrival order.
    ///
    /// [`ProviderHost::begin_step`]: super::ProviderHost::begin_step
    pub steps: bool,
    /// How many exchanges the host keeps in memory ([`ProviderHost::exchanges`]); past it,
    /// requests are answered and counted but not kept. `ctxbed serve` keeps none (each exchange
    /// goes to its record file as it happens), so its memory does not grow with traffic.
    ///
    /// [`ProviderHost::exchanges`]: super::ProviderHost::exchanges
    pub retain_exchanges: usize,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            faults: HostFaults::default(),
            infer_summaries: false,
            report_usage: true,
            hang: Duration::from_secs(crate::limits::STEP_VIRTUAL_TIME_MAX_SECONDS),
            retry_after_seconds: 1,
            steps: false,
            retain_exchanges: EXCHANGES_MAX,
        }
    }
}
