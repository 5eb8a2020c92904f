//! `ctxbed check`: scenario files checked without running them, every problem reported.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::write_out;
use ctxbed::scenario::format::file::load;

use super::discover_or_explain;

pub fn check(paths: Vec<PathBuf>, max_errors: usize) -> ExitCode {
    let files = match discover_or_explain(paths) {
        Ok(files) => files,
        Err(code) => return code,
    };
    let mut invalid = 0usize;
    for file in &files {
        if let Err(diagnostics) = load(file) {
            invalid += 1;
            // A blank line after each, as compilers do, so that errors read apart.
            for diagnostic in diagnostics.iter().take(max_errors) {
                outln!("{diagnostic}");
            }
            if diagnostics.len() > max_errors {
                let hidden = diagnostics.len() - max_errors;
                let plural = if hidden == 1 { "" } else { "s" };
                outln!(
                    "… and {hidden} more problem{plural} in {} (raise --max-errors to see them)\n",
                    file.display()
                );
            }
        }
    }
    outln!("{} valid, {invalid} invalid", files.len() - invalid);
    if invalid > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
