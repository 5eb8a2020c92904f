//! The defaults the specification names, asserted through behaviour with nothing overridden:
//! argument truncation (25 messages or 40,000 tokens, the latest 20 protected, strings over
//! 2,000 characters), `keep_messages = 20`, and the offload defaults (over 80,000 characters,
//! 2,000-character head and tail previews, `large_tool_results/`), and workspace material bounded
//! at 8,000 tokens.

use ctxbed_harness::compaction::config::{CompactionConfig, TruncateArgsConfig};
use ctxbed_harness::compaction::truncate::truncate_args;
use ctxbed_harness::context::offload::{OffloadConfig, offload};
use ctxbed_harness::message::{ContentPart, Message};
use ctxbed_harness::storage::{MemoryStorage, Storage};

/// `rounds` tool calls whose only argument is `chars` characters long, each with its result.
fn calls_with_arguments(rounds: usize, chars: usize) -> Vec<Message> {
    let mut history = Vec::new();
    for round in 0..rounds {
        let id = format!("c{round}");
        history.push(Message::assistant_tool_calls(
            format!("a{round}"),
            vec![ContentPart::tool_call(
                id.clone(),
                "write_file",
                serde_json::json!({ "content": "w".repeat(chars) }),
            )],
        ));
        history.push(Message::tool_result(
            format!("r{round}"),
            id,
            "write_file",
            "ok",
            false,
        ));
    }
    history
}

#[test]
fn truncation_by_default_starts_at_25_messages_protects_20_and_cuts_over_2000_characters() {
    let config = TruncateArgsConfig::default();
    // 24 messages, few tokens: not triggered.
    let mut short = calls_with_arguments(12, 2_001);
    assert_eq!(truncate_args(&mut short, &config, 100), 0);
    // 26 messages: triggered; the 6 older than the latest 20 hold 3 calls.
    let mut long = calls_with_arguments(13, 2_001);
    assert_eq!(truncate_args(&mut long, &config, 100), 3);
    // 40,000 tokens trigger it too, whatever the length; 39,999 do not.
    let mut few = calls_with_arguments(11, 2_001);
    assert_eq!(truncate_args(&mut few, &config, 39_999), 0);
    assert_eq!(truncate_args(&mut few, &config, 40_000), 1);
    // 2,000 characters is within the limit; 2,001 is over it.
    let mut at_limit = calls_with_arguments(13, 2_000);
    assert_eq!(truncate_args(&mut at_limit, &config, 100), 0);
}

#[test]
fn compaction_keeps_20_messages_and_flushes_memory_by_default() {
    let config = CompactionConfig::default();
    assert_eq!(config.keep_messages, 20);
    assert_eq!(config.trigger_messages, 50);
    assert!(config.flush_before_compact);
    assert!(config.prune.is_some(), "prune is on by default");
    assert!(
        config.truncate_args.is_none(),
        "argument truncation is off until configured"
    );
}

fn result_of(chars: usize) -> Vec<Message> {
    vec![
        Message::assistant_tool_calls(
            "a1",
            vec![ContentPart::tool_call(
                "c1",
                "execute",
                serde_json::json!({}),
            )],
        ),
        Message::tool_result(
            "r1",
            "c1",
            "execute",
            format!("H{}T", "x".repeat(chars - 2)),
            false,
        ),
    ]
}

#[test]
fn offload_by_default_moves_results_over_80000_characters_with_2000_character_previews() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let storage = MemoryStorage::new();
        let config = OffloadConfig::default();
        let mut at_limit = result_of(80_000);
        let kept = offload(&mut at_limit, &storage, &config, "agent").await;
        assert!(kept.written.is_empty(), "80,000 characters stay inline");
        let mut over = result_of(80_001);
        let moved = offload(&mut over, &storage, &config, "agent").await;
        assert_eq!(moved.written.len(), 1, "80,001 characters are offloaded");
        let files = storage
            .list("large_tool_results/")
            .await
            .expect("a listing");
        assert_eq!(files.len(), 1, "{files:?}");
        let placeholder = over[1]
            .tool_results()
            .map(|result| result.text())
            .collect::<String>();
        assert!(placeholder.contains(files[0].as_str()), "{placeholder}");
        // The preview keeps 2,000 characters of the head and 2,000 of the tail.
        let head = format!("H{}", "x".repeat(1_999));
        let tail = format!("{}T", "x".repeat(1_999));
        assert!(placeholder.contains(&head), "the head preview");
        assert!(placeholder.contains(&tail), "the tail preview");
        assert!(!placeholder.contains(&format!("H{}", "x".repeat(2_000))));
    });
}

#[test]
fn truncation_triggers_at_exactly_25_messages() {
    let config = TruncateArgsConfig::default();
    // 12 rounds and a user turn: 25 messages, the trigger met exactly; the oldest 5 messages
    // hold 3 calls, older than the latest 20.
    let mut at = calls_with_arguments(12, 2_001);
    at.push(Message::user("u", "go on"));
    assert_eq!(at.len(), 25);
    assert_eq!(truncate_args(&mut at, &config, 100), 3);
    let mut under = calls_with_arguments(12, 2_001);
    assert_eq!(under.len(), 24);
    assert_eq!(truncate_args(&mut under, &config, 100), 0);
}

/// One token per character, so a boundary can be met exactly.
struct PerChar;

impl ctxbed_harness::tokens::TokenEstimator for PerChar {
    fn method(&self) -> &'static str {
        "per-char"
    }
    fn exact(&self) -> bool {
        true
    }
    fn text_tokens(&self, text: &str) -> u64 {
        text.chars().count() as u64
    }
}

fn results(sizes: &[usize]) -> Vec<Message> {
    let mut history = Vec::new();
    for (n, size) in sizes.iter().enumerate() {
        let id = format!("c{n}");
        history.push(Message::assistant_tool_calls(
            format!("a{n}"),
            vec![ContentPart::tool_call(
                id.clone(),
                "execute",
                serde_json::json!({}),
            )],
        ));
        history.push(Message::tool_result(
            format!("r{n}"),
            id,
            "execute",
            "x".repeat(*size),
            false,
        ));
    }
    history
}

#[test]
fn prune_protects_exactly_40000_tokens_and_needs_exactly_20000_prunable() {
    use ctxbed_harness::compaction::config::PruneConfig;
    use ctxbed_harness::compaction::prune::prune;
    let config = PruneConfig::default();
    // The newest 40,000 tokens are protected; an older 20,000 are exactly enough to prune.
    let mut at = results(&[20_000, 40_000]);
    let pruned = prune(&mut at, &config, &PerChar).expect("20,000 prunable tokens prune");
    assert_eq!((pruned.results, pruned.tokens_before), (1, 20_000));
    // 19,999 prunable tokens are one short.
    let mut short = results(&[19_999, 40_000]);
    assert!(prune(&mut short, &config, &PerChar).is_none());
    // With the newest result at 39,999 tokens the protection is not yet full, so the older
    // one is protected too and nothing is pruned.
    let mut unfilled = results(&[20_000, 39_999]);
    assert!(prune(&mut unfilled, &config, &PerChar).is_none());
}

#[test]
fn workspace_material_fills_exactly_8000_tokens_by_default() {
    use ctxbed_harness::context::transform::Transform;
    use ctxbed_harness::context::workspace::{MAX_CONTEXT_TOKENS_DEFAULT, load};
    use ctxbed_harness::storage::WorkspacePath;

    async fn write(storage: &MemoryStorage, file: &str, chars: usize) {
        let path = WorkspacePath::parse(file).expect("a workspace path");
        let bytes = "w".repeat(chars).into_bytes();
        storage
            .write(&path, bytes)
            .await
            .expect("memory storage writes");
    }

    assert_eq!(MAX_CONTEXT_TOKENS_DEFAULT, 8_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        // Exactly at the bound: AGENTS.md and MEMORY.md together fill 8,000 tokens, whole.
        let at_bound = MemoryStorage::new();
        write(&at_bound, "AGENTS.md", 5_000).await;
        write(&at_bound, "MEMORY.md", 3_000).await;
        let loaded = load(&at_bound, &PerChar, MAX_CONTEXT_TOKENS_DEFAULT).await;
        assert!(loaded.transforms.is_empty(), "{:?}", loaded.transforms);
        let sizes: Vec<usize> = loaded.materials.iter().map(|m| m.text.len()).collect();
        assert_eq!(sizes, [5_000, 3_000]);

        // One token over: the later file is cut to what remains, and a file after it is skipped.
        let over = MemoryStorage::new();
        write(&over, "AGENTS.md", 5_000).await;
        write(&over, "MEMORY.md", 3_001).await;
        write(&over, "knowledge/api.md", 10).await;
        let loaded = load(&over, &PerChar, MAX_CONTEXT_TOKENS_DEFAULT).await;
        let sizes: Vec<usize> = loaded.materials.iter().map(|m| m.text.len()).collect();
        assert_eq!(sizes, [5_000, 3_000]);
        assert_eq!(
            loaded.transforms,
            [
                Transform::WorkspaceTruncated {
                    item_id: "workspace:MEMORY.md".into()
                },
                Transform::WorkspaceSkipped {
                    item_id: "workspace:knowledge/api.md".into()
                },
            ]
        );
    });
}
