//! Tests of the built-in tools. Every test goes through [`Bench::call`] and [`check`]: a
//! workspace, one tool call by name and JSON arguments, and the exact result expected.

use std::sync::Arc;

use serde_json::Value;

use super::builtin::builtin_tool;
use super::{ToolContext, ToolOutcome};
use crate::message::{ToolCall, ToolOutput};
use crate::runtime::RuntimeContext;
use crate::storage::{MemoryStorage, Storage, WorkspacePath};

mod escapes;
mod memory;
mod read;
mod workspace;

/// A workspace in memory and a way to call the built-in tools on it.
struct Bench {
    storage: Arc<MemoryStorage>,
    runtime: tokio::runtime::Runtime,
}

impl Bench {
    fn new(files: &[(&str, &str)]) -> Self {
        let bench = Bench {
            storage: Arc::new(MemoryStorage::new()),
            runtime: tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a current-thread runtime"),
        };
        for (path, content) in files {
            bench.put(path, content.as_bytes());
        }
        bench
    }

    fn put(&self, path: &str, bytes: &[u8]) {
        let path = WorkspacePath::parse(path).expect("test paths are valid");
        self.runtime
            .block_on(self.storage.write(&path, bytes.to_vec()))
            .expect("the test write succeeds");
    }

    fn file(&self, path: &str) -> Option<String> {
        let path = WorkspacePath::parse(path).expect("test paths are valid");
        self.storage
            .snapshot()
            .get(&path)
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
    }

    fn call(&self, tool: &str, arguments: Value) -> ToolOutcome {
        let storage: Arc<dyn Storage> = self.storage.clone();
        let tool = builtin_tool(tool, storage).expect("a built-in tool name");
        let call = ToolCall {
            id: "c1".to_string(),
            name: tool.schema().name.clone(),
            arguments,
        };
        let context = ToolContext {
            agent_id: "agent".to_string(),
            runtime: RuntimeContext::new(),
            call_id: "call-1".to_string(),
        };
        self.runtime.block_on(tool.call(&call, &context))
    }

    /// Calls a tool and checks its error flag and exact text.
    fn check(&self, tool: &str, arguments: Value, is_error: bool, expected: &str) {
        let outcome = self.call(tool, arguments.clone());
        check(&outcome, is_error, expected, &format!("{tool} {arguments}"));
    }
}

fn text(outcome: &ToolOutcome) -> String {
    outcome
        .outputs
        .iter()
        .map(|output| match output {
            ToolOutput::Text { text } => text.as_str(),
            ToolOutput::Media { .. } => "",
        })
        .collect()
}

fn check(outcome: &ToolOutcome, is_error: bool, expected: &str, what: &str) {
    let found = text(outcome);
    assert_eq!(found, expected, "{what}");
    assert_eq!(outcome.is_error, is_error, "{what}: {found}");
}
