//! The visual report and `ctxbed explain`: an SVG snapshot compared byte for byte, and the two
//! commands end to end.
//!
//! `CTXBED_BLESS=1 cargo test --test report` rewrites the snapshot; outside CI a mismatch writes
//! `<snapshot>.new` next to it for review.

use std::path::Path;
use std::process::Command;

use ctxbed::scenario::check::outcome::run;
use ctxbed::scenario::check::report;
use ctxbed::scenario::format::file::load;

/// Compares the overview chart of a scenario with its snapshot, or blesses it.
fn check_svg(scenario: &str, snapshot: &str) {
    let loaded = load(Path::new(&format!("scenarios/{scenario}.toml"))).expect("scenario loads");
    let output = run(&loaded).expect("scenario runs");
    let actual = report::svg(&output.trace, &loaded);
    let path = Path::new("tests/report_snapshots").join(snapshot);
    if ctxbed::scenario::check::golden::bless_from_env().expect("the bless switch") {
        std::fs::write(&path, &actual).expect("snapshot written");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected == actual {
        return;
    }
    let new_path = path.with_extension("svg.new");
    if std::env::var_os("CI").is_none() {
        std::fs::write(&new_path, &actual).expect("new snapshot written");
    }
    let diff = similar::TextDiff::from_lines(&expected, &actual)
        .unified_diff()
        .header("snapshot", "actual")
        .to_string();
    panic!(
        "{} differs from the chart of scenarios/{scenario}.toml (new version: {}); review, \
         then bless with CTXBED_BLESS=1 cargo test --test report\n{diff}",
        path.display(),
        new_path.display()
    );
}

#[test]
fn overview_chart_of_overflow_recover_once() {
    check_svg("overflow/recover-once", "overflow-recover-once.svg");
}

fn ctxbed(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(args)
        .env("CI", "true")
        .output()
        .expect("ctxbed runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

const RECOVER_ONCE: &str = "scenarios/overflow/recover-once.toml";

#[test]
fn explain_prints_why_each_item_was_kept_or_dropped() {
    let (code, text, _) = ctxbed(&["explain", RECOVER_ONCE, "--request", "4"]);
    assert_eq!(code, 0, "{text}");
    for needle in [
        "request 4 of 4: call-1/r1.retry reasoning",
        "estimate 823 of input limit 13680 tokens",
        "✂ compaction cut: 17 older messages were replaced by the summary above",
        "history_compaction:17 messages -> 1 summary",
        "validation\n  passed",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let (code, in_step, _) = ctxbed(&["explain", RECOVER_ONCE, "--step", "1", "--request", "2"]);
    assert_eq!(code, 0);
    assert_eq!(in_step, text, "--step 1 --request 2 is the same request");
}

#[test]
fn explain_without_a_request_lists_them_and_a_wrong_one_is_an_error() {
    let (code, text, _) = ctxbed(&["explain", RECOVER_ONCE]);
    assert_eq!(code, 0);
    assert!(text.contains("call-1/r1.retry/summary"), "{text}");
    let (code, _, error) = ctxbed(&["explain", RECOVER_ONCE, "--request", "9"]);
    assert_eq!(code, 2);
    assert!(
        error.contains("there is no request 9 in this run"),
        "{error}"
    );
    assert!(error.contains("(--step 1 --request 2)"), "{error}");
    let (code, _, error) = ctxbed(&["explain", RECOVER_ONCE, "--step", "1"]);
    assert_eq!(code, 2);
    assert!(error.contains("--step needs --request"), "{error}");
    let (code, _, error) = ctxbed(&["explain", "scenarios/no/such.toml", "--request", "1"]);
    assert_eq!(code, 2);
    assert!(error.contains("cannot read the file"), "{error}");
}

#[test]
fn report_writes_a_self_contained_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let page_path = dir.path().join("report.html");
    let page_arg = page_path.to_string_lossy().into_owned();
    let (code, text, error) = ctxbed(&["report", RECOVER_ONCE, "-o", &page_arg]);
    assert_eq!(code, 0, "{text}{error}");
    assert!(text.contains("(4 requests)"), "{text}");
    let page = std::fs::read_to_string(&page_path).expect("page written");
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<svg"));
    assert!(!page.contains("<script"));
    let missing_dir = dir.path().join("no/such/dir/report.html");
    let (code, _, error) = ctxbed(&["report", RECOVER_ONCE, "-o", &missing_dir.to_string_lossy()]);
    assert_eq!(code, 1);
    assert!(error.contains("cannot write"), "{error}");
}
