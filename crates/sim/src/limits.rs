//! Every maximum of the simulated world, each with the reason it exists.

/// Virtual time one scenario step may take before the runner stops it. Far beyond any script,
/// so that a source that never completes cannot hang a run.
pub const STEP_VIRTUAL_TIME_MAX_SECONDS: u64 = 48 * 60 * 60;
