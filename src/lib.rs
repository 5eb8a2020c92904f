//! ctxbed: a deterministic context-management harness for LLM agent loops, and a simulation and
//! conformance test-bed around it.
//!
//! See `ARCHITECTURE.md` for the map of modules and their invariants.

pub mod agent;
pub mod compaction;
pub mod context;
pub mod format;
pub mod limits;
pub mod message;
pub mod model;
pub mod provider;
pub mod runtime;
pub mod scenario;
pub mod session;
pub mod shared_vec;
pub mod sim;
pub mod task;
pub mod tokens;
pub mod tools;
