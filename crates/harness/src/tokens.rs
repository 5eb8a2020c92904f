//! Token estimation: the [`TokenEstimator`] trait and its estimators.
//!
//! Every estimator reports a counting-method name and whether it is `exact`. Message, tool-call,
//! tool-result, tool-schema and media costs share one structure ([`TokenEstimator::message_tokens`],
//! [`TokenEstimator::tool_schema_tokens`]); estimators differ only in how they count text.
//!
//! - [`ExactEstimator`]: byte-pair encoding with the o200k_base or cl100k_base vocabulary, offline
//!   (`bpe`: the vocabularies' pre-tokenizers and rank tables, read in place from the binary).
//!   Mock models count every request they receive with it, as a real provider would.
//! - [`RatioEstimator`]: the reference harness's single-ratio estimate (`ceil(chars / 2.5)` per
//!   string). Kept as the baseline the content-aware estimator is measured against.
//! - [`ApproximateEstimator`] (in [`approx`]): content-aware, one fast pass counting o200k-like
//!   pieces with integer weights, one table per vocabulary; within ±10 % of exact o200k and of
//!   exact cl100k on every held-out family of real text (logs, code, data, prose, CJK and other
//!   scripts). The agent's default (`ContextPolicy::default()`), as the seed's approximate
//!   estimator is.
//! - [`CachedEstimator`] (in [`cache`]): wraps any estimator and caches per-message counts by
//!   content hash, so a step over a long history counts only the new messages.
//!
//! ```
//! use ctxbed_harness::tokens::{ExactEstimator, TokenEstimator, Vocabulary};
//! let exact = ExactEstimator::new(Vocabulary::O200k);
//! assert!(exact.exact());
//! assert_eq!(exact.text_tokens("hello world"), 2);
//! ```

pub mod approx;
mod bpe;
pub mod cache;
mod pieces;

pub use approx::ApproximateEstimator;
pub use cache::CachedEstimator;

use std::sync::{Arc, OnceLock};

use crate::message::ToolSchema;
use crate::message::{ContentPart, Message, ToolOutput};

/// Fixed cost of one message (role markers and separators).
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;
/// Fixed cost of one tool call or tool result inside a message.
pub const TOOL_PART_OVERHEAD_TOKENS: u64 = 8;
/// Fixed cost of one tool schema in the request's tool list.
pub const TOOL_SCHEMA_OVERHEAD_TOKENS: u64 = 8;
/// Flat cost of one multimodal placeholder (an image, audio clip, video or file).
pub const MEDIA_TOKENS: u64 = 2_048;
/// Fixed cost of priming the reply, once per request.
pub const REQUEST_OVERHEAD_TOKENS: u64 = 3;

/// Counts tokens for text, messages, tool schemas and whole requests.
pub trait TokenEstimator: Send + Sync {
    /// The counting-method name reported in manifests and traces. It names the counting
    /// function: two estimators with the same name must give the same counts (preparation
    /// remembers counts by it, see [`caches_counts`](TokenEstimator::caches_counts)).
    fn method(&self) -> &'static str;

    /// True when counts match the provider tokenizer exactly.
    fn exact(&self) -> bool;

    /// Tokens of one string.
    fn text_tokens(&self, text: &str) -> u64;

    /// True when this estimator remembers counts between calls, as [`CachedEstimator`] does.
    /// A preparation then also remembers, per thread, the conversation it read (see
    /// `context::scanned`), and a later step reads only the messages that are new. Two
    /// estimators with the same [`method`](TokenEstimator::method) must count alike. The
    /// default is `false`: every step reads every message.
    fn caches_counts(&self) -> bool {
        false
    }

    /// Tokens of one message: a fixed overhead plus its parts.
    fn message_tokens(&self, message: &Message) -> u64 {
        let mut total = MESSAGE_OVERHEAD_TOKENS;
        if let Some(name) = &message.name {
            total += self.text_tokens(name);
        }
        for part in &message.parts {
            total += self.part_tokens(part);
        }
        total
    }

    /// Tokens of one message and its manifest content hash
    /// ([`message_hash`](crate::message::message_hash)), for the preparation's
    /// manifest. The default computes both; [`CachedEstimator`] remembers them per message, so
    /// a step over a long history hashes only the new messages.
    fn message_tokens_and_hash(&self, message: &Message) -> (u64, String) {
        (
            self.message_tokens(message),
            crate::message::message_hash(message),
        )
    }

    /// Tokens of one content part.
    fn part_tokens(&self, part: &ContentPart) -> u64 {
        match part {
            ContentPart::Text { text } | ContentPart::Thinking { text, .. } => {
                self.text_tokens(text)
            }
            // Opaque data: counted as its text, which is at least what it stands for.
            ContentPart::RedactedThinking { data } => self.text_tokens(data),
            ContentPart::ToolCall(call) => {
                TOOL_PART_OVERHEAD_TOKENS
                    + self.text_tokens(&call.id)
                    + self.text_tokens(&call.name)
                    + self.text_tokens(&crate::format::json_text(&call.arguments))
            }
            ContentPart::ToolResult(result) => {
                let outputs: u64 = result
                    .outputs
                    .iter()
                    .map(|output| match output {
                        ToolOutput::Text { text } => self.text_tokens(text),
                        ToolOutput::Media { .. } => MEDIA_TOKENS,
                    })
                    .sum();
                TOOL_PART_OVERHEAD_TOKENS
                    + self.text_tokens(&result.call_id)
                    + self.text_tokens(&result.tool_name)
                    + outputs
            }
            ContentPart::Media { .. } => MEDIA_TOKENS,
            // Priced when attached, as the provider it goes to counts it.
            ContentPart::Image(image) => image.tokens,
        }
    }

    /// Tokens of one tool schema as sent in the request's tool list.
    fn tool_schema_tokens(&self, schema: &ToolSchema) -> u64 {
        TOOL_SCHEMA_OVERHEAD_TOKENS
            + self.text_tokens(&schema.name)
            + self.text_tokens(&schema.description)
            + self.text_tokens(&crate::format::json_text(&schema.parameters))
    }

    /// Tokens of a whole request: every message, every tool schema and the reply priming.
    fn request_tokens(&self, messages: &[Message], tools: &[ToolSchema]) -> u64 {
        let messages_total: u64 = messages.iter().map(|m| self.message_tokens(m)).sum();
        let tools_total: u64 = tools.iter().map(|t| self.tool_schema_tokens(t)).sum();
        REQUEST_OVERHEAD_TOKENS + messages_total + tools_total
    }
}

/// A byte-pair-encoding vocabulary shipped with ctxbed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vocabulary {
    /// GPT-4o family.
    O200k,
    /// GPT-4 / GPT-3.5 family.
    Cl100k,
}

/// Exact counts with a byte-pair-encoding vocabulary.
#[derive(Debug, Clone, Copy)]
pub struct ExactEstimator {
    vocabulary: Vocabulary,
    /// Remember the count of each short pre-tokenizer piece (`pieces`).
    memo_pieces: bool,
}

impl ExactEstimator {
    /// An exact estimator over the given vocabulary: the tokenizer's count, every time.
    pub fn new(vocabulary: Vocabulary) -> Self {
        ExactEstimator {
            vocabulary,
            memo_pieces: false,
        }
    }

    /// The same counts, with the count of each short pre-tokenizer piece remembered per thread,
    /// so repeated words are encoded once (see `tokens::pieces`).
    ///
    /// ```
    /// use ctxbed_harness::tokens::{ExactEstimator, TokenEstimator, Vocabulary};
    /// let text = "Run the tests, then run the tests again.";
    /// let plain = ExactEstimator::new(Vocabulary::O200k);
    /// let memoised = ExactEstimator::memoised(Vocabulary::O200k);
    /// assert_eq!(memoised.text_tokens(text), plain.text_tokens(text));
    /// assert_eq!(memoised.text_tokens(text), plain.text_tokens(text));
    /// ```
    pub fn memoised(vocabulary: Vocabulary) -> Self {
        ExactEstimator {
            vocabulary,
            memo_pieces: true,
        }
    }

    fn vocab(&self) -> &'static bpe::Vocab {
        bpe::vocab(self.vocabulary)
    }
}

/// The process-wide cached exact counter of a vocabulary. Every exact count in the process
/// goes through it (the mock models' and, in scenarios, the agents'), so a message is counted
/// exactly once however many counters see it; counts are exact either way. It lives as long
/// as the process, so its content-keyed cache is kept to
/// [`SHARED_CONTENT_CACHE_ENTRIES_MAX`](crate::limits::SHARED_CONTENT_CACHE_ENTRIES_MAX)
/// entries: a process that runs one scenario after another needs the messages of about the
/// last one.
pub fn shared_exact_counter(vocabulary: Vocabulary) -> Arc<CachedEstimator<ExactEstimator>> {
    static O200K: OnceLock<Arc<CachedEstimator<ExactEstimator>>> = OnceLock::new();
    static CL100K: OnceLock<Arc<CachedEstimator<ExactEstimator>>> = OnceLock::new();
    let cell = match vocabulary {
        Vocabulary::O200k => &O200K,
        Vocabulary::Cl100k => &CL100K,
    };
    cell.get_or_init(|| {
        Arc::new(CachedEstimator::with_capacities(
            ExactEstimator::memoised(vocabulary),
            crate::limits::TOKEN_CACHE_ENTRIES_MAX,
            crate::limits::SHARED_CONTENT_CACHE_ENTRIES_MAX,
        ))
    })
    .clone()
}

impl TokenEstimator for ExactEstimator {
    fn method(&self) -> &'static str {
        match self.vocabulary {
            Vocabulary::O200k => "bpe-o200k",
            Vocabulary::Cl100k => "bpe-cl100k",
        }
    }

    fn exact(&self) -> bool {
        true
    }

    fn text_tokens(&self, text: &str) -> u64 {
        if self.memo_pieces {
            pieces::count(self.vocab(), self.vocabulary, text)
        } else {
            self.vocab().count(text)
        }
    }
}

/// The reference harness's estimate: `ceil(chars / 2.5)` for every string.
///
/// One ratio for all text under-counts CJK and over-counts English; it is kept as a baseline.
#[derive(Debug, Clone, Copy, Default)]
pub struct RatioEstimator;

impl TokenEstimator for RatioEstimator {
    fn method(&self) -> &'static str {
        "approx-chars/2.5"
    }

    fn exact(&self) -> bool {
        false
    }

    fn text_tokens(&self, text: &str) -> u64 {
        // ceil(chars / 2.5) == ceil(chars * 2 / 5), in integers.
        let chars = text.chars().count() as u64;
        (chars * 2).div_ceil(5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_rounds_up_per_string() {
        let estimator = RatioEstimator;
        assert_eq!(estimator.text_tokens(""), 0);
        assert_eq!(estimator.text_tokens("a"), 1);
        assert_eq!(estimator.text_tokens("abcde"), 2);
        assert_eq!(estimator.text_tokens("abcdef"), 3);
    }

    #[test]
    fn exact_counts_known_strings() {
        let o200k = ExactEstimator::new(Vocabulary::O200k);
        let cl100k = ExactEstimator::new(Vocabulary::Cl100k);
        assert_eq!(o200k.text_tokens("hello world"), 2);
        assert_eq!(cl100k.text_tokens("hello world"), 2);
        assert_eq!(o200k.method(), "bpe-o200k");
    }

    #[test]
    fn memoised_exact_counts_are_the_tokenizers_counts() {
        use ctxbed_sim::text::{TextKind, generate_text};
        let kinds = [
            TextKind::Prose,
            TextKind::Code,
            TextKind::Json,
            TextKind::Log,
            TextKind::Cjk,
        ];
        let long_piece = format!("{} {}", "x".repeat(500), "9".repeat(200));
        let mut texts = vec![String::new(), " ".into(), "hello world".into(), long_piece];
        for (index, kind) in kinds.into_iter().enumerate() {
            for seed in 0..40 {
                texts.push(generate_text(
                    kind,
                    50 + 37 * seed as usize,
                    seed + index as u64,
                ));
            }
        }
        for vocabulary in [Vocabulary::O200k, Vocabulary::Cl100k] {
            let plain = ExactEstimator::new(vocabulary);
            let memoised = ExactEstimator::memoised(vocabulary);
            // Twice: the second pass answers most pieces from the memo.
            for pass in 0..2 {
                for text in &texts {
                    assert_eq!(
                        memoised.text_tokens(text),
                        plain.text_tokens(text),
                        "pass {pass}, {vocabulary:?}: {text:?}"
                    );
                }
            }
            let remembered = pieces::remembered(vocabulary);
            assert!(remembered > 100, "the memo holds pieces ({remembered})");
            assert!(remembered <= crate::limits::PIECE_MEMO_ENTRIES_MAX);
        }
    }

    #[test]
    fn message_cost_includes_overhead_and_parts() {
        let estimator = RatioEstimator;
        let message = Message::user("m1", "abcde");
        assert_eq!(
            estimator.message_tokens(&message),
            MESSAGE_OVERHEAD_TOKENS + 2
        );
        let media = Message::new(
            "m2",
            crate::message::Role::User,
            vec![ContentPart::Media {
                kind: crate::message::MediaKind::Image,
                size_bytes: 10,
            }],
        );
        assert_eq!(
            estimator.message_tokens(&media),
            MESSAGE_OVERHEAD_TOKENS + MEDIA_TOKENS
        );
    }

    /// A message's name (a tool's, or a participant's) is counted with its parts.
    #[test]
    fn a_named_message_costs_its_name_too() {
        let estimator = RatioEstimator;
        let mut message = Message::user("m1", "abcde");
        message.name = Some("reviewer".to_string());
        assert_eq!(
            estimator.message_tokens(&message),
            // "abcde" is 2 tokens at 2.5 characters a token, "reviewer" 4.
            MESSAGE_OVERHEAD_TOKENS + 2 + 4
        );
    }

    /// One token a character: every sum below is exact.
    struct PerChar;

    impl TokenEstimator for PerChar {
        fn method(&self) -> &'static str {
            "per-char"
        }
        fn exact(&self) -> bool {
            false
        }
        fn text_tokens(&self, text: &str) -> u64 {
            text.chars().count() as u64
        }
    }

    /// Tool calls, results, schemas and a whole request each cost their framing plus every
    /// text they carry.
    #[test]
    fn tool_parts_schemas_and_requests_add_up_their_texts() {
        let arguments = serde_json::json!({ "q": "x" });
        let arguments_text = crate::format::json_text(&arguments).chars().count() as u64;
        let call = ContentPart::tool_call("c1", "grep", arguments);
        assert_eq!(
            PerChar.part_tokens(&call),
            TOOL_PART_OVERHEAD_TOKENS + 2 + 4 + arguments_text
        );
        let result = Message::tool_result("t1", "c1", "grep", "found", false);
        assert_eq!(
            PerChar.message_tokens(&result),
            MESSAGE_OVERHEAD_TOKENS + TOOL_PART_OVERHEAD_TOKENS + 2 + 4 + 5
        );
        let schema = crate::message::ToolSchema {
            name: "grep".to_string(),
            description: "Search.".to_string(),
            parameters: serde_json::json!({}),
        };
        assert_eq!(
            PerChar.tool_schema_tokens(&schema),
            TOOL_SCHEMA_OVERHEAD_TOKENS + 4 + 7 + 2
        );
        let messages = [Message::user("u1", "abc")];
        assert_eq!(
            PerChar.request_tokens(&messages, &[schema.clone(), schema]),
            REQUEST_OVERHEAD_TOKENS + (MESSAGE_OVERHEAD_TOKENS + 3) + 2 * (8 + 4 + 7 + 2)
        );
    }
}
