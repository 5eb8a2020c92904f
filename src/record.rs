//! Recording what a real provider answered, as mock-model turns.
//!
//! [`RecordingModel`] wraps any [`Model`] and keeps, for every request, the turn a mock model
//! would need to give the same answer: the reply (thinking, text, tool calls with the
//! provider's own call ids) or the error (the provider's real status and body, which the
//! mock replays through the same classifier). `ctxbed record` runs a scenario through it
//! against a real endpoint and writes the turns with [`crate::scenario::write::mock_toml`], so
//! a behaviour seen once becomes a deterministic scenario.
//!
//! Errors without an HTTP body are recorded as the nearest scripted error: a timeout as
//! `timeout` after the same time, a malformed reply as `malformed` with its raw snippet, a
//! connection fault (no status) as `transient` with status 503.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use crate::scenario::file::Scenario;
use crate::scenario::runner::{ObservedModel, RunError, RunOutput, run_live};
use ctxbed_harness::message::ContentPart;
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::model::{Model, ModelError, ModelInfo, ModelReply, ModelRequest};
use ctxbed_providers::{HttpProvider, ProviderConfig, ProviderError, ProviderKind};
use ctxbed_sim::mock::{
    MockScript, MockTurn, ScriptedCall, ScriptedError, SummaryMode, TurnAction,
};
use ctxbed_sim::rng::Stream;

/// A finished recording: the mock model that replays it and the live run's output.
#[derive(Debug)]
pub struct Recording {
    /// The recorded mock model, named as asked, ready for
    /// [`mock_toml`](crate::scenario::write::mock_toml).
    pub script: MockScript,
    /// The run against the real provider (its trace shows what the provider answered).
    pub output: RunOutput,
}

/// Why a recording could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Runs `scenario` against the provider `config` describes, and returns its answers as the
/// mock model `name`.
///
/// Each request is sent once (`config.retry` is overridden to one attempt), so every error
/// the provider returns is recorded as it happened; the jitter seed is the scenario's
/// retry-jitter stream's. The
/// recorded model keeps the scenario mock's window, output limit, tokenizer and strictness,
/// imitates the recorded provider, and answers summary requests from its script
/// (`summaries = "scripted"`), since the real provider answered them too.
///
/// # Errors
/// The key variable is missing, the URL is unusable, or the scenario could not be set up.
pub fn record(
    scenario: &Scenario,
    mut config: ProviderConfig,
    name: &str,
) -> Result<Recording, RecordError> {
    config.retry.attempts_max = 1;
    config.retry.seed = scenario.seed.stream(Stream::RetryJitter).seed();
    if config.context_window.is_none() {
        config.context_window = scenario.mock.info.context_window;
    }
    let kind = config.kind;
    let provider = Arc::new(HttpProvider::from_env(config)?);
    let recorder = Arc::new(RecordingModel::new(provider));
    let output = run_live(scenario, recorder.clone())?;
    let script = MockScript {
        info: ModelInfo {
            name: name.to_string(),
            context_window: scenario.mock.info.context_window,
            max_output_tokens: scenario.mock.info.max_output_tokens,
        },
        imitates: match kind {
            ProviderKind::OpenAi => Provider::OpenAi,
            ProviderKind::Anthropic => Provider::Anthropic,
        },
        vocabulary: scenario.mock.vocabulary,
        strict: scenario.mock.strict,
        summaries: SummaryMode::Scripted,
        turns: recorder.turns(),
        file: format!("mock-models/{name}.toml"),
    };
    Ok(Recording { script, output })
}

/// A model wrapper that records each answer as a [`MockTurn`].
pub struct RecordingModel {
    inner: Arc<dyn Model>,
    turns: Mutex<Vec<MockTurn>>,
    received: Mutex<Vec<ModelRequest>>,
}

impl std::fmt::Debug for RecordingModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingModel")
            .field("model", &self.inner.info().name)
            .field("turns", &lock(&self.turns).len())
            .finish()
    }
}

impl RecordingModel {
    /// Records the answers of `inner`.
    pub fn new(inner: Arc<dyn Model>) -> Self {
        RecordingModel {
            inner,
            turns: Mutex::new(Vec::new()),
            received: Mutex::new(Vec::new()),
        }
    }

    /// The turns recorded so far, in request order.
    pub fn turns(&self) -> Vec<MockTurn> {
        lock(&self.turns).clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The turn that replays `outcome`.
pub fn turn_for(outcome: &Result<ModelReply, ModelError>) -> MockTurn {
    match outcome {
        Ok(reply) => MockTurn::new(reply_action(reply)),
        Err(ModelError::Timeout { after }) => {
            let mut turn = MockTurn::new(TurnAction::Error(ScriptedError::Timeout));
            turn.latency = *after;
            turn
        }
        Err(error) => MockTurn::new(TurnAction::Error(scripted_error(error))),
    }
}

fn reply_action(reply: &ModelReply) -> TurnAction {
    let mut thinking: Option<String> = None;
    let mut text: Option<String> = None;
    let mut tool_calls = Vec::new();
    let append = |slot: &mut Option<String>, piece: &str| match slot {
        Some(existing) => {
            existing.push('\n');
            existing.push_str(piece);
        }
        None => *slot = Some(piece.to_string()),
    };
    for part in &reply.message.parts {
        match part {
            ContentPart::Text { text: piece } => append(&mut text, piece),
            ContentPart::Thinking { text: piece } => append(&mut thinking, piece),
            ContentPart::ToolCall(call) => tool_calls.push(ScriptedCall {
                id: Some(call.id.clone()),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            }),
            ContentPart::ToolResult(_) | ContentPart::Media { .. } => {}
        }
    }
    if thinking.is_none() && text.is_none() && tool_calls.is_empty() {
        // An empty reply replays as an empty text.
        text = Some(String::new());
    }
    TurnAction::Reply {
        thinking,
        text,
        tool_calls,
    }
}

fn scripted_error(error: &ModelError) -> ScriptedError {
    let raw = |status: u16, body: &str| ScriptedError::Raw {
        status,
        body: body.to_string(),
    };
    match error {
        // A refusal before any HTTP exchange (status 0) has no status a mock can send.
        ModelError::Rejected { status, body } if !(100..=599).contains(status) => {
            ScriptedError::Malformed(body.clone())
        }
        ModelError::ContextOverflow { status, body, .. }
        | ModelError::PairingRejected { status, body, .. }
        | ModelError::Rejected { status, body } => raw(*status, body),
        ModelError::Transient {
            status: Some(status),
            body,
        } => raw(*status, body),
        ModelError::RateLimited { body, .. } => raw(429, body),
        ModelError::Transient { status: None, .. } => ScriptedError::Transient(503),
        ModelError::MalformedReply { raw, .. } => ScriptedError::Malformed(raw.clone()),
        ModelError::Timeout { .. } => ScriptedError::Timeout,
        ModelError::ScriptExhausted { .. } => ScriptedError::Transient(503),
    }
}

#[async_trait]
impl Model for RecordingModel {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }

    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        lock(&self.received).push(request.clone());
        let outcome = self.inner.call(request).await;
        lock(&self.turns).push(turn_for(&outcome));
        outcome
    }
}

impl ObservedModel for RecordingModel {
    fn take_received(&self) -> Vec<ModelRequest> {
        std::mem::take(&mut *lock(&self.received))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxbed_harness::message::{Message, Role};
    use std::time::Duration;

    #[test]
    fn replies_and_errors_become_turns() {
        let reply = ModelReply {
            message: Message::new(
                "",
                Role::Assistant,
                vec![
                    ContentPart::Thinking { text: "hmm".into() },
                    ContentPart::text("Let me look."),
                    ContentPart::tool_call("call_7", "execute", serde_json::json!({"c": "ls"})),
                ],
            ),
            usage: None,
        };
        let TurnAction::Reply {
            thinking,
            text,
            tool_calls,
        } = turn_for(&Ok(reply)).action
        else {
            panic!("not a reply");
        };
        assert_eq!(thinking.as_deref(), Some("hmm"));
        assert_eq!(text.as_deref(), Some("Let me look."));
        assert_eq!(tool_calls[0].id.as_deref(), Some("call_7"));

        let overflow = ModelError::ContextOverflow {
            provider: "openai".into(),
            status: 400,
            body: "{\"error\":{}}".into(),
            actual_tokens: None,
            max_tokens: None,
        };
        assert_eq!(
            turn_for(&Err(overflow)).action,
            TurnAction::Error(ScriptedError::Raw {
                status: 400,
                body: "{\"error\":{}}".into()
            })
        );
        let timeout = turn_for(&Err(ModelError::Timeout {
            after: Duration::from_secs(3),
        }));
        assert_eq!(timeout.latency, Duration::from_secs(3));
        assert_eq!(timeout.action, TurnAction::Error(ScriptedError::Timeout));
    }
}
