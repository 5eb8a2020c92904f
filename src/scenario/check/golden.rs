//! Golden traces: compare a run's rendering with its golden, or bless it.
//!
//! A scenario's golden is an insta file snapshot, `golden/<name>.snap`: a short header
//! (`---`, `source: tests/conformance.rs`, `---`) and then the trace, byte for byte as insta
//! writes it, so `cargo test` compares through `insta::assert_snapshot!` and `cargo insta review`
//! shows and accepts changed traces one by one, while `ctxbed run --bless` writes the very same
//! file. A wire trace's golden, `golden/wire/<scenario>/<harness>.snap`, is one too (asserted by
//! `tests/conform.rs` for the reference rows, written by `ctxbed conform --bless` for every row).
//! Other goldens (`.expected`) hold their text alone.
//!
//! A mismatch yields a unified diff. Outside CI the new rendering is written next to the golden
//! for review (`<name>.snap.new`, which `cargo insta review` picks up);
//! `ctxbed run --bless` (or `CTXBED_BLESS=1 cargo test`, the one switch every golden and
//! snapshot test reads through [`bless_from_env`]) rewrites goldens. CI never writes files.

use std::path::{Path, PathBuf};

use similar::TextDiff;

/// The variable that makes tests rewrite goldens and snapshots instead of comparing.
pub const BLESS_VARIABLE: &str = "CTXBED_BLESS";

/// Whether tests should bless: [`BLESS_VARIABLE`] is set to anything but empty or `0`.
///
/// # Errors
/// Blessing was asked for with `CI` set: CI never writes a golden or snapshot, so a mismatch there
/// always fails.
pub fn bless_from_env() -> Result<bool, String> {
    let asked = std::env::var(BLESS_VARIABLE).is_ok_and(|v| !v.is_empty() && v != "0");
    if asked && std::env::var_os("CI").is_some() {
        return Err(format!(
            "{BLESS_VARIABLE} is set with CI set: CI never writes goldens or snapshots; bless locally, review, and commit"
        ));
    }
    Ok(asked)
}

/// The `source` insta records in a scenario snapshot: the test that asserts it.
pub const SNAPSHOT_SOURCE: &str = "tests/conformance.rs";

/// The `source` insta records in a wire snapshot (`golden/wire/<scenario>/<harness>.snap`):
/// the test that asserts the reference rows.
pub const WIRE_SNAPSHOT_SOURCE: &str = "tests/conform.rs";

pub use crate::scenario::format::file::SNAPSHOT_EXTENSION;

/// A rendering as the snapshot file insta writes for it: the header, then the text with its
/// trailing newlines folded into one.
pub fn snapshot_file(text: &str) -> String {
    snapshot_file_from(SNAPSHOT_SOURCE, text)
}

/// [`snapshot_file`] for a snapshot asserted by the test at `source` (a path from the
/// workspace root, as insta records it).
pub fn snapshot_file_from(source: &str, text: &str) -> String {
    format!(
        "---\nsource: {source}\n---\n{}\n",
        text.trim_end_matches('\n')
    )
}

/// The rendering a snapshot file holds (the text after its header), with one final newline;
/// `None` when the file has no snapshot header.
pub fn snapshot_text(file: &str) -> Option<String> {
    let after_open = file.strip_prefix("---\n")?;
    let end = after_open.find("\n---\n")?;
    let body = &after_open[end + "\n---\n".len()..];
    Some(format!("{}\n", body.trim_end_matches('\n')))
}

fn is_snapshot(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == SNAPSHOT_EXTENSION)
}

/// What to do with a rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoldenMode {
    /// Compare; on a mismatch write `<golden>.new` for review when `write_new` is set.
    Compare { write_new: bool },
    /// Rewrite the golden.
    Bless,
    /// Leave the golden to the caller, which compares the rendering itself (`cargo test`
    /// asserts it with insta).
    Skip,
}

/// The result of a golden comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoldenOutcome {
    Matched,
    Blessed {
        changed: bool,
    },
    Missing {
        new_file: Option<PathBuf>,
    },
    Mismatch {
        diff: String,
        new_file: Option<PathBuf>,
    },
}

/// Compares `actual` with the golden at `path`, or blesses it.
///
/// # Errors
/// The golden could not be read or written, or the golden or its `.new` file is a symbolic
/// link: goldens are never read or written through links, so a link cannot make a run
/// overwrite a file outside the suite.
pub fn check(path: &Path, actual: &str, mode: GoldenMode) -> std::io::Result<GoldenOutcome> {
    check_from(path, actual, mode, SNAPSHOT_SOURCE)
}

/// [`check`] for a golden whose snapshot is asserted by the test at `source`
/// ([`WIRE_SNAPSHOT_SOURCE`] for wire traces): a snapshot it writes records that source.
///
/// # Errors
/// As [`check`].
pub fn check_from(
    path: &Path,
    actual: &str,
    mode: GoldenMode,
    source: &str,
) -> std::io::Result<GoldenOutcome> {
    let snapshot = is_snapshot(path);
    let new_path = match path.extension() {
        Some(extension) => path.with_extension(format!("{}.new", extension.to_string_lossy())),
        None => path.with_extension("new"),
    };
    refuse_link(path)?;
    refuse_link(&new_path)?;
    let expected = read_expected(path, snapshot)?;
    let normalised;
    let actual = if snapshot {
        normalised = format!("{}\n", actual.trim_end_matches('\n'));
        normalised.as_str()
    } else {
        actual
    };
    let stored = |text: &str| {
        if snapshot {
            snapshot_file_from(source, text)
        } else {
            text.to_string()
        }
    };
    match mode {
        GoldenMode::Bless => {
            let changed = expected.as_deref() != Some(actual);
            if changed {
                write_creating_parent(path, &stored(actual))?;
            }
            remove_if_present(&new_path)?;
            Ok(GoldenOutcome::Blessed { changed })
        }
        GoldenMode::Skip => Ok(GoldenOutcome::Matched),
        GoldenMode::Compare { write_new } => {
            let outcome = match expected {
                Some(expected) if expected == actual => {
                    remove_if_present(&new_path)?;
                    return Ok(GoldenOutcome::Matched);
                }
                Some(expected) => GoldenOutcome::Mismatch {
                    diff: diff(&expected, actual),
                    new_file: write_new.then(|| new_path.clone()),
                },
                None => GoldenOutcome::Missing {
                    new_file: write_new.then(|| new_path.clone()),
                },
            };
            if write_new {
                write_creating_parent(&new_path, &stored(actual))?;
            }
            Ok(outcome)
        }
    }
}

/// The golden's text (a snapshot's without its header), or `None` when there is no golden.
fn read_expected(path: &Path, snapshot: bool) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) if snapshot => Ok(Some(snapshot_text(&text).ok_or_else(|| {
            std::io::Error::other(format!(
                "{} has no snapshot header (`---`, `source: …`, `---`); bless it again",
                path.display()
            ))
        })?)),
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Writes `text` to `path`, creating its directory first.
fn write_creating_parent(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)
}

/// A unified diff, golden first.
pub fn diff(expected: &str, actual: &str) -> String {
    TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header("golden", "actual")
        .to_string()
}

/// An error when `path` is a symbolic link.
fn refuse_link(path: &Path) -> std::io::Result<()> {
    if crate::scenario::format::source::is_link(path) {
        return Err(std::io::Error::other(format!(
            "{} is a symbolic link; goldens are never read or written through links: remove the link",
            path.display()
        )));
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}
