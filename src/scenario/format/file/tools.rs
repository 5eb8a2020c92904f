//! Checking `[[tools]]` into [`ToolSpec`]s: names, the one output each gives, writes and plan
//! modes; and the checks across tools: unique names, denied tools that exist, no clash with a
//! built-in tool.

use std::collections::BTreeSet;

use ctxbed_harness::storage::WorkspacePath;
use toml::Spanned;

use super::checked::{ToolOutputSpec, ToolSpec};
use super::raw::{RawAgent, RawResponse, RawTool};
use super::task::plan_mode;
use super::text::{result_chars, text_kind};
use crate::scenario::format::diagnostic::closest;
use crate::scenario::format::mock_file::Checker;

/// One `[[tools]]` entry: a valid name, the one output it gives, its latency, write and plan
/// mode.
pub(super) fn tool_spec(
    checker: &mut Checker<'_>,
    index: usize,
    spanned: &Spanned<RawTool>,
) -> Option<ToolSpec> {
    let raw = spanned.get_ref();
    let field = format!("tools[{index}]");
    let name = raw.name.get_ref();
    if !ctxbed_harness::tools::is_valid_tool_name(name) {
        let problem = checker
            .at(&raw.name, format!("invalid tool name `{name}`"))
            .field(format!("{field}.name"))
            .help("use 1-64 characters from [A-Za-z0-9_-], starting with a letter or digit");
        checker.problems.push(problem);
    }
    let output = tool_output(checker, &field, spanned)?;
    let latency = checker.latency(raw.latency_ms.as_ref(), &format!("{field}.latency_ms"));
    let writes = tool_writes(checker, &field, raw);
    let sets_plan_mode = raw
        .sets_plan_mode
        .as_ref()
        .and_then(|value| plan_mode(checker, value, &format!("{field}.sets_plan_mode")));
    Some(ToolSpec {
        writes,
        sets_plan_mode,
        name: name.clone(),
        description: raw.description.clone(),
        parameters: raw
            .parameters
            .clone()
            .and_then(|table| serde_json::to_value(table).ok()),
        output,
        latency,
        fail: raw.fail.clone(),
    })
}

/// What the tool answers: by arguments (`responses`, `exit_code`), one `text`, a sequence of
/// `texts`, or generated text of `result_chars`; at most one of the last three.
fn tool_output(
    checker: &mut Checker<'_>,
    field: &str,
    spanned: &Spanned<RawTool>,
) -> Option<ToolOutputSpec> {
    let raw = spanned.get_ref();
    let outputs = usize::from(raw.text.is_some())
        + usize::from(raw.texts.is_some())
        + usize::from(raw.result_chars.is_some());
    if outputs > 1 {
        let problem = checker
            .at(
                spanned,
                "a tool gives at most one of `text`, `texts` and `result_chars`",
            )
            .field(field.to_string());
        checker.problems.push(problem);
        return None;
    }
    Some(if !raw.responses.is_empty() || raw.exit_code.is_some() {
        let response = |r: &RawResponse| ctxbed_sim::scripted::ScriptedResponse {
            when_args_contain: r.when_args_contain.clone(),
            text: r.text.clone(),
            exit_code: r.exit_code,
        };
        ToolOutputSpec::ByArguments {
            responses: raw.responses.iter().map(response).collect(),
            fallback: ctxbed_sim::scripted::ScriptedResponse {
                when_args_contain: String::new(),
                text: raw.text.clone().unwrap_or_default(),
                exit_code: raw.exit_code.unwrap_or(0),
            },
        }
    } else if let Some(text) = &raw.text {
        ToolOutputSpec::Fixed(text.clone())
    } else if let Some(texts) = &raw.texts {
        ToolOutputSpec::Sequence(texts.clone())
    } else if let Some(chars) = &raw.result_chars {
        let chars = result_chars(checker, chars, &format!("{field}.result_chars"))?;
        let kind = text_kind(checker, raw.content.as_ref(), &format!("{field}.content"))?;
        ToolOutputSpec::Generated { chars, kind }
    } else {
        ToolOutputSpec::Fixed(String::new())
    })
}

/// `writes`: the workspace file the tool writes, by checked path, and its text.
fn tool_writes(checker: &mut Checker<'_>, field: &str, raw: &RawTool) -> Option<(String, String)> {
    let write = raw.writes.as_ref()?;
    match WorkspacePath::parse(write.path.get_ref()) {
        Ok(path) => Some((path.as_str().to_string(), write.text.clone())),
        Err(error) => {
            let problem = checker
                .at(&write.path, error.to_string())
                .field(format!("{field}.writes.path"));
            checker.problems.push(problem);
            None
        }
    }
}

pub(super) fn check_unique_tools(checker: &mut Checker<'_>, tools: &[Spanned<RawTool>]) {
    let mut seen = BTreeSet::new();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.get_ref().name.get_ref();
        if !seen.insert(name.clone()) {
            let problem = checker
                .at(
                    &tool.get_ref().name,
                    format!("a tool named `{name}` is already defined"),
                )
                .field(format!("tools[{index}].name"))
                .help("tool names must be unique; rename or remove one");
            checker.problems.push(problem);
        }
    }
}

/// Every denied tool must be a tool of the scenario: a typo would silently allow it.
pub(super) fn check_denied_tools(
    checker: &mut Checker<'_>,
    agent: &Spanned<RawAgent>,
    tools: &[Spanned<RawTool>],
) {
    let builtin = agent.get_ref().builtin_tools.iter().map(|t| t.get_ref());
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t.get_ref().name.get_ref())
        .chain(builtin)
        .map(String::as_str)
        .collect();
    for denied in &agent.get_ref().deny_tools {
        let name = denied.get_ref();
        if names.contains(&name.as_str()) {
            continue;
        }
        let help = match closest(name, names.iter().copied()) {
            Some(best) => format!("did you mean `{best}`?"),
            None => "deny only tools defined under [[tools]] or listed in `agent.builtin_tools`"
                .to_string(),
        };
        let problem = checker
            .at(
                denied,
                format!("`deny_tools` names `{name}`, which is not a tool of this scenario"),
            )
            .field("agent.deny_tools")
            .help(help);
        checker.problems.push(problem);
    }
}

/// A scripted tool may not take a built-in tool's name: the registry would refuse the second.
pub(super) fn check_builtin_tool_clashes(
    checker: &mut Checker<'_>,
    agent: &Spanned<RawAgent>,
    tools: &[Spanned<RawTool>],
) {
    let builtin: Vec<&str> = agent
        .get_ref()
        .builtin_tools
        .iter()
        .map(|t| t.get_ref().as_str())
        .collect();
    for (index, tool) in tools.iter().enumerate() {
        let name = tool.get_ref().name.get_ref();
        if builtin.contains(&name.as_str()) {
            let problem = checker
                .at(
                    &tool.get_ref().name,
                    format!("a tool named `{name}` is also listed in `agent.builtin_tools`"),
                )
                .field(format!("tools[{index}].name"))
                .help("rename the scripted tool or remove the name from `builtin_tools`");
            checker.problems.push(problem);
        }
    }
}
