//! Benchmarks of the foundation: token estimation per generated content kind (the ratio and
//! approximate estimates against exact o200k counting in the same run) and one whole scenario
//! run on the simulator. `benches/estimation.rs` measures the estimators on real text.
//!
//! Before measuring, the per-kind error of both estimates against o200k is printed, so
//! speed and accuracy are read side by side. `cargo bench -- --test` runs each once (CI smoke).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxbed::scenario::file::load;
use ctxbed::scenario::runner::run;
use ctxbed::sim::text::{TextKind, generate_text};
use ctxbed::tokens::{
    ApproximateEstimator, ExactEstimator, RatioEstimator, TokenEstimator, Vocabulary,
};

const SAMPLE_CHARS: usize = 64 * 1024;

fn estimation(c: &mut Criterion) {
    let exact = ExactEstimator::new(Vocabulary::O200k);
    let ratio = RatioEstimator;
    let approx = ApproximateEstimator;
    eprintln!("estimates vs exact o200k on {SAMPLE_CHARS} generated characters:");
    for kind in TextKind::ALL {
        let text = generate_text(kind, SAMPLE_CHARS, 7);
        let truth = exact.text_tokens(&text) as f64;
        let error = |estimate: u64| (estimate as f64 - truth) / truth * 100.0;
        eprintln!(
            "  {:<6} exact {:>7}  ratio {:+6.1}%  approx {:+6.1}%",
            kind.as_str(),
            truth,
            error(ratio.text_tokens(&text)),
            error(approx.text_tokens(&text)),
        );
        let mut group = c.benchmark_group(format!("estimate/{}", kind.as_str()));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function("exact-o200k", |b| {
            b.iter(|| exact.text_tokens(black_box(&text)))
        });
        group.bench_function("ratio", |b| b.iter(|| ratio.text_tokens(black_box(&text))));
        group.bench_function("approx", |b| {
            b.iter(|| approx.text_tokens(black_box(&text)))
        });
        group.finish();
    }
}

fn scenario(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tools/tool-then-reply.toml");
    let Ok(scenario) = load(&path) else {
        panic!("the benchmark scenario {} loads", path.display());
    };
    c.bench_function("scenario/tools/tool-then-reply", |b| {
        b.iter(|| run(black_box(&scenario)).map(|output| output.text.len()))
    });
}

criterion_group!(benches, estimation, scenario);
criterion_main!(benches);
