//! `read_file` and the pure paging step.

use serde_json::json;

use super::Bench;
use crate::limits::READ_FILE_CHARS_MAX;
use crate::tools::read::{Page, PageRequest, page};
use ctxbed_sim::text::{TextKind, generate_text};

/// Follows `next` from the first page to the end; returns the concatenated pages.
fn read_all(text: &str, lines_max: usize, chars_max: usize) -> String {
    let mut request = PageRequest {
        line: 1,
        char_offset: 0,
        lines_max,
        chars_max,
    };
    let mut out = String::new();
    for _ in 0..=text.chars().count() + 1 {
        match page(text, request) {
            Page::Empty => return out,
            Page::Content {
                text: shown,
                first_line,
                last_line,
                next,
                ..
            } => {
                assert!(shown.chars().count() <= chars_max, "page over the bound");
                assert!(last_line - first_line < lines_max, "too many lines");
                out.push_str(shown);
                match next {
                    Some((line, char_offset)) => {
                        assert!(
                            (line, char_offset) > (request.line, request.char_offset),
                            "no progress"
                        );
                        // A page that stops at a line's end without its newline: add it back.
                        if char_offset == 0 && !out.ends_with('\n') {
                            out.push('\n');
                        }
                        request.line = line;
                        request.char_offset = char_offset;
                    }
                    None => {
                        if text.ends_with('\n') && !out.ends_with('\n') {
                            out.push('\n');
                        }
                        return out;
                    }
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("paging did not finish");
}

#[test]
fn following_the_pages_reads_every_text_exactly() {
    let texts = [
        String::new(),
        "a".to_string(),
        "one\ntwo\nthree\n".to_string(),
        "one\ntwo\nthree".to_string(),
        "\n\n\n".to_string(),
        "x\n".repeat(50),
        generate_text(TextKind::Prose, 2_000, 1),
        generate_text(TextKind::Log, 3_000, 2),
        generate_text(TextKind::Cjk, 1_000, 3),
        format!("short\n{}\nshort\n", "long".repeat(100)),
        "é\r\nü\r\n".repeat(30),
    ];
    for text in &texts {
        for (lines_max, chars_max) in [(1, 1), (1, 7), (3, 10), (2, 64), (200, 20_000), (5, 33)] {
            assert_eq!(
                read_all(text, lines_max, chars_max),
                *text,
                "lines_max={lines_max} chars_max={chars_max} text={text:?}"
            );
        }
    }
}

#[test]
fn pages_end_on_line_boundaries_when_they_can() {
    let text = format!("short\n{}\n", "y".repeat(30));
    let request = PageRequest {
        line: 1,
        char_offset: 0,
        lines_max: 10,
        chars_max: 20,
    };
    let Page::Content {
        text: shown, next, ..
    } = page(&text, request)
    else {
        panic!("content expected");
    };
    assert_eq!(shown, "short\n");
    assert_eq!(next, Some((2, 0)));
}

#[test]
fn a_whole_small_file_has_a_header_and_no_trailer() {
    let bench = Bench::new(&[("notes.md", "one\ntwo\nthree\n")]);
    bench.check(
        "read_file",
        json!({"path": "notes.md"}),
        false,
        "[notes.md: lines 1-3 of 3]\none\ntwo\nthree\n",
    );
    bench.check(
        "read_file",
        json!({"path": "notes.md", "offset": 2, "limit": 1}),
        false,
        "[notes.md: line 2 of 3]\ntwo\n[truncated: line 3 not shown; call read_file again with path=\"notes.md\", offset=3 to continue]",
    );
    bench.check(
        "read_file",
        json!({"path": "notes.md", "offset": 3}),
        false,
        "[notes.md: line 3 of 3]\nthree\n[end of file]",
    );
}

#[test]
fn a_single_line_file_is_read_in_bounded_pages() {
    let line = generate_text(TextKind::Prose, 50_000, 9);
    assert!(!line.contains('\n'));
    let bench = Bench::new(&[("big.log", &line)]);
    let chars: Vec<char> = line.chars().collect();
    let slice = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    bench.check(
        "read_file",
        json!({"path": "big.log"}),
        false,
        &format!(
            "[big.log: line 1 of 1, chars 0-20000 of 50000]\n{}\n[truncated: call read_file again with path=\"big.log\", offset=1, char_offset=20000 to continue]",
            slice(0, 20_000)
        ),
    );
    bench.check(
        "read_file",
        json!({"path": "big.log", "offset": 1, "char_offset": 20000}),
        false,
        &format!(
            "[big.log: line 1 of 1, chars 20000-40000 of 50000]\n{}\n[truncated: call read_file again with path=\"big.log\", offset=1, char_offset=40000 to continue]",
            slice(20_000, 40_000)
        ),
    );
    bench.check(
        "read_file",
        json!({"path": "big.log", "char_offset": 40000}),
        false,
        &format!(
            "[big.log: line 1 of 1, chars 40000-50000 of 50000]\n{}\n[end of file]",
            slice(40_000, 50_000)
        ),
    );
    let outcome = bench.call("read_file", json!({"path": "big.log"}));
    assert!(super::text(&outcome).chars().count() < READ_FILE_CHARS_MAX + 200);
}

#[test]
fn a_cut_line_among_others_is_named_in_the_header() {
    let text = format!("head\n{}\ntail\n", "z".repeat(25_000));
    let bench = Bench::new(&[("mixed.txt", &text)]);
    bench.check(
        "read_file",
        json!({"path": "mixed.txt"}),
        false,
        "[mixed.txt: line 1 of 3]\nhead\n[truncated: lines 2-3 not shown; call read_file again with path=\"mixed.txt\", offset=2 to continue]",
    );
    let outcome = bench.call(
        "read_file",
        json!({"path": "mixed.txt", "offset": 2, "char_offset": 20000}),
    );
    let found = super::text(&outcome);
    assert!(
        found.starts_with("[mixed.txt: lines 2-3 of 3; line 2 from char 20000]\nzzz"),
        "{found}"
    );
    assert!(found.ends_with("z\ntail\n[end of file]"), "{found}");
}

#[test]
fn reading_past_the_end_says_where_the_file_ends() {
    let bench = Bench::new(&[("notes.md", "one\ntwo\n"), ("empty.md", "")]);
    bench.check(
        "read_file",
        json!({"path": "notes.md", "offset": 10}),
        false,
        "[notes.md has 2 lines; offset 10 is past the end of the file, so there is nothing more to read]",
    );
    bench.check(
        "read_file",
        json!({"path": "notes.md", "offset": 1, "char_offset": 3}),
        false,
        "[line 1 of notes.md has 3 chars; char_offset 3 is past its end; continue with path=\"notes.md\", offset=2]",
    );
    bench.check(
        "read_file",
        json!({"path": "notes.md", "offset": 2, "char_offset": 99}),
        false,
        "[line 2 of notes.md has 3 chars; char_offset 99 is past its end; that is the end of the file]",
    );
    bench.check(
        "read_file",
        json!({"path": "empty.md"}),
        false,
        "[empty.md is empty]",
    );
    bench.check(
        "read_file",
        json!({"path": "notes.md", "offset": 18446744073709551615u64}),
        false,
        "[notes.md has 2 lines; offset 18446744073709551615 is past the end of the file, so there is nothing more to read]",
    );
}

#[test]
fn missing_files_directories_and_binary_content_are_errors() {
    let bench = Bench::new(&[("docs/a.md", "a")]);
    bench.put("blob.bin", &[0x89, b'P', b'N', b'G', 0xFF]);
    bench.put("nul.txt", b"ab\0cd");
    // Past the first block the NUL search skips: its position is still exact.
    let mut late = vec![b'x'; 10_000];
    late[9_001] = 0;
    bench.put("late-nul.txt", &late);
    bench.check(
        "read_file",
        json!({"path": "nope.md"}),
        true,
        "no file `nope.md` in the workspace; list_files shows what exists and write_file creates files",
    );
    bench.check(
        "read_file",
        json!({"path": "docs"}),
        true,
        "`docs` is a directory, not a file; list_files shows its entries",
    );
    bench.check(
        "read_file",
        json!({"path": "blob.bin"}),
        true,
        "`blob.bin` is not UTF-8 text (byte 0x89 at byte 0); only UTF-8 text files can be shown or edited",
    );
    bench.check(
        "read_file",
        json!({"path": "nul.txt"}),
        true,
        "`nul.txt` is binary (a NUL byte at byte 2); only UTF-8 text files can be shown or edited",
    );
    bench.check(
        "read_file",
        json!({"path": "late-nul.txt"}),
        true,
        "`late-nul.txt` is binary (a NUL byte at byte 9001); only UTF-8 text files can be shown or edited",
    );
}

#[test]
fn bad_arguments_name_the_problem_and_the_schema() {
    let bench = Bench::new(&[("a.md", "a")]);
    let expected = "\nexpected: {\"path\": string (required), \"offset\": integer, \"limit\": integer, \"char_offset\": integer}";
    for (arguments, problem) in [
        (json!({}), "missing required argument `path`"),
        (
            json!({"path": 3}),
            "`path` must be a string, got 3 (an integer)",
        ),
        (
            json!({"path": "a.md", "offset": 0}),
            "`offset` must be an integer from 1 to 18446744073709551615, got 0 (an integer)",
        ),
        (
            json!({"path": "a.md", "limit": 5000}),
            "`limit` must be an integer from 1 to 2000, got 5000 (an integer)",
        ),
        (
            json!({"path": "a.md", "char_offset": -1}),
            "`char_offset` must be an integer from 0 to 18446744073709551615, got -1 (a negative integer)",
        ),
        (
            json!({"file": "a.md"}),
            "unknown argument `file`; did you mean `path`?",
        ),
        (
            json!({"path": "a".repeat(2000)}),
            "`path` is 2000 characters long; at most 1024",
        ),
        (
            json!(["a.md"]),
            "arguments must be a JSON object, got [\"a.md\"] (an array)",
        ),
    ] {
        bench.check(
            "read_file",
            arguments,
            true,
            &format!("invalid read_file arguments: {problem}{expected}"),
        );
    }
}

/// The paging step as first written: every line counted in full, characters skipped one at a
/// time. `page` counts less; the two must cut the same pages.
fn reference_page(text: &str, request: PageRequest) -> Page<'_> {
    let byte_index = |text: &str, chars: usize| {
        text.char_indices()
            .nth(chars)
            .map_or(text.len(), |(index, _)| index)
    };
    let line_count = text.split_inclusive('\n').count();
    if line_count == 0 {
        return Page::Empty;
    }
    if request.line == 0 || request.line > line_count {
        return Page::PastEnd { line_count };
    }
    let line_start: usize = text
        .split_inclusive('\n')
        .take(request.line - 1)
        .map(str::len)
        .sum();
    let first_content = text[line_start..].split('\n').next().unwrap_or("");
    let first_line_chars = first_content.chars().count();
    if request.char_offset > 0 && request.char_offset >= first_line_chars {
        return Page::PastLineEnd {
            line_count,
            line_chars: first_line_chars,
        };
    }
    let start = line_start + byte_index(first_content, request.char_offset);
    let (mut end, mut budget, mut taken) = (start, request.chars_max, 0usize);
    let (mut cut, mut next) = (None, None);
    for (index, segment) in text[start..].split_inclusive('\n').enumerate() {
        let line = request.line + index;
        if taken == request.lines_max || budget == 0 {
            next = Some((line, 0));
            break;
        }
        let content = segment.strip_suffix('\n').unwrap_or(segment);
        let content_chars = content.chars().count();
        if content_chars < budget || (content_chars == budget && content.len() == segment.len()) {
            end += segment.len();
            budget -= segment.chars().count();
        } else if content_chars == budget {
            end += content.len();
            budget = 0;
        } else if taken > 0 {
            next = Some((line, 0));
            break;
        } else {
            end += byte_index(content, budget);
            let offset_in_line = if index == 0 { request.char_offset } else { 0 };
            let stop = offset_in_line + budget;
            cut = Some((stop, offset_in_line + content_chars));
            next = Some((line, stop));
            taken += 1;
            break;
        }
        taken += 1;
    }
    Page::Content {
        text: &text[start..end],
        first_line: request.line,
        last_line: request.line + taken - 1,
        start_char: request.char_offset,
        cut,
        next,
        line_count,
        first_line_chars,
    }
}

proptest::proptest! {
    /// Any text (multi-byte characters, CRLF, empty and very long lines), any request: the same
    /// page as the reference.
    #[test]
    fn pages_match_the_reference(
        text in "(a|é|中|😀|\n|\r\n| |xyz|\n\n){0,120}",
        line in 0usize..40,
        char_offset in 0usize..60,
        lines_max in 1usize..8,
        chars_max in 1usize..50,
    ) {
        let request = PageRequest { line, char_offset, lines_max, chars_max };
        proptest::prop_assert_eq!(page(&text, request), reference_page(&text, request));
    }
}

#[test]
fn pages_of_a_long_line_match_the_reference() {
    let line = generate_text(TextKind::Cjk, 30_000, 4).replace('\n', " ");
    let text = format!("head\n{line}\n{line}tail\nend");
    for (line, char_offset, lines_max, chars_max) in [
        (1, 0, 3, READ_FILE_CHARS_MAX),
        (1, 0, 3, 4),
        (2, 0, 1, READ_FILE_CHARS_MAX),
        (2, 25_000, 5, READ_FILE_CHARS_MAX),
        (3, 29_999, 5, 7),
        (3, 40_000, 5, 7),
        (4, 0, 5, 7),
    ] {
        let request = PageRequest {
            line,
            char_offset,
            lines_max,
            chars_max,
        };
        assert_eq!(
            page(&text, request),
            reference_page(&text, request),
            "{request:?}"
        );
    }
}
