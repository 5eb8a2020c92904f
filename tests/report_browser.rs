//! The report in a real browser: render a report page with `/usr/bin/chromium` headless and
//! check that the screenshot is a real picture. `.ci/run` installs Debian's chromium, so under CI
//! a missing browser is a failure; elsewhere the test says it was skipped and passes.

use std::path::Path;
use std::process::Stdio;

use ctxbed::scenario::check::outcome::run;
use ctxbed::scenario::check::report;
use ctxbed::scenario::format::file::load;

#[path = "support/chromium.rs"]
mod chromium;

/// A blank 1400×1800 page compresses to a few kilobytes; a rendered report is far larger.
const SCREENSHOT_BYTES_MIN: u64 = 30_000;

#[test]
fn chromium_renders_the_report() {
    if !chromium::available("the report") {
        return;
    }
    let scenario = load(Path::new("scenarios/overflow/recover-once.toml")).expect("loads");
    let output = run(&scenario).expect("runs");
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("report.html");
    std::fs::write(&page, report::html(&output, &scenario)).expect("page written");
    let screenshot = dir.path().join("report.png");
    let flags = [
        "--window-size=1400,1800".to_string(),
        format!("--screenshot={}", screenshot.display()),
    ];
    chromium::render(dir.path(), &flags, &page, Stdio::null());
    let png = std::fs::read(&screenshot).expect("chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG file");
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    let height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    assert_eq!((width, height), (1400, 1800), "the window size");
    let bytes = u64::try_from(png.len()).unwrap_or(u64::MAX);
    assert!(
        bytes >= SCREENSHOT_BYTES_MIN,
        "a {bytes}-byte screenshot looks blank (expected at least {SCREENSHOT_BYTES_MIN})"
    );
}
