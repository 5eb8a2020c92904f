//! `ctxbed report`: the self-contained HTML page of one scenario's requests.

use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::scenario::check::report;

use super::load_and_run;

pub fn report_command(path: &std::path::Path, output_path: &std::path::Path) -> ExitCode {
    let (scenario, output) = match load_and_run(path) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let page = report::html(&output, &scenario);
    if let Err(error) = std::fs::write(output_path, page) {
        errln!(
            "error: cannot write {}: {error}; choose another path with -o",
            output_path.display()
        );
        return ExitCode::FAILURE;
    }
    let requests = report::preparations(&output.trace, &scenario).len();
    outln!("wrote {} ({requests} requests)", output_path.display());
    if !output.expectations_passed() {
        outln!("note: some expectations failed; the page lists them at the end");
    }
    ExitCode::SUCCESS
}
