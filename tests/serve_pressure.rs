//! `ctxbed serve` under clients that hold its resources: a client that stops reading a streamed
//! reply (disconnected after the write timeout, having cost what the buffers hold, not the whole
//! stream), idle kept-alive connections at the connection cap (shed for a new client), and
//! request bodies past the memory budget (refused with the provider's 413).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ctxbed::serve::{ConnectionLimits, Models, ServeOptions, Server};

/// A library server on a runtime of its own; stopped when dropped.
struct Running {
    addr: String,
    models: Arc<Models>,
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

/// Serves the mock model `source` with `options` (time scale 0).
fn running(source: &str, options: ServeOptions) -> Running {
    let options = ServeOptions {
        time_scale: 0.0,
        ..options
    };
    let source = source.to_string();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let models =
                Models::load_source("m", "test", &source, &options).expect("the mock loads");
            let server = Server::bind(models, &options).await.expect("it binds");
            ready_tx
                .send((server.local_addr().to_string(), server.models()))
                .expect("the test waits");
            let _ = server
                .run(async {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    let (addr, models) = ready_rx.recv().expect("the server's address");
    Running {
        addr,
        models,
        stop: Some(stop),
        thread: Some(thread),
    }
}

fn limits(connections: usize, write: Duration) -> ConnectionLimits {
    ConnectionLimits {
        connections,
        header: Duration::from_secs(30),
        body: Duration::from_secs(30),
        write,
    }
}

fn request(body: &str, keep_alive: bool) -> String {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        body.len()
    )
}

const SMALL: &str = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;

/// Reads one whole response with a `Content-Length` from a kept-alive connection.
fn read_response(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length: "))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
        let read = stream.read(&mut buffer).expect("the response");
        assert!(read > 0, "closed before the response ended: {text}");
        bytes.extend_from_slice(&buffer[..read]);
    }
}

#[test]
fn a_client_that_stops_reading_a_stream_is_closed_after_the_write_timeout() {
    // 3 MB of reply text: about 30 MB of streamed events, far past what socket buffers hold.
    let reply = "word ".repeat(600_000);
    let mock = format!("window = 16000\n[[turns]]\nreply = \"{reply}\"\n");
    let write = Duration::from_millis(500);
    let server = running(
        &mock,
        ServeOptions {
            limits: limits(8, write),
            ..ServeOptions::default()
        },
    );
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut stalled = TcpStream::connect(&server.addr).expect("a connection");
    stalled
        .write_all(request(body, false).as_bytes())
        .expect("a request");
    std::thread::sleep(Duration::from_secs(3));
    let (_, host) = server.models.iter().next().expect("a host");
    let rendered = host.stream_bytes_rendered();
    // Rendered only as far as the socket buffers took it: a few MB, not the whole stream.
    assert!(rendered > 0, "the stream started");
    assert!(
        rendered < 16 * 1024 * 1024,
        "{rendered} bytes rendered for a client that reads nothing"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        host.stream_bytes_rendered(),
        rendered,
        "the stream was dropped"
    );
    // Reading now drains what was in flight and finds the connection closed, the stream unended.
    stalled
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a read timeout");
    let started = Instant::now();
    let mut received = Vec::new();
    let _ = stalled.read_to_end(&mut received);
    assert!(started.elapsed() < Duration::from_secs(5), "it was closed");
    let tail =
        String::from_utf8_lossy(&received[received.len().saturating_sub(200)..]).into_owned();
    assert!(
        !tail.contains("[DONE]"),
        "the whole stream was sent: {tail}"
    );
    eprintln!(
        "a stalled reader cost {rendered} bytes of rendered events; {} bytes reached it",
        received.len()
    );
}

#[test]
fn at_the_connection_cap_an_idle_kept_alive_connection_makes_room() {
    let mock = "window = 16000\n[[turns]]\nreply = \"Understood.\"\ntimes = 50\n";
    let server = running(
        mock,
        ServeOptions {
            limits: limits(4, Duration::from_secs(30)),
            ..ServeOptions::default()
        },
    );
    let idle: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut stream = TcpStream::connect(&server.addr).expect("a connection");
            stream
                .write_all(request(SMALL, true).as_bytes())
                .expect("a request");
            let answer = read_response(&mut stream);
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            stream
        })
        .collect();
    let started = Instant::now();
    let mut honest = TcpStream::connect(&server.addr).expect("a connection");
    honest
        .write_all(request(SMALL, true).as_bytes())
        .expect("a request");
    let answer = read_response(&mut honest);
    let waited = started.elapsed();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(waited < Duration::from_secs(1), "answered after {waited:?}");
    drop(idle);
}

/// A request whose body is `body` padded to `length` bytes with spaces (valid JSON still).
fn padded(body: &str, length: usize) -> String {
    format!("{body}{}", " ".repeat(length.saturating_sub(body.len())))
}

#[test]
fn bodies_past_the_memory_budget_are_refused_with_413_and_the_budget_comes_back() {
    let mock = "window = 16000\n[[turns]]\nreply = \"Understood.\"\ntimes = 50\n";
    let server = running(
        mock,
        ServeOptions {
            limits: limits(8, Duration::from_secs(30)),
            body_budget: 100_000,
            ..ServeOptions::default()
        },
    );
    // A body held one byte short holds its declared length of the budget.
    let held = request(&padded(SMALL, 80_000), true);
    let mut half = TcpStream::connect(&server.addr).expect("a connection");
    half.write_all(&held.as_bytes()[..held.len() - 1])
        .expect("all but a byte");
    std::thread::sleep(Duration::from_millis(300));
    let mut second = TcpStream::connect(&server.addr).expect("a connection");
    second
        .write_all(request(&padded(SMALL, 80_000), true).as_bytes())
        .expect("a request");
    let refused = read_response(&mut second);
    assert!(refused.starts_with("HTTP/1.1 413"), "{refused}");
    assert!(
        refused.contains(r#""code":"request_too_large""#)
            && refused.contains("Request exceeds the maximum size"),
        "{refused}"
    );
    // A small one still fits beside the held body.
    let mut small = TcpStream::connect(&server.addr).expect("a connection");
    small
        .write_all(request(SMALL, true).as_bytes())
        .expect("a request");
    assert!(read_response(&mut small).starts_with("HTTP/1.1 200"));
    // Once the held body is answered, its share is back.
    half.write_all(&held.as_bytes()[held.len() - 1..])
        .expect("the last byte");
    assert!(read_response(&mut half).starts_with("HTTP/1.1 200"));
    let mut third = TcpStream::connect(&server.addr).expect("a connection");
    third
        .write_all(request(&padded(SMALL, 80_000), true).as_bytes())
        .expect("a request");
    let answer = read_response(&mut third);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
