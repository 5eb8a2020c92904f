//! The peer matrix in a real browser: the HTML matrix of a synthetic run (twelve harnesses of
//! every kind, the whole built-in suite, no adapters needed) rendered by `/usr/bin/chromium`
//! headless. The screenshot must be a real picture, the page must fit a 1400-pixel window
//! without scrolling sideways, and the rendered page must show the groups and the scores.
//! `.ci/run` installs Debian's chromium, so under CI a missing browser is a failure; elsewhere
//! the test says it was skipped and passes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ctxbed::conform::builtin::SUITE;
use ctxbed::conform::checks::Violation;
use ctxbed::conform::matrix::{self, Layout, Zoo};
use ctxbed::conform::{Cell, CellReport};

#[path = "support/chromium.rs"]
mod chromium;

/// The window the page must fit, in CSS pixels.
const WIDTH: u32 = 1400;
const HEIGHT: u32 = 1800;
/// A blank page compresses to a few kilobytes; a rendered matrix is far larger.
const SCREENSHOT_BYTES_MIN: u64 = 30_000;

/// Twelve harnesses: the two reference rows, four of each language and two CLIs.
const HARNESSES: [(&str, &str); 12] = [
    ("ctxbed", ""),
    ("ctxbed-ratio", ""),
    ("deepagents", "requirements.in"),
    ("langchain", "requirements.in"),
    ("pydantic-ai-with-a-long-name", "requirements.txt"),
    ("strands", "requirements.in"),
    ("ai-sdk", "package.json"),
    ("langchainjs", "package.json"),
    ("openai-agents-js", "package.json"),
    ("mastra", "package.json"),
    ("coding-cli", "cli"),
    ("other-cli", "cli"),
];

/// One synthetic run: every third fails two rules, every seventh is not applicable.
fn report(index: usize, scenario: &str, harness: &str, declared: &str) -> CellReport {
    let cell = match index % 7 {
        0 => Cell::NotApplicable {
            reason: "no Anthropic client".into(),
        },
        _ if index.is_multiple_of(3) => Cell::Fail {
            rules: vec!["overflow_retry".into(), "expect".into()],
        },
        _ => Cell::Pass,
    };
    let violations = vec![Violation {
        rule: "overflow_retry".into(),
        detail: "request 3: it is request 2 sent again, unchanged, after the provider refused it as too long for the window".into(),
        step: Some(2),
    }];
    CellReport {
        scenario: format!("wire/{scenario}"),
        harness: harness.into(),
        version: "1.23.4".into(),
        context: "own".into(),
        kind: if declared == "cli" {
            "cli".into()
        } else {
            String::new()
        },
        cell,
        violations,
        problem: None,
        trace: String::new(),
        golden: PathBuf::from(format!("golden/wire/{scenario}/{harness}.snap")),
        golden_outcome: None,
        log: PathBuf::new(),
        elapsed: Duration::ZERO,
        defects: Vec::new(),
        allows: Vec::new(),
        applies: Default::default(),
    }
}

/// Writes the synthetic suite's pages under `dir`; the overview's HTML path.
fn write_pages(dir: &Path) -> PathBuf {
    let peers = dir.join("peers");
    let mut reports = Vec::new();
    for (row, (harness, file)) in HARNESSES.iter().enumerate() {
        std::fs::create_dir_all(peers.join(harness)).expect("adapter dir");
        if file.contains('.') {
            std::fs::write(peers.join(harness).join(file), "").expect("adapter file");
        }
        for (column, builtin) in SUITE.iter().enumerate() {
            reports.push(report(row + column, builtin.name, harness, file));
        }
    }
    let trace = |report: &CellReport| dir.join(&report.golden);
    let layout = Layout {
        path: dir.join("docs").join("peers.md"),
        peers_dir: peers,
        trace: &trace,
        zoo: Zoo::default(),
    };
    std::fs::create_dir_all(layout.harness_dir()).expect("pages dir");
    let harnesses: Vec<String> = HARNESSES.iter().map(|(h, _)| h.to_string()).collect();
    for (target, text) in matrix::pages(&reports, &harnesses, &layout, Duration::ZERO) {
        std::fs::write(target, text).expect("page written");
    }
    layout.path.with_extension("html")
}

/// Runs chromium on `page` at the test's window size with `mode` (`--screenshot=…`,
/// `--dump-dom`), its standard output to `out`.
fn chromium(dir: &Path, mode: &str, page: &Path, out: &Path) {
    let flags = [
        "--hide-scrollbars".to_string(),
        format!("--window-size={WIDTH},{HEIGHT}"),
        mode.to_string(),
    ];
    let out = std::fs::File::create(out).expect("output file");
    chromium::render(dir, &flags, page, out.into());
}

#[test]
fn chromium_renders_the_matrix_as_a_readable_page() {
    if !chromium::available("the matrix") {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let page = write_pages(dir.path());
    let screenshot = dir.path().join("matrix.png");
    chromium(
        dir.path(),
        &format!("--screenshot={}", screenshot.display()),
        &page,
        &dir.path().join("screenshot.out"),
    );
    let png = std::fs::read(&screenshot).expect("chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG file");
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    let height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    assert_eq!((width, height), (WIDTH, HEIGHT), "the window size");
    let bytes = u64::try_from(png.len()).unwrap_or(u64::MAX);
    assert!(
        bytes >= SCREENSHOT_BYTES_MIN,
        "a {bytes}-byte screenshot looks blank (expected at least {SCREENSHOT_BYTES_MIN})"
    );

    // The same page with a line of script that records how wide it is drawn.
    let measured = dir.path().join("docs").join("measured.html");
    let html = std::fs::read_to_string(&page).expect("the page");
    let probe = "<script>document.body.dataset.scrollWidth=document.documentElement.scrollWidth</script></body>";
    std::fs::write(&measured, html.replace("</body>", probe)).expect("measured page");
    let dom_file = dir.path().join("dom.html");
    chromium(dir.path(), "--dump-dom", &measured, &dom_file);
    let dom = std::fs::read_to_string(&dom_file).expect("the DOM");
    for heading in [
        "Reference",
        "Python libraries",
        "TypeScript libraries",
        "CLIs",
        "Window",
        "Pairing and progress",
        "Recovery",
        "Sessions and retention",
    ] {
        assert!(dom.contains(heading), "the page shows {heading:?}");
    }
    // ctxbed's row: every run of row 0 that is neither n/a nor failing passed.
    let cells: Vec<Cell> = (0..SUITE.len())
        .map(|column| report(column, "x", "x", "").cell)
        .collect();
    let passed = cells.iter().filter(|cell| **cell == Cell::Pass).count();
    let applicable = cells
        .iter()
        .filter(|cell| !matches!(cell, Cell::NotApplicable { .. }))
        .count();
    let score = format!("{passed}/{applicable} (");
    assert!(
        dom.contains(&score),
        "the page shows ctxbed's score {score}…"
    );
    let drawn = dom
        .split("data-scroll-width=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|width| width.parse::<u32>().ok())
        .expect("the script recorded the page's width");
    eprintln!("screenshot: {bytes} bytes; the page is {drawn} pixels wide");
    if let Some(keep) = std::env::var_os("CTXBED_KEEP_SCREENSHOT") {
        std::fs::copy(&screenshot, keep).expect("screenshot kept");
    }
    assert!(
        drawn <= WIDTH,
        "the matrix is {drawn} pixels wide: it scrolls sideways in a {WIDTH}-pixel window"
    );
}
