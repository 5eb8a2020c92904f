//! JSON Schemas of the scenario and mock-model formats, derived from the same raw serde structs
//! the loader reads (so the schema cannot drift from the format), for editors that complete and
//! check TOML from a schema (taplo, Even Better TOML). The schema checks shape only (fields,
//! types, required keys); ranges and cross-field rules stay with `ctxbed check`, which says where
//! and how to fix.

use serde_json::Value;

use super::file::raw::RawScenario;
use super::mock_file::RawMock;

/// The formats a schema can be printed for.
pub const KINDS: [&str; 2] = ["scenario", "mock-model"];

/// `schema` with a title and description, and every 64-bit count given its minimum of 0.
pub(crate) fn titled(mut schema: Value, title: &str, description: &str) -> Value {
    non_negative(&mut schema);
    if let Some(object) = schema.as_object_mut() {
        object.insert("title".into(), title.into());
        object.insert("description".into(), description.into());
    }
    schema
}

/// Every count, size, time and seed in both formats is a whole number of at least 0 (the loader
/// refuses negatives), so each 64-bit integer without a stated minimum gets `minimum: 0`; fields
/// whose least value is higher say so with `range(min = …)` beside their declaration.
fn non_negative(node: &mut Value) {
    match node {
        Value::Object(object) => {
            let int64 = object.get("format").and_then(Value::as_str) == Some("int64");
            if int64 && !object.contains_key("minimum") {
                object.insert("minimum".into(), 0.into());
            }
            object.values_mut().for_each(non_negative);
        }
        Value::Array(items) => items.iter_mut().for_each(non_negative),
        _ => {}
    }
}

/// The schema of a scenario file (`scenarios/**/*.toml`, wire scenarios excepted).
pub fn scenario() -> Value {
    titled(
        serde_json::to_value(schemars::schema_for!(RawScenario)).unwrap_or_default(),
        "ctxbed scenario",
        "A ctxbed scenario file: the agent, its materials, the steps and the expectations. See docs/scenario-format.md.",
    )
}

/// The schema of a mock-model file (`mock-models/*.toml`).
pub fn mock_model() -> Value {
    titled(
        serde_json::to_value(schemars::schema_for!(RawMock)).unwrap_or_default(),
        "ctxbed mock model",
        "A ctxbed mock-model file: window, wording, tokenizer and a script of turns. See docs/scenario-format.md.",
    )
}

/// The schema of `kind` (one of [`KINDS`]).
pub fn by_kind(kind: &str) -> Option<Value> {
    match kind {
        "scenario" => Some(scenario()),
        "mock-model" => Some(mock_model()),
        _ => None,
    }
}
