//! The output items of stored Responses replies (`store` on, the API's default), by id, so a
//! later request may refer to them as the API allows: an `item_reference` item, or a reasoning
//! item given by its id alone. Harnesses do both (the AI SDK sends `{"type":"item_reference",
//! "id":"msg_…"}` for an earlier assistant message; the OpenAI Agents SDK hands reasoning back by
//! id), and the API answers an id it does not hold with `Item with id '…' not found.`.
//!
//! Bounded: at most [`STORED_ITEMS_MAX`] items and [`STORED_BYTES_MAX`] bytes of them; the oldest
//! go first, and a reference to one gone is answered as the API answers an unknown id. Whole
//! conversations, for `previous_response_id`, are `super::chains`'. The items one request's references bring in are bounded too ([`RESOLVED_BYTES_MAX`]): a small
//! body repeating one reference cannot make the host build gigabytes of copies.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::validate::Invalid;

/// Items one host keeps for references.
pub const STORED_ITEMS_MAX: usize = 16_384;
/// Bytes of items (as JSON) one host keeps for references.
pub const STORED_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Bytes of stored items (as JSON) the references of one request may bring in. Each reference
/// becomes a copy of its item in the input the host reads (the harness's messages own their
/// text, so copies cannot be shared), and 300,000 references to a 3 KB item in a 13 MB body
/// would be 870 MB of copies; 64 MiB of text is millions of tokens, past any model's window, so
/// a request past it is answered with the API's `context_length_exceeded`, as the provider
/// would answer it once it had counted.
pub const RESOLVED_BYTES_MAX: usize = 64 * 1024 * 1024;

#[derive(Debug, Default)]
struct Inner {
    /// Each item, shared, with its size as JSON.
    items: BTreeMap<String, (Arc<Value>, usize)>,
    /// Ids in the order they were stored, with each item's size.
    order: VecDeque<(String, usize)>,
    bytes: usize,
}

/// Stored output items by id (see the module documentation).
#[derive(Debug, Default)]
pub struct StoredItems {
    inner: Mutex<Inner>,
}

impl StoredItems {
    /// Keeps each item that has an id, dropping the oldest past the bounds.
    pub fn insert_all(&self, items: &[Value]) {
        let mut inner = self.lock();
        for item in items {
            let Some(id) = item.get("id").and_then(Value::as_str) else {
                continue;
            };
            let size = super::chains::json_size(item);
            if size > STORED_BYTES_MAX {
                continue;
            }
            let kept = (Arc::new(item.clone()), size);
            if let Some((_, old)) = inner.items.insert(id.to_string(), kept) {
                inner.bytes -= old;
                inner.order.retain(|(kept, _)| kept != id);
            }
            inner.order.push_back((id.to_string(), size));
            inner.bytes += size;
            while inner.items.len() > STORED_ITEMS_MAX || inner.bytes > STORED_BYTES_MAX {
                let Some((oldest, size)) = inner.order.pop_front() else {
                    break;
                };
                inner.items.remove(&oldest);
                inner.bytes -= size;
            }
        }
    }

    /// The stored item `id`, shared, and its size as JSON.
    pub fn get(&self, id: &str) -> Option<(Arc<Value>, usize)> {
        self.lock().items.get(id).cloned()
    }

    /// The request body with each `item_reference`, and each reasoning item given by id alone,
    /// replaced by the stored item; `None` when nothing refers to a stored item. A reasoning
    /// item this store does not hold is left as it is, for `super::reasoning` to refuse in the
    /// words that fit (its response was made unstored, or never made).
    ///
    /// # Errors
    /// The API's 400 for an `item_reference` to an item it does not hold.
    pub fn resolve(&self, json: &Value) -> Result<Option<Value>, Invalid> {
        let Some(items) = json.get("input").and_then(Value::as_array) else {
            return Ok(None);
        };
        let mut resolved = Vec::with_capacity(items.len());
        let mut changed = false;
        let mut brought = 0usize;
        for item in items {
            let kind = item.get("type").and_then(Value::as_str);
            let id = item.get("id").and_then(Value::as_str);
            let by_reference = kind == Some("item_reference");
            let reasoning_by_id =
                kind == Some("reasoning") && item.get("encrypted_content").is_none();
            match id {
                Some(id) if by_reference || reasoning_by_id => match self.get(id) {
                    Some((stored, size)) => {
                        brought = brought.saturating_add(size);
                        if brought > RESOLVED_BYTES_MAX {
                            return Err(too_much(brought));
                        }
                        resolved.push(Value::clone(&stored));
                        changed = true;
                    }
                    None if reasoning_by_id => resolved.push(item.clone()),
                    None => return Err(not_found(id)),
                },
                None if by_reference => return Err(not_found("")),
                _ => resolved.push(item.clone()),
            }
        }
        if !changed {
            return Ok(None);
        }
        let mut body = json.clone();
        body["input"] = Value::Array(resolved);
        Ok(Some(body))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The answer to references that bring in more than [`RESOLVED_BYTES_MAX`]: the API's overflow.
fn too_much(brought: usize) -> Invalid {
    Invalid {
        reason: format!(
            "the references bring in over {brought} bytes of stored items, more than {RESOLVED_BYTES_MAX} (RESOLVED_BYTES_MAX), past any window"
        ),
        rule: Some("references"),
        body: super::responses::overflow_body(),
    }
}

/// The API's answer to an id it does not hold (anomalyco/opencode#7724).
fn not_found(id: &str) -> Invalid {
    Invalid {
        reason: format!("item {id} is not stored"),
        rule: Some("references"),
        body: json!({"error": {"message": format!("Item with id '{id}' not found."), "type": "invalid_request_error", "param": "input", "code": null}})
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_replaced_by_the_stored_items() {
        let stored = StoredItems::default();
        let message = json!({"type": "message", "id": "msg_0002", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]});
        let reasoning = json!({"type": "reasoning", "id": "rs_0001", "summary": [{"type": "summary_text", "text": "Logs first."}]});
        stored.insert_all(&[reasoning.clone(), message.clone(), json!({"no": "id"})]);
        let body = json!({"model": "m", "input": [
            {"role": "user", "content": "Why?"},
            {"type": "reasoning", "id": "rs_0001", "summary": []},
            {"type": "item_reference", "id": "msg_0002"},
        ]});
        let resolved = stored.resolve(&body).expect("resolved").expect("changed");
        assert_eq!(resolved["input"][1], reasoning);
        assert_eq!(resolved["input"][2], message);
        let plain = json!({"model": "m", "input": [{"role": "user", "content": "Why?"}]});
        assert_eq!(stored.resolve(&plain).expect("nothing to resolve"), None);
        let unknown =
            json!({"model": "m", "input": [{"type": "item_reference", "id": "msg_0009"}]});
        let refusal = stored.resolve(&unknown).expect_err("refused");
        assert!(
            refusal.body.contains("Item with id 'msg_0009' not found."),
            "{}",
            refusal.body
        );
    }

    #[test]
    fn references_bring_in_a_bounded_number_of_bytes() {
        let stored = StoredItems::default();
        let text = "x".repeat(2_900);
        let message = json!({"type": "message", "id": "msg_0001", "role": "assistant", "content": [{"type": "output_text", "text": text}]});
        stored.insert_all(std::slice::from_ref(&message));
        let (shared, size) = stored.get("msg_0001").expect("stored");
        assert_eq!(size, message.to_string().len());
        assert!(Arc::ptr_eq(
            &shared,
            &stored.get("msg_0001").expect("stored").0
        ));
        let reference = json!({"type": "item_reference", "id": "msg_0001"});
        let body = |count: usize| json!({"model": "m", "input": vec![reference.clone(); count]});
        // As many references as the bound holds resolve, each the item's bytes.
        let fits = RESOLVED_BYTES_MAX / size;
        let resolved = stored
            .resolve(&body(fits))
            .expect("resolved")
            .expect("changed");
        let input = resolved["input"].as_array().expect("input");
        assert_eq!(input.len(), fits);
        assert!(
            input
                .iter()
                .map(|item| item.to_string().len())
                .sum::<usize>()
                <= RESOLVED_BYTES_MAX
        );
        drop(resolved);
        // 300,000 references in a 13 MB body would be 870 MB of copies: refused as an overflow.
        let many = body(300_000);
        assert!(many.to_string().len() < 14_000_000);
        let Err(refusal) = stored.resolve(&many) else {
            panic!("300,000 references were resolved into copies");
        };
        assert!(
            refusal.body.contains("context_length_exceeded"),
            "{}",
            refusal.body
        );
        assert!(
            refusal.reason.contains("RESOLVED_BYTES_MAX"),
            "{}",
            refusal.reason
        );
    }

    #[test]
    fn the_store_is_bounded_and_forgets_the_oldest_first() {
        let stored = StoredItems::default();
        for number in 0..(STORED_ITEMS_MAX + 5) {
            stored.insert_all(&[json!({"type": "message", "id": format!("msg_{number:06}")})]);
        }
        assert!(stored.get("msg_000000").is_none());
        assert!(
            stored
                .get(&format!("msg_{:06}", STORED_ITEMS_MAX + 4))
                .is_some()
        );
        let inner = stored.lock();
        assert_eq!(inner.items.len(), STORED_ITEMS_MAX);
        assert_eq!(inner.order.len(), STORED_ITEMS_MAX);
        assert_eq!(
            inner.bytes,
            inner
                .items
                .values()
                .map(|(v, _)| v.to_string().len())
                .sum::<usize>()
        );
    }
}
