//! The performance suite: every figure of `BENCHMARKS.md`, from one command.
//!
//! ```sh
//! cargo bench --bench suite                 # everything, then the summary tables on stderr
//! cargo bench --bench suite -- estimation   # one part (a criterion filter)
//! cargo bench --bench suite -- counting     # exact counting's cost per byte, 64 KiB to 1 MiB
//! cargo bench --bench suite -- --test       # smoke: each benchmark once, small inputs
//! cargo test --bench suite -- --test        # the same smoke, unoptimised (as CI runs it)
//! ```
//!
//! - [`estimation`]: the approximate estimator on each family of the calibration corpus's
//!   held-out half (`tests/data/estimator/calibration/held-out/`): throughput against exact BPE
//!   (`bpe-openai`), and error against exact o200k and cl100k computed in the same run, beside
//!   the simple ratios (chars / 2.5, LangChain's chars / 4, bytes / 4).
//! - [`preparation`]: one reasoning step's `context::prepare` over histories of 100 to 100,000
//!   messages with 0, 10 and 100 source blocks, counts cached as in a run, next to the cost
//!   of cloning the history (what building the request's message vector costs at least).
//! - [`agent`]: one whole `HarnessAgent::call` over the same histories, with and without the
//!   session log: what the harness does around `prepare`.
//! - [`pipeline`]: the compaction cut and the aggregate prune, offloading a 10 MB tool result,
//!   and one whole scenario run on the simulator.
//! - [`counting`]: exact counting of long runs of one class of characters (digits, spaces,
//!   punctuation, ideographs, ...) at sizes from 64 KiB to 1 MiB: the cost per byte stays flat.
//!
//! Each part records the timings criterion takes and prints, at the end, a table with the
//! important figures as ratios against a reference measured in the same run (an estimator's
//! speed as a multiple of exact BPE, a step over N messages against one over 100), since on a
//! shared machine ratios travel better than absolute times. In `--test` mode the huge inputs
//! are skipped and no table is printed.

mod agent;
mod counting;
mod estimation;
mod pipeline;
mod preparation;
mod record;

use std::time::Duration;

use criterion::Criterion;

fn main() {
    let smoke_test = std::env::args().any(|argument| argument == "--test");
    let parts = Parts::from_args();
    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    let estimation = parts
        .wanted("estimation")
        .then(|| estimation::run(&mut criterion));
    let preparation = parts
        .wanted("prepare_step")
        .then(|| preparation::run(&mut criterion, smoke_test));
    let agent_steps = parts
        .wanted("agent_step")
        .then(|| agent::run(&mut criterion, smoke_test));
    let pipeline = pipeline::run(&mut criterion, &parts, smoke_test);
    let counting = parts
        .wanted("counting")
        .then(|| counting::run(&mut criterion, smoke_test));
    criterion.final_summary();
    if !smoke_test {
        estimation.iter().for_each(estimation::Estimation::print);
        preparation.iter().for_each(preparation::Preparation::print);
        agent_steps.iter().for_each(agent::AgentSteps::print);
        pipeline.print();
        counting.iter().for_each(counting::Counting::print);
    }
}

/// Which parts a criterion filter (the first argument that is not a flag) can match, so
/// that a filtered run skips the setup of the others (100,000-message histories, 10 MB texts).
pub struct Parts {
    filter: Option<String>,
}

impl Parts {
    fn from_args() -> Self {
        // Criterion's options that take a value; the value is not a filter.
        const VALUE_OPTIONS: [&str; 14] = [
            "--profile-time",
            "--warm-up-time",
            "--measurement-time",
            "--sample-size",
            "--save-baseline",
            "--baseline",
            "--baseline-lenient",
            "--load-baseline",
            "--output-format",
            "--plotting-backend",
            "--noise-threshold",
            "--confidence-level",
            "--significance-level",
            "--nresamples",
        ];
        let mut arguments = std::env::args().skip(1);
        let mut filter = None;
        while let Some(argument) = arguments.next() {
            if VALUE_OPTIONS.contains(&argument.as_str()) {
                arguments.next();
            } else if !argument.starts_with('-') {
                filter = Some(argument);
            }
        }
        Parts { filter }
    }

    /// True when benchmarks named `prefix/...` may match the filter.
    pub fn wanted(&self, prefix: &str) -> bool {
        match &self.filter {
            None => true,
            Some(filter) => filter.starts_with(prefix) || prefix.starts_with(filter.as_str()),
        }
    }
}
