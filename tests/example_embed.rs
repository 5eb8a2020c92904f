//! The embedding example (`examples/embed_agent.rs`) against a local OpenAI-compatible server
//! (wiremock on loopback, real time): the model asks for `write_file`, the file lands in the
//! workspace directory, the tool result goes back paired with its call, and a second run of the
//! example (a new agent, as a new process would build) restores the session from the log the
//! first left on disk.
//! This is the run of the command docs/harness.md shows (`cargo run --example embed_agent -- URL
//! MODEL DIR PROMPT`), with the local server's URL in place of a real one.

#[path = "../examples/embed_agent.rs"]
mod embed_agent;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn sse(events: &[Value]) -> ResponseTemplate {
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn text_reply(text: &str) -> ResponseTemplate {
    sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","content":text}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}),
    ])
}

fn write_call() -> ResponseTemplate {
    let arguments = json!({"path": "hello.txt", "content": "hi from the model\n"}).to_string();
    sse(&[
        json!({"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[
            {"index":0,"id":"call_w","type":"function","function":{"name":"write_file","arguments":arguments}}]}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
    ])
}

async fn request_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("recording on")
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("JSON body"))
        .collect()
}

#[tokio::test]
async fn the_example_writes_to_disk_pairs_results_and_resumes_from_its_log() {
    let server = MockServer::start().await;
    // Served in order: each answers once, then the next one matches.
    for reply in [
        write_call(),
        text_reply("Wrote hello.txt."),
        text_reply("Yes, hello.txt."),
    ] {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(reply)
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let workspace = dir.path().join("work");
    let base_url = format!("{}/v1", server.uri());

    let text = embed_agent::run(&base_url, "local-model", &workspace, "Write hello.txt.")
        .await
        .expect("the call succeeds");
    assert_eq!(text, "Wrote hello.txt.");
    assert_eq!(
        std::fs::read_to_string(workspace.join("hello.txt")).expect("the file is on disk"),
        "hi from the model\n"
    );
    let logs: Vec<_> = walk(&workspace.join("sessions"));
    assert_eq!(logs.len(), 1, "one session log: {logs:?}");
    assert!(logs[0].ends_with("example.jsonl"), "{logs:?}");

    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "local-model");
    let tools: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .expect("tools sent")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(tools.contains(&"write_file") && tools.contains(&"read_file"));
    let second = bodies[1]["messages"].as_array().expect("messages");
    let call_at = second
        .iter()
        .position(|m| m["tool_calls"][0]["id"] == "call_w")
        .expect("the call is sent back");
    assert_eq!(second[call_at + 1]["role"], "tool");
    assert_eq!(second[call_at + 1]["tool_call_id"], "call_w");

    // A new agent over the same directory continues the session from the log on disk.
    let text = embed_agent::run(&base_url, "local-model", &workspace, "Did you write it?")
        .await
        .expect("the second call succeeds");
    assert_eq!(text, "Yes, hello.txt.");
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    let third = serde_json::to_string(&bodies[2]["messages"]).expect("JSON");
    assert!(third.contains("Write hello.txt."), "{third}");
    assert!(third.contains("Wrote hello.txt."), "{third}");
    assert!(third.contains("Did you write it?"), "{third}");
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.extend(walk(&path));
            } else {
                found.push(path.display().to_string());
            }
        }
    }
    found.sort();
    found
}
