//! Token estimation on the hand-written corpus (`tests/data/estimator/`): accuracy first, then
//! speed, for exact o200k, the reference ratio (chars / 2.5) and the approximate estimator.
//!
//! Before measuring, a table gives each estimator's error against exact o200k per kind of
//! content, with LangChain's documented chars / 4 as a second baseline. After measuring, a
//! table gives each estimator's throughput and its speed as a multiple of exact o200k in the
//! same run. `cargo bench --bench estimation -- --test` runs each benchmark once (CI smoke)
//! and skips the speed table.

#[path = "../tests/support/estimator_corpus.rs"]
mod estimator_corpus;

use std::cell::RefCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use ctxbed::tokens::{
    ApproximateEstimator, ExactEstimator, RatioEstimator, TokenEstimator, Vocabulary,
};
use estimator_corpus::{self as corpus, Sample};

/// Each kind's text is repeated to at least this size, so one measurement is a long scan
/// rather than call overhead.
const MEASURED_BYTES_MIN: usize = 256 * 1024;

/// Samples criterion takes per benchmark; the speed table averages the last this many.
const SAMPLE_COUNT: usize = 30;

fn main() {
    let samples = corpus::load();
    let categories = corpus::categories(&samples);
    print_accuracy(&samples, &categories);

    let smoke_test = std::env::args().any(|argument| argument == "--test");
    let mut criterion = Criterion::default().configure_from_args();
    let mut speeds = Vec::new();
    for category in &categories {
        let text = repeated(&corpus::joined(&samples, category));
        speeds.push((*category, measure(&mut criterion, category, &text)));
    }
    criterion.final_summary();
    if !smoke_test {
        print_speeds(&speeds);
    }
}

fn print_accuracy(samples: &[Sample], categories: &[&str]) {
    let exact = ExactEstimator::new(Vocabulary::O200k);
    eprintln!("error against exact o200k (negative: under-counts)");
    eprintln!(
        "  {:<14} {:>5} {:>7} {:>9} {:>11} {:>10} {:>8}",
        "content", "files", "o200k", "approx", "worst file", "chars/2.5", "chars/4"
    );
    for category in categories {
        let text = corpus::joined(samples, category);
        let truth = exact.text_tokens(&text);
        let error = |estimate: u64| corpus::percent(corpus::error_permille(estimate, truth));
        let in_category: Vec<&Sample> = samples
            .iter()
            .filter(|sample| sample.category == *category)
            .collect();
        let worst = in_category
            .iter()
            .map(|sample| {
                let estimate = ApproximateEstimator.text_tokens(&sample.text);
                corpus::error_permille(estimate, exact.text_tokens(&sample.text))
            })
            .max_by_key(|permille| permille.abs())
            .unwrap_or(0);
        eprintln!(
            "  {:<14} {:>5} {:>7} {:>9} {:>11} {:>10} {:>8}",
            category,
            in_category.len(),
            truth,
            error(ApproximateEstimator.text_tokens(&text)),
            corpus::percent(worst),
            error(RatioEstimator.text_tokens(&text)),
            error(corpus::chars_over_four(&text)),
        );
    }
}

fn repeated(text: &str) -> String {
    let mut out = String::with_capacity(MEASURED_BYTES_MIN + text.len());
    while out.len() < MEASURED_BYTES_MIN {
        out.push_str(text);
        out.push_str("\n\n");
    }
    out
}

/// Bytes per second of each estimator, from the samples criterion timed.
struct Speeds {
    exact: f64,
    ratio: f64,
    approx: f64,
}

fn measure(criterion: &mut Criterion, category: &str, text: &str) -> Speeds {
    let exact = ExactEstimator::new(Vocabulary::O200k);
    let mut group = criterion.benchmark_group(format!("estimation/{category}"));
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.sample_size(SAMPLE_COUNT);
    let estimators: [(&str, &dyn TokenEstimator); 3] = [
        ("exact-o200k", &exact),
        ("ratio", &RatioEstimator),
        ("approx", &ApproximateEstimator),
    ];
    let mut bytes_per_second = [0.0; 3];
    for (index, (name, estimator)) in estimators.into_iter().enumerate() {
        let timings: RefCell<Vec<(u64, Duration)>> = RefCell::new(Vec::new());
        group.bench_function(name, |bencher| {
            bencher.iter_custom(|iterations| {
                let start = Instant::now();
                for _ in 0..iterations {
                    black_box(estimator.text_tokens(black_box(text)));
                }
                let elapsed = start.elapsed();
                timings.borrow_mut().push((iterations, elapsed));
                elapsed
            })
        });
        bytes_per_second[index] = throughput(&timings.borrow(), text.len());
    }
    group.finish();
    let [exact, ratio, approx] = bytes_per_second;
    Speeds {
        exact,
        ratio,
        approx,
    }
}

/// Total bytes over total time of the last `SAMPLE_COUNT` timings (warm-up comes first).
fn throughput(timings: &[(u64, Duration)], text_bytes: usize) -> f64 {
    let measured = &timings[timings.len().saturating_sub(SAMPLE_COUNT)..];
    let iterations: u64 = measured.iter().map(|(count, _)| count).sum();
    let seconds: f64 = measured.iter().map(|(_, time)| time.as_secs_f64()).sum();
    if seconds == 0.0 {
        return 0.0;
    }
    iterations as f64 * text_bytes as f64 / seconds
}

fn print_speeds(speeds: &[(&str, Speeds)]) {
    // A benchmark left out by a filter has no samples; it shows as a dash.
    let rate = |bytes_per_second: f64| match bytes_per_second {
        0.0 => "-".to_string(),
        rate if rate >= 1e9 => format!("{:.2} GB/s", rate / 1e9),
        rate => format!("{:.0} MB/s", rate / 1e6),
    };
    let multiple = |bytes_per_second: f64, exact: f64| match (bytes_per_second, exact) {
        (0.0, _) | (_, 0.0) => "-".to_string(),
        (rate, exact) => format!("{:.0}×", rate / exact),
    };
    eprintln!("\nthroughput (criterion samples), and speed as a multiple of exact o200k");
    eprintln!(
        "  {:<14} {:>11} {:>11} {:>8} {:>11} {:>8}",
        "content", "exact o200k", "chars/2.5", "× exact", "approx", "× exact"
    );
    for (category, speed) in speeds {
        eprintln!(
            "  {:<14} {:>11} {:>11} {:>8} {:>11} {:>8}",
            category,
            rate(speed.exact),
            rate(speed.ratio),
            multiple(speed.ratio, speed.exact),
            rate(speed.approx),
            multiple(speed.approx, speed.exact),
        );
    }
}
