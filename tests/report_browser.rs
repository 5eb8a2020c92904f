//! The report in a real browser: render a report page with `/usr/bin/chromium` headless and
//! check that the screenshot is a real picture. `.ci/run` installs Debian's chromium, so under CI
//! a missing browser is a failure; elsewhere the test says it was skipped and passes.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ctxbed::scenario::check::outcome::run;
use ctxbed::scenario::check::report;
use ctxbed::scenario::format::file::load;

const CHROMIUM: &str = "/usr/bin/chromium";
/// A headless screenshot takes a few seconds; a hung browser must not hang the suite.
const BROWSER_TIME_MAX: Duration = Duration::from_secs(120);
/// A blank 1400×1800 page compresses to a few kilobytes; a rendered report is far larger.
const SCREENSHOT_BYTES_MIN: u64 = 30_000;

#[test]
fn chromium_renders_the_report() {
    if !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{CHROMIUM} is missing: .ci/run installs Debian's chromium before the tests"
        );
        eprintln!(
            "skipped: {CHROMIUM} not found; install chromium (apt-get install chromium) to render the report"
        );
        return;
    }
    let scenario = load(Path::new("scenarios/overflow/recover-once.toml")).expect("loads");
    let output = run(&scenario).expect("runs");
    let dir = tempfile::tempdir().expect("temp dir");
    let page = dir.path().join("report.html");
    std::fs::write(&page, report::html(&output, &scenario)).expect("page written");
    let screenshot = dir.path().join("report.png");
    let profile = dir.path().join("profile");
    let mut browser = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1400,1800",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = browser.try_wait().expect("chromium can be waited for") {
            break status;
        }
        if started.elapsed() > BROWSER_TIME_MAX {
            let _ = browser.kill();
            panic!("chromium took longer than {BROWSER_TIME_MAX:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "chromium failed: {status}");
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
