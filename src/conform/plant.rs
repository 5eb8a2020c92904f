//! Planted faults for the reference adapter: ctxbed's own harness made to do one named wrong
//! thing, so the test-bed can show that each wire scenario fails a harness that does what its
//! description warns against, and that a failed step does not change the verdicts of later ones.
//!
//! `CTXBED_PEER_PLANT` holds a comma-separated list (the test adapters under
//! `tests/wire-suite/peers/planted-*` each set one):
//!
//! | plant | the harness … |
//! | --- | --- |
//! | `fail_step=K` | answers step K with an error without calling the model |
//! | `empty_reply_on_error` | turns any failed call into an empty reply |
//! | `no_context` | manages no context: no window, no compaction, no offload |
//! | `no_retry` | never retries a provider error (one attempt) |
//! | `orphan_call` | sends tool calls without their results (results stripped from each request body) |
//! | `retry_same` | answers an overflow by resending the same request once |
//! | `one_session` | runs every step in one session, whatever the step says |
//! | `drop_tool_errors` | hands a failed tool's result to the model as an empty success |
//! | `count_storm` | asks Anthropic's `count_tokens` three times before each Messages request |
//! | `strict_arguments` | fails a whole reply whose tool-call arguments are not a JSON object, as a malformed reply, instead of handing them to the tool |
//! | `blank_text` | hands back each Anthropic tool-use turn with an empty text block before its calls |
//! | `drop_thinking` | hands back no thinking (Anthropic `thinking`/`redacted_thinking` blocks, Responses `reasoning` items are taken out of each request body) |
//! | `images_free` | counts an attached image as no tokens at all |
//! | `memory_sessions` | keeps its sessions in memory even when `CTXBED_STATE_DIR` is set, so a restarted process starts them empty |

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;

use ctxbed_providers::transport::{ResponseBody, Transport, TransportError};

/// The environment variable naming the plants.
pub const PLANT_VARIABLE: &str = "CTXBED_PEER_PLANT";

/// The plants of one adapter run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plants {
    pub fail_step: Option<u64>,
    pub empty_reply_on_error: bool,
    pub no_context: bool,
    pub no_retry: bool,
    pub orphan_call: bool,
    pub retry_same: bool,
    pub one_session: bool,
    pub drop_tool_errors: bool,
    pub count_storm: bool,
    pub drop_thinking: bool,
    pub blank_text: bool,
    pub strict_arguments: bool,
    pub images_free: bool,
    pub memory_sessions: bool,
}

impl Plants {
    /// Reads [`PLANT_VARIABLE`]; unset or empty plants nothing.
    ///
    /// # Errors
    /// A plant that does not exist, or a step that is not a number.
    pub fn from_env() -> Result<Plants, String> {
        Plants::parse(&std::env::var(PLANT_VARIABLE).unwrap_or_default())
    }

    /// Parses a comma-separated list of plants.
    ///
    /// # Errors
    /// A plant that does not exist, or a step that is not a number.
    pub fn parse(text: &str) -> Result<Plants, String> {
        let mut plants = Plants::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once('=') {
                Some(("fail_step", step)) => {
                    plants.fail_step = Some(step.parse().map_err(|_| {
                        format!("{PLANT_VARIABLE}: `fail_step={step}` needs a step number")
                    })?);
                }
                Some(_) => return Err(format!("{PLANT_VARIABLE}: unknown plant `{item}`")),
                None => {
                    let flag = match item {
                        "empty_reply_on_error" => &mut plants.empty_reply_on_error,
                        "no_context" => &mut plants.no_context,
                        "no_retry" => &mut plants.no_retry,
                        "orphan_call" => &mut plants.orphan_call,
                        "retry_same" => &mut plants.retry_same,
                        "one_session" => &mut plants.one_session,
                        "drop_tool_errors" => &mut plants.drop_tool_errors,
                        "count_storm" => &mut plants.count_storm,
                        "drop_thinking" => &mut plants.drop_thinking,
                        "blank_text" => &mut plants.blank_text,
                        "strict_arguments" => &mut plants.strict_arguments,
                        "images_free" => &mut plants.images_free,
                        "memory_sessions" => &mut plants.memory_sessions,
                        _ => return Err(format!("{PLANT_VARIABLE}: unknown plant `{item}`")),
                    };
                    *flag = true;
                }
            }
        }
        Ok(plants)
    }

    /// True when a plant changes what goes over the wire (and needs [`PlantedTransport`]).
    pub fn touches_the_wire(&self) -> bool {
        self.orphan_call
            || self.retry_same
            || self.count_storm
            || self.drop_thinking
            || self.blank_text
            || self.strict_arguments
    }
}

/// A transport that sends what the plants say instead of what the harness built.
pub struct PlantedTransport {
    pub inner: Arc<dyn Transport>,
    pub plants: Plants,
}

#[async_trait]
impl Transport for PlantedTransport {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError> {
        let request = if self.plants.orphan_call {
            request.map(|body| strip_tool_results(&body))
        } else {
            request
        };
        let request = if self.plants.drop_thinking {
            request.map(|body| strip_thinking(&body))
        } else {
            request
        };
        let request = if self.plants.blank_text {
            request.map(|body| blank_text(&body))
        } else {
            request
        };
        if self.plants.count_storm {
            self.count_three_times(&request).await?;
        }
        if !self.plants.retry_same {
            let response = self.inner.send(request).await?;
            if self.plants.strict_arguments {
                return strict_arguments(response).await;
            }
            return Ok(response);
        }
        let again = copy(&request);
        let response = self.inner.send(request).await?;
        // An overflow is a 400, or (the Responses API, streamed) an error event in a 200 stream.
        let streamed = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
        if response.status() != http::StatusCode::BAD_REQUEST && !streamed {
            return Ok(response);
        }
        let (parts, mut body) = response.into_parts();
        let mut bytes = Vec::new();
        while let Some(chunk) = body.next_chunk().await {
            bytes.extend_from_slice(&chunk?);
        }
        let text = String::from_utf8_lossy(&bytes).to_lowercase();
        let overflow = if streamed {
            text.contains("context_length_exceeded")
        } else {
            text.contains("context") || text.contains("too long")
        };
        if overflow {
            return self.inner.send(again).await;
        }
        Ok(http::Response::from_parts(parts, ResponseBody::full(bytes)))
    }
}

/// How many times `count_storm` counts a request before sending it.
const STORM_COUNTS: usize = 3;

impl PlantedTransport {
    /// Asks `count_tokens` about a Messages request [`STORM_COUNTS`] times (its body without
    /// the fields the count route does not take), reading and dropping each answer.
    async fn count_three_times(
        &self,
        request: &http::Request<Bytes>,
    ) -> Result<(), TransportError> {
        let path = request.uri().path();
        if !path.ends_with("/messages") {
            return Ok(());
        }
        let Ok(mut body) = serde_json::from_slice::<Value>(request.body()) else {
            return Ok(());
        };
        if let Some(fields) = body.as_object_mut() {
            fields.remove("max_tokens");
            fields.remove("stream");
        }
        let uri = format!("{}/count_tokens", request.uri())
            .parse::<http::Uri>()
            .map_err(|e| TransportError::Unsupported(e.to_string()))?;
        for _ in 0..STORM_COUNTS {
            let mut count = copy(request);
            *count.uri_mut() = uri.clone();
            *count.body_mut() = Bytes::from(body.to_string());
            let mut answer = self.inner.send(count).await?.into_body();
            while let Some(chunk) = answer.next_chunk().await {
                chunk?;
            }
        }
        Ok(())
    }
}

/// A copy of a request, to send it again.
fn copy(request: &http::Request<Bytes>) -> http::Request<Bytes> {
    let mut again = http::Request::new(request.body().clone());
    *again.method_mut() = request.method().clone();
    *again.uri_mut() = request.uri().clone();
    *again.headers_mut() = request.headers().clone();
    again
}

/// The body with every tool result taken out: OpenAI `tool` messages, Responses
/// `function_call_output` items, Anthropic `tool_result` blocks (and user messages left empty
/// by that).
fn strip_tool_results(body: &Bytes) -> Bytes {
    let Ok(mut json) = serde_json::from_slice::<Value>(body) else {
        return body.clone();
    };
    if let Some(items) = json.get_mut("input").and_then(Value::as_array_mut) {
        items.retain(|i| i.get("type").and_then(Value::as_str) != Some("function_call_output"));
    }
    if let Some(messages) = json.get_mut("messages").and_then(Value::as_array_mut) {
        messages.retain(|m| m.get("role").and_then(Value::as_str) != Some("tool"));
        for message in messages.iter_mut() {
            if let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) {
                blocks.retain(|b| b.get("type").and_then(Value::as_str) != Some("tool_result"));
            }
        }
        messages.retain(|m| {
            m.get("content")
                .and_then(Value::as_array)
                .is_none_or(|blocks| !blocks.is_empty())
        });
    }
    serde_json::to_vec(&json).map_or_else(|_| body.clone(), Bytes::from)
}

/// A whole Chat Completions reply whose tool-call arguments are not all JSON objects, replaced
/// by a reply without choices (which the provider reads as malformed); anything else as sent.
async fn strict_arguments(
    response: http::Response<ResponseBody>,
) -> Result<http::Response<ResponseBody>, TransportError> {
    let (parts, mut body) = response.into_parts();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.next_chunk().await {
        bytes.extend_from_slice(&chunk?);
    }
    let json: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let calls = json["choices"][0]["message"]["tool_calls"].as_array();
    let broken = calls.into_iter().flatten().any(|call| {
        let text = call["function"]["arguments"].as_str().unwrap_or("{}");
        !serde_json::from_str::<Value>(text).is_ok_and(|value| value.is_object())
    });
    if broken {
        bytes = br#"{"id":"strict-arguments"}"#.to_vec();
    }
    Ok(http::Response::from_parts(parts, ResponseBody::full(bytes)))
}

/// The body without thinking: Anthropic `thinking` and `redacted_thinking` blocks and
/// Responses `reasoning` items taken out.
fn strip_thinking(body: &Bytes) -> Bytes {
    let Ok(mut json) = serde_json::from_slice::<Value>(body) else {
        return body.clone();
    };
    let kind = |value: &Value| {
        value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    if let Some(items) = json.get_mut("input").and_then(Value::as_array_mut) {
        items.retain(|item| kind(item) != "reasoning");
    }
    let messages = json.get_mut("messages").and_then(Value::as_array_mut);
    for message in messages.into_iter().flatten() {
        if let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) {
            blocks
                .retain(|block| !matches!(kind(block).as_str(), "thinking" | "redacted_thinking"));
        }
    }
    serde_json::to_vec(&json).map_or_else(|_| body.clone(), Bytes::from)
}

/// The body with an empty text block first in every assistant turn that calls a tool
/// (Anthropic's `tool_use`).
fn blank_text(body: &Bytes) -> Bytes {
    let Ok(mut json) = serde_json::from_slice::<Value>(body) else {
        return body.clone();
    };
    let messages = json.get_mut("messages").and_then(Value::as_array_mut);
    for message in messages.into_iter().flatten() {
        let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) else {
            continue;
        };
        let calls = blocks
            .iter()
            .any(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"));
        if calls {
            blocks.insert(0, serde_json::json!({"type": "text", "text": ""}));
        }
    }
    serde_json::to_vec(&json).map_or_else(|_| body.clone(), Bytes::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_text_block_goes_before_each_tool_use_turn() {
        let body = serde_json::json!({"messages": [
            {"role": "user", "content": "Why?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c", "name": "n", "input": {}}]},
        ]});
        let planted: Value =
            serde_json::from_slice(&blank_text(&Bytes::from(body.to_string()))).expect("json");
        assert_eq!(
            planted["messages"][1]["content"][0],
            serde_json::json!({"type": "text", "text": ""})
        );
        assert_eq!(planted["messages"][0]["content"], "Why?");
    }

    #[test]
    fn thinking_is_stripped_in_both_wire_formats() {
        let anthropic = serde_json::json!({"messages": [{"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "s"},
            {"type": "redacted_thinking", "data": "d"},
            {"type": "tool_use", "id": "c", "name": "n", "input": {}},
        ]}]});
        let stripped: Value =
            serde_json::from_slice(&strip_thinking(&Bytes::from(anthropic.to_string())))
                .expect("json");
        assert_eq!(
            stripped["messages"][0]["content"].as_array().map(Vec::len),
            Some(1)
        );
        let responses = serde_json::json!({"input": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}"},
        ]});
        let stripped: Value =
            serde_json::from_slice(&strip_thinking(&Bytes::from(responses.to_string())))
                .expect("json");
        assert_eq!(stripped["input"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn plants_parse_and_refuse_unknown_names() {
        let plants = Plants::parse("fail_step=2, no_context").expect("valid plants");
        assert_eq!(plants.fail_step, Some(2));
        assert!(plants.no_context && !plants.orphan_call);
        assert!(Plants::parse("").expect("empty").eq(&Plants::default()));
        assert!(
            Plants::parse("fail_step=x")
                .unwrap_err()
                .contains("step number")
        );
        assert!(
            Plants::parse("forget")
                .unwrap_err()
                .contains("unknown plant `forget`")
        );
    }

    #[test]
    fn tool_results_are_stripped_in_both_wire_formats() {
        let openai = serde_json::json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"}
        ]});
        let out: Value =
            serde_json::from_slice(&strip_tool_results(&Bytes::from(openai.to_string())))
                .expect("json");
        assert_eq!(out["messages"].as_array().map(Vec::len), Some(2));
        let anthropic = serde_json::json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
        ]});
        let out: Value =
            serde_json::from_slice(&strip_tool_results(&Bytes::from(anthropic.to_string())))
                .expect("json");
        assert_eq!(out["messages"].as_array().map(Vec::len), Some(2));
    }
}
