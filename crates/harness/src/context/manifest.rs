//! The context manifest: metadata of one request preparation, never prompt bodies.
//!
//! A [`ContextManifest`] is built from the records of the preparation stages: one item per
//! prepared message and per tool schema (ids, roles, token counts, content hashes), the
//! transforms applied, and the validation outcome. An early failure has token figures of −1 and
//! the counting method `unavailable`.
//!
//! **Invariant:** no field holds message text, tool arguments or tool output; ids, hashes, counts
//! and names only.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::context::block::{MaterialKind, Placement};
use crate::message::{Message, Role};
use crate::model::Purpose;
use crate::shared_vec::SharedVec;

pub use crate::context::transform::{Transform, TransformParseError};

/// The outcome of a preparation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    Passed,
    BudgetExceeded,
    InvalidToolPairs,
    StateConflict,
    HistoryConflict,
    BuildFailed,
}

impl Validation {
    pub fn as_str(self) -> &'static str {
        match self {
            Validation::Passed => "passed",
            Validation::BudgetExceeded => "budget_exceeded",
            Validation::InvalidToolPairs => "invalid_tool_pairs",
            Validation::StateConflict => "state_conflict",
            Validation::HistoryConflict => "history_conflict",
            Validation::BuildFailed => "build_failed",
        }
    }
}

/// What a manifest item describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemKind {
    /// A prepared message.
    Message {
        role: Role,
        part_kinds: Vec<&'static str>,
    },
    /// A tool schema in the request's tool list.
    ToolSchema,
    /// A retained material (instruction, workspace file or source block).
    Material {
        kind: MaterialKind,
        placement: Placement,
        revision: String,
        required: bool,
        priority: i32,
    },
}

/// One retained element of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestItem {
    pub kind: ItemKind,
    /// Message id or tool name.
    pub id: String,
    pub tokens: u64,
    /// First 16 hex digits of the SHA-256 of the serialised content.
    pub content_hash: String,
}

/// Metadata of one request preparation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextManifest {
    pub call_id: String,
    pub purpose: Purpose,
    pub model: String,
    /// Estimated input tokens of the whole request; −1 when unavailable.
    pub estimated_input_tokens: i64,
    /// Effective input limit; −1 when unavailable.
    pub input_limit: i64,
    /// Tokens left for the conversation after System, transient and reference material and all
    /// tool schemas (at least 1); −1 when unavailable.
    pub conversation_allowance: i64,
    pub counting_method: String,
    pub exact: bool,
    /// Items are shared: successive steps' manifests hold the same item for an unchanged
    /// message, so a step does not copy the items of a long history.
    pub items: SharedVec<Arc<ManifestItem>>,
    /// What the stages changed, in the order they recorded it.
    pub transforms: Vec<Transform>,
    pub validation: Validation,
    /// The task-state revision projected into the request, when task state is in use.
    pub task_revision: Option<u64>,
    /// The version of the context policy that prepared the request: a hash of every setting
    /// that shapes preparation (budget, estimator, pairing, offload, compaction, selection), so
    /// two manifests with the same version came from the same policy. Set by the agent; `None`
    /// for a bare [`prepare`](crate::context::prepare) call.
    pub policy_version: Option<String>,
}

impl ContextManifest {
    /// A manifest for a preparation that failed before any statistics existed.
    pub fn early_failure(
        call_id: &str,
        purpose: Purpose,
        model: &str,
        validation: Validation,
    ) -> Self {
        ContextManifest {
            call_id: call_id.to_string(),
            purpose,
            model: model.to_string(),
            estimated_input_tokens: -1,
            input_limit: -1,
            conversation_allowance: -1,
            counting_method: "unavailable".to_string(),
            exact: false,
            items: SharedVec::new(),
            transforms: Vec::new(),
            validation,
            task_revision: None,
            policy_version: None,
        }
    }
}

pub use crate::message::{content_hash, message_hash};

/// Names of a message's part kinds, in order, for the manifest and trace.
pub fn part_kinds(message: &Message) -> Vec<&'static str> {
    use crate::message::ContentPart;
    message
        .parts
        .iter()
        .map(|part| match part {
            ContentPart::Text { .. } => "text",
            ContentPart::Thinking { .. } => "thinking",
            ContentPart::RedactedThinking { .. } => "redacted_thinking",
            ContentPart::ToolCall(_) => "tool_call",
            ContentPart::ToolResult(_) => "tool_result",
            ContentPart::Media { .. } => "media",
            ContentPart::Image(_) => "image",
        })
        .collect()
}

impl ManifestItem {
    /// The item of a prepared message: its role, part kinds, id, tokens and content hash.
    ///
    /// ```
    /// use ctxbed_harness::context::manifest::{ItemKind, ManifestItem, message_hash};
    /// use ctxbed_harness::message::Message;
    /// let message = Message::user("u1", "Fix the export.");
    /// let item = ManifestItem::message(&message, 9, message_hash(&message));
    /// assert_eq!(item.id, "u1");
    /// assert!(matches!(item.kind, ItemKind::Message { ref part_kinds, .. } if part_kinds == &["text"]));
    /// ```
    pub fn message(message: &Message, tokens: u64, content_hash: String) -> Self {
        ManifestItem {
            kind: ItemKind::Message {
                role: message.role,
                part_kinds: part_kinds(message),
            },
            id: message.id.clone(),
            tokens,
            content_hash,
        }
    }
}

impl ContextManifest {
    /// The manifest as a JSON object (for the session log and exports). Holds no prompt text.
    /// It is the manifest's [`Serialize`] form, which a session log writes without building
    /// this tree.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self)
            .expect("a manifest serialises: its fields are strings and numbers")
    }

    /// The retained material item with this source id.
    pub fn material(&self, source_id: &str) -> Option<&ManifestItem> {
        self.items
            .iter()
            .find(|item| matches!(item.kind, ItemKind::Material { .. }) && item.id == source_id)
            .map(|item| &**item)
    }
}

impl Serialize for ContextManifest {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(13))?;
        map.serialize_entry("call_id", &self.call_id)?;
        map.serialize_entry("purpose", self.purpose.as_str())?;
        map.serialize_entry("model", &self.model)?;
        map.serialize_entry("estimated_input_tokens", &self.estimated_input_tokens)?;
        map.serialize_entry("input_limit", &self.input_limit)?;
        map.serialize_entry("conversation_allowance", &self.conversation_allowance)?;
        map.serialize_entry("counting_method", &self.counting_method)?;
        map.serialize_entry("exact", &self.exact)?;
        map.serialize_entry("items", &Items(&self.items))?;
        map.serialize_entry("transforms", &self.transforms)?;
        map.serialize_entry("validation", self.validation.as_str())?;
        map.serialize_entry("task_revision", &self.task_revision)?;
        map.serialize_entry("policy_version", &self.policy_version)?;
        map.end()
    }
}

/// A manifest's shared items, serialised as a list of items.
struct Items<'a>(&'a SharedVec<Arc<ManifestItem>>);

impl Serialize for Items<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|item| &**item))
    }
}

impl Serialize for ManifestItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.kind {
            ItemKind::Message { role, part_kinds } => {
                let mut map = serializer.serialize_map(Some(6))?;
                map.serialize_entry("type", "message")?;
                map.serialize_entry("id", &self.id)?;
                map.serialize_entry("role", role.as_str())?;
                map.serialize_entry("parts", part_kinds)?;
                map.serialize_entry("tokens", &self.tokens)?;
                map.serialize_entry("content_hash", &self.content_hash)?;
                map.end()
            }
            ItemKind::ToolSchema => {
                let mut map = serializer.serialize_map(Some(4))?;
                map.serialize_entry("type", "tool_schema")?;
                map.serialize_entry("id", &self.id)?;
                map.serialize_entry("tokens", &self.tokens)?;
                map.serialize_entry("content_hash", &self.content_hash)?;
                map.end()
            }
            ItemKind::Material {
                kind,
                placement,
                revision,
                required,
                priority,
            } => {
                let mut map = serializer.serialize_map(Some(9))?;
                map.serialize_entry("type", "material")?;
                map.serialize_entry("source_id", &self.id)?;
                map.serialize_entry("kind", kind.as_str())?;
                map.serialize_entry("placement", placement.as_str())?;
                map.serialize_entry("revision", revision)?;
                map.serialize_entry("required", required)?;
                map.serialize_entry("priority", priority)?;
                map.serialize_entry("tokens", &self.tokens)?;
                map.serialize_entry("content_hash", &self.content_hash)?;
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON form is what session logs and exports hold: its field order and names are
    /// pinned here, item kind by item kind.
    #[test]
    fn the_json_form_is_stable() {
        let mut manifest = ContextManifest::early_failure(
            "call-1/r1",
            Purpose::Reasoning,
            "m",
            Validation::Passed,
        );
        manifest.items = [
            ManifestItem {
                kind: ItemKind::Message {
                    role: Role::Assistant,
                    part_kinds: vec!["text", "tool_call"],
                },
                id: "a1".to_string(),
                tokens: 12,
                content_hash: "00ff".to_string(),
            },
            ManifestItem {
                kind: ItemKind::ToolSchema,
                id: "read_file".to_string(),
                tokens: 30,
                content_hash: "11ee".to_string(),
            },
            ManifestItem {
                kind: ItemKind::Material {
                    kind: MaterialKind::Instruction,
                    placement: Placement::System,
                    revision: "r7".to_string(),
                    required: true,
                    priority: -2,
                },
                id: "rules".to_string(),
                tokens: 5,
                content_hash: "22dd".to_string(),
            },
        ]
        .map(Arc::new)
        .into_iter()
        .collect();
        manifest.transforms = vec![Transform::OmittedForBudget {
            item_id: "x".to_string(),
        }];
        manifest.task_revision = Some(3);
        manifest.policy_version = Some("p1".to_string());
        assert_eq!(
            manifest.to_json().to_string(),
            concat!(
                r#"{"call_id":"call-1/r1","purpose":"reasoning","model":"m","#,
                r#""estimated_input_tokens":-1,"input_limit":-1,"conversation_allowance":-1,"#,
                r#""counting_method":"unavailable","exact":false,"items":["#,
                r#"{"type":"message","id":"a1","role":"assistant","parts":["text","tool_call"],"tokens":12,"content_hash":"00ff"},"#,
                r#"{"type":"tool_schema","id":"read_file","tokens":30,"content_hash":"11ee"},"#,
                r#"{"type":"material","source_id":"rules","kind":"instruction","placement":"system","revision":"r7","required":true,"priority":-2,"tokens":5,"content_hash":"22dd"}"#,
                r#"],"transforms":["omitted_for_budget:x"],"validation":"passed","task_revision":3,"policy_version":"p1"}"#
            )
        );
    }

    #[test]
    fn material_finds_only_a_material_item_by_its_source_id() {
        let mut manifest =
            ContextManifest::early_failure("c", Purpose::Reasoning, "m", Validation::Passed);
        let item = |kind: ItemKind, id: &str| {
            Arc::new(ManifestItem {
                kind,
                id: id.to_string(),
                tokens: 1,
                content_hash: String::new(),
            })
        };
        let material = ItemKind::Material {
            kind: MaterialKind::Instruction,
            placement: Placement::System,
            revision: "r1".to_string(),
            required: false,
            priority: 0,
        };
        manifest.items = vec![
            item(ItemKind::ToolSchema, "rules"),
            item(ItemKind::ToolSchema, "other"),
            item(material, "rules"),
        ]
        .into_iter()
        .collect();
        let found = manifest.material("rules").expect("the material item");
        assert!(matches!(found.kind, ItemKind::Material { .. }));
        assert!(
            manifest.material("other").is_none(),
            "a schema is not material"
        );
        assert!(manifest.material("absent").is_none());
    }
}
