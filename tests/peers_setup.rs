//! `peers/setup` for a new peer, as the "Adding a harness" steps use it: a Python peer with only
//! `requirements.in` gets its environment and a written lock; a Node peer is installed from its
//! `package-lock.json` with `npm ci`; a second run rebuilds nothing. Packages come from the
//! registries (PyPI, npm), as in CI.

use std::path::Path;
use std::process::Command;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for entry in std::fs::read_dir(from).expect("a fixture directory") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("a copy");
        }
    }
}

fn setup(root: &Path, names: &[&str]) -> (bool, String) {
    let output = Command::new("bash")
        .arg(root.join("peers/setup"))
        .args(names)
        .output()
        .expect("peers/setup runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn a_new_python_peer_gets_its_lock_and_a_node_peer_installs_from_its_lock() {
    let root = tempfile::tempdir().expect("a temporary directory");
    copy_dir(
        Path::new("tests/peers-setup/peers"),
        &root.path().join("peers"),
    );
    // The script, and the one that gives it uv (installed from PyPI under the copy's target/).
    for script in ["peers/setup", "peers/uv"] {
        std::fs::copy(script, root.path().join(script)).expect("the script");
    }

    let (ok, text) = setup(root.path(), &["python-fixture", "node-fixture"]);
    assert!(ok, "{text}");
    let lock = std::fs::read_to_string(root.path().join("peers/python-fixture/requirements.txt"))
        .expect("the lock was written");
    assert!(lock.contains("six==1.16.0"), "{lock}");
    assert!(lock.starts_with("# The complete environment"), "{lock}");
    assert!(
        text.contains("wrote peers/python-fixture/requirements.txt"),
        "{text}"
    );
    assert!(
        root.path()
            .join("target/peers/node-fixture/node_modules/is-number/package.json")
            .is_file(),
        "{text}"
    );

    let (ok, text) = setup(root.path(), &["python-fixture", "node-fixture"]);
    assert!(ok, "{text}");
    assert!(text.contains("python-fixture is up to date"), "{text}");
    assert!(text.contains("node-fixture is up to date"), "{text}");

    std::fs::remove_file(root.path().join("peers/node-fixture/package-lock.json")).expect("rm");
    std::fs::remove_dir_all(root.path().join("target/peers/node-fixture")).expect("rm");
    let (ok, text) = setup(root.path(), &["node-fixture"]);
    assert!(!ok);
    assert!(text.contains("no package-lock.json"), "{text}");
    let (ok, text) = setup(root.path(), &["no-such-peer"]);
    assert!(!ok);
    assert!(text.contains("no peer peers/no-such-peer"), "{text}");
}
