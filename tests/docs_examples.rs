//! Every example in docs/scenario-format.md is checked: each TOML block loads as the file kind it
//! shows, each commented-out setting (`# key = value`, over as many comment lines as it takes)
//! still loads once uncommented in place, and the "Mistakes in files" output is what `ctxbed
//! check` prints for the file shown beside it.

use std::path::PathBuf;

use ctxbed::scenario::format::diagnostic::Diagnostic;
use ctxbed::scenario::format::file::{Layout, parse_scenario};
use ctxbed::scenario::format::mock_file::parse_mock;

const DOC: &str = "docs/scenario-format.md";

#[allow(dead_code)]
#[path = "../src/cli/doc_lines.rs"]
mod doc_lines;

/// A fenced block of the document: its language, first line (1-based) and text.
struct Block {
    language: String,
    line: usize,
    text: String,
}

/// The document's blocks, as every page's are read (`doc_lines`), each numbered from its first
/// line of text rather than its fence.
fn blocks() -> Vec<Block> {
    doc_lines::blocks_of(DOC)
        .into_iter()
        .map(|block| Block {
            language: block.language,
            line: block.line + 1,
            text: block.text + "\n",
        })
        .collect()
}

fn is_scenario(text: &str) -> bool {
    text.contains("[[steps]]")
}

fn rendered(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Loads `text` as the kind of file it shows, from the repository's suite root.
fn load(text: &str, label: &str) -> Result<(), String> {
    let outcome = if is_scenario(text) {
        let layout = Layout {
            root: PathBuf::from("."),
            name: "docs/example".into(),
        };
        parse_scenario(&layout, label, text).map(drop)
    } else {
        parse_mock("example", label, text).map(drop)
    };
    outcome.map_err(|diagnostics| rendered(&diagnostics))
}

/// The key of a commented-out setting (`# key = …` or `# [table]`), if the line is one.
fn commented_setting(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("# ") else {
        return false;
    };
    if rest.starts_with('[') {
        return true;
    }
    let key: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    !key.is_empty() && rest[key.len()..].starts_with(" = ")
}

fn uncomment(line: &str) -> &str {
    line.strip_prefix("# ")
        .or_else(|| line.strip_prefix('#'))
        .unwrap_or(line)
}

/// Each commented-out setting of `text`: its line range, extended over the comment lines that
/// follow until it parses as TOML on its own.
fn commented_examples(text: &str) -> Vec<std::ops::Range<usize>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut examples = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        if !commented_setting(line) {
            continue;
        }
        let mut end = start + 1;
        let mut fragment = uncomment(line).to_string();
        while toml::from_str::<toml::Table>(&fragment).is_err()
            && lines.get(end).is_some_and(|next| next.starts_with('#'))
        {
            fragment.push('\n');
            fragment.push_str(uncomment(lines[end]));
            end += 1;
        }
        examples.push(start..end);
    }
    examples
}

/// The setting an example's comment offers instead (`… # or { enabled = false }`), written out
/// as `key = value`, when the text after `or` is a TOML value.
fn alternative(lines: &[&str], range: &std::ops::Range<usize>) -> Option<String> {
    let first = uncomment(lines[range.start]);
    let key = first.split(" = ").next()?;
    let last = uncomment(lines[range.end - 1]);
    let offered = last
        .rsplit("# or ")
        .next()
        .filter(|_| last.contains("# or "))?;
    let setting = format!("{key} = {}", offered.trim());
    toml::from_str::<toml::Table>(&setting).ok()?;
    Some(setting)
}

fn replaced(lines: &[&str], range: &std::ops::Range<usize>, setting: &str) -> String {
    let mut text = String::new();
    for (index, line) in lines.iter().enumerate() {
        if index == range.start {
            text.push_str(setting);
        } else if !range.contains(&index) {
            text.push_str(line);
        }
        text.push('\n');
    }
    text
}

#[test]
fn every_toml_block_loads_and_so_does_every_commented_setting() {
    let toml_blocks: Vec<Block> = blocks()
        .into_iter()
        .filter(|b| b.language == "toml")
        .collect();
    assert!(toml_blocks.len() >= 4, "the reference lost its examples");
    let mut failures = Vec::new();
    let mut variants = 0;
    for block in &toml_blocks {
        // The file under "Mistakes in files" is wrong on purpose; the next test checks it.
        if block.text.contains("max_step = 4") {
            continue;
        }
        let label = format!("{DOC} (the block at line {})", block.line);
        if let Err(problems) = load(&block.text, &label) {
            failures.push(format!("the block at {label} does not load:\n{problems}"));
        }
        let lines: Vec<&str> = block.text.lines().collect();
        for range in commented_examples(&block.text) {
            variants += 1;
            let doc_line = block.line + range.start;
            let mut variant = String::new();
            for (index, line) in lines.iter().enumerate() {
                variant.push_str(if range.contains(&index) {
                    uncomment(line)
                } else {
                    line
                });
                variant.push('\n');
            }
            if let Err(problems) = load(&variant, &label) {
                failures.push(format!(
                    "{DOC}:{doc_line}: `{}` does not load once uncommented:\n{problems}",
                    lines[range.start]
                ));
            }
            if let Some(alternative) = alternative(&lines, &range) {
                variants += 1;
                let variant = replaced(&lines, &range, &alternative);
                if let Err(problems) = load(&variant, &label) {
                    failures.push(format!(
                        "{DOC}:{doc_line}: the alternative `{alternative}` does not load:\n{problems}"
                    ));
                }
            }
        }
    }
    assert!(
        variants >= 40,
        "only {variants} commented settings found: the scan is broken"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_mistakes_shown_are_what_check_prints_for_the_file_shown() {
    let all = blocks();
    let position = all
        .iter()
        .position(|b| b.language == "text" && b.text.contains("unknown field `max_step`"))
        .expect("the Mistakes in files example");
    let shown = &all[position];
    let file = all
        .get(position + 1)
        .filter(|b| b.language == "toml" && b.text.contains("max_step = 4"))
        .expect("the file the mistakes come from, right after them");
    let layout = Layout {
        root: PathBuf::from("."),
        name: "loop/x".into(),
    };
    let diagnostics = match parse_scenario(&layout, "scenarios/loop/x.toml", &file.text) {
        Ok(_) => panic!("the example file with mistakes loaded"),
        Err(diagnostics) => diagnostics,
    };
    assert_eq!(
        rendered(&diagnostics).trim_end(),
        shown.text.trim_end(),
        "{DOC}:{}: the output shown is not what ctxbed prints",
        shown.line
    );
}
