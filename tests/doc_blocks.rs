//! Every code block of the pages people read is run or checked, and says how.
//!
//! The pages and their blocks are read by `src/cli/doc_lines.rs`. A fenced block in the README, BENCHMARKS.md, `docs/` (its generated pages and the history of
//! rounds aside) or a package's README is preceded by a marker, and the marker is honoured here:
//!
//! - `<!-- example: run -->`: a `sh` block, run here as written by bash (`-euo pipefail`) in an
//!   empty directory where `scenarios/`, `mock-models/` and `golden/` are the repository's, with
//!   this build's `ctxbed` first on the PATH;
//! - `<!-- example: commands -->`, or `<!-- example: commands (external: cargo curl) -->`: a `sh`
//!   block of command lines too long or too outward-facing to run in a test (a million seeds, a
//!   real model server); each `ctxbed …` or `cargo run --release -- …` line is parsed by the
//!   binary's own argument parser (`src/main.rs`'s tests, which read these blocks too), every
//!   repository path it names exists, and every other line runs a program the marker lists;
//! - `<!-- example: fragment of FILE -->`: a TOML fragment that loads once appended to the
//!   scenario FILE;
//! - `<!-- example: protocol -->`: adapter-protocol lines, each a JSON object of a known type;
//! - `<!-- example: checked-by FILE -->`: run by another test or CI script, which names the page;
//! - `<!-- NAME -->` (the README's older markers): a block whose closing `<!-- /NAME -->` follows
//!   it, run by a test or CI script that names the marker.

#[allow(dead_code)]
#[path = "../src/cli/doc_lines.rs"]
mod doc_lines;

use std::path::{Path, PathBuf};
use std::process::Command;

use doc_lines::{Block, all_blocks, command_lines};

/// The directory `sh` examples run in: empty but for the repository's suite, linked.
fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = std::env::current_dir().expect("the repository");
    for name in ["scenarios", "mock-models", "golden"] {
        std::os::unix::fs::symlink(root.join(name), dir.path().join(name)).expect("a link");
    }
    dir
}

fn path_with_ctxbed() -> std::ffi::OsString {
    let bin = Path::new(env!("CARGO_BIN_EXE_ctxbed"))
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&rest))).expect("a PATH")
}

fn run(block: &Block) -> Result<(), String> {
    if block.language != "sh" {
        return Err(format!("a `run` example is sh, not {:?}", block.language));
    }
    let dir = sandbox();
    let output = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &block.text])
        .current_dir(dir.path())
        .env("PATH", path_with_ctxbed())
        .env_remove("CI")
        .output()
        .map_err(|error| format!("bash: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "it failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

/// The words of a command line that name a file or directory of the repository it reads (an
/// output named after `-o`, `--out`, `--logs`, `--matrix` or `--page` need not exist yet).
fn repository_paths(line: &str) -> Vec<PathBuf> {
    let roots = [
        "scenarios/",
        "mock-models/",
        "docs/",
        "peers/",
        "tools/",
        "tests/",
    ];
    let outputs = ["-o", "--out", "--logs", "--matrix", "--page"];
    let words: Vec<&str> = line.split_whitespace().collect();
    words
        .iter()
        .enumerate()
        .filter(|(at, _)| *at == 0 || !outputs.contains(&words[at - 1]))
        .map(|(_, word)| *word)
        .filter(|word| roots.iter().any(|root| word.starts_with(root)))
        .map(PathBuf::from)
        .collect()
}

fn commands(block: &Block, marker: &str) -> Result<(), String> {
    let external: Vec<&str> = marker
        .split_once("(external:")
        .map(|(_, rest)| rest.trim_end_matches(')').split_whitespace().collect())
        .unwrap_or_default();
    let mut problems = Vec::new();
    for line in command_lines(&block.text) {
        let program = line.split_whitespace().next().unwrap_or("");
        let ours = program == "ctxbed" || line.starts_with("cargo run --release -- ");
        let local = program.contains('/') && Path::new(program).is_file();
        if !ours && !local && !external.contains(&program) {
            problems.push(format!(
                "`{line}`: {program} is neither ctxbed nor listed external"
            ));
        }
        for path in repository_paths(&line) {
            if !path.exists() {
                problems.push(format!("`{line}`: {} does not exist", path.display()));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn fragment(block: &Block, base: &str) -> Result<(), String> {
    let scenario = std::fs::read_to_string(base).map_err(|error| format!("{base}: {error}"))?;
    let whole = format!("{scenario}\n{}\n", block.text);
    let layout = ctxbed::scenario::format::file::Layout {
        root: PathBuf::from("."),
        name: "docs/fragment".into(),
    };
    ctxbed::scenario::format::file::parse_scenario(&layout, &block.at(), &whole)
        .map(drop)
        .map_err(|diagnostics| {
            diagnostics
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        })
}

fn protocol(block: &Block) -> Result<(), String> {
    const TYPES: [&str; 9] = [
        "setup",
        "step",
        "reset",
        "ready",
        "unsupported",
        "reply",
        "error",
        "unanswered",
        "interrupted",
    ];
    for line in block.text.lines() {
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|error| format!("`{line}`: {error}"))?;
        let kind = value.get("type").and_then(|kind| kind.as_str());
        if !kind.is_some_and(|kind| TYPES.contains(&kind)) {
            return Err(format!("`{line}`: no known `type`"));
        }
    }
    Ok(())
}

fn checked_by(block: &Block, runner: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(runner).map_err(|error| format!("{runner}: {error}"))?;
    let page_dir = Path::new(&block.page)
        .parent()
        .map(|dir| dir.to_string_lossy().to_string())
        .filter(|dir| !dir.is_empty() && dir != "docs" && dir != "python" && dir != "npm/ctxbed");
    let named = text.contains(&block.page) || page_dir.is_some_and(|dir| text.contains(&dir));
    if named {
        Ok(())
    } else {
        Err(format!("{runner} does not name {}", block.page))
    }
}

/// An older README marker: its closing marker follows the block, and a runner names it.
fn named(block: &Block, name: &str) -> Result<(), String> {
    let page = std::fs::read_to_string(&block.page).map_err(|error| error.to_string())?;
    if !page.contains(&format!("<!-- /{name} -->")) {
        return Err(format!("no closing <!-- /{name} -->"));
    }
    let runners = ["tests/readme.rs", "python/ci", "npm/ci"];
    let found = runners.iter().any(|runner| {
        std::fs::read_to_string(runner).is_ok_and(|text| {
            text.contains(&format!("<!-- {name} -->")) || text.contains(&format!("\"{name}\""))
        })
    });
    if found {
        Ok(())
    } else {
        Err(format!("no runner names <!-- {name} -->"))
    }
}

fn honour(block: &Block) -> Result<(), String> {
    let Some(marker) = block.marker.as_deref() else {
        return Err("no marker: say how the example is run or checked".into());
    };
    let Some(how) = marker.strip_prefix("example:").map(str::trim) else {
        return named(block, marker);
    };
    match how.split_whitespace().next() {
        Some("run") => run(block),
        Some("commands") => commands(block, how),
        Some("protocol") => protocol(block),
        Some("fragment") => fragment(block, how.trim_start_matches("fragment of").trim()),
        Some("checked-by") => checked_by(block, how.trim_start_matches("checked-by").trim()),
        _ => Err(format!("unknown marker `{marker}`")),
    }
}

#[test]
fn every_example_in_the_pages_is_run_or_checked() {
    let blocks = all_blocks();
    assert!(blocks.len() >= 30, "only {} blocks found", blocks.len());
    let failures: Vec<String> = blocks
        .iter()
        .filter_map(|block| {
            honour(block)
                .err()
                .map(|why| format!("{}: {why}", block.at()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_broken_example_is_caught() {
    let block = |marker: &str, language: &str, text: &str| Block {
        page: "README.md".into(),
        line: 1,
        marker: Some(marker.into()),
        language: language.into(),
        text: text.into(),
    };
    let cases = [
        block("example: run", "sh", "ctxbed show scenarios/no/such.toml"),
        block("example: commands", "sh", "llama-server --port 8080"),
        block(
            "example: commands",
            "sh",
            "ctxbed run scenarios/no/such.toml",
        ),
        block("example: protocol", "json", r#"{"type":"stepp"}"#),
        block(
            "example: fragment of scenarios/tools/tool-then-reply.toml",
            "toml",
            "[network]\nlatency = 3",
        ),
        block("example: checked-by tests/lengths.rs", "sh", "true"),
        block("nothing-runs-this", "sh", "true"),
    ];
    for case in &cases {
        assert!(honour(case).is_err(), "{case:?} passed");
    }
    assert!(
        honour(&Block {
            marker: None,
            ..block("", "sh", "true")
        })
        .is_err()
    );
}

/// The command lines `src/main.rs`'s tests parse are the ones this file finds.
#[test]
fn command_lines_join_continuations_and_drop_comments() {
    let lines = command_lines(
        "# a comment\nX_Y=1 cargo run --release -- sweep \\\n    --seeds 5   # five\nctxbed conform --list\n",
    );
    assert_eq!(
        lines,
        [
            "cargo run --release -- sweep --seeds 5",
            "ctxbed conform --list"
        ]
    );
}
