//! A new adapter process mid-scenario: the steps run in segments, and before each step marked
//! `restart = true` the adapter's input is closed, it is given [`EXIT_GRACE`] to exit (then its
//! group is killed), and a new process, started the same way with the same environment, gets
//! `setup` again and the steps from there. What the old process kept under `CTXBED_STATE_DIR`
//! is all the new one has of the sessions.
//!
//! [`EXIT_GRACE`]: super::peer

use std::ops::Range;
use std::path::Path;

use super::peer::Peer;
use super::{Adapter, DriveOutcome, run_steps, set_up};
use crate::conform::file::WireScenario;
use ctxbed_sim::host::ProviderHost;

/// The environment variable naming the directory the adapter keeps its sessions in.
pub const STATE_DIR_VARIABLE: &str = "CTXBED_STATE_DIR";

/// Runs every step of the scenario, a new process serving each segment that starts with a
/// restart. Returns the adapter serving the last segment; on a problem the adapter has been
/// killed and the problem is returned.
pub(super) async fn run_segments(
    mut peer: Peer,
    scenario: &WireScenario,
    adapter: &Adapter,
    log: &Path,
    host: &ProviderHost,
    outcome: &mut DriveOutcome,
) -> Result<Peer, String> {
    for segment in segments(scenario) {
        if segment.start > 0 {
            peer = restarted(peer, segment.start + 1, scenario, adapter, log, outcome).await?;
        }
        if let Err(problem) = run_steps(&mut peer, scenario, segment, host, outcome).await {
            peer.kill().await;
            return Err(problem);
        }
    }
    Ok(peer)
}

/// The runs of step indices served by one process: a new run starts at each step that
/// restarts.
fn segments(scenario: &WireScenario) -> Vec<Range<usize>> {
    // A restart before step n starts the run at index n - 1.
    let mut starts: Vec<usize> = std::iter::once(0)
        .chain(scenario.restarts().into_iter().map(|number| number - 1))
        .collect();
    starts.push(scenario.steps.len());
    starts.windows(2).map(|pair| pair[0]..pair[1]).collect()
}

/// Ends `peer` as a user's process ends (input closed, then killed if it lingers), starts a
/// new one and sets it up for step `number`.
async fn restarted(
    peer: Peer,
    number: usize,
    scenario: &WireScenario,
    adapter: &Adapter,
    log: &Path,
    outcome: &mut DriveOutcome,
) -> Result<Peer, String> {
    let status = peer.finish().await;
    if super::interrupted() {
        // The user's stop came while the old process was ending: no new one starts.
        return Err(super::peer::PeerError::Interrupted.to_string());
    }
    super::peer::append_note(
        log,
        &format!(
            "[ctxbed] restart before step {number}: the adapter {status}; a new process serves the steps from here"
        ),
    );
    let mut peer = Peer::launch(&adapter.launch, &adapter.env, log).map_err(|e| e.to_string())?;
    match set_up(&mut peer, scenario, outcome).await {
        Ok(true) => Ok(peer),
        Ok(false) => {
            peer.kill().await;
            Err(format!(
                "after the restart before step {number}, the new process answered `unsupported`"
            ))
        }
        Err(problem) => {
            peer.kill().await;
            Err(format!(
                "after the restart before step {number}, the new process did not set up: {problem}"
            ))
        }
    }
}

/// The state directory of a scenario that restarts its harness, beside the adapter's log,
/// emptied for the run; `None` for a scenario that never restarts (its adapter keeps sessions
/// as it likes).
///
/// # Errors
/// The directory cannot be emptied or made.
pub(super) fn state_dir(scenario: &WireScenario, log: &Path) -> Result<Option<String>, String> {
    if scenario.restarts().is_empty() {
        return Ok(None);
    }
    let dir = log.with_extension("state");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(|e| format!("cannot empty the state directory {}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot make the state directory {}: {e}", dir.display()))?;
    // The adapter runs in its own directory: it is told an absolute path.
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    Ok(Some(dir.display().to_string()))
}
