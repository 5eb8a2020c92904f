//! The compact counter against `bpe_openai`, the reference: the same pieces and the same count
//! for every text, in both vocabularies.

use proptest::prelude::*;

use super::*;

fn reference(vocabulary: Vocabulary) -> &'static bpe_openai::Tokenizer {
    match vocabulary {
        Vocabulary::O200k => bpe_openai::o200k_base(),
        Vocabulary::Cl100k => bpe_openai::cl100k_base(),
    }
}

const VOCABULARIES: [Vocabulary; 2] = [Vocabulary::O200k, Vocabulary::Cl100k];

fn assert_same(vocabulary: Vocabulary, text: &str) {
    let ours = vocab(vocabulary);
    let theirs = reference(vocabulary);
    let our_pieces: Vec<&str> = ours.pieces(text).collect();
    let their_pieces: Vec<&str> = theirs.split(text).collect();
    assert_eq!(
        our_pieces, their_pieces,
        "{vocabulary:?} pieces of {text:?}"
    );
    for piece in &our_pieces {
        assert_eq!(
            ours.piece_count(piece.as_bytes()),
            theirs.bpe.count(piece.as_bytes()) as u64,
            "{vocabulary:?} count of the piece {piece:?}"
        );
    }
    assert_eq!(
        ours.count(text),
        theirs.count(text) as u64,
        "{vocabulary:?} count of {text:?}"
    );
}

/// Texts of every kind the estimator corpus holds: prose in several scripts, code, logs, data,
/// whitespace of every sort, contractions, digits, emoji and combining marks.
const TEXTS: &[&str] = &[
    "",
    "hello world",
    "Hello, World! It's a test: we'll see; they've gone, I'm here, you'd know, she's OK.",
    "IT'S LOUD. WE'LL SEE. Don'T mix CaSeS 'S 'T 'RE 'VE 'M 'LL 'D",
    "fn main() {\n    let x: Vec<u32> = (0..10).map(|i| i * 2).collect();\n    println!(\"{x:?}\");\n}\n",
    "def f(a, b=2, *args, **kw):\n\treturn a  +  b\n\n\n# comment\r\n",
    "2026-12-04T03:55:50.123Z INFO request_id=7f3a9c status=200 latency_ms=12.5 path=/v1/chat",
    "{\"id\": 12345678901234, \"values\": [1.5, -2.25, 3e10], \"ok\": true, \"name\": null}",
    "a,b,c\n1,2,3\n4,5,6\r\n",
    "   leading and trailing   \n\n   \t\t  \u{a0}\u{3000} end   ",
    "Der Größenwahn äußert sich übermäßig. Ça va? Élève, naïve façade, coöperate.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ἐν ἀρχῇ ἦν ὁ λόγος· Αλφάβητο.",
    "中文字符的测试，包括标点符号。还有数字123和English混合。",
    "日本語のテキスト、カタカナとひらがな、漢字を含む。",
    "한국어 텍스트입니다. 띄어쓰기가 있습니다!",
    "नमस्ते दुनिया, यह एक परीक्षण है।",
    "مرحبا بالعالم، هذا اختبار.",
    "שלום עולם, זה מבחן.",
    "สวัสดีชาวโลก นี่คือการทดสอบ",
    "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 🇩🇪 and ✔︎ done",
    "combining: e\u{301} a\u{308} n\u{303} \u{1e9b}\u{323}",
    "numbers 1 12 123 1234 12345 3.14159 1,000,000 ٣٤٥ ౧౨౩",
    "punctuation!!! ??? ... --- *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} ||| ///",
    "path/to/file.rs:120:7 and C:\\Users\\name\\file.txt and https://example.com/a?b=c&d=e#f",
    "\n\n\n\r\n\r\n  \n \n\t\n",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "QmFzZTY0IGVuY29kZWQgZGF0YSBpcyBoZXJlIGFuZCBpdCBpcyBsb25nIGVub3VnaCB0byBiZSBhIGxvbmcgcGllY2U=",
];

#[test]
fn every_text_has_the_references_pieces_and_count() {
    for vocabulary in VOCABULARIES {
        for text in TEXTS {
            assert_same(vocabulary, text);
        }
        assert_same(vocabulary, &TEXTS.concat());
    }
}

#[test]
fn long_pieces_take_the_heap_and_agree() {
    let long_word = "Pneumonoultramicroscopicsilicovolcanoconiosis".repeat(200);
    let long_space = " ".repeat(10_000);
    let long_digits_and_letters = "ab12cd34".repeat(3_000);
    let long_punctuation = "=-+*".repeat(5_000);
    let long_cjk = "漢字仮名交じり文".repeat(1_000);
    for vocabulary in VOCABULARIES {
        for text in [
            &long_word,
            &long_space,
            &long_digits_and_letters,
            &long_punctuation,
            &long_cjk,
        ] {
            assert_same(vocabulary, text);
        }
    }
}

/// Long runs of digits, of every length modulo three (the pieces are three digits each, the
/// last one to three), alone, after and before other classes, and between them: the same
/// pieces and count as the reference. Before the digits stopped measuring the whole run for
/// each piece, the 256 KiB runs here cost seconds each (quadratic).
#[test]
fn long_digit_runs_of_every_length_mod_three_agree() {
    let long = 3 * 87_381; // 256 KiB less a byte
    let medium = 3 * 1_000;
    for vocabulary in VOCABULARIES {
        for extra in 0..3 {
            let run = "1234567890".repeat(long / 10 + 1)[..long + extra].to_string();
            let short = &run[..medium + extra];
            assert_eq!(run.len() % 3, extra);
            for text in [
                run.clone(),
                format!("{run}é"),
                format!("x{run} "),
                format!("abc{short}DEF{short}  {short}中文{short}!?{short}\n{short}٣٤٥{short}"),
                format!("{short}'s {short}\t{short}é{short}/{short}\r\n{short}{run}"),
            ] {
                assert_same(vocabulary, &text);
            }
        }
    }
}

#[test]
fn every_token_is_found_at_its_rank() {
    for vocabulary in VOCABULARIES {
        let bpe = &reference(vocabulary).bpe;
        let ranks = &vocab(vocabulary).ranks;
        for rank in 0..bpe.num_tokens() {
            let rank = u32::try_from(rank).expect("ranks fit in u32");
            assert_eq!(
                ranks.rank(bpe.token_bytes(rank)),
                Some(rank),
                "{vocabulary:?} token {rank}"
            );
        }
        assert_eq!(ranks.rank(b""), None);
    }
}

/// The ASCII splitter ends every piece where the regex engine does, on every text of up to four
/// characters drawn from a set that holds each class the expressions tell apart (capitals, small
/// letters and the contraction letters, digits, each whitespace character, a separator that is
/// not whitespace, the apostrophe, the slash, other marks, control characters), and on every
/// text of one or two ASCII characters.
#[test]
fn the_ascii_splitter_ends_pieces_where_the_regex_does() {
    let chars: Vec<u8> = b"aZsTrEldmv'0 \t\n\r\x0b\x0c\x1c/._".to_vec();
    let mut texts: Vec<Vec<u8>> = vec![Vec::new()];
    let mut last: Vec<Vec<u8>> = vec![Vec::new()];
    for _ in 0..4 {
        last = last
            .iter()
            .flat_map(|text| {
                chars.iter().map(move |&c| {
                    let mut longer = text.clone();
                    longer.push(c);
                    longer
                })
            })
            .collect();
        texts.extend(last.iter().cloned());
    }
    for first in 0..128u8 {
        texts.push(vec![first]);
        for second in 0..128u8 {
            texts.push(vec![first, second]);
        }
    }
    for vocabulary in VOCABULARIES {
        let splitter = &vocab(vocabulary).splitter;
        for bytes in &texts {
            let text = std::str::from_utf8(bytes).expect("ASCII");
            let fast: Vec<&str> = splitter.split(text).collect();
            let regex: Vec<&str> = splitter.split_by_regex(text).collect();
            assert_eq!(fast, regex, "{vocabulary:?} pieces of {text:?}");
        }
    }
}

/// Every text of one to `longest` characters drawn from `chars`.
fn texts_over(chars: &[char], longest: usize) -> Vec<String> {
    let mut texts: Vec<String> = Vec::new();
    let mut last: Vec<String> = vec![String::new()];
    for _ in 0..longest {
        last = last
            .iter()
            .flat_map(|text| chars.iter().map(move |&c| format!("{text}{c}")))
            .collect();
        texts.extend(last.iter().cloned());
    }
    texts
}

/// Each text splits into the same pieces by the hand-written paths as by the regex engine.
fn assert_split_as_by_regex(texts: &[String]) {
    for vocabulary in VOCABULARIES {
        let splitter = &vocab(vocabulary).splitter;
        for text in texts {
            let fast: Vec<&str> = splitter.split(text).collect();
            let regex: Vec<&str> = splitter.split_by_regex(text).collect();
            assert_eq!(fast, regex, "{vocabulary:?} pieces of {text:?}");
        }
    }
}

/// The ideograph path ends every piece where the regex engine does, on every text of up to
/// three characters drawn from a set that holds ideographs, the punctuation marks and ASCII
/// that end a run or stand before one, and characters that continue a run of letters (kana,
/// a length mark, a combining mark, a letter number, Latin letters, the apostrophe).
#[test]
fn the_ideograph_splitter_ends_pieces_where_the_regex_does() {
    let chars: Vec<char> =
        "中語。、，！」a's0 \n\r.\u{3000}アー\u{301}々〇é\u{4DBF}\u{9FEF}\u{9FF0}"
            .chars()
            .collect();
    assert_split_as_by_regex(&texts_over(&chars, 3));
}

/// In text that is not ASCII throughout, the ASCII path ends every piece where the regex
/// engine does, on every text of up to four characters drawn from ASCII of each class and
/// characters of other scripts that a run of ASCII letters, digits, marks or whitespace could
/// continue into (a small and a capital letter, a long s that folds to a contraction's s, a
/// title-case letter, a modifier letter, a combining mark, digits, no-break and ideographic
/// spaces, marks, an ideograph), and on whitespace runs long enough to end three bytes before
/// the other character.
#[test]
fn the_ascii_path_in_other_text_ends_pieces_where_the_regex_does() {
    let chars: Vec<char> = "aZsl'0 \t\n\r.-/éÉſǅʰ\u{301}٣\u{a0}\u{3000}。’中\u{2028}"
        .chars()
        .collect();
    let mut texts = texts_over(&chars, 4);
    texts.retain(|text| !text.is_ascii());
    for space in [" ", "\t", "\n", "\r\n"] {
        for other in ["\u{a0}", "\u{3000}", "\u{2028}", "é", "中"] {
            for tail in ["", "\n", "x", " "] {
                texts.push(format!("\n{}{other}{tail}", space.repeat(5)));
                texts.push(format!("x{}{other}{tail}", space.repeat(5)));
            }
        }
    }
    assert_split_as_by_regex(&texts);
}

/// ASCII text of the kinds a sweep generates: prose, code, JSON, logs, whitespace runs.
fn ascii_strategy() -> impl Strategy<Value = String> {
    let chars = prop::sample::select(vec![
        'a', 'e', 's', 't', 'r', 'v', 'l', 'd', 'm', 'Q', 'R', 'S', 'L', 'D', '0', '5', '9', ' ',
        ' ', ' ', '\t', '\n', '\r', '\x0b', '\x0c', '\'', '"', '.', ',', ':', '{', '}', '[', ']',
        '/', '\\', '-', '_', '=', '\x01', '\x1f', '\x7f',
    ]);
    prop::collection::vec(chars, 0..200).prop_map(|chars| chars.into_iter().collect())
}

/// Characters chosen to hit every alternative of both expressions and their boundaries.
fn text_strategy() -> impl Strategy<Value = String> {
    let chars = prop::sample::select(vec![
        'a', 'b', 'Z', 'é', 'ß', 'Ж', 'λ', '中', '語', '导', '出', '。', '、', '，', '？', 'ア',
        '한', 'ह', '\u{93e}', 'ع', '0', '7', '٣', ' ', ' ', '\t', '\n', '\r', '\u{a0}', '\u{3000}',
        '\'', 's', 't', 'L', 'D', '.', ',', '!', '/', '\\', '-', '_', '(', '{', '"', '😀',
        '\u{200d}', '\u{301}', '\u{fe0f}',
    ]);
    prop::collection::vec(chars, 0..200).prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_text_has_the_references_pieces_and_count(text in text_strategy()) {
        for vocabulary in VOCABULARIES {
            assert_same(vocabulary, &text);
        }
    }

    #[test]
    fn random_ascii_text_has_the_references_pieces_and_count(text in ascii_strategy()) {
        for vocabulary in VOCABULARIES {
            assert_same(vocabulary, &text);
        }
    }

    #[test]
    fn random_bytes_as_text_have_the_references_count(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        for vocabulary in VOCABULARIES {
            assert_same(vocabulary, &text);
        }
    }
}

#[test]
fn a_head_is_the_first_eight_bytes_zero_padded() {
    let bytes: Vec<u8> = (1..=12u8).map(|b| b.wrapping_mul(37)).collect();
    for n in 0..=bytes.len() {
        let mut expected = [0u8; 8];
        let shown = n.min(8);
        expected[..shown].copy_from_slice(&bytes[..shown]);
        assert_eq!(
            super::table_format::head(&bytes[..n]),
            expected,
            "{n} bytes"
        );
    }
}
