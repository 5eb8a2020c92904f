//! `ctxbed bugs` end to end, offline: a peers directory of its own in a temporary directory,
//! outside the repository, whose one harness is ctxbed's reference adapter and whose "versions"
//! are a planted defect (`CTXBED_PEER_PLANT`) or none. A bug whose version before never sends
//! tool results must be detected by `progress`; one expected on a rule it does not break is
//! missed; one whose version after is as broken is a false alarm; one that needs a feature is
//! not reproducible. Also: the bug-file example of docs/bug-format.md loads, and a wrong file
//! gets every mistake at once.

use std::path::Path;
use std::process::Command;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
    std::fs::write(path, text).expect("a file");
}

fn executable(path: &Path, text: &str) {
    write(path, text);
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A peers directory whose `env` makes a directory per version holding the defect to plant:
/// `mutant==1.0` plants `no_results`, `mutant==1.1` nothing, `mutant==0.9` `no_results` too.
/// Like a real builder, it leaves a built environment alone: adapters may be running in it.
fn peers(root: &Path) {
    executable(
        &root.join("peers/env"),
        r#"#!/usr/bin/env bash
set -euo pipefail
harness="$1" locks="$2"; shift 2
version="${1##*==}"
dir="$(dirname "$0")/../envs/$harness-$version"
mkdir -p "$dir" "$locks"
if [ ! -f "$dir/plant" ]; then
  case "$version" in 1.0|0.9) echo no_results > "$dir/plant.new" ;; *) : > "$dir/plant.new" ;; esac
  mv "$dir/plant.new" "$dir/plant"
fi
echo "$(cd "$dir" && pwd)"
"#,
    );
    executable(
        &root.join("peers/mutant/run"),
        "#!/usr/bin/env bash\nexport CTXBED_PEER_PLANT=\"$(cat \"$CTXBED_PEER_ENV/plant\")\"\nexec \"$CTXBED_BIN\" peer\n",
    );
}

fn bug(id: &str, rule: &str, before: &str, after: &str, extra: &str) -> String {
    format!(
        "id = \"{id}\"\nharness = \"mutant\"\ntitle = \"Tool results never sent back\"\nreferences = [\"example/harness#1\"]\nscenarios = [\"basic-tool-round\"]\nrule = \"{rule}\"\nbefore = {{ mutant = \"{before}\" }}\nafter = {{ mutant = \"{after}\" }}\n{extra}"
    )
}

#[test]
fn bugs_are_classified_from_both_versions() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    peers(root);
    let zoo = root.join("zoo");
    write(
        &zoo.join("caught.toml"),
        &bug("caught", "progress", "1.0", "1.1", ""),
    );
    write(
        &zoo.join("wrong-rule.toml"),
        &bug("wrong-rule", "window", "1.0", "1.1", ""),
    );
    write(
        &zoo.join("still-broken.toml"),
        &bug("still-broken", "progress", "1.0", "0.9", ""),
    );
    write(
        &zoo.join("explained.toml"),
        &bug(
            "explained",
            "progress",
            "1.0",
            "0.9",
            "false_alarm = \"another bug, example/harness#2\"\n",
        ),
    );
    write(
        &zoo.join("needs-more.toml"),
        &bug(
            "needs-more",
            "progress",
            "1.0",
            "1.1",
            "needs = \"a compaction endpoint\"\n",
        ),
    );
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args([
            "bugs", "zoo", "--jobs", "2", "--format", "json", "--page", "bugs.md",
        ])
        .current_dir(root)
        .output()
        .expect("ctxbed runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a miss fails the run:\n{stdout}\n{stderr}"
    );
    let classified = |id: &str| -> String {
        stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find(|value| value["id"] == id)
            .map(|value| value["classification"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    assert_eq!(classified("caught"), "detected", "{stdout}");
    assert_eq!(classified("wrong-rule"), "missed", "{stdout}");
    assert_eq!(classified("still-broken"), "false alarm", "{stdout}");
    assert_eq!(
        classified("explained"),
        "false alarm (explained)",
        "{stdout}"
    );
    assert_eq!(classified("needs-more"), "not reproducible", "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a summary")).expect("JSON");
    assert_eq!(summary["detected"], 1, "{summary}");
    assert_eq!(summary["not_reproducible"], 1, "{summary}");
    let page = std::fs::read_to_string(root.join("bugs.md")).expect("the page");
    assert!(
        page.contains("| [caught](#caught) | mutant | mutant 1.0 → mutant 1.1 |"),
        "{page}"
    );
    assert!(
        page.contains("progress: step 1"),
        "the failing line is shown:\n{page}"
    );
    assert!(
        !page.contains(&root.display().to_string()),
        "no machine paths:\n{page}"
    );
}

#[test]
fn a_shard_runs_its_share_and_junit_skips_what_cannot_run() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    peers(root);
    for id in ["a-one", "b-two"] {
        write(
            &root.join(format!("bugs/{id}.toml")),
            &bug(id, "progress", "1.0", "1.1", "needs = \"something\"\n"),
        );
    }
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(["bugs", "--shard", "1/2", "--format", "junit"])
        .current_dir(root)
        .output()
        .expect("ctxbed runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("name=\"b-two\""), "{stdout}");
    assert!(!stdout.contains("name=\"a-one\""), "{stdout}");
    assert!(
        stdout.contains("<skipped message=\"needs something\"/>"),
        "{stdout}"
    );
}

#[test]
fn the_format_page_example_loads() {
    let page = std::fs::read_to_string("docs/bug-format.md").expect("the format page");
    let block = page
        .split("<!-- example: checked-by tests/bugs.rs -->\n```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the marked example");
    let bug = ctxbed::bugs::file::parse(
        "docs/bug-format.md",
        block,
        Some("lc-summ-parallel-orphan"),
        Path::new("."),
    )
    .unwrap_or_else(|diagnostics| panic!("{diagnostics}"));
    assert_eq!(bug.rule, "pairing");
    assert_eq!(bug.before, [("langchain".to_string(), "1.1.1".to_string())]);
}

#[test]
fn every_mistake_of_a_bug_file_is_reported_at_its_place() {
    let text = "id = \"Bad_Id\"\nharness = \"mutant\"\ntitle = \"t\"\nreferences = [\"issue 12\"]\nscenarios = [\"basic-tool-rond\"]\nrule = \"pairng\"\nbefore = { mutant = \"one\" }\nafter = { mutant = \"1.1\" }\n";
    let problems = ctxbed::bugs::file::parse("x.toml", text, Some("x"), Path::new("."))
        .expect_err("five mistakes")
        .to_string();
    for expected in [
        "x.toml:1:6",
        "`Bad_Id` is not a bug id",
        "x.toml:4:15",
        "`issue 12` is not a reference",
        "did you mean `basic-tool-round`?",
        "did you mean `pairing`?",
        "`one` is not a version",
    ] {
        assert!(
            problems.contains(expected),
            "missing {expected:?} in:\n{problems}"
        );
    }
}

/// The fake adapter of `variant_runs_the_configuration_the_bug_names`: the planted defect only
/// in its `trim` variant, and any other variant refused before `ready`.
fn variant_peers(root: &Path) {
    peers(root);
    executable(
        &root.join("peers/mutant/run"),
        r#"#!/usr/bin/env bash
case "${CTXBED_PEER_VARIANT:-}" in
  "") ;;
  trim) export CTXBED_PEER_PLANT="$(cat "$CTXBED_PEER_ENV/plant")" ;;
  *) echo "mutant adapter: no variant '$CTXBED_PEER_VARIANT' (known: trim)" >&2; exit 2 ;;
esac
exec "$CTXBED_BIN" peer
"#,
    );
}

#[test]
fn variant_runs_the_configuration_the_bug_names() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path();
    variant_peers(root);
    let zoo = root.join("zoo");
    let with = |variant: &str| format!("variant = \"{variant}\"\n");
    write(
        &zoo.join("on-variant.toml"),
        &bug("on-variant", "progress", "1.0", "1.1", &with("trim")),
    );
    write(
        &zoo.join("on-row.toml"),
        &bug("on-row", "progress", "1.0", "1.1", ""),
    );
    write(
        &zoo.join("unknown-variant.toml"),
        &bug(
            "unknown-variant",
            "progress",
            "1.0",
            "1.1",
            &with("sliding"),
        ),
    );
    let output = Command::new(env!("CARGO_BIN_EXE_ctxbed"))
        .args(["bugs", "zoo", "--format", "json", "--page", "bugs.md"])
        .current_dir(root)
        .output()
        .expect("ctxbed runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let classified = |id: &str| -> serde_json::Value {
        stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .find(|value| value["id"] == id)
            .unwrap_or_default()
    };
    assert_eq!(
        classified("on-variant")["classification"],
        "detected",
        "{stdout}"
    );
    assert_eq!(classified("on-variant")["variant"], "trim", "{stdout}");
    assert_eq!(classified("on-row")["classification"], "missed", "{stdout}");
    let unknown = classified("unknown-variant");
    assert_eq!(
        unknown["classification"], "not reproducible",
        "an adapter refusing the variant runs neither side:\n{stdout}"
    );
    assert!(
        unknown["why"]
            .as_str()
            .is_some_and(|why| why.contains("exited before answering")),
        "{stdout}"
    );
    let page = std::fs::read_to_string(root.join("bugs.md")).expect("the page");
    assert!(page.contains("| mutant (trim) |"), "{page}");
}

#[test]
fn a_variant_is_a_name() {
    let text = "id = \"x\"\nharness = \"mutant\"\ntitle = \"t\"\nreferences = [\"a/b#1\"]\nscenarios = [\"basic-tool-round\"]\nrule = \"pairing\"\nbefore = { mutant = \"1.0\" }\nafter = { mutant = \"1.1\" }\nvariant = \"Sliding Window\"\n";
    let problems = ctxbed::bugs::file::parse("x.toml", text, Some("x"), Path::new("."))
        .expect_err("a bad variant")
        .to_string();
    assert!(
        problems.contains("x.toml:9:11") && problems.contains("is not a variant name"),
        "{problems}"
    );
}
