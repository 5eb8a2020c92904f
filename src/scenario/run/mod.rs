//! The run layer: a checked scenario run on the simulated runtime (or over the simulated
//! network), recording what happened into a [`record::Trace`].
//!
//! **Invariant:** a run records and never judges: this layer imports [`super::format`] but not
//! [`super::check`] (held by `tests/layers.rs`).

pub mod networked;
pub mod record;
pub mod runner;
