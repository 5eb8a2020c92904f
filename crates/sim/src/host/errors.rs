//! How the host words a refusal: a model error, or a body that is not JSON, as the imitated
//! provider answers it (its status, its error envelope, `retry-after` on a 429).

use serde_json::json;

use super::{Api, HostBody, ProviderHost, anthropic, full};
use ctxbed_harness::model::ModelError;
use ctxbed_harness::model::provider::Provider;

impl ProviderHost {
    /// Whether the mock imitates Anthropic, whose error envelope differs.
    fn imitates_anthropic(&self) -> bool {
        self.model.script().imitates == Provider::Anthropic
    }

    /// The 400 body refusing a body that is not JSON, in the imitated provider's words.
    pub(super) fn not_json_body(&self, api: Api) -> String {
        if api == Api::Anthropic || self.imitates_anthropic() {
            anthropic::error_body("invalid_request_error", "the body is not JSON")
        } else {
            r#"{"error":{"message":"the body is not JSON","type":"invalid_request_error"}}"#
                .to_string()
        }
    }

    /// A model error as the imitated provider answers it: its status, body and headers (a
    /// scripted timeout holds the request first).
    /// The whole seconds a 429 asks the client to wait: the turn's own, else the host's.
    pub(super) fn retry_after_seconds(&self, turn: Option<std::time::Duration>) -> u64 {
        turn.map_or(self.options.retry_after_seconds, |after| {
            after.as_secs_f64().ceil() as u64
        })
    }

    pub(super) async fn error_response(&self, error: ModelError) -> http::Response<HostBody> {
        let anthropic = self.imitates_anthropic();
        match error {
            ModelError::ContextOverflow { status, body, .. }
            | ModelError::PairingRejected { status, body, .. }
            | ModelError::Rejected { status, body } => full(status, body),
            ModelError::Transient { status, body } => {
                let status = status.unwrap_or(503);
                if anthropic {
                    let kind = if status == 529 {
                        "overloaded_error"
                    } else {
                        "api_error"
                    };
                    full(status, anthropic::error_body(kind, "upstream fault"))
                } else {
                    full(status, body)
                }
            }
            ModelError::RateLimited { body, retry_after } => {
                let body = if anthropic {
                    anthropic::error_body(
                        "rate_limit_error",
                        "This request would exceed your rate limit; please try again later.",
                    )
                } else {
                    body
                };
                let mut response = full(429, body);
                let seconds = self.retry_after_seconds(retry_after);
                if let Ok(value) = http::HeaderValue::from_str(&seconds.to_string()) {
                    response.headers_mut().insert("retry-after", value);
                }
                response
            }
            ModelError::MalformedReply { raw, .. } => {
                let mut response = full(200, raw);
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("text/plain"),
                );
                response
            }
            ModelError::Timeout { .. } => {
                // The script says the provider never answers in time: hold the request open
                // until the client gives up (bounded, so a run always ends).
                tokio::time::sleep(self.options.hang).await;
                full(504, r#"{"error":{"message":"gateway timeout"}}"#.into())
            }
            ModelError::ScriptExhausted { .. } => full(
                500,
                json!({"error": {"message": error.to_string(), "type": "script_exhausted"}})
                    .to_string(),
            ),
        }
    }
}
