//! The pipeline's top function: one reasoning step's preparation, in the specification's order
//! — load the dynamic sources, offload oversized tool results, compact the conversation within
//! what is left, project task and plan state, then [`crate::context::prepare`] (layout,
//! omission, counting, pairing and budget validation, the manifest) — and the delivery of its
//! manifest to the observer, the event stream and the session log. The plain ReAct request
//! (none of it) is here too.

use super::{Call, Conflict, Sink, emit};

use crate::agent::AgentError;
use crate::agent::compact::Force;
use crate::agent::events::{CONTEXT_BUILD_EVENT, ContextBuildEvent, CustomValue, EventKind};
use crate::context::block::Material;
use crate::context::manifest::{ContextManifest, Validation};
use crate::context::offload;
use crate::context::source::{ContextRequest, load_all};
use crate::context::{
    PrepareError, PrepareInput, Prepared, Rejected, conversation_allowance, prepare,
};
use crate::message::Message;
use crate::model::{ModelRequest, Purpose};
use crate::session::Payload;
use crate::shared_vec::SharedVec;

impl Call<'_> {
    /// Loads this step's sources, offloads, compacts, then prepares the request; reports the
    /// manifest either way. Returns whether a summary replaced part of the conversation.
    pub(super) async fn prepare(
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

    /// Delivers a manifest three ways: observer, `context_build` event, session-log record.
    pub(in crate::agent) fn report_build(
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
    pub(super) fn plain_request(&self, request_id: &str) -> ModelRequest {
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
