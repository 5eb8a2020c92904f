//! Recording what a real provider answered, as a mock model.
//!
//! `ctxbed record` runs a scenario through a [`RecordingModel`] wrapped around a real endpoint
//! and writes the turns with [`crate::scenario::format::write::mock_toml`], so a behaviour seen once
//! becomes a deterministic scenario.

use std::sync::Arc;

use crate::scenario::check::outcome::{RunOutput, run_live};
use crate::scenario::format::file::Scenario;
use crate::scenario::run::runner::{ObservedModel, RunError};
use ctxbed_harness::model::provider::Provider;
use ctxbed_harness::model::{ModelInfo, ModelRequest};
use ctxbed_providers::{HttpProvider, ProviderConfig, ProviderError, ProviderKind};
use ctxbed_sim::mock::{MockScript, SummaryMode};
use ctxbed_sim::recording::RecordingModel;
use ctxbed_sim::rng::Stream;

/// A finished recording: the mock model that replays it and the live run's output.
#[derive(Debug)]
pub struct Recording {
    /// The recorded mock model, named as asked, ready for
    /// [`mock_toml`](crate::scenario::format::write::mock_toml).
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
    /// A request reached no model; nothing is written, since the file would hold a made-up turn.
    #[error(
        "request {request} got no answer from the server: {error}; nothing was recorded. Check that the \
         server is running at the base URL, the URL's scheme (https needs a build with `--features tls`), \
         and the network path to it"
    )]
    NoAnswer { request: usize, error: String },
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
/// The key variable is missing, the URL is unusable, the scenario could not be set up, or a
/// request got no answer at all (refused connection, unsupported scheme): a model's own errors
/// (a real 500, a real overflow) are recorded, a connection that never carried one is not.
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
    if let Some(first) = recorder.no_answers().into_iter().next() {
        return Err(RecordError::NoAnswer {
            request: first.request,
            error: first.error.to_string(),
        });
    }
    let script = MockScript {
        info: ModelInfo {
            name: name.to_string(),
            context_window: scenario.mock.info.context_window,
            max_output_tokens: scenario.mock.info.max_output_tokens,
        },
        imitates: match kind {
            ProviderKind::OpenAi | ProviderKind::Responses => Provider::OpenAi,
            ProviderKind::Anthropic => Provider::Anthropic,
        },
        vocabulary: scenario.mock.vocabulary,
        strict: scenario.mock.strict,
        deepseek_thinking: scenario.mock.deepseek_thinking,
        summaries: SummaryMode::Scripted,
        memory_flushes: SummaryMode::Scripted,
        turns: recorder.turns(),
        file: format!("mock-models/{name}.toml"),
    };
    Ok(Recording { script, output })
}

impl ObservedModel for RecordingModel {
    fn take_received(&self) -> Vec<ModelRequest> {
        RecordingModel::take_received(self)
    }
}
