//! Every descendant of an adapter, wherever it went. A helper that starts a session of its own
//! (`setsid`, Python's `start_new_session=True`, common for tool servers and daemons) leaves the
//! adapter's process group, so the group kill misses it. On Linux conform therefore makes itself
//! the child subreaper (`PR_SET_CHILD_SUBREAPER`) before its first adapter starts: a process
//! whose parent dies is reparented to conform, not to init, so everything an adapter started
//! stays in conform's tree. Each adapter is started with a mark in its environment
//! ([`MARK_VAR`]), inherited by what it starts; ending an adapter kills every process of the
//! adapter's tree (walking `/proc/*/stat` parent links from its pid) and every process of
//! conform's own tree that carries its mark (helpers whose parent already died), then reaps
//! those that are conform's children.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that marks an adapter's processes.
pub const MARK_VAR: &str = "CTXBED_ADAPTER_MARK";

/// How often the reaping of killed orphans is tried, and the pause between tries.
const REAP_TRIES: u32 = 20;
const REAP_PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// A new mark for an adapter: unique within this process and across processes.
pub fn new_mark() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Makes this process the child subreaper of its descendants (Linux; once; elsewhere nothing).
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: prctl with PR_SET_CHILD_SUBREAPER reads only its integer arguments.
            let set = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
            if set == -1 {
                let error = std::io::Error::last_os_error();
                tracing::warn!(%error, "cannot become the child subreaper; a helper that leaves its adapter's session may outlive it");
            }
        });
    }
}

/// Every process, as (pid, parent pid), from `/proc/*/stat`.
fn processes() -> Vec<(i32, i32)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect()
}

/// The parent pid in `/proc/<pid>/stat` (`pid (comm) state ppid …`; the command may hold
/// spaces and parentheses).
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// `root` and every process below it in `table`.
fn tree(root: i32, table: &[(i32, i32)]) -> BTreeSet<i32> {
    let mut found = BTreeSet::from([root]);
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, _) in table.iter().filter(|(_, ppid)| *ppid == parent) {
            if found.insert(pid) {
                frontier.push(pid);
            }
        }
    }
    found
}

/// True when `pid`'s environment holds `MARK_VAR=mark`.
fn carries(pid: i32, mark: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{MARK_VAR}={mark}");
    environ
        .split(|byte| *byte == 0)
        .any(|entry| entry == wanted.as_bytes())
}

/// Kills every process of `adapter`'s tree and every process of ours that carries `mark`
/// (never this process), then reaps those that are our children, except `adapter` itself
/// (its `Child` reaps it).
pub fn kill_descendants(adapter: i32, mark: &str) {
    #[cfg(target_os = "linux")]
    {
        let us = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let table = processes();
        let mut doomed = tree(adapter, &table);
        doomed.extend(
            tree(us, &table)
                .into_iter()
                .filter(|pid| *pid != us && carries(*pid, mark)),
        );
        doomed.remove(&us);
        doomed.retain(|pid| *pid > 1);
        for pid in &doomed {
            // SAFETY: kill has no memory effects; every pid here is in our tree or the
            // adapter's, never this process or init.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        let orphans: Vec<i32> = table
            .iter()
            .filter(|(pid, ppid)| *ppid == us && *pid != adapter && doomed.contains(pid))
            .map(|(pid, _)| *pid)
            .collect();
        reap(orphans);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (adapter, mark);
}

/// Waits (briefly) for each of our killed children, so none is left a zombie.
#[cfg(target_os = "linux")]
fn reap(mut orphans: Vec<i32>) {
    for _ in 0..REAP_TRIES {
        orphans.retain(|pid| {
            let mut status = 0;
            // SAFETY: waitpid on a pid that is our child writes only `status`.
            let reaped = unsafe { libc::waitpid(*pid, &raw mut status, libc::WNOHANG) };
            reaped == 0
        });
        if orphans.is_empty() {
            return;
        }
        std::thread::sleep(REAP_PAUSE);
    }
    tracing::debug!(?orphans, "killed orphans not yet reaped");
}

#[cfg(test)]
mod tests {
    use super::tree;

    #[test]
    fn a_tree_is_every_process_below_its_root() {
        let table = [(2, 1), (3, 2), (4, 3), (5, 1), (6, 4)];
        assert_eq!(
            tree(2, &table).into_iter().collect::<Vec<_>>(),
            [2, 3, 4, 6]
        );
    }
}
