//! The simulated world: clock, seeded randomness, in-memory workspace storage and generated text.
//!
//! The harness never knows it is simulated: it reads time through [`clock::Clock`] and storage
//! through [`storage::Storage`]; this module supplies the implementations a scenario runs on.
//! Sweeps live here too: [`generate`] builds a random valid scenario from a seed,
//! [`invariants`] checks a run from outside the harness, and [`sweep`] runs many seeds, shrinks
//! what fails and writes it out as a scenario file; [`seed_times`] summarises what each seed cost
//! from times the caller measured.
//!
//! **Invariant:** nothing here reads the wall clock or an unseeded random source. Time is tokio's
//! clock, which is paused in every scenario, so a ten-minute latency costs microseconds.

pub mod clock;
pub mod generate;
pub mod invariants;
pub mod rng;
pub mod seed_times;
pub mod storage;
pub mod sweep;
pub mod text;
