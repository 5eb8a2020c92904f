//! Sweep throughput: one batch of 100 seeds (generate, run twice, check every invariant), the
//! unit of `ctxbed sweep`, on one thread. Seeds per second is 100 divided by the time per
//! iteration; runs per second is twice that. Also one run of a fixed seed range without the
//! checks, to show what the checker adds, and `conformance`: one run of every hand-written
//! scenario under `scenarios/` that runs in process (no network), the scenarios users write.
//!
//! `reference` is a fixed workload the simulator does not touch (exact o200k counting and
//! SHA-256 of generated text): on a shared machine, compare the ratio of a sweep figure to
//! `reference` measured in the same run, not raw times across runs.
//! `cargo bench -- --test` runs each once (a smoke test; CI runs it unoptimised, with
//! `cargo test --bench sweep -- --test`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxbed::generate::generate;
use ctxbed::scenario::check::outcome::run;
use ctxbed::scenario::format::file::load;
use ctxbed::suite::discover;
use ctxbed::sweep::check_seed;
use ctxbed_harness::context::manifest::content_hash;
use ctxbed_harness::tokens::{ExactEstimator, TokenEstimator, Vocabulary};
use ctxbed_sim::text::{TextKind, generate_text};

/// The allocator of the `ctxbed` binary, so the figures are those of `ctxbed sweep`.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Seeds per measured iteration: enough to average over the size classes the generator draws.
const SEEDS: u64 = 100;

/// Characters of each text kind the reference workload counts.
const REFERENCE_CHARS: usize = 20_000;

fn sweep(c: &mut Criterion) {
    let mut group = c.benchmark_group("sweep");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(SEEDS));
    group.bench_function("check_seed", |b| {
        b.iter(|| {
            for seed in 0..SEEDS {
                black_box(check_seed(black_box(seed)));
            }
        });
    });
    let scenarios: Vec<_> = (0..SEEDS).map(generate).collect();
    group.bench_function("run_once", |b| {
        b.iter(|| {
            for scenario in &scenarios {
                black_box(run(black_box(scenario)).expect("a generated scenario runs"));
            }
        });
    });
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let files = discover(&[root]).expect("the scenario suite is readable");
    let written: Vec<_> = files
        .iter()
        .filter_map(|path| load(path).ok())
        .filter(|scenario| scenario.network.is_none())
        .collect();
    assert!(!written.is_empty(), "the suite holds in-process scenarios");
    group.throughput(Throughput::Elements(written.len() as u64));
    group.bench_function("conformance", |b| {
        b.iter(|| {
            for scenario in &written {
                black_box(run(black_box(scenario)).expect("a suite scenario runs"));
            }
        });
    });
    group.finish();

    let texts: Vec<String> = [
        TextKind::Prose,
        TextKind::Code,
        TextKind::Json,
        TextKind::Log,
    ]
    .into_iter()
    .map(|kind| generate_text(kind, REFERENCE_CHARS, 1))
    .collect();
    let exact = ExactEstimator::new(Vocabulary::O200k);
    let mut reference = c.benchmark_group("sweep");
    reference.sample_size(20);
    reference.bench_function("reference", |b| {
        b.iter(|| {
            for text in &texts {
                black_box(exact.text_tokens(black_box(text)));
                black_box(content_hash(black_box(text.as_bytes())));
            }
        });
    });
    reference.finish();
}

criterion_group!(benches, sweep);
criterion_main!(benches);
