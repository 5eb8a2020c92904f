//! The mock-model file: a [`MockScript`] back to `mock-models/<name>.toml`.

use ctxbed_harness::model::Purpose;
use ctxbed_harness::tokens::Vocabulary;
use ctxbed_sim::mock::{MockScript, MockTurn, ScriptedError, SummaryMode, TurnAction};

use super::value::{at, count, each, json_object, millis, name};
use super::{WriteError, unsupported};
use crate::scenario::format::mock_file::{RawCall, RawCondition, RawMock, RawTurn, RawUsage};

/// The mock-model file's text.
///
/// # Errors
/// Something the format cannot express.
pub fn mock_toml(script: &MockScript) -> Result<String, WriteError> {
    let expected_file = format!("mock-models/{}.toml", script.info.name);
    if script.file != expected_file {
        return Err(unsupported(format!(
            "mock model `{}` from {} (it must come from {expected_file})",
            script.info.name, script.file
        )));
    }
    let tokenizer = match script.vocabulary {
        Vocabulary::O200k => "o200k",
        Vocabulary::Cl100k => "cl100k",
    };
    let summaries = match script.summaries {
        SummaryMode::Auto => "auto",
        SummaryMode::Scripted => "scripted",
    };
    let memory_flushes = match script.memory_flushes {
        SummaryMode::Auto => None,
        SummaryMode::Scripted => Some(name("scripted")),
    };
    let raw = RawMock {
        description: None,
        window: script.info.context_window.map(count).transpose()?,
        max_output: script.info.max_output_tokens.map(count).transpose()?,
        imitates: Some(name(script.imitates.as_str())),
        tokenizer: Some(name(tokenizer)),
        strict: Some(script.strict),
        deepseek_thinking: script.deepseek_thinking,
        summaries: Some(name(summaries)),
        memory_flushes,
        turns: each(&script.turns, turn)?,
    };
    Ok(toml::to_string(&raw)?)
}

/// A turn's condition, `None` when it always holds.
fn condition(when: &ctxbed_sim::mock::TurnCondition) -> Result<Option<RawCondition>, WriteError> {
    let condition = RawCondition {
        tokens_over: when.tokens_over.map(count).transpose()?,
        tokens_at_most: when.tokens_at_most.map(count).transpose()?,
        contains: when.contains.clone(),
        purpose: when.purpose.map(|purpose| {
            name(match purpose {
                Purpose::Reasoning => "reasoning",
                Purpose::Summary => "summary",
                Purpose::MemoryFlush => "memory_flush",
            })
        }),
        side: when.side,
    };
    let unconditional = condition.tokens_over.is_none()
        && condition.tokens_at_most.is_none()
        && condition.contains.is_none()
        && condition.purpose.is_none()
        && condition.side.is_none();
    Ok((!unconditional).then_some(condition))
}

fn turn(turn: &MockTurn) -> Result<RawTurn, WriteError> {
    let mut raw = RawTurn {
        when: condition(&turn.when)?,
        latency_ms: (!turn.latency.is_zero())
            .then(|| millis(turn.latency))
            .transpose()?,
        times: (turn.times != 1).then(|| at(i64::from(turn.times))),
        usage: match turn.usage {
            Some(usage) => Some(RawUsage {
                input_tokens: count(usage.input_tokens)?,
                output_tokens: count(usage.output_tokens)?,
            }),
            None => None,
        },
        step: turn.step.map(|step| count(step as u64)).transpose()?,
        redacted_thinking: turn.redacted_thinking.then_some(true),
        retry_after_seconds: turn
            .retry_after
            .map(|after| count(after.as_secs().max(1)))
            .transpose()?,
        ..RawTurn::default()
    };
    match &turn.action {
        TurnAction::Reply {
            thinking,
            text,
            tool_calls,
        } => {
            raw.thinking = thinking.clone();
            raw.reply = text.clone();
            // A reply with nothing else says so with an empty list of calls.
            if !tool_calls.is_empty() || (thinking.is_none() && text.is_none()) {
                let calls = tool_calls.iter().map(|call| {
                    let (args, raw_args) = match &call.arguments {
                        serde_json::Value::String(raw) => (None, Some(raw.clone())),
                        other => (Some(json_object(other, "tool-call arguments")?), None),
                    };
                    Ok(at(RawCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        args,
                        raw_args,
                    }))
                });
                raw.tool_calls = Some(calls.collect::<Result<_, WriteError>>()?);
            }
        }
        TurnAction::Summarize => raw.summarize = Some(true),
        TurnAction::ExtractFacts => raw.extract_facts = Some(true),
        TurnAction::Error(error) => scripted_error(error, &mut raw),
    }
    Ok(raw)
}

fn scripted_error(error: &ScriptedError, raw: &mut RawTurn) {
    let (kind, status, body, text) = match error {
        ScriptedError::Overflow => ("overflow", None, None, None),
        ScriptedError::Pairing => ("pairing", None, None, None),
        ScriptedError::Timeout => ("timeout", None, None, None),
        ScriptedError::Malformed(text) => ("malformed", None, None, Some(text)),
        ScriptedError::Transient(status) => ("transient", Some(*status), None, None),
        ScriptedError::RateLimit => ("rate_limit", None, None, None),
        ScriptedError::Raw { status, body } => ("raw", Some(*status), Some(body), None),
    };
    raw.error = Some(name(kind));
    raw.status = status.map(|status| at(i64::from(status)));
    raw.body = body.cloned();
    raw.raw = text.cloned();
}
