//! The `[network]` table.

use toml::{Table, Value};

use super::value::{insert_array, integer, millis};
use super::{WriteError, unsupported};
use crate::scenario::network::NetworkSpec;

/// The `[network]` table, every setting written out (defaults included).
pub(super) fn network(spec: &NetworkSpec) -> Result<Table, WriteError> {
    if let Some(problem) = spec.refusal() {
        return Err(unsupported(format!(
            "a [network] table the loader would refuse ({problem})"
        )));
    }
    let mut table = Table::new();
    table.insert(
        "latency_ms".into(),
        Value::Array(vec![millis(spec.latency_min)?, millis(spec.latency_max)?]),
    );
    table.insert("stream".into(), spec.stream.into());
    table.insert("request_timeout_ms".into(), millis(spec.request_timeout)?);
    table.insert("connect_timeout_ms".into(), millis(spec.connect_timeout)?);
    let mut retry = Table::new();
    retry.insert("attempts".into(), integer(u64::from(spec.retry_attempts))?);
    retry.insert("base_ms".into(), millis(spec.retry_base)?);
    retry.insert("max_ms".into(), millis(spec.retry_max)?);
    table.insert("retry".into(), Value::Table(retry));
    let numbers = |values: &[u64]| -> Result<Vec<Value>, WriteError> {
        values.iter().map(|value| integer(*value)).collect()
    };
    insert_array(
        &mut table,
        "reset_requests",
        numbers(&spec.faults.reset_requests)?,
    );
    insert_array(
        &mut table,
        "cut_stream_requests",
        numbers(&spec.faults.cut_stream_requests)?,
    );
    let partitions = spec
        .partitions
        .iter()
        .map(|(from, until)| {
            let mut partition = Table::new();
            partition.insert("from_ms".into(), millis(*from)?);
            partition.insert("until_ms".into(), millis(*until)?);
            Ok(Value::Table(partition))
        })
        .collect::<Result<Vec<_>, WriteError>>()?;
    insert_array(&mut table, "partitions", partitions);
    table.insert("tick_ms".into(), millis(spec.tick)?);
    Ok(table)
}
