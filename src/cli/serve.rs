//! `ctxbed serve`: mock models on loopback, as the providers they imitate, until Ctrl-C or
//! SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::conform;

/// `ctxbed serve`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The mock-model file; it answers every request, whatever model the request names.
    #[arg(required_unless_present_any = ["models", "builtin"], conflicts_with_all = ["models", "builtin"])]
    pub mock: Option<PathBuf>,
    /// A directory of mock-model files instead: the request's `model` picks the file by its
    /// name (`wire-8k` for `wire-8k.toml`).
    #[arg(long, conflicts_with = "builtin")]
    pub models: Option<PathBuf>,
    /// A built-in mock model instead, by name (`wire-window-8k-english`; `ctxbed conform
    /// --list` shows which scenario uses which).
    #[arg(long)]
    pub builtin: Option<String>,
    /// The address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// Accept a non-loopback --listen address.
    #[arg(long)]
    pub allow_remote: bool,
    /// Multiply every scripted latency (and a timeout turn's hang) by this; 0 answers at once.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// Write every request and its outcome to this file as it happens, one canonical JSON line
    /// each (never through a symbolic link or onto a mock file; synced at exit).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Leave usage figures out of OpenAI replies, as many local servers do.
    #[arg(long)]
    pub no_usage: bool,
    /// Reset the connection of these requests (1-based, every request counted), e.g. 2,5.
    #[arg(long, value_delimiter = ',')]
    pub reset: Vec<u64>,
    /// Cut the streamed answer of these requests halfway.
    #[arg(long, value_delimiter = ',')]
    pub cut_stream: Vec<u64>,
    /// The retry-after header of a 429, in seconds.
    #[arg(long, default_value_t = 1)]
    pub retry_after: u64,
}

/// Runs `ctxbed serve` with its parsed arguments.
pub fn serve_from(arguments: ServeArgs) -> ExitCode {
    let ServeArgs {
        mock,
        models,
        builtin,
        listen,
        allow_remote,
        time_scale,
        record,
        no_usage,
        reset,
        cut_stream,
        retry_after,
    } = arguments;
    let mut options = ctxbed::serve::ServeOptions {
        listen,
        allow_remote,
        time_scale,
        record,
        ..Default::default()
    };
    options.host.report_usage = !no_usage;
    options.host.faults.reset_requests = reset;
    options.host.faults.cut_stream_requests = cut_stream;
    options.host.retry_after_seconds = retry_after;
    // Exchanges go to the record file as they happen; memory stays flat under traffic.
    options.host.retain_exchanges = 0;
    serve_command(mock, models, builtin, options)
}

/// Worker threads of `ctxbed serve`'s runtime.
const SERVE_WORKERS: usize = 4;

pub fn serve_command(
    mock: Option<PathBuf>,
    dir: Option<PathBuf>,
    builtin: Option<String>,
    options: ctxbed::serve::ServeOptions,
) -> ExitCode {
    use ctxbed::serve::{Models, Server, summary};
    // Several workers, so a client sending a huge request does not stall the others.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(SERVE_WORKERS)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            errln!("error: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let models = match (mock, dir, builtin) {
        (Some(path), _, _) => Models::load_file(&path, &options),
        (None, Some(dir), _) => Models::load_dir(&dir, &options),
        (None, None, Some(name)) => match conform::builtin::mock(&name) {
            Some(source) => {
                let label = format!("(built in) mock-models/{name}.toml");
                Models::load_source(&name, &label, source, &options)
            }
            None => {
                errln!(
                    "error: no built-in mock model `{name}`; built in: {}",
                    conform::builtin::mock_names().join(", ")
                );
                return ExitCode::from(2);
            }
        },
        (None, None, None) => unreachable!("clap requires a mock file, --models or --builtin"),
    };
    let models = match models {
        Ok(models) => models,
        Err(error) => {
            errln!("{error}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async {
        let server = match Server::bind(models, &options).await {
            Ok(server) => server,
            Err(error) => {
                errln!("error: {error}");
                return ExitCode::from(2);
            }
        };
        outln!("listening on http://{}", server.local_addr());
        let served = server.models();
        let outcome = server.run(stop_signal()).await;
        errln!("{}", summary(&served));
        match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                errln!("error: {error}");
                ExitCode::FAILURE
            }
        }
    })
}

/// Ctrl-C, or (on Unix) SIGTERM.
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
