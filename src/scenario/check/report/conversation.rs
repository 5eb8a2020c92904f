//! The kept conversation of a preparation as the report shows it: [`Entry`]s built from the
//! manifest's message items and the request that was sent.

use super::{Entry, MessageView};
use ctxbed_harness::context::manifest::{ContextManifest, ItemKind, ManifestItem};
use ctxbed_harness::context::render::{
    REFERENCE_MESSAGE_ID, SYSTEM_MESSAGE_ID, TRANSIENT_MESSAGE_ID,
};
use ctxbed_harness::message::Role;
use ctxbed_harness::model::{ModelRequest, Purpose};

/// The kept conversation of a preparation, as entries: a tool call with its results, the
/// compaction summary, any other message. The rendered System, transient and reference
/// messages are left out.
pub(super) fn conversation(
    manifest: &ContextManifest,
    request: Option<&ModelRequest>,
) -> Vec<Entry> {
    let mut entries: Vec<Entry> = Vec::new();
    let messages = manifest.items.iter().filter_map(|item| match &item.kind {
        ItemKind::Message { role, part_kinds } => Some((item, *role, part_kinds)),
        _ => None,
    });
    for (item, role, part_kinds) in messages {
        if [
            SYSTEM_MESSAGE_ID,
            TRANSIENT_MESSAGE_ID,
            REFERENCE_MESSAGE_ID,
        ]
        .contains(&item.id.as_str())
        {
            continue;
        }
        let view = message_view(item, role, part_kinds, request);
        if role == Role::Tool
            && let Some(Entry::Exchange { results, .. }) = entries.last_mut()
        {
            results.push(view);
            continue;
        }
        let is_summary = manifest.purpose == Purpose::Reasoning && item.id.starts_with("summary-");
        entries.push(if part_kinds.contains(&"tool_call") {
            Entry::Exchange {
                call: view,
                results: Vec::new(),
            }
        } else if is_summary {
            Entry::Summary(view)
        } else {
            Entry::Message(view)
        });
    }
    entries
}

/// One message as the report shows it, with the calls and results the sent request holds.
fn message_view(
    item: &ManifestItem,
    role: Role,
    part_kinds: &[&'static str],
    request: Option<&ModelRequest>,
) -> MessageView {
    let sent = request.and_then(|request| request.messages.iter().find(|m| m.id == item.id));
    MessageView {
        id: item.id.clone(),
        role,
        tokens: item.tokens,
        parts: part_kinds.join("+"),
        calls: sent
            .map(|m| {
                m.tool_calls()
                    .map(|call| (call.id.clone(), call.name.clone()))
                    .collect()
            })
            .unwrap_or_default(),
        results: sent
            .map(|m| {
                m.tool_results()
                    .map(|r| (r.call_id.clone(), r.tool_name.clone(), r.is_error))
                    .collect()
            })
            .unwrap_or_default(),
    }
}
