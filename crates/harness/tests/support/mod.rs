//! What the seed-statement tests share: a scripted model that records every request, a source
//! and a tool that count what they are asked to do, a manifest recorder, and a paused runtime.
//! No simulator: everything here is written against the harness's own traits.

// Each test file uses part of this module.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use ctxbed_harness::agent::ContextPolicy;
use ctxbed_harness::context::block::ContextBlock;
use ctxbed_harness::context::manifest::ContextManifest;
use ctxbed_harness::context::source::{ContextRequest, ContextSource, SourceError};
use ctxbed_harness::message::{ContentPart, Message, Role, ToolCall, ToolSchema};
use ctxbed_harness::model::{Model, ModelError, ModelInfo, ModelReply, ModelRequest, Purpose};
use ctxbed_harness::tools::{Tool, ToolContext, ToolOutcome};

/// A current-thread runtime with paused time, as the crate's other tests use.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime")
}

pub fn info(name: &str, window: u64) -> ModelInfo {
    ModelInfo {
        name: name.to_string(),
        context_window: Some(window),
        max_output_tokens: None,
    }
}

/// The text of a summary the scripted model writes for every summary request.
pub const SUMMARY_TEXT: &str = "Earlier work summarised.";

/// What the scripted model answers to one reasoning request.
#[derive(Debug, Clone)]
pub enum Turn {
    Reply(String),
    /// Tool calls: (call id, tool name, arguments).
    Calls(Vec<(String, String, serde_json::Value)>),
    Fail(ModelError),
}

impl Turn {
    pub fn reply(text: &str) -> Turn {
        Turn::Reply(text.to_string())
    }

    pub fn call(id: &str, name: &str, arguments: serde_json::Value) -> Turn {
        Turn::Calls(vec![(id.to_string(), name.to_string(), arguments)])
    }

    /// A recognised overflow, without sizes.
    pub fn overflow() -> Turn {
        Turn::Fail(ModelError::ContextOverflow {
            provider: "test".to_string(),
            status: 400,
            body: "prompt is too long".to_string(),
            actual_tokens: None,
            max_tokens: None,
        })
    }
}

/// Answers reasoning requests from its script ("done" once it runs out) and every summary or
/// memory-flush request with [`SUMMARY_TEXT`]; records every request it receives.
pub struct Scripted {
    info: ModelInfo,
    turns: Mutex<VecDeque<Turn>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl Scripted {
    pub fn new(info: ModelInfo, turns: Vec<Turn>) -> Arc<Scripted> {
        Arc::new(Scripted {
            info,
            turns: Mutex::new(turns.into()),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        lock(&self.requests).clone()
    }

    /// The reasoning requests received, in order.
    pub fn reasoning(&self) -> Vec<ModelRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.purpose == Purpose::Reasoning)
            .collect()
    }
}

#[async_trait]
impl Model for Scripted {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        lock(&self.requests).push(request.clone());
        let turn = if request.purpose == Purpose::Reasoning {
            lock(&self.turns).pop_front()
        } else {
            Some(Turn::reply(SUMMARY_TEXT))
        };
        let message = match turn.unwrap_or_else(|| Turn::reply("done")) {
            Turn::Reply(text) => Message::assistant("reply", text),
            Turn::Calls(calls) => Message::assistant_tool_calls(
                "reply",
                calls
                    .into_iter()
                    .map(|(id, name, arguments)| ContentPart::tool_call(id, name, arguments))
                    .collect(),
            ),
            Turn::Fail(error) => return Err(error),
        };
        Ok(ModelReply {
            message,
            usage: None,
        })
    }
}

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Every message of a request as text (tool calls with their arguments, results with their
/// outputs), one message per line group, in order.
pub fn request_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .map(message_text)
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// A message's text, tool calls and results included.
pub fn message_text(message: &Message) -> String {
    let mut text = message.text();
    for call in message.tool_calls() {
        text.push_str(&format!(
            "\n[call {} {} {}]",
            call.id, call.name, call.arguments
        ));
    }
    for result in message.tool_results() {
        text.push_str(&format!("\n[result {} {}]", result.call_id, result.text()));
    }
    text
}

/// The index of the first message of `request` whose text contains `needle`.
pub fn position(request: &ModelRequest, needle: &str) -> Option<usize> {
    request
        .messages
        .iter()
        .position(|m| message_text(m).contains(needle))
}

/// A context policy whose observer keeps every manifest, and the manifests it keeps.
pub fn recording_policy() -> (ContextPolicy, Arc<Mutex<Vec<ContextManifest>>>) {
    let manifests = Arc::new(Mutex::new(Vec::new()));
    let kept = manifests.clone();
    let policy = ContextPolicy {
        observer: Some(Arc::new(move |manifest: &ContextManifest| {
            lock(&kept).push(manifest.clone());
        })),
        ..ContextPolicy::default()
    };
    (policy, manifests)
}

/// Counts its loads, remembers each request, and returns `blocks` plus a runtime block naming
/// the load's number and the requesting session.
#[derive(Default)]
pub struct CountingSource {
    pub loads: AtomicUsize,
    pub seen: Mutex<Vec<ContextRequest>>,
    pub blocks: Vec<ContextBlock>,
}

impl CountingSource {
    pub fn with_blocks(blocks: Vec<ContextBlock>) -> Arc<CountingSource> {
        Arc::new(CountingSource {
            blocks,
            ..CountingSource::default()
        })
    }

    pub fn loads(&self) -> usize {
        self.loads.load(Ordering::SeqCst)
    }

    pub fn seen(&self) -> Vec<ContextRequest> {
        lock(&self.seen).clone()
    }
}

#[async_trait]
impl ContextSource for CountingSource {
    async fn load(
        &self,
        request: &ContextRequest,
    ) -> Result<Option<Vec<ContextBlock>>, SourceError> {
        let load = self.loads.fetch_add(1, Ordering::SeqCst) + 1;
        lock(&self.seen).push(request.clone());
        let mut blocks = self.blocks.clone();
        blocks.push(ContextBlock::runtime("count", format!("load {load}")));
        Ok(Some(blocks))
    }
}

/// A tool whose every execution is a side effect the test counts; answers `output`.
pub struct CountingTool {
    schema: ToolSchema,
    output: String,
    pub runs: AtomicUsize,
}

impl CountingTool {
    pub fn new(name: &str, output: &str) -> Arc<CountingTool> {
        Arc::new(CountingTool {
            schema: ToolSchema {
                name: name.to_string(),
                description: format!("Runs {name}."),
                parameters: serde_json::json!({"type": "object", "properties": {}}),
            },
            output: output.to_string(),
            runs: AtomicUsize::new(0),
        })
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Tool for CountingTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, _call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        self.runs.fetch_add(1, Ordering::SeqCst);
        ToolOutcome::text(self.output.clone())
    }
}

/// `pairs` user/assistant exchanges, ids `h0`, `h1`, …, each message `words` words long.
pub fn chat_history(pairs: usize, words: usize) -> Vec<Message> {
    let body = |i: usize| format!("message {i}: {}", "lorem ipsum ".repeat(words));
    (0..pairs * 2)
        .map(|i| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            Message::new(format!("h{i}"), role, vec![ContentPart::text(body(i))])
        })
        .collect()
}
