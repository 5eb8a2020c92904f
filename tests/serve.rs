//! `ctxbed serve` as a user meets it: the binary on a loopback port, spoken to over raw HTTP
//! (as curl does) and through the official Python clients.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};

struct Serve {
    child: Child,
    addr: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ctxbed serve starts");
    let stdout = child.stdout.take().expect("its standard output");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("a first line");
    let addr = first
        .trim_end()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("the first line is {first:?}"))
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    Serve { child, addr }
}

/// One HTTP/1.1 request; the status and the raw body (chunked bodies are left as sent).
fn post(addr: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("a connection");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("the request is written");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    let (head, body) = response.split_once("\r\n\r\n").expect("headers and a body");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, body.to_string())
}

#[test]
fn scripted_replies_in_both_wire_formats_and_overflows_in_the_imitated_wording() {
    let record = tempfile::NamedTempFile::new().expect("a record file");
    let server = serve(&[
        "mock-models/anthropic-overflow.toml",
        "--record",
        record.path().to_str().expect("a UTF-8 path"),
    ]);
    let long = "word ".repeat(400);
    let (status, body) = post(
        &server.addr,
        "/v1/messages",
        &format!(
            r#"{{"model":"m","max_tokens":50,"messages":[{{"role":"user","content":"{long}"}}]}}"#
        ),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains(r#""type":"invalid_request_error""#), "{body}");
    assert!(body.contains("prompt is too long: "), "{body}");
    let (status, body) = post(
        &server.addr,
        "/v1/chat/completions",
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""content":"Short enough now.""#), "{body}");
    assert!(body.contains(r#""total_tokens""#), "{body}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(record.path())
        .expect("the record")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["outcome"], "context_overflow");
    assert_eq!(lines[0]["api"], "anthropic");
    assert_eq!(lines[1]["outcome"], "reply");
    assert!(lines[0]["input_tokens"].as_u64().unwrap_or(0) > 300);
}

#[test]
fn a_window_overflow_gets_openais_status_and_body() {
    let server = serve(&["mock-models/serve-clients.toml"]);
    let long = "word ".repeat(5_000);
    let (status, body) = post(
        &server.addr,
        "/v1/chat/completions",
        &format!(r#"{{"model":"m","messages":[{{"role":"user","content":"{long}"}}]}}"#),
    );
    assert_eq!(status, 400);
    assert!(
        body.contains(r#""code":"context_length_exceeded""#),
        "{body}"
    );
    assert!(
        body.contains("maximum context length is 4000 tokens"),
        "{body}"
    );
}

#[test]
fn streams_are_server_sent_events_in_each_format() {
    let server = serve(&["mock-models/serve-clients.toml"]);
    let (status, body) = post(
        &server.addr,
        "/v1/chat/completions",
        r#"{"model":"m","stream":true,"tools":[{"type":"function","function":{"name":"read_log","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert_eq!(status, 200);
    assert!(body.contains(r#""finish_reason":"tool_calls""#), "{body}");
    assert!(body.contains("data: [DONE]"), "{body}");
    let (_, body) = post(
        &server.addr,
        "/v1/messages",
        r#"{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
    );
    for event in [
        "event: message_start",
        "event: content_block_delta",
        "event: message_stop",
    ] {
        assert!(body.contains(event), "{event} missing from {body}");
    }
}

#[test]
fn a_non_loopback_address_is_refused_with_the_fix() {
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args([
            "serve",
            "mock-models/serve-clients.toml",
            "--listen",
            "0.0.0.0:0",
        ])
        .output()
        .expect("ctxbed runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a loopback address"), "{stderr}");
    assert!(stderr.contains("--allow-remote"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_server_with_a_summary() {
    let mut server = serve(&["mock-models/serve-clients.toml"]);
    let _ = post(
        &server.addr,
        "/v1/chat/completions",
        r#"{"model":"m","tools":[{"type":"function","function":{"name":"read_log","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"hi"}]}"#,
    );
    let pid = server.child.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    let status = server.child.wait().expect("it exits");
    assert!(status.success(), "{status}");
    let mut stderr = String::new();
    if let Some(mut pipe) = server.child.stderr.take() {
        pipe.read_to_string(&mut stderr)
            .expect("its standard error");
    }
    assert!(
        stderr.contains("serve-clients (openai): 1 request: 1 tool_calls"),
        "{stderr}"
    );
}

/// The Python holding the official `openai` and `anthropic` clients at their pinned versions:
/// the pydantic-ai peer's environment, built by peers/setup (which CI runs before the tests).
/// `None` outside CI when it has not been built.
fn official_clients_python() -> Option<&'static Path> {
    let python = Path::new("target/peers/pydantic-ai/bin/python");
    if python.exists() {
        return Some(python);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing: CI must run peers/setup first",
        python.display()
    );
    eprintln!("skipped: run peers/setup pydantic-ai to test the official Python clients");
    None
}

/// Runs a client script with `python` and its arguments: the lines it printed, and its standard
/// error (for failure messages). Fails the test when the script fails.
fn run_client(python: &Path, script: &str, arguments: &[&str]) -> (Vec<String>, String) {
    let output = Command::new(python)
        .arg(script)
        .args(arguments)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    (stdout.lines().map(str::to_string).collect(), stderr)
}

#[test]
fn the_official_python_clients_read_whole_and_streamed_replies() {
    let Some(python) = official_clients_python() else {
        return;
    };
    let server = serve(&["mock-models/serve-clients.toml"]);
    let openai_url = format!("http://{}/v1", server.addr);
    let anthropic_url = format!("http://{}", server.addr);
    let (lines, stderr) = run_client(
        python,
        "tests/serve/clients.py",
        &[&openai_url, &anthropic_url],
    );
    let expected = [
        r#"openai whole: read_log {"path":"build.log"} True"#,
        "openai stream: Streamed in pieces, then done.",
        "anthropic stream: read_log {'path': 'second.log'} tool_use",
        "anthropic whole: Whole. True",
        "openai overflow: 400 context_length_exceeded",
        "anthropic thinking: thinking True Thought it through.",
        "anthropic altered thinking: 400 messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.",
        "anthropic redacted: ['redacted_thinking', 'tool_use'] True",
        "anthropic redacted handed back: Read it.",
        "anthropic cache: True 0 True 0",
        "anthropic cache stream: True",
        "openai cache: True True True",
        "openai cache stream: True",
    ];
    assert_eq!(lines, expected, "{stderr}");
}

#[test]
fn the_official_openai_client_speaks_the_responses_api() {
    let Some(python) = official_clients_python() else {
        return;
    };
    let server = serve(&["mock-models/serve-responses.toml"]);
    let openai_url = format!("http://{}/v1", server.addr);
    let (lines, stderr) = run_client(python, "tests/serve/responses_client.py", &[&openai_url]);
    let expected = [
        r#"whole: read_log {"path":"build.log"} True"#,
        "stream: response.created response.completed ['reasoning', 'function_call'] True True",
        "dropped reasoning: 400 Item 'fc_0002_0' of type 'function_call' was provided without its required 'reasoning' item: 'rs_0002'.",
        "handed back: The linker ran out of memory.",
        "overflow whole: 400 context_length_exceeded",
        "overflow stream: APIError context_length_exceeded Your input exceeds the context window of this model. Please adjust your input and try again.",
    ];
    assert_eq!(lines, expected, "{stderr}");
}

#[test]
fn a_directory_of_models_is_routed_by_the_requested_model() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, reply) in [("alpha", "From alpha."), ("beta", "From beta.")] {
        std::fs::write(
            dir.path().join(format!("{name}.toml")),
            format!("window = 1000\n[[turns]]\nreply = \"{reply}\"\n"),
        )
        .expect("a mock file");
    }
    let server = serve(&["--models", dir.path().to_str().expect("a UTF-8 path")]);
    let ask = |model: &str| {
        post(
            &server.addr,
            "/v1/chat/completions",
            &format!(r#"{{"model":"{model}","messages":[{{"role":"user","content":"hi"}}]}}"#),
        )
    };
    assert!(ask("beta").1.contains("From beta."));
    assert!(ask("alpha").1.contains("From alpha."));
    let (status, body) = ask("gamma");
    assert_eq!(status, 404);
    assert!(body.contains(r#""code":"model_not_found""#), "{body}");
    assert!(body.contains("The model `gamma` does not exist"), "{body}");
    let mut stream = TcpStream::connect(&server.addr).expect("a connection");
    write!(
        stream,
        "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("sent");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    assert!(
        response.contains(r#""id":"alpha""#) && response.contains(r#""id":"beta""#),
        "{response}"
    );
}

#[test]
fn a_bad_mock_file_is_reported_with_its_place_and_nothing_listens() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "window = \"big\"\n[[turns]]\nreply = \"x\"\n").expect("a mock file");
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(["serve", path.to_str().expect("a UTF-8 path")])
        .output()
        .expect("ctxbed runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "nothing is served");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.toml:1:"), "{stderr}");
}

fn timed_post(addr: &str, path: &str, body: &str) -> (u16, String, std::time::Duration) {
    let started = std::time::Instant::now();
    let (status, text) = post(addr, path, body);
    (status, text, started.elapsed())
}

#[test]
fn latency_is_real_time_scaled_by_time_scale() {
    let hi = r#"{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}"#;
    let fast = serve(&["mock-models/serve-latency.toml", "--time-scale", "0.1"]);
    let (status, body, took) = timed_post(&fast.addr, "/v1/messages", hi);
    assert_eq!(status, 200, "{body}");
    assert!(
        took >= std::time::Duration::from_millis(200),
        "{took:?}: 2 s scaled by 0.1"
    );
    assert!(took < std::time::Duration::from_millis(1_500), "{took:?}");
    // A timeout turn holds the request for the hang (600 s, scaled too) and then answers 504.
    let faster = serve(&["mock-models/serve-latency.toml", "--time-scale", "0.001"]);
    let _ = timed_post(&faster.addr, "/v1/messages", hi);
    let (status, _, took) = timed_post(&faster.addr, "/v1/messages", hi);
    assert_eq!(status, 504);
    assert!(
        took >= std::time::Duration::from_millis(550),
        "{took:?}: 600 s scaled by 0.001"
    );
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
}

#[test]
fn unpaired_tool_results_get_the_imitated_pairing_error() {
    let server = serve(&["mock-models/strict-anthropic.toml"]);
    let body = r#"{"model":"m","max_tokens":50,"messages":[
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":"orphan"}]}]}"#;
    let (status, text) = post(&server.addr, "/v1/messages", &body.replace('\n', ""));
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"),
        "{text}"
    );
}

#[test]
fn an_out_of_range_time_scale_is_refused_without_a_panic() {
    for scale in ["1e17", "-1", "NaN", "inf"] {
        let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
            .args(["serve", "mock-models/serve-clients.toml"])
            .arg(format!("--time-scale={scale}"))
            .output()
            .expect("ctxbed runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{scale}: {stderr}");
        assert!(
            stderr.contains("a number from 0 to 1000"),
            "{scale}: {stderr}"
        );
    }
}

#[test]
fn violations_reads_a_record_and_names_each_broken_rule_by_request() {
    let dir = tempfile::tempdir().expect("a scratch directory");
    let mock = dir.path().join("small.toml");
    std::fs::write(
        &mock,
        "description = \"a 200-token window\"\nwindow = 200\n[[turns]]\nreply = \"fine\"\n",
    )
    .expect("the mock is written");
    let record = dir.path().join("record.jsonl");
    let server = serve(&[
        mock.to_str().expect("a UTF-8 path"),
        "--record",
        record.to_str().expect("a UTF-8 path"),
    ]);
    let orphan = r#"{"model":"mock","max_tokens":16,"messages":[{"role":"user","content":"six times seven?"},{"role":"tool","tool_call_id":"call_1","content":"42"}]}"#;
    post(&server.addr, "/v1/chat/completions", orphan);
    let greedy = r#"{"model":"mock","max_tokens":500,"messages":[{"role":"user","content":"hi"}]}"#;
    post(&server.addr, "/v1/chat/completions", greedy);
    drop(server);
    let violations = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ctxbed"))
            .arg("violations")
            .arg(&record)
            .args(args)
            .output()
            .expect("ctxbed violations runs")
    };
    let json = violations(&["--format", "json"]);
    assert_eq!(json.status.code(), Some(1), "{json:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let found: Vec<(&str, u64)> = lines
        .iter()
        .filter(|line| line["type"] == "violation")
        .map(|line| {
            let rule = line["rule"].as_str().unwrap_or("?");
            (rule, line["request"].as_u64().unwrap_or(0))
        })
        .collect();
    assert_eq!(found, [("pairing", 1), ("window", 2)], "{lines:?}");
    assert_eq!(
        lines.last().map(|l| l["violations"].clone()),
        Some(2.into())
    );
    let text = violations(&["--rule", "pairing"]);
    let shown = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.status.code(), Some(1), "{text:?}");
    assert!(
        shown.contains("call_1") && !shown.contains("window"),
        "{shown}"
    );
    let clean = violations(&["--rule", "system"]);
    assert_eq!(clean.status.code(), Some(0), "{clean:?}");
    let unknown = violations(&["--rule", "input"]);
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown rule `input`"));
    // A server killed while writing leaves a torn last line: skipped with a warning naming the
    // file and line, the rest checked as before; the same line before another is an error.
    let whole = std::fs::read_to_string(&record).expect("the record");
    let torn_line = &whole[..whole.len() / 3];
    for torn in [
        format!("{whole}{torn_line}"),
        format!("{whole}{torn_line}\n"),
    ] {
        std::fs::write(&record, &torn).expect("a torn record");
        let json = violations(&["--format", "json"]);
        assert_eq!(json.status.code(), Some(1), "{json:?}");
        let warning = String::from_utf8_lossy(&json.stderr);
        let at = format!("warning: {}:3: the last line is torn", record.display());
        assert!(warning.starts_with(&at), "{warning}");
        let summary = String::from_utf8_lossy(&json.stdout);
        let summary: serde_json::Value = summary
            .lines()
            .last()
            .and_then(|line| serde_json::from_str(line).ok())
            .expect("a summary");
        assert_eq!(summary["violations"], 2, "{summary}");
        assert_eq!(summary["torn_line"], 3, "{summary}");
    }
    std::fs::write(&record, format!("{torn_line}\n{whole}")).expect("a broken first line");
    let broken = violations(&[]);
    assert_eq!(broken.status.code(), Some(2), "{broken:?}");
    let error = String::from_utf8_lossy(&broken.stderr);
    assert!(error.contains(":1: not JSON ("), "{error}");
}

const THINKING_MOCK: &str = r#"description = "A tool call after signed thinking, then a reply after withheld thinking"
window = 8000
imitates = "anthropic"

[[turns]]
thinking = "The tests decide it; run them."
tool_calls = [{ id = "toolu_think", name = "execute", args = { command = "cargo test" } }]

[[turns]]
thinking = "Twelve passed; say so."
redacted_thinking = true
reply = "All 12 tests pass."
"#;

const THINKING_SCENARIO: &str = r#"description = "One tool call, then a reply, each after thinking"
seed = 1

[agent]
model = "MODEL"
sys_prompt = "Investigate and fix."

[[tools]]
name = "execute"
description = "Run a shell command."
parameters = { type = "object", properties = { command = { type = "string" } }, required = ["command"] }
text = "test result: ok. 12 passed"

[[steps]]
user = "alice"
session = "s1"
input = "Check that the export fix works."
"#;

/// `ctxbed record --thinking-budget` against a served Anthropic mock that thinks: thinking is
/// turned on, each signed block is handed back (else the server refuses the second request),
/// and the recording keeps the thinking and the withheld thinking, and replays.
#[test]
fn record_keeps_thinking_and_withheld_thinking_and_replays() {
    let root = tempfile::tempdir().expect("a temporary directory");
    for dir in ["scenarios", "mock-models"] {
        std::fs::create_dir_all(root.path().join(dir)).expect("mkdir");
    }
    let live = root.path().join("mock-models/live.toml");
    std::fs::write(&live, THINKING_MOCK).expect("write");
    let scenario = root.path().join("scenarios/think.toml");
    std::fs::write(&scenario, THINKING_SCENARIO.replace("MODEL", "live")).expect("write");
    let server = serve(&[live.to_str().expect("a UTF-8 path")]);
    let recorded = root.path().join("mock-models/recorded.toml");
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .arg("record")
        .arg(&scenario)
        .args(["--provider", "anthropic", "--model", "live"])
        .args(["--base-url", &format!("http://{}", server.addr)])
        .args(["--thinking-budget", "1024", "-o"])
        .arg(&recorded)
        .output()
        .expect("ctxbed runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let text = std::fs::read_to_string(&recorded).expect("the recording");
    assert_eq!(text.matches("[[turns]]").count(), 2, "{text}");
    assert!(
        text.contains("thinking = \"The tests decide it; run them.\""),
        "{text}"
    );
    assert!(text.contains("redacted_thinking = true"), "{text}");
    let replay = root.path().join("scenarios/replay.toml");
    std::fs::write(&replay, THINKING_SCENARIO.replace("MODEL", "recorded")).expect("write");
    let loaded = ctxbed::scenario::format::file::load(&replay).expect("the replay loads");
    let replayed = ctxbed::scenario::check::outcome::run(&loaded).expect("the replay runs");
    assert!(
        replayed.text.contains("All 12 tests pass."),
        "{}",
        replayed.text
    );
    assert!(
        !replayed.text.contains("script_exhausted"),
        "{}",
        replayed.text
    );
    // A budget on another provider is refused with the fix.
    let refused = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .arg("record")
        .arg(&scenario)
        .args([
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:1/v1",
        ])
        .args(["--thinking-budget", "1024"])
        .output()
        .expect("ctxbed runs");
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--provider anthropic"));
}
