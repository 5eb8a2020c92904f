//! The check layer: what a run's record means. Expectations evaluated over it, its canonical
//! text (what goldens hold), golden comparison and blessing, the HTML report and `explain`,
//! and [`outcome::run`], which runs a scenario and judges it in one call.
//!
//! **Invariant:** the top layer: it imports [`super::format`] and [`super::run`], and nothing
//! below imports it (held by `tests/layers.rs`).

pub mod expect;
pub mod explain;
pub mod golden;
pub mod outcome;
pub mod report;
pub mod trace;
