//! The checks that look past one request: durable history against the session log (I5) and the
//! Todo list across compactions (I6).
//!
//! **I5.** Every message a step commits to its session's working history must also be in that
//! session's log: some `message` record of its id holds exactly that message. A message changed
//! in place (offload, pruning, argument truncation) is logged again as a new version, so every
//! committed version is durable, whatever compaction later does to the working copy. History the
//! application loaded is committed too, and is looked for like the rest. A step whose session
//! log could not be written (a `session_log_failed` event) acknowledged nothing as durable, so
//! I5 does not hold it to its commits: a restart may lose them. The next step that writes the
//! log is held to them again, because its committed history still contains them.
//!
//! **I6.** The checker reads the Todo list from the `todo_write` receipts the trace recorded
//! (successful results only: a refused write changes nothing) and requires every reasoning
//! request sent after a receipt to show each of its items, through the receipt itself or the
//! `TASK_STATE` projection, however much history was compacted, pruned or offloaded since.

use std::collections::{BTreeMap, HashSet};

use super::{Violation, ViolationKind};
use crate::scenario::check::outcome::RunOutput;
use crate::scenario::format::file::Scenario;
use ctxbed_harness::agent::events::EventKind;
use ctxbed_harness::message::{ContentPart, Message, ToolOutput};
use ctxbed_harness::model::{ModelRequest, Purpose};
use ctxbed_harness::task::todo::TODO_WRITE_TOOL;

/// (user id, session id), as the runner keys session logs.
type SessionKey = (Option<String>, Option<String>);

/// One session's log as the check reads it: every logged version of each message id, and the
/// committed messages already found among them, by shared content (later steps commit the same
/// messages again, and each is compared once).
struct Logged {
    versions: BTreeMap<String, Vec<Message>>,
    durable: HashSet<usize, foldhash::fast::RandomState>,
}

/// The record kind the agent writes for each committed message.
const MESSAGE_RECORD: &str = "message";
/// The first line of every Todo receipt.
const RECEIPT_PREFIX: &str = "Todo list (revision ";

/// I5: every message committed during a step is in its session's log: some `message` record
/// of its id holds exactly the committed message.
pub(super) fn durable_history(scenario: &Scenario, output: &RunOutput) -> Vec<Violation> {
    if !scenario.agent.session_log {
        return Vec::new();
    }
    let mut logged: BTreeMap<SessionKey, Logged> = BTreeMap::new();
    let mut found = Vec::new();
    for step in &output.trace.steps {
        if step.session_log_failed() {
            continue;
        }
        let key = (step.spec.user.clone(), step.spec.session.clone());
        let Some(records) = output.session_logs.get(&key) else {
            found.push(Violation {
                kind: ViolationKind::CommittedMessageLost,
                step: Some(step.index),
                detail: "the session has no log although the session log is on".to_string(),
            });
            continue;
        };
        let Logged { versions, durable } = logged.entry(key).or_insert_with(|| Logged {
            versions: message_records(records),
            durable: HashSet::default(),
        });
        for message in &step.committed_history {
            let content = message.content_address();
            if durable.contains(&content) {
                continue;
            }
            let detail = match versions.get(&message.id) {
                None => format!(
                    "committed message `{}` has no `message` record in the session log",
                    message.id
                ),
                Some(versions) if versions.contains(message) => {
                    durable.insert(content);
                    continue;
                }
                Some(versions) => format!(
                    "committed message `{}` ({}) differs from all {} logged version(s)",
                    message.id,
                    message.role.as_str(),
                    versions.len()
                ),
            };
            found.push(Violation {
                kind: ViolationKind::CommittedMessageLost,
                step: Some(step.index),
                detail,
            });
        }
    }
    found
}

/// Every logged version of each message id, in log order. A record that is not a message is
/// kept under the empty id, so it cannot stand in for any message.
fn message_records(
    records: &[ctxbed_harness::session::SessionRecord],
) -> BTreeMap<String, Vec<Message>> {
    let mut versions: BTreeMap<String, Vec<Message>> = BTreeMap::new();
    for record in records.iter().filter(|r| r.kind == MESSAGE_RECORD) {
        match record.payload.parse::<Message>() {
            Ok(message) => versions
                .entry(message.id.clone())
                .or_default()
                .push(message),
            Err(_) => {
                versions.entry(String::new()).or_default();
            }
        }
    }
    versions
}

/// I6: after a successful `todo_write`, every reasoning request of that session shows every
/// item of the list (task state belongs to a session).
pub(super) fn todo_survives(scenario: &Scenario, output: &RunOutput) -> Vec<Violation> {
    if !scenario.agent.task_list || scenario.agent.react {
        return Vec::new();
    }
    let mut lists: BTreeMap<(Option<String>, Option<String>), Vec<String>> = BTreeMap::new();
    let mut found = Vec::new();
    for step in &output.trace.steps {
        let session = (step.spec.user.clone(), step.spec.session.clone());
        let items = lists.entry(session).or_default();
        let mut next_request = 0;
        for event in &step.events {
            match &event.kind {
                EventKind::ToolResult { result, .. }
                    if result.tool_name == TODO_WRITE_TOOL && !result.is_error =>
                {
                    if let Some(receipt) = receipt_items(&result.text()) {
                        *items = receipt;
                    }
                }
                EventKind::ModelCallStarted { request_id } => {
                    let Some(offset) = step.requests[next_request..]
                        .iter()
                        .position(|r| r.call_id == *request_id)
                    else {
                        continue;
                    };
                    let request = &step.requests[next_request + offset];
                    next_request += offset + 1;
                    if request.purpose != Purpose::Reasoning {
                        continue;
                    }
                    if let Some(missing) = missing_item(request, items) {
                        found.push(Violation {
                            kind: ViolationKind::TodoLost,
                            step: Some(step.index),
                            detail: format!(
                                "request {} does not show the Todo item `{missing}`",
                                request.call_id
                            ),
                        });
                    }
                }
                _ => {}
            }
        }
    }
    found
}

/// The item lines of a receipt, or `None` when the text is not one.
fn receipt_items(text: &str) -> Option<Vec<String>> {
    let mut lines = text.lines();
    lines.next()?.strip_prefix(RECEIPT_PREFIX)?;
    Some(
        lines
            .filter(|line| line.starts_with("- ["))
            .map(str::to_string)
            .collect(),
    )
}

/// The first item line no message of the request shows.
fn missing_item<'a>(request: &ModelRequest, items: &'a [String]) -> Option<&'a str> {
    let texts: Vec<&str> = request
        .messages
        .iter()
        .flat_map(|message| &message.parts)
        .flat_map(|part| match part {
            ContentPart::Text { text } => vec![text.as_str()],
            ContentPart::ToolResult(result) => result
                .outputs
                .iter()
                .filter_map(|output| match output {
                    ToolOutput::Text { text } => Some(text.as_str()),
                    ToolOutput::Media { .. } => None,
                })
                .collect(),
            _ => Vec::new(),
        })
        .collect();
    items
        .iter()
        .find(|item| !texts.iter().any(|text| text.contains(item.as_str())))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receipts_are_read_back_into_item_lines() {
        let text = "Todo list (revision 2):\n- [pending] a (high): A\n- [completed] b (low): B";
        assert_eq!(
            receipt_items(text),
            Some(vec![
                "- [pending] a (high): A".to_string(),
                "- [completed] b (low): B".to_string()
            ])
        );
        assert_eq!(receipt_items("Todo list recorded at revision 1"), None);
    }

    #[test]
    fn a_request_without_an_item_is_found() {
        let items = vec!["- [pending] a (high): A".to_string()];
        let mut request = ModelRequest {
            call_id: "call-1/r1".into(),
            purpose: Purpose::Reasoning,
            messages: vec![Message::user("m1", "nothing here")].into(),
            tools: Default::default(),
            max_output_tokens: None,
        };
        assert_eq!(missing_item(&request, &items), Some(items[0].as_str()));
        request.messages.push_back(Message::user(
            "task_state",
            "<TASK_STATE>\n- [pending] a (high): A\n</TASK_STATE>",
        ));
        assert_eq!(missing_item(&request, &items), None);
    }
}
