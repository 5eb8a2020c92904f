//! How `ctxbed serve` routes a request: the model list, the host the request's `model` names,
//! and the imitated provider's own answers for what no host can take (an unknown route or
//! model, a body that did not arrive in time).

use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use serde_json::{Value, json};

use super::{Models, Recorder, ServeError};
use crate::limits;
use ctxbed_sim::host::{Api, HostBody, full};

/// Answers one HTTP request: the model list, a 404 for a route no provider has, a 408 for a
/// body too slow to arrive, a 404 for an unknown model, or the answer of the host the request
/// names (recorded, then kept).
pub(super) async fn route(
    models: &Models,
    request: http::Request<hyper::body::Incoming>,
    recorder: Option<&Recorder>,
    body_timeout: Duration,
) -> Result<http::Response<HostBody>, ServeError> {
    let path = request.uri().path().to_string();
    let api = Api::for_path(&path);
    if request.method() == http::Method::GET && path.trim_end_matches('/').ends_with("/models") {
        return Ok(model_list(models));
    }
    let known = [
        "/chat/completions",
        "/responses",
        "/messages",
        "/messages/count_tokens",
    ]
    .iter()
    .any(|end| path.trim_end_matches('/').ends_with(end));
    if request.method() != http::Method::POST || !known {
        let what = format!("{} {path}", request.method());
        tracing::warn!(request = %what, "unknown route; ctxbed serve answers POST …/chat/completions, POST …/responses, POST …/messages and GET …/models");
        return Ok(not_found(models.imitated(), &what));
    }
    let collected = tokio::time::timeout(
        body_timeout,
        Limited::new(request.into_body(), limits::SERVE_REQUEST_BYTES_MAX).collect(),
    )
    .await;
    let body = match collected {
        Err(_) => return Ok(body_timeout_response(api, body_timeout)),
        Ok(collected) => collected.ok().map(|body| body.to_bytes()),
    };
    // One model answers everything: the body is parsed once, by the host, not here too.
    let named = body
        .as_ref()
        .filter(|_| !models.single)
        .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
        .and_then(|json| {
            json.get("model")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let Some((name, host)) = models.route(named.as_deref()) else {
        return Ok(unknown_model(api, named.as_deref().unwrap_or("")));
    };
    let (response, exchange) = host.exchange(&path, body).await;
    if let Some(recorder) = recorder {
        let window = host.model().script().info.context_window;
        recorder.write(name, window, &exchange)?;
    }
    host.keep(exchange);
    Ok(response)
}

/// 408 for a body that did not arrive in time, in the API's error envelope.
fn body_timeout_response(api: Api, waited: Duration) -> http::Response<HostBody> {
    let message = format!(
        "the request body did not arrive within {} s",
        waited.as_secs()
    );
    let body = match api {
        Api::Anthropic => ctxbed_sim::host::anthropic::error_body("timeout_error", &message),
        Api::OpenAi | Api::Responses => json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "timeout"}}).to_string(),
    };
    full(408, body)
}

/// The served models as a `GET …/models` list, each with its context window.
fn model_list(models: &Models) -> http::Response<HostBody> {
    let data: Vec<Value> = models
        .iter()
        .map(|(name, host)| {
            json!({"id": name, "object": "model", "created": 0, "owned_by": "ctxbed",
                   "context_window": host.model().script().info.context_window})
        })
        .collect();
    full(200, json!({"object": "list", "data": data}).to_string())
}

/// The imitated provider's 404 for a route it does not have, in its words: OpenAI's
/// `Unknown request URL: POST /x. Please check the URL for typos, …` (`code: unknown_url`),
/// Anthropic's bare `not_found_error` "Not Found".
fn not_found(api: Api, what: &str) -> http::Response<HostBody> {
    let body = match api {
        Api::Anthropic => ctxbed_sim::host::anthropic::error_body("not_found_error", "Not Found"),
        Api::OpenAi | Api::Responses => {
            let message = format!(
                "Unknown request URL: {what}. Please check the URL for typos, or see the docs at https://platform.openai.com/docs/api-reference/."
            );
            json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "unknown_url"}}).to_string()
        }
    };
    full(404, body)
}

/// The imitated provider's 404 for a model it does not serve, in its words.
fn unknown_model(api: Api, name: &str) -> http::Response<HostBody> {
    let body = match api {
        Api::Anthropic => {
            ctxbed_sim::host::anthropic::error_body("not_found_error", &format!("model: {name}"))
        }
        Api::OpenAi | Api::Responses => json!({"error": {"message": format!("The model `{name}` does not exist or you do not have access to it."), "type": "invalid_request_error", "param": null, "code": "model_not_found"}}).to_string(),
    };
    full(404, body)
}
