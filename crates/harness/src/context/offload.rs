//! Tool-result offload: oversized tool output goes to workspace storage, a preview stays.
//!
//! Before each reasoning request, every tool result whose text is longer than
//! `max_result_chars` (80,000 by default), from a tool that is not excluded, and not already
//! offloaded, is written to `<eviction_path>/<agent>/<call id>-<16 hex of SHA-256>` and replaced
//! in the working context by a placeholder: the size, the path, how to read it back, and a head
//! and tail preview of `min(preview_chars, len / 2)` characters each. Metadata and error state
//! are kept; the result is marked (metadata [`OFFLOAD_KEY`]) so it is never offloaded twice. A
//! failed write keeps the original text (no broken pointer). Names are sanitised to
//! `[A-Za-z0-9_-]`, so no call id can steer the path out of the eviction directory.
//!
//! ```
//! use ctxbed_harness::context::offload::{OffloadConfig, artifact_path};
//! let config = OffloadConfig::default();
//! assert_eq!(config.max_result_chars, 80_000);
//! let path = artifact_path(&config, "fixer", "../../etc/passwd", "hello");
//! assert!(path.as_str().starts_with("large_tool_results/fixer/______etc_passwd-"));
//! ```

use std::collections::BTreeSet;

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::context::transform::Transform;
use crate::message::{ContentPart, Message, ToolOutput, ToolResult};
use crate::storage::{Storage, WorkspacePath};

/// Metadata key marking an offloaded result; its value holds the path and original size.
pub const OFFLOAD_KEY: &str = "ctxbed.offloaded";

/// Tools whose results are never offloaded by default (reading them back would loop).
pub const EXCLUDED_TOOLS_DEFAULT: [&str; 6] = [
    "read_file",
    "write_file",
    "edit_file",
    "memory_search",
    "memory_get",
    "session_search",
];

/// Offload settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadConfig {
    /// Results strictly longer than this many characters are offloaded.
    pub max_result_chars: usize,
    /// Characters kept at the head and at the tail.
    pub preview_chars: usize,
    /// Directory under the workspace.
    pub eviction_path: String,
    /// Tools whose results stay in place.
    pub excluded_tools: BTreeSet<String>,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        OffloadConfig {
            max_result_chars: 80_000,
            preview_chars: 2_000,
            eviction_path: "large_tool_results".to_string(),
            excluded_tools: EXCLUDED_TOOLS_DEFAULT
                .iter()
                .map(|t| (*t).to_string())
                .collect(),
        }
    }
}

/// What one offload pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OffloadOutcome {
    /// [`Transform::ToolResultOffload`] per offloaded result, and
    /// [`Transform::ToolResultOffloadFailed`] per failed write.
    pub transforms: Vec<Transform>,
    /// Files written in this pass (removed again if the preparation is rejected).
    pub written: Vec<WorkspacePath>,
}

/// `[A-Za-z0-9_-]` only; anything else becomes `_`.
fn sanitise(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "_".to_string()
    } else {
        clean
    }
}

/// Where a result's full text is stored.
pub fn artifact_path(
    config: &OffloadConfig,
    agent: &str,
    call_id: &str,
    text: &str,
) -> WorkspacePath {
    let digest = Sha256::digest(text.as_bytes());
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let base = WorkspacePath::parse(&config.eviction_path)
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|_| "large_tool_results".to_string());
    let path = format!("{base}/{}/{}-{hash}", sanitise(agent), sanitise(call_id));
    // Every segment is sanitised and non-empty, so parsing cannot fail; fall back defensively.
    WorkspacePath::parse(&path).unwrap_or_else(|_| {
        WorkspacePath::parse("large_tool_results/artifact").expect("a constant valid path")
    })
}

/// Offloads every eligible tool result in `history`, in place.
pub async fn offload(
    history: &mut [Message],
    storage: &dyn Storage,
    config: &OffloadConfig,
    agent: &str,
) -> OffloadOutcome {
    let mut outcome = OffloadOutcome::default();
    for message in history.iter_mut() {
        // Read before writing: a change through `&mut` copies a shared message.
        let has_eligible = message.parts.iter().any(
            |part| matches!(part, ContentPart::ToolResult(result) if eligible(result, config)),
        );
        if !has_eligible {
            continue;
        }
        for part in &mut message.parts {
            let ContentPart::ToolResult(result) = part else {
                continue;
            };
            if !eligible(result, config) {
                continue;
            }
            let text = result.text();
            let path = artifact_path(config, agent, &result.call_id, &text);
            // The same call id and text give the same path: an existing file may be pointed to
            // by a committed placeholder, so it is never collected by a rejected build.
            let existed = matches!(storage.read(&path).await, Ok(Some(_)));
            match storage.write(&path, text.clone().into_bytes()).await {
                Ok(()) => {
                    replace_with_placeholder(result, &text, &path, config);
                    outcome.transforms.push(Transform::ToolResultOffload {
                        call_id: result.call_id.clone(),
                        path: path.clone(),
                    });
                    if !existed {
                        outcome.written.push(path);
                    }
                }
                Err(error) => {
                    tracing::warn!(call_id = %result.call_id, %error, "offload write failed; keeping the original");
                    outcome.transforms.push(Transform::ToolResultOffloadFailed {
                        call_id: result.call_id.clone(),
                    });
                }
            }
        }
    }
    outcome
}

/// Removes files written by a pass whose preparation was then rejected.
pub async fn collect(storage: &dyn Storage, written: &[WorkspacePath]) {
    for path in written {
        if let Err(error) = storage.remove(path).await {
            tracing::warn!(%path, %error, "could not remove an orphan offload file");
        }
    }
}

fn eligible(result: &ToolResult, config: &OffloadConfig) -> bool {
    !result.metadata.contains_key(OFFLOAD_KEY)
        && !config.excluded_tools.contains(&result.tool_name)
        && result.text_longer_than(config.max_result_chars)
}

fn replace_with_placeholder(
    result: &mut ToolResult,
    text: &str,
    path: &WorkspacePath,
    config: &OffloadConfig,
) {
    let chars = text.chars().count();
    let preview = config.preview_chars.min(chars / 2);
    let head: String = text.chars().take(preview).collect();
    let tail: String = text.chars().skip(chars - preview).collect();
    let placeholder = format!(
        "[tool result offloaded: {chars} characters saved to {path}. Read it with read_file(path=\"{path}\") \
page by page; only the first and last {preview} characters are shown here.]\n\
--- head ---\n{head}\n--- tail ---\n{tail}"
    );
    let media: Vec<ToolOutput> = result
        .outputs
        .iter()
        .filter(|o| matches!(o, ToolOutput::Media { .. }))
        .cloned()
        .collect();
    result.outputs = vec![ToolOutput::Text { text: placeholder }];
    result.outputs.extend(media);
    result.metadata.insert(
        OFFLOAD_KEY.to_string(),
        json!({ "path": path.as_str(), "chars": chars }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn history(tool: &str, chars: usize) -> Vec<Message> {
        vec![Message::tool_result(
            "t1",
            "call_1",
            tool,
            "x".repeat(chars),
            false,
        )]
    }

    #[tokio::test]
    async fn offloads_only_strictly_longer_results_once() {
        let storage = MemoryStorage::new();
        let config = OffloadConfig::default();
        let mut at_limit = history("execute", 80_000);
        assert!(
            offload(&mut at_limit, &storage, &config, "a")
                .await
                .transforms
                .is_empty()
        );
        let mut over = history("execute", 80_001);
        let outcome = offload(&mut over, &storage, &config, "a").await;
        let path = &outcome.written[0];
        assert_eq!(
            outcome.transforms,
            vec![Transform::ToolResultOffload {
                call_id: "call_1".to_string(),
                path: path.clone(),
            }]
        );
        let stored = storage.read(path).await.unwrap().unwrap();
        assert_eq!(
            stored.len(),
            80_001,
            "the file holds the full original text"
        );
        let result = over[0].tool_results().next().unwrap();
        assert!(result.text().contains(path.as_str()));
        assert!(result.text_chars() < 5_000);
        let again = offload(&mut over, &storage, &config, "a").await;
        assert!(again.transforms.is_empty(), "never offloaded twice");
    }

    #[tokio::test]
    async fn excluded_tools_and_failed_writes_keep_the_original() {
        let storage = MemoryStorage::new();
        let config = OffloadConfig::default();
        let mut excluded = history("read_file", 100_000);
        assert!(
            offload(&mut excluded, &storage, &config, "a")
                .await
                .transforms
                .is_empty()
        );
        storage.fail_writes_under("large_tool_results/");
        let mut failing = history("execute", 100_000);
        let outcome = offload(&mut failing, &storage, &config, "a").await;
        assert_eq!(
            outcome.transforms,
            vec![Transform::ToolResultOffloadFailed {
                call_id: "call_1".to_string(),
            }]
        );
        assert_eq!(
            failing[0].tool_results().next().unwrap().text_chars(),
            100_000
        );
    }

    #[test]
    fn paths_cannot_escape() {
        let config = OffloadConfig {
            eviction_path: "../outside".to_string(),
            ..OffloadConfig::default()
        };
        for call_id in ["../../x", "/abs", "a/b", "..", "", "\u{202e}x"] {
            let path = artifact_path(&config, "../agent", call_id, "t");
            assert!(
                path.as_str().starts_with("large_tool_results/___agent/"),
                "{path}"
            );
            assert!(!path.as_str().contains(".."), "{path}");
        }
    }

    #[tokio::test]
    async fn a_preview_longer_than_half_the_text_shows_each_half_once() {
        let storage = MemoryStorage::new();
        let config = OffloadConfig {
            max_result_chars: 10,
            preview_chars: 1_000,
            ..OffloadConfig::default()
        };
        let mut messages = vec![Message::tool_result(
            "t1",
            "call_1",
            "execute",
            format!("{}{}", "a".repeat(20), "b".repeat(20)),
            false,
        )];
        offload(&mut messages, &storage, &config, "a").await;
        let text = messages[0].tool_results().next().unwrap().text();
        assert!(
            text.contains("only the first and last 20 characters"),
            "{text}"
        );
        let shown = text.split_once("--- head ---\n").map(|(_, rest)| rest);
        let expected = format!("{}\n--- tail ---\n{}", "a".repeat(20), "b".repeat(20));
        assert_eq!(shown, Some(expected.as_str()));
    }

    #[tokio::test]
    async fn collect_removes_what_a_rejected_pass_wrote() {
        let storage = MemoryStorage::new();
        let config = OffloadConfig::default();
        let mut messages = history("execute", 90_000);
        let written = offload(&mut messages, &storage, &config, "a").await.written;
        assert_eq!(written.len(), 1);
        collect(&storage, &written).await;
        assert_eq!(storage.read(&written[0]).await.ok().flatten(), None);
    }

    #[test]
    fn names_keep_letters_digits_underscores_and_hyphens() {
        assert_eq!(sanitise("call_01-Ab"), "call_01-Ab");
        assert_eq!(sanitise("a.b/c d\u{e9}"), "a_b_c_d_");
        assert_eq!(sanitise(""), "_");
    }

    #[tokio::test]
    async fn a_file_that_already_existed_is_never_collected() {
        // Found by `ctxbed sweep` (seed 1277): the same call id and text give the same path, and
        // a rejected build must not delete the file an earlier placeholder points to.
        let storage = MemoryStorage::new();
        let config = OffloadConfig::default();
        let mut first = history("execute", 90_000);
        let written = offload(&mut first, &storage, &config, "a").await.written;
        assert_eq!(written.len(), 1);
        let mut second = history("execute", 90_000);
        let outcome = offload(&mut second, &storage, &config, "a").await;
        assert!(
            outcome.written.is_empty(),
            "the file existed before this pass"
        );
        collect(&storage, &outcome.written).await;
        assert!(storage.read(&written[0]).await.unwrap().is_some());
    }
}
