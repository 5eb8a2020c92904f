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
        let Some(head_end) = text
            .char_indices()
            .map(|(at, _)| at)
            .chain([text.len()])
            .nth(LEAK_WINDOW_CHARS)
        else {
            return;
        };
        let tail_start = text
            .char_indices()
            .nth_back(LEAK_WINDOW_CHARS - 1)
            .map_or(0, |(at, _)| at);
        windows.insert(text[..head_end].to_string());
        windows.insert(text[tail_start..].to_string());
    };
    let requests = step
        .requests
        .iter()
        .flat_map(|r: &ModelRequest| &r.messages);
    // Requests repeat the history: each message's shared content is read once.
    let mut seen: HashSet<usize, foldhash::fast::RandomState> = HashSet::default();
    for message in requests.chain(&step.committed_history) {
        if !seen.insert(message.content_address()) {
            continue;
        }
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
    let heads = Heads::of(&windows);
    for (manifest, _) in manifests {
        // Every window of every string (and key) of the manifest's JSON, read unescaped, is
        // looked up among the bodies' windows. That is the whole of the JSON text a body could
        // show in: outside strings there are only punctuation, numbers and literals, never 32
        // characters in a row, and a body with a quote or a newline shows escaped in the text.
        let json = serde_json::to_string(manifest)
            .expect("a manifest serialises: its fields are strings and numbers");
        let mut leaked: BTreeSet<&str> = BTreeSet::new();
        for_each_string(&json, &mut |string| {
            for_each_window(string, &mut |window| {
                if heads.may_start(window)
                    && let Some(&body) = known.get(window)
                {
                    leaked.insert(body);
                }
            });
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

/// A filter over the first eight bytes of the known windows: a window whose first bytes are not
/// in it is no known window, so nearly every window of a manifest costs a load and a multiply
/// instead of hashing its 32 characters. A window has at least 32 bytes.
struct Heads {
    bits: Vec<u64>,
}

// A window holds at least as many bytes as characters: eight for the filter.
const _: () = assert!(LEAK_WINDOW_CHARS >= 8);

impl Heads {
    /// Bits of the filter's index: 65,536 bits for a step's few hundred windows.
    const INDEX_BITS: u32 = 16;

    fn of(windows: &BTreeSet<String>) -> Self {
        let mut bits = vec![0u64; (1 << Self::INDEX_BITS) / 64];
        for window in windows {
            let slot = Self::slot(window);
            bits[slot / 64] |= 1 << (slot % 64);
        }
        Heads { bits }
    }

    fn slot(window: &str) -> usize {
        let head = u64::from_le_bytes(
            window.as_bytes()[..8]
                .try_into()
                .expect("a window has at least eight bytes"),
        );
        (head.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - Self::INDEX_BITS)) as usize
    }

    /// False when `window` is certainly none of the known windows.
    fn may_start(&self, window: &str) -> bool {
        let slot = Self::slot(window);
        self.bits[slot / 64] & (1 << (slot % 64)) != 0
    }
}

/// Shows `visit` every substring of `text` that is [`LEAK_WINDOW_CHARS`] characters long, in
/// order.
pub(super) fn for_each_window<'t>(text: &'t str, visit: &mut impl FnMut(&'t str)) {
    if text.len() < LEAK_WINDOW_CHARS {
        // Fewer bytes than the window has characters.
        return;
    }
    if text.is_ascii() {
        for start in 0..=text.len() - LEAK_WINDOW_CHARS {
            visit(&text[start..start + LEAK_WINDOW_CHARS]);
        }
        return;
    }
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain([text.len()])
        .collect();
    for start in 0..bounds.len().saturating_sub(LEAK_WINDOW_CHARS) {
        visit(&text[bounds[start]..bounds[start + LEAK_WINDOW_CHARS]]);
    }
}

/// Shows `visit` every key and string of a JSON text, unescaped, in order. The text is
/// serde_json's own output, so it is valid JSON: outside strings there are only punctuation,
/// numbers and literals, and inside one a quote or a backslash is always escaped (and no byte
/// of a multi-byte character is ASCII).
pub(super) fn for_each_string(json: &str, visit: &mut impl FnMut(&str)) {
    let bytes = json.as_bytes();
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'"', &bytes[at..]) {
        let open = at + offset;
        let mut end = open + 1;
        let mut escaped = false;
        // The closing quote is the first quote not after a backslash.
        loop {
            end += memchr::memchr2(b'"', b'\\', &bytes[end..])
                .expect("a string of serde_json's output is closed");
            if bytes[end] == b'"' {
                break;
            }
            escaped = true;
            end += 2;
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
