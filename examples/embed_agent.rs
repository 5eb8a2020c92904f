//! Embedding `ctxbed-harness` in a Rust program: a workspace directory on disk, an
//! OpenAI-compatible server (a local llama.cpp, vLLM or Ollama server, or the real API), the
//! built-in file tools, and the default context pipeline and session log.
//!
//! ```text
//! cargo run --example embed_agent -- http://127.0.0.1:8080/v1 qwen2.5-7b ./work "List the files."
//! ```
//!
//! Set `OPENAI_API_KEY` for a server that wants a key. The agent's files, offloaded tool
//! results and its session log (`sessions/…/*.jsonl`) stay in the workspace directory, so a second
//! run in the same session continues the conversation.

use std::path::Path;
use std::sync::Arc;

use ctxbed_harness::agent::HarnessAgent;
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::storage::{FsStorage, Storage};
use ctxbed_harness::tools::builtin::{BUILTIN_TOOL_NAMES, builtin_tool};
use ctxbed_providers::{HttpProvider, ProviderConfig, ProviderKind};

/// Runs one agent call against `base_url` with its workspace in `workspace`, and returns the
/// reply's text.
///
/// # Errors
/// A workspace that cannot be opened, a provider that cannot be configured, or a failed call.
pub async fn run(
    base_url: &str,
    model: &str,
    workspace: &Path,
    input: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::open(workspace)?);
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, base_url, model);
    config.context_window = Some(32_768);
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        config.api_key_env = Some("OPENAI_API_KEY".into());
    }
    let provider = HttpProvider::from_env(config)?;

    let mut builder = HarnessAgent::builder()
        .name("embedded")
        .model(Arc::new(provider))
        .sys_prompt("You are a careful coding assistant. Use the tools to read and write files.")
        .workspace(storage.clone());
    for name in BUILTIN_TOOL_NAMES {
        if let Some(tool) = builtin_tool(name, storage.clone()) {
            builder = builder.tool(tool);
        }
    }
    let agent = builder.build()?;

    let runtime = RuntimeContext::new()
        .with_user("local")
        .with_session("example");
    let reply = agent.call(input, runtime).await?;
    Ok(reply.text())
}

#[allow(dead_code)] // the tests call `run` and never `main`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base_url, model, workspace, input] = args.as_slice() else {
        eprintln!("usage: embed_agent BASE_URL MODEL WORKSPACE_DIR INPUT");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let text = runtime.block_on(run(base_url, model, Path::new(workspace), input))?;
    println!("{text}");
    Ok(())
}
