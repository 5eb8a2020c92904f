//! [`FsStorage`]: a workspace kept in a directory on disk.
//!
//! Every [`WorkspacePath`] is already relative and free of `..`; on top of that, the store never
//! follows a symbolic link: a path any of whose components is a link is refused (reads, writes,
//! appends and removals alike), and listings skip links. So nothing the model names can reach
//! outside the root directory, even where someone placed a link inside it.
//!
//! A write goes to a sibling temporary file (`<name>.<revision>.ctxbed-partial`, unique per
//! write) that is then renamed over the target, so a failed write leaves the file as it was and
//! two writes at once never share a temporary file. A read refuses a file over
//! [`FS_READ_BYTES_MAX`] by its size, before loading it. The store tracks [`Revision`]s in
//! memory, with each file's length and modification time as it left them: an append to a file
//! that still looks that way is written in place (and cut back to its old length if the write
//! fails), so a session log grows without being read and rewritten; a file changed by anyone
//! else is reported changed and the caller rewrites it whole.
//!
//! ```
//! use ctxbed_harness::storage::{FsStorage, Storage, WorkspacePath};
//! # let dir = tempfile::tempdir().unwrap();
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let storage = FsStorage::open(dir.path()).unwrap();
//!     let path = WorkspacePath::parse("notes/a.txt").unwrap();
//!     storage.write(&path, b"hi".to_vec()).await.unwrap();
//!     assert_eq!(storage.read(&path).await.unwrap().as_deref(), Some(&b"hi"[..]));
//!     assert_eq!(storage.list("notes/").await.unwrap(), vec![path]);
//! });
//! ```

use std::collections::BTreeMap;
use std::io::{ErrorKind, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use async_trait::async_trait;

use super::{Revision, Storage, StorageError, WorkspacePath, lock};
use crate::limits::{FS_LIST_ENTRIES_MAX, FS_READ_BYTES_MAX};

/// The suffix of a write's temporary file; listings never show such files.
const PARTIAL_SUFFIX: &str = ".ctxbed-partial";

/// A workspace in a directory. Cheap to share behind an `Arc`; every operation runs on tokio's
/// blocking pool.
#[derive(Debug)]
pub struct FsStorage {
    root: PathBuf,
    known: Mutex<Known>,
}

/// What this store last left in each file it wrote.
#[derive(Debug, Default)]
struct Known {
    by_path: BTreeMap<WorkspacePath, Fingerprint>,
    last: u64,
}

/// A file as a write or append of this store left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    revision: Revision,
    len: u64,
    modified: Option<SystemTime>,
}

/// Why [`FsStorage::open`] refused a directory.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The directory could not be created or resolved.
    #[error("cannot open workspace directory `{path}`: {reason}; create it or name another")]
    Unusable { path: String, reason: String },
    /// The path exists and is not a directory.
    #[error("workspace `{0}` is not a directory; name a directory (it is created if missing)")]
    NotADirectory(String),
}

impl FsStorage {
    /// Opens the workspace rooted at `root`, creating the directory (and its parents) if it does
    /// not exist. The root itself is resolved once, so a root reached through a link is fine;
    /// links below it are never followed.
    ///
    /// # Errors
    /// [`OpenError`] when the directory cannot be created or resolved, or is a file.
    pub fn open(root: impl AsRef<Path>) -> Result<Self, OpenError> {
        let root = root.as_ref();
        let unusable = |error: std::io::Error| OpenError::Unusable {
            path: root.display().to_string(),
            reason: error.to_string(),
        };
        std::fs::create_dir_all(root).map_err(unusable)?;
        let root = root.canonicalize().map_err(unusable)?;
        if !root.is_dir() {
            return Err(OpenError::NotADirectory(root.display().to_string()));
        }
        Ok(FsStorage {
            root,
            known: Mutex::new(Known::default()),
        })
    }

    /// The resolved root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn next_revision(&self) -> Revision {
        let mut known = lock(&self.known);
        known.last += 1;
        Revision(known.last)
    }

    fn remember(&self, path: &WorkspacePath, fingerprint: Fingerprint) {
        lock(&self.known).by_path.insert(path.clone(), fingerprint);
    }

    fn forget(&self, path: &WorkspacePath) {
        lock(&self.known).by_path.remove(path);
    }

    fn remembered(&self, path: &WorkspacePath) -> Option<Fingerprint> {
        lock(&self.known).by_path.get(path).copied()
    }
}

/// Runs blocking file-system work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(format!("file-system task failed: {error}")))
}

/// The location of `path` under `root`, refusing it when any component that exists is a
/// symbolic link. Components that do not exist yet are fine (a write creates them).
fn resolve(root: &Path, path: &WorkspacePath) -> Result<PathBuf, String> {
    let mut at = root.to_path_buf();
    for segment in path.as_str().split('/') {
        at.push(segment);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "`{segment}` is a symbolic link; the workspace never follows links (they could lead outside it): replace the link with the file or directory itself"
                ));
            }
            Ok(_) => {}
            Err(error) if error.kind() == ErrorKind::NotFound => break,
            Err(error) => return Err(error.to_string()),
        }
    }
    Ok(root.join(path.as_str()))
}

fn fingerprint(file: &Path, revision: Revision) -> Result<Fingerprint, String> {
    let meta = std::fs::symlink_metadata(file).map_err(|e| e.to_string())?;
    Ok(Fingerprint {
        revision,
        len: meta.len(),
        modified: meta.modified().ok(),
    })
}

/// Writes `bytes` to a temporary sibling unique to this write (`revision`) and renames it over
/// `file`.
fn replace(file: &Path, bytes: &[u8], revision: Revision) -> Result<(), String> {
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    if std::fs::symlink_metadata(file).is_ok_and(|meta| meta.is_dir()) {
        return Err("a directory of that name exists".into());
    }
    let mut partial = file.as_os_str().to_owned();
    partial.push(format!(".{}{PARTIAL_SUFFIX}", revision.0));
    let partial = PathBuf::from(partial);
    let written = std::fs::File::create(&partial)
        .and_then(|mut out| out.write_all(bytes).and_then(|()| out.sync_data()))
        .and_then(|()| std::fs::rename(&partial, file));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(error.to_string());
    }
    Ok(())
}

/// Appends all of `bytes` or, on failure, cuts the file back to `len`.
fn append(file: &Path, len: u64, bytes: &[u8]) -> Result<(), String> {
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .map_err(|e| e.to_string())?;
    if let Err(error) = out.write_all(bytes).and_then(|()| out.sync_data()) {
        let _ = out.set_len(len);
        return Err(error.to_string());
    }
    Ok(())
}

/// Every regular file under `dir` (not following links), as workspace paths, into `found`.
fn walk(
    root: &Path,
    dir: &Path,
    prefix: &str,
    found: &mut Vec<WorkspacePath>,
) -> Result<(), String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error.to_string()),
    };
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        let full = entry.path();
        let Some(relative) = full
            .strip_prefix(root)
            .ok()
            .and_then(Path::to_str)
            .map(|p| p.replace(std::path::MAIN_SEPARATOR, "/"))
        else {
            tracing::debug!(path = %full.display(), "skipped a name that is not UTF-8");
            continue;
        };
        if kind.is_dir() {
            let could_match = relative.starts_with(prefix) || prefix.starts_with(&relative);
            if could_match {
                walk(root, &full, prefix, found)?;
            }
        } else if kind.is_file()
            && relative.starts_with(prefix)
            && !relative.ends_with(PARTIAL_SUFFIX)
        {
            match WorkspacePath::parse(&relative) {
                Ok(path) => found.push(path),
                Err(error) => tracing::debug!(%error, "skipped a file name the workspace refuses"),
            }
            if found.len() > FS_LIST_ENTRIES_MAX {
                return Err(format!(
                    "more than {FS_LIST_ENTRIES_MAX} files under `{prefix}`; list a narrower prefix"
                ));
            }
        }
    }
    Ok(())
}

fn read_failed(path: &WorkspacePath) -> impl Fn(String) -> StorageError + '_ {
    move |reason| StorageError::ReadFailed {
        path: path.to_string(),
        reason,
    }
}

fn write_failed(path: &WorkspacePath) -> impl Fn(String) -> StorageError + '_ {
    move |reason| StorageError::WriteFailed {
        path: path.to_string(),
        reason,
    }
}

#[async_trait]
impl Storage for FsStorage {
    async fn read(&self, path: &WorkspacePath) -> Result<Option<Vec<u8>>, StorageError> {
        let root = self.root.clone();
        let checked = path.clone();
        blocking(move || {
            let file = resolve(&root, &checked)?;
            match std::fs::metadata(&file) {
                Ok(meta) if meta.is_file() && meta.len() > FS_READ_BYTES_MAX as u64 => {
                    return Err(format!(
                        "the file is {} bytes; at most {FS_READ_BYTES_MAX} are read",
                        meta.len()
                    ));
                }
                _ => {}
            }
            match std::fs::read(&file) {
                Ok(bytes) => Ok(Some(bytes)),
                // A workspace holds files; a directory reads as no file, as in memory.
                Err(error) if error.kind() == ErrorKind::NotFound || file.is_dir() => Ok(None),
                Err(error) => Err(error.to_string()),
            }
        })
        .await
        .map_err(read_failed(path))
    }

    async fn write(&self, path: &WorkspacePath, bytes: Vec<u8>) -> Result<(), StorageError> {
        self.write_revised(path, bytes).await.map(|_| ())
    }

    async fn remove(&self, path: &WorkspacePath) -> Result<(), StorageError> {
        let root = self.root.clone();
        let checked = path.clone();
        self.forget(path);
        blocking(move || {
            let file = resolve(&root, &checked)?;
            match std::fs::remove_file(&file) {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
                Err(error) => Err(error.to_string()),
            }
        })
        .await
        .map_err(write_failed(path))
    }

    async fn list(&self, prefix: &str) -> Result<Vec<WorkspacePath>, StorageError> {
        let root = self.root.clone();
        let owned = prefix.to_string();
        blocking(move || {
            // Start at the deepest directory the prefix names, refusing it if it is a link.
            let start = match owned.rfind('/').filter(|&end| end > 0) {
                Some(end) => {
                    let dir = WorkspacePath::parse(&owned[..end]).map_err(|e| e.to_string())?;
                    resolve(&root, &dir)?
                }
                None => root.clone(),
            };
            let mut found = Vec::new();
            walk(&root, &start, &owned, &mut found)?;
            found.sort();
            Ok(found)
        })
        .await
        .map_err(|reason| StorageError::ReadFailed {
            path: prefix.to_string(),
            reason,
        })
    }

    async fn write_revised(
        &self,
        path: &WorkspacePath,
        bytes: Vec<u8>,
    ) -> Result<Option<Revision>, StorageError> {
        let root = self.root.clone();
        let checked = path.clone();
        let revision = self.next_revision();
        self.forget(path);
        let fingerprint = blocking(move || {
            let file = resolve(&root, &checked)?;
            replace(&file, &bytes, revision)?;
            fingerprint(&file, revision)
        })
        .await
        .map_err(write_failed(path))?;
        self.remember(path, fingerprint);
        Ok(Some(revision))
    }

    async fn append_at(
        &self,
        path: &WorkspacePath,
        expected: Revision,
        bytes: &[u8],
    ) -> Result<Option<Revision>, StorageError> {
        let Some(known) = self.remembered(path).filter(|k| k.revision == expected) else {
            return Ok(None);
        };
        let root = self.root.clone();
        let checked = path.clone();
        let bytes = bytes.to_vec();
        let revision = self.next_revision();
        let outcome = blocking(move || {
            let file = resolve(&root, &checked)?;
            // Unchanged since this store left it? Otherwise the caller reads and rewrites.
            match fingerprint(&file, known.revision) {
                Ok(now) if now == known => {}
                _ => return Ok(None),
            }
            append(&file, known.len, &bytes)?;
            fingerprint(&file, revision).map(Some)
        })
        .await;
        match outcome {
            Ok(Some(fingerprint)) => {
                self.remember(path, fingerprint);
                Ok(Some(revision))
            }
            Ok(None) => {
                self.forget(path);
                Ok(None)
            }
            Err(reason) => Err(write_failed(path)(reason)),
        }
    }
}
