//! `ctxbed record`: a scenario run against a real model over HTTP, its answers written as a
//! mock-model file that replays the run deterministically.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::record::record;
use ctxbed::scenario::format::file::Layout;
use ctxbed::scenario::format::write::mock_toml;
use ctxbed_providers::{ProviderConfig, ProviderKind};

use super::load_or_report;

/// `ctxbed record`'s arguments.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The wire format: `openai` (Chat Completions), `responses` (OpenAI Responses) or
    /// `anthropic` (Messages).
    #[arg(long, value_parser = parse_provider)]
    pub provider: ProviderKind,
    /// The server's base URL: up to `/chat/completions` for openai and `/responses` for
    /// responses (often ending in `/v1`), up to `/v1/messages` for anthropic.
    #[arg(long)]
    pub base_url: String,
    /// The provider's model name.
    #[arg(long)]
    pub model: String,
    /// The environment variable holding the API key (the key itself is never printed).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// The mock-model file to write (default: the suite's
    /// `mock-models/<scenario>-recorded.toml`).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Ask for whole replies instead of streamed ones.
    #[arg(long)]
    pub no_stream: bool,
    /// Seconds one request may take.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Turn Anthropic's extended thinking on with this `budget_tokens` (at least 1,024; the
    /// output bound is raised above it when it is not). Thinking is recorded as each turn's
    /// `thinking`, withheld thinking as `redacted_thinking = true`.
    #[arg(long)]
    pub thinking_budget: Option<u64>,
}

/// Runs `ctxbed record` with its parsed arguments.
pub fn record_from(arguments: RecordArgs) -> ExitCode {
    let mut config = ProviderConfig::new(arguments.provider, arguments.base_url, arguments.model);
    config.api_key_env = arguments.api_key_env;
    config.stream = !arguments.no_stream;
    config.request_timeout = std::time::Duration::from_secs(arguments.timeout);
    if let Some(budget) = arguments.thinking_budget {
        if config.kind != ProviderKind::Anthropic || budget < 1_024 {
            errln!(
                "error: --thinking-budget is Anthropic's extended thinking: use it with --provider anthropic and a budget of at least 1024 tokens"
            );
            return ExitCode::from(2);
        }
        config.thinking_budget = Some(budget);
        let bound = config.max_output_tokens.unwrap_or(0);
        if bound <= budget {
            config.max_output_tokens = Some(budget + 1_024);
        }
    }
    record_command(&arguments.scenario, config, arguments.output)
}

pub fn parse_provider(name: &str) -> Result<ProviderKind, String> {
    ProviderKind::parse(name)
        .ok_or_else(|| format!("`{name}` is not a provider; use openai, responses or anthropic"))
}

pub fn record_command(
    path: &std::path::Path,
    config: ProviderConfig,
    output: Option<PathBuf>,
) -> ExitCode {
    let scenario = match load_or_report(path) {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
    let output = output.unwrap_or_else(|| {
        let stem = scenario.name.rsplit('/').next().unwrap_or("scenario");
        Layout::of(path).mock_model(&format!("{stem}-recorded"))
    });
    let Some(name) = output.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
        errln!(
            "error: the output path {} has no file name",
            output.display()
        );
        return ExitCode::from(2);
    };
    let description = format!(
        "Recorded by `ctxbed record` from scenario {} against {} model `{}`",
        scenario.name,
        config.kind.as_str(),
        config.model
    );
    let recording = match record(&scenario, config, &name) {
        Ok(recording) => recording,
        Err(error) => {
            errln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let text = match mock_toml(&recording.script) {
        Ok(text) => format!("description = {}\n{text}", toml_string(&description)),
        Err(error) => {
            errln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty())
        && let Err(error) = std::fs::create_dir_all(parent)
    {
        errln!("error: cannot create {}: {error}", parent.display());
        return ExitCode::FAILURE;
    }
    if let Err(error) = std::fs::write(&output, text) {
        errln!("error: cannot write {}: {error}", output.display());
        return ExitCode::FAILURE;
    }
    let turns = &recording.script.turns;
    let errors = turns
        .iter()
        .filter(|turn| matches!(turn.action, ctxbed_sim::mock::TurnAction::Error(_)))
        .count();
    outln!(
        "recorded {} turn(s), {errors} of them errors, to {}",
        turns.len(),
        output.display()
    );
    outln!("replay: set `model = \"{name}\"` in a copy of the scenario and run it");
    ExitCode::SUCCESS
}

/// A TOML basic string.
pub fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}
