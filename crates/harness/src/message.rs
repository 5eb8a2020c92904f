//! Messages: roles, content parts and ids.
//!
//! A [`Message`] is what the conversation is made of: a role, an ordered list of [`ContentPart`]s,
//! a stable id, an optional name and an ordered metadata map. Tool calls live inside assistant
//! messages; their results live inside tool messages and point back by call id.
//!
//! **Invariant:** metadata is a `BTreeMap`, so its serialisation order never depends on hashing.
//!
//! ```
//! use ctxbed_harness::message::{ContentPart, Message, Role};
//! let call = Message::assistant_tool_calls("m2", vec![ContentPart::tool_call(
//!     "call_1", "execute", serde_json::json!({"command": "ls"}))]);
//! let result = Message::tool_result("m3", "call_1", "execute", "README.md", false);
//! assert_eq!(call.tool_calls().count(), 1);
//! assert_eq!(result.tool_results().next().unwrap().call_id, "call_1");
//! assert_eq!(result.role, Role::Tool);
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

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

/// What the model is told about a tool (the tools module registers and runs tools). Counted in the input budget exactly as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
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

    /// Whether the text outputs hold more than `chars` characters. A text holds no more
    /// characters than bytes, so a result within `chars` bytes is answered without counting,
    /// which matters to the passes that ask this of every result in a history.
    pub fn text_longer_than(&self, chars: usize) -> bool {
        let bytes: usize = self
            .outputs
            .iter()
            .map(|output| match output {
                ToolOutput::Text { text } => text.len(),
                ToolOutput::Media { .. } => 0,
            })
            .sum();
        bytes > chars && self.text_chars() > chars
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
    Text {
        text: String,
    },
    /// The model's visible reasoning. `signature` is the provider's seal over it (Anthropic's
    /// extended thinking), handed back unchanged with the turn it preceded; `None` where the
    /// provider gives none.
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider withheld (Anthropic's `redacted_thinking`): opaque data to hand
    /// back unchanged, never shown or counted as text.
    RedactedThinking {
        data: String,
    },
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    Media {
        kind: MediaKind,
        size_bytes: u64,
    },
    /// An image the user attached, sent to the provider as its own image part and counted as
    /// the provider counts it ([`Image::tokens`](crate::image::Image)).
    Image(crate::image::Image),
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// A thinking part without a signature.
    pub fn thinking(text: impl Into<String>) -> Self {
        ContentPart::Thinking {
            text: text.into(),
            signature: None,
        }
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

/// One message of the conversation: its fields are those of [`MessageData`], reached through
/// `Deref`.
///
/// Copies share their content, so cloning a message (into a model request, a trace, a cache) is
/// a reference-count increment whatever its size. Changing a message through `&mut` copies the
/// content first when it is shared (copy on write), so no earlier copy ever changes, and two
/// copies that still share their content compare equal without reading it.
///
/// ```
/// use ctxbed_harness::message::Message;
/// let original = Message::user("m1", "before");
/// let mut changed = original.clone();
/// assert!(changed.shares_content(&original));
/// changed.parts = Message::user("m1", "after").parts.clone();
/// assert!(!changed.shares_content(&original));
/// assert_eq!(original.text(), "before");
/// assert_eq!(changed.text(), "after");
/// ```
#[derive(Clone)]
pub struct Message(Arc<MessageData>);

/// The content of a [`Message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageData {
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

impl std::ops::Deref for Message {
    type Target = MessageData;

    fn deref(&self) -> &MessageData {
        &self.0
    }
}

/// What [`Message::watch`] gives: the address of a message's content, held without its content.
#[derive(Debug)]
pub(crate) struct Watch(std::sync::Weak<MessageData>);

impl Watch {
    /// True while some copy of the message is alive.
    pub(crate) fn alive(&self) -> bool {
        self.0.strong_count() > 0
    }

    /// True when `message` holds the content this handle watches.
    pub(crate) fn watches(&self, message: &Message) -> bool {
        std::ptr::eq(self.0.as_ptr(), Arc::as_ptr(&message.0))
    }
}

impl std::ops::DerefMut for Message {
    /// Copies the content first when another copy shares it.
    fn deref_mut(&mut self) -> &mut MessageData {
        Arc::make_mut(&mut self.0)
    }
}

impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl std::fmt::Debug for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let data = &*self.0;
        f.debug_struct("Message")
            .field("id", &data.id)
            .field("role", &data.role)
            .field("name", &data.name)
            .field("parts", &data.parts)
            .field("metadata", &data.metadata)
            .finish()
    }
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        MessageData::deserialize(deserializer).map(Message::from)
    }
}

impl From<MessageData> for Message {
    fn from(data: MessageData) -> Self {
        Message(Arc::new(data))
    }
}

impl Message {
    /// A message with the given role and parts, no name and no metadata.
    pub fn new(id: impl Into<String>, role: Role, parts: Vec<ContentPart>) -> Self {
        Message::from(MessageData {
            id: id.into(),
            role,
            name: None,
            parts,
            metadata: Metadata::new(),
        })
    }

    /// The content, without copying it when no other copy shares it.
    pub fn into_data(self) -> MessageData {
        Arc::unwrap_or_clone(self.0)
    }

    /// Where the shared content lives: equal for copies that share it, and never reused while
    /// any copy is alive. Only for identity lookups; never observable output.
    ///
    /// ```
    /// use ctxbed_harness::message::Message;
    /// let message = Message::user("m1", "hello");
    /// let copy = message.clone();
    /// assert_eq!(message.content_address(), copy.content_address());
    /// assert_ne!(message.content_address(), Message::user("m1", "hello").content_address());
    /// ```
    pub fn content_address(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// A handle on the shared content that does not keep the content alive, only its address:
    /// the allocation stays (and its address unused) while the handle exists, its content is
    /// dropped with the last copy, and a copy changed in place after that moves to new content
    /// (see [`DerefMut`](std::ops::DerefMut)). For identity caches that must not hold the
    /// messages they remember.
    pub(crate) fn watch(&self) -> Watch {
        Watch(Arc::downgrade(&self.0))
    }

    /// True when `other` is a copy of this message that still shares its content: then the
    /// two are equal, and any cache keyed on one holds for the other, without reading either.
    pub fn shares_content(&self, other: &Message) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// A system message holding one text part.
    pub fn system(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::System, vec![ContentPart::text(text)])
    }

    /// A user message holding one text part.
    pub fn user(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, Role::User, vec![ContentPart::text(text)])
    }

    /// A user message holding the input's text, then each image it attaches.
    pub fn user_input(id: impl Into<String>, input: UserInput) -> Self {
        Self::new(id, Role::User, input.into_parts())
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

/// The short content hash used in manifests and message ids.
pub fn content_hash(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    short_hex(&Sha256::digest(bytes))
}

/// The content hash of a message's parts (id and metadata excluded): [`content_hash`] of their
/// JSON text, which is hashed as it is written, never held whole.
pub fn message_hash(message: &Message) -> String {
    let mut writer = crate::sha::BufferedSha256::new();
    // A message always serialises (its JSON values' keys are strings); should it not, the hash
    // is of what was written, as the hash of an empty text was before.
    if serde_json::to_writer(&mut writer, &(&message.role, &message.parts)).is_err() {
        return content_hash(b"");
    }
    short_hex(&writer.finalize())
}

/// The first eight bytes of a digest in lowercase hexadecimal.
fn short_hex(digest: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(16);
    for byte in &digest[..8] {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The length test counts characters, not bytes: the byte length only rules out a result
    /// that cannot be long enough. Multi-byte text over the limit in bytes but not in
    /// characters stays; text over it in characters goes, whatever its outputs.
    #[test]
    fn length_is_counted_in_characters() {
        let result = |texts: &[String]| ToolResult {
            call_id: "c".into(),
            tool_name: "execute".into(),
            outputs: texts
                .iter()
                .map(|text| ToolOutput::Text { text: text.clone() })
                .chain([ToolOutput::Media {
                    kind: MediaKind::Image,
                    size_bytes: 1_000,
                }])
                .collect(),
            is_error: false,
            metadata: Default::default(),
        };
        let cjk = "\u{6587}".repeat(10); // 10 characters, 30 bytes
        assert!(!result(std::slice::from_ref(&cjk)).text_longer_than(10));
        assert!(result(std::slice::from_ref(&cjk)).text_longer_than(9));
        assert!(result(&[cjk.clone(), "x".into()]).text_longer_than(10));
        assert!(!result(&["x".repeat(10)]).text_longer_than(10));
        assert!(result(&["x".repeat(6), "y".repeat(5)]).text_longer_than(10));
        assert!(!result(&[]).text_longer_than(0));
    }
}

/// What a call hands an agent: the user's text and the images attached to it, in order.
///
/// ```
/// use ctxbed_harness::message::UserInput;
/// let input = UserInput::from("What does this show?");
/// assert_eq!(input.text, "What does this show?");
/// assert!(input.images.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserInput {
    /// The text of the user's message.
    pub text: String,
    /// The images attached after the text.
    pub images: Vec<crate::image::Image>,
}

impl UserInput {
    /// The input with `image` attached after the ones before.
    pub fn with_image(mut self, image: crate::image::Image) -> Self {
        self.images.push(image);
        self
    }

    /// The parts of the user message it makes: the text, then each image.
    pub fn into_parts(self) -> Vec<ContentPart> {
        std::iter::once(ContentPart::text(self.text))
            .chain(self.images.into_iter().map(ContentPart::Image))
            .collect()
    }
}

impl From<String> for UserInput {
    fn from(text: String) -> Self {
        UserInput {
            text,
            images: Vec::new(),
        }
    }
}

impl From<&str> for UserInput {
    fn from(text: &str) -> Self {
        UserInput::from(text.to_string())
    }
}

impl From<&String> for UserInput {
    fn from(text: &String) -> Self {
        UserInput::from(text.clone())
    }
}
