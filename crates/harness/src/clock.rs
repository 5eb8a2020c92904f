//! Time since the simulation (or the agent) started, read through one trait.
//!
//! ```
//! use ctxbed_harness::clock::{Clock, TokioClock};
//! let runtime = tokio::runtime::Builder::new_current_thread()
//!     .enable_time().start_paused(true).build().unwrap();
//! runtime.block_on(async {
//!     let clock = TokioClock::start();
//!     tokio::time::sleep(std::time::Duration::from_secs(600)).await;
//!     assert_eq!(clock.elapsed().as_secs(), 600); // ten virtual minutes, no wall time
//! });
//! ```

use std::time::Duration;

/// A source of elapsed time. Only durations since the start are observable, never instants,
/// so two runs of the same seed report the same times.
pub trait Clock: Send + Sync {
    fn elapsed(&self) -> Duration;
}

/// Tokio's clock: virtual under a paused runtime, real otherwise.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: tokio::time::Instant,
}

impl TokioClock {
    /// Starts counting now. Must be called inside a tokio runtime with time enabled.
    pub fn start() -> Self {
        TokioClock {
            start: tokio::time::Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn elapsed(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.start)
    }
}
