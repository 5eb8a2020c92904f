//! `ctxbed show`: one scenario's trace.

use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::scenario::check::outcome::run;

use super::load_or_report;

pub fn show(path: &std::path::Path) -> ExitCode {
    let scenario = match load_or_report(path) {
        Ok(scenario) => scenario,
        Err(code) => return code,
    };
    match run(&scenario) {
        Ok(output) => {
            out!("{}", output.text);
            if output.expectations_passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            errln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
