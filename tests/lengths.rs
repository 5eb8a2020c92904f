//! Short functions and small files (ARCHITECTURE.md, "Sizes the tests hold"): outside tests,
//! no function is over 70 lines and no file over 600, unless a `// Length:` comment in the
//! file's first lines says why (a table, a generated list). A function counts from its `fn`
//! line to its closing brace; a file counts up to its `#[cfg(test)]` module. Test code does not
//! count: files named `tests.rs`, and everything under a `tests` folder.
//!
//! The source is read as text: comments, string and character literals are blanked first, so a
//! brace inside them counts for nothing.

use std::path::PathBuf;

const FUNCTION_LINES_MAX: usize = 70;
const FILE_LINES_MAX: usize = 600;
/// How far from the top of a file a `// Length:` comment may stand.
const EXEMPTION_LINES: usize = 5;

/// Every `.rs` file of the packages' sources that is not test code.
fn source_files() -> Vec<PathBuf> {
    let mut roots = vec![PathBuf::from("src")];
    if let Ok(crates) = std::fs::read_dir("crates") {
        roots.extend(crates.flatten().map(|entry| entry.path().join("src")));
    }
    let mut files = Vec::new();
    while let Some(dir) = roots.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    roots.push(path);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The text with comments and literals replaced by spaces (newlines kept), so braces and `fn`
/// are only found in code.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&chars, i) {
            chars[i..end].iter().for_each(|&c| out.push(blank(c)));
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for &c in chars.iter().skip(i).take(step) {
                    out.push(blank(c));
                }
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if c == '\''
            && let Some(end) = char_literal_end(&chars, i)
        {
            (i..end).for_each(|_| out.push(' '));
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where a raw string starting at `at` (`r"…"`, `r#"…"#`, `br"…"`) ends, if one starts there.
fn raw_string_end(chars: &[char], at: usize) -> Option<usize> {
    let previous_is_ident = at > 0 && (chars[at - 1].is_alphanumeric() || chars[at - 1] == '_');
    if previous_is_ident {
        return None;
    }
    let mut i = at;
    if chars.get(i) == Some(&'b') {
        i += 1;
    }
    if chars.get(i) != Some(&'r') {
        return None;
    }
    i += 1;
    let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
    i += hashes;
    if chars.get(i) != Some(&'"') {
        return None;
    }
    i += 1;
    while i < chars.len() {
        if chars[i] == '"'
            && chars[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(chars.len())
}

/// Where a character literal starting at `at` ends; `None` for a lifetime or a label.
fn char_literal_end(chars: &[char], at: usize) -> Option<usize> {
    match chars.get(at + 1) {
        Some('\\') => {
            let close = chars[at + 2..].iter().position(|&c| c == '\'')?;
            Some(at + 2 + close + 1)
        }
        Some(_) if chars.get(at + 2) == Some(&'\'') => Some(at + 3),
        _ => None,
    }
}

/// Whether a line of code starts a function item (`fn`, `pub fn`, `pub(crate) async fn`, …).
fn starts_function(line: &str) -> Option<String> {
    let mut words = line.split_whitespace().peekable();
    while let Some(word) = words.peek() {
        let qualifier = word.starts_with("pub")
            || ["const", "async", "unsafe", "extern", "default"].contains(word)
            || word.starts_with('"');
        if !qualifier {
            break;
        }
        words.next();
    }
    if words.next()? != "fn" {
        return None;
    }
    let name: String = words
        .next()?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Each function of `code` (its name, first line, length in lines) over `max` lines.
fn long_functions(code: &[&str], max: usize) -> Vec<(String, usize, usize)> {
    let mut found = Vec::new();
    let mut index = 0;
    while index < code.len() {
        let Some(name) = starts_function(code[index]) else {
            index += 1;
            continue;
        };
        let (mut depth, mut opened, mut end) = (0i64, false, None);
        'lines: for (offset, line) in code[index..].iter().enumerate() {
            for c in line.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened => break 'lines,
                    _ => {}
                }
                if opened && depth == 0 {
                    end = Some(index + offset);
                    break 'lines;
                }
            }
        }
        match end {
            Some(last) => {
                let lines = last - index + 1;
                if lines > max {
                    found.push((name, index + 1, lines));
                }
                index = last + 1;
            }
            None => index += 1,
        }
    }
    found
}

#[test]
fn functions_and_files_stay_short() {
    let mut problems = Vec::new();
    let files = source_files();
    assert!(files.len() > 100, "only {} source files found", files.len());
    for path in &files {
        let text = std::fs::read_to_string(path).expect("a readable source file");
        let exempt = text
            .lines()
            .take(EXEMPTION_LINES)
            .any(|line| line.trim_start().starts_with("// Length:"));
        if exempt {
            continue;
        }
        let code = code_only(&text);
        let lines: Vec<&str> = code.lines().collect();
        let kept = lines
            .iter()
            .position(|line| line.trim_start().starts_with("#[cfg(test)]"))
            .unwrap_or(lines.len());
        if kept > FILE_LINES_MAX {
            problems.push(format!("{}: {kept} lines", path.display()));
        }
        for (name, line, length) in long_functions(&lines[..kept], FUNCTION_LINES_MAX) {
            problems.push(format!(
                "{}:{line}: fn {name} is {length} lines",
                path.display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "over the limits ({FUNCTION_LINES_MAX} lines a function, {FILE_LINES_MAX} a file; a `// Length:` comment at the top of a file says why it may be longer):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_sees_code_only_and_measures_functions() {
    let source = r##"
fn short() {
    let s = "}}}"; // }}}
    let r = r#"{ " {"#;
    let c = '{';
    let l: &'static str = "x";
}
pub(crate) async fn long() {
    /* { nested /* { */ } */
    if true {
        body();
    }
}
fn declared();
"##;
    let code = code_only(source);
    assert!(!code.contains("}}}"), "{code}");
    assert_eq!(code.lines().count(), source.lines().count());
    let lines: Vec<&str> = code.lines().collect();
    assert_eq!(
        long_functions(&lines, 5),
        vec![("short".to_string(), 2, 6), ("long".to_string(), 8, 6)]
    );
    assert!(long_functions(&lines, 6).is_empty());
    let planted = format!("fn planted() {{\n{}}}\n", "    step();\n".repeat(80));
    let planted_code = code_only(&planted);
    let planted_lines: Vec<&str> = planted_code.lines().collect();
    assert_eq!(
        long_functions(&planted_lines, FUNCTION_LINES_MAX),
        vec![("planted".to_string(), 1, 82)]
    );
}
