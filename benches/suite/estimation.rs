//! The approximate estimator on each family of the calibration corpus's held-out half:
//! throughput, and error against exact o200k and cl100k beside the simple ratios, all in the
//! same run.
//!
//! The corpus is `tests/data/estimator/calibration/held-out/` (real logs, code, data, prose
//! and catalogs per language; the weights were fitted on `fit/` only). For throughput each
//! family's text is repeated to at least [`MEASURED_BYTES_MIN`], so one iteration is a long
//! scan rather than call overhead. Timed, each counting one text:
//!
//! - `bpe-openai`: exact o200k with the bpe-openai crate, the reference.
//! - `exact-o200k`: exact o200k with ctxbed's own counter (`ExactEstimator`), the same counts.
//! - `approx-o200k` and `approx-cl100k`: ctxbed's content-aware estimator (`approx-v2-o200k`,
//!   `approx-v2-cl100k`). Both run the same scan; cl100k's also looks each ideograph up in its
//!   table of single-token ideographs, which only the CJK families hold many of.
//!
//! Error only (against each vocabulary's exact count of the family's text):
//!
//! - `approx-v2-o200k` / `approx-v2-cl100k`, and its largest error on one 20 KB chunk.
//! - `chars/2.5`: the reference harness's `ceil(chars / 2.5)` (`RatioEstimator`).
//! - `chars/4`: LangChain's documented default for `count_tokens_approximately`
//!   (`chars_per_token = 4.0`, rounded up); its per-message overhead is left out, as ctxbed's.
//! - `bytes/4`: the common "four bytes a token" rule, rounded up.

#[path = "../../tests/support/estimator_corpus.rs"]
mod estimator_corpus;

use criterion::{BenchmarkId, Criterion, Throughput};
use ctxbed_harness::tokens::{
    ApproximateEstimator, ExactEstimator, RatioEstimator, TokenEstimator, Vocabulary,
};
use estimator_corpus::{self as corpus, Family, Split};

use crate::record::{self, Record};

/// Each family's text is repeated to at least this many bytes.
const MEASURED_BYTES_MIN: usize = 256 * 1024;

/// The timed estimators and the vocabulary each counts; the first is the reference.
const TIMED: [(&str, &str, Vocabulary); 4] = [
    ("bpe-openai", "bpe-openai", Vocabulary::O200k),
    ("approx-o200k", "approx", Vocabulary::O200k),
    ("approx-cl100k", "approx", Vocabulary::Cl100k),
    ("exact-o200k", "exact", Vocabulary::O200k),
];

/// The estimators of the error table, each against the vocabulary of the table.
const COMPARED: [&str; 4] = ["approx", "chars/2.5", "chars/4", "bytes/4"];

const VOCABULARIES: [Vocabulary; 2] = [Vocabulary::O200k, Vocabulary::Cl100k];

/// What the summary needs: per family, its measured size and each estimator's error.
pub struct Estimation {
    record: Record,
    families: Vec<Measured>,
}

struct Measured {
    name: String,
    bytes: usize,
    /// Per vocabulary: exact tokens, each compared estimator's error (per mille), and the
    /// approximate estimator's worst chunk (index, per mille).
    errors: [(u64, [i64; COMPARED.len()], (usize, i64)); VOCABULARIES.len()],
}

fn count(estimator: &str, vocabulary: Vocabulary, text: &str) -> u64 {
    match estimator {
        "bpe-openai" => match vocabulary {
            Vocabulary::O200k => bpe_openai::o200k_base().count(text) as u64,
            Vocabulary::Cl100k => bpe_openai::cl100k_base().count(text) as u64,
        },
        "exact" => ExactEstimator::new(vocabulary).text_tokens(text),
        "approx" => ApproximateEstimator::new(vocabulary).text_tokens(text),
        "chars/2.5" => RatioEstimator.text_tokens(text),
        "chars/4" => (text.chars().count() as u64).div_ceil(4),
        "bytes/4" => (text.len() as u64).div_ceil(4),
        other => unreachable!("no estimator {other}"),
    }
}

pub fn run(criterion: &mut Criterion) -> Estimation {
    let record = Record::default();
    let mut families = Vec::new();
    for family in corpus::calibration(Split::HeldOut) {
        let measured = repeated(&family.text());
        families.push(measure(&family, measured.len()));
        let mut group = criterion.benchmark_group(format!("estimation/{}", family.name));
        group.throughput(Throughput::Bytes(measured.len() as u64));
        for (label, estimator, vocabulary) in TIMED {
            let key = format!("{}/{label}", family.name);
            record.bench(&mut group, BenchmarkId::from_parameter(label), &key, || {
                count(estimator, vocabulary, &measured)
            });
        }
        group.finish();
    }
    Estimation { record, families }
}

fn measure(family: &Family, bytes: usize) -> Measured {
    let errors = VOCABULARIES.map(|vocabulary| {
        let exact: Vec<u64> = family
            .chunks
            .iter()
            .map(|chunk| count("bpe-openai", vocabulary, chunk))
            .collect();
        let total: u64 = exact.iter().sum();
        let compared = COMPARED.map(|estimator| {
            let estimate: u64 = family
                .chunks
                .iter()
                .map(|chunk| count(estimator, vocabulary, chunk))
                .sum();
            corpus::error_permille(estimate, total)
        });
        let worst = family
            .chunks
            .iter()
            .zip(&exact)
            .map(|(chunk, exact)| {
                corpus::error_permille(count("approx", vocabulary, chunk), *exact)
            })
            .enumerate()
            .max_by_key(|(_, permille)| permille.abs())
            .unwrap_or((0, 0));
        (total, compared, worst)
    });
    Measured {
        name: family.name.clone(),
        bytes,
        errors,
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
        eprintln!(
            "\n## approx on each held-out family: throughput, and as a multiple of bpe-openai"
        );
        eprintln!(
            "| family | bpe-openai (o200k) | approx-o200k | approx-cl100k | o200k / bpe-openai | cl100k / bpe-openai | exact-o200k / bpe-openai |"
        );
        eprintln!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        // Per timed approx estimator: the slowest family's rate, name and ratio to the reference.
        let mut slowest: [Option<(f64, &str, String)>; 2] = [None, None];
        for family in &self.families {
            let seconds = |(label, _, _): (&str, &str, Vocabulary)| {
                self.record.seconds(&format!("{}/{label}", family.name))
            };
            let reference = seconds(TIMED[0]);
            let approx = [seconds(TIMED[1]), seconds(TIMED[2])];
            let exact = seconds(TIMED[3]);
            for (slowest, approx) in slowest.iter_mut().zip(approx) {
                if let Some(seconds) = approx {
                    let rate = family.bytes as f64 / seconds;
                    if slowest
                        .as_ref()
                        .is_none_or(|(slowest, _, _)| rate < *slowest)
                    {
                        let ratio = record::ratio(reference, approx);
                        *slowest = Some((rate, &family.name, ratio));
                    }
                }
            }
            eprintln!(
                "| {} | {} | {} | {} | {} | {} | {} |",
                family.name,
                record::rate(family.bytes, reference),
                record::rate(family.bytes, approx[0]),
                record::rate(family.bytes, approx[1]),
                record::ratio(reference, approx[0]),
                record::ratio(reference, approx[1]),
                record::ratio(reference, exact),
            );
        }
        for ((label, _, _), slowest) in TIMED[1..3].iter().zip(&slowest) {
            if let Some((rate, name, ratio)) = slowest {
                eprintln!(
                    "slowest family for {label}: {name}, {:.2} GB/s ({ratio} bpe-openai)",
                    rate / 1e9
                );
            }
        }
        for (index, vocabulary) in VOCABULARIES.iter().enumerate() {
            let name = match vocabulary {
                Vocabulary::O200k => "o200k",
                Vocabulary::Cl100k => "cl100k",
            };
            eprintln!(
                "\n## Held-out error against exact {name} (negative: under-counts), approx-v2-{name}"
            );
            eprintln!(
                "| family | {name} tokens | approx | worst 20 KB chunk | chars/2.5 | chars/4 | bytes/4 |"
            );
            eprintln!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
            for family in &self.families {
                let (tokens, compared, (chunk, worst)) = &family.errors[index];
                eprintln!(
                    "| {} | {tokens} | {} | {} (#{chunk}) | {} | {} | {} |",
                    family.name,
                    corpus::percent(compared[0]),
                    corpus::percent(*worst),
                    corpus::percent(compared[1]),
                    corpus::percent(compared[2]),
                    corpus::percent(compared[3]),
                );
            }
        }
    }
}
