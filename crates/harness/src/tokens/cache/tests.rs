//! Tests of [`CachedEstimator`](super::CachedEstimator): hits, misses and what is in the key,
//! eviction, schemas and long texts counted once, and agreement with the uncached counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::message::{MediaKind, Role};
use crate::tokens::RatioEstimator;

/// Counts how often the wrapped estimator really counts a message. It reports itself exact (so
/// the cache keeps its counts by content too) unless it is an `estimate`.
#[derive(Default)]
struct Counting {
    message_count: AtomicU64,
    estimate: bool,
}

impl TokenEstimator for Counting {
    fn method(&self) -> &'static str {
        "counting"
    }
    fn exact(&self) -> bool {
        !self.estimate
    }
    fn text_tokens(&self, text: &str) -> u64 {
        RatioEstimator.text_tokens(text)
    }
    fn message_tokens(&self, message: &Message) -> u64 {
        self.message_count.fetch_add(1, Ordering::Relaxed);
        let mut total = crate::tokens::MESSAGE_OVERHEAD_TOKENS;
        for part in &message.parts {
            total += self.part_tokens(part);
        }
        total
    }
}

#[test]
fn schemas_are_counted_once_by_name_description_and_printed_parameters() {
    use serde_json::json;
    let cached = CachedEstimator::new(crate::tokens::ExactEstimator::new(
        crate::tokens::Vocabulary::O200k,
    ));
    let schema = |name: &str, parameters: serde_json::Value| ToolSchema {
        name: name.to_string(),
        description: "Runs a command.".to_string(),
        parameters,
    };
    let ordered = schema("execute", json!({"a": "x", "bb": {"c": [1, 2]}}));
    // Equal as values, printed in another order.
    let reordered = schema("execute", json!({"bb": {"c": [1, 2]}, "a": "x"}));
    assert_eq!(ordered.parameters, reordered.parameters);
    for _ in 0..2 {
        for one in [&ordered, &reordered] {
            assert_eq!(
                cached.tool_schema_tokens(one),
                cached.inner().tool_schema_tokens(one)
            );
        }
    }
    assert_eq!(
        cached.state().schemas.len(),
        2,
        "one entry per printed form"
    );
    // More schemas than the cache holds: still the inner counts, and the cache stays bounded.
    for index in 0..(SCHEMA_CACHE_ENTRIES_MAX * 2 + 3) {
        let one = schema(&format!("tool_{index}"), json!({"n": index}));
        assert_eq!(
            cached.tool_schema_tokens(&one),
            cached.inner().tool_schema_tokens(&one)
        );
    }
    assert_eq!(cached.state().schemas.len(), SCHEMA_CACHE_ENTRIES_MAX);
    assert!(!same_json_text(&json!([1, 2]), &json!([2, 1])));
    assert!(same_json_text(
        &json!({"a": [1, {"b": null}]}),
        &json!({"a": [1, {"b": null}]})
    ));
}

/// An exact estimator that counts how often it really counts a text.
#[derive(Default)]
struct CountingTexts {
    text_count: AtomicU64,
}

impl TokenEstimator for CountingTexts {
    fn method(&self) -> &'static str {
        "counting_texts"
    }
    fn exact(&self) -> bool {
        true
    }
    fn text_tokens(&self, text: &str) -> u64 {
        self.text_count.fetch_add(1, Ordering::Relaxed);
        RatioEstimator.text_tokens(text)
    }
}

#[test]
fn long_texts_of_an_exact_estimator_are_counted_once() {
    let cached = CachedEstimator::new(CountingTexts::default());
    let texts = |n: u64| cached.inner().text_count.load(Ordering::Relaxed) - n;
    let long = "Deploys happen on Fridays. ".repeat(10);
    assert!(long.len() >= TEXT_CACHE_BYTES_MIN);
    let first = cached.text_tokens(&long);
    assert_eq!(first, RatioEstimator.text_tokens(&long));
    assert_eq!(cached.text_tokens(&long.clone()), first, "the same content");
    assert_eq!(texts(0), 1, "counted once");
    // A changed text is counted again; a short one every time.
    let changed = long.replacen("Fridays", "Mondays", 1);
    assert_eq!(
        cached.text_tokens(&changed),
        RatioEstimator.text_tokens(&changed)
    );
    assert_eq!(texts(0), 2);
    for _ in 0..2 {
        cached.text_tokens("short");
    }
    assert_eq!(texts(0), 4);
    // Texts beyond the bound still count right, and the cache stays bounded.
    for index in 0..(TEXT_CACHE_ENTRIES_MAX + 5) {
        let text = format!("{long}{index}");
        assert_eq!(cached.text_tokens(&text), RatioEstimator.text_tokens(&text));
    }
    assert_eq!(cached.state().texts.entries.len(), TEXT_CACHE_ENTRIES_MAX);
    // An estimator that is not exact is never cached: counting is as cheap as hashing.
    let approximate = CachedEstimator::new(RatioEstimator);
    approximate.text_tokens(&long);
    assert!(approximate.state().texts.entries.is_empty());
}

fn counted(cached: &CachedEstimator<Counting>) -> u64 {
    cached.inner().message_count.load(Ordering::Relaxed)
}

#[test]
fn a_hit_returns_the_same_count_without_counting_again() {
    let cached = CachedEstimator::new(Counting::default());
    let message = Message::user("m1", "Check that the export fix works.");
    let first = cached.message_tokens(&message);
    let second = cached.message_tokens(&message);
    assert_eq!(first, second);
    assert_eq!(counted(&cached), 1);
    let stats = cached.stats();
    assert_eq!(
        (stats.hit_count, stats.miss_count, stats.entry_count),
        (1, 1, 1)
    );
}

#[test]
fn a_changed_message_is_counted_again() {
    let cached = CachedEstimator::new(Counting::default());
    let message = Message::user("m1", "short");
    let before = cached.message_tokens(&message);
    let mut changed = message.clone();
    changed
        .parts
        .push(ContentPart::text(" and now much longer than before"));
    let after = cached.message_tokens(&changed);
    assert_eq!(counted(&cached), 2);
    assert!(after > before);
    assert_eq!(after, Counting::default().message_tokens(&changed));
}

#[test]
fn every_counted_field_is_in_the_key() {
    let call = Message::assistant_tool_calls(
        "m2",
        vec![ContentPart::tool_call(
            "c1",
            "execute",
            serde_json::json!({"command": "ls"}),
        )],
    );
    let mut other_arguments = call.clone();
    other_arguments.parts[0] =
        ContentPart::tool_call("c1", "execute", serde_json::json!({"command": "ls -la"}));
    let result = Message::tool_result("m3", "c1", "execute", "README.md", false);
    let mut as_error = result.clone();
    as_error.parts = Message::tool_result("m3", "c1", "execute", "README.md", true)
        .parts
        .clone();
    let media = |size_bytes| {
        Message::new(
            "m4",
            Role::User,
            vec![ContentPart::Media {
                kind: MediaKind::Image,
                size_bytes,
            }],
        )
    };
    let mut named = Message::user("m5", "hi");
    named.name = Some("alice".to_string());
    let variants = [
        call,
        other_arguments,
        result,
        as_error,
        media(10),
        media(11),
        Message::user("m5", "hi"),
        named,
        Message::new("m5", Role::Assistant, vec![ContentPart::text("hi")]),
    ];
    let keys: std::collections::BTreeSet<Key> = variants.iter().map(message_key).collect();
    assert_eq!(keys.len(), variants.len());
}

#[test]
fn the_id_is_not_in_the_key() {
    let cached = CachedEstimator::new(Counting::default());
    cached.message_tokens(&Message::user("m1", "same words"));
    cached.message_tokens(&Message::user("m9", "same words"));
    assert_eq!(counted(&cached), 1);
}

#[test]
fn the_least_recently_used_entry_is_evicted() {
    let cached = CachedEstimator::with_capacity(Counting::default(), 2);
    let a = Message::user("a", "alpha");
    let b = Message::user("b", "beta");
    let c = Message::user("c", "gamma");
    cached.message_tokens(&a);
    cached.message_tokens(&b);
    cached.message_tokens(&c); // evicts a, the oldest
    assert_eq!(cached.stats().entry_count, 2);
    assert_eq!(counted(&cached), 3);
    cached.message_tokens(&c);
    cached.message_tokens(&b);
    assert_eq!(counted(&cached), 3);
    cached.message_tokens(&a);
    assert_eq!(counted(&cached), 4);
}

#[test]
fn tokens_and_hash_match_the_uncached_ones_and_follow_changes() {
    let cached = CachedEstimator::new(Counting::default());
    let message = Message::tool_result("m1", "c1", "execute", "12 passed", false);
    let expected = (
        Counting::default().message_tokens(&message),
        message_hash(&message),
    );
    assert_eq!(cached.message_tokens_and_hash(&message), expected);
    assert_eq!(cached.message_tokens_and_hash(&message), expected);
    assert_eq!(cached.message_tokens(&message), expected.0);
    assert_eq!(counted(&cached), 1);
    // The same id with other content (a pruned result, say) is counted and hashed anew.
    let pruned = Message::tool_result("m1", "c1", "execute", "[pruned]", false);
    let (tokens, hash) = cached.message_tokens_and_hash(&pruned);
    assert_eq!(counted(&cached), 2);
    assert_eq!(hash, message_hash(&pruned));
    assert_ne!(hash, expected.1);
    assert_eq!(tokens, Counting::default().message_tokens(&pruned));
    // A copy that shares no content with the first (another run's message, say) takes
    // count and hash from the content cache.
    let copy = Message::tool_result("m9", "c1", "execute", "12 passed", false);
    assert!(cached.state().memo.lookup(&copy).is_none());
    assert_eq!(cached.message_tokens_and_hash(&copy), expected);
    assert_eq!(counted(&cached), 2);
    let key = message_key(&copy);
    let remembered = cached.state().by_content.entries[&key].0.clone();
    assert_eq!(
        remembered.content_hash.as_deref(),
        Some(expected.1.as_str())
    );
    // Tool-result metadata is in the hash and not in the key: such a message's hash is
    // computed each time, never taken from another message with the same key.
    let mut marked = copy.clone();
    if let Some(ContentPart::ToolResult(result)) = marked.parts.first_mut() {
        result.metadata.insert("offloaded".into(), "true".into());
    }
    assert_eq!(message_key(&marked), key);
    let (tokens, hash) = cached.message_tokens_and_hash(&marked);
    assert_eq!(tokens, expected.0);
    assert_eq!(hash, message_hash(&marked));
    assert_ne!(hash, expected.1);
    let unmarked = Message::tool_result("m10", "c1", "execute", "12 passed", false);
    assert_eq!(cached.message_tokens_and_hash(&unmarked), expected);
}

#[test]
fn a_step_over_a_long_history_counts_only_new_messages() {
    let cached = CachedEstimator::new(Counting::default());
    let mut history: Vec<Message> = (0..500)
        .map(|index| Message::user(format!("m{index}"), format!("message number {index}")))
        .collect();
    let first = cached.request_tokens(&history, &[]);
    assert_eq!(counted(&cached), 500);
    history.push(Message::user("m500", "one more"));
    let second = cached.request_tokens(&history, &[]);
    assert_eq!(counted(&cached), 501);
    assert_eq!(second, Counting::default().request_tokens(&history, &[]));
    assert!(second > first);
}

#[test]
fn threads_share_one_cache() {
    let cached = Arc::new(CachedEstimator::new(Counting::default()));
    let messages: Vec<Message> = (0..64)
        .map(|index| Message::user(format!("m{index}"), "x".repeat(index)))
        .collect();
    let expected: Vec<u64> = messages
        .iter()
        .map(|m| RatioEstimator.message_tokens(m))
        .collect();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let cached = Arc::clone(&cached);
            let messages = messages.clone();
            std::thread::spawn(move || {
                messages
                    .iter()
                    .map(|m| cached.message_tokens(m))
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    for handle in handles {
        let Ok(counts) = handle.join() else {
            panic!("a counting thread panicked");
        };
        assert_eq!(counts, expected);
    }
    assert_eq!(cached.stats().entry_count, 64);
}

#[test]
fn an_estimate_is_remembered_by_address_only() {
    let cached = CachedEstimator::new(Counting {
        estimate: true,
        ..Counting::default()
    });
    let message = Message::user("m1", "Summarise the failures.");
    let first = cached.message_tokens_and_hash(&message);
    // The same handle is a memo hit; a copy under another id is estimated again.
    assert_eq!(cached.message_tokens_and_hash(&message), first);
    assert_eq!(counted(&cached), 1);
    let copy = Message::user("m2", "Summarise the failures.");
    let again = cached.message_tokens_and_hash(&copy);
    assert_eq!(again.0, first.0);
    assert_eq!(again.1, crate::message::message_hash(&copy));
    assert_eq!(counted(&cached), 2);
    let stats = cached.stats();
    assert_eq!((stats.hit_count, stats.miss_count), (1, 2));
}
