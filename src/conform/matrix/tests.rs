//! The matrix's layout on synthetic reports: groups, scores, causes, pages, the bug zoo.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::zoo::{ZooBug, classifications};
use super::*;
use crate::conform::checks::Violation;

fn report(scenario: &str, harness: &str, cell: Cell) -> CellReport {
    let violations = match &cell {
        Cell::Fail { rules } => rules
            .iter()
            .map(|rule| Violation {
                rule: rule.clone(),
                detail: format!("request 2: it broke {rule}\nsecond line"),
                step: Some(1),
            })
            .collect(),
        _ => Vec::new(),
    };
    CellReport {
        scenario: format!("wire/{scenario}"),
        harness: harness.into(),
        version: "1.0".into(),
        context: if harness == "alpha-ts" {
            "docs recipe".into()
        } else {
            "own".into()
        },
        kind: if harness == "coder" {
            "cli".into()
        } else {
            String::new()
        },
        cell,
        violations,
        problem: None,
        trace: String::new(),
        golden: PathBuf::from(format!("/suite/golden/wire/{scenario}/{harness}.snap")),
        golden_outcome: None,
        log: PathBuf::new(),
        elapsed: Duration::ZERO,
        defects: Vec::new(),
        allows: Vec::new(),
        applies: Default::default(),
    }
}

fn fail(rules: &[&str]) -> Cell {
    Cell::Fail {
        rules: rules.iter().map(|rule| rule.to_string()).collect(),
    }
}

/// Five harnesses of four kinds over scenarios of three concerns and a user's own.
fn reports() -> Vec<CellReport> {
    let na = || Cell::NotApplicable {
        reason: "no Anthropic client".into(),
    };
    let mut reports = Vec::new();
    for harness in ["zeta-py", "ctxbed", "alpha-ts", "coder", "alpha-py"] {
        reports.push(report("window-english", harness, Cell::Pass));
        reports.push(report(
            "overflow-openai",
            harness,
            fail(&["overflow_retry"]),
        ));
        reports.push(report("basic-tool-round", harness, Cell::Pass));
        reports.push(report("parallel-tools-anthropic", harness, na()));
        reports.push(report("my-own", harness, fail(&["window", "expect"])));
    }
    reports
}

fn peers() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, file) in [
        ("zeta-py", "requirements.txt"),
        ("alpha-py", "requirements.in"),
        ("alpha-ts", "package.json"),
        ("coder", "package.json"),
    ] {
        std::fs::create_dir_all(dir.path().join(name)).expect("dir");
        std::fs::write(dir.path().join(name).join(file), "").expect("file");
    }
    dir
}

fn trace(report: &CellReport) -> PathBuf {
    report.golden.clone()
}

fn layout<'a>(peers: &Path, trace: &'a dyn Fn(&CellReport) -> PathBuf, zoo: Zoo) -> Layout<'a> {
    Layout {
        path: PathBuf::from("/suite/docs/peers.md"),
        peers_dir: peers.to_path_buf(),
        trace,
        zoo,
    }
}

fn harnesses() -> Vec<String> {
    ["ctxbed", "alpha-py", "zeta-py", "alpha-ts", "coder"]
        .map(String::from)
        .to_vec()
}

fn page(pages: &[(PathBuf, String)], path: &str) -> String {
    pages
        .iter()
        .find(|(target, _)| target == Path::new(path))
        .map(|(_, text)| text.clone())
        .unwrap_or_else(|| panic!("no page {path}"))
}

/// The positions of `needles` in `text`, each after the one before; a panic naming the first
/// missing or out of order.
fn in_order(text: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        let at = text[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing or out of order in:\n{text}"));
        from += at + needle.len();
    }
}

#[test]
fn rows_are_grouped_by_kind_and_columns_by_concern() {
    let (reports, peers) = (reports(), peers());
    let pages = pages(
        &reports,
        &harnesses(),
        &layout(peers.path(), &trace, Zoo::default()),
        Duration::ZERO,
    );
    let overview = page(&pages, "/suite/docs/peers.md");
    in_order(
        &overview,
        &[
            "## Scores",
            "| **Reference** |",
            "[ctxbed](peers/ctxbed.md)",
            "| **Python libraries** |",
            "[alpha-py](peers/alpha-py.md)",
            "[zeta-py](peers/zeta-py.md)",
            "| **TypeScript libraries** |",
            "[alpha-ts](peers/alpha-ts.md)",
            "| **CLIs** |",
            "[coder](peers/coder.md)",
            "## Window",
            "window-english",
            "## Pairing and progress",
            "basic-tool-round",
            "parallel-tools-anthropic",
            "## Recovery",
            "overflow-openai",
            "## Other",
            "my-own",
        ],
    );
    assert!(overview.contains("| [alpha-ts](peers/alpha-ts.md) (docs recipe) | 1.0 |"));
    let alpha_ts = page(&pages, "/suite/docs/peers/alpha-ts.md");
    assert!(alpha_ts.contains("- context management: docs recipe (no token-aware"));
    // The overview keeps cells short: the rules, linked to the trace, no cause.
    assert!(overview.contains("[overflow_retry](../golden/wire/overflow-openai/ctxbed.snap)"));
    assert!(!overview.contains("it broke"));
}

#[test]
fn each_row_is_scored_passed_of_applicable_overall_and_per_concern() {
    let (reports, peers) = (reports(), peers());
    let pages = pages(
        &reports,
        &harnesses(),
        &layout(peers.path(), &trace, Zoo::default()),
        Duration::ZERO,
    );
    let overview = page(&pages, "/suite/docs/peers.md");
    // Two passes of four applicable (the n/a is not counted); per concern: window 1/1,
    // pairing 1/1 (its n/a aside), recovery 0/1, other 0/1.
    assert!(
        overview.contains(
            "| [alpha-py](peers/alpha-py.md) | 1.0 | 2/4 (50 %) | 1/1 | 1/1 | 0/1 | 0/1 |"
        ),
        "{overview}"
    );
    let score = Score {
        passed: 27,
        applicable: 37,
    };
    assert_eq!(score.to_string(), "27/37 (73 %)");
    assert_eq!(Score::default().to_string(), "n/a");
    let html = page(&pages, "/suite/docs/peers.html");
    in_order(
        &html,
        &[
            "Reference",
            "Python libraries",
            "2/4 (50 %)",
            "TypeScript libraries",
            "CLIs",
        ],
    );
}

#[test]
fn a_harness_page_gives_each_failures_cause_in_a_line_and_its_bugs() {
    let (reports, peers) = (reports(), peers());
    let page_text =
        "| bug | harness |\n| --- | --- |\n| [zp-bug](#zp-bug) | zeta-py | a \\| b | missed |\n";
    let zoo = Zoo {
        bugs: vec![
            ZooBug {
                id: "zp-bug".into(),
                harness: "zeta-py".into(),
                title: "Loses results".into(),
                rule: "pairing".into(),
                classification: classifications(page_text).get("zp-bug").cloned(),
            },
            ZooBug {
                id: "zp-new".into(),
                harness: "zeta-py".into(),
                title: "Not run yet".into(),
                rule: "window".into(),
                classification: None,
            },
        ],
        page: Some(PathBuf::from("/suite/docs/bugs.md")),
    };
    let pages = pages(
        &reports,
        &harnesses(),
        &layout(peers.path(), &trace, zoo),
        Duration::ZERO,
    );
    let zeta = page(&pages, "/suite/docs/peers/zeta-py.md");
    in_order(
        &zeta,
        &[
            "# zeta-py",
            "(../peers.md)",
            "- kind: Python libraries",
            "- score: 2/4 (50 %)",
            "## Window: 1/1 (100 %)",
            "## Recovery: 0/1 (0 %)",
            "| overflow-openai | fail: overflow_retry | overflow_retry: step 1, request 2: it broke overflow_retry | [trace](../../golden/wire/overflow-openai/zeta-py.snap) |",
            "| my-own | fail: window, expect | window: step 1, request 2: it broke window |",
            "## Bug zoo",
            "| [zp-bug](../bugs.md#zp-bug): Loses results | pairing | missed |",
            "| [zp-new](../bugs.md#zp-new): Not run yet | window | not on the bug zoo's page yet |",
        ],
    );
    assert!(!zeta.contains("second line"), "one line per cause");
    assert!(
        page(&pages, "/suite/docs/peers/alpha-py.md").contains("No bug of alpha-py is in the zoo")
    );
    let na = page(&pages, "/suite/docs/peers/ctxbed.md");
    assert!(na.contains("| parallel-tools-anthropic | n/a | no Anthropic client |"));
    let html = page(&pages, "/suite/docs/peers/zeta-py.html");
    assert!(html.contains("<a href=\"../bugs.md#zp-bug\">zp-bug</a>"));
}

#[test]
fn a_failure_without_a_violation_is_caused_by_the_adapters_problem() {
    let mut crashed = report("cut-stream", "h", fail(&["adapter"]));
    crashed.violations.clear();
    crashed.problem = Some("the adapter exited with status 1".into());
    assert_eq!(cause(&crashed), "adapter: the adapter exited with status 1");
    crashed.problem = Some("x".repeat(CAUSE_CHARS + 10));
    assert_eq!(cause(&crashed).chars().count(), CAUSE_CHARS + 1);
}

#[test]
fn the_zoo_page_table_gives_each_bugs_classification() {
    let page = "| bug | harness | before → after | scenarios | rule | before | after | verdict |\n| --- | --- |\n| [da-x](#da-x) | deepagents | a → b | s | pairing | fail: reply, pairing (s) | pass | detected |\n| [st-y](#st-y) | strands | a → b | s | expect | not run | not run | false alarm (explained) |\n";
    let found = classifications(page);
    assert_eq!(found.get("da-x").map(String::as_str), Some("detected"));
    assert_eq!(
        found.get("st-y").map(String::as_str),
        Some("false alarm (explained)")
    );
    assert_eq!(found.len(), 2);
}

#[test]
fn links_are_relative_to_wherever_the_page_is() {
    let trace = Path::new("/suite/golden/wire/x/h.snap");
    assert_eq!(
        relative(Path::new("/suite/docs"), trace),
        "../golden/wire/x/h.snap"
    );
    assert_eq!(relative(Path::new("/suite"), trace), "golden/wire/x/h.snap");
    assert_eq!(
        relative(Path::new("/tmp/out"), trace),
        "../../suite/golden/wire/x/h.snap"
    );
}
