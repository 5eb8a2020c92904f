//! `write_file`, `edit_file` and `list_files`.

use serde_json::json;

use super::Bench;

#[test]
fn write_creates_then_replaces() {
    let bench = Bench::new(&[]);
    bench.check(
        "write_file",
        json!({"path": "notes/todo.md", "content": "- a\n- b\n"}),
        false,
        "created notes/todo.md: 8 chars in 2 lines",
    );
    bench.check(
        "write_file",
        json!({"path": "notes/todo.md", "content": "- c"}),
        false,
        "replaced notes/todo.md: 3 chars in 1 line (was 8 bytes)",
    );
    assert_eq!(bench.file("notes/todo.md").as_deref(), Some("- c"));
    bench.check(
        "read_file",
        json!({"path": "notes/todo.md"}),
        false,
        "[notes/todo.md: line 1 of 1]\n- c",
    );
}

#[test]
fn write_refuses_directories_and_paths_under_files() {
    let bench = Bench::new(&[("docs/a.md", "a"), ("plain.txt", "p")]);
    bench.check(
        "write_file",
        json!({"path": "docs", "content": "x"}),
        true,
        "`docs` is a directory; write to a file inside it, e.g. `docs/notes.md`",
    );
    bench.check(
        "write_file",
        json!({"path": "plain.txt/inner.md", "content": "x"}),
        true,
        "`plain.txt` is a file, so `plain.txt/inner.md` cannot be created inside it",
    );
    assert_eq!(bench.file("plain.txt/inner.md"), None);
}

#[test]
fn a_failed_write_is_reported_and_changes_nothing() {
    let bench = Bench::new(&[("out/report.md", "old")]);
    bench.storage.fail_writes_under("out/");
    bench.check(
        "write_file",
        json!({"path": "out/report.md", "content": "new"}),
        true,
        "write to `out/report.md` failed: injected write failure; the file is unchanged",
    );
    bench.check(
        "write_file",
        json!({"path": "out/other.md", "content": "new"}),
        true,
        "write to `out/other.md` failed: injected write failure; nothing was written",
    );
    bench.check(
        "edit_file",
        json!({"path": "out/report.md", "old": "old", "new": "new"}),
        true,
        "write to `out/report.md` failed: injected write failure; the file is unchanged",
    );
    assert_eq!(bench.file("out/report.md").as_deref(), Some("old"));
    assert_eq!(bench.file("out/other.md"), None);
}

#[test]
fn write_bounds_its_content() {
    let bench = Bench::new(&[]);
    let outcome = bench.call(
        "write_file",
        json!({"path": "big.md", "content": "x".repeat(crate::limits::WRITE_FILE_CHARS_MAX + 1)}),
    );
    assert!(outcome.is_error);
    assert!(
        super::text(&outcome).starts_with(
            "invalid write_file arguments: `content` is 1000001 characters long; at most 1000000\nexpected: {\"path\": string (required), \"content\": string (required)}"
        ),
        "{}",
        super::text(&outcome)
    );
    assert_eq!(bench.file("big.md"), None);
    bench.check(
        "write_file",
        json!({"path": "a.md"}),
        true,
        "invalid write_file arguments: missing required argument `content`\nexpected: {\"path\": string (required), \"content\": string (required)}",
    );
}

#[test]
fn edit_replaces_the_one_exact_match() {
    let bench = Bench::new(&[("src/lib.rs", "fn a() {}\nfn b() {}\n")]);
    bench.check(
        "edit_file",
        json!({"path": "src/lib.rs", "old": "fn b() {}", "new": "fn b() { a() }"}),
        false,
        "edited src/lib.rs: replaced 1 match at line 2 (9 chars -> 14 chars); the file now has 25 chars in 2 lines",
    );
    assert_eq!(
        bench.file("src/lib.rs").as_deref(),
        Some("fn a() {}\nfn b() { a() }\n")
    );
}

#[test]
fn edit_errors_say_why_and_change_nothing() {
    let original = "let x = 1;\nlet y = 1;\nlet x = 1;\n  indented\n";
    let bench = Bench::new(&[("a.rs", original), ("aaa.txt", "aaa")]);
    bench.check(
        "edit_file",
        json!({"path": "a.rs", "old": "let x = 1;", "new": "let x = 2;"}),
        true,
        "`old` occurs 2 times in a.rs (at lines 1, 3); include more surrounding text so that it occurs exactly once; the file is unchanged",
    );
    bench.check(
        "edit_file",
        json!({"path": "a.rs", "old": "let z = 1;", "new": "let z = 2;"}),
        true,
        "`old` was not found in a.rs; it must match exactly, including whitespace and line breaks: read_file shows the current text; the file is unchanged",
    );
    bench.check(
        "edit_file",
        json!({"path": "a.rs", "old": "    indented", "new": "flush"}),
        true,
        "`old` was not found in a.rs (without its leading and trailing whitespace it occurs at line 4); it must match exactly, including whitespace and line breaks: read_file shows the current text; the file is unchanged",
    );
    bench.check(
        "edit_file",
        json!({"path": "aaa.txt", "old": "aa", "new": "b"}),
        true,
        "`old` occurs 2 times in aaa.txt (at lines 1, 1); include more surrounding text so that it occurs exactly once; the file is unchanged",
    );
    bench.check(
        "edit_file",
        json!({"path": "a.rs", "old": "", "new": "x"}),
        true,
        "`old` is empty; give the exact text to replace (read_file shows it)",
    );
    bench.check(
        "edit_file",
        json!({"path": "a.rs", "old": "y", "new": "y"}),
        true,
        "`old` and `new` are the same; nothing to change",
    );
    bench.check(
        "edit_file",
        json!({"path": "missing.rs", "old": "a", "new": "b"}),
        true,
        "no file `missing.rs` in the workspace; list_files shows what exists and write_file creates files",
    );
    bench.check(
        "edit_file",
        json!({"path": "a.rs", "old": "a"}),
        true,
        "invalid edit_file arguments: missing required argument `new`\nexpected: {\"path\": string (required), \"old\": string (required), \"new\": string (required)}",
    );
    assert_eq!(bench.file("a.rs").as_deref(), Some(original));
    assert_eq!(bench.file("aaa.txt").as_deref(), Some("aaa"));
}

#[test]
fn edit_lists_at_most_ten_lines_of_many_matches() {
    let bench = Bench::new(&[("many.txt", &"same\n".repeat(12))]);
    bench.check(
        "edit_file",
        json!({"path": "many.txt", "old": "same", "new": "other"}),
        true,
        "`old` occurs 12 times in many.txt (at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …); include more surrounding text so that it occurs exactly once; the file is unchanged",
    );
}

#[test]
fn edit_refuses_binary_files() {
    let bench = Bench::new(&[]);
    bench.put("b.bin", &[b'a', 0xC3]);
    bench.check(
        "edit_file",
        json!({"path": "b.bin", "old": "a", "new": "b"}),
        true,
        "`b.bin` is not UTF-8 text (byte 0xC3 at byte 1); only UTF-8 text files can be shown or edited",
    );
}

#[test]
fn list_shows_files_and_directories_sorted() {
    let bench = Bench::new(&[
        ("README.md", "r"),
        ("src/main.rs", "m"),
        ("src/tools/a.rs", "a"),
        ("src/tools/b.rs", "b"),
        ("AGENTS.md", "g"),
    ]);
    bench.check(
        "list_files",
        json!({}),
        false,
        "[workspace root: 2 files, 1 directory]\nAGENTS.md\nREADME.md\nsrc/ (3 files)",
    );
    bench.check(
        "list_files",
        json!({"dir": "src"}),
        false,
        "[src/: 1 file, 1 directory]\nsrc/main.rs\nsrc/tools/ (2 files)",
    );
    bench.check(
        "list_files",
        json!({"dir": "src/tools/"}),
        false,
        "[src/tools/: 2 files, 0 directories]\nsrc/tools/a.rs\nsrc/tools/b.rs",
    );
    bench.check(
        "list_files",
        json!({"dir": "."}),
        false,
        "[workspace root: 2 files, 1 directory]\nAGENTS.md\nREADME.md\nsrc/ (3 files)",
    );
}

#[test]
fn list_errors_and_empty_workspace() {
    let bench = Bench::new(&[("a.md", "a")]);
    bench.check(
        "list_files",
        json!({"dir": "a.md"}),
        true,
        "`a.md` is a file, not a directory; read it with read_file",
    );
    bench.check(
        "list_files",
        json!({"dir": "docs"}),
        true,
        "no directory `docs` in the workspace; list_files without `dir` lists the root",
    );
    bench.check(
        "list_files",
        json!({"dir": 3}),
        true,
        "invalid list_files arguments: `dir` must be a string, got 3 (an integer)\nexpected: {\"dir\": string}",
    );
    Bench::new(&[]).check("list_files", json!({}), false, "[workspace root: empty]");
}

#[test]
fn list_bounds_its_entries() {
    let names: Vec<String> = (0..205).map(|i| format!("logs/{i:03}.log")).collect();
    let files: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "x")).collect();
    let bench = Bench::new(&files);
    let outcome = bench.call("list_files", json!({"dir": "logs"}));
    let found = super::text(&outcome);
    assert!(
        found.starts_with("[logs/: 205 files, 0 directories]\nlogs/000.log\n"),
        "{found}"
    );
    assert!(
        found.ends_with(
            "logs/199.log\n[… and 5 more entries; list a subdirectory to narrow the listing]"
        ),
        "{found}"
    );
    assert_eq!(found.lines().count(), 202);
}
