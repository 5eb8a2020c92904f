//! [`PlantedTransport`]: the transport the reference adapter sends through when a plant
//! changes what goes over the wire. It rewrites each request body as the planted harness would
//! have built it (`plant::rewrite`) and answers overflows, rate limits and replies as that
//! harness would have handled them.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;

use super::Plants;
use super::rewrite;
use ctxbed_providers::transport::{ResponseBody, Transport, TransportError};

/// A change a plant makes to a request body.
type Rewrite = fn(&mut Value);

/// How many times `count_storm` counts a request before sending it.
const STORM_COUNTS: usize = 3;

/// How many times `retry_forever` sends an overflowed request again: more than any scenario's
/// request limit a step, so in a scenario that overflows for good the test-bed stops it first
/// (rule `loop`).
const FOREVER_RETRIES: usize = 1_000;

/// A transport that sends what the plants say instead of what the harness built.
pub struct PlantedTransport {
    pub inner: Arc<dyn Transport>,
    pub plants: Plants,
    /// The conversation of the last request that offered tools (`summary_overflow`).
    history: Mutex<Vec<Value>>,
}

impl PlantedTransport {
    pub fn new(inner: Arc<dyn Transport>, plants: Plants) -> Self {
        PlantedTransport {
            inner,
            plants,
            history: Mutex::new(Vec::new()),
        }
    }

    /// The body the planted harness sends instead of `body`.
    fn rewrite(&self, body: &Bytes) -> Bytes {
        let Ok(mut json) = serde_json::from_slice::<Value>(body) else {
            return body.clone();
        };
        let plants = &self.plants;
        let rewrites: [(bool, Rewrite); 9] = [
            (plants.orphan_call, rewrite::strip_tool_results),
            (plants.no_results, rewrite::strip_calls_and_results),
            (plants.drop_thinking, rewrite::strip_thinking),
            (plants.blank_text, rewrite::blank_text),
            (plants.keep_last, rewrite::keep_last),
            (plants.trim_to_result, rewrite::from_first_result),
            (plants.two_systems, rewrite::second_system),
            (plants.drop_summary, rewrite::drop_summaries),
            (plants.past_tools, rewrite::drop_past_tools),
        ];
        for (_, apply) in rewrites.iter().filter(|(on, _)| *on) {
            apply(&mut json);
        }
        if plants.summary_overflow {
            let mut history = self
                .history
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if rewrite::offers_tools(&json) {
                *history = rewrite::conversation(&json);
            } else {
                rewrite::with_history(&mut json, &history);
            }
        }
        serde_json::to_vec(&json).map_or_else(|_| body.clone(), Bytes::from)
    }
}

#[async_trait]
impl Transport for PlantedTransport {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError> {
        let request = request.map(|body| self.rewrite(&body));
        if self.plants.count_storm {
            self.count_three_times(&request).await?;
        }
        let again = copy(&request);
        let response = self.inner.send(request).await?;
        let response = if self.plants.ignore_retry_after {
            without_retry_after(response)
        } else {
            response
        };
        if self.plants.strict_arguments {
            return strict_arguments(response).await;
        }
        let plants = &self.plants;
        if !(plants.retry_same || plants.retry_forever || plants.no_overflow_recovery) {
            return Ok(response);
        }
        let (response, overflow) = read_overflow(response).await?;
        if !overflow {
            return Ok(response);
        }
        if plants.no_overflow_recovery {
            return Ok(unrecognisable(response));
        }
        let tries = if plants.retry_forever {
            FOREVER_RETRIES
        } else {
            1
        };
        let mut last = response;
        for _ in 0..tries {
            let (response, overflow) = read_overflow(self.inner.send(copy(&again)).await?).await?;
            last = response;
            if !overflow {
                break;
            }
        }
        Ok(last)
    }
}

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

/// The response read whole when it may be an overflow (a 400, or a stream that may carry the
/// Responses API's `error` event), with whether it is one.
async fn read_overflow(
    response: http::Response<ResponseBody>,
) -> Result<(http::Response<ResponseBody>, bool), TransportError> {
    let streamed = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    if response.status() != http::StatusCode::BAD_REQUEST && !streamed {
        return Ok((response, false));
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
    let response = http::Response::from_parts(parts, ResponseBody::full(bytes));
    Ok((response, overflow))
}

/// An overflow answer the harness cannot recognise as one: a plain 400.
fn unrecognisable(response: http::Response<ResponseBody>) -> http::Response<ResponseBody> {
    let (mut parts, _) = response.into_parts();
    parts.status = http::StatusCode::BAD_REQUEST;
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(http::header::CONTENT_LENGTH);
    let body = br#"{"error":{"type":"invalid_request_error","message":"Bad request."}}"#;
    http::Response::from_parts(parts, ResponseBody::full(body.to_vec()))
}

/// The response without `Retry-After` or `retry-after-ms`.
fn without_retry_after(mut response: http::Response<ResponseBody>) -> http::Response<ResponseBody> {
    let headers = response.headers_mut();
    headers.remove(http::header::RETRY_AFTER);
    headers.remove("retry-after-ms");
    response
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
