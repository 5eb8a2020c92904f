//! `ctxbed conform` leaves no process behind: each adapter runs in a process group of its own,
//! killed whole when the scenario ends, on an error, when its `Peer` is dropped and when the run
//! is interrupted (during setup too). An adapter that exits while a process it started holds its
//! output open fails at once, and its standard error is kept only up to a cap. An adapter that
//! declares `reset` serves the next scenario in its process, and is ended when the worker
//! releases it; one that cannot take the reset is replaced.
//!
//! The adapters are the scripts in `tests/data/conform-processes/`; each names its group and its
//! background process on its standard error, so the test reads them from the log.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ctxbed::conform::peer::Peer;
use ctxbed::conform::process::STDERR_LOG_BYTES_MAX;
use ctxbed::conform::{self, CellReport, ConformOptions};
use ctxbed::scenario::check::golden::GoldenMode;

const PEERS: &str = "tests/data/conform-processes";
const PROBE: &str = "tests/wire-suite/scenarios/wire/probe.toml";

fn peers_dir() -> PathBuf {
    std::path::absolute(PEERS).expect("an absolute peers path")
}

fn run(adapter: &str, logs: &Path) -> CellReport {
    run_with(adapter, logs, true)
}

/// [`run`], letting a resettable adapter be kept for the thread's next scenario or not.
fn run_with(adapter: &str, logs: &Path, reuse: bool) -> CellReport {
    let options = ConformOptions {
        peers_dir: peers_dir(),
        logs_dir: logs.to_path_buf(),
        ctxbed_bin: PathBuf::from(env!("CARGO_BIN_EXE_ctxbed")),
        mode: GoldenMode::Compare { write_new: false },
        adapters: Vec::new(),
        reuse,
    };
    conform::run_one(Path::new(PROBE), adapter, &options)
}

/// The adapter's group and background process, from its `group <pgid> background <pid>` line.
fn named(log: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(log).ok()?;
    let line = text.lines().find(|line| line.starts_with("group "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["group", group, "background", pid] => Some((group.parse().ok()?, pid.parse().ok()?)),
        _ => None,
    }
}

/// [`named`], waiting up to 10 s for the adapter to write the line.
fn wait_named(log: &Path) -> (u32, u32) {
    let started = Instant::now();
    loop {
        if let Some(found) = named(log) {
            return found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the adapter never named its processes in {}",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process's group and state letter, from `/proc/<pid>/stat` (`None` once it is gone).
fn stat(pid: &str) -> Option<(u32, char)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp ...`: the command may hold spaces and parentheses.
    let fields: Vec<&str> = text
        .get(text.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let state = fields.first()?.chars().next()?;
    Some((fields.get(2)?.parse().ok()?, state))
}

/// The live processes (zombies do not count) in `group`, and `background` if it is alive.
fn left_over(group: u32, background: u32) -> Vec<u32> {
    let mut left: Vec<u32> = std::fs::read_dir("/proc")
        .expect("/proc is readable")
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| matches!(stat(&pid.to_string()), Some((g, s)) if g == group && s != 'Z'))
        .collect();
    if matches!(stat(&background.to_string()), Some((_, s)) if s != 'Z')
        && !left.contains(&background)
    {
        left.push(background);
    }
    left
}

/// Asserts that nothing of the adapter's group is left (SIGKILL acts at once, but not
/// synchronously: allow 2 s). Leftovers are killed before the test fails, so a failing run leaves
/// nothing behind either.
fn assert_gone(group: u32, background: u32) {
    let started = Instant::now();
    let mut left = left_over(group, background);
    while !left.is_empty() && started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        left = left_over(group, background);
    }
    if !left.is_empty() {
        for pid in left.iter().chain([&group]) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        panic!("processes of the adapter's group {group} are still running: {left:?}");
    }
}

#[test]
fn a_background_process_of_the_adapter_ends_with_the_scenario() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let report = run("background", logs.path());
    assert!(report.problem.is_none(), "{:?}", report.problem);
    let (group, background) = named(&report.log).expect("the log names the processes");
    assert_ne!(group, std::process::id());
    assert_gone(group, background);
}

#[test]
fn a_helper_in_a_session_of_its_own_ends_with_the_scenario_and_is_reaped() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let report = run("setsid-helper", logs.path());
    assert!(report.problem.is_none(), "{:?}", report.problem);
    let (group, helper) = named(&report.log).expect("the log names the processes");
    let (helper_group, _) = stat(&helper.to_string()).unwrap_or((0, 'Z'));
    assert_ne!(helper_group, group, "the helper left the adapter's group");
    assert_gone(group, helper);
    // Reparented to this process (the subreaper) and reaped, not left a zombie.
    let started = Instant::now();
    while stat(&helper.to_string()).is_some() && started.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        stat(&helper.to_string()).is_none(),
        "the helper {helper} is a zombie"
    );
}

#[test]
fn a_step_written_after_the_adapter_exited_says_it_exited_before_answering() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let log = logs.path().join("exit0.log");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let error = runtime.block_on(async {
        let dir = peers_dir().join("exit0-after-ready");
        let mut peer = Peer::start(&dir, &[], &log).expect("it starts");
        let setup = serde_json::json!({"type": "setup", "system": "", "tools": []});
        peer.send(&setup).await.expect("setup is sent");
        let ready = peer.receive(Duration::from_secs(10)).await.expect("ready");
        assert_eq!(ready["type"], "ready");
        let started = Instant::now();
        while !peer.exited() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "it never exited"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let step = serde_json::json!({"type": "step", "step": 1, "input": "hi"});
        match peer.send(&step).await {
            Ok(()) => String::from("the step was written"),
            Err(error) => error.to_string(),
        }
    });
    assert!(
        error.starts_with("the adapter exited before answering (exit status: 0)"),
        "{error}"
    );
}

#[test]
fn a_stop_while_a_restart_waits_for_the_old_process_starts_no_new_one() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args([
            "conform",
            "--peers",
            PEERS,
            "--harness",
            "restart-linger",
            "--logs",
        ])
        .arg(logs.path())
        .arg("scenarios/wire/resumed-session.toml")
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ctxbed conform starts");
    let log = logs.path().join("wire/resumed-session/restart-linger.log");
    let started = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|text| text.contains("lingering")) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the restart never came"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    let status = child.wait().expect("conform exits");
    let text = std::fs::read_to_string(&log).expect("the log");
    assert!(!status.success());
    assert!(
        !text.contains("a new process serves the steps from here"),
        "{text}"
    );
    assert_eq!(text.matches("started ").count(), 1, "{text}");
}

#[test]
fn an_adapter_that_exits_while_a_child_holds_its_output_fails_at_once() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let started = Instant::now();
    let report = run("exit-held", logs.path());
    let elapsed = started.elapsed();
    let (group, background) = named(&report.log).expect("the log is complete");
    assert_gone(group, background);
    // The setup timeout is 120 s: the failure must not wait for it.
    assert!(
        elapsed < Duration::from_secs(10),
        "failed after {elapsed:?}"
    );
    let problem = report.problem.clone().unwrap_or_default();
    for needle in [
        "kept its output open",
        "exit status: 3",
        &report.log.display().to_string(),
    ] {
        assert!(problem.contains(needle), "{problem}");
    }
}

#[test]
fn an_adapter_flooding_its_standard_error_gets_a_capped_log() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let report = run("stderr-flood", logs.path());
    assert!(report.problem.is_none(), "{:?}", report.problem);
    let log = std::fs::read(&report.log).expect("the log exists");
    let cap = usize::try_from(STDERR_LOG_BYTES_MAX).expect("the cap fits");
    assert!(log.len() <= cap + 512, "the log has {} bytes", log.len());
    assert!(log[..cap].iter().all(|byte| *byte == b'e'));
    let text = String::from_utf8_lossy(&log[cap..]);
    let last = text.trim_end().lines().last().unwrap_or_default();
    let dropped = 16 * 1024 * 1024 - STDERR_LOG_BYTES_MAX;
    for needle in [
        format!("{dropped} more bytes"),
        "discarded".to_string(),
        STDERR_LOG_BYTES_MAX.to_string(),
    ] {
        assert!(last.contains(&needle), "the log ends with {last:?}");
    }
}

#[test]
fn a_dropped_peer_takes_its_group_with_it() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let log = logs.path().join("background.log");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (group, background) = runtime.block_on(async {
        let mut peer = Peer::start(&peers_dir().join("background"), &[], &log).expect("it starts");
        let setup = serde_json::json!({"type": "setup", "system": "", "tools": []});
        peer.send(&setup).await.expect("setup is sent");
        let ready = peer.receive(Duration::from_secs(10)).await.expect("ready");
        assert_eq!(ready["type"], "ready");
        let started = Instant::now();
        let found = loop {
            if let Some(found) = named(&log) {
                break found;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "never named");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        drop(peer);
        found
    });
    assert_gone(group, background);
}

#[test]
fn sigterm_during_setup_stops_conform_and_the_adapter_group_at_once() {
    let logs = tempfile::tempdir().expect("a temporary directory");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args([
            "conform",
            "--peers",
            PEERS,
            "--harness",
            "setup-hang",
            "--logs",
        ])
        .arg(logs.path())
        .arg(PROBE)
        .env("CI", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctxbed conform starts");
    let (group, background) = wait_named(&logs.path().join("wire/probe/setup-hang.log"));
    // The adapter has started and waits in setup (whose timeout is 120 s).
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    while child
        .try_wait()
        .expect("conform can be waited for")
        .is_none()
    {
        if started.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            assert_gone(group, background);
            panic!("conform was still running 5 s after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = started.elapsed();
    let output = child.wait_with_output().expect("conform exits");
    assert!(
        elapsed < Duration::from_millis(1_500),
        "stopped after {elapsed:?}"
    );
    assert_eq!(output.status.code(), Some(130));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("interrupted: the run was asked to stop"),
        "{stdout}"
    );
    assert_gone(group, background);
}

/// The pid an adapter gave in its `started <pid>` line, if its log has one.
fn started(log: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("started ")?.parse().ok())
}

/// Waits up to 2 s for `pid` to be gone (or a zombie).
fn assert_exited(pid: u32) {
    let started = Instant::now();
    while matches!(stat(&pid.to_string()), Some((_, s)) if s != 'Z') {
        if started.elapsed() > Duration::from_secs(2) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("the released adapter {pid} is still running");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_resettable_adapter_serves_the_next_scenario_in_its_process_until_released() {
    let (first_logs, second_logs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = run("resettable", first_logs.path());
    let second = run("resettable", second_logs.path());
    // The fake calls no model, so `model_called` fails; the adapter itself must have no problem.
    for report in [&first, &second] {
        assert!(
            report.problem.is_none(),
            "{:?}\n{}",
            report.problem,
            report.trace
        );
    }
    let pid = started(&first.log).expect("the first run started the adapter");
    assert!(
        matches!(stat(&pid.to_string()), Some((_, s)) if s != 'Z'),
        "the adapter was kept"
    );
    let log = std::fs::read_to_string(&second.log).expect("the second run's log");
    assert!(
        started(&second.log).is_none(),
        "a second process started:\n{log}"
    );
    assert!(
        log.starts_with("[ctxbed] this adapter process served 1 earlier scenario(s); it was sent `reset` for this one\n"),
        "{log}"
    );
    // The reset line carries the second scenario's environment: its own server, the protocol's
    // variables only.
    let reset = log
        .lines()
        .find_map(|l| l.strip_prefix("reset: "))
        .expect("a reset line");
    let reset: serde_json::Value = serde_json::from_str(reset).expect("the reset line is JSON");
    let env = reset["env"].as_object().expect("an env object");
    assert_eq!(env["CTXBED_MODEL"], "probe");
    assert!(
        env["CTXBED_OPENAI_BASE_URL"]
            .as_str()
            .is_some_and(|url| url.starts_with("http://127.0.0.1:"))
    );
    assert!(
        env.keys()
            .all(|key| conform::pool::PROTOCOL_VARIABLES.contains(&key.as_str())),
        "{env:?}"
    );
    conform::release_adapters();
    assert_exited(pid);
}

#[test]
fn without_reuse_every_scenario_gets_a_process_of_its_own() {
    let (first_logs, second_logs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = run_with("resettable", first_logs.path(), false);
    let second = run_with("resettable", second_logs.path(), false);
    let (one, two) = (started(&first.log), started(&second.log));
    assert!(
        one.is_some() && two.is_some() && one != two,
        "{one:?} {two:?}"
    );
    assert_exited(one.unwrap());
    assert_exited(two.unwrap());
}

#[test]
fn a_kept_adapter_that_cannot_take_the_reset_is_replaced_for_the_next_scenario() {
    let (first_logs, second_logs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = run("resettable-once", first_logs.path());
    let second = run("resettable-once", second_logs.path());
    assert!(
        second.problem.is_none(),
        "{:?}\n{}",
        second.problem,
        second.trace
    );
    let log = std::fs::read_to_string(&second.log).expect("the second run's log");
    assert!(log.contains("a new process serves this one"), "{log}");
    let (one, two) = (started(&first.log), started(&second.log));
    assert!(
        one.is_some() && two.is_some() && one != two,
        "{one:?} {two:?}\n{log}"
    );
    conform::release_adapters();
    assert_exited(one.unwrap());
    assert_exited(two.unwrap());
}

#[test]
fn sigterm_during_a_blessing_exploration_pins_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (logs, pins) = (dir.path().join("logs"), dir.path().join("pins"));
    let child = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(["conform", "--generate", "3", "--bless", "--peers", PEERS])
        .args(["--harness", "setup-hang", "--logs"])
        .arg(&logs)
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--pins")
        .arg(&pins)
        .env_remove("CI")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctxbed conform starts");
    let (group, background) = wait_named(&logs.join("wire/gen-0/setup-hang.log"));
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    let output = child.wait_with_output().expect("conform exits");
    assert_eq!(output.status.code(), Some(130));
    assert_gone(group, background);
    assert!(
        !pins.join("setup-hang.txt").exists(),
        "an interrupted exploration pinned its partial findings"
    );
}
