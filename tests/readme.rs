//! The README's quick start, run as written (between its `<!-- quick-start -->` markers) in an
//! empty directory, with this build's `ctxbed` first on the PATH.

use std::process::Command;

#[test]
fn the_quick_start_passes_as_written() {
    let readme = std::fs::read_to_string("README.md").expect("the README");
    let block = readme
        .split("<!-- quick-start -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- /quick-start -->").next())
        .expect("the quick-start markers");
    let script = block
        .trim()
        .strip_prefix("```sh")
        .and_then(|rest| rest.strip_suffix("```"))
        .expect("one sh code block between the markers");
    assert!(
        script.lines().count() <= 40,
        "the quick start is at most 40 lines"
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_ctxbed"))
        .parent()
        .expect("the binary's directory")
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .expect("a PATH");
    let output = Command::new("bash")
        .arg("-euo")
        .arg("pipefail")
        .arg("-c")
        .arg(script)
        .current_dir(dir.path())
        .env("PATH", path)
        .env_remove("CI")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let runs: Vec<&str> = stdout.split("passed, ").collect();
    assert_eq!(runs.len(), 4, "three runs, each with a summary:\n{stdout}");
    assert!(stdout.contains("FAIL     first"), "{stdout}");
    assert!(stdout.contains("blessed  first"), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("1 passed, 0 failed"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ok       first  (2 requests, 2 checks)"),
        "{stdout}"
    );
    let golden = dir.path().join("demo/golden/first.snap");
    let trace = std::fs::read_to_string(golden).expect("the blessed golden");
    assert!(trace.contains("The linker ran out of memory."), "{trace}");
}

/// The code block between `<!-- NAME -->` and `<!-- /NAME -->`, without its fences.
fn fenced_block<'a>(readme: &'a str, name: &str, language: &str) -> &'a str {
    readme
        .split(&format!("<!-- {name} -->"))
        .nth(1)
        .and_then(|rest| rest.split(&format!("<!-- /{name} -->")).next())
        .and_then(|block| block.trim().strip_prefix(&format!("```{language}\n")))
        .and_then(|block| block.strip_suffix("```"))
        .unwrap_or_else(|| panic!("one {language} block between the {name} markers"))
}

/// "Test your harness" comes first and each of its examples is under 25 lines; `python/ci`
/// and `npm/ci` run both as written against the installed wheel and tarballs.
#[test]
fn the_test_your_harness_examples_come_first_and_are_short() {
    let readme = std::fs::read_to_string("README.md").expect("the README");
    let first = readme
        .lines()
        .find(|line| line.starts_with("## "))
        .expect("a section");
    assert_eq!(first, "## Test your harness");
    for (name, language, runner) in [
        ("test-your-harness:python", "python", "python/ci"),
        ("test-your-harness:node", "js", "npm/ci"),
    ] {
        let block = fenced_block(&readme, name, language);
        let lines = block.lines().count();
        assert!(lines < 25, "{name} is {lines} lines");
        let script = std::fs::read_to_string(runner).expect("the runner");
        assert!(
            script.contains(&format!("<!-- {name} -->")),
            "{runner} runs the {name} block"
        );
    }
}
