//! `ctxbed serve` under hostile clients and files: connection and time limits, a record that is
//! written one whole line at a time and never through a link or onto a mock file, mock files
//! that are not regular files, and an accept loop that backs off at the open-file limit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ctxbed::serve::{ConnectionLimits, Models, ServeOptions, Server};

#[path = "support/served.rs"]
mod served;
use served::Served;

const MOCK: &str = "mock-models/three-replies.toml";
const SMALL: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

/// A library server on a runtime of its own, with `limits`; stopped when dropped.
struct Running {
    addr: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn running(limits: ConnectionLimits) -> Running {
    let options = ServeOptions {
        time_scale: 0.0,
        limits,
        ..ServeOptions::default()
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let models = Models::load_file(Path::new(MOCK), &options).expect("the mock loads");
            let server = Server::bind(models, &options).await.expect("it binds");
            addr_tx
                .send(server.local_addr().to_string())
                .expect("the test waits");
            let _ = server
                .run(async {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    let addr = addr_rx.recv().expect("the server's address");
    Running {
        addr,
        stop: Some(stop),
        thread: Some(thread),
    }
}

fn request(body: &str, keep_alive: bool) -> String {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        body.len()
    )
}

/// Reads until the server closes the connection (or `limit` passes); what arrived, and when.
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (String, Duration) {
    let started = Instant::now();
    stream
        .set_read_timeout(Some(limit))
        .expect("a read timeout");
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    (
        String::from_utf8_lossy(&bytes).into_owned(),
        started.elapsed(),
    )
}

fn short_limits() -> ConnectionLimits {
    ConnectionLimits {
        connections: 2,
        header: Duration::from_millis(300),
        body: Duration::from_millis(300),
        write: Duration::from_millis(300),
    }
}

#[test]
fn a_client_that_sends_no_headers_is_disconnected_after_the_header_timeout() {
    let server = running(short_limits());
    let mut stream = TcpStream::connect(&server.addr).expect("a connection");
    stream
        .write_all(b"POST /v1/chat")
        .expect("half a request line");
    let (_, waited) = read_until_closed(&mut stream, Duration::from_secs(10));
    assert!(waited < Duration::from_secs(5), "closed after {waited:?}");
}

#[test]
fn a_kept_alive_connection_that_idles_is_closed() {
    let server = running(short_limits());
    let mut stream = TcpStream::connect(&server.addr).expect("a connection");
    stream
        .write_all(request(SMALL, true).as_bytes())
        .expect("a request");
    let (answer, waited) = read_until_closed(&mut stream, Duration::from_secs(10));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(waited < Duration::from_secs(5), "idle for {waited:?}");
}

#[test]
fn a_body_shorter_than_its_length_gets_408_instead_of_a_hang() {
    let server = running(short_limits());
    let mut stream = TcpStream::connect(&server.addr).expect("a connection");
    stream
        .write_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"mod",
        )
        .expect("a short body");
    let (answer, waited) = read_until_closed(&mut stream, Duration::from_secs(10));
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within"), "{answer}");
    assert!(waited < Duration::from_secs(5), "answered after {waited:?}");
}

#[test]
fn connections_past_the_cap_wait_until_one_closes() {
    let server = running(ConnectionLimits {
        connections: 2,
        header: Duration::from_secs(30),
        body: Duration::from_secs(30),
        write: Duration::from_secs(30),
    });
    let holders: Vec<TcpStream> = (0..2)
        .map(|_| TcpStream::connect(&server.addr).expect("a connection"))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut third = TcpStream::connect(&server.addr).expect("the backlog takes it");
    third
        .write_all(request(SMALL, false).as_bytes())
        .expect("a request");
    let (early, _) = read_until_closed(&mut third, Duration::from_millis(500));
    assert!(
        early.is_empty(),
        "a third connection was served past the cap: {early}"
    );
    drop(holders);
    let (answer, _) = read_until_closed(&mut third, Duration::from_secs(10));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

fn serve_command(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .arg("serve")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ctxbed runs")
}

#[test]
fn the_record_is_never_written_through_a_link_or_onto_a_mock_file() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let target = scratch.path().join("precious.txt");
    std::fs::write(&target, "keep me").expect("a target");
    let link = scratch.path().join("record.jsonl");
    std::os::unix::fs::symlink(&target, &link).expect("a link");
    let dangling = scratch.path().join("dangling.jsonl");
    let nowhere = scratch.path().join("created-through-the-link.txt");
    std::os::unix::fs::symlink(&nowhere, &dangling).expect("a dangling link");
    let mock_copy = scratch.path().join("m.toml");
    std::fs::copy(MOCK, &mock_copy).expect("a mock copy");
    let cases = [
        (link.clone(), "symbolic link"),
        (dangling.clone(), "symbolic link"),
        (mock_copy.clone(), "is the mock-model file"),
        (scratch.path().to_path_buf(), "not a regular file"),
    ];
    for (record, expected) in cases {
        let output = serve_command(&[
            mock_copy.to_str().expect("UTF-8"),
            "--record",
            record.to_str().expect("UTF-8"),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{record:?}: {stderr}");
        assert!(stderr.contains(expected), "{record:?}: {stderr}");
        assert!(output.stdout.is_empty(), "nothing listens: {record:?}");
    }
    assert_eq!(
        std::fs::read_to_string(&target).expect("the target"),
        "keep me"
    );
    assert!(
        !nowhere.exists(),
        "a file was created through a dangling link"
    );
    assert_eq!(
        std::fs::read(&mock_copy).expect("the mock"),
        std::fs::read(MOCK).expect("the original"),
        "the mock file was changed"
    );
}

#[test]
fn mock_files_that_are_not_regular_files_are_refused_at_once() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let fifo = scratch.path().join("pipe.toml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    for file in [Path::new("/dev/zero"), fifo.as_path()] {
        let started = Instant::now();
        let output = serve_command(&[file.to_str().expect("UTF-8")]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{file:?}: {stderr}");
        assert!(stderr.contains("not a regular file"), "{stderr}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

/// A server started by `sh` with an open-file limit, listening.
fn serve_with_file_limit(limit: u32, record: &Path) -> Served {
    let script =
        format!("ulimit -n {limit} && exec \"$0\" serve {MOCK} --time-scale 0 --record \"$1\"");
    let mut command = Command::new("sh");
    command
        .args(["-c", &script, env!("CARGO_BIN_EXE_ctxbed")])
        .arg(record);
    served::start(command)
}

/// User and system CPU time of a process so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("its stat");
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the name.
    fields[11].parse::<u64>().unwrap_or(0) + fields[12].parse::<u64>().unwrap_or(0)
}

#[test]
fn at_the_open_file_limit_the_accept_loop_backs_off_and_recovers() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let record = scratch.path().join("record.jsonl");
    let server = serve_with_file_limit(40, &record);
    let (addr, pid) = (server.addr.clone(), server.child.id());
    // Hold more connections than the server has file descriptors left.
    let held: Vec<TcpStream> = (0..60)
        .filter_map(|_| TcpStream::connect(&addr).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let spent = cpu_ticks(pid) - before;
    // Spinning on accept burns the whole two seconds (200 ticks at 100 Hz).
    assert!(
        spent < 50,
        "{spent} ticks of CPU in 2 s at the open-file limit"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(1_500));
    let mut stream = TcpStream::connect(&addr).expect("a connection");
    stream
        .write_all(request(SMALL, false).as_bytes())
        .expect("a request");
    let (answer, _) = read_until_closed(&mut stream, Duration::from_secs(10));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn every_record_line_is_whole_even_after_kill_9() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let record = scratch.path().join("record.jsonl");
    let mut server = serve_with_file_limit(1024, &record);
    let addr = server.addr.clone();
    // Bodies far over a write buffer, so a line written in pieces would show.
    let long = "x".repeat(40_000);
    let body = format!(r#"{{"model":"m","messages":[{{"role":"user","content":"{long}"}}]}}"#);
    for _ in 0..5 {
        let mut stream = TcpStream::connect(&addr).expect("a connection");
        stream
            .write_all(request(&body, false).as_bytes())
            .expect("a request");
        let (answer, _) = read_until_closed(&mut stream, Duration::from_secs(30));
        assert!(answer.starts_with("HTTP/1.1 "), "{answer}");
    }
    let _ = server.child.kill();
    let _ = server.child.wait();
    let text = std::fs::read_to_string(&record).expect("the record");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "one line per request");
    assert!(text.ends_with('\n'));
    for line in lines {
        let value: serde_json::Value = serde_json::from_str(line).expect("a whole JSON line");
        assert_eq!(
            value["body"]["messages"][0]["content"].as_str(),
            Some(long.as_str())
        );
    }
}

/// A served mock in a child process, with `args` after the mock file.
fn serve_child(mock: &str, args: &[&str]) -> Served {
    let mut all = vec![mock, "--time-scale", "0"];
    all.extend_from_slice(args);
    served::serve_in(Path::new("."), &all)
}

fn post_to(addr: &str, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("a connection");
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("a request");
    read_until_closed(&mut stream, Duration::from_secs(10)).0
}

#[test]
fn unknown_routes_get_the_imitated_providers_404() {
    let openai = serve_child(MOCK, &[]);
    let answer = post_to(&openai.addr, "/v1/foo/bar", SMALL);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(
        answer.contains("Unknown request URL: POST /v1/foo/bar. Please check the URL for typos"),
        "{answer}"
    );
    assert!(answer.contains(r#""code":"unknown_url""#), "{answer}");
    drop(openai);
    let anthropic = serve_child("mock-models/strict-anthropic.toml", &[]);
    let answer = post_to(&anthropic.addr, "/v1/complete", SMALL);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(
        answer.contains(
            r#"{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}"#
        ),
        "{answer}"
    );
    drop(anthropic);
}

#[test]
fn routes_matched_only_by_their_ending_and_openais_count_tokens_get_the_404() {
    let openai = serve_child(MOCK, &[]);
    for path in [
        "/v1/v1/chat/completions",
        "/anything/chat/completions",
        "/v1/messages/count_tokens",
    ] {
        let answer = post_to(&openai.addr, path, SMALL);
        assert!(answer.starts_with("HTTP/1.1 404"), "{path}: {answer}");
        assert!(
            answer.contains(&format!(
                "Unknown request URL: POST {path}. Please check the URL for typos"
            )),
            "{answer}"
        );
    }
    assert!(post_to(&openai.addr, "/v1/chat/completions", SMALL).starts_with("HTTP/1.1 200"));
    drop(openai);
    let anthropic = serve_child("mock-models/strict-anthropic.toml", &[]);
    let answer = post_to(&anthropic.addr, "/anything/messages", SMALL);
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(answer.contains("not_found_error"), "{answer}");
    drop(anthropic);
}

#[test]
fn a_cut_stream_sends_its_head_and_part_of_an_event_then_breaks() {
    let server = serve_child(MOCK, &["--cut-stream", "1"]);
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let answer = post_to(&server.addr, "/v1/chat/completions", body);
    drop(server);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("text/event-stream"), "{answer}");
    assert!(
        answer.contains("data: {"),
        "events arrived before the cut: {answer}"
    );
    assert!(!answer.contains("[DONE]"), "{answer}");
    // Chunked transfer never reached its last chunk, and the last event is cut in the middle.
    assert!(!answer.ends_with("0\r\n\r\n"), "{answer}");
    let last = answer.rsplit("data: ").next().unwrap_or_default();
    assert!(!last.contains("\n\n"), "the last event is whole: {last:?}");
}

#[test]
fn count_tokens_answers_the_exact_count_and_uses_no_turn() {
    let server = serve_child("mock-models/strict-anthropic.toml", &[]);
    let addr = server.addr.clone();
    let body = r#"{"model":"m","messages":[{"role":"user","content":"How many tokens is this?"}]}"#;
    let first = post_to(&addr, "/v1/messages/count_tokens", body);
    let again = post_to(&addr, "/v1/messages/count_tokens", body);
    let refused = post_to(&addr, "/v1/messages/count_tokens", r#"{"model":"m"}"#);
    let message = r#"{"model":"m","max_tokens":64,"messages":[{"role":"user","content":"How many tokens is this?"}]}"#;
    let answered = post_to(&addr, "/v1/messages", message);
    drop(server);
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    let count = |answer: &str| -> u64 {
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
        let value: serde_json::Value = serde_json::from_str(body).expect("JSON");
        value["input_tokens"].as_u64().expect("a count")
    };
    assert!(count(&first) > 5, "{first}");
    assert_eq!(count(&first), count(&again));
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    assert!(refused.contains("messages: Field required"), "{refused}");
    // The script's first turn still answers the first message request, with the same count.
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(
        answered.contains(&format!("\"input_tokens\":{}", count(&first))),
        "the window check and count_tokens agree: {answered}"
    );
}
