//! The `[network]` table of a scenario file: how the agent reaches its mock model over
//! turmoil's simulated network (run by [`crate::scenario::run::networked`]).
//!
//! ```toml
//! [network]
//! latency_ms = [2, 40]                        # message latency range, drawn from the seed
//! stream = true                               # streamed replies (default true)
//! request_timeout_ms = 30000                  # one attempt, send to last byte (default 30 s)
//! connect_timeout_ms = 2000                   # opening a connection (default 2 s)
//! retry = { attempts = 3, base_ms = 500, max_ms = 4000 }   # default: one attempt
//! reset_requests = [1]                        # the host drops these requests' connections
//! cut_stream_requests = [2]                   # the host cuts these streamed replies halfway
//! partitions = [{ from_ms = 0, until_ms = 3000 }]          # agent and provider cut apart
//! tick_ms = 1                                 # simulated time per step (default 1 ms)
//! ```
//!
//! The simulation advances in ticks of `tick_ms` whether anything happens or not, so a run's
//! cost grows with the simulated time it spans: a coarser tick runs a long scenario faster,
//! at the price of delivering messages and firing timers on tick boundaries only.
//!
//! Host request numbers (`reset_requests`, `cut_stream_requests`) count every HTTP request,
//! retries included. The summary model, when the scenario names one, stays in process.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::mock_file::Checker;
use crate::limits;
use ctxbed_sim::netsim::HostFaults;

/// The raw `[network]` table.
#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNetwork {
    #[schemars(with = "Option<Vec<i64>>")]
    pub(super) latency_ms: Option<Spanned<Vec<Spanned<i64>>>>,
    pub(super) stream: Option<bool>,
    #[schemars(with = "Option<i64>")]
    pub(super) request_timeout_ms: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(super) connect_timeout_ms: Option<Spanned<i64>>,
    pub(super) retry: Option<RawRetry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<i64>", inner(range(min = 1)))]
    pub(super) reset_requests: Vec<Spanned<i64>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<i64>", inner(range(min = 1)))]
    pub(super) cut_stream_requests: Vec<Spanned<i64>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<RawPartition>")]
    pub(super) partitions: Vec<Spanned<RawPartition>>,
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(super) tick_ms: Option<Spanned<i64>>,
}

#[derive(Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetry {
    #[schemars(with = "Option<i64>", range(min = 1))]
    pub(super) attempts: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(super) base_ms: Option<Spanned<i64>>,
    #[schemars(with = "Option<i64>")]
    pub(super) max_ms: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPartition {
    #[schemars(with = "i64")]
    pub(super) from_ms: Spanned<i64>,
    #[schemars(with = "i64")]
    pub(super) until_ms: Spanned<i64>,
}

/// A checked `[network]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSpec {
    pub latency_min: Duration,
    pub latency_max: Duration,
    pub stream: bool,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    pub retry_attempts: u32,
    pub retry_base: Duration,
    pub retry_max: Duration,
    pub faults: HostFaults,
    /// Times (from the start of the run) between which agent and provider are cut apart.
    pub partitions: Vec<(Duration, Duration)>,
    /// Simulated time one step of the simulation advances.
    pub tick: Duration,
}

impl NetworkSpec {
    /// One trace-header line with every setting, defaults included.
    pub fn header(&self) -> String {
        let millis = |d: Duration| d.as_millis().to_string();
        let list = |numbers: &[u64]| {
            numbers
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let partitions: Vec<String> = self
            .partitions
            .iter()
            .map(|(from, until)| format!("{}..{}ms", millis(*from), millis(*until)))
            .collect();
        format!(
            "network: latency={}..{}ms stream={} request_timeout={} connect_timeout={} retry={}x{}..{}ms reset_requests=[{}] cut_stream_requests=[{}] partitions=[{}] tick={}ms",
            millis(self.latency_min),
            millis(self.latency_max),
            self.stream,
            ctxbed_harness::format::duration(self.request_timeout),
            ctxbed_harness::format::duration(self.connect_timeout),
            self.retry_attempts,
            millis(self.retry_base),
            millis(self.retry_max),
            list(&self.faults.reset_requests),
            list(&self.faults.cut_stream_requests),
            partitions.join(","),
            millis(self.tick)
        )
    }

    /// The first setting a scenario file could not hold, as the loader would refuse it: a
    /// duration over [`limits::LATENCY_MS_MAX`], a reversed latency range or partition, no
    /// attempt or too many, a retry delay capped below its start, a request number 0, a tick
    /// under 1 ms or over [`limits::NETWORK_TICK_MS_MAX`] ms. A spec the loader
    /// built has none; one built in code may.
    pub fn refusal(&self) -> Option<String> {
        let attempts = self.retry_attempts;
        let tick = self.tick.as_millis();
        let durations = [
            self.latency_min,
            self.latency_max,
            self.request_timeout,
            self.connect_timeout,
            self.retry_base,
            self.retry_max,
        ];
        let longest = Duration::from_millis(limits::LATENCY_MS_MAX);
        if durations
            .iter()
            .chain(
                self.partitions
                    .iter()
                    .flat_map(|(from, until)| [from, until]),
            )
            .any(|d| *d > longest)
        {
            Some(format!(
                "a duration over {} ms (limits::LATENCY_MS_MAX)",
                limits::LATENCY_MS_MAX
            ))
        } else if self.latency_min > self.latency_max {
            Some("the latency range is reversed".to_string())
        } else if attempts == 0 || attempts > ctxbed_providers::limits::PROVIDER_ATTEMPTS_MAX {
            Some(format!(
                "{attempts} retry attempts; 1 to {}",
                ctxbed_providers::limits::PROVIDER_ATTEMPTS_MAX
            ))
        } else if self.retry_max < self.retry_base {
            Some("the retry delay is capped below where it starts".to_string())
        } else if self
            .faults
            .reset_requests
            .iter()
            .chain(&self.faults.cut_stream_requests)
            .any(|n| *n == 0)
        {
            Some("request numbers count from 1".to_string())
        } else if self.partitions.iter().any(|(from, until)| from >= until) {
            Some("a partition must end after it starts".to_string())
        } else if self.tick < Duration::from_millis(1)
            || tick > u128::from(limits::NETWORK_TICK_MS_MAX)
        {
            Some(format!(
                "a tick of {:?}; 1 to {} ms",
                self.tick,
                limits::NETWORK_TICK_MS_MAX
            ))
        } else {
            None
        }
    }
}

/// The simulation's default step: one millisecond.
const DEFAULT_TICK: Duration = Duration::from_millis(1);

/// Checks the raw table, recording every problem.
pub(super) fn network_spec(checker: &mut Checker<'_>, raw: &RawNetwork) -> NetworkSpec {
    let (latency_min, latency_max) = latency_range(checker, raw);
    let request_timeout = duration_or(
        checker,
        raw.request_timeout_ms.as_ref(),
        "network.request_timeout_ms",
        Duration::from_secs(30),
    );
    let connect_timeout = duration_or(
        checker,
        raw.connect_timeout_ms.as_ref(),
        "network.connect_timeout_ms",
        Duration::from_secs(2),
    );
    let retry = raw.retry.as_ref();
    let retry_attempts = retry_attempts(checker, retry);
    let (retry_base, retry_max) = retry_delays(checker, retry);
    let faults = HostFaults {
        reset_requests: request_numbers(checker, &raw.reset_requests, "network.reset_requests"),
        cut_stream_requests: request_numbers(
            checker,
            &raw.cut_stream_requests,
            "network.cut_stream_requests",
        ),
    };
    let partitions = partitions(checker, &raw.partitions);
    let tick = tick(checker, raw.tick_ms.as_ref());
    NetworkSpec {
        tick,
        latency_min,
        latency_max,
        stream: raw.stream.unwrap_or(true),
        request_timeout,
        connect_timeout,
        retry_attempts,
        retry_base,
        retry_max,
        faults,
        partitions,
    }
}

/// `latency_ms = [min, max]` (1 to 10 ms when absent).
fn latency_range(checker: &mut Checker<'_>, raw: &RawNetwork) -> (Duration, Duration) {
    let Some(range) = &raw.latency_ms else {
        return (Duration::from_millis(1), Duration::from_millis(10));
    };
    match range.get_ref().as_slice() {
        [min, max] => {
            let min = checker.latency(Some(min), "network.latency_ms[0]");
            let max = checker.latency(Some(max), "network.latency_ms[1]");
            if min > max {
                let problem = checker
                    .at(range, "the latency range is reversed")
                    .field("network.latency_ms")
                    .help("write `latency_ms = [min, max]` with min ≤ max");
                checker.problems.push(problem);
            }
            (min, max)
        }
        _ => {
            let problem = checker
                .at(range, "`latency_ms` needs exactly two numbers")
                .field("network.latency_ms")
                .help("write `latency_ms = [min, max]`, e.g. `[2, 40]`");
            checker.problems.push(problem);
            (Duration::ZERO, Duration::ZERO)
        }
    }
}

/// A duration in milliseconds, or `default` when absent.
fn duration_or(
    checker: &mut Checker<'_>,
    value: Option<&Spanned<i64>>,
    field: &str,
    default: Duration,
) -> Duration {
    value.map_or(default, |v| checker.latency(Some(v), field))
}

/// `retry.attempts` (1 when absent), at most the providers' limit.
fn retry_attempts(checker: &mut Checker<'_>, retry: Option<&RawRetry>) -> u32 {
    let Some(value) = retry.and_then(|r| r.attempts.as_ref()) else {
        return 1;
    };
    let attempts = checker
        .count(value, "network.retry.attempts", 1)
        .unwrap_or(1);
    if attempts > u64::from(ctxbed_providers::limits::PROVIDER_ATTEMPTS_MAX) {
        let problem = checker
            .at(
                value,
                format!(
                    "{attempts} attempts; at most {} (limits::PROVIDER_ATTEMPTS_MAX)",
                    ctxbed_providers::limits::PROVIDER_ATTEMPTS_MAX
                ),
            )
            .field("network.retry.attempts")
            .help("more attempts turn a provider outage into a hung agent; lower `attempts`");
        checker.problems.push(problem);
    }
    u32::try_from(attempts).unwrap_or(1)
}

/// `retry.base_ms` and `retry.max_ms` (500 ms and 30 s when absent); the cap must not be below
/// the start.
fn retry_delays(checker: &mut Checker<'_>, retry: Option<&RawRetry>) -> (Duration, Duration) {
    let problems_before_delays = checker.problems.len();
    let retry_base = duration_or(
        checker,
        retry.and_then(|r| r.base_ms.as_ref()),
        "network.retry.base_ms",
        Duration::from_millis(500),
    );
    let retry_max = duration_or(
        checker,
        retry.and_then(|r| r.max_ms.as_ref()),
        "network.retry.max_ms",
        Duration::from_secs(30),
    );
    // Compared only when both delays are valid: an invalid one already has its error.
    if retry_max < retry_base && checker.problems.len() == problems_before_delays {
        let explicit = retry
            .and_then(|r| r.max_ms.as_ref().map(|v| (v, "network.retry.max_ms")))
            .or_else(|| {
                retry.and_then(|r| r.base_ms.as_ref().map(|v| (v, "network.retry.base_ms")))
            });
        if let Some((value, field)) = explicit {
            let problem = checker
                .at(
                    value,
                    format!(
                        "the retry delay is at most {} ms but starts at {} ms",
                        retry_max.as_millis(),
                        retry_base.as_millis()
                    ),
                )
                .field(field)
                .help("`max_ms` caps the doubling delay that starts at `base_ms`; make `max_ms` at least `base_ms`");
            checker.problems.push(problem);
        }
    }
    (retry_base, retry_max)
}

/// Host request numbers (from 1); invalid ones are reported and left out.
fn request_numbers(checker: &mut Checker<'_>, values: &[Spanned<i64>], field: &str) -> Vec<u64> {
    values
        .iter()
        .filter_map(|value| checker.count(value, field, 1))
        .collect()
}

/// `partitions`: each `(from, until)`, ending after it starts.
fn partitions(
    checker: &mut Checker<'_>,
    partitions: &[Spanned<RawPartition>],
) -> Vec<(Duration, Duration)> {
    partitions
        .iter()
        .enumerate()
        .map(|(index, partition)| {
            let raw = partition.get_ref();
            let before = checker.problems.len();
            let from = checker.latency(Some(&raw.from_ms), "network.partitions.from_ms");
            let until = checker.latency(Some(&raw.until_ms), "network.partitions.until_ms");
            // An invalid time is already reported; comparing its stand-in would add a false
            // follow-on problem.
            if checker.problems.len() == before && from >= until {
                let problem = checker
                    .at(partition, "a partition must end after it starts")
                    .field(format!("network.partitions[{index}]"))
                    .help(
                        "`until_ms` is the time the partition heals; make it larger than `from_ms`",
                    );
                checker.problems.push(problem);
            }
            (from, until)
        })
        .collect()
}

/// `tick_ms` ([`DEFAULT_TICK`] when absent or invalid), at most the limit.
fn tick(checker: &mut Checker<'_>, value: Option<&Spanned<i64>>) -> Duration {
    value
        .and_then(|value| {
            let millis = checker.count(value, "network.tick_ms", 1)?;
            if millis > limits::NETWORK_TICK_MS_MAX {
                let problem = checker
                    .at(value, format!(
                        "a tick of {millis} ms; at most {} ms",
                        limits::NETWORK_TICK_MS_MAX
                    ))
                    .field("network.tick_ms")
                    .help("a tick is the simulation's resolution; keep it below the latencies and timeouts it should resolve");
                checker.problems.push(problem);
                return None;
            }
            Some(Duration::from_millis(millis))
        })
        .unwrap_or(DEFAULT_TICK)
}
