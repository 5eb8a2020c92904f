//! The providers' prompt caches, imitated deterministically, so usage reports what a harness's
//! requests would have read from and written to a real provider's cache.
//!
//! A prompt is seen as a chain of prefixes at message boundaries: the tool schemas (and the
//! request's fixed overhead), then each message read back from the wire in turn. A prefix's key
//! is a SHA-256 over the API, the model, the tools and every message up to it, so two requests
//! share a cached prefix exactly when they agree up to it.
//!
//! - **OpenAI** (Chat Completions and Responses) caches every prompt of at least 1,024 tokens
//!   by itself. A request reads the longest prefix an earlier request held, reported in steps of
//!   128 tokens from 1,024 (`cached_tokens`, 0 below 1,024), and every prefix of 1,024 tokens or
//!   more is then held.
//! - **Anthropic** caches only up to the blocks marked `cache_control` (breakpoints, at most
//!   four), taken here at the end of the message that holds the block (the tools, the system
//!   prompt, or a message of `messages`). A request reads the longest held prefix found at a
//!   breakpoint or at one of the 20 message boundaries before it; the prefix up to its last
//!   breakpoint is then written, and reported as written from where the read ended
//!   (`cache_creation_input_tokens`). A prefix under 1,024 tokens is never cached.
//!
//! Entries do not expire (a wire scenario takes simulated seconds, well within the providers'
//! five minutes), but at most [`PROMPT_CACHE_ENTRIES_MAX`] are held, the oldest dropped first.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::Api;
use ctxbed_harness::message::message_hash;
use ctxbed_harness::model::ModelRequest;

/// The most prefixes held at once: enough for every prefix of a long session's requests.
pub const PROMPT_CACHE_ENTRIES_MAX: usize = 65_536;

/// The shortest prefix either provider caches (Anthropic's minimum for most models; OpenAI's
/// threshold for caching at all).
pub const CACHE_MIN_TOKENS: u64 = 1_024;

/// OpenAI reports cache hits in steps of this many tokens past the first 1,024.
pub const OPENAI_CACHE_STEP_TOKENS: u64 = 128;

/// How many message boundaries before a breakpoint Anthropic looks back for a hit.
pub const ANTHROPIC_LOOKBACK_BOUNDARIES: usize = 20;

/// What one request read from and wrote to the cache, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUse {
    pub read: u64,
    pub written: u64,
}

/// One request as the cache sees it: each prefix's key and its tokens. Prefix `i` holds the
/// tools and the first `i` messages.
pub struct Prefixes {
    keys: Vec<[u8; 32]>,
    tokens: Vec<u64>,
}

impl Prefixes {
    /// The prefixes of `request`; `tokens` are the cumulative counts (as
    /// [`MockModel::prefix_tokens`](crate::mock::MockModel::prefix_tokens) gives them).
    pub fn new(api: Api, model: &str, request: &ModelRequest, tokens: Vec<u64>) -> Self {
        let mut hasher = Sha256::new()
            .chain_update(api.as_str().as_bytes())
            .chain_update(b"\0")
            .chain_update(model.as_bytes());
        for tool in request.tools.iter() {
            for field in [&tool.name, &tool.description, &tool.parameters.to_string()] {
                hasher.update(b"\0");
                hasher.update(field.as_bytes());
            }
        }
        let mut keys = Vec::with_capacity(request.messages.len() + 1);
        keys.push(hasher.clone().finalize().into());
        for message in request.messages.iter() {
            hasher.update(b"\0");
            hasher.update(message_hash(message).as_bytes());
            keys.push(hasher.clone().finalize().into());
        }
        Prefixes { keys, tokens }
    }

    fn tokens(&self, at: usize) -> u64 {
        self.tokens.get(at).copied().unwrap_or(0)
    }
}

/// The prefixes held, oldest first for eviction.
#[derive(Debug, Default)]
pub struct PromptCache {
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    keys: BTreeSet<[u8; 32]>,
    order: VecDeque<[u8; 32]>,
}

impl Held {
    fn insert(&mut self, key: [u8; 32]) {
        if self.keys.insert(key) {
            self.order.push_back(key);
            while self.order.len() > PROMPT_CACHE_ENTRIES_MAX {
                if let Some(oldest) = self.order.pop_front() {
                    self.keys.remove(&oldest);
                }
            }
        }
    }
}

impl PromptCache {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// OpenAI's automatic caching: what the request read, then every long prefix held.
    pub fn openai(&self, prefixes: &Prefixes) -> CacheUse {
        let mut held = self.held();
        let hit = (0..prefixes.keys.len())
            .rev()
            .find(|&at| held.keys.contains(&prefixes.keys[at]))
            .map_or(0, |at| prefixes.tokens(at));
        let read = if hit >= CACHE_MIN_TOKENS {
            CACHE_MIN_TOKENS
                + (hit - CACHE_MIN_TOKENS) / OPENAI_CACHE_STEP_TOKENS * OPENAI_CACHE_STEP_TOKENS
        } else {
            0
        };
        for at in 0..prefixes.keys.len() {
            if prefixes.tokens(at) >= CACHE_MIN_TOKENS {
                held.insert(prefixes.keys[at]);
            }
        }
        CacheUse { read, written: 0 }
    }

    /// Anthropic's explicit caching at `breakpoints` (prefix indices, as
    /// [`anthropic::parse_request_with_breakpoints`](super::anthropic::parse_request_with_breakpoints)
    /// gives them).
    pub fn anthropic(&self, prefixes: &Prefixes, breakpoints: &[usize]) -> CacheUse {
        let last = prefixes.keys.len().saturating_sub(1);
        let breakpoints: BTreeSet<usize> = breakpoints.iter().map(|&b| b.min(last)).collect();
        let Some(&final_breakpoint) = breakpoints.last() else {
            return CacheUse::default();
        };
        let mut held = self.held();
        let candidates = breakpoints.iter().flat_map(|&breakpoint| {
            (breakpoint.saturating_sub(ANTHROPIC_LOOKBACK_BOUNDARIES)..=breakpoint).rev()
        });
        let read = candidates
            .filter(|&at| {
                prefixes.tokens(at) >= CACHE_MIN_TOKENS && held.keys.contains(&prefixes.keys[at])
            })
            .map(|at| prefixes.tokens(at))
            .max()
            .unwrap_or(0);
        let upto = prefixes.tokens(final_breakpoint);
        let written = if upto >= CACHE_MIN_TOKENS && upto > read {
            upto - read
        } else {
            0
        };
        for &breakpoint in &breakpoints {
            if prefixes.tokens(breakpoint) >= CACHE_MIN_TOKENS {
                held.insert(prefixes.keys[breakpoint]);
            }
        }
        CacheUse { read, written }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxbed_harness::message::Message;
    use ctxbed_harness::shared_vec::SharedVec;

    fn request(texts: &[&str]) -> ModelRequest {
        let messages: Vec<Message> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| Message::user(format!("m{i}"), *text))
            .collect();
        ModelRequest {
            call_id: "c".into(),
            purpose: ctxbed_harness::model::Purpose::Reasoning,
            messages: SharedVec::from(messages),
            tools: Vec::new().into(),
            max_output_tokens: None,
        }
    }

    /// Cumulative tokens with 600 for the tools and 400 per message.
    fn prefixes(api: Api, texts: &[&str]) -> Prefixes {
        let tokens = (0..=texts.len() as u64).map(|n| 600 + 400 * n).collect();
        Prefixes::new(api, "m", &request(texts), tokens)
    }

    #[test]
    fn openai_reads_the_longest_held_prefix_in_steps_of_128() {
        let cache = PromptCache::default();
        let first = cache.openai(&prefixes(Api::OpenAi, &["a", "b", "c"]));
        assert_eq!(first, CacheUse::default(), "nothing is held at first");
        // The same three messages and a fourth: the held prefix is 1,800 tokens.
        let second = cache.openai(&prefixes(Api::OpenAi, &["a", "b", "c", "d"]));
        assert_eq!(second.read, 1_024 + 6 * 128);
        // A changed first message shares only the tools, under the minimum.
        let third = cache.openai(&prefixes(Api::OpenAi, &["x", "b", "c", "d"]));
        assert_eq!(third.read, 0);
        // Another API or model has its own cache.
        let other = cache.openai(&prefixes(Api::Responses, &["a", "b", "c", "d"]));
        assert_eq!(other.read, 0);
    }

    #[test]
    fn anthropic_writes_up_to_its_last_breakpoint_and_reads_back() {
        let cache = PromptCache::default();
        let texts = ["a", "b", "c", "d"];
        // A breakpoint after the second message (1,400 tokens) and after the fourth (2,200).
        let first = cache.anthropic(&prefixes(Api::Anthropic, &texts), &[2, 4]);
        assert_eq!(
            first,
            CacheUse {
                read: 0,
                written: 2_200
            }
        );
        let longer = ["a", "b", "c", "d", "e"];
        let second = cache.anthropic(&prefixes(Api::Anthropic, &longer), &[5]);
        assert_eq!(
            second,
            CacheUse {
                read: 2_200,
                written: 400
            }
        );
        // Without a breakpoint nothing is read or written.
        assert_eq!(
            cache.anthropic(&prefixes(Api::Anthropic, &longer), &[]),
            CacheUse::default()
        );
        // Below the minimum nothing is cached.
        assert_eq!(
            cache.anthropic(&prefixes(Api::Anthropic, &["a"]), &[1]),
            CacheUse::default()
        );
    }

    #[test]
    fn anthropic_looks_back_twenty_boundaries_and_no_further() {
        let cache = PromptCache::default();
        let texts: Vec<String> = (0..30).map(|i| format!("t{i}")).collect();
        let all: Vec<&str> = texts.iter().map(String::as_str).collect();
        cache.anthropic(&prefixes(Api::Anthropic, &all[..5]), &[5]);
        let near = cache.anthropic(&prefixes(Api::Anthropic, &all[..25]), &[25]);
        assert_eq!(near.read, 600 + 400 * 5);
        let cache = PromptCache::default();
        cache.anthropic(&prefixes(Api::Anthropic, &all[..5]), &[5]);
        let far = cache.anthropic(&prefixes(Api::Anthropic, &all[..26]), &[26]);
        assert_eq!(far.read, 0, "26 boundaries back is past the lookback");
    }

    #[test]
    fn the_cache_is_bounded() {
        let mut held = Held::default();
        for n in 0..(PROMPT_CACHE_ENTRIES_MAX as u32 + 10) {
            let mut key = [0u8; 32];
            key[..4].copy_from_slice(&n.to_le_bytes());
            held.insert(key);
        }
        assert_eq!(held.keys.len(), PROMPT_CACHE_ENTRIES_MAX);
        assert_eq!(held.order.len(), PROMPT_CACHE_ENTRIES_MAX);
        assert!(!held.keys.contains(&[0u8; 32]), "the oldest went first");
    }
}
