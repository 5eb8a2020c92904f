//! The reasoning–tool–result loop of one call.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard, PoisonError};

use futures_util::future::join_all;

use super::compact::Force;
use super::events::{AgentEvent, CONTEXT_BUILD_EVENT, ContextBuildEvent, CustomValue, EventKind};
use super::{AgentError, AgentInner, RestoreError, SessionKey, SessionState};
use crate::context::block::Material;
use crate::context::manifest::{ContextManifest, Validation};
use crate::context::offload;
use crate::context::source::{ContextRequest, load_all};
use crate::context::workspace::{self, WorkspaceMaterial};
use crate::context::{
    PrepareError, PrepareInput, Prepared, Rejected, conversation_allowance, prepare,
};
use crate::limits;
use crate::message::{ContentPart, Message, Role, ToolCall, ToolResult};
use crate::model::{ModelError, ModelReply, ModelRequest, Purpose};
use crate::runtime::RuntimeContext;
use crate::session::{Payload, SessionLogKey, SessionRecord};
use crate::shared_vec::SharedVec;
use crate::tools::{Permission, ToolContext, ToolOutcome};

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
    input: String,
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
        Err(error) => {
            let outcome = Err(AgentError::Restore(error));
            emit(
                inner,
                sink,
                EventKind::RunFinished {
                    call_id,
                    outcome: outcome.clone(),
                },
            );
            return outcome;
        }
    };
    let workspace = if inner.plain {
        WorkspaceMaterial::default()
    } else {
        workspace::load(
            inner.workspace.as_ref(),
            inner.policy.estimator.as_ref(),
            inner.max_context_tokens,
        )
        .await
    };
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
    let user = Message::user(call.next_message_id(), input);
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
    emit(
        inner,
        sink,
        EventKind::RunFinished {
            call_id: call.call_id.clone(),
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

/// What a call starts from: the committed history and the version it descends from.
pub(super) struct SessionStart {
    pub(super) history: Vec<Message>,
    pub(super) version: u64,
}

impl SessionStart {
    /// Copies only what a call needs; the log's bookkeeping (one entry per message) stays put.
    fn of(state: &SessionState) -> Self {
        SessionStart {
            history: state.history.clone(),
            version: state.version,
        }
    }
}

/// The session's committed state: from memory, or restored from the session log the first time
/// this agent sees the session (a new process over the same storage). The state is installed
/// in memory before the call's start is returned, so a session is restored once.
pub(super) async fn session_state(
    inner: &AgentInner,
    key: &SessionKey,
    runtime: &RuntimeContext,
    sink: &mut Sink<'_>,
) -> Result<SessionStart, RestoreError> {
    if let Some(state) = lock(&inner.sessions).get(key) {
        return Ok(SessionStart::of(state));
    }
    let log_key = SessionLogKey {
        agent_id: inner.agent_id.clone(),
        user_id: runtime.user_id.clone(),
        session_id: runtime.session_id.clone(),
    };
    let restored = match &inner.session_log {
        Some(log) => super::restore::restore(inner, log.as_ref(), &log_key, runtime).await?,
        None => None,
    };
    let mut sessions = lock(&inner.sessions);
    if let Some(state) = sessions.get(key) {
        // Another call of this agent restored or created the session meanwhile.
        return Ok(SessionStart::of(state));
    }
    let state = match restored {
        Some(restored) => {
            emit(
                inner,
                sink,
                EventKind::SessionRestored {
                    records: restored.records,
                    messages: restored.state.history.len(),
                    torn: restored.torn,
                },
            );
            restored.state
        }
        None => SessionState::default(),
    };
    let start = SessionStart::of(&state);
    sessions.insert(key.clone(), state);
    Ok(start)
}

/// Records what the session log lacks of a committed session state: each message that is new,
/// or changed in place (offload, pruning, argument truncation) since it was logged, as a
/// `message` record; then a `checkpoint` naming the working history, when its ids, the id
/// counter or the task revision moved since the last one.
///
/// `previous` is the history committed before, all of it logged already: a message equal to the
/// one at its position there is skipped without serialising it.
pub(super) fn write_durable(
    inner: &AgentInner,
    key: &SessionLogKey,
    call_id: &str,
    state: &mut SessionState,
    previous: &[Message],
) {
    let Some(log) = &inner.session_log else {
        return;
    };
    let record = |kind: &str, payload: serde_json::Value| SessionRecord {
        kind: kind.to_string(),
        call_id: call_id.to_string(),
        payload: payload.into(),
    };
    log_messages(
        log.as_ref(),
        key,
        call_id,
        &mut state.logged,
        &state.history,
        previous,
    );
    let runtime = RuntimeContext {
        user_id: key.user_id.clone(),
        session_id: key.session_id.clone(),
        ..RuntimeContext::default()
    };
    let task = inner.task.state_of(&runtime).snapshot();
    let print = super::restore::checkpoint_print(&state.history, state.messages_created, &task);
    if state.checkpointed != Some(print) {
        state.checkpointed = Some(print);
        state.checkpointed_task_revision = task.revision();
        log.append(
            key,
            record(
                "checkpoint",
                super::restore::checkpoint_payload(&state.history, state.messages_created, &task),
            ),
        );
    }
}

/// Flushes the session log, when there is one. A failure of `key`'s own session is returned
/// (its detail); another session's failure is left to that session's writers.
pub(super) async fn flush_session(
    inner: &AgentInner,
    key: &SessionLogKey,
    writer: &str,
) -> Result<(), String> {
    let Some(log) = &inner.session_log else {
        return Ok(());
    };
    let Err(error) = log.flush().await else {
        return Ok(());
    };
    let Some((_, own)) = error.failed.iter().find(|(failed, _)| failed == key) else {
        tracing::warn!(writer, %error, "another session's log could not be flushed; its records stay pending");
        return Ok(());
    };
    let detail = own.to_string();
    tracing::warn!(writer, %detail, "session log flush failed; records stay pending");
    Err(detail)
}

/// Appends a `message` record for each of `messages` whose logged version differs from it
/// (new, or changed in place), and returns their ids. A message equal to the one at the same
/// position of `unchanged` (a history whose messages are all logged) is skipped cheaply.
fn log_messages(
    log: &dyn crate::session::SessionLog,
    key: &SessionLogKey,
    call_id: &str,
    logged: &mut std::collections::BTreeMap<String, u64>,
    messages: &[Message],
    unchanged: &[Message],
) -> Vec<String> {
    let mut written = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if unchanged.get(index) == Some(message) && logged.contains_key(&message.id) {
            continue;
        }
        let payload = super::restore::message_payload(message);
        let print = super::restore::fingerprint_payload(&payload);
        if logged.get(&message.id) == Some(&print) {
            continue;
        }
        logged.insert(message.id.clone(), print);
        written.push(message.id.clone());
        log.append(
            key,
            SessionRecord {
                kind: crate::session::MESSAGE_RECORD.to_string(),
                call_id: call_id.to_string(),
                payload,
            },
        );
    }
    written
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

    fn log_key(&self) -> SessionLogKey {
        SessionLogKey {
            agent_id: self.inner.agent_id.clone(),
            user_id: self.runtime.user_id.clone(),
            session_id: self.runtime.session_id.clone(),
        }
    }

    /// Records a checkpoint of the session's committed state when the task revision moved
    /// since the last one (nothing when it did not); the working history is not committed.
    fn checkpoint_task_state(&self) {
        let log_key = self.log_key();
        let revision = self.inner.task.state_of(&self.runtime).revision();
        let mut sessions = lock(&self.inner.sessions);
        let state = sessions.entry(self.key.clone()).or_default();
        if revision == state.checkpointed_task_revision {
            return;
        }
        let committed = state.history.clone();
        write_durable(self.inner, &log_key, &self.call_id, state, &committed);
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

    /// Loads this step's sources, offloads, compacts, then prepares the request; reports the
    /// manifest either way. Returns whether a summary replaced part of the conversation.
    async fn prepare(
        &mut self,
        request_id: &str,
        force: Option<Force>,
        sink: &mut Sink<'_>,
    ) -> Result<(Prepared, bool), AgentError> {
        let inner = self.inner;
        // The task/plan state this preparation starts from; any change before the commit is a
        // conflict, whatever the sources and compaction awaited in between.
        let task_state = inner.task.state_of(&self.runtime);
        let revision_at_start = task_state.revision();
        let request = ContextRequest {
            agent_id: Some(inner.agent_id.clone()),
            user_id: self.runtime.user_id.clone(),
            session_id: self.runtime.session_id.clone(),
            call_id: request_id.to_string(),
            purpose: Purpose::Reasoning,
        };
        let loaded = match load_all(&inner.sources, &request).await {
            Ok(loaded) => loaded,
            Err(error) => {
                let manifest = ContextManifest::early_failure(
                    request_id,
                    Purpose::Reasoning,
                    &inner.model.info().name,
                    Validation::BuildFailed,
                );
                let mut rejected = Box::new(Rejected {
                    error: PrepareError::SourceFailed(error),
                    manifest,
                });
                self.report_build(sink, &mut rejected.manifest, Some(rejected.error.kind()));
                return Err(AgentError::Prepare(rejected));
            }
        };
        let mut materials: Vec<Material> = inner.instructions.clone();
        materials.extend(self.workspace.materials.iter().cloned());
        materials.extend(loaded.materials);
        let mut transforms = self.workspace.transforms.clone();
        transforms.extend(loaded.transforms);
        let written = match &inner.offload {
            Some(config) => {
                let outcome = offload::offload(
                    &mut self.history,
                    inner.workspace.as_ref(),
                    config,
                    &inner.name,
                )
                .await;
                transforms.extend(outcome.transforms);
                outcome.written
            }
            None => Vec::new(),
        };
        let tools = inner.tools.schemas();
        let mut summarised = false;
        if inner.compaction.is_some() {
            let before = inner
                .task
                .project(&self.runtime, &self.history, Purpose::Reasoning);
            let (allowance, _) = conversation_allowance(&PrepareInput {
                call_id: request_id,
                purpose: Purpose::Reasoning,
                model: inner.model.info(),
                system_prompt: inner.sys_prompt.as_deref(),
                materials: &materials,
                transforms: &[],
                history: (&before.view).into(),
                projections: &before.transient,
                tools: &tools,
                estimator: inner.policy.estimator.as_ref(),
                budget: inner.policy.budget(),
                pairing: inner.pairing,
                selection: inner.selection.as_deref(),
            });
            let reduced = self.reduce(request_id, allowance, force, sink).await;
            transforms.extend(reduced.transforms);
            summarised = reduced.summarised;
        }
        // Task and plan state are projected after compaction, so a receipt the summary removed is
        // reconstructed from state.
        let projection = inner
            .task
            .project(&self.runtime, &self.history, Purpose::Reasoning);
        transforms.extend(projection.transforms.iter().cloned());
        let input = PrepareInput {
            call_id: request_id,
            purpose: Purpose::Reasoning,
            model: inner.model.info(),
            system_prompt: inner.sys_prompt.as_deref(),
            materials: &materials,
            transforms: &transforms,
            history: (&projection.view).into(),
            projections: &projection.transient,
            tools: &tools,
            estimator: inner.policy.estimator.as_ref(),
            budget: inner.policy.budget(),
            pairing: inner.pairing,
            selection: inner.selection.as_deref(),
        };
        let mut outcome = prepare(&input);
        if let Ok(prepared) = &outcome
            && (task_state.revision() != revision_at_start
                || projection
                    .revision
                    .is_some_and(|seen| seen != revision_at_start))
        {
            // Task or plan state changed while this request was prepared: never commit over it.
            let mut manifest = prepared.manifest.clone();
            manifest.validation = Validation::StateConflict;
            outcome = Err(Box::new(Rejected {
                error: PrepareError::StateConflict,
                manifest,
            }));
        }
        // Commit now, with no await between the checks and the commit. A history another
        // writer committed meanwhile is kept, never overwritten.
        let mut conflict = false;
        if let Ok(prepared) = &outcome
            && let Err(Conflict) = self.commit()
        {
            conflict = true;
            let mut manifest = prepared.manifest.clone();
            manifest.validation = Validation::HistoryConflict;
            outcome = Err(Box::new(Rejected {
                error: PrepareError::HistoryConflict,
                manifest,
            }));
        }
        match outcome {
            Ok(mut prepared) => {
                prepared.manifest.task_revision = projection.revision;
                self.report_build(sink, &mut prepared.manifest, None);
                Ok((prepared, summarised))
            }
            Err(mut rejected) => {
                // A rejected build leaves no orphan offload file behind. After a history
                // conflict the offloaded results are in the session log, so their files stay.
                if !conflict {
                    offload::collect(inner.workspace.as_ref(), &written).await;
                }
                self.report_build(sink, &mut rejected.manifest, Some(rejected.error.kind()));
                Err(AgentError::Prepare(rejected))
            }
        }
    }

    /// Writes pending session-log records to durable storage (a no-op for the in-memory log).
    /// A failure keeps the records pending for the next flush. When this call's own session
    /// failed, what the call committed is not durable: the failure is reported as an event and
    /// returned, so the call never acknowledges a commit that a restart would lose. Another
    /// session's failure is that session's calls' concern.
    async fn flush_log(&self, sink: &mut Sink<'_>) -> Result<(), AgentError> {
        let Err(detail) = flush_session(self.inner, &self.log_key(), &self.call_id).await else {
            return Ok(());
        };
        emit(
            self.inner,
            sink,
            EventKind::SessionLogFailed {
                detail: detail.clone(),
            },
        );
        Err(AgentError::SessionLog { detail })
    }

    /// Appends a record to the session log, when there is one.
    pub(super) fn record(&self, kind: &str, payload: impl Into<Payload>) {
        let Some(log) = &self.inner.session_log else {
            return;
        };
        log.append(
            &self.log_key(),
            SessionRecord {
                kind: kind.to_string(),
                call_id: self.call_id.clone(),
                payload: payload.into(),
            },
        );
    }

    /// Delivers a manifest three ways: observer, `context_build` event, session-log record.
    pub(super) fn report_build(
        &self,
        sink: &mut Sink<'_>,
        manifest: &mut ContextManifest,
        error_kind: Option<&'static str>,
    ) {
        let inner = self.inner;
        manifest.policy_version = Some(inner.policy_version.clone());
        let manifest = &*manifest;
        if let Some(observer) = &inner.policy.observer {
            // A panicking observer must never fail a valid build.
            let observed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                observer.observe(manifest)
            }));
            if observed.is_err() {
                tracing::warn!(call_id = %manifest.call_id, "manifest observer panicked; ignored");
            }
        }
        let event = ContextBuildEvent {
            call_id: manifest.call_id.clone(),
            purpose: manifest.purpose,
            status: if error_kind.is_none() {
                "passed"
            } else {
                "failed"
            },
            manifest: manifest.clone(),
            error_kind,
        };
        if inner.session_log.is_some() {
            // The record holds the whole manifest, one item per message: build it only when a
            // log will keep it.
            self.record("context/build", build_payload(&event));
        }
        emit(
            inner,
            sink,
            EventKind::Custom {
                name: CONTEXT_BUILD_EVENT,
                value: CustomValue::ContextBuild(Box::new(event)),
            },
        );
    }

    /// The plain ReAct request: the System prompt and the whole conversation, as they are. No
    /// sources, workspace material, budget, offload, compaction, projections or validation.
    fn plain_request(&self, request_id: &str) -> ModelRequest {
        let inner = self.inner;
        let mut messages = SharedVec::new();
        if let Some(prompt) = inner.sys_prompt.as_deref().filter(|p| !p.trim().is_empty()) {
            messages.push_back(Message::system(crate::context::SYSTEM_MESSAGE_ID, prompt));
        }
        messages.extend(self.history.iter().cloned());
        ModelRequest {
            call_id: request_id.to_string(),
            purpose: Purpose::Reasoning,
            messages,
            tools: inner.tools.schemas(),
            max_output_tokens: inner.policy.max_output_tokens,
        }
    }

    async fn ask_model(
        &self,
        request_id: &str,
        request: &ModelRequest,
        sink: &mut Sink<'_>,
    ) -> Result<ModelReply, AgentError> {
        emit(
            self.inner,
            sink,
            EventKind::ModelCallStarted {
                request_id: request_id.to_string(),
            },
        );
        self.record(
            "model/start",
            serde_json::json!({ "request": request_id, "purpose": "reasoning" }),
        );
        let call = self.inner.model.call(request);
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
        match answer {
            Ok(reply) => {
                emit(
                    self.inner,
                    sink,
                    EventKind::ModelCallFinished {
                        request_id: request_id.to_string(),
                        usage: reply.usage,
                    },
                );
                Ok(reply)
            }
            Err(error) => {
                emit(
                    self.inner,
                    sink,
                    EventKind::ModelCallFailed {
                        request_id: request_id.to_string(),
                        error: error.clone(),
                    },
                );
                Err(AgentError::Model(error))
            }
        }
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
                ContentPart::Thinking { text } => EventKind::Thinking { text: text.clone() },
                ContentPart::Text { text } => EventKind::Text { text: text.clone() },
                ContentPart::ToolCall(call) => EventKind::ToolCall { call: call.clone() },
                ContentPart::ToolResult(_) | ContentPart::Media { .. } => continue,
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
    (tool.call(call, context).await, false)
}

/// The payload of a `context/build` record, serialised straight from the event:
/// `{"event": {"name": "context_build", "value": {call_id, purpose, status, context_manifest,
/// error_kind}}}`.
fn build_payload(event: &ContextBuildEvent) -> Payload {
    #[derive(serde::Serialize)]
    struct Record<'a> {
        event: Named<'a>,
    }
    #[derive(serde::Serialize)]
    struct Named<'a> {
        name: &'static str,
        value: Build<'a>,
    }
    #[derive(serde::Serialize)]
    struct Build<'a> {
        call_id: &'a str,
        purpose: &'static str,
        status: &'static str,
        context_manifest: &'a ContextManifest,
        error_kind: Option<&'static str>,
    }
    let record = Record {
        event: Named {
            name: CONTEXT_BUILD_EVENT,
            value: Build {
                call_id: &event.call_id,
                purpose: event.purpose.as_str(),
                status: event.status,
                context_manifest: &event.manifest,
                error_kind: event.error_kind,
            },
        },
    };
    Payload::new(&record).expect("a manifest serialises: its fields are strings and numbers")
}
