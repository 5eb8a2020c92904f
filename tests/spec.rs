//! SPEC.md stays true to the tree: every code path a row cites exists, every name cited right
//! after a path occurs in that file (or the module directory beside it), and every scenario a
//! row cites (`area/name` under `scenarios/`) exists.

use std::path::{Path, PathBuf};

const SPEC: &str = include_str!("../SPEC.md");

/// The file a SPEC citation names: bare paths are the harness's, prefixed ones another crate's.
fn resolve(cited: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (dir, rest) = if let Some(rest) = cited.strip_prefix("providers/") {
        ("crates/providers/src", rest)
    } else if let Some(rest) = cited.strip_prefix("sim/") {
        ("crates/sim/src", rest)
    } else if let Some(rest) = cited.strip_prefix("ctxbed/") {
        ("src", rest)
    } else if ["tests/", "benches/", "examples/", "crates/"]
        .iter()
        .any(|p| cited.starts_with(p))
    {
        ("", cited)
    } else {
        ("crates/harness/src", cited)
    };
    root.join(dir).join(rest)
}

/// The text of a cited file and of every file in the module directory beside it.
fn module_text(file: &Path) -> String {
    let mut text = std::fs::read_to_string(file).unwrap_or_default();
    let dir = file.with_extension("");
    let mut stack = vec![dir];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    text
}

/// The backtick-quoted spans of a table cell, each with the text between it and the span before.
fn quoted(cell: &str) -> Vec<(&str, &str)> {
    let pieces: Vec<&str> = cell.split('`').collect();
    pieces
        .iter()
        .enumerate()
        .skip(1)
        .step_by(2)
        .map(|(i, span)| (pieces[i - 1], *span))
        .collect()
}

fn is_code_path(span: &str) -> bool {
    span.ends_with(".rs")
        && span
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '/' | '.'))
}

/// The name a span cites (`Call::prepare` → `prepare`), when it is one.
fn cited_name(span: &str) -> Option<&str> {
    let head = span.split(['(', ' ']).next()?;
    let last = head.rsplit("::").next()?.rsplit('.').next()?;
    let is_ident = !last.is_empty()
        && last.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !last.starts_with(|c: char| c.is_ascii_digit());
    is_ident.then_some(last)
}

fn occurs_as_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        let boundary = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        boundary(before) && boundary(after)
    })
}

#[test]
fn every_cited_file_and_name_exists() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (number, line) in SPEC.lines().enumerate() {
        if !line.starts_with("| ") {
            continue;
        }
        for cell in line.split('|') {
            // A name cited right after a path (or after a name cited from it, with nothing but
            // spaces or commas between) is cited from that path.
            let mut current: Option<(String, String)> = None;
            for (between, span) in quoted(cell) {
                if is_code_path(span) {
                    let file = resolve(span);
                    if file.is_file() {
                        current = Some((span.to_string(), module_text(&file)));
                        checked += 1;
                    } else {
                        problems.push(format!("line {}: `{span}` does not exist", number + 1));
                        current = None;
                    }
                    continue;
                }
                let adjacent = between.chars().all(|c| c == ' ' || c == ',');
                match (&current, cited_name(span)) {
                    (Some((path, text)), Some(name)) if adjacent => {
                        if !occurs_as_word(text, name) {
                            problems
                                .push(format!("line {}: `{span}` is not in `{path}`", number + 1));
                        }
                    }
                    _ => current = None,
                }
            }
        }
    }
    assert!(
        checked > 200,
        "only {checked} citations found: is SPEC.md read?"
    );
    assert!(
        problems.is_empty(),
        "SPEC.md cites what is not there:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_cited_scenario_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let areas: Vec<String> = std::fs::read_dir(&root)
        .expect("scenarios/")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (number, line) in SPEC.lines().enumerate() {
        if !line.starts_with("| R") && !line.starts_with("| I") && !line.starts_with("| H") {
            continue;
        }
        // The last cell says what asserts the row.
        let Some(asserted) = line.trim_end_matches('|').rsplit('|').next() else {
            continue;
        };
        for word in
            asserted.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')'))
        {
            let word = word.trim_matches(|c: char| matches!(c, '`' | '.' | ':'));
            let Some((area, name)) = word.split_once('/') else {
                continue;
            };
            let plain = |s: &str| {
                !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            };
            if !areas.iter().any(|a| a == area) || !plain(name) {
                continue;
            }
            checked += 1;
            if !root.join(area).join(format!("{name}.toml")).is_file() {
                problems.push(format!(
                    "line {}: scenario `{area}/{name}` does not exist",
                    number + 1
                ));
            }
        }
    }
    assert!(checked > 200, "only {checked} scenario citations found");
    assert!(
        problems.is_empty(),
        "SPEC.md cites scenarios that are not there:\n{}",
        problems.join("\n")
    );
}
