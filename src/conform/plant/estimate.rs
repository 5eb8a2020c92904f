//! The token estimators of the planted harnesses that count wrong: `chars4` (characters / 4,
//! the rule of thumb many harnesses use) and `schemas_free` (the tool schemas a request sends
//! counted as nothing).

use ctxbed_harness::message::{ContentPart, Message, ToolSchema};
use ctxbed_harness::tokens::TokenEstimator;

/// Characters / 4, rounded up per string.
#[derive(Debug, Clone, Copy, Default)]
pub struct Chars4;

impl TokenEstimator for Chars4 {
    fn method(&self) -> &'static str {
        "planted-chars/4"
    }

    fn exact(&self) -> bool {
        false
    }

    fn text_tokens(&self, text: &str) -> u64 {
        (text.chars().count() as u64).div_ceil(4)
    }
}

/// `inner`'s counts, with every tool schema counted as no tokens.
#[derive(Debug, Clone, Copy, Default)]
pub struct SchemasFree<E>(pub E);

impl<E: TokenEstimator> TokenEstimator for SchemasFree<E> {
    fn method(&self) -> &'static str {
        "planted-schemas-free"
    }

    fn exact(&self) -> bool {
        false
    }

    fn text_tokens(&self, text: &str) -> u64 {
        self.0.text_tokens(text)
    }

    fn message_tokens(&self, message: &Message) -> u64 {
        self.0.message_tokens(message)
    }

    fn part_tokens(&self, part: &ContentPart) -> u64 {
        self.0.part_tokens(part)
    }

    fn tool_schema_tokens(&self, _schema: &ToolSchema) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxbed_harness::tokens::ApproximateEstimator;

    #[test]
    fn the_planted_estimators_count_what_they_say() {
        assert_eq!(Chars4.text_tokens("abcdefghi"), 3);
        let schema = ToolSchema {
            name: "read_log".into(),
            description: "Read one build log.".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        let approximate = ApproximateEstimator::default();
        assert!(approximate.tool_schema_tokens(&schema) > 0);
        let free = SchemasFree(approximate);
        assert_eq!(free.tool_schema_tokens(&schema), 0);
        assert_eq!(free.text_tokens("Why?"), approximate.text_tokens("Why?"));
    }
}
