//! Aggregate pruning: shorten large, older tool output once enough of it has piled up.
//!
//! Walking from the newest tool result to the oldest, the first `protect_tokens` of tool output
//! are protected. Older results (not excluded, not already pruned, longer than `preview_chars`)
//! are prunable; only when they add up to at least `minimum_prunable_tokens` is each replaced by
//! its head and tail (`preview_chars / 2` each) around a "N characters pruned" marker. Each result
//! block is counted on its own; ids, error state and metadata are kept.

use serde_json::json;

use super::config::PruneConfig;
use crate::message::{ContentPart, Message, ToolOutput};
use crate::tokens::TokenEstimator;

/// Metadata key marking a pruned result.
pub const PRUNED_KEY: &str = "ctxbed.pruned";

/// What a prune pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub results: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// Prunes `messages` in place; `None` when below the minimum (nothing changed).
pub fn prune(
    messages: &mut [Message],
    config: &PruneConfig,
    estimator: &dyn TokenEstimator,
) -> Option<Pruned> {
    let mut protected = 0u64;
    let mut candidates: Vec<(usize, usize, u64)> = Vec::new();
    for (index, message) in messages.iter().enumerate().rev() {
        for (part_index, part) in message.parts.iter().enumerate().rev() {
            let ContentPart::ToolResult(result) = part else {
                continue;
            };
            let tokens = estimator.text_tokens(&result.text());
            if protected < config.protect_tokens {
                protected += tokens;
                continue;
            }
            let prunable = !config.excluded_tools.contains(&result.tool_name)
                && !result.metadata.contains_key(PRUNED_KEY)
                && result.text_longer_than(config.preview_chars);
            if prunable {
                candidates.push((index, part_index, tokens));
            }
        }
    }
    let total: u64 = candidates.iter().map(|(_, _, t)| t).sum();
    if candidates.is_empty() || total < config.minimum_prunable_tokens {
        return None;
    }
    let mut pruned = Pruned {
        results: candidates.len(),
        tokens_before: total,
        tokens_after: 0,
    };
    for (index, part_index, _) in candidates {
        if let ContentPart::ToolResult(result) = &mut messages[index].parts[part_index] {
            let text = result.text();
            let chars = text.chars().count();
            let half = config.preview_chars / 2;
            let head: String = text.chars().take(half).collect();
            let tail: String = text.chars().skip(chars - half).collect();
            let shortened = format!(
                "{head}\n[... {} characters pruned ...]\n{tail}",
                chars - 2 * half
            );
            pruned.tokens_after += estimator.text_tokens(&shortened);
            result.outputs = vec![ToolOutput::Text { text: shortened }];
            result
                .metadata
                .insert(PRUNED_KEY.to_string(), json!({ "chars": chars }));
        }
    }
    Some(pruned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::RatioEstimator;

    fn results(count: usize, chars: usize) -> Vec<Message> {
        (0..count)
            .map(|i| {
                Message::tool_result(
                    format!("t{i}"),
                    format!("c{i}"),
                    "execute",
                    "y".repeat(chars),
                    false,
                )
            })
            .collect()
    }

    #[test]
    fn protects_the_newest_and_needs_the_minimum() {
        let config = PruneConfig {
            protect_tokens: 4_000,
            minimum_prunable_tokens: 2_000,
            ..PruneConfig::default()
        };
        // 10 results of 4,000 tokens each (10,000 chars / 2.5).
        let mut messages = results(10, 10_000);
        let pruned = prune(&mut messages, &config, &RatioEstimator).expect("pruned");
        assert_eq!(pruned.results, 9, "the newest result is protected");
        assert_eq!(
            messages[9].tool_results().next().unwrap().text_chars(),
            10_000
        );
        let old = messages[0].tool_results().next().unwrap();
        assert!(old.text().contains("8000 characters pruned"));
        assert!(old.metadata.contains_key(PRUNED_KEY));
        assert_eq!(pruned.tokens_before, 9 * 4_000);
        let preview = old.text();
        assert_eq!(
            pruned.tokens_after,
            9 * RatioEstimator.text_tokens(&preview),
            "each pruned result counts its preview"
        );

        assert!(
            prune(&mut messages, &config, &RatioEstimator).is_none(),
            "never twice"
        );
        let mut few = results(2, 10_000);
        let strict = PruneConfig {
            minimum_prunable_tokens: 1_000_000,
            ..config
        };
        assert!(prune(&mut few, &strict, &RatioEstimator).is_none());
    }
}
