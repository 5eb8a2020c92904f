//! A CLI row's own tools: a coding-agent CLI offers its own tools (a shell, a read-file tool),
//! never the scenario's scripted ones, so its adapter writes each scripted result to a file in
//! the CLI's working directory, `ctxbed-tools/<tool>-<n>.txt`, and the mock asks for that file
//! with the tool the request offers for the purpose.
//!
//! The tool is found **by structure**, never by one harness's names: a shell is a tool whose
//! only required property is a string naming a command (`command`, `cmd`, `script`), in a tool
//! whose name or description says shell, bash, command or terminal (or whose name holds `sh`);
//! a read-file tool has a required string property naming a path (`path`, `file_path`,
//! `filePath`, `absolute_path`, `file`, `filename`) and a name saying read, view or cat. The shell is
//! preferred (`cat ctxbed-tools/read_log-1.txt`); paths are relative to the CLI's working
//! directory, which its adapter starts it in.
//!
//! The file's number is the scripted tool's call count over the scenario, from 1, clamped to the
//! number of results the scenario scripts for it (calls past the end return the last result, as
//! the peer protocol defines results by call).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use ctxbed_harness::message::{ContentPart, Message, Role, ToolSchema};
use ctxbed_harness::model::{ModelReply, ModelRequest};

use super::Exchange;

/// The directory, relative to the CLI's working directory, that holds the result files.
pub const RESULTS_DIR: &str = "ctxbed-tools";

/// How the note of a request that offers a CLI no tool to read a result file with begins.
pub const NO_OWN_TOOL: &str = "no offered tool is a shell or reads a file";

/// Property names a shell tool's command goes in.
const COMMAND_PROPERTIES: [&str; 3] = ["command", "cmd", "script"];
/// Words in a tool's name or description that say it runs shell commands.
const SHELL_WORDS: [&str; 4] = ["shell", "bash", "command", "terminal"];
/// Property names a read-file tool's path goes in.
const PATH_PROPERTIES: [&str; 6] = [
    "path",
    "file_path",
    "filepath",
    "absolute_path",
    "file",
    "filename",
];
/// Words in a tool's name that say it reads a file.
const READ_WORDS: [&str; 3] = ["read", "view", "cat"];

/// What an offered tool is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnKind {
    Shell,
    ReadFile,
}

/// An offered tool the mock can read a result file with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnTool {
    /// The tool's name, as offered.
    pub name: String,
    pub kind: OwnKind,
    /// The property the command or the path goes in.
    pub property: String,
}

impl OwnTool {
    /// The arguments that read `file` (a path relative to the working directory).
    pub fn arguments(&self, file: &str) -> Value {
        let value = match self.kind {
            OwnKind::Shell => format!("cat {file}"),
            OwnKind::ReadFile => file.to_string(),
        };
        let mut arguments = serde_json::Map::new();
        arguments.insert(self.property.clone(), json!(value));
        Value::Object(arguments)
    }

    /// Why this tool was chosen, for the trace.
    pub fn why(&self) -> String {
        match self.kind {
            OwnKind::Shell => format!(
                "`{}` is a shell (one required string property `{}`)",
                self.name, self.property
            ),
            OwnKind::ReadFile => format!(
                "`{}` reads a file (a required string path `{}`) and no shell is offered",
                self.name, self.property
            ),
        }
    }
}

/// The offered tool to read a result file with: the first shell, else the first read-file tool.
pub fn find(tools: &[ToolSchema]) -> Option<OwnTool> {
    tools
        .iter()
        .find_map(shell)
        .or_else(|| tools.iter().find_map(read_file))
}

/// The required string properties of a tool's parameters, in their order.
fn required_strings(tool: &ToolSchema) -> Vec<String> {
    let properties = tool.parameters.get("properties");
    let is_string = |name: &str| {
        properties
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            == Some("string")
    };
    tool.parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .filter(|name| is_string(name))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The number of required properties of a tool's parameters, whatever their type.
fn required_count(tool: &ToolSchema) -> usize {
    tool.parameters
        .get("required")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn shell(tool: &ToolSchema) -> Option<OwnTool> {
    let strings = required_strings(tool);
    if required_count(tool) != 1 || strings.len() != 1 {
        return None;
    }
    let property = strings.into_iter().next()?;
    let said = format!("{} {}", tool.name, tool.description).to_lowercase();
    let names_command = COMMAND_PROPERTIES.contains(&property.to_lowercase().as_str());
    let says_shell = SHELL_WORDS.iter().any(|word| said.contains(word));
    let named_shell = tool.name.to_lowercase().contains("sh");
    (names_command && (says_shell || named_shell)).then(|| OwnTool {
        name: tool.name.clone(),
        kind: OwnKind::Shell,
        property,
    })
}

fn read_file(tool: &ToolSchema) -> Option<OwnTool> {
    let name = tool.name.to_lowercase();
    if !READ_WORDS.iter().any(|word| name.contains(word)) {
        return None;
    }
    let property = required_strings(tool)
        .into_iter()
        .find(|p| PATH_PROPERTIES.contains(&p.to_lowercase().as_str()))?;
    Some(OwnTool {
        name: tool.name.clone(),
        kind: OwnKind::ReadFile,
        property,
    })
}

impl super::ProviderHost {
    /// Turns a CLI row into one whose scripted calls go through its own tools
    /// (`results`: the number of results the scenario scripts per tool).
    pub fn map_calls_to_own_tools(&self, results: BTreeMap<String, usize>) {
        *self.lock_own_tools() = Some(OwnToolCalls::new(results));
    }

    fn lock_own_tools(&self) -> std::sync::MutexGuard<'_, Option<OwnToolCalls>> {
        self.own_tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// For a CLI row, the reply with each call of a tool the request does not offer made
    /// instead with the offered tool that reads its result file, the exchange's note saying
    /// which and why; when the request offers no such tool, the note says so (and the calls are
    /// answered as text, as for any row). Any other row's reply is left alone.
    pub(super) fn own_tools_mapped(
        &self,
        mut reply: ModelReply,
        request: &ModelRequest,
        exchange: &mut Exchange,
    ) -> ModelReply {
        let mut guard = self.lock_own_tools();
        let Some(calls) = guard.as_mut() else {
            return reply;
        };
        let offered = |name: &str| request.tools.iter().any(|tool| tool.name == name);
        if reply.message.tool_calls().all(|call| offered(&call.name)) {
            return reply;
        }
        let Some(own) = find(&request.tools) else {
            exchange.note = Some(format!(
                "{NO_OWN_TOOL}: the CLI cannot be given the scripted call's result ({} tool(s) offered)",
                request.tools.len()
            ));
            return reply;
        };
        let mut notes = Vec::new();
        let mut parts: Vec<ContentPart> = reply.message.parts.to_vec();
        for part in &mut parts {
            if let ContentPart::ToolCall(call) = part
                && !offered(&call.name)
            {
                let file = calls.next_file(&call.name, exchange.number);
                notes.push(format!("{} as {} {}", call.name, own.name, file));
                call.name = own.name.clone();
                call.arguments = own.arguments(&file);
            }
        }
        exchange.note = Some(format!(
            "the scripted call of {} through the CLI's own tool: {}",
            notes.join(", "),
            own.why()
        ));
        reply.message = Message::new(String::new(), Role::Assistant, parts);
        if let Some(usage) = reply.usage.as_mut() {
            usage.output_tokens = self.model.output_tokens(&reply.message);
        }
        reply
    }

    /// Forgets the result files request `number` asked for (its answer never reached the
    /// harness, so its retry asks for the same ones).
    pub(super) fn give_back_own_calls(&self, number: u64) {
        if let Some(calls) = self.lock_own_tools().as_mut() {
            calls.give_back(number);
        }
    }
}

/// The scenario's scripted tools, their result counts and how often each was called, while a
/// CLI row runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnToolCalls {
    /// Results scripted per tool (a tool missing here is clamped to nothing).
    results: BTreeMap<String, usize>,
    /// Calls made so far per scripted tool.
    calls: BTreeMap<String, usize>,
    /// The scripted tools each request's answer called, by request number.
    asked: BTreeMap<u64, Vec<String>>,
}

impl OwnToolCalls {
    /// Calls of tools scripted with `results` results each.
    pub fn new(results: BTreeMap<String, usize>) -> Self {
        OwnToolCalls {
            results,
            calls: BTreeMap::new(),
            asked: BTreeMap::new(),
        }
    }

    /// The result file of the next call of `tool`, asked by request `number`:
    /// `ctxbed-tools/<tool>-<n>.txt`.
    pub fn next_file(&mut self, tool: &str, number: u64) -> String {
        self.asked.entry(number).or_default().push(tool.to_string());
        let count = self.calls.entry(tool.to_string()).or_insert(0);
        *count += 1;
        let last = self.results.get(tool).copied().unwrap_or(usize::MAX).max(1);
        format!("{RESULTS_DIR}/{tool}-{}.txt", (*count).min(last))
    }

    /// Forgets the calls request `number` asked for (its answer never reached the harness).
    pub fn give_back(&mut self, number: u64) {
        for tool in self.asked.remove(&number).unwrap_or_default() {
            if let Some(count) = self.calls.get_mut(&tool) {
                *count = count.saturating_sub(1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str, parameters: Value) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    fn one(property: &str) -> Value {
        json!({"type": "object", "properties": {property: {"type": "string"}}, "required": [property]})
    }

    #[test]
    fn a_shell_is_preferred_to_a_read_tool() {
        let tools = [
            tool("read", "Read the contents of a file.", one("path")),
            tool("bash", "Execute a bash command.", one("command")),
        ];
        let found = find(&tools).expect("a tool");
        assert_eq!(found.kind, OwnKind::Shell);
        assert_eq!(found.name, "bash");
        assert_eq!(
            found.arguments("ctxbed-tools/read_log-1.txt"),
            json!({"command": "cat ctxbed-tools/read_log-1.txt"})
        );
    }

    #[test]
    fn a_read_tool_serves_where_no_shell_is_offered() {
        let tools = [
            tool("write", "Write a file.", one("file_path")),
            tool("read_file", "Reads a file.", one("file_path")),
        ];
        let found = find(&tools).expect("a tool");
        assert_eq!(found.kind, OwnKind::ReadFile);
        assert_eq!(
            found.arguments("ctxbed-tools/a-2.txt"),
            json!({"file_path": "ctxbed-tools/a-2.txt"})
        );
    }

    #[test]
    fn tools_of_other_shapes_are_not_taken() {
        let two = json!({"type": "object", "properties": {"command": {"type": "string"}, "cwd": {"type": "string"}}, "required": ["command", "cwd"]});
        let tools = [
            tool("bash", "Run a command.", two),
            tool("grep", "Search files.", one("pattern")),
            tool("read_log", "Read the log.", one("name")),
        ];
        assert_eq!(find(&tools), None);
    }

    #[test]
    fn files_count_calls_and_stop_at_the_last_result() {
        let mut calls = OwnToolCalls::new(BTreeMap::from([("read_log".to_string(), 2)]));
        assert_eq!(
            calls.next_file("read_log", 1),
            "ctxbed-tools/read_log-1.txt"
        );
        assert_eq!(calls.next_file("other", 1), "ctxbed-tools/other-1.txt");
        calls.give_back(1);
        assert_eq!(
            calls.next_file("read_log", 2),
            "ctxbed-tools/read_log-1.txt"
        );
        assert_eq!(
            calls.next_file("read_log", 3),
            "ctxbed-tools/read_log-2.txt"
        );
        assert_eq!(
            calls.next_file("read_log", 4),
            "ctxbed-tools/read_log-2.txt"
        );
    }
}
