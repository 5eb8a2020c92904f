//! ctxbed-harness: the context-management pipeline of an LLM agent loop.
//!
//! Each reasoning step of a [`agent::HarnessAgent`] loads the dynamic context sources, offloads
//! oversized tool results, omits optional material while over budget, compacts the conversation
//! within what is left, projects task and plan state, validates tool-call pairing and the whole
//! budget, commits the working history and records a manifest of what went in.
//!
//! The harness sees its world only through traits: [`model::Model`], [`tools::Tool`],
//! [`context::source::ContextSource`], [`storage::Storage`] and [`clock::Clock`]. This crate
//! ships the implementations a real agent needs — [`storage::FsStorage`] (a workspace directory),
//! [`storage::MemoryStorage`] and [`clock::TokioClock`] — and nothing that simulates, parses
//! scenario files or draws a command line.
//!
//! See `ARCHITECTURE.md` in the repository for the map of modules and their invariants.

pub mod agent;
pub mod clock;
pub mod compaction;
pub mod context;
pub mod format;
pub mod image;
pub mod limits;
pub mod message;
pub mod model;
pub mod runtime;
pub mod session;
mod sha;
pub mod shared_vec;
pub mod storage;
pub mod task;
pub mod tokens;
pub mod tools;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
