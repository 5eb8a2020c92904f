//! The `ctxbed` command line: a thin layer over `ctxbed::scenario`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use ctxbed::scenario::file::load;
use ctxbed::scenario::golden::GoldenMode;
use ctxbed::scenario::runner::run;
use ctxbed::scenario::suite::{Verdict, discover, run_file};

/// A deterministic context-management harness and conformance test-bed.
#[derive(Parser)]
#[command(name = "ctxbed", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            paths,
            bless,
            quiet,
        } => run_command(paths, bless, quiet),
        Command::Show { scenario } => show(&scenario),
        Command::Check { paths } => check(paths),
    }
}

fn default_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    }
}

fn run_command(paths: Vec<PathBuf>, bless: bool, quiet: bool) -> ExitCode {
    let files = match discover(&default_paths(paths)) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let mode = if bless {
        GoldenMode::Bless
    } else {
        GoldenMode::Compare {
            write_new: std::env::var_os("CI").is_none(),
        }
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    for file in &files {
        let report = run_file(file, mode);
        if report.verdict.is_failure() {
            failed += 1;
        } else {
            passed += 1;
        }
        print_report(&report.name, &report.path, &report.verdict, quiet);
    }
    println!("\n{passed} passed, {failed} failed");
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
                println!("ok       {name}  ({requests} requests, {checks} checks)");
            }
        }
        Verdict::Blessed {
            changed,
            failed_checks,
        } => {
            let what = if *changed { "blessed" } else { "unchanged" };
            println!("{what:<8} {name}");
            for check in failed_checks {
                println!("         {check}");
            }
        }
        Verdict::Failed { reasons } => {
            println!("FAIL     {name}");
            for reason in reasons {
                for line in reason.lines() {
                    println!("         {line}");
                }
            }
        }
        Verdict::Invalid { diagnostics } => {
            println!("INVALID  {}", path.display());
            for diagnostic in diagnostics {
                for line in diagnostic.to_string().lines() {
                    println!("         {line}");
                }
            }
        }
    }
}

fn show(path: &std::path::Path) -> ExitCode {
    let scenario = match load(path) {
        Ok(scenario) => scenario,
        Err(diagnostics) => {
            for diagnostic in diagnostics {
                eprint!("{diagnostic}");
            }
            return ExitCode::from(2);
        }
    };
    match run(&scenario) {
        Ok(output) => {
            print!("{}", output.text);
            if output.expectations_passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn check(paths: Vec<PathBuf>) -> ExitCode {
    let files = match discover(&default_paths(paths)) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let mut invalid = 0usize;
    for file in &files {
        if let Err(diagnostics) = load(file) {
            invalid += 1;
            for diagnostic in diagnostics {
                print!("{diagnostic}");
            }
        }
    }
    println!("{} valid, {invalid} invalid", files.len() - invalid);
    if invalid > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
