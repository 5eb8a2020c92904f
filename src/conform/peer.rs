//! One adapter process (`peers/<name>/run`) spoken to in JSON lines (docs/peer-protocol.md).
//!
//! Every read is bounded in size and time; a process that crashes, hangs, or prints something
//! that is not a protocol line becomes a [`PeerError`] naming what happened, never a hung run.
//! The child is killed when its [`Peer`] is dropped, so no failure path leaves it running.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use ctxbed_harness::format::snippet;

/// The longest protocol line read from an adapter.
pub const LINE_BYTES_MAX: u64 = 4 * 1024 * 1024;
/// How long an adapter may take to exit once its input is closed.
pub const EXIT_GRACE: Duration = Duration::from_secs(10);

/// What went wrong with an adapter.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum PeerError {
    #[error("the adapter {path} is missing or not executable: {reason}")]
    Start { path: String, reason: String },
    #[error("the adapter gave no answer within {seconds} s (it was stopped)")]
    Timeout { seconds: u64 },
    #[error("the adapter exited before answering ({status}); its standard error is in {log}")]
    Exited { status: String, log: String },
    #[error("the adapter printed a line that is not a protocol line: {line}")]
    Garbage { line: String },
    #[error("the adapter printed a line over {LINE_BYTES_MAX} bytes")]
    LineTooLong,
    #[error("cannot write to the adapter: {0}")]
    Write(String),
}

/// A running adapter.
#[derive(Debug)]
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    log: PathBuf,
}

impl Peer {
    /// Starts `dir/run` in `dir`, with `env` added to the environment and standard error
    /// appended to `log`.
    ///
    /// # Errors
    /// The program cannot be started or the log cannot be opened.
    pub fn start(dir: &Path, env: &[(String, String)], log: &Path) -> Result<Peer, PeerError> {
        let program = dir.join("run");
        let start_error = |reason: String| PeerError::Start {
            path: program.display().to_string(),
            reason,
        };
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| start_error(format!("cannot open its log {}: {e}", log.display())))?;
        let mut command = Command::new(&program);
        command
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .kill_on_drop(true);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().map_err(|e| start_error(e.to_string()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(start_error(
                "its standard streams could not be piped".into(),
            ));
        };
        Ok(Peer {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            log: log.to_path_buf(),
        })
    }

    /// Sends one line.
    ///
    /// # Errors
    /// The adapter's input is closed (it exited).
    pub async fn send(&mut self, line: &Value) -> Result<(), PeerError> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(PeerError::Write("its input is already closed".into()));
        };
        let mut text = line.to_string();
        text.push('\n');
        let written = stdin.write_all(text.as_bytes()).await;
        let flushed = match written {
            Ok(()) => stdin.flush().await,
            Err(error) => Err(error),
        };
        flushed.map_err(|e| PeerError::Write(e.to_string()))
    }

    /// Reads the next line as a JSON object, within `timeout`.
    ///
    /// # Errors
    /// Timeout (the adapter is killed), end of output (with its exit status), a line that is
    /// not a JSON object, or one too long.
    pub async fn receive(&mut self, timeout: Duration) -> Result<Value, PeerError> {
        let mut line = String::new();
        let mut limited = (&mut self.stdout).take(LINE_BYTES_MAX);
        let read = limited.read_line(&mut line);
        let outcome = tokio::time::timeout(timeout, read).await;
        drop(limited);
        match outcome {
            Err(_) => {
                let _ = self.child.kill().await;
                Err(PeerError::Timeout {
                    seconds: timeout.as_secs(),
                })
            }
            Ok(Err(error)) => Err(PeerError::Garbage {
                line: format!("unreadable output ({error})"),
            }),
            Ok(Ok(0)) => {
                let status = match tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
                    Ok(Ok(status)) => status.to_string(),
                    _ => "still running with its output closed".to_string(),
                };
                Err(PeerError::Exited {
                    status,
                    log: self.log.display().to_string(),
                })
            }
            Ok(Ok(_)) if !line.ends_with('\n') && line.len() as u64 >= LINE_BYTES_MAX => {
                Err(PeerError::LineTooLong)
            }
            Ok(Ok(_)) => match serde_json::from_str::<Value>(line.trim_end()) {
                Ok(value) if value.is_object() => Ok(value),
                _ => Err(PeerError::Garbage {
                    line: snippet(line.trim_end(), 200),
                }),
            },
        }
    }

    /// Closes the adapter's input and waits for it to exit (killing it after [`EXIT_GRACE`]).
    /// Returns its exit status as text.
    pub async fn finish(mut self) -> String {
        drop(self.stdin.take());
        match tokio::time::timeout(EXIT_GRACE, self.child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            Ok(Err(error)) => format!("unknown ({error})"),
            Err(_) => {
                let _ = self.child.kill().await;
                "killed: it did not exit when its input closed".to_string()
            }
        }
    }

    /// Stops the adapter at once.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}
