//! The mock-model file: a [`MockScript`] back to `mock-models/<name>.toml`.

use ctxbed_harness::model::Purpose;
use ctxbed_harness::tokens::Vocabulary;
use ctxbed_sim::mock::{MockScript, MockTurn, ScriptedError, SummaryMode, TurnAction};
use toml::{Table, Value};

use super::value::{insert_array, integer, json_table, millis};
use super::{WriteError, unsupported};

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
    let mut root = Table::new();
    if let Some(window) = script.info.context_window {
        root.insert("window".into(), integer(window)?);
    }
    if let Some(max_output) = script.info.max_output_tokens {
        root.insert("max_output".into(), integer(max_output)?);
    }
    root.insert("imitates".into(), script.imitates.as_str().into());
    let tokenizer = match script.vocabulary {
        Vocabulary::O200k => "o200k",
        Vocabulary::Cl100k => "cl100k",
    };
    root.insert("tokenizer".into(), tokenizer.into());
    root.insert("strict".into(), script.strict.into());
    let summaries = match script.summaries {
        SummaryMode::Auto => "auto",
        SummaryMode::Scripted => "scripted",
    };
    root.insert("summaries".into(), summaries.into());
    let turns: Result<Vec<Value>, WriteError> = script.turns.iter().map(turn).collect();
    insert_array(&mut root, "turns", turns?);
    Ok(toml::to_string(&root)?)
}

fn turn(turn: &MockTurn) -> Result<Value, WriteError> {
    let mut table = Table::new();
    let mut when = Table::new();
    if let Some(tokens) = turn.when.tokens_over {
        when.insert("tokens_over".into(), integer(tokens)?);
    }
    if let Some(tokens) = turn.when.tokens_at_most {
        when.insert("tokens_at_most".into(), integer(tokens)?);
    }
    if let Some(needle) = &turn.when.contains {
        when.insert("contains".into(), needle.clone().into());
    }
    if let Some(purpose) = turn.when.purpose {
        let name = match purpose {
            Purpose::Reasoning => "reasoning",
            Purpose::Summary => "summary",
        };
        when.insert("purpose".into(), name.into());
    }
    if !when.is_empty() {
        table.insert("when".into(), Value::Table(when));
    }
    match &turn.action {
        TurnAction::Reply {
            thinking,
            text,
            tool_calls,
        } => {
            if let Some(thinking) = thinking {
                table.insert("thinking".into(), thinking.clone().into());
            }
            if let Some(text) = text {
                table.insert("reply".into(), text.clone().into());
            }
            if !tool_calls.is_empty() || (thinking.is_none() && text.is_none()) {
                let calls: Result<Vec<Value>, WriteError> = tool_calls
                    .iter()
                    .map(|call| {
                        let serde_json::Value::Object(map) = &call.arguments else {
                            return Err(unsupported("tool-call arguments that are not an object"));
                        };
                        let mut entry = Table::new();
                        if let Some(id) = &call.id {
                            entry.insert("id".into(), id.clone().into());
                        }
                        entry.insert("name".into(), call.name.clone().into());
                        entry.insert("args".into(), Value::Table(json_table(map)?));
                        Ok(Value::Table(entry))
                    })
                    .collect();
                table.insert("tool_calls".into(), Value::Array(calls?));
            }
        }
        TurnAction::Summarize => {
            table.insert("summarize".into(), true.into());
        }
        TurnAction::Error(error) => scripted_error(error, &mut table),
    }
    if !turn.latency.is_zero() {
        table.insert("latency_ms".into(), millis(turn.latency)?);
    }
    if turn.times != 1 {
        table.insert("times".into(), i64::from(turn.times).into());
    }
    Ok(Value::Table(table))
}

fn scripted_error(error: &ScriptedError, table: &mut Table) {
    let (kind, status, body, raw) = match error {
        ScriptedError::Overflow => ("overflow", None, None, None),
        ScriptedError::Pairing => ("pairing", None, None, None),
        ScriptedError::Timeout => ("timeout", None, None, None),
        ScriptedError::Malformed(raw) => ("malformed", None, None, Some(raw)),
        ScriptedError::Transient(status) => ("transient", Some(*status), None, None),
        ScriptedError::RateLimit => ("rate_limit", None, None, None),
        ScriptedError::Raw { status, body } => ("raw", Some(*status), Some(body), None),
    };
    table.insert("error".into(), kind.into());
    if let Some(status) = status {
        table.insert("status".into(), i64::from(status).into());
    }
    if let Some(body) = body {
        table.insert("body".into(), body.clone().into());
    }
    if let Some(raw) = raw {
        table.insert("raw".into(), raw.clone().into());
    }
}
