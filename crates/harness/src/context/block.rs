//! Context blocks: what a context source returns, and the materials the layout renders.
//!
//! A [`ContextBlock`] is runtime state (placed with the transient material after the
//! conversation) or reference material (placed last). Blocks are optional by default;
//! `required()` protects them from budget eviction. Fluent setters return new blocks. The
//! revision defaults to a content hash, so equal content has an equal revision.
//!
//! A [`Material`] is any rendered, non-conversation input: instructions (System), runtime
//! blocks (transient), references, `MEMORY.md` and knowledge files (reference). Dynamic blocks can
//! never become System material: [`BlockKind`] has no System variant.
//!
//! ```
//! use ctxbed_harness::context::block::ContextBlock;
//! let status = ContextBlock::runtime("status", "Change 42 under investigation");
//! let pinned = status.clone().required().with_priority(20).with_revision("change-v7");
//! assert!(!status.is_required() && pinned.is_required());
//! assert_eq!(pinned.revision(), "change-v7");
//! assert_eq!(ContextBlock::reference("a", "same").revision(), ContextBlock::reference("b", "same").revision());
//! ```

use crate::context::manifest::content_hash;

/// Where a dynamic block goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BlockKind {
    /// Current business state: transient material after the conversation.
    Runtime,
    /// Supporting documents: reference material at the end.
    Reference,
}

impl BlockKind {
    /// The kind's name: `runtime` or `reference`.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockKind::Runtime => "runtime",
            BlockKind::Reference => "reference",
        }
    }
}

/// One block of material returned by a context source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextBlock {
    id: String,
    kind: BlockKind,
    text: String,
    required: bool,
    priority: i32,
    revision: Option<String>,
}

impl ContextBlock {
    /// A runtime-state block (transient placement).
    pub fn runtime(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, BlockKind::Runtime, text)
    }

    /// A reference block (reference placement).
    pub fn reference(id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(id, BlockKind::Reference, text)
    }

    fn new(id: impl Into<String>, kind: BlockKind, text: impl Into<String>) -> Self {
        ContextBlock {
            id: id.into(),
            kind,
            text: text.into(),
            required: false,
            priority: 0,
            revision: None,
        }
    }

    /// A copy that budget eviction never removes.
    #[must_use]
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// A copy with this priority (lower values are omitted first within a category).
    #[must_use]
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// A copy with an explicit business revision instead of the content hash.
    #[must_use]
    pub fn with_revision(mut self, revision: impl Into<String>) -> Self {
        self.revision = Some(revision.into());
        self
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn kind(&self) -> BlockKind {
        self.kind
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_required(&self) -> bool {
        self.required
    }

    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// The explicit revision, or the content hash.
    pub fn revision(&self) -> String {
        self.revision
            .clone()
            .unwrap_or_else(|| content_hash(self.text.as_bytes()))
    }

    /// Why this block is structurally invalid, if it is.
    pub fn problem(&self) -> Option<&'static str> {
        if self.id.trim().is_empty() {
            return Some("a block id is blank");
        }
        if self
            .revision
            .as_deref()
            .is_some_and(|r| r.trim().is_empty())
        {
            return Some("a block revision is blank");
        }
        None
    }
}

/// Where a material is placed in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Placement {
    /// Merged into the single System message.
    System,
    /// After the conversation: current state.
    Transient,
    /// Last: supporting documents.
    Reference,
}

impl Placement {
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::System => "system",
            Placement::Transient => "transient",
            Placement::Reference => "reference",
        }
    }
}

/// What a material is, which decides its omission rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MaterialKind {
    /// `sys_prompt` and named instructions.
    Instruction,
    /// Workspace `AGENTS.md`.
    ProjectRules,
    /// Framework guidance.
    Guidance,
    /// A runtime block from a source.
    Runtime,
    /// A reference block from a source.
    Reference,
    /// Workspace `MEMORY.md`.
    Memory,
    /// A workspace knowledge file.
    Knowledge,
}

impl MaterialKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MaterialKind::Instruction => "instruction",
            MaterialKind::ProjectRules => "project_rules",
            MaterialKind::Guidance => "guidance",
            MaterialKind::Runtime => "runtime",
            MaterialKind::Reference => "reference",
            MaterialKind::Memory => "memory",
            MaterialKind::Knowledge => "knowledge",
        }
    }
}

/// One rendered, non-conversation input of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Material {
    /// `instruction/<name>`, `workspace:<FILE>`, `source/<source>/<block>`, `guidance/<name>`.
    pub id: String,
    pub kind: MaterialKind,
    pub placement: Placement,
    pub text: String,
    pub revision: String,
    pub required: bool,
    pub priority: i32,
}

impl Material {
    /// The material a source block becomes.
    pub fn from_block(source: &str, block: &ContextBlock) -> Self {
        let (kind, placement) = match block.kind() {
            BlockKind::Runtime => (MaterialKind::Runtime, Placement::Transient),
            BlockKind::Reference => (MaterialKind::Reference, Placement::Reference),
        };
        Material {
            id: format!("source/{source}/{}", block.id()),
            kind,
            placement,
            text: block.text().to_string(),
            revision: block.revision(),
            required: block.is_required(),
            priority: block.priority(),
        }
    }

    /// A named instruction: System, required, priority 100.
    pub fn instruction(name: &str, text: &str) -> Self {
        Material {
            id: format!("instruction/{name}"),
            kind: MaterialKind::Instruction,
            placement: Placement::System,
            text: text.to_string(),
            revision: content_hash(text.as_bytes()),
            required: true,
            priority: 100,
        }
    }

    /// The content hash of the text (the revision may differ).
    pub fn content_hash(&self) -> String {
        content_hash(self.text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fluent_setters_return_new_blocks() {
        let base = ContextBlock::reference("format", "date, account, amount");
        let changed = base.clone().with_priority(-3);
        assert_eq!(base.priority(), 0);
        assert_eq!(changed.priority(), -3);
        assert_eq!(base.revision(), changed.revision());
    }

    #[test]
    fn each_kind_is_named_and_kept_by_its_block() {
        assert_eq!(BlockKind::Runtime.as_str(), "runtime");
        assert_eq!(BlockKind::Reference.as_str(), "reference");
        assert_eq!(ContextBlock::runtime("a", "x").kind(), BlockKind::Runtime);
        assert_eq!(
            ContextBlock::reference("a", "x").kind(),
            BlockKind::Reference
        );
    }

    #[test]
    fn blank_ids_and_revisions_are_problems() {
        assert!(ContextBlock::runtime(" ", "x").problem().is_some());
        assert!(
            ContextBlock::runtime("a", "x")
                .with_revision("")
                .problem()
                .is_some()
        );
        assert!(ContextBlock::runtime("a", "").problem().is_none());
    }
}
