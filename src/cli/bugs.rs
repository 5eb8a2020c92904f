//! `ctxbed bugs`: bug files run at the versions before and after their fix, each classified
//! (detected, missed, false alarm, not reproducible), with the figures and, on request, the page.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use crate::{write_err, write_out};
use ctxbed::bugs::{self, BugOptions, report};
use ctxbed::sweep::Shard;

/// `ctxbed bugs`'s arguments.
#[derive(Debug, clap::Args)]
pub struct BugsArgs {
    /// Bug files, or directories of them (default: `bugs`).
    pub paths: Vec<PathBuf>,
    /// The directory of adapters (`<dir>/<harness>/run`) and of the environment builder
    /// (`<dir>/env`).
    #[arg(long, default_value = "peers")]
    pub peers: PathBuf,
    /// Bugs run at a time (each runs its two versions one after the other).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub jobs: u64,
    /// Run only the bugs of shard `k/n` (the bugs sorted by file, every n-th from the k-th), for
    /// CI matrices: give every machine the same files and its own k.
    #[arg(long, value_parser = Shard::parse)]
    pub shard: Option<Shard>,
    /// Output: one line per bug (text), one JSON object per bug and a summary (json), or JUnit
    /// XML with one test case per bug (junit).
    #[arg(long, default_value = "text", value_parser = ["text", "json", "junit"])]
    pub format: String,
    /// Write the page (per bug, the verdicts before and after and the failing request's line)
    /// to this file, as docs/bugs.md is.
    #[arg(long)]
    pub page: Option<PathBuf>,
    /// Where each run's adapter log, trace and requests go.
    #[arg(long, default_value = "ctxbed-bugs")]
    pub logs: PathBuf,
}

/// The bug files `arguments` name, in this shard, loaded (every file's mistakes reported).
fn chosen(arguments: &BugsArgs, paths: &[PathBuf]) -> Result<Vec<bugs::Bug>, ExitCode> {
    let files = match bugs::discover(paths) {
        Ok(files) if files.is_empty() => {
            errln!("error: no bug files under {}", shown(paths));
            return Err(ExitCode::from(2));
        }
        Ok(files) => files,
        Err(error) => {
            errln!("error: {error}");
            return Err(ExitCode::from(2));
        }
    };
    let shard = arguments.shard.unwrap_or(Shard::ALL);
    let files: Vec<PathBuf> = files
        .into_iter()
        .enumerate()
        .filter(|(index, _)| *index as u64 % shard.total == shard.index)
        .map(|(_, file)| file)
        .collect();
    bugs::load_all(&files).map_err(|problems| {
        for diagnostics in problems {
            errln!("{diagnostics}");
        }
        ExitCode::from(2)
    })
}

/// Runs `ctxbed bugs`.
pub fn bugs_command(arguments: BugsArgs) -> ExitCode {
    let paths = if arguments.paths.is_empty() {
        vec![PathBuf::from("bugs")]
    } else {
        arguments.paths.clone()
    };
    let bugs = match chosen(&arguments, &paths) {
        Ok(bugs) => bugs,
        Err(code) => return code,
    };
    let options = BugOptions {
        peers_dir: arguments.peers.clone(),
        logs_dir: arguments.logs.clone(),
        ctxbed_bin: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("ctxbed")),
    };
    super::conform::listen_for_stop();
    let started = Instant::now();
    let text = arguments.format == "text";
    let json = arguments.format == "json";
    let done = move |run: &bugs::BugRun| {
        if text {
            outln!("{}", report::text_line(run));
        } else if json {
            outln!("{}", report::json_line(run));
        }
    };
    let jobs = usize::try_from(arguments.jobs).unwrap_or(1);
    let runs = bugs::run_all(&bugs, jobs, &options, &done);
    ctxbed::conform::release_adapters();
    let figures = report::Figures::of(&runs);
    let seconds = started.elapsed().as_secs_f64();
    match arguments.format.as_str() {
        "json" => outln!("{}", report::json_summary(&figures, seconds)),
        "junit" => out!("{}", report::junit(&runs)),
        _ => outln!("{} in {seconds:.0} s", figures.line()),
    }
    if let Some(page) = &arguments.page {
        let command = format!("ctxbed bugs {}", shown(&paths));
        if let Err(error) = std::fs::write(page, report::page(&runs, &command)) {
            errln!("error: cannot write {}: {error}", page.display());
            return ExitCode::from(2);
        }
    }
    if runs.len() < bugs.len() {
        errln!("interrupted: {} of {} bugs run", runs.len(), bugs.len());
        return ExitCode::from(130);
    }
    if runs.iter().any(|run| run.classification.fails()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}
