//! The wire commands: `ctxbed serve` (mock models on loopback) and `ctxbed conform` (wire
//! scenarios against harnesses through their adapters).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::conform::{self, ConformOptions, matrix, report};
use ctxbed::scenario::golden::{GoldenMode, GoldenOutcome};

/// Worker threads of `ctxbed serve`'s runtime.
const SERVE_WORKERS: usize = 4;

pub fn serve_command(
    mock: Option<PathBuf>,
    dir: Option<PathBuf>,
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
    let models = match (mock, dir) {
        (Some(path), _) => Models::load_file(&path, &options),
        (None, Some(dir)) => Models::load_dir(&dir, &options),
        (None, None) => unreachable!("clap requires a mock file or --models"),
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
async fn stop_signal() {
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

/// Sets [`conform::INTERRUPTED`] on Ctrl-C or SIGTERM, from a thread of its own, so a signal
/// between two runs is not lost; the running adapter is then killed by its run.
fn listen_for_stop() {
    let spawned = std::thread::Builder::new()
        .name("ctxbed-stop".into())
        .spawn(|| {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(stop_signal());
            conform::INTERRUPTED.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    if let Err(error) = spawned {
        errln!("warning: Ctrl-C will not stop adapters cleanly: {error}");
    }
}

/// Every adapter directory under `peers` (one holding an executable `run`), sorted, with the
/// reference adapter first.
fn every_adapter(peers: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(peers)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("run").is_file())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.sort_by_key(|name| name != "ctxbed");
    names
}

pub fn conform_command(
    paths: Vec<PathBuf>,
    harnesses: Vec<String>,
    peers: PathBuf,
    logs: PathBuf,
    bless: bool,
    strict: bool,
    matrix_path: Option<PathBuf>,
) -> ExitCode {
    let paths = if paths.is_empty() {
        vec![PathBuf::from("scenarios/wire")]
    } else {
        paths
    };
    let files = match ctxbed::suite::discover(&paths) {
        Ok(files) if !files.is_empty() => files,
        Ok(_) => {
            errln!(
                "error: no wire scenario (*.toml) under {}",
                paths[0].display()
            );
            return ExitCode::from(2);
        }
        Err(error) => {
            errln!(
                "error: {error}; run ctxbed conform from the suite root, or name the wire scenarios"
            );
            return ExitCode::from(2);
        }
    };
    let harnesses = if harnesses.is_empty() {
        every_adapter(&peers)
    } else {
        harnesses
    };
    if harnesses.is_empty() {
        errln!(
            "error: no adapter in {} (a directory with an executable `run`); name one with --harness",
            peers.display()
        );
        return ExitCode::from(2);
    }
    for harness in &harnesses {
        if !peers.join(harness).join("run").is_file() {
            errln!(
                "error: {} has no adapter `{harness}` (expected {}); adapters: {}",
                peers.display(),
                peers.join(harness).join("run").display(),
                every_adapter(&peers).join(", ")
            );
            return ExitCode::from(2);
        }
    }
    if bless && std::env::var_os("CI").is_some() {
        errln!(
            "error: --bless with CI set: CI never writes goldens; bless locally, review the traces, and commit"
        );
        return ExitCode::from(2);
    }
    let ctxbed_bin = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("ctxbed"));
    let peers_dir = std::path::absolute(&peers).unwrap_or(peers);
    let options = ConformOptions {
        peers_dir,
        logs_dir: logs,
        ctxbed_bin,
        mode: if bless {
            GoldenMode::Bless
        } else {
            GoldenMode::Compare {
                write_new: std::env::var_os("CI").is_none(),
            }
        },
    };
    listen_for_stop();
    let started = std::time::Instant::now();
    let mut reports = Vec::new();
    for file in &files {
        for harness in &harnesses {
            if conform::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let report = conform::run_one(file, harness, &options);
            out!("{}", report::describe(&report, strict));
            reports.push(report);
        }
    }
    let elapsed = started.elapsed();
    let failed = reports.iter().filter(|r| !r.ok(strict)).count();
    let count =
        |keep: &dyn Fn(&conform::CellReport) -> bool| reports.iter().filter(|r| keep(r)).count();
    let passed = count(&|r| r.cell == conform::Cell::Pass && r.ok(strict));
    let pinned = count(&|r| matches!(r.cell, conform::Cell::Fail { .. }) && r.ok(strict));
    let not_applicable = count(&|r| matches!(r.cell, conform::Cell::NotApplicable { .. }));
    let new = count(&|r| matches!(r.golden_outcome, Some(GoldenOutcome::Missing { .. })));
    outln!(
        "{} runs ({} scenarios x {} harnesses): {passed} passed, {pinned} failing as their goldens pin, {} failed or changed, {new} new (no golden yet), {not_applicable} not applicable, in {:.0} s",
        reports.len(),
        files.len(),
        harnesses.len(),
        failed - new,
        elapsed.as_secs_f64()
    );
    if let Some(path) = matrix_path {
        let absolute = |path: &std::path::Path| {
            std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
        };
        let page_dir = absolute(path.parent().unwrap_or(std::path::Path::new(".")));
        // A run without a golden links to the trace written for review, where there is one.
        let trace = |report: &conform::CellReport| match &report.golden_outcome {
            Some(GoldenOutcome::Missing {
                new_file: Some(new_file),
            }) => absolute(new_file),
            _ => absolute(&report.golden),
        };
        let markdown = matrix::markdown(&reports, &harnesses, &page_dir, trace, elapsed);
        let html = matrix::html(&reports, &harnesses, &page_dir, trace);
        for (target, text) in [
            (path.clone(), markdown),
            (path.with_extension("html"), html),
        ] {
            if let Err(error) = std::fs::write(&target, text) {
                errln!("error: cannot write {}: {error}", target.display());
                return ExitCode::FAILURE;
            }
        }
        outln!("matrix written to {} (and .html)", path.display());
    }
    if conform::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed) {
        errln!("interrupted: the adapter running was stopped, and no further run started");
        return ExitCode::from(130);
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
