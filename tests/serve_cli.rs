//! `ctxbed serve`'s command line: the addresses `--listen` takes (`localhost`, IPv4-mapped
//! loopback), the values it refuses with a clear message (`--time-scale -1`, `--reset 0`), and
//! a SIGTERM in its first milliseconds (its runtime started, its mock not yet loaded), which still
//! ends it with its summary: the stop signals are held back from the first instruction of
//! `main` until the handlers are installed.
#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/served.rs"]
mod served;

const MOCK: &str = "mock-models/three-replies.toml";

#[test]
fn listen_takes_localhost_and_an_ipv4_mapped_loopback_address() {
    for listen in ["localhost:0", "LOCALHOST:0", "[::ffff:127.0.0.1]:0"] {
        let server = served::serve_in(Path::new("."), &[MOCK, "--listen", listen]);
        assert!(
            server.addr.starts_with("127.0.0.1:"),
            "{listen} listens on {}",
            server.addr
        );
    }
}

fn refused(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .arg("serve")
        .arg(MOCK)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ctxbed runs");
    assert_eq!(output.status.code(), Some(2), "{args:?}");
    assert!(output.stdout.is_empty(), "{args:?}: it listened");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_negative_time_scale_and_request_zero_are_refused_with_a_clear_message() {
    let negative = refused(&["--time-scale", "-1"]);
    assert!(
        negative.contains("the time scale must be positive") && negative.contains("not -1"),
        "{negative}"
    );
    for flag in ["--reset", "--cut-stream"] {
        let zero = refused(&[flag, "2,0"]);
        assert!(
            zero.contains("requests are counted from 1") && zero.contains("0 names no request"),
            "{zero}"
        );
    }
    let remote = refused(&["--listen", "[::ffff:10.0.0.1]:0"]);
    assert!(remote.contains("not a loopback address"), "{remote}");
}

/// True once the process has reached `main` and started its runtime: more than one thread
/// (`Threads:` of its status). From here on a SIGTERM must end it with its summary, though its
/// mock is still loading and nothing listens yet.
fn runtime_started(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status.lines().any(|line| {
        line.strip_prefix("Threads:")
            .and_then(|count| count.trim().parse::<u32>().ok())
            .is_some_and(|count| count > 1)
    })
}

#[test]
fn sigterm_as_soon_as_the_runtime_starts_ends_serve_with_its_summary() {
    for _ in 0..5 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
            .args(["serve", MOCK, "--time-scale", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ctxbed serve starts");
        let started = Instant::now();
        while !runtime_started(child.id()) {
            if started.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve never started its runtime");
            }
            std::thread::yield_now();
        }
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill runs");
        let output = child.wait_with_output().expect("serve exits");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{:?}: {stderr}", output.status);
        assert!(
            stderr.contains("three-replies (openai): 0 requests"),
            "{stderr}"
        );
    }
}
