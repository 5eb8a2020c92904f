//! `FsStorage` on a real temporary directory: the same path rules as the in-memory store, links
//! never followed (a link inside the workspace that points outside is refused for every
//! operation and skipped by listings), writes that fail leave files as they were, appends in
//! place only while the file is as the store left it, and the built-in tools over it.

use std::path::Path;
use std::sync::Arc;

use ctxbed_harness::message::{ToolCall, ToolOutput};
use ctxbed_harness::runtime::RuntimeContext;
use ctxbed_harness::storage::{FsStorage, Storage, StorageError, WorkspacePath};
use ctxbed_harness::tools::ToolContext;
use ctxbed_harness::tools::builtin::builtin_tool;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(future)
}

fn path(text: &str) -> WorkspacePath {
    WorkspacePath::parse(text).expect("a valid path")
}

/// A workspace directory and, beside it, a directory outside the workspace holding a secret.
struct Fixture {
    _dir: tempfile::TempDir,
    workspace: std::path::PathBuf,
    outside: std::path::PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let workspace = dir.path().join("workspace");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "top secret").unwrap();
        Fixture {
            _dir: dir,
            workspace,
            outside,
        }
    }

    fn storage(&self) -> FsStorage {
        FsStorage::open(&self.workspace).expect("the workspace opens")
    }

    fn link(&self, target: &Path, name: &str) {
        let at = self.workspace.join(name);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, at).expect("a symlink");
    }
}

#[test]
fn files_are_written_read_listed_and_removed_on_disk() {
    let fixture = Fixture::new();
    let storage = fixture.storage();
    block_on(async {
        storage
            .write(&path("notes/b.md"), b"bee".to_vec())
            .await
            .unwrap();
        storage
            .write(&path("notes/a.md"), b"ay".to_vec())
            .await
            .unwrap();
        storage
            .write(&path("top.md"), b"top".to_vec())
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(fixture.workspace.join("notes/a.md")).unwrap(),
            "ay"
        );
        assert_eq!(
            storage.read(&path("notes/b.md")).await.unwrap().as_deref(),
            Some(&b"bee"[..])
        );
        assert_eq!(storage.read(&path("missing.md")).await.unwrap(), None);
        // A directory reads as no file, as in the in-memory store.
        assert_eq!(storage.read(&path("notes")).await.unwrap(), None);
        assert_eq!(
            storage.list("").await.unwrap(),
            vec![path("notes/a.md"), path("notes/b.md"), path("top.md")]
        );
        assert_eq!(
            storage.list("notes/").await.unwrap(),
            vec![path("notes/a.md"), path("notes/b.md")]
        );
        assert_eq!(storage.list("no").await.unwrap().len(), 2);
        assert_eq!(storage.list("zzz/").await.unwrap(), vec![]);
        storage.remove(&path("notes/a.md")).await.unwrap();
        storage.remove(&path("notes/a.md")).await.unwrap(); // missing is fine
        assert_eq!(
            storage.list("notes/").await.unwrap(),
            vec![path("notes/b.md")]
        );
        // Replacing a file leaves no temporary file behind.
        storage
            .write(&path("top.md"), b"new".to_vec())
            .await
            .unwrap();
        let names: Vec<String> = std::fs::read_dir(&fixture.workspace)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.contains("partial")), "{names:?}");
    });
}

#[test]
fn a_link_pointing_outside_is_refused_for_every_operation() {
    let fixture = Fixture::new();
    let storage = fixture.storage();
    fixture.link(&fixture.outside, "escape");
    fixture.link(&fixture.outside.join("secret.txt"), "docs/secret.txt");
    block_on(async {
        for name in ["escape/secret.txt", "docs/secret.txt"] {
            let error = storage.read(&path(name)).await.unwrap_err();
            let StorageError::ReadFailed { reason, .. } = &error else {
                panic!("{error:?}");
            };
            assert!(reason.contains("symbolic link"), "{reason}");
            assert!(!error.to_string().contains("top secret"));
            assert!(storage.write(&path(name), b"x".to_vec()).await.is_err());
            assert!(storage.remove(&path(name)).await.is_err());
        }
        assert!(
            storage
                .write(&path("escape/new.txt"), b"x".to_vec())
                .await
                .is_err()
        );
        assert!(storage.list("escape/").await.is_err());
        // Listings skip links altogether.
        storage
            .write(&path("docs/real.md"), b"r".to_vec())
            .await
            .unwrap();
        assert_eq!(storage.list("").await.unwrap(), vec![path("docs/real.md")]);
    });
    // Nothing outside changed, and nothing was created there.
    assert_eq!(
        std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(),
        "top secret"
    );
    assert!(!fixture.outside.join("new.txt").exists());
}

#[test]
fn paths_that_leave_the_workspace_never_parse() {
    for bad in [
        "../outside/secret.txt",
        "/etc/passwd",
        "a//b",
        "a\\b",
        "./x",
    ] {
        assert!(WorkspacePath::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_failed_write_leaves_the_file_as_it_was() {
    let fixture = Fixture::new();
    let storage = fixture.storage();
    block_on(async {
        storage
            .write(&path("d/f.txt"), b"kept".to_vec())
            .await
            .unwrap();
        // A directory where the file should go makes the rename fail.
        std::fs::create_dir_all(fixture.workspace.join("blocked")).unwrap();
        let error = storage
            .write(&path("blocked"), b"x".to_vec())
            .await
            .unwrap_err();
        assert!(
            matches!(error, StorageError::WriteFailed { .. }),
            "{error:?}"
        );
        assert!(fixture.workspace.join("blocked").is_dir());
        assert_eq!(
            storage.read(&path("d/f.txt")).await.unwrap().as_deref(),
            Some(&b"kept"[..])
        );
    });
}

#[test]
fn appends_take_place_only_while_the_file_is_as_the_store_left_it() {
    let fixture = Fixture::new();
    let storage = fixture.storage();
    let log = path("sessions/a.jsonl");
    block_on(async {
        let first = storage
            .write_revised(&log, b"one\n".to_vec())
            .await
            .unwrap()
            .expect("the store tracks revisions");
        let second = storage
            .append_at(&log, first, b"two\n")
            .await
            .unwrap()
            .expect("appended in place");
        assert_ne!(first, second);
        assert_eq!(
            std::fs::read_to_string(fixture.workspace.join("sessions/a.jsonl")).unwrap(),
            "one\ntwo\n"
        );
        // An old revision is refused.
        assert_eq!(storage.append_at(&log, first, b"x\n").await.unwrap(), None);
        // Someone else changes the file: the next append is refused and nothing is written.
        std::fs::write(fixture.workspace.join("sessions/a.jsonl"), "other\n").unwrap();
        assert_eq!(storage.append_at(&log, second, b"x\n").await.unwrap(), None);
        assert_eq!(
            std::fs::read_to_string(fixture.workspace.join("sessions/a.jsonl")).unwrap(),
            "other\n"
        );
        // A second store over the same directory knows no revisions: it never appends blind.
        let other = fixture.storage();
        assert_eq!(other.append_at(&log, second, b"x\n").await.unwrap(), None);
    });
}

#[test]
fn opening_a_file_as_the_workspace_is_a_clear_error() {
    let fixture = Fixture::new();
    let file = fixture.outside.join("secret.txt");
    let error = FsStorage::open(&file).unwrap_err().to_string();
    assert!(error.contains("directory"), "{error}");
}

#[test]
fn the_builtin_tools_work_over_a_directory_and_refuse_links_and_session_logs() {
    let fixture = Fixture::new();
    let storage: Arc<dyn Storage> = Arc::new(fixture.storage());
    fixture.link(&fixture.outside.join("secret.txt"), "leak.txt");
    std::fs::create_dir_all(fixture.workspace.join("sessions")).unwrap();
    std::fs::write(fixture.workspace.join("sessions/log.jsonl"), "{}\n").unwrap();
    let context = ToolContext {
        agent_id: "agent".into(),
        runtime: RuntimeContext::new(),
        call_id: "call-1".into(),
    };
    let run = |name: &str, arguments: serde_json::Value| {
        let tool = builtin_tool(name, storage.clone()).expect("a built-in tool");
        let call = ToolCall {
            id: "t1".into(),
            name: name.into(),
            arguments,
        };
        let outcome = block_on(tool.call(&call, &context));
        let text: String = outcome
            .outputs
            .iter()
            .map(|output| match output {
                ToolOutput::Text { text } => text.clone(),
                ToolOutput::Media { .. } => String::new(),
            })
            .collect();
        (outcome.is_error, text)
    };
    let (failed, _) = run(
        "write_file",
        serde_json::json!({"path": "src/main.rs", "content": "fn main() {}\n"}),
    );
    assert!(!failed);
    assert_eq!(
        std::fs::read_to_string(fixture.workspace.join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
    let (failed, text) = run("read_file", serde_json::json!({"path": "src/main.rs"}));
    assert!(!failed && text.contains("fn main() {}"), "{text}");
    let (failed, text) = run("read_file", serde_json::json!({"path": "leak.txt"}));
    assert!(failed && text.contains("symbolic link"), "{text}");
    assert!(!text.contains("top secret"));
    let (failed, text) = run(
        "read_file",
        serde_json::json!({"path": "sessions/log.jsonl"}),
    );
    assert!(failed && text.contains("session"), "{text}");
    let (failed, text) = run("list_files", serde_json::json!({}));
    assert!(!failed && text.contains("src/ (1 file)"), "{text}");
    assert!(!text.contains("leak.txt"), "{text}");
    let (failed, text) = run("list_files", serde_json::json!({"dir": "src"}));
    assert!(!failed && text.contains("main.rs"), "{text}");
}

#[test]
fn a_file_over_the_read_limit_is_refused_by_its_size() {
    let fixture = Fixture::new();
    let storage = fixture.storage();
    std::fs::create_dir_all(&fixture.workspace).unwrap();
    // A sparse file: its size says it is too large, and nothing is read to find out.
    let huge = std::fs::File::create(fixture.workspace.join("huge.log")).unwrap();
    huge.set_len(ctxbed_harness::limits::FS_READ_BYTES_MAX as u64 + 1)
        .unwrap();
    let error = block_on(storage.read(&path("huge.log"))).unwrap_err();
    assert!(error.to_string().contains("at most"), "{error}");
}

#[test]
fn writes_at_once_to_one_file_leave_one_whole_version_and_no_temporary_file() {
    let fixture = Fixture::new();
    let storage = Arc::new(fixture.storage());
    let file = path("notes/shared.md");
    block_on(async {
        let writes = (0..8).map(|n| {
            let storage = storage.clone();
            let file = file.clone();
            tokio::spawn(async move { storage.write(&file, vec![b'a' + n; 10_000]).await })
        });
        for write in writes {
            write
                .await
                .expect("the task ends")
                .expect("the write succeeds");
        }
        let bytes = storage.read(&file).await.unwrap().expect("the file");
        assert_eq!(bytes.len(), 10_000);
        assert!(bytes.iter().all(|b| *b == bytes[0]), "one whole version");
        assert_eq!(storage.list("notes/").await.unwrap(), vec![file.clone()]);
    });
    let names: Vec<String> = std::fs::read_dir(fixture.workspace.join("notes"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["shared.md".to_string()]);
}
