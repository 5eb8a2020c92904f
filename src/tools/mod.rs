//! Tools: the [`Tool`] trait, the [`ToolRegistry`], permission checks and scripted tools.
//!
//! Tools are data plus behaviour: a [`ToolSchema`] (name, description, JSON schema, counted in
//! the request budget as sent) and an async `call`. Before every execution the agent asks its
//! [`PermissionPolicy`]; a denial becomes the tool result the model sees, and the tool never runs.
//!
//! [`ScriptedTool`] is the simulator's tool: fixed or generated text, simulated latency, failure.
//!
//! The built-in tools work on the workspace [`Storage`](crate::sim::storage::Storage), every
//! path confined to it: `read_file`, `write_file`, `edit_file`, `list_files` ([`read`],
//! [`workspace`]) and `memory_search`, `memory_get` ([`memory`], which also holds
//! [`memory::flush_facts`]). [`builtin`] builds them by name; [`args`] turns a model's bad
//! arguments into error results that show the expected schema.
//!
//! ```
//! use ctxbed::tools::{ScriptedOutput, ScriptedTool, ToolRegistry};
//! let mut registry = ToolRegistry::new();
//! registry.register(ScriptedTool::new("execute", ScriptedOutput::Fixed("ok".into())).into_arc()).unwrap();
//! assert!(registry.register(ScriptedTool::new("execute", ScriptedOutput::Fixed("x".into())).into_arc()).is_err());
//! assert_eq!(registry.schemas().len(), 1);
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::message::{Metadata, ToolCall, ToolOutput};
use crate::runtime::RuntimeContext;
use crate::sim::text::{TextKind, generate_text};

pub mod args;
pub mod builtin;
pub mod memory;
pub mod read;
pub mod session;
pub mod workspace;

/// What the model is told about a tool. Counted in the input budget exactly as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

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
    /// The tools' schemas, in the same order, shared by every request.
    schemas: Arc<[ToolSchema]>,
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
        self.schemas = self.tools.iter().map(|t| t.schema().clone()).collect();
        Ok(())
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|tool| tool.schema().name == name)
    }

    /// Schemas in registration order, as sent to the model; copied once, when a tool is
    /// registered, and shared from then on.
    pub fn schemas(&self) -> Arc<[ToolSchema]> {
        Arc::clone(&self.schemas)
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

/// What a scripted tool answers.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptedOutput {
    /// The same text every call.
    Fixed(String),
    /// One text per call, in order; the last repeats.
    Sequence(Vec<String>),
    /// Deterministic text of exactly `chars` characters of the given kind.
    Generated { chars: usize, kind: TextKind },
    /// The first response whose `when_args_contain` text occurs in the call's JSON arguments
    /// (like a scripted shell: `cargo test` → its output and exit code); `fallback` otherwise.
    ByArguments {
        responses: Vec<ScriptedResponse>,
        fallback: ScriptedResponse,
    },
}

/// One scripted response: text and an exit code (non-zero makes an error result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedResponse {
    /// Matched against the call's arguments serialised as JSON; empty matches every call.
    pub when_args_contain: String,
    pub text: String,
    pub exit_code: i32,
}

/// A tool whose behaviour a scenario scripts: output, latency and failure.
#[derive(Debug)]
pub struct ScriptedTool {
    schema: ToolSchema,
    output: ScriptedOutput,
    latency: Duration,
    failure: Option<String>,
    seed: u64,
    calls: AtomicU64,
}

impl ScriptedTool {
    /// A scripted tool with no latency that never fails.
    pub fn new(name: impl Into<String>, output: ScriptedOutput) -> Self {
        let name = name.into();
        ScriptedTool {
            schema: ToolSchema {
                description: format!("Scripted tool `{name}`."),
                name,
                parameters: serde_json::json!({"type": "object", "properties": {}}),
            },
            output,
            latency: Duration::ZERO,
            failure: None,
            seed: 0,
            calls: AtomicU64::new(0),
        }
    }

    /// Replaces the description and parameter schema.
    pub fn with_schema(mut self, description: impl Into<String>, parameters: Value) -> Self {
        self.schema.description = description.into();
        self.schema.parameters = parameters;
        self
    }

    /// Simulated execution time.
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Every call fails with this message.
    pub fn with_failure(mut self, message: impl Into<String>) -> Self {
        self.failure = Some(message.into());
        self
    }

    /// Seed for generated output.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Wraps the tool for registration.
    pub fn into_arc(self) -> Arc<dyn Tool> {
        Arc::new(self)
    }
}

/// A response as a tool outcome: exit code 0 is success; any other is an error whose text
/// starts with the exit code, as a shell tool would report it.
fn response_outcome(response: &ScriptedResponse) -> ToolOutcome {
    if response.exit_code == 0 {
        ToolOutcome::text(response.text.clone())
    } else {
        ToolOutcome::error(format!(
            "exit code {}\n{}",
            response.exit_code, response.text
        ))
    }
}

#[async_trait]
impl Tool for ScriptedTool {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        let index = self.calls.fetch_add(1, Ordering::SeqCst);
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        if let Some(message) = &self.failure {
            return ToolOutcome::error(message.clone());
        }
        let text = match &self.output {
            ScriptedOutput::Fixed(text) => text.clone(),
            ScriptedOutput::Sequence(texts) => {
                let position = usize::try_from(index).unwrap_or(usize::MAX);
                texts
                    .get(position)
                    .or(texts.last())
                    .cloned()
                    .unwrap_or_default()
            }
            ScriptedOutput::Generated { chars, kind } => {
                generate_text(*kind, *chars, self.seed.wrapping_add(index))
            }
            ScriptedOutput::ByArguments {
                responses,
                fallback,
            } => {
                let arguments = call.arguments.to_string();
                let response = responses
                    .iter()
                    .find(|r| arguments.contains(r.when_args_contain.as_str()))
                    .unwrap_or(fallback);
                return response_outcome(response);
            }
        };
        ToolOutcome::text(text)
    }
}

#[cfg(test)]
mod tests;
