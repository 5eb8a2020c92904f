//! The mock-model checker's reply and error turns: the calls a reply makes, and the error a
//! turn injects, each problem at its place.

use toml::Spanned;

use super::{Checker, ERROR_KINDS, RawTurn};
use ctxbed_harness::limits;
use ctxbed_sim::mock::{ScriptedCall, ScriptedError, TurnAction};

impl Checker<'_> {
    /// A reply: thinking, text and at most the limit of tool calls.
    pub(super) fn reply_action(
        &mut self,
        turn: &RawTurn,
        spanned: &Spanned<RawTurn>,
        field: &str,
    ) -> Option<TurnAction> {
        let calls = turn.tool_calls.as_deref().unwrap_or(&[]);
        if calls.len() > limits::TOOL_CALLS_PER_REPLY_MAX {
            let problem = self
                .at(
                    spanned,
                    format!(
                        "{} tool calls in one turn; at most {}",
                        calls.len(),
                        limits::TOOL_CALLS_PER_REPLY_MAX
                    ),
                )
                .field(format!("{field}.tool_calls"));
            self.problems.push(problem);
            return None;
        }
        for (index, call) in calls.iter().enumerate() {
            if call.get_ref().raw_args.is_some() && call.get_ref().args.is_some() {
                let problem = self
                    .at(call, "a tool call gives both `args` and `raw_args`")
                    .field(format!("{field}.tool_calls[{index}]"))
                    .help("keep `args` (a table), or `raw_args` (text sent as it is)");
                self.problems.push(problem);
            }
        }
        let tool_calls = calls
            .iter()
            .map(|call| {
                let call = call.get_ref();
                let arguments = match &call.raw_args {
                    Some(raw) => serde_json::Value::String(raw.clone()),
                    None => call.args.clone().map_or_else(
                        || serde_json::Value::Object(serde_json::Map::new()),
                        |table| serde_json::to_value(table).unwrap_or(serde_json::Value::Null),
                    ),
                };
                ScriptedCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments,
                }
            })
            .collect();
        Some(TurnAction::Reply {
            thinking: turn.thinking.clone(),
            text: turn.reply.clone(),
            tool_calls,
        })
    }

    pub(super) fn error_action(
        &mut self,
        turn: &RawTurn,
        error: &Spanned<String>,
        field: &str,
    ) -> Option<ScriptedError> {
        let kind = self.choice(error, &format!("{field}.error"), ERROR_KINDS, |k| {
            ERROR_KINDS.contains(&k).then(|| k.to_string())
        })?;
        let status = match &turn.status {
            Some(value) => {
                let status = self.count(value, &format!("{field}.status"), 100)?;
                if status > 599 {
                    let problem = self
                        .at(value, format!("HTTP status {status} is out of range"))
                        .field(format!("{field}.status"));
                    self.problems.push(problem);
                    return None;
                }
                Some(u16::try_from(status).unwrap_or(500))
            }
            None => None,
        };
        Some(match kind.as_str() {
            "overflow" => ScriptedError::Overflow,
            "pairing" => ScriptedError::Pairing,
            "timeout" => ScriptedError::Timeout,
            "malformed" => ScriptedError::Malformed(
                turn.raw
                    .clone()
                    .unwrap_or_else(|| "{\"choices\": [".to_string()),
            ),
            "transient" => ScriptedError::Transient(status.unwrap_or(503)),
            "rate_limit" => ScriptedError::RateLimit,
            _ => {
                let Some(body) = &turn.body else {
                    let problem = self
                        .at(
                            error,
                            "`error = \"raw\"` needs a `body` (and optionally a `status`)",
                        )
                        .field(format!("{field}.body"));
                    self.problems.push(problem);
                    return None;
                };
                ScriptedError::Raw {
                    status: status.unwrap_or(400),
                    body: body.clone(),
                }
            }
        })
    }
}
