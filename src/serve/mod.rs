//! `ctxbed serve`: mock models on real loopback TCP, as the providers they imitate.
//!
//! A [`Server`] binds a TCP listener (loopback only unless told otherwise), and answers each
//! HTTP/1.1 request with the [`ProviderHost`] of the model the request names (or the only one):
//! OpenAI Chat Completions at `…/chat/completions`, Anthropic Messages at `…/messages`, whole or
//! streamed, and the model list at `GET …/models`. Each host counts requests exactly, answers
//! over-window requests with its provider's real overflow, plays its script's turns, latencies
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

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::limits;
use crate::scenario::diagnostic::Diagnostics;
use crate::scenario::mock_file::parse_mock;
use crate::scenario::source::read_source;
use ctxbed_sim::host::{Api, HostBody, HostOptions, ProviderHost, full};
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
    /// The record file could not be created or written.
    #[error("cannot write the record file {path}: {source}")]
    Record {
        path: String,
        source: std::io::Error,
    },
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
        for path in paths {
            match load_host(&path, options) {
                Ok(host) => {
                    hosts.insert(stem(&path), Arc::new(host));
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
        })
    }

    /// Hosts built elsewhere (a conformance run builds its own); `single` as in
    /// [`Models::load_file`].
    pub fn from_hosts(hosts: BTreeMap<String, Arc<ProviderHost>>, single: bool) -> Models {
        Models { hosts, single }
    }

    /// The host of a model, by name.
    pub fn host(&self, name: &str) -> Option<&Arc<ProviderHost>> {
        self.hosts.get(name)
    }

    /// Every model, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Arc<ProviderHost>)> {
        self.hosts.iter()
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
    if !(0.0..=TIME_SCALE_MAX).contains(&options.time_scale) {
        return Err(ServeError::TimeScale(options.time_scale));
    }
    let label = path.display().to_string();
    let source = read_source(path, &label)
        .map_err(|problem| ServeError::Load(Diagnostics(vec![*problem])))?;
    let mut script = parse_mock(&stem(path), &label, &source)
        .map_err(|found| ServeError::Load(Diagnostics(found)))?;
    for turn in &mut script.turns {
        turn.latency = scaled(turn.latency, options.time_scale);
    }
    let mut host = options.host.clone();
    host.hang = scaled(host.hang, options.time_scale);
    Ok(ProviderHost::with_options(MockModel::new(script), host))
}

/// Writes every exchange of every host once, as canonical JSON lines, as they happen.
#[derive(Debug)]
pub struct Recorder {
    path: String,
    state: Mutex<RecorderState>,
}

#[derive(Debug)]
struct RecorderState {
    file: std::io::BufWriter<std::fs::File>,
    written: BTreeMap<String, usize>,
}

impl Recorder {
    /// Creates (or truncates) the record file.
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(path: &Path) -> Result<Recorder, ServeError> {
        let label = path.display().to_string();
        let file = std::fs::File::create(path).map_err(|source| ServeError::Record {
            path: label.clone(),
            source,
        })?;
        Ok(Recorder {
            path: label,
            state: Mutex::new(RecorderState {
                file: std::io::BufWriter::new(file),
                written: BTreeMap::new(),
            }),
        })
    }

    /// Writes the exchanges of `host` not written yet.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write_new(&self, name: &str, host: &ProviderHost) -> Result<(), ServeError> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let exchanges = host.exchanges();
        let done = state.written.get(name).copied().unwrap_or(0);
        let window = host.model().script().info.context_window;
        let error = |source| ServeError::Record {
            path: self.path.clone(),
            source,
        };
        for exchange in exchanges.iter().skip(done) {
            let line = record::exchange_line(name, window, exchange);
            writeln!(state.file, "{line}").map_err(error)?;
        }
        state.file.flush().map_err(error)?;
        state.written.insert(name.to_string(), exchanges.len());
        Ok(())
    }
}

/// A bound server, ready to run.
#[derive(Debug)]
pub struct Server {
    listener: tokio::net::TcpListener,
    models: Arc<Models>,
    recorder: Option<Arc<Recorder>>,
}

impl Server {
    /// Binds the listener (and creates the record file).
    ///
    /// # Errors
    /// A non-loopback address without `allow_remote`, an address that cannot be bound, a record
    /// file that cannot be created.
    pub async fn bind(models: Models, options: &ServeOptions) -> Result<Server, ServeError> {
        let addr = options.listen;
        if !addr.ip().is_loopback() && !options.allow_remote {
            return Err(ServeError::NotLoopback { addr });
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let recorder = match &options.record {
            Some(path) => Some(Arc::new(Recorder::create(path)?)),
            None => None,
        };
        Ok(Server {
            listener,
            models: Arc::new(models),
            recorder,
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

    /// Serves until `shutdown` completes; then stops accepting and ends every open connection.
    ///
    /// # Errors
    /// The record file could not be written (the server stops: a record with holes is worse
    /// than none).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let mut connections = tokio::task::JoinSet::new();
        let (failed_tx, mut failed_rx) = tokio::sync::mpsc::channel::<ServeError>(1);
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                biased;
                () = &mut shutdown => break,
                Some(error) = failed_rx.recv() => {
                    connections.shutdown().await;
                    return Err(error);
                }
                accepted = self.listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let models = self.models.clone();
                    let recorder = self.recorder.clone();
                    let failed = failed_tx.clone();
                    connections.spawn(async move {
                        let service = hyper::service::service_fn(move |request| {
                            let models = models.clone();
                            let recorder = recorder.clone();
                            let failed = failed.clone();
                            async move {
                                let response = route(&models, request, recorder.as_deref()).await;
                                let response = match response {
                                    Ok(response) => response,
                                    Err(error) => {
                                        let _ = failed.try_send(error);
                                        full(500, json!({"error": {"message": "the test-bed could not record the request"}}).to_string())
                                    }
                                };
                                Ok::<_, Infallible>(response)
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                    while connections.try_join_next().is_some() {}
                }
            }
        }
        connections.shutdown().await;
        Ok(())
    }
}

async fn route(
    models: &Models,
    request: http::Request<hyper::body::Incoming>,
    recorder: Option<&Recorder>,
) -> Result<http::Response<HostBody>, ServeError> {
    let path = request.uri().path().to_string();
    let api = Api::for_path(&path);
    if request.method() == http::Method::GET && path.trim_end_matches('/').ends_with("/models") {
        return Ok(model_list(models));
    }
    if request.method() != http::Method::POST {
        return Ok(not_found(api, &format!("{} {path}", request.method())));
    }
    let body = Limited::new(request.into_body(), limits::SERVE_REQUEST_BYTES_MAX)
        .collect()
        .await
        .ok()
        .map(|body| body.to_bytes());
    let named = body
        .as_ref()
        .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
        .and_then(|json| {
            json.get("model")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
    let Some((name, host)) = models.route(named.as_deref()) else {
        return Ok(unknown_model(api, named.as_deref().unwrap_or("")));
    };
    let response = host.answer(&path, body).await;
    if let Some(recorder) = recorder {
        recorder.write_new(name, host)?;
    }
    Ok(response)
}

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

fn not_found(api: Api, what: &str) -> http::Response<HostBody> {
    let message = format!(
        "Unknown request URL: {what}. ctxbed serve answers POST /v1/chat/completions, POST /v1/messages and GET /v1/models."
    );
    let body = match api {
        Api::Anthropic => ctxbed_sim::host::anthropic::error_body("not_found_error", &message),
        Api::OpenAi => json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "unknown_url"}}).to_string(),
    };
    full(404, body)
}

fn unknown_model(api: Api, name: &str) -> http::Response<HostBody> {
    let body = match api {
        Api::Anthropic => {
            ctxbed_sim::host::anthropic::error_body("not_found_error", &format!("model: {name}"))
        }
        Api::OpenAi => json!({"error": {"message": format!("The model `{name}` does not exist or you do not have access to it."), "type": "invalid_request_error", "param": null, "code": "model_not_found"}}).to_string(),
    };
    full(404, body)
}

/// A summary of what each model answered: requests, then each outcome's count.
pub fn summary(models: &Models) -> String {
    let mut lines = Vec::new();
    for (name, host) in models.iter() {
        let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
        for exchange in host.exchanges() {
            *outcomes.entry(exchange.outcome).or_default() += 1;
        }
        let count = host.request_count();
        let plural = if count == 1 { "" } else { "s" };
        let detail: Vec<String> = outcomes
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
    }
    lines.join("\n")
}
