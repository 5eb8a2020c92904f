//! Workspace material: `AGENTS.md`, `MEMORY.md` and knowledge files, loaded once per agent call.
//!
//! `AGENTS.md` holds project conventions and goes to System. `MEMORY.md`, the memory store's
//! `memory/*.md` files and files under `knowledge/` are reference material, never System. The whole set is bounded by
//! `max_context_tokens` (default 8,000): files are taken in that order, and a file that does not
//! fit is cut to the remaining allowance (transform `workspace_truncated:workspace:<FILE>`) or
//! left out when nothing remains (`workspace_skipped:workspace:<FILE>`). Files that are missing,
//! blank or not UTF-8 contribute nothing.
//!
//! **Invariant:** loaded at call entry only; edits during the call are seen by the next call.

use super::block::{Material, MaterialKind, Placement};
use crate::context::manifest::content_hash;
use crate::context::transform::Transform;
use crate::storage::{Storage, WorkspacePath};
use crate::tokens::TokenEstimator;

/// Default bound on workspace material, in estimated tokens.
pub const MAX_CONTEXT_TOKENS_DEFAULT: u64 = 8_000;
/// The project-rules file.
pub const AGENTS_FILE: &str = "AGENTS.md";
/// The memory file.
pub const MEMORY_FILE: &str = "MEMORY.md";
/// The directory of further memory files (flushed facts land in `memory/facts.md`).
pub const MEMORY_DIR: &str = "memory/";
/// The directory of knowledge files.
pub const KNOWLEDGE_DIR: &str = "knowledge/";
/// Knowledge files read per call.
pub const KNOWLEDGE_FILES_MAX: usize = 64;

/// The workspace material of one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkspaceMaterial {
    pub materials: Vec<Material>,
    /// [`Transform::WorkspaceSkipped`] and [`Transform::WorkspaceTruncated`], per file.
    pub transforms: Vec<Transform>,
}

/// Reads the workspace material for one call.
pub async fn load(
    storage: &dyn Storage,
    estimator: &dyn TokenEstimator,
    max_context_tokens: u64,
) -> WorkspaceMaterial {
    let mut result = WorkspaceMaterial::default();
    let mut remaining = max_context_tokens;
    for (file, kind, placement) in candidate_files(storage).await {
        let Some(text) = read_text(storage, &file).await else {
            continue;
        };
        let id = format!("workspace:{file}");
        if remaining == 0 {
            result
                .transforms
                .push(Transform::WorkspaceSkipped { item_id: id });
            continue;
        }
        let tokens = estimator.text_tokens(&text);
        let text = if tokens > remaining {
            result.transforms.push(Transform::WorkspaceTruncated {
                item_id: id.clone(),
            });
            truncate_to_tokens(&text, remaining, estimator)
        } else {
            text
        };
        remaining = remaining.saturating_sub(estimator.text_tokens(&text));
        result.materials.push(Material {
            revision: content_hash(text.as_bytes()),
            id,
            kind,
            placement,
            text,
            required: false,
            priority: 0,
        });
    }
    result
}

/// The files that may hold workspace material, in the order they take the budget: `AGENTS.md`,
/// `MEMORY.md`, then the memory directory's `.md` files and the knowledge directory's files
/// (at most [`KNOWLEDGE_FILES_MAX`] of each).
async fn candidate_files(storage: &dyn Storage) -> Vec<(String, MaterialKind, Placement)> {
    let mut files: Vec<(String, MaterialKind, Placement)> = vec![
        (
            AGENTS_FILE.to_string(),
            MaterialKind::ProjectRules,
            Placement::System,
        ),
        (
            MEMORY_FILE.to_string(),
            MaterialKind::Memory,
            Placement::Reference,
        ),
    ];
    if let Ok(memory) = storage.list(MEMORY_DIR).await {
        files.extend(
            memory
                .into_iter()
                .filter(|path| path.as_str().ends_with(".md"))
                .take(KNOWLEDGE_FILES_MAX)
                .map(|path| {
                    (
                        path.as_str().to_string(),
                        MaterialKind::Memory,
                        Placement::Reference,
                    )
                }),
        );
    }
    if let Ok(knowledge) = storage.list(KNOWLEDGE_DIR).await {
        files.extend(knowledge.into_iter().take(KNOWLEDGE_FILES_MAX).map(|path| {
            (
                path.as_str().to_string(),
                MaterialKind::Knowledge,
                Placement::Reference,
            )
        }));
    }
    files
}

async fn read_text(storage: &dyn Storage, file: &str) -> Option<String> {
    let path = WorkspacePath::parse(file).ok()?;
    let bytes = storage.read(&path).await.ok()??;
    let text = String::from_utf8(bytes).ok()?;
    (!text.trim().is_empty()).then_some(text)
}

/// The longest prefix (on a character boundary) whose estimate fits `tokens`.
fn truncate_to_tokens(text: &str, tokens: u64, estimator: &dyn TokenEstimator) -> String {
    let boundaries: Vec<usize> = text
        .char_indices()
        .map(|(at, _)| at)
        .chain([text.len()])
        .collect();
    let (mut low, mut high) = (0usize, boundaries.len() - 1);
    while low < high {
        let middle = (low + high).div_ceil(2);
        if estimator.text_tokens(&text[..boundaries[middle]]) <= tokens {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    text[..boundaries[low]].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;
    use crate::tokens::RatioEstimator;

    async fn write(storage: &MemoryStorage, path: &str, text: &str) {
        let path = WorkspacePath::parse(path).unwrap();
        storage
            .write(&path, text.as_bytes().to_vec())
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn files_are_placed_by_kind_and_bounded() {
        let storage = MemoryStorage::new();
        write(&storage, "AGENTS.md", "Run the tests.").await;
        write(&storage, "MEMORY.md", &"m".repeat(100)).await;
        write(&storage, "knowledge/a.md", "alpha").await;
        let loaded = load(&storage, &RatioEstimator, 30).await;
        let ids: Vec<&str> = loaded.materials.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, vec!["workspace:AGENTS.md", "workspace:MEMORY.md"]);
        assert_eq!(loaded.materials[0].placement, Placement::System);
        assert_eq!(loaded.materials[1].placement, Placement::Reference);
        assert_eq!(
            loaded.transforms,
            vec![
                Transform::WorkspaceTruncated {
                    item_id: "workspace:MEMORY.md".to_string()
                },
                Transform::WorkspaceSkipped {
                    item_id: "workspace:knowledge/a.md".to_string()
                },
            ]
        );
        let used: u64 = loaded
            .materials
            .iter()
            .map(|m| RatioEstimator.text_tokens(&m.text))
            .sum();
        assert!(used <= 30);
    }

    /// The search's bounds are the text's own: a text that fits all but its last character keeps
    /// the rest (ceil(2 × 10 / 5) = 4 tokens, 11 characters would be 5), and one that fits is
    /// kept whole.
    #[test]
    fn truncation_keeps_the_longest_prefix_that_fits() {
        assert_eq!(
            truncate_to_tokens("abcdefghijk", 4, &RatioEstimator),
            "abcdefghij"
        );
        assert_eq!(truncate_to_tokens("abc", 2, &RatioEstimator), "abc");
    }

    #[test]
    fn truncation_respects_characters() {
        let text = "日本語のテキスト";
        let cut = truncate_to_tokens(text, 2, &RatioEstimator);
        assert!(text.starts_with(&cut));
        assert!(RatioEstimator.text_tokens(&cut) <= 2);
    }
}
