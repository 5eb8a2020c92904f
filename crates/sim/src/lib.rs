//! ctxbed-sim: the simulated world a harness runs in.
//!
//! The harness never knows it is simulated: it reads time through
//! [`ctxbed_harness::clock::Clock`] (tokio's clock, paused in every scenario, so a ten-minute
//! latency costs microseconds) and storage through [`ctxbed_harness::storage::Storage`]. This
//! crate supplies the rest of a deterministic world: [`rng`] (one seed tree per run, one ChaCha8
//! stream per consumer), [`text`] (generated text of exact length per kind), [`mock`] (scripted
//! model providers that count every request exactly and answer in real provider wordings),
//! [`recording`] (a wrapper that keeps a real model's answers as mock turns), [`scripted`] (tools and context sources with scripted output, latency and failures) and
//! [`host`] (a mock model served in OpenAI's or Anthropic's wire format, over any transport) and
//! [`netsim`] (HTTP over turmoil's simulated network, with that host on the far side). Workspace storage needs no simulation: the harness's own `MemoryStorage` (with
//! injectable write failures) serves every scenario.
//!
//! **Invariant:** nothing here reads the wall clock or an unseeded random source.

pub mod host;
pub mod limits;
pub mod mock;
pub mod netsim;
pub mod recording;
pub mod rng;
pub mod scripted;
pub mod text;

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
