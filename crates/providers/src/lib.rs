//! Real model providers over HTTP: [`HttpProvider`] implements [`Model`] for the
//! OpenAI-compatible Chat Completions API ([`openai`]), OpenAI's Responses API ([`responses`])
//! and the Anthropic Messages API ([`anthropic`]).
//!
//! The pieces, each its own module:
//! - [`transport`]: the [`Transport`] trait over plain `http` types and the default
//!   plain-HTTP [`HyperTransport`];
//! - [`sse`]: a bounded server-sent-events decoder;
//! - [`openai`], [`responses`] and [`anthropic`]: exact request bodies, lenient reply parsing
//!   and streamed reply reassembly (one assembler per format behind `assembler::Assembler`);
//! - [`reply`]: tool-call arguments, errors inside a 200 body, bounded raw snippets;
//! - [`retry`]: bounded exponential backoff with seeded jitter;
//!
//! The simulated network (a transport over turmoil's TCP, a provider host serving a mock model)
//! lives in `ctxbed-sim`; recording real answers as mock-model turns lives in `ctxbed`.
//!
//! Failed answers go through the shared classifier ([`ctxbed_harness::model::classify`]): the status and
//! body become a [`ModelError`] (overflow with parsed sizes, pairing rejection, rate limit with
//! `Retry-After`, 401/403 rejected, 5xx transient). A refused or reset connection and a stream
//! cut before its terminator are [`ModelError::Transient`]; a reply that cannot be read is
//! [`ModelError::MalformedReply`] with a bounded raw snippet; no time limit met is
//! [`ModelError::Timeout`]. Transient faults and rate limits are retried ([`RetryPolicy`]);
//! overflow, pairing, rejected and malformed answers never are.
//!
//! **Invariant:** the API key never leaves the provider. It is read from the environment
//! variable the configuration names, sent only in the request's authentication header, shown
//! as `<redacted>` by `Debug`, and replaced by `<redacted>` in any server text that quotes it
//! before that text reaches an error.
//!
//! **Invariant:** all waiting (timeouts, backoff) goes through `tokio::time`, and all jitter
//! comes from a ChaCha8 stream seeded by the configuration, so on a paused clock a run is
//! reproducible.
//!
//! ```no_run
//! use ctxbed_providers::{HttpProvider, ProviderConfig, ProviderKind};
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let mut config = ProviderConfig::new(ProviderKind::OpenAi, "http://127.0.0.1:8080/v1", "qwen2.5-7b");
//! config.api_key_env = Some("LLAMA_API_KEY".into());
//! let provider = HttpProvider::from_env(config)?;
//! # Ok(()) }
//! ```

pub mod anthropic;
mod assembler;
mod body;
mod config;
mod key;
pub mod limits;
pub mod openai;
pub mod reply;
pub mod responses;
pub mod retry;
pub mod sse;
pub mod transport;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use tracing::Instrument;

pub use config::{MaxTokensField, ProviderConfig, ProviderKind, WireOptions};
pub use key::ApiKey;
pub use retry::RetryPolicy;
pub use transport::{HyperTransport, ResponseBody, Transport, TransportError};

use crate::limits::{PROVIDER_ERROR_BODY_BYTES_MAX, PROVIDER_REPLY_BYTES_MAX};
use ctxbed_harness::message::ContentPart;
use ctxbed_harness::model::classify::classify;
use ctxbed_harness::model::{Model, ModelError, ModelInfo, ModelReply, ModelRequest};
use key::auth_header;
use sse::SseDecoder;

/// Why a provider could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// The configured environment variable is not set (its value is never shown).
    #[error(
        "the API key variable `{variable}` is not set (or not UTF-8); export it, or omit the key option for a server that needs none"
    )]
    MissingKey { variable: String },
    /// The base URL is not a usable URL.
    #[error("base URL `{url}` is not usable: {reason}")]
    BadUrl { url: String, reason: String },
    /// A value cannot be sent as an HTTP header (the key's value is never shown).
    #[error("the {what} holds characters an HTTP header cannot carry")]
    BadHeader { what: String },
}

/// A model behind an HTTP API.
pub struct HttpProvider {
    config: ProviderConfig,
    key: Option<ApiKey>,
    /// The authentication header, marked sensitive.
    auth_header: Option<(http::HeaderName, http::HeaderValue)>,
    version_header: Option<http::HeaderValue>,
    uri: http::Uri,
    transport: Arc<dyn Transport>,
    info: ModelInfo,
    retry: retry::Backoff,
    /// Ids given to tool calls that arrived without one.
    missing_ids: AtomicU64,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("config", &self.config)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl HttpProvider {
    /// A provider over the default transport (plain-HTTP [`HyperTransport`]; with the `tls`
    /// feature, reqwest for `https` URLs), its key read from the variable the configuration
    /// names.
    ///
    /// # Errors
    /// The key variable is named but not set, or the base URL is not usable.
    pub fn from_env(config: ProviderConfig) -> Result<Self, ProviderError> {
        let key = match &config.api_key_env {
            Some(variable) => Some(ApiKey::new(std::env::var(variable).map_err(|_| {
                ProviderError::MissingKey {
                    variable: variable.clone(),
                }
            })?)),
            None => None,
        };
        let transport = config
            .endpoint()
            .parse::<http::Uri>()
            .map(|uri| transport::default_transport(&uri))
            .unwrap_or_else(|_| Arc::new(HyperTransport::new()));
        Self::new(config, key, transport)
    }

    /// A provider over any transport with an explicit key.
    ///
    /// # Errors
    /// The base URL is not usable.
    pub fn new(
        config: ProviderConfig,
        key: Option<ApiKey>,
        transport: Arc<dyn Transport>,
    ) -> Result<Self, ProviderError> {
        let endpoint = config.endpoint();
        let uri: http::Uri =
            endpoint
                .parse()
                .map_err(|error: http::uri::InvalidUri| ProviderError::BadUrl {
                    url: config.base_url.clone(),
                    reason: error.to_string(),
                })?;
        if uri.scheme().is_none() || uri.host().is_none() {
            return Err(ProviderError::BadUrl {
                url: config.base_url.clone(),
                reason: "it needs a scheme and a host, like http://127.0.0.1:8080/v1".into(),
            });
        }
        let auth_header = key
            .as_ref()
            .map(|key| auth_header(config.kind, key))
            .transpose()?;
        let version_header = match config.kind {
            ProviderKind::OpenAi | ProviderKind::Responses => None,
            ProviderKind::Anthropic => Some(
                http::HeaderValue::from_str(&config.anthropic_version).map_err(|_| {
                    ProviderError::BadHeader {
                        what: "anthropic-version".into(),
                    }
                })?,
            ),
        };
        let info = ModelInfo {
            name: config.model.clone(),
            context_window: config.context_window,
            max_output_tokens: config.max_output_tokens,
        };
        Ok(HttpProvider {
            retry: retry::Backoff::new(config.retry.clone()),
            config,
            key,
            auth_header,
            version_header,
            uri,
            transport,
            info,
            missing_ids: AtomicU64::new(0),
        })
    }

    /// The configuration (without the key).
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// The exact request body this provider sends for `request`.
    pub fn request_body(&self, request: &ModelRequest) -> serde_json::Value {
        let options = self.config.wire_options();
        match self.config.kind {
            ProviderKind::OpenAi => openai::request_body(request, &options),
            ProviderKind::Anthropic => anthropic::request_body(request, &options),
            ProviderKind::Responses => responses::request_body(request, &options),
        }
    }

    fn http_request(&self, body: Bytes) -> http::Request<Bytes> {
        use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
        let mut request = http::Request::new(body);
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = self.uri.clone();
        let headers = request.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let accept = if self.config.stream {
            "text/event-stream"
        } else {
            "application/json"
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if let Some(version) = &self.version_header {
            headers.insert("anthropic-version", version.clone());
        }
        if let Some((name, value)) = &self.auth_header {
            headers.insert(name.clone(), value.clone());
        }
        request
    }

    /// One attempt, bounded by the request timeout.
    async fn attempt(&self, body: &Bytes) -> Result<ModelReply, ModelError> {
        let limit = self.config.request_timeout;
        match tokio::time::timeout(limit, self.exchange(body.clone())).await {
            Ok(result) => result,
            Err(_) => Err(ModelError::Timeout { after: limit }),
        }
    }

    async fn exchange(&self, body: Bytes) -> Result<ModelReply, ModelError> {
        let response = self
            .transport
            .send(self.http_request(body))
            .await
            .map_err(transport_fault)?;
        let (parts, mut body) = response.into_parts();
        if !parts.status.is_success() {
            let (bytes, _cut) = self
                .read_body(&mut body, PROVIDER_ERROR_BODY_BYTES_MAX)
                .await?;
            let text = String::from_utf8_lossy(&bytes);
            let mut error = classify(
                self.config.kind.classifier_name(),
                parts.status.as_u16(),
                &text,
            );
            if let ModelError::RateLimited { retry_after, .. } = &mut error {
                *retry_after = retry::retry_after(&parts.headers);
            }
            return Err(error);
        }
        let event_stream = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("text/event-stream"));
        if event_stream {
            self.read_stream(body).await
        } else {
            let (bytes, cut) = self.read_body(&mut body, PROVIDER_REPLY_BYTES_MAX).await?;
            if cut {
                return Err(reply::malformed(
                    format!(
                        "the reply exceeds limits::PROVIDER_REPLY_BYTES_MAX ({PROVIDER_REPLY_BYTES_MAX} bytes)"
                    ),
                    &bytes,
                ));
            }
            match self.config.kind {
                ProviderKind::OpenAi => openai::parse_reply(&bytes),
                ProviderKind::Anthropic => anthropic::parse_reply(&bytes),
                ProviderKind::Responses => responses::parse_reply(&bytes),
            }
        }
    }

    /// The next chunk, bounded by the read timeout.
    async fn next_chunk(&self, body: &mut ResponseBody) -> Result<Option<Bytes>, ModelError> {
        let limit = self.config.read_timeout;
        match tokio::time::timeout(limit, body.next_chunk()).await {
            Err(_) => Err(ModelError::Timeout { after: limit }),
            Ok(None) => Ok(None),
            Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
            Ok(Some(Err(error))) => Err(transport_fault(error)),
        }
    }

    /// The whole body, at most `max_bytes` of it; the flag says whether it was cut.
    async fn read_body(
        &self,
        body: &mut ResponseBody,
        max_bytes: usize,
    ) -> Result<(Vec<u8>, bool), ModelError> {
        let mut bytes = Vec::new();
        while let Some(chunk) = self.next_chunk(body).await? {
            let room = max_bytes - bytes.len();
            if chunk.len() > room {
                bytes.extend_from_slice(&chunk[..room]);
                return Ok((bytes, true));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok((bytes, false))
    }

    async fn read_stream(&self, mut body: ResponseBody) -> Result<ModelReply, ModelError> {
        let mut decoder = SseDecoder::new();
        let mut assembler = assembler::Assembler::new(self.config.kind);
        let mut received = 0usize;
        loop {
            let Some(chunk) = self.next_chunk(&mut body).await? else {
                if let Some(event) = decoder.finish().map_err(sse_fault)? {
                    assembler.event(&event)?;
                }
                return assembler.finish();
            };
            received += chunk.len();
            if received > PROVIDER_REPLY_BYTES_MAX {
                return Err(reply::malformed(
                    format!(
                        "the streamed reply exceeds limits::PROVIDER_REPLY_BYTES_MAX ({PROVIDER_REPLY_BYTES_MAX} bytes)"
                    ),
                    &chunk,
                ));
            }
            for event in decoder.push(&chunk).map_err(sse_fault)? {
                if assembler.event(&event)? {
                    return assembler.finish();
                }
            }
        }
    }

    /// Gives tool calls that arrived without an id one that is unique for this provider.
    fn fill_missing_ids(&self, reply: &mut ModelReply) {
        for part in &mut reply.message.parts {
            if let ContentPart::ToolCall(call) = part
                && call.id.is_empty()
            {
                let number = self.missing_ids.fetch_add(1, Ordering::Relaxed) + 1;
                call.id = format!("call_missing_{number:04}");
            }
        }
    }

    /// The error with every quotation of the key replaced.
    fn redact(&self, error: ModelError) -> ModelError {
        let Some(key) = &self.key else {
            return error;
        };
        match error {
            ModelError::ContextOverflow {
                provider,
                status,
                body,
                actual_tokens,
                max_tokens,
            } => ModelError::ContextOverflow {
                provider,
                status,
                body: key.redact(&body),
                actual_tokens,
                max_tokens,
            },
            ModelError::PairingRejected {
                provider,
                status,
                body,
            } => ModelError::PairingRejected {
                provider,
                status,
                body: key.redact(&body),
            },
            ModelError::MalformedReply { detail, raw } => ModelError::MalformedReply {
                detail: key.redact(&detail),
                raw: key.redact(&raw),
            },
            ModelError::Transient { status, body } => ModelError::Transient {
                status,
                body: key.redact(&body),
            },
            ModelError::RateLimited { retry_after, body } => ModelError::RateLimited {
                retry_after,
                body: key.redact(&body),
            },
            ModelError::Rejected { status, body } => ModelError::Rejected {
                status,
                body: key.redact(&body),
            },
            other @ (ModelError::Timeout { .. } | ModelError::ScriptExhausted { .. }) => other,
        }
    }
}

#[async_trait]
impl Model for HttpProvider {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let body = Bytes::from(self.request_body(request).to_string());
        // OpenTelemetry GenAI semantic conventions: names and sizes only, never prompt text or
        // keys.
        let span = tracing::info_span!(
            "chat",
            otel.name = format!("chat {}", self.config.model),
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = self.config.kind.as_str(),
            gen_ai.request.model = self.config.model.as_str(),
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let outcome = self.call_with_retries(&body).instrument(span.clone()).await;
        match &outcome {
            Ok(reply) => {
                if let Some(usage) = &reply.usage {
                    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
                }
            }
            Err(error) => {
                span.record("error.type", error.kind());
            }
        }
        outcome
    }
}

impl HttpProvider {
    /// Attempts until a reply or a final error; retried errors never leave this loop.
    async fn call_with_retries(&self, body: &Bytes) -> Result<ModelReply, ModelError> {
        let mut attempt = 1;
        loop {
            match self.attempt(body).await {
                Ok(mut reply) => {
                    self.fill_missing_ids(&mut reply);
                    return Ok(reply);
                }
                Err(error) => match self.retry.delay(&error, attempt) {
                    Some(delay) => {
                        tracing::debug!(
                            attempt,
                            kind = error.kind(),
                            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                            "retrying"
                        );
                        tokio::time::sleep(delay).await;
                        attempt += 1;
                    }
                    None => return Err(self.redact(error)),
                },
            }
        }
    }
}

fn transport_fault(error: TransportError) -> ModelError {
    match error {
        TransportError::Unsupported(reason) => ModelError::Rejected {
            status: 0,
            body: reason,
        },
        other => ModelError::Transient {
            status: None,
            body: other.to_string(),
        },
    }
}

fn sse_fault(error: sse::SseError) -> ModelError {
    ModelError::MalformedReply {
        detail: error.to_string(),
        raw: error.snippet().to_string(),
    }
}

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
