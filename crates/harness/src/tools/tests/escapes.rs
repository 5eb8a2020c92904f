//! No tool call, whatever its path, touches anything outside the workspace.
//!
//! A loop over escape attempts (parent segments, absolute and drive paths, backslashes,
//! control, bidi and zero-width characters, over-long paths) through every built-in tool. Every
//! attempt must be refused, and afterwards every key of the storage must be a valid relative
//! workspace path: `MemoryStorage` keys are exactly what a real file system would resolve under
//! the workspace root.

use serde_json::{Value, json};

use super::Bench;
use crate::storage::WorkspacePath;

const ESCAPES: &[&str] = &[
    "",
    "..",
    "../etc/passwd",
    "../../../../etc/shadow",
    "a/../../b",
    "a/b/../../..",
    "notes/..",
    "/etc/passwd",
    "/",
    "//server/share",
    "C:/Windows/system32",
    "C:\\Windows\\system32",
    "c:relative",
    "\\\\server\\share",
    "a\\..\\..\\b",
    "..\\x",
    "a//b",
    "./a",
    "a/./b",
    "a\u{0}b",
    "a\nb",
    "a\rb",
    "\u{1b}[31m",
    "notes/\u{202e}dm.exe",
    "\u{2066}../x\u{2069}",
    "a\u{200b}/b",
    "\u{feff}MEMORY.md",
    "memory/\u{200d}facts.md",
    "x\u{00a0}y",
];

/// Odd but legal names: they must land inside the workspace under exactly that name.
const LEGAL: &[&str] = &[
    "...",
    "..x",
    "x..",
    "~/x",
    "%2e%2e/x",
    "-rf",
    "a b/c",
    "报告.md",
];

fn arguments(tool: &str, path: &str) -> Value {
    match tool {
        "read_file" => json!({ "path": path }),
        "write_file" => json!({ "path": path, "content": "pwned" }),
        "edit_file" => json!({ "path": path, "old": "secret", "new": "pwned" }),
        "list_files" => json!({ "dir": path }),
        "memory_get" => json!({ "id": format!("{path}:1") }),
        other => panic!("no arguments for {other}"),
    }
}

#[test]
fn no_call_reaches_outside_the_workspace() {
    let bench = Bench::new(&[("MEMORY.md", "secret\n"), ("a/b", "secret")]);
    let before = bench.storage.snapshot();
    let long = "a/".repeat(600);
    let attempts = ESCAPES.iter().copied().chain([long.as_str()]);
    for path in attempts {
        for tool in [
            "read_file",
            "write_file",
            "edit_file",
            "list_files",
            "memory_get",
        ] {
            if tool == "list_files" && path.is_empty() {
                continue; // an empty `dir` is the workspace root
            }
            let outcome = bench.call(tool, arguments(tool, path));
            assert!(
                outcome.is_error,
                "{tool} accepted {path:?}: {}",
                super::text(&outcome)
            );
        }
    }
    assert_eq!(
        bench.storage.snapshot(),
        before,
        "a refused call changed the workspace"
    );
    for path in LEGAL {
        let outcome = bench.call("write_file", arguments("write_file", path));
        assert!(!outcome.is_error, "{path:?}: {}", super::text(&outcome));
        assert_eq!(bench.file(path).as_deref(), Some("pwned"));
    }
    for key in bench.storage.snapshot().keys() {
        let text = key.as_str();
        assert_eq!(WorkspacePath::parse(text).as_ref(), Ok(key));
        assert!(!text.starts_with('/'), "{text}");
        assert!(
            text.split('/')
                .all(|s| s != ".." && s != "." && !s.is_empty()),
            "{text}"
        );
    }
    assert_eq!(bench.storage.snapshot().len(), before.len() + LEGAL.len());
}

#[test]
fn session_logs_are_out_of_reach_of_the_workspace_tools() {
    let log = "sessions/agent/bob/b1.jsonl";
    let bench = Bench::new(&[(log, "{\"kind\":\"message\"}\n"), ("notes.md", "mine")]);
    let before = bench.storage.snapshot();
    for path in [log, "sessions", "sessions/agent/bob", "sessions/x"] {
        for tool in ["read_file", "write_file", "edit_file", "list_files"] {
            let outcome = bench.call(tool, arguments(tool, path));
            assert!(outcome.is_error, "{tool} opened {path:?}");
            assert!(
                super::text(&outcome).contains("session_history or session_search"),
                "{}",
                super::text(&outcome)
            );
        }
    }
    assert_eq!(bench.storage.snapshot(), before);
    let root = bench.call("list_files", json!({}));
    assert!(
        !super::text(&root).contains("sessions"),
        "{}",
        super::text(&root)
    );
    assert!(super::text(&root).contains("notes.md"));
    // A name that merely starts with the word is an ordinary file.
    let outcome = bench.call("write_file", arguments("write_file", "sessions.md"));
    assert!(!outcome.is_error, "{}", super::text(&outcome));
}
