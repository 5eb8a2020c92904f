//! The manifest-leak check (I8): a manifest names and counts what a request holds, never its
//! text. Every string of a manifest's JSON is searched for the head and tail windows
//! ([`LEAK_WINDOW_CHARS`] characters) of every long body the step's requests and commits hold.

use std::collections::{BTreeSet, HashSet};

use super::{LEAK_WINDOW_CHARS, ViolationKind};
use crate::scenario::run::record::StepRecord;
use ctxbed_harness::context::manifest::ContextManifest;
use ctxbed_harness::message::ContentPart;
use ctxbed_harness::model::ModelRequest;

/// Head and tail windows of every long body the step's requests and commits hold.
fn body_windows(step: &StepRecord) -> BTreeSet<String> {
    let mut windows = BTreeSet::new();
    let mut add = |text: &str| {
        // Only the two ends are read: a body may be megabytes.
        let head: String = text.chars().take(LEAK_WINDOW_CHARS).collect();
        if head.chars().count() < LEAK_WINDOW_CHARS {
            return;
        }
        let mut tail: Vec<char> = text.chars().rev().take(LEAK_WINDOW_CHARS).collect();
        tail.reverse();
        windows.insert(head);
        windows.insert(tail.into_iter().collect());
    };
    let requests = step
        .requests
        .iter()
        .flat_map(|r: &ModelRequest| &r.messages);
    for message in requests.chain(&step.committed_history) {
        for part in &message.parts {
            match part {
                ContentPart::Text { text } | ContentPart::Thinking { text, .. } => add(text),
                ContentPart::RedactedThinking { data } => add(data),
                ContentPart::ToolCall(call) => {
                    add(&ctxbed_harness::format::json_text(&call.arguments))
                }
                ContentPart::ToolResult(result) => add(&result.text()),
                // An image's file is not a message body a manifest could quote.
                ContentPart::Media { .. } | ContentPart::Image(_) => {}
            }
        }
    }
    windows
}

/// I8: no manifest holds a window of a message body the step's requests or commits hold.
pub(super) fn no_leak(
    step: &StepRecord,
    manifests: &[(&ContextManifest, &str)],
    report: &mut impl FnMut(ViolationKind, String),
) {
    if manifests.is_empty() {
        return;
    }
    let windows = body_windows(step);
    if windows.is_empty() {
        return;
    }
    let known: HashSet<&str, foldhash::fast::RandomState> =
        windows.iter().map(String::as_str).collect();
    for (manifest, _) in manifests {
        // Every window of every string (and key) of the manifest's JSON, read unescaped, is
        // looked up among the bodies' windows. That is the whole of the JSON text a body could
        // show in: outside strings there are only punctuation, numbers and literals, never 32
        // characters in a row, and a body with a quote or a newline shows escaped in the text.
        let json = serde_json::to_string(manifest)
            .expect("a manifest serialises: its fields are strings and numbers");
        let mut leaked: BTreeSet<&str> = BTreeSet::new();
        for_each_string(&json, &mut |string| {
            leaked.extend(windows_of(string).filter_map(|w| known.get(w).copied()));
        });
        // Name the first window in order, whichever was seen first.
        if let Some(window) = leaked.first() {
            report(
                ViolationKind::ManifestLeak,
                format!("{} holds body text {window:?}", manifest.call_id),
            );
            return;
        }
    }
}

/// Every substring of `text` that is [`LEAK_WINDOW_CHARS`] characters long.
pub(super) fn windows_of(text: &str) -> Box<dyn Iterator<Item = &str> + '_> {
    if text.len() < LEAK_WINDOW_CHARS {
        // Fewer bytes than the window has characters.
        return Box::new(std::iter::empty());
    }
    if text.is_ascii() {
        let count = text.len() - LEAK_WINDOW_CHARS + 1;
        return Box::new((0..count).map(move |start| &text[start..start + LEAK_WINDOW_CHARS]));
    }
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain([text.len()])
        .collect();
    let count = bounds.len().saturating_sub(LEAK_WINDOW_CHARS);
    Box::new((0..count).map(move |start| &text[bounds[start]..bounds[start + LEAK_WINDOW_CHARS]]))
}

/// Shows `visit` every key and string of a JSON text, unescaped, in order. The text is
/// serde_json's own output, so it is valid JSON: outside strings there are only punctuation,
/// numbers and literals, and inside one a quote or a backslash is always escaped (and no byte
/// of a multi-byte character is ASCII).
pub(super) fn for_each_string(json: &str, visit: &mut impl FnMut(&str)) {
    let bytes = json.as_bytes();
    let mut at = 0;
    while let Some(offset) = bytes[at..].iter().position(|&b| b == b'"') {
        let open = at + offset;
        let mut end = open + 1;
        let mut escaped = false;
        while bytes[end] != b'"' {
            if bytes[end] == b'\\' {
                escaped = true;
                end += 1;
            }
            end += 1;
        }
        if escaped {
            let text: String = serde_json::from_str(&json[open..=end])
                .expect("a string of serde_json's output reads back");
            visit(&text);
        } else {
            visit(&json[open + 1..end]);
        }
        at = end + 1;
    }
}
