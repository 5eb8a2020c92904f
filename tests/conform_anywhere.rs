//! `ctxbed conform` and `ctxbed serve` from a directory that is not ctxbed's: the wire suite is
//! built into the binary, an adapter is any command, and logs and traces go where the user says
//! (by default `ctxbed-conform/` in the current directory).

use std::path::Path;
use std::process::{Command, Output};

#[path = "support/served.rs"]
mod served;

const BIN: &str = env!("CARGO_BIN_EXE_ctxbed");

fn ctxbed_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("CI", "true")
        .env_remove("CTXBED_PEER_PLANT")
        .output()
        .expect("ctxbed runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_built_in_suite_is_listed_from_anywhere() {
    let empty = tempfile::tempdir().expect("a scratch directory");
    let output = ctxbed_in(empty.path(), &["conform", "--list"]);
    assert!(output.status.success(), "{}", text(&output));
    let listing = String::from_utf8_lossy(&output.stdout).into_owned();
    let names: Vec<&str> = listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    let on_disk = std::fs::read_dir("scenarios/wire")
        .expect("the wire suite's folder")
        .filter(|entry| {
            entry
                .as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))
        })
        .count();
    assert_eq!(names.len(), on_disk, "{listing}");
    assert!(names.contains(&"overflow-openai"), "{listing}");
    assert!(listing.contains("wire-window-8k-english"), "{listing}");
}

#[test]
fn a_command_adapter_runs_a_built_in_scenario_from_an_empty_directory() {
    let empty = tempfile::tempdir().expect("a scratch directory");
    let adapter = format!("'{BIN}' peer");
    let output = ctxbed_in(
        empty.path(),
        &[
            "conform",
            "--adapter",
            &adapter,
            "--scenario",
            "overflow-openai",
        ],
    );
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(
        said.contains("pass wire/overflow-openai [adapter]"),
        "{said}"
    );
    assert!(said.contains("1 passed"), "{said}");
    let kept = empty.path().join("ctxbed-conform/wire/overflow-openai");
    for file in ["adapter.log", "adapter.trace", "adapter.requests.jsonl"] {
        assert!(
            kept.join(file).is_file(),
            "{file} is kept in {}",
            kept.display()
        );
    }
    let trace = std::fs::read_to_string(kept.join("adapter.trace")).expect("the trace");
    assert!(trace.contains("overflow"), "{trace}");
}

#[test]
fn a_planted_fault_fails_through_a_command_adapter_with_its_rule() {
    let empty = tempfile::tempdir().expect("a scratch directory");
    let logs = empty.path().join("where-i-say");
    let adapter = format!("CTXBED_PEER_PLANT=orphan_call '{BIN}' peer");
    let output = ctxbed_in(
        empty.path(),
        &[
            "conform",
            "--adapter",
            &adapter,
            "--scenario",
            "wire/basic-tool-round",
            "--logs",
            logs.to_str().expect("UTF-8"),
        ],
    );
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("FAIL wire/basic-tool-round [adapter]"),
        "{said}"
    );
    assert!(said.contains("pairing"), "{said}");
    assert!(logs.join("wire/basic-tool-round/adapter.log").is_file());
    assert!(
        !empty.path().join("ctxbed-conform").exists(),
        "logs went where asked"
    );
}

#[test]
fn unknown_built_in_names_are_refused_with_the_list() {
    let empty = tempfile::tempdir().expect("a scratch directory");
    let output = ctxbed_in(
        empty.path(),
        &["conform", "--adapter", "true", "--scenario", "overflow"],
    );
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(
        said.contains("no built-in wire scenario `overflow`"),
        "{said}"
    );
    assert!(said.contains("overflow-openai"), "{said}");
    let output = ctxbed_in(empty.path(), &["serve", "--builtin", "wire-nope"]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("wire-window-8k-english"), "{said}");
}

#[test]
fn serve_builtin_answers_as_the_mock_it_names() {
    use std::io::{Read, Write};
    let empty = tempfile::tempdir().expect("a scratch directory");
    let server = served::serve_in(
        empty.path(),
        &["--builtin", "wire-window-8k-english", "--time-scale", "0"],
    );
    let addr = server.addr.clone();
    let mut stream = std::net::TcpStream::connect(&addr).expect("a connection");
    write!(
        stream,
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("a request");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("an answer");
    drop(server);
    assert!(
        answer.contains("\"id\":\"wire-window-8k-english\""),
        "{answer}"
    );
    assert!(answer.contains("\"context_window\":8000"), "{answer}");
}

/// `--format json`: one object per run, then a summary; a failing run names each broken rule
/// with its step, and nothing in it depends on the wall clock.
#[test]
fn conform_reports_runs_as_json_lines() {
    let empty = tempfile::tempdir().expect("a scratch directory");
    let planted = format!("CTXBED_PEER_PLANT=orphan_call '{BIN}' peer");
    let run = || {
        ctxbed_in(
            empty.path(),
            &[
                "conform",
                "--adapter",
                &planted,
                "--scenario",
                "overflow-openai",
                "--format",
                "json",
            ],
        )
    };
    let output = run();
    assert!(!output.status.success(), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let runs = &lines[0];
    assert_eq!(runs["type"], "run");
    assert_eq!(runs["scenario"], "wire/overflow-openai");
    assert_eq!(runs["harness"], "adapter");
    assert_eq!(runs["verdict"], "fail", "{stdout}");
    assert_eq!(runs["ok"], false);
    let violations = runs["violations"].as_array().expect("violations");
    assert!(!violations.is_empty(), "{stdout}");
    for violation in violations {
        assert!(violation["rule"].is_string() && violation["detail"].is_string());
    }
    assert!(
        runs["rules"]
            .as_array()
            .is_some_and(|rules| !rules.is_empty()),
        "{stdout}"
    );
    assert!(
        runs["trace"]
            .as_str()
            .is_some_and(|t| t.contains("request 1"))
    );
    assert_eq!(lines[1]["type"], "summary");
    assert_eq!(lines[1]["failed"], 1);
    assert_eq!(run().stdout, output.stdout, "two runs print the same lines");
}

/// The trace of a run through `--adapter` shown for one scenario: conform's stdout and stderr,
/// and the trace it kept.
fn adapter_trace(dir: &Path, adapter: &str) -> (String, String) {
    let output = ctxbed_in(
        dir,
        &[
            "conform",
            "--adapter",
            adapter,
            "--scenario",
            "basic-tool-round",
        ],
    );
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "{said}");
    let kept = dir.join("ctxbed-conform/wire/basic-tool-round/adapter.trace");
    (
        said,
        std::fs::read_to_string(kept).expect("the trace is kept"),
    )
}

/// A step its adapter never answers fails, whether the adapter gives it up (an `unanswered`
/// line: at once, with its reason) or exits; its step verdict is never `pass`. The trace's
/// header names the harness, version and context management the adapter's `ready` gave.
#[test]
fn an_unanswered_step_fails_at_once_and_the_trace_names_the_harness() {
    let empty = tempfile::tempdir().expect("a scratch directory");
    let ready = r#"read setup; echo '{"type":"ready","harness":"my-agent","version":"1.2.3","context":"none"}'; read step"#;
    let given_up = format!(
        r#"{ready}; echo '{{"type":"unanswered","step":1,"reason":"the test took the next step without answering"}}'; sleep 60"#
    );
    let started = std::time::Instant::now();
    let (said, trace) = adapter_trace(empty.path(), &given_up);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "a step given up fails at once, not at the step timeout: {said}"
    );
    let reason = "step 1 was never answered: the test took the next step without answering";
    assert!(said.contains(reason), "{said}");
    assert!(
        trace.contains(&format!("error adapter: {reason}")),
        "{trace}"
    );
    assert!(trace.contains("step verdict: fail: adapter"), "{trace}");
    assert!(!trace.contains("step verdict: pass"), "{trace}");
    assert!(trace.contains("\nharness my-agent 1.2.3\n"), "{trace}");
    assert!(trace.contains("context management: none"), "{trace}");

    let (said, trace) = adapter_trace(empty.path(), &format!("{ready}; exit 3"));
    assert!(
        said.contains("the adapter exited before answering"),
        "{said}"
    );
    assert!(trace.contains("step verdict: fail: adapter"), "{trace}");
    assert!(!trace.contains("step verdict: pass"), "{trace}");
}
