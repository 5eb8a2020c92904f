//! Every estimator on each kind of content: throughput, and error against exact o200k.
//!
//! The corpus is `tests/data/estimator/` (hand-written, per kind of content); each kind's text
//! is repeated to at least [`MEASURED_BYTES_MIN`], so one iteration is a long scan rather than
//! call overhead. The estimators, each counting one text:
//!
//! - `bpe-openai`: exact o200k with the crate ctxbed uses (`ExactEstimator`), the reference.
//! - `tiktoken-rs`: exact o200k with `tiktoken-rs` (`encode_ordinary`, then the length).
//! - `approx-v1`: ctxbed's content-aware estimator.
//! - `chars/2.5`: the reference harness's `ceil(chars / 2.5)` (`RatioEstimator`).
//! - `chars/4`: LangChain's documented default for `count_tokens_approximately`
//!   (`chars_per_token = 4.0`, rounded up); its `extra_tokens_per_message = 3.0` is a
//!   per-message overhead, like ctxbed's own, so it is left out of a text's count here.

#[path = "../../tests/support/estimator_corpus.rs"]
mod estimator_corpus;

use criterion::{BenchmarkId, Criterion, Throughput};
use ctxbed_harness::tokens::{
    ApproximateEstimator, ExactEstimator, RatioEstimator, TokenEstimator, Vocabulary,
};
use estimator_corpus::{self as corpus, Sample};

use crate::record::{self, Record};

/// Each kind's text is repeated to at least this many bytes.
const MEASURED_BYTES_MIN: usize = 256 * 1024;

/// LangChain's `count_tokens_approximately` default: characters per token.
const LANGCHAIN_CHARS_PER_TOKEN: u64 = 4;

/// The estimators, in table order; the first is the reference.
const ESTIMATORS: [&str; 5] = [
    "bpe-openai",
    "tiktoken-rs",
    "approx-v1",
    "chars/2.5",
    "chars/4",
];

/// What the summary needs: per kind, its measured size and each estimator's error.
pub struct Estimation {
    record: Record,
    kinds: Vec<Kind>,
}

struct Kind {
    category: &'static str,
    bytes: usize,
    /// Exact o200k tokens of the kind's text (once, not repeated).
    exact_tokens: u64,
    /// Error of each estimator against `exact_tokens`, in per mille.
    error_permille: [i64; ESTIMATORS.len()],
    /// approx-v1's largest error on a single file of the kind, in per mille.
    approx_worst_file_permille: i64,
}

/// One estimator's count of one text.
fn count(estimator: &str, text: &str) -> u64 {
    match estimator {
        "bpe-openai" => ExactEstimator::new(Vocabulary::O200k).text_tokens(text),
        "tiktoken-rs" => tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len() as u64,
        "approx-v1" => ApproximateEstimator.text_tokens(text),
        "chars/2.5" => RatioEstimator.text_tokens(text),
        "chars/4" => (text.chars().count() as u64).div_ceil(LANGCHAIN_CHARS_PER_TOKEN),
        other => unreachable!("no estimator {other}"),
    }
}

pub fn run(criterion: &mut Criterion) -> Estimation {
    let samples = corpus::load();
    let record = Record::default();
    let mut kinds = Vec::new();
    for category in corpus::categories(&samples) {
        let text = corpus::joined(&samples, category);
        kinds.push(kind(category, &text, &samples));
        let measured = repeated(&text);
        let mut group = criterion.benchmark_group(format!("estimation/{category}"));
        group.throughput(Throughput::Bytes(measured.len() as u64));
        for estimator in ESTIMATORS {
            let key = format!("{category}/{estimator}");
            record.bench(
                &mut group,
                BenchmarkId::from_parameter(estimator),
                &key,
                || count(estimator, &measured),
            );
        }
        group.finish();
    }
    Estimation { record, kinds }
}

fn kind(category: &'static str, text: &str, samples: &[Sample]) -> Kind {
    let exact_tokens = count("bpe-openai", text);
    let error_permille =
        ESTIMATORS.map(|estimator| corpus::error_permille(count(estimator, text), exact_tokens));
    let approx_worst_file_permille = samples
        .iter()
        .filter(|sample| sample.category == category)
        .map(|sample| {
            let exact = count("bpe-openai", &sample.text);
            corpus::error_permille(count("approx-v1", &sample.text), exact)
        })
        .max_by_key(|permille| permille.abs())
        .unwrap_or(0);
    Kind {
        category,
        bytes: repeated(text).len(),
        exact_tokens,
        error_permille,
        approx_worst_file_permille,
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

impl Estimation {
    pub fn print(&self) {
        eprintln!("\n## Estimators: throughput, and speed as a multiple of exact BPE (bpe-openai)");
        eprint!("| content |");
        for estimator in ESTIMATORS {
            eprint!(" {estimator} |");
        }
        eprintln!();
        eprintln!("| --- |{}", " ---: |".repeat(ESTIMATORS.len()));
        for kind in &self.kinds {
            let seconds = |estimator: &str| {
                self.record
                    .seconds(&format!("{}/{estimator}", kind.category))
            };
            let reference = seconds(ESTIMATORS[0]);
            eprint!(
                "| {} | {} |",
                kind.category,
                record::rate(kind.bytes, reference)
            );
            for estimator in &ESTIMATORS[1..] {
                eprint!(
                    " {} ({}) |",
                    record::rate(kind.bytes, seconds(estimator)),
                    record::ratio(reference, seconds(estimator)),
                );
            }
            eprintln!();
        }
        eprintln!("\n## Estimators: error against exact o200k (negative: under-counts)");
        eprint!("| content | o200k tokens |");
        for estimator in &ESTIMATORS[1..] {
            eprint!(" {estimator} |");
        }
        eprintln!(" approx-v1, worst file |");
        eprintln!("| --- | ---: |{}", " ---: |".repeat(ESTIMATORS.len()));
        for kind in &self.kinds {
            eprint!("| {} | {} |", kind.category, kind.exact_tokens);
            for permille in &kind.error_permille[1..] {
                eprint!(" {} |", corpus::percent(*permille));
            }
            eprintln!(" {} |", corpus::percent(kind.approx_worst_file_permille));
        }
    }
}
