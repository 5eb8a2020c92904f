//! The simulated network: the same HTTP provider code over turmoil's simulated TCP, against an
//! in-process [`ProviderHost`] serving a mock model's script in a provider's wire format.
//!
//! [`TurmoilTransport`] implements [`Transport`] with a hyper HTTP/1.1 client connection over a
//! `turmoil::net::TcpStream`, one connection per request. [`serve`] puts a [`ProviderHost`]
//! (see [`crate::host`]: the wire formats, the mock's answers, [`HostFaults`]) behind a hyper
//! server on a `turmoil::net::TcpListener`.
//!
//! Latency, message loss and partitions belong to the network and are turmoil's, seeded from
//! the scenario; all time is turmoil's simulated time, read through `tokio::time`.
//!
//! **Invariant:** nothing here reads the wall clock or an unseeded random source; the host
//! answers request `n` the same way in every run.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

pub use crate::host::{HostFaults, ProviderHost};
use ctxbed_providers::transport::{
    ResponseBody, Transport, TransportError, error_chain, incoming_body,
};

/// HTTP/1.1 over turmoil's simulated TCP.
#[derive(Debug, Clone)]
pub struct TurmoilTransport {
    /// Time allowed to open a connection; past it the attempt is a connection fault (and so
    /// retried), not a timeout of the whole request.
    pub connect_timeout: Duration,
}

#[async_trait]
impl Transport for TurmoilTransport {
    async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<ResponseBody>, TransportError> {
        let Some(host) = request.uri().host().map(str::to_string) else {
            return Err(TransportError::Unsupported("a URL without a host".into()));
        };
        let port = request.uri().port_u16().unwrap_or(80);
        let connect = turmoil::net::TcpStream::connect((host.as_str(), port));
        let stream = match tokio::time::timeout(self.connect_timeout, connect).await {
            Err(_) => {
                return Err(TransportError::Connect(format!(
                    "no connection to {host}:{port} within {}",
                    ctxbed_harness::format::duration(self.connect_timeout)
                )));
            }
            Ok(Err(error)) => return Err(TransportError::Connect(error_chain(&error))),
            Ok(Ok(stream)) => stream,
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| TransportError::Connect(error_chain(&error)))?;
        tokio::spawn(async move {
            // The connection's own error reaches the response or its body.
            let _ = connection.await;
        });
        let mut request = request.map(Full::new);
        let authority = format!("{host}:{port}");
        if let Ok(value) = http::HeaderValue::from_str(&authority) {
            request.headers_mut().insert(http::header::HOST, value);
        }
        let response = sender
            .send_request(request)
            .await
            .map_err(|error| TransportError::Connection(error_chain(&error)))?;
        Ok(response.map(incoming_body))
    }
}

/// Serves `host` on a turmoil listener at `port` until the simulation ends.
///
/// # Errors
/// The port cannot be bound.
pub async fn serve(host: Arc<ProviderHost>, port: u16) -> Result<(), std::io::Error> {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let host = host.clone();
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let host = host.clone();
                    async move {
                        let path = request.uri().path().to_string();
                        let body = request
                            .into_body()
                            .collect()
                            .await
                            .ok()
                            .map(|body| body.to_bytes());
                        Ok::<_, Infallible>(host.answer(&path, body).await)
                    }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
