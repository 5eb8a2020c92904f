//! Finding and loading the mock models a scenario names (`mock-models/<name>.toml` under the
//! suite root), with a did-you-mean over the models that exist.

use ctxbed_sim::mock::MockScript;
use toml::Spanned;

use super::{Layout, path_to_name};
use crate::scenario::format::diagnostic::closest;
use crate::scenario::format::mock_file::{Checker, parse_mock};
use crate::scenario::format::source::read_source;

/// Loads the mock model `model` names; `field` is where the scenario names it
/// (`agent.model`, `agent.compaction.summary_model`).
pub(super) fn load_mock(
    checker: &mut Checker<'_>,
    layout: &Layout,
    model: &Spanned<String>,
    field: &str,
) -> Option<MockScript> {
    let name = model.get_ref();
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with('.');
    let path = layout.mock_model(name);
    if !valid_name || !path.is_file() {
        let known = known_models(layout);
        let help = match closest(name, known.iter().map(String::as_str)) {
            Some(best) => format!("did you mean `{best}` (mock-models/{best}.toml)?"),
            None if known.is_empty() => {
                "create mock-models/<name>.toml next to the scenarios directory".to_string()
            }
            None => format!("known mock models: {}", known.join(", ")),
        };
        let problem = checker
            .at(model, format!("no mock model named `{name}`"))
            .field(field)
            .help(help);
        checker.problems.push(problem);
        return None;
    }
    // Diagnostics name the file as the user can open it; traces name it relative to the suite
    // root, so goldens do not depend on how the scenario path was given.
    let label = path_to_name(&path);
    let source = match read_source(&path, &label) {
        Ok(source) => source,
        Err(problem) => {
            checker.problems.push(*problem);
            return None;
        }
    };
    match parse_mock(name, &label, &source) {
        Ok(mut script) => {
            script.file = format!("mock-models/{name}.toml");
            Some(script)
        }
        Err(problems) => {
            checker.problems.extend(problems);
            None
        }
    }
}

fn known_models(layout: &Layout) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(layout.root.join("mock-models")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .filter_map(|path| path.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}
