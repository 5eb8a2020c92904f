//! Incremental counting: per-message counts cached by content hash.
//!
//! Every reasoning step re-counts the whole conversation, but only the newest messages are new.
//! [`CachedEstimator`] wraps any [`TokenEstimator`] and remembers each message's count twice:
//!
//! - by the address of the message's shared content, next to a copy of the message (`memo`):
//!   a message seen before (the same content, shared by copy on write) is recognised by one
//!   integer probe, with no reading, hashing or counting, and the memo also keeps the message's
//!   manifest content hash ([`TokenEstimator::message_tokens_and_hash`]). A step over a long
//!   history therefore hashes and counts only the new or changed messages.
//! - under the SHA-256 of what is counted, when the wrapped estimator is exact (a tokenizer):
//!   the same content under another id (a copy, a re-sent message) is counted once, and its
//!   manifest content hash computed once. An estimate (not [`exact`](TokenEstimator::exact))
//!   is made again instead: it costs less than hashing the message.
//!
//! Both are bounded by [`TOKEN_CACHE_ENTRIES_MAX`] and drop the least recently used entries
//! first; [`CacheStats`] reports hits, misses and size. Long texts counted by an exact
//! estimator are remembered under their SHA-256 too (at most [`TEXT_CACHE_ENTRIES_MAX`]):
//! materials are counted at every step. Tool schemas, which every request
//! repeats, are remembered too (at most [`SCHEMA_CACHE_ENTRIES_MAX`], the oldest replaced
//! first), matched field by field with the parameters' keys in the same order, since the
//! order changes the printed text that is counted. The memo holds no message: each entry
//! watches its message's shared content without keeping it alive, and entries whose message is
//! gone are dropped as the memo grows, so it costs a small entry per live message.
//!
//! The key covers the role, the name and every part (texts, ids, tool names, arguments,
//! outputs, media kinds and sizes, error flags); it leaves out the message id and metadata, which
//! no estimator counts. A wrapped estimator must count nothing else, which holds for the
//! default [`TokenEstimator::message_tokens`].
//!
//! A `CachedEstimator` also tells preparation that counts are remembered
//! ([`TokenEstimator::caches_counts`]): a preparation then remembers, per thread, the
//! conversation it read and its counts, told apart by [`TokenEstimator::method`], so two
//! estimators that share a method name must count alike.
//!
//! ```
//! use ctxbed_harness::message::Message;
//! use ctxbed_harness::tokens::TokenEstimator;
//! use ctxbed_harness::tokens::approx::ApproximateEstimator;
//! use ctxbed_harness::tokens::cache::CachedEstimator;
//! let cached = CachedEstimator::new(ApproximateEstimator::default());
//! let message = Message::user("m1", "Run the tests, then summarise the failures.");
//! let first = cached.message_tokens(&message);
//! assert_eq!(cached.message_tokens(&message), first);
//! assert_eq!(cached.stats().hit_count, 1);
//! assert_eq!(first, ApproximateEstimator::default().message_tokens(&message));
//! ```
//!
//! [`TOKEN_CACHE_ENTRIES_MAX`]: crate::limits::TOKEN_CACHE_ENTRIES_MAX
//! [`SCHEMA_CACHE_ENTRIES_MAX`]: crate::limits::SCHEMA_CACHE_ENTRIES_MAX
//! [`TEXT_CACHE_ENTRIES_MAX`]: crate::limits::TEXT_CACHE_ENTRIES_MAX

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

use self::memo::Memo;
use super::TokenEstimator;
use crate::limits::{
    SCHEMA_CACHE_ENTRIES_MAX, TEXT_CACHE_BYTES_MIN, TEXT_CACHE_ENTRIES_MAX, TOKEN_CACHE_ENTRIES_MAX,
};
use crate::message::ToolSchema;
use crate::message::message_hash;
use crate::message::{ContentPart, Message, ToolOutput};
use crate::sha::BufferedSha256;

/// Counters of one cache, for tests and diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hit_count: u64,
    /// Lookups that counted the message.
    pub miss_count: u64,
    /// Entries held now (at most the capacity).
    pub entry_count: usize,
}

/// Wraps an estimator and caches its per-message counts; thread-safe.
///
/// Counts are exactly the wrapped estimator's: the cache changes the cost, never the result.
#[derive(Debug)]
pub struct CachedEstimator<E> {
    inner: E,
    cache: Mutex<State>,
}

/// The caches, under one lock.
#[derive(Debug)]
struct State {
    by_content: Lru<Counted>,
    /// Exact counts of texts (see [`CachedEstimator::text_tokens`]), by a hash of the text.
    texts: Lru<u64>,
    memo: Memo,
    /// Schemas counted, with their counts; `schema_next` is the slot the next new one takes
    /// once the list is full.
    schemas: Vec<(ToolSchema, u64)>,
    schema_next: usize,
}

impl<E: TokenEstimator> CachedEstimator<E> {
    /// A cache of [`TOKEN_CACHE_ENTRIES_MAX`] messages around `inner`.
    ///
    /// [`TOKEN_CACHE_ENTRIES_MAX`]: crate::limits::TOKEN_CACHE_ENTRIES_MAX
    pub fn new(inner: E) -> Self {
        Self::with_capacity(inner, TOKEN_CACHE_ENTRIES_MAX)
    }

    /// A cache of `capacity` messages around `inner`.
    ///
    /// # Panics
    /// When `capacity` is zero or above [`TOKEN_CACHE_ENTRIES_MAX`].
    ///
    /// [`TOKEN_CACHE_ENTRIES_MAX`]: crate::limits::TOKEN_CACHE_ENTRIES_MAX
    pub fn with_capacity(inner: E, capacity: usize) -> Self {
        Self::with_capacities(inner, capacity, capacity)
    }

    /// A cache of `capacity` messages by address and `content_capacity` by content around
    /// `inner`. The address-keyed memo costs a small entry per message alive; the content-keyed
    /// cache remembers messages that are gone too (about 250 bytes each), so a counter that
    /// lives for the whole process keeps it smaller.
    ///
    /// # Panics
    /// When either capacity is zero or above [`TOKEN_CACHE_ENTRIES_MAX`].
    ///
    /// [`TOKEN_CACHE_ENTRIES_MAX`]: crate::limits::TOKEN_CACHE_ENTRIES_MAX
    pub fn with_capacities(inner: E, capacity: usize, content_capacity: usize) -> Self {
        for capacity in [capacity, content_capacity] {
            assert!(capacity > 0, "a token cache holds at least one entry");
            assert!(
                capacity <= TOKEN_CACHE_ENTRIES_MAX,
                "token cache capacity {capacity} is above limits::TOKEN_CACHE_ENTRIES_MAX"
            );
        }
        CachedEstimator {
            inner,
            cache: Mutex::new(State {
                by_content: Lru::new(content_capacity),
                texts: Lru::new(TEXT_CACHE_ENTRIES_MAX),
                memo: Memo::new(capacity),
                schemas: Vec::new(),
                schema_next: 0,
            }),
        }
    }

    /// The wrapped estimator.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Hits, misses and size so far.
    pub fn stats(&self) -> CacheStats {
        let state = self.state();
        CacheStats {
            hit_count: state.by_content.hit_count,
            miss_count: state.by_content.miss_count,
            entry_count: state.by_content.entries.len(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The count from the content-keyed cache, counting on a miss, and the manifest content
    /// hash when `with_hash`. An estimate skips the cache: it is made again, which costs less
    /// than the key. The hash is remembered beside the count only when it is a
    /// function of what the key covers, that is when no tool result holds metadata (which the
    /// hash covers and no estimator counts); otherwise it is computed each time.
    fn by_content(&self, message: &Message, with_hash: bool) -> (u64, Option<String>) {
        if !self.inner.exact() {
            // An estimate is cheaper to make again than the key is to hash.
            self.state().by_content.miss_count += 1;
            let tokens = self.inner.message_tokens(message);
            return (tokens, with_hash.then(|| message_hash(message)));
        }
        let key = message_key(message);
        let remember_hash = with_hash && hash_is_keyed(message);
        let cached = self.state().by_content.get(&key).map(|counted| {
            let known = remember_hash
                .then(|| counted.content_hash.clone())
                .flatten();
            (counted.tokens, known)
        });
        let content_hash = |known: Option<String>| {
            with_hash.then(|| known.unwrap_or_else(|| message_hash(message)))
        };
        match cached {
            Some((tokens, known)) if known.is_some() || !remember_hash => {
                (tokens, content_hash(known))
            }
            cached => {
                // The lock is not held while counting or hashing: two threads may count the
                // same new message, and both store the same numbers.
                let tokens = match cached {
                    Some((tokens, _)) => tokens,
                    None => self.inner.message_tokens(message),
                };
                let content_hash = content_hash(None);
                let remembered = content_hash.clone().filter(|_| remember_hash);
                self.state().by_content.insert(
                    key,
                    Counted {
                        tokens,
                        content_hash: remembered,
                    },
                );
                (tokens, content_hash)
            }
        }
    }
}

impl<E: TokenEstimator> TokenEstimator for CachedEstimator<E> {
    fn method(&self) -> &'static str {
        self.inner.method()
    }

    fn exact(&self) -> bool {
        self.inner.exact()
    }

    /// A text of at least [`TEXT_CACHE_BYTES_MIN`] bytes counted by an exact estimator (a
    /// tokenizer, far slower than hashing) is remembered under its SHA-256: materials are
    /// counted at every step, and most are the same from step to step. Other texts are counted
    /// each time.
    ///
    /// [`TEXT_CACHE_BYTES_MIN`]: crate::limits::TEXT_CACHE_BYTES_MIN
    fn text_tokens(&self, text: &str) -> u64 {
        if text.len() < TEXT_CACHE_BYTES_MIN || !self.inner.exact() {
            return self.inner.text_tokens(text);
        }
        let key: Key = Sha256::digest(text.as_bytes()).into();
        if let Some(&tokens) = self.state().texts.get(&key) {
            return tokens;
        }
        let tokens = self.inner.text_tokens(text);
        self.state().texts.insert(key, tokens);
        tokens
    }

    fn caches_counts(&self) -> bool {
        true
    }

    fn message_tokens(&self, message: &Message) -> u64 {
        {
            let mut state = self.state();
            if let Some(tokens) = state.memo.tokens(message) {
                state.by_content.hit_count += 1;
                return tokens;
            }
        }
        let (tokens, _) = self.by_content(message, false);
        self.state().memo.insert(message, tokens, None);
        tokens
    }

    fn message_tokens_and_hash(&self, message: &Message) -> (u64, String) {
        let remembered = {
            let mut state = self.state();
            match state.memo.lookup(message) {
                Some((tokens, Some(content_hash))) => {
                    state.by_content.hit_count += 1;
                    return (tokens, content_hash);
                }
                Some((tokens, None)) => {
                    state.by_content.hit_count += 1;
                    Some(tokens)
                }
                None => None,
            }
        };
        let (tokens, content_hash) = match remembered {
            Some(tokens) => (tokens, message_hash(message)),
            None => {
                let (tokens, content_hash) = self.by_content(message, true);
                (
                    tokens,
                    content_hash.expect("by_content gives the hash when asked"),
                )
            }
        };
        self.state()
            .memo
            .insert(message, tokens, Some(content_hash.clone()));
        (tokens, content_hash)
    }

    fn part_tokens(&self, part: &ContentPart) -> u64 {
        self.inner.part_tokens(part)
    }

    fn tool_schema_tokens(&self, schema: &ToolSchema) -> u64 {
        if let Some(tokens) = self.state().known_schema(schema) {
            return tokens;
        }
        // The lock is not held while counting; another thread may have stored it meanwhile.
        let tokens = self.inner.tool_schema_tokens(schema);
        let mut state = self.state();
        if state.known_schema(schema).is_some() {
            return tokens;
        }
        if state.schemas.len() < SCHEMA_CACHE_ENTRIES_MAX {
            state.schemas.push((schema.clone(), tokens));
        } else {
            let slot = state.schema_next;
            state.schemas[slot] = (schema.clone(), tokens);
            state.schema_next = (slot + 1) % SCHEMA_CACHE_ENTRIES_MAX;
        }
        tokens
    }
}

impl State {
    /// The remembered count of a schema that prints the same: name, description, and
    /// parameters with their keys in the same order.
    fn known_schema(&self, schema: &ToolSchema) -> Option<u64> {
        self.schemas.iter().find_map(|(known, tokens)| {
            (known.name == schema.name
                && known.description == schema.description
                && same_json_text(&known.parameters, &schema.parameters))
            .then_some(*tokens)
        })
    }
}

/// JSON equality that also requires object keys in the same order: `Value`'s own equality
/// ignores the order, but the printed text, and so its count, depends on it.
pub fn same_json_text(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((xk, xv), (yk, yv))| xk == yk && same_json_text(xv, yv))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(xv, yv)| same_json_text(xv, yv))
        }
        _ => a == b,
    }
}

mod memo;

type Key = [u8; 32];

/// What the content-keyed cache remembers of a message.
#[derive(Debug, Clone)]
struct Counted {
    tokens: u64,
    /// The manifest content hash, once a preparation asked for it.
    content_hash: Option<String>,
}

/// A least-recently-used map from a content key to what was computed from the content.
#[derive(Debug)]
struct Lru<V> {
    capacity: usize,
    /// Key → (value, last use).
    entries: HashMap<Key, (V, u64)>,
    /// Last use → key; the first entry is the one to evict.
    recency: BTreeMap<u64, Key>,
    clock: u64,
    hit_count: u64,
    miss_count: u64,
}

impl<V> Lru<V> {
    fn new(capacity: usize) -> Self {
        Lru {
            capacity,
            entries: HashMap::new(),
            recency: BTreeMap::new(),
            clock: 0,
            hit_count: 0,
            miss_count: 0,
        }
    }

    fn get(&mut self, key: &Key) -> Option<&V> {
        self.clock += 1;
        let Some((value, last_use)) = self.entries.get_mut(key) else {
            self.miss_count += 1;
            return None;
        };
        self.recency.remove(last_use);
        *last_use = self.clock;
        self.recency.insert(self.clock, *key);
        self.hit_count += 1;
        Some(value)
    }

    fn insert(&mut self, key: Key, value: V) {
        self.clock += 1;
        if let Some((_, last_use)) = self.entries.insert(key, (value, self.clock)) {
            self.recency.remove(&last_use);
        } else if self.entries.len() > self.capacity
            && let Some((_, oldest)) = self.recency.pop_first()
        {
            self.entries.remove(&oldest);
        }
        self.recency.insert(self.clock, key);
        assert_eq!(self.entries.len(), self.recency.len());
        assert!(self.entries.len() <= self.capacity);
    }
}

/// Whether a message's manifest content hash ([`message_hash`]: its role and parts) is a
/// function of its [`message_key`]: the key leaves out tool results' metadata.
fn hash_is_keyed(message: &Message) -> bool {
    message.parts.iter().all(|part| match part {
        ContentPart::ToolResult(result) => result.metadata.is_empty(),
        _ => true,
    })
}

/// SHA-256 over everything an estimator counts in a message, each field length-prefixed.
fn message_key(message: &Message) -> Key {
    let mut hasher = BufferedSha256::new();
    hasher.update(message.role.as_str().as_bytes());
    hash_optional(&mut hasher, message.name.as_deref());
    hasher.update((message.parts.len() as u64).to_le_bytes());
    for part in &message.parts {
        hash_part(&mut hasher, part);
    }
    hasher.finalize()
}

fn hash_part(hasher: &mut BufferedSha256, part: &ContentPart) {
    match part {
        ContentPart::Text { text } => {
            hasher.update([1]);
            hash_str(hasher, text);
        }
        ContentPart::Thinking { text, signature } => {
            hasher.update([2]);
            hash_str(hasher, text);
            if let Some(signature) = signature {
                hasher.update([7]);
                hash_str(hasher, signature);
            }
        }
        ContentPart::RedactedThinking { data } => {
            hasher.update([8]);
            hash_str(hasher, data);
        }
        ContentPart::ToolCall(call) => {
            hasher.update([3]);
            hash_str(hasher, &call.id);
            hash_str(hasher, &call.name);
            hash_json(hasher, &call.arguments);
        }
        ContentPart::ToolResult(result) => {
            hasher.update([4]);
            hash_str(hasher, &result.call_id);
            hash_str(hasher, &result.tool_name);
            hasher.update([u8::from(result.is_error)]);
            hasher.update((result.outputs.len() as u64).to_le_bytes());
            for output in &result.outputs {
                match output {
                    ToolOutput::Text { text } => {
                        hasher.update([1]);
                        hash_str(hasher, text);
                    }
                    ToolOutput::Media { kind, size_bytes } => {
                        hasher.update([2]);
                        hash_str(hasher, kind.as_str());
                        hasher.update(size_bytes.to_le_bytes());
                    }
                }
            }
        }
        ContentPart::Media { kind, size_bytes } => {
            hasher.update([5]);
            hash_str(hasher, kind.as_str());
            hasher.update(size_bytes.to_le_bytes());
        }
        ContentPart::Image(image) => {
            hasher.update([6]);
            hash_str(hasher, &image.media_type);
            hash_str(hasher, &image.data);
            hasher.update(image.tokens.to_le_bytes());
        }
    }
}

fn hash_str(hasher: &mut BufferedSha256, text: &str) {
    hasher.update((text.len() as u64).to_le_bytes());
    hasher.update(text.as_bytes());
}

fn hash_optional(hasher: &mut BufferedSha256, text: Option<&str>) {
    match text {
        Some(text) => {
            hasher.update([1]);
            hash_str(hasher, text);
        }
        None => hasher.update([0]),
    }
}

/// Hashes the JSON text the estimator counts, without building the string. A terminator
/// byte keeps the field boundary, since JSON text cannot contain a raw 0x00.
fn hash_json(hasher: &mut BufferedSha256, value: &serde_json::Value) {
    let written = serde_json::to_writer(&mut *hasher, value);
    assert!(
        written.is_ok(),
        "a JSON value always serialises into a writer that never fails"
    );
    hasher.update([0]);
}

#[cfg(test)]
mod tests;
