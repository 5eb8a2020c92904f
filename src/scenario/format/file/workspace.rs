//! Checking `[workspace]`: the files a scenario starts with, given as text or generated
//! (`[workspace.generated]`, seeded per path).

use std::collections::BTreeMap;

use ctxbed_harness::storage::WorkspacePath;
use ctxbed_sim::rng::SeedStream;
use ctxbed_sim::text::generate_text;

use super::raw::RawWorkspace;
use super::text::{result_chars, text_kind};
use crate::scenario::format::mock_file::Checker;

pub(super) fn workspace_files(
    checker: &mut Checker<'_>,
    raw: &RawWorkspace,
) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for (path, content) in &raw.files {
        match WorkspacePath::parse(path) {
            Ok(checked) => {
                files.insert(checked.as_str().to_string(), content.get_ref().clone());
            }
            Err(error) => {
                let problem = checker
                    .at(content, format!("workspace file `{path}`: {error}"))
                    .field(format!("workspace.files.\"{path}\""));
                checker.problems.push(problem);
            }
        }
    }
    files
}

/// Adds `[workspace.generated]` files: deterministic text of an exact length per path, e.g.
/// `"big.log" = { chars = 200000, content = "log" }`, seeded per path from the workspace stream.
pub(super) fn generated_files(
    checker: &mut Checker<'_>,
    workspace: SeedStream,
    raw: &RawWorkspace,
    files: &mut BTreeMap<String, String>,
) {
    for (path, spanned) in &raw.generated {
        let field = format!("workspace.generated.\"{path}\"");
        let checked = match WorkspacePath::parse(path) {
            Ok(checked) => checked,
            Err(error) => {
                let problem = checker
                    .at(spanned, format!("workspace file `{path}`: {error}"))
                    .field(field);
                checker.problems.push(problem);
                continue;
            }
        };
        if files.contains_key(checked.as_str()) {
            let problem = checker
                .at(
                    spanned,
                    format!("workspace file `{path}` is also given under [workspace.files]"),
                )
                .field(field)
                .help("give each workspace file once");
            checker.problems.push(problem);
            continue;
        }
        let generated = spanned.get_ref();
        let Some(chars) = result_chars(checker, &generated.chars, &format!("{field}.chars")) else {
            continue;
        };
        let Some(kind) = text_kind(
            checker,
            generated.content.as_ref(),
            &format!("{field}.content"),
        ) else {
            continue;
        };
        let seed = workspace.seed_for(&format!("/{checked}"));
        files.insert(checked.to_string(), generate_text(kind, chars, seed));
    }
}
