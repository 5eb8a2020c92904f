//! The conversations of stored Responses replies (`store` on, the API's default), by response
//! id, so a later request may go on from one with `previous_response_id`, as the API allows: it
//! answers such a request as if its `input` followed the stored response's own input and output
//! items (its `instructions` are not carried over). Harnesses chain so to keep reasoning on the
//! server (OpenAI's reasoning guide: "If you use previous_response_id for multi-turn
//! conversations, the model will automatically have access to all previously produced reasoning
//! items"; the AI SDK's `previousResponseId`, the Agents SDKs' `previous_response_id`).
//!
//! The API refuses, with these words:
//! - an id it does not hold: `Previous response with id 'resp_…' not found.`
//!   (`previous_response_not_found`);
//! - an input item whose id the request already holds, in the stored conversation or earlier in
//!   its own input: `Duplicate item found with id rs_…. Remove duplicate items from your input
//!   and try again.` (vercel/ai#15492 for items the previous response holds; vercel/ai#7883 for
//!   one input carrying a reasoning item twice).
//!
//! Bounded: at most [`CHAINS_MAX`] conversations and [`CHAINS_BYTES_MAX`] bytes of their items
//! (an item shared by several conversations counted in each); the oldest go first, and an id
//! gone is answered as one never held. A conversation larger than the bound is not kept.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::validate::Invalid;

/// Conversations one host keeps.
pub const CHAINS_MAX: usize = 4096;
/// Bytes of items (as JSON) one host keeps in conversations.
pub const CHAINS_BYTES_MAX: usize = 64 * 1024 * 1024;

/// One item of a conversation, shared by every conversation that holds it, with its size as
/// JSON.
#[derive(Debug)]
pub struct Kept {
    value: Value,
    size: usize,
}

impl Kept {
    fn new(value: Value) -> Arc<Kept> {
        let size = json_size(&value);
        Arc::new(Kept { value, size })
    }
}

/// A conversation: every item the model saw and said, in order.
pub type Conversation = Arc<[Arc<Kept>]>;

#[derive(Debug, Default)]
struct Inner {
    chains: BTreeMap<String, (Conversation, usize)>,
    order: VecDeque<String>,
    bytes: usize,
}

/// Stored conversations by response id (see the module documentation).
#[derive(Debug, Default)]
pub struct StoredChains {
    inner: Mutex<Inner>,
}

impl StoredChains {
    /// Keeps response `id`'s conversation: the items of `input` (what it answered, its own
    /// previous conversation included), then its `output` items.
    pub fn insert(&self, id: String, input: Vec<Arc<Kept>>, output: &[Value]) {
        let mut items = input;
        items.extend(output.iter().cloned().map(Kept::new));
        let size: usize = items.iter().map(|item| item.size).sum();
        if size > CHAINS_BYTES_MAX {
            return;
        }
        let mut inner = self.lock();
        if let Some((_, old)) = inner.chains.insert(id.clone(), (items.into(), size)) {
            inner.bytes -= old;
            inner.order.retain(|kept| kept != &id);
        }
        inner.order.push_back(id);
        inner.bytes += size;
        while inner.chains.len() > CHAINS_MAX || inner.bytes > CHAINS_BYTES_MAX {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some((_, size)) = inner.chains.remove(&oldest) {
                inner.bytes -= size;
            }
        }
    }

    /// The request body with the conversation its `previous_response_id` names put before its
    /// input, and that field left out; `None` when it names none.
    ///
    /// # Errors
    /// The API's 400 for an id it does not hold, or for an input item whose id the request
    /// already holds.
    pub fn resolve(&self, json: &Value) -> Result<Option<Value>, Invalid> {
        let own = input_items(json);
        let previous = match json.get("previous_response_id") {
            Some(Value::String(id)) => Some(
                self.lock()
                    .chains
                    .get(id)
                    .map(|(chain, _)| Arc::clone(chain))
                    .ok_or_else(|| not_found(id))?,
            ),
            _ => None,
        };
        let mut held: BTreeSet<&str> = previous
            .iter()
            .flat_map(|chain| chain.iter())
            .filter_map(|item| item_id(&item.value))
            .collect();
        for item in &own {
            if let Some(id) = item_id(item)
                && !held.insert(id)
            {
                return Err(duplicate(id));
            }
        }
        let Some(previous) = previous else {
            return Ok(None);
        };
        let mut body = json.clone();
        let mut input: Vec<Value> = previous.iter().map(|item| item.value.clone()).collect();
        match json.get("input") {
            Some(Value::String(text)) => input.push(user_message(text)),
            _ => input.extend(own.into_iter().cloned()),
        }
        body["input"] = Value::Array(input);
        if let Some(object) = body.as_object_mut() {
            object.remove("previous_response_id");
        }
        Ok(Some(body))
    }

    /// The items of `json`'s input as a conversation keeps them (a string input is one user
    /// message); `None` when they alone are more than a conversation may hold.
    pub fn kept_input(json: &Value) -> Option<Vec<Arc<Kept>>> {
        if let Some(Value::String(text)) = json.get("input") {
            return (text.len() <= CHAINS_BYTES_MAX).then(|| vec![Kept::new(user_message(text))]);
        }
        // Measured before anything is copied: a body too large to keep costs no copy.
        let items = input_items(json);
        let sizes: Vec<usize> = items.iter().map(|item| json_size(item)).collect();
        if sizes
            .iter()
            .fold(0usize, |sum, size| sum.saturating_add(*size))
            > CHAINS_BYTES_MAX
        {
            return None;
        }
        let kept = items.into_iter().zip(sizes).map(|(item, size)| {
            Arc::new(Kept {
                value: item.clone(),
                size,
            })
        });
        Some(kept.collect())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The item a string `input` stands for.
fn user_message(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

/// The request's input items (none for a string input).
fn input_items(json: &Value) -> Vec<&Value> {
    json.get("input")
        .and_then(Value::as_array)
        .map(|items| items.iter().collect())
        .unwrap_or_default()
}

/// The id an input item is known by: its own, or the one an `item_reference` names.
fn item_id(item: &Value) -> Option<&str> {
    item.get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
}

/// The size of `value` as compact JSON, without building the text.
pub(super) fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => usize::MAX,
    }
}

/// The API's answer to a `previous_response_id` it does not hold.
fn not_found(id: &str) -> Invalid {
    Invalid {
        reason: format!("previous_response_id: {id} is not stored"),
        rule: Some("references"),
        body: json!({"error": {"message": format!("Previous response with id '{id}' not found."), "type": "invalid_request_error", "param": "previous_response_id", "code": "previous_response_not_found"}})
            .to_string(),
    }
}

/// The API's answer to an input item whose id the request already holds.
fn duplicate(id: &str) -> Invalid {
    Invalid {
        reason: format!("item {id} is already in the request's conversation"),
        rule: Some("references"),
        body: json!({"error": {"message": format!("Duplicate item found with id {id}. Remove duplicate items from your input and try again."), "type": "invalid_request_error", "param": "input", "code": null}})
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(invalid: &Invalid) -> String {
        let body: Value = serde_json::from_str(&invalid.body).expect("JSON");
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// A host's conversation `resp_0001`: a question, then a reasoning item and a call.
    fn one_turn() -> StoredChains {
        let chains = StoredChains::default();
        let input =
            StoredChains::kept_input(&json!({"input": "Why did build 1 fail?"})).expect("small");
        chains.insert(
            "resp_0001".into(),
            input,
            &[
                json!({"type": "reasoning", "id": "rs_0001", "summary": []}),
                json!({"type": "function_call", "id": "fc_0001_0", "call_id": "call_1", "name": "read_log", "arguments": "{}"}),
            ],
        );
        chains
    }

    #[test]
    fn a_previous_response_puts_its_conversation_before_the_input() {
        let chains = one_turn();
        let body = json!({"model": "m", "previous_response_id": "resp_0001", "instructions": "Be brief.",
            "input": [{"type": "function_call_output", "call_id": "call_1", "output": "OOM"}]});
        let resolved = chains.resolve(&body).expect("held").expect("changed");
        let types: Vec<&str> = resolved["input"]
            .as_array()
            .expect("items")
            .iter()
            .map(|item| item["type"].as_str().unwrap_or("message"))
            .collect();
        assert_eq!(
            types,
            [
                "message",
                "reasoning",
                "function_call",
                "function_call_output"
            ]
        );
        assert_eq!(resolved["input"][0]["content"], "Why did build 1 fail?");
        assert!(resolved.get("previous_response_id").is_none());
        assert_eq!(resolved["instructions"], "Be brief.");
        // A request that names none is left as it is.
        assert_eq!(
            chains.resolve(&json!({"model": "m", "input": "hi"})),
            Ok(None)
        );
    }

    #[test]
    fn an_id_not_held_is_refused_in_the_apis_words() {
        let refused = one_turn()
            .resolve(&json!({"model": "m", "previous_response_id": "resp_0009", "input": "hi"}))
            .expect_err("not held");
        assert_eq!(
            message(&refused),
            "Previous response with id 'resp_0009' not found."
        );
        assert!(
            refused
                .body
                .contains(r#""code":"previous_response_not_found""#)
        );
        assert_eq!(refused.rule, Some("references"));
    }

    #[test]
    fn an_item_the_request_already_holds_is_refused_as_a_duplicate() {
        let chains = one_turn();
        // Sent again after the previous response that holds it (vercel/ai#15502).
        for again in [
            json!({"type": "reasoning", "id": "rs_0001", "summary": []}),
            json!({"type": "item_reference", "id": "fc_0001_0"}),
        ] {
            let body = json!({"model": "m", "previous_response_id": "resp_0001", "input": [again,
                {"type": "function_call_output", "call_id": "call_1", "output": "OOM"}]});
            let refused = chains.resolve(&body).expect_err("duplicate");
            assert!(
                message(&refused).starts_with("Duplicate item found with id ")
                    && message(&refused)
                        .ends_with(". Remove duplicate items from your input and try again."),
                "{}",
                message(&refused)
            );
        }
        // Twice in one input, with no previous response.
        let twice = json!({"model": "m", "input": [
            {"type": "reasoning", "id": "rs_0001", "summary": []},
            {"type": "reasoning", "id": "rs_0001", "summary": []}]});
        let refused = chains.resolve(&twice).expect_err("duplicate");
        assert_eq!(
            message(&refused),
            "Duplicate item found with id rs_0001. Remove duplicate items from your input and try again."
        );
        // Items without ids are never duplicates.
        let plain = json!({"model": "m", "previous_response_id": "resp_0001", "input": [
            {"role": "user", "content": "Why did build 1 fail?"}, {"role": "user", "content": "Why did build 1 fail?"}]});
        assert!(chains.resolve(&plain).is_ok());
    }

    #[test]
    fn conversations_are_bounded_and_the_oldest_go_first() {
        let chains = StoredChains::default();
        for number in 0..CHAINS_MAX + 3 {
            chains.insert(
                format!("resp_{number:04}"),
                Vec::new(),
                &[json!({"role": "user", "content": "x"})],
            );
        }
        let held = |id: &str| {
            chains
                .resolve(&json!({"model": "m", "previous_response_id": id, "input": "hi"}))
                .is_ok()
        };
        assert!(!held("resp_0000") && !held("resp_0002"));
        assert!(held("resp_0003") && held(&format!("resp_{:04}", CHAINS_MAX + 2)));
        // One larger than the whole bound is not kept at all.
        let huge = json!({"input": "x".repeat(CHAINS_BYTES_MAX + 1)});
        assert!(StoredChains::kept_input(&huge).is_none());
        assert_eq!(json_size(&json!({"a": [1, "b"]})), r#"{"a":[1,"b"]}"#.len());
    }
}
