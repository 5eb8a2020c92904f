//! The Todo list: items, their rules, the receipt, and the `todo_write` tool.
//!
//! A write replaces the whole list, as in common agent harnesses: the model sends every item
//! each time, and an omitted item is gone. The whole list is validated before anything changes
//! (non-blank unique ids, non-blank content, at most one `in_progress` item, at most
//! [`TODO_ITEMS_MAX`] items), so a failed write changes nothing — not even the revision.
//!
//! Every successful write bumps the task revision and answers with a **receipt**: the full list
//! as recorded, whose first line is `Todo list (revision R):`. The receipt's result carries the
//! revision in its metadata under [`TODO_REVISION_KEY`], so projections can tell the current
//! receipt from obsolete ones even after the text was shortened.
//!
//! ```
//! use ctxbed_harness::task::todo::{render_receipt, TodoItem, TodoPriority, TodoStatus};
//! let items = vec![
//!     TodoItem::new("reproduce", "Reproduce the failure", TodoStatus::Completed, TodoPriority::High),
//!     TodoItem::new("fix", "Fix quoting", TodoStatus::InProgress, TodoPriority::High),
//!     TodoItem::new("verify", "Run the export tests", TodoStatus::Pending, TodoPriority::Medium),
//! ];
//! assert_eq!(
//!     render_receipt(&items, 3),
//!     "Todo list (revision 3):\n\
//!      - [completed] reproduce (high): Reproduce the failure\n\
//!      - [in_progress] fix (high): Fix quoting\n\
//!      - [pending] verify (medium): Run the export tests"
//! );
//! ```

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{SharedTaskState, StateSource, TaskContextState, TaskError};
use crate::format::snippet;
use crate::limits::{TASK_NAME_CHARS_MAX, TODO_CONTENT_CHARS_MAX, TODO_ITEMS_MAX};
use crate::message::ToolCall;
use crate::tools::args::{ArgumentError, Arguments};
use crate::tools::{Tool, ToolContext, ToolOutcome, ToolSchema};

/// The tool's registered name.
pub const TODO_WRITE_TOOL: &str = "todo_write";

/// Result metadata key holding the revision a receipt recorded (a JSON integer).
pub const TODO_REVISION_KEY: &str = "ctxbed.todo_revision";

/// Characters of a model-given id or value quoted back in an error.
const QUOTED_CHARS: usize = 40;

/// Where an item stands.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

impl TodoStatus {
    /// Every status, in the order the schema lists them.
    pub const ALL: [TodoStatus; 3] = [
        TodoStatus::Pending,
        TodoStatus::InProgress,
        TodoStatus::Completed,
    ];

    /// The name in the tool schema and the receipt.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
        }
    }

    /// The status with this name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == name)
    }
}

/// How important an item is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum TodoPriority {
    High,
    Medium,
    Low,
}

impl TodoPriority {
    /// Every priority, in the order the schema lists them.
    pub const ALL: [TodoPriority; 3] =
        [TodoPriority::High, TodoPriority::Medium, TodoPriority::Low];

    /// The name in the tool schema and the receipt.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoPriority::High => "high",
            TodoPriority::Medium => "medium",
            TodoPriority::Low => "low",
        }
    }

    /// The priority with this name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|priority| priority.as_str() == name)
    }
}

/// One step of work.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TodoItem {
    /// Unique within the list; at most [`TASK_NAME_CHARS_MAX`] characters.
    pub id: String,
    /// The step, in a sentence; at most [`TODO_CONTENT_CHARS_MAX`] characters.
    pub content: String,
    pub status: TodoStatus,
    pub priority: TodoPriority,
}

impl TodoItem {
    /// An item.
    pub fn new(
        id: impl Into<String>,
        content: impl Into<String>,
        status: TodoStatus,
        priority: TodoPriority,
    ) -> Self {
        TodoItem {
            id: id.into(),
            content: content.into(),
            status,
            priority,
        }
    }
}

/// Why a Todo list was refused. Positions are 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TodoError {
    #[error(
        "the list has {count} items; at most {max} — merge small steps, or keep a longer plan in a file"
    )]
    TooMany { count: usize, max: usize },
    #[error("item {position} has a blank id; give every item a short unique id")]
    BlankId { position: usize },
    #[error("item {position} has an id of {chars} characters; at most {max}")]
    IdTooLong {
        position: usize,
        chars: usize,
        max: usize,
    },
    #[error("items {first} and {second} share the id `{id}`; ids must be unique")]
    DuplicateId {
        id: String,
        first: usize,
        second: usize,
    },
    #[error("item `{id}` has blank content; describe the step in a sentence")]
    BlankContent { id: String },
    #[error("item `{id}` has content of {chars} characters; at most {max}")]
    ContentTooLong {
        id: String,
        chars: usize,
        max: usize,
    },
    #[error(
        "items {} are all in_progress; at most one item may be in_progress — mark the others pending or completed",
        .ids.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", ")
    )]
    SeveralInProgress { ids: Vec<String> },
}

/// Checks a whole list against the Todo rules.
///
/// # Errors
/// The first broken rule, in list order: count, then per item id and content, then the
/// `in_progress` rule.
pub fn validate(items: &[TodoItem]) -> Result<(), TodoError> {
    if items.len() > TODO_ITEMS_MAX {
        return Err(TodoError::TooMany {
            count: items.len(),
            max: TODO_ITEMS_MAX,
        });
    }
    for (index, item) in items.iter().enumerate() {
        let position = index + 1;
        if item.id.trim().is_empty() {
            return Err(TodoError::BlankId { position });
        }
        let chars = item.id.chars().count();
        if chars > TASK_NAME_CHARS_MAX {
            return Err(TodoError::IdTooLong {
                position,
                chars,
                max: TASK_NAME_CHARS_MAX,
            });
        }
        if let Some(first) = items[..index].iter().position(|other| other.id == item.id) {
            return Err(TodoError::DuplicateId {
                id: snippet(&item.id, QUOTED_CHARS),
                first: first + 1,
                second: position,
            });
        }
        if item.content.trim().is_empty() {
            return Err(TodoError::BlankContent {
                id: snippet(&item.id, QUOTED_CHARS),
            });
        }
        let chars = item.content.chars().count();
        if chars > TODO_CONTENT_CHARS_MAX {
            return Err(TodoError::ContentTooLong {
                id: snippet(&item.id, QUOTED_CHARS),
                chars,
                max: TODO_CONTENT_CHARS_MAX,
            });
        }
    }
    let in_progress: Vec<String> = items
        .iter()
        .filter(|item| item.status == TodoStatus::InProgress)
        .map(|item| snippet(&item.id, QUOTED_CHARS))
        .collect();
    if in_progress.len() > 1 {
        return Err(TodoError::SeveralInProgress { ids: in_progress });
    }
    Ok(())
}

/// The receipt of a list recorded at `revision`: a `Todo list (revision R):` line, then one line
/// per item (`- [status] id (priority): content`), or `(no items)`.
pub fn render_receipt(items: &[TodoItem], revision: u64) -> String {
    let mut text = format!("Todo list (revision {revision}):");
    if items.is_empty() {
        text.push_str("\n(no items)");
    }
    for item in items {
        text.push_str(&format!(
            "\n- [{}] {} ({}): {}",
            item.status.as_str(),
            one_line(&item.id),
            item.priority.as_str(),
            one_line(item.content.trim())
        ));
    }
    text
}

/// The revision a receipt's text records, read from its first line.
pub fn receipt_revision(text: &str) -> Option<u64> {
    let first = text.lines().next()?;
    first
        .strip_prefix("Todo list (revision ")?
        .strip_suffix("):")?
        .parse()
        .ok()
}

/// Text on one line: line breaks and other control characters become spaces.
pub(super) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

impl TaskContextState {
    /// Replaces the whole Todo list and returns the new revision. Every successful write bumps
    /// the revision, even when the list is unchanged: each receipt records its own revision.
    ///
    /// # Errors
    /// [`TaskError::Todo`] when the list breaks a rule; nothing changes.
    pub fn write_todos(&mut self, items: Vec<TodoItem>) -> Result<u64, TaskError> {
        validate(&items)?;
        self.todos = items;
        let revision = self.bump();
        self.todo_revision = Some(revision);
        Ok(revision)
    }

    /// The current Todo list.
    pub fn todos(&self) -> &[TodoItem] {
        &self.todos
    }

    /// The revision of the last successful Todo write; `None` before the first.
    pub fn todo_revision(&self) -> Option<u64> {
        self.todo_revision
    }

    /// The full receipt of the current list, or `None` before the first write.
    pub fn todo_receipt(&self) -> Option<String> {
        self.todo_revision
            .map(|revision| render_receipt(&self.todos, revision))
    }
}

/// The `todo_write` tool: replaces the Todo list and answers with its receipt.
pub struct TodoWrite {
    schema: ToolSchema,
    state: StateSource,
}

impl TodoWrite {
    /// The tool over one shared task state.
    pub fn new(state: SharedTaskState) -> Self {
        Self::over(StateSource::Shared(state))
    }

    /// The tool over the state `state` resolves for each call's session.
    pub fn over(state: StateSource) -> Self {
        let statuses: Vec<&str> = TodoStatus::ALL.iter().map(|s| s.as_str()).collect();
        let priorities: Vec<&str> = TodoPriority::ALL.iter().map(|p| p.as_str()).collect();
        TodoWrite {
            schema: ToolSchema {
                name: TODO_WRITE_TOOL.to_string(),
                description: "Replace your Todo list for the current work. Send every item each \
                    time; an item you leave out is removed. At most one item may be in_progress. \
                    The result is the list as recorded, with its revision. Completed items record \
                    progress; they do not declare the task finished."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "todos": {
                            "type": "array",
                            "description": "The complete list, in order.",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "id": {"type": "string", "description": "Short unique id, e.g. `fix-quoting`."},
                                    "content": {"type": "string", "description": "The step, in a sentence."},
                                    "status": {"type": "string", "enum": statuses},
                                    "priority": {"type": "string", "enum": priorities, "description": "Default `medium`."},
                                },
                                "required": ["id", "content", "status"],
                            },
                        },
                    },
                    "required": ["todos"],
                }),
            },
            state,
        }
    }
}

impl std::fmt::Debug for TodoWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TodoWrite").finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for TodoWrite {
    fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    async fn call(&self, call: &ToolCall, context: &ToolContext) -> ToolOutcome {
        let items = match parse_items(&self.schema, &call.arguments) {
            Ok(items) => items,
            Err(error) => return error.outcome(&self.schema),
        };
        self.state
            .resolve(&context.runtime)
            .with(|state| match state.write_todos(items) {
                Ok(revision) => {
                    let mut outcome = ToolOutcome::text(render_receipt(state.todos(), revision));
                    outcome
                        .metadata
                        .insert(TODO_REVISION_KEY.to_string(), json!(revision));
                    outcome
                }
                Err(error) => ToolOutcome::error(format!(
                    "{error}; the list is still at revision {}",
                    state.todo_revision().unwrap_or(0)
                )),
            })
    }
}

/// The fields of one item, for errors.
const ITEM_FIELDS: [&str; 4] = ["id", "content", "status", "priority"];

/// The shape of one item, for errors.
const ITEM_SHAPE: &str = concat!(
    "{\"id\": string, \"content\": string, ",
    "\"status\": \"pending\" | \"in_progress\" | \"completed\", ",
    "\"priority\": \"high\" | \"medium\" | \"low\"}",
);

/// Reads the `todos` argument into items, naming the item and field of the first mistake.
fn parse_items(schema: &ToolSchema, arguments: &Value) -> Result<Vec<TodoItem>, ArgumentError> {
    Arguments::parse(schema, arguments)?;
    let Some(todos) = arguments.get("todos") else {
        return Err(ArgumentError::new("missing required argument `todos`"));
    };
    let Value::Array(entries) = todos else {
        return Err(ArgumentError::new(format!(
            "`todos` must be an array of items, got {}",
            snippet(&todos.to_string(), QUOTED_CHARS)
        )));
    };
    if entries.len() > TODO_ITEMS_MAX {
        return Err(ArgumentError::new(
            TodoError::TooMany {
                count: entries.len(),
                max: TODO_ITEMS_MAX,
            }
            .to_string(),
        ));
    }
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            parse_item(entry).map_err(|problem| {
                ArgumentError::new(format!(
                    "`todos[{index}]`: {problem}; each item is {ITEM_SHAPE}"
                ))
            })
        })
        .collect()
}

/// One item, or what is wrong with it.
fn parse_item(entry: &Value) -> Result<TodoItem, String> {
    let Value::Object(object) = entry else {
        return Err(format!(
            "must be an object, got {}",
            snippet(&entry.to_string(), QUOTED_CHARS)
        ));
    };
    if let Some(key) = object
        .keys()
        .find(|key| !ITEM_FIELDS.contains(&key.as_str()))
    {
        return Err(format!("unknown field `{}`", snippet(key, QUOTED_CHARS)));
    }
    let id = string_field(object, "id", TASK_NAME_CHARS_MAX)?
        .ok_or_else(|| "missing field `id`".to_string())?;
    let content = string_field(object, "content", TODO_CONTENT_CHARS_MAX)?
        .ok_or_else(|| "missing field `content`".to_string())?;
    let status = string_field(object, "status", QUOTED_CHARS)?
        .ok_or_else(|| "missing field `status`".to_string())?;
    let status = TodoStatus::parse(status)
        .ok_or_else(|| format!("unknown status `{}`", snippet(status, QUOTED_CHARS)))?;
    let priority = match string_field(object, "priority", QUOTED_CHARS)? {
        None => TodoPriority::Medium,
        Some(name) => TodoPriority::parse(name)
            .ok_or_else(|| format!("unknown priority `{}`", snippet(name, QUOTED_CHARS)))?,
    };
    Ok(TodoItem::new(id, content, status, priority))
}

/// An optional string field of at most `max_chars` characters; `null` counts as absent.
fn string_field<'a>(
    object: &'a Map<String, Value>,
    name: &str,
    max_chars: usize,
) -> Result<Option<&'a str>, String> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            let chars = text.chars().count();
            if chars > max_chars {
                return Err(format!(
                    "`{name}` is {chars} characters long; at most {max_chars}"
                ));
            }
            Ok(Some(text.as_str()))
        }
        Some(other) => Err(format!(
            "`{name}` must be a string, got {}",
            snippet(&other.to_string(), QUOTED_CHARS)
        )),
    }
}
