//! The Todo list, its rules and the `todo_write` tool.

use super::*;
use crate::limits::TODO_CONTENT_CHARS_MAX;

#[test]
fn statuses_and_priorities_have_their_schema_names() {
    for status in TodoStatus::ALL {
        assert_eq!(TodoStatus::parse(status.as_str()), Some(status));
    }
    for priority in TodoPriority::ALL {
        assert_eq!(TodoPriority::parse(priority.as_str()), Some(priority));
    }
    assert_eq!(TodoStatus::parse("done"), None);
    assert_eq!(TodoPriority::parse("urgent"), None);
}

#[test]
fn every_successful_write_bumps_the_one_revision() {
    let mut state = TaskContextState::new();
    assert_eq!(state.todo_revision(), None);
    assert_eq!(
        state.write_todos(vec![item("a", TodoStatus::Pending)]),
        Ok(1)
    );
    state.set_mode(PlanMode::Plan);
    assert_eq!(
        state.write_todos(vec![item("a", TodoStatus::Pending)]),
        Ok(3)
    );
    assert_eq!(state.revision(), 3);
    assert_eq!(state.todo_revision(), Some(3));
}

#[test]
fn a_failed_write_changes_nothing() {
    let long_id = "x".repeat(crate::limits::TASK_NAME_CHARS_MAX + 1);
    let too_many: Vec<TodoItem> = (0..=TODO_ITEMS_MAX)
        .map(|n| item(&format!("i{n}"), TodoStatus::Pending))
        .collect();
    let cases: Vec<(Vec<TodoItem>, TodoError)> = vec![
        (
            vec![
                item("a", TodoStatus::InProgress),
                item("b", TodoStatus::Pending),
                item("c", TodoStatus::InProgress),
            ],
            TodoError::SeveralInProgress {
                ids: vec!["a".into(), "c".into()],
            },
        ),
        (
            vec![TodoItem::new(
                "a",
                " \n ",
                TodoStatus::Pending,
                TodoPriority::Low,
            )],
            TodoError::BlankContent { id: "a".into() },
        ),
        (
            vec![
                item("a", TodoStatus::Pending),
                item(" ", TodoStatus::Pending),
            ],
            TodoError::BlankId { position: 2 },
        ),
        (
            vec![
                item("a", TodoStatus::Pending),
                item("a", TodoStatus::Completed),
            ],
            TodoError::DuplicateId {
                id: "a".into(),
                first: 1,
                second: 2,
            },
        ),
        (
            vec![item(&long_id, TodoStatus::Pending)],
            TodoError::IdTooLong {
                position: 1,
                chars: long_id.len(),
                max: crate::limits::TASK_NAME_CHARS_MAX,
            },
        ),
        (
            vec![TodoItem::new(
                "a",
                "z".repeat(TODO_CONTENT_CHARS_MAX + 1),
                TodoStatus::Pending,
                TodoPriority::Low,
            )],
            TodoError::ContentTooLong {
                id: "a".into(),
                chars: TODO_CONTENT_CHARS_MAX + 1,
                max: TODO_CONTENT_CHARS_MAX,
            },
        ),
        (
            too_many,
            TodoError::TooMany {
                count: TODO_ITEMS_MAX + 1,
                max: TODO_ITEMS_MAX,
            },
        ),
    ];
    let mut state = TaskContextState::new();
    state
        .write_todos(vec![item("keep", TodoStatus::InProgress)])
        .expect("a valid list");
    for (items, expected) in cases {
        let before = state.clone();
        assert_eq!(state.write_todos(items), Err(TaskError::Todo(expected)));
        assert_eq!(state, before, "a failed write changed the state");
    }
}

#[test]
fn todo_write_answers_with_the_full_receipt() {
    let shared = SharedTaskState::new();
    let tool = todo::TodoWrite::new(shared.clone());
    let outcome = call_tool(
        &tool,
        json!({"todos": [
            {"id": "reproduce", "content": "Reproduce the failure", "status": "completed", "priority": "high"},
            {"id": "fix", "content": "Fix quoting\nin the writer", "status": "in_progress"},
        ]}),
    );
    assert!(!outcome.is_error);
    assert_eq!(
        outcome_text(&outcome),
        "Todo list (revision 1):\n\
         - [completed] reproduce (high): Reproduce the failure\n\
         - [in_progress] fix (medium): Fix quoting in the writer"
    );
    assert_eq!(outcome.metadata.get(TODO_REVISION_KEY), Some(&json!(1)));
    assert_eq!(shared.snapshot().todos().len(), 2);
}

#[test]
fn todo_write_refuses_bad_arguments_without_changing_the_list() {
    let shared = SharedTaskState::new();
    let tool = todo::TodoWrite::new(shared.clone());
    call_tool(
        &tool,
        json!({"todos": [{"id": "a", "content": "A", "status": "pending"}]}),
    );
    let before = shared.snapshot();
    let cases = [
        (
            json!({}),
            "invalid todo_write arguments: missing required argument `todos`",
        ),
        (
            json!({"todo": []}),
            "invalid todo_write arguments: unknown argument `todo`; did you mean `todos`?",
        ),
        (
            json!({"todos": "a, b"}),
            "invalid todo_write arguments: `todos` must be an array of items, got \"a, b\"",
        ),
        (
            json!({"todos": [{"id": "a", "content": "A", "status": "done"}]}),
            "invalid todo_write arguments: `todos[0]`: unknown status `done`;",
        ),
        (
            json!({"todos": [{"id": "a", "content": "A", "status": "pending", "owner": "me"}]}),
            "invalid todo_write arguments: `todos[0]`: unknown field `owner`;",
        ),
        (
            json!({"todos": [{"id": "a", "status": "pending"}]}),
            "invalid todo_write arguments: `todos[0]`: missing field `content`;",
        ),
        (
            json!({"todos": [
                {"id": "a", "content": "A", "status": "in_progress"},
                {"id": "b", "content": "B", "status": "in_progress"},
            ]}),
            "the Todo list was not changed: items `a`, `b` are all in_progress; at most one item \
             may be in_progress — mark the others pending or completed; the list is still at revision 1",
        ),
    ];
    for (arguments, expected) in cases {
        let outcome = call_tool(&tool, arguments);
        assert!(outcome.is_error);
        let text = outcome_text(&outcome);
        assert!(text.starts_with(expected), "{text}");
        assert_eq!(shared.snapshot(), before);
    }
}
