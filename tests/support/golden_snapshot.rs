//! Asserts a rendering against its golden through insta, and that the golden's bytes are the
//! ones ctxbed's own `--bless` writes (so insta review and `--bless` never disagree).

use std::path::Path;

/// Asserts `text` against the snapshot file `golden` (a path from the workspace root), whose
/// header names the test at `source`.
pub fn assert_golden(golden: &Path, text: &str, source: &str) -> Result<(), String> {
    let directory = golden.parent().ok_or("a golden has a directory")?;
    let name = golden
        .file_stem()
        .and_then(|stem| stem.to_str())
        .ok_or("a golden has a UTF-8 name")?;
    let root = std::env::current_dir().map_err(|e| e.to_string())?;
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root.join(directory));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!(name, text));
    // insta accepted the contents; the bytes must also be what `--bless` writes.
    let stored = std::fs::read_to_string(golden).map_err(|e| e.to_string())?;
    if stored != ctxbed::scenario::check::golden::snapshot_file_from(source, text) {
        return Err(format!(
            "{} holds the trace but not in the form `--bless` writes; bless it again",
            golden.display()
        ));
    }
    Ok(())
}
