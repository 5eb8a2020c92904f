//! `ctxbed serve`: mock models on real loopback TCP, as the providers they imitate.
//!
//! A [`Server`] binds a TCP listener (loopback only unless told otherwise), and answers each
//! HTTP/1.1 request with the [`ProviderHost`] of the model the request names (or the only one):
//! OpenAI Chat Completions at `/v1/chat/completions`, OpenAI Responses at `/v1/responses`,
//! Anthropic Messages at `/v1/messages` (and its `/v1/messages/count_tokens`), whole or streamed,
//! and the model list at `GET /v1/models` (the exact paths for OpenAI and Anthropic, by their
//! ending for other servers: `serve::routes`). Each host counts requests exactly, answers over-window requests with its provider's real overflow, plays its script's turns, latencies
//! (in real time, scaled) and faults, and keeps every exchange; a [`Recorder`] writes them as
//! canonical JSON lines as they happen. The same server runs inside `ctxbed conform`, which reads
//! the exchanges back to check what a harness sent.
//!
//! ```no_run
//! # async fn demo() -> Result<(), ctxbed::serve::ServeError> {
//! use ctxbed::serve::{Models, ServeOptions, Server};
//! let options = ServeOptions::default();
//! let models = Models::load_file("mock-models/overflow-openai.toml".as_ref(), &options)?;
//! let server = Server::bind(models, &options).await?;
//! println!("listening on http://{}", server.local_addr());
//! server.run(async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
//!
//! [`ProviderHost`]: ctxbed_sim::host::ProviderHost

mod budget;
mod connection;
mod idle;
mod models;
pub mod record;
mod routes;
mod stall;

pub use models::Models;
pub use record::{RecordError, Recorder};

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::limits;
use crate::scenario::format::diagnostic::Diagnostics;
use connection::Connection;
use ctxbed_sim::host::{Api, HostBody, HostOptions, full, off_the_workers};

/// The largest `--time-scale`: a thousand times slower than scripted is already far past any
/// client's timeout.
pub const TIME_SCALE_MAX: f64 = 1_000.0;

/// `duration` times `scale`, saturating at the longest wait a server holds a request
/// ([`limits::SERVE_HANG_SECONDS`]).
fn scaled(duration: Duration, scale: f64) -> Duration {
    let most = Duration::from_secs(limits::SERVE_HANG_SECONDS);
    Duration::try_from_secs_f64(duration.as_secs_f64() * scale).map_or(most, |d| d.min(most))
}

/// How a server listens and answers.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Accept a non-loopback `listen` address.
    pub allow_remote: bool,
    /// The hosts' options (faults, usage, the hang of a timeout turn, `retry-after`).
    pub host: HostOptions,
    /// Every scripted latency (and the hang) is multiplied by this; 0 answers at once.
    pub time_scale: f64,
    /// Where to write each exchange as a canonical JSON line.
    pub record: Option<PathBuf>,
    /// The bounds on each connection.
    pub limits: ConnectionLimits,
    /// The window `GET …/models` reports instead of each model's own (a server that advertises
    /// more than it accepts).
    pub advertised_window: Option<u64>,
    /// Bytes of request bodies held at once across every connection
    /// ([`limits::SERVE_BODIES_IN_FLIGHT_BYTES_MAX`]); a body past it is answered 413.
    pub body_budget: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            allow_remote: false,
            host: HostOptions {
                infer_summaries: true,
                hang: Duration::from_secs(limits::SERVE_HANG_SECONDS),
                ..HostOptions::default()
            },
            time_scale: 1.0,
            record: None,
            limits: ConnectionLimits::default(),
            advertised_window: None,
            body_budget: limits::SERVE_BODIES_IN_FLIGHT_BYTES_MAX,
        }
    }
}

/// Why a server could not start or keep its record.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A mock-model file failed to load.
    #[error("{0}")]
    Load(Diagnostics),
    /// `--models DIR` named a directory with no model in it.
    #[error(
        "{dir} holds no mock-model file (*.toml); name a directory of mock models, such as mock-models"
    )]
    NoModels { dir: String },
    /// The directory could not be listed.
    #[error("cannot list {dir}: {source}")]
    ListModels { dir: String, source: std::io::Error },
    /// A non-loopback address without `--allow-remote`.
    #[error(
        "refusing to listen on {addr}: it is not a loopback address; listen on 127.0.0.1, or pass --allow-remote to serve other machines"
    )]
    NotLoopback { addr: SocketAddr },
    /// The listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    /// The record file was refused, or could not be created or written.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A time scale that is negative, not a number, or over [`TIME_SCALE_MAX`].
    #[error("the time scale must be a number from 0 to {TIME_SCALE_MAX}, not {0}")]
    TimeScale(f64),
}

/// A bound server, ready to run.
#[derive(Debug)]
pub struct Server {
    listener: tokio::net::TcpListener,
    models: Arc<Models>,
    recorder: Option<Arc<Recorder>>,
    limits: ConnectionLimits,
    registry: Arc<idle::Registry>,
    budget: Arc<budget::Budget>,
}

/// What bounds each connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Connections open at once ([`limits::SERVE_CONNECTIONS_MAX`]); at the cap, a new client
    /// makes room by closing the longest-idle kept-alive connection.
    pub connections: usize,
    /// For the request headers, and between the requests of a kept-alive connection.
    pub header: Duration,
    /// For the body, once the headers are in.
    pub body: Duration,
    /// For a write to go through: a client that reads none of its reply for this long is
    /// disconnected ([`limits::SERVE_WRITE_SECONDS`]).
    pub write: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            connections: limits::SERVE_CONNECTIONS_MAX,
            header: Duration::from_secs(limits::SERVE_HEADER_SECONDS),
            body: Duration::from_secs(limits::SERVE_BODY_SECONDS),
            write: Duration::from_secs(limits::SERVE_WRITE_SECONDS),
        }
    }
}

impl Server {
    /// Binds the listener (and creates the record file).
    ///
    /// # Errors
    /// A non-loopback address without `allow_remote`, an address that cannot be bound, a record
    /// file that is refused or cannot be created.
    pub async fn bind(models: Models, options: &ServeOptions) -> Result<Server, ServeError> {
        let addr = options.listen;
        if !addr.ip().is_loopback() && !options.allow_remote {
            return Err(ServeError::NotLoopback { addr });
        }
        let recorder = match &options.record {
            Some(path) => Some(Arc::new(Recorder::create(path, &models.files)?)),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        Ok(Server {
            listener,
            models: Arc::new(models),
            recorder,
            limits: options.limits,
            registry: Arc::default(),
            budget: Arc::new(budget::Budget::new(options.body_budget)),
        })
    }

    /// The address actually bound (with the port chosen for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 0)))
    }

    /// The models served, shared with the running server.
    pub fn models(&self) -> Arc<Models> {
        self.models.clone()
    }

    /// Serves until `shutdown` completes; then stops accepting, ends every open connection and
    /// flushes the record to disk.
    ///
    /// # Errors
    /// The record file could not be written (the server stops: a record with holes is worse
    /// than none).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let mut connections = tokio::task::JoinSet::new();
        let (failed_tx, mut failed_rx) = tokio::sync::mpsc::channel::<ServeError>(1);
        let slots = Arc::new(tokio::sync::Semaphore::new(self.limits.connections.max(1)));
        let mut backoff = Backoff::default();
        tokio::pin!(shutdown);
        let outcome = loop {
            let accepted = tokio::select! {
                biased;
                () = &mut shutdown => break Ok(()),
                Some(error) = failed_rx.recv() => break Err(error),
                accepted = self.listener.accept() => accepted,
            };
            let stream = match accepted {
                Ok((stream, _)) => {
                    backoff.reset();
                    stream
                }
                Err(error) => {
                    backoff.wait(&error).await;
                    continue;
                }
            };
            let slot = tokio::select! {
                biased;
                () = &mut shutdown => break Ok(()),
                Some(error) = failed_rx.recv() => break Err(error),
                slot = self.slot(&slots) => slot,
            };
            let Some(slot) = slot else { break Ok(()) };
            let connection = Connection {
                models: self.models.clone(),
                recorder: self.recorder.clone(),
                failed: failed_tx.clone(),
                limits: self.limits,
                registered: self.registry.register(),
                budget: self.budget.clone(),
            };
            connections.spawn(async move {
                connection.serve(stream).await;
                drop(slot);
            });
            while connections.try_join_next().is_some() {}
        };
        connections.shutdown().await;
        if let Some(recorder) = &self.recorder {
            recorder.finish()?;
        }
        outcome
    }

    /// A connection slot for a client just accepted: a free one, or, at the cap, the one the
    /// longest-idle kept-alive connection gives up when it is asked to close (waiting for a
    /// connection to finish or become idle when none is). `None` once the slots are closed.
    async fn slot(
        &self,
        slots: &Arc<tokio::sync::Semaphore>,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        loop {
            match slots.clone().try_acquire_owned() {
                Ok(slot) => return Some(slot),
                Err(tokio::sync::TryAcquireError::Closed) => return None,
                Err(tokio::sync::TryAcquireError::NoPermits) => {}
            }
            let idle = self.registry.idle_now();
            tokio::pin!(idle);
            idle.as_mut().enable();
            let shed = self.registry.shed_one();
            tokio::select! {
                slot = slots.clone().acquire_owned() => return slot.ok(),
                () = &mut idle, if !shed => {}
            }
        }
    }
}

/// The pause after a failed `accept`: 10 ms, doubling to [`limits::SERVE_ACCEPT_BACKOFF_MS_MAX`].
#[derive(Debug, Default)]
struct Backoff {
    next_ms: u64,
}

impl Backoff {
    async fn wait(&mut self, error: &std::io::Error) {
        if self.next_ms == 0 {
            tracing::warn!(%error, "cannot accept a connection; backing off");
            self.next_ms = 10;
        }
        tokio::time::sleep(Duration::from_millis(self.next_ms)).await;
        self.next_ms = (self.next_ms * 2).min(limits::SERVE_ACCEPT_BACKOFF_MS_MAX);
    }

    fn reset(&mut self) {
        self.next_ms = 0;
    }
}

async fn route(
    models: &Models,
    request: http::Request<hyper::body::Incoming>,
    recorder: Option<&Recorder>,
    budget: &Arc<budget::Budget>,
    body_timeout: Duration,
) -> Result<http::Response<HostBody>, ServeError> {
    let path = request.uri().path().to_string();
    let api = Api::for_path(&path);
    match routes::route(request.method(), &path, &models.providers()) {
        routes::Route::Models => return Ok(model_list(models)),
        routes::Route::Api => {}
        routes::Route::NotFound => {
            let what = format!("{} {path}", request.method());
            tracing::warn!(request = %what, "unknown route; ctxbed serve answers POST /v1/chat/completions, POST /v1/responses, POST /v1/messages (and /v1/messages/count_tokens for Anthropic) and GET /v1/models");
            return Ok(not_found(models.imitated(), &what));
        }
    }
    let (body, _share) = match budget::read(
        request.into_body(),
        budget,
        limits::SERVE_REQUEST_BYTES_MAX,
        body_timeout,
    )
    .await
    {
        budget::Read::Body(bytes, share) => (Some(bytes), Some(share)),
        budget::Read::Gone => (None, None),
        budget::Read::Late => return Ok(body_timeout_response(api, body_timeout)),
        budget::Read::OverBudget => {
            tracing::warn!(
                held = budget.held(),
                "request bodies in flight are at the memory budget; answering 413"
            );
            return Ok(budget::too_large(api));
        }
    };
    // One model answers everything: the body is parsed once, by the host, not here too. A large
    // body is parsed, like the host's reading and counting, off the worker threads.
    let named = body
        .as_ref()
        .filter(|_| !models.single)
        .and_then(|bytes| {
            off_the_workers(bytes.len(), || serde_json::from_slice::<Value>(bytes)).ok()
        })
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

fn model_list(models: &Models) -> http::Response<HostBody> {
    let data: Vec<Value> = models
        .iter()
        .map(|(name, host)| {
            let window = models
                .advertised
                .or(host.model().script().info.context_window);
            json!({"id": name, "object": "model", "created": 0, "owned_by": "ctxbed",
                   "context_window": window})
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

fn unknown_model(api: Api, name: &str) -> http::Response<HostBody> {
    let body = match api {
        Api::Anthropic => {
            ctxbed_sim::host::anthropic::error_body("not_found_error", &format!("model: {name}"))
        }
        Api::OpenAi | Api::Responses => json!({"error": {"message": format!("The model `{name}` does not exist or you do not have access to it."), "type": "invalid_request_error", "param": null, "code": "model_not_found"}}).to_string(),
    };
    full(404, body)
}

/// A summary of what each model answered: requests, then each outcome's count, and how many
/// exchanges were not kept in memory when a limit dropped any.
pub fn summary(models: &Models) -> String {
    let mut lines = Vec::new();
    for (name, host) in models.iter() {
        let count = host.request_count();
        let plural = if count == 1 { "" } else { "s" };
        let detail: Vec<String> = host
            .outcomes()
            .iter()
            .map(|(outcome, n)| format!("{n} {outcome}"))
            .collect();
        let detail = if detail.is_empty() {
            String::new()
        } else {
            format!(": {}", detail.join(", "))
        };
        let label = host.model().script().imitates.as_str();
        lines.push(format!("{name} ({label}): {count} request{plural}{detail}"));
        if host.dropped() > 0 {
            lines.push(format!(
                "{name}: {} exchanges past the first {} were answered but not kept in memory",
                host.dropped(),
                host.options().retain_exchanges
            ));
        }
    }
    lines.join("\n")
}
