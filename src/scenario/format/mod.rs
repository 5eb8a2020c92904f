//! The format layer: the scenario, mock-model and `[network]` file formats as raw serde structs
//! and their checked forms, the loader's checker and all-at-once diagnostics, the JSON Schemas
//! and shape checking, the choice vocabularies, and the writer that prints a checked scenario
//! back as TOML.
//!
//! **Invariant:** nothing here runs or judges a scenario: this layer imports neither
//! [`super::run`] nor [`super::check`] (held by `tests/layers.rs`).

pub mod choice;
pub mod diagnostic;
pub mod file;
pub mod mock_file;
pub mod network;
pub mod schema;
pub mod shape;
pub mod source;
pub mod write;
