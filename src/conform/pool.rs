//! The adapter process a conformance worker keeps between scenarios.
//!
//! An adapter whose `ready` (or `unsupported`) line declares `"reset": true` can serve many
//! scenarios in one process: when its scenario ends cleanly, the worker keeps it, and the next
//! scenario of the same harness on that worker sends it a `reset` line (the new scenario's
//! environment) instead of starting a new process, so interpreter start-up and imports are
//! paid once per worker, not once per scenario. Each worker thread owns one tokio runtime for all
//! its runs (an adapter's pipes belong to the runtime that started it) and at most one kept
//! adapter; [`release`] ends it.
//!
//! **Invariant:** a kept adapter is only ever one whose last scenario ended with every step
//! answered and no problem; anything else was killed with its process group. A kept adapter
//! that has exited, or that cannot take the `reset` line, is replaced by a new process, and the
//! new scenario's log says so.

use std::cell::RefCell;
use std::path::Path;

use serde_json::{Map, Value, json};

use super::peer::{Launch, Peer, PeerError};

/// The protocol's environment variables: a `reset` line sets those the next scenario has and
/// the adapter unsets the others (docs/peer-protocol.md).
pub const PROTOCOL_VARIABLES: [&str; 15] = [
    "CTXBED_API",
    "CTXBED_OPENAI_BASE_URL",
    "CTXBED_ANTHROPIC_BASE_URL",
    "CTXBED_MODEL",
    "CTXBED_API_KEY",
    "CTXBED_WINDOW",
    "CTXBED_MAX_OUTPUT_TOKENS",
    "CTXBED_THINKING_BUDGET",
    "CTXBED_STREAM",
    "CTXBED_STATE_DIR",
    "CTXBED_BIN",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "NO_PROXY",
    "no_proxy",
];

/// The adapter kept for the next scenario, if any.
#[derive(Debug, Default)]
pub struct Pool {
    kept: Option<(Launch, Peer)>,
    /// Scenarios the kept adapter has served.
    served: usize,
}

impl Pool {
    /// An adapter for the scenario, and whether it is a kept one: the kept one when it was
    /// started by `launch`, reset with `env` and logging to `log`, or else a new process started
    /// with `env`. `reuse: false` always starts a new one.
    ///
    /// # Errors
    /// A new process cannot be started.
    pub async fn take(
        &mut self,
        launch: &Launch,
        env: &[(String, String)],
        log: &Path,
        reuse: bool,
    ) -> Result<(Peer, bool), PeerError> {
        let kept = self.kept.take();
        let mut note = None;
        if let Some((kept_launch, mut peer)) = kept {
            if reuse && kept_launch == *launch {
                match reset(&mut peer, env, log, self.served).await {
                    Ok(()) => {
                        self.served += 1;
                        return Ok((peer, true));
                    }
                    Err(problem) => {
                        note = Some(format!(
                            "[ctxbed] the adapter kept from an earlier scenario {problem}; a new process serves this one"
                        ));
                        peer.kill().await;
                    }
                }
            } else {
                finish(peer).await;
            }
        }
        self.served = 1;
        if let Some(note) = note {
            let _ = std::fs::write(log, format!("{note}\n"));
        }
        Peer::launch(launch, env, log).map(|peer| (peer, false))
    }

    /// A new process for the scenario, after the kept adapter `failed` (it was sent `reset`
    /// but did not answer `setup`): the failed one killed, the reason noted in `log`.
    ///
    /// # Errors
    /// The new process cannot be started.
    pub async fn replace(
        &mut self,
        failed: Peer,
        problem: &str,
        launch: &Launch,
        env: &[(String, String)],
        log: &Path,
    ) -> Result<Peer, PeerError> {
        failed.kill().await;
        self.served = 1;
        super::peer::append_note(
            log,
            &format!(
                "[ctxbed] the adapter kept from an earlier scenario did not answer `setup` after `reset` ({problem}); a new process serves this one"
            ),
        );
        Peer::launch(launch, env, log)
    }

    /// Keeps `peer`, started by `launch`, for the next scenario when it declared it can be
    /// reset and `reuse` allows it; otherwise closes its input and waits for it to exit.
    /// Returns the problem with its exit, if any.
    pub async fn give_back(&mut self, launch: &Launch, peer: Peer, reuse: bool) -> Option<String> {
        if reuse && peer.resettable() {
            self.kept = Some((launch.clone(), peer));
            return None;
        }
        let status = peer.finish().await;
        status
            .contains("killed")
            .then(|| format!("the adapter {status}"))
    }

    /// Ends the kept adapter, if any: its input closed, its group killed once it exits.
    pub async fn release(&mut self) {
        if let Some((_, peer)) = self.kept.take() {
            finish(peer).await;
        }
        self.served = 0;
    }
}

/// Prepares a kept adapter for the next scenario: its log switched to `log`, then the `reset`
/// line with the scenario's environment. Why it cannot, otherwise.
async fn reset(
    peer: &mut Peer,
    env: &[(String, String)],
    log: &Path,
    served: usize,
) -> Result<(), String> {
    if peer.exited() {
        return Err("had exited".into());
    }
    let note = format!(
        "[ctxbed] this adapter process served {served} earlier scenario(s); it was sent `reset` for this one"
    );
    peer.relog(log, &note).map_err(|e| e.to_string())?;
    let variables: Map<String, Value> = env
        .iter()
        .filter(|(key, _)| PROTOCOL_VARIABLES.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), Value::String(value.clone())))
        .collect();
    peer.send(&json!({"type": "reset", "env": variables}))
        .await
        .map_err(|e| format!("could not take the `reset` line ({e})"))
}

/// Closes a kept adapter's input and waits for it to exit; says so on standard error when it
/// had to be killed (no scenario's report is left to carry it).
async fn finish(peer: Peer) {
    let status = peer.finish().await;
    if status.contains("killed") && !super::interrupted() {
        tracing::warn!(%status, "an adapter kept between scenarios did not exit when its input closed; its group was killed");
    }
}

/// One worker thread's runtime and kept adapter.
struct Worker {
    runtime: tokio::runtime::Runtime,
    pool: Pool,
}

thread_local! {
    static WORKER: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

/// Runs `work` on this thread's runtime with its pool (both made on first use).
///
/// # Errors
/// The runtime cannot be started.
pub fn on_worker<T>(
    work: impl FnOnce(&tokio::runtime::Runtime, &mut Pool) -> T,
) -> Result<T, String> {
    WORKER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|error| format!("cannot start a runtime: {error}"))?;
            *slot = Some(Worker {
                runtime,
                pool: Pool::default(),
            });
        }
        let Some(worker) = slot.as_mut() else {
            return Err("no runtime".to_string());
        };
        Ok(work(&worker.runtime, &mut worker.pool))
    })
}

/// Ends the adapter this thread kept, if any. Call when a thread has run its last scenario (a
/// kept adapter is otherwise killed when the thread ends).
pub fn release() {
    WORKER.with(|cell| {
        if let Some(mut worker) = cell.borrow_mut().take() {
            let Worker { runtime, pool } = &mut worker;
            runtime.block_on(pool.release());
        }
    });
}
