//! Conversation compaction: the lightweight passes (argument truncation, aggregate prune), the
//! pair-closed cut, summaries and the memory flush.
//!
//! The pieces here are pure: they transform message lists. `agent::compact` orchestrates them
//! inside the preparation pipeline (it calls the summary model and writes the session log).
//!
//! **Invariant:** compaction changes the working conversation only. Durable history (the session
//! log) is never rewritten, and task, plan and permission state are never touched.

pub mod config;
pub mod cut;
pub mod memory;
pub mod prune;
pub mod summary;
pub mod truncate;
