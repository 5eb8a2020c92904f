//! Headless Chromium (Debian's package, which `.ci/run` installs) for the browser tests: whether
//! it is there (a missing one fails under CI, and skips with a word elsewhere), and one bounded
//! run of it on a local page.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const CHROMIUM: &str = "/usr/bin/chromium";
/// Chromium starts in a second or two; a run past this is a hang.
const BROWSER_TIME_MAX: Duration = Duration::from_secs(120);

/// True when chromium is there to run; under CI a missing one fails the test. `what` names
/// what the skipped test would have rendered.
pub fn available(what: &str) -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{CHROMIUM} is missing: .ci/run installs Debian's chromium before the tests"
    );
    eprintln!(
        "skipped: {CHROMIUM} not found; install chromium (apt-get install chromium) to render {what}"
    );
    false
}

/// Runs chromium headless, offline and in a fresh profile under `dir`, on `page` with `extra`
/// flags (`--window-size=…`, `--screenshot=…`, `--dump-dom`), its standard output to `stdout`;
/// fails the test when it fails or hangs.
pub fn render(dir: &Path, extra: &[String], page: &Path, stdout: Stdio) {
    let mut browser = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .args(extra)
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg(format!("file://{}", page.display()))
        .stdout(stdout)
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
}
