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
    /// The address to listen on; port 0 picks a free port. `localhost` is 127.0.0.1, and an
    /// IPv4-mapped IPv6 address (`[::ffff:127.0.0.1]`) is its IPv4 address.
    #[arg(long, default_value = "127.0.0.1:0", value_parser = listen_address)]
    pub listen: std::net::SocketAddr,
    /// Accept a non-loopback --listen address.
    #[arg(long)]
    pub allow_remote: bool,
    /// Multiply every scripted latency (and a timeout turn's hang) by this; 0 answers at once.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = time_scale)]
    pub time_scale: f64,
    /// Write every request and its outcome to this file as it happens, one canonical JSON line
    /// each (never through a symbolic link or onto a mock file; synced at exit).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Leave usage figures out of OpenAI replies, as many local servers do.
    #[arg(long)]
    pub no_usage: bool,
    /// Reset the connection of these requests (1-based, every request counted), e.g. 2,5.
    #[arg(long, value_delimiter = ',', value_parser = request_number)]
    pub reset: Vec<u64>,
    /// Cut the streamed answer of these requests halfway (1-based).
    #[arg(long, value_delimiter = ',', value_parser = request_number)]
    pub cut_stream: Vec<u64>,
    /// The retry-after header of a 429, in seconds.
    #[arg(long, default_value_t = 1)]
    pub retry_after: u64,
}

/// `--listen`: an address with a port; `localhost` is 127.0.0.1 (never a name looked up), and an
/// IPv4-mapped IPv6 address is its IPv4 address, so the loopback check sees what it is.
fn listen_address(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};
    let address = match text.rsplit_once(':') {
        Some((host, port)) if host.eq_ignore_ascii_case("localhost") => port
            .parse::<u16>()
            .map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .map_err(|_| format!("`{port}` is not a port number (0 to 65535)")),
        _ => text.parse::<SocketAddr>().map_err(|_| {
            format!("`{text}` is not an address with a port, such as 127.0.0.1:8080, localhost:0 or [::1]:0")
        }),
    }?;
    Ok(match address.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::from((v4, address.port())),
            None => address,
        },
        IpAddr::V4(_) => address,
    })
}

/// `--time-scale`: a number from 0 (answer at once) to [`ctxbed::serve::TIME_SCALE_MAX`].
fn time_scale(text: &str) -> Result<f64, String> {
    let most = ctxbed::serve::TIME_SCALE_MAX;
    match text.parse::<f64>() {
        Ok(scale) if (0.0..=most).contains(&scale) => Ok(scale),
        Ok(_) => Err(format!(
            "the time scale must be positive: a number from 0 to {most} (0 answers at once), not {text}"
        )),
        Err(_) => Err(format!("`{text}` is not a number")),
    }
}

/// `--reset` and `--cut-stream`: request numbers, counted from 1.
fn request_number(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => {
            Err("requests are counted from 1 (the first request is 1); 0 names no request".into())
        }
        Ok(number) => Ok(number),
        Err(_) => Err(format!("`{text}` is not a request number (1, 2, …)")),
    }
}

/// Runs `ctxbed serve` with its parsed arguments; `held` keeps the stop signals back until the
/// server's handlers are installed.
pub fn serve_from(arguments: ServeArgs, held: Option<super::signals::Held>) -> ExitCode {
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
    serve_command(mock, models, builtin, options, held)
}

/// The mock models to serve: a file, a directory or a built-in one; on a problem, it is
/// reported and the exit code returned.
fn load_models(
    mock: Option<PathBuf>,
    dir: Option<PathBuf>,
    builtin: Option<String>,
    options: &ctxbed::serve::ServeOptions,
) -> Result<ctxbed::serve::Models, ExitCode> {
    use ctxbed::serve::Models;
    let models = match (mock, dir, builtin) {
        (Some(path), _, _) => Models::load_file(&path, options),
        (None, Some(dir), _) => Models::load_dir(&dir, options),
        (None, None, Some(name)) => match conform::builtin::mock(&name) {
            Some(source) => {
                let label = format!("(built in) mock-models/{name}.toml");
                Models::load_source(&name, &label, source, options)
            }
            None => {
                errln!(
                    "error: no built-in mock model `{name}`; built in: {}",
                    conform::builtin::mock_names().join(", ")
                );
                return Err(ExitCode::from(2));
            }
        },
        (None, None, None) => {
            errln!("error: name a mock-model file, --models DIR or --builtin NAME");
            return Err(ExitCode::from(2));
        }
    };
    models.map_err(|error| {
        errln!("{error}");
        ExitCode::from(2)
    })
}

/// Worker threads of `ctxbed serve`'s runtime.
const SERVE_WORKERS: usize = 4;

pub fn serve_command(
    mock: Option<PathBuf>,
    dir: Option<PathBuf>,
    builtin: Option<String>,
    options: ctxbed::serve::ServeOptions,
    held: Option<super::signals::Held>,
) -> ExitCode {
    use ctxbed::serve::{Server, summary};
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
    // The handlers first: a stop from here on ends the server with its summary.
    let stop = {
        let _entered = runtime.enter();
        super::signals::Stop::listen()
    };
    drop(held);
    let models = match load_models(mock, dir, builtin, &options) {
        Ok(models) => models,
        Err(code) => return code,
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
        let outcome = server.run(stop.wait()).await;
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

/// Ctrl-C, or (on Unix) SIGTERM. Call within a tokio runtime.
pub(crate) async fn stop_signal() {
    super::signals::Stop::listen().wait().await;
}
