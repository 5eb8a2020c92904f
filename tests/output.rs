//! `--format json` and `--format junit`, read back with real parsers: a passing, a failing and an
//! invalid scenario (tests/format-suite), and a sweep.

use std::process::Command;

use serde_json::Value;

const SUITE: &str = "tests/format-suite/scenarios";

fn ctxbed(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(args)
        .env("CI", "true")
        .output()
        .expect("ctxbed runs");
    (
        output.status.code(),
        String::from_utf8(output.stdout).expect("UTF-8 output"),
    )
}

#[test]
fn json_is_one_object_per_scenario_then_a_summary() {
    let (code, text) = ctxbed(&["run", SUITE, "--format", "json"]);
    assert_eq!(code, Some(1));
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    let outcome = |name: &str| {
        lines
            .iter()
            .find(|l| l["name"] == name)
            .map(|l| l["outcome"].as_str().unwrap_or_default().to_string())
    };
    assert_eq!(outcome("demo/passes").as_deref(), Some("passed"));
    assert_eq!(outcome("demo/fails").as_deref(), Some("failed"));
    assert_eq!(outcome("demo/invalid").as_deref(), Some("invalid"));
    let fails = lines
        .iter()
        .find(|l| l["name"] == "demo/fails")
        .expect("fails");
    assert_eq!(
        fails["rerun"],
        "ctxbed run tests/format-suite/scenarios/demo/fails.toml"
    );
    assert!(
        fails["reasons"][0]
            .as_str()
            .unwrap_or_default()
            .contains("Goodbye <friend>.")
    );
    let summary = lines.last().expect("a summary");
    assert_eq!(summary["type"], "summary");
    assert_eq!(
        (summary["passed"].as_u64(), summary["failed"].as_u64()),
        (Some(1), Some(2))
    );
}

#[test]
fn junit_has_a_test_case_per_scenario_with_failures_and_errors() {
    let (code, text) = ctxbed(&["run", SUITE, "--format", "junit"]);
    assert_eq!(code, Some(1));
    let document = roxmltree::Document::parse(&text).expect("well-formed XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        (
            root.attribute("tests"),
            root.attribute("failures"),
            root.attribute("errors")
        ),
        (Some("3"), Some("1"), Some("1"))
    );
    let cases: Vec<roxmltree::Node> = root
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 3);
    let case = |name: &str| {
        cases
            .iter()
            .find(|c| c.attribute("name") == Some(name))
            .copied()
            .expect("the test case")
    };
    assert!(case("demo/passes").children().all(|c| !c.is_element()));
    assert_eq!(
        case("demo/passes").attribute("classname"),
        Some("scenarios.demo")
    );
    let failure = case("demo/fails")
        .children()
        .find(|c| c.has_tag_name("failure"))
        .expect("a failure element");
    let message = failure.attribute("message").unwrap_or_default();
    assert!(
        message.contains(r#"reply = "Goodbye <friend>.""#),
        "{message}"
    );
    let body = failure.text().unwrap_or_default();
    assert!(
        body.contains(r#"found: reply "Hello <there> & \"welcome\".""#),
        "{body}"
    );
    assert!(
        body.ends_with("rerun: ctxbed run tests/format-suite/scenarios/demo/fails.toml"),
        "{body}"
    );
    let error = case("demo/invalid")
        .children()
        .find(|c| c.has_tag_name("error"))
        .expect("an error element");
    assert!(
        error
            .text()
            .unwrap_or_default()
            .contains("invalid.toml:2:8")
    );
}

#[test]
fn the_xml_escape_keeps_documents_well_formed_whatever_the_text() {
    let hostile = "a\u{0}b\u{1b}[31m<x y=\"1\">&amp;</x>\u{FFFF}";
    let escaped = ctxbed::output::xml_escape(hostile);
    let document = format!("<r a=\"{escaped}\">{escaped}</r>");
    let parsed = roxmltree::Document::parse(&document).expect("well-formed");
    let text = parsed.root_element().text().unwrap_or_default();
    assert_eq!(text, "a\u{FFFD}b\u{FFFD}[31m<x y=\"1\">&amp;</x>\u{FFFD}");
}

#[test]
fn a_json_sweep_reports_every_seed_then_a_summary() {
    let out = tempfile::tempdir().expect("a temporary directory");
    let (code, text) = ctxbed(&[
        "sweep",
        "--seeds",
        "4",
        "--start",
        "10",
        "--shard",
        "1/2",
        "--jobs",
        "1",
        "--format",
        "json",
        "--out",
        out.path().to_str().expect("UTF-8"),
    ]);
    assert_eq!(code, Some(0), "{text}");
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("every line is JSON"))
        .collect();
    let seeds: Vec<u64> = lines.iter().filter_map(|l| l["seed"].as_u64()).collect();
    assert_eq!(seeds, [11, 13], "the shard's seeds, in order");
    assert!(lines[..2].iter().all(|l| l["outcome"] == "passed"));
    let summary = lines.last().expect("a summary");
    assert_eq!(
        (summary["type"].as_str(), summary["seeds"].as_u64()),
        (Some("summary"), Some(2))
    );
}
