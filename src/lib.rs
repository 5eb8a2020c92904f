//! ctxbed: a deterministic simulation and conformance test-bed for LLM agent harnesses.
//!
//! This package holds what knows file formats and runs suites: the scenario and mock-model
//! formats, the runner, traces and goldens, reports, `record`, the seed generator, the
//! invariants checked over every run, sweeps, and the `ctxbed` command line. The harness itself
//! is `ctxbed-harness`, the HTTP providers `ctxbed-providers`, the simulated world `ctxbed-sim`.
//!
//! See `ARCHITECTURE.md` for the map of crates and modules and their invariants.

pub mod bugs;
pub mod conform;
pub mod generate;
pub mod invariants;
pub mod limits;
pub mod output;
pub mod record;
pub mod scenario;
pub mod seed_times;
pub mod serve;
pub mod suite;
pub mod sweep;
