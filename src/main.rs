//! The `ctxbed` command line: a thin layer over `ctxbed::scenario`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

/// Like `println!`, except that a closed pipe (`ctxbed show x | head`) ends the process quietly.
macro_rules! outln {
    () => { write_out(format_args!("\n")) };
    ($($arg:tt)*) => { write_out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Like `print!`, except that a closed pipe ends the process quietly.
macro_rules! out {
    ($($arg:tt)*) => { write_out(format_args!($($arg)*)) };
}

/// Like `eprintln!`, except that a closed or failing standard error is ignored rather than a
/// panic: there is no one left to tell.
macro_rules! errln {
    () => { write_err(format_args!("\n")) };
    ($($arg:tt)*) => { write_err(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Like `eprint!`, with the same tolerance as [`errln!`].
macro_rules! err {
    ($($arg:tt)*) => { write_err(format_args!($($arg)*)) };
}

/// Writes to standard error, ignoring a failure: a message that cannot be shown is dropped.
fn write_err(text: std::fmt::Arguments<'_>) {
    let _ignored = std::io::stderr().lock().write_fmt(text);
}

/// The status of a process a closed pipe stopped (128 + SIGPIPE), as shells report it.
const CLOSED_PIPE_STATUS: i32 = 141;

/// Writes to standard output. A reader that went away (`| head`) stops the process with
/// [`CLOSED_PIPE_STATUS`] and no message, as other command-line tools do; any other failure to
/// write is reported on standard error.
fn write_out(text: std::fmt::Arguments<'_>) {
    if let Err(error) = std::io::stdout().lock().write_fmt(text) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(CLOSED_PIPE_STATUS);
        }
        errln!("error: cannot write to standard output: {error}");
        std::process::exit(2);
    }
}

mod cli;

use clap::{Parser, Subcommand};
use ctxbed::record::record;
use ctxbed::scenario::explain::{self, Selector};
use ctxbed::scenario::file::{Layout, Scenario, load};
use ctxbed::scenario::golden::GoldenMode;
use ctxbed::scenario::report;
use ctxbed::scenario::runner::{RunOutput, run};
use ctxbed::scenario::write::mock_toml;
use ctxbed::suite::{Verdict, discover, run_file};
use ctxbed::sweep::{Shard, SweepConfig};
use ctxbed_providers::{ProviderConfig, ProviderKind};

/// A sweep allocates many small, short-lived values; see the `mimalloc` feature.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A deterministic context-management harness and conformance test-bed.
#[derive(Parser)]
#[command(name = "ctxbed", version)]
struct Cli {
    /// Diagnostics on standard error: `-v` info, `-vv` debug, `-vvv` trace (`RUST_LOG`, when
    /// set, chooses instead, e.g. `RUST_LOG=ctxbed_providers=debug`). Never in traces or goldens.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

/// Turns on a `tracing` subscriber on standard error when `-v` or `RUST_LOG` asks for one.
fn init_diagnostics(verbose: u8) {
    let from_env = std::env::var_os("RUST_LOG").is_some_and(|v| !v.is_empty());
    if verbose == 0 && !from_env {
        return;
    }
    let filter = if from_env {
        tracing_subscriber::EnvFilter::from_default_env()
    } else {
        let level = match verbose {
            1 => "info",
            2 => "debug",
            _ => "trace",
        };
        tracing_subscriber::EnvFilter::new(level)
    };
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(true)
        // A span's close line carries its fields (operation, provider, model, usage, error).
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .finish();
    // Another subscriber already set (never, in this binary) keeps its place.
    let _ = tracing::subscriber::set_global_default(subscriber);
}

#[derive(Subcommand)]
enum Command {
    /// Run scenarios (twice each), check their expectations and compare with their goldens.
    Run {
        /// Scenario files or directories (default: `scenarios`).
        paths: Vec<PathBuf>,
        /// Rewrite the goldens instead of comparing.
        #[arg(long)]
        bless: bool,
        /// Print only failures and the summary.
        #[arg(long, short)]
        quiet: bool,
        /// `text`, `json` (one object per scenario, then a summary, one per line) or `junit`
        /// (JUnit XML, one test case per scenario).
        #[arg(long, default_value = "text", value_parser = ["text", "json", "junit"])]
        format: String,
    },
    /// Print the trace of one scenario.
    Show {
        /// The scenario file.
        scenario: PathBuf,
    },
    /// Check scenario files without running them.
    Check {
        /// Scenario files or directories (default: `scenarios`).
        paths: Vec<PathBuf>,
        /// Show at most this many problems per file (every problem is still counted).
        #[arg(long, default_value_t = 50)]
        max_errors: usize,
    },
    /// Write a self-contained HTML page showing the budget and transforms of every request.
    Report {
        /// The scenario file.
        scenario: PathBuf,
        /// Where to write the page.
        #[arg(long, short, default_value = "report.html")]
        output: PathBuf,
    },
    /// Explain why one request kept or dropped each item (without --request: list the requests).
    Explain {
        /// The scenario file.
        scenario: PathBuf,
        /// The request: 1-based over every preparation of the run, or with --step, over the
        /// step's reasoning requests (as `[[expect]] request` counts them).
        #[arg(long)]
        request: Option<usize>,
        /// The step (1-based) that --request counts within.
        #[arg(long)]
        step: Option<usize>,
    },
    /// Run a scenario against a real model over HTTP and write its answers (replies and real
    /// error bodies) as a mock-model file, so the run replays deterministically.
    Record {
        /// The scenario file.
        scenario: PathBuf,
        /// The wire format: `openai` (Chat Completions) or `anthropic` (Messages).
        #[arg(long, value_parser = parse_provider)]
        provider: ProviderKind,
        /// The server's base URL: up to `/chat/completions` for openai (often ending in `/v1`),
        /// up to `/v1/messages` for anthropic.
        #[arg(long)]
        base_url: String,
        /// The provider's model name.
        #[arg(long)]
        model: String,
        /// The environment variable holding the API key (the key itself is never printed).
        #[arg(long)]
        api_key_env: Option<String>,
        /// The mock-model file to write (default: the suite's
        /// `mock-models/<scenario>-recorded.toml`).
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Ask for whole replies instead of streamed ones.
        #[arg(long)]
        no_stream: bool,
        /// Seconds one request may take.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
    },
    /// Generate scenarios from seeds, run each twice and check every invariant; failing seeds
    /// are shrunk and written out as scenario files.
    Sweep {
        /// How many seeds (the range `start..start+seeds`, before sharding).
        #[arg(long)]
        seeds: u64,
        /// The first seed.
        #[arg(long, default_value_t = 0)]
        start: u64,
        /// Run only the seeds with `seed % n == k`, written `k/n` (one shard per machine).
        #[arg(long, value_parser = Shard::parse)]
        shard: Option<Shard>,
        /// Worker threads (default: the available parallelism).
        #[arg(long)]
        jobs: Option<usize>,
        /// Where failing seeds are written as scenario files (mock models go to the suite
        /// root's `mock-models/`).
        #[arg(long, default_value = "scenarios/regressions")]
        out: PathBuf,
        /// Write failing seeds as generated, without shrinking them.
        #[arg(long)]
        no_shrink: bool,
        /// `text`, or `json` (one object per seed, then a summary, one per line).
        #[arg(long, default_value = "text", value_parser = ["text", "json"])]
        format: String,
    },
    /// Serve mock models on loopback as the providers they imitate (OpenAI Chat Completions at
    /// /v1/chat/completions, Anthropic Messages at /v1/messages, whole and streamed) until
    /// Ctrl-C. The first line printed is `listening on http://ADDRESS`.
    Serve {
        /// The mock-model file; it answers every request, whatever model the request names.
        #[arg(required_unless_present_any = ["models", "builtin"], conflicts_with_all = ["models", "builtin"])]
        mock: Option<PathBuf>,
        /// A directory of mock-model files instead: the request's `model` picks the file by its
        /// name (`wire-8k` for `wire-8k.toml`).
        #[arg(long, conflicts_with = "builtin")]
        models: Option<PathBuf>,
        /// A built-in mock model instead, by name (`wire-window-8k-english`; `ctxbed conform
        /// --list` shows which scenario uses which).
        #[arg(long)]
        builtin: Option<String>,
        /// The address to listen on; port 0 picks a free port.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// Accept a non-loopback --listen address.
        #[arg(long)]
        allow_remote: bool,
        /// Multiply every scripted latency (and a timeout turn's hang) by this; 0 answers at once.
        #[arg(long, default_value_t = 1.0)]
        time_scale: f64,
        /// Write every request and its outcome to this file as it happens, one canonical JSON line
        /// each (never through a symbolic link or onto a mock file; synced at exit).
        #[arg(long)]
        record: Option<PathBuf>,
        /// Leave usage figures out of OpenAI replies, as many local servers do.
        #[arg(long)]
        no_usage: bool,
        /// Reset the connection of these requests (1-based, every request counted), e.g. 2,5.
        #[arg(long, value_delimiter = ',')]
        reset: Vec<u64>,
        /// Cut the streamed answer of these requests halfway.
        #[arg(long, value_delimiter = ',')]
        cut_stream: Vec<u64>,
        /// The retry-after header of a 429, in seconds.
        #[arg(long, default_value_t = 1)]
        retry_after: u64,
    },
    /// Run wire scenarios against harnesses through their adapters and check what they sent to
    /// the model (see docs/peer-protocol.md). The wire suite is built in: this works from any
    /// directory.
    Conform(cli::wire::ConformArgs),
    /// Print the JSON Schema of a file format (`scenario`, `mock-model` or `wire`), for editors that
    /// complete and check TOML from a schema (the repository's .taplo.toml associates them).
    Schema {
        #[arg(value_parser = ["scenario", "mock-model", "wire"])]
        kind: String,
    },
    /// The reference adapter: ctxbed's own harness speaking the peer protocol on standard
    /// input and output (run by peers/ctxbed/run).
    #[command(hide = true)]
    Peer,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_diagnostics(cli.verbose);
    match cli.command {
        Command::Run {
            paths,
            bless,
            quiet,
            format,
        } => run_command(paths, bless, quiet, &format),
        Command::Show { scenario } => show(&scenario),
        Command::Check { paths, max_errors } => check(paths, max_errors),
        Command::Report { scenario, output } => report_command(&scenario, &output),
        Command::Explain {
            scenario,
            request,
            step,
        } => explain_command(&scenario, request, step),
        Command::Record {
            scenario,
            provider,
            base_url,
            model,
            api_key_env,
            output,
            no_stream,
            timeout,
        } => {
            let mut config = ProviderConfig::new(provider, base_url, model);
            config.api_key_env = api_key_env;
            config.stream = !no_stream;
            config.request_timeout = std::time::Duration::from_secs(timeout);
            record_command(&scenario, config, output)
        }
        Command::Sweep {
            seeds,
            start,
            shard,
            jobs,
            out,
            no_shrink,
            format,
        } => cli::sweep::sweep_command(
            SweepConfig {
                start,
                count: seeds,
                shard: shard.unwrap_or(Shard::ALL),
                jobs: jobs.unwrap_or_else(|| {
                    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
                }),
                out_dir: Some(out),
                shrink: !no_shrink,
            },
            format == "json",
        ),
        Command::Serve {
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
        } => {
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
            cli::wire::serve_command(mock, models, builtin, options)
        }
        Command::Conform(arguments) => cli::wire::conform_command(arguments),
        Command::Schema { kind } => match ctxbed::scenario::schema::by_kind(&kind)
            .or_else(|| (kind == "wire").then(ctxbed::conform::file::schema))
        {
            Some(schema) => {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&schema).unwrap_or_default()
                );
                ExitCode::SUCCESS
            }
            None => ExitCode::from(2),
        },
        Command::Peer => match ctxbed::conform::reference::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                errln!("ctxbed peer: {error}");
                ExitCode::FAILURE
            }
        },
    }
}

fn parse_provider(name: &str) -> Result<ProviderKind, String> {
    ProviderKind::parse(name)
        .ok_or_else(|| format!("`{name}` is not a provider; use openai or anthropic"))
}

fn record_command(
    path: &std::path::Path,
    config: ProviderConfig,
    output: Option<PathBuf>,
) -> ExitCode {
    let scenario = match load_or_report(path) {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
    let output = output.unwrap_or_else(|| {
        let stem = scenario.name.rsplit('/').next().unwrap_or("scenario");
        Layout::of(path).mock_model(&format!("{stem}-recorded"))
    });
    let Some(name) = output.file_stem().map(|s| s.to_string_lossy().into_owned()) else {
        errln!(
            "error: the output path {} has no file name",
            output.display()
        );
        return ExitCode::from(2);
    };
    let description = format!(
        "Recorded by `ctxbed record` from scenario {} against {} model `{}`",
        scenario.name,
        config.kind.as_str(),
        config.model
    );
    let recording = match record(&scenario, config, &name) {
        Ok(recording) => recording,
        Err(error) => {
            errln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let text = match mock_toml(&recording.script) {
        Ok(text) => format!("description = {}\n{text}", toml_string(&description)),
        Err(error) => {
            errln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty())
        && let Err(error) = std::fs::create_dir_all(parent)
    {
        errln!("error: cannot create {}: {error}", parent.display());
        return ExitCode::FAILURE;
    }
    if let Err(error) = std::fs::write(&output, text) {
        errln!("error: cannot write {}: {error}", output.display());
        return ExitCode::FAILURE;
    }
    let turns = &recording.script.turns;
    let errors = turns
        .iter()
        .filter(|turn| matches!(turn.action, ctxbed_sim::mock::TurnAction::Error(_)))
        .count();
    outln!(
        "recorded {} turn(s), {errors} of them errors, to {}",
        turns.len(),
        output.display()
    );
    outln!("replay: set `model = \"{name}\"` in a copy of the scenario and run it");
    ExitCode::SUCCESS
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

/// The scenario files under `paths` (default: `scenarios`), or the error to print: a missing
/// default directory says where ctxbed expects to run.
fn discover_or_explain(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>, ExitCode> {
    let defaulted = paths.is_empty();
    discover(&default_paths(paths)).map_err(|error| {
        errln!("error: {error}");
        if defaulted && error.kind() == std::io::ErrorKind::NotFound {
            errln!(
                "help: run ctxbed from a suite's root (the directory holding scenarios/, mock-models/ and golden/), \
                 or name scenario files or directories; the README's quick start makes one"
            );
        }
        ExitCode::from(2)
    })
}

fn run_command(paths: Vec<PathBuf>, bless: bool, quiet: bool, format: &str) -> ExitCode {
    let files = match discover_or_explain(paths) {
        Ok(files) => files,
        Err(code) => return code,
    };
    if bless && std::env::var_os("CI").is_some() {
        errln!(
            "error: --bless with CI set: CI never writes goldens; bless locally, review the diff, and commit"
        );
        return ExitCode::from(2);
    }
    let mode = if bless {
        GoldenMode::Bless
    } else {
        GoldenMode::Compare {
            write_new: std::env::var_os("CI").is_none(),
        }
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut reports = Vec::new();
    for file in &files {
        let report = run_file(file, mode);
        if report.verdict.is_failure() {
            failed += 1;
        } else {
            passed += 1;
        }
        match format {
            "json" => outln!("{}", ctxbed::output::scenario_json(&report)),
            "junit" => {}
            _ => print_report(&report.name, &report.path, &report.verdict, quiet),
        }
        reports.push(report);
    }
    match format {
        "json" => outln!("{}", ctxbed::output::run_summary_json(&reports)),
        "junit" => out!("{}", ctxbed::output::junit(&reports)),
        _ => outln!("\n{passed} passed, {failed} failed"),
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print_report(name: &str, path: &std::path::Path, verdict: &Verdict, quiet: bool) {
    match verdict {
        Verdict::Passed { requests, checks } => {
            if !quiet {
                outln!("ok       {name}  ({requests} requests, {checks} checks)");
            }
        }
        Verdict::Blessed {
            changed,
            failed_checks,
        } => {
            let what = if *changed { "blessed" } else { "unchanged" };
            outln!("{what:<8} {name}");
            for check in failed_checks {
                outln!("         {check}");
            }
        }
        Verdict::Failed { reasons } => {
            outln!("FAIL     {name}");
            for reason in reasons {
                for line in reason.lines() {
                    outln!("         {line}");
                }
            }
        }
        Verdict::Invalid { diagnostics } => {
            outln!("INVALID  {}", path.display());
            for diagnostic in diagnostics {
                for line in diagnostic.to_string().lines() {
                    outln!("         {line}");
                }
            }
        }
    }
}

/// Loads one scenario; on failure prints its diagnostics and returns exit code 2.
fn load_or_report(path: &std::path::Path) -> Result<Scenario, ExitCode> {
    load(path).map_err(|diagnostics| {
        for diagnostic in diagnostics {
            err!("{diagnostic}");
        }
        ExitCode::from(2)
    })
}

/// Loads and runs one scenario; on failure prints why and returns the exit code.
fn load_and_run(path: &std::path::Path) -> Result<(Scenario, RunOutput), ExitCode> {
    let scenario = load_or_report(path)?;
    match run(&scenario) {
        Ok(output) => Ok((scenario, output)),
        Err(error) => {
            errln!("error: {error}");
            Err(ExitCode::FAILURE)
        }
    }
}

fn report_command(path: &std::path::Path, output_path: &std::path::Path) -> ExitCode {
    let (scenario, output) = match load_and_run(path) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let page = report::html(&output, &scenario);
    if let Err(error) = std::fs::write(output_path, page) {
        errln!(
            "error: cannot write {}: {error}; choose another path with -o",
            output_path.display()
        );
        return ExitCode::FAILURE;
    }
    let requests = report::preparations(&output.trace, &scenario).len();
    outln!("wrote {} ({requests} requests)", output_path.display());
    if !output.expectations_passed() {
        outln!("note: some expectations failed; the page lists them at the end");
    }
    ExitCode::SUCCESS
}

fn explain_command(
    path: &std::path::Path,
    request: Option<usize>,
    step: Option<usize>,
) -> ExitCode {
    let (scenario, output) = match load_and_run(path) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let selector = match (request, step) {
        (Some(number), None) => Selector::Number(number),
        (Some(request), Some(step)) => Selector::InStep { step, request },
        (None, Some(_)) => {
            errln!("error: --step needs --request R (the step's R-th reasoning request)");
            return ExitCode::from(2);
        }
        (None, None) => {
            outln!(
                "requests of {} (explain one with --request N):",
                scenario.name
            );
            out!("{}", explain::index(&output.trace, &scenario));
            return ExitCode::SUCCESS;
        }
    };
    match explain::explain(&output.trace, &scenario, selector) {
        Ok(text) => {
            out!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            errln!("error: {error}");
            ExitCode::from(2)
        }
    }
}

fn show(path: &std::path::Path) -> ExitCode {
    let scenario = match load_or_report(path) {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
    match run(&scenario) {
        Ok(output) => {
            out!("{}", output.text);
            if output.expectations_passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            errln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn check(paths: Vec<PathBuf>, max_errors: usize) -> ExitCode {
    let files = match discover_or_explain(paths) {
        Ok(files) => files,
        Err(code) => return code,
    };
    let mut invalid = 0usize;
    for file in &files {
        if let Err(diagnostics) = load(file) {
            invalid += 1;
            // A blank line after each, as compilers do, so that errors read apart.
            for diagnostic in diagnostics.iter().take(max_errors) {
                outln!("{diagnostic}");
            }
            if diagnostics.len() > max_errors {
                let hidden = diagnostics.len() - max_errors;
                let plural = if hidden == 1 { "" } else { "s" };
                outln!(
                    "… and {hidden} more problem{plural} in {} (raise --max-errors to see them)\n",
                    file.display()
                );
            }
        }
    }
    outln!("{} valid, {invalid} invalid", files.len() - invalid);
    if invalid > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
