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
mod agent;
mod history;
mod mock;
mod network;
mod steps;
mod task;
mod tools;
mod value;

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::file::{Layout, Scenario};
use agent::agent;
use history::history;
use network::network;
use steps::step;
use task::task;
use tools::{source, tool};
use value::{insert_array, string_map, strings};

pub use mock::mock_toml;

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
    let seed = i64::try_from(scenario.seed.seed())
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
