//! `ctxbed sweep`: the command's run, its progress line (on a terminal only) and its report.

use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::seed_times::SeedTimes;
use ctxbed::sweep::{Progress, SweepConfig, SweepReport, sweep};

/// Wall time is read here, in the CLI only: the progress line and the throughput.
pub fn sweep_command(config: SweepConfig, json: bool) -> ExitCode {
    let seed_max = u64::try_from(i64::MAX).unwrap_or(u64::MAX);
    if config.start.saturating_add(config.count) > seed_max {
        errln!("error: seeds must stay at or below {seed_max} (scenario files hold signed seeds)");
        return ExitCode::from(2);
    }
    let started = std::time::Instant::now();
    // The progress bar is for a person watching a terminal; a log file or a pipe gets none.
    let bar = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let bar = indicatif::ProgressBar::new(config.count);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} seeds, {msg} failing, {per_sec}, {eta} left",
        ) {
            bar.set_style(style);
        }
        bar.set_message("0");
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let times = std::sync::Mutex::new(SeedTimes::default());
    thread_local! {
        /// When this worker thread last finished a seed: a seed's time runs from there.
        static SEED_STARTED: std::cell::Cell<Option<std::time::Instant>> =
            const { std::cell::Cell::new(None) };
    }
    let progress = |p: Progress| {
        let now = std::time::Instant::now();
        let seed_started = SEED_STARTED.get().unwrap_or(started);
        let micros =
            u64::try_from(now.duration_since(seed_started).as_micros()).unwrap_or(u64::MAX);
        times
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .record(p.seed, micros);
        bar.set_length(p.total);
        bar.set_position(p.done);
        bar.set_message(p.failing.to_string());
        // The next seed starts after this report, whatever it waited for.
        SEED_STARTED.set(Some(std::time::Instant::now()));
    };
    let report = sweep(&config, &progress);
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if json {
        for line in ctxbed::output::sweep_json_lines(&config, &report, seconds) {
            outln!("{line}");
        }
    } else {
        print_sweep(&config, &report, seconds);
        print_seed_times(
            &times
                .into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
    }
    if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// What a seed cost: generating it, two runs, the checks, and for a failing seed its shrinking.
fn print_seed_times(times: &SeedTimes) {
    let (Some(mean), Some(median), Some(p90), Some(p99)) = (
        times.mean_micros(),
        times.percentile_micros(50.0),
        times.percentile_micros(90.0),
        times.percentile_micros(99.0),
    ) else {
        return;
    };
    let ms = |micros: f64| format!("{:.2} ms", micros / 1000.0);
    outln!(
        "per seed (generate, run twice, check; one thread): mean {}, median {}, 90th percentile {}, 99th {}",
        ms(mean),
        ms(median as f64),
        ms(p90 as f64),
        ms(p99 as f64)
    );
    let slowest: Vec<String> = times
        .slowest()
        .iter()
        .map(|&(seed, micros)| format!("{seed} ({})", ms(micros as f64)))
        .collect();
    outln!(
        "slowest seeds: {} (rerun one with `ctxbed sweep --start <seed> --seeds 1`)",
        slowest.join(", ")
    );
}

fn print_sweep(config: &SweepConfig, report: &SweepReport, seconds: f64) {
    for failure in &report.failures {
        outln!("FAIL     seed {}", failure.seed);
        for violation in &failure.violations {
            outln!("         {violation}");
        }
        match (&failure.file, &failure.not_written) {
            (Some(file), _) => {
                let shrunk = if config.shrink {
                    format!("shrunk in {} checks, ", failure.shrink_runs)
                } else {
                    String::new()
                };
                let reproduced = if failure.reproduced {
                    "reproduces"
                } else {
                    "DOES NOT reproduce"
                };
                outln!(
                    "         written: {} ({shrunk}{reproduced})",
                    file.display()
                );
                outln!("         rerun: ctxbed run {}", file.display());
            }
            (None, Some(reason)) => outln!("         not written: {reason}"),
            (None, None) => {}
        }
    }
    let runs = report.runs;
    let seeds_per_second = runs as f64 / seconds.max(1e-9);
    outln!(
        "\n{runs} seeds (two runs each) in {seconds:.1} s: {seeds_per_second:.0} seeds/s ({:.0} runs/s), {} failing",
        2.0 * seeds_per_second,
        report.failures.len()
    );
    for (kind, count) in &report.violations_by_kind {
        outln!("  {:<24} {count:>6}  ({})", kind.as_str(), kind.invariant());
    }
}
