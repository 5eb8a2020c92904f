//! Values as the file spells them: integers within `i64`, whole milliseconds, JSON values as
//! TOML (refusing what TOML cannot say), and written values with empty spans.

use std::time::Duration;

use toml::{Spanned, Table, Value};

use super::{WriteError, unsupported};

/// A written value: it has no place in a file yet, so its span is empty.
pub(super) fn at<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

/// Each item converted, in order, each with an empty span.
pub(super) fn each<T, R>(
    items: &[T],
    convert: impl Fn(&T) -> Result<R, WriteError>,
) -> Result<Vec<Spanned<R>>, WriteError> {
    items.iter().map(|item| convert(item).map(at)).collect()
}

/// A count as a file integer.
pub(super) fn integer(value: u64) -> Result<i64, WriteError> {
    i64::try_from(value).map_err(|_| unsupported(format!("the number {value} (above i64::MAX)")))
}

/// A count as a file integer with an empty span.
pub(super) fn count(value: u64) -> Result<Spanned<i64>, WriteError> {
    integer(value).map(at)
}

/// A duration as whole milliseconds with an empty span.
pub(super) fn millis(duration: Duration) -> Result<Spanned<i64>, WriteError> {
    if !duration.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(unsupported(format!(
            "the duration {duration:?} (not whole milliseconds)"
        )));
    }
    count(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

/// A choice's name with an empty span.
pub(super) fn name(name: &str) -> Spanned<String> {
    at(name.to_string())
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

/// A JSON object (tool parameters, tool-call arguments) as a TOML table; `what` names it when
/// it is not an object.
pub(super) fn json_object(value: &serde_json::Value, what: &str) -> Result<Table, WriteError> {
    let serde_json::Value::Object(map) = value else {
        return Err(unsupported(format!("{what} that are not a JSON object")));
    };
    json_table(map)
}

fn json_table(map: &serde_json::Map<String, serde_json::Value>) -> Result<Table, WriteError> {
    map.iter()
        .map(|(key, value)| Ok((key.clone(), json_to_toml(value)?)))
        .collect()
}
