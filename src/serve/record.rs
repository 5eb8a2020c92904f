//! Exchanges as canonical JSON lines: object keys sorted at every depth, one object per line,
//! so two runs that sent the same requests give the same bytes.

use serde_json::{Map, Value, json};

use ctxbed_sim::host::Exchange;

/// `value` with every object's keys in sorted order.
pub fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut sorted = Map::new();
            for key in keys {
                sorted.insert(key.clone(), canonical(&map[key]));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// One exchange as a canonical JSON line (without the newline): the request number, the model
/// that answered and its window, the API and path, whether it streamed, the exact input tokens,
/// the status and outcome, and the request body as sent.
pub fn exchange_line(model: &str, window: Option<u64>, exchange: &Exchange) -> String {
    canonical(&json!({
        "n": exchange.number,
        "model": model,
        "window": window,
        "api": exchange.api.as_str(),
        "path": exchange.path,
        "stream": exchange.stream,
        "input_tokens": exchange.input_tokens,
        "status": exchange.status,
        "outcome": exchange.outcome,
        "body": exchange.body,
    }))
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_at_every_depth_whatever_the_insertion_order() {
        let value: Value =
            serde_json::from_str(r#"{"b":1,"a":{"z":[{"y":1,"x":2}],"c":null}}"#).expect("JSON");
        assert_eq!(
            canonical(&value).to_string(),
            r#"{"a":{"c":null,"z":[{"x":2,"y":1}]},"b":1}"#
        );
    }
}
