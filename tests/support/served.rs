#![allow(
    dead_code,
    reason = "shared by several test binaries; each uses part of it"
)]

//! `ctxbed serve` as a child process for tests: started with its arguments, its address read
//! from its first line, killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `ctxbed serve`.
pub struct Served {
    pub child: Child,
    pub addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `command` (a `ctxbed serve` one, possibly through `sh`) and reads the address from
/// its first line, `listening on http://ADDRESS`.
pub fn start(mut command: Command) -> Served {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ctxbed serve starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("its standard output"))
        .read_line(&mut first)
        .expect("a first line");
    let addr = first
        .trim_end()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("the first line is {first:?}"))
        .to_string();
    Served { child, addr }
}

/// `ctxbed serve ARGS` in `dir`.
pub fn serve_in(dir: &Path, args: &[&str]) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxbed"));
    command.arg("serve").args(args).current_dir(dir);
    start(command)
}
