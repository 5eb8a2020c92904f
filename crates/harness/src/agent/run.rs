//! The reasoning–tool–result loop of one call.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard, PoisonError};

use futures_util::future::join_all;
use tracing::Instrument;

use super::compact::Force;
use super::events::{AgentEvent, EventKind};
use super::{AgentError, AgentInner, SessionKey};
use crate::context::workspace::{self, WorkspaceMaterial};
use crate::limits;
use crate::message::{ContentPart, Message, Role, ToolCall, ToolResult, UserInput};
use crate::model::{Model, ModelError, ModelReply, ModelRequest, Purpose};
use crate::runtime::RuntimeContext;
use crate::session::SessionRecord;
use crate::tools::{Permission, ToolContext, ToolOutcome};

mod pipeline;
mod session;

pub(super) use pipeline::PrepareRequest;
use session::log_messages;
pub(super) use session::{flush_session, session_state, write_durable};

pub(super) type Sink<'a> = dyn FnMut(AgentEvent) + Send + 'a;

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn session_key(runtime: &RuntimeContext) -> SessionKey {
    SessionKey {
        user_id: runtime.user_id.clone(),
        session_id: runtime.session_id.clone(),
    }
}

/// The call id of session-log records written by [`super::HarnessAgent::append_message`].
pub(super) const EXTERNAL_WRITER: &str = "external";

/// The working state of one call.
pub(super) struct Call<'a> {
    pub(super) inner: &'a AgentInner,
    pub(super) call_id: String,
    pub(super) runtime: RuntimeContext,
    key: SessionKey,
    pub(super) history: Vec<Message>,
    /// The session version this call's history descends from; a commit over any other fails.
    base_version: u64,
    /// Loaded once at call entry and reused by every step of the call.
    workspace: WorkspaceMaterial,
}

/// A commit found the session's history changed by another writer since this call read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Conflict;

/// Runs one call, reporting every event to `sink`; the last event is always `RunFinished`.
pub(super) async fn run(
    inner: &AgentInner,
    input: UserInput,
    runtime: RuntimeContext,
    sink: &mut (dyn FnMut(AgentEvent) + Send),
) -> Result<Message, AgentError> {
    // OpenTelemetry GenAI names; identities only, never input text.
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = format!("invoke_agent {}", inner.name),
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = inner.name.as_str(),
        gen_ai.agent.id = inner.agent_id.as_str(),
    );
    run_call(inner, input, runtime, sink).instrument(span).await
}

/// One call, inside its `invoke_agent` span.
async fn run_call(
    inner: &AgentInner,
    input: UserInput,
    runtime: RuntimeContext,
    sink: &mut (dyn FnMut(AgentEvent) + Send),
) -> Result<Message, AgentError> {
    let number = inner.calls.fetch_add(1, Ordering::SeqCst) + 1;
    let call_id = format!("call-{number}");
    let key = session_key(&runtime);
    emit(
        inner,
        sink,
        EventKind::RunStarted {
            call_id: call_id.clone(),
        },
    );
    let restored = match session_state(inner, &key, &runtime, sink).await {
        Ok(state) => state,
        Err(error) => return finished(inner, sink, call_id, Err(AgentError::Restore(error))),
    };
    let workspace = call_workspace(inner).await;
    let mut call = Call {
        inner,
        call_id,
        runtime,
        key,
        history: restored.history,
        base_version: restored.version,
        workspace,
    };
    call.record(
        "run/start",
        serde_json::json!({
            "agent_id": inner.agent_id,
            "user_id": call.runtime.user_id,
            "session_id": call.runtime.session_id,
        }),
    );
    let user = Message::user_input(call.next_message_id(), input);
    call.history.push(user);
    let outcome = call.steps(sink).await;
    // Task state changes take effect at once, whatever the outcome (a tool wrote the Todo
    // list, then a later step failed): the last checkpoint must carry them, or a restart would
    // restore an older task state than this agent goes on with.
    call.checkpoint_task_state();
    call.record(
        "run/end",
        serde_json::json!({ "status": outcome.as_ref().map_or_else(|e| e.kind(), |_| "ok") }),
    );
    let flushed = call.flush_log(sink).await;
    // A failed flush turns a success into an error; an earlier error stays the outcome (the
    // `session_log_failed` event records the flush failure either way).
    let outcome = match (outcome, flushed) {
        (Ok(_), Err(error)) => Err(error),
        (outcome, _) => outcome,
    };
    let call_id = call.call_id.clone();
    finished(inner, sink, call_id, outcome)
}

/// The workspace material loaded once at call entry (none for a plain ReAct agent).
async fn call_workspace(inner: &AgentInner) -> WorkspaceMaterial {
    if inner.plain {
        WorkspaceMaterial::default()
    } else {
        workspace::load(
            inner.workspace.as_ref(),
            inner.policy.estimator.as_ref(),
            inner.max_context_tokens,
        )
        .await
    }
}

/// Emits the call's `RunFinished` event with its outcome, and returns the outcome.
fn finished(
    inner: &AgentInner,
    sink: &mut Sink<'_>,
    call_id: String,
    outcome: Result<Message, AgentError>,
) -> Result<Message, AgentError> {
    emit(
        inner,
        sink,
        EventKind::RunFinished {
            call_id,
            outcome: outcome.clone(),
        },
    );
    outcome
}

pub(super) fn emit(inner: &AgentInner, sink: &mut Sink<'_>, kind: EventKind) {
    sink(AgentEvent {
        at: inner.clock.elapsed(),
        kind,
    });
}

impl Call<'_> {
    /// The session's next message id. Ids come from the session's shared counter, so two
    /// writers of one session never hand out the same id.
    fn next_message_id(&mut self) -> String {
        let mut sessions = lock(&self.inner.sessions);
        sessions
            .entry(self.key.clone())
            .or_default()
            .next_message_id()
    }

    /// Commits the working history as the session's state if no other writer committed since
    /// this call read it (compare-and-swap on the session version), and records in the session
    /// log what it lacks: durable history keeps everything, while the working history may be
    /// compacted.
    ///
    /// On a conflict the newer history stays as it is; this call's messages that the log lacks
    /// are recorded there with a `history/conflict` record, so nothing is lost.
    fn commit(&mut self) -> Result<(), Conflict> {
        let log_key = self.log_key();
        let mut sessions = lock(&self.inner.sessions);
        let state = sessions.entry(self.key.clone()).or_default();
        if state.version != self.base_version {
            if let Some(log) = &self.inner.session_log {
                let kept = log_messages(
                    log.as_ref(),
                    &log_key,
                    &self.call_id,
                    &mut state.logged,
                    &self.history,
                    &state.history,
                );
                log.append(
                    &log_key,
                    SessionRecord {
                        kind: "history/conflict".to_string(),
                        call_id: self.call_id.clone(),
                        payload: serde_json::json!({
                            "read_version": self.base_version,
                            "found_version": state.version,
                            "kept_in_log": kept,
                        })
                        .into(),
                    },
                );
            }
            return Err(Conflict);
        }
        let previous = std::mem::replace(&mut state.history, self.history.clone());
        state.version += 1;
        self.base_version = state.version;
        write_durable(self.inner, &log_key, &self.call_id, state, &previous);
        Ok(())
    }

    async fn steps(&mut self, sink: &mut Sink<'_>) -> Result<Message, AgentError> {
        for step in 1..=self.inner.max_steps {
            let request_id = format!("{}/r{step}", self.call_id);
            let request = if self.inner.plain {
                let request = self.plain_request(&request_id);
                self.commit()
                    .map_err(|Conflict| AgentError::HistoryConflict)?;
                request
            } else {
                // A successful preparation has committed.
                self.prepare(&request_id, None, sink).await?.0.request
            };
            // Write-ahead: the model sees nothing the session log could not keep.
            self.flush_log(sink).await?;
            let reply = match self.ask_model(&request_id, &request, sink).await {
                Ok(reply) => reply,
                Err(AgentError::Model(error)) if self.can_recover(&error) => {
                    self.recover(&request_id, error, sink).await?
                }
                Err(error) => return Err(error),
            };
            let assistant = self.accept_reply(reply, sink)?;
            let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
            self.history.push(assistant.clone());
            if calls.is_empty() {
                self.commit()
                    .map_err(|Conflict| AgentError::HistoryConflict)?;
                return Ok(assistant);
            }
            self.execute_tools(&calls, sink).await;
        }
        self.commit()
            .map_err(|Conflict| AgentError::HistoryConflict)?;
        Err(AgentError::MaxStepsExceeded {
            limit: self.inner.max_steps,
        })
    }

    /// Overflow recovery needs a session log and compaction, and only overflow qualifies.
    fn can_recover(&self, error: &ModelError) -> bool {
        !self.inner.plain
            && matches!(error, ModelError::ContextOverflow { .. })
            && self.inner.session_log.is_some()
            && self.inner.compaction.is_some()
    }

    /// Forces a compaction and retries the same reasoning request once, inside this run. If the
    /// forced compaction changes nothing, the original error propagates.
    async fn recover(
        &mut self,
        request_id: &str,
        error: ModelError,
        sink: &mut Sink<'_>,
    ) -> Result<ModelReply, AgentError> {
        let reported = match &error {
            ModelError::ContextOverflow {
                actual_tokens: Some(actual),
                max_tokens: Some(max),
                ..
            } => Some((*actual, *max)),
            _ => None,
        };
        let retry_id = format!("{request_id}.retry");
        let (prepared, summarised) = self
            .prepare(&retry_id, Some(Force { reported }), sink)
            .await?;
        if !summarised {
            return Err(AgentError::Model(error));
        }
        self.ask_model(&retry_id, &prepared.request, sink).await
    }

    /// The reasoning request to the agent's model ([`Call::call_model`]).
    async fn ask_model(
        &self,
        request_id: &str,
        request: &ModelRequest,
        sink: &mut Sink<'_>,
    ) -> Result<ModelReply, AgentError> {
        let model = self.inner.model.clone();
        self.call_model(
            request_id,
            Purpose::Reasoning,
            model.as_ref(),
            request,
            sink,
        )
        .await
        .map_err(AgentError::Model)
    }

    /// The one way this harness calls a model, for reasoning, summaries and memory flushes
    /// alike: the `ModelCallStarted` event and `model/start` record, the call bounded by the
    /// agent's model timeout (a late answer is [`ModelError::Timeout`]), the `model/end` record
    /// and the `ModelCallFinished` or `ModelCallFailed` event.
    pub(super) async fn call_model(
        &self,
        request_id: &str,
        purpose: Purpose,
        model: &dyn Model,
        request: &ModelRequest,
        sink: &mut Sink<'_>,
    ) -> Result<ModelReply, ModelError> {
        emit(
            self.inner,
            sink,
            EventKind::ModelCallStarted {
                request_id: request_id.to_string(),
            },
        );
        self.record(
            "model/start",
            serde_json::json!({ "request": request_id, "purpose": purpose.as_str() }),
        );
        let call = model.call(request);
        let answer = match self.inner.model_timeout {
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(answer) => answer,
                Err(_) => Err(ModelError::Timeout { after: limit }),
            },
            None => call.await,
        };
        self.record(
            "model/end",
            serde_json::json!({
                "request": request_id,
                "status": answer.as_ref().map_or_else(|e| e.kind(), |_| "ok"),
            }),
        );
        match &answer {
            Ok(reply) => emit(
                self.inner,
                sink,
                EventKind::ModelCallFinished {
                    request_id: request_id.to_string(),
                    usage: reply.usage,
                },
            ),
            Err(error) => emit(
                self.inner,
                sink,
                EventKind::ModelCallFailed {
                    request_id: request_id.to_string(),
                    error: error.clone(),
                },
            ),
        }
        answer
    }

    /// Gives the reply its id, reports its parts and checks it is usable.
    fn accept_reply(
        &mut self,
        reply: ModelReply,
        sink: &mut Sink<'_>,
    ) -> Result<Message, AgentError> {
        let mut message = reply.message;
        message.id = self.next_message_id();
        message.role = Role::Assistant;
        let count = message.tool_calls().count();
        if count > limits::TOOL_CALLS_PER_REPLY_MAX {
            return Err(AgentError::TooManyToolCalls {
                count,
                max: limits::TOOL_CALLS_PER_REPLY_MAX,
            });
        }
        for part in &message.parts {
            let kind = match part {
                ContentPart::Thinking { text, .. } => EventKind::Thinking { text: text.clone() },
                ContentPart::Text { text } => EventKind::Text { text: text.clone() },
                ContentPart::ToolCall(call) => EventKind::ToolCall { call: call.clone() },
                ContentPart::ToolResult(_)
                | ContentPart::Media { .. }
                | ContentPart::Image(_)
                | ContentPart::RedactedThinking { .. } => continue,
            };
            emit(self.inner, sink, kind);
        }
        Ok(message)
    }

    /// Checks permission for each call, runs the allowed ones concurrently, and records every
    /// result in call order.
    async fn execute_tools(&mut self, calls: &[ToolCall], sink: &mut Sink<'_>) {
        let context = ToolContext {
            agent_id: self.inner.agent_id.clone(),
            runtime: self.runtime.clone(),
            call_id: self.call_id.clone(),
        };
        let executions = calls
            .iter()
            .map(|call| execute_one(self.inner, call, &context));
        let outcomes = join_all(executions).await;
        for (call, (outcome, denied)) in calls.iter().zip(outcomes) {
            let result = ToolResult {
                call_id: call.id.clone(),
                tool_name: call.name.clone(),
                outputs: outcome.outputs,
                is_error: outcome.is_error,
                metadata: outcome.metadata,
            };
            self.record(
                "tool/call",
                serde_json::json!({
                    "call": result.call_id,
                    "tool": result.tool_name,
                    "status": match (denied, result.is_error) {
                        (true, _) => "denied",
                        (false, true) => "error",
                        (false, false) => "ok",
                    },
                    "output_chars": result.text_chars(),
                }),
            );
            emit(
                self.inner,
                sink,
                EventKind::ToolResult {
                    result: result.clone(),
                    denied,
                },
            );
            let id = self.next_message_id();
            self.history.push(Message::new(
                id,
                Role::Tool,
                vec![ContentPart::ToolResult(result)],
            ));
        }
    }
}

/// Runs one tool call after its permission check; returns the outcome and whether it was denied.
async fn execute_one(
    inner: &AgentInner,
    call: &ToolCall,
    context: &ToolContext,
) -> (ToolOutcome, bool) {
    if let Permission::Deny { reason } = inner.permissions.check(call, &context.runtime) {
        return (ToolOutcome::error(reason), true);
    }
    let Some(tool) = inner.tools.get(&call.name) else {
        let available: Vec<String> = inner
            .tools
            .schemas()
            .iter()
            .map(|s| s.name.clone())
            .collect();
        let message = format!(
            "unknown tool `{}`; available tools: {}",
            call.name,
            if available.is_empty() {
                "none".to_string()
            } else {
                available.join(", ")
            }
        );
        return (ToolOutcome::error(message), false);
    };
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.name),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
    );
    (tool.call(call, context).instrument(span).await, false)
}
