//! The pipeline's top function: one reasoning step's preparation, in the specification's order
//! — load the dynamic sources, offload oversized tool results, compact the conversation within
//! what is left, project task and plan state, then [`crate::context::prepare`] (layout,
//! omission, counting, pairing and budget validation, the manifest) — and the delivery of its
//! manifest to the observer, the event stream and the session log. The plain ReAct request
//! (none of it) is here too.

use std::sync::Arc;

use super::{Call, Conflict, Sink, emit};

use crate::agent::compact::Force;
use crate::agent::events::{CONTEXT_BUILD_EVENT, ContextBuildEvent, CustomValue, EventKind};
use crate::agent::{AgentError, AgentInner};
use crate::context::block::Material;
use crate::context::manifest::{ContextManifest, Validation};
use crate::context::offload;
use crate::context::omission::SelectionPolicy;
use crate::context::source::{ContextRequest, load_all};
use crate::context::{
    PrepareError, PrepareInput, Prepared, Rejected, Transform, conversation_allowance, prepare,
};
use crate::message::{Message, ToolSchema};
use crate::model::{ModelInfo, ModelRequest, Purpose};
use crate::session::Payload;
use crate::shared_vec::SharedVec;
use crate::storage::WorkspacePath;

/// What one preparation reads that differs from request to request: the request, its model,
/// material, tools and omission order. The agent supplies the rest (System prompt, estimator,
/// budget, pairing check) in [`PrepareRequest::input`], the one place a [`PrepareInput`] is
/// built.
#[derive(Clone, Copy)]
pub(in crate::agent) struct PrepareRequest<'a> {
    pub call_id: &'a str,
    pub purpose: Purpose,
    pub model: &'a ModelInfo,
    pub materials: &'a [Material],
    pub tools: &'a Arc<[ToolSchema]>,
    pub selection: Option<&'a dyn SelectionPolicy>,
}

impl<'a> PrepareRequest<'a> {
    /// The preparation input of this request over `history` and `projections`, with the
    /// transforms already applied and the agent's System prompt, estimator, budget and pairing.
    pub(in crate::agent) fn input(
        self,
        inner: &'a AgentInner,
        transforms: &'a [Transform],
        history: &'a [Message],
        projections: &'a [Message],
    ) -> PrepareInput<'a> {
        PrepareInput {
            call_id: self.call_id,
            purpose: self.purpose,
            model: self.model,
            system_prompt: inner.sys_prompt.as_deref(),
            materials: self.materials,
            transforms,
            history: history.into(),
            projections,
            tools: self.tools,
            estimator: inner.policy.estimator.as_ref(),
            budget: inner.policy.budget(),
            pairing: inner.pairing,
            selection: self.selection,
        }
    }
}

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
        let (materials, mut transforms) = self.load_materials(request_id, sink).await?;
        let written = self.offload_results(&mut transforms).await;
        let tools = inner.tools.schemas();
        let request = PrepareRequest {
            call_id: request_id,
            purpose: Purpose::Reasoning,
            model: inner.model.info(),
            materials: &materials,
            tools: &tools,
            selection: inner.selection.as_deref(),
        };
        let summarised = self.compact(request, force, &mut transforms, sink).await;
        // Task and plan state are projected after compaction, so a receipt the summary removed is
        // reconstructed from state.
        let projection = inner
            .task
            .project(&self.runtime, &self.history, Purpose::Reasoning);
        transforms.extend(projection.transforms.iter().cloned());
        let input = request.input(inner, &transforms, &projection.view, &projection.transient);
        let mut outcome = prepare(&input);
        if let Ok(prepared) = &outcome
            && (task_state.revision() != revision_at_start
                || projection
                    .revision
                    .is_some_and(|seen| seen != revision_at_start))
        {
            // Task or plan state changed while this request was prepared: never commit over it.
            outcome = Err(reject_passed(prepared, PrepareError::StateConflict));
        }
        // Commit now, with no await between the checks and the commit. A history another
        // writer committed meanwhile is kept, never overwritten.
        let mut conflict = false;
        if let Ok(prepared) = &outcome
            && let Err(Conflict) = self.commit()
        {
            conflict = true;
            outcome = Err(reject_passed(prepared, PrepareError::HistoryConflict));
        }
        self.deliver(outcome, projection.revision, conflict, &written, sink)
            .await
            .map(|prepared| (prepared, summarised))
    }

    /// This step's materials (the agent's instructions, the call's workspace material, then the
    /// dynamic sources) and the transforms made while loading them. A source failure is
    /// reported as a rejected build.
    async fn load_materials(
        &self,
        request_id: &str,
        sink: &mut Sink<'_>,
    ) -> Result<(Vec<Material>, Vec<Transform>), AgentError> {
        let inner = self.inner;
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
        Ok((materials, transforms))
    }

    /// Moves oversized tool results to the workspace when offload is configured, adding its
    /// transforms to `transforms`. Returns the files written.
    async fn offload_results(&mut self, transforms: &mut Vec<Transform>) -> Vec<WorkspacePath> {
        let inner = self.inner;
        match &inner.offload {
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
        }
    }

    /// When compaction is configured, reduces the conversation within the allowance `request`
    /// leaves it (as projected before compaction), adding the stage's transforms to
    /// `transforms`. Returns whether a summary replaced part of the conversation.
    async fn compact(
        &mut self,
        request: PrepareRequest<'_>,
        force: Option<Force>,
        transforms: &mut Vec<Transform>,
        sink: &mut Sink<'_>,
    ) -> bool {
        let inner = self.inner;
        if inner.compaction.is_none() {
            return false;
        }
        let before = inner
            .task
            .project(&self.runtime, &self.history, Purpose::Reasoning);
        let (allowance, _) =
            conversation_allowance(&request.input(inner, &[], &before.view, &before.transient));
        let reduced = self.reduce(request.call_id, allowance, force, sink).await;
        transforms.extend(reduced.transforms);
        reduced.summarised
    }

    /// Reports the build, passed or rejected, with the task revision it was projected from. A
    /// rejected build leaves no orphan offload file behind; after a history conflict the
    /// offloaded results are in the session log, so their files stay.
    async fn deliver(
        &self,
        outcome: Result<Prepared, Box<Rejected>>,
        task_revision: Option<u64>,
        conflict: bool,
        written: &[WorkspacePath],
        sink: &mut Sink<'_>,
    ) -> Result<Prepared, AgentError> {
        match outcome {
            Ok(mut prepared) => {
                prepared.manifest.task_revision = task_revision;
                self.report_build(sink, &mut prepared.manifest, None);
                Ok(prepared)
            }
            Err(mut rejected) => {
                if !conflict {
                    offload::collect(self.inner.workspace.as_ref(), written).await;
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

/// A passed preparation turned into a rejection for `error` (a conflict found before the
/// commit), its manifest recording the matching validation.
fn reject_passed(prepared: &Prepared, error: PrepareError) -> Box<Rejected> {
    let mut manifest = prepared.manifest.clone();
    manifest.validation = error.validation();
    Box::new(Rejected { error, manifest })
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
