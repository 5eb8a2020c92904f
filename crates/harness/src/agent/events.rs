//! Agent events: what a run reports, in order, as it happens.
//!
//! `stream_events` yields these; `call` produces the same run without surfacing them. Every event
//! carries the time since the agent's clock started (virtual under simulation).

use std::time::Duration;

use crate::context::manifest::ContextManifest;
use crate::message::{Message, ToolCall, ToolResult};
use crate::model::{ModelError, Purpose, Usage};

use super::AgentError;

/// One event of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEvent {
    /// Time since the agent's clock started.
    pub at: Duration,
    pub kind: EventKind,
}

/// The name of the custom event that reports every preparation.
pub const CONTEXT_BUILD_EVENT: &str = "context_build";

/// The payload of a `context_build` event: metadata and an error kind, never error text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextBuildEvent {
    pub call_id: String,
    pub purpose: Purpose,
    /// `passed` or `failed`.
    pub status: &'static str,
    pub manifest: ContextManifest,
    /// The error's kind name when the preparation failed.
    pub error_kind: Option<&'static str>,
}

/// A named application-level event.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomValue {
    ContextBuild(Box<ContextBuildEvent>),
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// A call began (one `call()` or `stream_events()`).
    RunStarted { call_id: String },
    /// The call's session was restored from the session log: the agent had not seen it yet
    /// (e.g. a new process over the same storage). `records` committed records were read, the
    /// working history holds `messages` messages, and `torn` is a last record a crash cut short,
    /// ignored.
    SessionRestored {
        records: usize,
        messages: usize,
        torn: Option<crate::session::TornRecord>,
    },
    /// This call's session log could not be written to durable storage: what the call
    /// committed is not durable (see [`AgentError::SessionLog`](super::AgentError)). Emitted at
    /// each failed flush; `detail` names the storage error.
    SessionLogFailed { detail: String },
    /// A named custom event, e.g. `context_build`.
    Custom {
        name: &'static str,
        value: CustomValue,
    },
    /// A prepared request is about to be sent.
    ModelCallStarted { request_id: String },
    /// The model answered.
    ModelCallFinished {
        request_id: String,
        usage: Option<Usage>,
    },
    /// The model failed.
    ModelCallFailed {
        request_id: String,
        error: ModelError,
    },
    /// Model reasoning text.
    Thinking { text: String },
    /// Model reply text.
    Text { text: String },
    /// The model asked for a tool call.
    ToolCall { call: ToolCall },
    /// A tool call's result (a denial is an error result with `denied = true`).
    ToolResult { result: ToolResult, denied: bool },
    /// The run ended with a final reply or an error.
    RunFinished {
        call_id: String,
        outcome: Result<Message, AgentError>,
    },
}
