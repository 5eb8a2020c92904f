//! The `ctxbed` binary: exit codes, one line per scenario, bad files reported while others run.

use std::path::Path;
use std::process::Command;

fn ctxbed(args: &[&str], dir: &Path) -> (i32, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxbed"));
    command.args(args).current_dir(dir);
    // CI never writes goldens: a bless runs as on a developer's machine.
    if args.contains(&"--bless") {
        command.env_remove("CI");
    } else {
        command.env("CI", "true");
    }
    let output = command.output().expect("ctxbed runs");
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text)
}

/// A suite with one good scenario (plus its golden) and one with a misspelt field.
fn suite() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("scenarios/demo")).unwrap();
    std::fs::create_dir_all(root.join("mock-models")).unwrap();
    std::fs::write(
        root.join("mock-models/hello.toml"),
        "window = 4000\n[[turns]]\nreply = \"Hello.\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/demo/good.toml"),
        "seed = 1\n[agent]\nmodel = \"hello\"\n[[steps]]\ninput = \"Hi\"\n[[expect]]\nreply = \"Hello.\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/demo/bad.toml"),
        "seed = 1\n[agent]\nmodel = \"hello\"\nsys_promt = \"x\"\n[[steps]]\ninput = \"Hi\"\n",
    )
    .unwrap();
    dir
}

#[test]
fn a_bad_file_is_reported_and_the_others_still_run() {
    let dir = suite();
    let (code, _) = ctxbed(&["run", "--bless", "scenarios/demo/good.toml"], dir.path());
    assert_eq!(code, 0);
    assert!(dir.path().join("golden/demo/good.snap").is_file());
    let (code, text) = ctxbed(&["run", "scenarios"], dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("INVALID  scenarios/demo/bad.toml"), "{text}");
    assert!(text.contains("scenarios/demo/bad.toml:4:1"), "{text}");
    assert!(text.contains("did you mean `sys_prompt`?"), "{text}");
    assert!(text.contains("ok       demo/good"), "{text}");
    assert!(text.contains("1 passed, 1 failed"), "{text}");
}

#[test]
fn a_changed_golden_fails_with_a_diff_and_ci_writes_nothing() {
    let dir = suite();
    std::fs::remove_file(dir.path().join("scenarios/demo/bad.toml")).unwrap();
    let (code, _) = ctxbed(&["run", "--bless"], dir.path());
    assert_eq!(code, 0);
    let golden = dir.path().join("golden/demo/good.snap");
    let original = std::fs::read_to_string(&golden).unwrap();
    std::fs::write(&golden, original.replace("Hello.", "Goodbye.")).unwrap();
    let (code, text) = ctxbed(&["run"], dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("trace differs from golden/demo/good.snap"),
        "{text}"
    );
    assert!(text.contains("-") && text.contains("+"), "{text}");
    assert!(
        !dir.path().join("golden/demo/good.snap.new").exists(),
        "CI must not write files"
    );
}

#[test]
fn show_prints_the_trace_and_check_validates() {
    let dir = suite();
    let (code, text) = ctxbed(&["show", "scenarios/demo/good.toml"], dir.path());
    assert_eq!(code, 0, "{text}");
    assert!(
        text.starts_with("# ctxbed trace v1\nscenario: demo/good\n"),
        "{text}"
    );
    let (code, text) = ctxbed(&["check"], dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("1 valid, 1 invalid"), "{text}");
    let (code, text) = ctxbed(&["run", "no-such-dir"], dir.path());
    assert_eq!(code, 2, "{text}");
}

/// `ctxbed run | head` closes the pipe early: the process stops quietly with the closed-pipe
/// status, never with a panic.
#[test]
fn a_closed_pipe_stops_quietly() {
    let dir = suite();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(["run", "scenarios"])
        .current_dir(dir.path())
        .env("CI", "true")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ctxbed starts");
    // Closed before the child has written anything (it first loads and runs the suite).
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("ctxbed ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // 141 when the pipe was already closed; 1 (a failing suite) if the output fit in the pipe
    // before it closed.
    assert!(
        matches!(output.status.code(), Some(141 | 1)),
        "{:?} {stderr}",
        output.status
    );
    // A closed standard error loses the message, not the exit status.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(["run", "no-such-dir"])
        .current_dir(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ctxbed starts");
    drop(child.stderr.take());
    let status = child.wait().expect("ctxbed ends");
    assert_eq!(status.code(), Some(2), "{status:?}");
}

#[test]
fn check_prints_each_diagnostic_apart() {
    let dir = suite();
    std::fs::write(
        dir.path().join("scenarios/demo/two.toml"),
        "seed = 1\n[agent]\nmodel = \"hello\"\n[network]\nlatency_ms = [40, 2]\ntick_ms = 0\n[[steps]]\ninput = \"Hi\"\n",
    )
    .expect("write");
    let (code, text) = ctxbed(&["check", "scenarios/demo/two.toml"], dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("with min ≤ max\n\nerror: `network.tick_ms` must be at least 1, found 0\n"),
        "{text}"
    );
    assert!(text.ends_with("\n\n0 valid, 1 invalid\n"), "{text}");
}

#[test]
fn a_scenario_can_budget_with_the_approximate_estimator() {
    let dir = suite();
    std::fs::write(
        dir.path().join("scenarios/demo/approx.toml"),
        "seed = 1\n[agent]\nmodel = \"hello\"\nestimator = \"approx\"\n[[steps]]\ninput = \"Hi\"\n[[expect]]\nreply = \"Hello.\"\n",
    )
    .unwrap();
    let (code, text) = ctxbed(&["show", "scenarios/demo/approx.toml"], dir.path());
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("estimator=approx-v2-o200k"), "{text}");
    std::fs::write(
        dir.path().join("scenarios/demo/approx.toml"),
        "seed = 1\n[agent]\nmodel = \"hello\"\nestimator = \"aprox\"\n[[steps]]\ninput = \"Hi\"\n",
    )
    .unwrap();
    let (code, text) = ctxbed(&["check", "scenarios/demo/approx.toml"], dir.path());
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("`approx`"), "{text}");
}

#[test]
fn sweep_runs_a_shard_and_reports_a_summary() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (code, text) = ctxbed(
        &[
            "sweep", "--seeds", "6", "--start", "10", "--shard", "1/2", "--jobs", "2",
        ],
        dir.path(),
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("3 seeds (two runs each)"), "{text}");
    // Standard error is a pipe here, not a terminal: no progress bar, no cursor movement.
    assert!(!text.contains('\r') && !text.contains('\x1b'), "{text:?}");
    assert!(text.contains("0 failing"), "{text}");
    assert!(
        text.contains(" seeds/s (") && text.contains(" runs/s), "),
        "{text}"
    );
    // Seeds 11, 13 and 15 (shard 1/2 of 10..16), each timed.
    assert!(
        text.contains("per seed (generate, run twice, check; one thread): mean "),
        "{text}"
    );
    let slowest = text
        .lines()
        .find_map(|line| line.strip_prefix("slowest seeds: "))
        .unwrap_or_else(|| panic!("no slowest seeds in {text}"));
    for seed in ["11 (", "13 (", "15 ("] {
        assert!(slowest.contains(seed), "{slowest}");
    }
    assert!(!slowest.contains("12 ("), "{slowest}");
    let (code, text) = ctxbed(&["sweep", "--seeds", "1", "--shard", "2/2"], dir.path());
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("need 0 ≤ k < n"), "{text}");
}

#[test]
fn links_out_of_the_suite_are_refused_for_reading_and_writing() {
    let dir = suite();
    let root = dir.path();
    std::fs::remove_file(root.join("scenarios/demo/bad.toml")).unwrap();
    let outside = tempfile::tempdir().expect("temp dir");
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    // A `.snap.new` that links outside: a mismatching run outside CI would write through it.
    std::fs::create_dir_all(root.join("golden/demo")).unwrap();
    std::fs::write(
        root.join("golden/demo/good.snap"),
        "---\nsource: tests/conformance.rs\n---\nan old golden\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(&victim, root.join("golden/demo/good.snap.new")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(["run", "scenarios/demo/good.toml"])
        .current_dir(root)
        .env_remove("CI")
        .output()
        .expect("ctxbed runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_ne!(output.status.code(), Some(0), "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    // A mock model that links to a file outside is not read, and nothing of it is shown.
    let secret = outside.path().join("secret.toml");
    std::fs::write(&secret, "window = 1 # top secret line\n").unwrap();
    std::fs::remove_file(root.join("mock-models/hello.toml")).unwrap();
    std::os::unix::fs::symlink(&secret, root.join("mock-models/hello.toml")).unwrap();
    let (code, text) = ctxbed(&["check", "scenarios/demo/good.toml"], root);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("symbolic link"), "{text}");
    assert!(!text.contains("top secret"), "{text}");
}

#[test]
fn verbose_turns_on_gen_ai_spans_on_stderr_without_prompt_text() {
    let dir = suite();
    let stderr_of = |args: &[&str], rust_log: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_ctxbed"));
        command
            .args(args)
            .current_dir(dir.path())
            .env_remove("RUST_LOG");
        if let Some(filter) = rust_log {
            command.env("RUST_LOG", filter);
        }
        let output = command.output().expect("ctxbed runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let quiet = stderr_of(&["show", "scenarios/demo/good.toml"], None);
    assert!(!quiet.contains("invoke_agent"), "{quiet}");
    let verbose = stderr_of(&["-v", "show", "scenarios/demo/good.toml"], None);
    assert!(verbose.contains("invoke_agent"), "{verbose}");
    assert!(
        verbose.contains("gen_ai.operation.name=\"invoke_agent\""),
        "{verbose}"
    );
    assert!(verbose.contains("gen_ai.agent.name"), "{verbose}");
    assert!(
        !verbose.contains("\"Hi\""),
        "no input text in spans: {verbose}"
    );
    let filtered = stderr_of(
        &["show", "scenarios/demo/good.toml"],
        Some("ctxbed_harness=info"),
    );
    assert!(filtered.contains("invoke_agent"), "{filtered}");
}

#[test]
fn bless_is_refused_under_ci_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::create_dir_all(dir.path().join("scenarios")).expect("a suite");
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(["run", "--bless"])
        .current_dir(dir.path())
        .env("CI", "true")
        .output()
        .expect("ctxbed runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("CI never writes goldens"), "{stderr}");
    assert!(!dir.path().join("golden").exists());
}

#[test]
fn run_outside_a_suite_says_where_to_run() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (code, text) = ctxbed(&["run"], dir.path());
    assert_eq!(code, 2);
    assert!(text.contains("scenarios does not exist"), "{text}");
    assert!(
        text.contains("help: run ctxbed from a suite's root"),
        "{text}"
    );
}

#[test]
fn max_errors_limits_what_is_shown_and_says_how_many_more() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("many.toml");
    let unknown: String = (0..5).map(|i| format!("unknown_{i} = 1\n")).collect();
    std::fs::write(
        &file,
        format!("seed = 1\n{unknown}[agent]\nmodel = \"m\"\n"),
    )
    .expect("written");
    let path = file.to_str().expect("UTF-8");
    let (code, all) = ctxbed(&["check", path], dir.path());
    assert_eq!(code, 1);
    assert_eq!(all.matches("error: unknown field").count(), 5, "{all}");
    let (_, two) = ctxbed(&["check", "--max-errors", "2", path], dir.path());
    assert_eq!(two.matches("error: unknown field").count(), 2, "{two}");
    assert!(two.contains("… and 3 more problems in"), "{two}");
}
