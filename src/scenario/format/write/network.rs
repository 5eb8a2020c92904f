//! The `[network]` table, every setting written out (defaults included).

use super::value::{at, count, millis};
use super::{WriteError, unsupported};
use crate::scenario::format::network::{NetworkSpec, RawNetwork, RawPartition, RawRetry};

/// Refuses a table the loader would refuse ([`NetworkSpec::refusal`]).
pub(super) fn network(spec: &NetworkSpec) -> Result<RawNetwork, WriteError> {
    if let Some(problem) = spec.refusal() {
        return Err(unsupported(format!(
            "a [network] table the loader would refuse ({problem})"
        )));
    }
    let numbers = |values: &[u64]| -> Result<Vec<_>, WriteError> {
        values.iter().map(|value| count(*value)).collect()
    };
    let partitions = spec
        .partitions
        .iter()
        .map(|(from, until)| {
            Ok(at(RawPartition {
                from_ms: millis(*from)?,
                until_ms: millis(*until)?,
            }))
        })
        .collect::<Result<Vec<_>, WriteError>>()?;
    Ok(RawNetwork {
        latency_ms: Some(at(vec![
            millis(spec.latency_min)?,
            millis(spec.latency_max)?,
        ])),
        stream: Some(spec.stream),
        request_timeout_ms: Some(millis(spec.request_timeout)?),
        connect_timeout_ms: Some(millis(spec.connect_timeout)?),
        retry: Some(RawRetry {
            attempts: Some(count(u64::from(spec.retry_attempts))?),
            base_ms: Some(millis(spec.retry_base)?),
            max_ms: Some(millis(spec.retry_max)?),
        }),
        reset_requests: numbers(&spec.faults.reset_requests)?,
        cut_stream_requests: numbers(&spec.faults.cut_stream_requests)?,
        partitions,
        tick_ms: Some(millis(spec.tick)?),
    })
}
