//! The simulated network (generator version 4): in a few seeds the mock model answers from
//! behind turmoil's network through the OpenAI-compatible HTTP provider, with message latency,
//! streamed or whole replies, request and connect timeouts, retries, connection resets, cut
//! streams and a partition.
//!
//! Draws from its own stream, and the draw that decides whether a seed goes over the network
//! comes first, so a seed without it draws nothing else.

use std::time::Duration;

use super::Draw;
use crate::scenario::format::network::NetworkSpec;
use ctxbed_sim::netsim::HostFaults;

/// Host request numbers a fault may name: the first few requests, retries included.
const FAULTY_REQUESTS_MAX: u64 = 6;

/// A network for one seed in a hundred. A request crosses the wire without its purpose, so
/// the mock answers summary requests from its script like any other; that is part of what is
/// tested.
pub(super) fn network(draw: &mut Draw) -> Option<NetworkSpec> {
    if !draw.percent(1) {
        return None;
    }
    // A run spans seconds to minutes of simulated time, stepped tick by tick: a coarse tick
    // keeps a network seed within a few times the cost of an in-process one. Latencies and
    // partitions span several ticks, so the tick resolves them.
    let tick_ms = draw.range(10, 20);
    let latency_min = draw.millis(0, 40);
    let latency_max = latency_min + draw.millis(2 * tick_ms, 100);
    let stream = draw.percent(50);
    let requests = |draw: &mut Draw, chance: u64| -> Vec<u64> {
        (1..=FAULTY_REQUESTS_MAX)
            .filter(|_| draw.percent(chance))
            .collect()
    };
    let reset_requests = requests(draw, 15);
    let cut_stream_requests = if stream {
        requests(draw, 15)
    } else {
        Vec::new()
    };
    let partitions = if draw.percent(30) {
        let from = draw.millis(0, 5_000);
        vec![(from, from + draw.millis(5 * tick_ms, 8_000))]
    } else {
        Vec::new()
    };
    let retry_base = draw.millis(50, 1_000);
    Some(NetworkSpec {
        tick: Duration::from_millis(tick_ms),
        latency_min,
        latency_max,
        stream,
        request_timeout: draw.millis(500, 30_000),
        connect_timeout: draw.millis(100, 3_000),
        retry_attempts: draw.range(1, 4) as u32,
        retry_base,
        retry_max: retry_base + draw.millis(0, 10_000),
        faults: HostFaults {
            reset_requests,
            cut_stream_requests,
        },
        partitions,
    })
}
