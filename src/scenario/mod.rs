//! Scenarios, in three layers with arrows one way (`tests/layers.rs` holds them):
//!
//! - [`format`](mod@format): a scenario file is read and checked ([`format::file::load`], reporting every
//!   problem with file, line, column and hint), with its mock models and `[network]` table;
//! - [`run`]: [`run::runner`] builds an agent on a paused tokio runtime with the mock model,
//!   scripted tools and in-memory workspace (or over the simulated network,
//!   [`run::networked`]), and records each step's events into a [`run::record::Trace`];
//! - [`check`]: the expectations are evaluated over the record, the trace renders to canonical
//!   text ([`check::trace`]), and [`check::golden`] compares it with (or blesses it into)
//!   `golden/`; [`check::outcome::run`] does all of it in one call.
//!
//! A module may import from its own layer and the layers before it, never after; within a
//! layer, no two modules import each other, directly or round a circle.
//!
//! **Invariant:** the harness sees traits and typed values; file formats are known here and in
//! `conform::file` (the wire-scenario format), nowhere else.

pub mod check;
pub mod format;
pub mod run;
