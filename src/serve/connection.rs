//! One accepted connection of `ctxbed serve`: hyper's HTTP/1.1 over the socket with the
//! connection's time limits (headers and idle keep-alive, the body in `route`, each write
//! through [`WriteTimeout`]), each request marked in flight until its response body is sent so
//! the server knows when the connection is idle, and a graceful close when the server sheds it.

use std::convert::Infallible;
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use serde_json::json;

use super::budget::Budget;
use super::idle::{Registered, Tracked};
use super::stall::WriteTimeout;
use super::{ConnectionLimits, Models, Recorder, ServeError, route};
use ctxbed_sim::host::full;

/// What one connection's requests share.
pub(super) struct Connection {
    pub(super) models: Arc<Models>,
    pub(super) recorder: Option<Arc<Recorder>>,
    pub(super) failed: tokio::sync::mpsc::Sender<ServeError>,
    pub(super) limits: ConnectionLimits,
    pub(super) registered: Registered,
    pub(super) budget: Arc<Budget>,
}

impl Connection {
    pub(super) async fn serve(self, stream: tokio::net::TcpStream) {
        let close = self.registered.close.clone();
        let shared = Arc::new(self);
        let limits = shared.limits;
        let service = hyper::service::service_fn(move |request| {
            let shared = shared.clone();
            async move {
                let in_flight = shared.registered.begin();
                let recorder = shared.recorder.as_deref();
                let response = route(
                    &shared.models,
                    request,
                    recorder,
                    &shared.budget,
                    shared.limits.body,
                )
                .await;
                let response = match response {
                    Ok(response) => response,
                    Err(error) => {
                        let _ = shared.failed.try_send(error);
                        full(
                            500,
                            json!({"error": {"message": "the test-bed could not record the request"}})
                                .to_string(),
                        )
                    }
                };
                let response = response.map(|body| Tracked {
                    body,
                    _in_flight: in_flight,
                });
                Ok::<_, Infallible>(response)
            }
        });
        let io = TokioIo::new(WriteTimeout::new(stream, limits.write));
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(limits.header)
            .serve_connection(io, service);
        tokio::pin!(connection);
        tokio::select! {
            _ = connection.as_mut() => {}
            () = close.notified() => {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
        }
    }
}
