//! Messages: roles, content parts and ids.
//!
//! A [`Message`] is what the conversation is made of: a role, an ordered list of [`ContentPart`]s,
//! a stable id, an optional name and an ordered metadata map. Tool calls live inside assistant
//! messages; their results live inside tool messages and point back by call id.
//!
//! **Invariant:** metadata is a `BTreeMap`, so its serialisation order never depends on hashing.
//!
//! ```
//! use ctxbed::message::{ContentPart, Message, Role};
//! let call = Message::assistant_tool_calls("m2", vec![ContentPart::tool_call(
//!     "call_1", "execute", serde_json::json!({"command": "ls"}))]);
//! let result = Message::tool_result("m3", "call_1", "execute", "README.md", false);
//! assert_eq!(call.tool_calls().count(), 1);
//! assert_eq!(result.tool_results().next().unwrap().call_id, "call_1");
//! assert_eq!(result.role, Role::Tool);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Ordered metadata attached to messages and tool results.
pub type Metadata = BTreeMap<String, Value>;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The lower-case name used in traces and wire formats.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// A tool invocation requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-style call id; results point back to it.
    pub id: String,
    /// The tool's registered name.
    pub name: String,
    /// JSON arguments as the model produced them.
    pub arguments: Value,
}

/// One output of a tool: text, or a placeholder for media that costs tokens but is not text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolOutput {
    Text { text: String },
    Media { kind: MediaKind, size_bytes: u64 },
}

/// The result of executing one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the [`ToolCall`] this answers.
    pub call_id: String,
    /// The tool that produced it.
    pub tool_name: String,
    /// Outputs in order.
    pub outputs: Vec<ToolOutput>,
    /// True when the tool failed or was denied; the outputs then explain why.
    pub is_error: bool,
    /// Ordered metadata (e.g. offload markers).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: Metadata,
}

impl ToolResult {
    /// All text outputs joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .outputs
            .iter()
            .filter_map(|output| match output {
                ToolOutput::Text { text } => Some(text.as_str()),
                ToolOutput::Media { .. } => None,
            })
            .collect();
        texts.join("\n")
    }

    /// Total characters of text output.
    pub fn text_chars(&self) -> usize {
        self.outputs
            .iter()
            .map(|output| match output {
                ToolOutput::Text { text } => text.chars().count(),
                ToolOutput::Media { .. } => 0,
            })
            .sum()
    }
}

/// The kind of a multimodal placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    Image,
    Audio,
    Video,
    File,
}

impl MediaKind {
    /// The lower-case name used in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Audio => "audio",
            MediaKind::Video => "video",
            MediaKind::File => "file",
        }
    }
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text { text: String },
    Thinking { text: String },
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    Media { kind: MediaKind, size_bytes: u64 },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// A tool-call part.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ContentPart::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        })
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Stable id, unique within a session.
    pub id: String,
    pub role: Role,
    /// Optional speaker name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub parts: Vec<ContentPart>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: Metadata,
}

impl Message {
    /// A message with the given role and parts, no name and no metadata.
    pub fn new(id: impl Into<String>, role: Role, parts: Vec<ContentPart>) -> Self {
        Message {
            id: id.into(),
            role,
            name: None,
            parts,
            metadata: Metadata::new(),
        }
    }

    /// A system message holding one text part.
    pub fn system(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::System, vec![ContentPart::text(text)])
    }

    /// A user message holding one text part.
    pub fn user(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::User, vec![ContentPart::text(text)])
    }

    /// An assistant message holding one text part.
    pub fn assistant(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::Assistant, vec![ContentPart::text(text)])
    }

    /// An assistant message holding tool-call parts.
    pub fn assistant_tool_calls(id: impl Into<String>, calls: Vec<ContentPart>) -> Self {
        Self::new(id, Role::Assistant, calls)
    }

    /// A tool message holding a single text result.
    pub fn tool_result(
        id: impl Into<String>,
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        let result = ToolResult {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            outputs: vec![ToolOutput::Text { text: text.into() }],
            is_error,
            metadata: Metadata::new(),
        };
        Self::new(id, Role::Tool, vec![ContentPart::ToolResult(result)])
    }

    /// The tool calls this message carries, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|part| match part {
            ContentPart::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The tool results this message carries, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.parts.iter().filter_map(|part| match part {
            ContentPart::ToolResult(result) => Some(result),
            _ => None,
        })
    }

    /// All text parts joined with newlines (thinking excluded).
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// True when the message carries at least one tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.tool_calls().next().is_some()
    }
}
