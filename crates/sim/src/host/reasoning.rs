//! The Responses API's rules for reasoning items, which a harness must hand back as it got them.
//!
//! A reply that thinks carries a `reasoning` item (`rs_N`, N the host's request number) before
//! the message or calls it led to (`msg_N`, `fc_N_k`); with `include:
//! ["reasoning.encrypted_content"]` the item carries an opaque `encrypted_content`, which is how a
//! harness that stores nothing server-side (`store: false`) passes its reasoning back. The API
//! refuses, with these words (each seen in public reports):
//! - a reasoning item not followed by the item it led to: `Item 'rs_…' of type 'reasoning' was
//!   provided without its required following item.` (continuedev/continue#8933). A call sent
//!   back whole without its `fc_…` id counts as that item: in 2025 the API refused it
//!   (pydantic/pydantic-ai#2861), but OpenAI's own Agents SDK for TypeScript now strips call ids
//!   from its sessions on purpose while keeping reasoning ids, and the AI SDK sends its calls
//!   without ids after referenced reasoning (vercel/ai#15795): refusing it would fail both;
//! - an item of a response that reasoned, passed back by its id without that reasoning: `Item
//!   'fc_…' of type 'function_call' was provided without its required 'reasoning' item: 'rs_…'.`
//!   (continuedev/continue#12620);
//! - a reasoning item passed by id alone that no stored response holds: `Item with id 'rs_…' not
//!   found.`, with `Items are not persisted when `store` is set to false. …` when the response
//!   that made it was asked not to be stored (anomalyco/opencode#7724, #8987). A response made
//!   with `store` on (the API's default) resolves its reasoning by id, as the API does;
//! - encrypted content that is not what the API issued for that item: `The encrypted content
//!   gAAA…XXXX could not be verified.`, code `invalid_encrypted_content` (openai/codex#8145).
//!
//! A reasoning item with neither an id nor encrypted content (a summary the harness rebuilt from
//! a stream) is taken as it is (langchain-ai/langchainjs#11045); an id the API did not issue is
//! refused before these rules, with the input's other malformed fields (`super::validate`).
//!
//! The encrypted content is derived from the item's id alone (a keyed SHA-256), so it can be
//! checked without keeping anything; which responses reasoned, and whether each was stored, is
//! kept in a bounded map ([`Reasoned`]). Nothing else of a response is kept.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::{Value, json};

use super::validate::Invalid;

/// Responses whose reasoning a host remembers; older ones are forgotten first (their items are
/// then no longer held to the reasoning rule).
pub const REASONED_MAX: usize = 65_536;

/// The `include` value that asks for reasoning items' encrypted content.
pub const ENCRYPTED_CONTENT: &str = "reasoning.encrypted_content";

/// The request numbers of the responses that carried a reasoning item, each with whether it
/// was stored, at most [`REASONED_MAX`] of them.
#[derive(Debug, Default)]
pub struct Reasoned {
    numbers: Mutex<BTreeMap<u64, bool>>,
}

impl Reasoned {
    /// Notes that response `number` reasoned, and whether it was `stored`.
    pub fn insert(&self, number: u64, stored: bool) {
        let mut numbers = self.lock();
        numbers.insert(number, stored);
        while numbers.len() > REASONED_MAX {
            numbers.pop_first();
        }
    }

    /// Whether response `number` reasoned (as far as the map remembers).
    pub fn contains(&self, number: u64) -> bool {
        self.lock().contains_key(&number)
    }

    /// Whether response `number` reasoned and was stored.
    fn stored(&self, number: u64) -> Option<bool> {
        self.lock().get(&number).copied()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, bool>> {
        self.numbers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether the request asks to store its response (`store`, on unless said otherwise).
pub fn wants_stored(json: &Value) -> bool {
    json.get("store").and_then(Value::as_bool) != Some(false)
}

/// Whether the request asks for reasoning items' encrypted content.
pub fn wants_encrypted_content(json: &Value) -> bool {
    json.get("include")
        .and_then(Value::as_array)
        .is_some_and(|include| {
            include
                .iter()
                .any(|v| v.as_str() == Some(ENCRYPTED_CONTENT))
        })
}

/// The id of response `number`'s reasoning item.
pub fn reasoning_id(number: u64) -> String {
    format!("rs_{number:04}")
}

/// The encrypted content issued for reasoning item `id`: opaque, deterministic, and checkable
/// from the id alone.
pub fn encrypted_content(id: &str) -> String {
    format!("gAAAAA{}", super::seal("ctxbed reasoning", id))
}

/// The response number an output item id of ours carries (`rs_0003`, `msg_0003`, `fc_0003_1`).
fn response_number(id: &str) -> Option<u64> {
    let rest = ["rs_", "msg_", "fc_"]
        .iter()
        .find_map(|prefix| id.strip_prefix(prefix))?;
    let digits = rest.split('_').next()?;
    if digits.len() < 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What one input item is, for these rules.
struct Item<'a> {
    kind: &'a str,
    id: Option<&'a str>,
    value: &'a Value,
}

impl<'a> Item<'a> {
    fn of(value: &'a Value) -> Self {
        Item {
            kind: value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("message"),
            id: value.get("id").and_then(Value::as_str),
            value,
        }
    }

    /// An item a reply produced: a call, or an assistant message.
    fn is_output(&self) -> bool {
        self.kind == "function_call"
            || (self.kind == "message"
                && self.value.get("role").and_then(Value::as_str) == Some("assistant"))
    }
}

/// Checks a Responses request's input items against the reasoning rules, `reasoned` telling
/// which responses carried reasoning.
///
/// # Errors
/// The API's 400 for the first item that breaks a rule.
pub fn check(json: &Value, reasoned: &Reasoned) -> Result<(), Invalid> {
    let Some(items) = json.get("input").and_then(Value::as_array) else {
        return Ok(());
    };
    let items: Vec<Item<'_>> = items.iter().map(Item::of).collect();
    let mut seen_reasoning: BTreeSet<&str> = BTreeSet::new();
    for (index, item) in items.iter().enumerate() {
        if item.kind == "reasoning" {
            let id = item.id.unwrap_or_default();
            reasoning_item(item, id, reasoned)?;
            let follows = items.get(index + 1).is_some_and(|next| {
                next.is_output()
                    && (item.id.is_none()
                        || next
                            .id
                            .and_then(response_number)
                            .is_none_or(|number| Some(number) == response_number(id)))
            });
            if !follows {
                return Err(refusal(
                    format!("reasoning item {id} without the item it led to"),
                    format!(
                        "Item '{id}' of type 'reasoning' was provided without its required following item."
                    ),
                    Some("input"),
                    None,
                ));
            }
            seen_reasoning.insert(id);
        } else if item.is_output()
            && let Some(id) = item.id
            && let Some(number) = response_number(id)
            && reasoned.contains(number)
        {
            let wanted = reasoning_id(number);
            if !seen_reasoning.contains(wanted.as_str()) {
                return Err(refusal(
                    format!("{id} without its reasoning item {wanted}"),
                    format!(
                        "Item '{id}' of type '{}' was provided without its required 'reasoning' item: '{wanted}'.",
                        item.kind
                    ),
                    Some("input"),
                    None,
                ));
            }
        }
    }
    Ok(())
}

/// A reasoning item brings back the encrypted content issued for it, or only its id when the
/// response that made it was stored.
fn reasoning_item(item: &Item<'_>, id: &str, reasoned: &Reasoned) -> Result<(), Invalid> {
    match item.value.get("encrypted_content").and_then(Value::as_str) {
        Some(content) if content == encrypted_content(id) => Ok(()),
        Some(content) => {
            let chars: Vec<char> = content.chars().collect();
            let shown = if chars.len() > 8 {
                let head: String = chars[..4].iter().collect();
                let tail: String = chars[chars.len() - 4..].iter().collect();
                format!("{head}...{tail}")
            } else {
                content.to_string()
            };
            Err(refusal(
                format!("reasoning item {id}: encrypted content not as issued"),
                format!("The encrypted content {shown} could not be verified."),
                None,
                Some("invalid_encrypted_content"),
            ))
        }
        // Neither an id nor encrypted content: a reasoning item the harness wrote itself (its
        // summary alone), which the API takes (langchain-ai/langchainjs#11045).
        None if item.id.is_none() => Ok(()),
        None => {
            let stored = response_number(id).and_then(|number| reasoned.stored(number));
            if stored == Some(true) && id.starts_with("rs_") {
                return Ok(());
            }
            let mut message = format!("Item with id '{id}' not found.");
            if stored == Some(false) {
                message.push_str(
                    " Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.",
                );
            }
            Err(refusal(
                format!("reasoning item {id} by id alone, not stored"),
                message,
                Some("input"),
                None,
            ))
        }
    }
}

fn refusal(reason: String, message: String, param: Option<&str>, code: Option<&str>) -> Invalid {
    Invalid {
        reason,
        rule: Some("reasoning"),
        body: json!({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Responses that reasoned, made with `store: false`.
    fn reasoned(numbers: &[u64]) -> Reasoned {
        let set = Reasoned::default();
        for number in numbers {
            set.insert(*number, false);
        }
        set
    }

    fn message(result: Result<(), Invalid>) -> String {
        let invalid = result.expect_err("refused");
        let body: Value = serde_json::from_str(&invalid.body).expect("JSON");
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    fn loop_input(reasoning: Option<Value>) -> Value {
        let mut input = vec![json!({"role": "user", "content": "Why?"})];
        input.extend(reasoning);
        input.push(json!({"type": "function_call", "id": "fc_0001_0", "call_id": "call_1", "name": "read_log", "arguments": "{}"}));
        input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "x"}));
        json!({"model": "m", "input": input})
    }

    #[test]
    fn reasoning_handed_back_whole_passes() {
        let item = json!({"type": "reasoning", "id": "rs_0001", "summary": [], "encrypted_content": encrypted_content("rs_0001")});
        assert!(check(&loop_input(Some(item)), &reasoned(&[1])).is_ok());
        // Calls sent back without their ids are not tied to a response.
        let anonymous = json!({"model": "m", "input": [
            {"role": "user", "content": "Why?"},
            {"type": "function_call", "call_id": "call_1", "name": "read_log", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "x"},
        ]});
        assert!(check(&anonymous, &reasoned(&[1])).is_ok());
        // A call sent whole without its id still follows its reasoning (see the module doc).
        let item = json!({"type": "reasoning", "id": "rs_0001", "summary": [], "encrypted_content": encrypted_content("rs_0001")});
        let mut id_less = loop_input(Some(item));
        id_less["input"][2]
            .as_object_mut()
            .map(|call| call.remove("id"));
        assert!(check(&id_less, &reasoned(&[1])).is_ok());
        // A response that did not reason asks for nothing.
        assert!(check(&loop_input(None), &reasoned(&[])).is_ok());
    }

    #[test]
    fn a_dropped_reasoning_item_is_refused_in_the_apis_words() {
        assert_eq!(
            message(check(&loop_input(None), &reasoned(&[1]))),
            "Item 'fc_0001_0' of type 'function_call' was provided without its required 'reasoning' item: 'rs_0001'."
        );
    }

    #[test]
    fn a_reasoning_item_without_what_followed_it_is_refused() {
        let body = json!({"model": "m", "input": [
            {"role": "user", "content": "Why?"},
            {"type": "reasoning", "id": "rs_0001", "summary": [], "encrypted_content": encrypted_content("rs_0001")},
            {"role": "user", "content": "Go on."},
        ]});
        assert_eq!(
            message(check(&body, &reasoned(&[1]))),
            "Item 'rs_0001' of type 'reasoning' was provided without its required following item."
        );
    }

    #[test]
    fn reasoning_by_id_alone_or_altered_is_refused() {
        let by_id = json!({"type": "reasoning", "id": "rs_0001", "summary": []});
        let body = loop_input(Some(by_id));
        assert!(
            message(check(&body, &reasoned(&[1]))).ends_with(
                "Try again with `store` set to true, or remove this item from your input."
            )
        );
        assert_eq!(
            message(check(&body, &reasoned(&[]))),
            "Item with id 'rs_0001' not found."
        );
        // A stored response resolves its reasoning by id.
        let stored = Reasoned::default();
        stored.insert(1, true);
        assert!(check(&body, &stored).is_ok());
        let altered = json!({"type": "reasoning", "id": "rs_0001", "summary": [], "encrypted_content": encrypted_content("rs_0002")});
        let refused = check(&loop_input(Some(altered)), &reasoned(&[1])).expect_err("refused");
        let body: Value = serde_json::from_str(&refused.body).expect("JSON");
        assert_eq!(body["error"]["code"], "invalid_encrypted_content");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("The encrypted content gAAA...")
                    && m.ends_with(" could not be verified."))
        );
    }

    #[test]
    fn reasoning_without_an_id_or_encrypted_content_is_taken() {
        // What a harness rebuilds from a stream: the summary alone, then the call without its id.
        let mut body = loop_input(Some(json!({"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "Read the log first."}
        ]})));
        body["input"][2]
            .as_object_mut()
            .map(|call| call.remove("id"));
        assert!(check(&body, &reasoned(&[1])).is_ok());
        // Given with the call's id, the id-less item does not stand for that response's reasoning.
        let with_id = loop_input(Some(json!({"type": "reasoning", "summary": []})));
        assert_eq!(
            message(check(&with_id, &reasoned(&[1]))),
            "Item 'fc_0001_0' of type 'function_call' was provided without its required 'reasoning' item: 'rs_0001'."
        );
    }

    #[test]
    fn the_set_of_reasoned_responses_is_bounded() {
        let set = Reasoned::default();
        for number in 0..(REASONED_MAX as u64 + 10) {
            set.insert(number, true);
        }
        assert!(!set.contains(0));
        assert!(set.contains(REASONED_MAX as u64 + 9));
        assert_eq!(set.lock().len(), REASONED_MAX);
        assert_eq!(response_number("fc_0012_3"), Some(12));
        assert_eq!(response_number("fc_abc"), None);
        assert_eq!(response_number("call_1"), None);
    }
}
