//! The operating-system side of an adapter run: its process group, and the copy of its standard
//! error into its log.
//!
//! Each adapter starts as the leader of a process group of its own (and, on Linux, is killed when
//! the thread that started it ends), so whatever it starts — shells, interpreters, servers left in
//! the background — goes with it: [`Group::kill`] signals the whole group at once, and every
//! descendant that left the group for a session of its own (`conform::reaper`). Its standard
//! error is piped and copied to the log up to [`STDERR_LOG_BYTES_MAX`]; past that it is still read
//! (the adapter never blocks on a full pipe) but discarded, and the log ends with one line saying
//! how many bytes were dropped. An adapter that serves several scenarios has its log switched
//! between them ([`StderrLog::switch`]): each scenario's log keeps its own share.

use std::fs::File;
use std::io::Write;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The most of an adapter's standard error its log keeps, per scenario run. The rest is read and
/// discarded, and the log's last line says how many bytes that was.
pub const STDERR_LOG_BYTES_MAX: u64 = 4 * 1024 * 1024;

/// How long the copy of standard error goes on, once asked to stop, for what is still in the
/// pipe (the group is dead by then, so the pipe ends at once unless a process left the group).
const DRAIN: Duration = Duration::from_millis(500);

/// Makes the child of `command` the leader of a new process group and, on Linux, has the kernel
/// send it SIGKILL when the thread that started it ends (ctxbed killed without a chance to clean
/// up). What the child starts stays in its group unless it leaves it on purpose; it carries the
/// returned mark in its environment either way, and this process becomes the child subreaper,
/// so [`Group::kill`] finds it.
pub fn isolate(command: &mut Command) -> String {
    super::reaper::become_subreaper();
    let mark = super::reaper::new_mark();
    command.env(super::reaper::MARK_VAR, &mark);
    #[cfg(not(unix))]
    let _ = command;
    #[cfg(unix)]
    command.process_group(0);
    #[cfg(target_os = "linux")]
    {
        // SAFETY: the closure runs between fork and exec and makes only async-signal-safe calls
        // (prctl, getppid) and allocates nothing.
        let parent = unsafe { libc::getpid() };
        unsafe {
            command.pre_exec(move || {
                let signal = libc::SIGKILL as libc::c_ulong;
                if libc::prctl(libc::PR_SET_PDEATHSIG, signal, 0, 0, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // ctxbed may have died before the request took effect: then nobody would kill
                // this adapter, so it does not start.
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    mark
}

/// An adapter's process group: the adapter and everything it started.
#[derive(Debug)]
pub struct Group {
    /// The group's id, the adapter's pid (it leads the group); `None` if it was never known.
    id: Option<i32>,
    /// The mark its processes carry ([`isolate`]).
    mark: String,
}

impl Group {
    /// The group `child` leads (started through [`isolate`], which gave `mark`).
    pub fn of(child: &Child, mark: String) -> Group {
        Group {
            id: child.id().and_then(|id| i32::try_from(id).ok()),
            mark,
        }
    }

    /// Sends SIGKILL to every process of the group, and to every descendant of the adapter
    /// that left it (reaping those reparented to this process). Harmless once they are gone.
    /// Elsewhere than on Unix there are no groups, and the caller kills its child itself.
    pub fn kill(&self) {
        #[cfg(unix)]
        if let Some(id) = self.id.filter(|id| *id > 1) {
            super::reaper::kill_descendants(id, &self.mark);
            // SAFETY: killpg has no memory effects; a group id over 1 never names ctxbed's own
            // group, since the adapter leads a group of its own.
            unsafe {
                libc::killpg(id, libc::SIGKILL);
            }
        }
    }
}

/// The copy of an adapter's standard error into its log, running as a task of its own.
#[derive(Debug)]
pub struct StderrLog {
    stop: Option<oneshot::Sender<()>>,
    /// Hands the copy the next scenario's log.
    next: mpsc::UnboundedSender<File>,
    task: Option<JoinHandle<()>>,
}

impl StderrLog {
    /// Starts copying `from` into `to`, capped at [`STDERR_LOG_BYTES_MAX`]. Call within a tokio
    /// runtime.
    pub fn start(from: ChildStderr, to: File) -> StderrLog {
        let (stop, stopped) = oneshot::channel();
        let (next, logs) = mpsc::unbounded_channel();
        StderrLog {
            stop: Some(stop),
            next,
            task: Some(tokio::spawn(copy(from, to, logs, stopped))),
        }
    }

    /// Sends what the adapter writes from now on to `to`: the current log is closed (with its
    /// line on what was dropped, if anything was) and `to` gets a cap of its own. What was
    /// already in the pipe goes to `to`.
    pub fn switch(&mut self, to: File) {
        // The copy ended (the pipe closed): the adapter is gone, and `to` stays empty.
        let _ = self.next.send(to);
    }

    /// Stops the copy once the pipe is drained (or after a short grace) and returns when the log
    /// is complete, its last line written. Later calls return at once; a call cut short (its
    /// future dropped) leaves the next to wait.
    pub async fn complete(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.as_mut() {
            let _ = task.await;
            self.task = None;
        }
    }
}

/// Copies until the pipe ends or, once `stop` fires, for at most [`DRAIN`] more; then writes the
/// line on what was dropped, if anything was.
async fn copy(
    mut from: ChildStderr,
    mut to: File,
    mut logs: mpsc::UnboundedReceiver<File>,
    mut stop: oneshot::Receiver<()>,
) {
    let mut buffer = vec![0u8; 64 * 1024];
    let mut kept = Kept::default();
    let mut deadline = None;
    loop {
        let read = match deadline {
            None => tokio::select! {
                read = from.read(&mut buffer) => read,
                Some(next) = logs.recv() => {
                    kept.close(&mut to);
                    (to, kept) = (next, Kept::default());
                    continue;
                }
                _ = &mut stop => {
                    deadline = Some(tokio::time::Instant::now() + DRAIN);
                    continue;
                }
            },
            Some(at) => match tokio::time::timeout_at(at, from.read(&mut buffer)).await {
                Ok(read) => read,
                Err(_) => break,
            },
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(count) => kept.write(&mut to, &buffer[..count]),
        }
    }
    kept.close(&mut to);
}

/// What the log has kept and dropped so far.
#[derive(Debug, Default)]
struct Kept {
    kept: u64,
    dropped: u64,
    /// The last byte kept was not a line end.
    open_line: bool,
    /// Writing to the log failed (reported once).
    failed: bool,
}

impl Kept {
    fn write(&mut self, to: &mut File, bytes: &[u8]) {
        let room = STDERR_LOG_BYTES_MAX.saturating_sub(self.kept);
        let keep = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if let Some(last) = bytes[..keep].last() {
            self.append(to, &bytes[..keep]);
            self.kept += keep as u64;
            self.open_line = *last != b'\n';
        }
        self.dropped += (bytes.len() - keep) as u64;
    }

    fn close(&mut self, to: &mut File) {
        if self.dropped == 0 {
            return;
        }
        let lead = if self.open_line { "\n" } else { "" };
        let line = format!(
            "{lead}[ctxbed] {} more bytes of standard error were discarded: the log keeps the first {STDERR_LOG_BYTES_MAX} bytes of each adapter run (STDERR_LOG_BYTES_MAX)\n",
            self.dropped
        );
        self.append(to, line.as_bytes());
    }

    fn append(&mut self, to: &mut File, bytes: &[u8]) {
        if self.failed {
            return;
        }
        if let Err(error) = to.write_all(bytes) {
            self.failed = true;
            tracing::warn!(%error, "cannot write an adapter's standard error to its log");
        }
    }
}
