//! Piece rules of the approximate estimator, checked on examples and against a plain
//! per-byte reading of the same rules.

use super::classify::tests::classify_plainly;
use super::classify::{BLOCK_BYTES, Masks};
use super::scan::{Carry, add_scripts, count_pieces, count_pieces_of_any_block};
use super::script::{Script, ScriptTotals};
use super::*;
use crate::tokens::ExactEstimator;

fn check(text: &str, expected: TextFeatures) {
    assert_eq!(ApproximateEstimator::features(text), expected, "{text:?}");
}

#[test]
fn pieces_follow_the_o200k_splitter() {
    let words = TextFeatures {
        word_piece_count: 3,
        ..TextFeatures::default()
    };
    check("the slow clock", words);
    check("parseHttpHead", words);
    check(
        "unit_price_cents",
        TextFeatures {
            word_symbol_count: 2,
            ..words
        },
    );
    check(
        "    let",
        TextFeatures {
            word_piece_count: 1,
            space_piece_count: 1,
            ..TextFeatures::default()
        },
    );
    check(
        "x = 1234567;\n",
        TextFeatures {
            word_piece_count: 1,
            digit_piece_count: 3,
            punctuation_piece_count: 2,
            space_piece_count: 1,
            ..TextFeatures::default()
        },
    );
    check(
        "  \"id\": 7,\n",
        TextFeatures {
            word_piece_count: 1,
            digit_piece_count: 1,
            punctuation_piece_count: 3,
            space_piece_count: 2,
            ..TextFeatures::default()
        },
    );
}

#[test]
fn long_words_and_runs_cost_more() {
    let features = ApproximateEstimator::features("internationalisation \"}]},");
    assert_eq!(features.word_piece_count, 1);
    assert_eq!(
        features.word_long_letter_count,
        20 - u64::from(WORD_LONG_FROM)
    );
    assert_eq!(features.punctuation_piece_count, 1);
    assert_eq!(
        features.punctuation_long_count,
        5 - u64::from(PUNCTUATION_LONG_FROM)
    );
}

#[test]
fn non_ascii_characters_are_counted_by_script() {
    let features =
        ApproximateEstimator::features("我们ですカナ한국。，Привет—🎉Größeλόγοςשלוםमराठी«ა»");
    assert_eq!(features.han_count, 2);
    assert_eq!(features.kana_count, 4);
    assert_eq!(features.hangul_count, 2);
    assert_eq!(features.cjk_punctuation_count, 2);
    assert_eq!(features.cyrillic_count, 6);
    assert_eq!(features.symbol_count, 3);
    assert_eq!(features.four_byte_count, 1);
    assert_eq!(features.latin_count, 2);
    assert_eq!(features.greek_count, 5);
    assert_eq!(features.hebrew_arabic_count, 4);
    assert_eq!(features.indic_count, 5);
    assert_eq!(features.other_three_byte_count, 1);
    assert_eq!(features.word_piece_count, 1);
}

/// The piece rules read one byte at a time, to check the block arithmetic against.
fn features_plainly(text: &str) -> TextFeatures {
    let bytes = text.as_bytes();
    let masks = classify_plainly(bytes);
    let at = |mask: u64, position: usize| mask >> position & 1 == 1;
    // Texts here are shorter than 64 bytes, so one mask holds them; `None` is outside.
    let is = |mask: u64, position: Option<usize>| {
        position.is_some_and(|p| p < bytes.len() && at(mask, p))
    };
    let before = |p: usize| p.checked_sub(1);
    let wordish = masks.letter | masks.high;
    let lower = masks.letter & !masks.upper;
    let mut features = TextFeatures::default();
    let mut word_offset = 0u32;
    let mut digit_offset = 0u32;
    let mut punctuation_offset = 0u32;
    for p in 0..bytes.len() {
        let camel = at(masks.upper, p) && is(lower, before(p));
        if at(wordish, p) {
            let start = !is(wordish, before(p)) || camel;
            word_offset = if start { 0 } else { word_offset + 1 };
            features.word_piece_count += u64::from(start);
            features.word_non_ascii_count += u64::from(start && at(masks.high, p));
            let long = at(masks.letter, p) && word_offset >= WORD_LONG_FROM;
            features.word_long_letter_count += u64::from(long);
        }
        if at(masks.digit, p) {
            let start = !is(masks.digit, before(p));
            digit_offset = if start { 0 } else { digit_offset + 1 };
            features.digit_piece_count += u64::from(digit_offset.is_multiple_of(3));
        }
        if at(masks.punctuation, p) {
            let start = !is(masks.punctuation, before(p));
            punctuation_offset = if start { 0 } else { punctuation_offset + 1 };
            let end = !is(masks.punctuation, Some(p + 1));
            let absorbed = start && end && is(wordish, Some(p + 1)) && !is(masks.space, before(p));
            features.punctuation_piece_count += u64::from(start && !absorbed);
            features.word_symbol_count += u64::from(absorbed);
            let long = punctuation_offset >= PUNCTUATION_LONG_FROM;
            features.punctuation_long_count += u64::from(long);
        }
        if at(masks.space, p) && !is(masks.space, Some(p + 1)) {
            let mut start = p;
            while start > 0 && at(masks.space, start - 1) {
                start -= 1;
            }
            let next = Some(p + 1);
            let joins_next = is(masks.newline, next)
                || start == p && (is(wordish, next) || is(masks.punctuation, next));
            let cost = if joins_next {
                0
            } else if start < p && is(masks.digit, next) {
                2
            } else {
                1
            };
            features.space_piece_count += cost;
        }
        if at(masks.newline, p) && !is(masks.newline, before(p)) {
            let absorbed = is(masks.punctuation, before(p));
            features.newline_piece_count += u64::from(!absorbed);
        }
    }
    TextFeatures {
        word_piece_count: features.word_piece_count,
        word_long_letter_count: features.word_long_letter_count,
        digit_piece_count: features.digit_piece_count,
        punctuation_piece_count: features.punctuation_piece_count,
        punctuation_long_count: features.punctuation_long_count,
        space_piece_count: features.space_piece_count,
        newline_piece_count: features.newline_piece_count,
        word_symbol_count: features.word_symbol_count,
        word_non_ascii_count: features.word_non_ascii_count,
        ..scripts_plainly(text)
    }
}

/// The script counts by the readable rules, one character at a time.
fn scripts_plainly(text: &str) -> TextFeatures {
    let mut totals = ScriptTotals::default();
    for character in text.chars().filter(|c| !c.is_ascii()) {
        let mut buffer = [0u8; 4];
        let encoded = character.encode_utf8(&mut buffer).as_bytes();
        let script = script::script_of(encoded[0], encoded[1]);
        totals.by_script[script as usize] += 1;
        let basic_russian = ('\u{410}'..='\u{44f}').contains(&character);
        totals.cyrillic_extended += u64::from(script == Script::Cyrillic && !basic_russian);
        let single = han_cl100k::SINGLE_TOKEN_IDEOGRAPHS.contains(character);
        totals.han_rare += u64::from(script == Script::Han && !single);
    }
    let mut features = TextFeatures::default();
    add_scripts(&totals, &mut features);
    features
}

#[test]
fn block_arithmetic_agrees_with_the_plain_rules() {
    const ALPHABET: &[&str] = &[
        "a", "b", "Z", "Q", "_", "'", "0", "9", " ", "\t", "\n", "\r", ".", "{", "\"", "/", "我",
        "們", "㐀", "の", "。", "é", "Ж", "і", "ё", "ґ", "🎉",
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for round in 0..4_000 {
        // xorshift: enough to vary the texts, and fixed so a failure repeats.
        let mut text = String::new();
        let length = 1 + round % 40;
        for _ in 0..length {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push_str(ALPHABET[(state % ALPHABET.len() as u64) as usize]);
        }
        if text.len() >= BLOCK_BYTES {
            continue;
        }
        let expected = features_plainly(&text);
        assert_eq!(ApproximateEstimator::features(&text), expected, "{text:?}");
        // The same text straddling a block boundary, after neutral padding.
        let padding = "\n".repeat(BLOCK_BYTES - text.len() / 2);
        let mut shifted = ApproximateEstimator::features(&format!("{padding}{text}"));
        shifted.newline_piece_count -= 1;
        let mut expected_shifted = expected;
        if text.starts_with(['\n', '\r']) {
            // The padding's line breaks and the text's first ones are one run.
            expected_shifted.newline_piece_count -= 1;
        }
        assert_eq!(
            shifted,
            expected_shifted,
            "{text:?} after {} newlines",
            padding.len()
        );
    }
}

#[test]
fn pieces_are_found_across_block_boundaries() {
    // The same text at every alignment against the 64-byte blocks gives the same features.
    let text = "fn main() {\n    let totalAmount = 1234567;\n}\n";
    let expected = ApproximateEstimator::features(text);
    for pad in 0..BLOCK_BYTES {
        let padded = format!("{}{text}", "\n".repeat(pad));
        let mut features = ApproximateEstimator::features(&padded);
        let padding = ApproximateEstimator::features(&"\n".repeat(pad));
        features.newline_piece_count -= padding.newline_piece_count;
        assert_eq!(features, expected, "padding {pad}");
    }
}

#[test]
fn a_block_without_ascii_is_counted_as_any_block_is() {
    let current = Masks {
        high: u64::MAX,
        lead: 0x4924_9249_2492_4924,
        ..Masks::default()
    };
    let previous_blocks = [
        Masks::default(),
        Masks {
            letter: 1 << 63,
            ..Masks::default()
        },
        Masks {
            high: 1 << 63,
            lead: 1 << 63,
            ..Masks::default()
        },
        Masks {
            digit: 0b111 << 61,
            ..Masks::default()
        },
        Masks {
            space: 1 << 63,
            ..Masks::default()
        },
        Masks {
            punctuation: 1 << 63,
            ..Masks::default()
        },
    ];
    let next_blocks = [
        Masks::default(),
        Masks {
            space: 1,
            ..Masks::default()
        },
        Masks {
            letter: 1,
            upper: 1,
            ..Masks::default()
        },
    ];
    for previous in previous_blocks {
        for word_continue in [0, u64::MAX, 1 << 63] {
            for next in next_blocks {
                let carry = Carry {
                    masks: previous,
                    word_continue,
                    digit_group_start: previous.digit & (1 << 61),
                };
                let (mut fast, mut general) = (TextFeatures::default(), TextFeatures::default());
                let fast_carry = count_pieces(&carry, &current, &next, &mut fast);
                let general_carry =
                    count_pieces_of_any_block(&carry, &current, &next, &mut general);
                assert_eq!(fast, general, "{previous:?}");
                assert_eq!(fast_carry.word_continue, general_carry.word_continue);
                assert_eq!(
                    fast_carry.digit_group_start,
                    general_carry.digit_group_start
                );
                assert_eq!(fast_carry.masks, general_carry.masks);
            }
        }
    }
}

#[test]
fn scripts_are_counted_alike_in_long_texts() {
    // CJK runs that cross block boundaries, blocks with and without ASCII, and a plain count
    // by the readable rule, one character at a time.
    let text = "这是一个没有任何空格的很长的中文句子，它跨越了好几个六十四字节的块。\
        Der Größenvergleich zeigt 1234 Einträge. カタカナとひらがなが混ざった文章です。\
        「全角」（かっこ）と＃記号。Привет, мир — 🎉 λόγος 한국어 문장 "
        .repeat(5);
    let by_script = scripts_plainly(&text);
    let features = ApproximateEstimator::features(&text);
    assert_eq!(features.han_count, by_script.han_count);
    assert_eq!(features.kana_count, by_script.kana_count);
    assert_eq!(
        features.cjk_punctuation_count,
        by_script.cjk_punctuation_count
    );
    assert_eq!(features.latin_count, by_script.latin_count);
    assert_eq!(features.cyrillic_count, by_script.cyrillic_count);
    assert_eq!(features.greek_count, by_script.greek_count);
    assert_eq!(features.hangul_count, by_script.hangul_count);
    assert_eq!(features.symbol_count, by_script.symbol_count);
    assert_eq!(features.four_byte_count, by_script.four_byte_count);
    assert_eq!(
        features.other_three_byte_count,
        by_script.other_three_byte_count
    );
    assert_eq!(
        features.cyrillic_extended_count,
        by_script.cyrillic_extended_count
    );
    assert_eq!(features.han_rare_count, by_script.han_rare_count);
}

#[test]
fn costlier_kinds_of_words_are_counted() {
    let features = ApproximateEstimator::features("amd64,optional :amd\n-rw x");
    assert_eq!(
        features.word_symbol_count, 2,
        ",optional and -rw; a space joined ':'"
    );
    let features = ApproximateEstimator::features("Привіт, Ґанко! Ёж и ёлка");
    assert_eq!(features.cyrillic_count, 18);
    assert_eq!(features.cyrillic_extended_count, 4, "і Ґ Ё ё");
    assert_eq!(features.word_non_ascii_count, 5);
    // 的 and 是 are one cl100k token each; 們 and 㐀 are not.
    let features = ApproximateEstimator::features("的們是㐀");
    assert_eq!((features.han_count, features.han_rare_count), (4, 2));
}

#[test]
fn ideographs_and_cyrillic_are_looked_up_across_block_boundaries() {
    // Every alignment of each character against the end of a block, with and without a lead
    // byte 0xe3 or 0xef elsewhere in the block (which takes the scan through the CJK masks).
    let sample = "的們㐀是і ж ёґ";
    for other in ["", "の"] {
        for pad in 0..BLOCK_BYTES {
            let text = format!("{other}{}{sample}", "x".repeat(pad));
            let features = ApproximateEstimator::features(&text);
            let expected = scripts_plainly(&text);
            assert_eq!(features.han_rare_count, expected.han_rare_count, "{text:?}");
            let extended = (
                features.cyrillic_extended_count,
                expected.cyrillic_extended_count,
            );
            assert_eq!(extended.0, extended.1, "{text:?}");
        }
    }
}

#[test]
fn an_estimate_that_does_not_price_rare_ideographs_does_not_count_them() {
    let text = "們們們 and 的";
    assert_eq!(scan(text.as_bytes(), false).han_rare_count, 0);
    assert_eq!(scan(text.as_bytes(), true).han_rare_count, 3);
    assert_eq!(WEIGHTS_O200K.han_rare, 0);
    assert_ne!(WEIGHTS_CL100K.han_rare, 0);
}

/// The characters of `han_cl100k::SINGLE_TOKEN_IDEOGRAPHS` as the exact cl100k vocabulary
/// gives them: every ideograph the estimator counts (U+3100–U+9FFF) that is one token. This
/// test is the list's generator: `CTXBED_BLESS=1` rewrites the list in `han_cl100k.rs`.
#[test]
fn the_single_token_ideographs_are_cl100k_s() {
    let exact = ExactEstimator::new(Vocabulary::Cl100k);
    let expected: Vec<char> = (0x3100..=0x9fff_u32)
        .filter_map(char::from_u32)
        .filter(|character| exact.text_tokens(character.encode_utf8(&mut [0; 4])) == 1)
        .collect();
    let committed: Vec<char> = han_cl100k::SINGLE_TOKEN_IDEOGRAPHS.chars().collect();
    if committed == expected {
        return;
    }
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/tokens/approx/han_cl100k.rs"
    );
    let blessing = std::env::var_os("CTXBED_BLESS").is_some_and(|value| value == "1");
    assert!(
        blessing,
        "{path} lists {} ideographs, the vocabulary has {} of one token: rewrite the list with \
         CTXBED_BLESS=1",
        committed.len(),
        expected.len()
    );
    let Ok(source) = std::fs::read_to_string(path) else {
        panic!("{path} is readable");
    };
    let opening = "pub(super) const SINGLE_TOKEN_IDEOGRAPHS: &str = \"";
    let (Some(start), Some(length)) = (
        source.find(opening).map(|at| at + opening.len()),
        source
            .find(opening)
            .and_then(|at| source[at + opening.len()..].find("\";")),
    ) else {
        panic!("{path} holds the list");
    };
    let lines: Vec<String> = expected
        .chunks(24)
        .map(|line| line.iter().collect())
        .collect();
    let list = format!("\\\n    {}", lines.join("\\\n    "));
    let rewritten = format!("{}{list}{}", &source[..start], &source[start + length..]);
    if let Err(error) = std::fs::write(path, rewritten) {
        panic!("{path}: {error}");
    }
}

/// Two-byte letters of no script priced apart (lead bytes 0xd5 and 0xdc-0xdf: Armenian from
/// U+0540, Syriac) have a count of their own.
#[test]
fn other_two_byte_letters_are_counted() {
    let features = ApproximateEstimator::features("մեկ ܐܒ");
    assert_eq!(features.other_two_byte_count, 5);
    assert_eq!(features.cyrillic_count + features.hebrew_arabic_count, 0);
}

/// A block with kana (a lead byte 0xe3) is counted through the CJK masks: there too, rare
/// ideographs are counted only when the estimate prices them.
#[test]
fn rare_ideographs_beside_kana_are_counted_only_when_priced() {
    let text = "の們們們";
    assert_eq!(scan(text.as_bytes(), false).han_rare_count, 0);
    assert_eq!(scan(text.as_bytes(), true).han_rare_count, 3);
}

/// Features with the given counts, in the order of `FEATURE_NAMES`.
fn features_of(c: [u64; FEATURE_COUNT]) -> TextFeatures {
    TextFeatures {
        word_piece_count: c[0],
        word_long_letter_count: c[1],
        digit_piece_count: c[2],
        punctuation_piece_count: c[3],
        punctuation_long_count: c[4],
        space_piece_count: c[5],
        newline_piece_count: c[6],
        han_count: c[7],
        kana_count: c[8],
        hangul_count: c[9],
        cjk_punctuation_count: c[10],
        latin_count: c[11],
        greek_count: c[12],
        cyrillic_count: c[13],
        hebrew_arabic_count: c[14],
        other_two_byte_count: c[15],
        indic_count: c[16],
        symbol_count: c[17],
        other_three_byte_count: c[18],
        four_byte_count: c[19],
        word_symbol_count: c[20],
        word_non_ascii_count: c[21],
        cyrillic_extended_count: c[22],
        han_rare_count: c[23],
    }
}

/// The prices of `weights`, in the order of `FEATURE_NAMES`.
fn prices_of(w: &Weights) -> [u64; FEATURE_COUNT] {
    [
        w.word_piece,
        w.word_long_letter,
        w.digit_piece,
        w.punctuation_piece,
        w.punctuation_long,
        w.space_piece,
        w.newline_piece,
        w.han,
        w.kana,
        w.hangul,
        w.cjk_punctuation,
        w.latin,
        w.greek,
        w.cyrillic,
        w.hebrew_arabic,
        w.other_two_byte,
        w.indic,
        w.symbol,
        w.other_three_byte,
        w.four_byte,
        w.word_symbol,
        w.word_non_ascii,
        w.cyrillic_extended,
        w.han_rare,
    ]
}

/// `counts` lists every feature once, in the order of `FEATURE_NAMES`, and a price is each
/// count times its weight, summed.
#[test]
fn a_price_is_every_count_times_its_weight() {
    let counts: [u64; FEATURE_COUNT] = std::array::from_fn(|i| i as u64 + 1);
    let features = features_of(counts);
    assert_eq!(features.counts(), counts);
    for weights in [WEIGHTS_O200K, WEIGHTS_CL100K] {
        let expected: u64 = counts
            .iter()
            .zip(prices_of(&weights))
            .map(|(c, w)| c * w)
            .sum();
        assert_eq!(ApproximateEstimator::price(&features, &weights), expected);
    }
    // Every term is seen: cl100k prices every feature (o200k leaves some at zero).
    assert!(prices_of(&WEIGHTS_CL100K).iter().all(|&w| w > 0));
}

/// A text's estimate is the price of its features, rounded up to whole tokens.
#[test]
fn an_estimate_is_its_features_price_rounded_up() {
    let estimator = ApproximateEstimator::default();
    let features = ApproximateEstimator::features("the slow clock");
    let price = ApproximateEstimator::price(&features, estimator.weights());
    assert_eq!(price, 3 * WEIGHTS_O200K.word_piece);
    assert_eq!(estimator.text_tokens("the slow clock"), 4);
    let cl100k = ApproximateEstimator::new(Vocabulary::Cl100k);
    assert_eq!(cl100k.text_tokens("the slow clock"), 4);
    // cl100k prices rare ideographs, so its estimate counts them; o200k's does not need to.
    let rare = "們們們們們們們們們們";
    let priced =
        ApproximateEstimator::price(&ApproximateEstimator::features(rare), cl100k.weights());
    assert_eq!(cl100k.text_tokens(rare), priced.div_ceil(1_000));
    assert!(priced > ApproximateEstimator::price(&scan(rare.as_bytes(), false), cl100k.weights()));
    assert_eq!(
        (estimator.method(), cl100k.method()),
        ("approx-v2-o200k", "approx-v2-cl100k")
    );
    assert!(!estimator.exact() && !cl100k.exact());
}

/// The compile-time check that appending text never lowers a count refuses weights under
/// which an absorbing piece costs less than the piece it absorbs, whichever pair breaks.
#[test]
fn weights_where_absorbing_costs_less_are_refused() {
    let base = WEIGHTS_O200K;
    assert!(absorbing_pieces_cost_more(&base));
    let cheap_word = Weights {
        word_piece: base.punctuation_piece - 1,
        ..base
    };
    let cheap_punctuation = Weights {
        punctuation_piece: base.space_piece - 1,
        ..base
    };
    let cheap_newline = Weights {
        newline_piece: base.space_piece - 1,
        ..base
    };
    for weights in [cheap_word, cheap_punctuation, cheap_newline] {
        assert!(!absorbing_pieces_cost_more(&weights), "{weights:?}");
    }
}
