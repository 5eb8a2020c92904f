//! The approximate estimator against exact o200k on the hand-written corpus, and its
//! properties: zero for nothing, never lower after appending, the same count every time.

mod support {
    pub mod estimator_corpus;
}

use ctxbed_harness::message::Message;
use ctxbed_harness::tokens::{
    ApproximateEstimator, CachedEstimator, ExactEstimator, TokenEstimator, Vocabulary,
};
use ctxbed_sim::text::{TextKind, generate_text};
use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use support::estimator_corpus::{self as corpus, REQUIRED_CATEGORIES};

const TOLERANCE_PERMILLE: i64 = 100;
const CORPUS_BYTES_MAX: usize = 300 * 1024;

#[test]
fn every_required_category_is_within_ten_percent_of_o200k() {
    let exact = ExactEstimator::new(Vocabulary::O200k);
    let samples = corpus::load();
    let mut table = String::new();
    let mut failures = Vec::new();
    for sample in &samples {
        let truth = exact.text_tokens(&sample.text);
        let error = corpus::error_permille(ApproximateEstimator.text_tokens(&sample.text), truth);
        table.push_str(&format!(
            "{:<14} {:<34} exact {:>5}  approx {:>7}\n",
            sample.category,
            sample.name,
            truth,
            corpus::percent(error)
        ));
        let required = REQUIRED_CATEGORIES.contains(&sample.category);
        if required && error.abs() > TOLERANCE_PERMILLE {
            failures.push(sample.name.clone());
        }
    }
    for category in REQUIRED_CATEGORIES {
        let text = corpus::joined(&samples, category);
        assert!(!text.is_empty(), "no sample of {category}");
        let error = corpus::error_permille(
            ApproximateEstimator.text_tokens(&text),
            exact.text_tokens(&text),
        );
        table.push_str(&format!(
            "{category:<14} (all) {:>43}\n",
            corpus::percent(error)
        ));
        if error.abs() > TOLERANCE_PERMILLE {
            failures.push(format!("{category} (all)"));
        }
    }
    assert!(failures.is_empty(), "outside ±10 %: {failures:?}\n{table}");
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
    assert_eq!(ApproximateEstimator.text_tokens(""), 0);
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
fn check_monotone_ends(text: &str, ends: impl Iterator<Item = usize>) {
    let mut previous = 0;
    for end in ends.chain([text.len()]) {
        let tokens = ApproximateEstimator.text_tokens(&text[..end]);
        assert!(
            tokens >= previous,
            "appending lowered the count from {previous} to {tokens}: {:?}",
            &text[..end]
        );
        previous = tokens;
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
        let tokens = ApproximateEstimator.text_tokens(&joined);
        assert!(tokens >= ApproximateEstimator.text_tokens(&a), "{joined:?}");
    }
}

#[test]
fn counts_are_the_same_every_time_and_through_the_cache() {
    let cached = CachedEstimator::new(ApproximateEstimator);
    for sample in corpus::load() {
        let first = ApproximateEstimator.text_tokens(&sample.text);
        assert_eq!(ApproximateEstimator.text_tokens(&sample.text), first);
        let message = Message::user("m", sample.text.clone());
        let direct = ApproximateEstimator.message_tokens(&message);
        assert_eq!(cached.message_tokens(&message), direct);
        assert_eq!(cached.message_tokens(&message), direct);
    }
    assert!(cached.stats().hit_count > 0);
}
