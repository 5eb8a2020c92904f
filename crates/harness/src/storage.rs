//! Workspace storage: the [`Storage`] trait, checked [`WorkspacePath`]s, [`FsStorage`] (a
//! directory on disk) and [`MemoryStorage`].
//!
//! Every path is relative to the workspace and checked before use: no `..`, no absolute paths,
//! no empty segments, no control characters or backslashes, no invisible or direction-changing
//! characters (bidi controls, zero-width characters, unusual spaces) that would make a path read
//! differently from what it is, and at most [`PATH_CHARS_MAX`] characters. [`FsStorage`] also
//! refuses every path that passes through a symbolic link. The in-memory store lets a test
//! inject write failures under a path prefix.
//!
//! ```
//! use ctxbed_harness::storage::{MemoryStorage, Storage, WorkspacePath};
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let storage = MemoryStorage::new();
//!     let path = WorkspacePath::parse("notes/a.txt").unwrap();
//!     storage.write(&path, b"hi".to_vec()).await.unwrap();
//!     assert_eq!(storage.read(&path).await.unwrap().as_deref(), Some(&b"hi"[..]));
//!     assert!(WorkspacePath::parse("../etc/passwd").is_err());
//!     assert!(WorkspacePath::parse("notes/\u{202e}txt.md").is_err());
//! });
//! ```

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::format::unusual_character;
use crate::limits::PATH_CHARS_MAX;

mod fs;

pub use fs::{FsStorage, OpenError};

/// A path inside the workspace that has passed every check.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct WorkspacePath(String);

impl TryFrom<String> for WorkspacePath {
    type Error = PathError;

    fn try_from(path: String) -> Result<Self, PathError> {
        WorkspacePath::parse(&path)
    }
}

impl From<WorkspacePath> for String {
    fn from(path: WorkspacePath) -> String {
        path.0
    }
}

/// Why a path was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("path is empty; give a path relative to the workspace, e.g. `notes/today.md`")]
    Empty,
    #[error("path `{0}` is absolute; give a path relative to the workspace")]
    Absolute(String),
    #[error("path `{0}` leaves the workspace through `..`; paths must stay inside the workspace")]
    Escapes(String),
    #[error("path `{0}` holds a backslash or a control character; use `/`-separated names")]
    Malformed(String),
    /// A `.` segment (`./x`, `a/./b`).
    #[error("path `{path}` has a `.` segment; write it without it, as `{fixed}`")]
    DotSegment {
        /// The path as given.
        path: String,
        /// The same path without its `.` segments.
        fixed: String,
    },
    /// An empty segment (`a//b`).
    #[error("path `{0}` has an empty segment (`//`); use one `/` between names")]
    EmptySegment(String),
    /// Longer than [`PATH_CHARS_MAX`] characters.
    #[error("path is {chars} characters long; at most {max}")]
    TooLong {
        /// The path's length in characters.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// Holds an invisible or direction-changing character (see
    /// [`unusual_character`]).
    #[error(
        "path `{path}` holds {code_point} ({kind}) at character {position}; such characters make a \
         path read differently from what it is: type the path without it"
    )]
    Unusual {
        /// The path with every unusual character escaped.
        path: String,
        /// `U+XXXX`.
        code_point: String,
        /// What the character is, e.g. "a bidi control".
        kind: &'static str,
        /// 1-based position in characters.
        position: usize,
    },
}

impl WorkspacePath {
    /// Checks a relative path.
    ///
    /// Character checks come first, so no later message quotes a path holding a control or
    /// direction-changing character.
    ///
    /// # Errors
    /// Empty, over-long, malformed (backslash, control character), `.` or empty segments, unusual
    /// (invisible or direction-changing character), absolute or escaping paths.
    pub fn parse(path: &str) -> Result<Self, PathError> {
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        let chars = path.chars().count();
        if chars > PATH_CHARS_MAX {
            return Err(PathError::TooLong {
                chars,
                max: PATH_CHARS_MAX,
            });
        }
        if path.chars().any(|c| c.is_control() || c == '\\') {
            return Err(PathError::Malformed(path.escape_debug().to_string()));
        }
        if let Some((index, c, kind)) = path
            .chars()
            .enumerate()
            .find_map(|(index, c)| unusual_character(c).map(|kind| (index, c, kind)))
        {
            return Err(PathError::Unusual {
                path: path.escape_debug().to_string(),
                code_point: format!("U+{:04X}", u32::from(c)),
                kind,
                position: index + 1,
            });
        }
        if path.starts_with('/') || path.chars().nth(1) == Some(':') {
            return Err(PathError::Absolute(path.to_string()));
        }
        let trimmed = path.strip_suffix('/').unwrap_or(path);
        let segments: Vec<&str> = trimmed.split('/').collect();
        if segments.contains(&"..") {
            return Err(PathError::Escapes(path.to_string()));
        }
        if segments.contains(&".") {
            let kept: Vec<&str> = segments.iter().copied().filter(|s| *s != ".").collect();
            return Err(PathError::DotSegment {
                path: path.to_string(),
                fixed: kept.join("/"),
            });
        }
        if segments.contains(&"") {
            return Err(PathError::EmptySegment(path.to_string()));
        }
        Ok(WorkspacePath(trimmed.to_string()))
    }

    /// The checked path, `/`-separated, without a trailing slash.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A storage operation that failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StorageError {
    #[error("write to `{path}` failed: {reason}")]
    WriteFailed { path: String, reason: String },
    #[error("read of `{path}` failed: {reason}")]
    ReadFailed { path: String, reason: String },
}

/// One state of one file in a store that tracks them: a store gives every write and append a
/// revision it never gave before, so a file still at a revision holds exactly what
/// that operation left. A writer that remembers the revision of its last write can append
/// without reading the file back to see whether someone else changed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Revision(u64);

/// Workspace file storage.
///
/// Four operations are required. Two more, [`write_revised`](Storage::write_revised) and
/// [`append_at`](Storage::append_at), let a store that tracks [`Revision`]s take appends in
/// place; their defaults say "not tracked", and callers then read and rewrite files whole.
#[async_trait]
pub trait Storage: Send + Sync {
    /// The file's bytes, or `None` when it does not exist.
    async fn read(&self, path: &WorkspacePath) -> Result<Option<Vec<u8>>, StorageError>;
    /// Creates or replaces a file.
    async fn write(&self, path: &WorkspacePath, bytes: Vec<u8>) -> Result<(), StorageError>;
    /// Removes a file; removing a missing file is not an error.
    async fn remove(&self, path: &WorkspacePath) -> Result<(), StorageError>;
    /// Every file path under a prefix (`""` for all), sorted.
    async fn list(&self, prefix: &str) -> Result<Vec<WorkspacePath>, StorageError>;

    /// Creates or replaces a file, as [`write`](Storage::write), and returns the revision this
    /// write gave it, or `None` when the store does not track revisions (the default).
    async fn write_revised(
        &self,
        path: &WorkspacePath,
        bytes: Vec<u8>,
    ) -> Result<Option<Revision>, StorageError> {
        self.write(path, bytes).await?;
        Ok(None)
    }

    /// Appends `bytes` to the file if it is still at revision `expected`, all of them or none,
    /// and returns the file's new revision. `Ok(None)` when the file changed since (or is gone),
    /// and always when the store does not track revisions (the default): the caller then reads
    /// the file and writes it whole. A failed append leaves the file as it was.
    async fn append_at(
        &self,
        path: &WorkspacePath,
        expected: Revision,
        bytes: &[u8],
    ) -> Result<Option<Revision>, StorageError> {
        let _ = (path, expected, bytes);
        Ok(None)
    }
}

/// In-memory storage with injectable write failures. Ordered, so listings are deterministic.
/// It tracks [`Revision`]s, so appends take place in the file.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    files: Mutex<Files>,
    failing_prefixes: Mutex<Vec<String>>,
}

/// The files of a [`MemoryStorage`], each with its revision.
#[derive(Debug, Default)]
struct Files {
    by_path: BTreeMap<WorkspacePath, (Vec<u8>, Revision)>,
    /// The last revision given; every write and append takes the next one, so a file removed
    /// and written again never comes back at a revision it had.
    last: u64,
}

impl Files {
    fn next_revision(&mut self) -> Revision {
        self.last += 1;
        Revision(self.last)
    }
}

impl MemoryStorage {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every later write under `prefix` fails (`""` fails every write).
    pub fn fail_writes_under(&self, prefix: impl Into<String>) {
        lock(&self.failing_prefixes).push(prefix.into());
    }

    /// Replaces the failing prefixes: from now on exactly the writes under `prefixes` fail (none
    /// when it is empty).
    pub fn set_failing_writes(&self, prefixes: Vec<String>) {
        *lock(&self.failing_prefixes) = prefixes;
    }

    /// A snapshot of every file, in path order.
    pub fn snapshot(&self) -> BTreeMap<WorkspacePath, Vec<u8>> {
        lock(&self.files)
            .by_path
            .iter()
            .map(|(path, (bytes, _))| (path.clone(), bytes.clone()))
            .collect()
    }

    /// A write or append under a failing prefix fails before it changes anything.
    fn check_writable(&self, path: &WorkspacePath) -> Result<(), StorageError> {
        let failing = lock(&self.failing_prefixes)
            .iter()
            .any(|prefix| path.as_str().starts_with(prefix.as_str()));
        if failing {
            return Err(StorageError::WriteFailed {
                path: path.to_string(),
                reason: "injected write failure".into(),
            });
        }
        Ok(())
    }
}

/// Locks a mutex, recovering the data if another holder panicked: our maps stay consistent
/// because every critical section is a single insert, remove or clone.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[async_trait]
impl Storage for MemoryStorage {
    async fn read(&self, path: &WorkspacePath) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(lock(&self.files)
            .by_path
            .get(path)
            .map(|(bytes, _)| bytes.clone()))
    }

    async fn write(&self, path: &WorkspacePath, bytes: Vec<u8>) -> Result<(), StorageError> {
        self.write_revised(path, bytes).await.map(|_| ())
    }

    async fn remove(&self, path: &WorkspacePath) -> Result<(), StorageError> {
        lock(&self.files).by_path.remove(path);
        Ok(())
    }

    async fn list(&self, prefix: &str) -> Result<Vec<WorkspacePath>, StorageError> {
        Ok(lock(&self.files)
            .by_path
            .keys()
            .filter(|path| path.as_str().starts_with(prefix))
            .cloned()
            .collect())
    }

    async fn write_revised(
        &self,
        path: &WorkspacePath,
        bytes: Vec<u8>,
    ) -> Result<Option<Revision>, StorageError> {
        self.check_writable(path)?;
        let mut files = lock(&self.files);
        let revision = files.next_revision();
        files.by_path.insert(path.clone(), (bytes, revision));
        Ok(Some(revision))
    }

    async fn append_at(
        &self,
        path: &WorkspacePath,
        expected: Revision,
        bytes: &[u8],
    ) -> Result<Option<Revision>, StorageError> {
        self.check_writable(path)?;
        let mut files = lock(&self.files);
        let revision = files.next_revision();
        match files.by_path.get_mut(path) {
            Some((content, at)) if *at == expected => {
                content.extend_from_slice(bytes);
                *at = revision;
                Ok(Some(revision))
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
            .block_on(future)
    }

    #[test]
    fn appends_take_place_only_at_the_revision_expected() {
        let storage = MemoryStorage::new();
        let path = WorkspacePath::parse("log.jsonl").unwrap();
        let other = WorkspacePath::parse("other.txt").unwrap();
        block_on(async {
            let first = storage.write_revised(&path, b"a".to_vec()).await.unwrap();
            let first = first.expect("memory storage tracks revisions");
            let second = storage.append_at(&path, first, b"b").await.unwrap();
            let second = second.expect("the file is still at the revision expected");
            assert!(second > first);
            assert_eq!(storage.read(&path).await.unwrap().unwrap(), b"ab");
            // A stale revision appends nothing.
            assert_eq!(storage.append_at(&path, first, b"c").await, Ok(None));
            assert_eq!(storage.read(&path).await.unwrap().unwrap(), b"ab");
            // A plain write changes the revision too.
            storage.write(&path, b"x".to_vec()).await.unwrap();
            assert_eq!(storage.append_at(&path, second, b"c").await, Ok(None));
            // A file removed and written again never returns to an old revision.
            let third = storage
                .write_revised(&other, Vec::new())
                .await
                .unwrap()
                .unwrap();
            storage.remove(&other).await.unwrap();
            assert_eq!(storage.append_at(&other, third, b"c").await, Ok(None));
            let fourth = storage
                .write_revised(&other, Vec::new())
                .await
                .unwrap()
                .unwrap();
            assert_ne!(third, fourth);
            assert_eq!(storage.append_at(&other, third, b"c").await, Ok(None));
            // An injected failure fails an append and leaves the file as it was.
            storage.fail_writes_under("other");
            assert!(matches!(
                storage.append_at(&other, fourth, b"c").await,
                Err(StorageError::WriteFailed { .. })
            ));
            assert_eq!(storage.read(&other).await.unwrap().unwrap(), b"");
        });
    }

    #[test]
    fn paths_are_confined() {
        assert!(WorkspacePath::parse("a/b.txt").is_ok());
        assert_eq!(WorkspacePath::parse("dir/").unwrap().as_str(), "dir");
        assert_eq!(WorkspacePath::parse(""), Err(PathError::Empty));
        assert!(matches!(
            WorkspacePath::parse("/etc"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            WorkspacePath::parse("C:x"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            WorkspacePath::parse("a/../../b"),
            Err(PathError::Escapes(_))
        ));
        assert!(matches!(
            WorkspacePath::parse("a//b"),
            Err(PathError::EmptySegment(_))
        ));
        let dot = WorkspacePath::parse("./x").expect_err("a `.` segment");
        assert_eq!(
            dot.to_string(),
            "path `./x` has a `.` segment; write it without it, as `x`"
        );
        assert!(matches!(
            WorkspacePath::parse("a/./b/"),
            Err(PathError::DotSegment { fixed, .. }) if fixed == "a/b"
        ));
        assert!(matches!(
            WorkspacePath::parse("a\\b"),
            Err(PathError::Malformed(_))
        ));
        assert!(matches!(
            WorkspacePath::parse("a\u{0}b"),
            Err(PathError::Malformed(_))
        ));
    }

    #[test]
    fn invisible_and_direction_changing_characters_are_refused() {
        for (path, code_point, position) in [
            ("notes/\u{202e}dm.txt", "U+202E", 7),
            ("a\u{200b}b", "U+200B", 2),
            ("\u{feff}a", "U+FEFF", 1),
            ("x/\u{2066}y\u{2069}", "U+2066", 3),
            ("a\u{00a0}b", "U+00A0", 2),
            ("tag\u{e0041}", "U+E0041", 4),
            ("\u{2028}", "U+2028", 1),
            ("/\u{202d}etc", "U+202D", 2),
        ] {
            match WorkspacePath::parse(path) {
                Err(PathError::Unusual {
                    code_point: found,
                    position: at,
                    path: shown,
                    ..
                }) => {
                    assert_eq!(found, code_point, "{path:?}");
                    assert_eq!(at, position, "{path:?}");
                    assert!(shown.is_ascii(), "the message escapes the path: {shown}");
                }
                other => panic!("{path:?} gave {other:?}"),
            }
        }
        let error = WorkspacePath::parse("a\u{202e}b").unwrap_err().to_string();
        assert!(
            error.contains("U+202E (a bidi control) at character 2"),
            "{error}"
        );
        assert!(!error.contains('\u{202e}'), "{error}");
        // Ordinary non-ASCII names stay valid.
        assert!(WorkspacePath::parse("notes/café-报告.md").is_ok());
        assert!(WorkspacePath::parse("emoji/🦀.md").is_ok());
    }

    #[test]
    fn long_paths_are_refused() {
        let long = "a".repeat(PATH_CHARS_MAX + 1);
        assert_eq!(
            WorkspacePath::parse(&long),
            Err(PathError::TooLong {
                chars: PATH_CHARS_MAX + 1,
                max: PATH_CHARS_MAX
            })
        );
        assert!(WorkspacePath::parse(&"a".repeat(PATH_CHARS_MAX)).is_ok());
    }

    #[tokio::test]
    async fn injected_failure_keeps_previous_content() {
        let storage = MemoryStorage::new();
        let path = WorkspacePath::parse("out/x").unwrap();
        storage.write(&path, b"one".to_vec()).await.unwrap();
        storage.fail_writes_under("out/");
        assert!(storage.write(&path, b"two".to_vec()).await.is_err());
        assert_eq!(storage.read(&path).await.unwrap(), Some(b"one".to_vec()));
    }
}
