//! Writing a [`Scenario`] back to its file format: the scenario TOML and its mock-model files.
//!
//! The sweep uses this to turn a failing generated scenario into files that plain `ctxbed run`
//! and `ctxbed show` reproduce. It covers what [`crate::generate`] produces, fault schedule
//! included (restarts, concurrent appends, task actions before and during a call, JSON-lines
//! session storage, write failures, the `[network]` table), plus the `[task]` table, task
//! context options and plan modes. Anything the file format cannot say the same way (inline
//! expectations, history messages that are not in the loader's canonical shape, a concurrent
//! append of a System or tool message, fractional milliseconds, JSON `null`, numbers above
//! `i64::MAX`) is refused with [`WriteError::Unsupported`], never written approximately.
//!
//! **Invariant:** for every scenario this accepts, loading the written files gives a scenario that
//! runs to the same trace (tested on generated scenarios).
//!
//! ```
//! use ctxbed::scenario::write::scenario_toml;
//! use ctxbed::generate::generate;
//! let text = scenario_toml(&generate(3), "").unwrap();
//! assert!(text.contains("seed = 3"));
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use super::file::{
    AgentSpec, ConcurrentAppend, EstimatorChoice, HistorySpec, Layout, Restart, Scenario,
    SessionStorage, SourceSpec, StepSpec, TaskAction, TaskSpec, ToolOutputSpec, ToolSpec,
};
use super::network::NetworkSpec;
use ctxbed_harness::compaction::config::CompactionConfig;
use ctxbed_harness::context::PairingCheck;
use ctxbed_harness::context::offload::OffloadConfig;
use ctxbed_harness::message::{ContentPart, Message, Role, ToolOutput};
use ctxbed_harness::model::Purpose;
use ctxbed_harness::task::plan::PlanMode;
use ctxbed_harness::tokens::Vocabulary;
use ctxbed_sim::mock::{MockScript, MockTurn, ScriptedError, SummaryMode, TurnAction};
use ctxbed_sim::scripted::SourceFailure;

/// Why a scenario could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The scenario holds something the file format cannot express exactly.
    #[error("cannot write {what} to a scenario file")]
    Unsupported { what: String },
    #[error("cannot serialise the scenario: {0}")]
    Toml(#[from] toml::ser::Error),
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn unsupported(what: impl Into<String>) -> WriteError {
    WriteError::Unsupported { what: what.into() }
}

/// The files one [`write()`] produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub scenario: PathBuf,
    /// The agent's mock model, then the summary model when there is one.
    pub mock_models: Vec<PathBuf>,
}

/// Writes the scenario to `path` and its mock models under the suite root's `mock-models/`
/// (see [`Layout::of`]), creating directories as needed. `comment` opens the scenario file.
///
/// # Errors
/// Something the format cannot express, or a failed file-system write.
pub fn write(scenario: &Scenario, path: &Path, comment: &str) -> Result<Written, WriteError> {
    let layout = Layout::of(path);
    let mut files = vec![(path.to_path_buf(), scenario_toml(scenario, comment)?)];
    let mut scripts = vec![&scenario.mock];
    scripts.extend(scenario.agent.summary_model.as_ref());
    let mut mock_models = Vec::new();
    for script in scripts {
        let mock_path = layout.mock_model(&script.info.name);
        files.push((mock_path.clone(), mock_toml(script)?));
        mock_models.push(mock_path);
    }
    for (file, text) in files {
        if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| WriteError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        std::fs::write(&file, text).map_err(|source| WriteError::Io { path: file, source })?;
    }
    Ok(Written {
        scenario: path.to_path_buf(),
        mock_models,
    })
}

/// The scenario file's text; `comment` (any number of lines) is written as `#` comments first.
///
/// # Errors
/// Something the format cannot express.
pub fn scenario_toml(scenario: &Scenario, comment: &str) -> Result<String, WriteError> {
    if !scenario.expectations.is_empty() {
        return Err(unsupported("inline expectations"));
    }
    let seed = i64::try_from(scenario.seed)
        .map_err(|_| unsupported(format!("seed {} (above i64::MAX)", scenario.seed)))?;
    let mut root = Table::new();
    root.insert("description".into(), scenario.description.clone().into());
    root.insert("seed".into(), seed.into());
    root.insert("agent".into(), Value::Table(agent(scenario)?));
    let tools: Result<Vec<Value>, WriteError> = scenario.tools.iter().map(tool).collect();
    insert_array(&mut root, "tools", tools?);
    let instructions = scenario.instructions.iter().map(|instruction| {
        let mut table = Table::new();
        table.insert("name".into(), instruction.name.clone().into());
        table.insert("text".into(), instruction.text.clone().into());
        Value::Table(table)
    });
    insert_array(&mut root, "instructions", instructions.collect());
    let sources: Result<Vec<Value>, WriteError> = scenario.sources.iter().map(source).collect();
    insert_array(&mut root, "sources", sources?);
    let mut workspace = Table::new();
    if !scenario.workspace_files.is_empty() {
        workspace.insert("files".into(), string_map(&scenario.workspace_files));
    }
    if !scenario.fail_writes_under.is_empty() {
        workspace.insert(
            "fail_writes_under".into(),
            strings(&scenario.fail_writes_under),
        );
    }
    if !workspace.is_empty() {
        root.insert("workspace".into(), Value::Table(workspace));
    }
    if let Some(spec) = &scenario.task {
        root.insert("task".into(), Value::Table(task(spec)));
    }
    if let Some(spec) = &scenario.network {
        root.insert("network".into(), Value::Table(network(spec)?));
    }
    let history: Result<Vec<Value>, WriteError> = scenario.history.iter().map(history).collect();
    insert_array(&mut root, "history", history?);
    insert_array(
        &mut root,
        "steps",
        scenario
            .steps
            .iter()
            .map(step)
            .collect::<Result<Vec<_>, _>>()?,
    );
    let mut text = String::new();
    for line in comment.lines() {
        text.push_str(&format!("# {line}\n"));
    }
    text.push_str(&toml::to_string(&root)?);
    Ok(text)
}

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

/// The `[network]` table, every setting written out (defaults included).
fn network(spec: &NetworkSpec) -> Result<Table, WriteError> {
    if let Some(problem) = spec.refusal() {
        return Err(unsupported(format!(
            "a [network] table the loader would refuse ({problem})"
        )));
    }
    let mut table = Table::new();
    table.insert(
        "latency_ms".into(),
        Value::Array(vec![millis(spec.latency_min)?, millis(spec.latency_max)?]),
    );
    table.insert("stream".into(), spec.stream.into());
    table.insert("request_timeout_ms".into(), millis(spec.request_timeout)?);
    table.insert("connect_timeout_ms".into(), millis(spec.connect_timeout)?);
    let mut retry = Table::new();
    retry.insert("attempts".into(), integer(u64::from(spec.retry_attempts))?);
    retry.insert("base_ms".into(), millis(spec.retry_base)?);
    retry.insert("max_ms".into(), millis(spec.retry_max)?);
    table.insert("retry".into(), Value::Table(retry));
    let numbers = |values: &[u64]| -> Result<Vec<Value>, WriteError> {
        values.iter().map(|value| integer(*value)).collect()
    };
    insert_array(
        &mut table,
        "reset_requests",
        numbers(&spec.faults.reset_requests)?,
    );
    insert_array(
        &mut table,
        "cut_stream_requests",
        numbers(&spec.faults.cut_stream_requests)?,
    );
    let partitions = spec
        .partitions
        .iter()
        .map(|(from, until)| {
            let mut partition = Table::new();
            partition.insert("from_ms".into(), millis(*from)?);
            partition.insert("until_ms".into(), millis(*until)?);
            Ok(Value::Table(partition))
        })
        .collect::<Result<Vec<_>, WriteError>>()?;
    insert_array(&mut table, "partitions", partitions);
    table.insert("tick_ms".into(), millis(spec.tick)?);
    Ok(table)
}

fn insert_array(table: &mut Table, key: &str, values: Vec<Value>) {
    if !values.is_empty() {
        table.insert(key.into(), Value::Array(values));
    }
}

fn integer(value: u64) -> Result<Value, WriteError> {
    i64::try_from(value)
        .map(Value::Integer)
        .map_err(|_| unsupported(format!("the number {value} (above i64::MAX)")))
}

fn millis(duration: Duration) -> Result<Value, WriteError> {
    if !duration.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(unsupported(format!(
            "the duration {duration:?} (not whole milliseconds)"
        )));
    }
    integer(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
}

fn strings<'a>(items: impl IntoIterator<Item = &'a String>) -> Value {
    Value::Array(items.into_iter().map(|s| s.clone().into()).collect())
}

fn string_map(map: &std::collections::BTreeMap<String, String>) -> Value {
    Value::Table(
        map.iter()
            .map(|(key, value)| (key.clone(), value.clone().into()))
            .collect(),
    )
}

/// A JSON value as TOML; `null` has no TOML form.
fn json_to_toml(value: &serde_json::Value) -> Result<Value, WriteError> {
    Ok(match value {
        serde_json::Value::Null => return Err(unsupported("a JSON null")),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Value::Integer(i),
            (None, Some(f)) => Value::Float(f),
            (None, None) => return Err(unsupported(format!("the number {n}"))),
        },
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(items) => Value::Array(
            items
                .iter()
                .map(json_to_toml)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        serde_json::Value::Object(map) => Value::Table(json_table(map)?),
    })
}

fn json_table(map: &serde_json::Map<String, serde_json::Value>) -> Result<Table, WriteError> {
    map.iter()
        .map(|(key, value)| Ok((key.clone(), json_to_toml(value)?)))
        .collect()
}

fn agent(scenario: &Scenario) -> Result<Table, WriteError> {
    let spec: &AgentSpec = &scenario.agent;
    if spec.model != scenario.mock.info.name {
        return Err(unsupported(format!(
            "agent model `{}` with a mock script named `{}`",
            spec.model, scenario.mock.info.name
        )));
    }
    let mut table = Table::new();
    table.insert("name".into(), spec.name.clone().into());
    table.insert("agent_id".into(), spec.agent_id.clone().into());
    table.insert("model".into(), spec.model.clone().into());
    if let Some(prompt) = &spec.sys_prompt {
        table.insert("sys_prompt".into(), prompt.clone().into());
    }
    table.insert("max_steps".into(), i64::from(spec.max_steps).into());
    if let Some(timeout) = spec.model_timeout {
        table.insert("model_timeout_ms".into(), millis(timeout)?);
    }
    let estimator = match spec.estimator {
        EstimatorChoice::Ratio => "ratio",
        EstimatorChoice::ExactO200k => "exact-o200k",
        EstimatorChoice::ExactCl100k => "exact-cl100k",
        EstimatorChoice::Approximate => "approx",
    };
    table.insert("estimator".into(), estimator.into());
    if !spec.deny_tools.is_empty() {
        table.insert("deny_tools".into(), strings(&spec.deny_tools));
    }
    let budget = [
        ("max_input_tokens", spec.budget.max_input_tokens),
        ("output_reserve", spec.budget.output_reserve),
        ("safety_margin", spec.budget.safety_margin),
        ("max_output_tokens", spec.budget.requested_max_output),
        (
            "workspace_max_context_tokens",
            spec.workspace_max_context_tokens,
        ),
    ];
    for (key, value) in budget {
        if let Some(value) = value {
            table.insert(key.into(), integer(value)?);
        }
    }
    let pairs = match spec.pairing {
        PairingCheck::Strict => "strict",
        PairingCheck::Repair => "repair",
        PairingCheck::Unchecked => "unchecked",
    };
    table.insert("tool_pairs".into(), pairs.into());
    if !spec.builtin_tools.is_empty() {
        table.insert("builtin_tools".into(), strings(&spec.builtin_tools));
    }
    table.insert("offload".into(), offload(spec.offload.as_ref()));
    if let Some(order) = &spec.omission_order {
        table.insert("omission_order".into(), strings(order));
    }
    let summary_model = spec.summary_model.as_ref().map(|m| m.info.name.clone());
    table.insert(
        "compaction".into(),
        compaction(spec.compaction.as_ref(), summary_model)?,
    );
    table.insert("session_log".into(), spec.session_log.into());
    if spec.session_storage == SessionStorage::Jsonl {
        table.insert("session_storage".into(), "jsonl".into());
    }
    if spec.session_tools {
        table.insert("session_tools".into(), true.into());
    }
    if spec.task_list {
        table.insert("task_list".into(), true.into());
    }
    let options = spec.task_context;
    if options != ctxbed_harness::task::TaskContextOptions::default() {
        let mut context = Table::new();
        for (key, on) in [
            ("include_requirements", options.include_requirements),
            (
                "include_verification_results",
                options.include_verification_results,
            ),
            (
                "allow_requirement_proposals",
                options.allow_requirement_proposals,
            ),
        ] {
            if on {
                context.insert(key.into(), true.into());
            }
        }
        table.insert("task_context".into(), Value::Table(context));
    }
    let kind = if spec.react { "react" } else { "harness" };
    table.insert("kind".into(), kind.into());
    Ok(table)
}

fn offload(config: Option<&OffloadConfig>) -> Value {
    let mut table = Table::new();
    match config {
        None => {
            table.insert("enabled".into(), false.into());
        }
        Some(config) => {
            table.insert(
                "max_result_chars".into(),
                (config.max_result_chars as i64).into(),
            );
            table.insert("preview_chars".into(), (config.preview_chars as i64).into());
            table.insert("eviction_path".into(), config.eviction_path.clone().into());
            table.insert("excluded_tools".into(), strings(&config.excluded_tools));
        }
    }
    Value::Table(table)
}

fn compaction(
    config: Option<&CompactionConfig>,
    summary_model: Option<String>,
) -> Result<Value, WriteError> {
    let mut table = Table::new();
    let Some(config) = config else {
        table.insert("enabled".into(), false.into());
        return Ok(Value::Table(table));
    };
    if config.model.is_some() {
        return Err(unsupported(
            "a compaction model given in code (use the agent's summary model)",
        ));
    }
    table.insert(
        "trigger_messages".into(),
        (config.trigger_messages as i64).into(),
    );
    table.insert("trigger_tokens".into(), integer(config.trigger_tokens)?);
    if let Some(keep) = config.keep_tokens {
        table.insert("keep_tokens".into(), integer(keep)?);
    }
    table.insert("keep_messages".into(), (config.keep_messages as i64).into());
    let mut prune = Table::new();
    match &config.prune {
        None => {
            prune.insert("enabled".into(), false.into());
        }
        Some(p) => {
            prune.insert("protect_tokens".into(), integer(p.protect_tokens)?);
            prune.insert(
                "minimum_prunable_tokens".into(),
                integer(p.minimum_prunable_tokens)?,
            );
            prune.insert("preview_chars".into(), (p.preview_chars as i64).into());
            prune.insert("excluded_tools".into(), strings(&p.excluded_tools));
        }
    }
    table.insert("prune".into(), Value::Table(prune));
    if let Some(t) = &config.truncate_args {
        let mut truncate = Table::new();
        truncate.insert(
            "trigger_messages".into(),
            (t.trigger_messages as i64).into(),
        );
        truncate.insert("trigger_tokens".into(), integer(t.trigger_tokens)?);
        truncate.insert("protect_latest".into(), (t.protect_latest as i64).into());
        truncate.insert("max_arg_length".into(), (t.max_arg_length as i64).into());
        truncate.insert("truncation_text".into(), t.truncation_text.clone().into());
        table.insert("truncate_args".into(), Value::Table(truncate));
    }
    table.insert(
        "summary_prompt".into(),
        config.summary_prompt.clone().into(),
    );
    if let Some(name) = summary_model {
        table.insert("summary_model".into(), name.into());
    }
    table.insert(
        "flush_before_compact".into(),
        config.flush_before_compact.into(),
    );
    Ok(Value::Table(table))
}

fn tool(spec: &ToolSpec) -> Result<Value, WriteError> {
    let mut table = Table::new();
    table.insert("name".into(), spec.name.clone().into());
    if let Some(description) = &spec.description {
        table.insert("description".into(), description.clone().into());
    }
    if let Some(parameters) = &spec.parameters {
        let serde_json::Value::Object(map) = parameters else {
            return Err(unsupported("tool parameters that are not a JSON object"));
        };
        table.insert("parameters".into(), Value::Table(json_table(map)?));
    }
    match &spec.output {
        ToolOutputSpec::Fixed(text) => {
            table.insert("text".into(), text.clone().into());
        }
        ToolOutputSpec::Sequence(texts) => {
            table.insert("texts".into(), strings(texts));
        }
        ToolOutputSpec::Generated { chars, kind } => {
            table.insert("result_chars".into(), (*chars as i64).into());
            table.insert("content".into(), kind.as_str().into());
        }
        ToolOutputSpec::ByArguments {
            responses,
            fallback,
        } => {
            table.insert("text".into(), fallback.text.clone().into());
            table.insert("exit_code".into(), i64::from(fallback.exit_code).into());
            let list: Vec<Value> = responses
                .iter()
                .map(|r| {
                    let mut response = Table::new();
                    response.insert(
                        "when_args_contain".into(),
                        r.when_args_contain.clone().into(),
                    );
                    response.insert("text".into(), r.text.clone().into());
                    response.insert("exit_code".into(), i64::from(r.exit_code).into());
                    Value::Table(response)
                })
                .collect();
            table.insert("responses".into(), Value::Array(list));
        }
    }
    table.insert("latency_ms".into(), millis(spec.latency)?);
    if let Some(fail) = &spec.fail {
        table.insert("fail".into(), fail.clone().into());
    }
    if let Some(mode) = spec.sets_plan_mode {
        table.insert("sets_plan_mode".into(), plan_mode(mode).into());
    }
    if let Some((path, text)) = &spec.writes {
        let mut writes = Table::new();
        writes.insert("path".into(), path.clone().into());
        writes.insert("text".into(), text.clone().into());
        table.insert("writes".into(), Value::Table(writes));
    }
    Ok(Value::Table(table))
}

fn source(spec: &SourceSpec) -> Result<Value, WriteError> {
    let mut table = Table::new();
    table.insert("name".into(), spec.name.clone().into());
    if let Some(timeout) = spec.timeout {
        table.insert("timeout_ms".into(), millis(timeout)?);
    }
    let on_failure = if spec.omit_on_failure { "omit" } else { "fail" };
    table.insert("on_failure".into(), on_failure.into());
    table.insert("latency_ms".into(), millis(spec.latency)?);
    if let Some(failure) = spec.failure {
        let name = match failure {
            SourceFailure::Error => "error",
            SourceFailure::NoList => "no_list",
            SourceFailure::Never => "never",
            SourceFailure::Panic => "panic",
        };
        table.insert("failure".into(), name.into());
    }
    if !spec.fail_loads.is_empty() {
        let loads: Result<Vec<Value>, WriteError> =
            spec.fail_loads.iter().map(|l| integer(*l)).collect();
        table.insert("fail_loads".into(), Value::Array(loads?));
    }
    let blocks = spec.blocks.iter().map(|block| {
        let mut entry = Table::new();
        entry.insert("id".into(), block.id.clone().into());
        let kind = if block.runtime {
            "runtime"
        } else {
            "reference"
        };
        entry.insert("kind".into(), kind.into());
        entry.insert("text".into(), block.text.clone().into());
        entry.insert("required".into(), block.required.into());
        entry.insert("priority".into(), i64::from(block.priority).into());
        if let Some(revision) = &block.revision {
            entry.insert("revision".into(), revision.clone().into());
        }
        Value::Table(entry)
    });
    table.insert("blocks".into(), Value::Array(blocks.collect()));
    Ok(Value::Table(table))
}

fn history(spec: &HistorySpec) -> Result<Value, WriteError> {
    let mut table = Table::new();
    if let Some(user) = &spec.user {
        table.insert("user".into(), user.clone().into());
    }
    if let Some(session) = &spec.session {
        table.insert("session".into(), session.clone().into());
    }
    let mut messages = Vec::with_capacity(spec.messages.len());
    for (index, message) in spec.messages.iter().enumerate() {
        let id = format!("h{:04}", index + 1);
        if message.id != id {
            return Err(unsupported(format!(
                "history message id `{}` (the loader numbers them; expected `{id}`)",
                message.id
            )));
        }
        messages.push(history_message(message)?);
    }
    table.insert("messages".into(), Value::Array(messages));
    Ok(Value::Table(table))
}

fn history_message(message: &Message) -> Result<Value, WriteError> {
    if !message.metadata.is_empty() || message.name.is_some() {
        return Err(unsupported(format!(
            "history message `{}` with metadata or a name",
            message.id
        )));
    }
    let mut table = Table::new();
    table.insert("role".into(), message.role.as_str().into());
    if message.role == Role::Tool {
        let [ContentPart::ToolResult(result)] = message.parts.as_slice() else {
            return Err(unsupported(format!(
                "tool message `{}` without exactly one result",
                message.id
            )));
        };
        let [ToolOutput::Text { text }] = result.outputs.as_slice() else {
            return Err(unsupported(format!(
                "tool result in `{}` without exactly one text output",
                message.id
            )));
        };
        if !result.metadata.is_empty() {
            return Err(unsupported(format!(
                "tool result metadata in `{}`",
                message.id
            )));
        }
        table.insert("call_id".into(), result.call_id.clone().into());
        table.insert("name".into(), result.tool_name.clone().into());
        table.insert("error".into(), result.is_error.into());
        table.insert("text".into(), text.clone().into());
        return Ok(Value::Table(table));
    }
    message_parts(message, &mut table)?;
    Ok(Value::Table(table))
}

/// Parts in the loader's order: thinking, text, media, tool calls; at most one of each of the
/// first three.
fn message_parts(message: &Message, table: &mut Table) -> Result<(), WriteError> {
    let mut stage = 0;
    let mut calls = Vec::new();
    for part in &message.parts {
        let (order, key) = match part {
            ContentPart::Thinking { text } => (1, Some(("thinking", text))),
            ContentPart::Text { text } => (2, Some(("text", text))),
            ContentPart::Media { kind, size_bytes } => {
                table.insert("media".into(), kind.as_str().into());
                table.insert("size_bytes".into(), integer(*size_bytes)?);
                (3, None)
            }
            ContentPart::ToolCall(call) => {
                let serde_json::Value::Object(map) = &call.arguments else {
                    return Err(unsupported("tool-call arguments that are not an object"));
                };
                let mut entry = Table::new();
                entry.insert("id".into(), call.id.clone().into());
                entry.insert("name".into(), call.name.clone().into());
                entry.insert("args".into(), Value::Table(json_table(map)?));
                calls.push(Value::Table(entry));
                (4, None)
            }
            ContentPart::ToolResult(_) => (5, None),
        };
        let repeated = order == stage && order != 4;
        if order < stage || repeated || order == 5 {
            return Err(unsupported(format!(
                "the parts of history message `{}` (one thinking, text and media part, then tool calls)",
                message.id
            )));
        }
        stage = order;
        if let Some((key, text)) = key {
            table.insert(key.into(), text.clone().into());
        }
    }
    if !calls.is_empty() {
        table.insert("tool_calls".into(), Value::Array(calls));
    }
    Ok(())
}

fn step(spec: &StepSpec) -> Result<Value, WriteError> {
    let mut table = Table::new();
    if let Some(user) = &spec.user {
        table.insert("user".into(), user.clone().into());
    }
    if let Some(session) = &spec.session {
        table.insert("session".into(), session.clone().into());
    }
    table.insert("input".into(), spec.input.clone().into());
    if !spec.workspace_writes.is_empty() {
        table.insert(
            "workspace_writes".into(),
            string_map(&spec.workspace_writes),
        );
    }
    if let Some(mode) = spec.plan_mode {
        table.insert("plan_mode".into(), plan_mode(mode).into());
    }
    if let Some(restart) = spec.restart {
        let name = match restart {
            Restart::Clean => "clean",
            Restart::Torn => "torn",
            Restart::Corrupt => "corrupt",
        };
        table.insert("restart".into(), name.into());
    }
    if let Some(prefixes) = &spec.fail_writes_under {
        table.insert("fail_writes_under".into(), strings(prefixes));
    }
    if let Some(append) = &spec.concurrent_append {
        table.insert(
            "concurrent_append".into(),
            Value::Table(concurrent_append(append)?),
        );
    }
    if !spec.actions.is_empty() {
        let actions: Result<Vec<Value>, WriteError> = spec
            .actions
            .iter()
            .map(|action| task_action(action).map(Value::Table))
            .collect();
        table.insert("actions".into(), Value::Array(actions?));
    }
    if !spec.concurrent_actions.is_empty() {
        let actions: Result<Vec<Value>, WriteError> = spec
            .concurrent_actions
            .iter()
            .map(|(at, action)| {
                let mut entry = task_action(action)?;
                entry.insert("at_ms".into(), millis(*at)?);
                Ok(Value::Table(entry))
            })
            .collect();
        table.insert("concurrent_actions".into(), Value::Array(actions?));
    }
    Ok(Value::Table(table))
}

fn plan_mode(mode: PlanMode) -> &'static str {
    match mode {
        PlanMode::Plan => "plan",
        PlanMode::Build => "build",
    }
}

/// Another writer's append; the loader takes only user and assistant messages.
fn concurrent_append(append: &ConcurrentAppend) -> Result<Table, WriteError> {
    let role = match append.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        other => {
            return Err(unsupported(format!(
                "a concurrent append of a {} message (only user or assistant)",
                other.as_str()
            )));
        }
    };
    let mut table = Table::new();
    table.insert("at_ms".into(), millis(append.at)?);
    table.insert("role".into(), role.into());
    table.insert("text".into(), append.text.clone().into());
    Ok(table)
}

/// A task action with exactly the fields its kind takes (the loader refuses any other).
fn task_action(action: &TaskAction) -> Result<Table, WriteError> {
    let mut table = Table::new();
    let mut put = |key: &str, value: Value| {
        table.insert(key.into(), value);
    };
    match action {
        TaskAction::Propose { kind, text, source } => {
            put("kind", "propose".into());
            put("requirement_kind", kind.as_str().into());
            put("text", text.clone().into());
            put("source", source.clone().into());
        }
        TaskAction::Decide {
            requirement,
            decision,
            authority,
            expected_revision,
        } => {
            put("kind", "decide".into());
            put("requirement", requirement.clone().into());
            put("decision", decision.as_str().into());
            put("authority", authority.clone().into());
            put("expected_revision", integer(*expected_revision)?);
        }
        TaskAction::SubjectVersion(version) => {
            put("kind", "subject_version".into());
            put("version", version.clone().into());
        }
        TaskAction::InvalidateSubject => put("kind", "invalidate_subject".into()),
        TaskAction::Verify {
            check,
            passed,
            summary,
        } => {
            put("kind", "verify".into());
            put("check", check.clone().into());
            put("passed", (*passed).into());
            put("summary", summary.clone().into());
        }
    }
    Ok(table)
}

/// The `[task]` table: the task scope and the plan settings set before the first step.
fn task(spec: &TaskSpec) -> Table {
    let mut table = Table::new();
    if let Some(scope) = &spec.scope {
        table.insert("task_id".into(), scope.task_id.clone().into());
        table.insert("objective".into(), scope.objective.clone().into());
    }
    if let Some(mode) = spec.plan_mode {
        table.insert("plan_mode".into(), plan_mode(mode).into());
    }
    if let Some(path) = &spec.plan_path {
        table.insert("plan_path".into(), path.clone().into());
    }
    table
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
