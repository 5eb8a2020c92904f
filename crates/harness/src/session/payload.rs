//! [`Payload`]: a session record's JSON value, kept as its text.
//!
//! Every reasoning step writes records (one `context/build` carrying the whole manifest, one
//! `message` per committed message) and few are ever read back (by a restore, a check or an
//! export). So a payload is serialised once, straight from the value it describes, when the
//! record is made, and that text is what a JSON-lines log writes as it is. A reader parses the
//! text when it needs a field ([`Payload::value`], [`Payload::parse`]).
//!
//! ```
//! use ctxbed_harness::session::Payload;
//! use serde_json::json;
//! let payload = Payload::from(json!({"history": ["m1"], "messages_created": 1}));
//! assert_eq!(payload.json(), r#"{"history":["m1"],"messages_created":1}"#);
//! assert_eq!(payload.value()["messages_created"], 1);
//! ```

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

/// One JSON value, held as its text and shared by every copy of the record that holds it.
///
/// **Invariant:** the text is valid JSON of one value: it is either serialised here or read
/// through a JSON parser. Two payloads are equal when their texts are; payloads made here are
/// compact (no whitespace), so a value serialised twice gives equal payloads.
#[derive(Clone, PartialEq, Eq)]
pub struct Payload(Arc<str>);

impl Payload {
    /// Serialises a value.
    ///
    /// # Errors
    /// The value's `Serialize` implementation failed, or it is a map whose keys are not
    /// strings.
    pub fn new<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(value).map(|text| Payload(text.into()))
    }

    /// Takes JSON text as it is, after checking that it is one JSON value.
    ///
    /// # Errors
    /// The text is not JSON, or holds more than one value.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        let raw: &RawValue = serde_json::from_str(text)?;
        Ok(Payload::from(raw))
    }

    /// The JSON text.
    pub fn json(&self) -> &str {
        &self.0
    }

    /// The value, parsed.
    pub fn value(&self) -> Value {
        self.parse()
            .expect("a payload's text is valid JSON (checked when it was made)")
    }

    /// The value, parsed as `T`.
    ///
    /// # Errors
    /// The value is not a `T`.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::from(&value)
    }
}

impl From<&Value> for Payload {
    fn from(value: &Value) -> Self {
        // A `Value`'s map keys are strings, so it always serialises.
        Payload(crate::format::json_text(value).into())
    }
}

impl From<&RawValue> for Payload {
    fn from(raw: &RawValue) -> Self {
        Payload(raw.get().into())
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Display for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_and_its_text_agree() {
        let value = json!({"b": [1, 2.5, null], "a": "line\nbreak \"q\" é", "c": {"x": true}});
        let payload = Payload::from(&value);
        assert_eq!(payload.value(), value, "parsing gives the value back");
        assert_eq!(Payload::new(&value).unwrap(), payload);
        assert_eq!(Payload::from_json(payload.json()).unwrap(), payload);
        // Field order is kept (the log's lines show fields as they were made).
        assert!(payload.json().starts_with(r#"{"b":"#), "{payload}");
    }

    #[test]
    fn only_one_json_value_is_taken() {
        for text in ["", "{", "1 2", "{\"a\":1}x", "nul"] {
            assert!(Payload::from_json(text).is_err(), "{text:?}");
        }
        assert_eq!(Payload::from_json(" [1, 2] ").unwrap().json(), "[1, 2]");
    }
}
