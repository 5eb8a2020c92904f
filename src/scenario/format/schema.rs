//! JSON Schemas of the scenario and mock-model formats, derived from the same raw serde structs
//! the loader reads (so the schema cannot drift from the format), for editors that complete and
//! check TOML from a schema (taplo, Even Better TOML). The schema checks shape only (fields,
//! types, required keys); ranges and cross-field rules stay with `ctxbed check`, which says where
//! and how to fix.

use serde_json::Value;

/// The formats a schema can be printed for.
pub const KINDS: [&str; 2] = ["scenario", "mock-model"];

/// The schema of a scenario file (`scenarios/**/*.toml`, wire scenarios excepted).
pub fn scenario() -> Value {
    super::file::json_schema()
}

/// The schema of a mock-model file (`mock-models/*.toml`).
pub fn mock_model() -> Value {
    super::mock_file::json_schema()
}

/// The schema of `kind` (one of [`KINDS`]).
pub fn by_kind(kind: &str) -> Option<Value> {
    match kind {
        "scenario" => Some(scenario()),
        "mock-model" => Some(mock_model()),
        _ => None,
    }
}
