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
//! There is one definition of each format: the checked scenario is turned back into the raw
//! serde structs the loader reads ([`super::file`]'s, the `[network]` table's and the mock
//! model's), and serde prints them. What is written here is only what cannot be derived: the
//! names of enumerated choices, numbers and durations as the file spells them, and the
//! refusals.
//!
//! **Invariant:** for every scenario this accepts, loading the written files gives back the same
//! scenario (a property test over generated scenarios), which runs to the same trace.
//!
//! ```
//! use ctxbed::scenario::format::write::scenario_toml;
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

use super::file::raw::{RawInstruction, RawScenario, RawWorkspace};
use super::file::{Layout, Scenario};
use agent::agent;
use history::history;
use network::network;
use steps::step;
use task::task;
use tools::{source, tool};
use value::{at, each};

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
    let mut text = String::new();
    for line in comment.lines() {
        text.push_str(&format!("# {line}\n"));
    }
    text.push_str(&toml::to_string(&raw_scenario(scenario)?)?);
    Ok(text)
}

/// The scenario as the raw structs the loader reads.
fn raw_scenario(scenario: &Scenario) -> Result<RawScenario, WriteError> {
    if !scenario.expectations.is_empty() {
        return Err(unsupported("inline expectations"));
    }
    let seed = i64::try_from(scenario.seed.seed())
        .map_err(|_| unsupported(format!("seed {} (above i64::MAX)", scenario.seed)))?;
    let instructions = scenario.instructions.iter().map(|instruction| {
        at(RawInstruction {
            name: at(instruction.name.clone()),
            text: instruction.text.clone(),
        })
    });
    let workspace = RawWorkspace {
        files: scenario
            .workspace_files
            .iter()
            .map(|(path, text)| (path.clone(), at(text.clone())))
            .collect(),
        fail_writes_under: scenario.fail_writes_under.clone(),
        generated: Default::default(),
    };
    Ok(RawScenario {
        description: Some(scenario.description.clone()),
        seed: Some(at(seed)),
        agent: at(agent(scenario)?),
        tools: each(&scenario.tools, tool)?,
        instructions: instructions.collect(),
        sources: each(&scenario.sources, source)?,
        workspace,
        history: each(&scenario.history, history)?,
        steps: each(&scenario.steps, step)?,
        expect: Vec::new(),
        task: scenario.task.as_ref().map(task),
        network: scenario.network.as_ref().map(network).transpose()?,
    })
}
