//! Reading an input file into checked UTF-8 text, with clear errors for what is not.

use std::path::Path;

use super::diagnostic::Diagnostic;
use crate::limits;

/// Reads a scenario or mock-model file. `label` is the path as the user should see it.
///
/// # Errors
/// Missing, unreadable, too large, empty or non-UTF-8 files, anything but a regular file
/// (`/dev/zero`, a pipe), and symbolic links (never followed,
/// so a link cannot make the suite read a file outside it).
pub fn read_source(path: &Path, label: &str) -> Result<String, Box<Diagnostic>> {
    if is_link(path) {
        return Err(Box::new(
            Diagnostic::file_level(
                label,
                "the file is a symbolic link; suite files are never followed through links",
            )
            .help("copy the file into the suite instead of linking to it"),
        ));
    }
    let metadata = std::fs::metadata(path).map_err(|error| {
        Box::new(Diagnostic::file_level(
            label,
            format!("cannot read the file: {error}"),
        ))
    })?;
    if !metadata.is_file() {
        return Err(Box::new(
            Diagnostic::file_level(
                label,
                "not a regular file (a directory, device, pipe or socket is never read as a suite file)",
            )
            .help("name a .toml file"),
        ));
    }
    if metadata.len() > limits::SCENARIO_FILE_BYTES_MAX {
        return Err(Box::new(
            Diagnostic::file_level(
                label,
                format!(
                    "the file is {} bytes; at most {} are read",
                    metadata.len(),
                    limits::SCENARIO_FILE_BYTES_MAX
                ),
            )
            .help("split it, or generate large content with `result_chars` instead of inlining it"),
        ));
    }
    let bytes = read_at_most(path, limits::SCENARIO_FILE_BYTES_MAX).map_err(|error| {
        Box::new(Diagnostic::file_level(
            label,
            format!("cannot read the file: {error}"),
        ))
    })?;
    if bytes.len() as u64 > limits::SCENARIO_FILE_BYTES_MAX {
        return Err(Box::new(Diagnostic::file_level(
            label,
            format!(
                "the file grew past {} bytes while it was read",
                limits::SCENARIO_FILE_BYTES_MAX
            ),
        )));
    }
    decode(label, bytes)
}

/// At most `limit + 1` bytes of `path` (one more than allowed, so growth past the limit shows).
fn read_at_most(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// True when `path` itself is a symbolic link: the suite reads and writes no file through one.
pub fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink())
}

/// Checks bytes are non-empty UTF-8.
///
/// # Errors
/// Empty or non-UTF-8 input, with the position of the first bad byte.
pub fn decode(label: &str, bytes: Vec<u8>) -> Result<String, Box<Diagnostic>> {
    match String::from_utf8(bytes) {
        Ok(text) if text.trim().is_empty() => Err(Box::new(
            Diagnostic::file_level(label, "the file is empty").help(
                "a scenario needs at least `seed`, `[agent]` with a `model`, and one `[[steps]]`",
            ),
        )),
        Ok(text) => Ok(text),
        Err(error) => {
            let valid = error.utf8_error().valid_up_to();
            let bytes = error.into_bytes();
            let prefix = String::from_utf8_lossy(&bytes[..valid]).into_owned();
            let mut diagnostic = Diagnostic::at(
                label,
                &prefix,
                prefix.len()..prefix.len(),
                format!(
                    "the file is not valid UTF-8 (byte {valid} is 0x{:02x})",
                    bytes[valid]
                ),
            );
            diagnostic.width = 1;
            Err(Box::new(diagnostic.help("save the file as UTF-8")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_binary_input_are_reported() {
        let empty = decode("x.toml", b"  \n".to_vec()).unwrap_err();
        assert_eq!(empty.message, "the file is empty");
        let binary = decode("x.toml", b"seed = 1\nname = \"\xff\"".to_vec()).unwrap_err();
        assert_eq!(binary.position, Some((2, 9)));
        assert!(binary.message.contains("0xff"));
    }
}
