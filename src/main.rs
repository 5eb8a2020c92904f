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
use ctxbed::sweep::{Shard, SweepConfig};

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
    Record(cli::record::RecordArgs),
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
    /// /v1/chat/completions, OpenAI Responses at /v1/responses, Anthropic Messages at
    /// /v1/messages, whole and streamed) until Ctrl-C. The first line printed is `listening on http://ADDRESS`.
    Serve(cli::serve::ServeArgs),
    /// Run wire scenarios against harnesses through their adapters and check what they sent to
    /// the model (see docs/peer-protocol.md). The wire suite is built in: this works from any
    /// directory.
    Conform(cli::conform::ConformArgs),
    /// Replay real harness bugs (bug files, docs/bug-format.md): each bug's wire scenarios at the
    /// versions before and after its fix, classified as detected, missed, false alarm or not
    /// reproducible.
    Bugs(cli::bugs::BugsArgs),
    /// The wire rules a record written by `ctxbed serve --record` breaks (those that need no
    /// scenario: window, pairing, system, duplicate_result, count_tokens).
    Violations(cli::violations::ViolationsArgs),
    /// Print the JSON Schema of a file format (`scenario`, `mock-model` or `wire`), for editors that
    /// complete and check TOML from a schema (the repository's .taplo.toml associates them).
    Schema {
        #[arg(value_parser = ["scenario", "mock-model", "wire", "bug"])]
        kind: String,
    },
    /// The reference adapter: ctxbed's own harness speaking the peer protocol on standard
    /// input and output (run by peers/ctxbed/run).
    #[command(hide = true)]
    Peer,
}

fn main() -> ExitCode {
    // The stop signals are held until `serve` has its handlers; every other command lets them
    // go as soon as the arguments are parsed.
    let held = cli::signals::hold();
    let cli = Cli::parse();
    let held = matches!(cli.command, Command::Serve(_)).then_some(held);
    init_diagnostics(cli.verbose);
    match cli.command {
        Command::Run {
            paths,
            bless,
            quiet,
            format,
        } => cli::run::run_command(paths, bless, quiet, &format),
        Command::Show { scenario } => cli::show::show(&scenario),
        Command::Check { paths, max_errors } => cli::check::check(paths, max_errors),
        Command::Report { scenario, output } => cli::report::report_command(&scenario, &output),
        Command::Explain {
            scenario,
            request,
            step,
        } => cli::explain::explain_command(&scenario, request, step),
        Command::Record(arguments) => cli::record::record_from(arguments),
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
        Command::Serve(arguments) => cli::serve::serve_from(arguments, held),
        Command::Conform(arguments) => cli::conform::conform_command(arguments),
        Command::Bugs(arguments) => cli::bugs::bugs_command(arguments),
        Command::Violations(arguments) => cli::violations::violations_command(arguments),
        Command::Schema { kind } => match ctxbed::scenario::format::schema::by_kind(&kind)
            .or_else(|| (kind == "wire").then(ctxbed::conform::file::schema))
            .or_else(|| (kind == "bug").then(ctxbed::bugs::schema))
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

/// The command lines of the pages' `commands` examples, parsed by this binary's own parser.
#[cfg(test)]
#[allow(dead_code)]
#[path = "cli/doc_lines.rs"]
mod doc_lines;

#[cfg(test)]
mod doc_commands {
    use clap::Parser as _;

    use super::Cli;
    use super::doc_lines::{all_blocks, command_lines};

    /// The arguments of a line that runs ctxbed, with a shell variable given a value.
    fn ctxbed_args(line: &str) -> Option<Vec<String>> {
        let rest = line
            .strip_prefix("ctxbed ")
            .or_else(|| line.strip_prefix("cargo run --release -- "))?;
        let words = shell_words(&rest.replace("$k", "1"));
        Some(std::iter::once("ctxbed".to_string()).chain(words).collect())
    }

    /// Splits on whitespace, keeping a double-quoted run as one word.
    fn shell_words(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '"' => quoted = !quoted,
                c if c.is_whitespace() && !quoted => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        words
    }

    #[test]
    fn every_ctxbed_command_in_the_pages_parses() {
        let mut parsed = 0;
        let mut failures = Vec::new();
        for block in all_blocks() {
            let commands = block
                .marker
                .as_deref()
                .is_some_and(|marker| marker.starts_with("example: commands"));
            if !commands {
                continue;
            }
            for line in command_lines(&block.text) {
                let Some(args) = ctxbed_args(&line) else {
                    continue;
                };
                parsed += 1;
                if let Err(error) = Cli::try_parse_from(&args) {
                    failures.push(format!("{}: `{line}`:\n{error}", block.at()));
                }
            }
        }
        assert!(parsed >= 15, "only {parsed} command lines found");
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_command_the_parser_refuses_is_caught() {
        let args = ctxbed_args("ctxbed sweep --seedz 10").expect("a ctxbed line");
        assert!(Cli::try_parse_from(&args).is_err());
        let args = ctxbed_args("ctxbed conform --adapter \"python my.py\"").expect("a line");
        assert_eq!(args, ["ctxbed", "conform", "--adapter", "python my.py"]);
    }
}
