//! `ctxbed explain`: why one request kept or dropped each item (or the list of requests).

use std::process::ExitCode;

use crate::{write_err, write_out};
use ctxbed::scenario::check::explain::{self, Selector};

use super::load_and_run;

pub fn explain_command(
    path: &std::path::Path,
    request: Option<usize>,
    step: Option<usize>,
) -> ExitCode {
    let (scenario, output) = match load_and_run(path) {
        Ok(run) => run,
        Err(code) => return code,
    };
    let selector = match (request, step) {
        (Some(number), None) => Selector::Number(number),
        (Some(request), Some(step)) => Selector::InStep { step, request },
        (None, Some(_)) => {
            errln!("error: --step needs --request R (the step's R-th reasoning request)");
            return ExitCode::from(2);
        }
        (None, None) => {
            outln!(
                "requests of {} (explain one with --request N):",
                scenario.name
            );
            out!("{}", explain::index(&output.trace, &scenario));
            return ExitCode::SUCCESS;
        }
    };
    match explain::explain(&output.trace, &scenario, selector) {
        Ok(text) => {
            out!("{text}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            errln!("error: {error}");
            ExitCode::from(2)
        }
    }
}
