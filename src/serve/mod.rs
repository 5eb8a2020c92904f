//! `ctxbed serve`: mock models on real loopback TCP, as the providers they imitate.
//!
//! A [`Server`] binds a TCP listener (loopback only unless told otherwise), and answers each
//! HTTP/1.1 request with the [`ProviderHost`] of the model the request names (or the only one):
//! OpenAI Chat Completions at `…/chat/completions`, OpenAI Responses at `…/responses`, Anthropic
//! Messages at `…/messages` (and its `…/messages/count_tokens`), whole or streamed, and the model
//! list at `GET …/models`. Each host counts requests exactly, answers over-window requests with its provider's real overflow, plays its script's turns, latencies
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

pub mod record;
mod route;

pub use record::{RecordError, Recorder};

use route::route;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use serde_json::json;

use crate::limits;
use crate::scenario::format::diagnostic::Diagnostics;
use crate::scenario::format::mock_file::parse_mock;
use crate::scenario::format::source::read_source;
use ctxbed_sim::host::{Api, HostOptions, ProviderHost, full};
use ctxbed_sim::mock::MockModel;

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

/// The models a server answers for, by name (the mock file's stem).
#[derive(Debug)]
pub struct Models {
    hosts: BTreeMap<String, Arc<ProviderHost>>,
    /// One model answers every request, whatever `model` it names.
    single: bool,
    /// The mock-model files loaded (the record may not overwrite them).
    files: Vec<PathBuf>,
}

impl Models {
    /// One mock-model file, answering every request.
    ///
    /// # Errors
    /// The file cannot be read or has problems (each with line, column and field).
    pub fn load_file(path: &Path, options: &ServeOptions) -> Result<Models, ServeError> {
        let host = load_host(path, options)?;
        let name = stem(path);
        Ok(Models {
            hosts: BTreeMap::from([(name, Arc::new(host))]),
            single: true,
            files: vec![path.to_path_buf()],
        })
    }

    /// A mock model given as text (a built-in one, say), answering every request; `label`
    /// names it in diagnostics.
    ///
    /// # Errors
    /// The text has problems (each with line, column and field).
    pub fn load_source(
        name: &str,
        label: &str,
        source: &str,
        options: &ServeOptions,
    ) -> Result<Models, ServeError> {
        let host = host_from_source(name, label, source, options)?;
        Ok(Models {
            hosts: BTreeMap::from([(name.to_string(), Arc::new(host))]),
            single: true,
            files: Vec::new(),
        })
    }

    /// Every `*.toml` of a directory, each answering requests that name it.
    ///
    /// # Errors
    /// The directory cannot be listed, holds no model, or a file has problems (all reported).
    pub fn load_dir(dir: &Path, options: &ServeOptions) -> Result<Models, ServeError> {
        let label = dir.display().to_string();
        let entries = std::fs::read_dir(dir).map_err(|source| ServeError::ListModels {
            dir: label.clone(),
            source,
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
            .collect();
        paths.sort();
        paths.truncate(limits::SERVE_MODELS_MAX);
        let mut hosts = BTreeMap::new();
        let mut problems = Vec::new();
        for path in &paths {
            match load_host(path, options) {
                Ok(host) => {
                    hosts.insert(stem(path), Arc::new(host));
                }
                Err(ServeError::Load(Diagnostics(found))) => problems.extend(found),
                Err(other) => return Err(other),
            }
        }
        if !problems.is_empty() {
            return Err(ServeError::Load(Diagnostics(problems)));
        }
        if hosts.is_empty() {
            return Err(ServeError::NoModels { dir: label });
        }
        Ok(Models {
            hosts,
            single: false,
            files: paths,
        })
    }

    /// Hosts built elsewhere (a conformance run builds its own); `single` as in
    /// [`Models::load_file`].
    pub fn from_hosts(hosts: BTreeMap<String, Arc<ProviderHost>>, single: bool) -> Models {
        Models {
            hosts,
            single,
            files: Vec::new(),
        }
    }

    /// The host of a model, by name.
    pub fn host(&self, name: &str) -> Option<&Arc<ProviderHost>> {
        self.hosts.get(name)
    }

    /// Every model, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Arc<ProviderHost>)> {
        self.hosts.iter()
    }

    /// The API whose wording answers a request no model can take: the only model's provider,
    /// or OpenAI's when several are served.
    fn imitated(&self) -> Api {
        match self.hosts.values().next() {
            Some(host) if self.single || self.hosts.len() == 1 => {
                if host.model().script().imitates
                    == ctxbed_harness::model::provider::Provider::Anthropic
                {
                    Api::Anthropic
                } else {
                    Api::OpenAi
                }
            }
            _ => Api::OpenAi,
        }
    }

    /// The host that answers a request naming `model`.
    fn route(&self, model: Option<&str>) -> Option<(&String, &Arc<ProviderHost>)> {
        if self.single {
            return self.hosts.iter().next();
        }
        model.and_then(|name| self.hosts.get_key_value(name))
    }
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |stem| stem.to_string_lossy().into_owned())
}

fn load_host(path: &Path, options: &ServeOptions) -> Result<ProviderHost, ServeError> {
    let label = path.display().to_string();
    let source = read_source(path, &label)
        .map_err(|problem| ServeError::Load(Diagnostics(vec![*problem])))?;
    host_from_source(&stem(path), &label, &source, options)
}

fn host_from_source(
    name: &str,
    label: &str,
    source: &str,
    options: &ServeOptions,
) -> Result<ProviderHost, ServeError> {
    if !(0.0..=TIME_SCALE_MAX).contains(&options.time_scale) {
        return Err(ServeError::TimeScale(options.time_scale));
    }
    let mut script =
        parse_mock(name, label, source).map_err(|found| ServeError::Load(Diagnostics(found)))?;
    for turn in &mut script.turns {
        turn.latency = scaled(turn.latency, options.time_scale);
    }
    let mut host = options.host.clone();
    host.hang = scaled(host.hang, options.time_scale);
    Ok(ProviderHost::with_options(MockModel::new(script), host))
}

/// A bound server, ready to run.
#[derive(Debug)]
pub struct Server {
    listener: tokio::net::TcpListener,
    models: Arc<Models>,
    recorder: Option<Arc<Recorder>>,
    limits: ConnectionLimits,
}

/// What bounds each connection.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Connections open at once ([`limits::SERVE_CONNECTIONS_MAX`]).
    pub connections: usize,
    /// For the request headers, and between the requests of a kept-alive connection.
    pub header: Duration,
    /// For the body, once the headers are in.
    pub body: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            connections: limits::SERVE_CONNECTIONS_MAX,
            header: Duration::from_secs(limits::SERVE_HEADER_SECONDS),
            body: Duration::from_secs(limits::SERVE_BODY_SECONDS),
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
            tokio::select! {
                biased;
                () = &mut shutdown => break Ok(()),
                Some(error) = failed_rx.recv() => break Err(error),
                slot = slots.clone().acquire_owned() => {
                    let Ok(slot) = slot else { break Ok(()) };
                    let accepted = tokio::select! {
                        biased;
                        () = &mut shutdown => break Ok(()),
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
                    let connection = Connection {
                        models: self.models.clone(),
                        recorder: self.recorder.clone(),
                        failed: failed_tx.clone(),
                        limits: self.limits,
                    };
                    connections.spawn(async move {
                        connection.serve(stream).await;
                        drop(slot);
                    });
                    while connections.try_join_next().is_some() {}
                }
            }
        };
        connections.shutdown().await;
        if let Some(recorder) = &self.recorder {
            recorder.finish()?;
        }
        outcome
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

/// What one connection's requests share.
struct Connection {
    models: Arc<Models>,
    recorder: Option<Arc<Recorder>>,
    failed: tokio::sync::mpsc::Sender<ServeError>,
    limits: ConnectionLimits,
}

impl Connection {
    async fn serve(self, stream: tokio::net::TcpStream) {
        let shared = Arc::new(self);
        let header = shared.limits.header;
        let service = hyper::service::service_fn(move |request| {
            let shared = shared.clone();
            async move {
                let recorder = shared.recorder.as_deref();
                let response = route(&shared.models, request, recorder, shared.limits.body).await;
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
                Ok::<_, Infallible>(response)
            }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(header)
            .serve_connection(TokioIo::new(stream), service)
            .await;
    }
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
