//! [`RecordingModel`]: a model wrapper that keeps, for every request, the mock-model turn that
//! would give the same answer: the reply (thinking, text, tool calls with the provider's own call
//! ids) or the error (the provider's real status and body, which a mock replays through the same
//! classifier).
//!
//! Each answer keeps the time it took (whole milliseconds) as the turn's latency, so a replay
//! takes the same simulated time. Errors without an HTTP body are recorded as the nearest
//! scripted error: a timeout as `timeout` after the same time, a malformed reply as `malformed`
//! with its raw snippet. An exchange that got no HTTP status at all (a refused or reset
//! connection, an unsupported scheme) is not an answer of the model: it is kept apart as a
//! [`NoAnswer`], and a recording with one is not to be written.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;

use crate::mock::{MockTurn, ScriptedCall, ScriptedError, TurnAction};
use ctxbed_harness::message::ContentPart;
use ctxbed_harness::model::{Model, ModelError, ModelInfo, ModelReply, ModelRequest};

/// A model wrapper that records each answer as a [`MockTurn`].
pub struct RecordingModel {
    inner: Arc<dyn Model>,
    turns: Mutex<Vec<MockTurn>>,
    received: Mutex<Vec<ModelRequest>>,
    no_answers: Mutex<Vec<NoAnswer>>,
}

/// A request that reached no model: the connection failed, or the request was refused before
/// any HTTP exchange (e.g. an `https` URL on a build without TLS).
#[derive(Debug, Clone, PartialEq)]
pub struct NoAnswer {
    /// 1-based position of the request among all the wrapper received.
    pub request: usize,
    /// What went wrong, as the provider reported it.
    pub error: ModelError,
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
            no_answers: Mutex::new(Vec::new()),
        }
    }

    /// The turns recorded so far, in request order.
    pub fn turns(&self) -> Vec<MockTurn> {
        lock(&self.turns).clone()
    }

    /// The requests that got no answer from any model, in order.
    pub fn no_answers(&self) -> Vec<NoAnswer> {
        lock(&self.no_answers).clone()
    }

    /// Every request received since the last call, in order.
    pub fn take_received(&self) -> Vec<ModelRequest> {
        std::mem::take(&mut *lock(&self.received))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// True when `error` came from a model (or the server in front of it) rather than from a
/// connection that never carried an HTTP exchange.
fn is_answer(error: &ModelError) -> bool {
    match error {
        ModelError::Transient { status, .. } => status.is_some(),
        ModelError::Rejected { status, .. } => (100..=599).contains(status),
        _ => true,
    }
}

/// The turn that replays `outcome`.
pub fn turn_for(outcome: &Result<ModelReply, ModelError>) -> MockTurn {
    match outcome {
        Ok(reply) => MockTurn {
            usage: reply.usage,
            redacted_thinking: reply
                .message
                .parts
                .iter()
                .any(|part| matches!(part, ContentPart::RedactedThinking { .. })),
            ..MockTurn::new(reply_action(reply))
        },
        Err(ModelError::Timeout { after }) => {
            let mut turn = MockTurn::new(TurnAction::Error(ScriptedError::Timeout));
            turn.latency = *after;
            turn
        }
        Err(ModelError::RateLimited { retry_after, .. }) => MockTurn {
            retry_after: *retry_after,
            ..MockTurn::new(TurnAction::Error(ScriptedError::RateLimit))
        },
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
            ContentPart::Thinking { text: piece, .. } => append(&mut thinking, piece),
            // Replayed redacted: the mock's own data reads back; a provider's stays withheld.
            ContentPart::RedactedThinking { data } => append(
                &mut thinking,
                &crate::mock::redacted_text(data).unwrap_or_default(),
            ),
            ContentPart::ToolCall(call) => tool_calls.push(ScriptedCall {
                id: Some(call.id.clone()),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            }),
            ContentPart::ToolResult(_) | ContentPart::Media { .. } | ContentPart::Image(_) => {}
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
        let started = tokio::time::Instant::now();
        let outcome = self.inner.call(request).await;
        let elapsed = started.elapsed();
        if let Err(error) = &outcome
            && !is_answer(error)
        {
            let recorded = lock(&self.turns).len();
            let mut no_answers = lock(&self.no_answers);
            let request = recorded + no_answers.len() + 1;
            no_answers.push(NoAnswer {
                request,
                error: error.clone(),
            });
            return outcome;
        }
        let mut turn = turn_for(&outcome);
        if !matches!(outcome, Err(ModelError::Timeout { .. })) {
            turn.latency =
                Duration::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
        }
        lock(&self.turns).push(turn);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxbed_harness::message::{Message, Role};
    use std::time::Duration;

    #[test]
    fn the_usage_a_model_reported_is_kept_and_replayed() {
        let usage = ctxbed_harness::model::Usage {
            input_tokens: 1_234,
            output_tokens: 56,
            ..ctxbed_harness::model::Usage::default()
        };
        let reply = ModelReply {
            message: Message::new("", Role::Assistant, vec![ContentPart::text("Done.")]),
            usage: Some(usage),
        };
        let turn = turn_for(&Ok(reply));
        assert_eq!(turn.usage, Some(usage));
        let script = crate::mock::MockScript::new(
            ctxbed_harness::model::ModelInfo {
                name: "replay".into(),
                context_window: None,
                max_output_tokens: None,
            },
            vec![turn],
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let replayed = runtime
            .block_on(crate::mock::MockModel::new(script).call(&ModelRequest {
                call_id: "c".into(),
                purpose: ctxbed_harness::model::Purpose::Reasoning,
                messages: vec![Message::user("u", "hi")].into(),
                tools: Default::default(),
                max_output_tokens: None,
            }))
            .expect("a reply");
        assert_eq!(
            replayed.usage,
            Some(usage),
            "the recorded figures, not the exact count"
        );
    }

    #[test]
    fn replies_and_errors_become_turns() {
        let reply = ModelReply {
            message: Message::new(
                "",
                Role::Assistant,
                vec![
                    ContentPart::thinking("hmm"),
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
