//! The reference adapter: ctxbed's own harness behind the peer protocol (`ctxbed peer`, run by
//! `peers/ctxbed/run`), so it is tested over the same wire, by the same checks, as every other
//! harness.
//!
//! It builds a [`HarnessAgent`] as a user would for a long conversation: the HTTP provider for
//! the API the mock speaks, told the model's window and output budget, with the harness's
//! defaults (compaction, overflow recovery, tool-result offload) and an in-memory workspace.
//! Each protocol tool returns its scripted results in order. `CTXBED_PEER_PLANT` makes it do a
//! named wrong thing instead ([`super::plant`]), for the test-bed's own tests. It declares
//! `"reset": true`: after a `reset` line it takes the protocol's variables from the line, not
//! from its environment, and builds everything anew at the next `setup`.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::{Value, json};

use ctxbed_harness::agent::{AgentError, ContextPolicy, HarnessAgent, HarnessAgentBuilder};
use ctxbed_harness::context::PrepareError;
use ctxbed_harness::image::Image;
use ctxbed_harness::message::{ToolCall, ToolSchema, UserInput};
use ctxbed_harness::model::ModelError;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::storage::{FsStorage, MemoryStorage, Storage};
use ctxbed_harness::tokens::{
    ApproximateEstimator, CachedEstimator, RatioEstimator, TokenEstimator,
};
use ctxbed_harness::tools::{Tool, ToolContext, ToolOutcome};
use ctxbed_providers::transport::{Transport, default_transport};
use ctxbed_providers::{ApiKey, HttpProvider, ProviderConfig, ProviderKind};

use super::plant::estimate::{Chars4, SchemasFree};
use super::plant::{PlantedTransport, Plants};

/// A tool whose n-th call returns its n-th scripted result (the last repeats).
struct ScriptedResults {
    schema: ToolSchema,
    results: Vec<(String, bool)>,
    calls: AtomicUsize,
}

#[async_trait]
impl Tool for ScriptedResults {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, _call: &ToolCall, _context: &ToolContext) -> ToolOutcome {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let Some((text, error)) = self.results.get(n).or(self.results.last()) else {
            return ToolOutcome::error("the scenario gave this tool no result");
        };
        if *error {
            ToolOutcome::error(text.clone())
        } else {
            ToolOutcome::text(text.clone())
        }
    }
}

/// Why the adapter could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    #[error("environment variable {0} is missing or invalid (ctxbed conform sets it)")]
    Env(&'static str),
    #[error("standard input: {0}")]
    Input(String),
    #[error("cannot build the agent: {0}")]
    Build(String),
}

/// The protocol's variables as this adapter sees them: the process environment until the first
/// `reset` line, then the line's (a protocol variable the line lacks is unset).
#[derive(Debug, Default)]
struct Vars {
    /// Set by the last `reset`; `None` before any.
    reset: Option<BTreeMap<String, String>>,
}

impl Vars {
    fn get(&self, name: &str) -> Option<String> {
        match &self.reset {
            Some(vars) if super::pool::PROTOCOL_VARIABLES.contains(&name) => {
                vars.get(name).cloned()
            }
            _ => std::env::var(name).ok(),
        }
    }

    fn require(&self, name: &'static str) -> Result<String, ReferenceError> {
        self.get(name).ok_or(ReferenceError::Env(name))
    }

    fn number(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(|v| v.parse().ok())
    }

    /// Takes the variables of a `reset` line.
    fn reset(&mut self, line: &Value) {
        let vars = line
            .get("env")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_string())))
            .collect();
        self.reset = Some(vars);
    }
}

/// The agent's workspace: a directory under `CTXBED_STATE_DIR` when the scenario restarts the
/// harness (its default session log keeps each session there, so a new process restores it),
/// else memory.
fn workspace(plants: &Plants, vars: &Vars) -> Result<Arc<dyn Storage>, ReferenceError> {
    match vars.get("CTXBED_STATE_DIR") {
        Some(dir) if !plants.memory_sessions => {
            let storage = FsStorage::open(std::path::Path::new(&dir).join("workspace"))
                .map_err(|e| ReferenceError::Build(format!("the state directory {dir}: {e}")))?;
            Ok(Arc::new(storage))
        }
        _ => Ok(Arc::new(MemoryStorage::new())),
    }
}

/// Builds the agent the scenario's setup describes, over the provider the environment names.
fn build(setup: &Value, plants: &Plants, vars: &Vars) -> Result<HarnessAgent, ReferenceError> {
    let provider = provider(provider_config(plants, vars)?, plants, vars)?;
    let mut builder = HarnessAgent::builder()
        .name("ctxbed-reference")
        .model(Arc::new(provider))
        .workspace(workspace(plants, vars)?);
    if plants.no_context {
        builder = builder.disable_compaction().disable_tool_result_eviction();
    }
    builder = with_estimator(builder, plants)?;
    let system = setup
        .get("system")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !system.is_empty() {
        builder = builder.sys_prompt(system);
    }
    for tool in setup
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        builder = builder.tool(Arc::new(scripted_tool(tool, plants)));
    }
    builder
        .build()
        .map_err(|e| ReferenceError::Build(e.to_string()))
}

/// The provider's configuration from the environment `ctxbed conform` sets: the API, its base
/// URL, the model, streaming, window and output budget, as the plants alter them.
fn provider_config(plants: &Plants, vars: &Vars) -> Result<ProviderConfig, ReferenceError> {
    let kind = provider_kind(&vars.require("CTXBED_API")?);
    let base_url = match kind {
        ProviderKind::Anthropic => vars.require("CTXBED_ANTHROPIC_BASE_URL")?,
        ProviderKind::OpenAi | ProviderKind::Responses => vars.require("CTXBED_OPENAI_BASE_URL")?,
    };
    let mut config = ProviderConfig::new(kind, base_url, vars.require("CTXBED_MODEL")?);
    config.api_key_env = Some("CTXBED_API_KEY".into());
    config.stream = vars.get("CTXBED_STREAM").is_some_and(|v| v == "1");
    config.context_window = vars.number("CTXBED_WINDOW");
    config.max_output_tokens = vars.number("CTXBED_MAX_OUTPUT_TOKENS");
    config.thinking_budget = vars.number("CTXBED_THINKING_BUDGET");
    if plants.no_context {
        config.context_window = None;
    }
    if plants.no_retry {
        config.retry.attempts_max = 1;
    }
    Ok(config)
}

/// A step's input: its text, and each image of its `images`, priced as the API the scenario
/// speaks counts it.
fn user_input(
    message: &Value,
    text: String,
    plants: &Plants,
    vars: &Vars,
) -> Result<UserInput, ReferenceError> {
    let pricing = provider_kind(&vars.require("CTXBED_API")?).image_pricing();
    let mut input = UserInput::from(text);
    let images = message.get("images").and_then(Value::as_array);
    for image in images.into_iter().flatten() {
        let field = |key: &str| image.get(key).and_then(Value::as_str).unwrap_or_default();
        let mut read = Image::from_base64(field("media_type"), field("data"), pricing)
            .map_err(|e| ReferenceError::Input(format!("a step's image: {e}")))?;
        if plants.images_free {
            read.tokens = 0;
        }
        if plants.images_base64 {
            read.tokens = field("data").len().div_ceil(4) as u64;
        }
        input = input.with_image(read);
    }
    Ok(input)
}

/// The provider kind `CTXBED_API` names (`openai` for anything unknown).
fn provider_kind(api: &str) -> ProviderKind {
    match api {
        "anthropic" => ProviderKind::Anthropic,
        "responses" => ProviderKind::Responses,
        _ => ProviderKind::OpenAi,
    }
}

/// The HTTP provider: over a transport that does the planted wrong things when a plant touches
/// the wire, else as a user would build it from the environment.
fn provider(
    config: ProviderConfig,
    plants: &Plants,
    vars: &Vars,
) -> Result<HttpProvider, ReferenceError> {
    let key = Some(ApiKey::new(vars.require("CTXBED_API_KEY")?));
    let inner = config
        .base_url
        .parse::<http::Uri>()
        .map(|uri| default_transport(&uri))
        .map_err(|e| ReferenceError::Build(e.to_string()))?;
    let transport: Arc<dyn Transport> = if plants.touches_the_wire() {
        Arc::new(PlantedTransport::new(inner, plants.clone()))
    } else {
        inner
    };
    HttpProvider::new(config, key, transport).map_err(|e| ReferenceError::Build(e.to_string()))
}

/// The builder with the estimator `CTXBED_REFERENCE_ESTIMATOR` names (`ratio`), or unchanged
/// for the default; a plant that counts wrong replaces either.
fn with_estimator(
    builder: HarnessAgentBuilder,
    plants: &Plants,
) -> Result<HarnessAgentBuilder, ReferenceError> {
    let estimator: Arc<dyn TokenEstimator> = if plants.chars4 {
        Arc::new(CachedEstimator::new(Chars4))
    } else if plants.schemas_free {
        Arc::new(CachedEstimator::new(SchemasFree(
            ApproximateEstimator::default(),
        )))
    } else {
        match std::env::var("CTXBED_REFERENCE_ESTIMATOR").as_deref() {
            Err(_) | Ok("" | "default") => return Ok(builder),
            Ok("ratio") => Arc::new(CachedEstimator::new(RatioEstimator)),
            Ok(_) => return Err(ReferenceError::Env("CTXBED_REFERENCE_ESTIMATOR")),
        }
    };
    Ok(builder.context_policy(ContextPolicy {
        estimator,
        ..ContextPolicy::default()
    }))
}

/// A setup tool as a tool returning its scripted results (error results emptied into plain
/// ones when the plant drops tool errors).
fn scripted_tool(tool: &Value, plants: &Plants) -> ScriptedResults {
    let text = |key: &str| {
        tool.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let results = tool
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                r.get("error").and_then(Value::as_bool).unwrap_or(false),
            )
        })
        .map(|(text, error)| {
            if error && plants.drop_tool_errors {
                (String::new(), false)
            } else {
                (text, error)
            }
        })
        .collect();
    ScriptedResults {
        schema: ToolSchema {
            name: text("name"),
            description: text("description"),
            parameters: tool
                .get("parameters")
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"})),
        },
        results,
        calls: AtomicUsize::new(0),
    }
}

/// The protocol's error kind for an agent error.
pub fn error_kind(error: &AgentError) -> &'static str {
    match error {
        AgentError::Model(model) => match model {
            ModelError::ContextOverflow { .. } => "context_overflow",
            ModelError::RateLimited { .. } => "rate_limited",
            ModelError::Timeout { .. } => "timeout",
            ModelError::MalformedReply { .. } => "malformed_reply",
            _ => "provider_error",
        },
        AgentError::Prepare(rejected) => match rejected.error {
            PrepareError::ContextBudgetExceeded { .. } => "budget_refused",
            _ => "other",
        },
        _ => "other",
    }
}

fn say(line: &Value) -> Result<(), ReferenceError> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| ReferenceError::Input(format!("cannot write: {e}")))
}

/// Runs the adapter over standard input and output until input ends.
///
/// # Errors
/// A missing environment variable, unreadable input, or an agent that cannot be built.
pub fn run() -> Result<(), ReferenceError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ReferenceError::Build(e.to_string()))?;
    let plants = Plants::from_env().map_err(ReferenceError::Input)?;
    let mut agent: Option<HarnessAgent> = None;
    let mut vars = Vars::default();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| ReferenceError::Input(e.to_string()))?;
        let message: Value = serde_json::from_str(&line)
            .map_err(|e| ReferenceError::Input(format!("not JSON ({e}): {line}")))?;
        match message.get("type").and_then(Value::as_str) {
            Some("setup") => {
                agent = Some(build(&message, &plants, &vars)?);
                say(
                    &json!({"type": "ready", "harness": "ctxbed", "version": env!("CARGO_PKG_VERSION"), "reset": true}),
                )?;
            }
            Some("reset") => {
                agent = None;
                vars.reset(&message);
            }
            Some("step") => {
                let Some(agent) = agent.as_ref() else {
                    return Err(ReferenceError::Input("a step before setup".into()));
                };
                let step = message.get("step").cloned().unwrap_or(Value::Null);
                let text = |key: &str| {
                    message
                        .get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                let session = if plants.one_session {
                    "s1".to_string()
                } else if plants.no_history {
                    format!("{}-step-{step}", text("session"))
                } else {
                    text("session")
                };
                let context = RuntimeContext::new()
                    .with_user(text("user"))
                    .with_session(session);
                let answer = if plants.fail_step.is_some() && plants.fail_step == step.as_u64() {
                    json!({"type": "error", "step": step, "kind": "other", "message": "a planted failure: this step never called the model"})
                } else {
                    let input = user_input(&message, text("input"), &plants, &vars)?;
                    match runtime.block_on(agent.call(input, context)) {
                        Ok(reply) => json!({"type": "reply", "step": step, "text": reply.text()}),
                        Err(_) if plants.empty_reply_on_error => {
                            json!({"type": "reply", "step": step, "text": ""})
                        }
                        Err(error) => {
                            json!({"type": "error", "step": step, "kind": error_kind(&error), "message": ctxbed_harness::format::snippet(&error.to_string(), 2_000)})
                        }
                    }
                };
                say(&answer)?;
            }
            _ => return Err(ReferenceError::Input(format!("unknown line: {line}"))),
        }
    }
    Ok(())
}
