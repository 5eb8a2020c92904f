//! Sweep throughput: one batch of 100 seeds (generate, run twice, check every invariant), the
//! unit of `ctxbed sweep`, on one thread. Seeds per second is 100 divided by the time per
//! iteration; runs per second is twice that. Also one run of a fixed seed range without the
//! checks, to show what the checker adds.
//! `cargo bench -- --test` runs each once (CI smoke).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxbed::scenario::runner::run;
use ctxbed::sim::generate::generate;
use ctxbed::sim::sweep::check_seed;

/// Seeds per measured iteration: enough to average over the size classes the generator draws.
const SEEDS: u64 = 100;

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
    group.finish();
}

criterion_group!(benches, sweep);
criterion_main!(benches);
