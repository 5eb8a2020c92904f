//! The transport seam: one trait over plain `http` request and response types.
//!
//! Provider code builds an `http::Request<Bytes>` and reads an `http::Response<ResponseBody>`;
//! it never names a client library. [`HyperTransport`] is the default: a plain-HTTP hyper 1.x
//! client, enough for local servers (llama.cpp, vLLM, Ollama) and for tests against a mock
//! server. Another transport (a TLS client, a simulated network) implements [`Transport`] and
//! the same provider code runs over it.
//!
//! A response body is a stream of chunks, so streamed replies are decoded as they arrive.
//! Failures before an HTTP status (refused connection, reset, unsupported scheme) are a
//! [`TransportError`].

use std::pin::Pin;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::Stream;
use futures_util::stream::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The chunks of a response body, as they arrive.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<Bytes, TransportError>> + Send>>;

/// A response body: chunks in arrival order.
pub struct ResponseBody {
    chunks: ChunkStream,
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseBody(..)")
    }
}

impl ResponseBody {
    /// A body that arrives as these chunks.
    pub fn from_stream(chunks: ChunkStream) -> Self {
        ResponseBody { chunks }
    }

    /// A body that arrives in one chunk.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        ResponseBody {
            chunks: Box::pin(futures_util::stream::once(async move { Ok(bytes) })),
        }
    }

    /// The next chunk, `None` at the end of the body.
    pub async fn next_chunk(&mut self) -> Option<Result<Bytes, TransportError>> {
        self.chunks.next().await
    }
}

/// What went wrong before or while receiving a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// No connection could be made (refused, unreachable, name not resolved).
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The connection broke after it was made (reset, closed mid-body).
    #[error("connection lost: {0}")]
    Connection(String),
    /// The transport cannot send this request (for example an `https` URL without TLS).
    #[error("unsupported request: {0}")]
    Unsupported(String),
}

/// Sends one HTTP request and returns the response with its streamed body.
#[async_trait]
pub trait Transport: Send + Sync {
    /// Sends `request` and returns as soon as the status and headers are in.
    ///
    /// # Errors
    /// The request could not be sent or the connection failed before a status arrived.
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError>;
}

/// Plain HTTP/1.1 over TCP with hyper: no TLS, so `https` URLs are refused.
#[derive(Clone)]
pub struct HyperTransport {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl std::fmt::Debug for HyperTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HyperTransport")
    }
}

impl Default for HyperTransport {
    fn default() -> Self {
        Self::new()
    }
}

impl HyperTransport {
    /// A client with a connection pool. Must be used inside a tokio runtime with I/O enabled.
    pub fn new() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        HyperTransport { client }
    }
}

#[async_trait]
impl Transport for HyperTransport {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError> {
        if request.uri().scheme_str() != Some("http") {
            return Err(TransportError::Unsupported(format!(
                "scheme `{}`: the default transport speaks plain http only; build with `--features tls` for https",
                request.uri().scheme_str().unwrap_or("none")
            )));
        }
        let request = request.map(Full::new);
        let response = self
            .client
            .request(request)
            .await
            .map_err(|error| classify_client_error(&error))?;
        Ok(response.map(incoming_body))
    }
}

/// A hyper response body as a [`ResponseBody`]; a failure while reading ends the stream after
/// its error.
pub fn incoming_body(incoming: hyper::body::Incoming) -> ResponseBody {
    let chunks = futures_util::stream::unfold(Some(incoming), |body| async move {
        let mut body = body?;
        loop {
            match body.frame().await? {
                Ok(frame) => match frame.into_data() {
                    Ok(data) => return Some((Ok(data), Some(body))),
                    Err(_trailers) => continue,
                },
                Err(error) => {
                    let error = TransportError::Connection(error_chain(&error));
                    return Some((Err(error), None));
                }
            }
        }
    });
    ResponseBody::from_stream(Box::pin(chunks))
}

fn classify_client_error(error: &hyper_util::client::legacy::Error) -> TransportError {
    if error.is_connect() {
        TransportError::Connect(error_chain(error))
    } else {
        TransportError::Connection(error_chain(error))
    }
}

/// The error and its sources, one after the other.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// HTTPS (and plain HTTP) through reqwest with rustls and the webpki root certificates; only
/// with the `tls` feature.
#[cfg(feature = "tls")]
#[derive(Debug, Clone, Default)]
pub struct ReqwestTransport {
    client: reqwest::Client,
}

#[cfg(feature = "tls")]
#[async_trait]
impl Transport for ReqwestTransport {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError> {
        let (parts, body) = request.into_parts();
        let response = self
            .client
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(|error| {
                if error.is_connect() {
                    TransportError::Connect(error_chain(&error))
                } else {
                    TransportError::Connection(error_chain(&error))
                }
            })?;
        let mut builder = http::Response::builder().status(response.status());
        if let Some(headers) = builder.headers_mut() {
            *headers = response.headers().clone();
        }
        let chunks = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|error| TransportError::Connection(error_chain(&error))));
        builder
            .body(ResponseBody::from_stream(Box::pin(chunks)))
            .map_err(|error| TransportError::Connection(error.to_string()))
    }
}

/// The transport for a URL: plain-HTTP hyper, or with the `tls` feature reqwest for `https`.
pub fn default_transport(uri: &http::Uri) -> std::sync::Arc<dyn Transport> {
    #[cfg(feature = "tls")]
    if uri.scheme_str() == Some("https") {
        return std::sync::Arc::new(ReqwestTransport::default());
    }
    let _ = uri;
    std::sync::Arc::new(HyperTransport::new())
}
