//! Tools: the [`Tool`] trait, the [`ToolRegistry`] and permission checks.
//!
//! Tools are data plus behaviour: a [`ToolSchema`] (name, description, JSON schema, counted in
//! the request budget as sent) and an async `call`. Before every execution the agent asks its
//! [`PermissionPolicy`]; a denial becomes the tool result the model sees, and the tool never runs.
//!
//! The built-in tools work on the workspace [`Storage`](crate::storage::Storage), every
//! path confined to it: `read_file`, `write_file`, `edit_file`, `list_files` ([`read`],
//! [`workspace`]) and `memory_search`, `memory_get` ([`memory`], which also holds
//! [`memory::flush_facts`]). [`builtin`] builds them by name; [`args`] turns a model's bad
//! arguments into error results that show the expected schema.
//!
//! ```
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use ctxbed_harness::message::ToolCall;
//! use ctxbed_harness::tools::{Tool, ToolContext, ToolOutcome, ToolRegistry, ToolSchema};
//!
//! /// Answers every call with the same text.
//! struct Echo(ToolSchema);
//!
//! #[async_trait]
//! impl Tool for Echo {
//!     fn schema(&self) -> &ToolSchema { &self.0 }
//!     async fn call(&self, _call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
//!         ToolOutcome::text("ok")
//!     }
//! }
//!
//! let echo = |name: &str| Arc::new(Echo(ToolSchema {
//!     name: name.into(),
//!     description: "Echoes.".into(),
//!     parameters: serde_json::json!({"type": "object", "properties": {}}),
//! }));
//! let mut registry = ToolRegistry::new();
//! registry.register(echo("execute")).unwrap();
//! assert!(registry.register(echo("execute")).is_err()); // names are unique
//! assert_eq!(registry.schemas().len(), 1);
//! ```

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;

use crate::message::{Metadata, ToolCall, ToolOutput};
use crate::runtime::RuntimeContext;

pub mod args;
pub mod builtin;
pub mod memory;
pub mod read;
pub mod session;
pub mod workspace;

pub use crate::message::ToolSchema;

/// What a tool returns: outputs, an error flag and metadata.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutcome {
    pub outputs: Vec<ToolOutput>,
    pub is_error: bool,
    pub metadata: Metadata,
}

impl ToolOutcome {
    /// A successful text outcome.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutcome {
            outputs: vec![ToolOutput::Text { text: text.into() }],
            is_error: false,
            metadata: Metadata::new(),
        }
    }

    /// A failed outcome whose text tells the model what went wrong.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutcome {
            is_error: true,
            ..Self::text(text)
        }
    }
}

/// Facts a tool may use while executing: who is calling and which call this is.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub agent_id: String,
    pub runtime: RuntimeContext,
    /// The agent call (one `call()` / `stream_events()`), not the tool call.
    pub call_id: String,
}

/// A callable tool.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The schema sent to the model.
    fn schema(&self) -> &ToolSchema;

    /// Executes one call. Failures are outcomes with `is_error`, never panics.
    async fn call(&self, call: &ToolCall, context: &ToolContext) -> ToolOutcome;
}

/// Errors registering a tool.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ToolRegistryError {
    #[error("a tool named `{0}` is already registered; tool names must be unique")]
    Duplicate(String),
    #[error(
        "tool name `{0}` is invalid: use 1-64 characters from [A-Za-z0-9_-], starting with a letter or digit"
    )]
    InvalidName(String),
}

/// The tools an agent may call, in registration order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    /// The tools' schemas, in the same order, shared by every request: copied when first asked
    /// for after the last registration (copying them at every registration cost the square of
    /// the tool count).
    schemas: OnceLock<Arc<[ToolSchema]>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .tools
            .iter()
            .map(|t| t.schema().name.as_str())
            .collect();
        f.debug_struct("ToolRegistry")
            .field("tools", &names)
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool.
    ///
    /// # Errors
    /// A duplicate or invalid name; the registry is left unchanged.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolRegistryError> {
        let name = tool.schema().name.clone();
        if !is_valid_tool_name(&name) {
            return Err(ToolRegistryError::InvalidName(name));
        }
        if self.get(&name).is_some() {
            return Err(ToolRegistryError::Duplicate(name));
        }
        self.tools.push(tool);
        self.schemas = OnceLock::new();
        Ok(())
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.schema().name == name)
    }

    /// Schemas in registration order, as sent to the model; copied once, when first asked for
    /// after the last registration, and shared from then on.
    pub fn schemas(&self) -> Arc<[ToolSchema]> {
        let schemas = self
            .schemas
            .get_or_init(|| self.tools.iter().map(|t| t.schema().clone()).collect());
        Arc::clone(schemas)
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// True for names providers accept: `[A-Za-z0-9][A-Za-z0-9_-]{0,63}`.
pub fn is_valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    name.len() <= 64
        && first.is_ascii_alphanumeric()
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The decision of a permission check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    Allow,
    /// The tool does not run; the reason becomes the error result the model sees.
    Deny {
        reason: String,
    },
}

/// Decides, before every execution, whether a tool call may run.
pub trait PermissionPolicy: Send + Sync {
    fn check(&self, call: &ToolCall, runtime: &RuntimeContext) -> Permission;
}

/// Allows every call.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl PermissionPolicy for AllowAll {
    fn check(&self, _call: &ToolCall, _runtime: &RuntimeContext) -> Permission {
        Permission::Allow
    }
}

/// Denies calls to the named tools and allows the rest.
#[derive(Debug, Clone, Default)]
pub struct DenyTools {
    pub tools: BTreeSet<String>,
}

impl PermissionPolicy for DenyTools {
    fn check(&self, call: &ToolCall, _runtime: &RuntimeContext) -> Permission {
        if self.tools.contains(&call.name) {
            Permission::Deny {
                reason: format!(
                    "permission denied: tool `{}` is not allowed here",
                    call.name
                ),
            }
        } else {
            Permission::Allow
        }
    }
}

#[cfg(test)]
mod tests;
