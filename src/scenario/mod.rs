//! Scenarios: file formats, the runner, traces, expectations and golden comparison.
//!
//! Data flows one way: a scenario file is read and checked ([`file::load`], reporting every
//! problem with file, line, column and hint) → [`runner::run`] builds an agent on a paused
//! tokio runtime with the mock model, scripted tools and in-memory workspace → each step's events
//! are recorded into a [`trace::Trace`] → the trace renders to canonical text → [`golden`]
//! compares it with (or blesses it into) `golden/`.
//!
//! **Invariant:** this is the only module that knows about file formats; the harness sees
//! traits and typed values.

pub mod choice;
pub mod diagnostic;
pub mod expect;
pub mod explain;
pub mod file;
pub mod golden;
pub mod mock_file;
pub mod network;
pub mod report;
pub mod runner;
pub mod schema;
pub mod shape;
pub mod source;
pub mod trace;
pub mod write;
