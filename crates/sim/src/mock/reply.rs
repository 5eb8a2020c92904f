//! What a mock model answers: the strict provider's checks, scripted errors in the imitated
//! provider's words, replies with generated call ids, and the deterministic summariser
//! ([`summarize`]) and fact extractor ([`extract_facts`]).

use ctxbed_harness::context::pairs::{PairingProblem, find_pairing_problem};
use ctxbed_harness::message::{ContentPart, Message, Role};
use ctxbed_harness::model::classify::classify;
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::model::{ModelError, ModelReply, ModelRequest, Usage};
use ctxbed_harness::tokens::TokenEstimator;

use super::{MockModel, MockTurn, ScriptedError, TurnAction};

impl MockModel {
    /// The next generated call id, in the imitated provider's style (`call_0001`, `toolu_0001`).
    fn next_call_id(&self) -> String {
        let mut cursor = self.lock();
        cursor.call_ids += 1;
        match self.script.imitates {
            Provider::Anthropic => format!("toolu_{:04}", cursor.call_ids),
            _ => format!("call_{:04}", cursor.call_ids),
        }
    }

    /// A provider answer classified as the harness would classify it.
    fn provider_error(&self, status: u16, body: String) -> ModelError {
        classify(self.script.imitates.as_str(), status, &body)
    }

    /// A strict provider's checks: pairing first, then the window.
    pub(super) fn check_request(
        &self,
        request: &ModelRequest,
        tokens: u64,
    ) -> Result<(), ModelError> {
        if let Some(problem) = find_pairing_problem(&request.messages) {
            let provider = self.script.imitates;
            let (status, body) = match problem {
                PairingProblem::CallWithoutResult { index, call_id } => {
                    provider.call_without_result_error(index, &call_id)
                }
                PairingProblem::ResultWithoutCall { index, call_id }
                | PairingProblem::DuplicateCallId { index, call_id } => {
                    provider.result_without_call_error(index, &call_id)
                }
                PairingProblem::BlankId { index } => provider.result_without_call_error(index, ""),
            };
            return Err(self.provider_error(status, body));
        }
        if let Some(window) = self.script.info.context_window {
            let completion = request.max_output_tokens.unwrap_or(0);
            if tokens + completion > window {
                let (status, body) = self
                    .script
                    .imitates
                    .overflow_error_split(tokens, completion, window);
                return Err(self.provider_error(status, body));
            }
        }
        Ok(())
    }

    /// A turn's scripted error, worded as the imitated provider words it (an overflow sized
    /// from the request's count).
    pub(super) fn scripted_error(
        &self,
        turn: &MockTurn,
        error: &ScriptedError,
        tokens: u64,
    ) -> ModelError {
        // The provider's effective limit: the turn's threshold when it has one, else the window;
        // always below the request so the reported sizes are consistent.
        let window = turn
            .when
            .tokens_over
            .or(self.script.info.context_window)
            .unwrap_or(tokens)
            .min(tokens.saturating_sub(1));
        let latency = turn.latency;
        match error {
            ScriptedError::Overflow => {
                let (status, body) = self.script.imitates.overflow_error(tokens, window);
                self.provider_error(status, body)
            }
            ScriptedError::Pairing => {
                let (status, body) = self
                    .script
                    .imitates
                    .call_without_result_error(1, "call_0000");
                self.provider_error(status, body)
            }
            ScriptedError::Timeout => ModelError::Timeout { after: latency },
            ScriptedError::Malformed(raw) => ModelError::MalformedReply {
                detail: "the reply is not a valid chat completion".to_string(),
                raw: raw.clone(),
            },
            ScriptedError::Transient(status) => self.provider_error(
                *status,
                format!(r#"{{"error":{{"message":"upstream fault","code":{status}}}}}"#),
            ),
            ScriptedError::RateLimit => {
                let error = self.provider_error(
                    429,
                    r#"{"error":{"message":"Rate limit reached; please try again later.","type":"requests","code":"rate_limit_exceeded"}}"#.to_string(),
                );
                match (error, turn.retry_after) {
                    (ModelError::RateLimited { body, .. }, Some(after)) => {
                        ModelError::RateLimited {
                            retry_after: Some(after),
                            body,
                        }
                    }
                    (error, _) => error,
                }
            }
            ScriptedError::Raw { status, body } => self.provider_error(*status, body.clone()),
        }
    }

    /// The assistant message a (non-error) turn answers with, with exact usage.
    pub(super) fn reply(
        &self,
        action: &TurnAction,
        request: &ModelRequest,
        tokens: u64,
    ) -> ModelReply {
        let mut parts = Vec::new();
        match action {
            TurnAction::Reply {
                thinking,
                text,
                tool_calls,
            } => {
                if let Some(thinking) = thinking {
                    parts.push(ContentPart::thinking(thinking.clone()));
                }
                if let Some(text) = text {
                    parts.push(ContentPart::text(text.clone()));
                }
                for call in tool_calls {
                    parts.push(ContentPart::tool_call(
                        call.id.clone().unwrap_or_else(|| self.next_call_id()),
                        call.name.clone(),
                        call.arguments.clone(),
                    ));
                }
            }
            TurnAction::Summarize => parts.push(ContentPart::text(summarize(request))),
            TurnAction::ExtractFacts => parts.push(ContentPart::text(extract_facts(request))),
            TurnAction::Error(_) => unreachable!("errors are answered before replies"),
        }
        let message = Message::new(String::new(), Role::Assistant, parts);
        let output_tokens = self.estimator.message_tokens(&message);
        ModelReply {
            message,
            usage: Some(Usage {
                input_tokens: tokens,
                output_tokens,
                ..Usage::default()
            }),
        }
    }
}

/// The deterministic summariser: names how many messages it covers and quotes each user turn's
/// first line, so a golden shows which messages went into a summary.
pub fn summarize(request: &ModelRequest) -> String {
    let mut lines = vec![format!(
        "Summary of {} request message(s).",
        request.messages.len()
    )];
    for message in &request.messages {
        if message.role == Role::User {
            let text = message.text();
            let first = text.lines().next().unwrap_or("");
            lines.push(format!(
                "- user: {}",
                ctxbed_harness::format::snippet(first, 80)
            ));
        }
    }
    lines.join("\n")
}

/// The deterministic fact extractor: a line of the request's user text that starts, after an
/// optional `[role] ` tag of the transcript, with `Fact:`, `Decision:`, `Remember:` or `Note:`
/// (any case) is a fact; each is answered once, as a `- ` list item, in order. With none it
/// answers `NONE`, as the default extraction prompt asks.
pub fn extract_facts(request: &ModelRequest) -> String {
    const MARKERS: [&str; 4] = ["fact:", "decision:", "remember:", "note:"];
    let mut facts: Vec<String> = Vec::new();
    for message in request.messages.iter().filter(|m| m.role == Role::User) {
        for line in message.text().lines() {
            let line = line.trim();
            let line = match line
                .strip_prefix('[')
                .and_then(|rest| rest.split_once("] "))
            {
                Some((_, rest)) => rest.trim(),
                None => line,
            };
            let lower = line.to_lowercase();
            if MARKERS.iter().any(|m| lower.starts_with(m)) && !facts.iter().any(|f| f == line) {
                facts.push(line.to_string());
            }
        }
    }
    if facts.is_empty() {
        return "NONE".to_string();
    }
    facts
        .iter()
        .map(|fact| format!("- {fact}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The prefix of the opaque data a redacted thinking block carries.
pub const REDACTED_PREFIX: &str = "ctxbed-redacted:";

/// Replaces the message's thinking by redacted thinking: opaque data from which the mock alone
/// reads the thinking back ([`redacted_text`]), as the provider decrypts its own.
pub fn redact_thinking(message: &mut ctxbed_harness::message::Message) {
    for part in &mut message.parts {
        if let ContentPart::Thinking { text, .. } = part {
            let data = format!("{REDACTED_PREFIX}{}", hex(text.as_bytes()));
            *part = ContentPart::RedactedThinking { data };
        }
    }
}

/// The thinking a redacted block's data stands for, when the mock made it.
pub fn redacted_text(data: &str) -> Option<String> {
    let digits = data.strip_prefix(REDACTED_PREFIX)?.as_bytes();
    if digits.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, byte| {
        let _ = write!(out, "{byte:02x}");
        out
    })
}
