//! The approximate estimator against exact counts: per family of the calibration corpus's
//! held-out half, for o200k and cl100k, and on the hand-written corpus; and its properties:
//! zero for nothing, never lower after appending, the same count every time.

mod support {
    pub mod estimator_corpus;
}

use ctxbed_harness::message::Message;
use ctxbed_harness::tokens::approx::FEATURE_NAMES;
use ctxbed_harness::tokens::{
    ApproximateEstimator, CachedEstimator, ExactEstimator, TokenEstimator, Vocabulary,
};
use ctxbed_sim::text::{TextKind, generate_text};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use support::estimator_corpus::{self as corpus, REQUIRED_CATEGORIES, Split};

const TOLERANCE_PERMILLE: i64 = 100;

/// ctxbed's exact counter against the bpe-openai crate, on every text of both corpora
/// (hand-written and calibration, both halves), in both vocabularies, memoised and not.
#[test]
fn exact_counts_are_the_references_on_every_corpus_text() {
    let mut texts: Vec<(String, String)> = corpus::load()
        .into_iter()
        .map(|sample| (sample.name, sample.text))
        .collect();
    for split in [Split::Fit, Split::HeldOut] {
        for family in corpus::calibration(split) {
            texts.push((family.name.clone(), family.text()));
        }
    }
    assert!(texts.len() > 50, "the corpora hold {} texts", texts.len());
    for vocabulary in [Vocabulary::O200k, Vocabulary::Cl100k] {
        let reference = match vocabulary {
            Vocabulary::O200k => bpe_openai::o200k_base(),
            Vocabulary::Cl100k => bpe_openai::cl100k_base(),
        };
        let plain = ExactEstimator::new(vocabulary);
        let memoised = ExactEstimator::memoised(vocabulary);
        for (name, text) in &texts {
            let expected = reference.count(text.as_str()) as u64;
            assert_eq!(plain.text_tokens(text), expected, "{vocabulary:?} {name}");
            assert_eq!(
                memoised.text_tokens(text),
                expected,
                "{vocabulary:?} {name}"
            );
        }
    }
}
const CORPUS_BYTES_MAX: usize = 300 * 1024;

#[test]
fn every_held_out_family_is_within_ten_percent_for_each_vocabulary() {
    let mut table = String::new();
    let mut failures = Vec::new();
    for vocabulary in [Vocabulary::O200k, Vocabulary::Cl100k] {
        let exact = ExactEstimator::new(vocabulary);
        let approx = ApproximateEstimator::new(vocabulary);
        for family in corpus::calibration(Split::HeldOut) {
            let mut totals = (0, 0);
            let mut worst = (0, 0i64);
            for (index, chunk) in family.chunks.iter().enumerate() {
                let (estimate, truth) = (approx.text_tokens(chunk), exact.text_tokens(chunk));
                totals = (totals.0 + estimate, totals.1 + truth);
                let error = corpus::error_permille(estimate, truth);
                if error.abs() > worst.1.abs() {
                    worst = (index, error);
                }
            }
            let error = corpus::error_permille(totals.0, totals.1);
            let line = format!(
                "{vocabulary:?} {:<16} exact {:>6}  approx {:>7}  worst chunk #{} {:>7}\n",
                family.name,
                totals.1,
                corpus::percent(error),
                worst.0,
                corpus::percent(worst.1),
            );
            if error.abs() > TOLERANCE_PERMILLE {
                failures.push(line.clone());
            }
            table.push_str(&line);
        }
    }
    assert!(
        failures.is_empty(),
        "outside ±10 %:\n{}\nall families:\n{table}",
        failures.concat()
    );
}

#[test]
fn the_calibration_halves_hold_every_family() {
    let fit = corpus::calibration(Split::Fit);
    let held_out = corpus::calibration(Split::HeldOut);
    let names = |families: &[corpus::Family]| -> Vec<String> {
        families.iter().map(|family| family.name.clone()).collect()
    };
    assert_eq!(names(&fit), names(&held_out));
    assert!(held_out.len() >= 20, "{} families", held_out.len());
    for family in fit.iter().chain(&held_out) {
        assert!(!family.chunks.is_empty(), "{} has text", family.name);
    }
}

/// The hand-written corpus is cleaner than real text (common words, short lines): weights
/// fitted on real text over-count it, which is the safe side. It must never be under-counted
/// by more than 10 %, nor over-counted by more than 20 %.
const HAND_WRITTEN_OVER_PERMILLE: i64 = 200;

#[test]
fn the_hand_written_corpus_is_within_minus_ten_and_plus_twenty_percent_of_o200k() {
    let exact = ExactEstimator::new(Vocabulary::O200k);
    let samples = corpus::load();
    let mut table = String::new();
    let mut failures = Vec::new();
    for sample in &samples {
        let truth = exact.text_tokens(&sample.text);
        let error = corpus::error_permille(
            ApproximateEstimator::default().text_tokens(&sample.text),
            truth,
        );
        table.push_str(&format!(
            "{:<14} {:<34} exact {:>5}  approx {:>7}\n",
            sample.category,
            sample.name,
            truth,
            corpus::percent(error)
        ));
        let required = REQUIRED_CATEGORIES.contains(&sample.category);
        if required && !(-TOLERANCE_PERMILLE..=HAND_WRITTEN_OVER_PERMILLE).contains(&error) {
            failures.push(sample.name.clone());
        }
    }
    for category in REQUIRED_CATEGORIES {
        let text = corpus::joined(&samples, category);
        assert!(!text.is_empty(), "no sample of {category}");
        let error = corpus::error_permille(
            ApproximateEstimator::default().text_tokens(&text),
            exact.text_tokens(&text),
        );
        table.push_str(&format!(
            "{category:<14} (all) {:>43}\n",
            corpus::percent(error)
        ));
        if !(-TOLERANCE_PERMILLE..=HAND_WRITTEN_OVER_PERMILLE).contains(&error) {
            failures.push(format!("{category} (all)"));
        }
    }
    assert!(
        failures.is_empty(),
        "outside -10 % to +20 %: {failures:?}\n{table}"
    );
}

#[test]
fn the_corpus_stays_small() {
    let samples = corpus::load();
    let bytes: usize = samples.iter().map(|sample| sample.text.len()).sum();
    assert!(bytes < CORPUS_BYTES_MAX, "{bytes} bytes");
    assert!(samples.iter().any(|sample| sample.held_out));
}

#[test]
fn empty_text_costs_nothing() {
    assert_eq!(ApproximateEstimator::default().text_tokens(""), 0);
    assert_eq!(ApproximateEstimator::features(""), Default::default());
}

/// Characters of every class the scanner tells apart, including block-boundary-prone ones.
const ALPHABET: &[&str] = &[
    "a", "e", "z", "Q", "K", "_", "'", "0", "7", " ", " ", "    ", "\t", "\n", "\r\n", ".", ",",
    "{", "}", "\"", ":", "(", ")", ";", "/", "-", "=", "我", "们", "の", "カ", "。", "，", "한",
    "é", "ß", "Ж", "λ", "ש", "म", "—", "“", "🎉", "ა", "\u{0}",
];

fn random_text(rng: &mut ChaCha8Rng, pieces: usize) -> String {
    let mut text = String::new();
    for _ in 0..pieces {
        let index = (rng.next_u32() as usize) % ALPHABET.len();
        text.push_str(ALPHABET[index]);
    }
    text
}

/// Every prefix of `text` (at character boundaries) costs no more than the next one.
fn check_monotone(text: &str) {
    check_monotone_ends(text, text.char_indices().skip(1).map(|(end, _)| end));
}

/// Each prefix ending at one of `ends` (increasing), then the whole text, costs no more than
/// the next.
fn check_monotone_ends(text: &str, ends: impl Iterator<Item = usize> + Clone) {
    for vocabulary in [Vocabulary::O200k, Vocabulary::Cl100k] {
        let approx = ApproximateEstimator::new(vocabulary);
        let mut previous = 0;
        for end in ends.clone().chain([text.len()]) {
            let tokens = approx.text_tokens(&text[..end]);
            assert!(
                tokens >= previous,
                "{vocabulary:?}: appending lowered the count from {previous} to {tokens}: {:?}",
                &text[..end]
            );
            previous = tokens;
        }
    }
}

#[test]
fn appending_random_text_never_lowers_the_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for _ in 0..300 {
        let pieces = 1 + (rng.next_u32() as usize) % 160;
        check_monotone(&random_text(&mut rng, pieces));
    }
}

#[test]
fn appending_real_and_generated_text_never_lowers_the_count() {
    for sample in corpus::load() {
        // Every prefix of the opening, then every 499th byte (at a character boundary) of
        // the whole text: quadratic work stays small in debug builds.
        let opening = &sample.text[..sample.text.floor_char_boundary(400)];
        check_monotone(opening);
        let ends = (0..sample.text.len())
            .step_by(499)
            .map(|end| sample.text.floor_char_boundary(end));
        check_monotone_ends(&sample.text, ends);
    }
    for kind in TextKind::ALL {
        for seed in 0..3 {
            check_monotone(&generate_text(kind, 400, seed));
        }
    }
}

#[test]
fn joining_two_texts_never_costs_less_than_either() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for _ in 0..500 {
        let (a_pieces, b_pieces) = (rng.next_u32() % 120, rng.next_u32() % 120);
        let a = random_text(&mut rng, a_pieces as usize);
        let b = random_text(&mut rng, b_pieces as usize);
        let joined = format!("{a}{b}");
        for vocabulary in [Vocabulary::O200k, Vocabulary::Cl100k] {
            let approx = ApproximateEstimator::new(vocabulary);
            let tokens = approx.text_tokens(&joined);
            assert!(
                tokens >= approx.text_tokens(&a),
                "{vocabulary:?}: {joined:?}"
            );
        }
    }
}

#[test]
fn counts_are_the_same_every_time_and_through_the_cache() {
    let cached = CachedEstimator::new(ApproximateEstimator::default());
    for sample in corpus::load() {
        let first = ApproximateEstimator::default().text_tokens(&sample.text);
        assert_eq!(
            ApproximateEstimator::default().text_tokens(&sample.text),
            first
        );
        let message = Message::user("m", sample.text.clone());
        let direct = ApproximateEstimator::default().message_tokens(&message);
        assert_eq!(cached.message_tokens(&message), direct);
        assert_eq!(cached.message_tokens(&message), direct);
    }
    assert!(cached.stats().hit_count > 0);
}

/// Prints, for every chunk of both halves of the calibration corpus, the approximate
/// estimator's features and the exact o200k and cl100k counts, one tab-separated line each:
/// the input of `tools/calibration/fit.py`.
#[test]
#[ignore = "prints the fitting table for tools/calibration/fit.py"]
fn calibration_features_table() {
    let o200k = ExactEstimator::new(Vocabulary::O200k);
    let cl100k = ExactEstimator::new(Vocabulary::Cl100k);
    let mut out = format!(
        "split\tfamily\tchunk\tbytes\to200k\tcl100k\t{}\n",
        FEATURE_NAMES.join("\t")
    );
    for (split, label) in [(Split::Fit, "fit"), (Split::HeldOut, "held-out")] {
        for family in corpus::calibration(split) {
            for (index, chunk) in family.chunks.iter().enumerate() {
                let counts = ApproximateEstimator::features(chunk).counts();
                let counts: Vec<String> = counts.iter().map(u64::to_string).collect();
                out.push_str(&format!(
                    "{label}\t{}\t{index}\t{}\t{}\t{}\t{}\n",
                    family.name,
                    chunk.len(),
                    o200k.text_tokens(chunk),
                    cl100k.text_tokens(chunk),
                    counts.join("\t")
                ));
            }
        }
    }
    // The hand-written corpus: its top-level files are fitted on too, `holdout/` is not.
    for sample in corpus::load() {
        let label = if sample.held_out {
            "hand-held-out"
        } else {
            "fit"
        };
        let counts = ApproximateEstimator::features(&sample.text).counts();
        let counts: Vec<String> = counts.iter().map(u64::to_string).collect();
        out.push_str(&format!(
            "{label}\thand-{}\t0\t{}\t{}\t{}\t{}\n",
            sample.name,
            sample.text.len(),
            o200k.text_tokens(&sample.text),
            cl100k.text_tokens(&sample.text),
            counts.join("\t")
        ));
    }
    print!("{out}");
}
