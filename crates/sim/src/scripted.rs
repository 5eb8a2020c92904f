//! Scenario-scripted collaborators beyond the mock model: [`ScriptedTool`] (fixed, sequenced,
//! generated or argument-matched output, simulated latency, failure), context sources with
//! latency and failures, and tools that write workspace files as a side effect.
//!
//! ```
//! use ctxbed_harness::tools::ToolRegistry;
//! use ctxbed_sim::scripted::{ScriptedOutput, ScriptedTool};
//! let mut registry = ToolRegistry::new();
//! registry.register(ScriptedTool::new("execute", ScriptedOutput::Fixed("ok".into())).into_arc()).unwrap();
//! assert!(registry.register(ScriptedTool::new("execute", ScriptedOutput::Fixed("x".into())).into_arc()).is_err());
//! assert_eq!(registry.schemas().len(), 1);
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use ctxbed_harness::context::block::ContextBlock;
use ctxbed_harness::context::source::{ContextRequest, ContextSource, SourceError};
use ctxbed_harness::message::ToolCall;
use ctxbed_harness::storage::{Storage, WorkspacePath};
use ctxbed_harness::tools::{Tool, ToolContext, ToolOutcome, ToolSchema};
use serde_json::Value;

use crate::text::{TextKind, generate_text};

/// How a scripted source fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFailure {
    /// Returns an error.
    Error,
    /// Returns "no list".
    NoList,
    /// Never completes.
    Never,
    /// Panics.
    Panic,
}

/// A block as a scenario declares it; `{load}` in the text becomes the 1-based load number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockSpec {
    pub id: String,
    pub runtime: bool,
    pub text: String,
    pub required: bool,
    pub priority: i32,
    pub revision: Option<String>,
}

/// A context source scripted by a scenario.
#[derive(Debug)]
pub struct ScriptedSource {
    pub blocks: Vec<BlockSpec>,
    pub latency: Duration,
    pub failure: Option<SourceFailure>,
    /// 1-based loads that fail; empty means every load fails when `failure` is set.
    pub fail_loads: Vec<u64>,
    loads: AtomicU64,
}

impl ScriptedSource {
    pub fn new(
        blocks: Vec<BlockSpec>,
        latency: Duration,
        failure: Option<SourceFailure>,
        fail_loads: Vec<u64>,
    ) -> Self {
        ScriptedSource {
            blocks,
            latency,
            failure,
            fail_loads,
            loads: AtomicU64::new(0),
        }
    }

    /// How many times the source was loaded.
    pub fn loads(&self) -> u64 {
        self.loads.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ContextSource for ScriptedSource {
    async fn load(
        &self,
        _request: &ContextRequest,
    ) -> Result<Option<Vec<ContextBlock>>, SourceError> {
        let load = self.loads.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        let failing = self.fail_loads.is_empty() || self.fail_loads.contains(&load);
        match self.failure.filter(|_| failing) {
            Some(SourceFailure::Error) => {
                return Err(SourceError {
                    message: format!("scripted failure on load {load}"),
                });
            }
            Some(SourceFailure::NoList) => return Ok(None),
            Some(SourceFailure::Never) => std::future::pending::<()>().await,
            // `resume_unwind` unwinds like a panic without running the panic hook, so a scripted
            // panic does not print a backtrace into the test output.
            Some(SourceFailure::Panic) => {
                std::panic::resume_unwind(Box::new(format!("scripted source panic on load {load}")))
            }
            None => {}
        }
        let blocks = self
            .blocks
            .iter()
            .map(|spec| {
                let text = spec.text.replace("{load}", &load.to_string());
                let mut block = if spec.runtime {
                    ContextBlock::runtime(spec.id.clone(), text)
                } else {
                    ContextBlock::reference(spec.id.clone(), text)
                };
                if spec.required {
                    block = block.required();
                }
                block = block.with_priority(spec.priority);
                if let Some(revision) = &spec.revision {
                    block = block.with_revision(revision.replace("{load}", &load.to_string()));
                }
                block
            })
            .collect();
        Ok(Some(blocks))
    }
}

/// A tool that, after its scripted behaviour, writes a workspace file.
pub struct WritingTool {
    pub inner: Arc<dyn Tool>,
    pub storage: Arc<dyn Storage>,
    pub path: WorkspacePath,
    pub text: String,
}

#[async_trait]
impl Tool for WritingTool {
    fn schema(&self) -> &ToolSchema {
        self.inner.schema()
    }

    async fn call(&self, call: &ToolCall, context: &ToolContext) -> ToolOutcome {
        let outcome = self.inner.call(call, context).await;
        match self
            .storage
            .write(&self.path, self.text.clone().into_bytes())
            .await
        {
            Ok(()) => outcome,
            Err(error) => ToolOutcome::error(error.to_string()),
        }
    }
}

/// A tool that, after its scripted behaviour, switches the plan mode: an application action
/// happening during a call, visible at the next model boundary.
pub struct PlanModeTool {
    pub inner: Arc<dyn Tool>,
    pub states: ctxbed_harness::task::TaskStates,
    pub mode: ctxbed_harness::task::plan::PlanMode,
}

#[async_trait]
impl Tool for PlanModeTool {
    fn schema(&self) -> &ToolSchema {
        self.inner.schema()
    }

    async fn call(&self, call: &ToolCall, context: &ToolContext) -> ToolOutcome {
        let outcome = self.inner.call(call, context).await;
        self.states
            .of(&context.runtime)
            .with(|state| state.set_mode(self.mode));
        outcome
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
