//! One adapter process (`peers/<name>/run`) spoken to in JSON lines (docs/peer-protocol.md).
//!
//! Every read and write is bounded in size and time and ends early when the run is interrupted
//! ([`super::INTERRUPTED`]); a process that crashes, hangs, prints something that is not a
//! protocol line, or exits while a process it started holds its output open becomes a
//! [`PeerError`] naming what happened, never a hung run. The adapter runs in a process group of
//! its own ([`super::process`]); the whole group is killed when the scenario ends, on every
//! error, and when the [`Peer`] is dropped, so no path leaves a process of it running.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, sleep_until};

use super::process::{self, Group, StderrLog};
use ctxbed_harness::format::snippet;

/// The longest protocol line read from an adapter.
pub const LINE_BYTES_MAX: u64 = 4 * 1024 * 1024;
/// How long an adapter may take to exit once its input is closed.
pub const EXIT_GRACE: Duration = Duration::from_secs(10);
/// How long a line may wait for the adapter to read its input (a pipe holds only so much, and an
/// adapter still starting reads nothing).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a line may still arrive once the adapter has exited: past this, a process it started
/// that holds its output open is not waited for.
pub const OUTPUT_DRAIN: Duration = Duration::from_millis(200);
/// How often a wait checks whether the run was interrupted.
const STOP_POLL: Duration = Duration::from_millis(50);
/// How long killing the adapter may take to be seen (SIGKILL is not refused).
const KILL_WAIT: Duration = Duration::from_secs(2);

/// What went wrong with an adapter.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum PeerError {
    #[error("the adapter {path} is missing or not executable: {reason}")]
    Start { path: String, reason: String },
    #[error("the adapter gave no answer within {seconds} s (it was stopped)")]
    Timeout { seconds: u64 },
    #[error("the adapter exited before answering ({status}); its standard error is in {log}")]
    Exited { status: String, log: String },
    #[error(
        "the adapter exited ({status}) while a child kept its output open; its standard error is in {log}"
    )]
    OutputHeld { status: String, log: String },
    #[error("the adapter printed a line that is not a protocol line: {line}")]
    Garbage { line: String },
    #[error("the adapter printed a line over {LINE_BYTES_MAX} bytes")]
    LineTooLong,
    #[error("cannot write to the adapter: {0}")]
    Write(String),
    #[error("interrupted: the run was asked to stop")]
    Interrupted,
}

/// How an adapter is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// `DIR/run`, started in `DIR`: an adapter directory under `peers/`.
    Dir(PathBuf),
    /// A command line, run by `sh -c` in the current directory (`--adapter "python x.py"`).
    Shell(String),
}

impl Launch {
    fn command(&self) -> Command {
        match self {
            Launch::Dir(dir) => {
                let mut command = Command::new(dir.join("run"));
                command.current_dir(dir);
                command
            }
            Launch::Shell(line) => {
                let mut command = Command::new("sh");
                command.arg("-c").arg(line);
                command
            }
        }
    }
}

impl std::fmt::Display for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Launch::Dir(dir) => write!(f, "{}", dir.join("run").display()),
            Launch::Shell(line) => write!(f, "`{line}`"),
        }
    }
}

/// A running adapter.
#[derive(Debug)]
pub struct Peer {
    child: Child,
    group: Group,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    stderr: StderrLog,
    log: PathBuf,
    /// Set when the run is to stop: every wait ends soon after.
    stop: &'static AtomicBool,
    /// The group was killed.
    killed: bool,
    /// The adapter declared it can serve another scenario after a `reset` line.
    resettable: bool,
}

impl Peer {
    /// Starts `dir/run` in `dir`, in a process group of its own, with `env` added to the
    /// environment and standard error appended to `log` (up to
    /// [`process::STDERR_LOG_BYTES_MAX`]). Call within a tokio runtime.
    ///
    /// # Errors
    /// The program cannot be started or the log cannot be opened.
    pub fn start(dir: &Path, env: &[(String, String)], log: &Path) -> Result<Peer, PeerError> {
        Peer::launch(&Launch::Dir(dir.to_path_buf()), env, log)
    }

    /// Starts the adapter `launch` describes, with `env` added to the environment and standard
    /// error copied to `log`.
    ///
    /// # Errors
    /// The program cannot be started or the log cannot be opened.
    pub fn launch(
        launch: &Launch,
        env: &[(String, String)],
        log: &Path,
    ) -> Result<Peer, PeerError> {
        let start_error = |reason: String| PeerError::Start {
            path: launch.to_string(),
            reason,
        };
        let log_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| start_error(format!("cannot open its log {}: {e}", log.display())))?;
        let mut command = launch.command();
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mark = process::isolate(&mut command);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().map_err(|e| start_error(e.to_string()))?;
        let group = Group::of(&child, mark);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            group.kill();
            return Err(start_error(
                "its standard streams could not be piped".into(),
            ));
        };
        Ok(Peer {
            child,
            group,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            stderr: StderrLog::start(stderr, log_file),
            log: log.to_path_buf(),
            stop: &super::INTERRUPTED,
            killed: false,
            resettable: false,
        })
    }

    /// Records whether the adapter's last `ready` or `unsupported` declared `"reset": true`.
    pub fn set_resettable(&mut self, resettable: bool) {
        self.resettable = resettable;
    }

    /// True when the adapter declared it serves another scenario after a `reset` line.
    pub fn resettable(&self) -> bool {
        self.resettable
    }

    /// True once the adapter process has exited (it cannot serve another scenario).
    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends the adapter's standard error to `log` from now on, for the next scenario it
    /// serves; `note` is written first, as the log's first line.
    ///
    /// # Errors
    /// The log cannot be opened.
    pub fn relog(&mut self, log: &Path, note: &str) -> Result<(), PeerError> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| PeerError::Start {
                path: log.display().to_string(),
                reason: format!("cannot open the log: {e}"),
            })?;
        let _ = std::io::Write::write_all(&mut file, format!("{note}\n").as_bytes());
        self.stderr.switch(file);
        self.log = log.to_path_buf();
        Ok(())
    }

    /// Sends one line, within [`WRITE_TIMEOUT`].
    ///
    /// # Errors
    /// The adapter's input is closed (it exited), it reads none of it in time, or the run is
    /// interrupted; the adapter's group is then killed.
    pub async fn send(&mut self, line: &Value) -> Result<(), PeerError> {
        let stop = self.stop;
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(PeerError::Write("its input is already closed".into()));
        };
        let mut text = line.to_string();
        text.push('\n');
        let write = async {
            stdin.write_all(text.as_bytes()).await?;
            stdin.flush().await
        };
        let result = tokio::select! {
            written = write => written,
            () = tokio::time::sleep(WRITE_TIMEOUT) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("it read none of its input for {} s (it was stopped)", WRITE_TIMEOUT.as_secs()),
            )),
            () = raised(stop) => return self.failed(PeerError::Interrupted).await,
        };
        match result {
            Ok(()) => Ok(()),
            // Its input closed because it exited: say so, with its status, as a read would.
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                let error = match self.wait_exit(OUTPUT_DRAIN).await {
                    Ok(status) => PeerError::Exited {
                        status,
                        log: self.log.display().to_string(),
                    },
                    Err(_) => PeerError::Write(error.to_string()),
                };
                self.failed(error).await
            }
            Err(error) => self.failed(PeerError::Write(error.to_string())).await,
        }
    }

    /// Ends the adapter after a failed exchange and returns `error`.
    async fn failed<T>(&mut self, error: PeerError) -> Result<T, PeerError> {
        self.end().await;
        Err(error)
    }

    /// Reads the next line as a JSON object, within `timeout`.
    ///
    /// # Errors
    /// Timeout, interruption, end of output (with its exit status), the adapter's exit while a
    /// process it started holds its output open, a line that is not a JSON object, or one too
    /// long. The adapter's group is then killed, and its log is complete.
    pub async fn receive(&mut self, timeout: Duration) -> Result<Value, PeerError> {
        let result = match self.read_line(timeout).await {
            Ok(line) => match serde_json::from_str::<Value>(line.trim_end()) {
                Ok(value) if value.is_object() => Ok(value),
                _ => Err(PeerError::Garbage {
                    line: snippet(line.trim_end(), 200),
                }),
            },
            Err(error) => Err(error),
        };
        if result.is_err() {
            self.end().await;
        }
        result
    }

    /// Reads one line while watching the adapter: its exit (then at most [`OUTPUT_DRAIN`] more
    /// for a line), the timeout and the stop flag.
    async fn read_line(&mut self, timeout: Duration) -> Result<String, PeerError> {
        let deadline = Instant::now() + timeout;
        let stop = self.stop;
        let mut line = String::new();
        let mut exited: Option<(String, Instant)> = None;
        let outcome = {
            let mut limited = (&mut self.stdout).take(LINE_BYTES_MAX);
            let read = limited.read_line(&mut line);
            tokio::pin!(read);
            loop {
                let drained = exited.as_ref().map_or(deadline, |(_, at)| *at);
                tokio::select! {
                    biased;
                    read = &mut read => break Ok(read),
                    status = self.child.wait(), if exited.is_none() => {
                        exited = Some((describe(status), Instant::now() + OUTPUT_DRAIN));
                    }
                    () = sleep_until(drained), if exited.is_some() => {
                        break Err(PeerError::OutputHeld {
                            status: exited.take().map(|(status, _)| status).unwrap_or_default(),
                            log: self.log.display().to_string(),
                        });
                    }
                    () = sleep_until(deadline) => break Err(PeerError::Timeout {
                        seconds: timeout.as_secs(),
                    }),
                    () = raised(stop) => break Err(PeerError::Interrupted),
                }
            }
        };
        match outcome? {
            Err(error) => Err(PeerError::Garbage {
                line: format!("unreadable output ({error})"),
            }),
            Ok(0) => {
                let status = match exited {
                    Some((status, _)) => status,
                    None => self
                        .wait_exit(EXIT_GRACE)
                        .await
                        .unwrap_or_else(|_| "still running with its output closed".to_string()),
                };
                Err(PeerError::Exited {
                    status,
                    log: self.log.display().to_string(),
                })
            }
            Ok(_) if !line.ends_with('\n') && line.len() as u64 >= LINE_BYTES_MAX => {
                Err(PeerError::LineTooLong)
            }
            Ok(_) => Ok(line),
        }
    }

    /// Waits up to `grace` for the adapter to exit: its exit status, or why it was not waited
    /// for.
    async fn wait_exit(&mut self, grace: Duration) -> Result<String, &'static str> {
        let stop = self.stop;
        tokio::select! {
            status = self.child.wait() => Ok(describe(status)),
            () = tokio::time::sleep(grace) => Err("it did not exit when its input closed"),
            () = raised(stop) => Err("interrupted: the run was asked to stop"),
        }
    }

    /// Kills the adapter's whole group, reaps the adapter and completes its log. The group is
    /// signalled once; the rest is safe to repeat, so a call cut short (its future dropped, as a
    /// `select!` does) is finished by the next.
    async fn end(&mut self) {
        if !self.killed {
            self.killed = true;
            self.group.kill();
        }
        let _ = tokio::time::timeout(KILL_WAIT, self.child.kill()).await;
        self.stderr.complete().await;
    }

    /// Closes the adapter's input and waits for it to exit (killing it after [`EXIT_GRACE`], or
    /// at once when the run is interrupted); then kills what is left of its group. Returns its
    /// exit status as text.
    pub async fn finish(mut self) -> String {
        drop(self.stdin.take());
        let status = match self.wait_exit(EXIT_GRACE).await {
            Ok(status) => status,
            Err(reason) => format!("killed: {reason}"),
        };
        self.end().await;
        status
    }

    /// Stops the adapter and its whole group at once.
    pub async fn kill(mut self) {
        self.end().await;
    }
}

/// Appends a line to an adapter's log (best effort: the log is for reading, not judging).
pub fn append_note(log: &Path, line: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
    {
        let _ = std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes());
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if !self.killed {
            self.group.kill();
        }
    }
}

/// An exit status as text.
fn describe(status: std::io::Result<std::process::ExitStatus>) -> String {
    match status {
        Ok(status) => status.to_string(),
        Err(error) => format!("unknown ({error})"),
    }
}

/// Completes once `flag` is set, checking every [`STOP_POLL`].
async fn raised(flag: &AtomicBool) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(STOP_POLL).await;
    }
}
