//! Scenario-scripted collaborators beyond the mock model: context sources with latency and
//! failures, and tools that write workspace files as a side effect.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;

use crate::context::block::ContextBlock;
use crate::context::source::{ContextRequest, ContextSource, SourceError};
use crate::message::ToolCall;
use crate::sim::storage::{Storage, WorkspacePath};
use crate::tools::{Tool, ToolContext, ToolOutcome, ToolSchema};

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
    pub states: crate::task::TaskStates,
    pub mode: crate::task::plan::PlanMode,
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
