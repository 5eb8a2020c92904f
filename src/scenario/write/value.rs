//! TOML values for what the checked scenario holds: integers within `i64`, whole milliseconds,
//! strings, string maps and JSON values (refusing what TOML cannot say).

use std::time::Duration;

use toml::{Table, Value};

use super::{WriteError, unsupported};

pub(super) fn insert_array(table: &mut Table, key: &str, values: Vec<Value>) {
    if !values.is_empty() {
        table.insert(key.into(), Value::Array(values));
    }
}

pub(super) fn integer(value: u64) -> Result<Value, WriteError> {
    i64::try_from(value)
        .map(Value::Integer)
        .map_err(|_| unsupported(format!("the number {value} (above i64::MAX)")))
}

pub(super) fn millis(duration: Duration) -> Result<Value, WriteError> {
    if !duration.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(unsupported(format!(
            "the duration {duration:?} (not whole milliseconds)"
        )));
    }
    integer(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

pub(super) fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> Value {
    Value::Array(items.into_iter().map(|s| s.clone().into()).collect())
}

pub(super) fn string_map(map: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Table(
        map.iter()
            .map(|(key, value)| (key.clone(), value.clone().into()))
            .collect(),
    )
}

/// A JSON value as TOML; `null` has no TOML form.
fn json_to_toml(value: &serde_json::Value) -> Result<Value, WriteError> {
    Ok(match value {
        serde_json::Value::Null => return Err(unsupported("a JSON null")),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::Integer(i),
            (None, Some(f)) => Value::Float(f),
            (None, None) => return Err(unsupported(format!("the number {n}"))),
        },
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(items) => Value::Array(
            items
                .iter()
                .map(json_to_toml)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        serde_json::Value::Object(map) => Value::Table(json_table(map)?),
    })
}

pub(super) fn json_table(
    map: &serde_json::Map<String, serde_json::Value>,
) -> Result<Table, WriteError> {
    map.iter()
        .map(|(key, value)| Ok((key.clone(), json_to_toml(value)?)))
        .collect()
}
